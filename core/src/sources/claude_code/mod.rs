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
//!   not sessions, nor is a file without a message (zero bytes, only
//!   `summary` or `file-history-snapshot` lines): it is listed once it has
//!   one.
//! - **createdAt**: the first `timestamp` among the first
//!   [`HEAD_LINES`](project::HEAD_LINES) lines, or up to the first message
//!   when it comes later; 0 (listed last) when there is none.
//! - **cwd**: listing gives the first `cwd` of those lines; a read gives the
//!   newest `cwd` on the current path. The directory name is never decoded.
//! - **title**: the latest `custom-title`, else the latest `ai-title`, else
//!   the summary of the leaf, or of the newest message of the current path
//!   that has one, else the first typed prompt (whitespace collapsed, at
//!   most 100 characters). Claude Code before 2.1 writes a session's
//!   summary into another transcript of the project directory, so for a
//!   transcript it wrote the summaries of the whole project count
//!   ([`project`]); a later one's own. A `custom-title` in the last 64 KiB
//!   is found without reading the rest of the file (Claude Code re-appends
//!   titles there).
//! - **capturedThroughSeq**: the 0-based number of the last line read
//!   (every line counts, skipped ones too). A read sees the file as it was
//!   when it began, up to its last complete line: a last line without its
//!   `\n` (a writer in the middle of it) is not read.
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
//! A title read keeps no text; a `prepare` of the whole session
//! (`SurfaceRead::Within`) keeps the chain and where each text is, then
//! reads again only the lines of the texts retention may keep under the
//! budget (checked by length and checksum; a file rewritten under the read
//! is read again whole).

mod chain;
pub mod project;
mod root;
pub mod text;
pub mod transcript;

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::conversation::Conversation;
use crate::error::HostError;
use crate::fs::{open_under, par_map, sorted_entries, EntryKind, FileIdentity, Stamp, LINK_REASON};
use crate::host::Fingerprint;
use crate::host::{
    BlockingSessionQuery, SessionHeader, SharedListing, SurfaceAnswer, SurfaceData, SurfaceItems, SurfaceRead,
};
use crate::retention::Elided;
use crate::sources::file_source::{positions_in_order, FileSource};
use crate::sources::foreign::{conversation, listing_order, mtime_ms, read_error, within_or_whole};
use crate::sources::watch::{drop_inherited, watching_allowed, Changes, DirWatcher};

use self::project::{Scanned, Winners};
use self::transcript::TitleParts;
use crate::sources::foreign::{Transcript, UNKNOWN_CREATED_AT};

/// What every Claude Code session id starts with.
pub const PREFIX: &str = "claude-code:";

/// The name of the format in messages.
const FORMAT: &str = "Claude Code";

pub(crate) use self::root::KIND;

/// A read-only session source over a Claude Code projects root. Cheap to
/// clone; every method may run concurrently.
#[derive(Clone)]
pub struct ClaudeCodeSource {
    root: Arc<PathBuf>,
    /// What listings learned, kept between them.
    kept: Arc<Mutex<Kept>>,
    /// Whole transcripts read so far.
    reads: Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for ClaudeCodeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeCodeSource").field("root", &self.root).finish()
    }
}

/// What a Claude Code source keeps between listings: each transcript's scan
/// (its head, and the summaries and uuids of one written before 2.1) under
/// the stamp its file had before the read (a transcript whose stamp is
/// unchanged is not opened again; one that only grew is read from where
/// its scan stopped), and, on Linux from the second listing on, a watcher
/// of the root and the project directories (see [`DirWatcher`]): no event
/// since the last listing and it is the answer; events, and the directories
/// are read again but only the transcripts they name (and new ones) are
/// looked at.
#[derive(Default)]
struct Kept {
    listings: u64,
    watcher: Option<DirWatcher>,
    no_watch: bool,
    files: HashMap<PathBuf, (Stamp, Arc<Scanned>)>,
    /// The transcripts the last walk found, in walk order.
    found: Arc<[Found]>,
    /// The summary bytes of each session's fingerprint, and what they were
    /// made from.
    digests: HashMap<PathBuf, Digest>,
    /// What each transcript's title is made of, under the identity the
    /// file had when it was read: while it is unchanged, a title read needs
    /// only the project's summaries, not the file.
    titles: HashMap<PathBuf, (FileIdentity, Arc<TitleParts>)>,
    /// The last listing.
    last: Option<Arc<Snap>>,
    /// Changes drained by a fingerprint call and not yet read.
    pending: Option<Changes>,
}

