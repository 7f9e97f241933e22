"""`dsh-session-ref serve`: MCP over streamable HTTP driven by the official
MCP Python SDK's streamable HTTP client, and the runnable examples of
docs/serve.md.

Runs with whichever major of the `mcp` package is installed (tests/mcp/run.sh
runs it in the 1.x and the 2.x venv): 1.x opens a session with the
initialize handshake; 2.x's Client is run twice, negotiating the era itself
(2026-07-28, stateless) and in its legacy (handshake) mode. The token is
sent as a bearer header; without it, or with a wrong one, the endpoint
answers 401. The answers are those of the stdio server over the same
sessions (one handler).

Usage: python tests/mcp/test_http.py --binary target/debug/dsh-session-ref [--docs]
Prints one line per test and a closing "N passed, N failed".
"""

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import traceback
import urllib.error
import urllib.request
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The command line's tests start no daemon (a command answers in its own
# process and leaves nothing running).
os.environ["DSR_NO_DAEMON"] = "1"
EXAMPLES = REPO / "examples" / "sessions"
MAJOR = int(version("mcp").split(".")[0])
if MAJOR >= 2:
    from mcp import Client
else:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

BIN = None  # set from --binary
TOOLS = ["list_sessions", "search_sessions", "read_session", "reference_session"]


