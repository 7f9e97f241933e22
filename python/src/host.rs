//! A Python object as the library's session query.
//!
//! Each host call runs on the runtime's blocking pool, which takes the GIL
//! only to call the method and convert what it returned (surface and title
//! reads are queued and called in batches, see [`Lane`]). A method may be
//! plain or `async def`: an awaitable result is scheduled with
//! `asyncio.run_coroutine_threadsafe` on the event loop of the asyncio
//! caller (the loop is free: its task is awaiting the library), or, for a
//! blocking caller, on the package's background loop thread. The Rust side
//! waits for it without holding a thread, and cancelling the operation
//! cancels the scheduled coroutine.

use std::sync::{Arc, Mutex};

use dsh_session_reference::{
    Fingerprint, HostError, QueryFuture, SearchRequest, SearchResult, SessionHeader, SessionQuery, SurfaceData,
};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use tokio::sync::oneshot;

use crate::convert::{to_json, type_name};
use crate::errors::host_error;
use crate::held::{hang_if_unwound, unwinding, Held};
use crate::runtime::{attach, call_host, Finalizing};

/// The host object and, for asyncio callers, the loop to run its
/// coroutines on.
pub struct PyHost {
    inner: Arc<HostInner>,
}

/// Dropped where the library is done with it, often on a runtime thread:
/// its Python objects are [`Held`].
struct HostInner {
    query: Held,
    /// Whether the object has a callable `fingerprints` / `search` (optional).
    has_fingerprints: bool,
    has_search: bool,
    event_loop: Option<Held>,
    titles: Mutex<Lane<Option<String>>>,
    surfaces: Mutex<Lane<SurfaceData>>,
}

/// Reads waiting for a Python call, per method. One blocking-pool thread
/// and one GIL hand-off per read cost tens of µs each (most of a small
/// `prepare`; ~50 µs per title of a search, which reads one title per
/// listed session). Instead, reads are queued and "drainers" (blocking-pool
/// threads) take the GIL once and call the host for queued reads until the
/// queue is empty, so a fast host serves a whole batch under one GIL hold
/// and one thread wake-up.
///
/// Surface reads fan out: a read queued while no drainer is on its way
/// starts one, and a drainer that takes a read while more wait than
/// drainers are on their way starts one more before it calls the host. So
/// every waiting read always has a drainer coming, even when the running
/// ones are blocked in the host for good, and when the host blocks, every
/// read is soon in flight on a thread of its own (reads are parallel), one
/// wake-up apart; when it is fast, the first drainer has served them all
/// before the second one wakes. Titles start a new drainer only when reads
/// pile up (more than four per drainer).
struct Lane<T> {
    pending: std::collections::VecDeque<(String, oneshot::Sender<Started<T>>)>,
    drainers: usize,
    /// Drainers started that have not taken their first read yet.
    starting: usize,
}

impl<T> Default for Lane<T> {
    fn default() -> Self {
        Lane { pending: Default::default(), drainers: 0, starting: 0 }
    }
}

/// How a lane starts drainers.
struct LanePolicy<T: 'static> {
    method: &'static str,
    convert: Converter<T>,
    lane: fn(&HostInner) -> &Mutex<Lane<T>>,
    /// At most this many drainers.
    max: usize,
    /// Fan out (see [`Lane`]); `false`: start a drainer only when more than
    /// four reads per drainer are queued.
    fan_out: bool,
}

const TITLES: LanePolicy<Option<String>> =
    LanePolicy { method: "read_title", convert: convert_title, lane: |h| &h.titles, max: 4, fan_out: false };
const SURFACES: LanePolicy<SurfaceData> =
    LanePolicy { method: "read_surface", convert: convert_surface, lane: |h| &h.surfaces, max: 512, fan_out: true };

impl PyHost {
    /// A host over `query`. `event_loop` is the running loop of an asyncio
    /// caller (`None` for blocking callers).
    pub fn new(py: Python<'_>, query: &Py<PyAny>, event_loop: Option<&Py<PyAny>>) -> Self {
        let has =
            |name: &str| query.bind(py).getattr(PyString::intern(py, name)).map(|m| m.is_callable()).unwrap_or(false);
        PyHost {
            inner: Arc::new(HostInner {
                has_fingerprints: has("fingerprints"),
                has_search: has("search"),
                query: Held::new(query.clone_ref(py)),
                event_loop: event_loop.map(|l| Held::new(l.clone_ref(py))),
                titles: Mutex::default(),
                surfaces: Mutex::default(),
            }),
        }
    }
}

