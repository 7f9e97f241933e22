//! The format generations of DSH session logs and what differs between them.
//!
//! | generation | written by | file |
//! |---|---|---|
//! | v0 | DSH 0.1.1 … 0.1.2 | `session.jsonl[.zstd]` |
//! | v1 | no release (trunk only) | `session.v1.jsonl[.zstd]` |
//! | v2 | DSH 0.1.3 | `session.v2.jsonl[.zstd]` |
//! | v3 | DSH 0.1.5, 0.1.6 | `session.v3.jsonl[.zstd]` |
//! | v4 | DSH 0.1.7, 0.2 | `session.v4.jsonl[.zstd]` |
//!
//! Each rule that depends on the generation is one method here, so the
//! readers ([`header`](super::header), [`rows`](super::rows),
//! [`fold`](super::fold), [`message`](super::message)) ask instead of
//! comparing numbers.

use std::fmt;

/// The newest generation this reader implements. A log of a higher
/// generation is "unsupported: written by a newer DSH", not corrupt.
pub const NEWEST_GENERATION: u64 = 4;

/// A format generation this reader implements (v0 to v4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Generation(u8);

impl Generation {
    /// Generation v0, the format of DSH 0.1.1.
    pub const V0: Generation = Generation(0);
    /// Generation v4, the format of DSH 0.1.7 and 0.2.
    pub const V4: Generation = Generation(4);

    /// The generation numbered `n`, if this reader implements it.
    pub fn new(n: u64) -> Option<Generation> {
        (n <= NEWEST_GENERATION).then_some(Generation(n as u8))
    }

    /// Its number.
    pub fn number(self) -> u64 {
        u64::from(self.0)
    }

    /// Packed chunk rows (`text-chunks`, …) and top-level `assistant/chunk`
    /// events exist only in v0 and v1; from v2 streams are nested in
    /// `assistant/message.data.stream`.
    pub fn has_packed_rows(self) -> bool {
        self.0 <= 1
    }

    /// From v2 the header has a required boolean `isSeeded` and no
    /// `seedLength`.
    pub fn has_is_seeded(self) -> bool {
        self.0 >= 2
    }

    /// v4 admits exactly a fixed set of header keys.
    pub fn has_exact_header_keys(self) -> bool {
        self.0 >= 4
    }

    /// The keys of the replace marker `{"op":"replace",START,END}`:
    /// `start`/`end` up to v2, `startSeq`/`endSeq` from v3.
    pub fn replace_keys(self) -> (&'static str, &'static str) {
        if self.0 >= 3 {
            ("startSeq", "endSeq")
        } else {
            ("start", "end")
        }
    }

    /// Whether the replace marker must have exactly `op` and the two
    /// endpoint keys (v1 and later; v0 logs are read as DSH 0.1.1 read them).
    pub fn has_strict_markers(self) -> bool {
        self.0 >= 1
    }

    /// The surface-eligible event types: `user/message`,
    /// `assistant/message`, `tool/result`; `system/message` from v3;
    /// `developer/message` in v4.
    pub fn surface_types(self) -> &'static [&'static str] {
        const V0: &[&str] = &["user/message", "assistant/message", "tool/result"];
        const V3: &[&str] = &["user/message", "assistant/message", "tool/result", "system/message"];
        const V4: &[&str] =
            &["user/message", "assistant/message", "tool/result", "system/message", "developer/message"];
        match self.0 {
            0..=2 => V0,
            3 => V3,
            _ => V4,
        }
    }

    /// Whether log-only events must not carry `surfaceOp` (v2 and later).
    pub fn refuses_markers_on_log_events(self) -> bool {
        self.0 >= 2
    }

    /// From v3 the first surface node, while it is a `system/message`, is
    /// protected: only one `system/message` replacing exactly that node may
    /// replace it.
    pub fn has_protected_head(self) -> bool {
        self.0 >= 3
    }

    /// v4 message sources are producer-owned: `kind:"plugin"` is refused,
    /// the checkpoint marker is `kind:"compact-checkpoint"`.
    pub fn has_producer_owned_sources(self) -> bool {
        self.0 >= 4
    }

    /// v4 tool results have `role:"tool"` and a top-level `toolCallId`;
    /// earlier ones have `role:"user"` and a `tool-result` content block.
    pub fn has_tool_role_results(self) -> bool {
        self.0 >= 4
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// The message for a log of a generation above [`NEWEST_GENERATION`].
pub fn unsupported_message(generation: u64) -> String {
    let shown = if generation == u64::MAX { "a very large number".to_owned() } else { format!("v{generation}") };
    format!(
        "unsupported: written by a newer DSH (session format {shown}; this reader reads v0 to v{NEWEST_GENERATION})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_by_generation() {
        let g = |n| Generation::new(n).unwrap();
        assert!(g(1).has_packed_rows() && !g(2).has_packed_rows());
        assert_eq!(g(2).replace_keys(), ("start", "end"));
        assert_eq!(g(3).replace_keys(), ("startSeq", "endSeq"));
        assert_eq!(g(2).surface_types().len(), 3);
        assert!(g(3).surface_types().contains(&"system/message"));
        assert!(!g(3).surface_types().contains(&"developer/message"));
        assert!(g(4).surface_types().contains(&"developer/message"));
        assert!(Generation::new(5).is_none());
        assert_eq!(g(4).to_string(), "v4");
        assert!(unsupported_message(5).contains("newer DSH"));
    }
}
