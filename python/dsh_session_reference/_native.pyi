"""The compiled module: Python bindings of the Rust core. Use the package
``dsh_session_reference``, which re-exports these names and adds the
``async`` methods, the exceptions and the typing protocols."""

import os
import pathlib
from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union, final

from typing_extensions import disjoint_base

from ._types import Candidate, Page, ParsedText, Prepared, SearchResult, SearchScope, SessionQuery, Target

__all__ = [
    "__version__",
    "REDACTED_SECRETS_KEY",
    "encode_uri",
    "decode_uri",
    "format_mention",
    "parse_text",
    "stringify_tag_safe",
    "stringify_tag_safe_json",
    "conversation_snapshot",
    "_bench_prepare_rust",
    "_bench_candidates_rust",
    "_wait_for_library_threads",
    "_after_fork_in_child",
    "CancelToken",
    "Resolver",
    "DshSessionStore",
    "SessionSources",
]

__version__: str
REDACTED_SECRETS_KEY: str
"""``"redactedSecrets"``: the metadata key, in each ``source.references``
entry of a context message, that counts the credentials redacted from that
source; present only when ``redact_secrets`` is on."""

_T = TypeVar("_T")

def encode_uri(session_id: str) -> str:
    """The canonical ``dsh-session:`` URI of a session id."""

def decode_uri(uri: str) -> str:
    """The session id of a canonical ``dsh-session:`` URI; anything else raises
    ``InvalidReferenceError``."""

def format_mention(session_id: str, label: Optional[str] = None) -> str:
    """The mention ``@[label](uri)`` of a session; the label defaults to the id."""

def parse_text(text: str) -> ParsedText:
    """Replaces every mention and bare URI in ``text`` by ``@label``; a
    recognised token whose URI is not canonical raises ``InvalidReferenceError``."""

def stringify_tag_safe(value: Any) -> str:
    """Tag-safe JSON of a Python value (``JSON.stringify`` with every ``<``
    written as ``\\u003c``). Non-finite floats become ``null``."""

def stringify_tag_safe_json(text: Union[str, bytes]) -> str:
    """Tag-safe JSON of a JSON text read as ``JSON.parse`` reads it; raises
    ``ValueError`` when the text is not JSON."""

def conversation_snapshot(
    session_id: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    format: str = "openai",
    cwd: Optional[str] = None,
    captured_through_seq: Optional[int] = None,
) -> Dict[str, Any]:
    """A pre-projected surface snapshot of a host's own message list, to
    return from ``read_surface``: ``{"session", "capturedThroughSeq",
    "conversation"}``. ``format`` is ``"openai"`` or ``"anthropic"``; only
    user and assistant text is kept. ``captured_through_seq`` defaults to the
    index of the last message. Raises ``ValueError`` for messages of the
    wrong shape."""

def _wait_for_library_threads(timeout: float) -> bool:
    """Private: stops library threads from calling into Python from now on,
    then waits up to ``timeout`` seconds, with the GIL released, until none
    is running Python code; whether none is. Registered with ``atexit`` by
    the package."""

def _after_fork_in_child() -> None:
    """Private: resets the count of library threads calling into Python in
    a child created by ``fork()``. Registered with ``os.register_at_fork``
    by the package."""

def _bench_prepare_rust(
    snapshots: Dict[str, bytes],
    references: Sequence[Mapping[str, Any]],
    iterations: int,
    max_reference_bytes: Optional[int] = None,
) -> float:
    """Private (``python/bench``): seconds for ``iterations`` core ``prepare``
    calls of ``references`` over ``snapshots``, entirely in Rust."""

def _bench_candidates_rust(resolver: Resolver, target: Mapping[str, Any], query: str) -> Tuple[float, int]:
    """Private (``scripts/sdk_discovery_bench.py``): seconds for one core
    ``candidates(target, query)`` of ``resolver``'s own core resolver,
    entirely in Rust, and how many candidates it gave."""

@final
class CancelToken:
    """A cancellation signal, shareable between calls and threads."""

    def __new__(cls: Type[_T]) -> _T:
        """A token that is not cancelled."""

    def cancel(self) -> None:
        """Cancels every call observing this token. Thread-safe and idempotent."""

    def is_cancelled(self) -> bool:
        """Whether ``cancel()`` has been called."""

