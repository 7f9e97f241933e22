//! The canonical surface fold: which events make up the model-visible
//! history of a session, in model order.
//!
//! Only the surface-eligible types of the log's generation carry a
//! `surfaceOp` ([`Generation::surface_types`]: `user/message`,
//! `assistant/message`, `tool/result`, plus `system/message` from v3 and
//! `developer/message` in v4). `"append"` appends the event's seq to the
//! surface; the replace marker (`{"op":"replace","start":S,"end":E}` up to
//! v2, `{"op":"replace","startSeq":S,"endSeq":E}` from v3, exactly those
//! keys from v1) replaces the inclusive run of the current surface from S to
//! E (both on the surface, S not after E in surface order) with the event's
//! own seq. Anything else on an eligible event is an invalid fold. From v3
//! the first surface node, while it is a `system/message`, is protected: it
//! may be replaced only by one `system/message` covering exactly that node.
//!
//! The surface is held as ranked slots ([`Surface`]), so an append costs
//! O(1) and a replacement O(log n) plus the length of the replaced run: a
//! log of any length folds in O(n log n) at worst and linear time when it
//! only appends, with 8 bytes per surface event.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::Value;

use super::generation::Generation;

/// A fast hasher for seqs. Only seqs of stored events are ever inserted,
/// and those are checked to run 0, 1, 2, … first, so a log cannot choose
/// keys that collide; a multiplicative hash spreads them well.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SeqHasher(u64);

impl Hasher for SeqHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by seq.
pub(crate) type SeqMap<V> = HashMap<u64, V, BuildHasherDefault<SeqHasher>>;

/// The event types that carry a `surfaceOp` in a v0 log (see
/// [`Generation::surface_types`] for every generation).
pub const SURFACE_TYPES: [&str; 3] = ["user/message", "assistant/message", "tool/result"];

/// Whether events of this type are surface-eligible in a v0 log.
pub fn is_surface_type(kind: &str) -> bool {
    SURFACE_TYPES.contains(&kind)
}

/// The type of the protected head.
pub const SYSTEM_MESSAGE: &str = "system/message";

/// One operation of the fold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SurfaceOp {
    /// Append the event.
    Append,
    /// Replace the inclusive run `start..=end` by the event.
    Replace {
        /// First replaced seq.
        start: u64,
        /// Last replaced seq.
        end: u64,
    },
}

impl SurfaceOp {
    /// Reads a `surfaceOp` marker of the event `seq` of type `kind` in a v0
    /// log.
    pub fn parse(kind: &str, seq: u64, marker: Option<&Value>) -> Result<SurfaceOp, String> {
        Self::parse_in(Generation::V0, kind, seq, marker)
    }

    /// Reads a `surfaceOp` marker of the event `seq` of type `kind` in a log
    /// of `generation`: the replace marker's keys are the generation's, and
    /// the other generation's spelling is named as such.
    pub fn parse_in(generation: Generation, kind: &str, seq: u64, marker: Option<&Value>) -> Result<SurfaceOp, String> {
        let bad = |why: &str| format!("invalid surface fold: {kind} event {seq} {why}");
        let (start_key, end_key) = generation.replace_keys();
        let (other_start, other_end) = if start_key == "start" { ("startSeq", "endSeq") } else { ("start", "end") };
        match marker {
            None | Some(Value::Null) => Err(bad("has no surfaceOp")),
            Some(Value::String(s)) if s == "append" => Ok(SurfaceOp::Append),
            Some(Value::Object(m)) if m.get("op").and_then(Value::as_str) == Some("replace") => {
                let start = m.get(start_key).and_then(Value::as_u64);
                let end = m.get(end_key).and_then(Value::as_u64);
                let foreign = m.contains_key(other_start) || m.contains_key(other_end);
                if foreign && (start.is_none() || generation.has_strict_markers()) {
                    return Err(bad(&format!(
                        "has a replace surfaceOp spelled {{{other_start},{other_end}}}, which a {generation} log \
                         does not use (its replace marker is {{op,{start_key},{end_key}}})"
                    )));
                }
                if generation.has_strict_markers() && m.len() != 3 {
                    return Err(bad(&format!(
                        "has a replace surfaceOp with keys other than op, {start_key}, {end_key}"
                    )));
                }
                match (start, end) {
                    (Some(start), Some(end)) => Ok(SurfaceOp::Replace { start, end }),
                    _ => Err(bad(&format!("has a replace surfaceOp without integer {start_key} and {end_key}"))),
                }
            }
            Some(_) => Err(bad("has an unknown surfaceOp")),
        }
    }
}

