//! Python objects the library holds and lets go of on threads without the
//! GIL ([`Held`]), the exit hook's flag they check ([`FINALIZING`]) and the
//! guard for a thread that `pthread_exit` unwinds ([`hang_if_unwound`]).
//!
//! The floor under `errors` and `runtime`: both hold Python objects, so
//! neither may own this (they imported each other over `Held`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use pyo3::prelude::*;

/// Set for good by the exit hook (`runtime::wait_for_library_threads`):
/// from then on no library thread enters Python (`runtime::attach` refuses).
pub(crate) static FINALIZING: AtomicBool = AtomicBool::new(false);

/// Parks the thread for good when dropped by anything but a Rust panic:
/// that is the forced unwinding of `pthread_exit`, with which CPython
/// (before 3.14) ends a thread that takes the GIL back during finalization.
/// The frames it would unwind hold Python objects and a GIL state that
/// must not be touched then, and PyO3's `catch_unwind` at the Python
/// boundary aborts on it ("FATAL: exception not rethrown"), so the thread
/// hangs instead, as it does on Python 3.14 (and as PyO3 does around
/// `PyGILState_Ensure`); the process exits with the thread still parked.
/// Forgotten on the normal path (see [`hang_if_unwound`]).
pub(crate) struct HangIfUnwound;

impl Drop for HangIfUnwound {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return; // a Rust panic: unwind to the task's `catch_unwind`
        }
        loop {
            std::thread::park();
        }
    }
}

/// Runs `f`; if `pthread_exit` unwinds it (a thread that took the GIL back
/// during finalization, see [`HangIfUnwound`]), parks the thread for good.
pub fn hang_if_unwound<R>(f: impl FnOnce() -> R) -> R {
    let hang = HangIfUnwound;
    let r = f();
    std::mem::forget(hang);
    r
}

/// `PyObject_Call`, declared as able to unwind: with CPython before 3.14 a
/// host method that let go of the GIL (to sleep, read, wait) ends in
/// `pthread_exit` when it takes it back during finalization.
///
/// Not an `extern "C-unwind"` declaration of the symbol: PyO3 declares the
/// same `PyObject_Call` as `extern "C"` (cannot unwind), and a codegen unit
/// holding both declarations keeps one for every call. Where it kept
/// PyO3's, the call had no unwinding entry, so the forced unwinding of
/// `pthread_exit` stopped there and glibc aborted the process (the packaged
/// wheel: `dist-check`, 16 codegen units; python/tests/test_exit.py). The
/// address goes through `black_box` so that the compiler cannot turn the
/// call back into a direct call of PyO3's declaration.
pub(crate) mod unwinding {
    use pyo3::ffi::PyObject;

    type Call = unsafe extern "C-unwind" fn(*mut PyObject, *mut PyObject, *mut PyObject) -> *mut PyObject;

    /// `PyObject_Call(callable, args, kwargs)`, as a call that may unwind.
    ///
    /// # Safety
    /// As `PyObject_Call`: the GIL is held and the arguments are valid.
    #[allow(non_snake_case)]
    pub unsafe fn PyObject_Call(callable: *mut PyObject, args: *mut PyObject, kwargs: *mut PyObject) -> *mut PyObject {
        let address = std::hint::black_box(pyo3::ffi::PyObject_Call as *const ());
        // SAFETY: `address` is `PyObject_Call`, whose signature this is;
        // only the unwinding ABI differs, and C code may unwind (CPython's
        // `pthread_exit`).
        let call: Call = unsafe { std::mem::transmute::<*const (), Call>(address) };
        // SAFETY: as the caller promised.
        unsafe { call(callable, args, kwargs) }
    }

