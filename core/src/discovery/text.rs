//! The built-in full-text index: per session, its projected text
//! compressed (zstd, with a dictionary the index trains on its own texts)
//! and a Bloom filter of keys of its lower-cased text: byte trigrams
//! without whitespace, and the five bytes around each space. A query first
//! tests every session's filter (a few probes each, no decompression),
//! then verifies the survivors on their decompressed text, so every answer
//! is exact; the filter only decides what is worth decompressing.
//!
//! Matching is on `str::to_lowercase` (Unicode default case mapping) and
//! plain substrings, so CJK text needs no tokenizer and `1137` is found
//! inside `PR1137`. Keys are of UTF-8 bytes; a needle without any (shorter
//! than three bytes, or only of keys nearly every session holds) cannot be
//! filtered and every session is verified.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use memchr::memmem;
use zstd::zstd_safe::{CCtx, CDict, DCtx, DDict};

use super::fingerprint::Fingerprint;
use crate::cache_file::StoredTexts;

/// Bloom filter bits per distinct key. With 3 probes, 4 bits give a
/// false-positive rate of about 15% per key; a needle of n bytes has about
/// n-2 keys that must all hit, so a 7-byte word passes a session that does
/// not hold it well under once in a thousand (trigrams are not
/// independent, so more in practice). Measured against the memory bound
/// (docs/discovery.md): 3 bits and 2 probes saved 3.7% of the projected
/// text, and verified three times as many sessions for `PR1137`.
const BITS_PER_KEY: usize = 4;
const PROBES: u64 = 3;
/// zstd level of the stored text: fast to write and to read.
const ZSTD_LEVEL: i32 = 3;
/// The index trains its zstd dictionary once the texts compressed without
/// one reach this much, on at most `TRAIN_SAMPLE` bytes of them, into a
/// dictionary of `DICTIONARY_BYTES`.
pub(crate) const TRAIN_AT: usize = 2 << 20;
const TRAIN_SAMPLE: usize = 1 << 20;
const DICTIONARY_BYTES: usize = 64 << 10;
/// A key is common when at least this share of the sampled texts hold it,
/// out of at least `COMMON_SAMPLES` of them.
const COMMON: (usize, usize) = (8, 10);
const COMMON_SAMPLES: usize = 20;

/// A zstd dictionary trained on a sample of the index's own texts, kept
/// once per index: one session's text is small for zstd alone (a few tens
/// of KB), and sessions share most of their vocabulary.
///
/// With it come the filter keys nearly every sampled text holds (`COMMON`):
/// they rule out almost nothing, so the filters of docs built with this
/// dictionary leave them out and a query does not test them there (a
/// third of the keys of a session on the bench).
pub(crate) struct Dictionary {
    /// Unique in the process, to tell dictionaries apart cheaply.
    id: u64,
    raw: Box<[u8]>,
    decompress: DDict<'static>,
    common: KeySet,
}

impl Dictionary {
    /// A dictionary from its bytes and common keys (as trained, or read
    /// back from a cache file); `None` if zstd rejects the bytes or the
    /// keys are not sorted.
    fn new(raw: Box<[u8]>, common: Box<[u64]>) -> Option<Dictionary> {
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        if common.windows(2).any(|w| w[0] >= w[1]) {
            return None;
        }
        let decompress = DDict::try_create(&raw)?;
        let common = KeySet::new(&common);
        Some(Dictionary { id: IDS.fetch_add(1, Ordering::Relaxed), raw, decompress, common })
    }

    /// Trains one on sample texts (each with its items' ends); also
    /// returns how many keys of the samples are common.
    fn train(samples: &[(Vec<u8>, Vec<usize>)]) -> Option<(Dictionary, usize)> {
        let texts: Vec<&[u8]> = samples.iter().map(|(t, _)| t.as_slice()).collect();
        let raw = zstd::dict::from_samples(&texts, DICTIONARY_BYTES).ok()?;
        let mut common = Vec::new();
        let mut left_out = 0;
        if samples.len() >= COMMON_SAMPLES {
            let mut counts: HashMap<u64, usize, std::hash::BuildHasherDefault<MixHasher>> = HashMap::default();
            for (text, ends) in samples {
                for k in distinct_keys(items_of(std::str::from_utf8(text).ok()?, ends), None).0 {
                    *counts.entry(k).or_default() += 1;
                }
            }
            let at_least = (samples.len() * COMMON.0).div_ceil(COMMON.1);
            for (k, n) in counts {
                if n >= at_least {
                    common.push(k);
                    left_out += n;
                }
            }
            common.sort_unstable();
        }
        Some((Dictionary::new(raw.into_boxed_slice(), common.into())?, left_out))
    }

    fn is_common(&self, key: u64) -> bool {
        self.common.contains(key, hash(key))
    }

    /// Bytes it holds: its own, zstd's digested form for reading, and the
    /// common keys.
    fn bytes(&self) -> usize {
        self.raw.len() + self.decompress.sizeof() + self.common.bytes()
    }
}

/// A dictionary digested for compression (its hash tables: several times
/// the dictionary). Made for the docs being built and dropped with the
/// last of them, not kept by the index: see [`DocCache::encoder`].
pub(crate) struct Encoder {
    dict: Arc<Dictionary>,
    compress: CDict<'static>,
}

impl Encoder {
    fn new(dict: &Arc<Dictionary>) -> Option<Encoder> {
        Some(Encoder { dict: Arc::clone(dict), compress: CDict::try_create(&dict.raw, ZSTD_LEVEL)? })
    }
}

/// Hashes a filter key (a `u64`) with [`mix`], for the tables counting
/// them.
#[derive(Default)]
struct MixHasher(u64);

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
struct KeySet {
    slots: Box<[u64]>,
}

impl KeySet {
    /// No key is this (keys are below 2^33).
    const FREE: u64 = u64::MAX;

