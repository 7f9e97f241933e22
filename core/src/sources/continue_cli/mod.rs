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
//! root is followed, a file longer than
//! [`MAX_LINE_BYTES`] makes the
//! session unreadable.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::fs::{as_of_now, FileIdentity};
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::files::{walk_tree, FileSessions, Head, Rel, SessionFiles};
use crate::sources::foreign::{title_from_text, LineStats, Transcript, MAX_LINE_BYTES};
use crate::sources::kind::{seen, Kind, Root};
use crate::sources::lenient::{lenient, Content, LStr, Objects};

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

/// A session file; `H` is how its history is read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Session<'a, H> {
    #[serde(borrow, default)]
    session_id: LStr<'a>,
    #[serde(borrow, default)]
    title: LStr<'a>,
    #[serde(borrow, default)]
    workspace_directory: LStr<'a>,
    history: Option<H>,
}

/// The whole file (at most [`MAX_LINE_BYTES`]), as it was when the read
/// began.
fn whole(file: File) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    as_of_now(file)?.take(MAX_LINE_BYTES as u64 + 1).read_to_end(&mut buf)?;
    if buf.len() > MAX_LINE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a session file longer than {MAX_LINE_BYTES} bytes"),
        ));
    }
    Ok(buf)
}

/// The file parsed, with its id (an error saying why it is not a session).
fn parse<'a, H: Deserialize<'a>>(buf: &'a [u8]) -> io::Result<(Session<'a, H>, String)> {
    let not = |why: String| io::Error::new(io::ErrorKind::InvalidData, format!("not a Continue session: {why}"));
    let session: Session<'a, H> = serde_json::from_slice(buf).map_err(|e| not(e.to_string()))?;
    let id = session.session_id.get().filter(|s| !s.is_empty()).ok_or_else(|| not("it has no sessionId".into()))?;
    let id = id.to_owned();
    Ok((session, id))
}

fn cwd(session: &Session<'_, impl Sized>) -> Option<String> {
    session.workspace_directory.get().filter(|s| !s.is_empty()).map(str::to_owned)
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

/// The model's conversation of a history.
fn conversation(history: &[Item<'_>]) -> Vec<ConversationItem> {
    // History starts at the first compaction, as `findCompactionIndex` finds it.
    let from = history.iter().position(|i| i.conversation_summary.get().is_some()).unwrap_or(0);
    let mut out = Vec::new();
    for item in &history[from..] {
        match item.conversation_summary.get() {
            Some(summary) if !summary.trim().is_empty() => out.push(ConversationItem::checkpoint(summary)),
            Some(_) => {}
            None => out.extend(item.message.as_ref().and_then(said)),
        }
    }
    out
}

/// One session file's conversation.
fn read(file: File) -> io::Result<Transcript> {
    let buf = whole(file)?;
    let (session, _) = parse::<Objects<Item<'_>>>(&buf)?;
    let history = session.history.as_ref().map_or(&[][..], |h| &h.0[..]);
    let items = conversation(history);
    let title = session.title.get().map(str::trim).filter(|t| !t.is_empty() && *t != UNTITLED).map(str::to_owned);
    let title = title.or_else(|| {
        items.iter().find(|i| i.role == Role::User && !i.checkpoint).and_then(|i| title_from_text(&i.text))
    });
    let stats = LineStats { lines: history.len() as u64, skipped: 0 };
    Ok(Transcript { items, title, cwd: cwd(&session), created_at: None, stats })
}

impl SessionFiles for Continue {
    const FORMAT: &'static str = "Continue";
    const PREFIX: &'static str = PREFIX;

    fn walk(&self, root: &Path, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>) {
        let descend = |_: &[OsString], _: &OsStr| false;
        let take = |rel: &[OsString], name: &OsStr| rel.is_empty() && is_session(name);
        walk_tree(root, 0, &descend, &take, out, rejected);
    }

    fn heads(&self, _root: &Path, _rel: &[OsString], file: File, identity: &FileIdentity) -> io::Result<Vec<Head>> {
        if identity.size == 0 {
            return Ok(Vec::new());
        }
        let buf = whole(file)?;
        let (session, id) = parse::<IgnoredAny>(&buf)?;
        Ok(vec![Head { bare: id, created_at: None, cwd: cwd(&session) }])
    }

    fn read(&self, _root: &Path, _rel: &[OsString], file: File, _bare: &str) -> io::Result<Transcript> {
        read(file)
    }

    /// Continue names a session's file `<session id>.json`.
    fn guess(&self, _root: &Path, bare: &str) -> Vec<Rel> {
        vec![vec![OsString::from(format!("{bare}.json"))]]
    }
}
