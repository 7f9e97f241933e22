//! The native resolver and cancel handle behind the wrapper's
//! `SessionReferenceResolver`.
//!
//! Every async method validates its arguments on the JavaScript thread,
//! spawns the core's future on the library's own tokio runtime
//! ([`core::runtime`]) — never on the libuv pool, which a
//! host using `fs.promises` needs for itself — and returns a Promise that a
//! deferred settles from that runtime. The Promise resolves to the result as
//! JSON text (with prepared prompts apart, see [`PreparedParts`]), or to a
//! [`NativeFailure`] that the wrapper turns into a
//! `SessionReferenceError`; it never rejects, so the stable code survives.
//!
//! `prepare` is the exception, for small work: it reads the host on the
//! JavaScript thread when it is called, and when the snapshots are small it
//! runs there too, at once (plain values) or when the host's Promises
//! settle ([`Join`]); see [`INLINE_BYTES`].

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use core::wire::{
    parse_js, stringify, CandidatesRequest, PrepareMessagesRequest, PrepareRequest, ReadRequest, RequestError,
    SearchArgs,
};
use core::{CancelToken, Config, Resolver, SessionQuery, Target};
use dsh_session_reference as core;
use futures::FutureExt;
use napi::bindgen_prelude::*;
use napi::{Env, JsDeferred, ValueType};
use napi_derive::napi;
use serde_json::{Number, Value};

use crate::host::{host_function, JsQuery, Pending, Prefetched};
use crate::INVALID_ARGUMENT;

/// Why a native operation failed: a stable contract code (or
/// `ERR_INVALID_ARG_TYPE` for misuse of the native API) and a message.
#[napi(object)]
pub struct NativeFailure {
    /// The stable code, e.g. `SESSION_REFERENCE_CANCELLED`.
    pub code: String,
    /// A human-readable message (not part of the contract).
    pub message: String,
}

impl NativeFailure {
    fn misuse(message: impl Into<String>) -> Self {
        NativeFailure { code: INVALID_ARGUMENT.to_owned(), message: message.into() }
    }
}

impl From<core::Error> for NativeFailure {
    fn from(err: core::Error) -> Self {
        NativeFailure { code: err.code().as_str().to_owned(), message: err.message().to_owned() }
    }
}

/// A cancel token the wrapper creates per call and cancels when the call's
/// `AbortSignal` aborts.
#[napi]
pub struct CancelHandle {
    token: CancelToken,
    /// Run on the JavaScript thread when the handle is cancelled (see
    /// [`Join`]).
    on_cancel: Mutex<Vec<OnCancel>>,
}

/// Work to run on the JavaScript thread when a [`CancelHandle`] is cancelled.
type OnCancel = Box<dyn FnOnce(&Env) + Send>;

impl Default for CancelHandle {
    fn default() -> Self {
        CancelHandle::new()
    }
}

#[napi]
impl CancelHandle {
    /// A fresh handle that is not cancelled.
    #[napi(constructor)]
    pub fn new() -> Self {
        CancelHandle { token: CancelToken::new(), on_cancel: Mutex::default() }
    }

    /// Cancels every operation observing this handle (idempotent).
    #[napi]
    pub fn cancel(&self, env: Env) {
        self.token.cancel();
        let hooks = std::mem::take(&mut *self.on_cancel.lock().unwrap_or_else(|e| e.into_inner()));
        for hook in hooks {
            hook(&env);
        }
    }

    /// Whether `cancel()` has been called.
    #[napi(getter)]
    pub fn cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}

/// A JavaScript primitive as the JSON value the core validates: numbers
/// that are not finite, and every non-number, become values the core
/// rejects (a string naming the type), so `NaN` is not mistaken for `null`.
fn scalar_to_json(value: Unknown<'_>) -> Result<Option<Value>> {
    Ok(match value.get_type()? {
        ValueType::Undefined => None,
        ValueType::Null => Some(Value::Null),
        ValueType::Number => {
            // SAFETY: `get_type` just reported a number, so the cast reads a double.
            let n: f64 = unsafe { value.cast() }?;
            Some(Number::from_f64(n).map_or_else(|| Value::from("a non-finite number"), Value::Number))
        }
        // SAFETY: `get_type` just reported a boolean, so the cast reads one.
        ValueType::Boolean => Some(Value::Bool(unsafe { value.cast() }?)),
        other => Some(Value::from(format!("{other:?}"))),
    })
}