/// A transcript a walk found: its session stem, its project directory's
/// name, and its path.
struct Found {
    stem: String,
    project: OsString,
    path: PathBuf,
}

/// What of its project's summaries a session may be titled by (a hash
/// added to its fingerprint), made from these scan and winners.
struct Digest {
    scanned: Arc<Scanned>,
    winners: Arc<Winners>,
    hash: Option<u64>,
}

/// One listed session: its entry, its transcript's identity, its project
/// directory's name, and the hash of the summaries it may be titled by.
struct Entry {
    session: ListedSession,
    identity: FileIdentity,
    project: OsString,
    digest: Option<u64>,
}

/// A listing: the listed sessions (shared between listings, so that a
/// listing after one transcript changed copies pointers, not entries), the
/// rejected entries, the files without a message, and the summary titles of
/// each project directory that has some.
struct Snap {
    entries: Vec<Arc<Entry>>,
    rejected: Vec<(PathBuf, String)>,
    without_conversation: Vec<PathBuf>,
    projects: HashMap<OsString, Arc<Winners>>,
    by_id: std::sync::OnceLock<HashMap<String, usize>>,
    /// The headers, in order, made once (the last listing's when they are
    /// the same: an append changes fingerprints, seldom headers).
    headers: std::sync::OnceLock<Arc<[SessionHeader]>>,
    /// The last listing's headers, if it made them.
    headers_before: Option<Arc<[SessionHeader]>>,
    /// The headers and fingerprints as one shared listing, made once.
    shared: std::sync::OnceLock<SharedListing>,
    /// Where each transcript was found (sessions and files without a
    /// message alike), by file stem, made on first use: a read goes
    /// straight there instead of looking in every project directory.
    found_at: std::sync::OnceLock<HashMap<String, PathBuf>>,
}

/// What a listing is made of while it is assembled.
#[derive(Default)]
struct Part {
    entries: Vec<Arc<Entry>>,
    without: Vec<PathBuf>,
    projects: HashMap<OsString, Arc<Winners>>,
}

/// A session's fingerprint: its transcript's identity, and the hash of the
/// summaries of its project that it may be titled by (a title written into
/// another transcript changes it). 48 bytes: held inline, no allocation.
fn fingerprint(identity: FileIdentity, digest: Option<u64>) -> Fingerprint {
    let plain = Fingerprint::from(identity);
    match digest {
        None => plain,
        Some(hash) => {
            let mut bytes = [0u8; 48];
            let n = plain.as_bytes().len().min(40);
            bytes[..n].copy_from_slice(&plain.as_bytes()[..n]);
            bytes[40..].copy_from_slice(&hash.to_le_bytes());
            Fingerprint::from_slice(&bytes)
        }
    }
}

fn entry_order(a: &Arc<Entry>, b: &Arc<Entry>) -> std::cmp::Ordering {
    listing_order(&a.session.header, &b.session.header)
}

impl Snap {
    /// From listed sessions, put in listing order.
    fn new(
        mut entries: Vec<Arc<Entry>>,
        rejected: Vec<(PathBuf, String)>,
        without_conversation: Vec<PathBuf>,
        projects: HashMap<OsString, Arc<Winners>>,
    ) -> Snap {
        entries.sort_by(entry_order);
        Snap::sorted(entries, rejected, without_conversation, projects)
    }

    /// From listed sessions already in listing order.
    fn sorted(
        entries: Vec<Arc<Entry>>,
        rejected: Vec<(PathBuf, String)>,
        without_conversation: Vec<PathBuf>,
        projects: HashMap<OsString, Arc<Winners>>,
    ) -> Snap {
        Snap {
            entries,
            rejected,
            without_conversation,
            projects,
            by_id: Default::default(),
            headers: Default::default(),
            headers_before: None,
            shared: Default::default(),
            found_at: Default::default(),
        }
    }

    /// The headers in listing order, made on first use.
    fn headers(&self) -> Arc<[SessionHeader]> {
        self.headers
            .get_or_init(|| {
                if let Some(before) = &self.headers_before {
                    let same = before.len() == self.entries.len()
                        && before.iter().zip(&self.entries).all(|(h, e)| *h == e.session.header);
                    if same {
                        return before.clone();
                    }
                }
                self.entries.iter().map(|e| e.session.header.clone()).collect()
            })
            .clone()
    }

