//! An internal benchmark baseline (the Node boundary benchmark of BENCHMARKS.md, `bench/boundary.mjs`): the same
//! `prepare` as the resolver's, over an in-memory [`MemoryQuery`] holding the
//! given Buffers, entirely in Rust. Not part of the package's API: the
//! wrapper does not export it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use dsh_session_reference::wire::parse_js;
use dsh_session_reference::{block_on, Config, MemoryQuery, PrepareOptions, Resolver, SurfaceData, Target};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

use crate::resolver::config_from_js;
use crate::INVALID_ARGUMENT;

fn misuse(what: impl std::fmt::Display) -> Error<&'static str> {
    Error::new(INVALID_ARGUMENT, what.to_string())
}

/// @internal Benchmark baseline, not part of the API. Runs
/// `prepare(target, content, references)` `iterations` times (after one
/// unmeasured run) over an in-memory query whose surfaces are `snapshots`
/// (shared, not copied), blocking the calling thread, and returns each
/// run's wall time in nanoseconds. Arguments are JSON text as the native
/// resolver takes them.
#[napi(
    js_name = "__benchPrepareRust",
    ts_args_type = "snapshots: Record<string, Uint8Array>, target: string, content: string, references: string, \
                    iterations: number, config?: NativeConfig | null"
)]
pub fn bench_prepare_rust(
    snapshots: HashMap<String, Buffer>,
    target: String,
    content: String,
    references: String,
    iterations: u32,
    config: Option<Unknown<'_>>,
) -> Result<Vec<f64>, &'static str> {
    let config: Config = config_from_js(config).map_err(|e| misuse(e.reason))?.map_err(crate::to_napi_error)?;
    let target = Target::from_json(&parse_js(&target).map_err(misuse)?).map_err(misuse)?;
    let content = parse_js(&content).map_err(misuse)?;
    let Value::Array(references) = parse_js(&references).map_err(misuse)? else {
        return Err(misuse("references must be an array"));
    };
    let query = MemoryQuery::new();
    for (id, bytes) in snapshots {
        query.set_surface(id, SurfaceData::json(bytes));
    }
    let resolver = Resolver::new(Arc::new(query), config);
    let mut times = Vec::with_capacity(iterations as usize);
    for i in 0..=iterations {
        let started = Instant::now();
        let prepared = block_on(resolver.prepare(&target, &content, &references, &PrepareOptions::default(), None))
            .map_err(crate::to_napi_error)?;
        let elapsed = started.elapsed();
        std::hint::black_box(&prepared);
        drop(prepared);
        if i > 0 {
            times.push(elapsed.as_secs_f64() * 1e9);
        }
    }
    Ok(times)
}
