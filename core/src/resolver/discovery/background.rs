//! Indexing ahead of the searches, for a long-lived resolver (a server):
//! one run at a time indexes every listed session the index does not
//! hold under its current fingerprint ([`Resolver::index_sessions`]),
//! counting as it goes ([`Resolver::index_progress`]), and a search that
//! may answer before it ends ([`Resolver::search_available`]) answers from
//! the docs held so far, the other sessions searched by title, id and cwd
//! alone, and says how many of them were searched by their text.
//!
//! Why an incomplete answer is never taken for a complete one: it is
//! given only when more than [`INLINE_SESSIONS`] of the sessions searched
//! (with a fingerprint, not tried by a run under the same one) have no doc
//! held; then it counts the docs it searched and the sessions it looked at,
//! and says `complete: false`. Otherwise the search indexes what is missing
//! first, as [`Resolver::search`] does, and its answer is exact.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::listed::Fingerprints;
use crate::cancel::CancelToken;
use crate::host::{Fingerprint, IndexProgress, SearchAnswer, SearchOptions, SearchRequest, SessionHeader, Target};
use crate::index::Doc;
use crate::resolver::{cancellable, Resolver};

/// At most this many sessions without a doc held are indexed by a search
/// that may answer early before it answers (exactly, as [`Resolver::search`]); with more,
/// it answers from what the index holds and a run indexes the rest.
pub(crate) const INLINE_SESSIONS: usize = 32;

/// The state of a resolver's indexing runs.
pub(crate) struct Indexing {
    /// Whether a run is under way (one at a time); waited on by a second
    /// [`Resolver::index_sessions`].
    running: tokio::sync::watch::Sender<bool>,
    /// The run's sessions done (indexed, or tried when their doc could
    /// not be kept) and its sessions in all.
    done: AtomicU64,
    total: AtomicU64,
    /// The sessions a run tried whose doc could not be kept (a surface
    /// or title that could not be read), under the fingerprint tried: not
    /// counted as missing until it changes, so they do not keep every
    /// later answer incomplete.
    unkept: Mutex<HashMap<String, Fingerprint>>,
}

impl Default for Indexing {
    fn default() -> Self {
        Indexing {
            running: tokio::sync::watch::Sender::new(false),
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
            unkept: Mutex::default(),
        }
    }
}

/// A run under way: ends it (and wakes those waiting) when dropped, even
/// when the run is cancelled or panics.
pub(crate) struct Run(Arc<super::DiscoveryCache>);

impl Drop for Run {
    fn drop(&mut self) {
        self.0.indexing.running.send_replace(false);
    }
}

impl Indexing {
    /// Starts a run unless one is under way.
    fn try_begin(cache: &Arc<super::DiscoveryCache>) -> Option<Run> {
        let began = cache.indexing.running.send_if_modified(|running| !std::mem::replace(running, true));
        began.then(|| Run(Arc::clone(cache)))
    }

    fn progress(&self) -> IndexProgress {
        let total = self.total.load(Ordering::Relaxed);
        IndexProgress { indexed: self.done.load(Ordering::Relaxed).min(total), total }
    }