class Server:
    """`dsh-session-ref --root examples/sessions serve --scope all`, and the URL it printed."""

    def __init__(self, *extra):
        env = {k: v for k, v in os.environ.items()
               if k not in ("DSH_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "GEMINI_CLI_HOME")}
        self.proc = subprocess.Popen([BIN, "--no-cache", "--root", str(EXAMPLES), "serve", "--scope", "all", *extra],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=REPO)
        line = self.proc.stdout.readline().strip()
        m = re.fullmatch(r"(http://127\.0\.0\.1:\d+)/\?token=([0-9a-f]{64})", line)
        assert m, (line, self.proc.stderr.read() if self.proc.poll() is not None else "")
        self.base, self.token = m.group(1), m.group(2)
        self.mcp = f"{self.base}/mcp"

    def stop(self):
        self.proc.terminate()
        code = self.proc.wait(timeout=30)
        assert code == 0, (code, self.proc.stderr.read())


@asynccontextmanager
async def connect(server, mode, token=None):
    """A connected MCP client of `server`'s `/mcp`, its negotiated version."""
    headers = {"Authorization": f"Bearer {token or server.token}"}
    if MAJOR >= 2:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with create_mcp_http_client(headers=headers) as http:
            transport = streamable_http_client(server.mcp, http_client=http)
            async with Client(transport, mode=mode) as client:
                yield client, client.session.protocol_version
    else:
        async with streamablehttp_client(server.mcp, headers=headers) as (read, write, _):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                yield session, init.protocolVersion


def structured(result):
    for name in ("structured_content", "structuredContent"):
        if getattr(result, name, None) is not None:
            return getattr(result, name)
    raise AssertionError(result)


def raw_post(server, body, headers):
    """A POST to /mcp by hand: status and body."""
    req = urllib.request.Request(server.mcp, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def cli_json(*args):
    out = subprocess.run([BIN, "--no-cache", "--root", str(EXAMPLES), *args, "--json"], check=True,
                         capture_output=True, text=True, cwd=REPO)
    return json.loads(out.stdout)


# --- the tests ---------------------------------------------------------------


async def test_tools_resources_and_answers_over_http(server, mode):
    async with connect(server, mode) as (c, protocol):
        if MAJOR >= 2 and mode == "auto":
            assert protocol == "2026-07-28", protocol
        else:
            assert protocol in ("2025-06-18", "2025-11-25", "2025-03-26"), protocol
        tools = (await c.list_tools()).tools
        assert [t.name for t in tools] == TOOLS, tools
        listed = structured(await c.call_tool("list_sessions", {"limit": 100}))
        ids = [s["sessionId"] for s in listed["sessions"]]
        assert "goal-wrapup" in ids and "multi-turn" in ids, ids
        # The same sessions the command line lists (hardened both ways).
        cli = cli_json("--hardened", "candidates", "--limit", "100")
        assert sorted(ids) == sorted(c["sessionId"] for c in cli), (ids, cli)
        found = structured(await c.call_tool("search_sessions", {"query": "task"}))
        assert found["results"], found
        page = structured(await c.call_tool("read_session", {"id": "goal-wrapup", "maxBytes": 2000}))
        assert page["sessionId"] == "goal-wrapup" and "<referenced-session-page>" in page["text"], page
        ref = structured(await c.call_tool("reference_session", {"id": "multi-turn"}))
        assert ref["reference"]["sessionId"] == "multi-turn", ref
        templates = (await c.list_resource_templates()).resource_templates if MAJOR >= 2 else \
            (await c.list_resource_templates()).resourceTemplates
        assert [str(attr_of(t, "uri_template", "uriTemplate")) for t in templates] == ["dsh-session:{id}"], templates
        bad = await c.call_tool("read_session", {"id": "no-such-session"})
        assert attr_of(bad, "is_error", "isError"), bad


def attr_of(obj, *names):
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    raise AttributeError(names)


async def test_no_token_or_a_wrong_one_is_refused(server, mode):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    assert raw_post(server, init, {})[0] == 401
    assert raw_post(server, init, {"Authorization": "Bearer " + "0" * 64})[0] == 401
    status, body = raw_post(server, init, {"Authorization": f"Bearer {server.token}", "Origin": "http://evil.example"})
    assert status == 403 and json.loads(body)["code"] == "FORBIDDEN_ORIGIN", (status, body)
    failed = False
    try:
        async with connect(server, mode, token="f" * 64) as (c, _):
            await c.list_tools()
    except BaseException:  # noqa: BLE001 - the SDK raises its own error (or a group of them) for a 401
        failed = True
    assert failed, "a client with a wrong token was served"
    # The handshake by hand, with the token.
    status, body = raw_post(server, init, {"Authorization": f"Bearer {server.token}"})
    assert status == 200 and "serverInfo" in body, (status, body)


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_")]


def run_docs(server):
    """Each `<!-- run -->` block of docs/serve.md, with URL and TOKEN set: it
    succeeds and prints JSON without an error code."""
    text = (REPO / "docs" / "serve.md").read_text()
    found = re.findall(r"<!-- run -->\n```sh\n(.*?)\n```", text, re.S)
    assert len(found) >= 6, found
    env = {**os.environ, "URL": server.base, "TOKEN": server.token}
    for block in found:
        out = subprocess.run(["bash", "-c", "set -eo pipefail\n" + block], capture_output=True, text=True,
                             env=env, cwd=REPO, timeout=60)
        assert out.returncode == 0, (block, out.stdout, out.stderr)
        value = json.loads(out.stdout)
        assert not (isinstance(value, dict) and "code" in value), (block, value)
    return len(found)


async def main():
    global BIN
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--docs", action="store_true", help="also run docs/serve.md's examples")
    p.add_argument("-k", default="")
    a = p.parse_args()
    BIN = str(Path(a.binary).resolve())
    modes = ["auto", "legacy"] if MAJOR >= 2 else [None]
    passed = failed = 0
    server = Server()
    try:
        for mode in modes:
            for t in TESTS:
                name = f"mcp {version('mcp')} http {mode or 'initialize'}: {t.__name__}"
                if a.k not in name:
                    continue
                try:
                    await asyncio.wait_for(t(server, mode), timeout=120)
                except Exception:  # noqa: BLE001 - report every failure and go on
                    failed += 1
                    print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)
                else:
                    passed += 1
                    print(f"ok   {name}", flush=True)
        if a.docs:
            try:
                n = run_docs(server)
            except Exception:  # noqa: BLE001
                failed += 1
                print(f"FAIL docs/serve.md examples\n{traceback.format_exc()}", flush=True)
            else:
                passed += 1
                print(f"ok   docs/serve.md: {n} examples", flush=True)
    finally:
        server.stop()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
