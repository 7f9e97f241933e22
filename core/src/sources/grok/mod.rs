//! Grok Build sessions: a read-only session source over Grok Build's
//! sessions directory (`$GROK_HOME/sessions`, else `~/.grok/sessions`),
//! reading `<encoded cwd>/<session id>/chat_history.jsonl` with the
//! session's `summary.json` beside it.
//!
//! ```no_run
//! use dsh_session_reference::sources::grok::GrokSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = GrokSource::open("/home/me/.grok/sessions")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The files follow `xai-org/grok-build` (Apache-2.0):
//! `crates/codegen/xai-grok-shell/src/session/storage/` (the layout and how
//! `chat_history.jsonl` is loaded), `session/persistence.rs` (`summary.json`),
//! `xai-grok-sampling-types/src/conversation.rs` (`ConversationItem`, the
//! records of `chat_history.jsonl`) and `xai-chat-state/src/compaction_utils.rs`
//! (what a compaction writes, and `extract_user_query`). A session's
//! `updates.jsonl` is the stream of ACP updates its display replays;
//! `chat_history.jsonl` is the conversation the model is sent, which Grok
//! Build rewrites on a `/rewind` or a compaction, so it is the one read.
//!
//! # Sessions
//!
//! - **id**: `grok:<session id>`, the session's directory name. A zero-byte
//!   chat history is not a session yet; a session directory with an
//!   `updates.jsonl` but no `chat_history.jsonl` (which Grok Build rebuilds
//!   when the session is resumed) is reported.
//! - **createdAt**: `summary.json`'s `created_at`, else the file's creation
//!   (or modification) time.
//! - **cwd**: `summary.json`'s `info.cwd`.
//! - **title**: `summary.json`'s `generated_title` (generated, or set by
//!   `/rename`), else its `session_summary`, else the first user message of
//!   the conversation (whitespace collapsed, at most 100 characters).
//! - **capturedThroughSeq**: the 0-based number of the last line read. A
//!   read sees the file as it was when it began, up to its last complete
//!   line.
//!
//! # The current conversation
//!
//! Each line is a `ConversationItem` (`{"type": "user" | "assistant" |
//! "system" | "tool_result" | "backend_tool_call" | "reasoning", …}`), or,
//! in chat format 0, a chat message (`{"role", "content"}`); of them:
//!
//! - a user item without a `synthetic_reason`, or one typed mid-turn
//!   (`interjection`): what `extract_user_query` takes of its text parts
//!   (the inside of `<user_query>`, without the `<user_info>`,
//!   `<system-reminder>` and other blocks Grok Build adds); a message that is
//!   only such blocks gives nothing;
//! - the user item a compaction writes (`compaction_meta`, starting with
//!   Grok Build's continuation preamble): its summary, a checkpoint;
//! - an assistant item: its `content` (never `tool_calls` or reasoning);
//! - never other synthetic user items (reminders, project instructions,
//!   auto-continue, task notifications, re-read files), system items, tool
//!   results, server-side tool calls or reasoning items.
//!
//! A line that is not JSON is skipped wherever it is.
//!
//! # Safety
//!
//! As for every source: nothing is written or locked, no link below the
//! root is followed, a line longer than
//! [`MAX_LINE_BYTES`](crate::sources::foreign::MAX_LINE_BYTES) makes the
//! session unreadable.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::fs::{as_of_now, entry_kind, EntryKind, FileIdentity, LINK_REASON};
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::files::{walk_with, FileSessions, Head, Rel, SessionFiles, Under, Walk};
use crate::sources::foreign::{each_line, iso_ms, title_from_text, Transcript};
use crate::sources::kind::{seen, Kind, Root};
use crate::sources::lenient::{lenient, Content, LStr};

/// What every Grok Build session id starts with.
pub const PREFIX: &str = "grok:";

/// The conversation the model is sent.
const CHAT_HISTORY: &str = "chat_history.jsonl";

/// The stream of ACP updates (not read; its presence without a chat
/// history is reported).
const UPDATES: &str = "updates.jsonl";

/// The session's metadata.
const SUMMARY: &str = "summary.json";

/// The longest `summary.json` read (a longer one is not read).
const MAX_SUMMARY_BYTES: u64 = 4 << 20;

/// How the user item a compaction writes starts (`format_compact_summary_content`).
const SUMMARY_PREAMBLE: &str = "This session is being continued from a previous conversation that ran out of context. \
                                The summary below covers the earlier portion of the conversation.";

/// The blocks Grok Build adds to a user's text (`SYSTEM_TAGS` of
/// `compaction_utils.rs`), taken out of a prompt.
const SYSTEM_TAGS: &[&str] = &[
    "user_info",
    "project_layout",
    "git_status",
    "fork-context",
    "system-reminder",
    "agent-memory",
    "system_reminder",
    "background_context",
    "command-name",
    "command-message",
    "command-args",
    "rules",
];