/// What a host returned, once converted: a value, or an error.
type Converter<T> = fn(&Bound<'_, PyAny>) -> Result<T, HostError>;

/// The first step of a host call: either finished, or an awaitable that is
/// now running on an event loop.
enum Started<T> {
    Done(Result<T, HostError>),
    Pending(oneshot::Receiver<Result<T, HostError>>, CancelOnDrop),
}

/// Cancels a scheduled coroutine (a `concurrent.futures.Future`) when the
/// library stops waiting for it before it finished.
struct CancelOnDrop(Option<Held>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(future) = self.0.take() else { return };
        // Refused at exit: the coroutine is left to the interpreter's end.
        let cancel = move || {
            let _ = attach(|py| drop(future.into_inner(py).call_method0(py, intern!(py, "cancel"))));
        };
        // Never take the GIL on a runtime worker thread.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(cancel)),
            Err(_) => cancel(),
        }
    }
}

/// Hands the outcome of a scheduled coroutine to the waiting Rust future.
type Deliver = Box<dyn for<'py> FnOnce(Python<'py>, PyResult<Bound<'py, PyAny>>) + Send>;

/// The Python-side callback of a scheduled coroutine: receives the
/// finished `concurrent.futures.Future` and hands its outcome to Rust.
#[pyclass(module = "dsh_session_reference._native", frozen)]
struct Completion {
    deliver: Mutex<Option<Deliver>>,
}

#[pymethods]
impl Completion {
    /// Runs on the loop's thread, which may be a daemon thread: it calls
    /// Python code (the future's methods), so a `pthread_exit` at
    /// finalization parks it rather than unwind these frames.
    fn __call__(&self, py: Python<'_>, future: Bound<'_, PyAny>) -> PyResult<()> {
        let Some(deliver) = self.deliver.lock().unwrap_or_else(|e| e.into_inner()).take() else { return Ok(()) };
        hang_if_unwound(|| {
            let call = |name| unwinding::call_method0(&future, name);
            let outcome = if call(intern!(py, "cancelled"))?.is_truthy()? {
                Err(pyo3::exceptions::PyRuntimeError::new_err("the host's coroutine was cancelled"))
            } else {
                let exception = call(intern!(py, "exception"))?;
                if exception.is_none() {
                    call(intern!(py, "result"))
                } else {
                    Err(PyErr::from_value(exception))
                }
            };
            deliver(py, outcome);
            Ok(())
        })
    }
}

fn submit<'py>(
    py: Python<'py>,
    awaitable: Bound<'py, PyAny>,
    event_loop: Option<&Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    static SUBMIT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let submit = SUBMIT.import(py, "dsh_session_reference._bridge", "submit")?;
    let event_loop = match event_loop {
        Some(l) => l.bind(py).clone(),
        None => py.None().into_bound(py),
    };
    submit.call1((awaitable, event_loop))
}

impl HostInner {
    /// Calls the host's `method` (with `arg`, if any); `Err` when it
    /// returned after the exit hook ran (see [`call_host`]).
    fn start<T: Send + 'static>(
        &self,
        py: Python<'_>,
        method: &'static str,
        arg: Option<&str>,
        convert: Converter<T>,
    ) -> Result<Started<T>, Finalizing> {
        let args = match arg {
            None => Ok(PyTuple::empty(py)),
            Some(a) => PyTuple::new(py, [a]),
        };
        self.call(py, method, args, convert)
    }

    /// Like [`start`](Self::start), with a JSON argument given to the
    /// method as the Python value it converts to.
    fn start_json<T: Send + 'static>(
        &self,
        py: Python<'_>,
        method: &'static str,
        arg: &serde_json::Value,
        convert: Converter<T>,
    ) -> Result<Started<T>, Finalizing> {
        let args = crate::convert::to_py(py, arg).and_then(|a| PyTuple::new(py, [a]));
        self.call(py, method, args, convert)
    }

    /// Calls the host's `method` with `args` ([`call_host`]).
    fn call<T: Send + 'static>(
        &self,
        py: Python<'_>,
        method: &'static str,
        args: PyResult<Bound<'_, PyTuple>>,
        convert: Converter<T>,
    ) -> Result<Started<T>, Finalizing> {
        let callable = self.query.bind(py).getattr(method);
        let called = match (callable, args) {
            (Ok(callable), Ok(args)) => call_host(callable, args)?,
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        Ok(self.awaited(py, called.map(Bound::unbind), convert))
    }

    /// What a called method returned: converted, or its awaitable scheduled.
    fn awaited<T: Send + 'static>(
        &self,
        py: Python<'_>,
        called: PyResult<Py<PyAny>>,
        convert: Converter<T>,
    ) -> Started<T> {
        let returned = match called {
            Ok(v) => v.into_bound(py),
            Err(e) => return Started::Done(Err(host_error(py, e))),
        };
        if !returned.get_type().hasattr(intern!(py, "__await__")).unwrap_or(false) {
            return Started::Done(convert(&returned));
        }
        let (tx, rx) = oneshot::channel();
        let scheduled = (|| {
            let future = submit(py, returned, self.event_loop.as_deref())?;
            let deliver = move |py: Python<'_>, outcome: PyResult<Bound<'_, PyAny>>| {
                let _ = tx.send(match outcome {
                    Ok(v) => convert(&v),
                    Err(e) => Err(host_error(py, e)),
                });
            };
            let deliver: Deliver = Box::new(deliver);
            let callback = Py::new(py, Completion { deliver: Mutex::new(Some(deliver)) })?;
            let guard = CancelOnDrop(Some(Held::new(future.clone().unbind())));
            future.call_method1(intern!(py, "add_done_callback"), (callback,))?;
            Ok::<_, PyErr>(guard)
        })();
        match scheduled {
            Ok(guard) => Started::Pending(rx, guard),
            Err(e) => Started::Done(Err(host_error(py, e))),
        }
    }
}