    fn new(keys: &[u64]) -> KeySet {
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
    fn contains(&self, key: u64, h: u64) -> bool {
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

    fn sorted(&self) -> Vec<u64> {
        let mut keys: Vec<u64> = self.slots.iter().copied().filter(|&k| k != Self::FREE).collect();
        keys.sort_unstable();
        keys
    }

    fn bytes(&self) -> usize {
        self.slots.len() * 8
    }
}

/// `text` compressed, with `dict` if given.
fn compress(text: &[u8], dict: Option<&Encoder>) -> Box<[u8]> {
    if text.is_empty() {
        return Box::default();
    }
    let packed = CONTEXTS.with(|c| {
        let mut c = c.borrow_mut();
        let cctx = c.0.as_mut()?;
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(text.len()));
        match dict {
            Some(d) => cctx.compress_using_cdict(&mut out, text, &d.compress),
            None => cctx.compress(&mut out, text, ZSTD_LEVEL),
        }
        .ok()?;
        Some(out)
    });
    // Compressing into a buffer of the bound cannot fail.
    packed.map(Vec::into_boxed_slice).unwrap_or_default()
}

/// `packed` decompressed to exactly `len` bytes, with `dict` if given.
fn decompress(packed: &[u8], len: usize, dict: Option<&Dictionary>) -> Option<Vec<u8>> {
    CONTEXTS.with(|c| {
        let mut c = c.borrow_mut();
        let dctx = c.1.as_mut()?;
        let mut out = Vec::with_capacity(len);
        match dict {
            Some(d) => dctx.decompress_using_ddict(&mut out, packed, &d.decompress),
            None => dctx.decompress(&mut out, packed),
        }
        .ok()?;
        (out.len() == len).then_some(out)
    })
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
fn keys(text: &[u8], mut f: impl FnMut(u64)) {
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
const SPACED: u64 = 1 << 32;

/// A Bloom filter over the keys of [`keys`]: `m` bits in bytes, bit `p` at
/// bit `p % 8` of byte `p / 8` (the layout of little-endian 64-bit words,
/// as the cache file stores it), `m` a multiple of 64.
pub(crate) struct Bloom {
    bits: Bits,
}

/// Where a filter's bytes are.
enum Bits {
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
struct StoredBits {
    at: Stored,
    /// Its bytes once a search kept them.
    kept: std::sync::OnceLock<Box<[u8]>>,
}

/// A key's hash, from which its probes are drawn.
fn hash(key: u64) -> u64 {
    mix(key + 0x9e37_79b9_7f4a_7c15)
}

fn mix(mut x: u64) -> u64 {
    // splitmix64's finalizer.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Bloom {
    /// A filter of the keys of [`distinct_keys`], sized by the distinct
    /// ones.
    fn with_keys((keys, again): (Vec<u64>, Vec<u64>)) -> Bloom {
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

    /// Its bytes if they are in memory.
    #[cfg(test)]
    fn held(&self) -> Option<&[u8]> {
        match &self.bits {
            Bits::Held(bits) => Some(bits),
            Bits::Stored(stored) => stored.kept.get().map(|b| &**b),
        }
    }

    /// Its bytes, wherever they are: read back from the cache file (and
    /// checked against their checksum) when not in memory.
    fn bits(&self) -> Result<Cow<'_, [u8]>, Unreadable> {
        match &self.bits {
            Bits::Held(bits) => Ok(Cow::Borrowed(bits)),
            Bits::Stored(stored) => match stored.kept.get() {
                Some(bits) => Ok(Cow::Borrowed(bits)),
                None => stored.at.read(filter_checksum).map(Cow::Owned),
            },
        }
    }

    fn probes(h: u64, m: u64) -> impl Iterator<Item = u64> {
        let (h1, h2) = (h, h.rotate_left(32) | 1);
        (0..PROBES).map(move |i| {
            let x = h1.wrapping_add(i.wrapping_mul(h2));
            ((u128::from(x) * u128::from(m)) >> 64) as u64
        })
    }

    /// Whether the key of this [`hash`] may be present in the filter of
    /// these bytes.
    fn contains(bits: &[u8], h: u64) -> bool {
        if bits.is_empty() {
            return false;
        }
        let m = (bits.len() * 8) as u64;
        Self::probes(h, m).all(|p| bits[(p / 8) as usize] & (1 << (p % 8)) != 0)
    }

    /// The length of its bytes, wherever they are.
    fn bytes(&self) -> usize {
        match &self.bits {
            Bits::Held(bits) => bits.len(),
            Bits::Stored(stored) => stored.at.len,
        }
    }
}

/// The checksum the index file keeps of a filter's bytes, seeded with
/// their length marked apart from a text's seed (the length it
/// decompresses to, [`text_checksum`]).
fn filter_checksum(bits: &[u8]) -> u64 {
    crate::cache_file::checksum(bits.len() as u64 ^ 0xf11e_0000_0000_0000, bits)
}

/// The case mapping every comparison of search uses: each character's
/// Unicode default lower-case mapping (`char::to_lowercase`), so a position
/// in the folded text maps back to the original one character at a time.
/// Runs of ASCII are lowered in bulk and CJK and Hangul (which have no case)
/// are copied, so folding costs about a copy.
pub(crate) fn fold(text: &str) -> Cow<'_, str> {
    if !text.bytes().any(|b| b.is_ascii_uppercase() || b >= 0x80) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    fold_into(text, &mut out);
    Cow::Owned(out)
}

/// Appends [`fold`]`(text)` to `out`.
pub(crate) fn fold_into(text: &str, out: &mut String) {
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = ascii_len(rest.as_bytes());
        let start = out.len();
        out.push_str(&rest[..ascii]);
        out[start..].make_ascii_lowercase();
        rest = &rest[ascii..];
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            if c.is_ascii() {
                break;
            }
            if caseless(c) {
                out.push(c);
            } else {
                out.extend(c.to_lowercase());
            }
            rest = chars.as_str();
        }
    }
}

/// The length of the ASCII prefix of `bytes`, found 8 bytes at a time.
fn ascii_len(bytes: &[u8]) -> usize {
    let mut n = 0;
    for chunk in bytes.chunks_exact(8) {
        let word = u64::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7]]);
        if word & 0x8080_8080_8080_8080 != 0 {
            break;
        }
        n += 8;
    }
    n + bytes[n..].iter().position(|&b| b >= 0x80).unwrap_or(bytes.len() - n)
}

/// CJK and Hangul: no case, copied as they are.
fn caseless(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{9fff}' | '\u{ac00}'..='\u{d7a3}')
}

/// The items of a doc's text, by their ends.
fn items_of<'a>(text: &'a str, ends: &'a [usize]) -> impl Iterator<Item = &'a str> + Clone {
    let mut start = 0;
    ends.iter().map(move |&end| {
        let item = text.get(start..end).unwrap_or_default();
        start = end;
        item
    })
}

/// The filter keys of the lower-cased items (a key never spans two
/// items, as a match never does) less the common keys of `dict`, each
/// once; and the keys around spaces that may be repeats (their slot in a
/// bitmap was taken), which the filter sets again but does not count when
/// it is sized.
fn distinct_keys<'a>(items: impl Iterator<Item = &'a str> + Clone, dict: Option<&Dictionary>) -> (Vec<u64>, Vec<u64>) {
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
struct Seen {
    /// One bit per possible trigram (2 MiB).
    trigrams: Vec<u64>,
    /// Up to 2^20 bits for the keys around spaces (one per byte of the
    /// text, so that it stays in cache for a small one).
    spaced: Vec<u64>,
    /// The common trigrams marked in `trigrams`, and the id of their
    /// dictionary (0: none).
    common: Vec<u64>,
    common_of: u64,
}

/// The indexed body of one session.
pub(crate) struct Doc {
    /// The fingerprint it was built under (`None`: built for one query).
    pub(crate) fingerprint: Option<Fingerprint>,
    /// The session's latest title, read under the same fingerprint.
    pub(crate) title: Option<String>,
    /// The title lower-cased, when that is not the title itself.
    title_folded: Option<Box<str>>,
    /// The projected item texts, concatenated and zstd-compressed.
    packed: Packed,
    /// The dictionary `packed` was compressed with.
    dict: Option<Arc<Dictionary>>,
    /// The byte length of each item, LEB128 (a byte or two each).
    lengths: Box<[u8]>,
    /// Their sum: the length of the decompressed text.
    len: usize,
    bloom: Bloom,
}

/// Where a doc's compressed text is.
enum Packed {
    /// In memory (every doc built in this process).
    Held(Box<[u8]>),
    /// In the cache file the doc was loaded from, read when it is needed.
    Stored(Box<Stored>),
}

/// A compressed text or a filter left in the cache file its doc was
/// loaded from.
struct Stored {
    texts: Arc<StoredTexts>,
    /// Where it is among the file's stored texts, and its length.
    offset: u64,
    len: usize,
    /// Its checksum ([`text_checksum`] or [`filter_checksum`]).
    checksum: u64,
}

impl Stored {
    /// Its bytes read back from the file, if they match its checksum (as
    /// `sum` computes it).
    fn read(&self, sum: impl Fn(&[u8]) -> u64) -> Result<Vec<u8>, Unreadable> {
        match self.texts.read(self.offset, self.len) {
            Ok(bytes) if sum(&bytes) == self.checksum => Ok(bytes),
            _ => Err(Unreadable),
        }
    }
}

/// A doc's stored text or filter could not be read back from its cache
/// file, or did not match its checksum (or the text its recorded length):
/// the doc must be dropped and its session indexed again from its source,
/// never searched as if its text were empty or its filter ruled it out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Unreadable;

/// The checksum the index file keeps of a doc's compressed text, seeded
/// with the length the text decompresses to.
fn text_checksum(packed: &[u8], len: usize) -> u64 {
    crate::cache_file::checksum(len as u64, packed)
}

impl Packed {
    /// The length of the compressed text.
    fn len(&self) -> usize {
        match self {
            Packed::Held(bytes) => bytes.len(),
            Packed::Stored(stored) => stored.len,
        }
    }

    /// The compressed text: borrowed when held, else read from the file
    /// and checked against its checksum (`len`: what it decompresses to).
    fn bytes(&self, len: usize) -> Result<Cow<'_, [u8]>, Unreadable> {
        match self {
            Packed::Held(bytes) => Ok(Cow::Borrowed(bytes)),
            Packed::Stored(s) => s.read(|bytes| text_checksum(bytes, len)).map(Cow::Owned),
        }
    }
}

