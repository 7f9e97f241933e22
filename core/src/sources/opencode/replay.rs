//! One OpenCode session's rows replayed into its current model-visible
//! conversation (the rules are in the parent module's docs).

use std::collections::{HashMap, HashSet};

use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::projection::Role;
use crate::sources::foreign::title_from_text;
use crate::sources::lenient::{lenient, LBool, LStr};

/// A message row's `data` (the fields a replay reads; the rest skipped).
#[derive(Deserialize, Default)]
struct InfoJson<'a> {
    #[serde(borrow, default)]
    role: LStr<'a>,
    #[serde(rename = "parentID", borrow, default)]
    parent_id: LStr<'a>,
    #[serde(default)]
    summary: LBool,
    #[serde(borrow, default)]
    finish: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    error: Option<ErrorJson<'a>>,
}

#[derive(Deserialize, Default)]
struct ErrorJson<'a> {
    #[serde(borrow, default)]
    name: LStr<'a>,
}

/// A part row's `data`.
#[derive(Deserialize, Default)]
struct PartJson<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    text: LStr<'a>,
    #[serde(default)]
    synthetic: LBool,
    #[serde(default)]
    ignored: LBool,
    #[serde(borrow, default)]
    tail_start_id: LStr<'a>,
}

/// What a replay keeps of one part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// A `text` part: its text, and whether the harness made it
    /// (`synthetic`) or it is not sent to the model (`ignored`).
    Text {
        /// The text.
        text: String,
        /// `synthetic` or `ignored`.
        hidden: bool,
    },
    /// A `compaction` part, with the id of the first message of the tail it
    /// keeps (`tail_start_id`), if any.
    Compaction(Option<String>),
    /// A `step-start` or `reasoning` part (what an aborted reply may hold
    /// and still be dropped).
    Step,
    /// Any other part (tools, files, patches, snapshots…).
    Other,
}

/// One message row with its parts (by part id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The message id.
    pub id: String,
    /// `true` for `role: "user"`, `false` for `"assistant"`.
    pub user: bool,
    /// An assistant's `parentID` (the user message it answers).
    pub parent_id: Option<String>,
    /// An assistant's `summary: true` (a compaction's summary).
    pub summary: bool,
    /// An assistant's `finish` is set.
    pub finished: bool,
    /// An assistant's `error`: `Some(name)` when it failed.
    pub error: Option<String>,
    /// Its parts, by id.
    pub parts: Vec<(String, Part)>,
}

impl Message {
    /// A message from its id and its row's `data` (`None`: not JSON, or
    /// neither a user nor an assistant message).
    pub fn parse(id: String, data: &[u8]) -> Option<Message> {
        let info: InfoJson<'_> = serde_json::from_slice(data).ok()?;
        let user = match info.role.get()? {
            "user" => true,
            "assistant" => false,
            _ => return None,
        };
        Some(Message {
            id,
            user,
            parent_id: info.parent_id.owned(),
            summary: !user && info.summary.0,
            finished: info.finish.get().is_some(),
            error: info.error.map(|e| e.name.owned().unwrap_or_default()),
            parts: Vec::new(),
        })
    }

    fn compaction(&self) -> Option<&Option<String>> {
        self.parts.iter().find_map(|(_, p)| match p {
            Part::Compaction(tail) => Some(tail),
            _ => None,
        })
    }

    /// A summary that completed: OpenCode's `summary && finish && !error`.
    fn completed_summary(&self) -> bool {
        !self.user && self.summary && self.finished && self.error.is_none()
    }

