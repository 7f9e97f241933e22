//! The lines of the events on the surface, kept while a log is read.
//!
//! The lines live in one buffer (an arena), each followed by a `,`, in the
//! order they were read, so keeping a line costs one copy and no allocation
//! of its own. A line that leaves the surface (replaced by a later event)
//! becomes a dead range; when the dead bytes outgrow the live ones the
//! arena is compacted in place, so it never holds much more than twice the
//! surface. When the reading order is the surface order (no replacement
//! moved anything), the arena already is the `events` array of the snapshot
//! and is turned into the snapshot in place, without a second copy.

use super::fold::SeqMap;
use crate::retention::ItemFloor;
use crate::sources::line_checksum;

/// Dead bytes below this are never worth a compaction.
const MIN_COMPACTION_BYTES: usize = 1 << 20;

#[derive(Clone, Copy, Debug)]
struct Entry {
    seq: u64,
    /// Start of the line in the arena.
    start: usize,
    /// Length of the line and its `,`.
    len: usize,
    live: bool,
}

/// Kept surface lines, by seq.
#[derive(Clone, Debug, Default)]
pub(crate) struct KeptLines {
    arena: Vec<u8>,
    /// Every line in the arena, in arena order.
    entries: Vec<Entry>,
    /// Live seq → index in `entries`.
    index: SeqMap<usize>,
    live_bytes: usize,
    dead_bytes: usize,
    /// Keeps only the lines that projection may not drop unread
    /// (`projection::may_project`); the others are never copied.
    visible_only: bool,
    /// Keeps, of the visible lines, where they are and what retention
    /// needs of their items, not their bytes (a read under a budget).
    stubs: Option<Stubs>,
}

/// The stubs of the visible lines, in the order they were read (so by
/// seq), with their seqs: a seq that left the surface is marked
/// [`GONE`], and the gone ones are dropped once they are half the list.
#[derive(Clone, Debug, Default)]
struct Stubs {
    list: Vec<(u64, LineStub, ItemFloor)>,
    gone: usize,
}

/// A seq with this bit set has left the surface (seqs are below it:
/// [`Surface`](super::fold::Surface) refuses larger ones).
const GONE: u64 = 1 << 63;

impl Stubs {
    fn find(&self, seq: u64) -> Option<usize> {
        let at = self.list.binary_search_by_key(&seq, |(s, ..)| s & !GONE).ok()?;
        (self.list[at].0 & GONE == 0).then_some(at)
    }

    fn push(&mut self, seq: u64, stub: LineStub, floor: ItemFloor) {
        debug_assert!(self.list.last().is_none_or(|(s, ..)| s & !GONE < seq), "stubs are kept in seq order");
        self.list.push((seq, stub, floor));
    }

    fn remove(&mut self, seq: u64) {
        let Some(at) = self.find(seq) else { return };
        self.list[at].0 |= GONE;
        self.gone += 1;
        if self.gone >= 1024 && 2 * self.gone > self.list.len() {
            self.list.retain(|(s, ..)| s & GONE == 0);
            self.list.shrink_to(self.list.len().max(self.list.capacity() / 2));
            self.gone = 0;
        }
    }
}

/// Where a line was read: its number in the log (the header is line 1)
/// and, in a plain log, its byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineAt {
    pub line: u64,
    pub offset: Option<u64>,
}

/// A visible line kept by where it is, its length and its checksum (to
/// read it again and know it is the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineStub {
    /// Its byte offset in a plain log, its line number in a zstd log (both
    /// grow along the log).
    pub at: u64,
    pub len: usize,
    pub checksum: u64,
}

impl LineStub {
    fn new(at: LineAt, line: &[u8]) -> LineStub {
        LineStub { at: at.offset.unwrap_or(at.line), len: line.len(), checksum: line_checksum(line) }
    }
}

impl KeptLines {
    pub(crate) fn new() -> Self {
        KeptLines::default()
    }

    /// Lines that keep only the events projection may not drop unread:
    /// a read for projection holds the messages, not the tool output.
    pub(crate) fn visible_only() -> Self {
        KeptLines { visible_only: true, ..KeptLines::default() }
    }

    /// Lines kept as [`LineStub`]s: the visible ones, by where they are.
    pub(crate) fn stubs_only() -> Self {
        KeptLines { visible_only: true, stubs: Some(Stubs::default()), ..KeptLines::default() }
    }

    /// About how many bytes of memory the kept lines hold.
    pub(crate) fn approx_bytes(&self) -> usize {
        self.stubs.as_ref().map_or(0, |m| m.list.capacity() * std::mem::size_of::<(u64, LineStub, ItemFloor)>())
            + self.arena.capacity()
            + self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.index.capacity() * (2 * std::mem::size_of::<usize>() + 1)
    }

