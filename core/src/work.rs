//! A count of the steps this thread has taken in the work whose cost must
//! stay linear in its input: retention under the budget, and the
//! transcript readers' joins, placements, roll-backs and look-ups. The
//! tests that hold those bounds compare the count for an input and for
//! one twice its size, so a loaded machine cannot fail them as a timing
//! would. Beside it, the bytes of the lines the readers took from session
//! files ([`line_bytes`]): how a test tells that a read went over a log
//! once; and the directories read ([`dirs_read`]): how a test tells what a
//! listing looked into.

use std::cell::Cell;

thread_local! {
    static STEPS: Cell<u64> = const { Cell::new(0) };
    static LINE_BYTES: Cell<u64> = const { Cell::new(0) };
    static DIRS_READ: Cell<u64> = const { Cell::new(0) };
}

/// Adds `n` steps to this thread's count.
#[inline]
pub(crate) fn add(n: usize) {
    STEPS.with(|s| s.set(s.get().wrapping_add(n as u64)));
}

/// The steps this thread has taken so far (a test reads it before and
/// after the work it bounds).
pub fn steps() -> u64 {
    STEPS.with(Cell::get)
}

/// Steps counted as they are taken and added to this thread's count when
/// it is dropped (on every way out of the work).
#[derive(Default)]
pub(crate) struct Tally(pub(crate) usize);

impl Drop for Tally {
    fn drop(&mut self) {
        add(self.0);
    }
}

/// Adds a line of `len` bytes (its `\n` not counted) that a reader took
/// from a session's file.
#[inline]
pub(crate) fn line_read(len: usize) {
    LINE_BYTES.with(|b| b.set(b.get().wrapping_add(len as u64 + 1)));
}

/// The bytes of the lines (each with its `\n`) this thread's readers
/// have taken from session files so far: a read that goes over a plain
/// log once takes its size, one that reads lines again takes more (a test
/// reads it before and after the read it bounds).
pub fn line_bytes() -> u64 {
    LINE_BYTES.with(Cell::get)
}

/// Counts a directory whose entries were read on this thread.
#[inline]
pub(crate) fn dir_read() {
    DIRS_READ.with(|d| d.set(d.get().wrapping_add(1)));
}

/// The directories whose entries this thread has read so far (a test
/// reads it before and after the listing it bounds).
pub fn dirs_read() -> u64 {
    DIRS_READ.with(Cell::get)
}