/// Grok Build as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "grok",
    format: "Grok Build",
    about: "Grok Build sessions (its sessions directory)",
    prefix: PREFIX,
    location: "$GROK_HOME/sessions, else ~/.grok/sessions",
    default: Some(|env| env.var("GROK_HOME").unwrap_or_else(|| env.home().join(".grok")).join("sessions")),
    also: &[],
    env: &["GROK_HOME", "HOME", "USERPROFILE"],
    root: Root::InHome("sessions"),
    layout: "encoded working directories holding <session id>/chat_history.jsonl (as ~/.grok/sessions)",
    open: |root| Ok(GrokSource::open(root)?.into_query()),
    empty: empty_note,
};

/// Why a sessions root lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    let histories: usize = (entries.iter().filter(|d| d.dir))
        .flat_map(|cwd| seen(&root.join(&cwd.name)).into_iter().map(move |s| root.join(&cwd.name).join(s.name)))
        .filter(|session| session.join(CHAT_HISTORY).is_file())
        .count();
    match histories {
        0 => kind.expected(root, &entries),
        n => format!("{}: its {n} chat histories are empty or unreadable", kind.no_session_in(root)),
    }
}

/// The Grok Build layout of a sessions root.
#[derive(Clone, Copy, Debug, Default)]
pub struct Grok;

/// A read-only session source over Grok Build's sessions directory.
pub type GrokSource = FileSessions<Grok>;

impl FileSessions<Grok> {
    /// Opens Grok Build's sessions directory (a directory; a link to one is
    /// fine).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        FileSessions::with_format(root, Grok)
    }
}

/// `text` without every complete `<tag>…</tag>` block of [`SYSTEM_TAGS`],
/// trimmed; then, when it holds a `<user_query>` block, what is inside it
/// (as `extract_user_query` does).
fn user_query(text: &str) -> String {
    let mut rest = text.to_owned();
    for tag in SYSTEM_TAGS {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        while let Some(start) = rest.find(&open) {
            let Some(len) = rest[start..].find(&close) else { break };
            rest.replace_range(start..start + len + close.len(), "");
        }
    }
    let stripped = rest.trim();
    if let Some(start) = stripped.find("<user_query>") {
        let inner = &stripped[start + "<user_query>".len()..];
        if let Some(end) = inner.find("</user_query>") {
            return inner[..end].trim().to_owned();
        }
    }
    stripped.to_owned()
}

/// One line: a `ConversationItem` or a format 0 chat message (the union of
/// the fields a read uses, each lenient).
#[derive(Deserialize, Default)]
struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    role: LStr<'a>,
    #[serde(borrow, default)]
    content: Content<'a>,
    #[serde(borrow, default)]
    synthetic_reason: LStr<'a>,
}

/// What a line gives the conversation.
fn said(line: &Line<'_>) -> Option<ConversationItem> {
    let who = line.kind.get().or(line.role.get())?;
    let item = match who {
        "user" => {
            let text = line.content.texts(&["text"]).collect::<Vec<_>>().join("\n");
            match line.synthetic_reason.get() {
                None | Some("interjection") => ConversationItem::new(Role::User, user_query(&text)),
                Some("compaction_meta") => {
                    let summary = text.strip_prefix(SUMMARY_PREAMBLE)?;
                    ConversationItem::checkpoint(summary.trim())
                }
                Some(_) => return None,
            }
        }
        "assistant" => ConversationItem::new(Role::Assistant, line.content.texts(&["text"]).collect::<String>()),
        _ => return None,
    };
    (!item.text.trim().is_empty()).then_some(item)
}

/// What `summary.json` says of a session.
#[derive(Deserialize, Default)]
struct Summary<'a> {
    #[serde(borrow, default, deserialize_with = "lenient")]
    info: Option<SummaryInfo<'a>>,
    #[serde(borrow, default)]
    generated_title: LStr<'a>,
    #[serde(borrow, default)]
    session_summary: LStr<'a>,
    #[serde(borrow, default)]
    created_at: LStr<'a>,
}

#[derive(Deserialize, Default)]
struct SummaryInfo<'a> {
    #[serde(borrow, default)]
    cwd: LStr<'a>,
}

/// What a session's `summary.json` gives: title, cwd and creation time
/// (none of them when it is missing, too big or not JSON).
#[derive(Default)]
struct Meta {
    title: Option<String>,
    cwd: Option<String>,
    created_at: Option<u64>,
}

