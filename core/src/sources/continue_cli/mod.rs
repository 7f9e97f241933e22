//! Continue CLI sessions: a read-only session source over Continue's
//! sessions directory (`$CONTINUE_GLOBAL_DIR/sessions`, else
//! `~/.continue/sessions`), reading `<session id>.json` (not the
//! `sessions.json` index beside them).
//!
//! ```no_run
//! use dsh_session_reference::sources::continue_cli::ContinueSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = ContinueSource::open("/home/me/.continue/sessions")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The files follow `continuedev/continue`'s `extensions/cli/src/session.ts`
//! and `compaction.ts` and the `Session` and `ChatHistoryItem` types of
//! `core/index.d.ts` (Apache-2.0): one JSON object a file,
//! `{sessionId, title, workspaceDirectory, history: [{message: {role,
//! content, toolCalls?}, contextItems, conversationSummary?, …}], usage?}`,
//! written whole on every change.
//!
//! # Sessions
//!
//! - **id**: `continue:<sessionId>` of the file. A zero-byte file is not a
//!   session yet; a file that is not such an object (one written halfway,
//!   or another program's) is reported with why.
//! - **createdAt**: the file's creation (or modification) time, as Continue
//!   dates it.
//! - **cwd**: `workspaceDirectory`.
//! - **title**: `title` (generated after the first exchange), unless it is
//!   empty or Continue's placeholder `Untitled Session`; else the first
//!   user message of the conversation (whitespace collapsed, at most 100
//!   characters).
//! - **capturedThroughSeq**: the index of the last item of `history`.
//!
//! # The current conversation
//!
//! The file holds the current history only (a rewind or `/clear` rewrites
//! or replaces it). As `getHistoryForLLM` gives it to the model: when an
//! item has a `conversationSummary` (a compaction), history starts there,
//! with that summary as a checkpoint; then, of each item's `message`:
//!
//! - `user`: its content (a string, or its `text` parts joined with
//!   `"\n"`; images give no text);
//! - `assistant`: its content (never `toolCalls` or the item's
//!   `reasoning`);
//! - never `system`, `tool` or `thinking` messages.
//!
//! # Safety
//!
//! As for every source: nothing is written or locked, no link below the
//! root is followed. A file is read as a stream, one `history` item at a
//! time, so its memory is what the conversation keeps plus one item; an
//! item (or any other value) longer than
//! [`MAX_LINE_BYTES`](crate::sources::foreign::MAX_LINE_BYTES) makes the
//! session unreadable, as a JSONL line that long does.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::fs::{as_of_now, FileIdentity};
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::files::{walk_tree, FileSessions, Head, Rel, SessionFiles, Under};
use crate::sources::foreign::{title_from_text, LineStats, Transcript};
use crate::sources::kind::{seen, Kind, Root};
use crate::sources::lenient::{lenient, Content, LStr};

mod document;
use document::Document;

/// What every Continue session id starts with.
pub const PREFIX: &str = "continue:";

/// The title Continue gives a session before it names one.
pub const UNTITLED: &str = "Untitled Session";

/// The index Continue keeps beside the sessions (not a session).
const INDEX: &str = "sessions.json";

/// Continue as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "continue",
    format: "Continue",
    about: "Continue CLI sessions (its sessions directory)",
    prefix: PREFIX,
    location: "$CONTINUE_GLOBAL_DIR/sessions, else ~/.continue/sessions",
    default: Some(|env| {
        env.var("CONTINUE_GLOBAL_DIR").unwrap_or_else(|| env.home().join(".continue")).join("sessions")
    }),
    also: &[],
    env: &["CONTINUE_GLOBAL_DIR", "HOME", "USERPROFILE"],
    root: Root::InHome("sessions"),
    layout: "<session id>.json files (as ~/.continue/sessions)",
    open: |root| Ok(ContinueSource::open(root)?.into_query()),
    empty: empty_note,
};

/// Why a sessions root lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    match entries.iter().filter(|e| e.file && is_session(&e.name)).count() {
        0 => kind.expected(root, &entries),
        n => format!("{}: its {n} session files are empty or unreadable", kind.no_session_in(root)),
    }
}

/// The Continue layout of a sessions root.
#[derive(Clone, Copy, Debug, Default)]
pub struct Continue;

/// A read-only session source over Continue's sessions directory.
pub type ContinueSource = FileSessions<Continue>;

impl FileSessions<Continue> {
    /// Opens Continue's sessions directory (a directory; a link to one is
    /// fine).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        FileSessions::with_format(root, Continue)
    }
}

fn is_session(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| n.len() > ".json".len() && n.ends_with(".json") && n != INDEX)
}

/// A message: `{role, content}`.
#[derive(Deserialize, Default)]
struct Message<'a> {
    #[serde(borrow, default)]
    role: LStr<'a>,
    #[serde(borrow, default)]
    content: Content<'a>,
}

/// One item of `history`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Item<'a> {
    #[serde(borrow, default, deserialize_with = "lenient")]
    message: Option<Message<'a>>,
    #[serde(borrow, default)]
    conversation_summary: LStr<'a>,
}

/// What a session file says besides its history.
#[derive(Default)]
struct Session {
    id: Option<String>,
    title: Option<String>,
    cwd: Option<String>,
    /// The history's objects (its other elements are skipped).
    items: u64,
}

