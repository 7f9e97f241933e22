//! Private benchmark helpers (`python/bench/`): the Rust side of a Python
//! measurement, run in the same process so that ratios are meaningful.

use std::sync::Arc;
use std::time::Instant;

use dsh_session_reference::{CandidateOptions, Config, MemoryQuery, PrepareOptions, Resolver, SurfaceData, Target};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use serde_json::json;

use crate::convert::sequence_arg;
use crate::errors::to_pyerr;
use crate::host::PyBytesData;
use crate::resolver::target_arg;
use dsh_session_reference::runtime;

/// Seconds taken by `iterations` calls of the core's `prepare` of
/// `references` over `snapshots` (`{id: JSON bytes}`, lent without a copy
/// to an in-memory `MemoryQuery`, as a Python host's `bytes` are), for the target `{"id":
/// "bench-target"}` and a one-block content, entirely in Rust on the
/// package's runtime with the GIL released: the baseline of a Python
/// `Resolver.prepare` of the same inputs.
#[pyfunction(name = "_bench_prepare_rust")]
#[pyo3(signature = (snapshots, references, iterations, max_reference_bytes=None))]
pub fn bench_prepare_rust(
    py: Python<'_>,
    snapshots: &Bound<'_, PyDict>,
    references: &Bound<'_, PyAny>,
    iterations: u32,
    max_reference_bytes: Option<u64>,
) -> PyResult<f64> {
    let query = MemoryQuery::new();
    for (id, data) in snapshots.iter() {
        let bytes = PyBytesData::new(data.cast::<PyBytes>()?);
        query.set_surface(id.extract::<String>()?, SurfaceData::json(bytes));
    }
    let config = Config::new(None, None, max_reference_bytes).map_err(|e| to_pyerr(py, &e))?;
    let resolver = Resolver::new(Arc::new(query), config);
    let references = sequence_arg(references, "references")?;
    let content = json!([{"type": "text", "text": "go"}]);
    let target = Target::new("bench-target", None);
    let outcome = py.detach(move || {
        runtime().block_on(async {
            let started = Instant::now();
            for _ in 0..iterations {
                let prepared =
                    resolver.prepare(&target, &content, &references, &PrepareOptions::default(), None).await?;
                std::hint::black_box(&prepared);
            }
            Ok::<_, dsh_session_reference::Error>(started.elapsed().as_secs_f64())
        })
    });
    outcome.map_err(|e| to_pyerr(py, &e))
}

/// Seconds taken by one `candidates(target, query)` (default limit, with
/// mentions) of `resolver`'s own core resolver, and how many candidates it
/// gave: the call entirely in Rust on the package's runtime
/// (`block_on`, as the core's discovery benchmark calls it) with the GIL
/// released, sharing the resolver's caches and source. The baseline of a
/// Python `Resolver.candidates` in the same process
/// (scripts/sdk_discovery_bench.py).
#[pyfunction(name = "_bench_candidates_rust")]
pub fn bench_candidates_rust(
    py: Python<'_>,
    resolver: PyRef<'_, crate::resolver::Resolver>,
    target: &Bound<'_, PyAny>,
    query: String,
) -> PyResult<(f64, usize)> {
    let target = target_arg(target)?;
    let core = resolver.base.clone();
    let outcome = py.detach(move || {
        let started = Instant::now();
        let list = runtime().block_on(core.candidates(&target, &query, &CandidateOptions::default(), None))?;
        Ok::<_, dsh_session_reference::Error>((started.elapsed().as_secs_f64(), list.len()))
    });
    outcome.map_err(|e| to_pyerr(py, &e))
}
