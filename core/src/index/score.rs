//! One search over a [`SearchSet`]: every session tested against the
//! query's filters, the prospects ranked by the best tier they can reach,
//! and verified on their text in that order only while they can still
//! enter the top `limit`.

use std::collections::BinaryHeap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::doc::Doc;
use super::fold::fold;
use super::hit::{Hit, Key, Prospect};
use super::needle::Needle;
use super::pass::FilterPass;
use super::query::{Finders, Query};
use super::set::{union, Headers, SearchSet, Work};
use super::snippet::whole;
use super::stored::Unreadable;
use super::verify::{in_order, VERIFIERS};
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::host::{rank, MatchField, SessionHeader, Target};

/// What [`SearchSet::search`] found: the hits, and the sessions (by index) whose
/// stored filter or text it could not read; when there are any, the hits
/// may miss those sessions and must not be used. And what it touched.
pub(crate) struct Scored {
    pub(crate) hits: Vec<Hit>,
    pub(crate) unreadable: Vec<usize>,
    pub(crate) work: Work,
}

impl SearchSet {
    /// The search: the sessions of the set (`sessions`, the headers it
    /// was made of, in its order) that hold `query`, ranked for `target`
    /// and cut at `limit`, each with its best hit; only the prospects that
    /// can still enter the top `limit` are verified on their text. With
    /// `keep_filters` ([`DocCache::keeps_filters`](super::DocCache::keeps_filters))
    /// the stored filters read are kept in memory.
    pub(crate) fn search(
        &self,
        query: &Query,
        sessions: Headers<'_>,
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
        let docs = &self.docs[..];
        let indexed = self.indexed();
        let mut work = Work::default();
        // Per word, the sessions holding it in their id, cwd or title
        // (ascending), which no filter covers.
        let in_fields: Vec<Vec<u32>> = query.words.iter().map(|w| self.fields.holding(w, indexed, &mut work)).collect();
        // The sessions that may hold every word: for each word the
        // vocabularies can tell of, those holding it in a field or left
        // open for it in their body; every session when none can tell.
        let rows = indexed.then(|| self.open_for(query, &in_fields)).flatten();
        let filters = FilterPass::over(docs, rows.as_deref(), &self.roster, &needles, keep_filters);
        let count = rows.as_ref().map_or(sessions.len(), Vec::len);
        work.sessions += count as u64;
        // Where each word's list of field holders is at (the rows ascend).
        let mut cursors = vec![0usize; in_fields.len()];
        let mut prospects = Vec::new();
        let mut unreadable = Vec::new();
        for row in 0..count {
            let at = rows.as_ref().map_or(row, |r| r[row] as usize);
            if row % 256 == 0 && cancel.is_some_and(CancelToken::is_cancelled) {
                return Err(Error::cancelled());
            }
            // Every word in a field or maybe in the body (the words in order,
            // up to the first that is in neither).
            let mut passed = Ok(true);
            let mut every_word = true;
            for (j, held) in in_fields.iter().enumerate() {
                let c = &mut cursors[j];
                while held.get(*c).is_some_and(|&h| (h as usize) < at) {
                    *c += 1;
                }
                if held.get(*c) != Some(&(at as u32)) {
                    every_word = false;
                    passed = filters.may(row, j);
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
            let (s, doc) = (sessions.get(at), &docs[at]);
            let (tier, settled) = match in_a_field(s, doc, &query.phrase, every_word) {
                Some(found) => found,
                // (Its filter was readable for the words, so for the phrase.)
                None if filters.may(row, phrase_at).unwrap_or(true) => (1, None),
                None => (2, None),
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
        let searching = Searching::start();
        let threads = searching.verifiers();
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
        drop(searching);
        if cancelled {
            return Err(Error::cancelled());
        }
        hits.sort_by_key(|h| h.key);
        hits.truncate(limit);
        Ok(Scored { hits, unreadable, work })
    }

    /// The sessions (ascending) that may hold every word of `query` whose
    /// holders can be told without passing over every session: those
    /// holding it in a field (`in_fields`, per word) or whose body the
    /// vocabularies leave open for it ([`Roster::body`](super::pass::Roster::body)).
    /// `None` when the vocabularies can tell of no word.
    fn open_for(&self, query: &Query, in_fields: &[Vec<u32>]) -> Option<Vec<u32>> {
        let mut open: Option<Vec<u32>> = None;
        for (word, fields) in query.words.iter().zip(in_fields) {
            let Some(body) = self.roster.body(word) else { continue };
            let holders = union(vec![body, fields.clone()]);
            open = Some(match open {
                None => holders,
                Some(was) => was.into_iter().filter(|at| holders.binary_search(at).is_ok()).collect(),
            });
        }
        open
    }
}

/// The tier and settled hit of a session whose id, cwd or title holds
/// `phrase` (the title first); `None` when none does. `every_word` is
/// whether each of the query's words is in one of those fields
/// ([`Fields::holding`](super::set::Fields::holding), exact on the same
/// folded text): a phrase in a field has every word in it, so without
/// them no field is looked at (nor its id and cwd folded).
fn in_a_field(
    s: &SessionHeader,
    doc: &Doc,
    phrase: &Needle,
    every_word: bool,
) -> Option<(u8, Option<(MatchField, String)>)> {
    if !every_word {
        return None;
    }
    if phrase.is_in(doc.title_folded()) {
        return Some((0, Some((MatchField::Title, whole(doc.title.as_deref().unwrap_or(""))))));
    }
    if phrase.is_in(&fold(&s.id)) {
        return Some((1, Some((MatchField::Id, s.id.clone()))));
    }
    let cwd = s.cwd.as_deref().map(fold);
    if phrase.is_in(cwd.as_deref().unwrap_or("")) {
        return Some((1, Some((MatchField::Cwd, s.cwd.clone().unwrap_or_default()))));
    }
    None
}

/// The searches of this process verifying their prospects now.
static SEARCHING: AtomicUsize = AtomicUsize::new(0);

/// The most searches of this process that were verifying at once.
#[cfg(test)]
pub(crate) static MOST_SEARCHING: AtomicUsize = AtomicUsize::new(0);

/// One search counted in [`SEARCHING`] while it lives.
struct Searching;

impl Searching {
    fn start() -> Searching {
        let _now = SEARCHING.fetch_add(1, Ordering::Relaxed) + 1;
        #[cfg(test)]
        MOST_SEARCHING.fetch_max(_now, Ordering::Relaxed);
        Searching
    }

    /// The threads this search verifies on: the machine's cores shared
    /// among the searches under way (at least one, at most
    /// [`VERIFIERS`]). A thread verifies ahead of the ranking, and what it
    /// verified past the last result is lost: worth it while cores would
    /// otherwise idle, not while other searches (a server's concurrent
    /// requests) keep every core busy.
    fn verifiers(&self) -> usize {
        shared_verifiers(crate::runtime::cores(), SEARCHING.load(Ordering::Relaxed))
    }
}

/// The verifying threads of one of `searching` searches on `cores` cores.
fn shared_verifiers(cores: usize, searching: usize) -> usize {
    (cores / searching.max(1)).clamp(1, VERIFIERS)
}

impl Drop for Searching {
    fn drop(&mut self) {
        SEARCHING.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::shared_verifiers;

    #[test]
    fn concurrent_searches_share_the_cores_and_each_keeps_one_thread() {
        assert_eq!(shared_verifiers(2, 1), 2);
        assert_eq!(shared_verifiers(2, 2), 1);
        assert_eq!(shared_verifiers(2, 16), 1);
        assert_eq!(shared_verifiers(8, 1), super::VERIFIERS);
        assert_eq!(shared_verifiers(8, 4), 2);
        assert_eq!(shared_verifiers(1, 0), 1);
    }
}
