//! Bytes a doc left in the cache file it was loaded from (a compressed
//! text or a filter), and the verdict when they cannot be read back.

use crate::cache_file::StoredTexts;
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
    /// Copies its bytes to `out` in chunks (never held whole), its
    /// checksum (seeded with `seed`) computed on the way: an error if they
    /// cannot be read back or do not match it (what was copied is then the
    /// caller's to discard).
    pub(super) fn copy_to(&self, seed: u64, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        if self.texts.copy_to(self.offset, self.len, seed, out)? == self.checksum {
            Ok(())
        } else {
            Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "a stored text of the index does not check"))
        }
    }
}

/// A doc's stored text or filter could not be read back from its cache
/// file, or did not match its checksum (or the text its recorded length):
/// the doc must be dropped and its session indexed again from its source,
/// never searched as if its text were empty or its filter ruled it out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Unreadable;
