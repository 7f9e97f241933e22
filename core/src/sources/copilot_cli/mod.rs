//! GitHub Copilot CLI sessions: a read-only session source over a
//! session-state root (`$COPILOT_HOME/session-state`, default
//! `~/.copilot/session-state`), reading `<id>/events.jsonl` and legacy flat
//! `<id>.jsonl` event logs, one JSON event per line.
//!
//! ```no_run
//! use dsh_session_reference::sources::copilot_cli::CopilotCliSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = CopilotCliSource::open("/home/me/.copilot/session-state")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The events follow the generated types of `github/copilot-sdk`
//! (`nodejs/src/generated/session-events.ts`, MIT): an envelope
//! `{type, id, timestamp, parentId, data, ephemeral?, agentId?}`.
//!
//! # Sessions
//!
//! - **id**: `copilot-cli:<id>`, the session directory's name (the id
//!   `copilot --resume` takes), or a legacy flat file's name without
//!   `.jsonl`. When both exist, the directory wins. A zero-byte log is not a
//!   session until something is written to it. `checkpoints/`,
//!   `workspace.yaml` and the rest of a session directory are not read.
//! - **createdAt**: `session.start`'s `data.startTime`, else its envelope
//!   `timestamp`, else the file's creation (or modification) time.
//! - **cwd**: listing gives `session.start`'s `data.context.cwd`; a read
//!   gives the newest of it, `session.resume`'s `data.context.cwd` and
//!   `session.context_changed`'s `data.cwd`.
//! - **title**: the latest `session.title_changed` title, else the first
//!   typed user message, else the first assistant text (whitespace
//!   collapsed, at most 100 characters).
//! - **capturedThroughSeq**: the 0-based number of the last line read. A
//!   read sees the file as it was when it began, up to its last complete
//!   line.
//!
//! # The current conversation
//!
//! Events are replayed in order, a line that is not JSON skipped wherever
//! it is, events of sub-agents (with an `agentId`) ignored:
//!
//! - `user.message`: its `content` (what the user typed, not the
//!   `transformedContent` the model was sent with its XML wrapping), when
//!   it was typed: its `source` is absent or `user` (a skill's hidden
//!   injection `skill-…`, another agent's prompt `agent-…` and every other
//!   origin are not) and it is not an autopilot continuation;
//! - `assistant.message`: its `content` text (never `reasoningText`,
//!   `encryptedContent` or `toolRequests`); a message that is only tool
//!   requests has no text and is dropped;
//! - `session.compaction_complete` with `success: true` and a
//!   `summaryContent`: the summary becomes the checkpoint and replaces what
//!   came before the `session.compaction_start` it completes (messages
//!   that arrived while a background compaction ran stay after it); a
//!   failed compaction changes nothing;
//! - `session.context_cleared`: the conversation starts again, empty;
//! - `session.snapshot_rewind` (ephemeral, so normally not on disk; applied
//!   if present): the user message `upToEventId` and everything after it
//!   are dropped;
//! - never `assistant.reasoning`, tool execution, system, hook or any other
//!   event. `session.truncation` is not applied: it says how many messages
//!   (tool messages included) left the model's window, not which.
//!
//! # Safety
//!
//! As for every source: nothing is written or locked, no link below the
//! root is followed, a line longer than
//! [`MAX_LINE_BYTES`](crate::sources::foreign::MAX_LINE_BYTES) makes the
//! session unreadable.

pub mod events;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::fs::{sorted_entries, EntryKind, FileIdentity, LINK_REASON};
use crate::sources::files::{FileSessions, Head, Rel, SessionFiles};
use crate::sources::foreign::Transcript;
use crate::sources::kind::{named, seen, Kind, Root};
use crate::sources::FileSource;

/// What every Copilot CLI session id starts with.
pub const PREFIX: &str = "copilot-cli:";

/// The event log in a session directory.
pub const EVENTS_FILE: &str = "events.jsonl";