/// Item lengths from ascending end offsets, LEB128.
fn encode_lengths(ends: &[usize]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(ends.len() * 2);
    let mut start = 0;
    for &end in ends {
        let mut n = end - start;
        start = end;
        while n >= 0x80 {
            out.push(n as u8 | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }
    out.into_boxed_slice()
}

/// The end offsets of what [`encode_lengths`] wrote; `None` if malformed.
fn decode_lengths(bytes: &[u8]) -> Option<Vec<usize>> {
    let mut ends = Vec::with_capacity(bytes.len());
    each_end(bytes, |end| ends.push(end))?;
    Some(ends)
}

/// Calls `f` with each end offset of what [`encode_lengths`] wrote; the
/// last end (0 without any), or `None` if malformed.
fn each_end(bytes: &[u8], mut f: impl FnMut(usize)) -> Option<usize> {
    let (mut end, mut n, mut shift) = (0usize, 0usize, 0u32);
    for &b in bytes {
        n |= usize::from(b & 0x7f).checked_shl(shift).filter(|v| v >> shift == usize::from(b & 0x7f))?;
        shift += 7;
        if b & 0x80 == 0 {
            end = end.checked_add(n)?;
            f(end);
            (n, shift) = (0, 0);
        }
    }
    (shift == 0).then_some(end)
}

/// The lower-cased title, kept only when it differs.
fn folded_title(title: Option<&str>) -> Option<Box<str>> {
    match fold(title?) {
        Cow::Borrowed(_) => None,
        Cow::Owned(t) => (title != Some(t.as_str())).then(|| t.into_boxed_str()),
    }
}

/// One projected item's text, as the index is given it.
pub(crate) struct IndexedItem<'a> {
    pub(crate) text: Cow<'a, str>,
}

thread_local! {
    /// The thread's zstd contexts, reused by every doc it builds or reads:
    /// creating one per call (a large allocation, zeroed) cost more than
    /// the decompression.
    static CONTEXTS: std::cell::RefCell<(Option<CCtx<'static>>, Option<DCtx<'static>>)> =
        std::cell::RefCell::new((CCtx::try_create(), DCtx::try_create()));
    /// Bitmaps to find the distinct keys of a text in linear time, left
    /// clear after each use (but for the common trigrams of the last
    /// dictionary used) through the keys they collected.
    static SEEN: std::cell::RefCell<Seen> = std::cell::RefCell::new(Seen::default());
}

impl Doc {
    /// Indexes the items of one session, compressing its text with the
    /// encoder's dictionary if given.
    pub(crate) fn build(
        fingerprint: Option<Fingerprint>,
        title: Option<String>,
        items: Vec<IndexedItem<'_>>,
        encoder: Option<&Encoder>,
    ) -> Doc {
        let total: usize = items.iter().map(|i| i.text.len()).sum();
        let mut text = String::with_capacity(total);
        let mut ends = Vec::with_capacity(items.len());
        for item in &items {
            text.push_str(&item.text);
            ends.push(text.len());
        }
        let bloom = Bloom::with_keys(distinct_keys(items.iter().map(|i| &*i.text), encoder.map(|e| &*e.dict)));
        let packed = compress(text.as_bytes(), encoder);
        let dict = encoder.filter(|_| !packed.is_empty()).map(|e| Arc::clone(&e.dict));
        let title_folded = folded_title(title.as_deref());
        let lengths = encode_lengths(&ends);
        Doc { fingerprint, title, title_folded, packed: Packed::Held(packed), dict, lengths, len: text.len(), bloom }
    }

    /// The title lower-cased (`""` without one).
    pub(crate) fn title_folded(&self) -> &str {
        self.title_folded.as_deref().or(self.title.as_deref()).unwrap_or("")
    }

    /// Where each item ends in the decompressed text.
    pub(crate) fn ends(&self) -> Vec<usize> {
        decode_lengths(&self.lengths).unwrap_or_default()
    }

    /// Whether its text is compressed without a dictionary.
    pub(crate) fn undicted(&self) -> bool {
        self.dict.is_none() && self.packed.len() > 0
    }

    /// Whether its compressed text is in a cache file rather than in
    /// memory.
    pub(crate) fn is_stored(&self) -> bool {
        matches!(self.packed, Packed::Stored(_))
    }

    /// The same doc with its text compressed with the encoder's
    /// dictionary, and its filter without the dictionary's common keys;
    /// `None` if its text cannot be read (a stored one) or does not
    /// decompress (never: the index wrote it).
    fn with_dictionary(&self, encoder: &Encoder) -> Option<Doc> {
        let text = self.decompressed()?;
        let ends = self.ends();
        let items = items_of(std::str::from_utf8(&text).ok()?, &ends);
        let keys = distinct_keys(items, Some(&encoder.dict));
        Some(Doc {
            fingerprint: self.fingerprint.clone(),
            title: self.title.clone(),
            title_folded: self.title_folded.clone(),
            packed: Packed::Held(compress(&text, Some(encoder))),
            dict: Some(Arc::clone(&encoder.dict)),
            lengths: self.lengths.clone(),
            len: self.len,
            bloom: Bloom::with_keys(keys),
        })
    }

    /// Whether the body may hold `needle`: every key of it that this
    /// doc's filter was built with may be present. Always true for a needle
    /// without such keys (shorter than three bytes, or only common keys).
    /// [`Unreadable`] for a stored filter that cannot be read back or does
    /// not match its checksum. (A search tests many docs through a
    /// [`FilterPass`] instead.)
    #[cfg(test)]
    pub(crate) fn may_contain(&self, needle: &Needle) -> Result<bool, Unreadable> {
        if self.lengths.is_empty() {
            return Ok(false);
        }
        Ok(self.may_contain_in(&self.bloom.bits()?, needle))
    }

    /// [`may_contain`](Self::may_contain) with its filter's bytes `bits`
    /// (of a doc with a body).
    fn may_contain_in(&self, bits: &[u8], needle: &Needle) -> bool {
        needle.with_hashes(self.dict.as_deref(), |h| h.iter().all(|&h| Bloom::contains(bits, h)))
    }

    /// Its text decompressed to exactly its length, `None` if it cannot
    /// be read or does not decompress to that.
    fn decompressed(&self) -> Option<Vec<u8>> {
        decompress(&self.packed.bytes(self.len).ok()?, self.len, self.dict.as_deref())
    }

    /// The decompressed text of all items, and where each item ends in it.
    /// [`Unreadable`] for a stored text that cannot be read back, does not
    /// match its checksum or does not decompress to its length: the doc
    /// cannot tell whether the session matches.
    pub(crate) fn text(&self) -> Result<(String, Vec<usize>), Unreadable> {
        let ends = self.ends();
        if ends.last() != Some(&self.len) {
            // No item (a doc built without a body): nothing to read.
            return Ok((String::new(), Vec::new()));
        }
        match self.decompressed().map(String::from_utf8) {
            Some(Ok(text)) => Ok((text, ends)),
            _ if self.is_stored() => Err(Unreadable),
            // Never: this process compressed the text itself.
            _ => Ok((String::new(), Vec::new())),
        }
    }

    /// The decompressed item texts.
    #[cfg(test)]
    pub(crate) fn items(&self) -> Vec<String> {
        let (text, ends) = self.text().expect("readable");
        let mut start = 0;
        ends.into_iter()
            .map(|end| {
                let item = text[start..end].to_owned();
                start = end;
                item
            })
            .collect()
    }

    /// Bytes of the projected text it covers.
    pub(crate) fn text_bytes(&self) -> usize {
        self.len
    }

    /// Bytes the index holds for it: compressed text, item lengths, filter,
    /// titles, fingerprint, the doc itself and its reference count. A text
    /// left in the cache file the doc was loaded from counts as if held
    /// (the index's size is the same in memory and after a round trip
    /// through the file; what it keeps in memory is that much less).
    pub(crate) fn index_bytes(&self) -> usize {
        self.packed.len()
            + self.lengths.len()
            + self.bloom.bytes()
            + self.title.as_ref().map_or(0, String::capacity)
            + self.title_folded.as_ref().map_or(0, |t| t.len())
            + self.fingerprint.as_ref().map_or(0, |f| f.as_bytes().len())
            + std::mem::size_of::<Doc>()
            + 2 * std::mem::size_of::<usize>()
    }
}

/// A lower-cased needle, prepared once per query for every session.
pub(crate) struct Needle {
    pub(crate) text: String,
    finder: memmem::Finder<'static>,
    /// Its distinct filter keys.
    keys: Box<[u64]>,
    /// The hashes of its keys a doc's filter is tested with, per
    /// dictionary (by id; 0: none, every key), made on first use.
    hashes: std::cell::RefCell<Vec<(u64, Box<[u64]>)>>,
}

impl Needle {
    pub(crate) fn new(text: String) -> Needle {
        let finder = memmem::Finder::new(text.as_bytes()).into_owned();
        let mut keys = Vec::new();
        self::keys(text.as_bytes(), |k| keys.push(k));
        keys.sort_unstable();
        keys.dedup();
        Needle { text, finder, keys: keys.into(), hashes: Default::default() }
    }

    /// Runs `f` on the hashes of the keys a filter built with `dict` holds
    /// if the needle is there: all of them, less the dictionary's common
    /// keys (which such a filter leaves out).
    fn with_hashes<T>(&self, dict: Option<&Dictionary>, f: impl FnOnce(&[u64]) -> T) -> T {
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

    /// The first occurrence in `folded`.
    pub(crate) fn find(&self, folded: &str) -> Option<usize> {
        self.finder.find(folded.as_bytes())
    }

    /// Whether it occurs in `folded`.
    pub(crate) fn is_in(&self, folded: &str) -> bool {
        self.find(folded).is_some()
    }
}

/// What the filters of one search's docs say of its needles. A filter in
/// memory is tested when asked. The stored ones (docs loaded from a cache
/// file) are read up front, in file order, in reads of about [`PASS_READ`]
/// bytes through one reused buffer, each checked against its checksum and
/// tested against every needle: a process that loads the index and
/// searches once reads them at the speed of a copy and never holds them
/// all. With `keep`, the bytes read are kept in memory for later searches.
pub(crate) struct FilterPass<'a> {
    docs: &'a [Arc<Doc>],
    needles: &'a [&'a Needle],
    /// Per doc and needle: [`UNTESTED`] (a filter in memory: test it when
    /// asked), [`MAY`], [`NOT`] or [`UNREADABLE`].
    verdicts: Vec<u8>,
}

