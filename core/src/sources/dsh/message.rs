//! Checks that a message event's contents belong to the log's generation,
//! so that a log whose generation and contents disagree is a read failure
//! naming the problem instead of a silently different projection.
//!
//! - v4 message sources are producer-owned: `kind` is a non-empty string
//!   other than `"plugin"` (the checkpoint is `{kind:"compact-checkpoint"}`).
//!   Before v4 the checkpoint is `{kind:"plugin",plugin:"compact"}`, and a
//!   `compact-checkpoint` source is refused.
//! - v4 `tool/result` messages have `role:"tool"`, a string `toolCallId`
//!   and no `tool-result` content block; earlier ones never have
//!   `role:"tool"`.
//!
//! Only the fields named here are read; everything else is skipped.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::generation::Generation;
use super::title::StringOrOther;

pub use crate::projection::CHECKPOINT_KIND;

/// The message event types whose [`MessageFacts`] are read: every
/// surface-eligible type.
pub const CHECKED_TYPES: [&str; 5] =
    ["user/message", "assistant/message", "tool/result", "system/message", "developer/message"];

/// What the checks need of a message event's `data`, read once per line:
/// by the line reader's fast path ([`rows`](super::rows)) or by
/// [`facts_of`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageFacts {
    /// `data.message` is present and not `null` (wrapped types only).
    pub has_message: bool,
    /// The message's `role`, when a string (wrapped types only).
    pub role: Option<String>,
    /// The message's `source.kind`, when a string: `data.source.kind` of a
    /// `user/message`, `data.message.source.kind` of the wrapped types.
    pub source_kind: Option<String>,
    /// The message has a `toolCallId` key with a non-null value.
    pub tool_call_id: bool,
    /// The message's `content` has a block of type `tool-result`.
    pub tool_result_block: bool,
    /// The ids of the message's `tool-call` blocks, in order (string ids only).
    pub tool_call_ids: Vec<String>,
}

#[derive(Deserialize)]
struct Source<'a> {
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<StringOrOther>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    source: Option<Source<'a>>,
    #[serde(rename = "toolCallId", default)]
    tool_call_id: Option<IgnoredAny>,
    #[serde(borrow, default)]
    content: Option<Vec<Block<'a>>>,
}

#[derive(Deserialize)]
struct UserData<'a> {
    #[serde(borrow, default)]
    source: Option<Source<'a>>,
}

#[derive(Deserialize)]
struct WrappedData<'a> {
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
}

#[derive(Deserialize)]
struct Line<T> {
    data: T,
}

/// The facts of the event line `line` of type `kind` (one of
/// [`CHECKED_TYPES`]), read with typed deserializers that skip the rest.
pub fn facts_of(kind: &str, line: &[u8]) -> Result<MessageFacts, String> {
    let malformed = |e: serde_json::Error| format!("{kind} event is malformed: {e}");
    if kind == "user/message" {
        let l: Line<UserData<'_>> = serde_json::from_slice(line).map_err(malformed)?;
        let source_kind = l.data.source.and_then(|s| s.kind).map(Cow::into_owned);
        return Ok(MessageFacts { source_kind, ..MessageFacts::default() });
    }
    let l: Line<WrappedData<'_>> = serde_json::from_slice(line).map_err(malformed)?;
    let Some(m) = l.data.message else { return Ok(MessageFacts::default()) };
    let blocks = m.content.unwrap_or_default();
    Ok(MessageFacts {
        has_message: true,
        role: m.role.map(Cow::into_owned),
        source_kind: m.source.and_then(|s| s.kind).map(Cow::into_owned),
        tool_call_id: m.tool_call_id.is_some(),
        tool_result_block: blocks.iter().any(|b| b.kind.as_deref() == Some("tool-result")),
        tool_call_ids: blocks
            .into_iter()
            .filter(|b| b.kind.as_deref() == Some("tool-call"))
            .filter_map(|b| b.id.and_then(|id| id.0))
            .collect(),
    })
}

fn check_kind(generation: Generation, kind: Option<&str>, what: &str) -> Result<(), String> {
    if generation.has_producer_owned_sources() {
        match kind {
            Some("plugin") => {
                return Err(format!(
                    "{what} has a plugin-wrapped source (kind \"plugin\"), which a v4 log does not use \
                     (its sources are producer-owned)"
                ))
            }
            Some("") | None => return Err(format!("{what} has no source kind (required in a v4 log)")),
            Some(_) => {}
        }
    } else if kind == Some(CHECKPOINT_KIND) {
        return Err(format!(
            "{what} has a v4 checkpoint source (kind \"{CHECKPOINT_KIND}\") in a {generation} log \
             (its checkpoints are kind \"plugin\", plugin \"compact\")"
        ));
    }
    Ok(())
}

