"""Helpers shared by the tests (which run against the installed wheel)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional

REPO = Path(__file__).resolve().parents[2]


def conformance_dir() -> Path:
    """``$DSR_CONFORMANCE_DIR``, else the project's ``tests/conformance``."""
    override = os.environ.get("DSR_CONFORMANCE_DIR")
    return Path(override) if override else REPO / "tests" / "conformance"


def vectors(name: str) -> Any:
    """One vector file of the conformance set (must be present and non-empty)."""
    path = conformance_dir() / name
    with path.open(encoding="utf-8") as f:
        data = json.load(f)
    assert data, f"{path} holds no vectors"
    return data


FIXTURES = REPO / "tests" / "fixtures" / "dsh-logs"


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Polls ``predicate`` until it holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def thread_is_running_python(ident: int) -> bool:
    """Whether the thread ``ident`` currently has a Python frame."""
    return ident in sys._current_frames()


class Counter(threading.Thread):
    """A Python thread that counts as fast as it can until stopped; proves
    that the GIL is free while the main thread waits in the library."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.count = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.count += 1

    def __enter__(self) -> "Counter":
        self.start()
        wait_until(lambda: self.count > 0)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.join()


class MemoryHost:
    """A session query over dicts, in one of several styles:

    - ``dict``: plain methods returning Python data;
    - ``bytes`` / ``str``: plain methods returning JSON text;
    - ``async``: ``async def`` methods returning Python data.
    """

    def __init__(
        self,
        style: str = "dict",
        surfaces: Optional[Dict[str, Any]] = None,
        sessions: Optional[List[Dict[str, Any]]] = None,
        titles: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.style = style
        self.surfaces = surfaces or {}
        self.sessions = sessions or []
        self.titles = titles or {}
        self.calls: List[str] = []

    def _encode(self, value: Any) -> Any:
        if self.style == "bytes":
            return json.dumps(value, ensure_ascii=False).encode("utf-8")
        if self.style == "str":
            return json.dumps(value)
        return value

    def _list(self) -> Any:
        self.calls.append("list_sessions")
        return self._encode(self.sessions)

    def _title(self, session_id: str) -> Optional[str]:
        self.calls.append(f"read_title:{session_id}")
        title = self.titles.get(session_id)
        if isinstance(title, dict):
            raise RuntimeError(title["rejected"])
        return title

    def _surface(self, session_id: str) -> Any:
        self.calls.append(f"read_surface:{session_id}")
        if session_id not in self.surfaces:
            raise KeyError(session_id)
        return self._encode(self.surfaces[session_id])


class SyncHost(MemoryHost):
    def list_sessions(self) -> Any:
        return self._list()

    def read_title(self, session_id: str) -> Optional[str]:
        return self._title(session_id)

    def read_surface(self, session_id: str) -> Any:
        return self._surface(session_id)


class AsyncHost(MemoryHost):
    async def list_sessions(self) -> Any:
        return self._list()

    async def read_title(self, session_id: str) -> Optional[str]:
        return self._title(session_id)

    async def read_surface(self, session_id: str) -> Any:
        return self._surface(session_id)


def make_host(style: str, **kwargs: Any) -> MemoryHost:
    """A host of the given style (``dict``, ``bytes``, ``str`` or ``async``)."""
    if style == "async":
        return AsyncHost("dict", **kwargs)
    return SyncHost(style, **kwargs)


def snapshot(session_id: str, texts: Iterable[str], cwd: Optional[str] = None) -> Dict[str, Any]:
    """A surface snapshot alternating user and assistant messages."""
    events = []
    for seq, text in enumerate(texts):
        block = [{"type": "text", "text": text}]
        if seq % 2 == 0:
            data: Dict[str, Any] = {"role": "user", "content": block, "source": {"kind": "user"}}
            events.append({"seq": seq, "type": "user/message", "data": data})
        else:
            data = {"message": {"role": "assistant", "content": block}}
            events.append({"seq": seq, "type": "assistant/message", "data": data})
    session: Dict[str, Any] = {"id": session_id, "createdAt": 1700000000000}
    if cwd is not None:
        session["cwd"] = cwd
    return {"session": session, "capturedThroughSeq": len(events) - 1 if events else None, "events": events}