    /// Keeps the line of event `seq` (which must not be kept already),
    /// unless only visible lines are kept and projection drops it unread.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, seq: u64, line: &[u8]) {
        self.insert_at(seq, line, LineAt { line: 0, offset: None });
    }

    /// [`insert`](Self::insert) of a line read `at` (kept as a stub when
    /// only stubs are kept).
    pub(crate) fn insert_at(&mut self, seq: u64, line: &[u8], at: LineAt) {
        if let Some(stubs) = &mut self.stubs {
            let floor = match crate::projection::project_event(line) {
                Ok(None) => return,
                Ok(Some(item)) => ItemFloor::of(&item),
                Err(_) => ItemFloor::fixed(),
            };
            stubs.push(seq, LineStub::new(at, line), floor);
            return;
        }
        if self.visible_only && !crate::projection::may_project(line) {
            return;
        }
        let start = self.arena.len();
        self.arena.reserve(line.len() + 1);
        self.arena.extend_from_slice(line);
        self.arena.push(b',');
        let len = line.len() + 1;
        self.live_bytes += len;
        self.index.insert(seq, self.entries.len());
        self.entries.push(Entry { seq, start, len, live: true });
    }

    /// Drops the line of event `seq`, if kept.
    pub(crate) fn remove(&mut self, seq: u64) {
        if let Some(stubs) = &mut self.stubs {
            stubs.remove(seq);
            return;
        }
        let Some(i) = self.index.remove(&seq) else { return };
        let entry = &mut self.entries[i];
        entry.live = false;
        self.live_bytes -= entry.len;
        self.dead_bytes += entry.len;
        if self.dead_bytes >= MIN_COMPACTION_BYTES && self.dead_bytes > self.live_bytes {
            self.compact();
        }
    }

    /// Moves the live lines down over the dead ones, keeping their order.
    fn compact(&mut self) {
        if self.dead_bytes == 0 {
            return;
        }
        let mut to = 0;
        self.entries.retain(|e| e.live);
        for e in &mut self.entries {
            self.arena.copy_within(e.start..e.start + e.len, to);
            e.start = to;
            to += e.len;
        }
        self.arena.truncate(to);
        self.arena.shrink_to(to.max(self.arena.capacity() / 2));
        self.index.clear();
        self.index.extend(self.entries.iter().enumerate().map(|(i, e)| (e.seq, i)));
        self.dead_bytes = 0;
    }

    /// The stubs of the kept lines in surface order (`order`, whose seqs
    /// not kept are left out), and their items' floors; empty unless only
    /// stubs are kept. Each of the two is allocated at its size once the
    /// kept ones are freed.
    pub(crate) fn into_stubs(self, order: &[u64]) -> (Vec<LineStub>, Vec<ItemFloor>) {
        let Some(stubs) = self.stubs else { return (Vec::new(), Vec::new()) };
        let mut picked: Vec<usize> = order.iter().filter_map(|&s| stubs.find(s)).collect();
        picked.shrink_to_fit();
        let floors: Vec<ItemFloor> = picked.iter().map(|&at| stubs.list[at].2).collect();
        let lines = picked.iter().map(|&at| stubs.list[at].1).collect();
        (lines, floors)
    }

    /// Builds `prefix` + the lines of `order` joined with `,` + `suffix`.
    /// Every seq of `order` must be kept, and nothing else (when only
    /// visible lines are kept: every kept seq must be in `order`, whose
    /// seqs not kept are left out).
    pub(crate) fn into_joined(mut self, prefix: &[u8], order: &[u64], suffix: &[u8]) -> Vec<u8> {
        self.compact();
        let visible: Vec<u64>;
        let order = if self.visible_only {
            visible = order.iter().copied().filter(|s| self.index.contains_key(s)).collect();
            &visible[..]
        } else {
            order
        };
        debug_assert_eq!(self.entries.len(), order.len());
        let in_order = self.entries.len() == order.len() && self.entries.iter().zip(order).all(|(e, s)| e.seq == *s);
        if !in_order {
            let mut out = Vec::with_capacity(prefix.len() + self.live_bytes + suffix.len());
            out.extend_from_slice(prefix);
            for (i, seq) in order.iter().enumerate() {
                let e = self.entries[self.index[seq]];
                let line = &self.arena[e.start..e.start + e.len - 1];
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(line);
            }
            out.extend_from_slice(suffix);
            return out;
        }
        // The arena is the joined lines plus a trailing `,`: put the prefix
        // in front of it and the suffix in place of that `,`.
        let mut out = self.arena;
        out.pop();
        let body = out.len();
        out.reserve_exact(prefix.len() + suffix.len());
        out.resize(body + prefix.len(), 0);
        out.copy_within(0..body, prefix.len());
        out[..prefix.len()].copy_from_slice(prefix);
        out.extend_from_slice(suffix);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(k: KeptLines, order: &[u64]) -> String {
        String::from_utf8(k.into_joined(b"[", order, b"]")).unwrap()
    }

    #[test]
    fn in_order_and_reordered() {
        let mut k = KeptLines::new();
        assert_eq!(joined(KeptLines::new(), &[]), "[]");
        k.insert(1, b"a");
        k.insert(2, b"bb");
        k.insert(3, b"ccc");
        k.remove(2);
        assert_eq!(joined(k, &[1, 3]), "[a,ccc]");
        let mut k = KeptLines::new();
        k.insert(1, b"a");
        k.insert(2, b"bb");
        k.remove(1);
        k.remove(2);
        k.insert(5, b"e");
        k.insert(3, b"c");
        assert_eq!(joined(k, &[3, 5]), "[c,e]");
    }

    #[test]
    fn compaction_keeps_lines() {
        let mut k = KeptLines::new();
        let big = vec![b'x'; MIN_COMPACTION_BYTES];
        k.insert(0, b"first");
        for seq in 1..5u64 {
            k.insert(seq, &big);
            k.remove(seq);
        }
        k.insert(9, b"last");
        assert!(k.arena.len() < 2 * MIN_COMPACTION_BYTES + 100);
        k.remove(0);
        k.insert(10, b"mid");
        assert_eq!(joined(k, &[9, 10]), "[last,mid]");
    }
}
