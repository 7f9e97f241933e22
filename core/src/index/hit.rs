//! What a search finds of one session: its ranking key, a prospect (a
//! session its filters let through) and a hit (one verified).

use std::cmp::Ordering;

use crate::host::MatchField;

/// Ranking: tier (0 the phrase in the title, 1 every word in the title, 2
/// the phrase in a message, the id or the cwd, 3 every word in one message,
/// 4 every word somewhere), then, in tier 4, the higher [`relevance`];
/// then the cwd rank of discovery, newer `createdAt`, listing order.
#[derive(Clone, Copy, Debug)]
pub(super) struct Key {
    pub(super) tier: u8,
    /// [`relevance`] in tier 4, else 0.
    pub(super) relevance: f64,
    pub(super) cwd_rank: u8,
    pub(super) created: f64,
    pub(super) order: usize,
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.tier
            .cmp(&other.tier)
            .then(other.relevance.total_cmp(&self.relevance))
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

/// The tier of a session holding every word in its title, not as the phrase.
pub(super) const TITLE_WORDS: u8 = 1;
/// The tier of the phrase in a message, the id or the cwd.
pub(super) const PHRASE: u8 = 2;
/// The tier of every word in one message.
pub(super) const ONE_MESSAGE: u8 = 3;
/// The tier of every word somewhere, ordered by [`relevance`].
pub(super) const APART: u8 = 4;

/// How much a session whose messages hold the query's words `counts`
/// times each (non-overlapping occurrences in the folded text), `bytes` of
/// text in all, is about them: BM25's sum over the words of
/// `n (k1 + 1) / (n + k1 (1 - b + b bytes / REFERENCE))`, with `k1` 1.2, `b`
/// 0.75 and a fixed reference length of 16 KiB in place of the collection's
/// average, so that a session's score is its own, whatever it is searched
/// among. Words are weighted alike: every session it orders holds them all.
pub(super) fn relevance(counts: &[u32], bytes: usize) -> f64 {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    const REFERENCE: f64 = 16384.0;
    let norm = K1 * (1.0 - B + B * bytes as f64 / REFERENCE);
    counts.iter().map(|&n| f64::from(n) * (K1 + 1.0) / (f64::from(n) + norm)).sum()
}

/// A session that passed the filters, with the best tier it could reach.
pub(super) struct Prospect {
    pub(super) at: usize,
    pub(super) key: Key,
    /// Tier and hit known without the body.
    pub(super) settled: Option<(MatchField, String)>,
}

/// A session that matches: where it is among the searched ones, the
/// field of its best hit, its snippet and, for a message, its index.
#[derive(Clone)]
pub(crate) struct Hit {
    pub(super) key: Key,
    pub(crate) at: usize,
    pub(crate) field: MatchField,
    pub(crate) snippet: String,
    pub(crate) message_index: Option<u64>,
}
