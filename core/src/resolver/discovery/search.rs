//! Full-text search (`Resolver::search`): over the projected text of every
//! session (exactly what a reference would carry: user and assistant text
//! and checkpoints, never tool output or reasoning), plus titles, ids and
//! cwds. One result per session, ranked, with a snippet around its best
//! hit. The engine is the built-in index of `text.rs`, cached per session
//! under its [`Fingerprint`], unless the host's session query answers the
//! search itself ([`SessionQuery::search`](crate::SessionQuery::search)).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Condvar, Mutex};

use futures::stream::{self, StreamExt};

use super::listed::{Fingerprints, Listed};
use super::rank;
use super::searched::{has, Picked, SearchMemo, SearchSet};
use crate::cancel::CancelToken;
use crate::error::{Error, ErrorCode, Result};
use crate::host::{
    with_projection, Fingerprint, MatchField, SearchIndexStats, SearchOptions, SearchRequest, SearchResult,
    SearchScope, SessionHeader, StreamedItems, SurfaceAnswer, SurfaceData, SurfaceItems, SurfaceRead, Target,
};
use crate::index::{
    fold, fold_into, original_offset, Doc, Encoder, FilterPass, Finder, IndexedItem, Needle, Unreadable, TRAIN_AT,
};
use crate::projection::Item;
use crate::resolver::{cancellable, guarded, Resolver};

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
        Doc::build(fp.clone(), title.clone(), items, encoder)
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
mod order_tests;
#[cfg(test)]
mod streamed_tests;

/// How many surfaces are read and indexed at once.
const INDEX_CONCURRENCY: usize = 8;
/// Characters of context before and after a hit in a snippet.
const SNIPPET_BEFORE: usize = 40;
const SNIPPET_AFTER: usize = 100;

/// A parsed search text: lower-cased, whitespace runs collapsed.
struct Query {
    phrase: Needle,
    words: Vec<Needle>,
}

impl Query {
    fn parse(text: &str) -> Option<Query> {
        let folded = fold(text);
        let mut words: Vec<Needle> = Vec::new();
        for w in folded.split_whitespace() {
            if !words.iter().any(|x| x.text == w) {
                words.push(Needle::new(w.to_owned()));
            }
        }
        if words.is_empty() {
            return None;
        }
        let phrase = Needle::new(folded.split_whitespace().collect::<Vec<_>>().join(" "));
        Some(Query { phrase, words })
    }
}

/// Ranking: tier (0 phrase in the title, 1 phrase in a message, the id or
/// the cwd, 2 every word somewhere), then the cwd rank of discovery, then
/// newer `createdAt`, then listing order.
#[derive(Clone, Copy, Debug)]
struct Key {
    tier: u8,
    cwd_rank: u8,
    created: f64,
    order: usize,
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.tier
            .cmp(&other.tier)
            .then(self.cwd_rank.cmp(&other.cwd_rank))
            .then(other.created.total_cmp(&self.created))
            .then(self.order.cmp(&other.order))
    }
}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Key {}

/// A session that passed the filters, with the best tier it could reach.
struct Prospect {
    at: usize,
    key: Key,
    /// Tier and hit known without the body.
    settled: Option<(MatchField, String)>,
}

#[derive(Clone)]
struct Hit {
    key: Key,
    at: usize,
    field: MatchField,
    snippet: String,
    message_index: Option<u64>,
}

fn snippet(original: &str, at: usize) -> String {
    let at = at.min(original.len());
    let before: Vec<(usize, char)> = original[..at].char_indices().rev().take(SNIPPET_BEFORE + 1).collect();
    let start = if before.len() > SNIPPET_BEFORE { before[SNIPPET_BEFORE - 1].0 } else { 0 };
    let end = original[at..].char_indices().nth(SNIPPET_AFTER).map_or(original.len(), |(i, _)| at + i);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(&original[start..end].split_whitespace().collect::<Vec<_>>().join(" "));
    if end < original.len() {
        out.push('…');
    }
    out
}

fn whole(text: &str) -> String {
    snippet(text, 0)
}

