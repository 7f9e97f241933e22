//! A conversation that is already projected: the plain form of a surface
//! (docs/contract.md §9.4) that a source reading another agent's transcript,
//! or a host that keeps its own history, hands over instead of DSH events.
//!
//! Its items go through exactly the same retention and rendering as the
//! items projected from a DSH surface, so every byte of the prompt follows
//! the same rules. Builders for the two message shapes harnesses keep
//! (OpenAI-style chat messages, Anthropic-style messages) are in `messages.rs`.

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

use crate::projection::{Item, ItemText, Projection, Role};

mod messages;

pub use messages::{from_anthropic_messages, from_openai_messages};

/// One item of a projected conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConversationItem {
    /// Who said it.
    pub role: Role,
    /// Its visible text. An item with empty text is not rendered.
    pub text: String,
    /// Whether it is a compaction checkpoint (a summary of what came
    /// before), which retention keeps while it drops older messages.
    pub checkpoint: bool,
}

impl ConversationItem {
    /// A plain message (not a checkpoint).
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        ConversationItem { role, text: text.into(), checkpoint: false }
    }

    /// A compaction checkpoint (user role, as DSH writes them).
    pub fn checkpoint(text: impl Into<String>) -> Self {
        ConversationItem { role: Role::User, text: text.into(), checkpoint: true }
    }

    /// The item projection gives of it, borrowing its text; `None` for an
    /// empty text (left out, as projection leaves out a message whose text
    /// is empty).
    pub fn projected(&self) -> Option<Item<'_>> {
        (!self.text.is_empty()).then(|| Item {
            role: self.role,
            text: ItemText::decoded(Cow::Borrowed(&self.text)),
            checkpoint: self.checkpoint,
        })
    }

    /// `{"role","text"}`, with `"checkpoint":true` when it is one.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("role".into(), Value::from(self.role.as_str()));
        m.insert("text".into(), Value::from(self.text.as_str()));
        if self.checkpoint {
            m.insert("checkpoint".into(), Value::Bool(true));
        }
        Value::Object(m)
    }
}

/// A projected conversation with the header fields a rendered source
/// carries: the owned twin of a [`Projection`].
#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    /// The session id, as it appears in the prompt's `sessionId`.
    pub session_id: String,
    /// The session's working directory, if any.
    pub cwd: Option<String>,
    /// How far into its log the conversation was read (`capturedThroughSeq`;
    /// what it counts depends on the source, see docs/sources.md).
    pub captured_through_seq: Option<Number>,
    /// The items in conversation order.
    pub items: Vec<ConversationItem>,
}

impl Conversation {
    /// The projection retention and rendering take, borrowing every text.
    /// Items with empty text are left out, as projection leaves out a
    /// message whose text is empty.
    pub fn projection(&self) -> Projection<'_> {
        Projection {
            session_id: Cow::Borrowed(&self.session_id),
            cwd: self.cwd.as_deref().map(Cow::Borrowed),
            captured_through_seq: self.captured_through_seq.clone(),
            items: self.items.iter().filter_map(ConversationItem::projected).collect(),
        }
    }

    /// UTF-8 bytes of all texts (how big the work on it is).
    pub fn text_len(&self) -> usize {
        self.items.iter().map(|i| i.text.len()).sum()
    }

    /// The pre-projected snapshot a host may return from `read_surface`:
    /// `{"session":{"id","cwd"},"capturedThroughSeq","conversation":[…]}`.
    pub fn to_snapshot_json(&self) -> Value {
        let mut session = Map::new();
        session.insert("id".into(), Value::from(self.session_id.as_str()));
        session.insert("cwd".into(), self.cwd.as_deref().map_or(Value::Null, Value::from));
        let mut m = Map::new();
        m.insert("session".into(), Value::Object(session));
        m.insert("capturedThroughSeq".into(), self.captured_through_seq.clone().map_or(Value::Null, Value::Number));
        m.insert("conversation".into(), Value::Array(self.items.iter().map(ConversationItem::to_json).collect()));
        Value::Object(m)
    }
}

/// The message shapes [`snapshot_from_messages`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageFormat {
    /// OpenAI-style chat messages ([`from_openai_messages`]).
    OpenAi,
    /// Anthropic-style messages ([`from_anthropic_messages`]).
    Anthropic,
}

impl MessageFormat {
    /// `"openai"` or `"anthropic"`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "openai" => Some(MessageFormat::OpenAi),
            "anthropic" => Some(MessageFormat::Anthropic),
            _ => None,
        }
    }
}

/// The pre-projected snapshot of a host's own message list, for its
/// `read_surface`: `{"session":{"id","cwd"},"capturedThroughSeq","conversation"}`.
/// `captured_through_seq` defaults to the index of the last message given
/// (`null` for an empty list): how far into its history the host read.
/// The one builder behind every SDK's helper.
pub fn snapshot_from_messages(
    format: MessageFormat,
    session_id: &str,
    cwd: Option<&str>,
    messages: &Value,
    captured_through_seq: Option<Number>,
) -> Result<Value, String> {
    let items = match format {
        MessageFormat::OpenAi => from_openai_messages(messages)?,
        MessageFormat::Anthropic => from_anthropic_messages(messages)?,
    };
    let count = messages.as_array().map_or(0, Vec::len);
    let captured_through_seq = captured_through_seq.or_else(|| count.checked_sub(1).map(Number::from));
    let conversation =
        Conversation { session_id: session_id.to_owned(), cwd: cwd.map(str::to_owned), captured_through_seq, items };
    Ok(conversation.to_snapshot_json())
}

/// [`snapshot_from_messages`] for a request object, as the C ABI, Python
/// and Node take it: `{"format": "openai"|"anthropic", "sessionId": string,
/// "cwd"?: string|null, "capturedThroughSeq"?: integer|null, "messages": [...]}`.
pub fn snapshot_from_request(request: &Value) -> Result<Value, String> {
    let obj = request.as_object().ok_or("the request must be an object")?;
    let format = match obj.get("format") {
        Some(Value::String(f)) => MessageFormat::from_name(f)
            .ok_or_else(|| format!("unknown message format {f:?}: use \"openai\" or \"anthropic\""))?,
        _ => return Err("`format` must be \"openai\" or \"anthropic\"".into()),
    };
    let session_id = obj.get("sessionId").and_then(Value::as_str).ok_or("`sessionId` must be a string")?;
    let cwd = match obj.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.as_str()),
        Some(_) => return Err("`cwd` must be a string or null".into()),
    };
    let seq = match obj.get("capturedThroughSeq") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.is_u64() => Some(n.clone()),
        Some(_) => return Err("`capturedThroughSeq` must be a non-negative integer or null".into()),
    };
    let messages = obj.get("messages").ok_or("`messages` is missing")?;
    snapshot_from_messages(format, session_id, cwd, messages, seq)
}