    /// The listing as the public [`Listing`].
    fn listing(&self) -> Listing {
        Listing {
            sessions: self.entries.iter().map(|e| e.session.clone()).collect(),
            rejected: self.rejected.clone(),
            without_conversation: self.without_conversation.clone(),
        }
    }

    /// The headers and each session's fingerprint as of this listing,
    /// made on first use and shared by every caller.
    fn shared(&self) -> SharedListing {
        self.shared
            .get_or_init(|| {
                let headers = self.headers();
                let fps: Arc<[Option<Fingerprint>]> =
                    self.entries.iter().map(|e| Some(fingerprint(e.identity, e.digest))).collect();
                SharedListing::new(headers, fps).expect("one identity per session")
            })
            .clone()
    }

    /// Where this listing found the transcript of the session `stem`.
    fn found_at(&self, stem: &str) -> Option<&Path> {
        let found_at = self.found_at.get_or_init(|| {
            let sessions = self.entries.iter().map(|e| &e.session.path);
            let stem_of = |p: &PathBuf| Some((p.file_name().and_then(session_stem)?.to_owned(), p.clone()));
            sessions.chain(&self.without_conversation).filter_map(stem_of).collect()
        });
        found_at.get(stem).map(PathBuf::as_path)
    }

    /// The position of each of `ids` in the listing.
    fn positions<'a>(&'a self, ids: &'a [String]) -> impl Iterator<Item = Option<usize>> + 'a {
        let entries = &self.entries;
        let find = |id: &str| {
            let by_id = self
                .by_id
                .get_or_init(|| entries.iter().enumerate().map(|(i, e)| (e.session.header.id.clone(), i)).collect());
            by_id.get(id).copied()
        };
        positions_in_order(entries.len(), |i| entries[i].session.header.id.as_str(), ids, find)
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
        let root = crate::sources::file_source::open_root(root.as_ref(), FORMAT)?;
        Ok(ClaudeCodeSource { root: Arc::new(root), kept: Arc::default(), reads: Arc::default() })
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
    /// that is all that changed: each is a transcript the last walk found,
    /// still a regular file (or the project directory holding it, or an
    /// entry that is not a transcript). `None` when anything else changed
    /// (the root, a new, removed, renamed or rejected transcript): the walk
    /// is redone.
    fn updated_in_place(&self, kept: &mut Kept, last: &Arc<Snap>, dirs: &[PathBuf]) -> Option<Arc<Snap>> {
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
            if !kept.files.contains_key(d) {
                // Not a transcript (a subagent's file, a session's own
                // directory) or one the last walk did not find.
                if d.file_name().and_then(session_stem).is_none() {
                    continue;
                }
                return None;
            }
            changed.push(d);
        }
        let mut projects: HashSet<&OsStr> = HashSet::new();
        for path in changed {
            let meta = std::fs::symlink_metadata(path).ok().filter(|m| m.file_type().is_file())?;
            let stamp = Stamp::of(&meta);
            let (held_stamp, held) = kept.files.get(path)?;
            if *held_stamp == stamp {
                continue;
            }
            let (project, name) = (path.parent()?.file_name()?, path.file_name()?);
            let (file, identity) = open_under(root, &[project, name]).ok()?;
            let scanned = project::scan(file, identity, Some(held)).ok()?;
            kept.files.insert(path.clone(), (stamp, Arc::new(scanned)));
            projects.insert(project);
        }
        if projects.is_empty() {
            return Some(last.clone());
        }
        Some(Arc::new(Self::reassemble(kept, last, &projects)))
    }

    /// The listing of the transcripts the last walk found, from their
    /// scans: each project's summary titles, and each transcript that holds
    /// a message as a session (the others in `without_conversation`).
    fn assemble(
        kept: &mut Kept,
        rejected: Vec<(PathBuf, String)>,
        before: Option<&HashMap<OsString, Arc<Winners>>>,
    ) -> Snap {
        let found = kept.found.clone();
        let mut part = Part { entries: Vec::with_capacity(found.len()), ..Part::default() };
        let mut digests = HashMap::new();
        for group in found.chunk_by(|a, b| a.project == b.project) {
            let before = before.and_then(|b| b.get(&group[0].project));
            Self::assemble_project(kept, group, before, &mut digests, &mut part);
        }
        kept.digests = digests;
        part.without.sort();
        Snap::new(part.entries, rejected, part.without, part.projects)
    }

