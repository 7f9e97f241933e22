//! Gemini CLI chats: a read-only session source over Gemini CLI's
//! temporary directory (`$GEMINI_CLI_HOME/.gemini/tmp`, default
//! `~/.gemini/tmp`), reading `<project>/chats/session-*.jsonl` and legacy
//! (before 0.39) `session-*.json` files.
//!
//! ```no_run
//! use dsh_session_reference::sources::gemini_cli::GeminiCliSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = GeminiCliSource::open("/home/me/.gemini/tmp")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The records follow `google-gemini/gemini-cli`'s
//! `packages/core/src/services/chatRecordingTypes.ts` and
//! `chatRecordingService.ts` (Apache-2.0).
//!
//! # Sessions
//!
//! - **id**: `gemini-cli:<sessionId>` of the file's first line (the legacy
//!   object's `sessionId`). A subagent's chat (`chats/<parent id>/…`) is not
//!   a session of its own. When a legacy `.json` file was migrated to a
//!   `.jsonl` beside it, only the `.jsonl` is read. A zero-byte file is not a
//!   session yet; a file whose first line has no `sessionId` is reported.
//! - **createdAt**: `startTime`, else the file's creation (or modification)
//!   time.
//! - **cwd**: the path in `<project>/.project_root` (Gemini CLI 0.3x and
//!   later); none for an older project directory named by a hash of its
//!   path, which is never decoded.
//! - **title**: the latest `summary` (first line or `$set`), else the first
//!   typed user message (whitespace collapsed, at most 100 characters).
//! - **capturedThroughSeq**: the 0-based number of the last line read (of a
//!   legacy file: the index of its last message). A read sees the file as it
//!   was when it began, up to its last complete line.
//!
//! # The current conversation
//!
//! Lines are replayed in order, a line that is not JSON skipped wherever it
//! is:
//!
//! - a message record (`{id, type, content, displayContent?}`) is upserted
//!   by `id`: its first write fixes its position, its last its content;
//! - `{"$rewindTo": id}` drops that message and everything after it (all of
//!   them when the id is unknown, as Gemini CLI's loader does);
//! - `{"$set": {messages: [...]}}` (written after compression or masking)
//!   replaces the messages with that list; later records apply on top of
//!   it, as they do in the writer's memory;
//!
//! then, of the messages:
//!
//! - `user`: the text parts of `displayContent` (what was typed) when there
//!   is one, else of `content`, concatenated; a leading injected
//!   `<session_context>` block is removed; function responses, inline data
//!   and thought parts give no text. A user message starting with
//!   `<state_snapshot>` is the compression summary: a checkpoint, and the
//!   canned reply `Got it. Thanks for the additional context!` right after
//!   it is dropped;
//! - `gemini`: its text parts (never `thoughts` or `toolCalls`);
//! - never `info`, `error` or `warning` records.
//!
//! # Safety
//!
//! As for every source: nothing is written or locked, no link below the
//! root is followed, a line longer than
//! [`MAX_LINE_BYTES`](crate::sources::foreign::MAX_LINE_BYTES) (a legacy
//! file longer than that) makes the session unreadable.

pub mod chat;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::fs::{open_under, FileIdentity};
use crate::sources::file_source::FileSource;
use crate::sources::files::{walk_tree, FileSessions, Head, Rel, SessionFiles, Under};
use crate::sources::foreign::Transcript;
use crate::sources::kind::{seen, Kind, Root};

/// What every Gemini CLI session id starts with.
pub const PREFIX: &str = "gemini-cli:";

/// The file in a project directory that holds the project's path.
pub const PROJECT_ROOT_FILE: &str = ".project_root";

/// Gemini CLI as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "gemini-cli",
    format: "Gemini CLI",
    about: "Gemini CLI chats (its tmp directory)",
    prefix: PREFIX,
    location: "$GEMINI_CLI_HOME/.gemini/tmp, else ~/.gemini/tmp",
    default: Some(|env| env.var("GEMINI_CLI_HOME").unwrap_or_else(|| env.home()).join(".gemini").join("tmp")),
    also: &[],
    env: &["GEMINI_CLI_HOME", "HOME", "USERPROFILE"],
    root: Root::InHome("tmp"),
    layout: "project directories holding chats/session-*.jsonl (as ~/.gemini/tmp)",
    open: |root| Ok(GeminiCliSource::open(root)?.into_query()),
    empty: empty_note,
};

/// Why a `tmp` root lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    let chats: usize = (entries.iter().filter(|d| d.dir))
        .map(|d| {
            seen(&root.join(&d.name).join("chats"))
                .iter()
                .filter(|e| e.file && e.name.to_str().is_some_and(|n| n.starts_with("session-")))
                .count()
        })
        .sum();
    match chats {
        0 => kind.expected(root, &entries),
        n => format!("{}: its {n} chat files are empty or unreadable", kind.no_session_in(root)),
    }
}