    /// Forgets the sessions tried for which `keep` fails (no longer listed).
    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.lock_unkept().retain(|id, _| keep(id));
    }

    fn lock_unkept(&self) -> std::sync::MutexGuard<'_, HashMap<String, Fingerprint>> {
        self.unkept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Resolver {
    /// Indexes every listed session the built-in index does not hold under
    /// its current [`Fingerprint`] (what a first [`search`](Self::search)
    /// would index before it answers), so that later searches answer from
    /// the index; what it indexes is kept as a search's is (and saved with
    /// [`save_discovery_cache`](Self::save_discovery_cache)). One run at a
    /// time: a call while another runs waits for it to end. Returns how many
    /// sessions the run covered (`indexed` = `total` when it ends: a session
    /// whose text could not be read counts as done, and is tried again once
    /// its fingerprint changes); [`index_progress`](Self::index_progress)
    /// reads the same count while it runs. A server starts it in the
    /// background when it starts (after loading its cache file), and
    /// [`search_available`](Self::search_available) starts it when needed.
    pub async fn index_sessions(&self, cancel: Option<&CancelToken>) -> crate::error::Result<IndexProgress> {
        let Some(run) = Indexing::try_begin(&self.discovery) else {
            cancellable(cancel, async {
                self.run_ended().await;
                Ok(())
            })
            .await?;
            return Ok(self.index_progress());
        };
        cancellable(cancel, self.run_indexing(run)).await
    }

    /// Returns once no indexing run is under way.
    pub(super) async fn run_ended(&self) {
        let mut ended = self.discovery.indexing.running.subscribe();
        // An error: the sender is gone with the resolver's caches.
        let _ = ended.wait_for(|running| !*running).await;
    }

    /// How far the run under way (or the last one) is: sessions done of
    /// the sessions listed when it began; `0 of 0` before any run.
    pub fn index_progress(&self) -> IndexProgress {
        self.discovery.indexing.progress()
    }

    /// Whether an indexing run is under way.
    pub fn indexing(&self) -> bool {
        *self.discovery.indexing.running.borrow()
    }

    /// Starts a run on the runtime unless one is under way.
    fn index_in_background(&self) {
        if let Some(run) = Indexing::try_begin(&self.discovery) {
            let resolver = self.clone();
            drop(tokio::spawn(async move { resolver.run_indexing(run).await }));
        }
    }

    async fn run_indexing(&self, run: Run) -> crate::error::Result<IndexProgress> {
        let indexing = &self.discovery.indexing;
        let listed = self.listed().await?;
        self.discovery.retain_listed(&listed);
        let every: Vec<usize> = (0..listed.sessions().len()).collect();
        let fps = listed.fingerprints_at(self, &every).await;
        let sessions = listed.at(&every);
        let missing = self.missing(&sessions, &fps);
        indexing.total.store(sessions.len() as u64, Ordering::Relaxed);
        indexing.done.store((sessions.len() - missing.len()) as u64, Ordering::Relaxed);
        let of = Fingerprints::Of(&fps, &missing);
        let docs =
            self.indexed(&missing.iter().map(|&i| sessions[i]).collect::<Vec<_>>(), &of, Some(&indexing.done)).await.0;
        // What could not be kept is not missing until it changes.
        let mut unkept = indexing.lock_unkept();
        for (doc, &i) in docs.iter().zip(&missing) {
            match fps.get(i) {
                Some(fp) if doc.fingerprint.is_none() => {
                    unkept.insert(sessions[i].id.clone(), fp.clone());
                }
                _ => {
                    unkept.remove(&sessions[i].id);
                }
            }
        }
        drop(unkept);
        drop(run);
        Ok(indexing.progress())
    }

    /// The positions among `sessions` (fingerprints `fps`) of those with a
    /// fingerprint whose doc the index does not hold under it, and that no
    /// run tried under it.
    fn missing(&self, sessions: &[&SessionHeader], fps: &Fingerprints<'_>) -> Vec<usize> {
        let held = self.discovery.docs.get_all(sessions.iter().enumerate().map(|(i, s)| (s.id.as_str(), fps.get(i))));
        let unkept = self.discovery.indexing.lock_unkept();
        held.iter()
            .enumerate()
            .filter(|(i, d)| {
                d.is_none()
                    && fps.get(*i).is_some_and(|fp| unkept.get(&sessions[*i].id).is_none_or(|tried| tried != fp))
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The docs of `sessions` (whose fingerprints are `fps`) the index
    /// holds, and for every other a doc without body under its cached
    /// title (searched by title, id and cwd); and how many were held.
    pub(super) fn held(&self, sessions: &[&SessionHeader], fps: &Fingerprints<'_>) -> (Vec<Arc<Doc>>, u64) {
        let held = self.discovery.docs.get_all(sessions.iter().enumerate().map(|(i, s)| (s.id.as_str(), fps.get(i))));
        let count = held.iter().filter(|d| d.is_some()).count() as u64;
        let docs = held
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                d.unwrap_or_else(|| {
                    let title = fps.get(i).and_then(|fp| self.discovery.title_under(&sessions[i].id, fp)).flatten();
                    Arc::new(Doc::build(None, title, Vec::new(), None))
                })
            })
            .collect();
        (docs, count)
    }

    /// [`search`](Self::search) for a long-lived front that must answer at
    /// once: while more than a few of the sessions searched are not indexed
    /// yet, it answers from the sessions the index holds (by their text)
    /// and the others by their cached title, id and cwd alone, marked
    /// incomplete with the counts ([`SearchAnswer`]), and starts an
    /// indexing run ([`index_sessions`](Self::index_sessions)) unless one
    /// is under way, so a later search sees more. Otherwise (and when the
    /// host answers searches itself) its answer is exactly `search`'s,
    /// marked complete. The one-shot fronts and the SDKs' `search` keep
    /// the exact answer.
    pub async fn search_available(
        &self,
        target: &Target,
        query: &str,
        options: &SearchOptions,
        cancel: Option<&CancelToken>,
    ) -> crate::error::Result<SearchAnswer> {
        let limit = self.limit_or_default(options.limit, "search")?;
        let request = SearchRequest { target: target.clone(), query: query.to_owned(), limit, scope: options.scope };
        cancellable(cancel, self.search_inner(request, true, cancel)).await
    }

    /// Whether a search that may answer early over `sessions` answers from
    /// what is held: more than [`INLINE_SESSIONS`] of them are missing
    /// ([`missing`](Self::missing)); an indexing run is then started.
    pub(super) fn answers_early(&self, sessions: &[&SessionHeader], fps: &Fingerprints<'_>) -> bool {
        let early = self.missing(sessions, fps).len() > INLINE_SESSIONS;
        if early {
            self.index_in_background();
        }
        early
    }
}