@final
class DshSessionStore:
    """A read-only session query over a DSH sessions directory; as the
    ``query`` of a ``Resolver`` it is read natively, without Python calls."""

    def __new__(cls: Type[_T], root: Union[str, "os.PathLike[str]"]) -> _T:
        """Opens the sessions root (``OSError`` if it is not a readable directory)."""

    @property
    def root(self) -> pathlib.Path:
        """The root directory."""

    def list_sessions(self) -> List[Dict[str, Any]]:
        """The listed sessions' headers, newest ``createdAt`` first."""

    def read_title(self, session_id: str) -> Optional[str]:
        """The latest title of a session, or ``None``."""

    def read_surface(self, session_id: str) -> bytes:
        """The surface snapshot of a session as JSON bytes."""

@final
class SessionSources:
    """The sessions DSH and other agents keep on disk as one read-only query
    (ids ``<kind>:<id>`` such as ``claude-code:<uuid>``; DSH ids unchanged);
    as the ``query`` of a ``Resolver`` it is read natively."""

    def __new__(
        cls: Type[_T], sources: Optional[Sequence[Mapping[str, Any]]] = None
    ) -> _T:
        """Opens ``sources``: ``None`` for every default location that exists,
        else ``{"kind": KIND, "root": path or None}`` mappings, at most one per
        kind (``ValueError`` otherwise). KIND is one of ``dsh``,
        ``claude-code``, ``codex``, ``copilot-cli``, ``gemini-cli``,
        ``cursor``, ``aider`` (no default location: give its root),
        ``opencode``, ``kilo``, ``cline``, ``roo-code``, ``pi``, ``qwen-code``, ``continue``, ``kimi``, ``grok``, ``goose``, ``crush``, ``zed``, ``hermes``, ``warp``, ``openhands``; an unknown kind's
        ``ValueError`` lists them."""

    @property
    def sources(self) -> List[Tuple[str, pathlib.Path]]:
        """The sources opened, as ``(kind, root)`` pairs."""

    def list_sessions(self) -> List[Dict[str, Any]]:
        """Every source's sessions, newest ``createdAt`` first (``OSError``
        only when every source fails)."""

    def last_report(self) -> List[Dict[str, Any]]:
        """How each source fared in the last listing: ``{"name", "sessions"}``
        or ``{"name", "error"}``, with a ``"note"`` when there is one (a root
        given one level off taken for the one it means; why a source listed
        no session), and, when sessions of the source could not be read since
        that listing (a title or a text), ``"unreadable"`` (the first three,
        ``[{"sessionId", "why"}]``) and ``"unreadableCount"``."""

    def read_title(self, session_id: str) -> Optional[str]:
        """The title of a session, or ``None`` (``OSError`` when unreadable)."""

    def read_surface(self, session_id: str) -> bytes:
        """The surface snapshot as JSON bytes: DSH events, or a pre-projected
        ``conversation`` for another agent's session."""

