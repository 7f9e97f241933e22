"""Types of ``dsh_session_reference``: the shapes of the values it takes and
returns (with the contract's JSON keys) and :class:`SessionQuery`, the
protocol a host implements."""

from __future__ import annotations

import sys
from typing import Any, Awaitable, Dict, List, Literal, Mapping, Optional, Sequence, Union

if sys.version_info >= (3, 11):
    from typing import Protocol, TypedDict
else:  # pragma: no cover - Protocol and TypedDict exist since 3.8
    from typing import Protocol, TypedDict

__all__ = [
    "Target",
    "Reference",
    "MessageRange",
    "ParsedReference",
    "ParsedText",
    "Prepared",
    "Candidate",
    "Page",
    "PageMessage",
    "SessionHeaders",
    "Surface",
    "SessionQuery",
]


class _TargetRequired(TypedDict):
    id: str


class Target(_TargetRequired, total=False):
    """The session about to send a message: ``{"id": str, "cwd": str | None}``."""

    cwd: Optional[str]


class _ReferenceRequired(TypedDict):
    sessionId: str


class _MessageRangeRequired(TypedDict):
    start: int


class MessageRange(_MessageRangeRequired, total=False):
    """A run of messages by index: ``start`` to ``end - 1`` (``end``
    exclusive; without it, through the last message)."""

    end: Optional[int]


class Reference(_ReferenceRequired, total=False):
    """One structured reference: ``{"sessionId": str, "label"?: str}``, and
    at most one excerpt: ``"range"`` (only that run of messages) or
    ``"around"`` (that message index and the messages around it that fit)."""

    label: str
    range: Optional[MessageRange]
    around: Optional[int]


class ParsedReference(TypedDict):
    """A reference found by :func:`parse_text`."""

    sessionId: str
    label: str


class ParsedText(TypedDict):
    """The result of :func:`parse_text`."""

    text: str
    references: List[ParsedReference]


class _PreparedRequired(TypedDict):
    content: Any


class Prepared(_PreparedRequired, total=False):
    """The result of ``prepare``: a copy of the content and, when there were
    references, the context message to send right after it."""

    additionalContext: Dict[str, Any]


class _CandidateRequired(TypedDict):
    sessionId: str
    label: str
    createdAt: Union[int, float]


class Candidate(_CandidateRequired, total=False):
    """A session the target may reference. ``cwd`` is absent when the session
    has none; ``mention`` is set by ``candidates()`` only."""

    cwd: str
    mention: str


class _SearchResultRequired(_CandidateRequired):
    mention: str
    snippet: str
    field: Literal["title", "message", "id", "cwd"]
    messageIndex: Optional[int]


class SearchResult(_SearchResultRequired, total=False):
    """One session found by ``search()``: the candidate fields with its
    mention, a snippet around the best hit, where that hit is (``field``)
    and, for a hit in a message, its index among the projected messages.
    ``cwd`` is absent when the session has none."""

    cwd: str


class _PageMessageRequired(TypedDict):
    index: int
    role: Literal["user", "assistant"]
    text: str
    checkpoint: bool


class PageMessage(_PageMessageRequired, total=False):
    """One message of a :class:`Page`: its index among the session's
    projected messages, who said it, its text (cut head/tail with an
    omission notice when it alone exceeded the budget: ``omittedBytes`` is
    then present) and whether it is a compaction checkpoint."""

    omittedBytes: int


class _PageRequired(TypedDict):
    sessionId: str
    label: str
    totalMessages: int
    capturedThroughSeq: Optional[Union[int, float]]
    messages: List[PageMessage]
    text: str


class Page(_PageRequired, total=False):
    """The result of ``read()``: one page of a session. ``text`` is the
    framed text for a model (an untrusted-background warning around
    tag-safe JSON), at most the budget in UTF-8 bytes; ``nextCursor`` and
    ``prevCursor`` continue forward and backward (absent at the ends);
    ``cwd`` is absent when the session has none; ``redactedSecrets`` is
    present under ``redact_secrets``."""

    cwd: str
    nextCursor: str
    prevCursor: str
    redactedSecrets: int


SearchScope = Union[Literal["all"], Literal["cwd"]]
"""Which sessions ``search()`` looks at: all, or only the target's cwd."""


SessionHeaders = Union[Sequence[Mapping[str, Any]], str, bytes]
"""What ``list_sessions()`` returns: a list of ``{"id", "createdAt", "cwd"?}``
dicts in creation order, or that list as JSON text (``str`` or ``bytes``)."""

Surface = Union[Mapping[str, Any], str, bytes]
"""What ``read_surface()`` returns: the snapshot dict
``{"session", "capturedThroughSeq", "events"}``, or the snapshot as JSON
text. ``bytes`` reach the library without a copy (fastest)."""


class SessionQuery(Protocol):
    """What a :class:`Resolver` reads through. Each method may be a plain
    method or ``async def``; a method that raises makes that read fail
    (``ReadFailedError`` with the exception as ``__cause__``).

    Plain methods are called on the library's worker threads, possibly
    concurrently, so they must be thread-safe. ``async`` methods run on the
    event loop of the ``*_async`` call that needs them, or, for a blocking
    call, on the package's own background event loop thread.

    Runtime requirements are stricter than these types: the sessions must
    be a ``list`` or ``tuple`` and the snapshot a ``dict``, when not JSON.
    """

    def list_sessions(self) -> Union[SessionHeaders, Awaitable[SessionHeaders]]:
        """All sessions, in creation order."""
        ...

    def read_title(self, session_id: str, /) -> Union[Optional[str], Awaitable[Optional[str]]]:
        """The latest title of a session, or ``None``."""
        ...

    def read_surface(self, session_id: str, /) -> Union[Surface, Awaitable[Surface]]:
        """The current surface snapshot of a session.

        Two more methods are optional (not part of this protocol's
        requirements; the resolver looks for them):

        - ``fingerprints(session_ids: list[str]) -> list[str | bytes | int |
          None] | None``: change detection. One value per id that changes
          whenever the session may have changed (a log file's device, inode,
          size and mtime; a version number). The resolver caches titles and
          indexed texts under them; ``None`` (or no method) caches nothing.
        - ``search(request: dict) -> list[dict] | None``: the host's own
          search (``request`` is ``{"target", "query", "limit", "scope"}``).
          Return results ``{"sessionId", "createdAt", "label"?, "cwd"?,
          "snippet"?, "field"?, "messageIndex"?}`` best first, or ``None`` to
          let the resolver use its built-in index.
        """
        ...
