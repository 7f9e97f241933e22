//! One search over a [`SearchSet`]: every session tested against the
//! query's filters, then every prospect verified on its text (counting
//! what it holds of the query), and the matches scored from the counts of
//! all of them ([`relevance`](super::relevance)), ranked and cut at
//! `limit`.

use std::ops::ControlFlow;

use super::hit::{Hit, Key, Prospect};
use super::needle::Needle;
use super::pass::FilterPass;
use super::query::{Finders, Query};
use super::relevance::Relevance;
use super::set::{has, SearchSet};
use super::stored::Unreadable;
use super::verify::{in_order, VERIFIERS};
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::host::{rank, SessionHeader, Target};

/// What [`SearchSet::search`] found: the hits, and the sessions (by index) whose
/// stored filter or text it could not read; when there are any, the hits
/// may miss those sessions and must not be used.
pub(crate) struct Scored {
    pub(crate) hits: Vec<Hit>,
    pub(crate) unreadable: Vec<usize>,
}

impl SearchSet {
    /// The search: the sessions of the set (`sessions`, the headers it
    /// was made of, in its order) that hold `query`, ranked by relevance
    /// (ties: for `target`, then newer) and cut at `limit`, each with its
    /// best passage. With
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
        // The needles the filters are tested with: the words, then the
        // phrase (a query of one word is its own phrase).
        let needles: Vec<&Needle> = match &query.words[..] {
            [word] => vec![word],
            words => words.iter().chain([&query.phrase]).collect(),
        };
        let phrase_at = (needles.len() > query.words.len()).then_some(query.words.len());
        let docs = &self.docs[..];
        let filters = FilterPass::new(docs, &self.roster, &needles, keep_filters);
        // Per word, the sessions holding it in their id, cwd or title (one
        // scan of the packed fields each), which no filter covers.
        let in_fields: Vec<Vec<u64>> = query.words.iter().map(|w| self.fields.holding(w)).collect();
        let mut prospects = Vec::new();
        let mut unreadable = Vec::new();
        for (at, &s) in sessions.iter().enumerate() {
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
            let key = Key {
                score: 0.0,
                cwd_rank: rank::rank(s.cwd.as_deref(), target),
                created: s.created_at.as_f64().unwrap_or(0.0),
                order: at,
            };
            // (Its filter was readable for the words, so for the phrase.)
            let phrase = phrase_at.is_some_and(|p| filters.may(at, p).unwrap_or(true));
            prospects.push(Prospect { at, key, phrase });
        }
        let finders = Finders::of(query);
        let mut hits: Vec<Hit> = Vec::new();
        let mut cancelled = false;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(VERIFIERS);
        in_order(&prospects, sessions, docs, &finders, threads, |p, verified| {
            if cancel.is_some_and(CancelToken::is_cancelled) {
                cancelled = true;
                return ControlFlow::Break(());
            }
            match verified() {
                Ok(Some(hit)) => hits.push(hit),
                Ok(None) => {}
                Err(Unreadable) => unreadable.push(p.at),
            }
            ControlFlow::Continue(())
        });
        if cancelled {
            return Err(Error::cancelled());
        }
        // Every match verified: the weights are known, and so the scores.
        let relevance = Relevance::new(query.words.len(), hits.iter().map(|h| &h.counts));
        for h in &mut hits {
            h.key.score = relevance.score(&h.counts);
        }
        if hits.len() > limit {
            hits.select_nth_unstable_by_key(limit.saturating_sub(1), |h| h.key);
            hits.truncate(limit);
        }
        hits.sort_by_key(|h| h.key);
        Ok(Scored { hits, unreadable })
    }
}
