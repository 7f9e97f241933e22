//! The `Resolver` and `CancelToken` classes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use dsh_session_reference as core;
use dsh_session_reference::{candidate_limit_from_json, Config, SessionQuery, Target};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyString;
use serde_json::{Map, Value};

use crate::convert::{sequence_arg, string_arg, to_json, to_py, type_name};
use crate::errors::to_pyerr;
use crate::held::{hang_if_unwound, release_held};
use crate::host::PyHost;
use crate::runtime::{finalizing, run_async, run_blocking};
use crate::sources::SessionSources;
use crate::store::DshSessionStore;

/// A cancellation signal: pass it as `cancel=` to any resolver call and call
/// `cancel()` from any thread to stop that call promptly with
/// `OperationCancelledError`. Once cancelled, a token stays cancelled; one
/// token may be shared by many calls.
#[pyclass(module = "dsh_session_reference._native", name = "CancelToken", frozen)]
pub struct CancelToken {
    pub(crate) inner: core::CancelToken,
}

#[pymethods]
impl CancelToken {
    /// A token that is not cancelled.
    #[new]
    fn new() -> Self {
        CancelToken { inner: core::CancelToken::new() }
    }

    /// Cancels every call observing this token. Thread-safe and idempotent.
    fn cancel(&self) {
        self.inner.cancel();
    }

    /// Whether `cancel()` has been called.
    fn is_cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }

    fn __repr__(&self) -> String {
        format!("CancelToken(cancelled={})", if self.inner.is_cancelled() { "True" } else { "False" })
    }
}

/// One call, with its inputs already converted (so that misuse raises
/// before any work starts).
enum Job {
    Prepare { target: Target, content: Value, references: Vec<Value>, options: core::PrepareOptions },
    Messages { target: Target, messages: Vec<Value> },
    Candidates { target: Target, query: String, options: core::CandidateOptions },
    Search { target: Target, query: String, options: core::SearchOptions },
    Read { target: Target, session_id: String, options: core::ReadOptions },
}