/// A slot's rank with this bit set: the slot is dead (its node left the
/// surface). Seqs, and so ranks, are below it.
const DEAD: u64 = 1 << 63;

/// Dead slots below this are never worth a compaction.
const MIN_COMPACTION_SLOTS: usize = 1 << 12;

/// The current surface: an ordered set of seqs.
///
/// Held as slots in surface order, each with a *rank*: an appended event
/// takes its own seq as its rank (the largest yet, seqs increase), and an
/// event that replaces a run takes the rank of the run's first node, in its
/// slot. Ranks therefore increase along the slots, and a seq's slot is found
/// by a binary search for its rank: the rank is the seq itself but for the
/// (few) replacing events, kept in two small maps. The nodes a replacement
/// removes leave dead slots, each run of them reachable in one step from
/// the live slot before it; the dead slots are dropped once they outnumber
/// the live ones. So an append costs O(1), a replacement O(log n) plus the
/// length of the replaced run, and a node 8 bytes (where a linked list in a
/// hash map took about 90).
#[derive(Clone, Debug, Default)]
pub struct Surface {
    /// The ranks of the slots, increasing; [`DEAD`] marks a dead slot.
    slots: Vec<u64>,
    /// Live slots.
    live: usize,
    /// The seq of the last event applied.
    newest: Option<u64>,
    /// A replacing event on the surface: its seq → its rank.
    rank_of: SeqMap<u64>,
    /// The same, its rank → its seq.
    seq_at: SeqMap<u64>,
    /// Each run of dead slots: its first slot → its last.
    dead_runs: SeqMap<usize>,
    /// Whether a `system/message` head is protected (v3 and later).
    protect_head: bool,
    /// Whether the head is a `system/message`.
    head_is_system: bool,
}

impl Surface {
    /// An empty surface (v0 rules: no protected head).
    pub fn new() -> Self {
        Surface::default()
    }

    /// An empty surface with the rules of `generation`.
    pub fn for_generation(generation: Generation) -> Self {
        Surface { protect_head: generation.has_protected_head(), ..Surface::default() }
    }

    /// Applies `op` for the event `seq` of type `kind`, enforcing the
    /// protected head; as [`apply`](Self::apply) otherwise.
    pub fn apply_event(&mut self, seq: u64, kind: &str, op: SurfaceOp) -> Result<Vec<u64>, String> {
        let is_system = kind == SYSTEM_MESSAGE;
        if let (true, true, SurfaceOp::Replace { start, end }) = (self.protect_head, self.head_is_system, op) {
            if self.head() == Some(start) && !(is_system && start == end) {
                return Err(format!(
                    "invalid surface fold: replace by {kind} event {seq} covers the protected system head {start} \
                     (only one system/message replacing exactly that node may replace it)"
                ));
            }
        }
        let removed = self.apply(seq, op)?;
        if self.head() == Some(seq) {
            self.head_is_system = is_system;
        }
        Ok(removed)
    }

    /// How many events are on the surface.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether the surface is empty.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// About how many bytes of memory the surface holds.
    pub fn approx_bytes(&self) -> usize {
        /// A map entry: key, value and control byte, at the map's load.
        const MAP_ENTRY_BYTES: usize = 20;
        self.slots.capacity() * std::mem::size_of::<u64>()
            + (self.rank_of.capacity() + self.seq_at.capacity() + self.dead_runs.capacity()) * MAP_ENTRY_BYTES
    }

    /// The first seq of the surface. The first slot is never dead: a
    /// replacement keeps the slot of the run's first node.
    fn head(&self) -> Option<u64> {
        (self.live > 0).then(|| self.seq_in(0))
    }

    /// The seq in the live slot `slot`.
    fn seq_in(&self, slot: usize) -> u64 {
        let rank = self.slots[slot];
        self.seq_at.get(&rank).copied().unwrap_or(rank)
    }

    /// The slot of `seq`, if it is on the surface.
    fn slot_of(&self, seq: u64) -> Option<usize> {
        let rank = self.rank_of.get(&seq).copied().unwrap_or(seq);
        if rank >= DEAD {
            return None;
        }
        let slot = self.slots.binary_search_by_key(&rank, |r| r & !DEAD).ok()?;
        (self.slots[slot] & DEAD == 0 && self.seq_in(slot) == seq).then_some(slot)
    }