/// Checks the facts of the event of type `kind` at `seq` against the rules
/// of `generation`. Types without rules pass.
pub fn check_facts(generation: Generation, kind: &str, seq: u64, facts: &MessageFacts) -> Result<(), String> {
    let what = format!("{kind} event {seq}");
    let source = facts.source_kind.as_deref();
    match kind {
        "user/message" => check_kind(generation, source, &what),
        "tool/result" => {
            if !facts.has_message {
                return Err(format!("{what} has no `data.message`"));
            }
            let role = facts.role.as_deref();
            if generation.has_tool_role_results() {
                if role != Some("tool") {
                    return Err(format!("{what} is not a v4 tool result (its role is not \"tool\")"));
                }
                if !facts.tool_call_id {
                    return Err(format!("{what} has no top-level `toolCallId` (required in a v4 log)"));
                }
                if facts.tool_result_block {
                    return Err(format!("{what} has a `tool-result` content block, which a v4 log does not use"));
                }
            } else if role == Some("tool") {
                return Err(format!("{what} is a v4 tool result (role \"tool\") in a {generation} log"));
            }
            check_kind(generation, source, &what)
        }
        "assistant/message" | "system/message" | "developer/message" if generation.has_producer_owned_sources() => {
            if !facts.has_message {
                return Err(format!("{what} has no `data.message`"));
            }
            check_kind(generation, source, &what)
        }
        _ => Ok(()),
    }
}

/// [`facts_of`] then [`check_facts`]: checks the whole event `line`.
pub fn check_message(generation: Generation, kind: &str, seq: u64, line: &[u8]) -> Result<(), String> {
    if !CHECKED_TYPES.contains(&kind) {
        return Ok(());
    }
    let facts = facts_of(kind, line).map_err(|e| format!("{e} (event {seq})"))?;
    check_facts(generation, kind, seq, &facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(n: u64) -> Generation {
        Generation::new(n).unwrap()
    }

    #[test]
    fn sources_by_generation() {
        let checkpoint =
            br#"{"type":"user/message","seq":3,"data":{"content":[],"source":{"kind":"compact-checkpoint"}}}"#;
        assert!(check_message(g(4), "user/message", 3, checkpoint).is_ok());
        assert!(check_message(g(3), "user/message", 3, checkpoint).unwrap_err().contains("v3 log"));
        let plugin = br#"{"type":"user/message","seq":3,"data":{"source":{"kind":"plugin","plugin":"compact"}}}"#;
        assert!(check_message(g(3), "user/message", 3, plugin).is_ok());
        assert!(check_message(g(4), "user/message", 3, plugin).unwrap_err().contains("plugin-wrapped"));
        let system = br#"{"type":"system/message","seq":1,"data":{"message":{"source":{"kind":"plugin"}}}}"#;
        assert!(check_message(g(3), "system/message", 1, system).is_ok());
        assert!(check_message(g(4), "system/message", 1, system).is_err());
    }

    #[test]
    fn tool_results_by_generation() {
        let v4 = br#"{"type":"tool/result","seq":5,"data":{"message":{"role":"tool","toolCallId":"c","content":[{"type":"text","text":"x"}],"source":{"kind":"tool","callId":"c"}}}}"#;
        let v3 = br#"{"type":"tool/result","seq":5,"data":{"message":{"role":"user","content":[{"type":"tool-result","toolCallId":"c","content":[]}],"source":{"kind":"tool","callId":"c"}}}}"#;
        assert!(check_message(g(4), "tool/result", 5, v4).is_ok());
        assert!(check_message(g(3), "tool/result", 5, v3).is_ok());
        assert!(check_message(g(3), "tool/result", 5, v4).unwrap_err().contains("in a v3 log"));
        assert!(check_message(g(4), "tool/result", 5, v3).unwrap_err().contains("not a v4 tool result"));
        let block = br#"{"type":"tool/result","seq":5,"data":{"message":{"role":"tool","toolCallId":"c","content":[{"type":"tool-result"}],"source":{"kind":"tool"}}}}"#;
        assert!(check_message(g(4), "tool/result", 5, block).unwrap_err().contains("tool-result"));
    }
}
