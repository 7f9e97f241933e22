//! `dsr_resolver`: creation from a host vtable and the JSON operations.

use std::ffi::c_char;
use std::sync::Arc;

use dsh_session_reference::wire::{
    messages_into_json, stringify, CandidatesRequest, PrepareMessagesRequest, PrepareRequest, ReadRequest,
    RequestError, SearchArgs,
};
use dsh_session_reference::{block_on, Blocking, CancelToken, Config, Resolver, SessionQuery};
use serde_json::Value;

use crate::cancel::dsr_cancel;
use crate::error::{dsr_error, dsr_status, guard, guard_value, Failure};
use crate::host::{dsr_host, CHost};
use crate::strings::{clear_out, json_arg, out_arg, set_out};

/// A session-reference service over one host. Thread-safe: any number of
/// calls may run at once on one resolver from different threads.
/// Free with `dsr_resolver_free`.
pub struct dsr_resolver {
    resolver: Resolver,
}

/// Reads the optional configuration JSON (NULL = defaults).
///
/// # Safety
/// `config_json` is NULL or valid for `config_len` bytes.
unsafe fn config_arg(func: &str, config_json: *const c_char, config_len: usize) -> Result<Config, Failure> {
    if config_json.is_null() {
        return Ok(Config::default());
    }
    // SAFETY: forwarded contract.
    let value = unsafe { json_arg(func, "config_json", config_json, config_len) }?;
    Ok(Config::from_json(&value)?)
}

/// Boxes a resolver into `*out`.
///
/// # Safety
/// `out` is valid for a pointer write.
pub(crate) unsafe fn store_resolver(out: *mut *mut dsr_resolver, query: Arc<dyn SessionQuery>, config: Config) {
    let boxed = Box::new(dsr_resolver { resolver: Resolver::new(query, config) });
    // SAFETY: valid per the contract.
    unsafe { out.write(Box::into_raw(boxed)) };
}

/// Creates a resolver that reads through the host's callbacks.
///
/// `config_json` (nullable; `config_len` bytes of UTF-8 JSON) is an object
/// with the optional keys `maxReferences` (1–3, default 3), `candidateLimit`
/// (default 50) and `maxReferenceBytes` (default 65536), and the hardened
/// mode's booleans (default false; `docs/security.md`): `redactSecrets`
/// (credentials become `[redacted <kind>]`, and each reference's metadata
/// gets `redactedSecrets`), `escapeInvisible` (invisible and bidirectional
/// characters written `\uXXXX`), `sanitizeLabels` (labels lose hidden
/// characters, at most 100 characters) and `hardened` (all three; each
/// given explicitly wins); an invalid value is `DSR_INVALID_CONFIG`. The vtable is copied. On success the resolver owns
/// `host->user_data` (see `dsr_host.destroy`); on failure `destroy` is not
/// called and the caller keeps it. `*out` is set to the resolver, or to NULL
/// on failure.
///
/// # Safety
/// `host` is NULL or points to a `dsr_host` (at least its `size` field when
/// that is wrong); `config_json` is NULL or valid for `config_len` bytes;
/// `out` is NULL or valid for a pointer write; `err` is NULL or valid for a
/// pointer write.
#[no_mangle]
pub unsafe extern "C" fn dsr_resolver_new(
    host: *const dsr_host,
    config_json: *const c_char,
    config_len: usize,
    out: *mut *mut dsr_resolver,
    err: *mut *mut dsr_error,
) -> dsr_status {
    // SAFETY: every pointer per the contract above.
    unsafe {
        guard(err, || {
            const F: &str = "dsr_resolver_new";
            out_arg(F, "out", out)?;
            out.write(std::ptr::null_mut());
            let config = config_arg(F, config_json, config_len)?;
            // Validate the vtable last: once `CHost` exists, dropping it calls `destroy`.
            let host = CHost::from_ptr(F, host)?;
            store_resolver(out, Arc::new(Blocking::new(host)), config);
            Ok(())
        })
    }
}

