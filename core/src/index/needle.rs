//! A needle: one lower-cased word or phrase of a query, with its filter
//! keys and the hashes and verdicts each dictionary gives them (made once
//! per search), and the finder that locates it in a text.

use super::dict::Dictionary;
use super::keys::{hash, is_trigram, keys, pairs};
use super::vocab::Verdict;
use memchr::memmem;

/// A lower-cased needle, prepared once per query for every session.
pub(super) struct Needle {
    pub(super) text: String,
    finder: Finder,
    /// Its distinct filter keys, longest first.
    pub(super) keys: Box<[u64]>,
    /// The hashes of its keys a doc's filter is tested with, per
    /// dictionary (by id; 0: none, every key), made on first use.
    pub(super) hashes: std::cell::RefCell<Vec<(u64, Box<[u64]>)>>,
    /// What each dictionary's vocabulary says of it (by id), asked on
    /// first use: once per search, as the needle is made per search.
    pub(super) verdicts: std::cell::RefCell<Vec<(u64, Verdict)>>,
}

impl Needle {
    pub(super) fn new(text: String) -> Needle {
        let finder = Finder(memmem::Finder::new(text.as_bytes()).into_owned());
        let mut keys = Vec::new();
        self::keys(text.as_bytes(), |k| keys.push(k));
        keys.sort_unstable();
        keys.dedup();
        // The keys of 4 and 5 bytes first (the numbers' and those around
        // spaces, by their flags), then the trigrams: a filter is tested
        // up to the first key it lacks, and a longer key is lacking more
        // often.
        keys.reverse();
        Needle { text, finder, keys: keys.into(), hashes: Default::default(), verdicts: Default::default() }
    }

    /// Runs `f` on the hashes of the keys a filter built with `dict` holds
    /// if the needle is there: all of them, less the dictionary's common
    /// keys (which such a filter leaves out).
    pub(super) fn with_hashes<T>(&self, dict: Option<&Dictionary>, f: impl FnOnce(&[u64]) -> T) -> T {
        let id = dict.map_or(0, |d| d.id);
        let mut memo = self.hashes.borrow_mut();
        let at = match memo.iter().position(|(i, _)| *i == id) {
            Some(at) => at,
            None => {
                let kept = self.keys.iter().filter(|&&k| dict.is_none_or(|d| !d.is_common(k))).map(|&k| hash(k));
                memo.push((id, kept.collect()));
                memo.len() - 1
            }
        };
        f(&memo[at].1)
    }

    /// Runs `f` on what `dict`'s vocabulary says of the needle: asked
    /// with its uncommon trigrams and its pairs under `dict`.
    pub(super) fn with_verdict<T>(&self, dict: &Dictionary, f: impl FnOnce(&Verdict) -> T) -> T {
        let mut memo = self.verdicts.borrow_mut();
        let at = match memo.iter().position(|(i, _)| *i == dict.id) {
            Some(at) => at,
            None => {
                let trigrams: Vec<u64> =
                    self.keys.iter().copied().filter(|&k| is_trigram(k) && !dict.is_common(k)).collect();
                let mut held = Vec::new();
                pairs(self.text.as_bytes(), |k| dict.is_common(k), |p| held.push(p));
                held.sort_unstable();
                held.dedup();
                memo.push((dict.id, dict.vocab.verdict(&trigrams, &held)));
                memo.len() - 1
            }
        };
        f(&memo[at].1)
    }

    /// The first occurrence in `folded`.
    pub(super) fn find(&self, folded: &str) -> Option<usize> {
        self.finder.find(folded)
    }

    /// Whether it occurs in `folded`.
    pub(super) fn is_in(&self, folded: &str) -> bool {
        self.finder.is_in(folded)
    }

    /// Its searcher alone, for other threads (the needle's memos stay on
    /// the thread that tests the filters).
    pub(super) fn finder(&self) -> Finder {
        self.finder.clone()
    }
}

/// A needle's substring searcher, which threads share: what verifying a
/// text needs.
#[derive(Clone)]
pub(super) struct Finder(memmem::Finder<'static>);

impl Finder {
    /// The first occurrence in `folded`.
    pub(super) fn find(&self, folded: &str) -> Option<usize> {
        self.0.find(folded.as_bytes())
    }

    /// Whether it occurs in `folded`.
    pub(super) fn is_in(&self, folded: &str) -> bool {
        self.find(folded).is_some()
    }

    /// Where it is in `folded` (not overlapping), in order.
    pub(super) fn positions<'a>(&'a self, folded: &'a str) -> impl Iterator<Item = usize> + 'a {
        self.0.find_iter(folded.as_bytes())
    }

    /// Where it first is in `folded`, and how many times it is there (not
    /// overlapping).
    pub(super) fn first_and_count(&self, folded: &str) -> Option<(usize, u32)> {
        let mut all = self.0.find_iter(folded.as_bytes());
        let first = all.next()?;
        Some((first, 1 + all.count() as u32))
    }
}
