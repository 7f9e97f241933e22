//! The index's zstd dictionary: trained on a sample of its own texts,
//! with the filter keys nearly every text holds; compression with and
//! without it.

use super::fold::fold;
use super::keys::{hash, is_trigram, items_of, keys_and_pairs, KeySet, MixHasher, NUMERAL};
use super::stored::{Chunks, Source};
use super::vocab::{Vocabulary, SEEN_BITS};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use zstd::zstd_safe::{CCtx, CDict, DCtx, DDict};

/// zstd level of the stored text: fast to write and to read.
pub(super) const ZSTD_LEVEL: i32 = 3;

/// The index trains its zstd dictionary once the texts compressed without
/// one reach this much, on at most `TRAIN_SAMPLE` bytes of them, into a
/// dictionary of `DICTIONARY_BYTES`.
pub(super) const TRAIN_AT: usize = 2 << 20;

pub(super) const TRAIN_SAMPLE: usize = 1 << 20;

pub(super) const DICTIONARY_BYTES: usize = 64 << 10;

/// A key is common when at least this share of the sampled texts hold it,
/// out of at least `COMMON_SAMPLES` of them: a key around a space or of
/// digits ...
pub(super) const COMMON: (usize, usize) = (8, 10);

/// ... and a trigram: one that 70–80% of the texts hold rules out as
/// little for a word, so leaving it out makes the filters smaller (keys
/// around spaces, which a phrase is tested by, stay at 80%; figures in
/// BENCHMARKS.md, "Search"). The pairs of the vocabulary are of these
/// common trigrams.
pub(super) const COMMON_TRIGRAM: (usize, usize) = (7, 10);

pub(super) const COMMON_SAMPLES: usize = 20;

/// A zstd dictionary trained on a sample of the index's own texts, kept
/// once per index: one session's text is small for zstd alone (a few tens
/// of KB), and sessions share most of their vocabulary.
///
/// With it come the filter keys nearly every sampled text holds (`COMMON`):
/// they rule out almost nothing, so the filters of docs built with this
/// dictionary leave them out and a query does not test them there (a
/// third of the keys of a session on the bench).
pub(super) struct Dictionary {
    /// Unique in the process, to tell dictionaries apart cheaply.
    pub(super) id: u64,
    pub(super) raw: Box<[u8]>,
    pub(super) decompress: DDict<'static>,
    pub(super) common: KeySet,
    /// What the docs compressed with it hold, known once for them all.
    pub(super) vocab: Vocabulary,
}

impl Dictionary {
    /// A dictionary from its bytes, common keys and vocabulary (as
    /// trained, or read back from a cache file); `None` if zstd rejects
    /// the bytes or the keys are not sorted.
    pub(super) fn new(raw: Box<[u8]>, common: Box<[u64]>, vocab: Vocabulary) -> Option<Dictionary> {
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        if common.windows(2).any(|w| w[0] >= w[1]) {
            return None;
        }
        let decompress = DDict::try_create(&raw)?;
        let common = KeySet::new(&common);
        Some(Dictionary { id: IDS.fetch_add(1, Ordering::Relaxed), raw, decompress, common, vocab })
    }

    /// Trains one on sample texts (each with its items' ends); also
    /// returns how many keys of the samples are common.
    pub(super) fn train(samples: &[(Vec<u8>, Vec<usize>)]) -> Option<(Dictionary, usize)> {
        let texts: Vec<&[u8]> = samples.iter().map(|(t, _)| t.as_slice()).collect();
        let raw = zstd::dict::from_samples(&texts, DICTIONARY_BYTES).ok()?;
        let mut common = Vec::new();
        let mut left_out = 0;
        // Sized by the distinct uncommon trigrams of the sample.
        let mut uncommon = 0;
        if samples.len() >= COMMON_SAMPLES {
            let mut counts: HashMap<u64, usize, std::hash::BuildHasherDefault<MixHasher>> = HashMap::default();
            for (text, ends) in samples {
                for k in distinct_keys(items_of(std::str::from_utf8(text).ok()?, ends), None).0 {
                    *counts.entry(k).or_default() += 1;
                }
            }
            let at_least = |(part, of): (usize, usize)| (samples.len() * part).div_ceil(of);
            let (at_least, trigram_at_least) = (at_least(COMMON), at_least(COMMON_TRIGRAM));
            for (k, n) in counts {
                if n >= if is_trigram(k) { trigram_at_least } else { at_least } {
                    common.push(k);
                    left_out += n;
                } else if is_trigram(k) {
                    uncommon += 1;
                }
            }
            common.sort_unstable();
        }
        let vocab = Vocabulary::new(uncommon * SEEN_BITS.2);
        Some((Dictionary::new(raw.into_boxed_slice(), common.into(), vocab)?, left_out))
    }

