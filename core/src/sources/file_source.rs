//! What every file-backed source shares: the [`FileSource`] trait, opening
//! a root, and the small helpers its readers use to read a line again.

use std::path::Path;
use std::sync::Arc;

use crate::error::HostError;
use crate::fs::FileIdentity;
use crate::host::{Blocking, BlockingSessionQuery, SessionQuery};

/// The checksum a read keeps of a line it means to read again (with its
/// length), to know the line read again is the line it read first: a file
/// changed under the read is read whole again rather than mixing versions.
pub(crate) fn line_checksum(line: &[u8]) -> u64 {
    crate::cache_file::checksum(0x6473_6873_7475_6231, line)
}

/// The position in a listing of each of `ids` (same order): ids given in
/// listing order (as a resolver gives them, the target left out) are
/// matched by walking the listing along, without hashing; others are
/// looked up with `find`.
pub(crate) fn positions_in_order<'a>(
    len: usize,
    id_at: impl Fn(usize) -> &'a str + 'a,
    ids: &'a [String],
    find: impl Fn(&str) -> Option<usize> + 'a,
) -> impl Iterator<Item = Option<usize>> + 'a {
    let mut next = 0;
    ids.iter().map(move |id| {
        let from = next;
        if let Some(at) = (from..(from + 2).min(len)).find(|&at| id_at(at) == id.as_str()) {
            next = at + 1;
            return Some(at);
        }
        find(id)
    })
}

/// A small deterministic random source for the readers' tests: each call
/// `next(n)` gives a number in `0..n`.
#[cfg(test)]
pub(crate) fn test_random(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    }
}

/// Checks that `root` is a readable directory (a link to one is fine: the
/// root is the one link a source follows) and returns it.
pub(crate) fn open_root(root: &Path, format: &str) -> std::io::Result<std::path::PathBuf> {
    let fail = |e: std::io::Error, what: &str| {
        std::io::Error::new(e.kind(), format!("cannot {what} {format} root {}: {e}", root.display()))
    };
    let meta = std::fs::metadata(root).map_err(|e| fail(e, "open"))?;
    if !meta.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{format} root {} is not a directory", root.display()),
        ));
    }
    std::fs::read_dir(root).map_err(|e| fail(e, "read"))?;
    Ok(root.to_path_buf())
}

/// A session source backed by files under one root directory.
///
/// Its reads block (they are file reads); [`into_query`](Self::into_query)
/// wraps it in [`Blocking`], which runs each read on tokio's blocking pool so
/// reads of several sessions run in parallel.
pub trait FileSource: BlockingSessionQuery + Sized {
    /// A short name of the format, for messages (`"DSH"`).
    const FORMAT: &'static str;

    /// The root directory.
    fn root(&self) -> &Path;

    /// The identity of the file a read of `session_id` would read now: a
    /// cheap way for a caller to tell whether a session changed since it
    /// last read it.
    fn identity(&self, session_id: &str) -> Result<FileIdentity, HostError>;

    /// This source as a session query for a [`Resolver`](crate::Resolver).
    fn into_query(self) -> Arc<dyn SessionQuery> {
        Arc::new(Blocking::new(self))
    }
}
