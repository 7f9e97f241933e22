#!/usr/bin/env bash
# Runs every test of every language: the README's test command, and what CI runs.
# Installs what it needs (the Python venv with maturin and zig, the napi CLI
# from npm, cbindgen) on a fresh machine. Fails on the first failing step.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
start=$SECONDS
step() { printf '\n==> %s  (+%ds)\n' "$*" $((SECONDS - start)); }

step "conformance vectors are the shared set"
if [ -d ../shared/conformance ] && ! diff -rq ../shared/conformance tests/conformance; then
  echo "tests/conformance differs from ../shared/conformance: copy the current vectors" >&2
  exit 1
fi

step "rustfmt"
cargo fmt --all --check

step "clippy (all crates, all targets, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "rustdoc of the core (every link resolves, every public item documented)"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps -p dsh-session-reference

step "Rust tests (core, store, C ABI crate, CLI)"
cargo test --locked

for script in tests/c/run.sh tests/mcp/run.sh; do
  step "$script"
  bash "$script"
done

# What a release publishes, built as it would be (dist/), then installed and
# run the way users do, with no Rust toolchain on PATH.
# The dist-check profile (Cargo.toml) unless DSR_DIST_PROFILE says otherwise:
# the release workflow builds and tests the `dist` profile itself.
export DSR_DIST_PROFILE=${DSR_DIST_PROFILE:-dist-check}
step "scripts/package.sh (the release artifacts, into dist/, profile $DSR_DIST_PROFILE)"
bash scripts/package.sh
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
target_dir=${CARGO_TARGET_DIR:-target}
case $target_dir in /*) ;; *) target_dir=$PWD/$target_dir ;; esac
wheels=("$PWD"/dist/dsh_session_reference-"$version"-*.whl)
step "python/run-tests.sh (DSR_PYTHON_WHEEL: the wheel of scripts/package.sh)"
DSR_PYTHON_WHEEL=${wheels[0]} bash python/run-tests.sh
step "node/run-tests.sh (DSR_NODE_ADDON_DIR: the addon of scripts/package.sh)"
DSR_NODE_ADDON_DIR=$target_dir/napi-$DSR_DIST_PROFILE/${DSR_DIST_TARGET:-$host} bash node/run-tests.sh

if [ -f fuzz/replay.sh ]; then
  # Where cargo-fuzz and a nightly toolchain are installed, every fuzz target
  # also gets a short smoke run (FUZZ_SMOKE_SECONDS each; 0 turns it off).
  # Elsewhere the committed corpus is replayed through the same checks.
  if [ -z "${FUZZ_SMOKE_SECONDS:-}" ] && cargo +nightly fuzz --version >/dev/null 2>&1; then
    export FUZZ_SMOKE_SECONDS=5
  fi
  step "fuzz corpus replay${FUZZ_SMOKE_SECONDS:+, smoke runs of ${FUZZ_SMOKE_SECONDS}s per target}"
  bash fuzz/replay.sh
fi

step "all tests passed in $((SECONDS - start))s"
