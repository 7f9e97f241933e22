//! The built-in full-text index, the search engine: per session, its
//! projected text compressed (zstd, with a dictionary the index trains on
//! its own texts) and a Bloom filter of keys of its lower-cased text: byte
//! trigrams without whitespace, and the five bytes around each space. A
//! search ([`SearchSet::search`], given a parsed [`Query`]) first tests
//! every session's filter (a few probes each, no decompression), ranks the
//! sessions by the best tier they can reach, then verifies the survivors
//! on their decompressed text in that order, only while they can still
//! enter the top results, so every answer is exact; the filter only decides
//! what is worth decompressing. Each hit carries its snippet.
//!
//! Matching is on `str::to_lowercase` (Unicode default case mapping) and
//! plain substrings, so CJK text needs no tokenizer and `1137` is found
//! inside `PR1137`. Keys are of UTF-8 bytes; a needle without any (shorter
//! than three bytes, or only of keys nearly every session holds) cannot be
//! filtered and every session is verified.
//!
//! What the rest of the crate uses: [`DocCache`] (the docs kept by
//! session), [`Doc`] and [`IndexedItem`] to build a doc, with an
//! [`Encoder`], and [`Query`] and [`SearchSet`] to search; everything else
//! is the engine's own. The crate root's hidden `search_index` drives the
//! engine alone, for the project's tests and benchmarks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::host::Fingerprint;

pub mod alone;
mod bloom;
mod dict;
mod doc;
mod file;
mod fold;
mod hit;
mod keys;
mod needle;
mod pass;
mod query;
mod score;
mod set;
mod snippet;
mod stored;
mod verify;
mod vocab;

use bloom::BITS_PER_KEY;
use dict::{compress, Dictionary, TRAIN_AT, TRAIN_SAMPLE};

pub(crate) use dict::Encoder;
pub(crate) use doc::{Doc, IndexedItem};
pub(crate) use query::Query;
pub use query::{search_fold, SearchTerms};
#[cfg(test)]
pub(crate) use score::MOST_SEARCHING;
pub(crate) use set::{Headers, SearchSet, Work as SearchWork};

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
    /// Bumped by every change of the kept docs or the dictionary
    /// ([`Self::generation`]).
    generation: AtomicU64,
}

impl DocCache {
    /// Bytes of text built without a dictionary after which
    /// [`Self::settle`] trains one.
    pub(crate) const TRAIN_AT: usize = TRAIN_AT;