fn call<T: Send + 'static>(
    inner: &Arc<HostInner>,
    method: &'static str,
    arg: Option<String>,
    convert: Converter<T>,
) -> QueryFuture<'static, T> {
    let inner = Arc::clone(inner);
    Box::pin(async move {
        let started =
            tokio::task::spawn_blocking(move || attach(|py| inner.start(py, method, arg.as_deref(), convert))).await;
        match started {
            Ok(Ok(Ok(started))) => finish(method, started).await,
            Ok(Ok(Err(finalizing)) | Err(finalizing)) => Err(finalizing.host_error(method)),
            Err(_) => Err(HostError::new(format!("{method}: calling the host failed unexpectedly"))),
        }
    })
}

/// The outcome of a started host call (awaiting its coroutine, if any).
async fn finish<T>(method: &str, started: Started<T>) -> Result<T, HostError> {
    match started {
        Started::Done(r) => r,
        Started::Pending(rx, mut guard) => {
            let r = rx.await;
            guard.0 = None; // finished: nothing to cancel
            r.unwrap_or_else(|_| Err(HostError::new(format!("{method}: the host's coroutine never reported"))))
        }
    }
}

fn lock<T>(lane: &Mutex<Lane<T>>) -> std::sync::MutexGuard<'_, Lane<T>> {
    lane.lock().unwrap_or_else(|e| e.into_inner())
}

/// A read through a lane (see [`Lane`]).
fn queued<T: Send + 'static>(
    inner: &Arc<HostInner>,
    policy: &'static LanePolicy<T>,
    session_id: String,
) -> QueryFuture<'static, T> {
    let inner = Arc::clone(inner);
    Box::pin(async move {
        let (tx, rx) = oneshot::channel();
        let start_drainer = {
            let mut lane = lock((policy.lane)(&inner));
            lane.pending.push_back((session_id, tx));
            // Fanning out, a read needs a drainer on its way: the running
            // ones may be blocked in the host for good.
            let wanted = if policy.fan_out {
                lane.starting == 0
            } else {
                lane.drainers == 0 || lane.pending.len() > 4 * lane.drainers
            };
            wanted && lane.add_drainer(policy)
        };
        if start_drainer {
            spawn_drainer(&inner, policy);
        }
        match rx.await {
            Ok(started) => finish(policy.method, started).await,
            Err(_) => Err(HostError::new(format!("{}: calling the host failed unexpectedly", policy.method))),
        }
    })
}

impl<T> Lane<T> {
    /// Counts a new drainer, if the policy allows one more.
    fn add_drainer(&mut self, policy: &LanePolicy<T>) -> bool {
        let add = self.drainers < policy.max;
        self.drainers += usize::from(add);
        self.starting += usize::from(add);
        add
    }
}

fn spawn_drainer<T: Send + 'static>(inner: &Arc<HostInner>, policy: &'static LanePolicy<T>) {
    let drainer = Arc::clone(inner);
    drop(tokio::task::spawn_blocking(move || drain(&drainer, policy)));
}