/// Reads a session file as it was when the read began, giving each object
/// of its `history` to `item` (`None`: the history is only checked) as it
/// comes, so that only one is held at a time: the file is checked as
/// serde_json checks it whole, and its other fields read as a derived
/// `Deserialize` of `{sessionId, title, workspaceDirectory, history}`
/// reads them (a field given twice is an error). An error says why it is
/// not a session.
fn walk(file: File, mut item: Option<&mut dyn FnMut(Item<'_>)>) -> io::Result<Session> {
    let not = |e: io::Error| io::Error::new(io::ErrorKind::InvalidData, format!("not a Continue session: {e}"));
    let file = as_of_now(file)?;
    let size = file.limit();
    let mut doc = Document::new(file, size);
    let mut session = Session::default();
    let mut seen = [false; 4];
    let mut read = |doc: &mut Document<_>| {
        doc.object("the session", |d, key| {
            let field = ["sessionId", "title", "workspaceDirectory", "history"].iter().position(|f| *f == key);
            let Some(field) = field else {
                return d.parse::<IgnoredAny>("a value").map(drop);
            };
            if std::mem::replace(&mut seen[field], true) {
                return Err(document::invalid(format!("duplicate field `{key}`")));
            }
            let text = |d: &mut Document<_>| d.parse::<LStr<'_>>(key).map(|s| s.owned());
            match field {
                0 => session.id = text(d)?,
                1 => session.title = text(d)?,
                2 => session.cwd = text(d)?,
                _ if d.next_byte()? != Some(b'[') => drop(d.parse::<IgnoredAny>("history")?),
                _ => d.list("history", |d| {
                    if d.next_byte()? != Some(b'{') {
                        return d.parse::<IgnoredAny>("a history item").map(drop);
                    }
                    session.items += 1;
                    match item.as_mut() {
                        Some(item) => item(d.parse::<Item<'_>>("a history item")?),
                        None => drop(d.parse::<IgnoredAny>("a history item")?),
                    }
                    Ok(())
                })?,
            }
            Ok(())
        })?;
        doc.end()
    };
    read(&mut doc).map_err(not)?;
    if session.id.as_deref().is_none_or(str::is_empty) {
        return Err(not(document::invalid("it has no sessionId")));
    }
    Ok(session)
}

/// The text of a message's content, if the conversation shows it.
fn said(message: &Message<'_>) -> Option<ConversationItem> {
    let role = match message.role.get()? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        _ => return None,
    };
    let text = message.content.texts(&["text"]).collect::<Vec<_>>().join("\n");
    (!text.trim().is_empty()).then(|| ConversationItem::new(role, text))
}

/// The model's conversation of a history, its items given one by one.
#[derive(Default)]
struct Conversation {
    items: Vec<ConversationItem>,
    /// Whether a compaction was met: history starts at the first one, as
    /// `findCompactionIndex` finds it.
    compacted: bool,
}

impl Conversation {
    fn push(&mut self, item: Item<'_>) {
        match item.conversation_summary.get() {
            Some(summary) => {
                if !std::mem::replace(&mut self.compacted, true) {
                    self.items.clear();
                }
                if !summary.trim().is_empty() {
                    self.items.push(ConversationItem::checkpoint(summary));
                }
            }
            None => self.items.extend(item.message.as_ref().and_then(said)),
        }
    }
}

/// The conversation of session `bare`'s file (an error when the file
/// holds another session).
fn read(file: File, bare: &str) -> io::Result<Transcript> {
    let mut conversation = Conversation::default();
    let session = walk(file, Some(&mut |item| conversation.push(item)))?;
    if session.id.as_deref() != Some(bare) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "the file holds another session"));
    }
    let items = conversation.items;
    let title = session.title.as_deref().map(str::trim).filter(|t| !t.is_empty() && *t != UNTITLED).map(str::to_owned);
    let title = title.or_else(|| {
        items.iter().find(|i| i.role == Role::User && !i.checkpoint).and_then(|i| title_from_text(&i.text))
    });
    let stats = LineStats { lines: session.items, skipped: 0 };
    let cwd = session.cwd.filter(|s| !s.is_empty());
    Ok(Transcript { items, title, cwd, created_at: None, stats })
}

impl SessionFiles for Continue {
    const FORMAT: &'static str = "Continue";
    const PREFIX: &'static str = PREFIX;

    fn walk(&self, root: &Path, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>) {
        let descend = |_: &[OsString], _: &OsStr| false;
        let take = |rel: &[OsString], name: &OsStr| rel.is_empty() && is_session(name);
        walk_tree(root, 0, &descend, &take, out, rejected);
    }

    fn heads(&self, _: &Under<'_>, _: &[OsString], file: File, identity: &FileIdentity) -> io::Result<Vec<Head>> {
        if identity.size == 0 {
            return Ok(Vec::new());
        }
        let session = walk(file, None)?;
        let cwd = session.cwd.filter(|s| !s.is_empty());
        Ok(vec![Head { bare: session.id.unwrap_or_default(), created_at: None, cwd }])
    }

    fn read(&self, _root: &Path, _rel: &[OsString], file: File, bare: &str) -> io::Result<Transcript> {
        read(file, bare)
    }

    /// A file is read once: the read checks the id it holds.
    const READ_CHECKS_ID: bool = true;

    /// Continue names a session's file `<session id>.json`.
    fn guess(&self, _root: &Path, bare: &str) -> Vec<Rel> {
        vec![vec![OsString::from(format!("{bare}.json"))]]
    }
}
