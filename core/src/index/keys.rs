//! The filter keys of a lower-cased text or needle (byte trigrams, and
//! the five bytes around each space), their hashing, and the distinct keys
//! of a doc's items.

use super::dict::Dictionary;
use super::fold::fold;

/// Hashes a filter key (a `u64`) with [`mix`], for the tables counting
/// them.
#[derive(Default)]
pub(super) struct MixHasher(pub(super) u64);

impl std::hash::Hasher for MixHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix(self.0 ^ u64::from(b));
        }
    }
    fn write_u64(&mut self, key: u64) {
        self.0 = mix(self.0 ^ key);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A set of filter keys (a dictionary's common keys): open addressing on
/// their [`hash`], a few nanoseconds a lookup.
pub(super) struct KeySet {
    pub(super) slots: Box<[u64]>,
}

impl KeySet {
    /// No key is this (keys are below 2^33).
    pub(super) const FREE: u64 = u64::MAX;

    pub(super) fn new(keys: &[u64]) -> KeySet {
        if keys.is_empty() {
            return KeySet { slots: Box::default() };
        }
        let mask = (keys.len() * 2).next_power_of_two() - 1;
        let mut slots = vec![Self::FREE; mask + 1].into_boxed_slice();
        for &k in keys {
            let mut i = hash(k) as usize & mask;
            while slots[i] != Self::FREE && slots[i] != k {
                i = (i + 1) & mask;
            }
            slots[i] = k;
        }
        KeySet { slots }
    }

    /// Whether `key` (whose hash is `h`) is in the set.
    pub(super) fn contains(&self, key: u64, h: u64) -> bool {
        let mask = self.slots.len().wrapping_sub(1);
        let mut i = h as usize & mask;
        while let Some(&slot) = self.slots.get(i) {
            if slot == key {
                return true;
            }
            if slot == Self::FREE {
                return false;
            }
            i = (i + 1) & mask;
        }
        false
    }

    pub(super) fn sorted(&self) -> Vec<u64> {
        let mut keys: Vec<u64> = self.slots.iter().copied().filter(|&k| k != Self::FREE).collect();
        keys.sort_unstable();
        keys
    }

    pub(super) fn bytes(&self) -> usize {
        self.slots.len() * 8
    }
}

/// Calls `f` with every filter key of a lower-cased text or needle
/// (repeats included):
///
/// - every byte trigram without ASCII whitespace (the words of a query
///   hold none, so trigrams across whitespace would only serve phrases,
///   which they hardly filter: `a b` is in nearly every text);
/// - every 5 bytes centred on a space (`ab cd`): two bytes of each word a
///   phrase joins, which rule out a session holding the words apart.
///
/// A needle that occurs in a text has all its keys among the text's (its
/// windows are the text's windows), so the filter never misses.
pub(super) fn keys(text: &[u8], mut f: impl FnMut(u64)) {
    // The last three bytes, and how many of the last bytes are not
    // whitespace.
    let (mut last, mut clean) = (0u64, 0usize);
    for (i, &b) in text.iter().enumerate() {
        last = ((last << 8) | u64::from(b)) & 0xff_ffff;
        if b.is_ascii_whitespace() {
            clean = 0;
            if b == b' ' && i >= 2 && i + 2 < text.len() {
                let around = [text[i - 2], text[i - 1], text[i + 1], text[i + 2]];
                f(SPACED | u64::from(u32::from_be_bytes(around)));
            }
        } else {
            clean += 1;
            if clean >= 3 {
                f(last);
            }
        }
    }
}

/// Trigram keys are below 2^24; keys around a space have this bit.
pub(super) const SPACED: u64 = 1 << 32;

/// A key's hash, from which its probes are drawn.
pub(super) fn hash(key: u64) -> u64 {
    mix(key + 0x9e37_79b9_7f4a_7c15)
}

pub(super) fn mix(mut x: u64) -> u64 {
    // splitmix64's finalizer.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The filter keys of the lower-cased items (a key never spans two
/// items, as a match never does) less the common keys of `dict`, each
/// once; and the keys around spaces that may be repeats (their slot in a
/// bitmap was taken), which the filter sets again but does not count when
/// it is sized.
pub(super) fn distinct_keys<'a>(
    items: impl Iterator<Item = &'a str> + Clone,
    dict: Option<&Dictionary>,
) -> (Vec<u64>, Vec<u64>) {
    let (mut keys, mut again) = (Vec::new(), Vec::new());
    // About 8 slots per key around a space (one per byte), at most 2^20.
    let bytes: usize = items.clone().map(str::len).sum();
    let shift = 64 - bytes.clamp(1 << 9, 1 << 20).next_power_of_two().trailing_zeros();
    let spaced_slot = |k: u64| (k & 0xffff_ffff).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift;
    SEEN.with(|seen| {
        let seen = &mut *seen.borrow_mut();
        if seen.trigrams.is_empty() {
            seen.trigrams.resize(1 << 18, 0);
            seen.spaced.resize(1 << 14, 0);
        }
        // The common trigrams are marked seen already: they are skipped
        // at the cost of the test every trigram takes anyway.
        let id = dict.map_or(0, |d| d.id);
        if seen.common_of != id {
            for &k in &seen.common {
                seen.trigrams[(k >> 6) as usize] &= !(1 << (k & 63));
            }
            seen.common = dict.map(|d| d.common.sorted()).unwrap_or_default();
            seen.common.retain(|&k| k & SPACED == 0);
            for &k in &seen.common {
                seen.trigrams[(k >> 6) as usize] |= 1 << (k & 63);
            }
            seen.common_of = id;
        }
        let (trigrams, spaced) = (&mut seen.trigrams, &mut seen.spaced);
        for item in items {
            self::keys(fold(item).as_bytes(), |k| {
                if k & SPACED == 0 {
                    let (word, bit) = ((k >> 6) as usize, 1u64 << (k & 63));
                    if trigrams[word] & bit == 0 {
                        trigrams[word] |= bit;
                        keys.push(k);
                    }
                    return;
                }
                if dict.is_some_and(|d| d.is_common(k)) {
                    return;
                }
                let at = spaced_slot(k);
                let (word, bit) = ((at >> 6) as usize, 1u64 << (at & 63));
                if spaced[word] & bit == 0 {
                    spaced[word] |= bit;
                    keys.push(k);
                } else {
                    again.push(k);
                }
            });
        }
        for &k in &keys {
            match k & SPACED {
                0 => trigrams[(k >> 6) as usize] &= !(1 << (k & 63)),
                _ => spaced[(spaced_slot(k) >> 6) as usize] = 0,
            }
        }
    });
    (keys, again)
}

/// The scratch of [`distinct_keys`], per thread.
#[derive(Default)]
pub(super) struct Seen {
    /// One bit per possible trigram (2 MiB).
    pub(super) trigrams: Vec<u64>,
    /// Up to 2^20 bits for the keys around spaces (one per byte of the
    /// text, so that it stays in cache for a small one).
    pub(super) spaced: Vec<u64>,
    /// The common trigrams marked in `trigrams`, and the id of their
    /// dictionary (0: none).
    pub(super) common: Vec<u64>,
    pub(super) common_of: u64,
}

thread_local! {
    /// Bitmaps to find the distinct keys of a text in linear time, left
    /// clear after each use (but for the common trigrams of the last
    /// dictionary used) through the keys they collected.
    static SEEN: std::cell::RefCell<Seen> = std::cell::RefCell::new(Seen::default());
}
