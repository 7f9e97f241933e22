#!/usr/bin/env bash
# Runs every test of every language: the README's test command, and what CI runs.
# Installs what it needs (the Python venv with maturin and zig, the napi CLI
# from npm, cbindgen) on a fresh machine. Fails on the first failing step.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
# A CI run builds a clean clone once: incremental compilation's data would
# never be read again, and writing it cost the core and its test binaries'
# debug build 23% more CPU (146 s against 112 s, BENCHMARKS.md "The test
# command's time"). Kept for a developer's repeated runs.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"; fi
start=$SECONDS
# Each step's line gives the wall time since the start and the CPU seconds
# (user + system) of every finished child process so far: on a loaded or
# noisy machine the CPU figure is the one to compare between runs.
# (`times` in this shell, not in a command substitution's subshell, whose
# children are not this shell's)
times_file=$(mktemp "${TMPDIR:-/tmp}/dsr-times.XXXXXX")
trap 'rm -f "$times_file"' EXIT
step() {
  times >"$times_file"
  printf '\n==> %s  (+%ds, CPU %ss)\n' "$*" $((SECONDS - start)) \
    "$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, "m"); n += t[1] * 60 + t[2] } printf "%d", n }' "$times_file")"
}

step "conformance vectors are the shared set"
if [ -d ../shared/conformance ] && ! diff -rq ../shared/conformance tests/conformance; then
  echo "tests/conformance differs from ../shared/conformance: copy the current vectors" >&2
  exit 1
fi

step "tools the tests use (strace, for the CLI tests that count a file's opens)"
if ! command -v strace >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get install -y -qq strace >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq strace; }) </dev/null
  else
    echo "strace is missing and cannot be installed here (not root, or no apt-get): cli/tests/opens.rs will say so" >&2
  fi
fi

step "rustfmt"
cargo fmt --all --check

step "the fronts share one build of the core (scripts/check-front-features.sh)"
bash scripts/check-front-features.sh

step "clippy (all crates, all targets, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "rustdoc of the core (every link resolves, every public item documented)"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps -p dsh-session-reference

# cargo-nextest where it is installed (the machine image has it): each test
# in a process of its own, two at a time across all test binaries, where
# `cargo test` runs the binaries one after another and so left a core idle
# through every binary of few or serialized tests (memory_bounds alone ran
# about 100 s on one core). Doc tests are not nextest's: `cargo test --doc`.
# Elsewhere `cargo test`, the same tests.
# The team database's tests (teams/, cli/tests/teams.rs) start PostgreSQL
# clusters of their own with the machine's binaries; where there are none,
# they install Debian's postgresql (teams/tests/support/cluster.rs).
export DSR_INSTALL_POSTGRES=${DSR_INSTALL_POSTGRES:-1}
if cargo nextest --version >/dev/null 2>&1; then
  step "Rust tests (core, store, C ABI crate, CLI, teams; cargo-nextest, then the doc tests)"
  cargo nextest run --locked --no-fail-fast
  cargo test --locked --doc
else
  step "Rust tests (core, store, C ABI crate, CLI, teams)"
  cargo test --locked
fi

