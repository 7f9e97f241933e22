//! Projection of one surface snapshot into `{role, text}` items (docs/contract.md §3).
//!
//! The snapshot's JSON bytes are read once by `json::read`: texts stay
//! slices of the input (decoded only if retention keeps them), and
//! everything projection drops (tool results, reasoning, unknown keys) is
//! validated and skipped without building values. A snapshot given as a
//! [`serde_json::Value`] is written out as JSON and read the same way, so
//! there is one projection.
//!
//! Like `JSON.parse`, a key given twice counts with its last value.

use std::borrow::Cow;

use serde_json::Number;

use crate::json::invisible;
use crate::json::literal;
use crate::json::read::{Read, Reader, Str};
use crate::json::string_len;

/// The v4 checkpoint source kind.
pub const CHECKPOINT_KIND: &str = "compact-checkpoint";

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
    /// A valid JSON string literal of the input, quotes included.
    Literal(Str<'a>),
}

impl<'a> ItemText<'a> {
    /// A text that is already decoded.
    pub fn decoded(text: Cow<'a, str>) -> Self {
        ItemText { bytes: text.len(), repr: Repr::Decoded(text) }
    }

    /// A text still in JSON form, as validated by the JSON reader.
    fn literal(s: Str<'a>) -> Self {
        ItemText { bytes: s.len, repr: Repr::Literal(s) }
    }

    /// UTF-8 bytes of the decoded text.
    pub fn byte_len(&self) -> usize {
        self.bytes
    }

    /// Bytes of the decoded text written as a tag-safe JSON string literal,
    /// quotes included. Computed on each call (one pass over the text):
    /// retention asks only for the items it may keep.
    pub fn tag_safe_len(&self) -> usize {
        self.tag_safe_len_with(false)
    }

    /// [`tag_safe_len`](Self::tag_safe_len), with invisible characters
    /// escaped when `escape_invisible` is on (`crate::json::invisible`).
    pub fn tag_safe_len_with(&self, escape_invisible: bool) -> usize {
        match &self.repr {
            Repr::Decoded(t) if escape_invisible => invisible::string_len(t),
            Repr::Decoded(t) => string_len(t, true),
            Repr::Literal(s) => literal::tag_safe_len(s, escape_invisible),
        }
    }

    /// The JSON string literal of the input (quotes included) the text is
    /// still in, if it is one.
    pub fn json_literal(&self) -> Option<&'a [u8]> {
        match &self.repr {
            Repr::Literal(s) => Some(s.lit),
            Repr::Decoded(_) => None,
        }
    }

    /// The text, when it is held decoded (not a JSON literal).
    pub(crate) fn as_decoded(&self) -> Option<&str> {
        match &self.repr {
            Repr::Decoded(t) => Some(t),
            Repr::Literal(_) => None,
        }
    }

    /// The decoded text (borrowed from the input when it has no escapes).
    pub fn decode(&self) -> Result<Cow<'a, str>, String> {
        match &self.repr {
            Repr::Decoded(t) => Ok(t.clone()),
            Repr::Literal(s) => s.decode(),
        }
    }

    /// Appends the text as a tag-safe JSON string literal.
    pub fn write_tag_safe(&self, out: &mut String) -> Result<(), String> {
        self.write_tag_safe_with(out, false)
    }

    /// [`write_tag_safe`](Self::write_tag_safe), with invisible characters
    /// escaped when `escape_invisible` is on (`crate::json::invisible`).
    pub fn write_tag_safe_with(&self, out: &mut String, escape_invisible: bool) -> Result<(), String> {
        match &self.repr {
            Repr::Decoded(t) => crate::json::write_text(out, t, escape_invisible),
            Repr::Literal(s) => literal::write_tag_safe(s, out, escape_invisible)?,
        }
        Ok(())
    }
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

/// Projects snapshot JSON text (UTF-8). The whole document is validated;
/// texts are kept as slices of `bytes` and decoded only if retention keeps
/// them.
pub fn project_json(bytes: &[u8]) -> Result<Projection<'_>, String> {
    snapshot(&mut Reader::new(bytes)).map_err(|e| format!("malformed surface snapshot: {e}"))
}