@disjoint_base
class Resolver:
    """Prepares bounded, tag-safe snapshots of other sessions (the blocking
    methods; ``dsh_session_reference.Resolver`` adds the ``async`` twins)."""

    def __new__(
        cls: Type[_T],
        query: Union[SessionQuery, DshSessionStore],
        *,
        max_references: Optional[int] = 3,
        max_reference_bytes: Optional[int] = 65536,
        candidate_limit: Optional[int] = 50,
        hardened: Optional[bool] = False,
        redact_secrets: Optional[bool] = None,
        escape_invisible: Optional[bool] = None,
        sanitize_labels: Optional[bool] = None,
        dsh_compat: Optional[Literal["0.1.1", "0.1.5", "0.1.7"]] = "0.1.1",
        reference_context_fraction: Optional[float] = 0.2,
    ) -> _T:
        """Validates the configuration (``InvalidConfigError``) and checks that
        ``query`` has the three session-query methods (``TypeError``).

        ``hardened=True`` turns ``redact_secrets``, ``escape_invisible`` and
        ``sanitize_labels`` on; each of them given explicitly (``False`` too)
        wins over it. See ``docs/security.md``.

        ``dsh_compat`` selects the DSH release whose output is reproduced
        (``"0.1.1"``, the default, or ``"0.1.5"``/``"0.1.7"``: metadata with
        ``capturedFormatVersion``, a ``## Reference omissions`` section,
        candidates with ``sameWorkspace``/``displayTitle``, and, without
        ``max_reference_bytes``, a budget from the ``context_window`` given to
        ``prepare`` and ``reference_context_fraction``)."""

    @property
    def query(self) -> Union[SessionQuery, DshSessionStore]:
        """The session query this resolver reads through."""

    @property
    def max_references(self) -> int:
        """The maximum number of distinct references per message."""

    @property
    def max_reference_bytes(self) -> int:
        """The per-source byte budget."""

    @property
    def candidate_limit(self) -> int:
        """The number of candidates ``candidates()`` returns at most."""

    @property
    def redact_secrets(self) -> bool:
        """Whether credentials are replaced by ``[redacted <kind>]`` (each
        reference's metadata then has ``REDACTED_SECRETS_KEY``)."""

    @property
    def escape_invisible(self) -> bool:
        """Whether invisible and bidirectional characters are written as
        ``\\uXXXX`` escapes in the snapshot."""

    @property
    def sanitize_labels(self) -> bool:
        """Whether labels lose hidden characters and are cut to 100 characters."""

    def prepare(
        self,
        target: Target,
        content: Any,
        references: Sequence[Mapping[str, Any]],
        *,
        cancel: Optional[CancelToken] = None,
        context_window: Optional[int] = None,
    ) -> Prepared:
        """Prepares one message: ``{"content": ...}`` plus ``"additionalContext"``
        when there were references. A reference with ``"range"`` or
        ``"around"`` carries only that part of its session, and its metadata
        says which (``"range": {"start", "end"}``). ``context_window`` (the model's context
        window in tokens) sets the automatic budget of the later
        ``dsh_compat`` profiles. Releases the GIL while it runs."""

    def prepare_messages(
        self,
        target: Target,
        messages: Sequence[Mapping[str, Any]],
        *,
        cancel: Optional[CancelToken] = None,
    ) -> List[Any]:
        """Rewrites mentions in user messages and inserts each message's context
        message after it. Releases the GIL while it runs."""

    def candidates(
        self,
        target: Target,
        query: str = "",
        limit: Optional[int] = None,
        *,
        cancel: Optional[CancelToken] = None,
        mentions: bool = True,
    ) -> List[Candidate]:
        """Sessions the target may reference, ranked by cwd and filtered by
        ``query``, at most ``limit`` (default: ``candidate_limit``), each with
        its ``"mention"`` unless ``mentions=False`` (what
        ``list_candidates()`` gives). Releases the GIL while it runs."""

    def search(
        self,
        target: Target,
        query: str,
        *,
        limit: Optional[int] = None,
        scope: Optional[SearchScope] = None,
        cancel: Optional[CancelToken] = None,
    ) -> List[SearchResult]:
        """Full-text search: sessions other than the target whose projected
        text (user and assistant messages and checkpoints; never tool output or
        reasoning), title, id or cwd contain every word of ``query``
        (case-insensitive substrings: CJK and identifier fragments match), best
        first, one per session, with a snippet. ``limit`` defaults to
        ``candidate_limit``; ``scope="cwd"`` keeps the target's cwd only. A
        host's own ``search()`` method answers instead of the built-in index.
        Releases the GIL while it runs."""

    def read(
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
        """One page of another session's projected conversation: whole
        messages (user and assistant text and checkpoints; never tool output
        or reasoning) whose framed ``text`` fits ``max_bytes`` UTF-8 bytes
        (default 16384) and ``max_tokens`` (at one token per byte at most),
        read forward from ``start``, ``around`` an index, from a page's
        ``nextCursor``/``prevCursor`` (``cursor``), or the newest that fit.
        A cursor of a session that changed since raises
        ``SessionChangedError``; the target's own session
        ``SelfReferenceError``; a bad option ``InvalidReferenceError``.
        Releases the GIL while it runs."""

    def _start_read(
        self,
        target: Target,
        session_id: str,
        start: Optional[int],
        around: Optional[int],
        cursor: Optional[str],
        max_bytes: Optional[int],
        max_tokens: Optional[int],
        cancel: Optional[CancelToken],
        token: CancelToken,
        event_loop: Any,
        done: Callable[[bool, Any], None],
    ) -> None: ...
    def _start_search(
        self,
        target: Target,
        query: str,
        limit: Optional[int],
        scope: Optional[SearchScope],
        cancel: Optional[CancelToken],
        token: CancelToken,
        event_loop: Any,
        done: Callable[[bool, Any], None],
    ) -> None: ...
    def _start_prepare(
        self,
        target: Target,
        content: Any,
        references: Sequence[Mapping[str, Any]],
        context_window: Optional[int],
        cancel: Optional[CancelToken],
        token: CancelToken,
        event_loop: Any,
        done: Callable[[bool, Any], None],
    ) -> None: ...
    def _start_prepare_messages(
        self,
        target: Target,
        messages: Sequence[Mapping[str, Any]],
        cancel: Optional[CancelToken],
        token: CancelToken,
        event_loop: Any,
        done: Callable[[bool, Any], None],
    ) -> None: ...
    def _start_candidates(
        self,
        target: Target,
        query: str,
        limit: Optional[int],
        mentions: bool,
        cancel: Optional[CancelToken],
        token: CancelToken,
        event_loop: Any,
        done: Callable[[bool, Any], None],
    ) -> None: ...
