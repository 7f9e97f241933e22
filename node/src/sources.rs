//! The on-disk sessions of DSH and other agents (every kind of
//! docs/sources.md) as one native session query: a resolver built over it never calls into JavaScript.

use std::sync::Arc;

use dsh_session_reference::sources::{open_sources, report_json, specs_from_json, surface_json_bytes, MultiQuery};
use dsh_session_reference::wire::{parse_js, stringify};
use dsh_session_reference::{Config, ErrorCode, SessionQuery};
use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;
use serde_json::{json, Value};

use crate::resolver::{config_from_js, spawn, NativeFailure, NativeResolver};
use crate::INVALID_ARGUMENT;

fn read_failed(message: impl Into<String>) -> NativeFailure {
    NativeFailure { code: ErrorCode::ReadFailed.as_str().to_owned(), message: message.into() }
}

/// DSH sessions and other agents' sessions on disk, listed together and
/// read by id (`<kind>:<id>` such as `claude-code:<uuid>`, DSH ids
/// unchanged).
#[napi]
pub struct SessionSources {
    multi: Arc<MultiQuery>,
    sources: String,
}

#[napi]
impl SessionSources {
    /// Opens the sources of `sources_json`: `null` (every default location
    /// that exists) or `[{kind, root?}]`. Throws with code
    /// `SESSION_REFERENCE_INVALID_CONFIG` for a malformed list.
    #[napi(factory)]
    pub fn open(sources_json: Option<String>) -> Result<Self, &'static str> {
        let invalid = |m: String| Error::new(INVALID_ARGUMENT, m);
        let value = match sources_json {
            None => Value::Null,
            Some(text) => parse_js(&text).map_err(invalid)?,
        };
        let config_error =
            |m: String| crate::to_napi_error(dsh_session_reference::Error::new(ErrorCode::InvalidConfig, m));
        let specs = specs_from_json(&value).map_err(config_error)?;
        let multi = open_sources(&specs).map_err(config_error)?;
        let list: Vec<Value> =
            specs.iter().map(|s| json!({"kind": s.kind.name(), "root": s.root.to_string_lossy()})).collect();
        Ok(SessionSources { multi: Arc::new(multi), sources: stringify(&Value::Array(list)) })
    }

    /// JSON text of the sources opened, `[{kind, root}]`.
    #[napi(getter)]
    pub fn sources(&self) -> String {
        self.sources.clone()
    }

    /// JSON text of how each source fared in the last listing:
    /// `[{name, sessions}]` or `[{name, error}]`.
    #[napi]
    pub fn last_report(&self) -> String {
        stringify(&report_json(&self.multi))
    }

    /// JSON text of every source's session headers, newest first.
    #[napi(ts_return_type = "Promise<string | NativeFailure>")]
    pub fn list_sessions<'env>(&self, env: &'env Env) -> Result<Object<'env>> {
        let multi = Arc::clone(&self.multi);
        spawn(env, async move {
            let list = multi.list_sessions().await.map_err(|e| read_failed(e.message()))?;
            Ok(stringify(&Value::Array(list.iter().map(|h| h.to_json()).collect())))
        })
    }

    /// The title of a session: JSON text of a string or `null`.
    #[napi(ts_return_type = "Promise<string | NativeFailure>")]
    pub fn read_title<'env>(&self, env: &'env Env, session_id: String) -> Result<Object<'env>> {
        let multi = Arc::clone(&self.multi);
        spawn(env, async move {
            let title = multi.read_title(&session_id).await.map_err(|e| read_failed(e.message()))?;
            Ok(stringify(&title.map_or(Value::Null, Value::from)))
        })
    }

    /// The surface snapshot of a session, as JSON text.
    #[napi(ts_return_type = "Promise<string | NativeFailure>")]
    pub fn read_surface<'env>(&self, env: &'env Env, session_id: String) -> Result<Object<'env>> {
        let multi = Arc::clone(&self.multi);
        spawn(env, async move {
            let surface = multi.read_surface(&session_id).await.map_err(|e| read_failed(e.message()))?;
            String::from_utf8(surface_json_bytes(&surface)).map_err(|_| read_failed("the snapshot is not UTF-8"))
        })
    }
}

#[napi]
impl NativeResolver {
    /// A resolver reading several agents' sessions natively. Throws a
    /// failure with `SESSION_REFERENCE_INVALID_CONFIG` for an invalid `config`.
    #[napi(factory, ts_args_type = "sources: SessionSources, config?: NativeConfig | null")]
    pub fn over_sources(sources: &SessionSources, config: Option<Unknown<'_>>) -> Result<Self, &'static str> {
        let config: Config = config_from_js(config)
            .map_err(|e| Error::new(INVALID_ARGUMENT, e.reason))?
            .map_err(crate::to_napi_error)?;
        let query: Arc<dyn SessionQuery> = Arc::clone(&sources.multi) as Arc<dyn SessionQuery>;
        Ok(NativeResolver::over(query, config))
    }
}