/// Whether projecting one surface event (the JSON text of one element of
/// `events`) may give anything: an item, or an error that fails the
/// snapshot. `false` only for an event projection drops (a type other than
/// a message, a message from a source other than the user or a checkpoint,
/// one without visible text): a snapshot without such events projects
/// exactly as the whole one, item for item and error for error, so a
/// source that reads a log may leave them out (`SurfaceRead::ForProjection`).
pub fn may_project(event_json: &[u8]) -> bool {
    !matches!(event(&mut Reader::new(event_json)), Ok(Ok(None)))
}

/// The item projecting one surface event (the JSON text of one element of
/// `events`) gives, `None` for an event projection drops, or why it fails
/// the snapshot: what [`may_project`] tells apart, with the item (for a
/// source that measures the items of a log without keeping their texts,
/// `SurfaceRead::Within`).
pub fn project_event(event_json: &[u8]) -> Result<Option<Item<'_>>, String> {
    event(&mut Reader::new(event_json)).and_then(|r| r)
}

/// The last value read for a required field.
fn required<T>(field: &str, value: Option<Result<T, String>>) -> Result<T, String> {
    value.unwrap_or_else(|| Err(format!("missing field `{field}`")))
}

/// The last value read for an optional field.
fn optional<T>(value: Option<Result<Option<T>, String>>) -> Result<Option<T>, String> {
    value.unwrap_or(Ok(None))
}

fn snapshot<'a>(r: &mut Reader<'a>) -> Result<Projection<'a>, String> {
    if !r.enter_object()? {
        return Err("expected a surface snapshot object".into());
    }
    let (mut header, mut seq, mut items, mut conversation) = (None, None, None, None);
    let mut first = true;
    while let Some(key) = r.next_key(&mut first)? {
        match &*key.name() {
            b"events" => items = Some(events(r)?),
            b"conversation" => conversation = Some(conversation_items(r)?),
            b"session" => header = Some(session(r)?),
            b"capturedThroughSeq" => seq = Some(captured_through_seq(r)?),
            _ => r.skip()?,
        }
    }
    r.end()?;
    let (session_id, cwd) = required("session", header)?;
    let captured_through_seq = required("capturedThroughSeq", seq)?;
    let items = match (items, conversation) {
        (Some(_), Some(_)) => return Err("a snapshot has `events` or `conversation`, not both".into()),
        (None, Some(conversation)) => conversation?,
        (items, None) => required("events", items)?,
    };
    Ok(Projection { session_id, cwd, captured_through_seq, items })
}

type Header<'a> = (Cow<'a, str>, Option<Cow<'a, str>>);

/// `session`: an object with a string `id` and an optional string `cwd`.
fn session<'a>(r: &mut Reader<'a>) -> Read<Header<'a>> {
    if !r.enter_object()? {
        return Ok(Err("expected `session` to be an object".into()));
    }
    let (mut id, mut cwd) = (None, None);
    let mut first = true;
    while let Some(key) = r.next_key(&mut first)? {
        match &*key.name() {
            b"id" => id = Some(r.maybe_string()?.ok_or_else(|| "expected `session.id` to be a string".to_owned())),
            b"cwd" => cwd = Some(r.string_or_null("expected `session.cwd` to be a string or null")?),
            _ => r.skip()?,
        }
    }
    Ok((|| {
        let id = required("session.id", id)?.decode()?;
        let cwd = optional(cwd)?.map(|c| c.decode()).transpose()?;
        Ok((id, cwd))
    })())
}

/// `capturedThroughSeq`: an integer or `null`.
fn captured_through_seq(r: &mut Reader<'_>) -> Read<Option<Number>> {
    let what = "expected `capturedThroughSeq` to be an integer or null";
    Ok(r.number_or_null(what)?.and_then(|lit| {
        let Some(lit) = lit else { return Ok(None) };
        let n: Number = serde_json::from_slice(lit).map_err(|e| format!("`capturedThroughSeq`: {e}"))?;
        let integral = n.is_u64() || n.is_i64() || n.as_f64().is_some_and(|f| f.fract() == 0.0);
        if integral {
            Ok(Some(n))
        } else {
            Err(what.to_owned())
        }
    }))
}

/// The `events` array, straight into projected items.
fn events<'a>(r: &mut Reader<'a>) -> Read<Vec<Item<'a>>> {
    if !r.enter_array()? {
        return Ok(Err("expected `events` to be an array".into()));
    }
    let mut items = Ok(Vec::new());
    let mut first = true;
    while r.next_element(&mut first)? {
        match &mut items {
            Ok(list) => match event(r)? {
                Ok(Some(item)) => list.push(item),
                Ok(None) => {}
                Err(e) => items = Err(e),
            },
            // The events are wrong already; the rest only has to be JSON.
            Err(_) => r.skip()?,
        }
    }
    Ok(items)
}

