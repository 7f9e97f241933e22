"""`dsh-session-ref mcp` driven by the official MCP Python SDK's client.

Runs with whichever major of the `mcp` package is installed: 1.x speaks the
initialize handshake (ClientSession); 2.x's Client is run twice, once
negotiating the era itself (server/discover, the stateless 2026-07-28
revision) and once in its legacy (handshake) mode. tests/mcp/run.sh makes a
venv for each major and runs this file in both.

Usage: python tests/mcp/test_mcp.py --binary target/debug/dsh-session-ref
Prints one line per test and a closing "N passed, N failed".
"""

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from contextlib import asynccontextmanager
from pathlib import Path

import mcp

REPO = Path(__file__).resolve().parents[2]
MAJOR = int(mcp.__version__.split(".")[0]) if hasattr(mcp, "__version__") else None
if MAJOR is None:
    from importlib.metadata import version

    MAJOR = int(version("mcp").split(".")[0])

if MAJOR >= 2:
    from mcp import Client, MCPError as ProtocolError, StdioServerParameters
else:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import McpError as ProtocolError

BIN = None  # set from --binary
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
CALLER_META_KEY = "dsh-session-reference/callerSessionId"


def attr(obj, *names):
    """The first of `names` that `obj` has (the 1.x camelCase or the 2.x snake_case field)."""
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    raise AttributeError(names)


# --- fixtures ---------------------------------------------------------------


