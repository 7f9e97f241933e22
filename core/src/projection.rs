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
use serde_json::{Number, Value};

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
    pub text: Cow<'a, str>,
    /// Whether it came from a compaction checkpoint (kept by retention).
    pub checkpoint: bool,
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

/// Projects snapshot JSON text.
pub fn project_json(bytes: &[u8]) -> Result<Projection<'_>, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let p = Snapshot::deserialize(&mut de).map_err(|e| format!("malformed surface snapshot: {e}"))?;
    de.end().map_err(|e| format!("malformed surface snapshot: {e}"))?;
    Ok(p.0)
}

/// Projects a snapshot given as a JSON value.
pub fn project_value(value: &Value) -> Result<Projection<'_>, String> {
    Snapshot::deserialize(value).map(|p| p.0).map_err(|e| format!("malformed surface snapshot: {e}"))
}

struct Snapshot<'a>(Projection<'a>);

#[derive(Deserialize)]
struct Header<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
}

impl<'de> Deserialize<'de> for Snapshot<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Snapshot<'de>;
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
                        "events" => items = Some(map.next_value_seed(Events)?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let header = header.ok_or_else(|| de::Error::missing_field("session"))?;
                let seq = seq.ok_or_else(|| de::Error::missing_field("capturedThroughSeq"))?;
                let items = items.ok_or_else(|| de::Error::missing_field("events"))?;
                Ok(Snapshot(Projection { session_id: header.id, cwd: header.cwd, captured_through_seq: seq, items }))
            }
        }
        d.deserialize_map(V)
    }
}

/// Reads the `events` array straight into projected items.
struct Events;

impl<'de> DeserializeSeed<'de> for Events {
    type Value = Vec<Item<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<Item<'de>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of events")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element_seed(Event)? {
                    if let Some(item) = item {
                        items.push(item);
                    }
                }
                Ok(items)
            }
        }
        d.deserialize_seq(V)
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
struct Event;

impl<'de> DeserializeSeed<'de> for Event {
    type Value = Option<Item<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
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
                            Some(k) => parsed = Some(map.next_value_seed(Data(k))?),
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
                    (k, Some(v)) => Data(k).deserialize(v).map(|o| o.map(Item::into_owned)).map_err(de::Error::custom),
                    (_, None) => Err(de::Error::missing_field("data")),
                }
            }
        }
        d.deserialize_map(V)
    }
}

impl Item<'_> {
    fn into_owned<'b>(self) -> Item<'b> {
        Item { role: self.role, text: Cow::Owned(self.text.into_owned()), checkpoint: self.checkpoint }
    }
}

/// The `data` of a message event, by kind.
struct Data(Kind);

#[derive(Deserialize)]
struct Source<'a> {
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    plugin: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct UserData<'a> {
    #[serde(borrow)]
    content: Content<'a>,
    #[serde(borrow, default)]
    source: Option<Source<'a>>,
}

#[derive(Deserialize)]
struct AssistantData<'a> {
    #[serde(borrow)]
    message: AssistantMessage<'a>,
}

#[derive(Deserialize)]
struct AssistantMessage<'a> {
    #[serde(borrow)]
    content: Content<'a>,
}

impl<'de> DeserializeSeed<'de> for Data {
    type Value = Option<Item<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let (role, text, checkpoint) = match self.0 {
            Kind::UserMessage => {
                let data = UserData::deserialize(d)?;
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
            Kind::AssistantMessage => (Role::Assistant, AssistantData::deserialize(d)?.message.content.0, false),
            Kind::Other => {
                IgnoredAny::deserialize(d)?;
                return Ok(None);
            }
        };
        Ok(text.filter(|t| !t.is_empty()).map(|text| Item { role, text, checkpoint }))
    }
}

/// A message's visible text: its `text` blocks with string `text`, joined
/// with `"\n"`; `None` when it has no such block.
struct Content<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of content blocks")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut text: Option<Cow<'de, str>> = None;
                while let Some(block) = seq.next_element::<Block<'de>>()? {
                    if let Some(t) = block.0 {
                        text = Some(match text {
                            None => t,
                            Some(mut acc) => {
                                let s = acc.to_mut();
                                s.push('\n');
                                s.push_str(&t);
                                acc
                            }
                        });
                    }
                }
                Ok(Content(text))
            }
        }
        d.deserialize_seq(V)
    }
}

/// One content block; `Some(text)` only for `{"type":"text","text":<string>}`.
/// Blocks of any other shape are dropped, never an error.
struct Block<'a>(Option<Cow<'a, str>>);

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

impl<'de: 'a, 'a> Deserialize<'de> for Block<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Block<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut is_text: Option<bool> = None;
                let mut text: Option<Cow<'de, str>> = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "type" => is_text = Some(map.next_value::<MaybeStr<'de>>()?.0.as_deref() == Some("text")),
                        // Skip the text of blocks already known not to be text.
                        "text" if is_text != Some(false) => text = map.next_value::<MaybeStr<'de>>()?.0,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Block(if is_text == Some(true) { text } else { None }))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Block(None))
            }
            fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Self::Value, E> {
                Ok(Block(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Block(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Block(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Block(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Block(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Block(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Block(None))
            }
        }
        d.deserialize_any(V)
    }
}
