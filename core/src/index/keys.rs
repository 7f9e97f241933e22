//! The filter keys of a lower-cased text or needle (byte trigrams, and
//! the five bytes around each space), their hashing, and the distinct keys
//! of a doc's items.

/// The items of a doc's text, by their ends.
pub(super) fn items_of<'a>(text: &'a str, ends: &'a [usize]) -> impl Iterator<Item = &'a str> + Clone {
    let mut start = 0;
    ends.iter().map(move |&end| {
        let item = text.get(start..end).unwrap_or_default();
        start = end;
        item
    })
}

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

/// Calls `f` with every pair of a lower-cased text or needle (repeats
/// included): each 4 bytes without ASCII whitespace whose two trigrams
/// are both `common` (the keys a filter built with a dictionary leaves
/// out, so that a word of common trigrams alone passes every filter; the
/// dictionary's vocabulary lists who holds them, `vocab.rs`).
pub(super) fn pairs(text: &[u8], common: impl Fn(u64) -> bool, mut f: impl FnMut(u32)) {
    // The last four bytes; how many of the last bytes are not whitespace;
    // whether the last trigram was common.
    let (mut last, mut clean, mut was_common) = (0u32, 0usize, false);
    for &b in text {
        last = (last << 8) | u32::from(b);
        if b.is_ascii_whitespace() {
            (clean, was_common) = (0, false);
            continue;
        }
        clean += 1;
        if clean >= 3 {
            let now = common(u64::from(last & 0xff_ffff));
            if clean >= 4 && now && was_common {
                f(last);
            }
            was_common = now;
        }
    }
}
