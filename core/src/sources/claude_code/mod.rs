//! Claude Code transcripts: a read-only session source over a projects
//! root (`~/.claude/projects`, or `$CLAUDE_CONFIG_DIR/projects`), which
//! holds `<project-dir>/<session>.jsonl`, one JSON object per line.
//!
//! ```no_run
//! use dsh_session_reference::sources::claude_code::ClaudeCodeSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = ClaudeCodeSource::open("/home/me/.claude/projects")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Sessions
//!
//! - **id**: `claude-code:<file stem>` (the id `claude --resume` takes).
//!   Files named `agent-*.jsonl` (subagents) and everything below a
//!   session's own directory (`<session>/subagents/`, `tool-results/`) are
//!   not sessions.
//! - **createdAt**: the first `timestamp` among the first
//!   [`HEAD_LINES`](transcript::HEAD_LINES) lines, else the file's
//!   modification time.
//! - **cwd**: listing gives the first `cwd` in those lines; a read gives the
//!   newest `cwd` on the current path. The directory name is never decoded.
//! - **title**: the latest `custom-title`, else the latest `ai-title`, else
//!   the latest legacy `summary` whose `leafUuid` is on the current path,
//!   else the first typed prompt (whitespace collapsed, at most 100
//!   characters). A `custom-title` in the last 64 KiB is found without
//!   reading the rest of the file (Claude Code re-appends titles there).
//! - **capturedThroughSeq**: the 0-based number of the last line read
//!   (every line counts, skipped ones too).
//!
//! # The current conversation
//!
//! 1. Every line is parsed on its own; a line that is not JSON (torn,
//!    corrupt, nested deeper than 128 levels) is skipped wherever it is.
//!    Of lines with the same `uuid`, the first wins.
//! 2. The leaf is the last non-sidechain `user` or `assistant` line of the
//!    file; the path is its `parentUuid` chain back to a root, a dangling
//!    parent or a cycle. Rewound branches and sidechains are not on it. A
//!    file with no `parentUuid` at all (early versions) chains in file order.
//! 3. A `compact_boundary` has no parent, so the path starts at the newest
//!    boundary; its first child is the checkpoint (the compaction summary),
//!    and the messages it preserved (`preservedMessages.uuids`, or the
//!    `preservedSegment` from head to tail) follow the anchor, in order.
//! 4. User lines: not `isMeta`; text blocks (or the string) only, each
//!    cleaned by [`text::typed_text`] (tool results, images, command echoes
//!    and outputs, interrupt markers dropped; reminder and IDE blocks
//!    stripped). A queued prompt attachment (`queued_command`, not a task
//!    notification) is a user message; a `queue-operation` `remove` with text
//!    (a steering prompt) is put after the last item typed before it,
//!    unless the same text is already there.
//! 5. Assistant lines: `text` blocks only (never thinking or tool use),
//!    the texts of every line of one `message.id` joined with `"\n"` at the
//!    first of them; synthetic replies (`model: "<synthetic>"`,
//!    `isApiErrorMessage`) are dropped.
//!
//! # Safety
//!
//! Nothing under the root is written, created or locked. Links below the
//! root are not followed (a linked project directory or transcript is not
//! listed, and reading it fails naming the link). A line longer than
//! [`MAX_LINE_BYTES`](crate::sources::foreign::MAX_LINE_BYTES) makes the
//! session unreadable; memory is bounded by the texts kept plus one line.

pub mod text;
pub mod transcript;

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::conversation::Conversation;
use crate::discovery::Fingerprint;
use crate::error::HostError;
use crate::host::{BlockingSessionQuery, SessionHeader, SurfaceData};
use crate::sources::foreign::{conversation, mtime_ms, read_error};
use crate::sources::fs::{open_under, par_map, sorted_entries, EntryKind, FileIdentity, LINK_REASON};
use crate::sources::FileSource;

/// What every Claude Code session id starts with.
pub const PREFIX: &str = "claude-code:";

/// The name of the format in messages.
const FORMAT: &str = "Claude Code";

/// A read-only session source over a Claude Code projects root. Cheap to
/// clone; every method may run concurrently.
#[derive(Clone, Debug)]
pub struct ClaudeCodeSource {
    root: Arc<PathBuf>,
}

pub use crate::sources::foreign::{ListedSession, Listing};

/// The file stem of a transcript name, when it names a session.
fn session_stem(name: &OsStr) -> Option<&str> {
    let stem = name.to_str()?.strip_suffix(".jsonl")?;
    let ok = !stem.is_empty() && !stem.starts_with("agent-") && !stem.chars().any(|c| c.is_control() || c == '/');
    ok.then_some(stem)
}

