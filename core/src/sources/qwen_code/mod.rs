//! Qwen Code chats: a read-only session source over Qwen Code's projects
//! directory (`$QWEN_RUNTIME_DIR/projects`, else `~/.qwen/projects`),
//! reading `<project>/chats/<session id>.jsonl`.
//!
//! ```no_run
//! use dsh_session_reference::sources::qwen_code::QwenCodeSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = QwenCodeSource::open("/home/me/.qwen/projects")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The records follow `QwenLM/qwen-code`'s
//! `packages/core/src/services/chatRecordingService.ts` (`ChatRecord`),
//! `sessionService.ts`, `session-api-history.ts` and
//! `utils/conversation-chain.ts` (Apache-2.0): one JSON record a line,
//! `{uuid, parentUuid, sessionId, timestamp, type, subtype?, cwd, message?,
//! systemPayload?, isSidechain?}`, `message` a Gemini `Content`
//! (`{role, parts}`).
//!
//! # Sessions
//!
//! - **id**: `qwen-code:<sessionId>` of the file's first record. A
//!   zero-byte file (or one whose first line is not complete yet) is not a
//!   session yet; a file whose first line has no `sessionId` is reported.
//! - **createdAt**: the first record's `timestamp`, else the file's
//!   creation (or modification) time.
//! - **cwd**: the first record's `cwd`.
//! - **title**: the `customTitle` of the latest `custom_title` record (set
//!   by `/rename` or generated), else the first user message of the
//!   conversation (whitespace collapsed, at most 100 characters).
//! - **capturedThroughSeq**: the 0-based number of the last line read. A
//!   read sees the file as it was when it began, up to its last complete
//!   line.
//!
//! # The current conversation
//!
//! Records form a tree by `uuid`/`parentUuid` (the first record of a uuid
//! is the one that counts, as Qwen Code merges them); the current chain is
//! the path from the last record (the last one not of a subagent's
//! sidechain) up to its root, so turns a `/rewind` left behind are not on
//! it. Along the chain, as `SessionApiHistoryAccumulator` builds the model's
//! history:
//!
//! - a `system` record of subtype `chat_compression` replaces everything
//!   before it with its `systemPayload.compressedHistory`: its first
//!   content, the summary, is a checkpoint (without the resume instruction
//!   Qwen Code appends to it), the model's acknowledgement after it is
//!   dropped, and of the rest, user texts (not the files and images Qwen
//!   Code restores after a compaction) and model texts are kept;
//! - `user` without a subtype: what was typed (`systemPayload.displayText`
//!   when there is one, else the message's text parts); subtype
//!   `mid_turn_user_message` (typed while a turn ran): its text parts;
//!   every other subtype (notifications, cron prompts, other injected
//!   input) is dropped;
//! - a `system` `slash_command` result that was not sent to the model
//!   drops the command's user record right before it;
//! - `assistant`: its text parts (never `thought` parts or function
//!   calls);
//! - never `tool_result`, other `system` records or sidechain records.
//!
//! A line that is not JSON is skipped wherever it is.
//!
//! # Safety
//!
//! As for every source: nothing is written or locked, no link below the
//! root is followed, a line longer than
//! [`MAX_LINE_BYTES`](crate::sources::foreign::MAX_LINE_BYTES) makes the
//! session unreadable.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::fs::{as_of_now, FileIdentity};
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::files::{walk_tree, FileSessions, Head, Rel, SessionFiles, Under};
use crate::sources::foreign::{each_line, iso_ms, title_from_text, Transcript};
use crate::sources::gemini_cli::chat::Parts;
use crate::sources::kind::{seen, Kind, Root};
use crate::sources::lenient::{lenient, LBool, LStr, Objects};

/// What every Qwen Code session id starts with.
pub const PREFIX: &str = "qwen-code:";

