//! The canonical surface fold: which events make up the model-visible
//! history of a session, in model order.
//!
//! Only `user/message`, `assistant/message` and `tool/result` carry a
//! `surfaceOp`. `"append"` appends the event's seq to the surface;
//! `{"op":"replace","start":S,"end":E}` replaces the inclusive run of the
//! current surface from S to E (both on the surface, S not after E) with the
//! event's own seq. Anything else on an eligible event is an invalid fold.
//!
//! The surface is a doubly linked list keyed by seq, so an append and a
//! replacement cost O(1) plus the length of the replaced run: a log of any
//! length folds in linear time.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::Value;

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

/// The event types that carry a `surfaceOp`.
pub const SURFACE_TYPES: [&str; 3] = ["user/message", "assistant/message", "tool/result"];

/// Whether events of this type are surface-eligible.
pub fn is_surface_type(kind: &str) -> bool {
    SURFACE_TYPES.contains(&kind)
}

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
    /// Reads a `surfaceOp` marker of the event `seq` of type `kind`.
    pub fn parse(kind: &str, seq: u64, marker: Option<&Value>) -> Result<SurfaceOp, String> {
        let bad = |why: &str| format!("invalid surface fold: {kind} event {seq} {why}");
        match marker {
            None | Some(Value::Null) => Err(bad("has no surfaceOp")),
            Some(Value::String(s)) if s == "append" => Ok(SurfaceOp::Append),
            Some(Value::Object(m)) if m.get("op").and_then(Value::as_str) == Some("replace") => {
                let start = m.get("start").and_then(Value::as_u64);
                let end = m.get("end").and_then(Value::as_u64);
                match (start, end) {
                    (Some(start), Some(end)) => Ok(SurfaceOp::Replace { start, end }),
                    _ => Err(bad("has a replace surfaceOp without integer start and end")),
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
#[derive(Debug, Default)]
pub struct Surface {
    links: SeqMap<Links>,
    head: Option<u64>,
    tail: Option<u64>,
}

impl Surface {
    /// An empty surface.
    pub fn new() -> Self {
        Surface::default()
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
