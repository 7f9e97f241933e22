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

/// Bloom filter bits per distinct key. With 3 probes, 4 bits give a
/// false-positive rate of about 15% per key; a needle of n bytes has about
/// n-2 keys that must all hit, so a 7-byte word passes a session that does
/// not hold it well under once in a thousand (trigrams are not
/// independent, so more in practice). Measured against the memory bound in
/// BENCHMARKS.md.
const BITS_PER_KEY: usize = 4;
const PROBES: u64 = 3;
/// zstd level of the stored text: fast to write, about 3x on prose.
const ZSTD_LEVEL: i32 = 3;

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
    for w in text.windows(3) {
        if !w.iter().any(u8::is_ascii_whitespace) {
            f(trigram(w));
        }
    }
    for w in text.windows(5) {
        if w[2] == b' ' {
            f(SPACED | (u64::from(w[0]) << 24) | (u64::from(w[1]) << 16) | (u64::from(w[3]) << 8) | u64::from(w[4]));
        }
    }
}

/// Trigram keys are below 2^24; keys around a space have this bit.
const SPACED: u64 = 1 << 32;

fn trigram(w: &[u8]) -> u64 {
    (u64::from(w[0]) << 16) | (u64::from(w[1]) << 8) | u64::from(w[2])
}

/// A Bloom filter over the keys of [`keys`].
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
    fn with_keys(keys: &[u64]) -> Bloom {
        if keys.is_empty() {
            return Bloom { bits: Box::new([]) };
        }
        let words = (keys.len() * BITS_PER_KEY).div_ceil(64);
        let mut bits = vec![0u64; words].into_boxed_slice();
        let m = (words * 64) as u64;
        for &k in keys {
            for p in Self::probes(k, m) {
                bits[(p / 64) as usize] |= 1 << (p % 64);
            }
        }
        Bloom { bits }
    }

    fn probes(key: u64, m: u64) -> impl Iterator<Item = u64> {
        let h = mix(key + 0x9e37_79b9_7f4a_7c15);
        let (h1, h2) = (h, h.rotate_left(32) | 1);
        (0..PROBES).map(move |i| {
            let x = h1.wrapping_add(i.wrapping_mul(h2));
            ((u128::from(x) * u128::from(m)) >> 64) as u64
        })
    }

    fn contains(&self, key: u64) -> bool {
        if self.bits.is_empty() {
            return false;
        }
        let m = (self.bits.len() * 64) as u64;
        Self::probes(key, m).all(|p| self.bits[(p / 64) as usize] & (1 << (p % 64)) != 0)
    }

    /// Whether every key of `needle` (lower-cased bytes) may be present.
    /// Always true for a needle without keys (shorter than three bytes).
    pub(crate) fn may_contain(&self, needle: &[u8]) -> bool {
        let mut all = true;
        keys(needle, |k| all = all && self.contains(k));
        all
    }

    fn bytes(&self) -> usize {
        self.bits.len() * 8
    }
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
        let ascii = rest.bytes().position(|b| b >= 0x80).unwrap_or(rest.len());
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