/// What [`score`] found: the hits, and the sessions (by index) whose
/// stored filter or text it could not read; when there are any, the hits
/// may miss those sessions and must not be used.
struct Scored {
    hits: Vec<Hit>,
    unreadable: Vec<usize>,
}

/// Scores every session against the query, verifying on the text only
/// the prospects that can still enter the top `limit`.
fn score(
    query: &Query,
    sessions: &[&SessionHeader],
    set: &SearchSet,
    target: &Target,
    limit: usize,
    keep_filters: bool,
    cancel: Option<&CancelToken>,
) -> Result<Scored> {
    // The needles the filters are tested with: the words, then the phrase.
    // A query of one word is its own phrase: its filters are tested once.
    let needles: Vec<&Needle> = match &query.words[..] {
        [word] => vec![word],
        words => words.iter().chain([&query.phrase]).collect(),
    };
    let phrase_at = needles.len() - 1;
    let docs = &set.docs[..];
    let filters = FilterPass::new(docs, &set.roster, &needles, keep_filters);
    // Per word, the sessions holding it in their id, cwd or title (one
    // scan of the packed fields each), which no filter covers.
    let in_fields: Vec<Vec<u64>> = query.words.iter().map(|w| set.fields.holding(w)).collect();
    let mut prospects = Vec::new();
    let mut unreadable = Vec::new();
    for at in 0..sessions.len() {
        if at % 256 == 0 && cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(Error::cancelled());
        }
        // Every word in a field or maybe in the body (the words in order,
        // up to the first that is in neither).
        let mut passed = Ok(true);
        for (j, held) in in_fields.iter().enumerate() {
            if !has(held, at) {
                passed = filters.may(at, j);
                if passed != Ok(true) {
                    break;
                }
            }
        }
        match passed {
            Ok(true) => {}
            Ok(false) => continue,
            Err(Unreadable) => {
                unreadable.push(at);
                continue;
            }
        }
        let (s, doc) = (sessions[at], &docs[at]);
        let title = doc.title_folded();
        let id = fold(&s.id);
        let cwd = s.cwd.as_deref().map(fold);
        let cwd = cwd.as_deref().unwrap_or("");
        let phrase = &query.phrase;
        let (tier, settled) = if phrase.is_in(title) {
            (0, Some((MatchField::Title, whole(doc.title.as_deref().unwrap_or("")))))
        } else if phrase.is_in(&id) {
            (1, Some((MatchField::Id, s.id.clone())))
        } else if phrase.is_in(cwd) {
            (1, Some((MatchField::Cwd, s.cwd.clone().unwrap_or_default())))
        } else if filters.may(at, phrase_at).unwrap_or(true) {
            // (Its filter was readable for the words, so for the phrase.)
            (1, None)
        } else {
            (2, None)
        };
        let key = Key {
            tier,
            cwd_rank: rank::rank(s.cwd.as_deref(), target),
            created: s.created_at.as_f64().unwrap_or(0.0),
            order: at,
        };
        prospects.push(Prospect { at, key, settled });
    }
    prospects.sort_by_key(|p| p.key);
    let finders = Finders::of(query);
    let mut hits: Vec<Hit> = Vec::new();
    let mut best: BinaryHeap<Key> = BinaryHeap::new();
    let mut cancelled = false;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(VERIFIERS);
    in_order(&prospects, sessions, docs, &finders, threads, |p, verified| {
        if best.len() >= limit && best.peek().is_some_and(|worst| *worst < p.key) {
            return ControlFlow::Break(());
        }
        if cancel.is_some_and(CancelToken::is_cancelled) {
            cancelled = true;
            return ControlFlow::Break(());
        }
        let hit = match (&p.settled, verified()) {
            (Some((field, snippet)), _) => {
                Some(Hit { key: p.key, at: p.at, field: *field, snippet: snippet.clone(), message_index: None })
            }
            (None, Ok(hit)) => hit,
            (None, Err(Unreadable)) => {
                unreadable.push(p.at);
                None
            }
        };
        if let Some(hit) = hit {
            best.push(hit.key);
            if best.len() > limit {
                best.pop();
            }
            hits.push(hit);
        }
        ControlFlow::Continue(())
    });
    if cancelled {
        return Err(Error::cancelled());
    }
    hits.sort_by_key(|h| h.key);
    hits.truncate(limit);
    Ok(Scored { hits, unreadable })
}