/// A drainer: calls the host for queued reads, taking the GIL once, until
/// the queue is empty. Reads whose caller stopped waiting are skipped.
fn drain<T: Send + 'static>(inner: &Arc<HostInner>, policy: &'static LanePolicy<T>) {
    let lane = (policy.lane)(inner);
    /// The next read to make, or `None` (and this drainer is gone); `first`
    /// for this drainer's first look. Fans out as [`Lane`] says.
    fn next<T: Send + 'static>(
        inner: &Arc<HostInner>,
        policy: &'static LanePolicy<T>,
        first: bool,
    ) -> Option<(String, oneshot::Sender<Started<T>>)> {
        let mut lane = lock((policy.lane)(inner));
        lane.starting -= usize::from(first);
        let next = lane.pending.pop_front();
        if next.is_none() {
            lane.drainers -= 1;
            return None;
        }
        let more = policy.fan_out && lane.pending.len() > lane.starting && lane.add_drainer(policy);
        drop(lane);
        if more {
            spawn_drainer(inner, policy);
        }
        next
    }
    /// If a call panics, the drainer still counts as gone.
    struct Gone<'a, T>(&'a Mutex<Lane<T>>);
    impl<T> Drop for Gone<'_, T> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                lock(self.0).drainers -= 1;
            }
        }
    }
    // Without the GIL until there is work: surplus drainers leave at once.
    let Some(first) = next(inner, policy, true) else { return };
    let _gone = Gone(lane);
    let refuse = |tx: oneshot::Sender<Started<T>>, finalizing: Finalizing| {
        let _ = tx.send(Started::Done(Err(finalizing.host_error(policy.method))));
    };
    let mut item = Some(first);
    let called = attach(|py| loop {
        let Some((id, tx)) = item.take() else { return Ok(()) };
        if !tx.is_closed() {
            match inner.start(py, policy.method, Some(&id), policy.convert) {
                Ok(started) => drop(tx.send(started)),
                Err(finalizing) => {
                    refuse(tx, finalizing);
                    return Err(finalizing);
                }
            }
        }
        item = next(inner, policy, false);
    });
    let finalizing = match called {
        Ok(Ok(())) => return,
        Ok(Err(finalizing)) | Err(finalizing) => finalizing,
    };
    // The interpreter is finalizing: the queued reads fail, without Python.
    if let Some((_, tx)) = item {
        refuse(tx, finalizing);
    }
    while let Some((_, tx)) = next(inner, policy, false) {
        refuse(tx, finalizing);
    }
}

/// An optional method called with a JSON argument (one call per query).
fn call_json<T: Send + 'static>(
    inner: &Arc<HostInner>,
    method: &'static str,
    arg: serde_json::Value,
    convert: Converter<T>,
) -> QueryFuture<'static, T> {
    let inner = Arc::clone(inner);
    Box::pin(async move {
        let started =
            tokio::task::spawn_blocking(move || attach(|py| inner.start_json(py, method, &arg, convert))).await;
        match started {
            Ok(Ok(Ok(started))) => finish(method, started).await,
            Ok(Ok(Err(finalizing)) | Err(finalizing)) => Err(finalizing.host_error(method)),
            Err(_) => Err(HostError::new(format!("{method}: calling the host failed unexpectedly"))),
        }
    })
}

fn convert_fingerprints(obj: &Bound<'_, PyAny>) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
    if obj.is_none() {
        return Ok(None);
    }
    if !(obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>()) {
        return Err(wrong_type("fingerprints", obj, "a list of str, bytes, int or None, or None"));
    }
    let mut out = Vec::new();
    for item in obj.try_iter().map_err(|e| HostError::new(e.to_string()))? {
        let item = item.map_err(|e| HostError::new(e.to_string()))?;
        out.push(if item.is_none() {
            None
        } else if let Ok(b) = item.cast::<PyBytes>() {
            Some(Fingerprint::from_bytes(b.as_bytes()))
        } else if let Ok(s) = item.cast::<PyString>() {
            Some(Fingerprint::from_bytes(s.to_cow().map_err(|e| HostError::new(e.to_string()))?.as_bytes()))
        } else if let Ok(n) = item.extract::<i128>() {
            Some(Fingerprint::from_bytes(n.to_le_bytes()))
        } else {
            return Err(wrong_type("fingerprints", &item, "str, bytes, int or None for each session"));
        });
    }
    Ok(Some(out))
}

fn convert_search(obj: &Bound<'_, PyAny>) -> Result<Option<Vec<SearchResult>>, HostError> {
    if obj.is_none() {
        return Ok(None);
    }
    if !(obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>()) {
        return Err(wrong_type("search", obj, "a list of result dicts, or None"));
    }
    let value = to_json(obj, "the result of search()").map_err(|e| HostError::new(e.to_string()))?;
    SearchResult::list_from_json(&value).map(Some).map_err(|e| HostError::new(format!("search(): {e}")))
}