    /// `callable(*args)`, the call made as one that may unwind
    /// ([`PyObject_Call`]): for Python code run on a thread that
    /// finalization may end (an exception's `__init__` on a caller's
    /// daemon thread).
    pub fn call<'py>(
        callable: &pyo3::Bound<'py, pyo3::PyAny>,
        args: &pyo3::Bound<'py, pyo3::types::PyTuple>,
    ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
        // SAFETY: the GIL is held (the `Bound`s); `callable` and `args`
        // are valid objects (a tuple for `args`), NULL is a valid `kwargs`,
        // and the result is a new reference, or NULL with an exception set.
        unsafe {
            let result = PyObject_Call(callable.as_ptr(), args.as_ptr(), std::ptr::null_mut());
            pyo3::Bound::from_owned_ptr_or_err(callable.py(), result)
        }
    }

    /// `object.name()`, the call made as one that may unwind
    /// ([`PyObject_Call`]): for Python code run on a thread that
    /// finalization may end (the loop's thread of a host's coroutine).
    pub fn call_method0<'py>(
        object: &pyo3::Bound<'py, pyo3::PyAny>,
        name: &pyo3::Bound<'py, pyo3::types::PyString>,
    ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
        use pyo3::types::PyAnyMethods;
        let py = object.py();
        call(&object.getattr(name)?, &pyo3::types::PyTuple::empty(py))
    }

    /// `Py_DecRef(object)`, as a call that may unwind: the last reference
    /// to an object runs its finalizer, Python code that may let go of the
    /// GIL (an unawaited coroutine's warning, written to `stderr`) and end
    /// in `pthread_exit` when it takes it back during finalization. PyO3's
    /// drop of a reference calls CPython as `extern "C"`, through which
    /// that unwinding cannot pass (glibc aborts the process: "FATAL:
    /// exception not rethrown"); through this call it reaches the
    /// caller's [`HangIfUnwound`](super::HangIfUnwound).
    ///
    /// # Safety
    /// The GIL is held and `object` is a strong reference the caller owns
    /// (it is given up here).
    #[allow(non_snake_case)]
    pub unsafe fn Py_DecRef(object: *mut PyObject) {
        type DecRef = unsafe extern "C-unwind" fn(*mut PyObject);
        let address = std::hint::black_box(pyo3::ffi::Py_DecRef as *const ());
        // SAFETY: `address` is `Py_DecRef`, whose signature this is; only
        // the unwinding ABI differs.
        let dec_ref: DecRef = unsafe { std::mem::transmute::<*const (), DecRef>(address) };
        // SAFETY: as the caller promised.
        unsafe { dec_ref(object) }
    }
}

/// Python objects the library let go of, waiting to be released (their
/// reference dropped) by [`release_held`]; see [`Held`].
static RELEASED: Mutex<Vec<Py<PyAny>>> = Mutex::new(Vec::new());
/// Whether [`RELEASED`] may hold objects (set after each push).
static RELEASE_PENDING: AtomicBool = AtomicBool::new(false);

/// A reference to a Python object that may run Python code when it is
/// freed (a host, an event loop, a host's exception and its traceback),
/// held by the library and dropped wherever the library is done with it,
/// often on a thread without the GIL.
///
/// PyO3 would defer such a drop to the next thread that enters any PyO3
/// code: a daemon thread, say, that calls the library just as the
/// interpreter starts to finalize, which then ran the object's `__del__`
/// in PyO3's frames and, ended by `pthread_exit` there, crashed unwinding
/// them (the rest of PyO3's batch dropped without the GIL). A `Held`
/// object is released by [`release_held`] instead, which guards against
/// that: the next time a library thread enters [`attach`](crate::runtime::attach), the next
/// resolver call, or the exit hook, whichever comes first. One let go of
/// after the exit hook is leaked.
pub struct Held(std::mem::ManuallyDrop<Py<PyAny>>);

impl Held {
    /// Holds `object`.
    pub fn new(object: Py<PyAny>) -> Self {
        Held(std::mem::ManuallyDrop::new(object))
    }

    /// The object, to be dropped by the caller (attached to the
    /// interpreter: then at once).
    pub fn into_inner(self, _py: Python<'_>) -> Py<PyAny> {
        let mut held = std::mem::ManuallyDrop::new(self);
        // SAFETY: `held` is never dropped, so `held.0` is taken only once.
        unsafe { std::mem::ManuallyDrop::take(&mut held.0) }
    }
}

impl std::ops::Deref for Held {
    type Target = Py<PyAny>;
    fn deref(&self) -> &Py<PyAny> {
        &self.0
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: `self.0` is not used after this.
        let object = unsafe { std::mem::ManuallyDrop::take(&mut self.0) };
        let mut released = RELEASED.lock().unwrap_or_else(|e| e.into_inner());
        if FINALIZING.load(Ordering::SeqCst) {
            std::mem::forget(object);
            return;
        }
        released.push(object);
        drop(released);
        RELEASE_PENDING.store(true, Ordering::Release);
    }
}

/// Releases the objects of [`Held`] let go of so far; the caller is
/// attached to the interpreter, so each reference is dropped at once.
/// Safe on any thread: freeing an object may run Python code (`__del__`),
/// so it is done outside the lock (that code may let another thread take
/// the GIL, and then the lock), and a daemon thread ended by `pthread_exit`
/// meanwhile parks before the rest would be dropped without the GIL.
pub fn release_held(py: Python<'_>) {
    if RELEASE_PENDING.swap(false, Ordering::Acquire) {
        release_all(py);
    }
}

/// [`release_held`] without looking at [`RELEASE_PENDING`].
pub(crate) fn release_all(_py: Python<'_>) {
    let released = std::mem::take(&mut *RELEASED.lock().unwrap_or_else(|e| e.into_inner()));
    for object in released {
        // SAFETY: the GIL is held (`_py`), and `into_ptr` gives up the
        // reference `object` owned.
        hang_if_unwound(|| unsafe { unwinding::Py_DecRef(object.into_ptr()) });
    }
}
