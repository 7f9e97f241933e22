//! Pi sessions: a read-only session source over Pi's sessions directory
//! (`$PI_CODING_AGENT_SESSION_DIR`, else `$PI_CODING_AGENT_DIR/sessions`,
//! else `~/.pi/agent/sessions`), reading `--<cwd>--/<time>_<id>.jsonl`
//! (and `<name>.jsonl` directly in the root, as a flat session directory
//! keeps them). Oh-My-Pi and Prime Agent write the same format; their
//! directories are given as roots of this kind.
//!
//! ```no_run
//! use dsh_session_reference::sources::pi::PiSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = PiSource::open("/home/me/.pi/agent/sessions")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The records follow `packages/coding-agent/docs/session-format.md` and
//! `session-manager.ts` of Pi's repository (session version 3; version 1
//! files, linear and without ids, are read as one chain).
//!
//! # Sessions
//!
//! - **id**: `pi:<id>` of the header, the file's first line
//!   (`{"type":"session","version":3,"id":…,"timestamp":…,"cwd":…}`). A
//!   zero-byte file (or one whose header is not complete yet) is not a
//!   session yet; a file whose first line is not a session header is
//!   reported.
//! - **createdAt**: the header's `timestamp`, else the file's creation (or
//!   modification) time.
//! - **cwd**: the header's `cwd`.
//! - **title**: the `name` of the latest `session_info` entry (set by
//!   `/name`), else the first user message of the conversation (whitespace
//!   collapsed, at most 100 characters).
//! - **capturedThroughSeq**: the 0-based number of the last line read. A
//!   read sees the file as it was when it began, up to its last complete
//!   line.
//!
//! # The current conversation
//!
//! Entries form a tree by `id`/`parentId`; the current branch is the path
//! from the leaf (the last entry of the file, as Pi takes it on load) to the
//! root, so a branch left by `/tree` or a rewind is not shown. Along it, as
//! Pi's `buildSessionContext` does: when a `compaction` entry is on the
//! path, the latest one's `summary` comes first (a checkpoint), then the
//! entries from its `firstKeptEntryId` up to it, then those after it.
//! Of the entries:
//!
//! - `message` with role `user`: its text (a string, or its `text`
//!   blocks); role `assistant`: its `text` blocks (never `thinking` or
//!   `toolCall`); roles `compactionSummary` and `branchSummary`: their
//!   `summary`, a checkpoint; never `toolResult`, `bashExecution` or
//!   `custom` (what an extension injected);
//! - `branch_summary`: its `summary` (what the branch left behind did), a
//!   checkpoint;
//! - never `custom_message` (extension context), `custom`, `label`,
//!   `model_change`, `thinking_level_change` or other bookkeeping.
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
use crate::sources::kind::{seen, Kind, Root};
use crate::sources::lenient::{lenient, Content, LStr, LU64};

/// What every Pi session id starts with.
pub const PREFIX: &str = "pi:";

/// Pi as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "pi",
    format: "Pi",
    about: "Pi sessions, also Oh-My-Pi's and Prime Agent's (its sessions directory)",
    prefix: PREFIX,
    location: "$PI_CODING_AGENT_SESSION_DIR, else $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions",
    default: Some(|env| {
        env.var("PI_CODING_AGENT_SESSION_DIR").unwrap_or_else(|| {
            env.var("PI_CODING_AGENT_DIR").unwrap_or_else(|| env.home().join(".pi").join("agent")).join("sessions")
        })
    }),
    also: &[],
    env: &["PI_CODING_AGENT_SESSION_DIR", "PI_CODING_AGENT_DIR", "HOME", "USERPROFILE"],
    root: Root::InHome("sessions"),
    layout: "directories per working directory holding <time>_<id>.jsonl (as ~/.pi/agent/sessions)",
    open: |root| Ok(PiSource::open(root)?.into_query()),
    empty: empty_note,
};

/// Why a sessions root lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    let jsonl = |e: &crate::sources::kind::Seen| e.file && is_jsonl(&e.name);
    let files: usize = entries.iter().filter(|e| jsonl(e)).count()
        + (entries.iter().filter(|d| d.dir))
            .map(|d| seen(&root.join(&d.name)).iter().filter(|e| jsonl(e)).count())
            .sum::<usize>();
    match files {
        0 => kind.expected(root, &entries),
        n => format!("{}: its {n} session files are empty or unreadable", kind.no_session_in(root)),
    }
}

/// The Pi layout of a sessions root.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pi;

/// A read-only session source over Pi's sessions directory.
pub type PiSource = FileSessions<Pi>;

