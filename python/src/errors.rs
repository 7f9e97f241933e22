//! Library errors → the Python exception classes of
//! `dsh_session_reference._errors`, with the host's exception as `__cause__`.

use std::sync::Arc;

use dsh_session_reference::{Error, ErrorCode, HostError};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

use crate::held::{unwinding, Held};

/// The Python exception a host raised (or a future it returned failed
/// with), carried through the core inside a [`HostError`] payload (and
/// dropped wherever the core is done with it: see [`Held`]).
pub struct HostException(pub Held);

/// The exception class of a code (a subclass of `SessionReferenceError`).
fn class_name(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::InvalidConfig => "InvalidConfigError",
        ErrorCode::InvalidReference => "InvalidReferenceError",
        ErrorCode::SelfReference => "SelfReferenceError",
        ErrorCode::TooMany => "TooManyReferencesError",
        ErrorCode::ReadFailed => "ReadFailedError",
        ErrorCode::BudgetExceeded => "BudgetExceededError",
        ErrorCode::Cancelled => "OperationCancelledError",
        ErrorCode::SessionChanged => "SessionChangedError",
    }
}

fn error_class<'py>(py: Python<'py>, code: ErrorCode) -> PyResult<&'py Bound<'py, PyType>> {
    static CLASSES: [PyOnceLock<Py<PyType>>; ErrorCode::ALL.len()] =
        [const { PyOnceLock::new() }; ErrorCode::ALL.len()];
    let index = ErrorCode::ALL.iter().position(|c| *c == code).unwrap_or(0);
    CLASSES[index].import(py, "dsh_session_reference._errors", class_name(code))
}

/// Converts a library error into the matching Python exception.
pub fn to_pyerr(py: Python<'_>, error: &Error) -> PyErr {
    // The class's `__init__` is Python code, run on the caller's thread
    // (a daemon thread, maybe): called so that `pthread_exit` at
    // finalization can unwind to the caller's guard.
    let made = error_class(py, error.code())
        .and_then(|cls| unwinding::call(cls.as_any(), &PyTuple::new(py, [error.message()])?));
    let exc = match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => return e,
    };
    let cause = error.host_error().and_then(HostError::payload).and_then(|p| p.downcast_ref::<HostException>());
    if let Some(HostException(host)) = cause {
        exc.set_cause(py, Some(PyErr::from_value(host.bind(py).clone())));
    }
    exc
}

/// Wraps an exception raised by the host's `method` into a [`HostError`]
/// whose reason is `"TypeName: message"` and whose payload is the exception.
pub fn host_error(py: Python<'_>, err: PyErr) -> HostError {
    let value = err.value(py);
    let type_name = value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "Exception".into());
    let text = value.str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let message = if text.is_empty() { type_name } else { format!("{type_name}: {text}") };
    HostError::with_payload(message, Arc::new(HostException(Held::new(err.into_value(py).into_any()))))
}

/// The error raised when the library's worker task vanished (a panic).
pub fn internal_error(what: &str) -> PyErr {
    PyRuntimeError::new_err(format!("dsh_session_reference: {what}"))
}
