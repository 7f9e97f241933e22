//! The Bloom filter over a doc's keys, in memory or left in the cache
//! file it was loaded from, and its checksum.

use super::keys::hash;
use super::stored::{Source, Stored, Unreadable};
use std::borrow::Cow;

/// Bloom filter bits per distinct key. With 3 probes, 4 bits give a
/// false-positive rate of about 15% per key; a needle of n bytes has about
/// n-2 keys that must all hit, so a 7-byte word passes a session that does
/// not hold it well under once in a thousand (trigrams are not
/// independent, so more in practice). Measured against the memory bound
/// (docs/discovery.md): 3 bits and 2 probes saved 3.7% of the projected
/// text, and verified three times as many sessions for `PR1137`.
pub(super) const BITS_PER_KEY: usize = 4;

pub(super) const PROBES: u64 = 3;

/// A Bloom filter over the keys of [`keys`]: `m` bits in bytes, bit `p` at
/// bit `p % 8` of byte `p / 8` (the layout of little-endian 64-bit words,
/// as the cache file stores it), `m` a multiple of 64.
pub(super) struct Bloom {
    pub(super) bits: Bits,
}

/// Where a filter's bytes are.
pub(super) enum Bits {
    /// Its own (every filter built in this process).
    Held(Box<[u8]>),
    /// In the cache file the doc was loaded from, among its stored texts:
    /// read by each search that tests it ([`FilterPass`]), in file order
    /// through one reused buffer, so a process that loads the index and
    /// searches once never holds every filter; kept in memory from the
    /// second search of the process on.
    Stored(Box<StoredBits>),
}

/// A filter left in the cache file its doc was loaded from.
pub(super) struct StoredBits {
    pub(super) at: Stored,
    /// Its bytes once a search kept them.
    pub(super) kept: std::sync::OnceLock<Box<[u8]>>,
}

impl Bloom {
    /// A filter of the keys of [`distinct_keys`], sized by the distinct
    /// ones.
    pub(super) fn with_keys((keys, again): (Vec<u64>, Vec<u64>)) -> Bloom {
        if keys.is_empty() {
            return Bloom { bits: Bits::Held(Box::new([])) };
        }
        let words = (keys.len() * BITS_PER_KEY).div_ceil(64);
        let mut bits = vec![0u8; words * 8].into_boxed_slice();
        let m = (words * 64) as u64;
        for h in keys.into_iter().chain(again).map(hash) {
            for p in Self::probes(h, m) {
                bits[(p / 8) as usize] |= 1 << (p % 8);
            }
        }
        Bloom { bits: Bits::Held(bits) }
    }

    /// A filter that may hold every key (64 bits, all set): what a doc
    /// whose keys were never found is given.
    pub(super) fn admitting_all() -> Bloom {
        Bloom { bits: Bits::Held(Box::new([0xFF; 8])) }
    }

    /// Its bytes if they are in memory.
    #[cfg(test)]
    pub(super) fn held(&self) -> Option<&[u8]> {
        match &self.bits {
            Bits::Held(bits) => Some(bits),
            Bits::Stored(stored) => stored.kept.get().map(|b| &**b),
        }
    }

    /// Where its bytes are read from: held (its own, or kept by a
    /// search), or its place in the cache file.
    pub(super) fn source(&self) -> Source<'_> {
        match &self.bits {
            Bits::Held(bits) => Source::Held(bits),
            Bits::Stored(stored) => match stored.kept.get() {
                Some(bits) => Source::Held(bits),
                None => Source::Stored(&stored.at, filter_seed(stored.at.len)),
            },
        }
    }

    /// Its bytes, wherever they are: read back from the cache file (and
    /// checked against their checksum) when not in memory.
    pub(super) fn bits(&self) -> Result<Cow<'_, [u8]>, Unreadable> {
        match &self.bits {
            Bits::Held(bits) => Ok(Cow::Borrowed(bits)),
            Bits::Stored(stored) => match stored.kept.get() {
                Some(bits) => Ok(Cow::Borrowed(bits)),
                None => stored.at.read(filter_checksum).map(Cow::Owned),
            },
        }
    }

    pub(super) fn probes(h: u64, m: u64) -> impl Iterator<Item = u64> {
        let (h1, h2) = (h, h.rotate_left(32) | 1);
        (0..PROBES).map(move |i| {
            let x = h1.wrapping_add(i.wrapping_mul(h2));
            ((u128::from(x) * u128::from(m)) >> 64) as u64
        })
    }

    /// Whether the key of this [`hash`] may be present in the filter of
    /// these bytes.
    pub(super) fn contains(bits: &[u8], h: u64) -> bool {
        if bits.is_empty() {
            return false;
        }
        let m = (bits.len() * 8) as u64;
        Self::probes(h, m).all(|p| bits[(p / 8) as usize] & (1 << (p % 8)) != 0)
    }

    /// The length of its bytes, wherever they are.
    pub(super) fn bytes(&self) -> usize {
        match &self.bits {
            Bits::Held(bits) => bits.len(),
            Bits::Stored(stored) => stored.at.len,
        }
    }
}

/// The checksum the index file keeps of a filter's bytes, seeded with
/// their length marked apart from a text's seed (the length it
/// decompresses to, [`text_checksum`]).
pub(super) fn filter_checksum(bits: &[u8]) -> u64 {
    crate::cache_file::checksum(filter_seed(bits.len()), bits)
}

/// What [`filter_checksum`] seeds the checksum of `len` bytes with.
pub(super) fn filter_seed(len: usize) -> u64 {
    len as u64 ^ 0xf11e_0000_0000_0000
}