const UNTESTED: u8 = 0;
const MAY: u8 = 1;
const NOT: u8 = 2;
const UNREADABLE: u8 = 3;
/// About how many bytes of stored filters one read of a [`FilterPass`]
/// takes in (more when one filter is bigger).
const PASS_READ: usize = if cfg!(test) { 16 << 10 } else { 1 << 20 };
/// The gap between two wanted filters up to which one read spans both.
const PASS_GAP: u64 = 64 << 10;

impl<'a> FilterPass<'a> {
    /// The verdicts of the stored filters of `docs` on `needles`.
    pub(crate) fn new(docs: &'a [Arc<Doc>], needles: &'a [&'a Needle], keep: bool) -> FilterPass<'a> {
        let n = needles.len();
        let mut verdicts = vec![UNTESTED; docs.len() * n];
        // The stored filters not in memory, by file and then by offset.
        let mut stored: Vec<(usize, &StoredBits)> = docs
            .iter()
            .enumerate()
            .filter(|(_, d)| !d.lengths.is_empty())
            .filter_map(|(i, d)| match &d.bloom.bits {
                Bits::Stored(b) if b.kept.get().is_none() => Some((i, &**b)),
                _ => None,
            })
            .collect();
        stored.sort_unstable_by_key(|(_, b)| (Arc::as_ptr(&b.at.texts), b.at.offset));
        let mut buf = Vec::new();
        let mut rest = stored.as_slice();
        while let Some(((_, first), _)) = rest.split_first() {
            // One read: filters of the same file, each starting within
            // `PASS_GAP` of where the last ended, up to about `PASS_READ`.
            let start = first.at.offset;
            let mut end = start.saturating_add(first.at.len as u64);
            let mut take = 1;
            for (_, b) in &rest[1..] {
                let b_end = b.at.offset.saturating_add(b.at.len as u64);
                if !Arc::ptr_eq(&b.at.texts, &first.at.texts)
                    || b.at.offset < end
                    || b.at.offset - end > PASS_GAP
                    || b_end - start > PASS_READ as u64
                {
                    break;
                }
                end = b_end;
                take += 1;
            }
            let (run, later) = rest.split_at(take);
            rest = later;
            let read =
                usize::try_from(end - start).ok().and_then(|len| first.at.texts.read_into(start, len, &mut buf).ok());
            for &(i, b) in run {
                let at = (b.at.offset - start) as usize;
                let bits = read.and(buf.get(at..at + b.at.len)).filter(|bits| filter_checksum(bits) == b.at.checksum);
                let row = &mut verdicts[i * n..(i + 1) * n];
                let Some(bits) = bits else {
                    row.fill(UNREADABLE);
                    continue;
                };
                for (v, needle) in row.iter_mut().zip(needles) {
                    *v = if docs[i].may_contain_in(bits, needle) { MAY } else { NOT };
                }
                if keep {
                    drop(b.kept.set(bits.into()));
                }
            }
        }
        FilterPass { docs, needles, verdicts }
    }

    /// Whether doc `at` may hold needle `needle` (an index into the needles
    /// the pass was made with); [`Unreadable`] when its stored filter
    /// could not be read back or did not match its checksum.
    pub(crate) fn may(&self, at: usize, needle: usize) -> Result<bool, Unreadable> {
        match self.verdicts[at * self.needles.len() + needle] {
            MAY => Ok(true),
            NOT => Ok(false),
            UNREADABLE => Err(Unreadable),
            _ => {
                let doc = &self.docs[at];
                if doc.lengths.is_empty() {
                    return Ok(false);
                }
                Ok(doc.may_contain_in(&doc.bloom.bits()?, self.needles[needle]))
            }
        }
    }
}

/// The byte offset in `original` of the character whose lower-cased form
/// starts at `folded_at` in `fold(original)`.
pub(crate) fn original_offset(original: &str, folded_at: usize) -> usize {
    if original.is_ascii() {
        return folded_at.min(original.len());
    }
    let mut folded = 0;
    for (i, c) in original.char_indices() {
        if folded >= folded_at {
            return i;
        }
        folded += if caseless(c) { c.len_utf8() } else { c.to_lowercase().map(char::len_utf8).sum::<usize>() };
    }
    original.len()
}

/// The built docs of a resolver, by session id, and the dictionary new
/// docs are compressed with.
#[derive(Default)]
pub(crate) struct DocCache {
    docs: RwLock<HashMap<String, Arc<Doc>>>,
    dictionary: RwLock<Option<Arc<Dictionary>>>,
    /// Held while training or recompressing (one at a time).
    settling: Mutex<()>,
    /// The encoder of the docs being built, while any is.
    encoder: Mutex<std::sync::Weak<Encoder>>,
    /// After a failed training: the text without dictionary to wait for
    /// before trying again.
    retry_at: AtomicUsize,
    /// Searches that tested the filters so far ([`Self::keeps_filters`]).
    filter_passes: AtomicUsize,
}

impl DocCache {
    /// For each `(id, fingerprint)`, the doc built under that fingerprint,
    /// under one lock.
    pub(crate) fn get_all<'a>(
        &self,
        wanted: impl Iterator<Item = (&'a str, Option<&'a Fingerprint>)>,
    ) -> Vec<Option<Arc<Doc>>> {
        let docs = self.docs.read().unwrap_or_else(|e| e.into_inner());
        wanted.map(|(id, fp)| docs.get(id).filter(|d| fp.is_some() && d.fingerprint.as_ref() == fp).cloned()).collect()
    }

    /// Whether the search about to test the filters keeps the stored ones
    /// it reads in memory ([`FilterPass`]): from the second search on. A
    /// process that loads the index to search once (the command line)
    /// reads them and lets them go; a long-lived one holds them after its
    /// second search, and reads them no more.
    pub(crate) fn keeps_filters(&self) -> bool {
        self.filter_passes.fetch_add(1, Ordering::Relaxed) >= 1
    }

    /// The dictionary to compress new docs with, once trained.
    pub(crate) fn dictionary(&self) -> Option<Arc<Dictionary>> {
        self.dictionary.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// An encoder for the current dictionary, if there is one: the one the
    /// docs being built share, else a new one (a few hundred KB, digested in
    /// well under a millisecond), dropped with the last doc built with it.
    pub(crate) fn encoder(&self) -> Option<Arc<Encoder>> {
        let dict = self.dictionary()?;
        let mut shared = self.encoder.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = shared.upgrade().filter(|e| Arc::ptr_eq(&e.dict, &dict)) {
            return Some(e);
        }
        let e = Arc::new(Encoder::new(&dict)?);
        *shared = Arc::downgrade(&e);
        Some(e)
    }

    /// The kept docs compressed without a dictionary, by id (so that what
    /// is sampled does not depend on the map's order).
    fn undicted(&self) -> Vec<(String, Arc<Doc>)> {
        let docs = self.docs.read().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<(String, Arc<Doc>)> =
            docs.iter().filter(|(_, d)| d.undicted()).map(|(id, d)| (id.clone(), Arc::clone(d))).collect();
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Trains the dictionary once the kept docs compressed without one
    /// hold `TRAIN_AT` bytes of text, then compresses every such doc with
    /// it (a doc replaced meanwhile is left alone). Blocking; returns at
    /// once while another call is at it.
    pub(crate) fn settle(&self) {
        let Ok(_one) = self.settling.try_lock() else { return };
        let undicted = self.undicted();
        if undicted.is_empty() {
            return;
        }
        if self.dictionary().is_none() {
            {
                let bytes: usize = undicted.iter().map(|(_, d)| d.text_bytes()).sum();
                if bytes < TRAIN_AT.max(self.retry_at.load(Ordering::Relaxed)) {
                    return;
                }
                let mut samples = Vec::new();
                let mut sampled = 0;
                for (_, d) in &undicted {
                    if sampled >= TRAIN_SAMPLE {
                        break;
                    }
                    if let Some(text) = d.decompressed() {
                        sampled += text.len();
                        samples.push((text, d.ends()));
                    }
                }
                // Kept only if it saves more than it weighs, extrapolated
                // from the sample to all of these texts; else tried again
                // once they have doubled.
                // (Compressed text and filter bits saved.)
                let trained = Dictionary::train(&samples).map(|(dict, n)| (Arc::new(dict), n));
                let pays = trained.filter(|(dict, left_out)| {
                    let Some(encoder) = Encoder::new(dict) else { return false };
                    let (plain, packed): (usize, usize) = undicted
                        .iter()
                        .zip(&samples)
                        .map(|((_, d), (text, _))| (d.packed.len(), compress(text, Some(&encoder)).len()))
                        .fold((0, 0), |(a, b), (x, y)| (a + x, b + y));
                    let saved = plain.saturating_sub(packed) + left_out * BITS_PER_KEY / 8;
                    saved as f64 * bytes as f64 / sampled as f64 > dict.bytes() as f64
                });
                let Some((dict, _)) = pays else {
                    self.retry_at.store(bytes.saturating_mul(2), Ordering::Relaxed);
                    return;
                };
                *self.dictionary.write().unwrap_or_else(|e| e.into_inner()) = Some(dict);
            }
        }
        let Some(encoder) = self.encoder() else { return };
        let redone: Vec<(String, Arc<Doc>, Doc)> = undicted
            .into_iter()
            .filter_map(|(id, old)| Some((id, Arc::clone(&old), old.with_dictionary(&encoder)?)))
            .collect();
        let mut docs = self.docs.write().unwrap_or_else(|e| e.into_inner());
        for (id, old, new) in redone {
            if let Some(held) = docs.get_mut(&id) {
                if Arc::ptr_eq(held, &old) {
                    *held = Arc::new(new);
                }
            }
        }
    }

    /// The index file's directory and stored region (see `persist.rs` and
    /// [`crate::cache_file::write_in_place`]) of every kept doc. The
    /// directory holds the dictionaries the docs use (the one for new docs
    /// first of all: its raw bytes, its common keys), then per doc its id,
    /// fingerprint, title, the number of its dictionary (0: none), its item
    /// lengths, and where its compressed text and its filter are in the
    /// stored region (offset, length, checksum: [`text_checksum`],
    /// [`filter_checksum`]). The region holds every filter, then
    /// every text, so that a search reads the filters in one sweep. A doc
    /// whose text or filter is stored in the file it was loaded from is
    /// written with the bytes read back from it (the old file stays
    /// readable through its handle after a newer one is renamed over its
    /// path); one whose bytes cannot be read back or do not check is left
    /// out, to be indexed again.
    pub(crate) fn encode(&self) -> (Vec<u8>, Vec<u8>) {
        use crate::cache_file::{put, put_opt};
        let docs = self.docs.read().unwrap_or_else(|e| e.into_inner());
        let mut dicts: Vec<Arc<Dictionary>> = self.dictionary().into_iter().collect();
        let mut kept = Vec::with_capacity(docs.len());
        for (id, d) in docs.iter().filter(|(_, d)| d.fingerprint.is_some()) {
            let (Ok(packed), Ok(bits)) = (d.packed.bytes(d.len), d.bloom.bits()) else { continue };
            if let Some(dict) = &d.dict {
                if !dicts.iter().any(|x| Arc::ptr_eq(x, dict)) {
                    dicts.push(Arc::clone(dict));
                }
            }
            kept.push((id, d, packed, bits));
        }
        let filters: usize = kept.iter().map(|(_, _, _, bits)| bits.len()).sum();
        let texts: usize = kept.iter().map(|(_, _, packed, _)| packed.len()).sum();
        let mut stored = Vec::with_capacity(filters + texts);
        for (_, _, _, bits) in &kept {
            stored.extend_from_slice(bits);
        }
        let mut out = Vec::new();
        out.extend_from_slice(&(dicts.len() as u64).to_le_bytes());
        for dict in &dicts {
            put(&mut out, &dict.raw);
            let common = dict.common.sorted();
            out.extend_from_slice(&(common.len() as u64).to_le_bytes());
            for &k in &common {
                out.extend_from_slice(&k.to_le_bytes());
            }
        }
        out.extend_from_slice(&(kept.len() as u64).to_le_bytes());
        let mut filter_at = 0u64;
        for (id, d, packed, bits) in &kept {
            put(&mut out, id.as_bytes());
            put(&mut out, d.fingerprint.as_ref().map_or(&[][..], Fingerprint::as_bytes));
            put_opt(&mut out, d.title.as_deref().map(str::as_bytes));
            let dict = d.dict.as_ref().and_then(|x| dicts.iter().position(|y| Arc::ptr_eq(x, y))).map_or(0, |i| i + 1);
            out.extend_from_slice(&(dict as u64).to_le_bytes());
            put(&mut out, &d.lengths);
            let text_sum = match &d.packed {
                Packed::Stored(s) => s.checksum,
                Packed::Held(_) => text_checksum(packed, d.len),
            };
            let filter_sum = filter_checksum(bits);
            for n in [stored.len() as u64, packed.len() as u64, text_sum, filter_at, bits.len() as u64, filter_sum] {
                out.extend_from_slice(&n.to_le_bytes());
            }
            stored.extend_from_slice(packed);
            filter_at += bits.len() as u64;
        }
        (out, stored)
    }

    /// Reads the directory [`encode`](Self::encode) wrote (already checked
    /// against its checksum), every doc's text and filter left in the
    /// stored region `stored`; `None` if malformed in any way (so the file
    /// is ignored as a whole). Each doc's text must still match its
    /// checksum and decompress to exactly the sum of its item lengths when
    /// it is read ([`Doc::text`]), and its filter match its checksum when a
    /// search reads it ([`FilterPass`]).
    pub(crate) fn decode(&self, directory: Vec<u8>, stored: &Arc<StoredTexts>) -> Option<Vec<(String, Arc<Doc>)>> {
        let mut input = crate::cache_file::Input(&directory);
        let count = input.u64()?;
        let mut dicts = Vec::new();
        for _ in 0..count {
            let raw: Box<[u8]> = input.bytes()?.into();
            let n = usize::try_from(input.u64()?).ok()?;
            let mut common = Vec::with_capacity(n.min(input.0.len() / 8));
            for _ in 0..n {
                common.push(input.u64()?);
            }
            dicts.push(Arc::new(Dictionary::new(raw, common.into())?));
        }
        let n = usize::try_from(input.u64()?).ok()?;
        let mut out = Vec::with_capacity(n.min(input.0.len() / 64));
        // A region of the stored texts, checked to lie within them.
        let region = |input: &mut crate::cache_file::Input<'_>| -> Option<Stored> {
            let (offset, len, checksum) = (input.u64()?, usize::try_from(input.u64()?).ok()?, input.u64()?);
            (offset.checked_add(len as u64)? <= stored.len()).then(|| Stored {
                texts: Arc::clone(stored),
                offset,
                len,
                checksum,
            })
        };
        for _ in 0..n {
            let id = input.string()?;
            let fingerprint = Some(input.fingerprint()?);
            let title = input.opt_string()?;
            let dict = match usize::try_from(input.u64()?).ok()? {
                0 => None,
                i => Some(Arc::clone(dicts.get(i - 1)?)),
            };
            let lengths: Box<[u8]> = input.bytes()?.into();
            let len = each_end(&lengths, |_| {})?;
            let text = region(&mut input)?;
            // Empty exactly when the text is.
            if (text.len == 0) != (len == 0) {
                return None;
            }
            let packed = match text.len {
                0 => Packed::Held(Box::default()),
                _ => Packed::Stored(Box::new(text)),
            };
            let filter = region(&mut input)?;
            if filter.len % 8 != 0 {
                return None;
            }
            let bits = match filter.len {
                0 => Bits::Held(Box::default()),
                _ => Bits::Stored(Box::new(StoredBits { at: filter, kept: std::sync::OnceLock::new() })),
            };
            let title_folded = folded_title(title.as_deref());
            let doc = Doc { fingerprint, title, title_folded, packed, dict, lengths, len, bloom: Bloom { bits } };
            out.push((id, Arc::new(doc)));
        }
        input.0.is_empty().then_some(out)
    }

    /// Drops the doc held for `id` if it is `doc` (not one built since):
    /// whether it was dropped.
    pub(crate) fn evict(&self, id: &str, doc: &Arc<Doc>) -> bool {
        let mut docs = self.docs.write().unwrap_or_else(|e| e.into_inner());
        let held = docs.get(id).is_some_and(|d| Arc::ptr_eq(d, doc));
        if held {
            docs.remove(id);
        }
        held
    }

    /// Keeps every `(id, doc)`; without a dictionary of its own yet, the
    /// cache takes the one the first of them uses.
    pub(crate) fn insert_all(&self, docs: Vec<(String, Arc<Doc>)>) {
        let mut dictionary = self.dictionary.write().unwrap_or_else(|e| e.into_inner());
        if dictionary.is_none() {
            *dictionary = docs.iter().find_map(|(_, d)| d.dict.clone());
        }
        drop(dictionary);
        let mut held = self.docs.write().unwrap_or_else(|e| e.into_inner());
        held.reserve(docs.len());
        held.extend(docs);
    }

    /// Number of kept docs.
    pub(crate) fn len(&self) -> usize {
        self.docs.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Keeps `doc` for `id` when it has a fingerprint, else forgets `id`.
    pub(crate) fn put(&self, id: &str, doc: &Arc<Doc>) {
        let mut docs = self.docs.write().unwrap_or_else(|e| e.into_inner());
        if doc.fingerprint.is_some() {
            docs.insert(id.to_owned(), Arc::clone(doc));
        } else {
            docs.remove(id);
        }
    }

    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.docs.write().unwrap_or_else(|e| e.into_inner()).retain(|id, _| keep(id));
    }

    /// Forgets every doc and the dictionary (trained on them).
    pub(crate) fn clear(&self) {
        self.docs.write().unwrap_or_else(|e| e.into_inner()).clear();
        *self.dictionary.write().unwrap_or_else(|e| e.into_inner()) = None;
        self.retry_at.store(0, Ordering::Relaxed);
    }

    /// (sessions, projected text bytes, index bytes, of which filters) of
    /// the kept docs; the index bytes count each dictionary once.
    pub(crate) fn stats(&self) -> (usize, usize, usize, usize) {
        let docs = self.docs.read().unwrap_or_else(|e| e.into_inner());
        let text = docs.values().map(|d| d.text_bytes()).sum();
        let filters = docs.values().map(|d| d.bloom.bytes()).sum();
        let current = self.dictionary();
        let mut dicts: Vec<&Arc<Dictionary>> =
            docs.values().filter_map(|d| d.dict.as_ref()).chain(current.as_ref()).collect();
        dicts.sort_unstable_by_key(|d| Arc::as_ptr(d));
        dicts.dedup_by(|a, b| Arc::ptr_eq(a, b));
        let dictionaries: usize = dicts.iter().map(|d| d.bytes()).sum();
        // The table's slots (an id and a pointer, and a control byte, each)
        // and the ids' bytes.
        let table = docs.capacity() * (std::mem::size_of::<(String, Arc<Doc>)>() + 1);
        let index = docs.values().map(|d| d.index_bytes()).sum::<usize>()
            + docs.keys().map(String::capacity).sum::<usize>()
            + table
            + dictionaries;
        (docs.len(), text, index, filters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn may(d: &Doc, needle: &str) -> bool {
        d.may_contain(&Needle::new(needle.to_owned())).expect("readable")
    }

    fn doc(texts: &[&str]) -> Doc {
        Doc::build(None, None, texts.iter().map(|t| IndexedItem { text: Cow::Borrowed(*t) }).collect(), None)
    }

    #[test]
    fn the_filter_never_misses_a_substring() {
        let d = doc(&["Fix PR1137 before 发布版本", "naïve ÉCOLE"]);
        for n in ["pr1137", "1137", "发布", "版本", "école", "naïve", "fix pr", "e 发"] {
            assert!(may(&d, n), "{n}");
        }
        assert!(!may(&d, "zzzz"));
        assert_eq!(d.items(), vec!["Fix PR1137 before 发布版本".to_owned(), "naïve ÉCOLE".to_owned()]);
    }

    #[test]
    fn the_filter_rules_out_a_phrase_whose_words_are_apart() {
        let d = doc(&["the parser builds a tree", "cache keys", "the parser cache"]);
        assert!(may(&d, "parser cache"), "in the last message");
        assert!(may(&d, "tree"));
        // The words are all there, never side by side; nor across the end
        // of one message and the start of the next ("tree" + "cache").
        for apart in ["builds tree", "tree cache", "cache tree", "keys parser"] {
            assert!(!may(&d, apart), "{apart}");
        }
    }

    proptest::proptest! {
        #[test]
        fn no_substring_is_ever_ruled_out(
            items in proptest::collection::vec("[ab \\nÉé发 ]{0,40}", 1..4),
            pick in 0usize..4,
            from in 0usize..40,
            len in 0usize..12,
        ) {
            let texts: Vec<&str> = items.iter().map(String::as_str).collect();
            let d = doc(&texts);
            let folded = fold(texts[pick % texts.len()]).into_owned();
            let chars: Vec<char> = folded.chars().collect();
            let from = from.min(chars.len());
            let needle: String = chars[from..(from + len).min(chars.len())].iter().collect();
            if !needle.is_empty() && !d.lengths.is_empty() {
                proptest::prop_assert!(may(&d, &needle), "{needle:?} in {texts:?}");
            }
        }
    }

    /// `n` bytes of words drawn with a skew from a fixed vocabulary of
    /// `vocabulary` random words (deterministic), so that texts share
    /// their words as real sessions do.
    fn prose(seed: u64, n: usize, vocabulary: usize) -> String {
        let x = std::cell::Cell::new(0x9e37_79b9_7f4a_7c15_u64);
        let next = || {
            let mut v = x.get();
            v ^= v << 13;
            v ^= v >> 7;
            v ^= v << 17;
            x.set(v);
            v as usize
        };
        let words: Vec<String> = (0..vocabulary)
            .map(|_| {
                (0..3 + next() % 7)
                    .map(|_| char::from(b"etaoinshrdlucmfwypvbgkqjxz"[next() % 26 * (next() % 26) / 26]))
                    .collect()
            })
            .collect();
        // The same words for every text, each text its own draw of them.
        x.set(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
        let mut out = String::new();
        while out.len() < n {
            out.push_str(&words[next() % vocabulary * (next() % vocabulary) / vocabulary]);
            out.push(if next() % 9 == 0 { '\n' } else { ' ' });
        }
        out
    }

    /// 64 sessions of 8 messages, `vocabulary` words in all.
    fn big_cache(vocabulary: usize) -> (DocCache, Vec<(String, Vec<String>)>) {
        let cache = DocCache::default();
        let mut texts = Vec::new();
        for i in 0..64u64 {
            let items: Vec<String> = (0..8).map(|j| prose(i * 8 + j + 1, 4200, vocabulary)).collect();
            let doc = Doc::build(
                Some(Fingerprint::from_u64(i)),
                Some(format!("Title {i}")),
                items.iter().map(|t| IndexedItem { text: Cow::Borrowed(t.as_str()) }).collect(),
                cache.encoder().as_deref(),
            );
            cache.put(&format!("s{i}"), &Arc::new(doc));
            texts.push((format!("s{i}"), items));
        }
        (cache, texts)
    }

    fn held(cache: &DocCache, id: &str) -> Arc<Doc> {
        Arc::clone(cache.docs.read().unwrap().get(id).unwrap())
    }

    #[test]
    fn the_index_trains_a_dictionary_and_recompresses_what_it_held() {
        let (cache, texts) = big_cache(5000);
        let (_, text, before, _) = cache.stats();
        assert!(text >= TRAIN_AT && cache.dictionary().is_none());
        cache.settle();
        let dict = cache.dictionary().expect("trained");
        let (_, _, after, _) = cache.stats();
        assert!(after < before, "{after} < {before}");
        assert!(!dict.common.sorted().is_empty(), "keys nearly every text holds");
        for (id, items) in &texts {
            let doc = held(&cache, id);
            assert!(doc.dict.as_ref().is_some_and(|d| Arc::ptr_eq(d, &dict)), "{id}");
            assert_eq!(&doc.items(), items, "{id}");
            // Its filter left the common keys out, and still never misses.
            for item in items {
                let words: Vec<&str> = item.split(' ').collect();
                for n in [words[3], &item[10..30], &words[5..8].join(" "), item.as_str()] {
                    assert!(may(&doc, n.trim()), "{n:?} in {id}");
                }
            }
        }
        // A word of common trigrams only passes every filter untested; one
        // that is nowhere is still ruled out.
        let common: Vec<u64> = dict.common.sorted();
        let word: String = common
            .iter()
            .find(|&&k| k & SPACED == 0 && k.to_be_bytes()[5..].iter().all(u8::is_ascii_lowercase))
            .map(|&k| k.to_be_bytes()[5..].iter().map(|&b| char::from(b)).collect())
            .unwrap();
        assert!(texts.iter().all(|(id, _)| may(&held(&cache, id), &word)), "{word}");
        assert!(texts.iter().all(|(id, _)| !may(&held(&cache, id), "qqqzzzxx")));
        // A doc built now uses it at once.
        let encoder = cache.encoder();
        let doc = Doc::build(None, None, vec![IndexedItem { text: Cow::Borrowed("re7 de14") }], encoder.as_deref());
        assert!(!doc.undicted());
        assert_eq!(doc.items(), ["re7 de14"]);
    }

    #[test]
    fn a_dictionary_that_would_not_pay_for_itself_is_not_kept() {
        // So few words that zstd alone finds them in each text.
        let (cache, _) = big_cache(20);
        cache.settle();
        assert!(cache.dictionary().is_none());
        assert!(cache.retry_at.load(Ordering::Relaxed) > 2 * TRAIN_AT, "tried again once the texts doubled");
        cache.settle();
        assert!(cache.dictionary().is_none());
    }

    #[test]
    fn a_dictionary_survives_the_cache_file_round_trip() {
        let RoundTrip { cache, texts, dir, loaded, path } = round_trip();
        assert!(loaded.dictionary().is_some(), "adopted for the docs built next");
        assert_eq!(loaded.stats(), cache.stats(), "texts left in the file count as held");
        for (id, items) in &texts {
            let (a, b) = (held(&cache, id), held(&loaded, id));
            assert!(b.is_stored() && !a.is_stored(), "{id}");
            assert_eq!(&b.items(), items, "{id}");
            assert_eq!(a.bloom.bits(), b.bloom.bits(), "{id}");
        }
        // Cut anywhere, the directory is rejected, never half used.
        let (directory, _) = cache.encode();
        let (_, stored) = crate::cache_file::open_in_place(&path, HEAD).unwrap();
        for cut in [0, 8, 100, directory.len() / 2, directory.len() - 1] {
            assert!(DocCache::default().decode(directory[..cut].to_vec(), &stored).is_none(), "{cut}");
        }
        // So is one pointing past the stored texts.
        let (_, short) = crate::cache_file::open_in_place(&write(&cache, dir.path(), "short.bin", 1), HEAD).unwrap();
        assert!(DocCache::default().decode(directory, &short).is_none(), "texts cut short");
    }

    /// A settled [`big_cache`] written to an index file and loaded back.
    struct RoundTrip {
        cache: DocCache,
        texts: Vec<(String, Vec<String>)>,
        /// The file's directory, removed when dropped.
        dir: tempfile::TempDir,
        loaded: DocCache,
        path: std::path::PathBuf,
    }

    /// A [`RoundTrip`] through `index.bin` in a new directory.
    fn round_trip() -> RoundTrip {
        let (cache, texts) = big_cache(5000);
        cache.settle();
        let dir = tempfile::tempdir().unwrap();
        let (loaded, path) = through_file(&cache, dir.path(), "index.bin");
        RoundTrip { cache, texts, dir, loaded, path }
    }

    /// The head the unit tests write their index files with.
    const HEAD: &[u8] = b"TESTHEAD";

    /// Writes `cache` to `name` in `dir`, its stored texts less their last
    /// `cut` bytes: the file's path.
    fn write(cache: &DocCache, dir: &std::path::Path, name: &str, cut: usize) -> std::path::PathBuf {
        let path = dir.join(name);
        let (directory, texts) = cache.encode();
        crate::cache_file::write_in_place(&path, HEAD, &directory, &texts[..texts.len() - cut]).unwrap();
        path
    }

    /// `cache` saved to `name` in `dir` and loaded into a new cache: that
    /// cache and the file's path.
    fn through_file(cache: &DocCache, dir: &std::path::Path, name: &str) -> (DocCache, std::path::PathBuf) {
        let path = write(cache, dir, name, 0);
        let (directory, stored) = crate::cache_file::open_in_place(&path, HEAD).expect("well-formed");
        let loaded = DocCache::default();
        loaded.insert_all(loaded.decode(directory, &stored).expect("well-formed"));
        (loaded, path)
    }

    #[test]
    fn a_stored_text_that_does_not_check_is_unreadable_never_empty() {
        let RoundTrip { texts, dir, loaded, path, .. } = round_trip();
        // Flip the last byte of the file: the end of one stored text.
        let mut bytes = std::fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 0x01;
        let tmp = dir.path().join("tmp");
        std::fs::write(&tmp, &bytes).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        let (directory, stored) = crate::cache_file::open_in_place(&path, HEAD).expect("the directory is intact");
        let damaged = DocCache::default();
        damaged.insert_all(damaged.decode(directory, &stored).unwrap());
        let unreadable: Vec<&String> =
            texts.iter().map(|(id, _)| id).filter(|id| held(&damaged, id).text().is_err()).collect();
        assert_eq!(unreadable.len(), 1, "exactly the doc whose text was hit");
        // The cache loaded before the file was rewritten reads the old
        // file through its handle (a new inode took the path).
        for (id, items) in &texts {
            assert_eq!(&held(&loaded, id).items(), items, "{id}");
        }
        // Truncated under a loaded cache: the texts past the cut are
        // unreadable, never empty.
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(bytes.len() as u64 - 100).unwrap();
        assert!(texts.iter().any(|(id, _)| held(&damaged, id).text() == Err(Unreadable)));
        // Saving skips the unreadable docs; the rest round-trip.
        let (again, _) = through_file(&damaged, dir.path(), "again.bin");
        assert!(again.len() < texts.len());
        for (id, items) in &texts {
            if let Some(doc) = again.docs.read().unwrap().get(id) {
                assert_eq!(&doc.items(), items, "{id}");
            }
        }
    }

    /// A search's pass over stored filters says what the held filters say,
    /// for every doc and needle; it keeps them only when asked; a damaged
    /// stored filter is unreadable (that doc alone), never "no".
    #[test]
    fn a_filter_pass_over_stored_filters_agrees_with_the_held_ones() {
        let RoundTrip { cache, texts, dir, loaded, path } = round_trip();
        let ids: Vec<&String> = texts.iter().map(|(id, _)| id).collect();
        let words = ["the", "qxz", "alpha", "ab cd", "zzzzzz"];
        let mut needles: Vec<Needle> = words.iter().map(|w| Needle::new((*w).to_owned())).collect();
        // And words that are in some texts and not in others.
        needles.extend(texts.iter().take(6).map(|(_, items)| Needle::new(fold(&items[0][..12]).into_owned())));
        let needles: Vec<&Needle> = needles.iter().collect();
        let held_docs: Vec<Arc<Doc>> = ids.iter().map(|id| held(&cache, id)).collect();
        let stored_docs: Vec<Arc<Doc>> = ids.iter().map(|id| held(&loaded, id)).collect();
        let verdicts = |pass: &FilterPass<'_>| -> Vec<Result<bool, Unreadable>> {
            (0..ids.len()).flat_map(|i| (0..needles.len()).map(move |j| (i, j))).map(|(i, j)| pass.may(i, j)).collect()
        };
        let expected = verdicts(&FilterPass::new(&held_docs, &needles, false));
        assert!(expected.contains(&Ok(true)) && expected.contains(&Ok(false)));
        assert_eq!(verdicts(&FilterPass::new(&stored_docs, &needles, false)), expected);
        assert!(stored_docs.iter().all(|d| d.bloom.held().is_none() || d.lengths.is_empty()), "not kept");
        assert_eq!(verdicts(&FilterPass::new(&stored_docs, &needles, true)), expected);
        assert!(stored_docs.iter().all(|d| d.bloom.held().is_some()), "kept");
        // Kept, they are tested in memory, even with the file emptied.
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
        assert_eq!(verdicts(&FilterPass::new(&stored_docs, &needles, false)), expected);

        // One byte of the third filter in the file flipped: that doc's
        // verdicts are all unreadable, the others' unchanged.
        let path = write(&cache, dir.path(), "index.bin", 0);
        let mut bytes = std::fs::read(&path).unwrap();
        let (directory, stored) = crate::cache_file::open_in_place(&path, HEAD).unwrap();
        let docs = DocCache::default().decode(directory, &stored).unwrap();
        let mut filters: Vec<(u64, &str)> = docs
            .iter()
            .filter_map(|(id, d)| match &d.bloom.bits {
                Bits::Stored(b) => Some((b.at.offset, id.as_str())),
                Bits::Held(_) => None,
            })
            .collect();
        filters.sort_unstable();
        let (offset, hit) = filters[2];
        let region = bytes.len() - stored.len() as usize;
        bytes[region + offset as usize + 3] ^= 0x08;
        std::fs::write(&path, &bytes).unwrap();
        let (directory, stored) = crate::cache_file::open_in_place(&path, HEAD).unwrap();
        let damaged = DocCache::default();
        damaged.insert_all(damaged.decode(directory, &stored).unwrap());
        let damaged_docs: Vec<Arc<Doc>> = ids.iter().map(|id| held(&damaged, id)).collect();
        let got = verdicts(&FilterPass::new(&damaged_docs, &needles, true));
        for (i, id) in ids.iter().enumerate() {
            let (a, b) = (&got[i * needles.len()..][..needles.len()], &expected[i * needles.len()..][..needles.len()]);
            if id.as_str() == hit {
                assert!(a.iter().all(|v| *v == Err(Unreadable)), "{id}");
                assert!(damaged_docs[i].bloom.held().is_none(), "a damaged filter is not kept");
            } else {
                assert_eq!(a, b, "{id}");
            }
        }
    }

    #[test]
    fn saving_after_loading_writes_the_stored_texts_back() {
        let RoundTrip { cache, texts, dir, loaded, path: first } = round_trip();
        // Rewritten over its own path: the new file is read from the old
        // one's handle, then replaces it.
        let (again, second) = through_file(&loaded, dir.path(), "index.bin");
        assert_eq!(first, second);
        assert_eq!(again.stats(), cache.stats());
        for (id, items) in &texts {
            assert_eq!(&held(&loaded, id).items(), items, "{id}: the first load still reads its file");
            assert_eq!(&held(&again, id).items(), items, "{id}");
            assert_eq!(held(&again, id).bloom.bits(), held(&cache, id).bloom.bits(), "{id}");
        }
    }

    #[test]
    fn item_lengths_round_trip_and_reject_a_cut_number() {
        for ends in [vec![], vec![0], vec![0, 0, 5, 205, 70_205, 70_205, 1 << 40]] {
            assert_eq!(decode_lengths(&encode_lengths(&ends)).as_deref(), Some(&ends[..]));
        }
        assert_eq!(decode_lengths(&[0x85]), None);
        assert_eq!(decode_lengths(&[0xff; 11]), None);
        let d = doc(&["", "a", "", "bc"]);
        assert_eq!(d.items(), ["", "a", "", "bc"]);
    }

    #[test]
    fn folding_is_the_per_character_lower_case_mapping() {
        for t in ["plain", "MiXeD ASCII", "ÉCOLE naïve", "İstanbul", "发布 PR1137 ΣΑΣ", "Ǆ Ⅻ ＡＢＣ", "한국어 Ꙁ"]
        {
            let expected: String = t.chars().flat_map(char::to_lowercase).collect();
            assert_eq!(fold(t), expected, "{t}");
        }
        assert!(matches!(fold("already lower"), Cow::Borrowed(_)));
    }

    #[test]
    fn offsets_map_back_through_case_folding() {
        let original = "İx ÉCOLE";
        let folded = fold(original);
        let at = Needle::new("école".into()).find(&folded).unwrap();
        assert_eq!(&original[original_offset(original, at)..], "ÉCOLE");
    }
}
