//! The resolver: the service a host holds. It reads through the host's
//! [`SessionQuery`] and runs preparation (`prepare.rs`: references, reads,
//! retention and framing) and discovery (`crate::discovery`: candidates).
//! Here: the type, its guards around host calls, cancellation, and the
//! blocking facade.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;

use crate::cancel::CancelToken;
use crate::config::Config;
use crate::context::{Prepared, PreparedMessage};
use crate::discovery::Candidate;
use crate::error::{Error, HostError, Result};
use crate::host::{QueryFuture, SessionQuery, Target};

mod prepare;

pub use prepare::{normalize_references, Reference};

/// Calls a host method and awaits its future, turning a panic in either the
/// call or the future into a host error, so that a misbehaving host can
/// never unwind through the library.
pub(crate) async fn guarded<'a, T>(call: impl FnOnce() -> QueryFuture<'a, T>) -> std::result::Result<T, HostError> {
    let panicked = || HostError::new("the host's session query panicked");
    let fut = std::panic::catch_unwind(AssertUnwindSafe(call)).map_err(|_| panicked())?;
    AssertUnwindSafe(fut).catch_unwind().await.unwrap_or_else(|_| Err(panicked()))
}

/// Runs `work` unless `cancel` fires first; cancellation also wins over an
/// error that arrives after it.
pub(crate) async fn cancellable<T>(cancel: Option<&CancelToken>, work: impl Future<Output = Result<T>>) -> Result<T> {
    let Some(cancel) = cancel else { return work.await };
    if cancel.is_cancelled() {
        return Err(Error::cancelled());
    }
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Error::cancelled()),
        r = work => match r {
            Err(_) if cancel.is_cancelled() => Err(Error::cancelled()),
            other => other,
        },
    }
}

/// The session-reference service: reads through a host's [`SessionQuery`]
/// and prepares bounded, tag-safe snapshots. Cheap to clone and shareable
/// between threads; every method may run concurrently.
///
/// The `async` methods need a tokio runtime with the time and blocking
/// pools (any multi-threaded runtime, or [`crate::runtime()`]); the
/// `*_blocking` twins run on the library's own runtime and must not be called
/// from inside a tokio runtime.
#[derive(Clone)]
pub struct Resolver {
    pub(crate) query: Arc<dyn SessionQuery>,
    pub(crate) config: Config,
    /// The host's own `fullSnapshot` notices ([`crate::compat`]).
    pub(crate) notice: Option<crate::compat::FullSnapshotNotice>,
    /// Titles and indexed texts kept between discovery queries (shared by clones).
    pub(crate) discovery: Arc<crate::discovery::DiscoveryCache>,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Resolver {
    /// A resolver over `query` with a validated configuration.
    pub fn new(query: Arc<dyn SessionQuery>, config: Config) -> Self {
        Resolver { query, config, notice: None, discovery: Arc::default() }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The session query this resolver reads through.
    pub fn session_query(&self) -> &Arc<dyn SessionQuery> {
        &self.query
    }

    /// The session query this resolver reads through.
    #[deprecated(since = "0.2.0", note = "renamed to `session_query`: \"query\" is the search text elsewhere")]
    pub fn query(&self) -> &Arc<dyn SessionQuery> {
        &self.query
    }

    /// [`prepare`](Self::prepare) on the library's runtime, blocking the caller.
    pub fn prepare_blocking(
        &self,
        target: &Target,
        content: &Value,
        references: &[Value],
        cancel: Option<&CancelToken>,
    ) -> Result<Prepared> {
        crate::runtime::block_on(self.prepare(target, content, references, cancel))
    }

    /// [`prepare_messages`](Self::prepare_messages) on the library's runtime, blocking the caller.
    pub fn prepare_messages_blocking(
        &self,
        target: &Target,
        messages: &[Value],
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<PreparedMessage>> {
        crate::runtime::block_on(self.prepare_messages(target, messages, cancel))
    }

    /// [`list_candidates`](Self::list_candidates) on the library's runtime, blocking the caller.
    pub fn list_candidates_blocking(
        &self,
        target: &Target,
        filter: &str,
        limit: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Candidate>> {
        crate::runtime::block_on(self.list_candidates(target, filter, limit, cancel))
    }

    /// [`candidates`](Self::candidates) on the library's runtime, blocking the caller.
    pub fn candidates_blocking(
        &self,
        target: &Target,
        filter: &str,
        limit: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Candidate>> {
        crate::runtime::block_on(self.candidates(target, filter, limit, cancel))
    }
}
