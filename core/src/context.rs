//! The typed results of preparation: the context message inserted after a
//! message that references other sessions, its `source` metadata, and the
//! results of `prepare` and `prepareMessages` (docs/contract.md §6).
//!
//! Each front converts these types once into its own values; the prompt, the
//! one large string, is handed over as it is and never looked up by path.

use serde_json::{Map, Number, Value};

use crate::harden::REDACTED_SECRETS_KEY;
use crate::prompt::{ExcerptSpan, RenderedSource, SourceStats};

/// The `source.kind` of every context message.
pub const CONTEXT_SOURCE_KIND: &str = "session-reference";

/// The retention figures of one reference in a context message's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReferenceStats {
    /// The referenced session id.
    pub session_id: String,
    /// The label the reference was given (the id when none).
    pub label: String,
    /// `capturedFormatVersion`, after `label`: the later `dshCompat`
    /// profiles only ([`CompatConfig`](crate::config::CompatConfig)).
    pub captured_format_version: Option<u64>,
    /// `capturedThroughSeq` of the source's snapshot.
    pub captured_through_seq: Option<Number>,
    /// What retention kept of it.
    pub stats: SourceStats,
    /// The position of the reference in the normalized reference list.
    pub input_index: usize,
    /// Credentials redacted from the retained texts: `Some` exactly when
    /// `redactSecrets` is on (the `redactedSecrets` key, last).
    pub redacted_secrets: Option<u64>,
    /// For a reference with a `range` or `around`, the run of messages its
    /// snapshot was taken from (the `range` key, and `around`, after
    /// `inputIndex`); `None` for a whole session, whose metadata has
    /// neither key.
    pub excerpt: Option<ExcerptSpan>,
}

impl ReferenceStats {
    /// [`to_json`](Self::to_json) for a text that leaves its session as a
    /// parsed value (an MCP tool's structured content): the id and label
    /// written by [`Hardening::text`](crate::harden::Hardening::text).
    pub fn to_json_hardened(&self, hardening: &crate::harden::Hardening) -> Value {
        let mut v = self.to_json();
        if let Some(m) = v.as_object_mut() {
            m.insert("sessionId".into(), hardening.text_value(&self.session_id));
            m.insert("label".into(), hardening.text_value(&self.label));
        }
        v
    }

    /// `{"sessionId","label","capturedThroughSeq","compacted","originalMessages",
    /// "retainedMessages","omittedMessages","omittedBytes","truncated","inputIndex"}`,
    /// then `"range": {"start","end"}` and `"around"` for an excerpt, and
    /// `"redactedSecrets"` under `redactSecrets`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("sessionId".into(), Value::from(self.session_id.as_str()));
        m.insert("label".into(), Value::from(self.label.as_str()));
        if let Some(v) = self.captured_format_version {
            m.insert("capturedFormatVersion".into(), Value::from(v));
        }
        m.insert("capturedThroughSeq".into(), self.captured_through_seq.clone().map_or(Value::Null, Value::Number));
        let stats = &self.stats;
        m.insert("compacted".into(), Value::Bool(stats.compacted));
        m.insert("originalMessages".into(), Value::from(stats.original_messages));
        m.insert("retainedMessages".into(), Value::from(stats.retained_messages));
        m.insert("omittedMessages".into(), Value::from(stats.omitted_messages));
        m.insert("omittedBytes".into(), Value::from(stats.omitted_bytes));
        m.insert("truncated".into(), Value::Bool(stats.truncated()));
        m.insert("inputIndex".into(), Value::from(self.input_index));
        if let Some(span) = &self.excerpt {
            m.insert("range".into(), span.range_json());
            if let Some(at) = span.around {
                m.insert("around".into(), Value::from(at));
            }
        }
        if let Some(n) = self.redacted_secrets {
            m.insert(REDACTED_SECRETS_KEY.into(), Value::from(n));
        }
        Value::Object(m)
    }
}

/// The `source` of a context message: what was referenced and how much of
/// each source was kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReferenceMetadata {
    /// One entry per reference, in reference order.
    pub references: Vec<ReferenceStats>,
}

impl ReferenceMetadata {
    /// Sets `capturedFormatVersion` (written after `label`) in each
    /// reference, as the later `dshCompat` profiles have it (`None`: no key).
    pub(crate) fn set_captured_format_version(&mut self, version: Option<u64>) {
        for r in &mut self.references {
            r.captured_format_version = version;
        }
    }

