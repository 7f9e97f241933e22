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
    Ok(Row::Event { seq, kind: head.kind, surface_op: head.surface_op, source_seqs, extra_key })
}

/// Reads the common event line without serde: `{"type":"…","seq":N,…}`
/// whose keys and `type` have no escapes, whose `seq` (and `seq0`, if
/// present) is a plain integer or `null`, whose `surfaceOp`, if present, is
/// `"append"` or `null`, and whose only whitespace is the space. Every
/// other value is skipped and
/// validated with serde_json's grammar for ignored values.
///
/// It answers only when sure: for everything it accepts, [`parse_row_serde`]
/// gives the same row; anything else (packed rows, a second header, escapes,
/// duplicate known keys, a replace marker, malformed JSON, ...) gives
/// `None`, and the caller falls back to [`parse_row_serde`], which gives the
/// exact answer and error.
fn fast_event(line: &[u8]) -> Option<Row<'_>> {
    let mut p = Scan { s: line, i: 0 };
    p.spaces();
    p.eat(b'{')?;
    let (mut kind, mut seq, mut seq0, mut op, mut runs) = (None, None, None, None, None);
    let mut extra_key: Option<&[u8]> = None;
    loop {
        p.spaces();
        let key = p.plain_string()?;
        p.spaces();
        p.eat(b':')?;
        p.spaces();
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
            b"type" | b"seq" | b"seq0" | b"surfaceOp" | b"sourceEventSeqs" => return None,
            other => {
                if extra_key.is_none() && !ENVELOPE_KEYS.iter().any(|k| k.as_bytes() == other) {
                    extra_key = Some(other);
                }
                p.skip_value()?
            }
        }
        p.spaces();
        match p.next()? {
            b',' => {}
            b'}' => break,
            _ => return None,
        }
    }
    p.spaces();
    if p.i != line.len() {
        return None;
    }
    let kind = kind?;
    if PACKED_TYPES.contains(&kind) || kind == "session" {
        return None;
    }
    // A key without escapes is valid UTF-8 (the line is).
    let extra_key = match extra_key {
        Some(k) => Some(std::str::from_utf8(k).ok()?.to_owned()),
        None => None,
    };
    Some(Row::Event { seq: seq??, kind: Cow::Borrowed(kind), surface_op: op.flatten(), source_seqs: runs, extra_key })
}

/// The first byte of `s` that stops a string: `"`, `\\` or a control
/// character (which serde_json refuses in a string), eight bytes at a time.
fn string_stop(s: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = s.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let quote = x ^ (ONES * u64::from(b'"'));
        let backslash = x ^ (ONES * u64::from(b'\\'));
        // The lowest flagged byte of each term is exact (higher ones may be
        // false positives of the borrow), so the lowest of all is too.
        let found = (quote.wrapping_sub(ONES) & !quote
            | backslash.wrapping_sub(ONES) & !backslash
            | x.wrapping_sub(ONES * 0x20) & !x)
            & HIGH;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks.remainder().iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).map(|i| at + i)
}

