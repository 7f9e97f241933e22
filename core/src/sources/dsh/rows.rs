//! One log line after the header: an event, or (v0 and v1 only, see
//! [`Generation::has_packed_rows`](super::generation::Generation::has_packed_rows))
//! a packed run of `assistant/chunk` events.
//!
//! An event is `{"type","seq","time","data",...}` (plus `surfaceOp` and
//! `sourceEventSeqs` on surface-eligible types, and `ignorable`).
//! `sourceEventSeqs` is stored in its range form: each entry is a seq or a
//! `[start, end]` pair standing for the inclusive run. A packed chunk row is
//! `{"type":"text-chunks"|"reasoning-chunks"|"tool-call-chunks","seq0","time0","data":{"dt":[..],"texts"|"args":[..],..}}`
//! and stands for the `assistant/chunk` events `seq0 .. seq0+n-1`, one per
//! member. Lines are parsed with typed deserializers that skip everything the
//! store does not need, without building a JSON tree.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::message::{MessageFacts, CHECKED_TYPES};
use crate::json::read::Reader;

/// The packed chunk row types.
pub const PACKED_TYPES: [&str; 3] = ["text-chunks", "reasoning-chunks", "tool-call-chunks"];

/// The envelope keys of an event line; v4 admits no other.
pub const ENVELOPE_KEYS: [&str; 7] = ["type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"];

/// `sourceEventSeqs` as stored: inclusive runs `[start, end]` (a plain seq
/// is the run `[n, n]`), in the stored order.
pub type SeqRuns = Vec<[u64; 2]>;

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
        /// Its `sourceEventSeqs`, if present (checked by the loader).
        source_seqs: Option<SeqRuns>,
        /// The first key that is not an envelope key ([`ENVELOPE_KEYS`]), if any.
        extra_key: Option<String>,
        /// What the generation checks need of `data`, when the fast path
        /// read it on the way (types in [`CHECKED_TYPES`] only; otherwise
        /// [`facts_of`](super::message::facts_of) reads it).
        facts: Option<Box<MessageFacts>>,
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
    #[serde(rename = "sourceEventSeqs", default)]
    source_seqs: Option<Vec<SeqRef>>,
}

/// One stored `sourceEventSeqs` entry.
#[derive(Deserialize)]
#[serde(untagged)]
enum SeqRef {
    One(u64),
    Run([u64; 2]),
}

impl SeqRef {
    fn run(&self) -> [u64; 2] {
        match *self {
            SeqRef::One(n) => [n, n],
            SeqRef::Run(r) => r,
        }
    }
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

/// The first key of an object, in line order, that is not an envelope key.
struct FirstExtraKey(Option<String>);

impl<'de> Deserialize<'de> for FirstExtraKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FirstExtraKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<FirstExtraKey, A::Error> {
                let mut first = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    map.next_value::<IgnoredAny>()?;
                    if first.is_none() && !ENVELOPE_KEYS.contains(&&*key) {
                        first = Some(key.into_owned());
                    }
                }
                Ok(FirstExtraKey(first))
            }
        }
        d.deserialize_map(V)
    }
}

/// Parses one line (already checked to be UTF-8). The error says why the
/// line is not a valid event or packed row.
pub fn parse_row(line: &[u8]) -> Result<Row<'_>, String> {
    match fast_event(line) {
        Some(row) => Ok(row),
        None => parse_row_serde(line),
    }
}

/// The typed parse of a line, for every line [`fast_event`] leaves alone.
fn parse_row_serde(line: &[u8]) -> Result<Row<'_>, String> {
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
    let source_seqs = head.source_seqs.map(|refs| refs.iter().map(SeqRef::run).collect());
    let extra_key = serde_json::from_slice::<FirstExtraKey>(line).ok().and_then(|k| k.0);
    Ok(Row::Event { seq, kind: head.kind, surface_op: head.surface_op, source_seqs, extra_key, facts: None })
}

