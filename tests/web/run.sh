#!/usr/bin/env bash
# The page of `dsh-session-ref serve` in a real browser: Debian's headless
# Chromium driven by playwright-core (pinned in tests/web/package.json;
# it never downloads a browser of its own). Installs chromium with apt-get
# when it is missing and this runs as root; `npm ci`s into
# tests/web/node_modules; writes the fixture root (fixture.mjs); starts
# `dsh-session-ref serve --scope all --listen 127.0.0.1:0` over it (every
# session of the fixture, whatever its cwd); reads the URL it
# prints first; runs page.test.mjs with node's test runner.
# Builds the CLI (debug) first, unless DSR_WEB_BINARY names one already
# built. The screenshot and the first-paint figures go to DSR_WEB_OUT
# (default target/web); `DSR_WEB_SCREENSHOT=docs/img/serve-page.png` makes
# docs/serve.md's.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"

if [ -n "${DSR_WEB_BINARY:-}" ]; then
  [ -x "$DSR_WEB_BINARY" ] || { echo "DSR_WEB_BINARY: not an executable: $DSR_WEB_BINARY" >&2; exit 1; }
  bin=$(cd "$(dirname "$DSR_WEB_BINARY")" && pwd)/$(basename "$DSR_WEB_BINARY")
else
  cargo build --locked -q -p dsh-session-ref
  bin=${CARGO_TARGET_DIR:-target}/debug/dsh-session-ref
  case $bin in /*) ;; *) bin=$PWD/$bin ;; esac
fi

chromium=${DSR_WEB_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing Debian's chromium" >&2
    (apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium; }) </dev/null
  fi
  [ -x "$chromium" ] || { echo "tests/web: no Chromium at $chromium and it cannot be installed here (not root, or no apt-get): install Debian's chromium, or set DSR_WEB_CHROMIUM" >&2; exit 1; }
fi

# npm ci only when the lock changed since the last install.
if ! cmp -s tests/web/package-lock.json tests/web/node_modules/.package-lock.json 2>/dev/null \
  || [ ! -d tests/web/node_modules/playwright-core ]; then
  (cd tests/web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error) </dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/dsr-web.XXXXXX")
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
node tests/web/fixture.mjs "$work/root"
# (no cache: nothing is written outside the temporary folder)
"$bin" --root "$work/root" --no-cache serve --scope all --listen 127.0.0.1:0 </dev/null >"$work/stdout" 2>"$work/stderr" &
server=$!
url=
for _ in $(seq 1 300); do
  url=$(head -n 1 "$work/stdout" 2>/dev/null || true)
  case $url in http://*) break ;; esac
  kill -0 "$server" 2>/dev/null || { echo "tests/web: the server exited:" >&2; cat "$work/stderr" >&2; exit 1; }
  sleep 0.1
done
case $url in http://127.0.0.1:*/\?token=*) ;; *) echo "tests/web: no URL on the server's first line: '$url'" >&2; cat "$work/stderr" >&2; exit 1 ;; esac

out=${DSR_WEB_OUT:-target/web}
mkdir -p "$out"
status=0
DSR_WEB_URL=$url DSR_WEB_OUT=$out DSR_WEB_CHROMIUM=$chromium \
  timeout 120 node --test --test-concurrency=1 tests/web/page.test.mjs </dev/null || status=$?
if [ "$status" != 0 ]; then echo "==> the server's stderr:" >&2; cat "$work/stderr" >&2; fi
exit $status