    /// Whether a filter built with it leaves `key` out: a common key (in
    /// so many texts that it hardly filters), or a number's key of 4
    /// bytes, which the vocabulary lists instead (`keys::pairs`: who holds
    /// a rare one, doc by doc, without testing every doc's filter).
    pub(super) fn is_common(&self, key: u64) -> bool {
        key & NUMERAL != 0 || self.common.contains(key, hash(key))
    }

    /// Bytes it holds: its own, zstd's digested form for reading, the
    /// common keys and the vocabulary.
    pub(super) fn bytes(&self) -> usize {
        self.raw.len() + self.decompress.sizeof() + self.common.bytes() + self.vocab.bytes()
    }
}

/// A dictionary digested for compression (its hash tables: several times
/// the dictionary). Made for the docs being built and dropped with the
/// last of them, not kept by the index: see [`DocCache::encoder`].
pub(crate) struct Encoder {
    pub(super) dict: Arc<Dictionary>,
    pub(super) compress: CDict<'static>,
}

impl Encoder {
    pub(super) fn new(dict: &Arc<Dictionary>) -> Option<Encoder> {
        Some(Encoder { dict: Arc::clone(dict), compress: CDict::try_create(&dict.raw, ZSTD_LEVEL)? })
    }

    /// An encoder of a dictionary trained on `texts` (one item each),
    /// whether or not it would pay for itself.
    #[cfg(test)]
    pub(crate) fn trained_on(texts: &[String]) -> Option<Encoder> {
        let samples: Vec<(Vec<u8>, Vec<usize>)> =
            texts.iter().map(|t| (t.clone().into_bytes(), vec![t.len()])).collect();
        Encoder::new(&Arc::new(Dictionary::train(&samples)?.0))
    }

    /// An encoder of a copy of its dictionary whose vocabulary holds no
    /// doc yet: two docs built with two such copies register alike, so
    /// their index files can be compared byte for byte.
    #[cfg(test)]
    pub(crate) fn fresh_copy(&self) -> Option<Encoder> {
        let d = &self.dict;
        let bits = d.vocab.inner.read().unwrap_or_else(|e| e.into_inner()).seen.len() * 64;
        let vocab = Vocabulary::new(bits);
        Encoder::new(&Arc::new(Dictionary::new(d.raw.clone(), d.common.sorted().into(), vocab)?))
    }
}

/// A session's text of at least this many bytes is compressed as a
/// stream, item by item, rather than joined first (see [`compress_parts`]).
/// The unit tests stream from 2 MiB (the size from which a dictionary is
/// trained), so that their logs past it stay small in a debug build.
pub(super) const STREAM_AT: usize = if cfg!(test) { TRAIN_AT } else { 8 << 20 };

/// The concatenation of `parts` (`total` bytes in all) compressed as
/// [`compress`] compresses it, with `dict` if given. From [`STREAM_AT`]
/// bytes on the parts are streamed into the compressor, so the text is
/// never held whole next to its compressed form (a session of 1 GB
/// doubled the memory of the index build); below that they are joined
/// and compressed in one call, on the thread's reused context.
pub(super) fn compress_parts<'p>(
    parts: impl Iterator<Item = &'p [u8]> + Clone,
    total: usize,
    dict: Option<&Encoder>,
) -> Box<[u8]> {
    compress_parts_at(parts, total, dict, ZSTD_LEVEL)
}

