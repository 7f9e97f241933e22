"""Full-text search: sync and async, the discovery caches under a host's
fingerprints, a host's own search, errors and cancellation."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

import dsh_session_reference as dsr
from helpers import FIXTURES, snapshot

TARGET = {"id": "me", "cwd": "/w"}


class Host:
    """Sessions in memory, counting reads; fingerprints when asked to."""

    def __init__(self, fingerprints: bool = True) -> None:
        self.sessions: List[Dict[str, Any]] = []
        self.titles: Dict[str, Optional[str]] = {}
        self.surfaces: Dict[str, Any] = {}
        self.versions: Dict[str, int] = {}
        self.reads = 0
        self.with_fingerprints = fingerprints
        if fingerprints:
            self.fingerprints = self._fingerprints

    def add(self, sid: str, created: int, cwd: Optional[str], title: Optional[str], texts: List[str]) -> None:
        self.sessions = [s for s in self.sessions if s["id"] != sid]
        header: Dict[str, Any] = {"id": sid, "createdAt": created}
        if cwd is not None:
            header["cwd"] = cwd
        self.sessions.append(header)
        self.titles[sid] = title
        self.surfaces[sid] = snapshot(sid, texts, cwd=cwd)
        self.versions[sid] = self.versions.get(sid, 0) + 1

    def list_sessions(self) -> List[Dict[str, Any]]:
        return list(self.sessions)

    def read_title(self, sid: str) -> Optional[str]:
        return self.titles.get(sid)

    def read_surface(self, sid: str) -> Any:
        self.reads += 1
        return self.surfaces[sid]

    def _fingerprints(self, ids: List[str]) -> List[Any]:
        return [self.versions.get(i) for i in ids]


def filled(fingerprints: bool = True) -> Host:
    h = Host(fingerprints)
    h.add("old", 1, "/w", None, ["we need a title index", "ok"])
    h.add("new", 2, "/w", None, ["a title index, finally"])
    h.add("titled", 0, "/x", "The Title Index", ["unrelated"])
    h.add("cjk", 3, None, None, ["发布版本 PR1137 已合并"])
    h.add("me", 9, "/w", "title index", ["title index"])
    return h


def test_search_ranks_and_snippets() -> None:
    r = dsr.Resolver(filled())
    found = r.search(TARGET, "title index")
    assert [f["sessionId"] for f in found] == ["titled", "new", "old"]
    assert found[0]["field"] == "title" and found[0]["messageIndex"] is None
    assert found[2] == {
        "sessionId": "old",
        "label": "old",
        "cwd": "/w",
        "createdAt": 1,
        "mention": dsr.format_mention("old", "old"),
        "snippet": "we need a title index",
        "field": "message",
        "messageIndex": 0,
    }
    assert [f["sessionId"] for f in r.search(TARGET, "版本")] == ["cjk"]
    assert r.search(TARGET, "1137")[0]["snippet"] == "发布版本 PR1137 已合并"
    assert [f["sessionId"] for f in r.search(TARGET, "title index", scope="cwd")] == ["new", "old"]
    assert len(r.search(TARGET, "title index", limit=1)) == 1
    assert r.search(TARGET, "   ") == []


def test_search_caches_under_fingerprints_and_stays_exact() -> None:
    h = filled()
    r = dsr.Resolver(h)
    r.search(TARGET, "index")
    first = h.reads
    assert first == 4
    r.search(TARGET, "index")
    assert h.reads == first, "nothing changed: nothing read"
    h.add("old", 1, "/w", None, ["now about brotli"])
    assert [f["sessionId"] for f in r.search(TARGET, "brotli")] == ["old"]
    assert h.reads == first + 1
    h.sessions = [s for s in h.sessions if s["id"] != "new"]
    assert [f["sessionId"] for f in r.search(TARGET, "finally")] == []
    # Without fingerprints every search reads every surface.
    plain = filled(fingerprints=False)
    rp = dsr.Resolver(plain)
    rp.search(TARGET, "index")
    rp.search(TARGET, "index")
    assert plain.reads == 8


def test_search_async_and_cancel() -> None:
    r = dsr.Resolver(filled())

    async def main() -> List[Any]:
        return await r.search_async(TARGET, "finally", limit=5)

    assert [f["sessionId"] for f in asyncio.run(main())] == ["new"]

    class Slow(Host):
        def read_surface(self, sid: str) -> Any:
            time.sleep(5)
            return super().read_surface(sid)

    slow = Slow()
    slow.add("a", 1, None, None, ["x"])
    token = dsr.CancelToken()
    threading.Timer(0.1, token.cancel).start()
    started = time.monotonic()
    with pytest.raises(dsr.OperationCancelledError):
        dsr.Resolver(slow).search(TARGET, "x", cancel=token)
    assert time.monotonic() - started < 3


def test_search_errors() -> None:
    r = dsr.Resolver(filled())
    with pytest.raises(dsr.InvalidReferenceError):
        r.search(TARGET, "x", limit=0)
    with pytest.raises(dsr.InvalidReferenceError):
        r.search(TARGET, "x", scope="near")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        r.search(TARGET, 5)  # type: ignore[arg-type]


class OwnSearch(Host):
    def search(self, request: Dict[str, Any]) -> Optional[List[Dict[str, Any]]]:
        if request["query"] == "builtin":
            return None
        assert request == {"target": {"id": "me", "cwd": "/w"}, "query": "pg", "limit": 50, "scope": "all"}
        return [
            {"sessionId": "me", "createdAt": 1},
            {"sessionId": "remote", "createdAt": 5, "label": "From Postgres", "snippet": "s", "messageIndex": 4},
        ]


def test_a_host_search_answers_instead_of_the_index() -> None:
    h = OwnSearch()
    h.add("local", 1, None, None, ["builtin words"])
    r = dsr.Resolver(h)
    found = r.search(TARGET, "pg")
    assert [f["sessionId"] for f in found] == ["remote"]
    assert found[0]["mention"] == dsr.format_mention("remote", "From Postgres")
    assert found[0]["messageIndex"] == 4 and found[0]["field"] == "message"
    assert [f["sessionId"] for f in r.search(TARGET, "builtin")] == ["local"]


def test_search_over_the_dsh_store() -> None:
    store = dsr.DshSessionStore(str(FIXTURES / "raw"))
    found = dsr.Resolver(store).search({"id": "t", "cwd": "/home/dev/alpha"}, "recovered")
    assert [(f["sessionId"], f["snippet"], f["messageIndex"]) for f in found] == [
        ("compaction-recovery", "COMPACTION RECOVERED", 1)
    ]
