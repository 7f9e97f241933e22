//! One Copilot CLI event log replayed into its current model-visible
//! conversation (the rules are in the parent module's docs).

use std::fs::File;
use std::io;

use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::fs::as_of_now;
use crate::projection::Role;
use crate::sources::foreign::{each_line, iso_ms, title_from_text, Transcript};
use crate::sources::lenient::{lenient, LBool, LStr};

/// The working-directory context of `session.start` and `session.resume`
/// (and the whole data of `session.context_changed`).
#[derive(Deserialize, Default)]
struct Context<'a> {
    #[serde(borrow, default)]
    cwd: LStr<'a>,
}

/// The union of the `data` fields a replay reads, each lenient.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Data<'a> {
    #[serde(borrow, default)]
    content: LStr<'a>,
    #[serde(borrow, default)]
    source: LStr<'a>,
    #[serde(default)]
    is_autopilot_continuation: LBool,
    #[serde(default)]
    success: LBool,
    #[serde(borrow, default)]
    summary_content: LStr<'a>,
    #[serde(borrow, default)]
    title: LStr<'a>,
    #[serde(borrow, default)]
    start_time: LStr<'a>,
    #[serde(borrow, default)]
    cwd: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    context: Option<Context<'a>>,
    #[serde(borrow, default)]
    up_to_event_id: LStr<'a>,
}

/// One event line.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    id: LStr<'a>,
    #[serde(borrow, default)]
    timestamp: LStr<'a>,
    #[serde(borrow, default)]
    agent_id: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    data: Option<Data<'a>>,
}

impl Event<'_> {
    fn context_cwd(&self) -> Option<String> {
        let data = self.data.as_ref()?;
        let cwd = match self.kind.get()? {
            "session.start" | "session.resume" => data.context.as_ref()?.cwd.get(),
            "session.context_changed" => data.cwd.get(),
            _ => None,
        };
        cwd.filter(|c| !c.is_empty()).map(str::to_owned)
    }
}

/// What a log's `session.start` says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Start {
    /// `data.startTime`, else the envelope's `timestamp` (ms).
    pub created_at: Option<u64>,
    /// `data.context.cwd`.
    pub cwd: Option<String>,
}

fn start_of(event: &Event<'_>) -> Option<Start> {
    if event.kind.get() != Some("session.start") {
        return None;
    }
    let data = event.data.as_ref();
    let time =
        data.and_then(|d| d.start_time.get()).and_then(iso_ms).or_else(|| event.timestamp.get().and_then(iso_ms));
    Some(Start { created_at: time, cwd: event.context_cwd() })
}

/// The `session.start` of a log, from its first line (default when the
/// first line is not one).
pub fn read_start(file: File) -> io::Result<Start> {
    let mut start = Start::default();
    let read = each_line(file, 1, |_, bytes| {
        let Ok(event) = serde_json::from_slice::<Event<'_>>(bytes) else { return false };
        start = start_of(&event).unwrap_or_default();
        true
    });
    match read {
        // A first line too long: no start (reading the session reports it).
        Err(e) if e.kind() != io::ErrorKind::InvalidData => Err(e),
        _ => Ok(start),
    }
}

/// Whether a `user.message` was typed by the user.
fn typed(data: &Data<'_>) -> bool {
    matches!(data.source.get(), None | Some("" | "user")) && !data.is_autopilot_continuation.0
}

/// Replays a whole log as it was when the read began, up to its last
/// complete line.
pub fn read(file: File) -> io::Result<Transcript> {
    read_named(file, None)
}

/// [`read`], for a session named `name` (its `workspace.yaml`'s): the
/// title is the latest `session.title_changed` title, else the name, else
/// the first typed user message, else the first assistant text.
pub fn read_named(file: File, name: Option<String>) -> io::Result<Transcript> {
    let mut out = Transcript::default();
    let mut items: Vec<ConversationItem> = Vec::new();
    // Where the running compaction started (items before it are summarized).
    let mut compaction_from: Option<usize> = None;
    // The position of each kept user message by event id (a rewind's target).
    let mut user_at: Vec<(String, usize)> = Vec::new();
    let (mut title, mut first_user, mut first_assistant) = (None::<String>, None::<String>, None::<String>);
    let stats = each_line(as_of_now(file)?, u64::MAX, |_, bytes| {
        let Ok(event) = serde_json::from_slice::<Event<'_>>(bytes) else { return false };
        if event.agent_id.get().is_some() {
            return true;
        }
        if let Some(start) = start_of(&event) {
            out.created_at = out.created_at.or(start.created_at);
        }
        if let Some(cwd) = event.context_cwd() {
            out.cwd = Some(cwd);
        }
        let Some(data) = event.data.as_ref() else { return true };
        match event.kind.get() {
            Some("user.message") if typed(data) => {
                let text = data.content.get().unwrap_or_default();
                if text.trim().is_empty() {
                    return true;
                }
                if first_user.is_none() {
                    first_user = title_from_text(text);
                }
                if let Some(id) = event.id.owned() {
                    user_at.push((id, items.len()));
                }
                items.push(ConversationItem::new(Role::User, text));
            }
            Some("assistant.message") => {
                let text = data.content.get().unwrap_or_default();
                if text.trim().is_empty() {
                    return true;
                }
                if first_assistant.is_none() {
                    first_assistant = title_from_text(text);
                }
                items.push(ConversationItem::new(Role::Assistant, text));
            }
            Some("session.compaction_start") => compaction_from = Some(items.len()),
            Some("session.compaction_complete") => {
                let from = compaction_from.take().unwrap_or(items.len()).min(items.len());
                let summary = data.summary_content.get().filter(|s| !s.trim().is_empty());
                if let (true, Some(summary)) = (data.success.0, summary) {
                    items.splice(..from, [ConversationItem::checkpoint(summary)]);
                    // Positions before the summary are gone; later ones moved.
                    user_at.retain(|(_, at)| *at >= from);
                    for (_, at) in &mut user_at {
                        *at = *at + 1 - from;
                    }
                }
            }
            Some("session.context_cleared") => {
                items.clear();
                user_at.clear();
                compaction_from = None;
            }
            Some("session.snapshot_rewind") => {
                let target = data.up_to_event_id.get();
                if let Some(k) = user_at.iter().position(|(id, _)| Some(id.as_str()) == target) {
                    items.truncate(user_at[k].1);
                    user_at.truncate(k);
                    compaction_from = compaction_from.map(|c| c.min(items.len()));
                }
            }
            Some("session.title_changed") => {
                if let Some(t) = data.title.get().filter(|t| !t.trim().is_empty()) {
                    title = Some(t.to_owned());
                }
            }
            _ => {}
        }
        true
    })?;
    out.stats = stats;
    out.title = title.or(name).or(first_user).or(first_assistant);
    out.items = items;
    Ok(out)
}