/// [`compress_parts`], without a dictionary at `level` instead of
/// [`ZSTD_LEVEL`].
pub(super) fn compress_parts_at<'p>(
    parts: impl Iterator<Item = &'p [u8]> + Clone,
    total: usize,
    dict: Option<&Encoder>,
    level: i32,
) -> Box<[u8]> {
    if total >= STREAM_AT {
        if let Some(packed) = compress_stream(parts.clone(), total, dict, level) {
            return packed.into_boxed_slice();
        }
    }
    let mut text = Vec::with_capacity(total);
    for part in parts {
        text.extend_from_slice(part);
    }
    compress_at(&text, dict, level)
}

/// One zstd frame of the parts, written as they come; `None` if zstd
/// fails (then the parts are joined and compressed at once).
fn compress_stream<'p>(
    parts: impl Iterator<Item = &'p [u8]>,
    total: usize,
    dict: Option<&Encoder>,
    level: i32,
) -> Option<Vec<u8>> {
    let mut stream = CompressStream::at_level(total, dict, level)?;
    for part in parts {
        stream.write(part)?;
    }
    stream.finish()
}

/// A text of a known length compressed as it comes, into one zstd frame
/// that [`decompress`] reads as it reads [`compress`]'s. On a context of
/// its own: the thread's reused one cannot hold a dictionary by reference.
pub(super) struct CompressStream<'d> {
    cctx: CCtx<'d>,
    out: Vec<u8>,
}

