//! A JavaScript host as a [`SessionQuery`].
//!
//! Each host operation is a JavaScript function held as a weak (unref'd)
//! threadsafe function, so an idle resolver never keeps the process alive.
//! The library's worker threads queue a call; on the JavaScript thread the
//! function's result — a value or a Promise — is turned into a
//! [`HostValue`], and a Promise is awaited through its `then`/`catch`
//! callbacks and a oneshot channel, so no thread ever blocks on the host.
//! Rejections and wrong types become [`HostError`]s with the host's message,
//! which the core reports as read failures.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use dsh_session_reference::wire::stringify;
use dsh_session_reference::{
    Fingerprint, HostError, QueryFuture, SearchRequest, SearchResult, SessionHeader, SessionQuery, SurfaceData,
};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{sys, Error as NapiError, ValueType};
use serde_json::Value;
use tokio::sync::oneshot;

/// What a host function produced, converted on the JavaScript thread.
pub enum HostValue {
    /// A string (JSON text, or a title).
    Text(String),
    /// A `Buffer` or other `Uint8Array` holding JSON text, shared without a
    /// copy (it is kept alive by a reference until the core is done with it;
    /// the host must not modify it meanwhile).
    Bytes(Buffer),
    /// `null` or `undefined`.
    Nothing,
    /// Any other value: the description of its type, for the error message.
    Wrong(&'static str),
}

fn type_description(t: ValueType) -> &'static str {
    match t {
        ValueType::Undefined => "undefined",
        ValueType::Null => "null",
        ValueType::Boolean => "a boolean",
        ValueType::Number => "a number",
        ValueType::String => "a string",
        ValueType::Symbol => "a symbol",
        ValueType::Object => "an object",
        ValueType::Function => "a function",
        ValueType::External => "an external",
        ValueType::BigInt => "a bigint",
        _ => "an unknown value",
    }
}

impl TypeName for HostValue {
    fn type_name() -> &'static str {
        "string | Uint8Array | null | undefined"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl FromNapiValue for HostValue {
    /// Never fails for a well-formed value: the wrong types are reported as
    /// [`HostValue::Wrong`] so that the core sees a read failure.
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        let mut raw_type = 0;
        // SAFETY: `env` and `value` come from napi on the JavaScript thread.
        check_status!(unsafe { sys::napi_typeof(env, value, &mut raw_type) })?;
        let value_type = ValueType::from(raw_type);
        match value_type {
            // SAFETY: the same `env` and `value`, which napi just typed as a string.
            ValueType::String => Ok(HostValue::Text(unsafe { String::from_napi_value(env, value) }?)),
            ValueType::Null | ValueType::Undefined => Ok(HostValue::Nothing),
            ValueType::Object => {
                // Only a `Uint8Array` (a `Buffer` is one): `napi_is_buffer`
                // is also true for every other view (a `DataView`, a
                // `Float64Array`), whose bytes are not text.
                let mut is_typed_array = false;
                // SAFETY: the same `env` and `value`; the out-pointer is a live local.
                check_status!(unsafe { sys::napi_is_typedarray(env, value, &mut is_typed_array) })?;
                if is_typed_array && is_uint8_array(env, value)? {
                    // SAFETY: the same `env` and `value`, checked above to be a `Uint8Array`.
                    Ok(HostValue::Bytes(unsafe { Buffer::from_napi_value(env, value) }?))
                } else {
                    Ok(HostValue::Wrong("an object"))
                }
            }
            other => Ok(HostValue::Wrong(type_description(other))),
        }
    }
}

fn is_uint8_array(env: sys::napi_env, value: sys::napi_value) -> Result<bool> {
    let mut kind = 0;
    let mut length = 0;
    let mut data = std::ptr::null_mut();
    let mut buffer = std::ptr::null_mut();
    let mut offset = 0;
    // SAFETY: `value` is a typed array (checked by the caller).
    check_status!(unsafe {
        sys::napi_get_typedarray_info(env, value, &mut kind, &mut length, &mut data, &mut buffer, &mut offset)
    })?;
    Ok(kind == sys::TypedarrayType::uint8_array)
}

