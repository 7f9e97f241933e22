"""`dsh-session-ref mcp` over raw standard input and output: what no SDK
client sends.

Lines a JSON-RPC client cannot send through an SDK (50 MB, nested 100,000
deep, not JSON, not UTF-8) each get an error answer within a second, and the
server answers the next request; and a server started on a machine with no
session anywhere (an empty home) starts, lists nothing with a note naming
the places it looks at, and lists a session written there afterwards.

Only the standard library: tests/mcp/run.sh runs it with any of its venvs.
Usage: python tests/mcp/test_stdio_raw.py --binary target/debug/dsh-session-ref
Prints one line per test and a closing "N passed, N failed".
"""

import argparse
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The command line's tests start no daemon (a command answers in its own
# process and leaves nothing running).
os.environ["DSR_NO_DAEMON"] = "1"
BIN = None  # set from --binary
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# docs/mcp.md: the longest message the server reads.
MAX_MESSAGE_BYTES = 1 << 20
ANSWER_WITHIN = 1.0
SHOWCASE = "55550000-0000-4000-8000-000000000001"


class Server:
    """The server as a child process, its answers read on a thread."""

    def __init__(self, args, env, cwd):
        self.proc = subprocess.Popen([BIN, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=cwd)
        self.answers = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        self.next_id = 1000

    def _read(self):
        for line in self.proc.stdout:
            self.answers.put(json.loads(line))
        self.answers.put(None)

    def write(self, data):
        self.proc.stdin.write(data if data.endswith(b"\n") else data + b"\n")
        self.proc.stdin.flush()

    def answer(self, timeout):
        """The next answer, or a failure naming the timeout."""
        try:
            got = self.answers.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer within {timeout} s; stderr: {b''.join(self.stderr)!r}") from None
        assert got is not None, f"the server closed its output; stderr: {b''.join(self.stderr)!r}"
        return got

    def request(self, method, params=None, timeout=30):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.write(json.dumps(message).encode())
        got = self.answer(timeout)
        assert got.get("id") == self.next_id, got
        return got

    def call(self, tool, arguments):
        got = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in got and not got["result"].get("isError"), got
        return got["result"]["structuredContent"]

    def handshake(self):
        got = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                          "clientInfo": {"name": "raw", "version": "0"}})
        assert "result" in got, got
        self.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    def close(self):
        self.proc.stdin.close()
        code = self.proc.wait(timeout=30)
        assert code == 0, f"exit {code}; stderr: {b''.join(self.stderr)!r}"


def empty_env(tmp):
    """An environment with an empty home and empty XDG directories, and no
    variable that moves an agent's sessions elsewhere."""
    home = Path(tmp) / "home"
    for d in ["home", "data", "config", "cache", "state"]:
        (Path(tmp) / d).mkdir(exist_ok=True)
    # Every variable a kind's default location reads, as --help names them
    # (from the table of kinds), and Windows' homes.
    moved = location_variables() | {"APPDATA", "USERPROFILE"}
    env = {k: v for k, v in os.environ.items() if k not in moved and not k.startswith("XDG_")}
    env.update({"HOME": str(home), "XDG_DATA_HOME": str(Path(tmp) / "data"),
                "XDG_CONFIG_HOME": str(Path(tmp) / "config"), "XDG_CACHE_HOME": str(Path(tmp) / "cache"),
                "XDG_STATE_HOME": str(Path(tmp) / "state")})
    return home, env


def location_variables():
    """The environment variables the default locations of the kinds read, from `--help`."""
    shown = subprocess.run([BIN, "--help"], capture_output=True, text=True, check=True).stdout
    names = set(re.findall(r"\$([A-Z][A-Z0-9_]*)", shown))
    assert {"DSH_HOME", "CODEX_HOME"} <= names, names
    return names


def started(tmp, *args):
    """A server over the repository's example DSH sessions, after its handshake."""
    _, env = empty_env(tmp)
    dsh = REPO / "examples" / "sessions"
    server = Server(["--root", str(dsh), "mcp", "--scope", "all", *args], env, tmp)
    server.handshake()
    return server


def deep_arguments_line(depth, id_=None):
    nested = "[" * depth + "]" * depth
    head = '{"jsonrpc":"2.0",' + (f'"id":{json.dumps(id_)},' if id_ is not None else "")
    return (head + '"method":"tools/call","params":{"name":"search_sessions","arguments":{"query":'
            + nested + "}}}").encode()


def assert_answered(server, line, code, id_):
    """Sends `line`, expects the error `code` for `id_` within a second,
    then a tool call answered as before."""
    server.write(line)
    sent = time.monotonic()
    got = server.answer(ANSWER_WITHIN)
    waited = time.monotonic() - sent
    assert waited <= ANSWER_WITHIN, waited
    assert got.get("jsonrpc") == "2.0" and "result" not in got, got
    assert got["id"] == id_, got
    assert got["error"]["code"] == code, got
    assert isinstance(got["error"]["message"], str) and got["error"]["message"], got
    listed = server.call("list_sessions", {})
    assert listed["sessions"], listed
    return got["error"]["message"]


