//! The native module `dsh_session_reference._native`: Python bindings of the
//! `dsh-session-reference` core. The public Python API is the package
//! `dsh_session_reference`, which re-exports these names and adds the
//! `async` methods, the exceptions and the typing protocols.

mod bench;
mod convert;
mod errors;
mod held;
mod host;
mod resolver;
mod runtime;
mod sources;
mod store;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::{string_arg, to_json, to_py, type_name};
use crate::errors::to_pyerr;

/// The canonical `dsh-session:` URI of a session id.
#[pyfunction]
fn encode_uri(session_id: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(dsh_session_reference::encode_uri(&string_arg(session_id, "session_id")?))
}

/// The session id of a canonical `dsh-session:` URI; anything else raises
/// `InvalidReferenceError`.
#[pyfunction]
fn decode_uri(py: Python<'_>, uri: &Bound<'_, PyAny>) -> PyResult<String> {
    dsh_session_reference::decode_uri(&string_arg(uri, "uri")?).map_err(|e| to_pyerr(py, &e))
}

/// The mention `@[label](uri)` of a session; the label defaults to the id.
#[pyfunction]
#[pyo3(signature = (session_id, label=None))]
fn format_mention(session_id: &Bound<'_, PyAny>, label: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
    let id = string_arg(session_id, "session_id")?;
    let label = label.map(|l| string_arg(l, "label")).transpose()?;
    Ok(dsh_session_reference::format_mention(&id, label.as_deref()))
}

/// Replaces every mention and bare URI in `text` by `@label` and returns
/// `{"text": ..., "references": [{"sessionId": ..., "label": ...}, ...]}`.
#[pyfunction]
fn parse_text<'py>(py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let parsed = dsh_session_reference::parse_text(&string_arg(text, "text")?).map_err(|e| to_pyerr(py, &e))?;
    to_py(py, &parsed.to_json())
}

/// Tag-safe JSON of a Python value: JavaScript `JSON.stringify` output with
/// every `<` written as `\u003c`.
#[pyfunction]
fn stringify_tag_safe(value: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(dsh_session_reference::stringify_tag_safe(&to_json(value, "value")?))
}

/// Tag-safe JSON of a JSON text, read as JavaScript's `JSON.parse` reads it
/// (numbers are doubles, a repeated key keeps its first position with the
/// last value). Raises `ValueError` when the text is not JSON.
#[pyfunction]
fn stringify_tag_safe_json(text: &Bound<'_, PyAny>) -> PyResult<String> {
    let owned;
    let text: &str = if let Ok(b) = text.cast::<PyBytes>() {
        std::str::from_utf8(b.as_bytes()).map_err(|e| PyValueError::new_err(format!("text is not UTF-8: {e}")))?
    } else if text.is_instance_of::<pyo3::types::PyString>() {
        owned = string_arg(text, "text")?;
        &owned
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "text must be a str or bytes, not {}",
            type_name(text)
        )));
    };
    dsh_session_reference::stringify_tag_safe_text(text).map_err(PyValueError::new_err)
}

/// A pre-projected surface snapshot of a host's own message list, to return
/// from `read_surface`: `{"session": {"id", "cwd"}, "capturedThroughSeq",
/// "conversation": [{"role", "text", "checkpoint"?}, ...]}`. `format` is
/// `"openai"` (chat or Responses messages) or `"anthropic"`; only user and
/// assistant text is kept. `captured_through_seq` defaults to the index of
/// the last message. Raises `ValueError` for messages of the wrong shape.
#[pyfunction]
#[pyo3(signature = (session_id, messages, *, format="openai", cwd=None, captured_through_seq=None))]
fn conversation_snapshot<'py>(
    py: Python<'py>,
    session_id: &Bound<'py, PyAny>,
    messages: &Bound<'py, PyAny>,
    format: &str,
    cwd: Option<&Bound<'py, PyAny>>,
    captured_through_seq: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut request = serde_json::Map::new();
    request.insert("format".into(), format.into());
    request.insert("sessionId".into(), string_arg(session_id, "session_id")?.into());
    if let Some(cwd) = cwd.filter(|c| !c.is_none()) {
        request.insert("cwd".into(), string_arg(cwd, "cwd")?.into());
    }
    if let Some(seq) = captured_through_seq {
        request.insert("capturedThroughSeq".into(), seq.into());
    }
    request.insert("messages".into(), to_json(messages, "messages")?);
    let snapshot = dsh_session_reference::wire::snapshot_from_request(&serde_json::Value::Object(request))
        .map_err(PyValueError::new_err)?;
    to_py(py, &snapshot)
}

/// Stops library threads from calling into Python from now on, then waits
/// up to `timeout` seconds, with the GIL released, until none is running
/// Python code; whether none is. Registered with `atexit` by the package
/// (private).
#[pyfunction]
fn _wait_for_library_threads(py: Python<'_>, timeout: f64) -> bool {
    runtime::wait_for_library_threads(py, std::time::Duration::from_secs_f64(timeout.clamp(0.0, 60.0)))
}

/// Resets the count of library threads calling into Python in a child
/// created by `fork()`, and learns its main thread (the one that forked).
/// Registered with `os.register_at_fork` by the package (private).
#[pyfunction]
fn _after_fork_in_child(py: Python<'_>) -> PyResult<()> {
    runtime::after_fork_in_child();
    runtime::learn_main_thread(py)
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    runtime::learn_main_thread(m.py())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("REDACTED_SECRETS_KEY", dsh_session_reference::wire::REDACTED_SECRETS_KEY)?;
    m.add_function(wrap_pyfunction!(encode_uri, m)?)?;
    m.add_function(wrap_pyfunction!(decode_uri, m)?)?;
    m.add_function(wrap_pyfunction!(format_mention, m)?)?;
    m.add_function(wrap_pyfunction!(parse_text, m)?)?;
    m.add_function(wrap_pyfunction!(stringify_tag_safe, m)?)?;
    m.add_function(wrap_pyfunction!(stringify_tag_safe_json, m)?)?;
    m.add_function(wrap_pyfunction!(conversation_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(_wait_for_library_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(bench::bench_prepare_rust, m)?)?;
    m.add_function(wrap_pyfunction!(bench::bench_candidates_rust, m)?)?;
    m.add_class::<resolver::CancelToken>()?;
    m.add_class::<resolver::Resolver>()?;
    m.add_class::<store::DshSessionStore>()?;
    m.add_class::<sources::SessionSources>()?;
    Ok(())
}