/// Qwen Code as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "qwen-code",
    format: "Qwen Code",
    about: "Qwen Code chats (its projects directory)",
    prefix: PREFIX,
    location: "$QWEN_RUNTIME_DIR/projects, else ~/.qwen/projects",
    default: Some(|env| env.var("QWEN_RUNTIME_DIR").unwrap_or_else(|| env.home().join(".qwen")).join("projects")),
    also: &[],
    env: &["QWEN_RUNTIME_DIR", "HOME", "USERPROFILE"],
    root: Root::InHome("projects"),
    layout: "project directories holding chats/<session id>.jsonl (as ~/.qwen/projects)",
    open: |root| Ok(QwenCodeSource::open(root)?.into_query()),
    empty: empty_note,
};

/// Why a projects root lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    let chats: usize = (entries.iter().filter(|d| d.dir))
        .map(|d| seen(&root.join(&d.name).join("chats")).iter().filter(|e| e.file && is_jsonl(&e.name)).count())
        .sum();
    match chats {
        0 => kind.expected(root, &entries),
        n => format!("{}: its {n} chat files are empty or unreadable", kind.no_session_in(root)),
    }
}

/// The Qwen Code layout of a projects root.
#[derive(Clone, Copy, Debug, Default)]
pub struct QwenCode;

/// A read-only session source over Qwen Code's projects directory.
pub type QwenCodeSource = FileSessions<QwenCode>;

impl FileSessions<QwenCode> {
    /// Opens Qwen Code's projects directory (a directory; a link to one is
    /// fine).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        FileSessions::with_format(root, QwenCode)
    }
}

fn is_jsonl(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| n.len() > ".jsonl".len() && n.ends_with(".jsonl"))
}

/// The instruction Qwen Code appends to a compaction's summary for the
/// model that resumes (not part of what the summary says).
const RESUME_TRAILER: &str =
    "Resume the prior task using the summary above. Continue from the last in-flight step; do \
                              not acknowledge the summary, do not re-introduce, do not greet the user again.";

/// How the blocks Qwen Code restores after a compaction (files read
/// before it, images) start: context it injected, not a user's words.
const RESTORED: &[&str] = &[
    "The following files were recently accessed before context was compacted.",
    "Recently accessed file (full current content embedded):",
    "Recent visual snapshots preserved from before context was compacted",
];

/// A Gemini `Content`: `{role, parts}`.
#[derive(Deserialize, Default)]
struct Content<'a> {
    #[serde(borrow, default)]
    role: LStr<'a>,
    #[serde(borrow, default)]
    parts: Parts<'a>,
}

/// What a record's `systemPayload` holds that a read uses.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Payload<'a> {
    #[serde(borrow, default)]
    custom_title: LStr<'a>,
    #[serde(borrow, default)]
    display_text: LStr<'a>,
    #[serde(borrow, default)]
    compressed_history: Objects<Content<'a>>,
    #[serde(borrow, default)]
    phase: LStr<'a>,
    #[serde(default)]
    sent_to_model: LBool,
    #[serde(borrow, default)]
    raw_command: LStr<'a>,
}

/// One record (every field lenient).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    #[serde(borrow, default)]
    uuid: LStr<'a>,
    #[serde(borrow, default)]
    parent_uuid: LStr<'a>,
    #[serde(borrow, default)]
    session_id: LStr<'a>,
    #[serde(borrow, default)]
    timestamp: LStr<'a>,
    #[serde(borrow, default)]
    cwd: LStr<'a>,
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    subtype: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    message: Option<Content<'a>>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    system_payload: Option<Payload<'a>>,
    #[serde(default)]
    is_sidechain: LBool,
}

/// What the first record says of the session.
struct Head0 {
    id: String,
    created_at: Option<u64>,
    cwd: Option<String>,
}

impl Head0 {
    fn of(r: &Record<'_>) -> Option<Head0> {
        Some(Head0 {
            id: r.session_id.get().filter(|s| !s.is_empty())?.to_owned(),
            created_at: r.timestamp.get().and_then(iso_ms),
            cwd: r.cwd.get().filter(|s| !s.is_empty()).map(str::to_owned),
        })
    }
}

fn not_a_chat() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "not a Qwen Code chat: its first line has no sessionId")
}

