#!/usr/bin/env bash
# Replays every committed corpus file (fuzz/corpus/<target>/) through the
# fuzz target bodies (fuzz/src/checks.rs) on stable Rust; scripts/test-all.sh
# runs this. With FUZZ_SMOKE_SECONDS=N (and cargo-fuzz plus a nightly
# toolchain installed) it then also fuzzes each target for N seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --locked -p dsh-session-reference --test fuzz_replay

smoke="${FUZZ_SMOKE_SECONDS:-0}"
if [ "$smoke" -gt 0 ]; then
  if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "FUZZ_SMOKE_SECONDS=$smoke but cargo-fuzz or a nightly toolchain is missing:" >&2
    echo "  rustup toolchain install nightly && cargo install cargo-fuzz" >&2
    exit 1
  fi
  cd fuzz
  for target in mention uri tag_safe prepare store; do
    echo "==> cargo +nightly fuzz run $target (${smoke}s)"
    # Runs on a scratch copy of the seeds, so the committed corpus stays as it is.
    scratch="$(mktemp -d)"
    cp corpus/"$target"/* "$scratch"/
    cargo +nightly fuzz run "$target" "$scratch" -- -max_total_time="$smoke" -max_len=65536 -rss_limit_mb=2048
    rm -rf "$scratch"
  done
fi
