//! The helpers that run a library future on the core's runtime
//! ([`dsh_session_reference::runtime`](mod@dsh_session_reference::runtime), fork-aware) for a blocking or an
//! asyncio caller.
//!
//! Threading rules (see README "Threads, the GIL and asyncio"):
//! - a blocking call releases the GIL for its whole duration and drives its
//!   future on the calling thread; on the main thread it wakes every 50 ms
//!   to let Python run its signal handlers, so Ctrl-C cancels the call;
//! - the runtime's worker threads never take the GIL; every step that needs
//!   it (calling the host, converting results) runs on the blocking pool,
//!   whose threads keep their Python thread state between calls ([`attach`]).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use dsh_session_reference::{runtime, CancelToken, Error, HostError, Result};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::{internal_error, to_pyerr};
use crate::held::{hang_if_unwound, release_all, release_held, unwinding, HangIfUnwound, Held, FINALIZING};

/// Library threads inside [`attach`] now, less those blocked in a host
/// method ([`call_host`]): the threads that may be running Python code the
/// interpreter's finalization must not overlap (see [`wait_for_library_threads`]).
static IN_PYTHON: AtomicUsize = AtomicUsize::new(0);

/// The refusal of [`attach`] and [`call_host`]: the interpreter is
/// finalizing, or about to, so a library thread may no longer call Python.
/// The library sees it as a failed host call ([`Finalizing::host_error`]).
#[derive(Debug, Clone, Copy)]
pub struct Finalizing;

impl Finalizing {
    /// The host error of a call to `method` refused, or whose result was
    /// dropped, because of it.
    pub fn host_error(self, method: &str) -> HostError {
        HostError::new(format!("{method}: the Python interpreter is shutting down"))
    }
}