/// An explicit candidate limit: `undefined` takes the configured one; any
/// other value must be a positive safe integer.
fn limit_from_js(limit: Unknown<'_>) -> Result<core::Result<Option<u64>>> {
    Ok(match scalar_to_json(limit)? {
        None => Ok(None),
        Some(v) => core::candidate_limit_from_json(&v).map(Some),
    })
}

/// Validates a configuration object (`undefined`/`null` = defaults), reading
/// its keys as JavaScript values (the numbers, the hardened mode's booleans,
/// `dshCompat` as a string).
pub fn config_from_js(config: Option<Unknown<'_>>) -> Result<std::result::Result<Config, core::Error>> {
    let Some(config) = config else { return Ok(Ok(Config::default())) };
    match config.get_type()? {
        ValueType::Undefined | ValueType::Null => return Ok(Ok(Config::default())),
        ValueType::Object => {}
        _ => return Ok(Config::from_json(&Value::from("not an object"))),
    }
    // SAFETY: `get_type` just reported an object, so it can be viewed as one.
    let object: Object = unsafe { config.cast() }?;
    let mut map = serde_json::Map::new();
    for key in core::wire::CONFIG_KEYS {
        let value: Unknown = object.get_named_property(key)?;
        let json = if key == "dshCompat" && value.get_type()? == ValueType::String {
            // SAFETY: the value was just checked to be a string.
            Some(Value::String(unsafe { value.cast::<String>() }?))
        } else {
            scalar_to_json(value)?
        };
        if let Some(v) = json {
            map.insert(key.to_owned(), v);
        }
    }
    Ok(Config::from_json(&Value::Object(map)))
}

/// JSON text from the wrapper.
fn parse_arg(what: &str, json: &str) -> std::result::Result<Value, NativeFailure> {
    parse_js(json).map_err(|e| NativeFailure::misuse(format!("{what} is not JSON: {e}")))
}

/// A request the wrapper sent as JSON text, read with the core's reader:
/// a shape error is a misuse, a refused value its contract error.
fn request<T>(
    json: &str,
    read: impl FnOnce(Value) -> std::result::Result<T, RequestError>,
) -> std::result::Result<T, NativeFailure> {
    read(parse_arg("request", json)?).map_err(|e| match e {
        RequestError::Shape(m) => NativeFailure::misuse(m),
        RequestError::Contract(e) => e.into(),
    })
}

/// The settled value of a native operation's Promise: its result (JSON
/// text, or [`PreparedParts`]) or a failure.
pub type Settled<T = String> = Either<T, NativeFailure>;

type Deferred<T> = JsDeferred<Settled<T>, Box<dyn FnOnce(Env) -> Result<Settled<T>> + Send>>;

/// A context message as it crosses back: its parts, each converted once
/// (the prompt, the one large string, straight into a JavaScript string).
/// The wrapper builds the message object from them.
#[napi(object)]
pub struct NativeContext {
    /// The message id (a UUID).
    pub id: String,
    /// The prompt.
    pub prompt: String,
    /// The JSON text of the `source` metadata.
    pub source: String,
}

impl From<core::ContextMessage> for NativeContext {
    fn from(c: core::ContextMessage) -> Self {
        NativeContext { id: c.id, prompt: c.prompt, source: stringify(&c.source.to_json()) }
    }
}

/// A prepared result as it crosses back: the JSON text of everything but
/// the context messages, and the context messages apart.
#[napi(object)]
pub struct PreparedParts {
    /// `prepare`: the JSON text of `{content}`; `prepareMessages`: of the
    /// output message list without its context messages.
    pub json: String,
    /// The context messages, in order.
    pub contexts: Vec<NativeContext>,
    /// For `prepareMessages`, the index in the output list of each context
    /// message (empty for `prepare`, whose one context message is its
    /// `additionalContext`).
    pub at: Vec<u32>,
}

