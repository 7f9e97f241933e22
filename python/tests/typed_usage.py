"""A typed host and typed calls: checked by ``mypy --strict`` in
run-tests.sh, and run by test_readme.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List, Optional

import dsh_session_reference as dsr
from dsh_session_reference import Candidate, Page, Prepared, Reference, SessionQuery, Target


class Host:
    """A synchronous host: snapshots as JSON bytes."""

    def __init__(self) -> None:
        self.snapshot: Dict[str, Any] = {
            "session": {"id": "a", "createdAt": 1},
            "capturedThroughSeq": 0,
            "events": [{"seq": 0, "type": "user/message",
                        "data": {"role": "user", "source": {"kind": "user"},
                                 "content": [{"type": "text", "text": "hello"}]}}],
        }

    def list_sessions(self) -> List[Dict[str, Any]]:
        return [self.snapshot["session"]]

    def read_title(self, session_id: str) -> Optional[str]:
        return None

    def read_surface(self, session_id: str) -> bytes:
        return json.dumps(self.snapshot).encode()


class AsyncHost:
    """An asynchronous host over the same data."""

    def __init__(self) -> None:
        self.inner = Host()

    async def list_sessions(self) -> List[Dict[str, Any]]:
        return self.inner.list_sessions()

    async def read_title(self, session_id: str) -> Optional[str]:
        return "Title"

    async def read_surface(self, session_id: str) -> Dict[str, Any]:
        return self.inner.snapshot


def run() -> None:
    target: Target = {"id": "t", "cwd": None}
    query: SessionQuery = Host()
    resolver = dsr.Resolver(query, max_reference_bytes=4096)
    prepared: Prepared = resolver.prepare(target, [{"type": "text", "text": "hi"}], [{"sessionId": "a"}])
    assert "additionalContext" in prepared
    parsed = dsr.parse_text("see " + dsr.format_mention("a"))
    resolver.prepare(target, [], parsed["references"])
    found: List[Candidate] = resolver.candidates(target, cancel=dsr.CancelToken())
    assert found[0]["sessionId"] == "a"
    excerpt: Reference = {"sessionId": "a", "range": {"start": 0, "end": 1}}
    ranged: Prepared = resolver.prepare(target, [], [excerpt])
    assert ranged["additionalContext"]["source"]["references"][0]["range"] == {"start": 0, "end": 1}
    page: Page = resolver.read(target, "a", max_bytes=2048)
    assert page["messages"][0]["text"] == "hello" and "nextCursor" not in page

    async def main() -> None:
        aresolver = dsr.Resolver(AsyncHost())
        out = await aresolver.prepare_async(target, [], [{"sessionId": "a", "label": "A"}])
        assert out["content"] == []
        listed = await aresolver.list_candidates_async(target, "", 10)
        assert listed[0]["label"] == "Title"
        apage: Page = await aresolver.read_async(target, "a", around=0)
        assert apage["label"] == "Title" and apage["totalMessages"] == 1

    asyncio.run(main())
    try:
        dsr.decode_uri("nope")
    except dsr.SessionReferenceError as error:
        assert error.code == "SESSION_REFERENCE_INVALID_REFERENCE"


if __name__ == "__main__":
    run()
