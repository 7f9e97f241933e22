//! One session's indexed body: its compressed text (in memory or left in
//! the cache file), its item lengths, its filter and its title.

use super::bloom::Bloom;
use super::dict::{
    compress, compress_parts, compress_parts_at, decompress, distinct_keys_pairs_of, each_item, CompressStream, Cut,
    Dictionary, Encoder, ONE_QUERY_LEVEL, STREAM_AT,
};
use super::fold::fold;
use super::keys::items_of;
use super::needle::Needle;
use super::stored::{Source, Stored, Unreadable};
use crate::host::Fingerprint;
use std::borrow::Cow;
use std::sync::Arc;

/// The indexed body of one session.
pub(crate) struct Doc {
    /// The fingerprint it was built under (`None`: built for one query).
    pub(crate) fingerprint: Option<Fingerprint>,
    /// The session's latest title, read under the same fingerprint.
    pub(crate) title: Option<String>,
    /// The title lower-cased, when that is not the title itself.
    pub(super) title_folded: Option<Box<str>>,
    /// The projected item texts, concatenated and zstd-compressed.
    pub(super) packed: Packed,
    /// The dictionary `packed` was compressed with.
    pub(super) dict: Option<Arc<Dictionary>>,
    /// The byte length of each item, LEB128 (a byte or two each).
    pub(super) lengths: Box<[u8]>,
    /// Their sum: the length of the decompressed text.
    pub(super) len: usize,
    pub(super) bloom: Bloom,
    /// Its serial in its dictionary's vocabulary (0: not registered, as a
    /// doc without dictionary).
    pub(super) serial: u32,
}

/// Where a doc's compressed text is.
pub(super) enum Packed {
    /// In memory (every doc built in this process).
    Held(Box<[u8]>),
    /// In the cache file the doc was loaded from, read when it is needed.
    Stored(Box<Stored>),
}

/// The checksum the index file keeps of a doc's compressed text, seeded
/// with the length the text decompresses to.
pub(super) fn text_checksum(packed: &[u8], len: usize) -> u64 {
    crate::cache_file::checksum(text_seed(len), packed)
}

/// What [`text_checksum`] seeds the checksum with.
pub(super) fn text_seed(len: usize) -> u64 {
    len as u64
}

impl Packed {
    /// The length of the compressed text.
    pub(super) fn len(&self) -> usize {
        match self {
            Packed::Held(bytes) => bytes.len(),
            Packed::Stored(stored) => stored.len,
        }
    }

    /// The compressed text: borrowed when held, else read from the file
    /// and checked against its checksum (`len`: what it decompresses to).
    pub(super) fn bytes(&self, len: usize) -> Result<Cow<'_, [u8]>, Unreadable> {
        match self {
            Packed::Held(bytes) => Ok(Cow::Borrowed(bytes)),
            Packed::Stored(s) => s.read(|bytes| text_checksum(bytes, len)).map(Cow::Owned),
        }
    }
}

/// Item lengths from ascending end offsets, LEB128.
pub(super) fn encode_lengths(ends: &[usize]) -> Box<[u8]> {
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
pub(super) fn decode_lengths(bytes: &[u8]) -> Option<Vec<usize>> {
    let mut ends = Vec::with_capacity(bytes.len());
    each_end(bytes, |end| ends.push(end))?;
    Some(ends)
}

/// Calls `f` with each end offset of what [`encode_lengths`] wrote; the
/// last end (0 without any), or `None` if malformed.
pub(super) fn each_end(bytes: &[u8], mut f: impl FnMut(usize)) -> Option<usize> {
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
pub(super) fn folded_title(title: Option<&str>) -> Option<Box<str>> {
    match fold(title?) {
        Cow::Borrowed(_) => None,
        Cow::Owned(t) => (title != Some(t.as_str())).then(|| t.into_boxed_str()),
    }
}

/// The filter keys ([`distinct_keys`](super::dict::distinct_keys)) of
/// the items, and with `pairs` and a dictionary their distinct pairs (what
/// a doc kept is registered with), found in one pass.
fn keys_and_pairs<'a>(
    items: impl Iterator<Item = &'a str> + Clone,
    dict: Option<&Dictionary>,
    pairs: bool,
) -> ((Vec<u64>, Vec<u64>), Vec<u32>) {
    let bytes: usize = items.clone().map(str::len).sum();
    distinct_keys_pairs_of(bytes, dict, pairs, |key| items.for_each(key))
}

/// One projected item's text, as the index is given it.
pub(crate) struct IndexedItem<'a> {
    pub(crate) text: Cow<'a, str>,
}

