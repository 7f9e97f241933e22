//! Full-text search (`Resolver::search`): over the projected text of every
//! session (exactly what a reference would carry: user and assistant text
//! and checkpoints, never tool output or reasoning), plus titles, ids and
//! cwds. One result per session, ranked, with a snippet around its best
//! hit. The engine is the built-in index (`crate::index`: the query, the
//! ranking, the verification and the snippets), whose docs are cached per
//! session under its [`Fingerprint`], unless the host's session query
//! answers the search itself
//! ([`SessionQuery::search`](crate::SessionQuery::search)). What is here
//! needs the host: the listing, the fingerprints, reading the sessions not
//! indexed yet, retrying the docs that could not be read, and turning hits
//! into results.

use std::borrow::Cow;
use std::ops::ControlFlow;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use futures::stream::{self, StreamExt};

use super::listed::{Fingerprints, Listed};
use super::searched::{Picked, SearchMemo};
use crate::cancel::CancelToken;
use crate::error::{Error, ErrorCode, Result};
use crate::host::{
    with_projection, Fingerprint, IndexProgress, SearchAnswer, SearchIndexStats, SearchOptions, SearchRequest,
    SearchResult, SearchScope, SessionHeader, StreamedItems, SurfaceAnswer, SurfaceData, SurfaceItems, SurfaceRead,
    Target,
};
use crate::index::{Doc, DocCache, Encoder, IndexedItem, Query, SearchSet};
use crate::projection::Item;
use crate::resolver::{cancellable, guarded, Resolver};

/// A turn to score a search on the blocking pool: at most one search per
/// core scores at once, the others wait for a turn in the order they asked
/// (a fair semaphore). Searches that outnumber the cores (a server's
/// concurrent requests) would otherwise share them by time slices, each
/// taking as long as all of them together; in turns, each waits for the
/// ones before it and then runs at a core's speed, so the slowest answers
/// come sooner and the total work is the same. `None` never happens (the
/// semaphore is never closed).
async fn scoring_turn() -> Option<tokio::sync::SemaphorePermit<'static>> {
    static TURNS: OnceLock<tokio::sync::Semaphore> = OnceLock::new();
    TURNS.get_or_init(|| tokio::sync::Semaphore::new(crate::runtime::cores())).acquire().await.ok()
}

/// `text` with its credentials redacted (`redactSecrets`), unchanged
/// (and not copied) when it holds none.
fn redacted(text: Cow<'_, str>) -> Cow<'_, str> {
    match crate::harden::secrets::redact(&text) {
        (_, 0) => text,
        (clean, _) => Cow::Owned(clean.into_owned()),
    }
}

/// The text of a projected item as the index is given it: redacted with
/// `redact` (`redactSecrets`).
fn indexed_text<'a>(item: &Item<'a>, redact: bool) -> Cow<'a, str> {
    let text = item.text.decode().unwrap_or_default();
    if redact {
        redacted(text)
    } else {
        text
    }
}

/// The doc of a session read whole: its surface projected, each text as
/// [`indexed_text`] gives it; one that does not project gives a doc
/// without body (searched by title, id and cwd), not kept.
fn whole_doc(
    data: &SurfaceData,
    fp: Option<Fingerprint>,
    title: Option<String>,
    encoder: Option<&Encoder>,
    redact: bool,
) -> Doc {
    with_projection(data, |p| {
        let items = p.items.iter().map(|i| IndexedItem { text: indexed_text(i, redact) }).collect();
        match &fp {
            Some(_) => Doc::build(fp.clone(), title.clone(), items, encoder),
            // Never kept: searched by this query alone.
            None => Doc::for_one_query(title.clone(), items),
        }
    })
    .unwrap_or_else(|_| Doc::build(None, title, Vec::new(), None))
}

/// The doc of a session whose items a source streams
/// ([`SurfaceItems::Streamed`]), built as from its whole surface (each
/// text as [`indexed_text`] gives it) without holding its texts
/// ([`Doc::build_streamed`]); `None` when the source could not give its
/// items as it found them.
fn streamed_doc(
    mut items: Box<dyn StreamedItems>,
    fp: Option<Fingerprint>,
    title: Option<String>,
    encoder: Option<&Encoder>,
    redact: bool,
) -> Option<Doc> {
    Doc::build_streamed(fp, title, encoder, |f| {
        let flow = items.each_item(&mut |item| match f(&indexed_text(item, redact)) {
            Some(()) => ControlFlow::Continue(()),
            None => ControlFlow::Break(()),
        });
        matches!(flow, Ok(ControlFlow::Continue(()))).then_some(())
    })
}

#[cfg(test)]
mod streamed_tests;
#[cfg(test)]
mod turn_tests;

/// How many surfaces are read and indexed at once.
const INDEX_CONCURRENCY: usize = 8;

