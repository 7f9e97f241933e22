//! The host vtable (`dsr_host`), the sink callbacks write into, and the
//! adapter that turns a vtable into the core's blocking session query.

use std::ffi::{c_char, c_void};
use std::sync::Mutex;

use dsh_session_reference::{
    BlockingSessionQuery, Fingerprint, HostError, SearchRequest, SearchResult, SessionHeader, SurfaceData,
};
use serde_json::Value;

use crate::error::{dsr_error, dsr_status, guard, Failure};
use crate::strings::bytes_arg;

/// `dsr_host.flags` bit: never call two of this host's callbacks at the same
/// time (the library serializes them with a lock). Without it, callbacks run
/// concurrently on library worker threads and must be thread-safe.
pub const DSR_HOST_SERIALIZE_CALLS: u32 = 1;

/// Where a host callback delivers its output. Library-owned: valid only
/// during the callback it was passed to; never stored or freed by the host.
/// Text written here is copied, so nothing crosses allocators.
pub struct dsr_sink {
    data: Vec<u8>,
    written: bool,
    failure: Option<String>,
}

impl dsr_sink {
    fn new() -> Self {
        dsr_sink { data: Vec::new(), written: false, failure: None }
    }

    /// The callback's outcome: `Ok(None)` when it wrote nothing.
    fn finish(self) -> Result<Option<Vec<u8>>, HostError> {
        match self.failure {
            Some(reason) => Err(HostError::new(reason)),
            None => Ok(self.written.then_some(self.data)),
        }
    }
}

/// Lists the host's sessions: write a JSON array of session headers
/// `[{"id": string, "createdAt": number, "cwd"?: string}, ...]`, in creation
/// order, with `dsr_sink_write` (or report a failure with `dsr_sink_fail`).
pub type dsr_list_sessions_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, sink: *mut dsr_sink)>;

/// Reads a session's latest title: write the title as UTF-8 text (writing
/// zero bytes means the empty title), write nothing when the session has no
/// title, or call `dsr_sink_fail`. `session_id` is `session_id_len` bytes of
/// UTF-8 (followed by a NUL for convenience; ids may contain NUL bytes).
pub type dsr_read_title_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, session_id: *const c_char, session_id_len: usize, sink: *mut dsr_sink),
>;

/// Reads a session's surface snapshot: write its JSON text
/// `{"session": {...}, "capturedThroughSeq": int | null, "events": [...]}`,
/// or call `dsr_sink_fail`. `session_id` as for `dsr_read_title_fn`.
pub type dsr_read_surface_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, session_id: *const c_char, session_id_len: usize, sink: *mut dsr_sink),
>;

/// Optional change detection (NULL: none). `request_json` is
/// `request_len` bytes of UTF-8 JSON: an array of session ids. Write a JSON
/// array of the same length whose items are strings (or numbers) that change whenever
/// the session may have changed (for a log file, e.g.
/// `"<device>:<inode>:<size>:<mtime_ns>"`) or `null` for a session without
/// one; or write nothing when there are no fingerprints. The resolver caches
/// titles and indexed texts under them; a failure only disables the caches
/// for that query.
pub type dsr_fingerprints_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, request_json: *const c_char, request_len: usize, sink: *mut dsr_sink),
>;

/// Optional search implemented by the host (NULL: the built-in index).
/// `request_json` is `{"target": {"id", "cwd"}, "query": string, "limit":
/// number, "scope": "all" | "cwd"}`. Write a JSON array of results, best
/// first: `[{"sessionId": string, "label"?: string, "cwd"?: string | null,
/// "createdAt": number, "snippet"?: string, "field"?: "title" | "message" |
/// "id" | "cwd", "messageIndex"?: integer | null}, ...]`; or write nothing to
/// let the resolver use its built-in index for this query. The resolver drops
/// the target's own session, cuts at the limit and computes the mentions.
pub type dsr_search_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, request_json: *const c_char, request_len: usize, sink: *mut dsr_sink),
>;

