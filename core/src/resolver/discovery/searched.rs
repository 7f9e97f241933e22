//! What a search looks at, made ready once for the searches after it: the
//! picked sessions' docs in listing order, their ids, cwds and titles
//! lower-cased into one buffer ([`Fields`]) and their dictionaries and
//! serials packed ([`Roster`]), so that a search whose words the
//! vocabularies rule out touches neither a header nor a doc: one scan of
//! the fields per word and a pass over a few bytes per session. The
//! resolver keeps the last one ([`SearchMemo`]) while the source shares the
//! same listing, the search picks the same sessions and the index has not
//! changed since (its generation).

use std::sync::Arc;

use super::listed::Listed;
use crate::host::{SearchScope, SessionHeader, SharedListing, Target};
use crate::index::{fold_into, Doc, Needle, Roster, TrigramBits};

/// The sessions a search looks at: their positions in the listing, which
/// is shared (with the blocking pool too), so no header is copied.
#[derive(Clone)]
pub(super) struct Picked {
    pub(super) all: Arc<[SessionHeader]>,
    pub(super) at: Arc<[usize]>,
}

impl Picked {
    /// The picked sessions, in order.
    pub(super) fn refs(&self) -> Vec<&SessionHeader> {
        self.at.iter().map(|&i| &self.all[i]).collect()
    }
}

/// The lower-cased id, cwd and title of each picked session, one after the
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
        if !self.trigrams.may_hold(needle) {
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

/// The docs of a search's picked sessions (same order), their fields and
/// their roster.
pub(super) struct SearchSet {
    pub(super) docs: Vec<Arc<Doc>>,
    pub(super) fields: Fields,
    pub(super) roster: Roster,
}

impl SearchSet {
    pub(super) fn new(sessions: &[&SessionHeader], docs: Vec<Arc<Doc>>) -> SearchSet {
        let fields = Fields::new(sessions, &docs);
        let roster = Roster::new(&docs);
        SearchSet { docs, fields, roster }
    }

    /// Whether no session can hold `word`: the vocabularies rule it out of
    /// every doc's body, and no id, cwd or title holds it.
    pub(super) fn rules_out(&self, word: &Needle) -> bool {
        self.roster.rules_out(word) && self.fields.holding(word).iter().all(|&b| b == 0)
    }
}

/// The last search's picked sessions and, when every doc of theirs was
/// kept by the index, its [`SearchSet`] with the index's generation then.
pub(crate) struct SearchMemo {
    listing: SharedListing,
    target: Target,
    scope: SearchScope,
    picked: Picked,
    set: Option<(u64, Arc<SearchSet>)>,
}

impl SearchMemo {
    /// The sessions the last search (`memo`) picked, when this one is over
    /// the same shared listing with the same target and scope.
    pub(super) fn picked(
        memo: &Option<SearchMemo>,
        listed: &Listed,
        target: &Target,
        scope: SearchScope,
    ) -> Option<Picked> {
        let Listed::Shared(listing) = listed else { return None };
        let m = memo.as_ref()?;
        (m.listing.ptr_eq(listing) && m.target == *target && m.scope == scope).then(|| m.picked.clone())
    }

    /// The set the last search (`memo`) made of `picked` (the same
    /// positions), if the index is still at `generation`.
    pub(super) fn set(memo: &Option<SearchMemo>, picked: &Picked, generation: u64) -> Option<Arc<SearchSet>> {
        let m = memo.as_ref().filter(|m| Arc::ptr_eq(&m.picked.at, &picked.at))?;
        m.set.as_ref().filter(|(g, _)| *g == generation).map(|(_, set)| Arc::clone(set))
    }

    /// What to keep of a search over a shared listing (`None` over any
    /// other): what it picked and, if given, the set it made under the
    /// index's generation `generation`.
    pub(super) fn new(
        listed: &Listed,
        target: &Target,
        scope: SearchScope,
        picked: &Picked,
        set: Option<(u64, Arc<SearchSet>)>,
    ) -> Option<SearchMemo> {
        let Listed::Shared(listing) = listed else { return None };
        Some(SearchMemo { listing: listing.clone(), target: target.clone(), scope, picked: picked.clone(), set })
    }
}