impl<'d> CompressStream<'d> {
    /// A stream of `total` bytes in all, compressed with `dict` if given.
    pub(super) fn new(total: usize, dict: Option<&'d Encoder>) -> Option<CompressStream<'d>> {
        Self::at_level(total, dict, ZSTD_LEVEL)
    }

    /// [`new`](Self::new), without a dictionary at `level`.
    fn at_level(total: usize, dict: Option<&'d Encoder>, level: i32) -> Option<CompressStream<'d>> {
        use zstd::zstd_safe::CParameter;
        let mut cctx = CCtx::try_create()?;
        match dict {
            Some(d) => cctx.ref_cdict(&d.compress).ok()?,
            None => cctx.set_parameter(CParameter::CompressionLevel(level)).ok()?,
        };
        cctx.set_pledged_src_size(Some(total as u64)).ok()?;
        Some(CompressStream { cctx, out: Vec::new() })
    }

    /// Room for one more output block of the compressor. The frame grows
    /// by an eighth at a time, not doubled: it is most of what a search
    /// holds while it indexes a big session, and the vector's slack would
    /// add up to as much again.
    fn room(&mut self) {
        let block = CCtx::out_size();
        if self.out.capacity() - self.out.len() < block {
            self.out.reserve_exact(block.max(self.out.len() / 8));
        }
    }

    /// Compresses the next bytes of the text.
    pub(super) fn write(&mut self, part: &[u8]) -> Option<()> {
        use zstd::zstd_safe::{zstd_sys::ZSTD_EndDirective, InBuffer, OutBuffer};
        let mut input = InBuffer::around(part);
        while input.pos() < part.len() {
            self.room();
            let at = self.out.len();
            let mut output = OutBuffer::around_pos(&mut self.out, at);
            self.cctx.compress_stream2(&mut output, &mut input, ZSTD_EndDirective::ZSTD_e_continue).ok()?;
        }
        Some(())
    }

    /// Ends the frame; its bytes (`None` if the text was not the length
    /// pledged).
    pub(super) fn finish(mut self) -> Option<Vec<u8>> {
        use zstd::zstd_safe::{zstd_sys::ZSTD_EndDirective, InBuffer, OutBuffer};
        loop {
            self.room();
            let at = self.out.len();
            let mut output = OutBuffer::around_pos(&mut self.out, at);
            let left = self
                .cctx
                .compress_stream2(&mut output, &mut InBuffer::around(&[]), ZSTD_EndDirective::ZSTD_e_end)
                .ok()?;
            if left == 0 {
                return Some(self.out);
            }
        }
    }
}

/// Why [`each_item`] did not give every item.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Cut {
    /// `f` asked to stop (and the text, read to its end, checked).
    Asked,
    /// The text could not be read, did not match its checksum, did not
    /// decompress to the items, or an item was not UTF-8.
    Bad,
}

/// Calls `f` with each item of a text compressed as one frame (`source`,
/// with `dict` if given; the items end at `ends`), decompressing it as a
/// stream: only one item and one chunk of the decompressed text are held
/// at a time, never the whole text, and a stored text is read from its
/// file in chunks, not whole. Stops at the first `None` of `f`. A stored
/// text is read to its end and checked against its checksum whether or
/// not `f` stopped: when it does not check, the items `f` was given are
/// not the text's, and the answer is [`Cut::Bad`] (the caller drops what
/// it learned from them).
pub(super) fn each_item(
    source: Source<'_>,
    dict: Option<&Dictionary>,
    ends: &[usize],
    mut f: impl FnMut(&str) -> Option<()>,
) -> Result<(), Cut> {
    use zstd::zstd_safe::{InBuffer, OutBuffer};
    let len = ends.last().copied().unwrap_or(0);
    if len <= WHOLE_AT {
        // A text this small is decompressed at once with the thread's
        // context, into the thread's buffer: a context made per call (a
        // large allocation, zeroed) and the stream's copies would be most
        // of a search's verification of a typical session.
        let read_back;
        let packed = match source {
            Source::Held(packed) => packed,
            Source::Stored(stored, seed) => {
                read_back = stored.read(|bytes| crate::cache_file::checksum(seed, bytes)).map_err(|_| Cut::Bad)?;
                &read_back[..]
            }
        };
        let mut text = TEXT.with(|t| std::mem::take(&mut *t.borrow_mut()));
        let read = decompress_into(packed, len, dict, &mut text).ok_or(Cut::Bad).and_then(|()| {
            let mut start = 0;
            for &end in ends {
                let item = text.get(start..end).and_then(|item| std::str::from_utf8(item).ok()).ok_or(Cut::Bad)?;
                f(item).ok_or(Cut::Asked)?;
                start = end;
            }
            Ok(())
        });
        text.clear();
        TEXT.with(|t| *t.borrow_mut() = text);
        return read;
    }
    let mut dctx = DCtx::try_create().ok_or(Cut::Bad)?;
    if let Some(d) = dict {
        dctx.ref_ddict(&d.decompress).map_err(|_| Cut::Bad)?;
    }
    let mut feed = Feed::new(source);
    let mut pending: Vec<u8> = Vec::new();
    let (mut start, mut next) = (0usize, 0usize); // text offset of pending[0]; next item
    let read = loop {
        // The items complete in `pending`, then what they took dropped at once.
        let (mut taken, mut cut) = (0, None);
        while let Some(&end) = ends.get(next) {
            let Some(len) = end.checked_sub(start) else {
                cut = Some(Cut::Bad);
                break;
            };
            if pending.len() - taken < len {
                break;
            }
            let Ok(item) = std::str::from_utf8(&pending[taken..taken + len]) else {
                cut = Some(Cut::Bad);
                break;
            };
            if f(item).is_none() {
                cut = Some(Cut::Asked);
                break;
            }
            taken += len;
            start = end;
            next += 1;
        }
        if let Some(cut) = cut {
            break Err(cut);
        }
        pending.drain(..taken);
        if next == ends.len() {
            break if pending.is_empty() && !feed.more() { Ok(()) } else { Err(Cut::Bad) };
        }
        if !feed.more() {
            break Err(Cut::Bad);
        }
        pending.reserve(DCtx::out_size());
        let at = pending.len();
        let mut output = OutBuffer::around_pos(&mut pending, at);
        let mut input = InBuffer::around(feed.current());
        input.set_pos(feed.pos);
        let decompressed = dctx.decompress_stream(&mut output, &mut input);
        feed.pos = input.pos();
        if decompressed.is_err() || (output.pos() == at && !feed.more()) {
            break Err(Cut::Bad);
        }
    };
    match read {
        Err(Cut::Bad) => Err(Cut::Bad),
        _ if !feed.checks() => Err(Cut::Bad),
        read => read,
    }
}

/// The compressed input of [`each_item`]'s stream: the held text whole, or
/// a stored one chunk after chunk.
struct Feed<'a> {
    held: &'a [u8],
    chunks: Option<Chunks<'a>>,
    /// How much of the current chunk (or of the held text) is consumed.
    pos: usize,
}