    /// The live slot after the live slot `slot` (past the end when it is
    /// the last).
    fn next_live(&self, slot: usize) -> usize {
        let next = slot + 1;
        self.dead_runs.get(&(next as u64)).map_or(next, |last| last + 1)
    }

    /// Applies `op` for the event `seq`. Returns the seqs that left the
    /// surface (in surface order). Seqs must increase from one call to the
    /// next, as a log's seqs do (they are contiguous and checked before the
    /// fold); a seq that does not is refused.
    pub fn apply(&mut self, seq: u64, op: SurfaceOp) -> Result<Vec<u64>, String> {
        let bad = |why: String| format!("invalid surface fold: event {seq} {why}");
        if seq >= DEAD {
            return Err(bad("has a seq too large to fold".into()));
        }
        if let Some(newest) = self.newest.filter(|&n| seq <= n) {
            return Err(bad(format!("comes after event {newest} in the fold")));
        }
        match op {
            SurfaceOp::Append => {
                self.slots.push(seq);
                self.live += 1;
                self.newest = Some(seq);
                Ok(Vec::new())
            }
            SurfaceOp::Replace { start, end } => {
                let bad = |why: String| format!("invalid surface fold: replace by event {seq} {why}");
                let Some(first) = self.slot_of(start) else {
                    return Err(bad(format!("starts at {start}, which is not on the surface")));
                };
                let Some(last) = self.slot_of(end) else {
                    return Err(bad(format!("ends at {end}, which is not on the surface")));
                };
                if last < first {
                    return Err(bad(format!("has its start {start} after its end {end}")));
                }
                // The run, in surface order, by its slots.
                let mut slots = vec![first];
                let mut at = first;
                while at != last {
                    at = self.next_live(at);
                    slots.push(at);
                }
                let run: Vec<u64> = slots.iter().map(|&s| self.seq_in(s)).collect();
                for (&slot, &gone) in slots.iter().zip(&run) {
                    let rank = self.slots[slot];
                    self.rank_of.remove(&gone);
                    self.seq_at.remove(&rank);
                    if slot != first {
                        self.slots[slot] |= DEAD;
                    }
                }
                // The replacing event takes the first slot and its rank.
                let rank = self.slots[first];
                self.rank_of.insert(seq, rank);
                self.seq_at.insert(rank, seq);
                if last > first {
                    // The dead runs inside the run (each follows one of its
                    // slots) and the one after it, if any, become one.
                    for &slot in &slots[..slots.len() - 1] {
                        self.dead_runs.remove(&(slot as u64 + 1));
                    }
                    let through = self.dead_runs.remove(&(last as u64 + 1)).unwrap_or(last);
                    self.dead_runs.insert(first as u64 + 1, through);
                }
                self.live -= run.len() - 1;
                self.newest = Some(seq);
                let dead = self.slots.len() - self.live;
                if dead >= MIN_COMPACTION_SLOTS && dead > self.live {
                    self.compact();
                }
                Ok(run)
            }
        }
    }

    /// Frees the slack of the slots.
    pub fn shrink_to_fit(&mut self) {
        self.slots.shrink_to_fit();
    }

    /// Drops the dead slots.
    fn compact(&mut self) {
        self.slots.retain(|r| r & DEAD == 0);
        self.slots.shrink_to(self.slots.len().max(self.slots.capacity() / 2));
        self.dead_runs.clear();
    }

    /// The first `n` seqs of the surface, walking its slots from the head.
    #[cfg(test)]
    fn seqs_from_head(&self, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        let mut at = 0;
        while out.len() < n && at < self.slots.len() {
            out.push(self.seq_in(at));
            at = self.next_live(at);
        }
        out
    }