impl PreparedParts {
    fn of_prepared(prepared: core::Prepared) -> Self {
        let mut json = serde_json::Map::new();
        json.insert("content".into(), prepared.content);
        let contexts = prepared.additional_context.map(NativeContext::from).into_iter().collect();
        PreparedParts { json: stringify(&Value::Object(json)), contexts, at: Vec::new() }
    }

    fn of_messages(messages: Vec<core::PreparedMessage>) -> std::result::Result<Self, NativeFailure> {
        let (mut plain, mut contexts, mut at) = (Vec::new(), Vec::new(), Vec::new());
        for (i, message) in messages.into_iter().enumerate() {
            match message {
                core::PreparedMessage::Message(m) => plain.push(m),
                core::PreparedMessage::Context(c) => {
                    at.push(u32::try_from(i).map_err(|_| NativeFailure::misuse("too many messages"))?);
                    contexts.push(NativeContext::from(c));
                }
            }
        }
        Ok(PreparedParts { json: stringify(&Value::Array(plain)), contexts, at })
    }
}

/// A page as it crosses back: the JSON text of the page for a program
/// (`Page::to_json`) and its framed text apart, converted once into a
/// JavaScript string.
#[napi(object)]
pub struct PageParts {
    /// The JSON text of `{sessionId, label, cwd?, totalMessages, capturedThroughSeq,
    /// messages, nextCursor?, prevCursor?, redactedSecrets?}`.
    pub json: String,
    /// The framed text for a model.
    pub text: String,
}

fn outcome<T>(result: std::thread::Result<std::result::Result<T, NativeFailure>>) -> Settled<T> {
    match result {
        Ok(Ok(json)) => Either::A(json),
        Ok(Err(failure)) => Either::B(failure),
        Err(_) => Either::B(NativeFailure {
            code: core::ErrorCode::ReadFailed.as_str().to_owned(),
            message: "the session-reference library panicked".to_owned(),
        }),
    }
}

/// `work`, settling with a failure instead of unwinding on a panic.
fn settling<T, F>(work: F) -> Work<T>
where
    T: Send + 'static,
    F: Future<Output = std::result::Result<T, NativeFailure>> + Send + 'static,
{
    Box::pin(async move { outcome(AssertUnwindSafe(work).catch_unwind().await) })
}

/// Runs `work` on the library's runtime and returns a Promise that it
/// settles. A panic in the core settles it with a failure instead of
/// leaving it pending forever.
pub fn spawn<'env, T, F>(env: &'env Env, work: F) -> Result<Object<'env>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = std::result::Result<T, NativeFailure>> + Send + 'static,
{
    settle_on_runtime(env, settling(work))
}

fn settle_on_runtime<'env, T: ToNapiValue + Send + 'static>(env: &'env Env, work: Work<T>) -> Result<Object<'env>> {
    let (deferred, promise): (Deferred<T>, Object<'env>) = env.create_deferred()?;
    resolve_on_runtime(work, deferred);
    Ok(promise)
}

/// Runs `work` on the library's runtime and settles `deferred` with it.
fn resolve_on_runtime<T: ToNapiValue + Send + 'static>(work: Work<T>, deferred: Deferred<T>) {
    core::runtime().spawn(async move {
        let settled = work.await;
        deferred.resolve(Box::new(move |_env| Ok(settled)));
    });
}

/// Where a `prepare` runs.
enum Plan {
    /// Right here, on the JavaScript thread: nothing to wait for, and small.
    Here,
    /// On the runtime.
    Runtime,
    /// When the host's Promises settle (see [`Join`]).
    Join(Arc<Prefetched>),
}

/// Snapshots up to this many bytes in all, already returned by the host as
/// plain values, are prepared on the JavaScript thread (about as long as
/// `JSON.parse` of them: well under a millisecond), saving the two thread
/// hand-offs of a trip to the runtime; anything bigger, or waiting on a
/// Promise, runs on the library's threads.
const INLINE_BYTES: usize = 256 << 10;

/// Settles `work` right here when it can finish without waiting (its first
/// poll completes it), else on the runtime: the settled value itself, or a
/// Promise of it.
fn settle_inline<'env, T: ToNapiValue + Send + 'static>(
    env: &'env Env,
    work: impl Future<Output = std::result::Result<T, NativeFailure>> + Send + 'static,
) -> Result<Either<Settled<T>, Object<'env>>> {
    match poll_here(settling(work)) {
        Ok(settled) => Ok(Either::A(settled)),
        Err(work) => settle_on_runtime(env, work).map(Either::B),
    }
}