impl<'a> Feed<'a> {
    fn new(source: Source<'a>) -> Feed<'a> {
        match source {
            Source::Held(held) => Feed { held, chunks: None, pos: 0 },
            Source::Stored(stored, seed) => Feed { held: &[], chunks: Some(stored.chunks(seed)), pos: 0 },
        }
    }

    /// The current chunk.
    fn current(&self) -> &[u8] {
        self.chunks.as_ref().map_or(self.held, Chunks::chunk)
    }

    /// Whether input is left, reading the next chunk when the current one
    /// is consumed.
    fn more(&mut self) -> bool {
        if self.pos < self.current().len() {
            return true;
        }
        let read = self.chunks.as_mut().is_some_and(Chunks::next);
        if read {
            self.pos = 0;
        }
        read
    }

    /// Reads what is left of a stored text (not decompressed): whether all
    /// of it could be read and matches its checksum (a held text: always).
    fn checks(self) -> bool {
        self.chunks.is_none_or(Chunks::checks)
    }
}

/// zstd level of the text of a doc built for one query and never kept
/// ([`Doc::for_one_query`](super::doc::Doc::for_one_query)): read once,
/// right after, so only the speed of writing it counts.
pub(super) const ONE_QUERY_LEVEL: i32 = -5;

/// `text` compressed, with `dict` if given.
pub(super) fn compress(text: &[u8], dict: Option<&Encoder>) -> Box<[u8]> {
    compress_at(text, dict, ZSTD_LEVEL)
}

/// `text` compressed, with `dict` if given (at its level), else at `level`.
fn compress_at(text: &[u8], dict: Option<&Encoder>, level: i32) -> Box<[u8]> {
    if text.is_empty() {
        return Box::default();
    }
    let packed = CONTEXTS.with(|c| {
        let mut c = c.borrow_mut();
        let cctx = c.0.as_mut()?;
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(text.len()));
        match dict {
            Some(d) => cctx.compress_using_cdict(&mut out, text, &d.compress),
            None => cctx.compress(&mut out, text, level),
        }
        .ok()?;
        Some(out)
    });
    // Compressing into a buffer of the bound cannot fail.
    packed.map(Vec::into_boxed_slice).unwrap_or_default()
}

/// `packed` decompressed to exactly `len` bytes, with `dict` if given.
pub(super) fn decompress(packed: &[u8], len: usize, dict: Option<&Dictionary>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    decompress_into(packed, len, dict, &mut out)?;
    Some(out)
}

/// [`decompress`] into `out` (emptied first; `None` if `packed` does not
/// decompress to exactly `len` bytes).
fn decompress_into(packed: &[u8], len: usize, dict: Option<&Dictionary>, out: &mut Vec<u8>) -> Option<()> {
    CONTEXTS.with(|c| {
        let mut c = c.borrow_mut();
        let dctx = c.1.as_mut()?;
        out.clear();
        out.reserve_exact(len);
        match dict {
            Some(d) => dctx.decompress_using_ddict(out, packed, &d.decompress),
            None => dctx.decompress(out, packed),
        }
        .ok()?;
        (out.len() == len).then_some(())
    })
}

/// Texts up to this long are decompressed at once by [`each_item`], into
/// a buffer each thread keeps (so never bigger than this).
pub(super) const WHOLE_AT: usize = 1 << 20;

/// The most bytes a zstd text decompresses to per byte of it: a block
/// gives at most 128 KiB and takes at least 4 bytes (a 3-byte header and
/// the byte an RLE block repeats). A length an index file records past
/// this many times the bytes it stores is not the length of its text.
pub(super) const MAX_RATIO: usize = (128 << 10) / 4;