/// Frees a resolver. NULL is ignored. The host's `destroy` runs once no
/// callback is running any more (possibly later, on another thread, when a
/// cancelled callback has not returned yet). No call may be using the
/// resolver any more.
///
/// # Safety
/// `resolver` is NULL or a resolver from this library that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn dsr_resolver_free(resolver: *mut dsr_resolver) {
    guard_value((), || {
        if !resolver.is_null() {
            // SAFETY: created by `Box::into_raw`, freed once.
            drop(unsafe { Box::from_raw(resolver) });
        }
    })
}

/// The common frame of the operations: argument checks, request
/// parsing, the blocking run and the JSON result.
///
/// # Safety
/// The pointer contracts of the operations below.
#[allow(clippy::too_many_arguments)]
unsafe fn run(
    func: &str,
    resolver: *const dsr_resolver,
    request_json: *const c_char,
    request_len: usize,
    cancel: *const dsr_cancel,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
    op: impl FnOnce(&Resolver, Value, Option<&CancelToken>) -> Result<Value, Failure>,
) -> dsr_status {
    // SAFETY: every pointer per the operation's contract.
    unsafe {
        clear_out(out_json, out_len);
        guard(err, || {
            let resolver = resolver.as_ref().ok_or_else(|| Failure::misuse(format!("{func}: `resolver` is NULL")))?;
            out_arg(func, "out_json", out_json)?;
            let request = json_arg(func, "request_json", request_json, request_len)?;
            if !request.is_object() {
                return Err(Failure::misuse(format!("{func}: the request must be an object")));
            }
            if tokio::runtime::Handle::try_current().is_ok() {
                return Err(Failure::misuse(format!(
                    "{func}: called from inside a host callback (or a tokio runtime); call it from your own thread"
                )));
            }
            let cancel = cancel.as_ref().map(|c| &c.token);
            let result = op(&resolver.resolver, request, cancel)?;
            set_out(out_json, out_len, stringify(&result).as_bytes());
            Ok(())
        })
    }
}

/// A request the core's reader refused, as this ABI reports it: a shape
/// error is the caller's misuse, a refused value its contract error.
fn refused(func: &str) -> impl Fn(RequestError) -> Failure + '_ {
    move |e| match e {
        RequestError::Shape(m) => Failure::misuse(format!("{func}: {m}")),
        RequestError::Contract(e) => e.into(),
    }
}

/// Prepares one message (docs/contract.md §6). Request:
/// `{"target": {"id": string, "cwd"?: string}, "content": any, "references": [{"sessionId": string, "label"?: string}, ...]}`.
/// A reference may carry an excerpt (§6.10): `"range": {"start": n, "end"?: n}`
/// (messages `start` to `end − 1`; without `end`, to the last) or
/// `"around": n` (the message `n` and those around it that fit); its source
/// then holds that run under the same budget, and its metadata says which
/// (`"range": {"start", "end"}`, `"around"`).
/// An optional `"contextWindow"` (a positive integer, the model's context
/// window in tokens) sets the automatic budget of the later `dshCompat`
/// profiles (see the config); other profiles ignore it.
/// Result: `{"content": <copy>}` when there are no references, else
/// `{"content": <copy>, "additionalContext": {"source", "content", "role", "id"}}`.
/// All or nothing: on failure `*out_json` is NULL and `*out_len` is 0.
///
/// `request_json` is `request_len` bytes of UTF-8 JSON; `cancel` and
/// `out_len` are nullable; the result is freed with `dsr_string_free`.
/// Blocks the calling thread; must not be called from a host callback.
///
/// # Safety
/// `resolver` is NULL or live; `request_json` is NULL or valid for
/// `request_len` bytes; `cancel` is NULL or live for the whole call;
/// `out_json`, `out_len` and `err` are NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dsr_resolver_prepare(
    resolver: *const dsr_resolver,
    request_json: *const c_char,
    request_len: usize,
    cancel: *const dsr_cancel,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    const F: &str = "dsr_resolver_prepare";
    // SAFETY: forwarded contract.
    unsafe {
        run(F, resolver, request_json, request_len, cancel, out_json, out_len, err, |r, req, cancel| {
            let request = PrepareRequest::from_json(req).map_err(refused(F))?;
            let prepared =
                block_on(r.prepare(&request.target, &request.content, &request.references, &request.options, cancel))?;
            Ok(prepared.into_json())
        })
    }
}