/// Releases the host's `user_data`.
pub type dsr_destroy_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// A host's session query (docs/contract.md §9) as a table of callbacks.
///
/// Set `size` to `sizeof(dsr_host)` (a host built against the previous
/// header, whose table ends at `destroy`, passes its smaller size and has
/// neither `fingerprints` nor `search`). Every callback receives `user_data`
/// first and writes its result into the library-owned `sink` with
/// `dsr_sink_write` (appending; several writes concatenate) or reports a
/// failure with `dsr_sink_fail` (the reason reaches the caller's error
/// message). Callbacks run on library worker threads, possibly several at
/// once, unless `flags` has `DSR_HOST_SERIALIZE_CALLS`. A callback must not
/// call back into a `dsr_resolver_*` function.
///
/// A NULL `list_sessions` or `read_surface` makes those reads fail
/// (`SESSION_REFERENCE_READ_FAILED`); a NULL `read_title` means no session
/// has a title. `destroy` (nullable) is called exactly once, after the last
/// callback has returned, once the resolver is freed; it may run on another
/// thread, and later than `dsr_resolver_free` if a cancelled callback is
/// still running.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dsr_host {
    /// `sizeof(dsr_host)`, or the size of the previous table (up to and
    /// including `destroy`); any other value is `DSR_MISUSE`.
    pub size: usize,
    /// `0` or `DSR_HOST_SERIALIZE_CALLS`; unknown bits are `DSR_MISUSE`.
    pub flags: u32,
    /// Passed to every callback and to `destroy`.
    pub user_data: *mut c_void,
    /// Lists sessions (nullable).
    pub list_sessions: dsr_list_sessions_fn,
    /// Reads a title (nullable).
    pub read_title: dsr_read_title_fn,
    /// Reads a surface snapshot (nullable).
    pub read_surface: dsr_read_surface_fn,
    /// Frees `user_data` (nullable).
    pub destroy: dsr_destroy_fn,
    /// Change detection for the discovery caches (nullable).
    pub fingerprints: dsr_fingerprints_fn,
    /// The host's own search (nullable).
    pub search: dsr_search_fn,
}

/// A validated host vtable owned by a resolver.
pub(crate) struct CHost {
    vtable: dsr_host,
    serialize: Option<Mutex<()>>,
}

// SAFETY: the vtable's contract requires thread-safe callbacks (or the
// serialize flag, which `CHost` honours with a lock); `user_data` is only
// ever handed back to the host.
unsafe impl Send for CHost {}
// SAFETY: as above.
unsafe impl Sync for CHost {}

impl CHost {
    /// Reads and validates a vtable.
    ///
    /// # Safety
    /// `host` is NULL or points to at least `size_t` readable bytes, and to a
    /// whole `dsr_host` when its first field equals `sizeof(dsr_host)`.
    pub(crate) unsafe fn from_ptr(func: &str, host: *const dsr_host) -> Result<CHost, Failure> {
        if host.is_null() {
            return Err(Failure::misuse(format!("{func}: `host` is NULL")));
        }
        // SAFETY: the first field is readable per the contract.
        let size = unsafe { host.cast::<usize>().read_unaligned() };
        let expected = std::mem::size_of::<dsr_host>();
        let previous = std::mem::offset_of!(dsr_host, fingerprints);
        if size != expected && size != previous {
            return Err(Failure::misuse(format!(
                "{func}: `host->size` is {size}, expected sizeof(dsr_host) = {expected} (is the header from another version?)"
            )));
        }
        let mut vtable = dsr_host {
            size,
            flags: 0,
            user_data: std::ptr::null_mut(),
            list_sessions: None,
            read_title: None,
            read_surface: None,
            destroy: None,
            fingerprints: None,
            search: None,
        };
        // SAFETY: the host's first `size` bytes are readable (the contract),
        // `size` is at most `sizeof(dsr_host)`, and every field is valid for
        // any bit pattern a C host writes (integers, pointers, nullable
        // function pointers); the fields past `size` keep their NULLs.
        unsafe { std::ptr::copy_nonoverlapping(host.cast::<u8>(), std::ptr::addr_of_mut!(vtable).cast::<u8>(), size) };
        if vtable.flags & !DSR_HOST_SERIALIZE_CALLS != 0 {
            return Err(Failure::misuse(format!("{func}: `host->flags` has unknown bits {:#x}", vtable.flags)));
        }
        let serialize = (vtable.flags & DSR_HOST_SERIALIZE_CALLS != 0).then(|| Mutex::new(()));
        Ok(CHost { vtable, serialize })
    }

    /// Runs one callback with a fresh sink, under the lock when asked to.
    fn call(&self, f: impl FnOnce(*mut dsr_sink)) -> Result<Option<Vec<u8>>, HostError> {
        let _lock = self.serialize.as_ref().map(|m| m.lock().unwrap_or_else(|e| e.into_inner()));
        let mut sink = dsr_sink::new();
        f(&mut sink);
        sink.finish()
    }

    fn call_with_id(
        &self,
        f: unsafe extern "C" fn(*mut c_void, *const c_char, usize, *mut dsr_sink),
        id: &str,
    ) -> Result<Option<Vec<u8>>, HostError> {
        let mut with_nul = Vec::with_capacity(id.len() + 1);
        with_nul.extend_from_slice(id.as_bytes());
        with_nul.push(0);
        self.call(|sink| {
            // SAFETY: a host-provided callback called per its contract.
            unsafe { f(self.vtable.user_data, with_nul.as_ptr().cast(), id.len(), sink) }
        })
    }
}

impl Drop for CHost {
    fn drop(&mut self) {
        if let Some(destroy) = self.vtable.destroy {
            // SAFETY: called once, after the last callback (the last Arc is gone).
            unsafe { destroy(self.vtable.user_data) };
        }
    }
}