/// The first record of a file open at its start: `Ok(None)` when its first
/// line is not complete yet.
fn read_head(file: File) -> io::Result<Option<Head0>> {
    let mut head = None;
    let stats = each_line(as_of_now(file)?, 1, |_, bytes| {
        head = serde_json::from_slice::<Record<'_>>(bytes).ok().and_then(|r| Head0::of(&r));
        head.is_some()
    })?;
    match (stats.lines, head) {
        (0, _) => Ok(None),
        (_, Some(h)) => Ok(Some(h)),
        (_, None) => Err(not_a_chat()),
    }
}

/// What a record does to the model's history.
enum Does {
    /// Adds a message (`true`: a typed prompt).
    Says(ConversationItem, bool),
    /// Replaces the history before it (a compaction).
    Replaces(Vec<ConversationItem>),
    /// Drops the message of the record right before it when that one says
    /// this text (a local slash command's invocation).
    Unsays(String),
    /// Nothing (`true`: a record of the model's history all the same,
    /// such as a tool's output).
    Nothing(bool),
}

struct Entry {
    uuid: String,
    parent: Option<String>,
    sidechain: bool,
    does: Does,
}

fn item(role: Role, text: String) -> Option<ConversationItem> {
    (!text.trim().is_empty()).then(|| ConversationItem::new(role, text))
}

/// The conversation a compaction leaves: its summary as a checkpoint, the
/// acknowledgement after it dropped, then the kept messages.
fn compacted(history: &[Content<'_>]) -> Vec<ConversationItem> {
    let mut out = Vec::new();
    let mut rest = history;
    if let Some((first, after)) = history.split_first().filter(|(c, _)| c.role.get() == Some("user")) {
        let summary = first.parts.joined();
        let summary = summary.trim_end().strip_suffix(RESUME_TRAILER).unwrap_or(&summary).trim_end();
        if !summary.is_empty() {
            out.push(ConversationItem::checkpoint(summary.to_owned()));
        }
        rest = match after.split_first() {
            Some((ack, tail)) if ack.role.get() == Some("model") => tail,
            _ => after,
        };
    }
    for content in rest {
        let text = content.parts.joined();
        let kept = match content.role.get() {
            Some("user") if !RESTORED.iter().any(|p| text.trim_start().starts_with(p)) => item(Role::User, text),
            Some("model") => item(Role::Assistant, text),
            _ => None,
        };
        out.extend(kept);
    }
    out
}

/// What one record does.
fn does(r: &Record<'_>) -> Does {
    let text = || r.message.as_ref().map(|m| m.parts.joined()).unwrap_or_default();
    let payload = r.system_payload.as_ref();
    let said = match (r.kind.get(), r.subtype.get()) {
        (Some("user"), None) => {
            let typed = payload.and_then(|p| p.display_text.owned()).unwrap_or_else(text);
            return item(Role::User, typed).map_or(Does::Nothing(true), |i| Does::Says(i, true));
        }
        (Some("user"), Some("mid_turn_user_message")) => item(Role::User, text()),
        (Some("assistant"), None) => item(Role::Assistant, text()),
        (Some("system"), Some("chat_compression")) => {
            let history = payload.map_or(&[][..], |p| &p.compressed_history.0[..]);
            return Does::Replaces(compacted(history));
        }
        (Some("system"), Some("slash_command")) => {
            return match payload {
                Some(p) if p.phase.get() == Some("result") && !p.sent_to_model.0 => {
                    p.raw_command.owned().map_or(Does::Nothing(false), Does::Unsays)
                }
                _ => Does::Nothing(false),
            };
        }
        _ => None,
    };
    let message = r.message.is_some() && r.kind.get() != Some("system");
    said.map_or(Does::Nothing(message), |i| Does::Says(i, false))
}

/// The current chain, root first: from the last record that is not a
/// sidechain's (the last record, when all are) up the `parentUuid`s.
fn chain(entries: &[Entry]) -> Vec<&Entry> {
    let mut by_uuid: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        // The first record of a uuid is the one that counts.
        by_uuid.entry(e.uuid.as_str()).or_insert(i);
    }
    let leaf = entries.iter().rposition(|e| !e.sidechain).or(entries.len().checked_sub(1));
    let mut path = Vec::new();
    let mut at = leaf.and_then(|i| by_uuid.get(entries[i].uuid.as_str()).copied());
    // A cycle cannot make the walk longer than the file.
    while let Some(i) = at.filter(|_| path.len() < entries.len()) {
        path.push(&entries[i]);
        at = entries[i].parent.as_deref().and_then(|p| by_uuid.get(p).copied());
    }
    path.reverse();
    path
}