/// What [`pack_streamed`] makes of a text: its filter keys (distinct, and
/// repeats around spaces), its compressed bytes and its vocabulary serial.
type Packing = ((Vec<u64>, Vec<u64>), Box<[u8]>, u32);

/// The filter keys, compressed text and vocabulary serial (0 unless
/// `kept` and with a dictionary) of a text of `len` bytes
/// ([`STREAM_AT`] or more), as [`Doc::build`] makes them, with the items
/// streamed: `each` is called once, its items compressed and their keys
/// and pairs found as they come (never the text whole). `None` if `each`
/// fails or zstd does.
fn pack_streamed(
    len: usize,
    encoder: Option<&Encoder>,
    kept: bool,
    each: impl FnOnce(&mut dyn FnMut(&str) -> Option<()>) -> Option<()>,
) -> Option<Packing> {
    let mut stream = CompressStream::new(len, encoder)?;
    let mut read = None;
    let (keys, pairs) = distinct_keys_pairs_of(len, encoder.map(|e| &*e.dict), kept, |key| {
        read = each(&mut |item| {
            key(item);
            stream.write(item.as_bytes())
        });
    });
    read?;
    let packed = stream.finish()?.into_boxed_slice();
    let serial = match encoder {
        Some(encoder) if kept => encoder.dict.vocab.register(&keys.0, &pairs),
        _ => 0,
    };
    Some((keys, packed, serial))
}

