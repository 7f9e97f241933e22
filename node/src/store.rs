//! The embedded read-only DSH session store (docs/contract.md §10) as a native session
//! query: a resolver built over it never calls into JavaScript, and its
//! reads run on the library runtime's blocking pool.

use std::sync::Arc;

use dsh_session_reference::sources::dsh::StoredSession;
use dsh_session_reference::wire::stringify;
use dsh_session_reference::{Config, DshStore, ErrorCode, SessionQuery, SurfaceData};
use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;
use serde_json::Value;

use crate::resolver::{config_from_js, spawn, NativeFailure, NativeResolver};
use crate::INVALID_ARGUMENT;

/// The Node-style code of an I/O error kind (`ENOENT`, `EACCES`, …).
fn io_code(err: &std::io::Error) -> &'static str {
    use std::io::ErrorKind::*;
    match err.kind() {
        NotFound => "ENOENT",
        PermissionDenied => "EACCES",
        InvalidInput | NotADirectory => "ENOTDIR",
        _ => "EIO",
    }
}

fn read_failed(message: impl Into<String>) -> NativeFailure {
    NativeFailure { code: ErrorCode::ReadFailed.as_str().to_owned(), message: message.into() }
}

/// A DSH sessions root (`<root>/<project>/<session>/session.jsonl[.zstd]`,
/// or `session.v<N>.jsonl[.zstd]` of later DSH releases: each session's
/// newest generation is read), read-only. Usable natively as a resolver's
/// query, and from JavaScript
/// through the same three operations as a host query.
#[napi]
pub struct DshSessionStore {
    store: Arc<DshStore>,
}

#[napi]
impl DshSessionStore {
    /// Opens a sessions root; throws with a Node-style `code` (`ENOENT`,
    /// `ENOTDIR`, `EACCES`, `EIO`) when it is not a readable directory.
    #[napi(factory)]
    pub fn open(root: String) -> Result<Self, &'static str> {
        DshStore::open(&root)
            // Kept for the life of the server (README): watching from the
            // first listing, the reads of a first query find each log in it.
            .map(|store| DshSessionStore { store: Arc::new(store.watching_from_first_listing()) })
            .map_err(|e| Error::new(io_code(&e), e.to_string()))
    }

    /// The root directory.
    #[napi(getter)]
    pub fn root(&self) -> String {
        self.store.root().to_string_lossy().into_owned()
    }

    /// The listed sessions (newest first): JSON text of their header lines
    /// without `type` (`[{version, id, createdAt, cwd?, ...}]`), as DSH's
    /// store lists them. Logs that cannot be listed are skipped.
    #[napi(ts_return_type = "Promise<string | NativeFailure>")]
    pub fn list_sessions<'env>(&self, env: &'env Env) -> Result<Object<'env>> {
        let store = Arc::clone(&self.store);
        spawn(env, async move {
            let listing = tokio::task::spawn_blocking(move || store.list())
                .await
                .map_err(|_| read_failed("listing the sessions root panicked"))?
                .map_err(|e| read_failed(e.to_string()))?;
            Ok(stringify(&Value::Array(listing.sessions.iter().map(StoredSession::to_json).collect())))
        })
    }

    /// The latest title of a session: JSON text of a string or `null`.
    #[napi(ts_return_type = "Promise<string | NativeFailure>")]
    pub fn read_title<'env>(&self, env: &'env Env, session_id: String) -> Result<Object<'env>> {
        let store = Arc::clone(&self.store);
        spawn(env, async move {
            let title = SessionQuery::read_title(&*store, &session_id).await.map_err(|e| read_failed(e.message()))?;
            Ok(stringify(&title.map_or(Value::Null, Value::from)))
        })
    }

    /// The surface snapshot of a session, as JSON text.
    #[napi(ts_return_type = "Promise<string | NativeFailure>")]
    pub fn read_surface<'env>(&self, env: &'env Env, session_id: String) -> Result<Object<'env>> {
        let store = Arc::clone(&self.store);
        spawn(env, async move {
            match SessionQuery::read_surface(&*store, &session_id).await.map_err(|e| read_failed(e.message()))? {
                SurfaceData::Json(bytes) => {
                    String::from_utf8((*bytes).as_ref().to_vec()).map_err(|_| read_failed("the snapshot is not UTF-8"))
                }
                SurfaceData::Value(value) => Ok(stringify(&value)),
                SurfaceData::Conversation(c) => Ok(stringify(&c.to_snapshot_json())),
            }
        })
    }
}

#[napi]
impl NativeResolver {
    /// A resolver reading a DSH sessions root natively. Throws a failure
    /// with `SESSION_REFERENCE_INVALID_CONFIG` for an invalid `config`.
    #[napi(factory, ts_args_type = "store: DshSessionStore, config?: NativeConfig | null")]
    pub fn over_store(store: &DshSessionStore, config: Option<Unknown<'_>>) -> Result<Self, &'static str> {
        let config: Config = config_from_js(config)
            .map_err(|e| Error::new(INVALID_ARGUMENT, e.reason))?
            .map_err(crate::to_napi_error)?;
        let query: Arc<dyn SessionQuery> = Arc::clone(&store.store) as Arc<dyn SessionQuery>;
        Ok(NativeResolver::over(query, config))
    }
}