thread_local! {
    /// The thread's zstd contexts, reused by every doc it builds or reads:
    /// creating one per call (a large allocation, zeroed) cost more than
    /// the decompression.
    static CONTEXTS: std::cell::RefCell<(Option<CCtx<'static>>, Option<DCtx<'static>>)> =
        std::cell::RefCell::new((CCtx::try_create(), DCtx::try_create()));
    /// The thread's buffer for [`each_item`]'s small texts (taken while in
    /// use, so a call within a call gets a buffer of its own).
    static TEXT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The filter keys of the lower-cased items (a key never spans two
/// items, as a match never does) less the common keys of `dict`, each
/// once; and the other keys (around spaces, of digits) that may be
/// repeats (their slot in a bitmap was taken), which the filter sets again
/// but does not count when it is sized.
pub(super) fn distinct_keys<'a>(
    items: impl Iterator<Item = &'a str> + Clone,
    dict: Option<&Dictionary>,
) -> (Vec<u64>, Vec<u64>) {
    let bytes: usize = items.clone().map(str::len).sum();
    distinct_keys_pairs_of(bytes, dict, false, |key| items.for_each(key)).0
}

/// [`distinct_keys`] and, with `with_pairs` (and a dictionary), the
/// distinct pairs (`keys::pairs`) under `dict`'s common trigrams, of the
/// items (`bytes` in all) that `feed` passes one by one to the function
/// it is given: they need not all be held at once. Keys and pairs are
/// found in one pass over each item ([`keys_and_pairs`]); a key or a pair
/// never spans two items.
pub(super) fn distinct_keys_pairs_of(
    bytes: usize,
    dict: Option<&Dictionary>,
    with_pairs: bool,
    feed: impl FnOnce(&mut dyn FnMut(&str)),
) -> ((Vec<u64>, Vec<u64>), Vec<u32>) {
    let with_pairs = with_pairs && dict.is_some();
    let (mut keys, mut again, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
    // `again` holds a key each time its slot was taken, so on a big text
    // most of its keys around spaces, again and again: once it outgrows
    // this it is sorted and deduplicated (the filter sets each once
    // anyway), so it stays bounded by the distinct keys, not the text.
    let mut again_cap = 1usize << 16;
    // About 8 slots per key around a space (one per byte), at most 2^20.
    let shift = 64 - bytes.clamp(1 << 9, 1 << 20).next_power_of_two().trailing_zeros();
    let spaced_slot = |k: u64| (k & 0xffff_ffff).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift;
    SEEN.with(|seen| {
        let seen = &mut *seen.borrow_mut();
        // The common trigrams are marked seen already: they are skipped
        // at the cost of the test every trigram takes anyway.
        seen.mark_common(dict);
        let (trigrams, spaced, slots) = (&mut seen.trigrams, &mut seen.spaced, &mut seen.pairs);
        if with_pairs && slots.is_empty() {
            slots.resize(1 << 12, NO_PAIR);
        }
        feed(&mut |item: &str| {
            keys_and_pairs(
                fold(item).as_bytes(),
                |k| {
                    if is_trigram(k) {
                        let (word, bit) = ((k >> 6) as usize, 1u64 << (k & 63));
                        if trigrams[word] & bit == 0 {
                            trigrams[word] |= bit;
                            keys.push(k);
                            return false;
                        }
                        // Common, or met before: which, only the pairs ask
                        // (the common keys' set is small, in cache).
                        return with_pairs && dict.is_some_and(|d| d.common.contains(k, hash(k)));
                    }
                    if dict.is_some_and(|d| d.is_common(k)) {
                        return false;
                    }
                    let at = spaced_slot(k);
                    let (word, bit) = ((at >> 6) as usize, 1u64 << (at & 63));
                    if spaced[word] & bit == 0 {
                        spaced[word] |= bit;
                        keys.push(k);
                    } else {
                        again.push(k);
                        if again.len() >= again_cap {
                            again.sort_unstable();
                            again.dedup();
                            again_cap = again_cap.max(2 * again.len());
                        }
                    }
                    false
                },
                |p| {
                    if !with_pairs {
                        return;
                    }
                    if pairs.len() * 2 >= slots.len() {
                        // Kept at most half full.
                        slots.clear();
                        slots.resize((pairs.len() * 4).next_power_of_two(), NO_PAIR);
                        for &q in &pairs {
                            insert_pair(slots, q);
                        }
                    }
                    if insert_pair(slots, p) {
                        pairs.push(p);
                    }
                },
            );
        });
        for &k in &keys {
            if is_trigram(k) {
                trigrams[(k >> 6) as usize] &= !(1 << (k & 63));
            } else {
                spaced[(spaced_slot(k) >> 6) as usize] = 0;
            }
        }
        // Freed once every pair is found (a freed slot would cut the
        // probe runs of the others).
        let at: Vec<usize> = pairs.iter().map(|&p| pair_slot(slots, p)).collect();
        for i in at {
            slots[i] = NO_PAIR;
        }
    });
    ((keys, again), pairs)
}

/// The scratch of [`distinct_keys_pairs_of`], per thread.
#[derive(Default)]
pub(super) struct Seen {
    /// One bit per possible trigram (2 MiB): set for the common ones and
    /// those the doc being read holds.
    pub(super) trigrams: Vec<u64>,
    /// Up to 2^20 bits for the keys around spaces (one per byte of the
    /// text, so that it stays in cache for a small one).
    pub(super) spaced: Vec<u64>,
    /// The common trigrams marked in `trigrams`, and the id of their
    /// dictionary (0: none).
    pub(super) common: Vec<u64>,
    pub(super) common_of: u64,
    /// The pairs met so far in the doc [`distinct_keys_pairs_of`] is at,
    /// by hash (open addressing, [`NO_PAIR`] where free).
    pub(super) pairs: Vec<u32>,
}

/// No pair is this (a pair is of valid UTF-8, never of 0xff bytes).
const NO_PAIR: u32 = u32::MAX;

impl Seen {
    /// Makes `trigrams` mark exactly the common trigrams of `dict` (none
    /// without one), the state it is left in between docs.
    fn mark_common(&mut self, dict: Option<&Dictionary>) {
        if self.trigrams.is_empty() {
            self.trigrams.resize(1 << 18, 0);
            self.spaced.resize(1 << 14, 0);
        }
        let id = dict.map_or(0, |d| d.id);
        if self.common_of != id {
            for &k in &self.common {
                self.trigrams[(k >> 6) as usize] &= !(1 << (k & 63));
            }
            self.common = dict.map(|d| d.common.sorted()).unwrap_or_default();
            self.common.retain(|&k| is_trigram(k));
            for &k in &self.common {
                self.trigrams[(k >> 6) as usize] |= 1 << (k & 63);
            }
            self.common_of = id;
        }
    }
}

/// Inserts `p` in the open-addressing `slots` (a power of two of them, not
/// full): whether it was not there.
fn insert_pair(slots: &mut [u32], p: u32) -> bool {
    let mask = slots.len() - 1;
    let mut i = (hash(u64::from(p)) as usize) & mask;
    loop {
        match slots[i] {
            NO_PAIR => {
                slots[i] = p;
                return true;
            }
            q if q == p => return false,
            _ => i = (i + 1) & mask,
        }
    }
}

/// Where `p` is in the open-addressing `slots` (it is there).
fn pair_slot(slots: &[u32], p: u32) -> usize {
    let mask = slots.len() - 1;
    let mut i = (hash(u64::from(p)) as usize) & mask;
    while slots[i] != p {
        i = (i + 1) & mask;
    }
    i
}

thread_local! {
    /// Bitmaps to find the distinct keys of a text in linear time, left
    /// clear after each use (but for the common trigrams of the last
    /// dictionary used) through the keys they collected.
    static SEEN: std::cell::RefCell<Seen> = std::cell::RefCell::new(Seen::default());
}