impl Job {
    /// The call as a `Send` future on the runtime.
    fn run(self, resolver: core::Resolver, token: core::CancelToken) -> BoxFuture<core::Result<Value>> {
        match self {
            Job::Prepare { target, content, references, options } => Box::pin(async move {
                let prepared = resolver.prepare(&target, &content, &references, &options, Some(&token)).await?;
                Ok(prepared.into_json())
            }),
            Job::Messages { target, messages } => Box::pin(async move {
                let options = core::PrepareOptions::default();
                let prepared = resolver.prepare_messages(&target, &messages, &options, Some(&token)).await?;
                Ok(core::wire::messages_into_json(prepared))
            }),
            Job::Candidates { target, query, options } => Box::pin(async move {
                let list = resolver.candidates(&target, &query, &options, Some(&token)).await?;
                Ok(Value::Array(list.iter().map(core::Candidate::to_json).collect()))
            }),
            Job::Search { target, query, options } => Box::pin(async move {
                let found = resolver.search(&target, &query, &options, Some(&token)).await?;
                Ok(Value::Array(found.iter().map(core::SearchResult::to_json).collect()))
            }),
            Job::Read { target, session_id, options } => Box::pin(async move {
                let page = resolver.read(&target, &session_id, &options, Some(&token)).await?;
                Ok(page.to_json_with_text())
            }),
        }
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The options of one discovery query: `mentions=False` is `list_candidates()`.
fn candidate_options(limit: Option<u64>, mentions: bool) -> core::CandidateOptions {
    let options = core::CandidateOptions::default().with_limit(limit);
    if mentions {
        options
    } else {
        options.without_mentions()
    }
}

pub(crate) fn target_arg(obj: &Bound<'_, PyAny>) -> PyResult<Target> {
    if !obj.is_instance_of::<pyo3::types::PyDict>() {
        return Err(PyTypeError::new_err(format!(
            "target must be a dict {{\"id\": str, \"cwd\": str | None}}, not {}",
            type_name(obj)
        )));
    }
    Target::from_json(&to_json(obj, "target")?).map_err(PyTypeError::new_err)
}

fn search_job(
    py: Python<'_>,
    target: &Bound<'_, PyAny>,
    query: &Bound<'_, PyAny>,
    limit: Option<&Bound<'_, PyAny>>,
    scope: Option<&Bound<'_, PyAny>>,
) -> PyResult<Job> {
    let mut request = Map::new();
    if let Some(l) = limit.filter(|l| !l.is_none()) {
        request.insert("limit".into(), to_json(l, "limit")?);
    }
    if let Some(s) = scope.filter(|s| !s.is_none()) {
        request.insert("scope".into(), to_json(s, "scope")?);
    }
    let options = core::SearchOptions::from_json(&Value::Object(request)).map_err(|e| to_pyerr(py, &e))?;
    Ok(Job::Search { target: target_arg(target)?, query: string_arg(query, "query")?, options })
}

/// The keyword arguments of `read`, read as every front reads a read
/// request's options ([`core::ReadOptions::from_json`]).
#[allow(clippy::too_many_arguments)]
fn read_job(
    py: Python<'_>,
    target: &Bound<'_, PyAny>,
    session_id: &Bound<'_, PyAny>,
    start: Option<&Bound<'_, PyAny>>,
    around: Option<&Bound<'_, PyAny>>,
    cursor: Option<&Bound<'_, PyAny>>,
    max_bytes: Option<&Bound<'_, PyAny>>,
    max_tokens: Option<&Bound<'_, PyAny>>,
) -> PyResult<Job> {
    let mut request = Map::new();
    for (key, value) in
        [("start", start), ("around", around), ("cursor", cursor), ("maxBytes", max_bytes), ("maxTokens", max_tokens)]
    {
        if let Some(v) = value.filter(|v| !v.is_none()) {
            request.insert(key.into(), to_json(v, key)?);
        }
    }
    let options = core::ReadOptions::from_json(&Value::Object(request)).map_err(|e| to_pyerr(py, &e))?;
    Ok(Job::Read { target: target_arg(target)?, session_id: string_arg(session_id, "session_id")?, options })
}

fn limit_arg(py: Python<'_>, limit: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    match limit {
        None => Ok(None),
        Some(l) if l.is_none() => Ok(None),
        Some(l) => candidate_limit_from_json(&to_json(l, "limit")?).map(Some).map_err(|e| to_pyerr(py, &e)),
    }
}

fn value_to_py(py: Python<'_>, value: Value) -> PyResult<Bound<'_, PyAny>> {
    to_py(py, &value)
}

const HOST_METHODS: [&str; 3] = ["list_sessions", "read_title", "read_surface"];

/// Prepares bounded, tag-safe snapshots of other sessions for a new message,
/// reading through `query` (see `SessionQuery`).
///
/// `max_references` (1–3, default 3), `max_reference_bytes` (default 65536)
/// and `candidate_limit` (default 50) must be positive integers; the
/// hardened mode's `hardened`, `redact_secrets`, `escape_invisible` and
/// `sanitize_labels` must be `bool` (`hardened=True` turns the other three
/// on; each given explicitly wins). `None` takes the default. An invalid
/// value raises `InvalidConfigError`.
#[pyclass(module = "dsh_session_reference._native", name = "Resolver", subclass, frozen)]
pub struct Resolver {
    query: Py<PyAny>,
    native: Option<Arc<dyn SessionQuery>>,
    config: Config,
    /// The core resolver whose discovery caches every call shares.
    pub(crate) base: core::Resolver,
}

impl Resolver {
    /// The core resolver for one call; `event_loop` is the asyncio caller's loop.
    fn core(&self, py: Python<'_>, event_loop: Option<&Py<PyAny>>) -> core::Resolver {
        match &self.native {
            Some(_) => self.base.clone(),
            None => self.base.with_session_query(Arc::new(PyHost::new(py, &self.query, event_loop))),
        }
    }

    /// Runs `job` for a blocking caller. The caller may be a daemon thread,
    /// which CPython (before 3.14) ends with `pthread_exit` when it takes
    /// the GIL back during finalization (say, in the Python code of an
    /// error's `__init__`): the thread then hangs rather than unwind through
    /// these frames ([`hang_if_unwound`]).
    fn blocking<'py>(
        &self,
        py: Python<'py>,
        job: Job,
        cancel: Option<PyRef<'_, CancelToken>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        hang_if_unwound(|| {
            release_held(py);
            let resolver = self.core(py, None);
            let user = cancel.map(|c| c.inner.clone());
            let value = run_blocking(py, user, move |token| job.run(resolver, token))?;
            to_py(py, &value)
        })
    }

    /// Starts `job` for an asyncio caller; raises `OperationCancelledError`
    /// once the package's exit hook has run (an atexit handler registered
    /// before the package was imported runs after it, and a daemon
    /// thread's loop may still be running): the result could no longer be
    /// handed back, and the caller would wait for good. A library error,
    /// so that callers that handle the library's errors (a loop's tasks,
    /// say) take it in stride rather than log it while the interpreter
    /// shuts down.
    fn start(
        &self,
        py: Python<'_>,
        job: Job,
        cancel: Option<PyRef<'_, CancelToken>>,
        token: PyRef<'_, CancelToken>,
        event_loop: Bound<'_, PyAny>,
        done: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        if finalizing() {
            let error = core::Error::new(
                core::ErrorCode::Cancelled,
                "the operation was cancelled: the Python interpreter is shutting down",
            );
            // Python code (the error's `__init__`) on what may be a daemon
            // thread, with the interpreter about to finalize.
            return Err(hang_if_unwound(|| to_pyerr(py, &error)));
        }
        release_held(py);
        let event_loop = event_loop.unbind();
        let resolver = self.core(py, Some(&event_loop));
        let token = token.inner.clone();
        let work = job.run(resolver, token.clone());
        let user = cancel.map(|c| c.inner.clone());
        run_async(token, user, work, event_loop, done.unbind(), value_to_py);
        Ok(())
    }
}