impl FileSessions<Pi> {
    /// Opens Pi's sessions directory (a directory; a link to one is fine).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        FileSessions::with_format(root, Pi)
    }
}

fn is_jsonl(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| n.len() > ".jsonl".len() && n.ends_with(".jsonl"))
}

#[derive(Deserialize, Default)]
struct Message<'a> {
    #[serde(borrow, default)]
    role: LStr<'a>,
    #[serde(borrow, default)]
    content: Content<'a>,
    #[serde(borrow, default)]
    summary: LStr<'a>,
}

/// One line: the header's fields and every entry's, each read leniently.
#[derive(Deserialize, Default)]
struct Line<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    id: LStr<'a>,
    #[serde(borrow, default, rename = "parentId")]
    parent: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    message: Option<Message<'a>>,
    #[serde(borrow, default)]
    summary: LStr<'a>,
    #[serde(borrow, default, rename = "firstKeptEntryId")]
    first_kept: LStr<'a>,
    #[serde(default, rename = "firstKeptEntryIndex")]
    first_kept_index: LU64,
    #[serde(borrow, default)]
    name: LStr<'a>,
    #[serde(borrow, default)]
    cwd: LStr<'a>,
    #[serde(borrow, default)]
    timestamp: LStr<'a>,
    #[serde(default)]
    version: LU64,
}

/// What the header says.
struct Header {
    id: String,
    created_at: Option<u64>,
    cwd: Option<String>,
    version: u64,
}

impl Header {
    fn of(line: &Line<'_>) -> Option<Header> {
        if line.kind.get() != Some("session") {
            return None;
        }
        Some(Header {
            id: line.id.get().filter(|s| !s.is_empty())?.to_owned(),
            created_at: line.timestamp.get().and_then(iso_ms),
            cwd: line.cwd.get().filter(|s| !s.is_empty()).map(str::to_owned),
            // A header without a version is a version 1 file.
            version: line.version.0.unwrap_or(1),
        })
    }
}

/// The header of a file open at its start: `Ok(None)` when its first line
/// is not complete yet.
fn read_header(file: File) -> io::Result<Option<Header>> {
    let mut header = None;
    let stats = each_line(as_of_now(file)?, 1, |_, bytes| {
        header = serde_json::from_slice::<Line<'_>>(bytes).ok().and_then(|l| Header::of(&l));
        header.is_some()
    })?;
    match (stats.lines, header) {
        (0, _) => Ok(None),
        (_, Some(h)) => Ok(Some(h)),
        (_, None) => Err(not_a_session()),
    }
}

fn not_a_session() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "its first line is not a Pi session header")
}

/// What an entry gives the conversation.
enum Does {
    /// A message of the conversation (or a checkpoint).
    Says(ConversationItem),
    /// A compaction: its summary, and the entry from which what came before
    /// it is kept.
    Compacts(String, Option<String>),
    /// Nothing (bookkeeping, tool output, injected context).
    Nothing,
}

struct Entry {
    id: String,
    parent: Option<String>,
    does: Does,
}

/// The text of a message entry, if the conversation shows it.
fn said(message: &Message<'_>) -> Option<ConversationItem> {
    let joined = |kinds: &[&str]| message.content.texts(kinds).collect::<Vec<_>>().join("\n");
    let item = match message.role.get()? {
        "user" => ConversationItem::new(Role::User, joined(&["text"])),
        "assistant" => ConversationItem::new(Role::Assistant, joined(&["text"])),
        "compactionSummary" | "branchSummary" => ConversationItem::checkpoint(message.summary.get()?),
        _ => return None,
    };
    (!item.text.trim().is_empty()).then_some(item)
}

/// The entry a line holds (none for a line that is not one).
fn entry(line: &Line<'_>, n: usize, linear: bool, previous: Option<&str>) -> Option<Entry> {
    let (id, parent) = if linear {
        (format!("#{n}"), previous.map(str::to_owned))
    } else {
        (line.id.get().filter(|s| !s.is_empty())?.to_owned(), line.parent.owned())
    };
    let does = match line.kind.get()? {
        "message" => line.message.as_ref().and_then(said).map_or(Does::Nothing, Does::Says),
        "branch_summary" => line
            .summary
            .get()
            .filter(|s| !s.trim().is_empty())
            .map_or(Does::Nothing, |s| Does::Says(ConversationItem::checkpoint(s))),
        "compaction" => {
            let kept = if linear {
                // An index into the file's entries, the header being the first.
                line.first_kept_index.0.and_then(|i| i.checked_sub(1)).map(|i| format!("#{i}"))
            } else {
                line.first_kept.owned()
            };
            Does::Compacts(line.summary.owned().unwrap_or_default(), kept)
        }
        _ => Does::Nothing,
    };
    Some(Entry { id, parent, does })
}

