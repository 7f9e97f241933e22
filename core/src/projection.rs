//! Projection of one surface snapshot into `{role, text}` items (SPEC §3).
//!
//! The snapshot is read with a typed, borrowing deserializer: texts without
//! escapes are borrowed from the input, and everything projection drops
//! (tool results, reasoning, unknown keys) is skipped without building values.
//! The same code reads JSON bytes and an in-memory [`Value`].

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Number, Value};

use crate::json::{string_len, write_string};
use std::marker::PhantomData;

/// Who said a projected item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A direct user message, steering, or a compaction checkpoint.
    User,
    /// Completed assistant text.
    Assistant,
}

impl Role {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One projected conversation item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item<'a> {
    /// Who said it.
    pub role: Role,
    /// Its visible text (never empty).
    pub text: ItemText<'a>,
    /// Whether it came from a compaction checkpoint (kept by retention).
    pub checkpoint: bool,
}

/// The visible text of an item: either decoded, or still the JSON string
/// literal it was read from (decoded only if retention keeps it). Its UTF-8
/// length and tag-safe serialized length are known either way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemText<'a> {
    repr: Repr<'a>,
    bytes: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Repr<'a> {
    Decoded(Cow<'a, str>),
    /// A valid JSON string literal, quotes included.
    Literal(&'a str),
}

impl<'a> ItemText<'a> {
    /// A text that is already decoded.
    pub fn decoded(text: Cow<'a, str>) -> Self {
        ItemText { bytes: text.len(), repr: Repr::Decoded(text) }
    }

    /// A text still in JSON form: `literal` is a JSON string literal with its
    /// quotes, as validated by the JSON reader.
    fn literal(literal: &'a str) -> Self {
        ItemText { repr: Repr::Literal(literal), bytes: literal_byte_len(literal) }
    }

    /// UTF-8 bytes of the decoded text.
    pub fn byte_len(&self) -> usize {
        self.bytes
    }

    /// Bytes of the decoded text written as a tag-safe JSON string literal,
    /// quotes included. Computed on each call (one pass over the text):
    /// retention asks only for the items it may keep.
    pub fn tag_safe_len(&self) -> usize {
        match &self.repr {
            Repr::Decoded(t) => string_len(t, true),
            Repr::Literal(lit) => literal_lengths(lit).1,
        }
    }

    /// The decoded text (borrowed from the input when it has no escapes).
    pub fn decode(&self) -> Result<Cow<'a, str>, String> {
        match &self.repr {
            Repr::Decoded(t) => Ok(t.clone()),
            Repr::Literal(lit) if !lit.contains('\\') => Ok(Cow::Borrowed(&lit[1..lit.len() - 1])),
            Repr::Literal(lit) => {
                serde_json::from_str::<String>(lit).map(Cow::Owned).map_err(|e| format!("malformed text: {e}"))
            }
        }
    }

    /// Appends the text as a tag-safe JSON string literal.
    pub fn write_tag_safe(&self, out: &mut String) -> Result<(), String> {
        match &self.repr {
            // Without escapes or `<`, the literal is already the canonical form.
            Repr::Literal(lit) if !lit.bytes().any(|b| b == b'\\' || b == b'<') => out.push_str(lit),
            _ => write_string(out, &self.decode()?, true),
        }
        Ok(())
    }
}

/// The decoded UTF-8 length of the text of a valid JSON string literal:
/// only its escapes need a look, found with `memchr`.
fn literal_byte_len(literal: &str) -> usize {
    let b = literal.as_bytes();
    let inner = &b[1..b.len() - 1];
    let mut bytes = inner.len();
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'\\', &inner[i..]) {
        let at = i + p;
        if inner[at + 1] != b'u' {
            bytes -= 1; // two bytes of escape, one byte of text
            i = at + 2;
            continue;
        }
        let hex = |s: &[u8]| s.iter().fold(0u32, |acc, h| acc * 16 + (*h as char).to_digit(16).unwrap_or(0));
        let cp = hex(&inner[at + 2..at + 6]);
        if (0xD800..0xDC00).contains(&cp)
            && inner.get(at + 6..at + 8) == Some(b"\\u")
            && (0xDC00..0xE000).contains(&hex(&inner[at + 8..at + 12]))
        {
            bytes -= 12 - 4;
            i = at + 12;
            continue;
        }
        let len = match cp {
            0..=0x7f => 1,
            0x80..=0x7ff => 2,
            _ => 3, // including a lone surrogate, which JavaScript counts as U+FFFD
        };
        bytes -= 6 - len;
        i = at + 6;
    }
    bytes
}