impl Resolver {
    /// Full-text search: sessions other than the target whose projected
    /// text (user and assistant messages and checkpoints, never tool output
    /// or reasoning), latest title, id or cwd contain the query, one result
    /// per session with a snippet around its best hit.
    ///
    /// Matching is case-insensitive (Unicode default case mapping) on
    /// substrings, so CJK text and fragments of identifiers (`1137` in
    /// `PR1137`) are found. The query's whitespace-separated words must all
    /// occur; ranking puts the whole query (whitespace runs as one space) in
    /// the title first, then every word in the title, the whole query in a
    /// message, the id or the cwd, every word in one message, then sessions
    /// holding the words apart, the more relevant first (how often the
    /// messages hold each word, for their length: docs/discovery.md); among
    /// equals, sessions in the target's cwd, then without a cwd, then newer
    /// `createdAt`, then listing order. A blank query finds nothing.
    ///
    /// When the host's session query implements
    /// [`search`](crate::SessionQuery::search), its answer is used (the
    /// target dropped, cut at the limit) and the built-in index is not
    /// touched. Otherwise each session's text is indexed once per
    /// [`Fingerprint`] and kept by the resolver; a
    /// session without one is read for every search.
    pub async fn search(
        &self,
        target: &Target,
        query: &str,
        options: &SearchOptions,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<SearchResult>> {
        let limit = self.limit_or_default(options.limit, "search")?;
        let request = SearchRequest { target: target.clone(), query: query.to_owned(), limit, scope: options.scope };
        cancellable(cancel, self.search_inner(request, false, cancel)).await.map(|answer| answer.results)
    }

    /// What the built-in index holds now.
    pub fn search_index_stats(&self) -> SearchIndexStats {
        let (sessions, text_bytes, index_bytes, filter_bytes) = self.discovery.docs.stats();
        SearchIndexStats { sessions, text_bytes, index_bytes, filter_bytes, titles: self.discovery.title_count() }
    }

    /// Forgets every cached title and indexed text (the next query reads
    /// every session again). Never needed for correctness.
    pub fn clear_discovery_cache(&self) {
        self.discovery.clear();
    }

    /// The search's answer; with `early`, one that may answer from the
    /// docs held ([`answers_early`](Self::answers_early)).
    pub(super) async fn search_inner(
        &self,
        request: SearchRequest,
        early: bool,
        cancel: Option<&CancelToken>,
    ) -> Result<SearchAnswer> {
        let limit = usize::try_from(request.limit).unwrap_or(usize::MAX);
        let whole = |results| SearchAnswer { results, progress: IndexProgress::default() };
        match guarded(|| self.query.search(&request)).await {
            Ok(Some(results)) => {
                let mut results: Vec<SearchResult> =
                    results.into_iter().filter(|r| r.candidate.session_id != request.target.id).collect();
                results.truncate(limit);
                return Ok(whole(results));
            }
            Ok(None) => {}
            Err(e) => {
                return Err(Error::new(ErrorCode::ReadFailed, format!("the host's search failed: {}", e.message())))
            }
        }
        let Some(query) = Query::parse(&request.query) else { return Ok(whole(Vec::new())) };
        if !early {
            // An exact answer waits for the indexing run under way rather
            // than index the same sessions beside it.
            self.run_ended().await;
        }
        let listed = self.listed().await?;
        self.discovery.retain_listed(&listed);
        let target = &request.target;
        let scope = request.scope;
        // The same sessions as the last search picked, when it was over
        // the same shared listing for the same target and scope.
        let memo = SearchMemo::picked(&self.discovery.search_memo(), &listed, target, scope);
        let picked = memo.unwrap_or_else(|| {
            let at = listed.positions(|s| {
                s.id != target.id
                    && match scope {
                        SearchScope::All => true,
                        SearchScope::SameCwd => target.cwd.is_some() && s.cwd == target.cwd,
                    }
            });
            Picked { all: listed.shared_sessions(), at: at.into() }
        });
        let fps = listed.fingerprints_at(self, &picked.at).await;
        let early = early && self.answers_early(&picked.refs(), &fps);
        let (results, indexed) =
            self.scored(query, (&listed, scope), &picked, &fps, target, limit, early, cancel).await?;
        let total = picked.at.len() as u64;
        Ok(SearchAnswer { results, progress: IndexProgress { indexed: if early { indexed } else { total }, total } })
    }

    /// The results among the picked sessions (whose fingerprints are
    /// `fps`): their [`SearchSet`] indexed (or the set the last search made
    /// of the same sessions, while the index has not changed), then
    /// searched on the blocking pool, each hit made a result. A set all of whose docs the index
    /// kept is remembered for the next search over the same shared
    /// listing (`listed`, with the search's scope). When some docs loaded from a cache file
    /// could not read their stored filter or text (gone, damaged, not what
    /// it was recorded as), those docs are dropped, their sessions indexed again
    /// from their source and the search run again, so they are never
    /// missed; each round leaves fewer docs read from a file (docs built
    /// here are never unreadable), so it ends. With `early`, nothing is
    /// indexed: the docs held are searched, the other sessions by their
    /// cached title, id and cwd ([`held`](Self::held)), and nothing is
    /// remembered; the count returned is of the docs held then (all of
    /// them otherwise).
    #[allow(clippy::too_many_arguments)]
    async fn scored(
        &self,
        mut query: Query,
        (listed, scope): (&Listed, SearchScope),
        picked: &Picked,
        fps: &Fingerprints<'_>,
        target: &Target,
        limit: usize,
        early: bool,
        cancel: Option<&CancelToken>,
    ) -> Result<(Vec<SearchResult>, u64)> {
        let mut held = picked.at.len() as u64;
        loop {
            // Read before the docs are looked up: a change meanwhile makes
            // the set remembered here stale at once, never wrongly current.
            let generation = self.discovery.docs.generation();
            let memo = SearchMemo::set(&self.discovery.search_memo(), picked, generation);
            let set = match memo {
                Some(set) if !early => set,
                _ if early => {
                    let (docs, count) = self.held(&picked.refs(), fps);
                    held = count;
                    Arc::new(SearchSet::new(picked.headers(), docs))
                }
                _ => {
                    let sessions = picked.refs();
                    let (docs, built) = self.indexed(&sessions, fps, None).await;
                    let set = Arc::new(SearchSet::new(picked.headers(), docs));
                    let kept = (!built).then(|| (generation, Arc::clone(&set)));
                    if let Some(memo) = SearchMemo::new(listed, target, scope, picked, kept) {
                        *self.discovery.search_memo() = Some(memo);
                    }
                    set
                }
            };
            // A word no session can hold (the vocabularies rule it out of
            // every body, and no id, cwd or title holds it): nothing to
            // score, nothing handed to the blocking pool.
            if set.rules_out(&query) {
                return Ok((Vec::new(), held));
            }
            let (p, s, t, token) = (picked.clone(), Arc::clone(&set), target.clone(), cancel.cloned());
            let keep = self.discovery.docs.keeps_filters();
            let turn = scoring_turn().await;
            let work = tokio::task::spawn_blocking(move || {
                let scored = s.search(&query, p.headers(), &t, limit, keep, token.as_ref());
                (query, scored)
            });
            let (back, scored) = work.await.map_err(|_| Error::new(ErrorCode::ReadFailed, "searching panicked"))?;
            drop(turn);
            let scored = scored?;
            self.discovery.count_search_work(scored.work);
            if scored.unreadable.is_empty() {
                let sessions = picked.headers();
                let results = scored
                    .hits
                    .into_iter()
                    .map(|h| {
                        let (s, doc) = (sessions.get(h.at), &set.docs[h.at]);
                        let candidate = super::candidate_from_header(s, doc.title.clone(), &self.config, target);
                        SearchResult {
                            candidate: candidate.with_mention(),
                            snippet: h.snippet,
                            field: h.field,
                            message_index: h.message_index,
                        }
                    })
                    .collect();
                return Ok((results, held));
            }
            query = back;
            self.evict_unreadable(&picked.refs(), &set.docs, &scored.unreadable);
        }
    }

    /// Drops from the index the docs of `sessions` at `unreadable` (still
    /// held, not rebuilt since), so the next [`indexed`](Self::indexed)
    /// builds them again from their source.
    fn evict_unreadable(&self, sessions: &[&SessionHeader], docs: &[Arc<Doc>], unreadable: &[usize]) {
        for &i in unreadable {
            if self.discovery.docs.evict(&sessions[i].id, &docs[i]) {
                self.discovery.mark_index_changed();
            }
        }
    }

    /// The doc of every session (same order), whose fingerprints are `fps`:
    /// cached under an unchanged fingerprint, else built from its title and surface. A surface that
    /// cannot be read gives a doc without body (searched by title, id and
    /// cwd) that is not kept. And whether any doc was built. Each doc
    /// built adds one to `progress`, when given.
    pub(super) async fn indexed(
        &self,
        sessions: &[&SessionHeader],
        fps: &Fingerprints<'_>,
        progress: Option<&AtomicU64>,
    ) -> (Vec<Arc<Doc>>, bool) {
        let mut docs =
            self.discovery.docs.get_all(sessions.iter().enumerate().map(|(i, s)| (s.id.as_str(), fps.get(i))));
        let missing: Vec<usize> = docs.iter().enumerate().filter(|(_, d)| d.is_none()).map(|(i, _)| i).collect();
        // With `redactSecrets`, credentials are redacted before they are
        // indexed: a search can neither find nor show them (the titles
        // come redacted, as the title cache keeps them).
        let redact = self.config.hardening().redact_secrets;
        let jobs: Vec<_> = missing
            .iter()
            .map(|&i| {
                let session = sessions[i];
                let id = session.id.clone();
                let fp = fps.get(i).cloned();
                async move {
                    let answer = guarded(|| self.query.read_surface_as(&id, SurfaceRead::Items)).await;
                    // Its title: the one cached under its fingerprint, else
                    // the one its read learned (the log read once), else
                    // read now; cached under the fingerprint taken before
                    // the read, as any title read.
                    let cached = fp.as_ref().and_then(|fp| self.discovery.title_under(&id, fp));
                    let learned = answer.as_ref().ok().and_then(|a| a.title.clone());
                    let title = match (cached, learned) {
                        (Some(title), _) => title,
                        (None, Some(title)) => {
                            let title = title.map(|t| self.config.hardening().title_to_keep(t));
                            self.discovery.store_title(&id, fp.clone(), Some(title.clone()));
                            title
                        }
                        (None, None) => self
                            .titles_under(&[session], &Fingerprints::Owned(vec![fp.clone()]), 1)
                            .await
                            .pop()
                            .flatten(),
                    };
                    // A doc whose title could not be read is not kept (its
                    // title is read again next time, as a failed read is never
                    // cached).
                    let fp = fp.filter(|fp| self.discovery.holds_title(&id, fp));
                    // The dictionary as it is now: trained during this
                    // loop, the docs built after use it.
                    let (read, streamed) = match answer.map(|a| a.surface) {
                        Ok(SurfaceItems::Whole(data)) => (Some(Ok(data)), None),
                        Ok(SurfaceItems::Streamed(items)) => {
                            let (fp, title, encoder) = (fp.clone(), title.clone(), self.discovery.docs.encoder());
                            let built = tokio::task::spawn_blocking(move || {
                                streamed_doc(items, fp, title, encoder.as_deref(), redact)
                            });
                            let doc = built.await.ok().flatten();
                            // Items it could not give as it found them: the
                            // surface is read whole, as any other.
                            let read = match doc {
                                Some(_) => None,
                                None => Some(
                                    guarded(|| self.query.read_surface_as(&id, SurfaceRead::ForProjection))
                                        .await
                                        .and_then(SurfaceAnswer::into_data),
                                ),
                            };
                            (read, doc)
                        }
                        Err(e) => (Some(Err(e)), None),
                    };
                    let doc = match (streamed, read) {
                        (Some(doc), _) => Arc::new(doc),
                        (None, Some(Ok(data))) => {
                            let encoder = self.discovery.docs.encoder();
                            let built = tokio::task::spawn_blocking(move || {
                                whole_doc(&data, fp, title, encoder.as_deref(), redact)
                            });
                            match built.await {
                                Ok(doc) => Arc::new(doc),
                                Err(_) => Arc::new(Doc::build(None, None, Vec::new(), None)),
                            }
                        }
                        (None, _) => Arc::new(Doc::build(None, title, Vec::new(), None)),
                    };
                    self.discovery.docs.put(&id, &doc);
                    self.discovery.mark_index_changed();
                    if let Some(progress) = progress {
                        progress.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    (i, doc)
                }
            })
            .collect();
        let any = !jobs.is_empty();
        let mut built = stream::iter(jobs).buffered(INDEX_CONCURRENCY);
        // Bytes built here without a dictionary: once they are enough to
        // train one, it is trained before the rest are built, so a first
        // build compresses nearly everything once, with it.
        let mut plain = 0;
        // Held while building, so that every doc shares one encoder.
        let mut encoder = any.then(|| self.discovery.docs.encoder()).flatten();
        while let Some((i, doc)) = built.next().await {
            if doc.undicted() {
                plain += doc.text_bytes();
                if plain >= DocCache::TRAIN_AT {
                    plain = 0;
                    self.settle_index().await;
                    encoder = self.discovery.docs.encoder();
                }
            }
            docs[i] = Some(doc);
        }
        drop(encoder);
        if any {
            self.settle_index().await;
        }
        let docs = docs.into_iter().map(|d| d.unwrap_or_else(|| Arc::new(Doc::build(None, None, Vec::new(), None))));
        (docs.collect(), any)
    }

    /// [`DocCache::settle`] on the blocking
    /// pool: trains the index's dictionary when due and compresses with it
    /// the docs built without it.
    async fn settle_index(&self) {
        let cache = Arc::clone(&self.discovery);
        drop(tokio::task::spawn_blocking(move || cache.docs.settle()).await);
    }
}