/// Called on the JavaScript thread once a host's Promise settled (after its
/// outcome was delivered): with the size of its value when it was
/// fulfilled, `None` when it was rejected.
pub type Watch = Box<dyn FnOnce(&Env, Option<usize>) + Send>;

/// The eventual outcome of one host call: the settled value of the Promise
/// it returned (or its plain value), or the reason of its rejection.
pub struct Pending {
    outcome: oneshot::Receiver<std::result::Result<HostValue, String>>,
    /// For a plain value (not a Promise): its size in bytes, so a caller
    /// can tell that the outcome is already there and how big it is.
    ready_bytes: Option<usize>,
    /// For a Promise: the [`Watch`] to call when it settles.
    watch: Option<Arc<Mutex<Option<Watch>>>>,
}

impl Pending {
    /// The outcome, once the host's Promise (if any) settled.
    async fn outcome(self) -> std::result::Result<HostValue, HostError> {
        self.outcome.await.map_err(|_| HostError::new("the host's promise was dropped"))?.map_err(HostError::new)
    }

    /// For a Promise, arranges for `watch` to be called when it settles and
    /// returns `true`; `false` for a plain value. A Promise settles in a
    /// later microtask, never during the call that returned it.
    fn set_watch(&self, watch: Watch) -> bool {
        let Some(slot) = &self.watch else { return false };
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(watch);
        true
    }
}

impl HostValue {
    /// The size in bytes of the text it holds (0 for anything else).
    fn size(&self) -> usize {
        match self {
            HostValue::Text(s) => s.len(),
            HostValue::Bytes(b) => b.len(),
            HostValue::Nothing | HostValue::Wrong(_) => 0,
        }
    }
}

/// Calls the [`Watch`] in `slot`, if one was set.
fn report(slot: &Mutex<Option<Watch>>, env: &Env, size: Option<usize>) {
    let watch = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(watch) = watch {
        watch(env, size);
    }
}

/// The text of a rejection reason: an `Error`'s `message`, a string as is.
fn rejection_reason(reason: Unknown<'_>) -> String {
    let text = NapiError::from_unknown_without_coercion(reason).reason;
    if text.is_empty() {
        "the host's promise was rejected without a message".to_owned()
    } else {
        text
    }
}

impl TypeName for Pending {
    fn type_name() -> &'static str {
        "Promise<string | Uint8Array | null | undefined>"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl FromNapiValue for Pending {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        let (tx, rx) = oneshot::channel();
        let mut is_promise = false;
        // SAFETY: called by napi on the JavaScript thread.
        check_status!(unsafe { sys::napi_is_promise(env, value, &mut is_promise) })?;
        if !is_promise {
            // SAFETY: the same `env` and `value`, on the JavaScript thread.
            let value = unsafe { HostValue::from_napi_value(env, value) }?;
            let ready_bytes = Some(value.size());
            let _ = tx.send(Ok(value));
            return Ok(Pending { outcome: rx, ready_bytes, watch: None });
        }
        let on_value = Rc::new(Cell::new(Some(tx)));
        let on_error = Rc::clone(&on_value);
        let watch: Arc<Mutex<Option<Watch>>> = Arc::default();
        let (on_fulfilled, on_rejected) = (Arc::clone(&watch), Arc::clone(&watch));
        // SAFETY: the same `env` and `value`, which napi just reported to be a Promise.
        let promise = unsafe { PromiseRaw::<HostValue>::from_napi_value(env, value) }?;
        promise
            .then(move |ctx| {
                let size = ctx.value.size();
                if let Some(tx) = on_value.take() {
                    // The receiver is gone when the operation was cancelled.
                    let _ = tx.send(Ok(ctx.value));
                    report(&on_fulfilled, &ctx.env, Some(size));
                }
                Ok(())
            })?
            .catch(move |ctx: CallbackContext<Unknown>| {
                if let Some(tx) = on_error.take() {
                    let _ = tx.send(Err(rejection_reason(ctx.value)));
                    report(&on_rejected, &ctx.env, None);
                }
                Ok(())
            })?;
        Ok(Pending { outcome: rx, ready_bytes: None, watch: Some(watch) })
    }
}