/// The pre-step rewrite (docs/contract.md §6). Request:
/// `{"target": {"id", "cwd"?}, "messages": [message, ...]}`. Result: the
/// JSON array of output messages (each user message with references is
/// rewritten and followed by its context message). Arguments as for
/// `dsr_resolver_prepare`.
///
/// # Safety
/// As `dsr_resolver_prepare`.
#[no_mangle]
pub unsafe extern "C" fn dsr_resolver_prepare_messages(
    resolver: *const dsr_resolver,
    request_json: *const c_char,
    request_len: usize,
    cancel: *const dsr_cancel,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    const F: &str = "dsr_resolver_prepare_messages";
    // SAFETY: forwarded contract.
    unsafe {
        run(F, resolver, request_json, request_len, cancel, out_json, out_len, err, |r, req, cancel| {
            let request = PrepareMessagesRequest::from_json(req).map_err(refused(F))?;
            let prepared = block_on(r.prepare_messages(&request.target, &request.messages, &request.options, cancel))?;
            Ok(messages_into_json(prepared))
        })
    }
}

/// Discovery (docs/contract.md §7). Request: `{"target": {"id", "cwd"?}, "query"?: string, "limit"?: number}`
/// (`query` defaults to `""`; `limit` to the configured `candidateLimit`,
/// and an explicit limit that is not a positive safe integer is
/// `DSR_INVALID_REFERENCE`). Result: `[{"sessionId", "label", "cwd"?, "createdAt"}, ...]`.
/// Arguments as for `dsr_resolver_prepare`.
///
/// # Safety
/// As `dsr_resolver_prepare`.
#[no_mangle]
pub unsafe extern "C" fn dsr_resolver_list_candidates(
    resolver: *const dsr_resolver,
    request_json: *const c_char,
    request_len: usize,
    cancel: *const dsr_cancel,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    const F: &str = "dsr_resolver_list_candidates";
    // SAFETY: forwarded contract.
    unsafe {
        run(F, resolver, request_json, request_len, cancel, out_json, out_len, err, |r, req, cancel| {
            let request = CandidatesRequest::from_json(req, false).map_err(refused(F))?;
            let list = block_on(r.candidates(&request.target, &request.query, &request.options, cancel))?;
            Ok(Value::Array(list.iter().map(|c| c.to_json()).collect()))
        })
    }
}

/// The host-facing face of discovery: like `dsr_resolver_list_candidates`
/// (same request), and every item gains `"mention"`, the canonical
/// `@[label](dsh-session:…)` text to insert into a message.
///
/// # Safety
/// As `dsr_resolver_prepare`.
#[no_mangle]
pub unsafe extern "C" fn dsr_resolver_candidates(
    resolver: *const dsr_resolver,
    request_json: *const c_char,
    request_len: usize,
    cancel: *const dsr_cancel,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    const F: &str = "dsr_resolver_candidates";
    // SAFETY: forwarded contract.
    unsafe {
        run(F, resolver, request_json, request_len, cancel, out_json, out_len, err, |r, req, cancel| {
            let request = CandidatesRequest::from_json(req, true).map_err(refused(F))?;
            let list = block_on(r.candidates(&request.target, &request.query, &request.options, cancel))?;
            Ok(Value::Array(list.iter().map(|c| c.to_json()).collect()))
        })
    }
}