/// Copilot CLI as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "copilot-cli",
    format: "Copilot CLI",
    about: "GitHub Copilot CLI event logs (a session-state directory)",
    prefix: PREFIX,
    location: "$COPILOT_HOME/session-state, else ~/.copilot/session-state",
    default: Some(|env| env.var("COPILOT_HOME").unwrap_or_else(|| env.home().join(".copilot")).join("session-state")),
    env: &["COPILOT_HOME", "HOME", "USERPROFILE"],
    root: Root::InHome("session-state"),
    layout: "session directories holding events.jsonl, or <id>.jsonl logs (as ~/.copilot/session-state)",
    open: |root| Ok(CopilotCliSource::open(root)?.into_query()),
    empty: empty_note,
};

/// Why a session-state root lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    let logs = entries.iter().filter(|e| e.file && e.name.to_str().is_some_and(|n| n.ends_with(".jsonl"))).count()
        + entries
            .iter()
            .filter(|d| d.dir && seen(&root.join(&d.name)).iter().any(|e| e.file && named(&e.name, &[EVENTS_FILE])))
            .count();
    match logs {
        0 => kind.expected(root, &entries),
        n => format!("{}: its {n} event logs are empty or unreadable", kind.no_session_in(root)),
    }
}

/// The Copilot CLI layout of a session-state root.
#[derive(Clone, Copy, Debug, Default)]
pub struct CopilotCli;

/// A read-only session source over a Copilot CLI session-state root.
pub type CopilotCliSource = FileSessions<CopilotCli>;

impl FileSessions<CopilotCli> {
    /// Opens a session-state root (a directory; a link to one is fine).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        FileSessions::with_format(root, CopilotCli)
    }
}

/// The session id of the log at `rel`.
fn id_of(rel: &[OsString]) -> Option<&str> {
    match rel {
        [dir, _events] => dir.to_str(),
        [flat] => flat.to_str()?.strip_suffix(".jsonl").filter(|s| !s.is_empty()),
        _ => None,
    }
}

impl SessionFiles for CopilotCli {
    const FORMAT: &'static str = "Copilot CLI";
    const PREFIX: &'static str = PREFIX;

    /// The root's entries only: a session directory's log is opened where
    /// it must be (a directory read per session would double a listing's
    /// cost), and a directory without one is not a session.
    fn walk(&self, root: &Path, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>) {
        let entries = match sorted_entries(root) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(e) => {
                rejected.push((root.to_path_buf(), e.to_string()));
                return;
            }
        };
        let is_log = |name: &OsStr| name.to_str().is_some_and(|n| n.ends_with(".jsonl") && n.len() > 6);
        for entry in entries {
            match entry.kind(root) {
                Ok(EntryKind::Dir) => out.push(vec![entry.name, OsString::from(EVENTS_FILE)]),
                Ok(EntryKind::File) if is_log(&entry.name) => out.push(vec![entry.name]),
                Ok(EntryKind::Link) => rejected.push((root.join(&entry.name), LINK_REASON.to_owned())),
                Ok(_) => {}
                Err(e) => rejected.push((root.join(&entry.name), e.to_string())),
            }
        }
    }

    fn heads(&self, _root: &Path, rel: &[OsString], file: File, identity: &FileIdentity) -> io::Result<Vec<Head>> {
        let Some(id) = id_of(rel) else { return Ok(Vec::new()) };
        if identity.size == 0 {
            return Ok(Vec::new());
        }
        let start = events::read_start(file)?;
        Ok(vec![Head { bare: id.to_owned(), created_at: start.created_at, cwd: start.cwd }])
    }

    fn read(&self, _root: &Path, _rel: &[OsString], file: File, _bare: &str) -> io::Result<Transcript> {
        events::read(file)
    }

    fn guess(&self, _root: &Path, bare: &str) -> Vec<Rel> {
        vec![vec![OsString::from(bare), OsString::from(EVENTS_FILE)], vec![OsString::from(format!("{bare}.jsonl"))]]
    }
}
