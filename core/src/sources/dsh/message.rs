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

/// The v4 checkpoint source kind.
pub const CHECKPOINT_KIND: &str = "compact-checkpoint";

#[derive(Deserialize)]
struct Source<'a> {
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
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

/// Checks the event of type `kind` at `seq` (its whole `line`) against the
/// rules of `generation`. Types without rules are not read.
pub fn check_message(generation: Generation, kind: &str, seq: u64, line: &[u8]) -> Result<(), String> {
    let what = format!("{kind} event {seq}");
    let malformed = |e: serde_json::Error| format!("{what} is malformed: {e}");
    match kind {
        "user/message" => {
            let l: Line<UserData<'_>> = serde_json::from_slice(line).map_err(malformed)?;
            check_kind(generation, l.data.source.as_ref().and_then(|s| s.kind.as_deref()), &what)
        }
        "tool/result" => {
            let l: Line<WrappedData<'_>> = serde_json::from_slice(line).map_err(malformed)?;
            let Some(m) = l.data.message else { return Err(format!("{what} has no `data.message`")) };
            let role = m.role.as_deref();
            if generation.has_tool_role_results() {
                if role != Some("tool") {
                    return Err(format!("{what} is not a v4 tool result (its role is not \"tool\")"));
                }
                if m.tool_call_id.is_none() {
                    return Err(format!("{what} has no top-level `toolCallId` (required in a v4 log)"));
                }
                if m.content.iter().flatten().any(|b| b.kind.as_deref() == Some("tool-result")) {
                    return Err(format!("{what} has a `tool-result` content block, which a v4 log does not use"));
                }
            } else if role == Some("tool") {
                return Err(format!("{what} is a v4 tool result (role \"tool\") in a {generation} log"));
            }
            check_kind(generation, m.source.as_ref().and_then(|s| s.kind.as_deref()), &what)
        }
        "system/message" | "developer/message" if generation.has_producer_owned_sources() => {
            let l: Line<WrappedData<'_>> = serde_json::from_slice(line).map_err(malformed)?;
            let Some(m) = l.data.message else { return Err(format!("{what} has no `data.message`")) };
            check_kind(generation, m.source.as_ref().and_then(|s| s.kind.as_deref()), &what)
        }
        _ => Ok(()),
    }
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