/// Full-text search. Request: `{"target": {"id", "cwd"?}, "query": string,
/// "limit"?: number, "scope"?: "all" | "cwd"}`. Result: the sessions other
/// than the target whose projected text (user and assistant messages and
/// checkpoints; never tool output or reasoning), title, id or cwd contain
/// the query, best first, one per session:
/// `[{"sessionId", "label", "cwd"?, "createdAt", "mention", "snippet",
/// "field": "title" | "message" | "id" | "cwd", "messageIndex": number | null}, ...]`.
/// Case-insensitive substrings (CJK and identifier fragments match); every
/// whitespace-separated word must occur; the whole query in the title ranks
/// first, then every word in the title, the whole query in a message, id or
/// cwd, every word in one message, then the words apart by relevance (how
/// often the messages hold them, for their length); ties go to the target's
/// cwd, then newer sessions. A blank query finds nothing. A
/// host with a `search` callback answers it instead of the built-in index,
/// which is kept per session under the host's `fingerprints` (without them,
/// every search reads every surface). A bad `limit` or `scope` is
/// `DSR_INVALID_REFERENCE`. Arguments as for `dsr_resolver_prepare`.
///
/// # Safety
/// As `dsr_resolver_prepare`.
#[no_mangle]
pub unsafe extern "C" fn dsr_resolver_search(
    resolver: *const dsr_resolver,
    request_json: *const c_char,
    request_len: usize,
    cancel: *const dsr_cancel,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    const F: &str = "dsr_resolver_search";
    // SAFETY: forwarded contract.
    unsafe {
        run(F, resolver, request_json, request_len, cancel, out_json, out_len, err, |r, req, cancel| {
            let request = SearchArgs::from_json(req).map_err(refused(F))?;
            let list = block_on(r.search(&request.target, &request.query, &request.options, cancel))?;
            Ok(Value::Array(list.iter().map(|c| c.to_json()).collect()))
        })
    }
}

/// One page of another session's projected conversation (docs/contract.md
/// §12): a run of whole messages whose framed text fits a budget. Request:
/// `{"target": {"id", "cwd"?}, "sessionId": string, "start"?: number,
/// "around"?: number, "cursor"?: string, "maxBytes"?: number, "maxTokens"?: number}`
/// with at most one of `start` (read forward from that message index),
/// `around` (that message and those on both sides) and `cursor` (a page's
/// `nextCursor` or `prevCursor`); with none, the newest messages that fit.
/// `maxBytes` (default 16384) bounds the UTF-8 bytes of the framed text;
/// `maxTokens` bounds it too, at one token per byte at most. Result:
/// `{"sessionId", "label", "cwd"?, "totalMessages", "capturedThroughSeq", "messages":
/// [{"index", "role", "text", "checkpoint", "omittedBytes"?}, ...],
/// "nextCursor"?, "prevCursor"?, "redactedSecrets"?, "text"}` where `text` is
/// the framed text for a model (an untrusted-background warning around
/// tag-safe JSON). A bad option or cursor is `DSR_INVALID_REFERENCE`, the
/// target's own session `DSR_SELF_REFERENCE`, a cursor whose session changed
/// since `DSR_SESSION_CHANGED`, a budget too small for the page's fixed part
/// `DSR_BUDGET_EXCEEDED`. Arguments as for `dsr_resolver_prepare`.
///
/// # Safety
/// As `dsr_resolver_prepare`.
#[no_mangle]
pub unsafe extern "C" fn dsr_resolver_read(
    resolver: *const dsr_resolver,
    request_json: *const c_char,
    request_len: usize,
    cancel: *const dsr_cancel,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    const F: &str = "dsr_resolver_read";
    // SAFETY: forwarded contract.
    unsafe {
        run(F, resolver, request_json, request_len, cancel, out_json, out_len, err, |r, req, cancel| {
            let request = ReadRequest::from_json(req).map_err(refused(F))?;
            let page = block_on(r.read(&request.target, &request.session_id, &request.options, cancel))?;
            Ok(page.to_json_with_text())
        })
    }
}