fn meta(root: &Under<'_>, rel: &[OsString]) -> Meta {
    let (Some(cwd), Some(session)) = (rel.first(), rel.get(1)) else { return Meta::default() };
    let Some(buf) = root.companion(&[cwd, session, OsStr::new(SUMMARY)], MAX_SUMMARY_BYTES) else {
        return Meta::default();
    };
    let Ok(s) = serde_json::from_slice::<Summary<'_>>(&buf) else { return Meta::default() };
    let nonempty = |v: &LStr<'_>| v.get().map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
    Meta {
        // As `display_title`: the generated (or renamed) title, else the summary.
        title: nonempty(&s.generated_title).or_else(|| nonempty(&s.session_summary)),
        cwd: s.info.as_ref().and_then(|i| i.cwd.get()).filter(|c| !c.is_empty()).map(str::to_owned),
        created_at: s.created_at.get().and_then(iso_ms),
    }
}

fn is_updates(rel: &[OsString]) -> bool {
    rel.last().is_some_and(|n| n == UPDATES)
}

/// One chat history's conversation.
fn read(file: File) -> io::Result<Transcript> {
    let mut items = Vec::new();
    let stats = each_line(as_of_now(file)?, u64::MAX, |_, bytes| {
        let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes) else { return false };
        items.extend(said(&line));
        true
    })?;
    let title = items.iter().find(|i| i.role == Role::User && !i.checkpoint).and_then(|i| title_from_text(&i.text));
    Ok(Transcript { items, title, cwd: None, created_at: None, stats })
}

impl SessionFiles for Grok {
    const FORMAT: &'static str = "Grok Build";
    const PREFIX: &'static str = PREFIX;

    /// The session directories below the encoded working directories, each
    /// with its chat history, else its updates (which stand for it only
    /// then): each looked up by name (one `lstat`), not found by reading
    /// the session's directory.
    fn walk(&self, root: &Path, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>) {
        let descend = |rel: &[OsString], _: &OsStr| rel.is_empty();
        let take = |rel: &[OsString], _: &OsStr| rel.len() == 1;
        let mut sessions = Vec::new();
        let walk = Walk { descend: &descend, take: &|_, _| false, take_dir: &take };
        walk_with(root, 1, &walk, &mut sessions, rejected);
        for rel in sessions {
            let dir: PathBuf = std::iter::once(root.as_os_str()).chain(rel.iter().map(OsString::as_os_str)).collect();
            for name in [CHAT_HISTORY, UPDATES] {
                let path = dir.join(name);
                match entry_kind(&path) {
                    Ok(EntryKind::File) => {
                        out.push(rel.iter().cloned().chain([OsString::from(name)]).collect());
                        break;
                    }
                    Ok(EntryKind::Link) => {
                        rejected.push((path, LINK_REASON.to_owned()));
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        rejected.push((path, e.to_string()));
                        break;
                    }
                }
            }
        }
    }

    fn heads(&self, root: &Under<'_>, rel: &[OsString], _file: File, identity: &FileIdentity) -> io::Result<Vec<Head>> {
        if identity.size == 0 {
            return Ok(Vec::new());
        }
        if is_updates(rel) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the session has no chat_history.jsonl (Grok Build rebuilds it from updates.jsonl when the session \
                 is resumed)",
            ));
        }
        let Some(bare) = rel.get(1).and_then(|s| s.to_str()) else { return Ok(Vec::new()) };
        let meta = meta(root, rel);
        Ok(vec![Head { bare: bare.to_owned(), created_at: meta.created_at, cwd: meta.cwd }])
    }

    fn read(&self, root: &Path, rel: &[OsString], file: File, _bare: &str) -> io::Result<Transcript> {
        if is_updates(rel) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "the session has no chat_history.jsonl"));
        }
        let mut read = read(file)?;
        let meta = meta(&Under::opened(root), rel);
        read.title = meta.title.or(read.title);
        read.cwd = meta.cwd;
        read.created_at = meta.created_at;
        Ok(read)
    }

    /// A session's `summary.json` holds its title, cwd and creation time.
    fn companions(&self, rel: &[OsString]) -> Vec<Rel> {
        rel.get(..2).map(|r| vec![vec![r[0].clone(), r[1].clone(), OsString::from(SUMMARY)]]).unwrap_or_default()
    }

    const NAMES_SESSIONS: bool = true;

    /// A session's directory is named by its id.
    fn named_for(&self, rel: &[OsString], bare: &str) -> bool {
        rel.get(1).and_then(|n| n.to_str()) == Some(bare)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_queries_are_taken_as_grok_build_takes_them() {
        assert_eq!(user_query("<user_info>\nOS: linux\n</user_info>\n<user_query>\nFix it\n</user_query>"), "Fix it");
        assert_eq!(user_query("<system-reminder>x</system-reminder> plain"), "plain");
        assert_eq!(user_query("<user_info>only</user_info>"), "");
        assert_eq!(user_query("<rules>unclosed"), "<rules>unclosed");
    }
}
