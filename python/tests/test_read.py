"""Bounded reads (``read``, ``read_async``) and excerpts in ``prepare``:
pages within their budget that add up to the whole conversation, cursors
both ways, ``around`` centring, a changed session, the errors, and ranges
that carry only part of a session while references without them are
unchanged."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List

import pytest

import dsh_session_reference as dsr
from helpers import snapshot

TARGET = {"id": "me", "cwd": "/w"}
HEADER_END = "<referenced-session-page>\n"
FOOTER = "\n</referenced-session-page>"


class Host:
    """One session ``s`` of ``n`` messages, changeable."""

    def __init__(self, n: int) -> None:
        self.texts = [f"message {i} <b> " + "word " * (i % 7 * 5) for i in range(n)]

    def list_sessions(self) -> List[Dict[str, Any]]:
        return [{"id": "s", "createdAt": 1}]

    def read_title(self, session_id: str) -> str:
        return "Plans <v2>"

    def read_surface(self, session_id: str) -> Dict[str, Any]:
        return snapshot("s", self.texts, cwd="/w")


def check(page: Dict[str, Any], host: Host, budget: int) -> List[int]:
    text = page["text"]
    assert len(text.encode()) <= budget
    assert text.count("<") == 2, "only the two tags"
    body = json.loads(text[text.index(HEADER_END) + len(HEADER_END) : -len(FOOTER)])
    assert body["totalMessages"] == page["totalMessages"] == len(host.texts)
    indexes = [m["index"] for m in page["messages"]]
    assert indexes == list(range(indexes[0], indexes[0] + len(indexes))) if indexes else True
    for m, framed in zip(page["messages"], body["messages"]):
        assert framed["text"] == m["text"]
        if "omittedBytes" not in m:
            assert m["text"] == host.texts[m["index"]]
    return indexes


def test_forward_pages_add_up_to_the_conversation() -> None:
    host = Host(25)
    r = dsr.Resolver(host)
    seen: List[int] = []
    page = r.read(TARGET, "s", start=0, max_bytes=900)
    assert "prevCursor" not in page and page["label"] == "Plans <v2>"
    # The keys are the declared Page's (tests/mcp checks MCP and the CLI name them the same).
    declared = set(dsr.Page.__annotations__)
    assert set(page) <= declared and {"sessionId", "label", "cwd", "text"} <= declared, set(page) - declared
    while True:
        seen += check(page, host, 900)
        if "nextCursor" not in page:
            break
        page = r.read(TARGET, "s", cursor=page["nextCursor"], max_bytes=900)
    assert seen == list(range(25))


def test_newest_first_then_back_and_around() -> None:
    host = Host(25)
    r = dsr.Resolver(host)
    page = r.read(TARGET, "s", max_bytes=900)
    assert page["messages"][-1]["index"] == 24 and "nextCursor" not in page
    back = r.read(TARGET, "s", cursor=page["prevCursor"], max_bytes=900)
    assert back["messages"][-1]["index"] == page["messages"][0]["index"] - 1
    around = r.read(TARGET, "s", around=12, max_bytes=900)
    got = check(around, host, 900)
    assert 12 in got and abs((12 - got[0]) - (got[-1] - 12)) <= 1
    past = r.read(TARGET, "s", start=99)
    assert past["messages"] == [] and "prevCursor" in past


def test_async_read_and_a_changed_session() -> None:
    host = Host(10)
    r = dsr.Resolver(host)

    async def main() -> Dict[str, Any]:
        return await r.read_async(TARGET, "s", start=0, max_bytes=700)

    page = asyncio.run(main())
    assert page["messages"][0]["index"] == 0 and "nextCursor" in page
    host.texts.append("a new message")
    with pytest.raises(dsr.SessionChangedError) as caught:
        r.read(TARGET, "s", cursor=page["nextCursor"])
    assert caught.value.code == "SESSION_REFERENCE_SESSION_CHANGED"


def test_read_errors() -> None:
    r = dsr.Resolver(Host(3))
    with pytest.raises(dsr.SelfReferenceError):
        r.read({"id": "s"}, "s")
    for bad in [{"start": 1, "around": 2}, {"start": -1}, {"max_bytes": 0}, {"cursor": "nope"}, {"max_tokens": 1.5}]:
        with pytest.raises(dsr.InvalidReferenceError):
            r.read(TARGET, "s", **bad)
    with pytest.raises(dsr.BudgetExceededError):
        r.read(TARGET, "s", max_bytes=100)
    with pytest.raises(TypeError):
        r.read(TARGET, 5)  # type: ignore[arg-type]
    token = dsr.CancelToken()
    token.cancel()
    with pytest.raises(dsr.OperationCancelledError):
        r.read(TARGET, "s", cancel=token)


def test_hardened_pages() -> None:
    host = Host(2)
    host.texts[1] = "key ghp_abcdefghijklmnopqrstuvwxyz0123456789 \u202e"
    plain = dsr.Resolver(host).read(TARGET, "s")
    hardened = dsr.Resolver(host, hardened=True).read(TARGET, "s")
    assert "ghp_" in plain["text"] and "redactedSecrets" not in plain
    assert "ghp_" not in hardened["text"] and "\\u202e" in hardened["text"]
    assert hardened["redactedSecrets"] == 1


def test_excerpts_in_prepare_and_unchanged_without() -> None:
    r = dsr.Resolver(Host(8))
    whole = r.prepare(TARGET, [], [{"sessionId": "s"}])
    same = r.prepare(TARGET, [], [{"sessionId": "s", "range": None, "around": None}])
    whole_ctx, same_ctx = whole["additionalContext"], same["additionalContext"]
    assert whole_ctx["content"] == same_ctx["content"] and whole_ctx["source"] == same_ctx["source"]
    assert "range" not in whole_ctx["source"]["references"][0]
    ranged = r.prepare(TARGET, [], [{"sessionId": "s", "range": {"start": 2, "end": 4}}])["additionalContext"]
    meta = ranged["source"]["references"][0]
    assert meta["range"] == {"start": 2, "end": 4} and meta["originalMessages"] == 2
    prompt = ranged["content"][0]["text"]
    assert '"range":{"start":2,"end":4},"conversation":[' in prompt
    assert "message 2 " in prompt and "message 3 " in prompt and "message 4 " not in prompt
    around = r.prepare(TARGET, [], [{"sessionId": "s", "around": 7}])["additionalContext"]
    assert around["source"]["references"][0]["around"] == 7
    with pytest.raises(dsr.InvalidReferenceError):
        r.prepare(TARGET, [], [{"sessionId": "s", "range": {"start": 3, "end": 3}}])