/// Reads the common event line without serde: `{"type":"…","seq":N,…}`
/// whose keys and `type` have no escapes, whose `seq` (and `seq0`, if
/// present) is a plain integer or `null`, and whose `surfaceOp`, if present,
/// is `"append"` or `null`. Every other value is skipped and validated by
/// the shared reader (`json::read`), whose grammar is serde_json's.
///
/// It answers only when sure: for everything it accepts, [`parse_row_serde`]
/// gives the same row; anything else (packed rows, a second header, escapes,
/// duplicate known keys, a replace marker, malformed JSON, ...) gives
/// `None`, and the caller falls back to [`parse_row_serde`], which gives the
/// exact answer and error.
fn fast_event(line: &[u8]) -> Option<Row<'_>> {
    let mut p = Scan { r: Reader::new(line) };
    p.eat(b'{')?;
    let (mut kind, mut seq, mut seq0, mut op, mut runs) = (None, None, None, None, None);
    let mut extra_key: Option<&[u8]> = None;
    let mut facts = None;
    let mut data_seen = false;
    loop {
        let key = p.plain_string()?;
        p.eat(b':')?;
        match key {
            b"type" if kind.is_none() => kind = Some(std::str::from_utf8(p.plain_string()?).ok()?),
            b"seq" if seq.is_none() => seq = Some(p.optional_u64()?),
            b"seq0" if seq0.is_none() => {
                // Not an event key: an event that has it names it as its extra key.
                extra_key = extra_key.or(Some(&b"seq0"[..]));
                seq0 = Some(p.optional_u64()?)
            }
            b"surfaceOp" if op.is_none() => {
                op = Some(if p.literal(b"\"append\"") {
                    Some(Value::String("append".to_owned()))
                } else if p.literal(b"null") {
                    None
                } else {
                    return None;
                })
            }
            b"sourceEventSeqs" if runs.is_none() => runs = Some(p.seq_runs()?),
            b"data" if !data_seen => {
                data_seen = true;
                match kind {
                    Some(k) if CHECKED_TYPES.contains(&k) => {
                        facts = Some(Box::new(p.message_facts(k == "user/message")?))
                    }
                    _ => p.skip_value()?,
                }
            }
            b"type" | b"seq" | b"seq0" | b"surfaceOp" | b"sourceEventSeqs" | b"data" => return None,
            other => {
                if extra_key.is_none() && !ENVELOPE_KEYS.iter().any(|k| k.as_bytes() == other) {
                    extra_key = Some(other);
                }
                p.skip_value()?
            }
        }
        if p.eat_byte(b',') {
            continue;
        }
        p.eat(b'}')?;
        break;
    }
    p.r.end().ok()?;
    let kind = kind?;
    if PACKED_TYPES.contains(&kind) || kind == "session" {
        return None;
    }
    // A key without escapes is valid UTF-8 (the line is).
    let extra_key = match extra_key {
        Some(k) => Some(std::str::from_utf8(k).ok()?.to_owned()),
        None => None,
    };
    // `data` read before `type` was only skipped.
    let facts = facts.filter(|_| CHECKED_TYPES.contains(&kind));
    Some(Row::Event {
        seq: seq??,
        kind: Cow::Borrowed(kind),
        surface_op: op.flatten(),
        source_seqs: runs,
        extra_key,
        facts,
    })
}

/// A cursor for [`fast_event`] over the shared validating JSON reader
/// ([`crate::json::read::Reader`]); every method returns `None` when the
/// input is not what it accepts, and the caller falls back to serde.
struct Scan<'a> {
    r: Reader<'a>,
}

/// How deep [`Scan::skip_value`] follows nesting before it leaves the line
/// to the typed fallback (as the store's reader always did).
const SKIP_DEPTH: usize = 64;

impl<'a> Scan<'a> {
    /// The next byte after whitespace.
    fn peek(&mut self) -> Option<u8> {
        self.r.peek()
    }

    /// Consumes `b`, or fails.
    fn eat(&mut self, b: u8) -> Option<()> {
        self.r.eat(b).then_some(())
    }

    /// Consumes `b` if it is next.
    fn eat_byte(&mut self, b: u8) -> bool {
        self.r.eat(b)
    }

    fn literal(&mut self, lit: &[u8]) -> bool {
        self.r.eat_literal(lit)
    }

