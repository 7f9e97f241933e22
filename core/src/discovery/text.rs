//! The built-in full-text index: per session, its projected text
//! compressed (zstd) and a Bloom filter of the byte trigrams of its
//! lower-cased text. A query first tests every session's filter (a few
//! probes each, no decompression), then verifies the survivors on their
//! decompressed text, so every answer is exact; the filter only decides
//! what is worth decompressing.
//!
//! Matching is on `str::to_lowercase` (Unicode default case mapping) and
//! plain substrings, so CJK text needs no tokenizer and `1137` is found
//! inside `PR1137`. Trigrams are of UTF-8 bytes; a needle shorter than
//! three bytes cannot be filtered and every session is verified.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use memchr::memmem;

use super::fingerprint::Fingerprint;

/// Bloom filter bits per distinct trigram. With 4 probes, 6 bits give a
/// false-positive rate of about 5.6% per trigram; a needle of n bytes has
/// n-2 trigrams that must all hit, so a 6-byte word passes a session that
/// does not hold it about once in 10^5.
const BITS_PER_TRIGRAM: usize = 6;
const PROBES: u64 = 4;
/// zstd level of the stored text: fast to write, about 3x on prose.
const ZSTD_LEVEL: i32 = 3;

/// A Bloom filter over 24-bit trigram keys.
pub(crate) struct Bloom {
    bits: Box<[u64]>,
}

fn mix(mut x: u64) -> u64 {
    // splitmix64's finalizer.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Bloom {
    fn with_keys(keys: &[u32]) -> Bloom {
        if keys.is_empty() {
            return Bloom { bits: Box::new([]) };
        }
        let words = (keys.len() * BITS_PER_TRIGRAM).div_ceil(64);
        let mut bits = vec![0u64; words].into_boxed_slice();
        let m = (words * 64) as u64;
        for &k in keys {
            for p in Self::probes(k, m) {
                bits[(p / 64) as usize] |= 1 << (p % 64);
            }
        }
        Bloom { bits }
    }

    fn probes(key: u32, m: u64) -> impl Iterator<Item = u64> {
        let h = mix(u64::from(key) + 0x9e37_79b9_7f4a_7c15);
        let (h1, h2) = (h, h.rotate_left(32) | 1);
        (0..PROBES).map(move |i| {
            let x = h1.wrapping_add(i.wrapping_mul(h2));
            ((u128::from(x) * u128::from(m)) >> 64) as u64
        })
    }

    fn contains(&self, key: u32) -> bool {
        if self.bits.is_empty() {
            return false;
        }
        let m = (self.bits.len() * 64) as u64;
        Self::probes(key, m).all(|p| self.bits[(p / 64) as usize] & (1 << (p % 64)) != 0)
    }

    /// Whether every trigram of `needle` (lower-cased bytes) may be present.
    /// Always true for needles shorter than three bytes.
    pub(crate) fn may_contain(&self, needle: &[u8]) -> bool {
        needle.windows(3).all(|w| self.contains(key(w)))
    }

    fn bytes(&self) -> usize {
        self.bits.len() * 8
    }
}

fn key(w: &[u8]) -> u32 {
    (u32::from(w[0]) << 16) | (u32::from(w[1]) << 8) | u32::from(w[2])
}

/// The case mapping every comparison uses (the Unicode default lower-case
/// mapping, as JavaScript's `toLowerCase`), with an ASCII fast path.
pub(crate) fn fold(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(text.to_ascii_lowercase())
        } else {
            Cow::Borrowed(text)
        }
    } else {
        Cow::Owned(text.to_lowercase())
    }
}

/// The indexed body of one session.
pub(crate) struct Doc {
    /// The fingerprint it was built under (`None`: built for one query).
    pub(crate) fingerprint: Option<Fingerprint>,
    /// The session's latest title, read under the same fingerprint.
    pub(crate) title: Option<String>,
    /// The title lower-cased.
    pub(crate) title_folded: Option<String>,
    /// The projected item texts, concatenated and zstd-compressed.
    packed: Box<[u8]>,
    /// The end offset of each item in the decompressed text.
    ends: Box<[usize]>,
    bloom: Bloom,
}

/// One projected item's text, as the index is given it.
pub(crate) struct IndexedItem<'a> {
    pub(crate) text: Cow<'a, str>,
}

