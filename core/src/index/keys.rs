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
    /// No key is this (keys are below 2^34).
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
///   phrase joins, which rule out a session holding the words apart;
/// - every 4 bytes without ASCII whitespace of which at least three are
///   ASCII digits (`1137`, `r113`): there are only a thousand trigrams of
///   digits, so each is in many texts of numbers and a number's trigrams
///   are found apart (`113` and `137` in other numbers than `1137`); the
///   4-byte key ties two of them together, so an identifier fragment
///   passes the filters of few more sessions than hold it.
///
/// A needle that occurs in a text has all its keys among the text's (its
/// windows are the text's windows), so the filter never misses.
pub(super) fn keys(text: &[u8], mut f: impl FnMut(u64)) {
    keys_and_pairs(
        text,
        |k| {
            f(k);
            false
        },
        |_| {},
    );
}

/// [`keys`] and [`pairs`] of a lower-cased text in one pass over it (a
/// doc's keys and pairs are found together: one fold and one scan of each
/// item, and one look at a trigram's slot for both): `key` is called with
/// every key, exactly as [`keys`] calls its function, and answers, for a
/// trigram, whether it is common (the `common` of [`pairs`]; ignored for
/// other keys); `pair` with every pair, exactly as [`pairs`] calls its
/// function.
pub(super) fn keys_and_pairs(text: &[u8], mut key: impl FnMut(u64) -> bool, mut pair: impl FnMut(u32)) {
    // The last four bytes, which of them are digits (a bit each), how many
    // of the last bytes are not whitespace, and whether the last trigram
    // was common.
    let (mut last, mut digits, mut clean, mut was_common) = (0u64, 0u32, 0usize, false);
    for (i, &b) in text.iter().enumerate() {
        last = ((last << 8) | u64::from(b)) & 0xffff_ffff;
        digits = ((digits << 1) | u32::from(b.is_ascii_digit())) & 0xf;
        if b.is_ascii_whitespace() {
            (clean, was_common) = (0, false);
            if b == b' ' && i >= 2 && i + 2 < text.len() {
                let around = [text[i - 2], text[i - 1], text[i + 1], text[i + 2]];
                key(SPACED | u64::from(u32::from_be_bytes(around)));
            }
            continue;
        }
        clean += 1;
        if clean >= 3 {
            let now = key(last & 0xff_ffff);
            if clean >= 4 {
                let numeral = digits.count_ones() >= 3;
                if numeral {
                    key(NUMERAL | last);
                }
                if numeral || (now && was_common) {
                    pair(last as u32);
                }
            }
            was_common = now;
        }
    }
}

/// Trigram keys are below 2^24; keys around a space have this bit.
pub(super) const SPACED: u64 = 1 << 32;

/// Keys of 4 bytes, three or more of them digits, have this bit.
pub(super) const NUMERAL: u64 = 1 << 33;

/// Whether a key is a trigram (not a key around a space, nor of 4 bytes
/// of digits): what the trigram bitmaps and a vocabulary's bits cover.
pub(super) fn is_trigram(key: u64) -> bool {
    key < 1 << 24
}

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
/// included): each 4 bytes without ASCII whitespace
///
/// - whose two trigrams are both `common` (the keys a filter built with a
///   dictionary leaves out, so that a word of common trigrams alone passes
///   every filter), or
/// - of which at least three are ASCII digits (the filters' number keys,
///   [`NUMERAL`]): a filter tells a number's presence only doc by doc, so
///   a query for a rare number (`PR1137`) would test every session's
///   filter; listed, it is answered from the sessions that hold it.
///
/// The dictionary's vocabulary lists who holds them (`vocab.rs`).
pub(super) fn pairs(text: &[u8], common: impl Fn(u64) -> bool, f: impl FnMut(u32)) {
    keys_and_pairs(text, |k| is_trigram(k) && common(k), f);
}

/// The trigrams of a text, hashed into a fixed bitmap ([`Self::BITS`]
/// bits, one probe each): whether a needle may be in the text, without
/// scanning it. Never wrong about a needle that is in it (all its trigrams
/// are); a needle without trigrams (under three bytes) may always be.
pub(super) struct TrigramBits(Box<[u64]>);

impl TrigramBits {
    /// 2^19 bits (64 KB): for the ids, cwds and titles of some 10,000
    /// sessions (a few tens of thousands of distinct trigrams) about one
    /// trigram in ten that is not there passes.
    const BITS: usize = 1 << 19;

    /// The trigrams of a lower-cased text.
    pub(super) fn of(text: &str) -> TrigramBits {
        let mut bits = vec![0u64; Self::BITS / 64].into_boxed_slice();
        keys(text.as_bytes(), |k| {
            if is_trigram(k) {
                let at = Self::slot(k);
                bits[at / 64] |= 1 << (at % 64);
            }
        });
        TrigramBits(bits)
    }

    fn slot(key: u64) -> usize {
        hash(key) as usize & (Self::BITS - 1)
    }

    /// Whether every trigram of a needle (of its `keys`) may be in the text.
    pub(super) fn may_hold(&self, keys: &[u64]) -> bool {
        keys.iter().filter(|&&k| is_trigram(k)).all(|&k| {
            let at = Self::slot(k);
            self.0[at / 64] >> (at % 64) & 1 == 1
        })
    }
}