/// At most this many threads verify one search's prospects.
const VERIFIERS: usize = 4;

/// Calls `f` on the prospects in order, each with a function that gives
/// its verification (`Ok(None)` for a settled one, which needs none),
/// until `f` breaks.
///
/// With more than one thread (`threads`: the machine's cores, up to
/// [`VERIFIERS`]) and more than one prospect to verify, the threads (this
/// one among them) each take the next prospect not taken, at most two per
/// thread ahead of the one `f` is at, and `f` is given them in order: it
/// sees exactly what one thread verifying in order would give it, and
/// once it breaks at most that window was verified for nothing. A
/// verification this thread waits for longer than twice its own last one
/// took (a helper not given a core on a busy machine) it makes itself, so
/// a busy machine costs at most about the time of verifying alone. Else
/// this thread verifies them alone, when `f` asks.
fn in_order(
    prospects: &[Prospect],
    sessions: &[&SessionHeader],
    docs: &[Arc<Doc>],
    finders: &Finders,
    threads: usize,
    mut f: impl FnMut(&Prospect, &mut dyn FnMut() -> Result<Option<Hit>, Unreadable>) -> ControlFlow<()>,
) {
    let verify_one = |p: &Prospect, stop: &AtomicBool| match p.settled {
        Some(_) => Ok(None),
        None => verify(finders, sessions[p.at], &docs[p.at], p.key, p.at, stop),
    };
    let open = prospects.iter().filter(|p| p.settled.is_none()).count();
    let threads = threads.min(open);
    if threads < 2 {
        let never = AtomicBool::new(false);
        for p in prospects {
            if f(p, &mut || verify_one(p, &never)).is_break() {
                return;
            }
        }
        return;
    }
    type Slot = std::sync::OnceLock<Result<Option<Hit>, Unreadable>>;
    let window = 2 * threads;
    let slots: Vec<Slot> = prospects.iter().map(|_| Slot::new()).collect();
    // The next prospect not taken, the one `f` is at, and whether the
    // helpers are to end (`f` broke, or a verification panicked).
    let (next, given, stop) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicBool::new(false));
    let (lock, changed) = (Mutex::new(()), Condvar::new());
    let notify = || {
        let _held = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        changed.notify_all();
    };
    // A verification that panicked: its slot says unreadable (which wakes
    // whoever waits for it) and the panic goes on once every thread ends.
    let panicked: Mutex<Option<Box<dyn std::any::Any + Send>>> = Mutex::new(None);
    let run = |at: usize| {
        let verified =
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| verify_one(&prospects[at], &stop))) {
                Ok(verified) => verified,
                Err(panic) => {
                    stop.store(true, AtomicOrdering::Relaxed);
                    panicked.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(panic);
                    Err(Unreadable)
                }
            };
        drop(slots[at].set(verified));
        notify();
    };
    // Whether there is a prospect to take now: not all taken, and the next
    // within the window ahead of the one `f` is at.
    let open_now = || {
        let at = next.load(AtomicOrdering::Acquire);
        at < prospects.len() && at < given.load(AtomicOrdering::Acquire) + window && !stop.load(AtomicOrdering::Relaxed)
    };
    // Takes the next prospect to verify, if there is one now, and verifies
    // it (settled ones are passed over).
    let take = || loop {
        if !open_now() {
            return false;
        }
        let at = next.load(AtomicOrdering::Acquire);
        if next.compare_exchange(at, at + 1, AtomicOrdering::AcqRel, AtomicOrdering::Relaxed).is_err() {
            continue;
        }
        if prospects[at].settled.is_none() && slots[at].get().is_none() {
            run(at);
            return true;
        }
    };
    std::thread::scope(|scope| {
        // (`stop` set and the helpers woken on the way out, also if `f`
        // panics.)
        struct Stop<'a>(&'a AtomicBool, &'a dyn Fn());
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, AtomicOrdering::Relaxed);
                (self.1)();
            }
        }
        let _stop = Stop(&stop, &notify);
        for _ in 1..threads {
            scope.spawn(|| {
                while !stop.load(AtomicOrdering::Relaxed) && next.load(AtomicOrdering::Acquire) < prospects.len() {
                    if !take() {
                        let held = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        if !open_now()
                            && !stop.load(AtomicOrdering::Relaxed)
                            && next.load(AtomicOrdering::Acquire) < prospects.len()
                        {
                            drop(changed.wait(held));
                        }
                    }
                }
            });
        }
        let mut own = std::time::Duration::from_micros(25);
        for (at, p) in prospects.iter().enumerate() {
            given.store(at, AtomicOrdering::Release);
            notify();
            let mut verified = || {
                if p.settled.is_some() {
                    return Ok(None);
                }
                while slots[at].get().is_none() {
                    // Not made yet: verify the next one here (this one,
                    // if nobody took it); else wait a while for the helper
                    // that has it, then make it here.
                    let t = std::time::Instant::now();
                    if take() {
                        own = t.elapsed();
                        continue;
                    }
                    let mut held = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    let until = std::time::Instant::now() + 2 * own;
                    while slots[at].get().is_none() && !open_now() {
                        let Some(left) = until.checked_duration_since(std::time::Instant::now()) else { break };
                        held = changed.wait_timeout(held, left).unwrap_or_else(std::sync::PoisonError::into_inner).0;
                    }
                    drop(held);
                    if slots[at].get().is_none() && !open_now() {
                        let never = AtomicBool::new(false);
                        drop(slots[at].set(verify_one(p, &never)));
                    }
                }
                match slots[at].get() {
                    Some(Ok(hit)) => Ok(hit.clone()),
                    _ => Err(Unreadable),
                }
            };
            if stop.load(AtomicOrdering::Relaxed) || f(p, &mut verified).is_break() {
                return;
            }
        }
    });
    if let Some(panic) = panicked.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
        std::panic::resume_unwind(panic);
    }
}