/// The length of the items' text, and where each item ends in it.
fn ends_of(items: &[IndexedItem<'_>]) -> (usize, Vec<usize>) {
    let mut len = 0;
    let ends = items
        .iter()
        .map(|item| {
            len += item.text.len();
            len
        })
        .collect();
    (len, ends)
}

impl Doc {
    /// Bytes of text from which a doc's text is compressed as a stream.
    #[cfg(test)]
    pub(crate) const STREAM_AT: usize = STREAM_AT;

    /// Indexes the items of one session, compressing its text with the
    /// encoder's dictionary if given.
    pub(crate) fn build(
        fingerprint: Option<Fingerprint>,
        title: Option<String>,
        items: Vec<IndexedItem<'_>>,
        encoder: Option<&Encoder>,
    ) -> Doc {
        let (len, ends) = ends_of(&items);
        // Only a doc that may be kept is registered (one built for a
        // single query would be registered again by every query).
        let (keys, pairs) =
            keys_and_pairs(items.iter().map(|i| &*i.text), encoder.map(|e| &*e.dict), fingerprint.is_some());
        // The items are compressed as one text without being joined first.
        let packed = compress_parts(items.iter().map(|i| i.text.as_bytes()), len, encoder);
        let dict = encoder.filter(|_| !packed.is_empty()).map(|e| Arc::clone(&e.dict));
        let serial = match dict.as_deref() {
            Some(d) if fingerprint.is_some() => d.vocab.register(&keys.0, &pairs),
            _ => 0,
        };
        let bloom = Bloom::with_keys(keys);
        let title_folded = folded_title(title.as_deref());
        let lengths = encode_lengths(&ends);
        Doc { fingerprint, title, title_folded, packed: Packed::Held(packed), dict, lengths, len, bloom, serial }
    }

    /// The doc of a session searched by one query only and never kept (a
    /// source without fingerprints is read again by every search): its
    /// filter admits every key, since finding its keys costs more than
    /// testing its text once, and its text is compressed at the fastest
    /// level, without dictionary. It answers every search as
    /// [`build`](Self::build)'s doc of the same items does.
    pub(crate) fn for_one_query(title: Option<String>, items: Vec<IndexedItem<'_>>) -> Doc {
        let (len, ends) = ends_of(&items);
        let packed = compress_parts_at(items.iter().map(|i| i.text.as_bytes()), len, None, ONE_QUERY_LEVEL);
        let title_folded = folded_title(title.as_deref());
        let lengths = encode_lengths(&ends);
        let bloom = Bloom::admitting_all();
        Doc {
            fingerprint: None,
            title,
            title_folded,
            packed: Packed::Held(packed),
            dict: None,
            lengths,
            len,
            bloom,
            serial: 0,
        }
    }

    /// [`build`](Self::build) of the items `each` gives, one at a time
    /// (each call of it goes over them all again, calling the function it
    /// is given with each item's text until that returns `None`; it
    /// returns `None` when it cannot give them all): byte for byte the doc
    /// `build` makes of them, built without holding them. The items are
    /// gone over once for their lengths, gathered on the way for `build`
    /// while they hold less than [`STREAM_AT`] bytes; past it, once more to
    /// compress them and find their filter keys as a stream (the
    /// vocabulary's pairs are then read from the compressed text). `None`
    /// when an item differs from the first time (its length) or `each`
    /// fails.
    pub(crate) fn build_streamed(
        fingerprint: Option<Fingerprint>,
        title: Option<String>,
        encoder: Option<&Encoder>,
        mut each: impl FnMut(&mut dyn FnMut(&str) -> Option<()>) -> Option<()>,
    ) -> Option<Doc> {
        let (mut len, mut ends) = (0, Vec::new());
        // Below [`STREAM_AT`] bytes the items are gathered in the same
        // pass (most sessions: each item is made once).
        let mut gathered = Some(Vec::new());
        each(&mut |item| {
            len += item.len();
            ends.push(len);
            match &mut gathered {
                Some(items) if len < STREAM_AT => items.push(IndexedItem { text: Cow::Owned(item.to_owned()) }),
                _ => gathered = None,
            }
            Some(())
        })?;
        if let Some(items) = gathered.filter(|_| len < STREAM_AT) {
            return Some(Doc::build(fingerprint, title, items, encoder));
        }
        // The same items again: each of the length it had.
        let again = |f: &mut dyn FnMut(&str) -> Option<()>| {
            let (mut next, mut start) = (0, 0);
            each(&mut |item| {
                let end = *ends.get(next)?;
                (end - start == item.len()).then_some(())?;
                (next, start) = (next + 1, end);
                f(item)
            })?;
            (next == ends.len()).then_some(())
        };
        let (keys, packed, serial) = pack_streamed(len, encoder, fingerprint.is_some(), again)?;
        let dict = encoder.filter(|_| !packed.is_empty()).map(|e| Arc::clone(&e.dict));
        let bloom = Bloom::with_keys(keys);
        let title_folded = folded_title(title.as_deref());
        let lengths = encode_lengths(&ends);
        Some(Doc { fingerprint, title, title_folded, packed: Packed::Held(packed), dict, lengths, len, bloom, serial })
    }

    /// The title lower-cased (`""` without one).
    pub(super) fn title_folded(&self) -> &str {
        self.title_folded.as_deref().or(self.title.as_deref()).unwrap_or("")
    }

    /// Where each item ends in the decompressed text.
    pub(super) fn ends(&self) -> Vec<usize> {
        decode_lengths(&self.lengths).unwrap_or_default()
    }

    /// Whether its text is compressed without a dictionary.
    pub(crate) fn undicted(&self) -> bool {
        self.dict.is_none() && self.packed.len() > 0
    }

    /// Whether its compressed text is in a cache file rather than in
    /// memory.
    pub(super) fn is_stored(&self) -> bool {
        matches!(self.packed, Packed::Stored(_))
    }

    /// The same doc with its text compressed with the encoder's
    /// dictionary, and its filter without the dictionary's common keys;
    /// `None` if its text cannot be read (a stored one) or does not
    /// decompress (never: the index wrote it).
    /// A text of [`STREAM_AT`] bytes or more is decompressed and
    /// recompressed as a stream, item by item, never held whole.
    pub(super) fn with_dictionary(&self, encoder: &Encoder) -> Option<Doc> {
        let ends = self.ends();
        let (keys, packed, serial) = if self.len >= STREAM_AT {
            pack_streamed(self.len, Some(encoder), self.fingerprint.is_some(), |f| self.each_item(&ends, f).ok())?
        } else {
            let text = self.decompressed()?;
            let items = items_of(std::str::from_utf8(&text).ok()?, &ends);
            let (keys, pairs) = keys_and_pairs(items, Some(&encoder.dict), self.fingerprint.is_some());
            let serial = match self.fingerprint {
                Some(_) => encoder.dict.vocab.register(&keys.0, &pairs),
                None => 0,
            };
            (keys, compress(&text, Some(encoder)), serial)
        };
        Some(Doc {
            fingerprint: self.fingerprint.clone(),
            title: self.title.clone(),
            title_folded: self.title_folded.clone(),
            packed: Packed::Held(packed),
            dict: Some(Arc::clone(&encoder.dict)),
            lengths: self.lengths.clone(),
            len: self.len,
            bloom: Bloom::with_keys(keys),
            serial,
        })
    }

    /// Whether the body may hold `needle`: every key of it that this
    /// doc's filter was built with may be present. Always true for a needle
    /// without such keys (shorter than three bytes, or only common keys).
    /// [`Unreadable`] for a stored filter that cannot be read back or does
    /// not match its checksum. (A search tests many docs through a
    /// [`FilterPass`] instead.)
    #[cfg(test)]
    pub(super) fn may_contain(&self, needle: &Needle) -> Result<bool, Unreadable> {
        if self.lengths.is_empty() {
            return Ok(false);
        }
        Ok(self.may_contain_in(&self.bloom.bits()?, needle))
    }

    /// [`may_contain`](Self::may_contain) with its filter's bytes `bits`
    /// (of a doc with a body).
    pub(super) fn may_contain_in(&self, bits: &[u8], needle: &Needle) -> bool {
        if !self.admits(needle) {
            return false;
        }
        needle.with_hashes(self.dict.as_deref(), |h| h.iter().all(|&h| Bloom::contains(bits, h)))
    }

    /// A sample of its text to train a dictionary on, with its items' ends,
    /// and whether it is the whole text: the whole text below
    /// [`STREAM_AT`] bytes (as it always was), else its first items up to
    /// `want` bytes (at least one), decompressed as a stream: a big
    /// session is never decompressed whole to sample it. `None` if it
    /// cannot be read.
    pub(super) fn sample(&self, want: usize) -> Option<(Vec<u8>, Vec<usize>, bool)> {
        let ends = self.ends();
        if self.len < STREAM_AT {
            return Some((self.decompressed()?, ends, true));
        }
        let (mut text, mut kept) = (Vec::new(), Vec::new());
        let read = self.each_item(&ends, |item| {
            if !text.is_empty() && text.len() + item.len() > want {
                return None;
            }
            text.extend_from_slice(item.as_bytes());
            kept.push(text.len());
            Some(())
        });
        match read {
            Ok(()) => Some((text, kept, true)),
            Err(Cut::Asked) => Some((text, kept, false)),
            Err(Cut::Bad) => None,
        }
    }

    /// Calls `f` with each item of its text (which end at `ends`),
    /// decompressed as a stream ([`each_item`]): [`Cut::Asked`] if `f`
    /// stopped, [`Cut::Bad`] if the text cannot be read, does not check or
    /// does not decompress to its items.
    pub(super) fn each_item(&self, ends: &[usize], f: impl FnMut(&str) -> Option<()>) -> Result<(), Cut> {
        each_item(self.source(), self.dict.as_deref(), ends, f)
    }

    /// Where its compressed text is read from.
    pub(super) fn source(&self) -> Source<'_> {
        match &self.packed {
            Packed::Held(packed) => Source::Held(packed),
            Packed::Stored(stored) => Source::Stored(stored, text_seed(self.len)),
        }
    }

    /// Whether its dictionary's vocabulary lets it hold `needle` (always,
    /// for a doc without dictionary or serial).
    pub(super) fn admits(&self, needle: &Needle) -> bool {
        match &self.dict {
            Some(dict) if self.serial != 0 => needle.with_verdict(dict, |v| v.admits(self.serial)),
            _ => true,
        }
    }

    /// Its text decompressed to exactly its length, `None` if it cannot
    /// be read or does not decompress to that.
    pub(super) fn decompressed(&self) -> Option<Vec<u8>> {
        decompress(&self.packed.bytes(self.len).ok()?, self.len, self.dict.as_deref())
    }

    /// The decompressed text of all items, and where each item ends in it.
    /// [`Unreadable`] for a stored text that cannot be read back, does not
    /// match its checksum or does not decompress to its length: the doc
    /// cannot tell whether the session matches.
    #[cfg(test)]
    pub(super) fn text(&self) -> Result<(String, Vec<usize>), Unreadable> {
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

    /// Calls `f` with each item of its text in order, decompressed as a
    /// stream (one item and one chunk held at a time, never the whole
    /// text; a text of at most 1 MiB at once; a stored text read from its
    /// file in chunks), until `f` returns `None`. A stored text is checked
    /// against its checksum once read to its end, after `f` saw its items:
    /// on [`Unreadable`] the caller drops what it learned. The errors are
    /// [`text`](Self::text)'s: [`Unreadable`] for a stored text that cannot
    /// be read back, does not match its checksum or does not decompress to
    /// its items (a doc without a body, or a held text that does not
    /// decompress, never: has no items).
    pub(super) fn each_item_text(&self, f: impl FnMut(&str) -> Option<()>) -> Result<(), Unreadable> {
        let ends = self.ends();
        if ends.last() != Some(&self.len) {
            return Ok(());
        }
        match self.each_item(&ends, f) {
            Err(Cut::Bad) if self.is_stored() => Err(Unreadable),
            _ => Ok(()),
        }
    }

    /// The decompressed item texts.
    #[cfg(test)]
    pub(super) fn items(&self) -> Vec<String> {
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
    pub(super) fn index_bytes(&self) -> usize {
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