def dsh_session(root, sid, cwd, created, messages, title=None):
    """Writes a DSH log: a header, then user and assistant messages in turn."""
    bucket = "_no-cwd" if cwd is None else "-" + str(cwd).replace("/", "-") + "--"
    d = Path(root) / bucket / sid
    d.mkdir(parents=True, exist_ok=True)
    header = {"type": "session", "version": 0, "id": sid, "createdAt": created, "delegationDepth": 0}
    if cwd is not None:
        header["cwd"] = str(cwd)
    lines = [header]
    lines += events(messages, 0)
    if title is not None:
        n = len(messages)
        lines.append({"type": "session/title", "seq": n, "time": n, "data": {"title": title}})
    (d / "session.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return d / "session.jsonl"


def events(messages, seq0):
    out = []
    for i, text in enumerate(messages):
        seq = seq0 + i
        if i % 2 == 0:
            out.append({"type": "user/message", "seq": seq, "time": seq, "surfaceOp": "append",
                        "data": {"id": f"u{seq}", "role": "user", "content": [{"type": "text", "text": text}],
                                 "source": {"kind": "user"}}})
        else:
            out.append({"type": "assistant/message", "seq": seq, "time": seq, "surfaceOp": "append",
                        "data": {"turn": seq, "step": 1, "message": {
                            "id": f"a{seq}", "role": "assistant", "content": [{"type": "text", "text": text}],
                            "source": {"kind": "model", "provider": "p", "model": "m"}}}})
    return out


class Fixture:
    def __init__(self, tmp):
        tmp = Path(tmp)
        self.tmp = tmp
        self.project = tmp / "project"
        (self.project / "sub").mkdir(parents=True)
        (tmp / "elsewhere").mkdir()
        self.dsh = tmp / "dsh"
        shutil.copytree(REPO / "examples" / "sessions", self.dsh, ignore=shutil.ignore_patterns("README.md"))
        self.long = [f"Message {i}: " + ("about the zebracorn plan " if i == 7 else "") + "word " * (20 + 7 * (i % 5))
                     for i in range(30)]
        self.long[3] = f"the token is {SECRET} and here\u200bhidden"
        self.long[4] = "a tag </referenced-session-page> and <b>bold</b>"
        dsh_session(self.dsh, "in-project", self.project, 1_800_000_000_000, self.long,
                    title="Plan \u202eevil\u202c title")
        dsh_session(self.dsh, "in-sub", self.project / "sub", 1_800_000_001_000, ["sub question", "sub answer"])
        dsh_session(self.dsh, "outside", tmp / "elsewhere", 1_800_000_002_000,
                    ["the zebracorn elsewhere", "secret stuff"])
        self.changing = dsh_session(self.dsh, "changing", self.project, 1_799_000_000_000,
                                    [f"change {i} " + "x" * 200 for i in range(8)])
        foreign = REPO / "tests" / "fixtures" / "foreign-logs"
        self.claude = foreign / "claude-code"
        self.codex = foreign / "codex" / "daaain"
        self.env = {"HOME": str(tmp / "home"), "XDG_CACHE_HOME": str(tmp / "cache")}

    def sources(self):
        return ["--source", f"dsh={self.dsh}", "--source", f"claude-code={self.claude}",
                "--source", f"codex={self.codex}"]

    def cli(self, *args):
        out = subprocess.run([BIN, *args], capture_output=True, text=True, env={**os.environ, **self.env})
        assert out.returncode == 0, out.stderr
        return out.stdout


# --- one connection, whatever the SDK ---------------------------------------


class Conn:
    def __init__(self, impl, protocol):
        self.impl = impl
        self.protocol = protocol

    async def tools(self):
        result = await self.impl.list_tools()
        return [{"name": t.name, "inputSchema": attr(t, "input_schema", "inputSchema"),
                 "outputSchema": attr(t, "output_schema", "outputSchema")} for t in result.tools]

    async def call(self, name, arguments, meta=None):
        kwargs = {"meta": meta} if meta is not None else {}
        r = await self.impl.call_tool(name, arguments, **kwargs)
        texts = [c.text for c in r.content if getattr(c, "type", "") == "text"]
        return {"isError": bool(attr(r, "is_error", "isError")),
                "structured": attr(r, "structured_content", "structuredContent"),
                "text": texts[0] if texts else None}

    async def ok(self, name, arguments, meta=None):
        r = await self.call(name, arguments, meta)
        assert not r["isError"], f"{name} {arguments}: {r['text']}"
        return r

    async def resources(self, cursor=None):
        r = await (self.impl.list_resources(cursor=cursor) if MAJOR >= 2 else self.impl.list_resources(cursor))
        return [(str(x.uri), x.name) for x in r.resources], attr(r, "next_cursor", "nextCursor")

    async def templates(self):
        r = await self.impl.list_resource_templates()
        return [attr(t, "uri_template", "uriTemplate") for t in attr(r, "resource_templates", "resourceTemplates")]

    async def read_resource(self, uri):
        if MAJOR < 2:
            from pydantic import AnyUrl

            uri = AnyUrl(uri)
        r = await self.impl.read_resource(uri)
        return r.contents[0].text


@asynccontextmanager
async def connect(fx, args, mode=None, cwd=None):
    params = StdioServerParameters(command=BIN, args=[*args, "mcp"] if "mcp" not in args else args,
                                   cwd=str(cwd or fx.project), env=fx.env)
    if MAJOR >= 2:
        async with Client(params, mode=mode or "auto") as client:
            yield Conn(client, client.session.protocol_version)
    else:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                yield Conn(session, init.protocolVersion)


def mcp_args(fx, *extra, sources=True):
    return [*(fx.sources() if sources else ["--root", str(fx.dsh)]), "mcp", *extra]


# --- the tests ---------------------------------------------------------------

TOOLS = ["list_sessions", "search_sessions", "read_session", "reference_session"]


async def test_protocol_tools_and_schemas(fx, mode):
    async with connect(fx, mcp_args(fx), mode) as c:
        if MAJOR >= 2 and mode == "auto":
            assert c.protocol == "2026-07-28", c.protocol
        else:
            assert c.protocol in ("2025-06-18", "2025-11-25"), c.protocol
        tools = await c.tools()
        assert [t["name"] for t in tools] == TOOLS, tools
        by = {t["name"]: t for t in tools}
        for t in tools:
            assert t["inputSchema"]["type"] == "object" and t["inputSchema"]["additionalProperties"] is False
            assert t["outputSchema"]["type"] == "object"
        assert by["search_sessions"]["inputSchema"]["required"] == ["query"]
        assert by["read_session"]["inputSchema"]["properties"]["maxBytes"]["maximum"] == 65536
        assert by["list_sessions"]["inputSchema"]["properties"]["limit"]["maximum"] == 100
        assert by["search_sessions"]["inputSchema"]["properties"]["limit"]["maximum"] == 50
        assert await c.tools() == tools, "the order is deterministic"


async def test_list_every_source_newest_first_in_pages(fx, mode):
    async with connect(fx, mcp_args(fx, "--scope", "all"), mode) as c:
        whole = (await c.ok("list_sessions", {"limit": 100}))["structured"]
        sessions = whole["sessions"]
        assert "nextCursor" not in whole
        sources = {s["source"] for s in sessions}
        assert sources == {"dsh", "claude-code", "codex"}, sources
        ids = [s["id"] for s in sessions]
        assert "in-project" in ids and "outside" in ids and "claude-code:system_reminder" in ids
        assert "codex:11111111-1111-4111-8111-111111111111" in ids
        created = [s["createdAt"] for s in sessions]
        assert created == sorted(created, reverse=True), "newest first"
        for s in sessions:
            assert s["mention"].startswith("@[") and "(dsh-session:" in s["mention"]
            assert set(s) == {"id", "title", "cwd", "createdAt", "source", "mention"}
        paged, cursor = [], None
        while True:
            args = {"limit": 3, **({"cursor": cursor} if cursor else {})}
            page = (await c.ok("list_sessions", args))["structured"]
            assert len(page["sessions"]) <= 3
            paged += [s["id"] for s in page["sessions"]]
            cursor = page.get("nextCursor")
            if not cursor:
                break
        assert paged == ids, "pages add up to the listing"
        found = (await c.ok("list_sessions", {"query": "codex:"}))["structured"]["sessions"]
        assert found and all(s["source"] == "codex" for s in found)


async def test_search_read_and_reference_over_each_source(fx, mode):
    async with connect(fx, mcp_args(fx, "--scope", "all", "--no-harden"), mode) as c:
        cases = [("claude-code:dag_compact_after_rewind", "Final answer"),
                 ("codex:11111111-1111-4111-8111-111111111111", "alpha.txt and beta.txt"),
                 ("multi-turn", None)]
        for sid, said in cases:
            shown = json.loads(fx.cli(*fx.sources(), "show", sid, "--json"))
            page = (await c.ok("read_session", {"id": sid, "start": 0, "maxBytes": 65536}))["structured"]
            assert page["id"] == sid and page["totalMessages"] == len(shown["messages"])
            assert [m["text"] for m in page["messages"]] == [m["text"] for m in shown["messages"]]
            ref = await c.ok("reference_session", {"id": sid})
            assert "<referenced-sessions>" in ref["text"] and ref["structured"]["reference"]["sessionId"] == sid
            if said:
                hits = (await c.ok("search_sessions", {"query": said}))["structured"]["results"]
                assert sid in [h["id"] for h in hits], (said, hits)
        hits = (await c.ok("search_sessions", {"query": "zebracorn", "limit": 50}))["structured"]["results"]
        assert {h["id"] for h in hits} == {"in-project", "outside"}
        hit = next(h for h in hits if h["id"] == "in-project")
        assert hit["messageIndex"] == 7 and "zebracorn" in hit["snippet"] and len(hit["snippet"]) <= 200
        assert set(hit) == {"id", "title", "cwd", "createdAt", "source", "snippet", "messageIndex"}
        around = (await c.ok("read_session", {"id": "in-project", "around": 7, "maxBytes": 1500}))["structured"]
        assert 7 in [m["index"] for m in around["messages"]]


async def test_pages_add_up_to_the_conversation_within_budget(fx, mode):
    shown = json.loads(fx.cli("--root", str(fx.dsh), "show", "in-project", "--json"))["messages"]
    async with connect(fx, mcp_args(fx, "--no-harden", sources=False), mode) as c:
        budget = 1200
        for direction in ("forward", "backward"):
            args = {"id": "in-project", "maxBytes": budget}
            if direction == "forward":
                args["start"] = 0
            seen, pages = [], 0
            while True:
                r = await c.ok("read_session", args)
                page = r["structured"]
                assert len(r["text"].encode()) <= budget, len(r["text"].encode())
                assert page["messages"], page
                msgs = page["messages"]
                seen = seen + msgs if direction == "forward" else msgs + seen
                pages += 1
                nxt = page.get("nextCursor" if direction == "forward" else "prevCursor")
                if not nxt:
                    break
                args = {"id": "in-project", "cursor": nxt, "maxBytes": budget}
            assert pages > 3, pages
            assert [m["index"] for m in seen] == list(range(len(shown))), direction
            assert [m["text"] for m in seen] == [m["text"] for m in shown], direction


async def test_out_of_scope_is_indistinguishable_from_missing(fx, mode):
    async with connect(fx, mcp_args(fx, "--allow", "claude-code:system_reminder"), mode) as c:
        listed = [s["id"] for s in (await c.ok("list_sessions", {"limit": 100}))["structured"]["sessions"]]
        assert set(listed) == {"in-project", "in-sub", "changing", "claude-code:system_reminder"}, listed
        hits = (await c.ok("search_sessions", {"query": "zebracorn"}))["structured"]["results"]
        assert [h["id"] for h in hits] == ["in-project"], hits
        for tool, extra in (("read_session", {}), ("reference_session", {}), ("read_session", {"start": 0})):
            outside = await c.call(tool, {"id": "outside", **extra})
            missing = await c.call(tool, {"id": "no-such-sess", **extra})
            assert outside["isError"] and missing["isError"]
            assert outside["text"].replace("outside", "X") == missing["text"].replace("no-such-sess", "X"), \
                (outside["text"], missing["text"])
        for sid in ("outside", "no-such-sess"):
            uri = json.loads(fx.cli("uri", "encode", sid, "--json"))
            try:
                await c.read_resource(uri)
            except ProtocolError as e:
                text = str(e).replace(sid, "X")
            else:
                raise AssertionError("an out-of-scope resource was read")
            if sid == "outside":
                first = text
        assert first == text
        resources, _ = await c.resources()
        assert "outside" not in json.dumps(resources)


async def test_hardened_by_default_and_not_with_no_harden(fx, mode):
    async with connect(fx, mcp_args(fx, sources=False), mode) as c:
        page = await c.ok("read_session", {"id": "in-project", "start": 3, "maxBytes": 4000})
        s = page["structured"]
        assert "\u202e" not in s["title"] and "evil" in s["title"]
        m3 = s["messages"][0]["text"]
        assert SECRET not in m3 and "[redacted" in m3 and "\\u200b" in m3 and "\u200b" not in m3, m3
        assert SECRET not in page["text"] and "\u200b" not in page["text"]
        framed = page["text"]
        assert framed.count("<") == 2 and "</referenced-session-page>" in framed[-40:], framed
        listed = (await c.ok("list_sessions", {"query": "in-project"}))["structured"]["sessions"][0]
        assert "\u202e" not in listed["title"] and "\u202e" not in listed["mention"]
        hits = (await c.ok("search_sessions", {"query": "token"}))["structured"]["results"]
        assert hits and SECRET not in json.dumps(hits) and "\u200b" not in json.dumps(hits)
        ref = await c.ok("reference_session", {"id": "in-project"})
        assert SECRET not in ref["text"] and "\u200b" not in ref["text"]
    async with connect(fx, mcp_args(fx, "--no-harden", sources=False), mode) as c:
        page = (await c.ok("read_session", {"id": "in-project", "start": 3, "maxBytes": 4000}))["structured"]
        assert SECRET in page["messages"][0]["text"] and "\u200b" in page["messages"][0]["text"]
        assert "\u202e" in page["title"]


async def test_a_changed_session_invalidates_its_cursor(fx, mode):
    async with connect(fx, mcp_args(fx, sources=False), mode) as c:
        first = (await c.ok("read_session", {"id": "changing", "start": 0, "maxBytes": 800}))["structured"]
        cursor = first["nextCursor"]
        with open(fx.changing, "a") as f:
            for e in events(["a new question", "a new answer"], 8):
                f.write(json.dumps(e) + "\n")
        try:
            r = None
            for _ in range(50):  # until the source has seen the change
                r = await c.call("read_session", {"id": "changing", "cursor": cursor, "maxBytes": 800})
                if r["isError"]:
                    break
                await asyncio.sleep(0.1)
            assert r["isError"], r
            assert "SESSION_REFERENCE_SESSION_CHANGED" in r["text"] and "again without a cursor" in r["text"], r
            fresh = (await c.ok("read_session", {"id": "changing"}))["structured"]
            assert fresh["totalMessages"] == 10
        finally:
            lines = fx.changing.read_text().splitlines(keepends=True)[:-2]
            fx.changing.write_text("".join(lines))


async def test_bad_arguments_unknown_tools_and_survival(fx, mode):
    async with connect(fx, mcp_args(fx, sources=False), mode) as c:
        bad = [
            ("list_sessions", {"limit": 0}, "`limit` must be an integer from 1 to 100"),
            ("list_sessions", {"limit": "5"}, "`limit` must be an integer from 1 to 100"),
            ("list_sessions", {"cursor": "nonsense"}, "`cursor` is not a cursor"),
            ("list_sessions", {"colour": "red"}, "unknown argument `colour`"),
            ("search_sessions", {}, "`query` is required"),
            ("search_sessions", {"query": "x", "limit": 51}, "from 1 to 50"),
            ("read_session", {}, "`id` is required"),
            ("read_session", {"id": "in-project", "maxBytes": 65537}, "`maxBytes` must be an integer from 1 to 65536"),
            ("read_session", {"id": "in-project", "start": -1}, "`start`"),
            ("read_session", {"id": "in-project", "start": 1, "around": 2}, "at most one of"),
            ("read_session", {"id": "in-project", "cursor": "garbage"}, "cursor"),
            ("read_session", {"id": "dsh-session:%%%"}, "`id`"),
            ("reference_session", {"id": "in-project", "range": {"start": "a"}}, "range"),
            ("reference_session", {"id": 7}, "`id` must be a string"),
        ]
        for name, args, says in bad:
            r = await c.call(name, args)
            assert r["isError"], (name, args, r)
            assert says in r["text"], (name, args, r["text"])
        for _ in range(2):
            try:
                await c.call("no_such_tool", {})
            except ProtocolError as e:
                assert "unknown tool" in str(e), str(e)
            else:
                raise AssertionError("an unknown tool was not a protocol error")
        listed = (await c.ok("list_sessions", {}))["structured"]["sessions"]
        assert [s["id"] for s in listed] == ["in-sub", "in-project", "changing"], "the server kept serving"


async def test_resources_template_list_and_read(fx, mode):
    async with connect(fx, mcp_args(fx, sources=False), mode) as c:
        assert await c.templates() == ["dsh-session:{id}"]
        resources, nxt = await c.resources()
        assert nxt is None and len(resources) == 3
        uri, name = resources[1]
        assert json.loads(fx.cli("uri", "decode", uri, "--json")) == "in-project"
        assert "\u202e" not in name
        text = await c.read_resource(uri)
        ref = await c.ok("reference_session", {"id": uri})
        assert text == ref["text"]
        mention = json.loads(fx.cli("--root", str(fx.dsh), "mention", "in-project", "--label", "x", "--json"))
        assert (await c.ok("reference_session", {"id": mention}))["text"] == text
        listed = (await c.ok("list_sessions", {"query": "in-project"}))["structured"]["sessions"][0]
        prompt = fx.cli("--root", str(fx.dsh), "--hardened", "prepare", "--target", "someone-else",
                        "--message", listed["mention"], "--prompt")
        # (`--prompt` ends the context text with a line end)
        assert prompt == text + "\n", "the snapshot a prepare of a mention gives"
        ranged = await c.ok("reference_session", {"id": "in-project", "range": {"start": 2, "end": 5}})
        assert ranged["structured"]["reference"]["range"] == {"start": 2, "end": 5}


async def test_the_callers_own_session_is_never_offered(fx, mode):
    async with connect(fx, mcp_args(fx, "--caller", "in-project", sources=False), mode) as c:
        listed = [s["id"] for s in (await c.ok("list_sessions", {}))["structured"]["sessions"]]
        assert "in-project" not in listed and "in-sub" in listed
        hits = (await c.ok("search_sessions", {"query": "zebracorn"}))["structured"]["results"]
        assert hits == []
        r = await c.call("read_session", {"id": "in-project"})
        assert r["isError"] and "SELF_REFERENCE" in r["text"]
    async with connect(fx, mcp_args(fx, sources=False), mode) as c:
        listed = (await c.ok("list_sessions", {}, meta={CALLER_META_KEY: "in-sub"}))["structured"]["sessions"]
        assert "in-sub" not in [s["id"] for s in listed]


async def test_a_project_below_the_working_directory(fx, mode):
    async with connect(fx, mcp_args(fx, "--project", str(fx.project / "sub"), sources=False), mode, cwd=fx.tmp) as c:
        listed = [s["id"] for s in (await c.ok("list_sessions", {}))["structured"]["sessions"]]
        assert listed == ["in-sub"], listed


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_")]


async def main():
    global BIN
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("-k", default="")
    a = p.parse_args()
    BIN = str(Path(a.binary).resolve())
    modes = ["auto", "legacy"] if MAJOR >= 2 else ["initialize"]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        fx = Fixture(tmp)
        for mode in modes:
            for t in TESTS:
                name = f"mcp {mcp_version()} {mode}: {t.__name__}"
                if a.k not in name:
                    continue
                try:
                    await asyncio.wait_for(t(fx, mode if MAJOR >= 2 else None), timeout=120)
                except Exception:  # noqa: BLE001 - report every failure and go on
                    failed += 1
                    print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)
                else:
                    passed += 1
                    print(f"ok   {name}", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


def mcp_version():
    from importlib.metadata import version

    return version("mcp")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