# --- the tests ---------------------------------------------------------------


def test_a_50_mb_request_is_refused_with_its_id(tmp):
    server = started(tmp)
    big = json.dumps({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                      "params": {"name": "search_sessions", "arguments": {"query": "x" * (50 << 20)}}}).encode()
    why = assert_answered(server, big, INVALID_REQUEST, 50)
    assert str(MAX_MESSAGE_BYTES) in why and str(len(big)) in why, why
    # The id after the arguments is found too, and a line just within the
    # limit is read as before.
    late = json.dumps({"jsonrpc": "2.0", "method": "tools/call",
                       "params": {"name": "search_sessions", "arguments": {"query": "y" * (2 << 20)}},
                       "id": "late"}).encode()
    assert_answered(server, late, INVALID_REQUEST, "late")
    head = b'{"jsonrpc":"2.0","id":51,"method":"tools/call","params":{"name":"list_sessions","arguments":{}},"pad":"'
    fits = head + b"z" * (MAX_MESSAGE_BYTES - len(head) - 2) + b'"}'
    assert len(fits) == MAX_MESSAGE_BYTES
    server.write(fits)
    got = server.answer(30)
    assert got["id"] == 51 and got["result"]["structuredContent"]["sessions"], str(got)[:300]
    server.close()


def test_arguments_nested_100000_deep_are_a_parse_error_with_the_id(tmp):
    server = started(tmp)
    assert_answered(server, deep_arguments_line(100_000, 7), PARSE_ERROR, 7)
    assert_answered(server, deep_arguments_line(129, "d"), PARSE_ERROR, "d")
    # Nesting within the bound is read: the request gets the tool's own answer.
    server.write(deep_arguments_line(100, 8))
    got = server.answer(30)
    assert got["id"] == 8 and got["result"]["isError"], got
    server.close()


def test_a_line_that_is_not_json_is_a_parse_error(tmp):
    server = started(tmp)
    assert_answered(server, b"this is not JSON", PARSE_ERROR, None)
    assert_answered(server, b'{"jsonrpc":"2.0","id":3,"method":"tools/list"', PARSE_ERROR, 3)
    assert_answered(server, b'{"jsonrpc":"2.0","id":"s","method":12}', INVALID_REQUEST, "s")
    server.close()


def test_a_method_name_that_is_not_utf8_is_a_parse_error(tmp):
    server = started(tmp)
    assert_answered(server, b'{"jsonrpc":"2.0","id":4,"method":"tools/\xff\xfecall","params":{}}', PARSE_ERROR, 4)
    assert_answered(server, b'{"jsonrpc":"2.0","id":5,"method":"tools/\\ud800call"}', PARSE_ERROR, 5)
    server.close()


def test_bad_lines_before_the_handshake_are_answered_too(tmp):
    _, env = empty_env(tmp)
    server = Server(["--root", str(REPO / "examples" / "sessions"), "mcp", "--scope", "all"], env, tmp)
    server.write(b"\x00\x01 garbage")
    got = server.answer(ANSWER_WITHIN)
    assert got["error"]["code"] == PARSE_ERROR and got["id"] is None, got
    server.handshake()
    assert server.call("list_sessions", {})["sessions"]
    server.close()


def test_an_empty_home_starts_lists_nothing_with_a_note_and_finds_a_new_session(tmp):
    home, env = empty_env(tmp)
    server = Server(["mcp", "--scope", "all"], env, tmp)
    server.handshake()
    listed = server.call("list_sessions", {})
    assert listed["sessions"] == [], listed
    note = listed.get("note", "")
    for place in [home / ".dsh" / "sessions", home / ".claude" / "projects", home / ".codex"]:
        assert str(place) in note, (place, note)
    # A first Claude Code session, written where Claude Code writes it.
    project = home / ".claude" / "projects" / "-workspace-example-app"
    project.mkdir(parents=True)
    fixture = REPO / "tests" / "fixtures" / "foreign-logs" / "claude-code" / "daaain" / "minimal_showcase"
    shutil.copy(fixture / f"{SHOWCASE}.jsonl", project / f"{SHOWCASE}.jsonl")
    listed = server.call("list_sessions", {})
    assert [s["sessionId"] for s in listed["sessions"]] == [f"claude-code:{SHOWCASE}"], listed
    assert "note" not in listed, listed
    found = server.call("search_sessions", {"query": "repository"})
    assert [r["sessionId"] for r in found["results"]] == [f"claude-code:{SHOWCASE}"], found
    server.close()


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_")]


def main():
    global BIN
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("-k", default="")
    a = p.parse_args()
    BIN = str(Path(a.binary).resolve())
    passed = failed = 0
    for t in TESTS:
        name = f"raw stdio: {t.__name__}"
        if a.k not in name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            try:
                t(tmp)
            except Exception:  # noqa: BLE001 - report every failure and go on
                failed += 1
                print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)
            else:
                passed += 1
                print(f"ok   {name}", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