    /// The last listing with the entries of the project directories
    /// `changed` made again from their scans (a listing after a few
    /// transcripts changed: the other projects' entries are kept).
    fn reassemble(kept: &mut Kept, last: &Snap, changed: &HashSet<&OsStr>) -> Snap {
        let in_changed = |path: &Path| path.parent().and_then(Path::file_name).is_some_and(|p| changed.contains(p));
        // The other projects' entries, still in listing order.
        let unchanged: Vec<Arc<Entry>> =
            last.entries.iter().filter(|e| !changed.contains(e.project.as_os_str())).cloned().collect();
        let mut part = Part {
            entries: Vec::new(),
            without: last.without_conversation.iter().filter(|p| !in_changed(p)).cloned().collect(),
            projects: last.projects.clone(),
        };
        let found = kept.found.clone();
        let mut digests = HashMap::new();
        for group in found.chunk_by(|a, b| a.project == b.project) {
            if !changed.contains(group[0].project.as_os_str()) {
                continue;
            }
            let before = part.projects.remove(&group[0].project);
            Self::assemble_project(kept, group, before.as_ref(), &mut digests, &mut part);
        }
        kept.digests.extend(digests);
        part.without.sort();
        // Merged with the remade entries, put in order on their own.
        let mut remade = part.entries;
        remade.sort_by(entry_order);
        let mut entries = Vec::with_capacity(unchanged.len() + remade.len());
        let mut remade = remade.into_iter().peekable();
        for e in unchanged {
            while let Some(r) = remade.next_if(|r| entry_order(r, &e).is_le()) {
                entries.push(r);
            }
            entries.push(e);
        }
        entries.extend(remade);
        let mut snap = Snap::sorted(entries, last.rejected.clone(), part.without, part.projects);
        snap.headers_before = last.headers.get().cloned();
        snap
    }

    /// The entries of one project directory's transcripts (`group`, in
    /// byte order): its summary titles (`before`'s when they are the same),
    /// and each transcript's row, with its summary bytes (made again only
    /// when its scan or the titles changed; moved from `kept.digests` to
    /// `digests`), or its path in `without`.
    fn assemble_project(
        kept: &mut Kept,
        group: &[Found],
        before: Option<&Arc<Winners>>,
        digests: &mut HashMap<PathBuf, Digest>,
        part: &mut Part,
    ) {
        let scans: Vec<(&Found, Arc<Scanned>)> =
            group.iter().filter_map(|f| kept.files.get(&f.path).map(|(_, s)| (f, s.clone()))).collect();
        // A summary of a transcript started later is newer: its first
        // timestamp, else (only titles in it) when it was written.
        let started = |s: &Scanned| s.head.created.unwrap_or_else(|| mtime_ms(&s.identity));
        let built = Winners::build(scans.iter().enumerate().map(|(place, (_, s))| (started(s), place, &**s)));
        let winners = match before {
            // The same titles: the same digests.
            Some(held) if held.same_titles(&built) => held.clone(),
            _ => Arc::new(built),
        };
        for (f, scanned) in scans {
            if !scanned.is_session() {
                part.without.push(f.path.clone());
                continue;
            }
            let mut digest = None;
            if scanned.writes_summaries() && !winners.is_empty() {
                let hash = match kept.digests.remove(&f.path) {
                    Some(d) if Arc::ptr_eq(&d.scanned, &scanned) && Arc::ptr_eq(&d.winners, &winners) => d.hash,
                    _ => winners.digest(&scanned.uuids),
                };
                digest = hash;
                digests.insert(f.path.clone(), Digest { scanned: scanned.clone(), winners: winners.clone(), hash });
            }
            let head = &scanned.head;
            let created = head.created.unwrap_or(UNKNOWN_CREATED_AT);
            let session = ListedSession::new(PREFIX, &f.stem, created, head.cwd.clone(), f.path.clone());
            let (identity, project) = (scanned.identity, f.project.clone());
            part.entries.push(Arc::new(Entry { session, identity, project, digest }));
        }
        if !winners.is_empty() {
            part.projects.insert(group[0].project.clone(), winners);
        }
    }

