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
use super::set::{has, SearchSet};
use super::snippet::whole;
use super::stored::Unreadable;
use super::verify::{in_order, VERIFIERS};
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::host::{rank, MatchField, SessionHeader, Target};

/// What [`SearchSet::search`] found: the hits, and the sessions (by index) whose
/// stored filter or text it could not read; when there are any, the hits
/// may miss those sessions and must not be used.
pub(crate) struct Scored {
    pub(crate) hits: Vec<Hit>,
    pub(crate) unreadable: Vec<usize>,
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
        sessions: &[&SessionHeader],
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
        let filters = FilterPass::new(docs, &self.roster, &needles, keep_filters);
        // Per word, the sessions holding it in their id, cwd or title (one
        // scan of the packed fields each), which no filter covers.
        let in_fields: Vec<Vec<u64>> = query.words.iter().map(|w| self.fields.holding(w)).collect();
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
}