/// The model's history along a chain.
fn conversation(path: &[&Entry]) -> Vec<ConversationItem> {
    let mut items: Vec<ConversationItem> = Vec::new();
    // Whether the last message record was a typed prompt, kept as the last
    // item (what a local slash command's result takes back).
    let mut prompt_last = false;
    for entry in path.iter().filter(|e| !e.sidechain) {
        match &entry.does {
            Does::Says(item, prompt) => {
                items.push(item.clone());
                prompt_last = *prompt;
            }
            Does::Replaces(history) => {
                items = history.clone();
                prompt_last = false;
            }
            Does::Unsays(command) => {
                if prompt_last && items.last().is_some_and(|i| i.text == *command) {
                    items.pop();
                }
                prompt_last = false;
            }
            Does::Nothing(message) => prompt_last &= !message,
        }
    }
    items
}

/// One chat file's conversation.
fn read(file: File) -> io::Result<Transcript> {
    let mut head: Option<Head0> = None;
    let mut entries: Vec<Entry> = Vec::new();
    let mut title: Option<String> = None;
    let stats = each_line(as_of_now(file)?, u64::MAX, |n, bytes| {
        let Ok(r) = serde_json::from_slice::<Record<'_>>(bytes) else { return false };
        if n == 0 {
            head = Head0::of(&r);
        }
        if r.kind.get() == Some("system") && r.subtype.get() == Some("custom_title") {
            // The latest title wins.
            if let Some(t) = r.system_payload.as_ref().and_then(|p| p.custom_title.get()).map(str::trim) {
                title = (!t.is_empty()).then(|| t.to_owned()).or(title.take());
            }
        }
        let Some(uuid) = r.uuid.get().filter(|u| !u.is_empty()) else { return false };
        entries.push(Entry {
            uuid: uuid.to_owned(),
            parent: r.parent_uuid.owned(),
            sidechain: r.is_sidechain.0,
            does: does(&r),
        });
        true
    })?;
    let Some(head) = head else { return Err(not_a_chat()) };
    let items = conversation(&chain(&entries));
    let title = title.or_else(|| {
        items.iter().find(|i| i.role == Role::User && !i.checkpoint).and_then(|i| title_from_text(&i.text))
    });
    Ok(Transcript { items, title, cwd: head.cwd, created_at: head.created_at, stats })
}

impl SessionFiles for QwenCode {
    const FORMAT: &'static str = "Qwen Code";
    const PREFIX: &'static str = PREFIX;

    fn walk(&self, root: &Path, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>) {
        let descend = |rel: &[OsString], name: &OsStr| rel.is_empty() || (rel.len() == 1 && name == "chats");
        let take = |rel: &[OsString], name: &OsStr| rel.len() == 2 && is_jsonl(name);
        walk_tree(root, 2, &descend, &take, out, rejected);
    }

    fn heads(&self, _: &Under<'_>, _: &[OsString], file: File, identity: &FileIdentity) -> io::Result<Vec<Head>> {
        if identity.size == 0 {
            return Ok(Vec::new());
        }
        Ok(read_head(file)?.into_iter().map(|h| Head { bare: h.id, created_at: h.created_at, cwd: h.cwd }).collect())
    }

    fn read(&self, _root: &Path, _rel: &[OsString], file: File, _bare: &str) -> io::Result<Transcript> {
        read(file)
    }

    const NAMES_SESSIONS: bool = true;

    /// Qwen Code names a chat `<session id>.jsonl`.
    fn named_for(&self, rel: &[OsString], bare: &str) -> bool {
        rel.last().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".jsonl")) == Some(bare)
    }
}
