//! Bytes a doc left in the cache file it was loaded from (a compressed
//! text or a filter), and the verdict when they cannot be read back.

use crate::cache_file::{Checksum, StoredTexts};
use std::sync::Arc;

/// A compressed text or a filter left in the cache file its doc was
/// loaded from.
pub(super) struct Stored {
    pub(super) texts: Arc<StoredTexts>,
    /// Where it is among the file's stored texts, and its length.
    pub(super) offset: u64,
    pub(super) len: usize,
    /// Its checksum ([`text_checksum`] or [`filter_checksum`]).
    pub(super) checksum: u64,
}

impl Stored {
    /// Its bytes read back from the file, if they match its checksum (as
    /// `sum` computes it).
    pub(super) fn read(&self, sum: impl Fn(&[u8]) -> u64) -> Result<Vec<u8>, Unreadable> {
        match self.texts.read(self.offset, self.len) {
            Ok(bytes) if sum(&bytes) == self.checksum => Ok(bytes),
            _ => Err(Unreadable),
        }
    }
}

impl Stored {
    /// Its bytes read from the file [`Chunks::CHUNK`] at a time, their
    /// checksum (seeded with `seed`) computed on the way.
    pub(super) fn chunks(&self, seed: u64) -> Chunks<'_> {
        Chunks { stored: self, buf: Vec::new(), read: 0, sum: Checksum::new(seed), failed: false }
    }

    /// Copies its bytes to `out` in chunks (never held whole), checked on
    /// the way: an error if they cannot be read back or do not match their
    /// checksum (seeded with `seed`; what was copied is then the caller's
    /// to discard).
    pub(super) fn copy_to(&self, seed: u64, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut chunks = self.chunks(seed);
        while chunks.next() {
            out.write_all(chunks.chunk())?;
        }
        if chunks.checks() {
            Ok(())
        } else {
            Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "a stored text of the index cannot be read back"))
        }
    }
}

/// A stored text or filter read chunk after chunk ([`Stored::chunks`]).
pub(super) struct Chunks<'a> {
    stored: &'a Stored,
    /// The current chunk.
    buf: Vec<u8>,
    /// How much was read.
    read: usize,
    /// The checksum of what was read.
    sum: Checksum,
    /// A read failed.
    failed: bool,
}

impl Chunks<'_> {
    /// How much is read at a time.
    const CHUNK: usize = 128 << 10;

    /// Reads the next chunk: `false` at the end or when a read fails (then
    /// [`checks`](Self::checks) is false).
    pub(super) fn next(&mut self) -> bool {
        if self.failed || self.read == self.stored.len {
            return false;
        }
        let n = Self::CHUNK.min(self.stored.len - self.read);
        let at = self.stored.offset.saturating_add(self.read as u64);
        if self.stored.texts.read_into(at, n, &mut self.buf).is_err() {
            self.failed = true;
            return false;
        }
        self.sum.update(&self.buf);
        self.read += n;
        true
    }

    /// The current chunk (empty before the first [`next`](Self::next)).
    pub(super) fn chunk(&self) -> &[u8] {
        &self.buf
    }

    /// Reads what is left: whether all of it could be read and matches
    /// its checksum.
    pub(super) fn checks(mut self) -> bool {
        while self.next() {}
        !self.failed && self.sum.finish() == self.stored.checksum
    }
}

/// Where a compressed text or a filter is read from.
pub(super) enum Source<'a> {
    /// In memory.
    Held(&'a [u8]),
    /// Left in the cache file, with the seed of its checksum.
    Stored(&'a Stored, u64),
}

/// A doc's stored text or filter could not be read back from its cache
/// file, or did not match its checksum (or the text its recorded length):
/// the doc must be dropped and its session indexed again from its source,
/// never searched as if its text were empty or its filter ruled it out.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Unreadable;
