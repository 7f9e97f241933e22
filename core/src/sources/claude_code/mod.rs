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
//!    stripped). A prompt typed while the model worked is a user message:
//!    its `queued_command` attachment (2.1.x, not a task notification)
//!    where it stands, and each `queue-operation` `remove` (a delivery) with
//!    its text (its own from 2.1.205, else the oldest `enqueue`d prompt's)
//!    after the last item typed before it, unless the same text is already
//!    there; a `dequeue` (taken up as the next prompt, or cancelled) makes
//!    no message.
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

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::conversation::Conversation;
use crate::discovery::Fingerprint;
use crate::error::HostError;
use crate::host::{BlockingSessionQuery, SessionHeader, SharedListing, SurfaceData};
use crate::sources::foreign::{conversation, listing_order, mtime_ms, read_error};
use crate::sources::fs::{open_under, par_map, sorted_entries, EntryKind, FileIdentity, Stamp, LINK_REASON};
use crate::sources::watch::{drop_inherited, watching_allowed, Changes, DirWatcher};
use crate::sources::{positions_in_order, FileSource};

use crate::sources::foreign::Transcript;

/// What every Claude Code session id starts with.
pub const PREFIX: &str = "claude-code:";

/// The name of the format in messages.
const FORMAT: &str = "Claude Code";

/// A read-only session source over a Claude Code projects root. Cheap to
/// clone; every method may run concurrently.
#[derive(Clone)]
pub struct ClaudeCodeSource {
    root: Arc<PathBuf>,
    /// What listings learned, kept between them.
    kept: Arc<Mutex<Kept>>,
}

impl std::fmt::Debug for ClaudeCodeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeCodeSource").field("root", &self.root).finish()
    }
}

/// A transcript's head as a listing read it: `createdAt` (or `None`), cwd,
/// and the identity the file had when opened.
type Head = (Option<u64>, Option<String>, FileIdentity);

/// What a Claude Code source keeps between listings: each transcript's head
/// under the stamp its file had before the read (a transcript whose stamp
/// is unchanged is not opened again), and, on Linux from the second listing
/// on, a watcher of the root and the project directories (see
/// [`DirWatcher`]): no event since the last listing and it is the answer;
/// events, and the directories are read again but only the transcripts
/// they name (and new ones) are looked at.
#[derive(Default)]
struct Kept {
    listings: u64,
    watcher: Option<DirWatcher>,
    no_watch: bool,
    heads: HashMap<PathBuf, (Stamp, Head)>,
    /// The last listing.
    last: Option<Arc<Snap>>,
    /// Changes drained by a fingerprint call and not yet read.
    pending: Option<Changes>,
}

/// A listing and each listed session's transcript identity (same order).
struct Snap {
    listing: Listing,
    identities: Vec<FileIdentity>,
    by_id: std::sync::OnceLock<HashMap<String, usize>>,
    /// The headers and identities as one shared listing, made once.
    shared: std::sync::OnceLock<SharedListing>,
}

impl Snap {
    /// From listed sessions and their identities, put in listing order.
    fn new(mut pairs: Vec<(ListedSession, FileIdentity)>, rejected: Vec<(PathBuf, String)>) -> Snap {
        pairs.sort_by(|a, b| listing_order(&a.0.header, &b.0.header));
        let (sessions, identities) = pairs.into_iter().unzip();
        Snap {
            listing: Listing { sessions, rejected },
            identities,
            by_id: Default::default(),
            shared: Default::default(),
        }
    }

    /// The headers and each transcript's fingerprint as of this listing,
    /// made on first use and shared by every caller.
    fn shared(&self) -> SharedListing {
        self.shared
            .get_or_init(|| {
                let headers: Arc<[SessionHeader]> = self.listing.sessions.iter().map(|s| s.header.clone()).collect();
                let fps: Arc<[Option<Fingerprint>]> =
                    self.identities.iter().map(|&i| Some(Fingerprint::from(i))).collect();
                SharedListing::new(headers, fps).expect("one identity per session")
            })
            .clone()
    }

