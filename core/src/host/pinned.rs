//! A session query whose next listing is one made beforehand
//! ([`PinnedListing`]): a one-shot command lists its sources once.

use std::sync::{Arc, Mutex};

use super::{
    Fingerprint, QueryFuture, SearchRequest, SearchResult, SessionHeader, SessionQuery, SharedListing, SurfaceAnswer,
    SurfaceData, SurfaceRead,
};
use crate::error::HostError;

/// Wraps a session query so that the listing a caller makes with
/// [`list_now`](Self::list_now) (to find its target's cwd, say) is the one
/// the next discovery query uses, once, with the fingerprints it saw: a
/// command that began before both lists its sources once. Every read, and
/// every later listing, goes to the wrapped query.
///
/// A title or text read after that listing is cached under a fingerprint
/// no newer than its content, so a later run reads it again if it changed.
///
/// It also keeps every title or text read that failed, with why
/// ([`failed_reads`](Self::failed_reads)): discovery lists such a session
/// by its id, and search cannot look inside it, so a command says so
/// rather than answer as if nothing were wrong.
pub struct PinnedListing {
    query: Arc<dyn SessionQuery>,
    pinned: Mutex<Option<SharedListing>>,
    failed: Mutex<Vec<(String, String)>>,
}

impl PinnedListing {
    /// `query`, with no listing pinned yet.
    pub fn new(query: Arc<dyn SessionQuery>) -> Self {
        PinnedListing { query, pinned: Mutex::new(None), failed: Mutex::new(Vec::new()) }
    }

    /// Lists the sessions now, with their fingerprints; the next listing
    /// asked of this query is this one. A query without a shared listing of
    /// its own is listed and fingerprinted (`None` for every session when
    /// it has no fingerprints).
    pub async fn list_now(&self) -> Result<SharedListing, HostError> {
        let listed = match self.query.shared_listing().await? {
            Some(listed) => listed,
            None => {
                let sessions = self.query.list_sessions().await?;
                let ids: Vec<String> = sessions.iter().map(|s| s.id.clone()).collect();
                let fingerprints = match self.query.fingerprints(&ids).await? {
                    Some(fps) if fps.len() == ids.len() => fps,
                    _ => super::no_fingerprints(ids.len()),
                };
                SharedListing::new(sessions.into(), fingerprints.into())
                    .ok_or_else(|| HostError::new("the listing and its fingerprints differ in length"))?
            }
        };
        *self.pinned.lock().unwrap_or_else(|e| e.into_inner()) = Some(listed.clone());
        Ok(listed)
    }

    /// The sessions whose title or text could not be read through this
    /// query so far, each once (the first failure's message), in the order
    /// they failed.
    pub fn failed_reads(&self) -> Vec<(String, String)> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Starts afresh, for a query that lives across several commands (a
    /// daemon's): no listing pinned (one a command made and did not use
    /// would be stale for the next), and no failed read kept (each command
    /// reports the failures of its own reads).
    pub fn reset(&self) {
        self.pinned.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.failed.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// `read`, a read of `session_id`, its failure kept.
    fn recorded<'a, T: 'a>(&'a self, session_id: &'a str, read: QueryFuture<'a, T>) -> QueryFuture<'a, T> {
        Box::pin(async move {
            let answer = read.await;
            if let Err(e) = &answer {
                self.record(session_id, e);
            }
            answer
        })
    }

    /// Keeps `error`, the failure of a read of `session_id`.
    fn record(&self, session_id: &str, error: &HostError) {
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if !failed.iter().any(|(id, _)| id == session_id) {
            failed.push((session_id.to_owned(), error.message().to_owned()));
        }
    }

    /// The pinned listing, once.
    fn take(&self) -> Option<SharedListing> {
        self.pinned.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl SessionQuery for PinnedListing {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        match self.take() {
            Some(listed) => Box::pin(async move { Ok(listed.sessions().to_vec()) }),
            None => self.query.list_sessions(),
        }
    }
    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        match self.take() {
            Some(listed) => Box::pin(async move { Ok(Some(listed)) }),
            None => self.query.shared_listing(),
        }
    }
    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        self.recorded(session_id, self.query.read_title(session_id))
    }
    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        self.recorded(session_id, self.query.read_surface(session_id))
    }
    fn read_surface_as<'a>(&'a self, session_id: &'a str, read: SurfaceRead) -> QueryFuture<'a, SurfaceAnswer> {
        self.recorded(session_id, self.query.read_surface_as(session_id, read))
    }
    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        self.query.fingerprints(session_ids)
    }
    fn search<'a>(&'a self, request: &'a SearchRequest) -> QueryFuture<'a, Option<Vec<SearchResult>>> {
        self.query.search(request)
    }
}
