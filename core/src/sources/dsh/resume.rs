//! Resumed title reads: a log that only grew since the store last read it
//! is read from where that read stopped, not from the start.
//!
//! After a title read (or [`inspect`](super::DshStore::inspect)) the store
//! keeps, per log path, a [`ResumePoint`]: the byte offset where the fold
//! stopped and the fold there (seq expected, surface, open turn, title,
//! counts, header). With it it keeps the identity the log had when it was
//! opened and the last [`CHECK_BYTES`](super::load::CHECK_BYTES) bytes before the offset. The next
//! read of that path continues from the offset only when all of these hold,
//! and reads the log from the start otherwise:
//!
//! - the same device and inode (on a platform without inode numbers,
//!   nothing is kept);
//! - a size not smaller than it was, and not smaller than the offset; an
//!   mtime not older; and the same mtime when the size is the same (a log
//!   rewritten in place at the same size is read again);
//! - the same bytes just before the offset, read again from the file and
//!   compared (a log rewritten in place, even one that grew, is read
//!   again);
//! - the same session id.
//!
//! The offset is always a point where the fold state is exactly that of a
//! full read, so a resumed read gives exactly what a full read of the file
//! gives — title, stats and errors:
//!
//! - a plain log: the end of the last line the fold accepted. A torn tail
//!   or a broken line (and the lines after it) is never part of the fold:
//!   the next read reads it again from its start, so a completed line, or a
//!   later `turn/end` that makes the break fatal, is judged as a full read
//!   judges it.
//! - a zstd log: the end of the file when every frame was complete and its
//!   text ended with a line; when the last frame is torn, the end of the
//!   complete frames (the fold there is a copy made before the first line of
//!   the torn frame was folded), if their text ended with a line. A log
//!   whose complete frames end inside a line keeps nothing.
//! - recovery closers are derived from the fold's open turn at the end of
//!   each read, so they never need to be kept.
//! - a read that fails keeps nothing (the next read is a full one and fails
//!   the same way).
//!
//! What is trusted: that a log whose identity and last bytes before the
//! offset are unchanged was only appended to (the writer's contract; DSH
//! only appends, and rewrites a log by writing a new file and renaming it).
//!
//! Memory: a kept fold holds a slot of 8 bytes per surface event (see
//! [`Fold::approx_bytes`](super::load::Fold) and
//! [`Surface`](super::fold::Surface)), the
//! open tool calls, the title and the header, plus the check bytes; never
//! the lines. At most [`MAX_ENTRIES`] folds and [`MAX_KEPT_BYTES`] in all
//! are kept; the least recently used go first, and a fold bigger than the
//! whole budget is not kept.

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use super::discover::Found;
use super::load::{bytes_before, open_log, read_log, Keep, ResumePoint};
use super::{LogStats, StoreError};
use crate::fs::FileIdentity;

/// Logs whose resume points are kept.
pub const MAX_ENTRIES: usize = 128;
/// Memory the kept resume points may hold in all (approximately).
pub const MAX_KEPT_BYTES: usize = 32 << 20;

/// One kept resume point.
#[derive(Debug)]
struct Entry {
    id: String,
    /// The log's identity when the read that made the point opened it.
    identity: FileIdentity,
    point: ResumePoint,
    /// Approximate memory held.
    cost: usize,
    /// When it was last made or used (a tick of [`ResumeCache::clock`]).
    used: u64,
}

impl Entry {
    /// Whether a read of the log now open as `file`, with `now` as its
    /// identity, may resume from this point.
    fn fits(&self, id: &str, now: &FileIdentity, file: &File) -> bool {
        let then = &self.identity;
        let same_file = now.dev == then.dev && now.inode == then.inode;
        let grew = now.size > then.size || (now.size == then.size && now.mtime_ns == then.mtime_ns);
        same_file
            && grew
            && now.mtime_ns >= then.mtime_ns
            && now.size >= self.point.offset
            && self.id == id
            && bytes_before(file, self.point.offset).is_some_and(|b| b == self.point.before)
    }
}

/// How a read began (for tests).
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadKind {
    /// From the header.
    Full,
    /// From this byte offset.
    Resumed(u64),
}

/// The resume points a store keeps, by log path.
#[derive(Debug, Default)]
pub(crate) struct ResumeCache {
    entries: HashMap<PathBuf, Entry>,
    kept_bytes: usize,
    clock: u64,
    /// How each read began, in order (tests only).
    #[cfg(test)]
    pub(crate) reads: Vec<ReadKind>,
}

impl ResumeCache {
    fn take(&mut self, path: &PathBuf) -> Option<Entry> {
        let entry = self.entries.remove(path)?;
        self.kept_bytes -= entry.cost;
        Some(entry)
    }

    fn keep(&mut self, path: PathBuf, mut entry: Entry) {
        if entry.cost > MAX_KEPT_BYTES {
            return;
        }
        self.take(&path);
        while self.entries.len() >= MAX_ENTRIES || self.kept_bytes + entry.cost > MAX_KEPT_BYTES {
            let Some(oldest) = self.entries.iter().min_by_key(|(_, e)| e.used).map(|(p, _)| p.clone()) else {
                break;
            };
            self.take(&oldest);
        }
        self.clock += 1;
        entry.used = self.clock;
        self.kept_bytes += entry.cost;
        self.entries.insert(path, entry);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    fn note(&mut self, kind: ReadKind) {
        self.reads.push(kind);
    }

    #[cfg(not(test))]
    fn note(&mut self, _: ()) {}
}

fn lock(cache: &Mutex<ResumeCache>) -> MutexGuard<'_, ResumeCache> {
    cache.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reads the stats of the log of `found` (session `id`), resuming from the
/// point `cache` keeps for it when that is exact (see the module docs), and
/// keeps the point where this read stopped.
pub(crate) fn read_stats(cache: &Mutex<ResumeCache>, found: &Found, id: &str) -> Result<LogStats, StoreError> {
    let (file, identity) = open_log(found)?;
    let kept = lock(cache).take(&found.path);
    let from = kept.filter(|e| e.fits(id, &identity, &file)).map(|e| e.point);
    #[cfg(test)]
    let kind = from.as_ref().map_or(ReadKind::Full, |p| ReadKind::Resumed(p.offset));
    #[cfg(not(test))]
    let kind = ();
    // Without inode numbers a replaced log cannot be told apart.
    let want_resume = identity.dev != 0 || identity.inode != 0;
    let read = read_log(found, id, file, identity.size, from, Keep::Nothing, want_resume);
    let mut cache = lock(cache);
    cache.note(kind);
    let (loaded, point) = read?;
    if let Some(mut point) = point {
        point.fold.shrink_to_fit();
        let cost = point.fold.approx_bytes() + point.before.len() + std::mem::size_of::<Entry>();
        cache.keep(found.path.clone(), Entry { id: id.to_owned(), identity, point, cost, used: 0 });
    }
    Ok(loaded.stats)
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;