fn utf8(what: &str, bytes: Vec<u8>) -> Result<String, HostError> {
    String::from_utf8(bytes).map_err(|e| {
        HostError::new(format!("the host's {what} is not valid UTF-8 (byte {})", e.utf8_error().valid_up_to()))
    })
}

impl BlockingSessionQuery for CHost {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        let f = self.vtable.list_sessions.ok_or_else(|| HostError::new("the host has no list_sessions callback"))?;
        let bytes = self.call(|sink| {
            // SAFETY: a host-provided callback called per its contract.
            unsafe { f(self.vtable.user_data, sink) }
        })?;
        SessionHeader::list_from_json_text(&bytes.unwrap_or_default())
            .map_err(|e| HostError::new(format!("the host's list_sessions: {e}")))
    }

    fn read_title(&self, session_id: &str) -> Result<Option<String>, HostError> {
        let Some(f) = self.vtable.read_title else { return Ok(None) };
        match self.call_with_id(f, session_id)? {
            None => Ok(None),
            Some(bytes) => utf8("title", bytes).map(Some),
        }
    }

    fn read_surface(&self, session_id: &str) -> Result<SurfaceData, HostError> {
        let f = self.vtable.read_surface.ok_or_else(|| HostError::new("the host has no read_surface callback"))?;
        let bytes = self.call_with_id(f, session_id)?.unwrap_or_default();
        Ok(SurfaceData::json(bytes))
    }

    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        let Some(f) = self.vtable.fingerprints else { return Ok(None) };
        let request = dsh_session_reference::wire::stringify(&Value::from(session_ids.to_vec()));
        let Some(bytes) = self.call_with_id(f, &request)? else { return Ok(None) };
        let value = json_reply("fingerprints", bytes)?;
        Fingerprint::list_from_json(&value).map(Some).map_err(|e| HostError::new(format!("the host's {e}")))
    }

    fn search(&self, request: &SearchRequest) -> Result<Option<Vec<SearchResult>>, HostError> {
        let Some(f) = self.vtable.search else { return Ok(None) };
        let request = dsh_session_reference::wire::stringify(&request.to_json());
        let Some(bytes) = self.call_with_id(f, &request)? else { return Ok(None) };
        let value = json_reply("search", bytes)?;
        SearchResult::list_from_json(&value).map(Some).map_err(|e| HostError::new(format!("the host's search: {e}")))
    }
}

/// A callback's JSON output, parsed as `JSON.parse` would.
fn json_reply(what: &str, bytes: Vec<u8>) -> Result<Value, HostError> {
    let text = utf8(what, bytes)?;
    dsh_session_reference::wire::parse_js(&text)
        .map_err(|e| HostError::new(format!("the host's {what} is not JSON: {e}")))
}

/// Appends `data_len` bytes at `data` to the callback's output (the bytes
/// are copied). Call it from inside the callback that received `sink`.
/// A NULL `sink` or `data` is `DSR_MISUSE`.
///
/// # Safety
/// `sink` is NULL or the sink passed to the running callback; `data` is NULL
/// or valid for `data_len` bytes; `err` is NULL or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn dsr_sink_write(
    sink: *mut dsr_sink,
    data: *const c_char,
    data_len: usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    // SAFETY: `err` per the contract.
    unsafe {
        guard(err, || {
            const F: &str = "dsr_sink_write";
            // SAFETY: NULL or the live sink per the contract.
            let sink = sink.as_mut().ok_or_else(|| Failure::misuse(format!("{F}: `sink` is NULL")))?;
            let bytes = bytes_arg(F, "data", data, data_len)?;
            sink.data.extend_from_slice(bytes);
            sink.written = true;
            Ok(())
        })
    }
}

/// Reports that the callback failed, with a reason for people
/// (`reason_len` bytes at `reason`, UTF-8; invalid sequences are replaced).
/// The failure wins over anything written; the first reason is kept.
/// A NULL `sink` or `reason` is `DSR_MISUSE`.
///
/// # Safety
/// As `dsr_sink_write`.
#[no_mangle]
pub unsafe extern "C" fn dsr_sink_fail(
    sink: *mut dsr_sink,
    reason: *const c_char,
    reason_len: usize,
    err: *mut *mut dsr_error,
) -> dsr_status {
    // SAFETY: `err` per the contract.
    unsafe {
        guard(err, || {
            const F: &str = "dsr_sink_fail";
            // SAFETY: NULL or the live sink per the contract.
            let sink = sink.as_mut().ok_or_else(|| Failure::misuse(format!("{F}: `sink` is NULL")))?;
            let bytes = bytes_arg(F, "reason", reason, reason_len)?;
            if sink.failure.is_none() {
                sink.failure = Some(String::from_utf8_lossy(bytes).into_owned());
            }
            Ok(())
        })
    }
}