impl SessionQuery for PyHost {
    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        if !self.inner.has_fingerprints {
            return Box::pin(async { Ok(None) });
        }
        call_json(&self.inner, "fingerprints", serde_json::Value::from(session_ids.to_vec()), convert_fingerprints)
    }
    fn search<'a>(&'a self, request: &'a SearchRequest) -> QueryFuture<'a, Option<Vec<SearchResult>>> {
        if !self.inner.has_search {
            return Box::pin(async { Ok(None) });
        }
        call_json(&self.inner, "search", request.to_json(), convert_search)
    }
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        call(&self.inner, "list_sessions", None, convert_list)
    }
    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        queued(&self.inner, &TITLES, session_id.to_owned())
    }
    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        queued(&self.inner, &SURFACES, session_id.to_owned())
    }
}

fn wrong_type(method: &str, obj: &Bound<'_, PyAny>, expected: &str) -> HostError {
    HostError::new(format!("{method}() returned {}; expected {expected}", type_name(obj)))
}

fn convert_list(obj: &Bound<'_, PyAny>) -> Result<Vec<SessionHeader>, HostError> {
    const EXPECTED: &str = "a list of session headers, or that list as JSON str or bytes";
    let from_text = |text: &[u8]| {
        SessionHeader::list_from_json_text(text).map_err(|e| HostError::new(format!("list_sessions(): {e}")))
    };
    let value = if let Ok(b) = obj.cast::<PyBytes>() {
        return from_text(b.as_bytes());
    } else if let Ok(s) = obj.cast::<PyString>() {
        let text = s.to_cow().map_err(|e| HostError::new(format!("list_sessions(): {e}")))?;
        return from_text(text.as_bytes());
    } else if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        to_json(obj, "the result of list_sessions()").map_err(|e| HostError::new(e.to_string()))?
    } else {
        return Err(wrong_type("list_sessions", obj, EXPECTED));
    };
    SessionHeader::list_from_json(&value).map_err(|e| HostError::new(format!("list_sessions(): {e}")))
}

fn convert_title(obj: &Bound<'_, PyAny>) -> Result<Option<String>, HostError> {
    if obj.is_none() {
        return Ok(None);
    }
    match obj.cast::<PyString>() {
        Ok(s) => s.to_cow().map(|t| Some(t.into_owned())).map_err(|e| HostError::new(format!("read_title(): {e}"))),
        Err(_) => Err(wrong_type("read_title", obj, "a str or None")),
    }
}

/// A Python `bytes` object lent to the library without a copy.
pub(crate) struct PyBytesData {
    /// Keeps the object (and so its buffer) alive.
    _owner: Py<PyBytes>,
    ptr: *const u8,
    len: usize,
}

// SAFETY: `bytes` objects are immutable and CPython never moves an object,
// so the buffer behind `ptr` stays valid and unchanged for as long as
// `_owner` holds a strong reference; reading immutable memory needs no GIL,
// and `Py<T>` may be dropped on any thread (PyO3 defers the decref).
unsafe impl Send for PyBytesData {}
// SAFETY: see `Send`: the data is only ever read.
unsafe impl Sync for PyBytesData {}

impl AsRef<[u8]> for PyBytesData {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `ptr`/`len` came from `PyBytes::as_bytes` of `_owner`,
        // which is alive and immutable (see above).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl PyBytesData {
    pub(crate) fn new(b: &Bound<'_, PyBytes>) -> Self {
        let bytes = b.as_bytes();
        PyBytesData { ptr: bytes.as_ptr(), len: bytes.len(), _owner: b.clone().unbind() }
    }
}

fn convert_surface(obj: &Bound<'_, PyAny>) -> Result<SurfaceData, HostError> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(SurfaceData::json(PyBytesData::new(b)));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        // One copy, the UTF-8 encoding, which is then lent like `bytes`
        // (`to_cow().into_owned()` made two under the limited API).
        let encoded = s.encode_utf8().map_err(|e| HostError::new(format!("read_surface(): {e}")))?;
        return Ok(SurfaceData::json(PyBytesData::new(&encoded)));
    }
    if obj.is_instance_of::<pyo3::types::PyDict>() {
        let value = to_json(obj, "the result of read_surface()").map_err(|e| HostError::new(e.to_string()))?;
        return Ok(SurfaceData::from(value));
    }
    Err(wrong_type("read_surface", obj, "a snapshot dict, or the snapshot as JSON str or bytes"))
}