type Work<T> = Pin<Box<dyn Future<Output = Settled<T>> + Send>>;

/// Polls `work` once on this thread: its settled value, or the work itself
/// when it has to wait.
fn poll_here<T>(mut work: Work<T>) -> std::result::Result<Settled<T>, Work<T>> {
    let runtime = core::runtime();
    let _entered = runtime.enter(); // the work may ask for the runtime's handle
    match work.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(settled) => Ok(settled),
        Poll::Pending => Err(work),
    }
}

/// A `prepare` waiting for its host's Promises, run from the JavaScript
/// thread when they settle: once every read has its value (or one failed,
/// which fails the call at once), or when the call is cancelled, the work
/// runs right there if the snapshots total [`INLINE_BYTES`] or less, else
/// on the runtime. Nothing but the host's Promises and the cancel handle,
/// both on the JavaScript thread, can move it, so it needs no thread of
/// the library while it waits.
struct Join {
    state: Mutex<JoinState>,
}

struct JoinState {
    /// Reads whose Promise has not settled yet.
    waiting: usize,
    /// Bytes of the snapshots that are there.
    bytes: usize,
    /// A read failed: the call fails without waiting for the others.
    failed: bool,
    /// The work and where its result goes, until something starts it.
    pending: Option<(Work<PreparedParts>, Deferred<PreparedParts>)>,
}

impl Join {
    /// One host Promise settled: `Some(size)` fulfilled, `None` rejected.
    fn settled(&self, size: Option<usize>) {
        let ready = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.waiting = state.waiting.saturating_sub(1);
            match size {
                Some(n) => state.bytes += n,
                None => state.failed = true,
            }
            state.waiting == 0 || state.failed
        };
        if ready {
            self.start();
        }
    }

    /// Starts the work, unless it already started.
    fn start(&self) {
        let (pending, small) = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            (state.pending.take(), state.bytes <= INLINE_BYTES)
        };
        let Some((work, deferred)) = pending else { return };
        let work = if small {
            match poll_here(work) {
                Ok(settled) => return deferred.resolve(Box::new(move |_env| Ok(settled))),
                Err(work) => work,
            }
        } else {
            work
        };
        resolve_on_runtime(work, deferred);
    }
}

/// A Promise already settled with `failure` (argument errors found before
/// any work starts).
fn settled<'env>(env: &'env Env, failure: NativeFailure) -> Result<Object<'env>> {
    spawn::<String, _>(env, async move { Err(failure) })
}

fn token(cancel: Option<&CancelHandle>) -> Option<CancelToken> {
    cancel.map(|c| c.token.clone())
}

/// The native resolver: the library's resolver over a JavaScript host (or
/// over a native session query such as the DSH store).
#[napi]
pub struct NativeResolver {
    resolver: Arc<Resolver>,
    /// For a JavaScript host: the host and its `readSurface`, called on the
    /// JavaScript thread when `prepare` is called.
    host: Option<(Arc<JsQuery>, FunctionRef<String, Pending>)>,
}

impl NativeResolver {
    /// A resolver over a native query (used by the embedded DSH store).
    pub fn over(query: Arc<dyn SessionQuery>, config: Config) -> Self {
        NativeResolver { resolver: Arc::new(Resolver::new(query, config)), host: None }
    }

