//! The index's cache file: its directory (ids, fingerprints, titles, where
//! each filter and compressed text is) encoded and decoded, the filters and
//! texts left in the file (read in place; docs/discovery.md "On disk").

use std::sync::Arc;

use super::bloom::{filter_checksum, Bits, Bloom, StoredBits};
use super::dict::{Dictionary, MAX_RATIO};
use super::doc::{each_end, folded_title, text_checksum, Doc, Packed};
use super::stored::{Source, Stored};
use super::vocab::Vocabulary;
use super::DocCache;
use crate::cache_file::{Region, StoredTexts};
use crate::host::Fingerprint;

impl DocCache {
    /// The index file's directory and stored region (see `persist.rs` and
    /// [`crate::cache_file::write_in_place`]) of every kept doc. The
    /// directory holds the dictionaries the docs use (the one for new docs
    /// first of all: its raw bytes, its common keys), then per doc its id,
    /// fingerprint, title, the number of its dictionary (0: none), its item
    /// lengths, and where its compressed text and its filter are in the
    /// stored region (offset, length, checksum: [`text_checksum`],
    /// [`filter_checksum`]). The region holds every filter, then
    /// every text, so that a search reads the filters in one sweep; it is
    /// not gathered here but written from the docs ([`DocRegion`]), so
    /// saving the index never holds a second copy of it. A doc whose text
    /// or filter is stored in the file it was loaded from is written with
    /// the bytes read back from it (the old file stays readable through
    /// its handle after a newer one is renamed over its path); one whose
    /// bytes cannot be read back or do not check is left out, to be indexed
    /// again (they are read back and checked here, in chunks, and again as
    /// they are written).
    pub(crate) fn encode(&self) -> (Vec<u8>, DocRegion) {
        use crate::cache_file::{put, put_opt};
        let docs = self.docs.read().unwrap_or_else(|e| e.into_inner());
        let mut dicts: Vec<Arc<Dictionary>> = self.dictionary().into_iter().collect();
        // Per kept doc: its id, the doc, and its text's and filter's
        // lengths and checksums.
        let mut kept = Vec::with_capacity(docs.len());
        for (id, d) in docs.iter().filter(|(_, d)| d.fingerprint.is_some()) {
            let text = recorded(d.source(), |packed| text_checksum(packed, d.len));
            let (Some((text_len, text_sum)), Some((filter_len, filter_sum))) =
                (text, recorded(d.bloom.source(), filter_checksum))
            else {
                continue;
            };
            let sums = (text_len, text_sum, filter_len, filter_sum);
            if let Some(dict) = &d.dict {
                if !dicts.iter().any(|x| Arc::ptr_eq(x, dict)) {
                    dicts.push(Arc::clone(dict));
                }
            }
            kept.push((id, Arc::clone(d), sums));
        }
        let filters: u64 = kept.iter().map(|(_, _, (_, _, bits, _))| bits).sum();
        let mut out = Vec::new();
        out.extend_from_slice(&(dicts.len() as u64).to_le_bytes());
        for dict in &dicts {
            put(&mut out, &dict.raw);
            let common = dict.common.sorted();
            out.extend_from_slice(&(common.len() as u64).to_le_bytes());
            for &k in &common {
                out.extend_from_slice(&k.to_le_bytes());
            }
            // Its vocabulary, of the docs written with it.
            let mut live: Vec<u32> = kept
                .iter()
                .filter(|(_, d, _)| d.dict.as_ref().is_some_and(|x| Arc::ptr_eq(x, dict)))
                .map(|(_, d, _)| d.serial)
                .collect();
            live.sort_unstable();
            dict.vocab.encode(&mut out, |s| live.binary_search(&s).is_ok());
        }
        out.extend_from_slice(&(kept.len() as u64).to_le_bytes());
        let (mut filter_at, mut text_at) = (0u64, filters);
        for (id, d, (text_len, text_sum, filter_len, filter_sum)) in &kept {
            put(&mut out, id.as_bytes());
            put(&mut out, d.fingerprint.as_ref().map_or(&[][..], Fingerprint::as_bytes));
            put_opt(&mut out, d.title.as_deref().map(str::as_bytes));
            let dict = d.dict.as_ref().and_then(|x| dicts.iter().position(|y| Arc::ptr_eq(x, y))).map_or(0, |i| i + 1);
            out.extend_from_slice(&(dict as u64).to_le_bytes());
            out.extend_from_slice(&u64::from(if dict == 0 { 0 } else { d.serial }).to_le_bytes());
            put(&mut out, &d.lengths);
            for n in [text_at, *text_len, *text_sum, filter_at, *filter_len, *filter_sum] {
                out.extend_from_slice(&n.to_le_bytes());
            }
            text_at += text_len;
            filter_at += filter_len;
        }
        let region = DocRegion {
            len: text_at,
            docs: kept.into_iter().map(|(_, d, (text_len, _, filter_len, _))| (d, filter_len, text_len)).collect(),
        };
        (out, region)
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
            let vocab = Vocabulary::decode(&mut input)?;
            dicts.push(Arc::new(Dictionary::new(raw, common.into(), vocab)?));
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
        // What every text decompresses to, in all (texts may share a region).
        let mut decompressed = 0usize;
        for _ in 0..n {
            let id = input.string()?;
            let fingerprint = Some(input.fingerprint()?);
            let title = input.opt_string()?;
            let dict = match usize::try_from(input.u64()?).ok()? {
                0 => None,
                i => Some(Arc::clone(dicts.get(i - 1)?)),
            };
            // Registered in its dictionary's vocabulary (0 never is).
            let serial = u32::try_from(input.u64()?).ok()?;
            if dict.as_ref().map_or(serial != 0, |d| serial >= d.vocab.next_serial()) {
                return None;
            }
            let lengths: Box<[u8]> = input.bytes()?.into();
            let len = each_end(&lengths, |_| {})?;
            let text = region(&mut input)?;
            // Empty exactly when the text is, and no longer than what the
            // file stores of it can decompress to: the file's own size
            // bounds what its directory makes a search decompress.
            if (text.len == 0) != (len == 0) || len > text.len.saturating_mul(MAX_RATIO) {
                return None;
            }
            decompressed = decompressed.checked_add(len)?;
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
            let doc =
                Doc { fingerprint, title, title_folded, packed, dict, lengths, len, bloom: Bloom { bits }, serial };
            out.push((id, Arc::new(doc)));
        }
        let bound = usize::try_from(stored.len()).unwrap_or(usize::MAX).saturating_mul(MAX_RATIO);
        (input.0.is_empty() && decompressed <= bound).then_some(out)
    }
}

