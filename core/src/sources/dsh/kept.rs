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
//!
//! A read under a budget keeps a stub of every visible line (where it is,
//! its text's length) and the bytes of only those lines retention may
//! still keep: every so often the lines retention certainly drops under
//! the budget as the surface stands are let go ([`KeptLines::within`]).
//! While the log only appends, a line let go stays dropped whatever comes
//! after it (a later item only adds to what the budget must hold), so the
//! lines kept at the end are all there, and the log is read once. An
//! item's floor (`retention::ItemFloor`) is measured from its held line
//! only when retention's walk back from the newest item reaches it: most
//! lines are let go unmeasured.

use super::fold::SeqMap;
use crate::retention::{certainly_dropped_by, Elided, ItemFloor};
use crate::sources::file_source::line_checksum;

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
    /// Its item is never dropped (a read under a budget).
    fixed: bool,
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
    /// With the stubs, the bytes of the lines retention may keep under
    /// this budget ([`within`](Self::within)).
    hold: Option<Hold>,
}

/// What a read under a budget holds of the lines besides their stubs.
#[derive(Clone, Copy, Debug)]
struct Hold {
    budget: u64,
    /// Live bytes of the arena after the last [`KeptLines::let_go`].
    after: usize,
    /// Whether the surface is still the visible lines in the order they
    /// were read (no replacement yet): lines are then let go from the
    /// oldest held on, without a walk of the surface.
    in_order: bool,
    /// In order: the first entry not yet looked at by a let-go (those
    /// before it are let go, or never dropped).
    from: usize,
    /// In order: the sum of the floors of the items never dropped, and
    /// how many they are.
    fixed_floor: u64,
    fixed: u64,
}

/// The bytes a read under a budget holds beyond what it held after it
/// last let lines go, at the least, before it lets go again; in order,
/// also at least eight times the budget (each let-go walks back over the
/// lines the budget holds, measuring those not measured yet).
const MIN_HOLD_SLACK: usize = 1 << 20;

/// Out of order, at the least, this many bytes per surface event: each
/// let-go then walks the whole surface, paid for by the bytes read since
/// the last.
const HOLD_SLACK_PER_EVENT: usize = 32;

/// The floor of a stub not measured yet.
const UNMEASURED: u64 = u64::MAX;