/// The Gemini CLI layout of a `tmp` root, with the project paths a
/// listing read (each project's `.project_root` once per walk).
#[derive(Clone, Debug, Default)]
pub struct GeminiCli {
    roots: Arc<Mutex<HashMap<OsString, Option<String>>>>,
}

impl GeminiCli {
    /// The project path of `project`, read once per walk.
    fn cwd(&self, root: &Path, project: &OsStr) -> Option<String> {
        if let Some(known) = self.roots.lock().ok().and_then(|m| m.get(project).cloned()) {
            return known;
        }
        let cwd = project_root(root, project);
        if let Ok(mut m) = self.roots.lock() {
            m.insert(project.to_owned(), cwd.clone());
        }
        cwd
    }
}

/// A read-only session source over Gemini CLI's `tmp` directory.
pub type GeminiCliSource = FileSessions<GeminiCli>;

impl FileSessions<GeminiCli> {
    /// Opens a Gemini CLI `tmp` directory (a directory; a link to one is
    /// fine).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        FileSessions::with_format(root, GeminiCli::default())
    }
}

fn is_chat(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| n.starts_with("session-") && (n.ends_with(".jsonl") || n.ends_with(".json")))
}

fn is_legacy(rel: &[OsString]) -> bool {
    rel.last().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".json"))
}

/// The project path a project directory's `.project_root` holds.
fn project_root(root: &Path, project: &OsStr) -> Option<String> {
    let (file, _) = open_under(root, &[project, OsStr::new(PROJECT_ROOT_FILE)]).ok()?;
    let mut text = String::new();
    file.take(64 << 10).read_to_string(&mut text).ok()?;
    let path = text.trim();
    (!path.is_empty()).then(|| path.to_owned())
}

impl SessionFiles for GeminiCli {
    const FORMAT: &'static str = "Gemini CLI";
    const PREFIX: &'static str = PREFIX;

    fn walk(&self, root: &Path, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>) {
        if let Ok(mut m) = self.roots.lock() {
            m.clear();
        }
        let descend = |rel: &[OsString], name: &OsStr| rel.is_empty() || (rel.len() == 1 && name == "chats");
        let take = |rel: &[OsString], name: &OsStr| rel.len() == 2 && is_chat(name);
        let mut found = Vec::new();
        walk_tree(root, 2, &descend, &take, &mut found, rejected);
        // A legacy file migrated to `.jsonl` beside it is read there.
        let all: std::collections::HashSet<Rel> = found.iter().cloned().collect();
        out.extend(found.into_iter().filter(|rel| {
            let mut newer = rel.clone();
            let last = newer.last_mut().expect("a file");
            last.push("l");
            !(is_legacy(rel) && all.contains(&newer))
        }));
    }

    fn heads(&self, root: &Under<'_>, rel: &[OsString], file: File, identity: &FileIdentity) -> io::Result<Vec<Head>> {
        if identity.size == 0 {
            return Ok(Vec::new());
        }
        let legacy = is_legacy(rel);
        let meta = if legacy { chat::read_legacy_meta(file)? } else { chat::read_meta(file)? };
        let Some(id) = meta.session_id.filter(|s| !s.is_empty()) else {
            let why = match legacy {
                true => "not a Gemini CLI chat: the file is not an object with a sessionId",
                false => "not a Gemini CLI chat: its first line has no sessionId",
            };
            return Err(io::Error::new(io::ErrorKind::InvalidData, why));
        };
        let cwd = rel.first().and_then(|p| self.cwd(root.path(), p));
        Ok(vec![Head { bare: id, created_at: meta.created_at, cwd }])
    }

    fn read(&self, root: &Path, rel: &[OsString], file: File, _bare: &str) -> io::Result<Transcript> {
        let mut read = if is_legacy(rel) { chat::read_legacy(file)? } else { chat::read(file)? };
        read.cwd = rel.first().and_then(|p| project_root(root, p));
        Ok(read)
    }

    const NAMES_SESSIONS: bool = true;

    /// Gemini CLI names a chat `session-<start minute>-<first 8 characters
    /// of its id>.json` (`.jsonl` since 0.39).
    fn named_for(&self, rel: &[OsString], bare: &str) -> bool {
        let Some(short) = bare.get(..8) else { return false };
        let Some(name) = rel.last().and_then(|n| n.to_str()) else { return false };
        let stem = name.strip_suffix(".jsonl").or_else(|| name.strip_suffix(".json")).unwrap_or(name);
        stem.strip_suffix(short).is_some_and(|head| head.ends_with('-'))
    }
}