/// The high bit of every byte of `w` that equals `b` (exact, no false positives).
fn byte_mask(w: u64, b: u8) -> u64 {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = w ^ (0x0101_0101_0101_0101u64 * b as u64);
    !(((x & LO7) + LO7) | x | LO7)
}

/// The decoded UTF-8 length and tag-safe serialized length (quotes
/// included) of the text of a valid JSON string literal, in one pass.
fn literal_lengths(literal: &str) -> (usize, usize) {
    let b = literal.as_bytes();
    let inner = &b[1..b.len() - 1];
    let (mut bytes, mut quoted) = (0usize, 2usize);
    let mut i = 0;
    while i < inner.len() {
        // Eight bytes at a time: each byte before the first backslash is one
        // byte of text, and each `<` among them becomes the six bytes `\u003c`.
        if let Some(chunk) = inner.get(i..i + 8) {
            let w = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            let backslash = byte_mask(w, b'\\');
            let plain = if backslash == 0 { 8 } else { backslash.trailing_zeros() as usize / 8 };
            if plain > 0 {
                let keep = if plain == 8 { u64::MAX } else { (1u64 << (plain * 8)) - 1 };
                bytes += plain;
                quoted += plain + 5 * (byte_mask(w, b'<') & keep).count_ones() as usize;
                i += plain;
                continue;
            }
        }
        let c = inner[i];
        if c != b'\\' {
            // Raw bytes: control characters and `"` cannot appear raw.
            bytes += 1;
            quoted += if c == b'<' { 6 } else { 1 };
            i += 1;
            continue;
        }
        let e = inner[i + 1];
        i += 2;
        let cp = match e {
            b'u' => {
                let hex = |s: &[u8]| s.iter().fold(0u32, |acc, h| acc * 16 + (*h as char).to_digit(16).unwrap_or(0));
                let hi = hex(&inner[i..i + 4]);
                i += 4;
                if (0xD800..0xDC00).contains(&hi)
                    && inner.get(i..i + 2) == Some(b"\\u")
                    && (0xDC00..0xE000).contains(&hex(&inner[i + 2..i + 6]))
                {
                    i += 6;
                    bytes += 4;
                    quoted += 4;
                    continue;
                }
                if (0xD800..0xE000).contains(&hi) {
                    // A lone surrogate: JavaScript counts it as U+FFFD (3 bytes)
                    // and writes it escaped.
                    bytes += 3;
                    quoted += 6;
                    continue;
                }
                hi
            }
            b'b' => 8,
            b't' => 9,
            b'n' => 10,
            b'f' => 12,
            b'r' => 13,
            other => other as u32, // `"`, `\`, `/`
        };
        let (len, written) = match cp {
            8 | 9 | 10 | 12 | 13 | 0x22 | 0x5c => (1, 2),
            0..=0x1f | 0x3c => (1, 6),
            0..=0x7f => (1, 1),
            0x80..=0x7ff => (2, 2),
            _ => (3, 3),
        };
        bytes += len;
        quoted += written;
    }
    (bytes, quoted)
}

/// The projected surface of one source.
#[derive(Clone, Debug, PartialEq)]
pub struct Projection<'a> {
    /// `session.id` of the snapshot.
    pub session_id: Cow<'a, str>,
    /// `session.cwd` of the snapshot.
    pub cwd: Option<Cow<'a, str>>,
    /// `capturedThroughSeq` (`None` for `null`).
    pub captured_through_seq: Option<Number>,
    /// The conversation in surface order.
    pub items: Vec<Item<'a>>,
}

impl Projection<'_> {
    /// Whether any projected item is a checkpoint (`compacted` in metadata).
    pub fn compacted(&self) -> bool {
        self.items.iter().any(|i| i.checkpoint)
    }
}

/// Projects snapshot JSON text. Texts are kept as JSON literals and decoded
/// only if retention keeps them.
pub fn project_json(bytes: &[u8]) -> Result<Projection<'_>, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let p = Snapshot::<RawMode>::deserialize(&mut de).map_err(|e| format!("malformed surface snapshot: {e}"))?;
    de.end().map_err(|e| format!("malformed surface snapshot: {e}"))?;
    Ok(p.0)
}

/// Projects a snapshot given as a JSON value.
pub fn project_value(value: &Value) -> Result<Projection<'_>, String> {
    Snapshot::<ValueMode>::deserialize(value).map(|p| p.0).map_err(|e| format!("malformed surface snapshot: {e}"))
}

/// How a `text` field is read: as a raw literal (JSON text input) or as a
/// decoded string (value input).
trait Mode: 'static {
    fn read_text<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<ItemText<'de>>, A::Error>;
}