/// The stubs of the visible lines, in the order they were read (so by
/// seq), with their seqs and their items' floors ([`UNMEASURED`] until
/// retention's walk reaches them): a seq that left the surface is marked
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

    /// Lines kept as [`LineStub`]s, with the bytes of those retention may
    /// keep under `budget`: a read under a budget that needs to read again
    /// only what a replacement brought back into the budget.
    pub(crate) fn within(budget: u64) -> Self {
        let hold = Hold { budget, after: 0, in_order: true, from: 0, fixed_floor: 0, fixed: 0 };
        KeptLines { hold: Some(hold), ..KeptLines::stubs_only() }
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
        let mut fixed = false;
        if let Some(stubs) = &mut self.stubs {
            // The floor of an item never dropped counts whatever the
            // budget keeps: measured now; the others when needed.
            let floor = match crate::projection::project_event(line) {
                Ok(None) => return,
                Ok(Some(item)) if item.checkpoint => ItemFloor::of(&item),
                Ok(Some(item)) => ItemFloor { fixed: false, floor: UNMEASURED, bytes: item.text.byte_len() as u64 },
                Err(_) => ItemFloor::fixed(),
            };
            stubs.push(seq, LineStub::new(at, line), floor);
            let Some(hold) = &mut self.hold else { return };
            if floor.fixed {
                hold.fixed_floor = hold.fixed_floor.saturating_add(floor.floor);
                hold.fixed += 1;
            }
            fixed = floor.fixed;
        } else if self.visible_only && !crate::projection::may_project(line) {
            return;
        }
        let start = self.arena.len();
        self.arena.reserve(line.len() + 1);
        self.arena.extend_from_slice(line);
        self.arena.push(b',');
        let len = line.len() + 1;
        self.live_bytes += len;
        self.index.insert(seq, self.entries.len());
        self.entries.push(Entry { seq, start, len, live: true, fixed });
    }

    /// Drops the line of event `seq`, if kept.
    pub(crate) fn remove(&mut self, seq: u64) {
        if let Some(stubs) = &mut self.stubs {
            stubs.remove(seq);
            match &mut self.hold {
                None => return,
                Some(hold) => hold.in_order = false,
            }
        }
        if let Some(i) = self.index.remove(&seq) {
            self.kill(i);
        }
        self.compact_if_worth_it();
    }

    /// Marks the line of entry `i` dead (its seq already out of the index).
    fn kill(&mut self, i: usize) {
        let entry = &mut self.entries[i];
        entry.live = false;
        self.live_bytes -= entry.len;
        self.dead_bytes += entry.len;
    }

    fn compact_if_worth_it(&mut self) {
        if self.dead_bytes >= MIN_COMPACTION_BYTES && self.dead_bytes > self.live_bytes {
            self.compact();
        }
    }

    /// Whether a read under a budget, on a surface of `surface_len`
    /// events, holds enough lines more than when it last let go for
    /// [`let_go`](Self::let_go) to be worth its work.
    pub(crate) fn should_let_go(&self, surface_len: usize) -> bool {
        self.hold.is_some_and(|h| {
            let slack = match h.in_order {
                true => usize::try_from(h.budget).unwrap_or(usize::MAX).saturating_mul(8).max(MIN_HOLD_SLACK),
                false => HOLD_SLACK_PER_EVENT.saturating_mul(surface_len).max(MIN_HOLD_SLACK),
            };
            self.live_bytes > h.after.saturating_add(slack)
        })
    }

    /// Lets go of the bytes of the lines retention certainly drops under
    /// the budget on the surface `order()` as it stands
    /// ([`certainly_dropped_by`]), keeping their stubs. While the surface
    /// is in reading order, it is not asked for: going back from the
    /// newest line as retention does, the held lines before the first that
    /// does not fit are let go.
    pub(crate) fn let_go(&mut self, order: impl FnOnce() -> Vec<u64>) {
        let Some(mut hold) = self.hold else { return };
        let KeptLines { arena, entries, index, stubs: Some(stubs), .. } = self else { return };
        let held = Held { arena, entries, index, again: None };
        let gone: Vec<u64> = if hold.in_order {
            let list = &mut stubs.list;
            let newest = list.len().saturating_sub(1);
            // As `certainly_dropped_by`: the items never dropped (those
            // fixed and the newest), then the others from the newest back.
            let (mut total, mut count) = (hold.fixed_floor, hold.fixed);
            if list.get(newest).is_some_and(|s| !s.2.fixed) {
                total = total.saturating_add(held.floor(list, newest).unwrap_or(0));
                count += 1;
            }
            total = total.saturating_add(count.saturating_sub(1));
            let mut cut = None;
            for k in (0..newest).rev() {
                if list[k].2.fixed {
                    continue;
                }
                total = total.saturating_add(held.floor(list, k).unwrap_or(0).saturating_add(u64::from(count > 0)));
                count += 1;
                if total > hold.budget {
                    cut = Some(list[k].0);
                    break;
                }
            }
            // Nothing certainly dropped yet: the budget holds every line.
            let cut = cut.unwrap_or(0);
            let from = hold.from;
            let to = from + entries[from..].partition_point(|e| e.seq < cut);
            hold.from = to;
            crate::work::add(to - from);
            entries[from..to].iter().filter(|e| e.live && !e.fixed).map(|e| e.seq).collect()
        } else {
            let order = order();
            let at: Vec<usize> = order.iter().filter_map(|&s| stubs.find(s)).collect();
            drop(order);
            let fixed: Vec<bool> = at.iter().map(|&k| stubs.list[k].2.fixed).collect();
            let list = &mut stubs.list;
            // A line let go unmeasured counts 0 (a floor of anything): at
            // worst fewer lines are let go.
            let dropped = certainly_dropped_by(&fixed, |i| held.floor(list, at[i]).unwrap_or(0), hold.budget);
            crate::work::add(at.len());
            at.iter().zip(dropped).filter(|(_, d)| *d).map(|(&k, _)| stubs.list[k].0).collect()
        };
        for seq in gone {
            if let Some(i) = self.index.remove(&seq) {
                self.kill(i);
            }
        }
        if self.dead_bytes >= MIN_COMPACTION_BYTES && self.dead_bytes > self.live_bytes {
            // Compaction keeps the live entries: before `from`, the fixed ones.
            hold.from = self.entries[..hold.from].iter().filter(|e| e.live).count();
            self.compact();
        }
        hold.after = self.live_bytes;
        self.hold = Some(hold);
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
    /// not kept are left out); empty unless only stubs are kept. Allocated
    /// at its size.
    pub(crate) fn into_stubs(self, order: &[u64]) -> Vec<LineStub> {
        let Some(stubs) = self.stubs else { return Vec::new() };
        let mut lines: Vec<LineStub> = order.iter().filter_map(|&s| stubs.find(s)).map(|at| stubs.list[at].1).collect();
        lines.shrink_to_fit();
        lines
    }

    /// Of a read under a budget ([`within`](Self::within)), in surface
    /// order (`order`), the visible lines retention may keep: each one's
    /// stub and its bytes (held, or among `again`, lines read again by
    /// seq; `None` when neither: a line let go that a replacement brought
    /// back into the budget), and what the budget certainly drops
    /// (`retention::certainly_elided`). `Err` with the seqs and stubs of
    /// the lines whose floors retention's walk needs but that are neither
    /// held nor in `again` (newest first): read them again and ask again.
    pub(crate) fn within_lines(&mut self, order: &[u64], budget: u64, again: &SeqMap<Vec<u8>>) -> WithinLines {
        let KeptLines { arena, entries, index, stubs: Some(stubs), .. } = self else {
            return Ok((Vec::new(), Vec::new(), Elided::default()));
        };
        let held = Held { arena, entries, index, again: Some(again) };
        let at: Vec<usize> = order.iter().filter_map(|&s| stubs.find(s)).collect();
        let fixed: Vec<bool> = at.iter().map(|&k| stubs.list[k].2.fixed).collect();
        let list = &mut stubs.list;
        let mut missing = Vec::new();
        let dropped = certainly_dropped_by(
            &fixed,
            |i| {
                held.floor(list, at[i]).unwrap_or_else(|| {
                    missing.push((list[at[i]].0, list[at[i]].1));
                    0
                })
            },
            budget,
        );
        if !missing.is_empty() {
            return Err(missing);
        }
        drop(fixed);
        let elided = Elided::counted(&dropped, |i| stubs.list[at[i]].2.bytes);
        let mut picked = Vec::new();
        let mut lines = Vec::new();
        for (&k, _) in at.iter().zip(&dropped).filter(|(_, d)| !**d) {
            let (seq, stub, _) = stubs.list[k];
            picked.push(stub);
            lines.push(held.line(seq).map(<[u8]>::to_vec));
        }
        Ok((picked, lines, elided))
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

/// What [`KeptLines::within_lines`] gives: the stubs of the lines kept,
/// their bytes when at hand, and what was left out; or the lines it must
/// be given to decide.
pub(crate) type WithinLines = Result<(Vec<LineStub>, Vec<Option<Vec<u8>>>, Elided), Vec<(u64, LineStub)>>;

/// The lines a read under a budget holds, and those it read again by seq,
/// to measure floors from.
struct Held<'a> {
    arena: &'a [u8],
    entries: &'a [Entry],
    index: &'a SeqMap<usize>,
    again: Option<&'a SeqMap<Vec<u8>>>,
}

impl Held<'_> {
    /// The line of event `seq`, when held or read again.
    fn line(&self, seq: u64) -> Option<&[u8]> {
        match self.index.get(&seq) {
            Some(&i) => {
                let e = self.entries[i];
                Some(&self.arena[e.start..e.start + e.len - 1])
            }
            None => self.again?.get(&seq).map(Vec::as_slice),
        }
    }

    /// The floor of the stub `k` of `list`, measured from its line the
    /// first time it is asked for; `None` when it is not measured and its
    /// line was let go.
    fn floor(&self, list: &mut [(u64, LineStub, ItemFloor)], k: usize) -> Option<u64> {
        let (seq, _, floor) = &mut list[k];
        if floor.floor == UNMEASURED {
            let line = self.line(*seq & !GONE)?;
            crate::work::add(1);
            floor.floor = match crate::projection::project_event(line) {
                Ok(Some(item)) => ItemFloor::of(&item).floor,
                _ => 0,
            };
        }
        Some(floor.floor)
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
