//! The one error type of the library and its stable codes (docs/contract.md §8).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// The stable error codes of the contract. Their wire spelling
/// ([`ErrorCode::as_str`]) is part of every SDK's error type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// A configuration value is not a positive safe integer (or `maxReferences > 3`).
    InvalidConfig,
    /// A reference, URI, mention or candidate limit is malformed.
    InvalidReference,
    /// The target session references itself.
    SelfReference,
    /// More distinct references than `maxReferences`.
    TooMany,
    /// The host's session query failed, or returned data of the wrong shape.
    ReadFailed,
    /// One source cannot fit in `maxReferenceBytes` even after retention.
    BudgetExceeded,
    /// The caller cancelled the operation.
    Cancelled,
    /// A read cursor was made from another state of its session's
    /// conversation than the one read now: start again (docs/contract.md §12).
    SessionChanged,
}

impl ErrorCode {
    /// All codes, in the order of docs/contract.md §8.2.
    pub const ALL: [ErrorCode; 8] = [
        ErrorCode::InvalidConfig,
        ErrorCode::InvalidReference,
        ErrorCode::SelfReference,
        ErrorCode::TooMany,
        ErrorCode::ReadFailed,
        ErrorCode::BudgetExceeded,
        ErrorCode::Cancelled,
        ErrorCode::SessionChanged,
    ];

    /// The wire spelling, e.g. `SESSION_REFERENCE_READ_FAILED`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidConfig => "SESSION_REFERENCE_INVALID_CONFIG",
            ErrorCode::InvalidReference => "SESSION_REFERENCE_INVALID_REFERENCE",
            ErrorCode::SelfReference => "SESSION_REFERENCE_SELF_REFERENCE",
            ErrorCode::TooMany => "SESSION_REFERENCE_TOO_MANY",
            ErrorCode::ReadFailed => "SESSION_REFERENCE_READ_FAILED",
            ErrorCode::BudgetExceeded => "SESSION_REFERENCE_BUDGET_EXCEEDED",
            ErrorCode::Cancelled => "SESSION_REFERENCE_CANCELLED",
            ErrorCode::SessionChanged => "SESSION_REFERENCE_SESSION_CHANGED",
        }
    }

    /// Parses a wire spelling back into a code.
    pub fn from_wire(code: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == code)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure reported by a host's session query (docs/contract.md §9): a reason text,
/// plus an optional opaque payload that a language front can use to carry
/// the host's own exception object (e.g. to chain it as Python `__cause__`).
#[derive(Clone)]
pub struct HostError {
    message: String,
    payload: Option<Arc<dyn Any + Send + Sync>>,
}

impl HostError {
    /// A host failure with the given reason.
    pub fn new(message: impl Into<String>) -> Self {
        HostError { message: message.into(), payload: None }
    }

    /// A host failure that also carries a front-specific payload.
    pub fn with_payload(message: impl Into<String>, payload: Arc<dyn Any + Send + Sync>) -> Self {
        HostError { message: message.into(), payload: Some(payload) }
    }

    /// The host's reason text.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The payload attached by the front that produced this error, if any.
    pub fn payload(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        self.payload.as_ref()
    }
}

impl fmt::Debug for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostError").field("message", &self.message).field("payload", &self.payload.is_some()).finish()
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HostError {}

impl From<String> for HostError {
    fn from(message: String) -> Self {
        HostError::new(message)
    }
}

impl From<&str> for HostError {
    fn from(message: &str) -> Self {
        HostError::new(message)
    }
}

/// The library's error: a stable [`ErrorCode`], a human-readable message,
/// and — for read failures — the host's own error.
#[derive(Clone, Debug)]
pub struct Error {
    code: ErrorCode,
    message: String,
    host: Option<HostError>,
}

impl Error {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error { code, message: message.into(), host: None }
    }

    /// A read failure of `session_id` caused by the host.
    pub fn read_failed(session_id: &str, host: HostError) -> Self {
        Error {
            code: ErrorCode::ReadFailed,
            message: format!("reading session {} failed: {}", crate::json::js_string(session_id), host.message()),
            host: Some(host),
        }
    }

    /// A failure of the session listing caused by the host.
    pub fn list_failed(host: HostError) -> Self {
        Error {
            code: ErrorCode::ReadFailed,
            message: format!("listing sessions failed: {}", host.message()),
            host: Some(host),
        }
    }

    /// The same error, its message followed by `; note`.
    pub(crate) fn with_note(mut self, note: &str) -> Self {
        self.message.push_str("; ");
        self.message.push_str(note);
        self
    }

    /// The cancellation error.
    pub fn cancelled() -> Self {
        Error::new(ErrorCode::Cancelled, "the operation was cancelled")
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message (for people; not part of the contract).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The host's error behind a read failure, if any.
    pub fn host_error(&self) -> Option<&HostError> {
        self.host.as_ref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.host.as_ref().map(|h| h as &(dyn std::error::Error + 'static))
    }
}

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
