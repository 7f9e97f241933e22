//! `SessionSources`: the on-disk sessions of DSH and other agents (every
//! kind of docs/sources.md) as one ready-made session query. A resolver over it reads natively, without
//! calling back into Python.

use std::path::PathBuf;
use std::sync::Arc;

use dsh_session_reference::sources::{
    open_sources, report_json, specs_from_json, surface_json_bytes, MultiQuery, SourceKind, SourceSpec,
};
use dsh_session_reference::{block_on, SessionQuery};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMapping};
use serde_json::{json, Value};

use crate::convert::to_py;

/// A read-only view over the sessions that DSH and other agents keep on
/// disk, listed together (newest first) and read by id: another agent's
/// sessions are `<kind>:<id>` (`claude-code:<uuid>`, `codex:<uuid>`, …), DSH
/// ids are unchanged. Pass it as the `query` of a `Resolver`: reads then run
/// natively. `sources` is `None` for every default location that exists, or
/// a sequence of mappings `{"kind": KIND, "root": path or None}` with KIND
/// the name of a kind of docs/sources.md (`dsh`, `claude-code`, `codex`, …;
/// an unknown kind's `ValueError` lists them all), at most one per kind. A root
/// that cannot be opened is reported by `last_report()` after a listing,
/// never fatal to the other sources.
#[pyclass(module = "dsh_session_reference._native", name = "SessionSources", frozen)]
pub struct SessionSources {
    pub(crate) multi: Arc<MultiQuery>,
    specs: Vec<SourceSpec>,
}

fn spec_value(item: &Bound<'_, PyAny>) -> PyResult<Value> {
    let map = item.cast::<PyMapping>().map_err(|_| PyValueError::new_err("each source must be a mapping"))?;
    let kind: String = map.get_item("kind").and_then(|k| k.extract()).map_err(|_| {
        PyValueError::new_err(format!("each source needs a str `kind`, one of {}", SourceKind::names()))
    })?;
    let root: Option<PathBuf> = match map.get_item("root") {
        Ok(r) if !r.is_none() => {
            Some(r.extract().map_err(|_| PyValueError::new_err("a source's `root` must be a path or None"))?)
        }
        _ => None,
    };
    Ok(json!({"kind": kind, "root": root.map(|r| r.to_string_lossy().into_owned())}))
}

#[pymethods]
impl SessionSources {
    /// Opens the sources (see the class docs).
    #[new]
    #[pyo3(signature = (sources = None))]
    fn new(sources: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let value = match sources {
            None => Value::Null,
            Some(list) => Value::Array(list.try_iter()?.map(|item| spec_value(&item?)).collect::<PyResult<_>>()?),
        };
        let specs = specs_from_json(&value).map_err(PyValueError::new_err)?;
        let multi = open_sources(&specs).map_err(PyValueError::new_err)?;
        Ok(SessionSources { multi: Arc::new(multi), specs })
    }

    /// The sources opened, as `(kind, root)` pairs in order.
    #[getter]
    fn sources(&self) -> Vec<(&'static str, PathBuf)> {
        self.specs.iter().map(|s| (s.kind.name(), s.root.clone())).collect()
    }

    /// The sessions of every source, `{"id", "createdAt", "cwd"?}`, newest
    /// first. Raises `OSError` only when every source fails. Releases the GIL.
    fn list_sessions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let multi = self.multi.clone();
        let list = py.detach(move || block_on(async { multi.list_sessions().await }));
        let list = list.map_err(|e| PyOSError::new_err(e.message().to_owned()))?;
        let headers: Vec<Value> = list.iter().map(|h| h.to_json()).collect();
        to_py(py, &Value::Array(headers))
    }

    /// How each source fared in the last `list_sessions`:
    /// `[{"name", "sessions": int}]` or `[{"name", "error": str}]`.
    fn last_report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &report_json(&self.multi))
    }

    /// The title of a session, or `None`; `OSError` when it cannot be read.
    /// Releases the GIL.
    fn read_title(&self, py: Python<'_>, session_id: String) -> PyResult<Option<String>> {
        let multi = self.multi.clone();
        py.detach(move || block_on(async { multi.read_title(&session_id).await }))
            .map_err(|e| PyOSError::new_err(e.message().to_owned()))
    }

    /// The surface snapshot of a session as JSON `bytes`: DSH events for a
    /// DSH session, a pre-projected `conversation` for the others.
    /// `OSError` when it cannot be read. Releases the GIL.
    fn read_surface<'py>(&self, py: Python<'py>, session_id: String) -> PyResult<Bound<'py, PyBytes>> {
        let multi = self.multi.clone();
        let surface = py
            .detach(move || block_on(async { multi.read_surface(&session_id).await }))
            .map_err(|e| PyOSError::new_err(e.message().to_owned()))?;
        let bytes = surface_json_bytes(&surface);
        Ok(PyBytes::new(py, &bytes))
    }

    fn __repr__(&self) -> String {
        let names: Vec<String> = self.specs.iter().map(|s| format!("{}={}", s.kind.name(), s.root.display())).collect();
        format!("SessionSources([{}])", names.join(", "))
    }
}
