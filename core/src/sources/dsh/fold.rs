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
//! The surface is a doubly linked list keyed by seq, so an append and a
//! replacement cost O(1) plus the length of the replaced run: a log of any
//! length folds in linear time.

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

#[derive(Clone, Copy, Debug)]
struct Links {
    prev: Option<u64>,
    next: Option<u64>,
}

/// The current surface: an ordered set of seqs.
#[derive(Clone, Debug, Default)]
pub struct Surface {
    links: SeqMap<Links>,
    head: Option<u64>,
    tail: Option<u64>,
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
            if self.head == Some(start) && !(is_system && start == end) {
                return Err(format!(
                    "invalid surface fold: replace by {kind} event {seq} covers the protected system head {start} \
                     (only one system/message replacing exactly that node may replace it)"
                ));
            }
        }
        let removed = self.apply(seq, op)?;
        if self.head == Some(seq) {
            self.head_is_system = is_system;
        }
        Ok(removed)
    }

    /// How many events are on the surface.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether the surface is empty.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// Applies `op` for the event `seq`. Returns the seqs that left the
    /// surface (in surface order). Seqs are distinct because the log's seqs
    /// are contiguous and checked before the fold.
    pub fn apply(&mut self, seq: u64, op: SurfaceOp) -> Result<Vec<u64>, String> {
        match op {
            SurfaceOp::Append => {
                self.link_after(self.tail, seq, None);
                Ok(Vec::new())
            }
            SurfaceOp::Replace { start, end } => {
                let bad = |why: String| format!("invalid surface fold: replace by event {seq} {why}");
                let Some(first) = self.links.get(&start).copied() else {
                    return Err(bad(format!("starts at {start}, which is not on the surface")));
                };
                if !self.links.contains_key(&end) {
                    return Err(bad(format!("ends at {end}, which is not on the surface")));
                }
                // Walk from start to end; end must not come before start.
                let mut run = vec![start];
                let mut at = start;
                while at != end {
                    match self.links[&at].next {
                        Some(next) => {
                            run.push(next);
                            at = next;
                        }
                        None => return Err(bad(format!("has its start {start} after its end {end}"))),
                    }
                }
                let after = self.links[&end].next;
                for s in &run {
                    self.links.remove(s);
                }
                match after {
                    Some(a) => self.links.get_mut(&a).expect("linked").prev = first.prev,
                    None => self.tail = first.prev,
                }
                match first.prev {
                    Some(p) => self.links.get_mut(&p).expect("linked").next = after,
                    None => self.head = after,
                }
                self.link_after(first.prev, seq, after);
                Ok(run)
            }
        }
    }

    fn link_after(&mut self, prev: Option<u64>, seq: u64, next: Option<u64>) {
        self.links.insert(seq, Links { prev, next });
        match prev {
            Some(p) => self.links.get_mut(&p).expect("linked").next = Some(seq),
            None => self.head = Some(seq),
        }
        match next {
            Some(n) => self.links.get_mut(&n).expect("linked").prev = Some(seq),
            None => self.tail = Some(seq),
        }
    }

    /// The surface in model order.
    pub fn seqs(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.links.len());
        let mut at = self.head;
        while let Some(seq) = at {
            out.push(seq);
            at = self.links[&seq].next;
        }
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
