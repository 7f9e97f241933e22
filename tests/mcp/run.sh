#!/usr/bin/env bash
# The MCP server driven by the official MCP Python SDK's client, both
# majors: mcp 1.x (the initialize handshake) and mcp 2.x (its Client, which
# negotiates the era). Each lives in a venv of its own under target/,
# created and installed from PyPI on first use and kept for later runs.
# Builds the CLI (debug) first, unless DSR_MCP_BINARY names one already
# built: the test command passes the debug binary its `cargo test` built (a
# `cargo build -p dsh-session-ref` resolves the features of that package
# alone, so it compiled the core and the CLI again).
# Usage: bash tests/mcp/run.sh [1|2 ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
PY="${PYTHON:-python3}"
# The SDK versions the tests were written against (docs/mcp.md); PyYAML
# for the check of docs/mcp.md's DSH snippet.
declare -A SDK=([1]="mcp==1.30.0" [2]="mcp==2.3.0 pyyaml==6.0.3")
majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(1 2)

if [ -n "${DSR_MCP_BINARY:-}" ]; then
  [ -x "$DSR_MCP_BINARY" ] || { echo "DSR_MCP_BINARY: not an executable: $DSR_MCP_BINARY" >&2; exit 1; }
  bin=$(cd "$(dirname "$DSR_MCP_BINARY")" && pwd)/$(basename "$DSR_MCP_BINARY")
else
  cargo build --locked -q -p dsh-session-ref
  bin=${CARGO_TARGET_DIR:-target}/debug/dsh-session-ref
  case $bin in /*) ;; *) bin=$PWD/$bin ;; esac
fi

venv_for() {
  local major=$1 dir="target/mcp-venv/v$1" want="${SDK[$1]}"
  if [ ! -x "$dir/bin/python" ] || [ "$(cat "$dir/.installed" 2>/dev/null)" != "$want" ]; then
    echo "==> creating $dir with $want" >&2
    rm -rf "$dir"
    "$PY" -m venv "$dir"
    # shellcheck disable=SC2086 # one word a requirement
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check $want >&2
    echo "$want" >"$dir/.installed"
  fi
  echo "$dir/bin/python"
}

status=0
for major in "${majors[@]}"; do
  python=$(venv_for "$major")
  echo "==> MCP tests with ${SDK[$major]}"
  "$python" tests/mcp/test_mcp.py --binary "$bin" </dev/null || status=1
done
# MCP over streamable HTTP (`serve`'s /mcp), both majors; the runnable
# examples of docs/serve.md once.
for major in "${majors[@]}"; do
  python=$(venv_for "$major")
  echo "==> MCP over HTTP with ${SDK[$major]}"
  docs=(); [ "$major" = "${majors[-1]}" ] && docs=(--docs)
  "$python" tests/mcp/test_http.py --binary "$bin" "${docs[@]}" </dev/null || status=1
done
# The set-up snippets of docs/mcp.md, against each client's config shape,
# and its runnable example.
"$(venv_for 2)" tests/mcp/check_docs.py --binary "$bin" </dev/null || status=1
# Raw lines no SDK client sends, and a server started with an empty home
# (the standard library alone).
"$PY" tests/mcp/test_stdio_raw.py --binary "$bin" </dev/null || status=1

# --- the real MCP clients -------------------------------------------------
# Claude Code, Codex and Gemini CLI (pinned in tests/mcp/clients/
# test_clients.py, installed from npm into target/mcp-clients/ when missing
# or a pin changed) against a loopback stand-in for their model APIs: what
# each hands its model of our tools' results. A few seconds a client once
# installed (the install ~25 s); the whole block is bounded.
echo "==> MCP tests under the real clients"
timeout 420 "$PY" tests/mcp/clients/test_clients.py --binary "$bin" </dev/null || status=1
# --- end of the real MCP clients -------------------------------------------
exit $status