struct RawMode;
struct ValueMode;

impl Mode for RawMode {
    fn read_text<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<ItemText<'de>>, A::Error> {
        let raw: &'de RawValue = map.next_value()?;
        let lit = raw.get();
        Ok(lit.starts_with('"').then(|| ItemText::literal(lit)))
    }
}

impl Mode for ValueMode {
    fn read_text<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<ItemText<'de>>, A::Error> {
        Ok(map.next_value::<MaybeStr<'de>>()?.0.map(ItemText::decoded))
    }
}

struct Snapshot<'a, M>(Projection<'a>, PhantomData<M>);

#[derive(Deserialize)]
struct Header<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
}

impl<'de, M: Mode> Deserialize<'de> for Snapshot<'de, M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<M>(PhantomData<M>);
        impl<'de, M: Mode> Visitor<'de> for V<M> {
            type Value = Snapshot<'de, M>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a surface snapshot object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut header: Option<Header<'de>> = None;
                let mut seq: Option<Option<Number>> = None;
                let mut items: Option<Vec<Item<'de>>> = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "session" => header = Some(map.next_value()?),
                        "capturedThroughSeq" => {
                            let v: Option<Number> = map.next_value()?;
                            if let Some(n) = &v {
                                let integral = n.is_u64() || n.is_i64() || n.as_f64().is_some_and(|f| f.fract() == 0.0);
                                if !integral {
                                    return Err(de::Error::custom("capturedThroughSeq must be an integer or null"));
                                }
                            }
                            seq = Some(v);
                        }
                        "events" => items = Some(map.next_value_seed(Events::<M>(PhantomData))?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let header = header.ok_or_else(|| de::Error::missing_field("session"))?;
                let seq = seq.ok_or_else(|| de::Error::missing_field("capturedThroughSeq"))?;
                let items = items.ok_or_else(|| de::Error::missing_field("events"))?;
                let p = Projection { session_id: header.id, cwd: header.cwd, captured_through_seq: seq, items };
                Ok(Snapshot(p, PhantomData))
            }
        }
        d.deserialize_map(V::<M>(PhantomData))
    }
}

/// Reads the `events` array straight into projected items.
struct Events<M>(PhantomData<M>);

impl<'de, M: Mode> DeserializeSeed<'de> for Events<M> {
    type Value = Vec<Item<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V<M>(PhantomData<M>);
        impl<'de, M: Mode> Visitor<'de> for V<M> {
            type Value = Vec<Item<'de>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of events")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element_seed(Event::<M>(PhantomData))? {
                    if let Some(item) = item {
                        items.push(item);
                    }
                }
                Ok(items)
            }
        }
        d.deserialize_seq(V::<M>(PhantomData))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    UserMessage,
    AssistantMessage,
    Other,
}

impl Kind {
    fn of(t: &str) -> Kind {
        match t {
            "user/message" => Kind::UserMessage,
            "assistant/message" => Kind::AssistantMessage,
            _ => Kind::Other,
        }
    }
}

/// One event; yields its projected item, if any.
struct Event<M>(PhantomData<M>);

impl<'de, M: Mode> DeserializeSeed<'de> for Event<M> {
    type Value = Option<Item<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V<M>(PhantomData<M>);
        impl<'de, M: Mode> Visitor<'de> for V<M> {
            type Value = Option<Item<'de>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an event object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut kind: Option<Kind> = None;
                let mut parsed: Option<Option<Item<'de>>> = None;
                let mut buffered: Option<Value> = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "type" => {
                            let t: Cow<'de, str> = map.next_value()?;
                            kind = Some(Kind::of(&t));
                        }
                        "data" => match kind {
                            Some(Kind::Other) => {
                                map.next_value::<IgnoredAny>()?;
                            }
                            Some(k) => parsed = Some(map.next_value_seed(Data::<M>(k, PhantomData))?),
                            // `data` before `type`: keep it until the type is known.
                            None => buffered = Some(map.next_value()?),
                        },
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let kind = kind.ok_or_else(|| de::Error::missing_field("type"))?;
                if let Some(item) = parsed {
                    return Ok(item);
                }
                match (kind, buffered) {
                    (Kind::Other, _) => Ok(None),
                    (k, Some(v)) => Data::<ValueMode>(k, PhantomData)
                        .deserialize(&v)
                        .map_err(de::Error::custom)?
                        .map(Item::into_owned)
                        .transpose()
                        .map_err(de::Error::custom),
                    (_, None) => Err(de::Error::missing_field("data")),
                }
            }
        }
        d.deserialize_map(V::<M>(PhantomData))
    }
}