/// CJK and Hangul: no case, copied as they are.
fn caseless(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{9fff}' | '\u{ac00}'..='\u{d7a3}')
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
    /// The thread's zstd decompression context, reused by every search.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
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
        let mut keys: Vec<u64> = Vec::new();
        let mut spaced: Vec<u64> = Vec::new();
        SEEN.with(|seen| {
            let mut seen = seen.borrow_mut();
            if seen.is_empty() {
                seen.resize(1 << 18, 0);
            }
            for item in &items {
                text.push_str(&item.text);
                ends.push(text.len());
                self::keys(fold(&item.text).as_bytes(), |k| {
                    if k & SPACED != 0 {
                        spaced.push(k);
                        return;
                    }
                    let (word, bit) = ((k >> 6) as usize, 1u64 << (k & 63));
                    if seen[word] & bit == 0 {
                        seen[word] |= bit;
                        keys.push(k);
                    }
                });
            }
            for &k in &keys {
                seen[(k >> 6) as usize] = 0;
            }
        });
        spaced.sort_unstable();
        spaced.dedup();
        keys.extend(spaced);
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

    /// The decompressed text of all items, and where each item ends in it.
    pub(crate) fn text(&self) -> (String, &[usize]) {
        let Some(&len) = self.ends.last() else { return (String::new(), &[]) };
        // One decompression context per thread: creating one per call
        // (a large allocation, zeroed) cost more than the decompression.
        let text = DECOMPRESSOR.with(|d| {
            let mut d = d.borrow_mut();
            if d.is_none() {
                *d = zstd::bulk::Decompressor::new().ok();
            }
            d.as_mut().and_then(|d| d.decompress(&self.packed, len).ok()).unwrap_or_default()
        });
        match String::from_utf8(text) {
            Ok(text) if text.len() == len => (text, &self.ends),
            // Never: the index wrote this text itself.
            _ => (String::new(), &[]),
        }
    }

    /// The decompressed item texts.
    #[cfg(test)]
    pub(crate) fn items(&self) -> Vec<String> {
        let (text, ends) = self.text();
        let mut start = 0;
        ends.iter()
            .map(|&end| {
                let item = text[start..end].to_owned();
                start = end;
                item
            })
            .collect()
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

/// A lower-cased needle, prepared once per query for every session.
pub(crate) struct Needle {
    pub(crate) text: String,
    finder: memmem::Finder<'static>,
}

impl Needle {
    pub(crate) fn new(text: String) -> Needle {
        let finder = memmem::Finder::new(text.as_bytes()).into_owned();
        Needle { text, finder }
    }

    /// The first occurrence in `folded`.
    pub(crate) fn find(&self, folded: &str) -> Option<usize> {
        self.finder.find(folded.as_bytes())
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

/// The built docs of a resolver, by session id.
#[derive(Default)]
pub(crate) struct DocCache {
    docs: RwLock<HashMap<String, Arc<Doc>>>,
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

    /// Appends every kept doc (see `persist.rs`).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        use super::persist::{put, put_opt};
        let docs = self.docs.read().unwrap_or_else(|e| e.into_inner());
        let kept: Vec<(&String, &Arc<Doc>)> = docs.iter().filter(|(_, d)| d.fingerprint.is_some()).collect();
        out.extend_from_slice(&(kept.len() as u64).to_le_bytes());
        for (id, d) in kept {
            put(out, id.as_bytes());
            put(out, d.fingerprint.as_ref().map_or(&[][..], Fingerprint::as_bytes));
            put_opt(out, d.title.as_deref().map(str::as_bytes));
            put(out, &d.packed);
            out.extend_from_slice(&(d.ends.len() as u64).to_le_bytes());
            for &e in d.ends.iter() {
                out.extend_from_slice(&(e as u64).to_le_bytes());
            }
            out.extend_from_slice(&(d.bloom.bits.len() as u64).to_le_bytes());
            for &w in d.bloom.bits.iter() {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
    }

    /// Reads what [`encode`](Self::encode) wrote; `None` if malformed. The
    /// offsets must ascend, and a doc's text must decompress to exactly
    /// its last offset when it is searched (else it reads as empty).
    pub(crate) fn decode(&self, input: &mut super::persist::Input<'_>) -> Option<Vec<(String, Doc)>> {
        let n = input.u64()?;
        let mut out = Vec::new();
        for _ in 0..n {
            let id = input.string()?;
            let fingerprint = Some(input.fingerprint()?);
            let title = input.opt_string()?;
            let packed: Box<[u8]> = input.bytes()?.into();
            let count = usize::try_from(input.u64()?).ok()?;
            let mut ends = Vec::with_capacity(count.min(input.0.len() / 8));
            for _ in 0..count {
                ends.push(usize::try_from(input.u64()?).ok()?);
            }
            if ends.windows(2).any(|w| w[0] > w[1]) {
                return None;
            }
            let words = usize::try_from(input.u64()?).ok()?;
            let mut bits = Vec::with_capacity(words.min(input.0.len() / 8));
            for _ in 0..words {
                bits.push(input.u64()?);
            }
            let title_folded = title.as_deref().map(|t| fold(t).into_owned());
            let bloom = Bloom { bits: bits.into() };
            out.push((id, Doc { fingerprint, title, title_folded, packed, ends: ends.into(), bloom }));
        }
        Some(out)
    }

    /// Keeps every `(id, doc)`.
    pub(crate) fn insert_all(&self, docs: Vec<(String, Doc)>) {
        let mut held = self.docs.write().unwrap_or_else(|e| e.into_inner());
        for (id, doc) in docs {
            held.insert(id, Arc::new(doc));
        }
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

    pub(crate) fn clear(&self) {
        self.docs.write().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// (sessions, projected text bytes, index bytes, of which filters) of
    /// the kept docs.
    pub(crate) fn stats(&self) -> (usize, usize, usize, usize) {
        let docs = self.docs.read().unwrap_or_else(|e| e.into_inner());
        let text = docs.values().map(|d| d.text_bytes()).sum();
        let filters = docs.values().map(|d| d.bloom.bytes()).sum();
        let index = docs.values().map(|d| d.index_bytes()).sum::<usize>() + docs.keys().map(String::len).sum::<usize>();
        (docs.len(), text, index, filters)
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
    fn the_filter_rules_out_a_phrase_whose_words_are_apart() {
        let d = doc(&["the parser builds a tree", "cache keys", "the parser cache"]);
        assert!(d.may_contain("parser cache"), "in the last message");
        assert!(d.may_contain("tree"));
        // The words are all there, never side by side; nor across the end
        // of one message and the start of the next ("tree" + "cache").
        for apart in ["builds tree", "tree cache", "cache tree", "keys parser"] {
            assert!(!d.may_contain(apart), "{apart}");
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
            if !needle.is_empty() && !d.ends.is_empty() {
                proptest::prop_assert!(d.may_contain(&needle), "{needle:?} in {texts:?}");
            }
        }
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
