//! What a search looks at, made ready once for the searches after it: the
//! searched sessions' docs in order, their ids, cwds and titles lower-cased
//! into one buffer ([`Fields`]) and their dictionaries and serials packed
//! ([`Roster`]), so that a search whose words the vocabularies rule out
//! touches neither a header nor a doc: one scan of the fields per word and a
//! pass over a few bytes per session. From a set's second search on, the
//! fields' trigrams are indexed ([`Grams`]) and the docs' serials too
//! ([`Roster`]): a word the vocabularies can tell of is looked up in both,
//! and only the sessions that may hold it are touched.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::doc::Doc;
use super::fold::fold_into;
use super::keys::{hash, is_trigram, keys, TrigramBits};
use super::needle::Needle;
use super::pass::Roster;
use super::query::Query;
use crate::host::SessionHeader;

/// The headers a set was made of, in its order: a listing's, all of it or
/// those at some positions of it (nothing copied).
#[derive(Clone, Copy)]
pub(crate) struct Headers<'a> {
    all: &'a [SessionHeader],
    at: Option<&'a [usize]>,
}

impl<'a> Headers<'a> {
    /// Every header of `all`, in order.
    pub(crate) fn all(all: &'a [SessionHeader]) -> Headers<'a> {
        Headers { all, at: None }
    }

    /// The headers of `all` at `at`, in that order.
    pub(crate) fn at(all: &'a [SessionHeader], at: &'a [usize]) -> Headers<'a> {
        Headers { all, at: Some(at) }
    }

    /// How many there are.
    pub(crate) fn len(&self) -> usize {
        self.at.map_or(self.all.len(), <[usize]>::len)
    }

    /// The `i`th.
    pub(crate) fn get(&self, i: usize) -> &'a SessionHeader {
        match self.at {
            Some(at) => &self.all[at[i]],
            None => &self.all[i],
        }
    }
}

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
    /// The sessions holding each trigram, made when first asked for.
    grams: OnceLock<Grams>,
}

impl Fields {
    fn new(sessions: Headers<'_>, docs: &[Arc<Doc>]) -> Fields {
        let mut text = String::new();
        let mut starts = Vec::with_capacity(sessions.len());
        for (i, d) in docs.iter().enumerate().take(sessions.len()) {
            let s = sessions.get(i);
            starts.push(text.len());
            fold_into(&s.id, &mut text);
            text.push('\n');
            fold_into(s.cwd.as_deref().unwrap_or(""), &mut text);
            text.push('\n');
            text.push_str(d.title_folded());
            text.push('\n');
        }
        let trigrams = TrigramBits::of(&text);
        Fields { text, starts, trigrams, grams: OnceLock::new() }
    }

    /// The fields of the session at `at`.
    fn of(&self, at: usize) -> &str {
        let end = self.starts.get(at + 1).copied().unwrap_or(self.text.len());
        &self.text[self.starts[at]..end]
    }

    /// The sessions (by position, ascending) whose id, cwd or title holds
    /// `needle`: with `indexed`, those its trigrams' sessions ([`Grams`],
    /// made now if not yet) give, each tested; else (or for a needle
    /// without a trigram) one scan of every session's fields.
    pub(super) fn holding(&self, needle: &Needle, indexed: bool, work: &mut Work) -> Vec<u32> {
        if !self.trigrams.may_hold(&needle.keys) {
            return Vec::new();
        }
        let grams = indexed.then(|| self.grams.get_or_init(|| Grams::new(self)));
        if let Some(candidates) = grams.and_then(|g| g.holding(&needle.keys)) {
            work.fields += candidates.len() as u64;
            return candidates.into_iter().filter(|&at| needle.is_in(self.of(at as usize))).collect();
        }
        work.fields += self.starts.len() as u64;
        let mut held = Vec::new();
        let mut from = 0;
        while let Some(pos) = self.text.get(from..).and_then(|rest| needle.find(rest)) {
            let at = self.starts.partition_point(|&s| s <= from + pos) - 1;
            held.push(at as u32);
            // The next session's fields (one hit per session is enough).
            from = self.starts.get(at + 1).copied().unwrap_or(self.text.len());
        }
        held
    }
}

/// The sessions whose fields hold each trigram, by bucket (the trigram's
/// hash; two trigrams may share one, which only adds sessions to test):
/// the positions of each bucket's sessions, ascending, one after the
/// other.
struct Grams {
    mask: u64,
    /// Where each bucket's positions start in `positions` (one more than
    /// buckets: the end).
    starts: Box<[u32]>,
    positions: Box<[u32]>,
}