/// A cursor for [`fast_event`]; every method returns `None` when the input
/// is not what it accepts.
struct Scan<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }

    fn spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.i += 1;
        }
    }

    fn literal(&mut self, lit: &[u8]) -> bool {
        let found = self.s[self.i..].starts_with(lit);
        if found {
            self.i += lit.len();
        }
        found
    }

    /// A string without escapes; its content.
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let rest = &self.s[self.i..];
        let end = string_stop(rest)?;
        if rest[end] != b'"' {
            return None;
        }
        self.i += end + 1;
        Some(&rest[..end])
    }

    /// `null` or a non-negative integer that fits a `u64`.
    fn optional_u64(&mut self) -> Option<Option<u64>> {
        if self.literal(b"null") {
            return Some(None);
        }
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.i += 1;
        }
        let digits = self.i - start;
        if digits == 0 || (digits > 1 && self.s[start] == b'0') || matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(Some(n))
    }

    /// A `sourceEventSeqs` array of plain integers and `[integer, integer]`
    /// pairs, as runs.
    fn seq_runs(&mut self) -> Option<SeqRuns> {
        self.eat(b'[')?;
        let mut runs = Vec::new();
        self.spaces();
        if self.literal(b"]") {
            return Some(runs);
        }
        loop {
            self.spaces();
            if self.literal(b"[") {
                self.spaces();
                let start = self.optional_u64()??;
                self.spaces();
                self.eat(b',')?;
                self.spaces();
                let end = self.optional_u64()??;
                self.spaces();
                self.eat(b']')?;
                runs.push([start, end]);
            } else {
                let n = self.optional_u64()??;
                runs.push([n, n]);
            }
            self.spaces();
            match self.next()? {
                b',' => {}
                b']' => return Some(runs),
                _ => return None,
            }
        }
    }

    /// The rest of a string whose opening quote was read.
    fn skip_string(&mut self) -> Option<()> {
        loop {
            let at = self.i + string_stop(&self.s[self.i..])?;
            match self.s[at] {
                b'"' => {
                    self.i = at + 1;
                    return Some(());
                }
                b'\\' => {}
                _ => return None,
            }
            match *self.s.get(at + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i = at + 2,
                b'u' => {
                    let hex = self.s.get(at + 2..at + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    self.i = at + 6;
                }
                _ => return None,
            }
        }
    }

    /// A number, in JSON's grammar.
    fn skip_number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {
                if self.peek().is_some_and(|b| b.is_ascii_digit()) {
                    return None;
                }
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.i;
        self.digits();
        (self.i > start).then_some(())
    }

    /// An object key and its colon.
    fn key(&mut self) -> Option<()> {
        self.spaces();
        self.eat(b'"')?;
        self.skip_string()?;
        self.spaces();
        self.eat(b':')
    }

    /// Any JSON value, nested at most 64 deep.
    fn skip_value(&mut self) -> Option<()> {
        // One bit per open container, 1 for an object.
        let (mut stack, mut depth) = (0u64, 0u32);
        loop {
            self.spaces();
            let mut opened = None;
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    self.skip_string()?;
                }
                b @ (b'{' | b'[') => {
                    self.i += 1;
                    if depth == 64 {
                        return None;
                    }
                    let object = b == b'{';
                    stack = stack << 1 | u64::from(object);
                    depth += 1;
                    self.spaces();
                    if self.peek() == Some(if object { b'}' } else { b']' }) {
                        self.i += 1;
                        stack >>= 1;
                        depth -= 1;
                    } else {
                        opened = Some(object);
                    }
                }
                b't' => self.literal(b"true").then_some(())?,
                b'f' => self.literal(b"false").then_some(())?,
                b'n' => self.literal(b"null").then_some(())?,
                b'-' | b'0'..=b'9' => self.skip_number()?,
                _ => return None,
            }
            match opened {
                Some(true) => {
                    self.key()?;
                    continue;
                }
                Some(false) => continue,
                None => {}
            }
            // A value ended: close containers until one takes another value.
            loop {
                if depth == 0 {
                    return Some(());
                }
                self.spaces();
                let object = stack & 1 == 1;
                match self.next()? {
                    b',' => {
                        if object {
                            self.key()?;
                        }
                        break;
                    }
                    b'}' if object => {}
                    b']' if !object => {}
                    _ => return None,
                }
                stack >>= 1;
                depth -= 1;
            }
        }
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
                extra_key: None
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
            if let Some(row) = fast_event(line) {
                assert_eq!(parse_row_serde(line).as_ref(), Ok(&row), "{}", String::from_utf8_lossy(line));
            }
        };
        for line in lines {
            check(line);
            assert_eq!(
                parse_row(line).map_err(|_| ()),
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
        // The common lines take the fast path.
        assert!(fast_event(lines[0]).is_some());
        assert!(fast_event(lines[1]).is_some());
        assert!(fast_event(lines[2]).is_some());
        assert!(fast_event(lines[4]).is_some(), "sourceEventSeqs in its range form");
    }

    #[test]
    fn string_stops() {
        let naive = |s: &[u8]| s.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
        let mut bytes: Vec<u8> = (0..=255u8).collect();
        bytes.extend((0..=255u8).rev());
        for start in 0..bytes.len() {
            for len in [0, 1, 7, 8, 9, 16, 17, 40] {
                let s = &bytes[start..(start + len).min(bytes.len())];
                assert_eq!(string_stop(s), naive(s));
            }
        }
        for stop in [b'"', b'\\', 0, 0x1f] {
            for at in 0..23 {
                let mut s = vec![b'a'; 24];
                s[at] = stop;
                s[23] = b'"';
                assert_eq!(string_stop(&s), Some(at));
                s[at] = 0xff;
                assert_eq!(string_stop(&s), Some(23));
            }
        }
    }

    #[test]
    fn turn_end_detection() {
        assert!(may_be_turn_end(br#"{"type":"turn/end","seq":3}"#));
        assert!(!may_be_turn_end(br#"{"type":"step/end","seq":3,"data":{"x":"turn/end"}}"#));
        assert!(may_be_turn_end(br#"{"type":"turn/end","seq":"#));
    }
}