/// The package's exit hook (registered with `atexit` at import; atexit
/// handlers run before the interpreter finalizes, the ones registered
/// earlier last). From now on no library thread enters Python; then waits,
/// with the GIL released, until none is running Python code, or `timeout`
/// has passed; whether none is.
///
/// Why: CPython (before 3.14) ends a thread that takes the GIL back once
/// finalization has begun with `pthread_exit`, whose forced unwinding ran
/// the Rust frames' cleanup of a library thread caught mid-call (a Python
/// call that let go of the GIL midway, such as `call_soon_threadsafe`
/// writing to its wake-up socket, or any Python code the interpreter
/// switched away from): a `Py_DECREF` without the GIL (segmentation fault)
/// or `PyGILState_Release` of a thread state that is not current ("Fatal
/// Python error"). Threads blocked in a host method are not waited for
/// (the host may never return); [`call_host`] makes them safe instead.
pub fn wait_for_library_threads(py: Python<'_>, timeout: Duration) -> bool {
    // SeqCst, with [`Inside::enter`]: either a thread sees the flag and
    // stays out, or its count is seen here and waited for.
    FINALIZING.store(true, Ordering::SeqCst);
    // [`Held`] checks the flag under the lock: every object pushed so far
    // is released here, none is pushed later.
    release_all(py);
    py.detach(|| {
        let start = std::time::Instant::now();
        loop {
            if IN_PYTHON.load(Ordering::SeqCst) == 0 {
                return true;
            }
            if start.elapsed() >= timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

/// Called in a child created by `fork()` (registered by the package): the
/// library threads counted in [`IN_PYTHON`] by the parent do not exist in
/// the child, whose exit hook would otherwise wait its full timeout.
pub fn after_fork_in_child() {
    IN_PYTHON.store(0, Ordering::SeqCst);
}

/// Whether the exit hook has run: library threads no longer call Python.
pub fn finalizing() -> bool {
    FINALIZING.load(Ordering::SeqCst)
}

/// One count in [`IN_PYTHON`] while alive.
struct Inside;

impl Inside {
    /// Counts this thread in, unless the interpreter is finalizing.
    fn enter() -> std::result::Result<Inside, Finalizing> {
        IN_PYTHON.fetch_add(1, Ordering::SeqCst);
        let inside = Inside;
        if FINALIZING.load(Ordering::SeqCst) {
            return Err(Finalizing);
        }
        Ok(inside)
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        IN_PYTHON.fetch_sub(1, Ordering::SeqCst);
    }
}

thread_local! {
    /// Whether this thread holds a Python thread state of its own (see [`attach`]).
    static KEEPS_THREAD_STATE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `Python::attach` for the runtime's blocking pool, whose threads Python
/// did not create; refused (`Err`, and `f` is not called) once the
/// interpreter is finalizing (see [`wait_for_library_threads`]).
///
/// Plain `attach` creates a Python thread state when it takes the GIL and
/// destroys it when it lets go: about 100 µs of CPU per host call, most of
/// a small call's cost. Here the first call on a thread takes one more
/// `PyGILState_Ensure` that is never released, so the thread state lives
/// as long as the thread and later calls only swap it in and out (CPython
/// deletes the states of exited threads at fork and finalization). The
/// extra state is never released by this thread (the `pthread_exit` of
/// finalization is stopped by [`HangIfUnwound`] before PyO3's guard would
/// release its own state, which is not current then).
pub fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> std::result::Result<R, Finalizing> {
    let _inside = Inside::enter()?;
    Ok(Python::attach(|py| {
        if !KEEPS_THREAD_STATE.get() {
            // SAFETY: the GIL is held (inside `attach`), so this only
            // increments the thread state's count; the state it returns
            // is never passed to `PyGILState_Release`, on purpose.
            let _ = unsafe { pyo3::ffi::PyGILState_Ensure() };
            KEEPS_THREAD_STATE.set(true);
        }
        hang_if_unwound(|| {
            release_held(py);
            f(py)
        })
    }))
}

/// Calls a host method, `callable(*args)`, from inside [`attach`]; `Err`
/// (not called) once the exit hook has run.
///
/// A host method may block as long as it likes (or never return), so the
/// exit hook does not wait for it: while it runs, this thread is not
/// counted in [`IN_PYTHON`]. If it takes the GIL back after finalization
/// began, the thread hangs ([`HangIfUnwound`], with no Rust frame between it
/// and the call). If it returns once the exit hook has run (`Err`), its
/// result is leaked, as are `callable` and `args`: freeing them could run
/// Python code (`__del__`), which must not overlap finalization; the caller
/// must not call Python again (and [`attach`] refuses from now on).
pub fn call_host<'py>(
    callable: Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
) -> std::result::Result<PyResult<Bound<'py, PyAny>>, Finalizing> {
    let py = callable.py();
    if FINALIZING.load(Ordering::SeqCst) {
        std::mem::forget(callable);
        std::mem::forget(args);
        return Err(Finalizing);
    }
    IN_PYTHON.fetch_sub(1, Ordering::SeqCst);
    let hang = HangIfUnwound;
    // SAFETY: the GIL is held (`py`); `callable` and `args` are valid
    // objects (a tuple for `args`), NULL is a valid `kwargs`, and the result
    // is a new reference, or NULL with an exception set.
    let result = unsafe { unwinding::PyObject_Call(callable.as_ptr(), args.as_ptr(), std::ptr::null_mut()) };
    std::mem::forget(hang);
    IN_PYTHON.fetch_add(1, Ordering::SeqCst);
    if FINALIZING.load(Ordering::SeqCst) {
        // The exception, if any, stays set on this thread's state: taking
        // it would only move it into a reference that must be leaked too.
        std::mem::forget(callable);
        std::mem::forget(args);
        return Err(Finalizing);
    }
    // SAFETY: `result` is a new reference or NULL with an exception set.
    Ok(unsafe { Bound::from_owned_ptr_or_err(py, result) })
}

/// Runs `work` until it completes or `token` is cancelled; `user` (the
/// caller's own token) is linked into `token`.
pub async fn linked<T>(
    token: CancelToken,
    user: Option<CancelToken>,
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    if user.as_ref().is_some_and(|u| u.is_cancelled()) {
        token.cancel(); // before `work` first runs: nothing is read
    }
    let link = async {
        match &user {
            Some(u) => u.cancelled().await,
            None => std::future::pending().await,
        }
        token.cancel();
        std::future::pending::<()>().await;
    };
    tokio::select! {
        biased;
        () = link => unreachable!("the link future never completes"),
        r = work => r,
    }
}

/// Runs a library future for a blocking Python caller: the GIL is released
/// while waiting; on the main thread, pending signals are handled every
/// 50 ms and an exception from a handler (`KeyboardInterrupt`) cancels the
/// work and is raised.
///
/// The calling thread drives the future itself ([`drive`]): host
/// calls still run on the blocking pool and spawned work on the workers,
/// but the two thread hand-offs of spawning the call and sending its result
/// back are saved (most of a small call's overhead). From a thread that is
/// already inside the runtime (a host method calling the resolver), the
/// future is spawned and awaited over a channel.
pub fn run_blocking<T, F>(py: Python<'_>, user: Option<CancelToken>, make: impl FnOnce(CancelToken) -> F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let token = CancelToken::new();
    let work = linked(token.clone(), user, make(token.clone()));
    let main_thread = is_main_thread(py);
    let outcome: std::result::Result<Result<T>, Option<PyErr>> = if tokio::runtime::Handle::try_current().is_err() {
        let rt = runtime();
        py.detach(move || {
            let _context = rt.enter(); // for the blocking pool and timers of the work
            let drive = AssertUnwindSafe(|| {
                drive(work, main_thread, || {
                    Python::attach(|py| py.check_signals()).map_err(|e| {
                        token.cancel();
                        Some(e)
                    })
                })
            });
            std::panic::catch_unwind(drive).unwrap_or(Err(None))
        })
    } else {
        let (tx, rx) = mpsc::sync_channel::<Result<T>>(1);
        runtime().spawn(async move {
            let _ = tx.send(work.await);
        });
        py.detach(move || loop {
            if !main_thread {
                return rx.recv().map_err(|_| None);
            }
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(r) => return Ok(r),
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(None),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        token.cancel();
                        return Err(Some(e));
                    }
                }
            }
        })
    };
    match outcome {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_pyerr(py, &e)),
        Err(Some(interrupt)) => Err(interrupt),
        Err(None) => Err(internal_error("the worker task failed (a bug: please report it)")),
    }
}

