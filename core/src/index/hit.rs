//! What a search finds of one session: its ranking key, a prospect (a
//! session its filters let through) and a hit (one verified).

use std::cmp::Ordering;

use super::relevance::MatchCounts;
use crate::host::MatchField;

/// Ranking: higher relevance score ([`relevance`](super::relevance)), then
/// the cwd rank of discovery, then newer `createdAt`, then listing order.
#[derive(Clone, Copy, Debug)]
pub(super) struct Key {
    pub(super) score: f64,
    pub(super) cwd_rank: u8,
    pub(super) created: f64,
    pub(super) order: usize,
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
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

/// A session that passed the filters: where it is among the searched
/// ones, its key before its score is known, and whether its filter lets
/// the whole query (of more than one word) through.
pub(super) struct Prospect {
    pub(super) at: usize,
    pub(super) key: Key,
    pub(super) phrase: bool,
}

/// A session that matches: where it is among the searched ones, the
/// field of its best passage, its snippet and, for a message, its index.
#[derive(Clone)]
pub(crate) struct Hit {
    pub(super) key: Key,
    pub(crate) at: usize,
    pub(crate) field: MatchField,
    pub(crate) snippet: String,
    pub(crate) message_index: Option<u64>,
    /// What it holds of the query, which its score is made of.
    pub(super) counts: MatchCounts,
}
