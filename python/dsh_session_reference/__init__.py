"""Bring a bounded, read-only, tamper-proof snapshot of another conversation
into a new message — byte-identical to the DeepSeek Harness reference.

The host implements :class:`SessionQuery` (list sessions, read a title, read
a surface snapshot); :class:`Resolver` does everything else. See the README
for an example.
"""

from __future__ import annotations

import atexit
import os
from typing import Any, List, Optional, Sequence, Mapping

from . import _bridge
from . import _native
from ._errors import (
    BudgetExceededError,
    InvalidConfigError,
    InvalidReferenceError,
    OperationCancelledError,
    ReadFailedError,
    SelfReferenceError,
    SessionChangedError,
    SessionReferenceError,
    TooManyReferencesError,
)
from ._native import (
    REDACTED_SECRETS_KEY,
    CancelToken,
    DshSessionStore,
    SessionSources,
    __version__,
    conversation_snapshot,
    decode_uri,
    encode_uri,
    format_mention,
    parse_text,
    stringify_tag_safe,
    stringify_tag_safe_json,
)
from ._native import Resolver as _NativeResolver
from ._types import (
    Candidate,
    MessageRange,
    Page,
    PageMessage,
    ParsedReference,
    ParsedText,
    Prepared,
    Reference,
    SearchResult,
    SearchScope,
    SessionQuery,
    Target,
)

__all__ = [
    "__version__",
    "REDACTED_SECRETS_KEY",
    "Resolver",
    "CancelToken",
    "DshSessionStore",
    "SessionSources",
    "SessionQuery",
    "encode_uri",
    "decode_uri",
    "format_mention",
    "parse_text",
    "stringify_tag_safe",
    "stringify_tag_safe_json",
    "conversation_snapshot",
    "SessionReferenceError",
    "InvalidConfigError",
    "InvalidReferenceError",
    "SelfReferenceError",
    "TooManyReferencesError",
    "ReadFailedError",
    "BudgetExceededError",
    "OperationCancelledError",
    "SessionChangedError",
    "Target",
    "Reference",
    "ParsedReference",
    "ParsedText",
    "Prepared",
    "Candidate",
    "SearchResult",
    "MessageRange",
    "Page",
    "PageMessage",
]


class Resolver(_NativeResolver):
    """Prepares bounded, tag-safe snapshots of other sessions for a new
    message, reading through ``query`` (any :class:`SessionQuery`).

    ``Resolver(query, *, max_references=3, max_reference_bytes=65536,
    candidate_limit=50, hardened=False, redact_secrets=None,
    escape_invisible=None, sanitize_labels=None)``; ``None`` takes the
    default and an invalid value (a non-``bool`` for the last four) raises
    :class:`InvalidConfigError`. ``hardened=True`` turns the hardened mode's
    three protections on (an explicit ``False`` for one of them wins):
    credentials redacted (metadata key :data:`REDACTED_SECRETS_KEY`),
    invisible characters escaped, labels sanitized; see ``docs/security.md``.

    Every blocking method releases the GIL for the whole call. Each has an
    ``async`` twin for asyncio code; cancelling the task that awaits it
    cancels the work. Every method takes ``cancel=`` (a :class:`CancelToken`)
    and then raises :class:`OperationCancelledError` promptly once the token
    is cancelled, even if a host read never returns.
    """

    async def prepare_async(
        self,
        target: Target,
        content: Any,
        references: Sequence[Mapping[str, Any]],
        *,
        cancel: Optional[CancelToken] = None,
        context_window: Optional[int] = None,
    ) -> Prepared:
        """The ``async`` twin of :meth:`prepare`."""
        result: Prepared = await _bridge.call(
            self._start_prepare, target, content, references, context_window, cancel=cancel
        )
        return result

    async def prepare_messages_async(
        self,
        target: Target,
        messages: Sequence[Mapping[str, Any]],
        *,
        cancel: Optional[CancelToken] = None,
    ) -> List[Any]:
        """The ``async`` twin of :meth:`prepare_messages`."""
        result: List[Any] = await _bridge.call(
            self._start_prepare_messages, target, messages, cancel=cancel
        )
        return result

    def list_candidates(
        self,
        target: Target,
        query: str = "",
        limit: Optional[int] = None,
        *,
        cancel: Optional[CancelToken] = None,
    ) -> List[Candidate]:
        """Sessions the target may reference, ranked and filtered, at most
        ``limit``: :meth:`candidates` without the ``"mention"`` of each item
        (``mentions=False``). Releases the GIL while it runs."""
        return self.candidates(target, query, limit, cancel=cancel, mentions=False)

    async def list_candidates_async(
        self,
        target: Target,
        query: str = "",
        limit: Optional[int] = None,
        *,
        cancel: Optional[CancelToken] = None,
    ) -> List[Candidate]:
        """The ``async`` twin of :meth:`list_candidates`."""
        return await self.candidates_async(target, query, limit, cancel=cancel, mentions=False)

    async def search_async(
        self,
        target: Target,
        query: str,
        *,
        limit: Optional[int] = None,
        scope: Optional[SearchScope] = None,
        cancel: Optional[CancelToken] = None,
    ) -> List[SearchResult]:
        """The ``async`` twin of :meth:`search`."""
        result: List[SearchResult] = await _bridge.call(
            self._start_search, target, query, limit, scope, cancel=cancel
        )
        return result

    async def read_async(
        self,
        target: Target,
        session_id: str,
        *,
        start: Optional[int] = None,
        around: Optional[int] = None,
        cursor: Optional[str] = None,
        max_bytes: Optional[int] = None,
        max_tokens: Optional[int] = None,
        cancel: Optional[CancelToken] = None,
    ) -> Page:
        """The ``async`` twin of :meth:`read`."""
        result: Page = await _bridge.call(
            self._start_read,
            target,
            session_id,
            start,
            around,
            cursor,
            max_bytes,
            max_tokens,
            cancel=cancel,
        )
        return result

    async def candidates_async(
        self,
        target: Target,
        query: str = "",
        limit: Optional[int] = None,
        *,
        cancel: Optional[CancelToken] = None,
        mentions: bool = True,
    ) -> List[Candidate]:
        """The ``async`` twin of :meth:`candidates`."""
        result: List[Candidate] = await _bridge.call(
            self._start_candidates, target, query, limit, mentions, cancel=cancel
        )
        return result


def _at_exit() -> None:
    """Before the interpreter finalizes, no thread of the package may be
    running Python code: CPython (before 3.14) ends a thread that takes the
    GIL back after that point with ``pthread_exit``, which crashed the
    process when it unwound native frames. So: end the background loop of
    host coroutines, then stop the library's threads from calling Python
    and wait (briefly) for those that still are. Registered at import, so
    it runs after the atexit handlers registered later; the library's
    threads make no Python call from then on (a host read then fails)."""
    _bridge.stop_background_loop(1.0)
    _native._wait_for_library_threads(2.0)


atexit.register(_at_exit)
# A forked child has none of its parent's library threads to wait for.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_native._after_fork_in_child)