/// The exact tier and best hit of a prospect, from its text decompressed
/// item by item (one item held at a time, never the whole text; it stops at
/// the first message holding the phrase, or when `stop` is set: then the
/// answer is no answer and is not used); `None` when the filter let
/// through a session that does not match; [`Unreadable`] when its stored
/// text cannot be read.
fn verify(
    query: &Finders,
    s: &SessionHeader,
    doc: &Doc,
    key: Key,
    at: usize,
    stop: &AtomicBool,
) -> Result<Option<Hit>, Unreadable> {
    let mut scan = Scan::new(query);
    doc.each_item_text(|item| if stop.load(AtomicOrdering::Relaxed) { None } else { scan.item(item) })?;
    Ok(scan.finish(s, doc, key, at))
}

/// A query's phrase and words as the threads verifying its prospects
/// search for them.
struct Finders {
    phrase: Finder,
    words: Vec<Finder>,
}

impl Finders {
    fn of(query: &Query) -> Finders {
        Finders { phrase: query.phrase.finder(), words: query.words.iter().map(Needle::finder).collect() }
    }
}

/// [`verify`]'s pass over the items, in order.
struct Scan<'q> {
    query: &'q Finders,
    /// The current item lower-cased (one buffer, reused).
    folded: String,
    /// Items seen.
    next: usize,
    /// The first message holding the phrase, and its snippet.
    phrase: Option<(usize, String)>,
    /// Which words some message holds.
    found: Vec<bool>,
    /// The message with the most distinct words (the first of those): how
    /// many, which, and its snippet around the first of them.
    best: Option<(usize, usize, String)>,
}

impl<'q> Scan<'q> {
    fn new(query: &'q Finders) -> Self {
        Scan { query, folded: String::new(), next: 0, phrase: None, found: vec![false; query.words.len()], best: None }
    }