    /// The resolver for one `prepare`, and where the call runs (see
    /// [`Plan`]). For a JavaScript host, its surface reads are
    /// started here, on the JavaScript thread, so their values go to the
    /// runtime with the work instead of being fetched from there (two thread
    /// hand-offs fewer per call), and if they are all plain values of
    /// [`INLINE_BYTES`] or less, the work need not leave this thread at all.
    /// The references are normalized here, once ([`Resolver::plan_references`]),
    /// and reads start only when they are valid and the call is not already
    /// cancelled (docs/contract.md §6: no read before), once per normalized reference, in
    /// order. A call that reads nothing (invalid, no or cancelled
    /// references) always runs here.
    fn for_prepare(
        &self,
        env: &Env,
        target: &Target,
        references: &[Value],
        cancel: Option<&CancelToken>,
    ) -> Result<(Arc<Resolver>, Plan, core::Result<Vec<core::Reference>>)> {
        let config = *self.resolver.config();
        let refs = match self.resolver.plan_references(target, references) {
            Ok(refs) if !refs.is_empty() && !cancel.is_some_and(CancelToken::is_cancelled) => refs,
            other => return Ok((Arc::clone(&self.resolver), Plan::Here, other)),
        };
        let Some((host, read_surface)) = &self.host else {
            return Ok((Arc::clone(&self.resolver), Plan::Runtime, Ok(refs)));
        };
        let read_surface = read_surface.borrow_back(env)?;
        let mut started = Vec::with_capacity(refs.len());
        for r in &refs {
            // The wrapper's host functions never throw (a throw becomes a
            // rejection); if one did, the read is left to the usual path.
            match read_surface.call(r.session_id.clone()) {
                Ok(pending) => started.push((r.session_id.clone(), pending)),
                Err(_) => break,
            }
        }
        let query = Arc::new(Prefetched::new(Arc::clone(host), started));
        let plan = match query.ready_bytes() {
            Some(bytes) if bytes <= INLINE_BYTES => Plan::Here,
            Some(_) => Plan::Runtime,
            None => Plan::Join(Arc::clone(&query)),
        };
        Ok((Arc::new(Resolver::new(query, config)), plan, Ok(refs)))
    }
}

