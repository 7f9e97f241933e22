//! The resolver: the service a host holds. It reads through the host's
//! [`SessionQuery`] and runs preparation (`prepare.rs`: references, reads,
//! retention and framing), discovery (`discovery/`: candidates and search)
//! and bounded reads (`read.rs`: one page of a session at a time).
//! Here: the type, its guards around host calls, cancellation, and the
//! blocking facade.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;

use crate::cancel::CancelToken;
use crate::config::Config;
use crate::error::{Error, HostError, Result};
use crate::host::{QueryFuture, SessionQuery};

mod deprecated;
mod discovery;
mod prepare;
mod read;
pub mod request;
mod session;

pub use discovery::{CandidateOptions, DiscoveryCachePart};
pub use prepare::PrepareOptions;
pub use prepare::{normalize_references, Reference};
pub use read::{Page, ReadOptions, BYTES_PER_TOKEN, DEFAULT_READ_BYTES};
pub use session::{SessionConversation, SessionMessage};

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
/// Each operation takes one options struct ([`PrepareOptions`],
/// [`CandidateOptions`], [`SearchOptions`](crate::host::SearchOptions),
/// [`ReadOptions`]).
/// The `async` methods need a tokio runtime with the time and blocking
/// pools (any multi-threaded runtime, or [`crate::runtime()`]). A caller
/// that blocks runs any of them on the library's own runtime with the one
/// blocking facade, [`block_on`](crate::runtime::block_on), which must not
/// be called from inside a tokio runtime:
///
/// ```
/// # use std::sync::Arc;
/// # use dsh_session_reference::{block_on, CandidateOptions, Config, MemoryQuery, Resolver, Target};
/// let resolver = Resolver::new(Arc::new(MemoryQuery::new()), Config::default());
/// let target = Target::new("new-chat", None);
/// let list = block_on(resolver.candidates(&target, "", &CandidateOptions::default(), None)).unwrap();
/// assert!(list.is_empty());
/// ```
#[derive(Clone)]
pub struct Resolver {
    pub(crate) query: Arc<dyn SessionQuery>,
    pub(crate) config: Config,
    /// The host's own `fullSnapshot` notices (the later `dshCompat` profiles).
    pub(crate) notice: Option<crate::prompt::FullSnapshotNotice>,
    /// Titles and indexed texts kept between discovery queries (shared by clones).
    pub(crate) discovery: Arc<discovery::DiscoveryCache>,
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

    /// This resolver's configuration and discovery caches over another
    /// session query that serves the same sessions (a front that wraps one
    /// host object anew for each call, e.g. to bind it to the caller's event
    /// loop, keeps one cache this way).
    pub fn with_session_query(&self, query: Arc<dyn SessionQuery>) -> Resolver {
        Resolver { query, config: self.config, notice: self.notice.clone(), discovery: Arc::clone(&self.discovery) }
    }

    /// This resolver with the host's own `fullSnapshot` notices for the
    /// omissions section of the later `dshCompat` profiles.
    pub fn with_full_snapshot_notice(mut self, notice: crate::prompt::FullSnapshotNotice) -> Self {
        self.notice = Some(notice);
        self
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
}