    /// The surface in model order.
    pub fn seqs(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.live);
        out.extend((0..self.slots.len()).filter(|&s| self.slots[s] & DEAD == 0).map(|s| self.seq_in(s)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn append_and_replace() {
        let mut s = Surface::new();
        for seq in [4, 5, 6, 13, 15] {
            s.apply(seq, SurfaceOp::Append).unwrap();
        }
        assert_eq!(s.apply(21, SurfaceOp::Replace { start: 4, end: 6 }).unwrap(), vec![4, 5, 6]);
        assert_eq!(s.seqs(), vec![21, 13, 15]);
        s.apply(28, SurfaceOp::Append).unwrap();
        assert_eq!(s.seqs(), vec![21, 13, 15, 28]);
        s.apply(30, SurfaceOp::Replace { start: 15, end: 15 }).unwrap();
        assert_eq!(s.seqs(), vec![21, 13, 30, 28]);
        s.apply(31, SurfaceOp::Replace { start: 21, end: 28 }).unwrap();
        assert_eq!(s.seqs(), vec![31]);
        assert_eq!(s.len(), 1);
    }

    /// The fold of a plain list, as the rules say (what the slots must
    /// agree with).
    fn plain_apply(list: &mut Vec<u64>, seq: u64, op: SurfaceOp) -> Option<Vec<u64>> {
        match op {
            SurfaceOp::Append => {
                list.push(seq);
                Some(Vec::new())
            }
            SurfaceOp::Replace { start, end } => {
                let a = list.iter().position(|&s| s == start)?;
                let b = list.iter().position(|&s| s == end)?;
                if b < a {
                    return None;
                }
                let run: Vec<u64> = list.splice(a..=b, [seq]).collect();
                Some(run)
            }
        }
    }

    /// A small deterministic generator (xorshift).
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n.max(1)
        }
    }