    /// The transcripts under the root, with per-entry problems.
    pub fn list(&self) -> io::Result<Listing> {
        self.listed().map(|l| l.listing())
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
        let before = kept.last.take().map(|l| l.projects.clone());
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
        let held_files = &kept.files;
        let scans = par_map(&found, |(_, project, name), _: &mut ()| -> io::Result<(Option<Stamp>, Arc<Scanned>)> {
            let path = self.root.join(project).join(name);
            let held = held_files.get(&path);
            if let (Some(changed), Some((stamp, scanned))) = (&trusted, held) {
                if !changed.contains(&path) {
                    return Ok((Some(*stamp), scanned.clone()));
                }
            }
            let stamp = Stamp::lstat(&path);
            if let (Some(now), Some((was, scanned))) = (stamp, held) {
                if now == *was {
                    return Ok((Some(now), scanned.clone()));
                }
            }
            let (file, identity) = open_under(&self.root, &[project, name])?;
            let scanned = project::scan(file, identity, held.map(|(_, s)| &**s))?;
            // Kept under the stamp taken before the read (none: not kept).
            Ok((stamp, Arc::new(scanned)))
        });
        let mut files = HashMap::with_capacity(found.len());
        let mut walked = Vec::with_capacity(found.len());
        for ((stem, project, name), scan) in found.into_iter().zip(scans) {
            let path = self.root.join(&project).join(&name);
            match scan {
                Ok((stamp, scanned)) => {
                    // Unstamped (it vanished while read): listed, not kept.
                    let stamp = stamp.unwrap_or(Stamp { id: scanned.identity, ctime_ns: -1 });
                    files.insert(path.clone(), (stamp, scanned));
                    walked.push(Found { stem, project, path });
                }
                Err(e) => rejected.push((path, e.to_string())),
            }
        }
        kept.files = files;
        kept.found = walked.into();
        let Kept { titles, files, .. } = &mut *kept;
        titles.retain(|path, _| files.contains_key(path));
        let last = Arc::new(Self::assemble(kept, rejected, before.as_ref()));
        kept.last = Some(last.clone());
        Ok(last)
    }

    /// The transcript of `id` (with or without the prefix): where the last
    /// listing found it, while it is still there (one `lstat`), else the
    /// first project directory, in byte order, holding `<stem>.jsonl`
    /// (looking in every project directory for every read made title reads
    /// cost time times project directories).
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
        let last = self.kept().last.clone();
        crate::work::add(1);
        if let Some(path) = last.as_deref().and_then(|l| l.found_at(stem)) {
            let project = path.parent().and_then(Path::file_name).map(OsStr::to_os_string);
            if let (Some(project), Ok(EntryKind::File)) = (project, crate::fs::entry_kind(path)) {
                return Ok((path.to_path_buf(), [project, name]));
            }
        }
        let projects = sorted_entries(&self.root).map_err(|e| not_found(Some(e.to_string())))?;
        let mut why = None;
        for project in projects {
            crate::work::add(1);
            if project.kind(&self.root).ok() != Some(EntryKind::Dir) {
                continue;
            }
            let path = self.root.join(&project.name).join(&name);
            match crate::fs::entry_kind(&path) {
                Ok(EntryKind::File) => return Ok((path, [project.name, name])),
                Ok(EntryKind::Link) => why = Some(format!("{}: {LINK_REASON}", path.display())),
                _ => {}
            }
        }
        Err(not_found(why))
    }

    /// Reads the whole transcript of `id`, its title with the summaries of
    /// its project directory (as of the last listing; the first read of a
    /// source that has none lists the root).
    pub fn read(&self, id: &str) -> Result<(PathBuf, Transcript), HostError> {
        self.read_with(id, true)
    }

    /// Reads the transcript of `id`; its title looks at the project's
    /// summaries only when `titled` (a surface read does not need them).
    fn read_with(&self, id: &str, titled: bool) -> Result<(PathBuf, Transcript), HostError> {
        self.read_as(id, titled, true)
    }

    /// [`read_with`](Self::read_with); a read for the title alone (`texts`
    /// off) keeps no text: its conversation is empty, and its memory is
    /// bounded by the transcript's line count rather than its size.
    fn read_as(&self, id: &str, titled: bool, texts: bool) -> Result<(PathBuf, Transcript), HostError> {
        let (path, parts) = self.locate(id)?;
        let (file, identity) =
            open_under(&self.root, &[&parts[0], &parts[1]]).map_err(|e| read_error(FORMAT, id, &path, e))?;
        self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let project = || titled.then(|| self.project_summaries(&parts[0])).flatten();
        let (read, title) = transcript::read(file, project, texts).map_err(|e| read_error(FORMAT, id, &path, e))?;
        // Kept under the identity the file had before the read.
        self.kept().titles.insert(path.clone(), (identity, Arc::new(title)));
        Ok((path, read))
    }

    /// The conversation of `id` for a prompt of `budget` bytes, holding
    /// what retention may keep ([`transcript::read_within`]), with the
    /// items left out; `None` when the file changed under the read.
    fn conversation_within(&self, id: &str, budget: u64) -> Result<Option<(Conversation, Elided)>, HostError> {
        let (path, parts) = self.locate(id)?;
        let (file, _) =
            open_under(&self.root, &[&parts[0], &parts[1]]).map_err(|e| read_error(FORMAT, id, &path, e))?;
        self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let read = transcript::read_within(file, budget).map_err(|e| read_error(FORMAT, id, &path, e))?;
        Ok(read.map(|(read, elided)| (conversation(PREFIX, id, read.cwd, read.stats, read.items), elided)))
    }

    /// The title of the transcript at `path` (of the project directory
    /// `project`) from what a read of it left, if the file is still as it
    /// was: only the project's summaries may have changed.
    fn kept_title(&self, path: &Path, project: &OsStr, identity: FileIdentity) -> Option<Option<String>> {
        let parts = self.kept().titles.get(path).filter(|(held, _)| *held == identity).map(|(_, t)| t.clone())?;
        Some(match &*parts {
            TitleParts::Own(title) => title.clone(),
            TitleParts::Project { .. } => parts.title(self.project_summaries(project).as_deref()),
        })
    }

    /// How many whole transcripts this source (and its clones) read.
    #[cfg(test)]
    fn reads(&self) -> u64 {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The summary titles of a project directory as the last listing found
    /// them (listing first if there is none yet); `None` when it cannot
    /// list.
    fn project_summaries(&self, project: &OsStr) -> Option<Arc<Winners>> {
        let last = self.kept().last.clone();
        let last = match last {
            Some(last) => last,
            None => self.listed().ok()?,
        };
        Some(last.projects.get(project).cloned().unwrap_or_default())
    }

    /// The current conversation of `id`, as the resolver renders it.
    pub fn conversation(&self, id: &str) -> Result<Conversation, HostError> {
        let (_, read) = self.read_with(id, false)?;
        Ok(conversation(PREFIX, id, read.cwd, read.stats, read.items))
    }
}