    /// A string without escapes; its content.
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        if self.peek()? != b'"' {
            return None;
        }
        let s = self.r.maybe_string().ok()??;
        (!s.escaped).then(|| s.inner())
    }

    /// `null` or a non-negative integer that fits a `u64`.
    fn optional_u64(&mut self) -> Option<Option<u64>> {
        let Some(lit) = self.r.number_or_null("").ok()?.ok()? else { return Some(None) };
        if !lit.iter().all(u8::is_ascii_digit) {
            return None; // a sign, a fraction or an exponent
        }
        lit.iter().try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0'))).map(Some)
    }

    /// A `sourceEventSeqs` array of plain integers and `[integer, integer]`
    /// pairs, as runs.
    fn seq_runs(&mut self) -> Option<SeqRuns> {
        self.eat(b'[')?;
        let mut runs = Vec::new();
        if self.eat_byte(b']') {
            return Some(runs);
        }
        loop {
            if self.eat_byte(b'[') {
                let start = self.optional_u64()??;
                self.eat(b',')?;
                let end = self.optional_u64()??;
                self.eat(b']')?;
                runs.push([start, end]);
            } else {
                let n = self.optional_u64()??;
                runs.push([n, n]);
            }
            if self.eat_byte(b',') {
                continue;
            }
            self.eat(b']')?;
            return Some(runs);
        }
    }

    /// An object, `f` reading the value of each key (keys without escapes
    /// only).
    fn object(&mut self, mut f: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.eat_byte(b'}') {
            return Some(());
        }
        loop {
            let key = self.plain_string()?;
            self.eat(b':')?;
            f(self, key)?;
            if self.eat_byte(b',') {
                continue;
            }
            return self.eat(b'}');
        }
    }

    /// `null` or a string without escapes.
    fn optional_plain_string(&mut self) -> Option<Option<&'a str>> {
        if self.literal(b"null") {
            return Some(None);
        }
        Some(Some(std::str::from_utf8(self.plain_string()?).ok()?))
    }

    /// `null` or `{"kind": …}`: the kind, when a string.
    fn source_kind(&mut self) -> Option<Option<String>> {
        if self.literal(b"null") {
            return Some(None);
        }
        let mut kind: Option<Option<&str>> = None;
        self.object(|p, key| match key {
            b"kind" if kind.is_none() => {
                kind = Some(p.optional_plain_string()?);
                Some(())
            }
            b"kind" => None,
            _ => p.skip_value(),
        })?;
        Some(kind.flatten().map(str::to_owned))
    }

    /// The [`MessageFacts`] of a message event's `data`, as
    /// [`facts_of`](super::message::facts_of) reads them; `None` for
    /// anything it would read differently or refuse (duplicate keys, keys
    /// with escapes, values of other types), so the caller falls back.
    fn message_facts(&mut self, user: bool) -> Option<MessageFacts> {
        let mut facts = MessageFacts::default();
        let mut seen = (false, false, false, false);
        if user {
            self.object(|p, key| match key {
                b"source" if !seen.0 => {
                    seen.0 = true;
                    facts.source_kind = p.source_kind()?;
                    Some(())
                }
                b"source" => None,
                _ => p.skip_value(),
            })?;
            return Some(facts);
        }
        let mut message_seen = false;
        self.object(|p, key| match key {
            b"message" if !message_seen => {
                message_seen = true;
                if p.literal(b"null") {
                    return Some(());
                }
                facts.has_message = true;
                p.object(|p, key| match key {
                    b"role" if !seen.0 => {
                        seen.0 = true;
                        facts.role = p.optional_plain_string()?.map(str::to_owned);
                        Some(())
                    }
                    b"source" if !seen.1 => {
                        seen.1 = true;
                        facts.source_kind = p.source_kind()?;
                        Some(())
                    }
                    b"toolCallId" if !seen.2 => {
                        seen.2 = true;
                        facts.tool_call_id = !p.literal(b"null");
                        if facts.tool_call_id {
                            p.skip_value()?;
                        }
                        Some(())
                    }
                    b"content" if !seen.3 => {
                        seen.3 = true;
                        p.content_blocks(&mut facts)
                    }
                    b"role" | b"source" | b"toolCallId" | b"content" => None,
                    _ => p.skip_value(),
                })
            }
            b"message" => None,
            _ => p.skip_value(),
        })?;
        Some(facts)
    }

    /// `null` or an array of objects (content blocks): into `facts`, whether
    /// one has `"type":"tool-result"` and the ids of the `tool-call` ones.
    fn content_blocks(&mut self, facts: &mut MessageFacts) -> Option<()> {
        if self.literal(b"null") {
            return Some(());
        }
        self.eat(b'[')?;
        if self.eat_byte(b']') {
            return Some(());
        }
        loop {
            if self.peek()? != b'{' {
                return None;
            }
            let (mut kind, mut id): (Option<Option<&str>>, Option<Option<&str>>) = (None, None);
            self.object(|p, key| match key {
                b"type" if kind.is_none() => {
                    kind = Some(p.optional_plain_string()?);
                    Some(())
                }
                b"id" if id.is_none() => {
                    id = Some(p.optional_plain_string()?);
                    Some(())
                }
                b"type" | b"id" => None,
                _ => p.skip_value(),
            })?;
            match kind.flatten() {
                Some("tool-result") => facts.tool_result_block = true,
                Some("tool-call") => facts.tool_call_ids.extend(id.flatten().map(str::to_owned)),
                _ => {}
            }
            if self.eat_byte(b',') {
                continue;
            }
            return self.eat(b']');
        }
    }

    /// Any JSON value, validated, nested at most [`SKIP_DEPTH`] deep.
    fn skip_value(&mut self) -> Option<()> {
        self.r.skip_within(SKIP_DEPTH).ok()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_packed_rows() {
        let row = parse_row(br#"{"type":"user/message","seq":4,"time":1,"data":{},"surfaceOp":"append"}"#).unwrap();
        assert_eq!(
            row,
            Row::Event {
                seq: 4,
                kind: "user/message".into(),
                surface_op: Some(Value::from("append")),
                source_seqs: None,
                extra_key: None,
                facts: Some(Box::default()),
            }
        );
        let row = parse_row(br#"{"type":"tool/result","seq":9,"sourceEventSeqs":[1,[3,6],8],"x":1,"y":2}"#).unwrap();
        let Row::Event { source_seqs, extra_key, .. } = row else { panic!() };
        assert_eq!(source_seqs, Some(vec![[1, 1], [3, 6], [8, 8]]));
        assert_eq!(extra_key.as_deref(), Some("x"));
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

    /// Whatever the fast reader accepts, the typed parse accepts as the
    /// same row: checked on tricky lines and on every one-byte edit of them.
    #[test]
    fn fast_reader_agrees_with_serde() {
        let lines: &[&[u8]] = &[
            br#"{"type":"user/message","seq":4,"time":1,"data":{"a":[1,-2.5e+3,true,false,null,{},[]],"b":"x\"\\\/\b\f\n\r\t\u00e9y"},"surfaceOp":"append"}"#,
            br#" { "type" : "turn/end" , "seq" : 0 , "data" : { "k" : [ 1 , { "z" : "" } ] } , "surfaceOp" : null } "#,
            br#"{"seq":18446744073709551615,"type":"x","seq0":null,"data":[[[]]],"n":0.5,"m":-0,"e":1E9}"#,
            br#"{"type":"assistant/message","seq":12,"sourceEventSeqs":[3,4],"surfaceOp":{"op":"replace","start":1,"end":2}}"#,
            br#"{"type":"tool/result","seq":12,"sourceEventSeqs":[ 3 , [4, 9],10],"zz":{"a":1},"aa":2,"surfaceOp":"append"}"#,
            br#"{"type":"tool/result","seq":12,"sourceEventSeqs":[[4,9,1]],"data":{}}"#,
            br#"{"type":"tool/result","seq":5,"time":1,"data":{"turn":1,"message":{"role":"tool","source":{"kind":"tool","callId":"c"},"toolCallId":"c","content":[{"type":"text","text":"x\n"},{"type":"tool-result","content":[]}],"id":"t"}},"surfaceOp":"append"}"#,
            br#"{"type":"user/message","seq":5,"time":1,"data":{"content":[{"type":"text","text":"x"}],"source":{"kind":"compact-checkpoint","id":null},"role":"user"},"surfaceOp":"append"}"#,
            br#"{"type":"system/message","seq":5,"data":{"message":{"role":null,"source":null,"toolCallId":null,"content":null}},"surfaceOp":"append"}"#,
            br#"{"type":"developer/message","seq":5,"data":{"message":null},"surfaceOp":"append"}"#,
            br#"{"type":"assistant/message","seq":5,"data":{"turn":1,"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool-call","id":"c1","name":"x","arguments":"{}"},{"type":"tool-call","name":"y","id":"c2"}],"source":{"kind":"model"}}},"surfaceOp":"append"}"#,
            br#"{"type":"text-chunks","seq0":10,"time0":1,"data":{"dt":[0,1],"texts":["a","b"]}}"#,
            br#"{"type":"session","version":0,"id":"x","createdAt":1}"#,
            br#"{"type":"a","seq":1,"type":"b"}"#,
            br#"{"ty\u0070e":"a","seq":1}"#,
            br#"{"type":"a\u0062","seq":1}"#,
            br#"{"type":"a","seq":18446744073709551616}"#,
            br#"{"type":"a","seq":01}"#,
            br#"{"type":"a","seq":1.0}"#,
            br#"{"type":"a","seq":1e0}"#,
            br#"{"type":"a","seq":-1}"#,
            br#"{"type":"a","seq":1,"d":"\ud800"}"#,
            br#"{"type":"a","seq":1,"d":[1,]}"#,
            br#"{"type":"a","seq":1,"d":{"x":1,}}"#,
            br#"{"type":"a","seq":1,}"#,
            br#"{"type":"a","seq":1} x"#,
            b"{\"type\":\"a\",\"seq\":1,\"d\":\"tab\there\"}",
            b"{\"type\":\"a\",\t\"seq\":1}",
            br#"["a",1]"#,
            br#"{}"#,
        ];
        let replacements = b" \"\\{}[]:,.-+0123456789eEnultrfasx/";
        let check = |line: &[u8]| {
            if std::str::from_utf8(line).is_err() {
                return;
            }
            if let Some(mut row) = fast_event(line) {
                if let Row::Event { kind, facts, .. } = &mut row {
                    if let Some(fast) = facts.take() {
                        let typed = super::super::message::facts_of(kind, line);
                        assert_eq!(typed.as_ref(), Ok(&*fast), "{}", String::from_utf8_lossy(line));
                    }
                }
                assert_eq!(parse_row_serde(line).as_ref(), Ok(&row), "{}", String::from_utf8_lossy(line));
            }
        };
        for line in lines {
            check(line);
            let without_facts = |mut row: Row<'static>| {
                if let Row::Event { facts, .. } = &mut row {
                    *facts = None;
                }
                row
            };
            let line: &'static [u8] = line;
            assert_eq!(
                parse_row(line).map(without_facts).map_err(|_| ()),
                parse_row_serde(line).map_err(|_| ()),
                "{}",
                String::from_utf8_lossy(line)
            );
            for i in 0..line.len() {
                let mut cut = line.to_vec();
                cut.remove(i);
                check(&cut);
                check(&line[..i]);
                for &r in replacements {
                    let mut edited = line.to_vec();
                    edited[i] = r;
                    check(&edited);
                    edited.insert(i, r);
                    check(&edited);
                }
            }
        }
        // Nesting deeper than the fast reader follows falls back to serde,
        // which skips ignored values at any depth.
        for depth in [63, 64, 65, 10_000] {
            let line = format!(r#"{{"type":"a","seq":1,"d":{}0{}}}"#, "[".repeat(depth), "]".repeat(depth));
            check(line.as_bytes());
            assert_eq!(fast_event(line.as_bytes()).is_some(), depth <= 64, "{depth}");
            assert!(parse_row(line.as_bytes()).is_ok(), "{depth}");
        }
        // The common lines take the fast path.
        assert!(fast_event(lines[0]).is_some());
        assert!(fast_event(lines[1]).is_some());
        assert!(fast_event(lines[2]).is_some());
        assert!(fast_event(lines[4]).is_some(), "sourceEventSeqs in its range form");
        for line in &lines[6..11] {
            let row = fast_event(line).unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(line)));
            assert!(matches!(row, Row::Event { facts: Some(_), .. }), "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn turn_end_detection() {
        assert!(may_be_turn_end(br#"{"type":"turn/end","seq":3}"#));
        assert!(!may_be_turn_end(br#"{"type":"step/end","seq":3,"data":{"x":"turn/end"}}"#));
        assert!(may_be_turn_end(br#"{"type":"turn/end","seq":"#));
    }
}
