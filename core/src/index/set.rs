//! What a search looks at, made ready once for the searches after it: the
//! searched sessions' docs in order, their ids, cwds and titles lower-cased
//! into one buffer ([`Fields`]) and their dictionaries and serials packed
//! ([`Roster`]), so that a search whose words the vocabularies rule out
//! touches neither a header nor a doc: one scan of the fields per word and a
//! pass over a few bytes per session.

use std::sync::Arc;

use super::doc::Doc;
use super::fold::fold_into;
use super::keys::TrigramBits;
use super::needle::Needle;
use super::pass::Roster;
use super::query::Query;
use crate::host::SessionHeader;

/// The lower-cased id, cwd and title of each searched session, one after the
/// other, each followed by a line break: no query word or phrase holds
/// one (whitespace splits the words), so a hit lies within one field.
pub(super) struct Fields {
    text: String,
    /// Where each session's fields start in `text`.
    starts: Vec<usize>,
    /// The trigrams of `text`: a word with one it lacks is in no field,
    /// without a scan.
    trigrams: TrigramBits,
}

impl Fields {
    fn new(sessions: &[&SessionHeader], docs: &[Arc<Doc>]) -> Fields {
        let mut text = String::new();
        let mut starts = Vec::with_capacity(sessions.len());
        for (s, d) in sessions.iter().zip(docs) {
            starts.push(text.len());
            fold_into(&s.id, &mut text);
            text.push('\n');
            fold_into(s.cwd.as_deref().unwrap_or(""), &mut text);
            text.push('\n');
            text.push_str(d.title_folded());
            text.push('\n');
        }
        let trigrams = TrigramBits::of(&text);
        Fields { text, starts, trigrams }
    }

    /// One bit per session (by position, 64 a word): whether `needle` is
    /// in its id, cwd or title.
    pub(super) fn holding(&self, needle: &Needle) -> Vec<u64> {
        let mut bits = vec![0u64; self.starts.len().div_ceil(64)];
        if !self.trigrams.may_hold(&needle.keys) {
            return bits;
        }
        let mut from = 0;
        while let Some(pos) = self.text.get(from..).and_then(|rest| needle.find(rest)) {
            let at = self.starts.partition_point(|&s| s <= from + pos) - 1;
            bits[at / 64] |= 1 << (at % 64);
            // The next session's fields (one hit per session is enough).
            from = self.starts.get(at + 1).copied().unwrap_or(self.text.len());
        }
        bits
    }
}

/// Whether bit `at` of `bits` ([`Fields::holding`]) is set.
pub(super) fn has(bits: &[u64], at: usize) -> bool {
    bits[at / 64] >> (at % 64) & 1 == 1
}

/// The docs of the sessions a search looks at (same order), their fields
/// and their roster: what [`SearchSet::search`] searches.
pub(crate) struct SearchSet {
    pub(crate) docs: Vec<Arc<Doc>>,
    pub(super) fields: Fields,
    pub(super) roster: Roster,
}

impl SearchSet {
    /// The set of `sessions` whose docs are `docs` (same order).
    pub(crate) fn new(sessions: &[&SessionHeader], docs: Vec<Arc<Doc>>) -> SearchSet {
        let fields = Fields::new(sessions, &docs);
        let roster = Roster::new(&docs);
        SearchSet { docs, fields, roster }
    }

    /// Whether no session can hold `query`: the vocabularies rule one of
    /// its words out of every doc's body, and no id, cwd or title holds it
    /// (nothing to search, told without touching a doc).
    pub(crate) fn rules_out(&self, query: &Query) -> bool {
        query.words.iter().any(|w| self.roster.rules_out(w) && self.fields.holding(w).iter().all(|&b| b == 0))
    }
}