/// The `type` of a surface event, as far as projection tells them apart.
/// The `conversation` array of a pre-projected snapshot: items
/// `{"role": "user"|"assistant", "text": string, "checkpoint"?: boolean}`.
/// Items with empty text are left out, like messages without text.
fn conversation_items<'a>(r: &mut Reader<'a>) -> Read<Vec<Item<'a>>> {
    if !r.enter_array()? {
        return Ok(Err("expected `conversation` to be an array".into()));
    }
    let mut items = Ok(Vec::new());
    let mut first = true;
    while r.next_element(&mut first)? {
        match &mut items {
            Ok(list) => match conversation_item(r)? {
                Ok(Some(item)) => list.push(item),
                Ok(None) => {}
                Err(e) => items = Err(e),
            },
            Err(_) => r.skip()?,
        }
    }
    Ok(items)
}

fn conversation_item<'a>(r: &mut Reader<'a>) -> Read<Option<Item<'a>>> {
    if !r.enter_object()? {
        return Ok(Err("expected a conversation item object".into()));
    }
    let (mut role, mut text, mut checkpoint) = (None, None, None);
    let mut first = true;
    while let Some(key) = r.next_key(&mut first)? {
        match &*key.name() {
            b"role" => {
                role = Some(r.maybe_string()?.and_then(|s| match &*s.name() {
                    b"user" => Some(Role::User),
                    b"assistant" => Some(Role::Assistant),
                    _ => None,
                }))
                .map(|role| role.ok_or_else(|| "expected `role` to be \"user\" or \"assistant\"".to_owned()))
            }
            b"text" => text = Some(r.maybe_string()?.ok_or_else(|| "expected `text` to be a string".to_owned())),
            b"checkpoint" => checkpoint = Some(r.bool_or_null("expected `checkpoint` to be a boolean")?),
            _ => r.skip()?,
        }
    }
    Ok((|| {
        let role = required("conversation[].role", role)?;
        let text = required("conversation[].text", text)?;
        let checkpoint = optional(checkpoint)?.unwrap_or(false);
        Ok((text.len > 0).then(|| Item { role, text: ItemText::literal(text), checkpoint }))
    })())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EventType {
    UserMessage,
    AssistantMessage,
    Other,
}

/// One event; its projected item, if any. `data` is projected as it is read
/// when `type` came first (the usual order); otherwise, or when either key
/// appears again, the last `data` is projected again under the last `type`.
fn event<'a>(r: &mut Reader<'a>) -> Read<Option<Item<'a>>> {
    if !r.enter_object()? {
        return Ok(Err("expected an event object".into()));
    }
    let mut kind = None;
    let mut data = None; // span of the last `data`
    let mut projected = None; // (kind, item) of the last `data`, when read under a known kind
    let mut first = true;
    while let Some(key) = r.next_key(&mut first)? {
        match &*key.name() {
            b"type" => {
                let t = r.maybe_string()?.ok_or_else(|| "expected `type` to be a string".to_owned());
                kind = Some(t.map(|t| match &*t.name() {
                    b"user/message" => EventType::UserMessage,
                    b"assistant/message" => EventType::AssistantMessage,
                    _ => EventType::Other,
                }));
            }
            b"data" => {
                let start = r.pos();
                projected = match kind {
                    Some(Ok(k @ (EventType::UserMessage | EventType::AssistantMessage))) => Some((k, message(r, k)?)),
                    _ => {
                        r.skip()?;
                        None
                    }
                };
                data = Some((start, r.pos()));
            }
            _ => r.skip()?,
        }
    }
    let kind = match required("type", kind) {
        Ok(EventType::Other) => return Ok(Ok(None)),
        Ok(kind) => kind,
        Err(e) => return Ok(Err(e)),
    };
    match (projected, data) {
        (Some((k, item)), _) if k == kind => Ok(item),
        (_, Some((start, end))) => message(&mut r.span(start, end), kind),
        (_, None) => Ok(Err("missing field `data`".into())),
    }
}