/// The stored region of an index file as [`DocCache::encode`] laid it out:
/// every kept doc's filter, then every kept doc's compressed text, each
/// taken from its doc as it is written (held, or copied in chunks from the
/// file it was loaded from and checked on the way), so saving the index
/// holds no second copy of it.
pub(crate) struct DocRegion {
    /// Its length.
    len: u64,
    /// Each kept doc, in the directory's order, with its filter's and its
    /// text's lengths as the directory gives them.
    docs: Vec<(Arc<Doc>, u64, u64)>,
}

impl DocRegion {
    /// The region whole, in memory (what the unit tests compare and cut).
    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_to(&mut out).expect("every doc readable");
        out
    }
}

impl Region for DocRegion {
    fn len(&self) -> u64 {
        self.len
    }

    /// Each held filter and text as it is; each stored one copied from
    /// its file in chunks and checked on the way. Fails if a stored one
    /// can no longer be read back or does not check, or one has another
    /// length than the directory says (no file is written then; the old
    /// one stays).
    fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        for (d, filter_len, _) in &self.docs {
            write_part(out, d.bloom.source(), *filter_len)?;
        }
        for (d, _, text_len) in &self.docs {
            write_part(out, d.source(), *text_len)?;
        }
        Ok(())
    }
}

/// The length and checksum the directory records of a filter or a text
/// (`sum`: its checksum, of held bytes); `None` if it is stored and cannot
/// be read back or does not check (read in chunks: never held whole).
fn recorded(source: Source<'_>, sum: impl Fn(&[u8]) -> u64) -> Option<(u64, u64)> {
    match source {
        Source::Held(bytes) => Some((bytes.len() as u64, sum(bytes))),
        Source::Stored(stored, seed) => {
            stored.copy_to(seed, &mut std::io::sink()).ok()?;
            Some((stored.len as u64, stored.checksum))
        }
    }
}

/// Writes a filter or a text, which must be `len` long (as the directory
/// says): held bytes as they are, stored ones copied in chunks and checked.
fn write_part(out: &mut dyn std::io::Write, source: Source<'_>, len: u64) -> std::io::Result<()> {
    match source {
        Source::Held(bytes) if bytes.len() as u64 == len => out.write_all(bytes),
        Source::Stored(stored, seed) if stored.len as u64 == len => stored.copy_to(seed, out),
        _ => Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "an index text changed length while written")),
    }
}