thread_local! {
    /// One bit per possible trigram (2 MiB), to count distinct trigrams in
    /// linear time; cleared after each use through the keys it collected.
    static SEEN: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Doc {
    /// Indexes the items of one session.
    pub(crate) fn build(fingerprint: Option<Fingerprint>, title: Option<String>, items: Vec<IndexedItem<'_>>) -> Doc {
        let total: usize = items.iter().map(|i| i.text.len()).sum();
        let mut text = String::with_capacity(total);
        let mut ends = Vec::with_capacity(items.len());
        let mut keys: Vec<u32> = Vec::new();
        SEEN.with(|seen| {
            let mut seen = seen.borrow_mut();
            if seen.is_empty() {
                seen.resize(1 << 18, 0);
            }
            for item in &items {
                text.push_str(&item.text);
                ends.push(text.len());
                for w in fold(&item.text).as_bytes().windows(3) {
                    let k = key(w);
                    let (word, bit) = ((k >> 6) as usize, 1u64 << (k & 63));
                    if seen[word] & bit == 0 {
                        seen[word] |= bit;
                        keys.push(k);
                    }
                }
            }
            for &k in &keys {
                seen[(k >> 6) as usize] = 0;
            }
        });
        let bloom = Bloom::with_keys(&keys);
        let packed = if text.is_empty() {
            Vec::new()
        } else {
            // Compressing a String held in memory cannot fail.
            zstd::bulk::compress(text.as_bytes(), ZSTD_LEVEL).unwrap_or_default()
        };
        let title_folded = title.as_deref().map(|t| fold(t).into_owned());
        Doc { fingerprint, title, title_folded, packed: packed.into_boxed_slice(), ends: ends.into(), bloom }
    }

    /// Whether the body may hold `needle` (lower-cased).
    pub(crate) fn may_contain(&self, needle: &str) -> bool {
        !self.ends.is_empty() && self.bloom.may_contain(needle.as_bytes())
    }

    /// The decompressed item texts.
    pub(crate) fn items(&self) -> Vec<String> {
        let Some(&len) = self.ends.last() else { return Vec::new() };
        let text = zstd::bulk::decompress(&self.packed, len).unwrap_or_default();
        let text = String::from_utf8(text).unwrap_or_default();
        let mut out = Vec::with_capacity(self.ends.len());
        let mut start = 0;
        for &end in self.ends.iter() {
            out.push(text.get(start..end).unwrap_or_default().to_owned());
            start = end;
        }
        out
    }

    /// Bytes of the projected text it covers.
    pub(crate) fn text_bytes(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Bytes the index holds for it (compressed text, offsets, filter,
    /// title).
    pub(crate) fn index_bytes(&self) -> usize {
        self.packed.len()
            + self.ends.len() * std::mem::size_of::<usize>()
            + self.bloom.bytes()
            + self.title.as_ref().map_or(0, String::len)
            + self.title_folded.as_ref().map_or(0, String::len)
            + std::mem::size_of::<Doc>()
    }
}

/// The first occurrence of `needle` (lower-cased) in `folded`.
pub(crate) fn find(folded: &str, needle: &str) -> Option<usize> {
    memmem::find(folded.as_bytes(), needle.as_bytes())
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
        folded += c.to_lowercase().map(char::len_utf8).sum::<usize>();
    }
    original.len()
}

/// The built docs of a resolver, by session id.
#[derive(Default)]
pub(crate) struct DocCache {
    docs: RwLock<HashMap<String, Arc<Doc>>>,
}

impl DocCache {
    /// The doc of `id` if it was built under `fp`.
    pub(crate) fn get(&self, id: &str, fp: Option<&Fingerprint>) -> Option<Arc<Doc>> {
        let fp = fp?;
        let docs = self.docs.read().unwrap_or_else(|e| e.into_inner());
        docs.get(id).filter(|d| d.fingerprint.as_ref() == Some(fp)).cloned()
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

    pub(crate) fn clear(&self) {
        self.docs.write().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// (sessions, projected text bytes, index bytes) of the kept docs.
    pub(crate) fn stats(&self) -> (usize, usize, usize) {
        let docs = self.docs.read().unwrap_or_else(|e| e.into_inner());
        let text = docs.values().map(|d| d.text_bytes()).sum();
        let index = docs.values().map(|d| d.index_bytes()).sum::<usize>() + docs.keys().map(String::len).sum::<usize>();
        (docs.len(), text, index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(texts: &[&str]) -> Doc {
        Doc::build(None, None, texts.iter().map(|t| IndexedItem { text: Cow::Borrowed(*t) }).collect())
    }

    #[test]
    fn the_filter_never_misses_a_substring() {
        let d = doc(&["Fix PR1137 before 发布版本", "naïve ÉCOLE"]);
        for n in ["pr1137", "1137", "发布", "版本", "école", "naïve", "fix pr", "e 发"] {
            assert!(d.may_contain(n), "{n}");
        }
        assert!(!d.may_contain("zzzz"));
        assert_eq!(d.items(), vec!["Fix PR1137 before 发布版本".to_owned(), "naïve ÉCOLE".to_owned()]);
    }

    #[test]
    fn offsets_map_back_through_case_folding() {
        let original = "İx ÉCOLE";
        let folded = fold(original);
        let at = find(&folded, "école").unwrap();
        assert_eq!(&original[original_offset(original, at)..], "ÉCOLE");
    }
}
