//! The plain functions: URIs, mentions, mention parsing, tag-safe JSON.

use std::ffi::c_char;

use dsh_session_reference::{decode_uri, encode_uri, format_mention, parse_text, stringify_tag_safe_text};

use crate::error::{dsr_error, dsr_status, guard, Failure};
use crate::strings::{clear_out, out_arg, set_out, str_arg};

/// Runs a text function: clears the outputs, checks `out`, stores the result.
///
/// # Safety
/// `out`, `out_len` and `err` are NULL or valid for writes.
unsafe fn text_fn(
    func: &str,
    out: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
    body: impl FnOnce() -> Result<String, Failure>,
) -> dsr_status {
    // SAFETY: per the contract.
    unsafe {
        clear_out(out, out_len);
        guard(err, || {
            out_arg(func, "out", out)?;
            let text = body()?;
            set_out(out, out_len, text.as_bytes());
            Ok(())
        })
    }
}

/// The canonical URI of a session id: `dsh-session:` + unpadded base64url of
/// the id's JSON string literal. `session_id` is `session_id_len` bytes of
/// UTF-8 (NUL bytes allowed). `*out` receives a NUL-terminated string freed
/// with `dsr_string_free`; `out_len` (nullable) its length.
///
/// # Safety
/// `session_id` is NULL or valid for `session_id_len` bytes; `out`,
/// `out_len` and `err` are NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dsr_uri_encode(
    session_id: *const c_char,
    session_id_len: usize,
    out: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    const F: &str = "dsr_uri_encode";
    // SAFETY: per the contract.
    unsafe { text_fn(F, out, out_len, err, || Ok(encode_uri(str_arg(F, "session_id", session_id, session_id_len)?))) }
}

/// Decodes a canonical session URI back to its id; anything else is
/// `DSR_INVALID_REFERENCE`. The id may contain NUL bytes: use `*out_len`.
/// Strings as for `dsr_uri_encode`.
///
/// # Safety
/// `uri` is NULL or valid for `uri_len` bytes; `out`, `out_len` and `err`
/// are NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dsr_uri_decode(
    uri: *const c_char,
    uri_len: usize,
    out: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    const F: &str = "dsr_uri_decode";
    // SAFETY: per the contract.
    unsafe { text_fn(F, out, out_len, err, || Ok(decode_uri(str_arg(F, "uri", uri, uri_len)?)?)) }
}

/// Formats a mention `@[label](uri)`: every `\` and `]` of the label is
/// preceded by `\`. `label` NULL means "no label" (the id is used);
/// `label_len == 0` with a non-NULL `label` is the empty label.
///
/// # Safety
/// `session_id` is NULL or valid for `session_id_len` bytes; `label` is NULL
/// or valid for `label_len` bytes; `out`, `out_len` and `err` are NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dsr_mention_format(
    session_id: *const c_char,
    session_id_len: usize,
    label: *const c_char,
    label_len: usize,
    out: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    const F: &str = "dsr_mention_format";
    // SAFETY: per the contract.
    unsafe {
        text_fn(F, out, out_len, err, || {
            let id = str_arg(F, "session_id", session_id, session_id_len)?;
            let label = if label.is_null() { None } else { Some(str_arg(F, "label", label, label_len)?) };
            Ok(format_mention(id, label))
        })
    }
}

/// Finds every mention and bare URI in a text and replaces each with
/// `@label`. `*out` receives JSON
/// `{"text": string, "references": [{"sessionId", "label"}, ...]}`
/// (in order of appearance, duplicates kept). A recognised token whose URI
/// does not decode fails the call with `DSR_INVALID_REFERENCE`.
///
/// # Safety
/// `text` is NULL or valid for `text_len` bytes; `out`, `out_len` and `err`
/// are NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dsr_parse_text(
    text: *const c_char,
    text_len: usize,
    out: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    const F: &str = "dsr_parse_text";
    // SAFETY: per the contract.
    unsafe {
        text_fn(F, out, out_len, err, || {
            let parsed = parse_text(str_arg(F, "text", text, text_len)?)?;
            Ok(dsh_session_reference::wire::stringify(&parsed.to_json()))
        })
    }
}

/// Tag-safe JSON (docs/contract.md §5): reads JSON text with JavaScript `JSON.parse`
/// semantics and writes it back as `JSON.stringify` would, with every `<`
/// written as `\u003c`. Text that is not JSON is `DSR_MISUSE`.
///
/// # Safety
/// `json` is NULL or valid for `json_len` bytes; `out`, `out_len` and `err`
/// are NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dsr_stringify_tag_safe(
    json: *const c_char,
    json_len: usize,
    out: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    const F: &str = "dsr_stringify_tag_safe";
    // SAFETY: per the contract.
    unsafe {
        text_fn(F, out, out_len, err, || {
            stringify_tag_safe_text(str_arg(F, "json", json, json_len)?)
                .map_err(|e| Failure::misuse(format!("{F}: `json` is not JSON: {e}")))
        })
    }
}

/// A pre-projected surface snapshot of a host's own message list, for its
/// `read_surface` callback. `request_json` is UTF-8 JSON
/// `{"format": "openai"|"anthropic", "sessionId": string, "cwd"?: string|null,
/// "capturedThroughSeq"?: integer|null, "messages": [...]}`; `*out`
/// receives `{"session": {"id", "cwd"}, "capturedThroughSeq",
/// "conversation": [{"role", "text", "checkpoint"?}, ...]}` with only user
/// and assistant text (never system, developer or tool messages, tool
/// calls, thinking or tool results). `capturedThroughSeq` defaults to the
/// index of the last message. A request of the wrong shape is `DSR_MISUSE`.
///
/// # Safety
/// `request_json` is NULL or valid for `request_len` bytes; `out`, `out_len`
/// and `err` are NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dsr_conversation_snapshot(
    request_json: *const c_char,
    request_len: usize,
    out: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    const F: &str = "dsr_conversation_snapshot";
    // SAFETY: per the contract.
    unsafe {
        text_fn(F, out, out_len, err, || {
            let request = dsh_session_reference::wire::parse_js(str_arg(F, "request_json", request_json, request_len)?)
                .map_err(|e| Failure::misuse(format!("{F}: the request is not JSON: {e}")))?;
            let snapshot = dsh_session_reference::wire::snapshot_from_request(&request)
                .map_err(|e| Failure::misuse(format!("{F}: {e}")))?;
            Ok(dsh_session_reference::wire::stringify(&snapshot))
        })
    }
}
