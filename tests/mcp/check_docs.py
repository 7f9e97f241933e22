"""Checks docs/mcp.md: each set-up snippet parses and has the shape its
client documents, and each runnable example runs.

A snippet is the fenced block after a `<!-- check: NAME -->` line; a
runnable example the block after `<!-- run -->`, run by bash from the
repository's root with the binary's directory first on PATH.

Usage: python tests/mcp/check_docs.py --binary target/debug/dsh-session-ref
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
# The command line's tests start no daemon (a command answers in its own
# process and leaves nothing running).
os.environ["DSR_NO_DAEMON"] = "1"
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


def blocks(text):
    """(marker, language, body) of every marked fenced block."""
    found = re.finditer(r"<!-- (check: [a-z-]+|run) -->\n```([a-z]+)\n(.*?)\n```", text, re.S)
    return [(m.group(1), m.group(2), m.group(3)) for m in found]


def strings(v):
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def stdio_server(server, allowed, where):
    """A stdio server entry: `command` a string, `args` strings, nothing else but `allowed`."""
    assert isinstance(server, dict), where
    unknown = set(server) - {"command", "args", "env"} - set(allowed)
    assert not unknown, f"{where}: keys the client does not document: {unknown}"
    assert isinstance(server["command"], str) and server["command"], where
    assert strings(server.get("args", [])), where
    assert isinstance(server.get("env", {}), dict), where
    return server


def runs_the_server(server, where):
    args = server.get("args", [])
    assert server["command"].endswith("dsh-session-ref") and "mcp" in args, f"{where}: not `dsh-session-ref ... mcp`"


def check_mcp_servers(doc, allowed, where):
    """The `{"mcpServers": {name: server}}` file of Claude Code, Gemini CLI and Cursor."""
    assert set(doc) == {"mcpServers"}, where
    for name, server in doc["mcpServers"].items():
        assert SERVER_NAME.match(name), where
        runs_the_server(stdio_server(server, allowed, where), where)


def check(name, lang, body):
    if name == "claude-cli":
        assert lang == "sh"
        argv = shlex.split(body)
        # claude mcp add [--scope local|project|user] [-e KEY=VALUE] <name> -- <command> [args...]
        assert argv[:3] == ["claude", "mcp", "add"], argv
        dash = argv.index("--")
        options, command = argv[3:dash], argv[dash + 1:]
        assert SERVER_NAME.match(options[-1]), options
        i = 0
        while i < len(options) - 1:
            assert options[i] in ("--scope", "-s", "--env", "-e", "--transport", "-t"), options[i]
            if options[i] in ("--scope", "-s"):
                assert options[i + 1] in ("local", "project", "user"), options
            i += 2
        runs_the_server({"command": command[0], "args": command[1:]}, name)
    elif name == "gemini-cli":
        assert lang == "sh"
        argv = shlex.split(body)
        # gemini mcp add [--scope user|project] [--trust] [-e KEY=VALUE] [--timeout MS] <name> -- <command> [args...]
        assert argv[:3] == ["gemini", "mcp", "add"], argv
        dash = argv.index("--")
        options, command = argv[3:dash], argv[dash + 1:]
        assert SERVER_NAME.match(options[-1]), options
        i = 0
        while i < len(options) - 1:
            if options[i] == "--trust":
                i += 1
                continue
            assert options[i] in ("--scope", "-s", "--env", "-e", "--timeout"), options[i]
            if options[i] in ("--scope", "-s"):
                assert options[i + 1] in ("user", "project"), options
            i += 2
        runs_the_server({"command": command[0], "args": command[1:]}, name)
    elif name == "claude-json":
        check_mcp_servers(json.loads(body), {"type"}, name)
        assert all(s.get("type", "stdio") == "stdio" for s in json.loads(body)["mcpServers"].values())
    elif name == "gemini-json":
        allowed = {"cwd", "timeout", "trust", "includeTools", "excludeTools", "description"}
        check_mcp_servers(json.loads(body), allowed, name)
        for s in json.loads(body)["mcpServers"].values():
            assert isinstance(s.get("timeout", 0), int), name
    elif name == "cursor-json":
        check_mcp_servers(json.loads(body), {"type"}, name)
    elif name == "codex-toml":
        doc = tomllib.loads(body)
        assert set(doc) == {"mcp_servers"}, name
        allowed = {"cwd", "startup_timeout_sec", "tool_timeout_sec", "enabled", "enabled_tools", "disabled_tools"}
        for server_name, server in doc["mcp_servers"].items():
            assert SERVER_NAME.match(server_name), name
            runs_the_server(stdio_server(server, allowed, name), name)
            for key in ("startup_timeout_sec", "tool_timeout_sec"):
                assert isinstance(server.get(key, 1), (int, float)), name
    elif name == "dsh-yaml":
        entries = yaml.safe_load(body)
        assert isinstance(entries, list) and entries, name
        for e in entries:
            assert set(e) == {"id", "name", "config"} and e["name"] == "@deepseek-ai/dsh-mcp-client", e
            config = e["config"]
            assert SERVER_NAME.match(config["serverName"]) and config["transport"] == "stdio", config
            server = {k: v for k, v in config.items() if k not in ("serverName", "transport")}
            allowed = {"cwd", "toolCallTimeoutMs", "failOnStartupError", "reconnect"}
            runs_the_server(stdio_server(server, allowed, name), name)
    else:
        raise AssertionError(f"no check for {name}")


def run(body, binary):
    env = {**os.environ, "PATH": f"{Path(binary).parent}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(["bash", "-c", body], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    replies = {m["id"]: m for m in map(json.loads, out.stdout.splitlines())}
    assert set(replies) == {1, 2}, out.stdout
    assert replies[1]["result"]["serverInfo"]["name"] == "dsh-session-ref", replies[1]
    listed = replies[2]["result"]
    assert not listed["isError"] and len(listed["structuredContent"]["sessions"]) == 1, listed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    binary = str(Path(p.parse_args().binary).resolve())
    found = blocks((REPO / "docs" / "mcp.md").read_text())
    want = {"check: claude-cli", "check: claude-json", "check: codex-toml", "check: gemini-cli", "check: gemini-json",
            "check: cursor-json", "check: dsh-yaml", "run"}
    passed = failed = 0
    if {m for m, _, _ in found} != want:
        print(f"FAIL docs/mcp.md has blocks {sorted({m for m, _, _ in found})}, expected {sorted(want)}")
        failed += 1
    for marker, lang, body in found:
        try:
            if marker == "run":
                assert lang == "sh"
                run(body, binary)
            else:
                check(marker.split(": ")[1], lang, body)
        except Exception as e:  # noqa: BLE001 - report every block
            failed += 1
            print(f"FAIL docs/mcp.md {marker}: {type(e).__name__}: {e}")
        else:
            passed += 1
            print(f"ok   docs/mcp.md {marker}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