/// Polls `work` on this thread until it completes, parking in between; on
/// the main thread, `every_50ms` runs at least every 50 ms while waiting and
/// stops the wait by returning an error. A plain park/unpark loop rather
/// than `Runtime::block_on` with a 50 ms `sleep`: registering and dropping
/// that timer woke a runtime worker on every call.
///
/// Before parking, the thread spins for up to [`SPIN`] waiting for a wake:
/// a host call answered within that time (the usual case for a small read)
/// then costs no sleep and no wake-up of this thread, which on a virtual
/// machine is tens of µs of CPU each.
fn drive<T, E>(
    work: impl Future<Output = T>,
    main_thread: bool,
    mut every_50ms: impl FnMut() -> std::result::Result<(), E>,
) -> std::result::Result<T, E> {
    struct Unpark {
        thread: std::thread::Thread,
        woken: AtomicBool,
    }
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.woken.store(true, Ordering::Release);
            // Cheap when the thread is spinning rather than parked.
            self.thread.unpark();
        }
    }
    const TICK: Duration = Duration::from_millis(50);
    let unpark = Arc::new(Unpark { thread: std::thread::current(), woken: AtomicBool::new(false) });
    let waker = std::task::Waker::from(Arc::clone(&unpark));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut work = std::pin::pin!(work);
    let mut checked = std::time::Instant::now();
    loop {
        unpark.woken.store(false, Ordering::Relaxed);
        if let std::task::Poll::Ready(v) = work.as_mut().poll(&mut cx) {
            return Ok(v);
        }
        let spinning = std::time::Instant::now();
        while !unpark.woken.load(Ordering::Acquire) && spinning.elapsed() < SPIN {
            std::hint::spin_loop();
        }
        if unpark.woken.load(Ordering::Acquire) {
            continue;
        }
        if !main_thread {
            std::thread::park();
            continue;
        }
        std::thread::park_timeout(TICK.saturating_sub(checked.elapsed()));
        if checked.elapsed() >= TICK {
            every_50ms()?;
            checked = std::time::Instant::now();
        }
    }
}

/// How long a blocking call spins for its work's next wake before it parks.
const SPIN: Duration = Duration::from_micros(100);

/// The identifier (`threading.get_ident()`) of the interpreter's main
/// thread, learned when the module is imported ([`learn_main_thread`]); 0
/// until then.
static MAIN_THREAD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Learns the main thread's identifier (at import: `threading.main_thread()`
/// whichever thread imports).
pub fn learn_main_thread(py: Python<'_>) -> PyResult<()> {
    let ident: u64 = py.import("threading")?.call_method0("main_thread")?.getattr("ident")?.extract()?;
    MAIN_THREAD.store(ident, Ordering::Relaxed);
    Ok(())
}

/// Whether this is the interpreter's main thread: told without running
/// Python code, which on a daemon thread during finalization would end in
/// `pthread_exit` inside a call PyO3 declares as unable to unwind (glibc
/// then aborts the process).
fn is_main_thread(_py: Python<'_>) -> bool {
    // SAFETY: a plain C function of the interpreter, the GIL held.
    let this = unsafe { pyo3::ffi::PyThread_get_thread_ident() } as u64;
    this == MAIN_THREAD.load(Ordering::Relaxed)
}

/// Runs a library future for an asyncio caller: spawns it and, when it
/// completes, calls `done(ok, value)` on `event_loop` through
/// `call_soon_threadsafe` (`value` is the result, or the exception).
/// `convert` turns the result into Python data (with the GIL, on the
/// blocking pool).
pub fn run_async<T, F, C>(
    token: CancelToken,
    user: Option<CancelToken>,
    work: F,
    event_loop: Py<PyAny>,
    done: Py<PyAny>,
    convert: C,
) where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
    C: for<'py> FnOnce(Python<'py>, T) -> PyResult<Bound<'py, PyAny>> + Send + 'static,
{
    let (event_loop, done) = (Held::new(event_loop), Held::new(done));
    let rt = runtime();
    let handle = rt.handle().clone();
    rt.spawn(async move {
        let result = linked(token, user, work).await;
        let deliver = move || {
            // Refused at exit: nobody can be given the result any more.
            let _ = attach(|py| {
                let (ok, value) = match result.map_err(|e: Error| to_pyerr(py, &e)).and_then(|v| convert(py, v)) {
                    Ok(v) => (true, v),
                    Err(e) => (false, e.into_value(py).into_bound(py).into_any()),
                };
                // The loop may be closed by now; then nobody is waiting.
                let (event_loop, done) = (event_loop.into_inner(py), done.into_inner(py));
                let _ = event_loop.call_method1(py, "call_soon_threadsafe", (done, ok, value));
            });
        };
        let _ = handle.spawn_blocking(deliver).await;
    });
}
