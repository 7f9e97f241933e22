#!/usr/bin/env bash
# Builds the Node addon from a clean checkout and runs every Node check:
#   1. npm ci (registry packages only: the pinned napi CLI and TypeScript)
#   2. npm run build (`napi build --platform`: plain cargo), or the addon in
#      DSR_NODE_ADDON_DIR
#   3. the committed generated index.js / index.d.ts match the build (drift)
#   4. node --test: conformance vectors, host behaviour, DSH store, the README's
#      examples (run from a project outside the repository)
#   5. tsc --noEmit: the README examples against the hand-written .d.ts
# Non-interactive; exits non-zero on the first failure.
#
# Environment:
#   DSR_NODE_ADDON_DIR   test a built addon instead of building one: a directory
#                        holding what `napi build --platform --output-dir` wrote
#                        (the .node, index.js, index.d.ts). The test command
#                        passes the one scripts/package.sh built, so that the Rust
#                        code is compiled once for both; steps 3-5 are the same.
#   CARGO_TARGET_DIR     honoured (default: the workspace's target/)
#   CARGO_BUILD_JOBS     default 2
#   DSR_CONFORMANCE_DIR  vector set to run (default tests/conformance)
set -euo pipefail
if [ -n "${DSR_CONFORMANCE_DIR:-}" ]; then
  DSR_CONFORMANCE_DIR="$(cd "$DSR_CONFORMANCE_DIR" && pwd)"
  export DSR_CONFORMANCE_DIR
fi
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
start=$SECONDS
step() { printf '\n--> node: %s  (+%ds)\n' "$*" $((SECONDS - start)); }

export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
export npm_config_yes=true npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

step "npm ci"
npm ci --no-audit --no-fund --loglevel=error </dev/null

committed="$(mktemp -d)"
trap 'rm -rf "$committed"' EXIT
cp index.js index.d.ts "$committed/"
if [ -n "${DSR_NODE_ADDON_DIR:-}" ]; then
  step "the addon to test: $DSR_NODE_ADDON_DIR (DSR_NODE_ADDON_DIR)"
  addons=("$DSR_NODE_ADDON_DIR"/dsh-session-reference.*.node)
  if [ ! -f "${addons[0]}" ] || [ ! -f "$DSR_NODE_ADDON_DIR/index.js" ] || [ ! -f "$DSR_NODE_ADDON_DIR/index.d.ts" ]; then
    echo "DSR_NODE_ADDON_DIR=$DSR_NODE_ADDON_DIR lacks the .node, index.js or index.d.ts of a napi build" >&2
    exit 1
  fi
  rm -f dsh-session-reference.*.node
  cp "${addons[@]}" "$DSR_NODE_ADDON_DIR/index.js" "$DSR_NODE_ADDON_DIR/index.d.ts" .
else
  step "npm run build (CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-<workspace target>})"
  npm run build </dev/null
fi

step "generated index.js / index.d.ts match the committed ones"
drift=0
for f in index.js index.d.ts; do
  if ! diff -u "$committed/$f" "$f"; then
    echo "node/$f differs from what 'npm run build' generates: commit the regenerated file" >&2
    drift=1
  fi
done
[ "$drift" = 0 ]

step "node --test"
node --test test/*.test.js test/*.test.mjs </dev/null

step "tsc --noEmit: README examples against wrapper.d.ts"
node -e "require('./test/readme-examples.js').writeForTsc()"
npx --no-install tsc -p tsconfig.readme.json

step "node: all passed in $((SECONDS - start))s"