#[napi]
impl NativeResolver {
    /// A resolver over three host functions, each returning a value or a
    /// Promise: `listSessions()` → JSON text or bytes of the header array,
    /// `readTitle(id)` → a string or `null`/`undefined`, `readSurface(id)` →
    /// JSON text or bytes of the snapshot; and two optional ones taking and
    /// giving JSON text (`null`: none): `fingerprints(idsJson)` and
    /// `search(requestJson)`. Throws a failure with
    /// `SESSION_REFERENCE_INVALID_CONFIG` for an invalid `config`.
    #[napi(
        constructor,
        ts_args_type = "listSessions: () => string | Uint8Array | Promise<string | Uint8Array>, readTitle: (sessionId: \
                        string) => string | null | undefined | Promise<string | null | undefined>, readSurface: \
                        (sessionId: string) => string | Uint8Array | Promise<string | Uint8Array>, fingerprints: \
                        ((request: string) => string | null | Promise<string | null>) | undefined | null, search: \
                        ((request: string) => string | null | Promise<string | null>) | undefined | null, config?: \
                        NativeConfig | null"
    )]
    pub fn new(
        list_sessions: Function<'_, (), Pending>,
        read_title: Function<'_, String, Pending>,
        read_surface: Function<'_, String, Pending>,
        fingerprints: Option<Function<'_, String, Pending>>,
        search: Option<Function<'_, String, Pending>>,
        config: Option<Unknown<'_>>,
    ) -> Result<Self, &'static str> {
        let to_status = |e: Error| Error::new(INVALID_ARGUMENT, e.reason);
        let config = config_from_js(config).map_err(to_status)?.map_err(crate::to_napi_error)?;
        let read_surface_ref = read_surface.create_ref().map_err(to_status)?;
        let optional = |f: Option<Function<'_, String, Pending>>| f.map(host_function).transpose().map_err(to_status);
        let query = Arc::new(
            JsQuery::new(
                host_function(list_sessions).map_err(to_status)?,
                host_function(read_title).map_err(to_status)?,
                host_function(read_surface).map_err(to_status)?,
            )
            .with_optional(optional(fingerprints)?, optional(search)?),
        );
        let resolver = Arc::new(Resolver::new(Arc::clone(&query) as Arc<dyn SessionQuery>, config));
        Ok(NativeResolver { resolver, host: Some((query, read_surface_ref)) })
    }

    /// `prepare(request)`: the request `{target, content, references,
    /// contextWindow?}` as JSON text; `{content}` or `{content,
    /// additionalContext}` as [`PreparedParts`] (the prompt apart). Small
    /// work whose snapshots the host returned as plain values settles at
    /// once (see [`INLINE_BYTES`]); otherwise the result is a Promise.
    #[napi(ts_return_type = "PreparedParts | NativeFailure | Promise<PreparedParts | NativeFailure>")]
    pub fn prepare<'env>(
        &self,
        env: &'env Env,
        request_json: String,
        cancel: Option<&CancelHandle>,
    ) -> Result<Either<Settled<PreparedParts>, Object<'env>>> {
        let PrepareRequest { target, content, references, options } =
            match request(&request_json, PrepareRequest::from_json) {
                Ok(request) => request,
                Err(failure) => return Ok(Either::A(Either::B(failure))),
            };
        let handle = cancel;
        let cancel = token(cancel);
        let (resolver, plan, refs) = self.for_prepare(env, &target, &references, cancel.as_ref())?;
        let work = async move {
            let prepared = resolver.prepare_planned(content, refs?, &options, cancel.as_ref()).await?;
            Ok(PreparedParts::of_prepared(prepared))
        };
        match plan {
            Plan::Here => settle_inline(env, work),
            Plan::Runtime => spawn(env, work).map(Either::B),
            Plan::Join(query) => {
                let (deferred, promise): (Deferred<PreparedParts>, Object<'env>) = env.create_deferred()?;
                let join = Arc::new(Join {
                    state: Mutex::new(JoinState {
                        waiting: 0,
                        bytes: 0,
                        failed: false,
                        pending: Some((settling(work), deferred)),
                    }),
                });
                let (waiting, bytes) = query.watch_promises(|| {
                    let join = Arc::clone(&join);
                    Box::new(move |_env: &Env, size: Option<usize>| join.settled(size))
                });
                {
                    let mut state = join.state.lock().unwrap_or_else(|e| e.into_inner());
                    (state.waiting, state.bytes) = (waiting, bytes);
                }
                if let Some(handle) = handle {
                    let join = Arc::clone(&join);
                    handle
                        .on_cancel
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(Box::new(move |_env: &Env| join.start()));
                }
                if waiting == 0 {
                    join.start(); // nothing to wait for (every read without a value is a Promise with a watch)
                }
                Ok(Either::B(promise))
            }
        }
    }

    /// `prepareMessages(request)`: the request `{target, messages}` as JSON
    /// text; resolves to the rewritten message list as [`PreparedParts`]
    /// (the context prompts apart).
    #[napi(ts_return_type = "Promise<PreparedParts | NativeFailure>")]
    pub fn prepare_messages<'env>(
        &self,
        env: &'env Env,
        request_json: String,
        cancel: Option<&CancelHandle>,
    ) -> Result<Object<'env>> {
        let PrepareMessagesRequest { target, messages, options } =
            match request(&request_json, PrepareMessagesRequest::from_json) {
                Ok(request) => request,
                Err(failure) => return settled(env, failure),
            };
        let resolver = Arc::clone(&self.resolver);
        let cancel = token(cancel);
        spawn(env, async move {
            let out = resolver.prepare_messages(&target, &messages, &options, cancel.as_ref()).await?;
            PreparedParts::of_messages(out)
        })
    }

    /// `candidates(request, limit, mentions)`: the request `{target,
    /// query}` as JSON text; resolves to the JSON text of the candidate
    /// array, each candidate with its mention when `mentions` is true (the
    /// wrapper's `candidates`) and without it when false (its
    /// `listCandidates`). `limit` is the JavaScript value as the caller gave
    /// it (JSON cannot tell `undefined` from `NaN`): `undefined` takes the
    /// configured limit, anything but a positive safe integer fails with
    /// `SESSION_REFERENCE_INVALID_REFERENCE`.
    #[napi(
        ts_args_type = "request: string, limit: number | undefined, mentions: boolean, cancel?: CancelHandle | null",
        ts_return_type = "Promise<string | NativeFailure>"
    )]
    pub fn candidates<'env>(
        &self,
        env: &'env Env,
        request_json: String,
        limit: Unknown<'_>,
        mentions: bool,
        cancel: Option<&CancelHandle>,
    ) -> Result<Object<'env>> {
        let CandidatesRequest { target, query, options } =
            match request(&request_json, |v| CandidatesRequest::from_json(v, mentions)) {
                Ok(request) => request,
                Err(failure) => return settled(env, failure),
            };
        let options = match limit_from_js(limit)? {
            Ok(limit) => options.with_limit(limit),
            Err(e) => return settled(env, e.into()),
        };
        let resolver = Arc::clone(&self.resolver);
        let cancel = token(cancel);
        spawn(env, async move {
            let list = resolver.candidates(&target, &query, &options, cancel.as_ref()).await?;
            Ok(stringify(&Value::Array(list.iter().map(core::Candidate::to_json).collect())))
        })
    }

    /// `search(request, limit)`: the request `{target, query, scope?}` as
    /// JSON text (`scope` is `"all"`, the default, or `"cwd"`; anything else
    /// fails with `SESSION_REFERENCE_INVALID_REFERENCE`); `limit` as for
    /// `candidates`. Resolves to the JSON text of the result array.
    #[napi(
        ts_args_type = "request: string, limit: number | undefined, cancel?: CancelHandle | null",
        ts_return_type = "Promise<string | NativeFailure>"
    )]
    pub fn search<'env>(
        &self,
        env: &'env Env,
        request_json: String,
        limit: Unknown<'_>,
        cancel: Option<&CancelHandle>,
    ) -> Result<Object<'env>> {
        let SearchArgs { target, query, options } = match request(&request_json, SearchArgs::from_json) {
            Ok(request) => request,
            Err(failure) => return settled(env, failure),
        };
        let options = match limit_from_js(limit)? {
            Ok(limit) => core::SearchOptions { limit, ..options },
            Err(e) => return settled(env, e.into()),
        };
        let resolver = Arc::clone(&self.resolver);
        let cancel = token(cancel);
        spawn(env, async move {
            let list = resolver.search(&target, &query, &options, cancel.as_ref()).await?;
            Ok(stringify(&Value::Array(list.iter().map(core::SearchResult::to_json).collect())))
        })
    }

    /// `read(request)`: the request `{target, sessionId, start?, around?,
    /// cursor?, maxBytes?, maxTokens?}` as JSON text (an option of the wrong
    /// kind fails with `SESSION_REFERENCE_INVALID_REFERENCE`); resolves to
    /// the page as [`PageParts`] (its framed text apart).
    #[napi(ts_return_type = "Promise<PageParts | NativeFailure>")]
    pub fn read<'env>(
        &self,
        env: &'env Env,
        request_json: String,
        cancel: Option<&CancelHandle>,
    ) -> Result<Object<'env>> {
        let ReadRequest { target, session_id, options } = match request(&request_json, ReadRequest::from_json) {
            Ok(request) => request,
            Err(failure) => return settled(env, failure),
        };
        let resolver = Arc::clone(&self.resolver);
        let cancel = token(cancel);
        spawn(env, async move {
            let page = resolver.read(&target, &session_id, &options, cancel.as_ref()).await?;
            let json = stringify(&page.to_json());
            Ok(PageParts { json, text: page.text })
        })
    }
}

/// The configuration keys, as the native constructor reads them.
#[napi(object)]
pub struct NativeConfig {
    /// Distinct references allowed per message (1–3, default 3).
    pub max_references: Option<f64>,
    /// Candidates returned by `candidates()` (default 50).
    pub candidate_limit: Option<f64>,
    /// The per-source byte budget (default 65,536).
    pub max_reference_bytes: Option<f64>,
    /// Turns `redactSecrets`, `escapeInvisible` and `sanitizeLabels` on
    /// (each given explicitly wins).
    pub hardened: Option<bool>,
    /// Redact credentials from the snapshot's texts and labels.
    pub redact_secrets: Option<bool>,
    /// Write invisible and bidirectional characters as `\uXXXX` escapes.
    pub escape_invisible: Option<bool>,
    /// Drop hidden characters from labels and cut them to 100 characters.
    pub sanitize_labels: Option<bool>,
    /// The `dshCompat` profile (`"0.1.1"`, the default, `"0.1.5"` or `"0.1.7"`).
    pub dsh_compat: Option<String>,
    /// The share of the context window the automatic budget takes (default 0.2).
    pub reference_context_fraction: Option<f64>,
}