/// Creates a resolver over a DSH sessions directory (docs/contract.md §10): a read-only
/// session query over DSH's JSONL logs (`session.jsonl`, or
/// `session.v<N>.jsonl` for later format generations, plain or `.zstd`,
/// under `<root>/<project-dir>/<session-dir>/`; each session's newest
/// generation is read), so the
/// host needs no callbacks at all. `root` is `root_len` bytes of a path (on
/// Unix any bytes; elsewhere UTF-8). A root that cannot be opened as a
/// directory is `DSR_READ_FAILED`; configuration as for `dsr_resolver_new`.
/// Keep the resolver for the life of the host: its store keeps its listing
/// and, on Linux, watches the root (inotify, from its first listing on, so
/// the title reads of a first query find each log in that listing), so a
/// query that finds nothing changed reads nothing; `DSR_NO_WATCH=1` in the
/// environment turns watching off (docs/discovery.md).
///
/// # Safety
/// `root` is NULL or valid for `root_len` bytes; `config_json` is NULL or
/// valid for `config_len` bytes; `out` and `err` are NULL or valid for
/// pointer writes.
#[no_mangle]
pub unsafe extern "C" fn dsr_resolver_new_dsh_store(
    root: *const c_char,
    root_len: usize,
    config_json: *const c_char,
    config_len: usize,
    out: *mut *mut dsr_resolver,
    err: *mut *mut dsr_error,
) -> dsr_status {
    // SAFETY: every pointer per the contract above.
    unsafe {
        guard(err, || {
            const F: &str = "dsr_resolver_new_dsh_store";
            out_arg(F, "out", out)?;
            out.write(std::ptr::null_mut());
            #[cfg(unix)]
            let path = {
                use std::os::unix::ffi::OsStrExt;
                std::path::PathBuf::from(std::ffi::OsStr::from_bytes(crate::strings::bytes_arg(
                    F, "root", root, root_len,
                )?))
            };
            #[cfg(not(unix))]
            let path = std::path::PathBuf::from(crate::strings::str_arg(F, "root", root, root_len)?);
            let config = config_arg(F, config_json, config_len)?;
            let store = dsh_session_reference::DshStore::open(&path).map_err(|e| {
                Failure::from(dsh_session_reference::Error::new(
                    dsh_session_reference::ErrorCode::ReadFailed,
                    e.to_string(),
                ))
            })?;
            // Kept for the life of the host (above): watching from the first
            // listing, the reads of a first query find each log in it.
            store_resolver(out, Arc::new(store.watching_from_first_listing()), config);
            Ok(())
        })
    }
}

/// Creates a resolver over the on-disk sessions of one or several agents:
/// DSH session logs and other agents' transcripts, listed together (newest
/// first) and read by id (`<kind>:<id>` such as `claude-code:<uuid>`; DSH
/// ids unchanged). See docs/sources.md for every kind, its default location
/// and what each format contributes.
///
/// `sources_json` (nullable; `sources_len` bytes of UTF-8 JSON) is NULL or
/// `null` for every default location that exists, or an array of
/// `{"kind": KIND, "root"?: string|null}` (a missing or null root is the
/// default location), at most one per kind. KIND is one of `dsh`,
/// `claude-code`, `codex`, `copilot-cli`, `gemini-cli`, `cursor`, `aider`
/// (no default location: give its root), `opencode`, `kilo`, `cline`,
/// `roo-code`, `pi`, `qwen-code`, `continue`, `kimi`, `grok`, `goose`, `crush`, `zed`, `hermes`, `warp`, `openhands`; an unknown kind's error
/// message lists them.
/// Text that is not JSON is `DSR_MISUSE`; a malformed list is
/// `DSR_INVALID_CONFIG`. A root that cannot be opened
/// does not fail creation: listing reports it and lists the other sources
/// (a listing fails only when every source fails). Configuration as for
/// `dsr_resolver_new`.
///
/// # Safety
/// `sources_json` is NULL or valid for `sources_len` bytes; `config_json`
/// is NULL or valid for `config_len` bytes; `out` and `err` are NULL or
/// valid for pointer writes.
#[no_mangle]
pub unsafe extern "C" fn dsr_resolver_new_sources(
    sources_json: *const c_char,
    sources_len: usize,
    config_json: *const c_char,
    config_len: usize,
    out: *mut *mut dsr_resolver,
    err: *mut *mut dsr_error,
) -> dsr_status {
    // SAFETY: every pointer per the contract above.
    unsafe {
        guard(err, || {
            const F: &str = "dsr_resolver_new_sources";
            out_arg(F, "out", out)?;
            out.write(std::ptr::null_mut());
            let sources = if sources_json.is_null() {
                Value::Null
            } else {
                json_arg(F, "sources_json", sources_json, sources_len)?
            };
            let config = config_arg(F, config_json, config_len)?;
            let invalid = |e: String| {
                Failure::from(dsh_session_reference::Error::new(
                    dsh_session_reference::ErrorCode::InvalidConfig,
                    format!("{F}: {e}"),
                ))
            };
            let specs = dsh_session_reference::sources::specs_from_json(&sources).map_err(invalid)?;
            let multi = dsh_session_reference::sources::open_sources(&specs).map_err(invalid)?;
            store_resolver(out, Arc::new(multi), config);
            Ok(())
        })
    }
}
