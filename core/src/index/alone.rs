//! The index driven alone, without a resolver or a host: the crate root's
//! hidden `search_index`, for the project's tests and benchmarks (never for
//! the fronts, which search through the `Resolver`). Sessions are given as
//! their headers, titles and the texts of their projected items, indexed as
//! the resolver indexes them (built without a dictionary until there is
//! enough text to train one, then compressed with it) and searched through
//! the engine's one entry point, `SearchSet::search`.

use std::borrow::Cow;
use std::sync::Arc;

use super::{Doc, DocCache, Headers, IndexedItem, Query, SearchSet, TRAIN_AT};
use crate::error::Result;
use crate::host::{Fingerprint, MatchField, SessionHeader, Target};

/// One session to index.
#[derive(Clone, Debug)]
pub struct Session {
    /// Its header (the id, cwd and `createdAt` searched and ranked on).
    pub header: SessionHeader,
    /// Its title.
    pub title: Option<String>,
    /// The texts of its projected items, in order.
    pub texts: Vec<String>,
}

/// A session that matched a search ([`Index::search`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The session's id.
    pub id: String,
    /// Where its best hit is.
    pub field: MatchField,
    /// The text around that hit.
    pub snippet: String,
    /// The index of the item holding the hit, when it is in one.
    pub message_index: Option<u64>,
}

/// Sessions indexed and ready to search.
pub struct Index {
    cache: DocCache,
    sessions: Vec<SessionHeader>,
    set: SearchSet,
}

impl Index {
    /// Indexes `sessions` (of distinct ids), in order: the order that
    /// breaks ties in the ranking, as the listing's does for the resolver.
    pub fn build(sessions: Vec<Session>) -> Index {
        let cache = DocCache::default();
        let mut headers = Vec::with_capacity(sessions.len());
        let mut fingerprints = Vec::with_capacity(sessions.len());
        // Bytes built without a dictionary since the last training.
        let mut plain = 0;
        for (i, session) in sessions.into_iter().enumerate() {
            let fingerprint = Fingerprint::from_u64(i as u64);
            let items = session.texts.iter().map(|t| IndexedItem { text: Cow::Borrowed(t.as_str()) }).collect();
            let encoder = cache.encoder();
            let doc = Arc::new(Doc::build(Some(fingerprint.clone()), session.title, items, encoder.as_deref()));
            cache.put(&session.header.id, &doc);
            if doc.undicted() {
                plain += doc.text_bytes();
                if plain >= TRAIN_AT {
                    plain = 0;
                    cache.settle();
                }
            }
            headers.push(session.header);
            fingerprints.push(fingerprint);
        }
        cache.settle();
        let wanted = headers.iter().zip(&fingerprints).map(|(h, fp)| (h.id.as_str(), Some(fp)));
        let docs = cache.get_all(wanted).into_iter().map(|d| d.expect("every doc is kept under its fingerprint"));
        let set = SearchSet::new(Headers::all(&headers), docs.collect());
        Index { cache, sessions: headers, set }
    }

    /// The sessions holding `query`, ranked for `target`, at most `limit`,
    /// each with its best hit: what `Resolver::search` answers over the
    /// same sessions, titles and texts (every session is searched: the
    /// target's own is not left out).
    pub fn search(&self, target: &Target, query: &str, limit: usize) -> Result<Vec<Found>> {
        let Some(query) = Query::parse(query) else { return Ok(Vec::new()) };
        if self.set.rules_out(&query) {
            return Ok(Vec::new());
        }
        let sessions = Headers::all(&self.sessions);
        let scored = self.set.search(&query, sessions, target, limit, self.cache.keeps_filters(), None)?;
        // (Docs built in memory are never unreadable.)
        debug_assert!(scored.unreadable.is_empty());
        let found = scored.hits.into_iter().map(|h| Found {
            id: self.sessions[h.at].id.clone(),
            field: h.field,
            snippet: h.snippet,
            message_index: h.message_index,
        });
        Ok(found.collect())
    }

    /// (sessions, projected text bytes, index bytes, of which filters), as
    /// `Resolver::search_index_stats` counts them.
    pub fn stats(&self) -> (usize, usize, usize, usize) {
        self.cache.stats()
    }
}
