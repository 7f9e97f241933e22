"""The exceptions of ``dsh_session_reference``.

Every failure described by the contract raises a subclass of
:class:`SessionReferenceError` whose ``code`` is the stable wire code (for
example ``"SESSION_REFERENCE_READ_FAILED"``). When a read failed because the
host's session query raised, that exception is the error's ``__cause__``.
Misuse of the API itself (a target that is not a dict, a value that is not
JSON, ...) raises :class:`TypeError` or :class:`ValueError` instead.
"""

from __future__ import annotations

from typing import ClassVar, Dict, Optional, Tuple, Type

__all__ = [
    "SessionReferenceError",
    "InvalidConfigError",
    "InvalidReferenceError",
    "SelfReferenceError",
    "TooManyReferencesError",
    "ReadFailedError",
    "BudgetExceededError",
    "OperationCancelledError",
    "SessionChangedError",
    "error_class",
]


class SessionReferenceError(Exception):
    """Base class of the library's errors; ``code`` is the stable wire code.

    Instantiating a subclass needs only the message; the base class also
    needs the code.
    """

    default_code: ClassVar[Optional[str]] = None
    code: str
    message: str

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        resolved = code if code is not None else type(self).default_code
        if resolved is None:
            raise TypeError("SessionReferenceError needs a code")
        super().__init__(message)
        self.message = message
        self.code = resolved

    def __reduce__(self) -> Tuple[Type[SessionReferenceError], Tuple[str, str]]:
        """Pickles as the same class, message and code."""
        return (type(self), (self.message, self.code))


class InvalidConfigError(SessionReferenceError):
    """A configuration value is not a positive integer (or ``max_references > 3``)."""

    default_code = "SESSION_REFERENCE_INVALID_CONFIG"


class InvalidReferenceError(SessionReferenceError):
    """A reference, URI, mention or candidate limit is malformed."""

    default_code = "SESSION_REFERENCE_INVALID_REFERENCE"


class SelfReferenceError(SessionReferenceError):
    """The target session references itself."""

    default_code = "SESSION_REFERENCE_SELF_REFERENCE"


class TooManyReferencesError(SessionReferenceError):
    """More distinct references than ``max_references``."""

    default_code = "SESSION_REFERENCE_TOO_MANY"


class ReadFailedError(SessionReferenceError):
    """The session query failed or returned data of the wrong shape.

    When the host raised, its exception is ``__cause__``.
    """

    default_code = "SESSION_REFERENCE_READ_FAILED"


class BudgetExceededError(SessionReferenceError):
    """One source cannot fit in ``max_reference_bytes`` even after retention."""

    default_code = "SESSION_REFERENCE_BUDGET_EXCEEDED"


class OperationCancelledError(SessionReferenceError):
    """The call was cancelled through a :class:`CancelToken`.

    (Named so as not to shadow :class:`asyncio.CancelledError`, which is what
    an asyncio task that is itself cancelled raises.)
    """

    default_code = "SESSION_REFERENCE_CANCELLED"


class SessionChangedError(SessionReferenceError):
    """A read cursor was made from another state of its session's
    conversation (the session changed since): read again without it."""

    default_code = "SESSION_REFERENCE_SESSION_CHANGED"


_BY_CODE: Dict[str, Type[SessionReferenceError]] = {
    cls.default_code: cls
    for cls in (
        InvalidConfigError,
        InvalidReferenceError,
        SelfReferenceError,
        TooManyReferencesError,
        ReadFailedError,
        BudgetExceededError,
        OperationCancelledError,
        SessionChangedError,
    )
    if cls.default_code is not None
}


def error_class(code: str) -> Type[SessionReferenceError]:
    """The exception class of a wire code (``KeyError`` for an unknown code)."""
    return _BY_CODE[code]