    /// The metadata of rendered sources, paired with their `(id, label)`
    /// references in order.
    pub(crate) fn new(refs: &[(&str, &str)], sources: &[RenderedSource]) -> Self {
        let references = refs
            .iter()
            .zip(sources)
            .enumerate()
            .map(|(input_index, ((id, label), s))| ReferenceStats {
                session_id: (*id).to_owned(),
                label: (*label).to_owned(),
                captured_format_version: None,
                captured_through_seq: s.captured_through_seq.clone(),
                stats: s.stats.clone(),
                input_index,
                redacted_secrets: s.redacted_secrets,
                excerpt: s.excerpt,
            })
            .collect();
        ReferenceMetadata { references }
    }

    /// `{"kind":"session-reference","form":"recall","version":1,"references":[…]}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), Value::from(CONTEXT_SOURCE_KIND));
        m.insert("form".into(), Value::from("recall"));
        m.insert("version".into(), Value::from(1));
        m.insert("references".into(), Value::Array(self.references.iter().map(ReferenceStats::to_json).collect()));
        Value::Object(m)
    }
}

/// The context message: a user-role message whose one text block is the
/// prompt (the framed snapshots), with metadata naming its sources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextMessage {
    /// A fresh UUID (v4) naming the message.
    pub id: String,
    /// The prompt: the untrusted-background warning and the tag-safe JSON of
    /// every source between `<referenced-sessions>` tags.
    pub prompt: String,
    /// The `source` metadata.
    pub source: ReferenceMetadata,
}

impl ContextMessage {
    /// `{"source":…,"content":[{"type":"text","text":prompt}],"role":"user","id":…}`
    /// with the prompt moved in (no copy).
    pub fn into_json(self) -> Value {
        let source = self.source.to_json();
        Self::json_with(source, Value::String(self.prompt), self.id)
    }

    /// [`into_json`](Self::into_json) without consuming `self`.
    pub fn to_json(&self) -> Value {
        Self::json_with(self.source.to_json(), Value::from(self.prompt.as_str()), self.id.clone())
    }

    fn json_with(source: Value, prompt: Value, id: String) -> Value {
        let mut block = Map::new();
        block.insert("type".into(), Value::from("text"));
        block.insert("text".into(), prompt);
        let mut m = Map::new();
        m.insert("source".into(), source);
        m.insert("content".into(), Value::Array(vec![Value::Object(block)]));
        m.insert("role".into(), Value::from("user"));
        m.insert("id".into(), Value::from(id));
        Value::Object(m)
    }
}

/// The result of [`Resolver::prepare`](crate::Resolver::prepare).
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    /// A copy of the caller's content.
    pub content: Value,
    /// The context message, when there were references.
    pub additional_context: Option<ContextMessage>,
}

impl Prepared {
    /// `{"content": …}` or `{"content": …, "additionalContext": …}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("content".into(), self.content.clone());
        if let Some(ctx) = &self.additional_context {
            m.insert("additionalContext".into(), ctx.to_json());
        }
        Value::Object(m)
    }

    /// Like [`to_json`](Self::to_json), consuming `self` (no copies).
    pub fn into_json(self) -> Value {
        let mut m = Map::new();
        m.insert("content".into(), self.content);
        if let Some(ctx) = self.additional_context {
            m.insert("additionalContext".into(), ctx.into_json());
        }
        Value::Object(m)
    }
}

/// One message of the result of
/// [`Resolver::prepare_messages`](crate::Resolver::prepare_messages).
#[derive(Clone, Debug, PartialEq)]
pub enum PreparedMessage {
    /// A message of the input: unchanged, or a user message with its
    /// mentions rewritten to `@label`.
    Message(Value),
    /// The context message inserted after the message before it.
    Context(ContextMessage),
}

impl PreparedMessage {
    /// The message as JSON, consuming it (no copies).
    pub fn into_json(self) -> Value {
        match self {
            PreparedMessage::Message(v) => v,
            PreparedMessage::Context(c) => c.into_json(),
        }
    }

    /// The message as JSON.
    pub fn to_json(&self) -> Value {
        match self {
            PreparedMessage::Message(v) => v.clone(),
            PreparedMessage::Context(c) => c.to_json(),
        }
    }
}

/// The whole result of `prepare_messages` as a JSON array (no copies).
pub fn messages_into_json(messages: Vec<PreparedMessage>) -> Value {
    Value::Array(messages.into_iter().map(PreparedMessage::into_json).collect())
}

impl From<ContextMessage> for Value {
    fn from(c: ContextMessage) -> Value {
        c.into_json()
    }
}

impl From<PreparedMessage> for Value {
    fn from(m: PreparedMessage) -> Value {
        m.into_json()
    }
}

impl From<Prepared> for Value {
    fn from(p: Prepared) -> Value {
        p.into_json()
    }
}