impl ClaudeCodeSource {
    /// Opens a projects root (a directory; a link to one is fine).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = super::open_root(root.as_ref(), FORMAT)?;
        Ok(ClaudeCodeSource { root: Arc::new(root) })
    }

    /// The transcripts under the root, with per-entry problems.
    pub fn list(&self) -> io::Result<Listing> {
        let mut rejected = Vec::new();
        let mut found: Vec<(String, OsString, OsString)> = Vec::new();
        let mut seen = HashSet::new();
        for project in sorted_entries(&self.root)? {
            let dir = self.root.join(&project.name);
            match project.kind(&self.root)? {
                EntryKind::Dir => {}
                EntryKind::Link => {
                    rejected.push((dir, LINK_REASON.to_owned()));
                    continue;
                }
                _ => continue,
            }
            let entries = match sorted_entries(&dir) {
                Ok(e) => e,
                Err(e) => {
                    rejected.push((dir, e.to_string()));
                    continue;
                }
            };
            for entry in entries {
                let Some(stem) = session_stem(&entry.name) else { continue };
                let path = dir.join(&entry.name);
                match entry.kind(&dir)? {
                    EntryKind::File => {}
                    EntryKind::Link => {
                        rejected.push((path, LINK_REASON.to_owned()));
                        continue;
                    }
                    _ => continue,
                }
                if !seen.insert(stem.to_owned()) {
                    rejected.push((path, "a transcript with the same name was listed first".to_owned()));
                    continue;
                }
                found.push((stem.to_owned(), project.name.clone(), entry.name.clone()));
            }
        }
        let heads = par_map(&found, |(_, project, name), _: &mut ()| {
            let (file, identity) = open_under(&self.root, &[project, name])?;
            transcript::read_head(file).map(|h| (h, identity))
        });
        let mut sessions = Vec::with_capacity(found.len());
        for ((stem, project, name), head) in found.into_iter().zip(heads) {
            let path = self.root.join(&project).join(&name);
            match head {
                Ok(((created, cwd), identity)) => {
                    let created = created.unwrap_or_else(|| mtime_ms(&identity));
                    let header = SessionHeader::new(format!("{PREFIX}{stem}"), created, cwd);
                    sessions.push(ListedSession { header, path });
                }
                Err(e) => rejected.push((path, e.to_string())),
            }
        }
        let mut listing = Listing { sessions, rejected };
        listing.sort();
        Ok(listing)
    }

    /// The transcript of `id` (with or without the prefix): the first
    /// project directory, in byte order, holding `<stem>.jsonl`.
    fn locate(&self, id: &str) -> Result<(PathBuf, [OsString; 2]), HostError> {
        let stem = id.strip_prefix(PREFIX).unwrap_or(id);
        let name = OsString::from(format!("{stem}.jsonl"));
        let not_found = |why: Option<String>| {
            let mut m = format!("no {FORMAT} session {} in {}", crate::json::js_string(id), self.root.display());
            if let Some(why) = why {
                m.push_str(&format!(" ({why})"));
            }
            HostError::new(m)
        };
        if session_stem(&name).is_none_or(|s| s != stem) {
            return Err(not_found(None));
        }
        let projects = sorted_entries(&self.root).map_err(|e| not_found(Some(e.to_string())))?;
        let mut why = None;
        for project in projects {
            if project.kind(&self.root).ok() != Some(EntryKind::Dir) {
                continue;
            }
            let path = self.root.join(&project.name).join(&name);
            match crate::sources::fs::entry_kind(&path) {
                Ok(EntryKind::File) => return Ok((path, [project.name, name])),
                Ok(EntryKind::Link) => why = Some(format!("{}: {LINK_REASON}", path.display())),
                _ => {}
            }
        }
        Err(not_found(why))
    }

    /// Reads the whole transcript of `id`.
    pub fn read(&self, id: &str) -> Result<(PathBuf, transcript::Read), HostError> {
        let (path, parts) = self.locate(id)?;
        let (file, _) =
            open_under(&self.root, &[&parts[0], &parts[1]]).map_err(|e| read_error(FORMAT, id, &path, e))?;
        let read = transcript::read(file).map_err(|e| read_error(FORMAT, id, &path, e))?;
        Ok((path, read))
    }

    /// The current conversation of `id`, as the resolver renders it.
    pub fn conversation(&self, id: &str) -> Result<Conversation, HostError> {
        let (_, read) = self.read(id)?;
        Ok(conversation(PREFIX, id, read.cwd, read.stats, read.items))
    }
}

impl BlockingSessionQuery for ClaudeCodeSource {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        Listing::headers(self.list(), FORMAT, &self.root)
    }

    /// A `custom-title` near the end of the file is the title without
    /// reading the rest; otherwise the whole transcript is read.
    fn read_title(&self, session_id: &str) -> Result<Option<String>, HostError> {
        let (path, parts) = self.locate(session_id)?;
        let (file, identity) =
            open_under(&self.root, &[&parts[0], &parts[1]]).map_err(|e| read_error(FORMAT, session_id, &path, e))?;
        match transcript::tail_custom_title(file, identity.size) {
            Ok(Some(title)) => Ok(Some(title)),
            _ => Ok(self.read(session_id)?.1.title),
        }
    }

    fn read_surface(&self, session_id: &str) -> Result<SurfaceData, HostError> {
        self.conversation(session_id).map(SurfaceData::from)
    }

    /// The identity of each session's transcript (its title and
    /// conversation come from that one file).
    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        Ok(Some(session_ids.iter().map(|id| self.identity(id).ok().map(Fingerprint::from)).collect()))
    }
}

impl FileSource for ClaudeCodeSource {
    const FORMAT: &'static str = FORMAT;

    fn root(&self) -> &Path {
        &self.root
    }

    fn identity(&self, session_id: &str) -> Result<FileIdentity, HostError> {
        let (path, parts) = self.locate(session_id)?;
        open_under(&self.root, &[&parts[0], &parts[1]])
            .map(|(_, i)| i)
            .map_err(|e| read_error(FORMAT, session_id, &path, e))
    }
}
