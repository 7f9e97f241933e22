//! One search over a [`SearchSet`]: every session tested against the
//! query's filters, the prospects ranked by the best tier they can reach,
//! and verified on their text in that order only while they can still
//! enter the top `limit`.

use std::collections::BinaryHeap;
use std::ops::ControlFlow;

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
use crate::host::{rank, MatchField, Target};

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
            for (j, held) in in_fields.iter().enumerate() {
                let c = &mut cursors[j];
                while held.get(*c).is_some_and(|&h| (h as usize) < at) {
                    *c += 1;
                }
                if held.get(*c) != Some(&(at as u32)) {
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
            } else if filters.may(row, phrase_at).unwrap_or(true) {
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