/// The `data` of a message event of `kind`: its item, if it is visible.
fn message<'a>(r: &mut Reader<'a>, kind: EventType) -> Read<Option<Item<'a>>> {
    if !r.enter_object()? {
        return Ok(Err("expected `data` to be an object".into()));
    }
    let (mut content, mut source, mut message) = (None, None, None);
    let mut first = true;
    while let Some(key) = r.next_key(&mut first)? {
        match &*key.name() {
            b"content" if kind == EventType::UserMessage => content = Some(text_of(r)?),
            b"source" if kind == EventType::UserMessage => source = Some(user_source(r)?),
            b"message" if kind == EventType::AssistantMessage => message = Some(assistant_message(r)?),
            _ => r.skip()?,
        }
    }
    Ok((|| {
        let (role, text, checkpoint) = if kind == EventType::UserMessage {
            let text = required("data.content", content)?;
            let (kind, plugin) = optional(source)?.unwrap_or_default();
            let is = |s: Option<Str<'_>>, name| s.is_some_and(|s| s.is(name));
            // v0-v3 checkpoint marker, or v4's (the store refuses either in the other's logs).
            let checkpoint = (is(kind, "plugin") && is(plugin, "compact")) || is(kind, CHECKPOINT_KIND);
            if !is(kind, "user") && !checkpoint {
                return Ok(None);
            }
            (Role::User, text, checkpoint)
        } else {
            (Role::Assistant, required("data.message", message)?, false)
        };
        Ok(text.filter(|t| t.byte_len() > 0).map(|text| Item { role, text, checkpoint }))
    })())
}

type Source<'a> = (Option<Str<'a>>, Option<Str<'a>>);

/// A user message's `source`: `null`, or an object whose `kind` and `plugin`
/// are strings or `null`.
fn user_source<'a>(r: &mut Reader<'a>) -> Read<Option<Source<'a>>> {
    if r.peek() == Some(b'n') {
        return r.string_or_null("").map(|_| Ok(None));
    }
    if !r.enter_object()? {
        return Ok(Err("expected `data.source` to be an object or null".into()));
    }
    let (mut kind, mut plugin) = (None, None);
    let mut first = true;
    while let Some(key) = r.next_key(&mut first)? {
        match &*key.name() {
            b"kind" => kind = Some(r.string_or_null("expected `source.kind` to be a string or null")?),
            b"plugin" => plugin = Some(r.string_or_null("expected `source.plugin` to be a string or null")?),
            _ => r.skip()?,
        }
    }
    Ok((|| Ok(Some((optional(kind)?, optional(plugin)?))))())
}

/// An assistant message's `message`: an object with `content`.
fn assistant_message<'a>(r: &mut Reader<'a>) -> Read<Option<ItemText<'a>>> {
    if !r.enter_object()? {
        return Ok(Err("expected `data.message` to be an object".into()));
    }
    let mut content = None;
    let mut first = true;
    while let Some(key) = r.next_key(&mut first)? {
        match &*key.name() {
            b"content" => content = Some(text_of(r)?),
            _ => r.skip()?,
        }
    }
    Ok(required("data.message.content", content))
}

/// A message's visible text: its `text` blocks with string `text`, joined
/// with `"\n"`; `None` when it has no such block. Blocks of any other shape
/// are dropped, never an error.
fn text_of<'a>(r: &mut Reader<'a>) -> Read<Option<ItemText<'a>>> {
    if !r.enter_array()? {
        return Ok(Err("expected `content` to be an array of content blocks".into()));
    }
    let mut text: Result<Option<ItemText<'a>>, String> = Ok(None);
    let mut first = true;
    while r.next_element(&mut first)? {
        let Some(t) = block(r)? else { continue };
        text = text.and_then(|acc| {
            Ok(Some(match acc {
                None => t,
                // Several text blocks (rare): decode and join.
                Some(acc) => {
                    let mut joined = acc.decode()?.into_owned();
                    joined.push('\n');
                    joined.push_str(&t.decode()?);
                    ItemText::decoded(Cow::Owned(joined))
                }
            }))
        });
    }
    Ok(text)
}

/// One content block; its text only for `{"type":"text","text":<string>}`.
fn block<'a>(r: &mut Reader<'a>) -> Result<Option<ItemText<'a>>, String> {
    if !r.enter_object()? {
        return Ok(None);
    }
    let (mut is_text, mut text) = (false, None);
    let mut first = true;
    while let Some(key) = r.next_key(&mut first)? {
        match &*key.name() {
            b"type" => is_text = r.maybe_string()?.is_some_and(|t| t.is("text")),
            b"text" => text = r.maybe_string()?,
            _ => r.skip()?,
        }
    }
    Ok(text.filter(|_| is_text).map(ItemText::literal))
}