/// The entries of the current branch, root first: the path from the last
/// entry up its `parentId`s.
fn branch(entries: &[Entry]) -> Vec<&Entry> {
    let by_id: HashMap<&str, usize> = entries.iter().enumerate().map(|(i, e)| (e.id.as_str(), i)).collect();
    let mut path = Vec::new();
    let mut at = entries.len().checked_sub(1);
    // A cycle cannot make the walk longer than the file.
    while let Some(i) = at.filter(|_| path.len() < entries.len()) {
        path.push(&entries[i]);
        at = entries[i].parent.as_deref().and_then(|p| by_id.get(p).copied());
    }
    path.reverse();
    path
}

/// The model-visible conversation of a branch, as `buildSessionContext`
/// builds it.
fn conversation(path: &[&Entry]) -> Vec<ConversationItem> {
    let says = |e: &&Entry| match &e.does {
        Does::Says(item) => Some(item.clone()),
        _ => None,
    };
    let compaction = path.iter().rposition(|e| matches!(e.does, Does::Compacts(..)));
    let Some(c) = compaction else { return path.iter().filter_map(says).collect() };
    let Does::Compacts(summary, kept) = &path[c].does else { unreachable!("found as a compaction") };
    let mut items = Vec::new();
    if !summary.trim().is_empty() {
        items.push(ConversationItem::checkpoint(summary.clone()));
    }
    let from = kept.as_deref().and_then(|k| path[..c].iter().position(|e| e.id == k)).unwrap_or(c);
    items.extend(path[from..c].iter().filter_map(says));
    items.extend(path[c + 1..].iter().filter_map(says));
    items
}

/// One session file's conversation.
fn read(file: File) -> io::Result<Transcript> {
    let mut header: Option<Header> = None;
    let mut entries: Vec<Entry> = Vec::new();
    let mut name: Option<String> = None;
    let stats = each_line(as_of_now(file)?, u64::MAX, |n, bytes| {
        let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes) else { return false };
        if n == 0 {
            header = Header::of(&line);
            return header.is_some();
        }
        if line.kind.get() == Some("session_info") {
            // The latest name wins; an empty one is passed over, as Pi does.
            if let Some(set) = line.name.get().map(str::trim).filter(|s| !s.is_empty()) {
                name = Some(set.to_owned());
            }
        }
        let linear = header.as_ref().is_some_and(|h| h.version < 2);
        let previous = entries.last().map(|e| e.id.as_str());
        match entry(&line, entries.len(), linear, previous) {
            Some(e) => {
                entries.push(e);
                true
            }
            None => false,
        }
    })?;
    let Some(header) = header else { return Err(not_a_session()) };
    let items = conversation(&branch(&entries));
    let title = name.or_else(|| {
        items.iter().find(|i| i.role == Role::User && !i.checkpoint).and_then(|i| title_from_text(&i.text))
    });
    Ok(Transcript { items, title, cwd: header.cwd, created_at: header.created_at, stats })
}

impl SessionFiles for Pi {
    const FORMAT: &'static str = "Pi";
    const PREFIX: &'static str = PREFIX;

    fn walk(&self, root: &Path, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>) {
        let descend = |rel: &[OsString], _: &OsStr| rel.is_empty();
        let take = |rel: &[OsString], name: &OsStr| rel.len() <= 1 && is_jsonl(name);
        walk_tree(root, 2, &descend, &take, out, rejected);
    }

    fn heads(&self, _: &Under<'_>, _: &[OsString], file: File, identity: &FileIdentity) -> io::Result<Vec<Head>> {
        if identity.size == 0 {
            return Ok(Vec::new());
        }
        Ok(read_header(file)?.into_iter().map(|h| Head { bare: h.id, created_at: h.created_at, cwd: h.cwd }).collect())
    }

    fn read(&self, _root: &Path, _rel: &[OsString], file: File, _bare: &str) -> io::Result<Transcript> {
        read(file)
    }

    const NAMES_SESSIONS: bool = true;

    /// Pi names a session's file `<start time>_<id>.jsonl`.
    fn named_for(&self, rel: &[OsString], bare: &str) -> bool {
        let Some(stem) = rel.last().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".jsonl")) else {
            return false;
        };
        stem == bare || stem.strip_suffix(bare).is_some_and(|head| head.ends_with('_'))
    }
}