impl BlockingSessionQuery for ClaudeCodeSource {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        self.listed_for_host().map(|l| l.entries.iter().map(|e| e.session.header.clone()).collect())
    }

    /// The listing with each transcript's identity as that listing saw it
    /// (an unwatched listing `lstat`s every transcript), shared while
    /// nothing changes.
    fn shared_listing(&self) -> Result<Option<SharedListing>, HostError> {
        self.listed_for_host().map(|l| Some(l.shared()))
    }

    /// A transcript read before and unchanged since is not read again (its
    /// title may still change with its project's summaries); a
    /// `custom-title` near the end of the file is the title without reading
    /// the rest; otherwise the whole transcript is read.
    fn read_title(&self, session_id: &str) -> Result<Option<String>, HostError> {
        let (path, parts) = self.locate(session_id)?;
        let (file, identity) =
            open_under(&self.root, &[&parts[0], &parts[1]]).map_err(|e| read_error(FORMAT, session_id, &path, e))?;
        if let Some(title) = self.kept_title(&path, &parts[0], identity) {
            return Ok(title);
        }
        match transcript::tail_custom_title(file, identity.size) {
            Ok(Some(title)) => Ok(Some(title)),
            _ => Ok(self.read_as(session_id, true, false)?.1.title),
        }
    }

    fn read_surface(&self, session_id: &str) -> Result<SurfaceData, HostError> {
        self.conversation(session_id).map(SurfaceData::from)
    }

    /// Under a budget, the conversation without the items retention
    /// certainly drops, read holding only the texts it may keep (a file
    /// rewritten under the read is read again whole). For the index, its
    /// items streamed: the transcript read once for its chain and where
    /// each text is, each text read again as its item is given
    /// ([`transcript::read_items`]).
    fn read_surface_as(&self, session_id: &str, read: SurfaceRead) -> Result<SurfaceAnswer, HostError> {
        match read {
            SurfaceRead::Within(budget) => {
                within_or_whole(self.conversation_within(session_id, budget)?, || self.read_surface(session_id))
            }
            SurfaceRead::Items => {
                let (path, parts) = self.locate(session_id)?;
                let (file, _) = open_under(&self.root, &[&parts[0], &parts[1]])
                    .map_err(|e| read_error(FORMAT, session_id, &path, e))?;
                self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let items = transcript::read_items(file).map_err(|e| read_error(FORMAT, session_id, &path, e))?;
                Ok(SurfaceAnswer::items(SurfaceItems::Streamed(Box::new(items))))
            }
            _ => self.read_surface(session_id).map(SurfaceAnswer::whole),
        }
    }

    /// The identity of each session's transcript as of now, with the
    /// summaries of its project it may be titled by as of the last listing
    /// (a title written into another transcript changes them): from the
    /// last listing when a watcher vouches that nothing changed since, else
    /// an `lstat` of the file that listing found (one not listed: looked
    /// up, without summaries).
    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        let watched = self.watched_last();
        let Some(last) = watched.clone().or_else(|| self.kept().last.clone()) else {
            return Ok(Some(session_ids.iter().map(|id| self.identity(id).ok().map(Fingerprint::from)).collect()));
        };
        let prints = last.positions(session_ids).zip(session_ids).map(|(at, id)| match (at, &watched) {
            (Some(i), Some(_)) => Some(fingerprint(last.entries[i].identity, last.entries[i].digest)),
            (Some(i), None) => {
                let entry = &last.entries[i];
                Stamp::lstat(&entry.session.path).map(|s| fingerprint(s.id, entry.digest))
            }
            (None, _) => self.identity(id).ok().map(Fingerprint::from),
        });
        Ok(Some(prints.collect()))
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

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "a3c1e0f2-7b1d-4c55-9e0a-5b2f1d3c4e01";
    const B: &str = "b7d2f1a3-8c2e-4d66-8f1b-6c3a2e4d5f02";
    const C: &str = "c9e3a2b4-9d3f-4e77-9a2c-7d4b3f5e6a03";

    /// A session titled by a summary that another transcript gains (a new
    /// one, then an append) takes it without its own file being scanned or
    /// read again.
    #[test]
    fn titles_from_other_transcripts_need_no_read_of_the_titled_one() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/on-disk/claude-code-titles");
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("-home-dev-shop");
        std::fs::create_dir(&project).unwrap();
        for stem in [A, B] {
            let name = format!("{stem}.jsonl");
            std::fs::copy(fixtures.join("first/-home-dev-shop").join(&name), project.join(&name)).unwrap();
        }
        let s = ClaudeCodeSource::open(root.path()).unwrap();
        let title = |stem: &str| s.read_title(&format!("{PREFIX}{stem}")).unwrap();
        let scans = || {
            let kept = s.kept();
            [A, B].map(|stem| kept.files[&project.join(format!("{stem}.jsonl"))].1.clone())
        };
        s.list().unwrap();
        assert_eq!(title(B).as_deref(), Some("Add login with OAuth."));
        assert_eq!(title(A).as_deref(), Some("Set up the database schema for orders."));
        assert_eq!(s.reads(), 2);
        let before = scans();
        let c = project.join(format!("{C}.jsonl"));
        std::fs::copy(fixtures.join(format!("later/{C}.jsonl")), &c).unwrap();
        s.list().unwrap();
        assert_eq!(title(B).as_deref(), Some("OAuth login flow"));
        assert_eq!(title(A).as_deref(), Some("Orders database schema"));
        assert_eq!(s.reads(), 2, "A and B are not read again");
        assert!(before.iter().zip(scans()).all(|(a, b)| Arc::ptr_eq(a, &b)), "nor scanned again");
        {
            use std::io::Write as _;
            let more = std::fs::read(fixtures.join(format!("later/{C}.append.jsonl"))).unwrap();
            std::fs::OpenOptions::new().append(true).open(&c).unwrap().write_all(&more).unwrap();
        }
        s.list().unwrap();
        assert_eq!(title(B).as_deref(), Some("Remember-me sessions"));
        assert_eq!(s.reads(), 2);
        assert!(before.iter().zip(scans()).all(|(a, b)| Arc::ptr_eq(a, &b)));
        // C grew: its scan went on from where it stopped.
        let grown = s.kept().files[&c].1.clone();
        assert_eq!(grown.summaries.len(), 3);
        assert_eq!(title(C).as_deref(), Some("Style the checkout page."));
        assert_eq!(s.reads(), 3);
    }
}