impl Grams {
    /// Counted, then filled: two passes over the fields, no list per bucket.
    fn new(fields: &Fields) -> Grams {
        let buckets = (fields.text.len() / 4).next_power_of_two().clamp(1 << 10, 1 << 22);
        let mask = buckets as u64 - 1;
        let mut counts = vec![0u32; buckets + 1];
        // The last session put in each bucket (each once per session).
        let mut last = vec![u32::MAX; buckets];
        let each = |f: &mut dyn FnMut(usize, u32)| {
            for at in 0..fields.starts.len() {
                keys(fields.of(at).as_bytes(), |k| {
                    if is_trigram(k) {
                        f((hash(k) & mask) as usize, at as u32);
                    }
                });
            }
        };
        each(&mut |b, at| {
            if last[b] != at {
                last[b] = at;
                counts[b + 1] += 1;
            }
        });
        for b in 0..buckets {
            counts[b + 1] += counts[b];
        }
        let mut positions = vec![0u32; counts[buckets] as usize];
        let mut next = counts.clone();
        last.fill(u32::MAX);
        each(&mut |b, at| {
            if last[b] != at {
                last[b] = at;
                positions[next[b] as usize] = at;
                next[b] += 1;
            }
        });
        Grams { mask, starts: counts.into(), positions: positions.into() }
    }

    /// The sessions of a bucket.
    fn bucket(&self, key: u64) -> &[u32] {
        let b = (hash(key) & self.mask) as usize;
        &self.positions[self.starts[b] as usize..self.starts[b + 1] as usize]
    }

    /// The sessions that may hold every trigram of `keys` (ascending):
    /// the buckets' intersection, smallest first; `None` when `keys` holds
    /// no trigram.
    fn holding(&self, keys: &[u64]) -> Option<Vec<u32>> {
        let mut lists: Vec<&[u32]> = keys.iter().filter(|&&k| is_trigram(k)).map(|&k| self.bucket(k)).collect();
        lists.sort_unstable_by_key(|l| l.len());
        let (first, rest) = lists.split_first()?;
        let mut held = first.to_vec();
        for list in rest {
            if held.is_empty() {
                break;
            }
            held = intersection(&held, list);
        }
        Some(held)
    }
}

/// The values in both of two ascending lists (each galloped through by
/// the other's values: a short list costs its length, times a logarithm).
fn intersection(short: &[u32], long: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(short.len().min(long.len()));
    let mut rest = long;
    for &v in short {
        let at = rest.partition_point(|&x| x < v);
        rest = &rest[at..];
        if rest.first() == Some(&v) {
            out.push(v);
        }
    }
    out
}

/// The ascending union of ascending lists.
pub(super) fn union(mut lists: Vec<Vec<u32>>) -> Vec<u32> {
    if lists.len() == 1 {
        return lists.pop().unwrap_or_default();
    }
    let mut all: Vec<u32> = lists.concat();
    all.sort_unstable();
    all.dedup();
    all
}

/// What a search touched (for tests: what a warm search costs): sessions
/// whose fields it tested (a scan counts every session), and sessions it
/// looked at past the fields (their docs' verdicts asked, their filters
/// tested).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Work {
    pub(crate) fields: u64,
    pub(crate) sessions: u64,
}

/// The docs of the sessions a search looks at (same order), their fields
/// and their roster: what [`SearchSet::search`] searches.
pub(crate) struct SearchSet {
    pub(crate) docs: Vec<Arc<Doc>>,
    pub(super) fields: Fields,
    pub(super) roster: Roster,
    /// Searches over it so far: the second on looks its words up.
    searches: AtomicUsize,
    /// Its sessions' positions, newer `createdAt` first (listing order
    /// among equals), made by the first search that walks them all.
    pub(super) newest: std::sync::OnceLock<Box<[u32]>>,
}

impl SearchSet {
    /// The set of `sessions` whose docs are `docs` (same order).
    pub(crate) fn new(sessions: Headers<'_>, docs: Vec<Arc<Doc>>) -> SearchSet {
        let fields = Fields::new(sessions, &docs);
        let roster = Roster::new(&docs);
        SearchSet { docs, fields, roster, searches: AtomicUsize::new(0), newest: Default::default() }
    }

    /// Whether this search is to look its words up ([`Grams`] and the
    /// roster's serials): from the set's second search on, so that a set
    /// searched once (a process that searches once) never pays for them.
    pub(super) fn indexed(&self) -> bool {
        self.searches.fetch_add(1, Ordering::Relaxed) >= 1
    }

    /// Whether no session can hold `query`: the vocabularies rule one of
    /// its words out of every doc's body, and no id, cwd or title holds it
    /// (nothing to search, told without touching a doc).
    pub(crate) fn rules_out(&self, query: &Query) -> bool {
        let indexed = self.searches.load(Ordering::Relaxed) >= 1;
        query.words.iter().any(|w| {
            self.roster.rules_out(w, indexed) && self.fields.holding(w, indexed, &mut Work::default()).is_empty()
        })
    }
}
