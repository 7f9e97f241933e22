//! `DshSessionStore`: the library's read-only DSH JSONL session store as a
//! ready-made session query. A resolver over it reads natively, without
//! calling back into Python.

use std::path::PathBuf;

use dsh_session_reference::sources::dsh::{DshStore, StoreError, StoreErrorKind, StoredSession};
use pyo3::exceptions::{PyLookupError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::Value;

use crate::convert::to_py;

/// A read-only session query over a DSH sessions directory
/// (`<root>/<project>/<session>/session.jsonl`, or `session.v<N>.jsonl` for
/// the format generations of later DSH releases, plain or `.zstd`).
/// Pass it as the `query` of a `Resolver`: reads then run natively, with no
/// Python calls. Opening checks only that `root` is a readable directory
/// (`OSError` otherwise); nothing is ever written, locked or repaired.
#[pyclass(module = "dsh_session_reference._native", name = "DshSessionStore", frozen)]
pub struct DshSessionStore {
    pub(crate) store: DshStore,
}

fn store_error(e: StoreError) -> PyErr {
    match e.kind() {
        StoreErrorKind::NotFound => PyLookupError::new_err(e.message().to_owned()),
        StoreErrorKind::Corrupt => PyValueError::new_err(e.message().to_owned()),
        StoreErrorKind::Io => PyOSError::new_err(e.message().to_owned()),
    }
}

#[pymethods]
impl DshSessionStore {
    /// Opens the sessions root `root` (a `str` or path-like object).
    #[new]
    fn new(py: Python<'_>, root: PathBuf) -> PyResult<Self> {
        // Kept for the life of the process (README): watching from the
        // first listing, the reads of a first query find each log in it.
        let store = py.detach(move || DshStore::open(root).map(DshStore::watching_from_first_listing))?;
        Ok(DshSessionStore { store })
    }

    /// The root directory.
    #[getter]
    fn root(&self) -> PathBuf {
        self.store.root().to_path_buf()
    }

    /// The listed sessions' headers (the header line without `type`), newest
    /// `createdAt` first. Logs that cannot be listed (a path that does not
    /// match its header, a duplicate id) are skipped. Releases the GIL.
    fn list_sessions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = self.store.clone();
        let listing = py.detach(move || store.list())?;
        let headers = listing.sessions.iter().map(StoredSession::to_json).collect();
        to_py(py, &Value::Array(headers))
    }

    /// The latest title of a session, or `None`. Raises `LookupError` for an
    /// unknown id, `ValueError` for a damaged log and `OSError` when the file
    /// system fails. Releases the GIL.
    fn read_title(&self, py: Python<'_>, session_id: String) -> PyResult<Option<String>> {
        let store = self.store.clone();
        py.detach(move || store.read_title(&session_id)).map_err(store_error)
    }

    /// The surface snapshot of a session as JSON `bytes`
    /// (`{"session", "capturedThroughSeq", "events"}`). Raises like
    /// `read_title`. Releases the GIL.
    fn read_surface<'py>(&self, py: Python<'py>, session_id: String) -> PyResult<Bound<'py, PyBytes>> {
        let store = self.store.clone();
        let json = py.detach(move || store.read_surface_json(&session_id)).map_err(store_error)?;
        Ok(PyBytes::new(py, &json))
    }

    fn __repr__(&self) -> String {
        format!("DshSessionStore({:?})", self.store.root())
    }
}