    /// The position of each of `ids` in the listing.
    fn positions<'a>(&'a self, ids: &'a [String]) -> impl Iterator<Item = Option<usize>> + 'a {
        let sessions = &self.listing.sessions;
        let find = |id: &str| {
            let by_id =
                self.by_id.get_or_init(|| sessions.iter().enumerate().map(|(i, s)| (s.header.id.clone(), i)).collect());
            by_id.get(id).copied()
        };
        positions_in_order(sessions.len(), |i| sessions[i].header.id.as_str(), ids, find)
    }
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
        Ok(ClaudeCodeSource { root: Arc::new(root), kept: Arc::default() })
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the source may watch its root (the default: yes, from its
    /// second listing on, where the system can; `DSR_NO_WATCH=1` turns it
    /// off for every source). Shared by the source's clones.
    pub fn with_watching(self, enabled: bool) -> Self {
        let mut kept = self.kept();
        kept.no_watch = !enabled;
        if !enabled {
            kept.watcher = None;
        }
        drop(kept);
        self
    }

    /// Whether the source watches its root now.
    pub fn is_watching(&self) -> bool {
        self.kept().watcher.is_some()
    }

    /// The last listing if a watcher vouches that nothing changed since.
    fn watched_last(&self) -> Option<Arc<Snap>> {
        let mut kept = self.kept();
        drop_inherited(&mut kept.watcher);
        let last = kept.last.clone()?;
        match kept.watcher.as_mut()?.drain() {
            Changes::Nothing if kept.pending.is_none() => Some(last),
            changes => {
                // Kept for the next listing, which reads what changed.
                kept.pending = Some(kept.pending.take().unwrap_or_default().merge(changes));
                None
            }
        }
    }

    /// The last listing with the transcripts `dirs` names read again, when
    /// that is all that changed: each is a listed transcript, still a
    /// regular file (or the project directory holding it). `None` when
    /// anything else changed (the root, a new, removed, renamed or rejected
    /// entry): the walk is redone.
    fn updated_in_place(&self, kept: &mut Kept, last: &Snap, dirs: &[PathBuf]) -> Option<Snap> {
        let root = self.root.as_path();
        let mut changed = Vec::new();
        for d in dirs {
            if d == root {
                return None;
            }
            if d.parent() == Some(root) {
                // A project directory: the event names the entry too.
                continue;
            }
            changed.push(last.listing.sessions.iter().position(|s| s.path == *d)?);
        }
        if changed.is_empty() {
            return None;
        }
        let mut pairs: Vec<(ListedSession, FileIdentity)> =
            last.listing.sessions.iter().cloned().zip(last.identities.iter().copied()).collect();
        for i in changed {
            let path = pairs[i].0.path.clone();
            let meta = std::fs::symlink_metadata(&path).ok().filter(|m| m.file_type().is_file())?;
            let stamp = Stamp::of(&meta);
            if kept.heads.get(&path).is_some_and(|(held, _)| *held == stamp) {
                continue;
            }
            let (project, name) = (path.parent()?.file_name()?, path.file_name()?);
            let (file, identity) = open_under(root, &[project, name]).ok()?;
            let (created, cwd) = transcript::read_head(file).ok()?;
            let created_at = created.unwrap_or_else(|| mtime_ms(&identity));
            let stem = pairs[i].0.header.id.strip_prefix(PREFIX).unwrap_or_default().to_owned();
            pairs[i] = (ListedSession::new(PREFIX, &stem, created_at, cwd.clone(), path.clone()), identity);
            kept.heads.insert(path, (stamp, (created, cwd, identity)));
        }
        Some(Snap::new(pairs, last.listing.rejected.clone()))
    }

    /// The transcripts under the root, with per-entry problems.
    pub fn list(&self) -> io::Result<Listing> {
        self.listed().map(|l| l.listing.clone())
    }

    /// [`listed`](Self::listed) with its error as the host interface gives it.
    fn listed_for_host(&self) -> Result<Arc<Snap>, HostError> {
        self.listed()
            .map_err(|e| HostError::new(format!("cannot list {FORMAT} sessions in {}: {e}", self.root.display())))
    }

    /// The listing as of now, and each listed session's log identity.
    fn listed(&self) -> io::Result<Arc<Snap>> {
        let mut kept = self.kept();
        let kept = &mut *kept;
        drop_inherited(&mut kept.watcher);
        let drained = match (&mut kept.watcher, &kept.last) {
            (Some(w), Some(_)) => w.drain(),
            _ => Changes::Everything,
        };
        let changes = match kept.pending.take() {
            Some(pending) => pending.merge(drained),
            None => drained,
        };
        if let (Changes::Nothing, Some(last)) = (&changes, &kept.last) {
            return Ok(last.clone());
        }
        if let (Changes::Dirs(dirs), Some(last), true) = (&changes, kept.last.clone(), kept.watcher.is_some()) {
            if let Some(updated) = self.updated_in_place(kept, &last, dirs) {
                let updated = Arc::new(updated);
                kept.last = Some(updated.clone());
                return Ok(updated);
            }
        }
        kept.listings += 1;
        if kept.watcher.is_none() && !kept.no_watch && kept.listings >= 2 {
            match DirWatcher::new(&self.root).filter(|_| watching_allowed()) {
                Some(w) => kept.watcher = Some(w),
                None => kept.no_watch = true,
            }
        }
        kept.last = None;
        // With a watcher that saw every change since the last listing, only
        // the transcripts it names are looked at again.
        let trusted: Option<HashSet<PathBuf>> = match (&changes, kept.watcher.is_some()) {
            (Changes::Dirs(dirs), true) => Some(dirs.iter().cloned().collect()),
            _ => None,
        };
        let mut refused = false;
        let mut watch = |dir: &Path| {
            if let Some(w) = kept.watcher.as_mut() {
                refused |= !w.watch(dir);
            }
        };
        let mut rejected = Vec::new();
        let mut found: Vec<(String, OsString, OsString)> = Vec::new();
        let mut seen = HashSet::new();
        watch(&self.root);
        let mut projects = Vec::new();
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
            watch(&dir);
            let entries = match sorted_entries(&dir) {
                Ok(e) => e,
                Err(e) => {
                    rejected.push((dir, e.to_string()));
                    continue;
                }
            };
            projects.push(dir.clone());
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
        if refused {
            // The kernel refused a watch: list without watching from now on.
            kept.watcher = None;
            kept.no_watch = true;
        }
        if let Some(w) = kept.watcher.as_mut() {
            w.retain(|d| d == self.root.as_path() || projects.iter().any(|p| p == d));
        }
        let trusted = trusted.filter(|_| kept.watcher.is_some());
        let heads_kept = &kept.heads;
        let heads = par_map(&found, |(_, project, name), _: &mut ()| -> io::Result<(Option<Stamp>, Head)> {
            let path = self.root.join(project).join(name);
            let held = heads_kept.get(&path);
            if let (Some(changed), Some((stamp, head))) = (&trusted, held) {
                if !changed.contains(&path) {
                    return Ok((Some(*stamp), head.clone()));
                }
            }
            let stamp = Stamp::lstat(&path);
            if let (Some(now), Some((was, head))) = (stamp, held) {
                if now == *was {
                    return Ok((Some(now), head.clone()));
                }
            }
            let (file, identity) = open_under(&self.root, &[project, name])?;
            let (created, cwd) = transcript::read_head(file)?;
            // Kept under the stamp taken before the read (none: not kept).
            Ok((stamp, (created, cwd, identity)))
        });
        let mut pairs = Vec::with_capacity(found.len());
        let mut heads_now = HashMap::with_capacity(found.len());
        for ((stem, project, name), head) in found.into_iter().zip(heads) {
            let path = self.root.join(&project).join(&name);
            match head {
                Ok((stamp, (created, cwd, identity))) => {
                    let created_at = created.unwrap_or_else(|| mtime_ms(&identity));
                    pairs.push((ListedSession::new(PREFIX, &stem, created_at, cwd.clone(), path.clone()), identity));
                    if let Some(stamp) = stamp {
                        heads_now.insert(path, (stamp, (created, cwd, identity)));
                    }
                }
                Err(e) => rejected.push((path, e.to_string())),
            }
        }
        kept.heads = heads_now;
        let last = Arc::new(Snap::new(pairs, rejected));
        kept.last = Some(last.clone());
        Ok(last)
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
    pub fn read(&self, id: &str) -> Result<(PathBuf, Transcript), HostError> {
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
        self.listed_for_host().map(|l| l.listing.sessions.iter().map(|s| s.header.clone()).collect())
    }

    /// The listing with each transcript's identity as that listing saw it
    /// (an unwatched listing `lstat`s every transcript), shared while
    /// nothing changes.
    fn shared_listing(&self) -> Result<Option<SharedListing>, HostError> {
        self.listed_for_host().map(|l| Some(l.shared()))
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
    /// conversation come from that one file) as of now: from the last
    /// listing when a watcher vouches that nothing changed since, else an
    /// `lstat` of the file that listing found (one not listed: looked up).
    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        let watched = self.watched_last();
        let Some(last) = watched.clone().or_else(|| self.kept().last.clone()) else {
            return Ok(Some(session_ids.iter().map(|id| self.identity(id).ok().map(Fingerprint::from)).collect()));
        };
        let identities = last.positions(session_ids).zip(session_ids).map(|(at, id)| match (at, &watched) {
            (Some(i), Some(_)) => Some(last.identities[i]),
            (Some(i), None) => Stamp::lstat(&last.listing.sessions[i].path).map(|s| s.id),
            (None, _) => self.identity(id).ok(),
        });
        Ok(Some(identities.map(|i| i.map(Fingerprint::from)).collect()))
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