    #[test]
    fn agrees_with_a_plain_list() {
        for seed in 1..=24u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut slots = Surface::new();
            let mut plain: Vec<u64> = Vec::new();
            // Long replacements in some seeds, so dead slots pile up and
            // are compacted.
            let reach = if seed % 3 == 0 { 400 } else { 6 };
            let mut seq = 0u64;
            for step in 0..12_000 {
                seq += 1 + rng.below(3);
                let op = if plain.is_empty() || rng.below(10) < 5 {
                    SurfaceOp::Append
                } else {
                    let a = rng.below(plain.len() as u64) as usize;
                    let b = (a + rng.below(reach) as usize).min(plain.len() - 1);
                    let (mut start, mut end) = (plain[a], plain[b]);
                    match rng.below(20) {
                        0 => std::mem::swap(&mut start, &mut end),
                        1 => start = seq + 5,
                        2 => end = start.saturating_sub(1),
                        _ => {}
                    }
                    SurfaceOp::Replace { start, end }
                };
                let want = plain_apply(&mut plain.clone(), seq, op);
                let got = slots.apply(seq, op);
                assert_eq!(got.as_ref().ok(), want.as_ref(), "seed {seed} step {step} {op:?}");
                if want.is_some() {
                    plain_apply(&mut plain, seq, op);
                }
                assert_eq!(slots.len(), plain.len());
                if step % 97 == 0 {
                    assert_eq!(slots.seqs(), plain, "seed {seed} step {step}");
                }
            }
            assert_eq!(slots.seqs(), plain, "seed {seed}");
        }
    }

    #[test]
    fn seqs_must_increase() {
        let mut s = Surface::new();
        s.apply(5, SurfaceOp::Append).unwrap();
        assert!(s.apply(5, SurfaceOp::Append).unwrap_err().contains("comes after event 5"));
        assert!(s.apply(3, SurfaceOp::Append).is_err());
        assert!(s.apply(DEAD, SurfaceOp::Append).is_err());
        s.apply(6, SurfaceOp::Replace { start: 5, end: 5 }).unwrap();
        assert!(s.apply(6, SurfaceOp::Append).is_err());
        assert_eq!(s.seqs(), vec![6]);
    }

    /// A log that replaces near the head of a long surface again and again
    /// costs a binary search each time, not a walk of the surface; a long
    /// replaced run is walked once (its dead slots are stepped over in one
    /// step, then dropped).
    #[test]
    fn replacements_near_a_long_surface_stay_cheap() {
        let mut s = Surface::new();
        let n = 200_000u64;
        for seq in 0..n {
            s.apply(seq, SurfaceOp::Append).unwrap();
        }
        let mut head = 0;
        for k in 0..n - 1 {
            let seq = n + k;
            let second = s.seqs_from_head(2)[1];
            assert_eq!(s.apply(seq, SurfaceOp::Replace { start: head, end: second }).unwrap(), vec![head, second]);
            head = seq;
        }
        assert_eq!(s.len(), 1);
        assert!(s.slots.len() < 2 * MIN_COMPACTION_SLOTS, "the dead slots were dropped: {}", s.slots.len());
        // A run over many dead runs: every other node replaced, then all.
        let mut s = Surface::new();
        for seq in 0..n {
            s.apply(seq, SurfaceOp::Append).unwrap();
        }
        let mut seq = n;
        for k in (0..n - 1).step_by(4) {
            s.apply(seq, SurfaceOp::Replace { start: k, end: k + 1 }).unwrap();
            seq += 1;
        }
        let seqs = s.seqs();
        let all = s.apply(seq, SurfaceOp::Replace { start: seqs[0], end: *seqs.last().unwrap() }).unwrap();
        assert_eq!(all, seqs);
        assert_eq!(s.seqs(), vec![seq]);
    }

    #[test]
    fn invalid_replacements() {
        let mut s = Surface::new();
        for seq in [1, 2, 3] {
            s.apply(seq, SurfaceOp::Append).unwrap();
        }
        assert!(s.apply(9, SurfaceOp::Replace { start: 3, end: 1 }).is_err());
        assert!(s.apply(9, SurfaceOp::Replace { start: 0, end: 1 }).is_err());
        assert!(s.apply(9, SurfaceOp::Replace { start: 1, end: 7 }).is_err());
        assert_eq!(s.seqs(), vec![1, 2, 3]);
    }

    #[test]
    fn protected_head() {
        let mut s = Surface::for_generation(Generation::new(3).unwrap());
        s.apply_event(1, "system/message", SurfaceOp::Append).unwrap();
        s.apply_event(2, "user/message", SurfaceOp::Append).unwrap();
        assert!(s
            .apply_event(3, "user/message", SurfaceOp::Replace { start: 1, end: 2 })
            .unwrap_err()
            .contains("protected"));
        assert!(s.apply_event(3, "system/message", SurfaceOp::Replace { start: 1, end: 2 }).is_err());
        s.apply_event(3, "system/message", SurfaceOp::Replace { start: 1, end: 1 }).unwrap();
        s.apply_event(4, "user/message", SurfaceOp::Replace { start: 2, end: 2 }).unwrap();
        assert_eq!(s.seqs(), vec![3, 4]);
        // v0 has no protected head.
        let mut s = Surface::new();
        s.apply_event(1, "system/message", SurfaceOp::Append).unwrap();
        s.apply_event(2, "user/message", SurfaceOp::Replace { start: 1, end: 1 }).unwrap();
    }

    #[test]
    fn markers_by_generation() {
        let v = |n| Generation::new(n).unwrap();
        let old = json!({"op":"replace","start":4,"end":5});
        let new = json!({"op":"replace","startSeq":4,"endSeq":5});
        let want = SurfaceOp::Replace { start: 4, end: 5 };
        assert_eq!(SurfaceOp::parse_in(v(2), "user/message", 9, Some(&old)).unwrap(), want);
        assert_eq!(SurfaceOp::parse_in(v(3), "user/message", 9, Some(&new)).unwrap(), want);
        assert!(SurfaceOp::parse_in(v(2), "user/message", 9, Some(&new)).unwrap_err().contains("v2 log"));
        assert!(SurfaceOp::parse_in(v(4), "user/message", 9, Some(&old)).unwrap_err().contains("v4 log"));
        assert!(SurfaceOp::parse_in(v(0), "user/message", 9, Some(&new)).unwrap_err().contains("v0 log"));
        let extra = json!({"op":"replace","startSeq":4,"endSeq":5,"x":1});
        assert!(SurfaceOp::parse_in(v(4), "user/message", 9, Some(&extra)).is_err());
        let lenient = json!({"op":"replace","start":4,"end":5,"x":1});
        assert_eq!(SurfaceOp::parse_in(v(0), "user/message", 9, Some(&lenient)).unwrap(), want);
    }

    #[test]
    fn markers() {
        assert_eq!(SurfaceOp::parse("user/message", 1, Some(&json!("append"))).unwrap(), SurfaceOp::Append);
        assert_eq!(
            SurfaceOp::parse("user/message", 1, Some(&json!({"op":"replace","start":4,"end":5}))).unwrap(),
            SurfaceOp::Replace { start: 4, end: 5 }
        );
        assert!(SurfaceOp::parse("user/message", 1, None).is_err());
        assert!(SurfaceOp::parse("user/message", 1, Some(&json!("prepend"))).is_err());
        assert!(SurfaceOp::parse("user/message", 1, Some(&json!({"op":"replace","start":4}))).is_err());
    }
}
