//! What a search finds of one session: its ranking key, a prospect (a
//! session its filters let through) and a hit (one verified).

use std::cmp::Ordering;

use crate::host::MatchField;

/// Ranking: tier (0 phrase in the title, 1 phrase in a message, the id or
/// the cwd, 2 every word somewhere), then the cwd rank of discovery, then
/// newer `createdAt`, then listing order.
#[derive(Clone, Copy, Debug)]
pub(super) struct Key {
    pub(super) tier: u8,
    pub(super) cwd_rank: u8,
    pub(super) created: f64,
    pub(super) order: usize,
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