/// A host function callable from any thread: `(arg) => value | Promise`.
pub type HostFunction<A> = ThreadsafeFunction<A, Pending, A, Status, false, true>;

/// Builds a weak threadsafe function over a host function.
pub fn host_function<A: 'static + JsValuesTupleIntoVec>(f: Function<'_, A, Pending>) -> Result<HostFunction<A>> {
    f.build_threadsafe_function().callee_handled::<false>().weak::<true>().build()
}

/// Calls a host function and awaits its result without blocking a thread.
async fn call<A: 'static + JsValuesTupleIntoVec>(
    f: &HostFunction<A>,
    arg: A,
) -> std::result::Result<HostValue, HostError> {
    f.call_async_catch(arg).await.map_err(|e| HostError::new(e.reason))?.outcome().await
}

/// The session list from a host value: JSON text as a string or bytes
/// (the wrapper hands a listed array over as JSON text).
fn session_list(value: HostValue) -> std::result::Result<Vec<SessionHeader>, HostError> {
    let listed = match &value {
        HostValue::Text(s) => SessionHeader::list_from_json_text(s.as_bytes()),
        HostValue::Bytes(b) => SessionHeader::list_from_json_text(b.as_ref()),
        HostValue::Nothing => Err("no value".to_owned()),
        HostValue::Wrong(t) => Err(t.to_string()),
    };
    listed.map_err(|e| HostError::new(format!("listSessions returned an invalid value: {e}")))
}

/// The three host operations (docs/contract.md §9) of a JavaScript session query.
pub struct JsQuery {
    list_sessions: HostFunction<()>,
    read_title: HostFunction<String>,
    read_surface: HostFunction<String>,
    /// The optional `fingerprints(ids)` and `search(request)`, each taking
    /// and giving JSON text (the wrapper converts).
    fingerprints: Option<HostFunction<String>>,
    search: Option<HostFunction<String>>,
}

impl JsQuery {
    /// A query over the three host functions.
    pub fn new(
        list_sessions: HostFunction<()>,
        read_title: HostFunction<String>,
        read_surface: HostFunction<String>,
    ) -> Self {
        JsQuery { list_sessions, read_title, read_surface, fingerprints: None, search: None }
    }

    /// The query with the host's optional functions.
    pub fn with_optional(
        mut self,
        fingerprints: Option<HostFunction<String>>,
        search: Option<HostFunction<String>>,
    ) -> Self {
        self.fingerprints = fingerprints;
        self.search = search;
        self
    }
}

/// The JSON a host's optional function gave: `None` for `null`/`undefined`.
async fn optional_json(
    f: &HostFunction<String>,
    method: &str,
    arg: &Value,
) -> std::result::Result<Option<Value>, HostError> {
    match call(f, stringify(arg)).await? {
        HostValue::Nothing => Ok(None),
        HostValue::Text(json) => dsh_session_reference::wire::parse_js(&json)
            .map(Some)
            .map_err(|e| HostError::new(format!("{method} returned an invalid value: {e}"))),
        HostValue::Bytes(_) => Err(HostError::new(format!("{method} returned bytes, not JSON text"))),
        HostValue::Wrong(t) => Err(HostError::new(format!("{method} returned {t}, not JSON text"))),
    }
}