/// `context_window`: `None`, or a positive integer (the model's context
/// window in tokens, for the automatic budget of the later `dsh_compat`
/// profiles); anything else is a `TypeError`.
fn context_window_arg(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(v) = value.filter(|v| !v.is_none()) else { return Ok(None) };
    core::wire::context_window_from_json(Some(&to_json(v, "context_window")?))
        .map_err(|_| PyTypeError::new_err("context_window must be a positive integer or None"))
}

#[pymethods]
impl Resolver {
    #[new]
    #[pyo3(signature = (
        query, *, max_references=None, max_reference_bytes=None, candidate_limit=None,
        hardened=None, redact_secrets=None, escape_invisible=None, sanitize_labels=None,
        dsh_compat=None, reference_context_fraction=None,
    ))]
    #[pyo3(text_signature = "(query, *, max_references=3, max_reference_bytes=65536, candidate_limit=50, \
                              hardened=False, redact_secrets=None, escape_invisible=None, sanitize_labels=None, \
                              dsh_compat='0.1.1', reference_context_fraction=0.2)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        query: Bound<'_, PyAny>,
        max_references: Option<Bound<'_, PyAny>>,
        max_reference_bytes: Option<Bound<'_, PyAny>>,
        candidate_limit: Option<Bound<'_, PyAny>>,
        hardened: Option<Bound<'_, PyAny>>,
        redact_secrets: Option<Bound<'_, PyAny>>,
        escape_invisible: Option<Bound<'_, PyAny>>,
        sanitize_labels: Option<Bound<'_, PyAny>>,
        dsh_compat: Option<Bound<'_, PyAny>>,
        reference_context_fraction: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut wire = Map::new();
        // The keyword arguments in the order of the core's config keys.
        let values = [
            max_references,
            max_reference_bytes,
            candidate_limit,
            hardened,
            redact_secrets,
            escape_invisible,
            sanitize_labels,
            dsh_compat,
            reference_context_fraction,
        ];
        for (key, value) in core::wire::CONFIG_KEYS.into_iter().zip(values) {
            if let Some(v) = value {
                wire.insert(key.into(), to_json(&v, key)?);
            }
        }
        let config = Config::from_json(&Value::Object(wire)).map_err(|e| to_pyerr(py, &e))?;
        if let Ok(store) = query.cast::<DshSessionStore>() {
            let native: Arc<dyn SessionQuery> = Arc::new(store.get().store.clone());
            let base = core::Resolver::new(Arc::clone(&native), config);
            return Ok(Resolver { query: query.unbind(), native: Some(native), config, base });
        }
        if let Ok(sources) = query.cast::<SessionSources>() {
            let native: Arc<dyn SessionQuery> = sources.get().multi.clone();
            let base = core::Resolver::new(Arc::clone(&native), config);
            return Ok(Resolver { query: query.unbind(), native: Some(native), config, base });
        }
        for method in HOST_METHODS {
            let callable = query.getattr(PyString::intern(py, method)).map(|m| m.is_callable()).unwrap_or(false);
            if !callable {
                return Err(PyTypeError::new_err(format!(
                    "query must have the methods list_sessions(), read_title(session_id) and \
                     read_surface(session_id); {} has no callable {method}",
                    type_name(&query)
                )));
            }
        }
        let query = query.unbind();
        let base = core::Resolver::new(Arc::new(PyHost::new(py, &query, None)), config);
        Ok(Resolver { query, native: None, config, base })
    }

    /// The session query this resolver reads through.
    #[getter]
    fn query(&self, py: Python<'_>) -> Py<PyAny> {
        self.query.clone_ref(py)
    }

    /// The maximum number of distinct references per message.
    #[getter]
    fn max_references(&self) -> u64 {
        self.config.max_references()
    }

    /// The per-source byte budget.
    #[getter]
    fn max_reference_bytes(&self) -> u64 {
        self.config.max_reference_bytes()
    }

    /// The number of candidates `candidates()` returns at most.
    #[getter]
    fn candidate_limit(&self) -> u64 {
        self.config.candidate_limit()
    }

    /// Whether credentials are redacted (`redact_secrets`, or `hardened`).
    #[getter]
    fn redact_secrets(&self) -> bool {
        self.config.hardening().redact_secrets
    }

    /// Whether invisible characters are escaped (`escape_invisible`, or `hardened`).
    #[getter]
    fn escape_invisible(&self) -> bool {
        self.config.hardening().escape_invisible
    }

    /// Whether labels are sanitized (`sanitize_labels`, or `hardened`).
    #[getter]
    fn sanitize_labels(&self) -> bool {
        self.config.hardening().sanitize_labels
    }

    /// Prepares one message: validates and de-duplicates `references`
    /// (`[{"sessionId": str, "label"?: str, "range"?: {"start": int, "end"?:
    /// int}, "around"?: int}, ...]`; an excerpt carries only that run of
    /// messages, and its metadata says which), reads every source in
    /// parallel, keeps each within the byte budget and returns
    /// `{"content": <copy of content>}` plus `"additionalContext"` (the context
    /// message) when there were references. Releases the GIL while it runs.
    #[pyo3(signature = (target, content, references, *, cancel=None, context_window=None))]
    fn prepare<'py>(
        &self,
        py: Python<'py>,
        target: &Bound<'py, PyAny>,
        content: &Bound<'py, PyAny>,
        references: &Bound<'py, PyAny>,
        cancel: Option<PyRef<'_, CancelToken>>,
        context_window: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let job = Job::Prepare {
            target: target_arg(target)?,
            content: to_json(content, "content")?,
            references: sequence_arg(references, "references")?,
            options: core::PrepareOptions::default().with_context_window(context_window_arg(context_window.as_ref())?),
        };
        self.blocking(py, job, cancel)
    }

    /// Rewrites a message list: mentions in the text blocks of user messages
    /// become `@label`, and each message with references is followed by its
    /// context message. Other messages pass through unchanged. Releases the
    /// GIL while it runs.
    #[pyo3(signature = (target, messages, *, cancel=None))]
    fn prepare_messages<'py>(
        &self,
        py: Python<'py>,
        target: &Bound<'py, PyAny>,
        messages: &Bound<'py, PyAny>,
        cancel: Option<PyRef<'_, CancelToken>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let job = Job::Messages { target: target_arg(target)?, messages: sequence_arg(messages, "messages")? };
        self.blocking(py, job, cancel)
    }

    /// Sessions the target may reference: ranked by cwd, filtered by `query`
    /// (case-insensitive, on id, cwd and title), at most `limit` (default:
    /// `candidate_limit`). Items: `{"sessionId", "label", "cwd"?,
    /// "createdAt", "mention"}`; with `mentions=False` without `"mention"`
    /// (what `list_candidates()` gives). Releases the GIL while it runs.
    #[pyo3(signature = (target, query="", limit=None, *, cancel=None, mentions=true))]
    fn candidates<'py>(
        &self,
        py: Python<'py>,
        target: &Bound<'py, PyAny>,
        query: &str,
        limit: Option<&Bound<'py, PyAny>>,
        cancel: Option<PyRef<'_, CancelToken>>,
        mentions: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let job = Job::Candidates {
            target: target_arg(target)?,
            query: query.to_owned(),
            options: candidate_options(limit_arg(py, limit)?, mentions),
        };
        self.blocking(py, job, cancel)
    }

    /// Full-text search over the projected text (user and assistant messages
    /// and checkpoints; never tool output or reasoning), titles, ids and
    /// cwds of every session but the target's: one result per session, best
    /// first, with a snippet around its best hit. `scope` is `"all"` or
    /// `"cwd"` (only sessions in the target's cwd). Releases the GIL while
    /// it runs.
    #[pyo3(signature = (target, query, *, limit=None, scope=None, cancel=None))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        target: &Bound<'py, PyAny>,
        query: &Bound<'py, PyAny>,
        limit: Option<&Bound<'py, PyAny>>,
        scope: Option<&Bound<'py, PyAny>>,
        cancel: Option<PyRef<'_, CancelToken>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let job = search_job(py, target, query, limit, scope)?;
        self.blocking(py, job, cancel)
    }

    /// One page of another session's projected conversation: a run of whole
    /// messages (user and assistant text and checkpoints; never tool output
    /// or reasoning) whose framed text fits `max_bytes` UTF-8 bytes (default
    /// 16384) and `max_tokens` (at one token per byte at most), from
    /// `start`, `around` an index, a page's `nextCursor`/`prevCursor`
    /// (`cursor`), or the newest messages. Returns `{"sessionId", "label", "cwd"?,
    /// "totalMessages", "capturedThroughSeq", "messages", "nextCursor"?,
    /// "prevCursor"?, "redactedSecrets"?, "text"}`. Releases the GIL while
    /// it runs.
    #[pyo3(signature = (target, session_id, *, start=None, around=None, cursor=None, max_bytes=None, max_tokens=None, cancel=None))]
    #[allow(clippy::too_many_arguments)]
    fn read<'py>(
        &self,
        py: Python<'py>,
        target: &Bound<'py, PyAny>,
        session_id: &Bound<'py, PyAny>,
        start: Option<&Bound<'py, PyAny>>,
        around: Option<&Bound<'py, PyAny>>,
        cursor: Option<&Bound<'py, PyAny>>,
        max_bytes: Option<&Bound<'py, PyAny>>,
        max_tokens: Option<&Bound<'py, PyAny>>,
        cancel: Option<PyRef<'_, CancelToken>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let job = read_job(py, target, session_id, start, around, cursor, max_bytes, max_tokens)?;
        self.blocking(py, job, cancel)
    }

    /// Starts `read` for an asyncio caller (used by `read_async`).
    #[allow(clippy::too_many_arguments)]
    fn _start_read(
        &self,
        py: Python<'_>,
        target: &Bound<'_, PyAny>,
        session_id: &Bound<'_, PyAny>,
        start: Option<&Bound<'_, PyAny>>,
        around: Option<&Bound<'_, PyAny>>,
        cursor: Option<&Bound<'_, PyAny>>,
        max_bytes: Option<&Bound<'_, PyAny>>,
        max_tokens: Option<&Bound<'_, PyAny>>,
        cancel: Option<PyRef<'_, CancelToken>>,
        token: PyRef<'_, CancelToken>,
        event_loop: Bound<'_, PyAny>,
        done: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let job = read_job(py, target, session_id, start, around, cursor, max_bytes, max_tokens)?;
        self.start(py, job, cancel, token, event_loop, done)
    }

    /// Starts `search` for an asyncio caller (used by `search_async`).
    #[allow(clippy::too_many_arguments)]
    fn _start_search(
        &self,
        py: Python<'_>,
        target: &Bound<'_, PyAny>,
        query: &Bound<'_, PyAny>,
        limit: Option<&Bound<'_, PyAny>>,
        scope: Option<&Bound<'_, PyAny>>,
        cancel: Option<PyRef<'_, CancelToken>>,
        token: PyRef<'_, CancelToken>,
        event_loop: Bound<'_, PyAny>,
        done: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let job = search_job(py, target, query, limit, scope)?;
        self.start(py, job, cancel, token, event_loop, done)
    }

    /// Starts `prepare` for an asyncio caller (used by `prepare_async`).
    #[allow(clippy::too_many_arguments)]
    fn _start_prepare(
        &self,
        py: Python<'_>,
        target: &Bound<'_, PyAny>,
        content: &Bound<'_, PyAny>,
        references: &Bound<'_, PyAny>,
        context_window: Option<Bound<'_, PyAny>>,
        cancel: Option<PyRef<'_, CancelToken>>,
        token: PyRef<'_, CancelToken>,
        event_loop: Bound<'_, PyAny>,
        done: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let job = Job::Prepare {
            target: target_arg(target)?,
            content: to_json(content, "content")?,
            references: sequence_arg(references, "references")?,
            options: core::PrepareOptions::default().with_context_window(context_window_arg(context_window.as_ref())?),
        };
        self.start(py, job, cancel, token, event_loop, done)
    }

    /// Starts `prepare_messages` for an asyncio caller.
    #[allow(clippy::too_many_arguments)]
    fn _start_prepare_messages(
        &self,
        py: Python<'_>,
        target: &Bound<'_, PyAny>,
        messages: &Bound<'_, PyAny>,
        cancel: Option<PyRef<'_, CancelToken>>,
        token: PyRef<'_, CancelToken>,
        event_loop: Bound<'_, PyAny>,
        done: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let job = Job::Messages { target: target_arg(target)?, messages: sequence_arg(messages, "messages")? };
        self.start(py, job, cancel, token, event_loop, done)
    }

    /// Starts `candidates` for an asyncio caller.
    #[allow(clippy::too_many_arguments)]
    fn _start_candidates(
        &self,
        py: Python<'_>,
        target: &Bound<'_, PyAny>,
        query: &Bound<'_, PyAny>,
        limit: Option<&Bound<'_, PyAny>>,
        mentions: bool,
        cancel: Option<PyRef<'_, CancelToken>>,
        token: PyRef<'_, CancelToken>,
        event_loop: Bound<'_, PyAny>,
        done: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let job = Job::Candidates {
            target: target_arg(target)?,
            query: string_arg(query, "query")?,
            options: candidate_options(limit_arg(py, limit)?, mentions),
        };
        self.start(py, job, cancel, token, event_loop, done)
    }

    fn __repr__(&self) -> String {
        format!(
            "Resolver(max_references={}, max_reference_bytes={}, candidate_limit={})",
            self.config.max_references(),
            self.config.max_reference_bytes(),
            self.config.candidate_limit()
        )
    }
}