    /// One item; `None` once the phrase is found (nothing after it counts).
    fn item(&mut self, text: &str) -> Option<()> {
        let i = self.next;
        self.next += 1;
        self.folded.clear();
        fold_into(text, &mut self.folded);
        let f = self.folded.as_str();
        if let Some(pos) = self.query.phrase.find(f) {
            self.phrase = Some((i, snippet(text, original_offset(text, pos))));
            return None;
        }
        let (mut count, mut first) = (0, usize::MAX);
        for (w, word) in self.query.words.iter().enumerate() {
            if let Some(pos) = word.find(f) {
                self.found[w] = true;
                count += 1;
                first = first.min(pos);
            }
        }
        if count > 0 && self.best.as_ref().is_none_or(|(c, _, _)| count > *c) {
            self.best = Some((count, i, snippet(text, original_offset(text, first))));
        }
        Some(())
    }

    /// The hit the items gave, if the session matches.
    fn finish(self, s: &SessionHeader, doc: &Doc, key: Key, at: usize) -> Option<Hit> {
        if let Some((i, snippet)) = self.phrase {
            // A message holding the phrase holds every word of it.
            let key = Key { tier: 1, ..key };
            return Some(Hit { key, at, field: MatchField::Message, snippet, message_index: Some(i as u64) });
        }
        let title = doc.title_folded();
        let (id, cwd) = (fold(&s.id), s.cwd.as_deref().map(fold).unwrap_or_default());
        let in_fields = |w: &Finder| w.is_in(title) || w.is_in(&id) || w.is_in(&cwd);
        let words = &self.query.words;
        if !words.iter().zip(&self.found).all(|(w, f)| *f || in_fields(w)) {
            return None;
        }
        let key = Key { tier: 2, ..key };
        let (field, snippet, message_index) = match self.best {
            Some((_, i, snippet)) => (MatchField::Message, snippet, Some(i as u64)),
            None if words.iter().any(|w| w.is_in(title)) => {
                (MatchField::Title, whole(doc.title.as_deref().unwrap_or("")), None)
            }
            None if words.iter().any(|w| w.is_in(&id)) => (MatchField::Id, s.id.clone(), None),
            None => (MatchField::Cwd, s.cwd.clone().unwrap_or_default(), None),
        };
        Some(Hit { key, at, field, snippet, message_index })
    }
}

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
    /// the title first, then in a message, the id or the cwd, then sessions
    /// holding the words apart; among equals, sessions in the target's cwd,
    /// then without a cwd, then newer `createdAt`, then listing order. A
    /// blank query finds nothing.
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
        cancellable(cancel, self.search_inner(request, cancel)).await
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

    async fn search_inner(&self, request: SearchRequest, cancel: Option<&CancelToken>) -> Result<Vec<SearchResult>> {
        let limit = usize::try_from(request.limit).unwrap_or(usize::MAX);
        match guarded(|| self.query.search(&request)).await {
            Ok(Some(results)) => {
                let mut results: Vec<SearchResult> =
                    results.into_iter().filter(|r| r.candidate.session_id != request.target.id).collect();
                results.truncate(limit);
                return Ok(results);
            }
            Ok(None) => {}
            Err(e) => {
                return Err(Error::new(ErrorCode::ReadFailed, format!("the host's search failed: {}", e.message())))
            }
        }
        let Some(query) = Query::parse(&request.query) else { return Ok(Vec::new()) };
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
        let sessions = picked.refs();
        let (set, hits) = self.scored(query, (&listed, scope), &picked, &fps, target, limit, cancel).await?;
        Ok(hits
            .into_iter()
            .map(|h| {
                let (s, doc) = (&sessions[h.at], &set.docs[h.at]);
                let candidate = super::candidate_from_header(s, doc.title.clone(), &self.config, target);
                SearchResult {
                    candidate: candidate.with_mention(),
                    snippet: h.snippet,
                    field: h.field,
                    message_index: h.message_index,
                }
            })
            .collect())
    }

    /// The [`SearchSet`] of the picked sessions (whose fingerprints are
    /// `fps`) and the hits among them: indexed (or the set the last search
    /// made of the same sessions, while the index has not changed), then
    /// scored on the blocking pool. A set all of whose docs the index
    /// kept is remembered for the next search over the same shared
    /// listing (`listed`, with the search's scope). When some docs loaded from a cache file
    /// could not read their stored filter or text (gone, damaged, not what
    /// it was recorded as), those docs are dropped, their sessions indexed again
    /// from their source and the search run again, so they are never
    /// missed; each round leaves fewer docs read from a file (docs built
    /// here are never unreadable), so it ends.
    #[allow(clippy::too_many_arguments)]
    async fn scored(
        &self,
        mut query: Query,
        (listed, scope): (&Listed, SearchScope),
        picked: &Picked,
        fps: &Fingerprints<'_>,
        target: &Target,
        limit: usize,
        cancel: Option<&CancelToken>,
    ) -> Result<(Arc<SearchSet>, Vec<Hit>)> {
        loop {
            // Read before the docs are looked up: a change meanwhile makes
            // the set remembered here stale at once, never wrongly current.
            let generation = self.discovery.docs.generation();
            let memo = SearchMemo::set(&self.discovery.search_memo(), picked, generation);
            let set = match memo {
                Some(set) => set,
                None => {
                    let sessions = picked.refs();
                    let (docs, built) = self.indexed(&sessions, fps).await;
                    let set = Arc::new(SearchSet::new(&sessions, docs));
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
            if query.words.iter().any(|w| set.rules_out(w)) {
                return Ok((set, Vec::new()));
            }
            let (p, s, t, token) = (picked.clone(), Arc::clone(&set), target.clone(), cancel.cloned());
            let keep = self.discovery.docs.keeps_filters();
            let work = tokio::task::spawn_blocking(move || {
                let scored = score(&query, &p.refs(), &s, &t, limit, keep, token.as_ref());
                (query, scored)
            });
            let (back, scored) = work.await.map_err(|_| Error::new(ErrorCode::ReadFailed, "searching panicked"))?;
            let Scored { hits, unreadable } = scored?;
            if unreadable.is_empty() {
                return Ok((set, hits));
            }
            query = back;
            self.evict_unreadable(&picked.refs(), &set.docs, &unreadable);
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
    /// cwd) that is not kept. And whether any doc was built.
    async fn indexed(&self, sessions: &[&SessionHeader], fps: &Fingerprints<'_>) -> (Vec<Arc<Doc>>, bool) {
        let mut docs =
            self.discovery.docs.get_all(sessions.iter().enumerate().map(|(i, s)| (s.id.as_str(), fps.get(i))));
        // Titles only of the sessions to index: a kept doc holds the title
        // read under the same fingerprint.
        let missing: Vec<usize> = docs.iter().enumerate().filter(|(_, d)| d.is_none()).map(|(i, _)| i).collect();
        let titles = self
            .titles_under(
                &missing.iter().map(|&i| sessions[i]).collect::<Vec<_>>(),
                &Fingerprints::Of(fps, &missing),
                INDEX_CONCURRENCY * 2,
            )
            .await;
        // With `redactSecrets`, credentials are redacted before they are
        // indexed: a search can neither find nor show them (the titles
        // come redacted, as the title cache keeps them).
        let redact = self.config.hardening().redact_secrets;
        let jobs: Vec<_> = missing
            .iter()
            .zip(titles)
            .map(|(&i, title)| {
                let id = sessions[i].id.clone();
                // A doc whose title could not be read is not kept (its
                // title is read again next time, as a failed read is never
                // cached).
                let fp = fps.get(i).filter(|fp| self.discovery.holds_title(&id, fp)).cloned();
                async move {
                    // The dictionary as it is now: trained during this
                    // loop, the docs built after use it.
                    let (read, streamed) = match guarded(|| self.query.read_surface_as(&id, SurfaceRead::Items))
                        .await
                        .map(|a| a.surface)
                    {
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
                if plain >= TRAIN_AT {
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

    /// [`DocCache::settle`](crate::index::DocCache::settle) on the blocking
    /// pool: trains the index's dictionary when due and compresses with it
    /// the docs built without it.
    async fn settle_index(&self) {
        let cache = Arc::clone(&self.discovery);
        drop(tokio::task::spawn_blocking(move || cache.docs.settle()).await);
    }
}
