//! One log line after the header: an event, or a packed run of
//! `assistant/chunk` events.
//!
//! An event is `{"type","seq","time","data",...}` (plus `surfaceOp` and
//! `sourceEventSeqs` on surface-eligible types). A packed chunk row is
//! `{"type":"text-chunks"|"reasoning-chunks"|"tool-call-chunks","seq0","time0","data":{"dt":[..],"texts"|"args":[..],..}}`
//! and stands for the `assistant/chunk` events `seq0 .. seq0+n-1`, one per
//! member. Lines are parsed with typed deserializers that skip everything the
//! store does not need, without building a JSON tree.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// The packed chunk row types.
pub const PACKED_TYPES: [&str; 3] = ["text-chunks", "reasoning-chunks", "tool-call-chunks"];

/// A parsed line.
#[derive(Debug, PartialEq)]
pub enum Row<'a> {
    /// One event.
    Event {
        /// Its seq.
        seq: u64,
        /// Its type, e.g. `user/message`.
        kind: Cow<'a, str>,
        /// Its `surfaceOp` marker, if any (validated by the fold).
        surface_op: Option<Value>,
    },
    /// A packed run of `assistant/chunk` events.
    Packed {
        /// The seq of the first member.
        seq0: u64,
        /// How many members (events) the row stands for; at least 1.
        members: u64,
    },
}

impl Row<'_> {
    /// The seq of the first event the row stands for.
    pub fn first_seq(&self) -> u64 {
        match self {
            Row::Event { seq, .. } => *seq,
            Row::Packed { seq0, .. } => *seq0,
        }
    }

    /// How many events the row stands for.
    pub fn event_count(&self) -> u64 {
        match self {
            Row::Event { .. } => 1,
            Row::Packed { members, .. } => *members,
        }
    }
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    seq: Option<u64>,
    #[serde(default)]
    seq0: Option<u64>,
    #[serde(rename = "surfaceOp", default)]
    surface_op: Option<Value>,
}

/// Counts the elements of a JSON array without keeping them.
struct Count(u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(Deserialize)]
struct PackedLine {
    data: PackedData,
}

#[derive(Deserialize)]
struct PackedData {
    #[serde(default)]
    texts: Option<Count>,
    #[serde(default)]
    args: Option<Count>,
}

/// Parses one line (already checked to be UTF-8). The error says why the
/// line is not a valid event or packed row.
pub fn parse_row(line: &[u8]) -> Result<Row<'_>, String> {
    let head: Head<'_> = serde_json::from_slice(line).map_err(|e| format!("not a valid event line: {e}"))?;
    if PACKED_TYPES.contains(&&*head.kind) {
        let seq0 = head.seq0.ok_or_else(|| format!("packed `{}` row without an integer `seq0`", head.kind))?;
        let packed: PackedLine =
            serde_json::from_slice(line).map_err(|e| format!("malformed packed `{}` row: {e}", head.kind))?;
        let members = match (packed.data.texts, packed.data.args) {
            (Some(Count(n)), None) | (None, Some(Count(n))) => n,
            _ => return Err(format!("packed `{}` row needs exactly one of `data.texts` and `data.args`", head.kind)),
        };
        if members == 0 {
            return Err(format!("packed `{}` row has no members", head.kind));
        }
        return Ok(Row::Packed { seq0, members });
    }
    if head.kind == "session" {
        return Err("a second session header".into());
    }
    let seq = head.seq.ok_or_else(|| format!("`{}` event without an integer `seq`", head.kind))?;
    Ok(Row::Event { seq, kind: head.kind, surface_op: head.surface_op })
}

/// The top-level `type` of a line, if it has one (used to look for a
/// `turn/end` after a broken line).
pub fn line_type(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct TypeOnly {
        #[serde(rename = "type")]
        kind: String,
    }
    serde_json::from_slice::<TypeOnly>(line).ok().map(|t| t.kind)
}

/// Whether a line is, or for an unparseable line may be, a `turn/end`.
pub fn may_be_turn_end(line: &[u8]) -> bool {
    match line_type(line) {
        Some(kind) => kind == "turn/end",
        None => line.windows(b"turn/end".len()).any(|w| w == b"turn/end"),
    }
}

/// The `callId` of a `tool/call` event (`data.callId`), if readable.
pub fn tool_call_id(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Line {
        data: CallData,
    }
    #[derive(Deserialize)]
    struct CallData {
        #[serde(rename = "callId")]
        call_id: String,
    }
    serde_json::from_slice::<Line>(line).ok().map(|l| l.data.call_id)
}

/// The call id a `tool/result` event answers (`data.message.source.callId`),
/// if readable.
pub fn tool_result_call_id(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Line {
        data: ResultData,
    }
    #[derive(Deserialize)]
    struct ResultData {
        message: Message,
    }
    #[derive(Deserialize)]
    struct Message {
        source: Source,
    }
    #[derive(Deserialize)]
    struct Source {
        #[serde(rename = "callId")]
        call_id: String,
    }
    serde_json::from_slice::<Line>(line).ok().map(|l| l.data.message.source.call_id)
}

/// Deserializes any JSON value, keeping it only when it is a string.
pub(crate) struct StringOrOther(pub Option<String>);

impl<'de> Deserialize<'de> for StringOrOther {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StringOrOther;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StringOrOther(Some(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(StringOrOther(Some(v)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(StringOrOther(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(StringOrOther(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(StringOrOther(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(StringOrOther(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(StringOrOther(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(StringOrOther(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(StringOrOther(None))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(StringOrOther(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_packed_rows() {
        let row = parse_row(br#"{"type":"user/message","seq":4,"time":1,"data":{},"surfaceOp":"append"}"#).unwrap();
        assert_eq!(row, Row::Event { seq: 4, kind: "user/message".into(), surface_op: Some(Value::from("append")) });
        let row =
            parse_row(br#"{"type":"text-chunks","seq0":10,"time0":1,"data":{"dt":[0,1],"texts":["a","b"]}}"#).unwrap();
        assert_eq!(row, Row::Packed { seq0: 10, members: 2 });
        assert_eq!(row.event_count(), 2);
        let row =
            parse_row(br#"{"type":"tool-call-chunks","seq0":3,"time0":1,"data":{"dt":[0],"args":["{"]}}"#).unwrap();
        assert_eq!(row, Row::Packed { seq0: 3, members: 1 });
        assert!(parse_row(br#"{"type":"text-chunks","seq0":1,"data":{"texts":[]}}"#).is_err());
        assert!(parse_row(br#"{"type":"text-chunks","seq":1,"data":{"texts":["a"]}}"#).is_err());
        assert!(parse_row(br#"{"type":"x","seq":"1"}"#).is_err());
        assert!(parse_row(br#"{"type":"x","seq":-1}"#).is_err());
        assert!(parse_row(b"not json").is_err());
    }

    #[test]
    fn turn_end_detection() {
        assert!(may_be_turn_end(br#"{"type":"turn/end","seq":3}"#));
        assert!(!may_be_turn_end(br#"{"type":"step/end","seq":3,"data":{"x":"turn/end"}}"#));
        assert!(may_be_turn_end(br#"{"type":"turn/end","seq":"#));
    }

    #[test]
    fn call_ids() {
        assert_eq!(tool_call_id(br#"{"type":"tool/call","data":{"callId":"c1"}}"#).as_deref(), Some("c1"));
        let result = br#"{"type":"tool/result","data":{"message":{"source":{"kind":"tool","callId":"c1"}}}}"#;
        assert_eq!(tool_result_call_id(result).as_deref(), Some("c1"));
    }
}