    /// The texts of its visible text parts, joined with `"\n"`.
    fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|(_, p)| match p {
                Part::Text { text, hidden: false } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// A part from its row's `data` (`None`: not JSON).
pub fn parse_part(data: &[u8]) -> Option<Part> {
    let part: PartJson<'_> = serde_json::from_slice(data).ok()?;
    Some(match part.kind.get() {
        Some("text") => {
            Part::Text { text: part.text.owned().unwrap_or_default(), hidden: part.synthetic.0 || part.ignored.0 }
        }
        Some("compaction") => Part::Compaction(part.tail_start_id.owned()),
        Some("step-start" | "reasoning") => Part::Step,
        _ => Part::Other,
    })
}

/// What `session.revert` says: the message from which on the session is
/// rewound, and the part of the message before it from which on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Revert {
    /// `messageID`.
    #[serde(rename = "messageID", default)]
    pub message_id: Option<String>,
    /// `partID`.
    #[serde(rename = "partID", default)]
    pub part_id: Option<String>,
}

/// Drops what a revert rewound, as OpenCode's cleanup does before its next
/// prompt: the messages from `messageID` on, then, when `partID` is set,
/// the parts of the last message kept from that part on.
pub fn revert(messages: &mut Vec<Message>, revert: &Revert) {
    let Some(at) = revert.message_id.as_deref() else { return };
    if let Some(cut) = messages.iter().position(|m| m.id == at) {
        messages.truncate(cut);
    }
    if let (Some(part), Some(last)) = (revert.part_id.as_deref(), messages.last_mut()) {
        if let Some(cut) = last.parts.iter().position(|(id, _)| id == part) {
            last.parts.truncate(cut);
        }
    }
}

/// The messages the model sees after compaction, as OpenCode's
/// `filterCompacted` gives them (positions in `messages`, in the order they
/// are sent): walking back from the newest, the walk stops at the user
/// message that asked for the newest completed compaction (or, when that
/// compaction kept a tail, at the tail's first message); a kept tail is
/// put after the summary.
pub fn filter_compacted(messages: &[Message]) -> Vec<usize> {
    let mut result = Vec::new();
    let mut completed: HashSet<&str> = HashSet::new();
    let mut retain: Option<&str> = None;
    for (i, m) in messages.iter().enumerate().rev() {
        result.push(i);
        if let Some(r) = retain {
            if m.id == r {
                break;
            }
            continue;
        }
        if m.user && completed.contains(m.id.as_str()) {
            match m.compaction() {
                None => continue,
                Some(None) => break,
                Some(Some(tail)) => {
                    retain = Some(tail);
                    if m.id == *tail {
                        break;
                    }
                    continue;
                }
            }
        }
        if m.completed_summary() {
            if let Some(parent) = &m.parent_id {
                completed.insert(parent);
            }
        }
    }
    result.reverse();
    let with_tail = |m: &Message| m.user && matches!(m.compaction(), Some(Some(_)));
    let Some(ci) = result.iter().rposition(|&i| with_tail(&messages[i])) else { return result };
    let compaction = &messages[result[ci]];
    let Some(Some(tail)) = compaction.compaction() else { return result };
    let summary = result.iter().enumerate().position(|(k, &i)| {
        k > ci && !messages[i].user && messages[i].summary && messages[i].parent_id.as_deref() == Some(&compaction.id)
    });
    let tail_at = result.iter().position(|&i| messages[i].id == *tail);
    match (tail_at, summary) {
        (Some(t), Some(s)) if t < ci && s > ci => {
            let mut out = Vec::with_capacity(result.len());
            out.extend_from_slice(&result[ci..=s]);
            out.extend_from_slice(&result[t..ci]);
            out.extend_from_slice(&result[s + 1..]);
            out
        }
        _ => result,
    }
}

/// Whether OpenCode leaves a failed reply out of what it sends: every
/// failed reply, except one aborted after it said or did something.
fn dropped(m: &Message) -> bool {
    match &m.error {
        None => false,
        Some(name) => !(name == "MessageAbortedError" && m.parts.iter().any(|(_, p)| !matches!(p, Part::Step))),
    }
}

/// The conversation items of `messages` (already reverted), in the order
/// the model sees them.
pub fn items(messages: &[Message]) -> Vec<ConversationItem> {
    let mut out = Vec::new();
    for i in filter_compacted(messages) {
        let m = &messages[i];
        if !m.user && dropped(m) {
            continue;
        }
        let text = m.text();
        if text.is_empty() {
            continue;
        }
        out.push(match (m.user, m.completed_summary()) {
            (true, _) => ConversationItem::new(Role::User, text),
            (false, true) => ConversationItem::checkpoint(text),
            (false, false) => ConversationItem::new(Role::Assistant, text),
        });
    }
    out
}

/// Whether `title` is one OpenCode gives a session before it has one:
/// `New session - ` or `Child session - ` and an ISO time with milliseconds.
pub fn is_default_title(title: &str) -> bool {
    let Some(rest) = title.strip_prefix("New session - ").or_else(|| title.strip_prefix("Child session - ")) else {
        return false;
    };
    let b = rest.as_bytes();
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd.dddZ";
    b.len() == SHAPE.len() && b.iter().zip(SHAPE).all(|(c, s)| if *s == b'd' { c.is_ascii_digit() } else { c == s })
}

/// The title: the session's own unless it is the default one, else the
/// first visible user text of the whole session (rewound or compacted
/// away or not), else its first assistant text.
pub fn title(own: Option<&str>, messages: &[Message]) -> Option<String> {
    if let Some(t) = own.map(str::trim).filter(|t| !t.is_empty() && !is_default_title(t)) {
        return Some(t.to_owned());
    }
    let first = |user: bool| messages.iter().filter(|m| m.user == user).find_map(|m| title_from_text(&m.text()));
    first(true).or_else(|| first(false))
}

/// Attaches parts (`(message id, part id, part)`, each message's in part-id
/// order) to their messages; parts of unknown messages are dropped.
pub fn attach(messages: &mut [Message], parts: Vec<(String, String, Part)>) {
    let at: HashMap<String, usize> = messages.iter().enumerate().map(|(i, m)| (m.id.clone(), i)).collect();
    for (message, id, part) in parts {
        if let Some(&i) = at.get(&message) {
            messages[i].parts.push((id, part));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: &str, user: bool, parts: Vec<Part>) -> Message {
        Message {
            id: id.into(),
            user,
            parent_id: None,
            summary: false,
            finished: true,
            error: None,
            parts: parts.into_iter().enumerate().map(|(i, p)| (format!("{id}-p{i}"), p)).collect(),
        }
    }

    fn text(t: &str) -> Part {
        Part::Text { text: t.into(), hidden: false }
    }

    fn summary(id: &str, parent: &str) -> Message {
        Message { parent_id: Some(parent.into()), summary: true, ..msg(id, false, vec![text("sum")]) }
    }

    #[test]
    fn default_titles() {
        assert!(is_default_title("New session - 2026-01-02T03:04:05.678Z"));
        assert!(is_default_title("Child session - 2026-01-02T03:04:05.678Z"));
        assert!(!is_default_title("New session - fix the build"));
        assert!(!is_default_title("Fix the build"));
    }

    #[test]
    fn compaction_with_a_tail_puts_the_tail_after_the_summary() {
        let ms = vec![
            msg("m1", true, vec![text("old")]),
            msg("m2", false, vec![text("old answer")]),
            msg("m3", true, vec![text("kept")]),
            msg("m4", false, vec![text("kept answer")]),
            msg("m5", true, vec![Part::Compaction(Some("m3".into()))]),
            summary("m6", "m5"),
            msg("m7", true, vec![text("next")]),
        ];
        assert_eq!(filter_compacted(&ms), vec![4, 5, 2, 3, 6]);
        let without_tail = vec![
            msg("m1", true, vec![text("old")]),
            msg("m5", true, vec![Part::Compaction(None)]),
            summary("m6", "m5"),
            msg("m7", true, vec![text("next")]),
        ];
        assert_eq!(filter_compacted(&without_tail), vec![1, 2, 3]);
        // A summary that did not finish compacts nothing.
        let mut unfinished = without_tail.clone();
        unfinished[2].finished = false;
        assert_eq!(filter_compacted(&unfinished), vec![0, 1, 2, 3]);
    }
}