impl Item<'_> {
    fn into_owned<'b>(self) -> Result<Item<'b>, String> {
        let text = ItemText::decoded(Cow::Owned(self.text.decode()?.into_owned()));
        Ok(Item { role: self.role, text, checkpoint: self.checkpoint })
    }
}

/// The `data` of a message event, by kind.
struct Data<M>(Kind, PhantomData<M>);

#[derive(Deserialize)]
struct Source<'a> {
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    plugin: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "'de: 'a, M: Mode"))]
struct UserData<'a, M> {
    content: Content<'a, M>,
    #[serde(borrow, default)]
    source: Option<Source<'a>>,
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "'de: 'a, M: Mode"))]
struct AssistantData<'a, M> {
    message: AssistantMessage<'a, M>,
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "'de: 'a, M: Mode"))]
struct AssistantMessage<'a, M> {
    content: Content<'a, M>,
}

impl<'de, M: Mode> DeserializeSeed<'de> for Data<M> {
    type Value = Option<Item<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let (role, text, checkpoint) = match self.0 {
            Kind::UserMessage => {
                let data = UserData::<'de, M>::deserialize(d)?;
                let (kind, plugin) = match &data.source {
                    Some(s) => (s.kind.as_deref(), s.plugin.as_deref()),
                    None => (None, None),
                };
                let checkpoint = kind == Some("plugin") && plugin == Some("compact");
                if kind != Some("user") && !checkpoint {
                    return Ok(None);
                }
                (Role::User, data.content.0, checkpoint)
            }
            Kind::AssistantMessage => {
                (Role::Assistant, AssistantData::<'de, M>::deserialize(d)?.message.content.0, false)
            }
            Kind::Other => {
                IgnoredAny::deserialize(d)?;
                return Ok(None);
            }
        };
        Ok(text.filter(|t| t.byte_len() > 0).map(|text| Item { role, text, checkpoint }))
    }
}

/// A message's visible text: its `text` blocks with string `text`, joined
/// with `"\n"`; `None` when it has no such block.
struct Content<'a, M>(Option<ItemText<'a>>, PhantomData<M>);

impl<'de: 'a, 'a, M: Mode> Deserialize<'de> for Content<'a, M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<M>(PhantomData<M>);
        impl<'de, M: Mode> Visitor<'de> for V<M> {
            type Value = Content<'de, M>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of content blocks")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut text: Option<ItemText<'de>> = None;
                while let Some(block) = seq.next_element::<Block<'de, M>>()? {
                    if let Some(t) = block.0 {
                        text = Some(match text {
                            None => t,
                            // Several text blocks (rare): decode and join.
                            Some(acc) => {
                                let mut joined = acc.decode().map_err(de::Error::custom)?.into_owned();
                                joined.push('\n');
                                joined.push_str(&t.decode().map_err(de::Error::custom)?);
                                ItemText::decoded(Cow::Owned(joined))
                            }
                        });
                    }
                }
                Ok(Content(text, PhantomData))
            }
        }
        d.deserialize_seq(V::<M>(PhantomData))
    }
}

/// One content block; `Some(text)` only for `{"type":"text","text":<string>}`.
/// Blocks of any other shape are dropped, never an error.
struct Block<'a, M>(Option<ItemText<'a>>, PhantomData<M>);

/// A value that is kept only when it is a string.
struct MaybeStr<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for MaybeStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(MaybeStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MaybeStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(MaybeStr(Some(Cow::Owned(v))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
                MaybeStr::<'de>::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de: 'a, 'a, M: Mode> Deserialize<'de> for Block<'a, M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<M>(PhantomData<M>);
        impl<'de, M: Mode> Visitor<'de> for V<M> {
            type Value = Block<'de, M>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut is_text: Option<bool> = None;
                let mut text: Option<ItemText<'de>> = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "type" => is_text = Some(map.next_value::<MaybeStr<'de>>()?.0.as_deref() == Some("text")),
                        // Skip the text of blocks already known not to be text.
                        "text" if is_text != Some(false) => text = M::read_text(&mut map)?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Block(if is_text == Some(true) { text } else { None }, PhantomData))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Block(None, PhantomData))
            }
            fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Self::Value, E> {
                Ok(Block(None, PhantomData))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Block(None, PhantomData))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Block(None, PhantomData))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Block(None, PhantomData))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Block(None, PhantomData))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Block(None, PhantomData))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Block(None, PhantomData))
            }
        }
        d.deserialize_any(V::<M>(PhantomData))
    }
}