impl SessionQuery for JsQuery {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        Box::pin(async move { session_list(call(&self.list_sessions, ()).await?) })
    }

    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        Box::pin(async move {
            match call(&self.read_title, session_id.to_owned()).await? {
                HostValue::Text(title) => Ok(Some(title)),
                HostValue::Nothing => Ok(None),
                HostValue::Bytes(_) => Err(HostError::new("readTitle returned bytes, not a string")),
                HostValue::Wrong(t) => Err(HostError::new(format!("readTitle returned {t}, not a string"))),
            }
        })
    }

    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        Box::pin(async move { surface_of(call(&self.read_surface, session_id.to_owned()).await?) })
    }

    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        Box::pin(async move {
            let Some(f) = &self.fingerprints else { return Ok(None) };
            match optional_json(f, "fingerprints", &Value::from(session_ids.to_vec())).await? {
                None => Ok(None),
                Some(v) => Fingerprint::list_from_json(&v).map(Some).map_err(HostError::new),
            }
        })
    }

    fn search<'a>(&'a self, request: &'a SearchRequest) -> QueryFuture<'a, Option<Vec<SearchResult>>> {
        Box::pin(async move {
            let Some(f) = &self.search else { return Ok(None) };
            match optional_json(f, "search", &request.to_json()).await? {
                None => Ok(None),
                Some(v) => {
                    SearchResult::list_from_json(&v).map(Some).map_err(|e| HostError::new(format!("search: {e}")))
                }
            }
        })
    }
}

/// The snapshot in a `readSurface` result.
fn surface_of(value: HostValue) -> std::result::Result<SurfaceData, HostError> {
    match value {
        HostValue::Text(json) => Ok(SurfaceData::from(json)),
        HostValue::Bytes(bytes) => Ok(SurfaceData::json(bytes)),
        HostValue::Nothing => Err(HostError::new("readSurface returned no snapshot")),
        HostValue::Wrong(t) => {
            Err(HostError::new(format!("readSurface returned {t}, not a snapshot object, JSON text or Buffer")))
        }
    }
}

/// One `prepare`'s view of a JavaScript host whose surface reads were
/// already started on the JavaScript thread when the call was made (see
/// `NativeResolver::prepare`): each read is taken once from here, saving a
/// round trip from the library's runtime to the JavaScript thread and
/// back; anything else goes to the host as usual.
pub struct Prefetched {
    host: Arc<JsQuery>,
    surfaces: Mutex<Vec<(String, Pending)>>,
}

impl Prefetched {
    /// The host, with the reads started for these session ids.
    pub fn new(host: Arc<JsQuery>, surfaces: Vec<(String, Pending)>) -> Self {
        Prefetched { host, surfaces: Mutex::new(surfaces) }
    }

    /// When every read already has its value (the host returned plain
    /// values, not Promises): the total size of those values.
    pub fn ready_bytes(&self) -> Option<usize> {
        let surfaces = self.surfaces.lock().unwrap_or_else(|e| e.into_inner());
        surfaces.iter().map(|(_, pending)| pending.ready_bytes).sum()
    }

    /// Sets a [`Watch`] (made by `make`) on every read still waiting on a
    /// Promise; returns how many there are and the total size of the values
    /// already there.
    pub fn watch_promises(&self, make: impl Fn() -> Watch) -> (usize, usize) {
        let surfaces = self.surfaces.lock().unwrap_or_else(|e| e.into_inner());
        let (mut waiting, mut bytes) = (0, 0);
        for (_, pending) in surfaces.iter() {
            match pending.ready_bytes {
                Some(n) => bytes += n,
                None => waiting += usize::from(pending.set_watch(make())),
            }
        }
        (waiting, bytes)
    }

    fn take(&self, session_id: &str) -> Option<Pending> {
        let mut surfaces = self.surfaces.lock().unwrap_or_else(|e| e.into_inner());
        let at = surfaces.iter().position(|(id, _)| id == session_id)?;
        Some(surfaces.swap_remove(at).1)
    }
}

impl SessionQuery for Prefetched {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        self.host.list_sessions()
    }

    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        self.host.read_title(session_id)
    }

    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        match self.take(session_id) {
            Some(pending) => Box::pin(async move { surface_of(pending.outcome().await?) }),
            None => self.host.read_surface(session_id),
        }
    }
}