target_dir=${CARGO_TARGET_DIR:-target}
case $target_dir in /*) ;; *) target_dir=$PWD/$target_dir ;; esac

# The CLI's debug binary `cargo test` built (for its integration tests):
# `cargo build -p dsh-session-ref` would resolve that package's features
# alone and compile the core and the CLI a second time.
step "tests/mcp/run.sh (DSR_MCP_BINARY: the CLI cargo test built)"
DSR_MCP_BINARY=$target_dir/debug/dsh-session-ref bash tests/mcp/run.sh </dev/null

# The page of `dsh-session-ref serve` in Debian's headless Chromium
# (installed by the script when missing), through playwright-core from npm.
step "tests/web/run.sh (DSR_WEB_BINARY: the CLI cargo test built)"
DSR_WEB_BINARY=$target_dir/debug/dsh-session-ref bash tests/web/run.sh </dev/null

# The C host test and packaging run side by side: each is mostly one
# optimized build (the C test's `--release`, which the include/README.md
# commands it runs use as well; packaging's artifacts, linked through zig
# for the glibc floor and stripped), and neither keeps two cores busy all
# along (build scripts compiling C, links, the runs under valgrind), so
# together they take less than one after the other. Each profile has its
# own build directory and lock. The C test's output is printed whole when
# it ends; a failure of either fails the command.
step "tests/c/run.sh, in the background beside packaging (its output follows packaging's)"
c_log=$(mktemp "${TMPDIR:-/tmp}/dsr-test-c.XXXXXX")
# (a session of its own where setsid exists, so that the whole test can be
# stopped if packaging fails)
session=()
if command -v setsid >/dev/null; then session=(setsid -w); fi
${session[@]+"${session[@]}"} bash -c 'bash tests/c/run.sh; status=$?; echo "tests/c/run.sh: exit $status at $(date +%s)"; exit $status' \
  </dev/null >"$c_log" 2>&1 &
c_pid=$!
c_start=$(date +%s)
trap 'kill -- -"$c_pid" 2>/dev/null || kill "$c_pid" 2>/dev/null || true; rm -f "$c_log" "$times_file"' EXIT

# What a release publishes, built as it would be (dist/), then installed and
# run the way users do, with no Rust toolchain on PATH.
# The dist-check profile (Cargo.toml) unless DSR_DIST_PROFILE says otherwise:
# the release workflow builds and tests the `dist` profile itself.
export DSR_DIST_PROFILE=${DSR_DIST_PROFILE:-dist-check}
step "scripts/package.sh (the release artifacts, into dist/, profile $DSR_DIST_PROFILE)"
bash scripts/package.sh </dev/null

step "tests/c/run.sh (started beside packaging; waiting for it)"
c_status=0
wait "$c_pid" || c_status=$?
trap 'rm -f "$times_file"' EXIT
cat "$c_log"
c_end=$(sed -n 's/^tests\/c\/run.sh: exit [0-9]* at \([0-9]*\)$/\1/p' "$c_log")
rm -f "$c_log"
echo "(tests/c/run.sh took $((${c_end:-$(date +%s)} - c_start))s beside packaging)"
[ "$c_status" = 0 ] || { echo "tests/c/run.sh failed (exit $c_status)" >&2; exit "$c_status"; }

step "scripts/test-dist.sh (install and run them without cargo or rustc)"
bash scripts/test-dist.sh

# The Python and Node suites run against the wheel and the addon packaging
# built: each front's Rust code is compiled once, optimized (the development
# wheel rebuilt the core, and `napi build` always passes --target, so the
# development addon rebuilt every dependency in a directory of its own),
# and the suites test what is published: run against the packaged wheel,
# python/tests/test_exit.py found two faults the development wheel did not
# show (BENCHMARKS.md, "The test command's time"). (Run alone, each script
# builds its own.)
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
host=$(rustc -vV | sed -n 's/^host: //p')
wheels=("$PWD"/dist/dsh_session_reference-"$version"-*.whl)
step "python/run-tests.sh (DSR_PYTHON_WHEEL: the wheel of scripts/package.sh)"
DSR_PYTHON_WHEEL=${wheels[0]} bash python/run-tests.sh
step "node/run-tests.sh (DSR_NODE_ADDON_DIR: the addon of scripts/package.sh)"
DSR_NODE_ADDON_DIR=$target_dir/napi-$DSR_DIST_PROFILE/${DSR_DIST_TARGET:-$host} bash node/run-tests.sh

if [ -f fuzz/replay.sh ]; then
  # Where cargo-fuzz and a nightly toolchain are installed, every fuzz target
  # also gets a short smoke run (FUZZ_SMOKE_SECONDS each; 0 turns it off).
  # Elsewhere the committed corpus is replayed through the same checks: that
  # replay is core/tests/fuzz_replay.rs, which the Rust tests above ran
  # (fuzz/replay.sh runs it again with `-p`, a second build of the core).
  if [ -z "${FUZZ_SMOKE_SECONDS:-}" ] && cargo +nightly fuzz --version >/dev/null 2>&1; then
    export FUZZ_SMOKE_SECONDS=5
  fi
  if [ "${FUZZ_SMOKE_SECONDS:-0}" -gt 0 ]; then
    step "fuzz corpus replay, smoke runs of ${FUZZ_SMOKE_SECONDS}s per target"
    bash fuzz/replay.sh
  else
    step "fuzz corpus replay: done by the Rust tests (core/tests/fuzz_replay.rs); no cargo-fuzz, no smoke runs"
  fi
fi

step "all tests passed in $((SECONDS - start))s"