    /// For each `(id, fingerprint)`, the doc built under that fingerprint,
    /// under one lock.
    pub(crate) fn get_all<'a>(
        &self,
        wanted: impl Iterator<Item = (&'a str, Option<&'a Fingerprint>)>,
    ) -> Vec<Option<Arc<Doc>>> {
        let docs = self.docs.read().unwrap_or_else(|e| e.into_inner());
        wanted.map(|(id, fp)| docs.get(id).filter(|d| fp.is_some() && d.fingerprint.as_ref() == fp).cloned()).collect()
    }

    /// A number that changes whenever a doc is kept, replaced or dropped
    /// (or the dictionary changes): what was made of the docs under one
    /// generation holds while it is the same.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Marks the kept docs changed ([`Self::generation`]).
    fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
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
    fn dictionary(&self) -> Option<Arc<Dictionary>> {
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
                // What each sample takes compressed without a dictionary.
                let mut plain = Vec::new();
                let mut sampled = 0;
                for (_, d) in &undicted {
                    if sampled >= TRAIN_SAMPLE {
                        break;
                    }
                    if let Some((text, ends, whole)) = d.sample(TRAIN_SAMPLE - sampled) {
                        sampled += text.len();
                        plain.push(if whole { d.packed.len() } else { compress(&text, None).len() });
                        samples.push((text, ends));
                    }
                }
                // Kept only if it saves more than it weighs, extrapolated
                // from the sample to all of these texts; else tried again
                // once they have doubled.
                // (Compressed text and filter bits saved.)
                let trained = Dictionary::train(&samples).map(|(dict, n)| (Arc::new(dict), n));
                let pays = trained.filter(|(dict, left_out)| {
                    let Some(encoder) = Encoder::new(dict) else { return false };
                    let (plain, packed): (usize, usize) = plain
                        .iter()
                        .zip(&samples)
                        .map(|(&plain, (text, _))| (plain, compress(text, Some(&encoder)).len()))
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
        drop(docs);
        self.changed();
    }

    /// Drops the doc held for `id` if it is `doc` (not one built since):
    /// whether it was dropped.
    pub(crate) fn evict(&self, id: &str, doc: &Arc<Doc>) -> bool {
        let mut docs = self.docs.write().unwrap_or_else(|e| e.into_inner());
        let held = docs.get(id).is_some_and(|d| Arc::ptr_eq(d, doc));
        if held {
            docs.remove(id);
            drop(docs);
            self.changed();
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
        drop(held);
        self.changed();
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
        drop(docs);
        self.changed();
    }

    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.docs.write().unwrap_or_else(|e| e.into_inner()).retain(|id, _| keep(id));
        self.changed();
    }

    /// Forgets every doc and the dictionary (trained on them).
    pub(crate) fn clear(&self) {
        self.docs.write().unwrap_or_else(|e| e.into_inner()).clear();
        *self.dictionary.write().unwrap_or_else(|e| e.into_inner()) = None;
        self.retry_at.store(0, Ordering::Relaxed);
        self.changed();
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
    use std::borrow::Cow;

    use super::bloom::Bits;
    use super::doc::{decode_lengths, encode_lengths};
    use super::fold::{fold, original_offset};
    use super::keys::{is_trigram, TrigramBits};
    use super::needle::Needle;
    use super::pass::{FilterPass, Roster};
    use super::stored::Unreadable;
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

    #[test]
    fn a_number_is_not_found_in_its_trigrams_held_apart() {
        // `pr1`, `r11`, `113` and `137` are all there, `1137` is not.
        let d = doc(&["see PR113 and PR137, then PR11"]);
        for n in ["pr113", "pr137", "113", "137", "r11", "pr11"] {
            assert!(may(&d, n), "{n}");
        }
        assert!(!may(&d, "pr1137"));
        assert!(!may(&d, "1137"));
        assert!(may(&doc(&["PR11370 merged"]), "pr1137"));
    }

    #[test]
    fn trigram_bits_never_rule_out_what_a_text_holds() {
        let text = "s1\n/work/p3\nfix pr1137 before 发布版本\n";
        let bits = TrigramBits::of(text);
        for n in ["pr1137", "1137", "work", "发布", "版本", "fix", "p3", "x"] {
            assert!(bits.may_hold(&Needle::new(n.to_owned()).keys), "{n}");
        }
        assert!(!bits.may_hold(&Needle::new("zzqqxx".to_owned()).keys));
    }

    proptest::proptest! {
        #[test]
        fn no_substring_is_ever_ruled_out(
            items in proptest::collection::vec("[ab12 \\nÉé发 ]{0,40}", 1..4),
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

    /// Whether `roster` rules `word` out, told the same by a pass over it
    /// and by its docs' serials looked up.
    fn rules_out_alike(roster: &Roster, word: String) -> bool {
        let needle = Needle::new(word);
        let passed = roster.rules_out(&needle, false);
        assert_eq!(roster.rules_out(&needle, true), passed, "{:?}", needle.text);
        passed
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
        // (Its vocabulary apart: what it buys is speed.)
        let after = after - dict.vocab.bytes();
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
            .find(|&&k| is_trigram(k) && k.to_be_bytes()[5..].iter().all(u8::is_ascii_lowercase))
            .map(|&k| k.to_be_bytes()[5..].iter().map(|&b| char::from(b)).collect())
            .unwrap();
        assert!(texts.iter().all(|(id, _)| may(&held(&cache, id), &word)), "{word}");
        assert!(texts.iter().all(|(id, _)| !may(&held(&cache, id), "qqqzzzxx")));
        // The dictionary's vocabulary rules out docs for a word that is
        // nowhere without testing their filters, and for the words it
        // lists the holders of, and never a doc holding the word.
        let nowhere = Needle::new("qqqzzzxx".to_owned());
        assert!(texts.iter().all(|(id, _)| !held(&cache, id).admits(&nowhere)));
        let mut ruled_out = 0;
        for (_, items) in texts.iter().take(8) {
            for w in items[0].split(' ').filter(|w| w.len() >= 5) {
                let needle = Needle::new(w.to_owned());
                for (other, other_items) in &texts {
                    let admitted = held(&cache, other).admits(&needle);
                    assert!(admitted || !other_items.iter().any(|i| i.contains(w)), "{w:?} in {other}");
                    ruled_out += usize::from(!admitted);
                }
            }
        }
        assert!(ruled_out > 0, "some docs ruled out by the pairs alone");
        // A roster of every doc rules out, at once, a word no doc holds,
        // never one some doc holds; nor anything once a doc its
        // vocabulary does not cover is among them.
        let all: Vec<Arc<Doc>> = texts.iter().map(|(id, _)| held(&cache, id)).collect();
        let roster = Roster::new(&all);
        assert!(rules_out_alike(&roster, "qqqzzzxx".to_owned()));
        for (_, items) in texts.iter().take(8) {
            for w in items[0].split(' ').filter(|w| w.len() >= 4).take(20) {
                assert!(!rules_out_alike(&roster, w.to_owned()), "{w:?}");
            }
        }
        let mut open = all.clone();
        open.push(Arc::new(doc(&["unregistered"])));
        assert!(!rules_out_alike(&Roster::new(&open), "qqqzzzxx".to_owned()));
        // A doc built now uses it at once.
        let encoder = cache.encoder();
        let doc = Doc::build(None, None, vec![IndexedItem { text: Cow::Borrowed("re7 de14") }], encoder.as_deref());
        assert!(!doc.undicted());
        assert_eq!(doc.items(), ["re7 de14"]);
    }

    /// A number (`PR1137`) is answered from the docs its vocabulary lists
    /// for its 4-byte keys, not from every doc's filter: the filters of docs
    /// built with a dictionary leave number keys out, the vocabulary lists
    /// who holds a rare one, and rules out every other doc, never one that
    /// holds it (the query does not test every session's filter).
    #[test]
    fn a_rare_number_is_answered_from_the_docs_its_vocabulary_lists() {
        let cache = DocCache::default();
        let mut texts = Vec::new();
        for i in 0..64u64 {
            let mut items: Vec<String> = (0..8).map(|j| prose(i * 8 + j + 1, 4200, 5000)).collect();
            // Every doc a number of its own; docs 5 and 41 also PR1137 (the
            // second inside a longer number), doc 9 its digits apart.
            items[3].push_str(&format!(" PR{} merged", 2000 + i));
            match i {
                5 => items[6].push_str(" see PR1137."),
                41 => items[0].push_str(" PR11370 too"),
                9 => items[2].push_str(" PR113 and PR137 and 1-137"),
                _ => {}
            }
            let doc = Doc::build(
                Some(Fingerprint::from_u64(i)),
                None,
                items.iter().map(|t| IndexedItem { text: Cow::Borrowed(t.as_str()) }).collect(),
                cache.encoder().as_deref(),
            );
            cache.put(&format!("s{i}"), &Arc::new(doc));
            texts.push((format!("s{i}"), items));
        }
        cache.settle();
        let dict = cache.dictionary().expect("trained");
        assert!(dict.is_common(keys::NUMERAL | u64::from(u32::from_be_bytes(*b"1137"))), "left out of the filters");
        let serial = |i: usize| held(&cache, &texts[i].0).serial;
        let needle = Needle::new("pr1137".to_owned());
        let listed = needle.with_verdict(&dict, |v| match v {
            vocab::Verdict::Only(serials) => serials.clone(),
            other => panic!("{other:?}"),
        });
        let mut holders = vec![serial(5), serial(41)];
        holders.sort_unstable();
        assert_eq!(listed, holders);
        for (i, (id, items)) in texts.iter().enumerate() {
            let holds = items.iter().any(|t| fold(t).contains("pr1137"));
            assert_eq!(holds, i == 5 || i == 41, "{id}");
            assert_eq!(may(&held(&cache, id), "pr1137"), holds, "{id}");
            assert!(may(&held(&cache, id), &format!("pr{}", 2000 + i)), "{id}");
        }
        // A number no doc holds is nowhere, at once.
        let all: Vec<Arc<Doc>> = texts.iter().map(|(id, _)| held(&cache, id)).collect();
        assert!(rules_out_alike(&Roster::new(&all), "pr4999".to_owned()));
        assert!(!rules_out_alike(&Roster::new(&all), "137".to_owned()));
        // Through a file, the same.
        let dir = tempfile::tempdir().unwrap();
        let (back, _) = through_file(&cache, dir.path(), "numbers");
        let doc = |i: usize| Arc::clone(back.docs.read().unwrap().get(&texts[i].0).unwrap());
        let needle = Needle::new("pr1137".to_owned());
        assert!((0..64).all(|i| doc(i).may_contain(&needle).unwrap() == (i == 5 || i == 41)));
    }

    /// A session of more than `STREAM_AT` bytes: its text is compressed,
    /// sampled and recompressed as a stream, item by item, and reads back
    /// the same, with the filter a text joined first gets.
    #[test]
    fn a_big_text_is_streamed_and_reads_back_the_same() {
        let (cache, _) = big_cache(5000);
        let items: Vec<String> = (0..40).map(|j| prose(9000 + j, 230_000, 5000)).collect();
        let borrowed = || items.iter().map(|t| IndexedItem { text: Cow::Borrowed(t.as_str()) }).collect::<Vec<_>>();
        assert!(items.iter().map(String::len).sum::<usize>() >= dict::STREAM_AT);
        let big = Doc::build(Some(Fingerprint::from_u64(999)), None, borrowed(), None);
        assert_eq!(big.items(), items);
        cache.put("zbig", &Arc::new(big));
        // The sample of a big text is its first items, not all of it (here
        // the small texts, first in id order, are the sample).
        let (sample, ends, whole) = held(&cache, "zbig").sample(TRAIN_SAMPLE).unwrap();
        assert!(!whole && sample.len() <= TRAIN_SAMPLE && ends.len() == 4, "{} {}", sample.len(), ends.len());
        assert_eq!(sample, items[..4].concat().as_bytes());
        cache.settle();
        assert!(cache.dictionary().is_some());
        let redone = held(&cache, "zbig");
        assert!(!redone.undicted());
        assert_eq!(redone.items(), items);
        // The same keys as a doc built with the dictionary from the start
        // (its text joined and compressed at once below `STREAM_AT`).
        let encoder = cache.encoder().unwrap();
        let direct = Doc::build(None, None, borrowed(), Some(&encoder));
        assert_eq!(redone.bloom.bits().unwrap(), direct.bloom.bits().unwrap());
        assert_eq!(direct.items(), items);
        let mut seen = Vec::new();
        let read = redone.each_item(&redone.ends(), |i| {
            seen.push(i.len());
            Some(())
        });
        assert!(read.is_ok());
        assert_eq!(seen, items.iter().map(String::len).collect::<Vec<_>>());
        // A text that is not what its ends say does not read.
        let mut short = redone.ends();
        short.pop();
        assert!(redone.each_item(&short, |_| Some(())).is_err());
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

    /// A text's length in the directory is bounded by the bytes the file
    /// stores of it: a length past what they can decompress to (zstd's
    /// most, 32,768 bytes a stored byte) makes the file ignored, while a
    /// text that compresses nearly that well loads and reads back.
    #[test]
    fn a_recorded_length_past_what_the_stored_text_can_give_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let build = |text: &str| {
            Doc::build(Some(Fingerprint::from_u64(1)), None, vec![IndexedItem { text: Cow::Borrowed(text) }], None)
        };
        // 8 MiB of one byte: a few hundred stored bytes.
        let one_byte = "a".repeat(8 << 20);
        let cache = DocCache::default();
        cache.put("flat", &Arc::new(build(&one_byte)));
        let (loaded, _) = through_file(&cache, dir.path(), "flat.bin");
        let doc = held(&loaded, "flat");
        assert!(doc.len > 1000 * doc.packed.len(), "{} bytes stored for {}", doc.packed.len(), doc.len);
        assert_eq!(doc.items(), [one_byte]);
        // A doc whose lengths claim more than its stored bytes can give.
        let small = build("a few words");
        let claimed = small.packed.len() * dict::MAX_RATIO + 1;
        let mut lengths = Vec::new();
        let mut n = claimed;
        while n >= 0x80 {
            lengths.push((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        lengths.push(n as u8);
        let lying = Doc { lengths: lengths.into(), len: claimed, ..small };
        let cache = DocCache::default();
        cache.put("lying", &Arc::new(lying));
        let path = write(&cache, dir.path(), "lying.bin", 0);
        let (directory, stored) = crate::cache_file::open_in_place(&path, HEAD).expect("a well-framed file");
        assert!(DocCache::default().decode(directory, &stored).is_none(), "a length past the file's bytes is refused");
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
        let (directory, region) = cache.encode();
        let texts = region.to_vec();
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

    /// The index file at `path` with its byte `at` flipped, written over
    /// it through a new file in `dir` (a new inode: caches loaded before
    /// keep the old one) and loaded into a new cache: that cache and the
    /// file's bytes.
    fn flipped(dir: &std::path::Path, path: &std::path::Path, at: usize) -> (DocCache, Vec<u8>) {
        let mut bytes = std::fs::read(path).unwrap();
        bytes[at] ^= 0x01;
        let tmp = dir.join("tmp");
        std::fs::write(&tmp, &bytes).unwrap();
        std::fs::rename(&tmp, path).unwrap();
        let (directory, stored) = crate::cache_file::open_in_place(path, HEAD).expect("the directory is intact");
        let damaged = DocCache::default();
        damaged.insert_all(damaged.decode(directory, &stored).unwrap());
        (damaged, bytes)
    }

    #[test]
    fn a_stored_text_that_does_not_check_is_unreadable_never_empty() {
        let RoundTrip { texts, dir, loaded, path, .. } = round_trip();
        // Flip the last byte of the file: the end of one stored text.
        let len = std::fs::metadata(&path).unwrap().len() as usize;
        let (damaged, bytes) = flipped(dir.path(), &path, len - 1);
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

    /// A stored text past the size decompressed at once is read from its
    /// file in chunks as it is decompressed, and checked once read to its
    /// end, also when the reader stopped at its first item: a byte damaged
    /// near its end makes it unreadable, never a partial answer.
    #[test]
    fn a_big_stored_text_streams_from_its_file_and_is_checked_to_its_end() {
        let cache = DocCache::default();
        let items: Vec<String> = (0..24).map(|j| prose(j + 1, 100_000, 5000)).collect();
        let doc = Doc::build(
            Some(Fingerprint::from_u64(7)),
            Some("big".into()),
            items.iter().map(|t| IndexedItem { text: Cow::Borrowed(t.as_str()) }).collect(),
            None,
        );
        assert!(doc.len > 2 * dict::WHOLE_AT && doc.packed.len() > 4 * (128 << 10), "streamed, in several chunks");
        cache.put("big", &Arc::new(doc));
        let dir = tempfile::tempdir().unwrap();
        let (loaded, path) = through_file(&cache, dir.path(), "index.bin");
        let stored = held(&loaded, "big");
        assert!(stored.is_stored());
        let read = |doc: &Doc| {
            let mut seen = Vec::new();
            doc.each_item_text(|item| {
                seen.push(item.to_owned());
                Some(())
            })
            .map(|()| seen)
        };
        assert_eq!(read(&stored).unwrap(), items);
        assert_eq!(stored.each_item_text(|_| None), Ok(()), "stopped at the first item");
        // A byte near the file's end (the end of the only text) flipped.
        let len = std::fs::metadata(&path).unwrap().len() as usize;
        let (damaged, bytes) = flipped(dir.path(), &path, len - 20);
        let damaged = held(&damaged, "big");
        let mut first = None;
        let stopped = damaged.each_item_text(|item| {
            first = Some(item.to_owned());
            None
        });
        assert_eq!(first.as_deref(), Some(items[0].as_str()), "the first item decompressed before the damage");
        assert_eq!(stopped, Err(Unreadable), "yet the text is unreadable");
        assert_eq!(read(&damaged), Err(Unreadable));
        // Truncated under the loaded doc: unreadable too.
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(bytes.len() as u64 - 5000).unwrap();
        assert_eq!(damaged.each_item_text(|_| None), Err(Unreadable));
        // The doc loaded before reads the old file through its handle.
        assert_eq!(read(&stored).unwrap(), items);
    }

    /// A search that looks its words up (a set's second on: the fields'
    /// trigrams, the docs' serials) answers exactly as the first, which
    /// passes over every session's fields, for words in bodies, titles, ids and
    /// cwds, rare and common, alone and together; and for a rare number it
    /// touches only the sessions that may hold it.
    #[test]
    fn a_search_that_looks_its_words_up_answers_as_one_that_passes_over_all() {
        let cache = DocCache::default();
        let mut headers = Vec::new();
        for i in 0..96u64 {
            let mut items: Vec<String> = (0..6).map(|j| prose(i * 6 + j + 1, 4200, 5000)).collect();
            items[2].push_str(&format!(" PR{} merged", 3000 + i));
            match i {
                7 => items[4].push_str(" see PR1137."),
                50 => items[1].push_str(" PR11370 too"),
                _ => {}
            }
            let title = match i % 9 {
                0 => Some(format!("Fix PR1137 part {i}")),
                4 => None,
                _ => Some(format!("Title {i} of {}", ["alpha", "kappa", "gamma"][i as usize % 3])),
            };
            let doc = Doc::build(
                Some(Fingerprint::from_u64(i)),
                title,
                items.iter().map(|t| IndexedItem { text: Cow::Borrowed(t.as_str()) }).collect(),
                cache.encoder().as_deref(),
            );
            let id = format!("s{i:03}");
            cache.put(&id, &Arc::new(doc));
            let cwd = (i % 5 != 0).then(|| format!("/work/p{}", i % 4));
            headers.push(crate::host::SessionHeader::new(id, 1_700_000_000 + i, cwd));
        }
        cache.settle();
        assert!(cache.dictionary().is_some(), "trained");
        let docs: Vec<Arc<Doc>> = headers.iter().map(|h| held(&cache, &h.id)).collect();
        let target = crate::host::Target::new("s000", Some("/work/p1".into()));
        let sessions = Headers::all(&headers);
        let warm = SearchSet::new(sessions, docs.clone());
        assert!(!warm.indexed(), "a set's first search passes over all");
        let mut common = prose(3, 40, 5000);
        common.truncate(common.find(' ').unwrap_or(common.len()));
        let queries = [
            "pr1137",
            "PR1137",
            "1137",
            "pr3042",
            "merged",
            "kappa",
            "s01",
            "work/p2",
            "/work/p3 pr3003",
            "title 1",
            "gamma merged",
            "zzqqxx",
            "fix pr1137",
            common.as_str(),
            "pr1137 merged",
        ];
        for q in queries {
            let query = Query::parse(q).unwrap();
            let hits = |set: &SearchSet| {
                let scored = set.search(&query, sessions, &target, 20, false, None).unwrap();
                let hits: Vec<_> =
                    scored.hits.iter().map(|h| (h.at, h.field, h.snippet.clone(), h.message_index)).collect();
                (hits, scored.work)
            };
            let (passed, all) = hits(&SearchSet::new(sessions, docs.clone()));
            let (looked_up, work) = hits(&warm);
            assert_eq!(looked_up, passed, "{q:?}");
            assert!(work.sessions <= all.sessions, "{q:?}: looked up, no more sessions walked: {work:?} {all:?}");
            assert_eq!(warm.rules_out(&query), SearchSet::new(sessions, docs.clone()).rules_out(&query), "{q:?}");
            if q == "merged" {
                // Every session holds it: the walk in the ranking's order
                // stops about the limit (20) in, its filters alone tested.
                assert_eq!(passed.len(), 20);
                assert!(all.sessions < 40 && work.sessions < 40, "{q:?}: the walk stops early: {all:?} {work:?}");
            }
            if q == "pr3042" {
                assert_eq!(passed.len(), 1);
                assert!(work.sessions <= 4 && work.fields <= 4, "{q:?}: a few sessions touched: {work:?}");
            }
        }
    }

    /// The ranking a search gives is the one of its definition, computed
    /// here by brute force over every session's text: tier 0 the phrase in
    /// the title, 1 every word in the title, 2 the phrase in a message, the
    /// id or the cwd, 3 every word in one message, 4 every word somewhere,
    /// by higher relevance (each word's occurrences in the messages,
    /// counted here); then the target's cwd first and sessions without a
    /// cwd next, newer `createdAt`, listing order; cut at the limit. Over
    /// sessions where each tier, cwd rank and creation time occur in every
    /// mix (equal times among them), for a first and a looked-up search,
    /// limits from 1 to all.
    #[test]
    fn a_search_ranks_as_its_definition_by_brute_force() {
        let words = ["amber", "basil", "cedar", "delta", "ember"];
        let mut headers = Vec::new();
        let mut texts: Vec<(Option<String>, Vec<String>)> = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for i in 0..160u64 {
            let mut items: Vec<String> = (0..4).map(|j| prose(i * 4 + j + 7, 60, 400)).collect();
            for _ in 0..next(4) {
                let (w, at) = (words[next(5) as usize], next(4) as usize);
                items[at].push_str(&format!(" {w}"));
            }
            if next(5) == 0 {
                // Two words side by side: the phrase in a message.
                let at = next(4) as usize;
                items[at].push_str(" Amber Basil");
            }
            let title = match next(6) {
                0 => Some("Amber basil notes".to_owned()),
                1 => Some(format!("On {} only", words[next(5) as usize])),
                2 => None,
                _ => Some(format!("Title {i}")),
            };
            let id = if next(9) == 0 { format!("amber-basil-{i}") } else { format!("s{i:03}") };
            let cwd = match next(4) {
                0 => None,
                1 => Some("/work/here".to_owned()),
                2 => Some("/work/cedar".to_owned()),
                _ => Some(format!("/work/p{}", next(3))),
            };
            headers.push(crate::host::SessionHeader::new(id, 1_700_000_000 + next(40), cwd));
            texts.push((title, items));
        }
        let docs: Vec<Arc<Doc>> = texts
            .iter()
            .map(|(title, items)| {
                Arc::new(Doc::build(
                    None,
                    title.clone(),
                    items.iter().map(|t| IndexedItem { text: Cow::Borrowed(t.as_str()) }).collect(),
                    None,
                ))
            })
            .collect();
        let target = crate::host::Target::new("s000", Some("/work/here".into()));
        let brute = |q: &str, limit: usize| -> Vec<(usize, u8)> {
            let query = Query::parse(q).unwrap();
            let (phrase, words) = (&query.phrase.text, query.words.iter().map(|w| &w.text).collect::<Vec<_>>());
            let mut ranked: Vec<(u8, f64, u8, f64, usize)> = Vec::new();
            for (at, (h, (title, items))) in headers.iter().zip(&texts).enumerate() {
                let title = fold(title.as_deref().unwrap_or(""));
                let (id, cwd) = (fold(&h.id), fold(h.cwd.as_deref().unwrap_or("")));
                let items: Vec<String> = items.iter().map(|t| fold(t).into_owned()).collect();
                let mut relevance = 0.0;
                let tier = if title.contains(phrase.as_str()) {
                    0
                } else if words.iter().all(|w| title.contains(w.as_str())) {
                    1
                } else if items.iter().any(|t| t.contains(phrase.as_str()))
                    || id.contains(phrase.as_str())
                    || cwd.contains(phrase.as_str())
                {
                    2
                } else if items.iter().any(|t| words.iter().all(|w| t.contains(w.as_str()))) {
                    3
                } else if words.iter().all(|w| {
                    [&title, &id, &cwd].iter().any(|f| f.contains(w.as_str()))
                        || items.iter().any(|t| t.contains(w.as_str()))
                }) {
                    let counts: Vec<u32> = words
                        .iter()
                        .map(|w| items.iter().map(|t| t.matches(w.as_str()).count() as u32).sum())
                        .collect();
                    let bytes = texts[at].1.iter().map(String::len).sum();
                    relevance = super::hit::relevance(&counts, bytes);
                    4
                } else {
                    continue;
                };
                let rank = crate::host::rank::rank(h.cwd.as_deref(), &target);
                ranked.push((tier, relevance, rank, h.created_at.as_f64().unwrap(), at));
            }
            ranked.sort_by(|a, b| {
                a.0.cmp(&b.0)
                    .then(b.1.total_cmp(&a.1))
                    .then(a.2.cmp(&b.2))
                    .then(b.3.total_cmp(&a.3))
                    .then(a.4.cmp(&b.4))
            });
            ranked.into_iter().take(limit).map(|r| (r.4, r.0)).collect()
        };
        // The docs of a search of one query (no filter keys, compressed
        // fast): the same hits, snippets and messages.
        let once: Vec<Arc<Doc>> = texts
            .iter()
            .map(|(title, items)| {
                Arc::new(Doc::for_one_query(
                    title.clone(),
                    items.iter().map(|t| IndexedItem { text: Cow::Borrowed(t.as_str()) }).collect(),
                ))
            })
            .collect();
        let sessions = Headers::all(&headers);
        let warm = SearchSet::new(sessions, docs.clone());
        let queries = [
            "amber",
            "basil",
            "amber basil",
            "basil amber",
            "cedar",
            "here",
            "amber-basil",
            "delta ember",
            "ember delta cedar",
            "cedar here",
            "zzqqxx",
        ];
        let (mut seen, mut tiers) = (0, std::collections::BTreeSet::new());
        for q in queries {
            for limit in [1, 3, 10, 25, 50, 200] {
                let (expected, tier): (Vec<usize>, Vec<u8>) = brute(q, limit).into_iter().unzip();
                seen += expected.len();
                tiers.extend(tier);
                let query = Query::parse(q).unwrap();
                let hits = |set: &SearchSet| {
                    let scored = set.search(&query, sessions, &target, limit, false, None).unwrap();
                    scored.hits.into_iter().map(|h| (h.at, h.field, h.snippet, h.message_index)).collect::<Vec<_>>()
                };
                let built = hits(&SearchSet::new(sessions, docs.clone()));
                for got in [&built, &hits(&warm), &hits(&SearchSet::new(sessions, once.clone()))] {
                    assert_eq!(got.iter().map(|h| h.0).collect::<Vec<_>>(), expected, "{q:?}, limit {limit}");
                    assert_eq!(*got, built, "{q:?}, limit {limit}");
                }
            }
        }
        assert!(seen > 500, "the queries match: {seen}");
        assert_eq!(tiers.into_iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4], "every tier is ranked");
    }

    /// A session holding the words apart in one message is shown where they
    /// are together, not around the first word's first occurrence; a
    /// message holding one word is shown around its first occurrence.
    #[test]
    fn a_snippet_shows_the_words_where_they_are_together() {
        let filler = "and so on, ".repeat(60);
        let items = [
            format!("Alpha opens it. {filler} then alpha meets beta at last. {filler}"),
            format!("only gamma here, {filler} gamma again"),
        ];
        let docs = vec![Arc::new(Doc::build(
            None,
            None,
            items.iter().map(|t| IndexedItem { text: Cow::Borrowed(t.as_str()) }).collect(),
            None,
        ))];
        let headers = vec![crate::host::SessionHeader::new("s1", 1, None)];
        let sessions = Headers::all(&headers);
        let set = SearchSet::new(sessions, docs);
        let target = crate::host::Target::new("t", None);
        let snippet = |q: &str| {
            let scored = set.search(&Query::parse(q).unwrap(), sessions, &target, 10, false, None).unwrap();
            assert_eq!(scored.hits.len(), 1, "{q:?}");
            scored.hits[0].snippet.clone()
        };
        for q in ["alpha beta", "beta alpha", "alpha beta gamma"] {
            assert!(snippet(q).contains("alpha meets beta at last"), "{q:?}: {}", snippet(q));
        }
        assert!(snippet("gamma").starts_with("only gamma here"), "{}", snippet("gamma"));
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
        let expected = verdicts(&FilterPass::new(&held_docs, &Roster::new(&held_docs), &needles, false));
        assert!(expected.contains(&Ok(true)) && expected.contains(&Ok(false)));
        assert_eq!(verdicts(&FilterPass::new(&stored_docs, &Roster::new(&stored_docs), &needles, false)), expected);
        assert!(stored_docs.iter().all(|d| d.bloom.held().is_none() || d.lengths.is_empty()), "not kept");
        assert_eq!(verdicts(&FilterPass::new(&stored_docs, &Roster::new(&stored_docs), &needles, true)), expected);
        assert!(stored_docs.iter().all(|d| d.bloom.held().is_some()), "kept");
        // Kept, they are tested in memory, even with the file emptied.
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
        assert_eq!(verdicts(&FilterPass::new(&stored_docs, &Roster::new(&stored_docs), &needles, false)), expected);

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
        let got = verdicts(&FilterPass::new(&damaged_docs, &Roster::new(&damaged_docs), &needles, true));
        for (i, id) in ids.iter().enumerate() {
            let (a, b) = (&got[i * needles.len()..][..needles.len()], &expected[i * needles.len()..][..needles.len()]);
            if id.as_str() == hit {
                // Unreadable, but where its vocabulary ruled the needle out.
                assert!(a.iter().zip(b).all(|(v, e)| *v == Err(Unreadable) || (*v == Ok(false) && e == v)), "{id}");
                assert!(a.contains(&Err(Unreadable)), "{id}");
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
