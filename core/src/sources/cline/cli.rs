//! Cline CLI 2.x/3.x sessions (written by the Cline SDK, which the CLI
//! runs): a read-only session source over its sessions directory
//! (`$CLINE_SESSION_DATA_DIR`, else `<data dir>/sessions`, by default
//! `~/.cline/data/sessions`), reading `<id>/<id>.messages.json`.
//!
//! ```no_run
//! use dsh_session_reference::sources::cline::cli::CliSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = CliSource::open("/home/me/.cline/data/sessions")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Sessions
//!
//! - **id**: `cline:<session id>`, the session directory's name. A
//!   directory without `<id>.messages.json`, or whose file holds no
//!   message yet, is not a session (yet).
//! - **createdAt**: `started_at` of the manifest `<id>/<id>.json` (of the
//!   session's row in `sessions.db` when it has no manifest), else the
//!   messages file's modification time.
//! - **cwd**: the manifest's (else the row's) `cwd`.
//! - **title**: the session's own title (`metadata.title` of the manifest,
//!   else of the row's `metadata_json`), else the first prompt the user
//!   typed (collapsed, at most 100 characters), else the recorded
//!   `prompt`.
//! - **capturedThroughSeq**: the 0-based number of the last element of
//!   the history read.
//!
//! # Replay
//!
//! The messages file is the whole history (rewritten on every change; a
//! rewind rewrites it shorter). When `<id>.compaction.json` still
//! describes the history (the SHA-256 of the prefix it replaces matches),
//! the model is sent its messages (a summary, then what was kept) and the
//! history after that prefix; else the whole history. Then:
//!
//! - user: what the user typed, without the CLI's `<user_input>` and
//!   `<user_command>` wrappers and `<mode_notice>`s; nothing of tool
//!   results, injected notices (`metadata.kind`), continuation prompts or
//!   messages shown as system, status or error;
//! - assistant: its text blocks;
//! - checkpoint: a compaction summary (`metadata.kind` `compaction_summary`);
//! - never tool calls or results, reasoning, images, files.
//!
//! # Safety
//!
//! Nothing is written or locked (`sessions.db` is read as every SQLite
//! source reads its database), no link below the root is followed, and a
//! path a manifest or row names elsewhere is not read; a file larger than
//! [`MAX_HISTORY_BYTES`] makes its session unreadable.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use super::sdk;
use super::shared::{files_fingerprint, MAX_HISTORY_BYTES, PREFIX};
use crate::conversation::Conversation;
use crate::error::HostError;
use crate::fs::{
    open_under, par_map, read_opened, sorted_entries, DirUnder, EntryKind, FileIdentity, Stamp, LINK_REASON,
};
use crate::host::{BlockingSessionQuery, Fingerprint, SessionHeader, SharedListing, SurfaceData};
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{
    conversation, iso_ms, mtime_ms, read_error, title_from_text, LineStats, ListedSession, Listing,
};
use crate::sources::lenient::LStr;
use crate::sources::opencode::db::{self, DbStamp};
use crate::sources::sqlite::{text, time_ms};

/// The SDK's index of sessions, beside their directories.
pub const SESSIONS_DB: &str = "sessions.db";

/// The name of the format in messages.
pub(super) const FORMAT: &str = "Cline CLI";

/// The largest manifest read, in bytes (it holds the first prompt).
const MAX_MANIFEST_BYTES: usize = 16 << 20;

/// A messages file at most this long is read at listing, to tell one that
/// holds no message yet (the SDK writes an empty one at a session's start).
const SMALL_FILE: u64 = 4096;

/// What a session's manifest, or its row, says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionInfo {
    /// `started_at` (ms).
    pub started: Option<u64>,
    /// Its working directory.
    pub cwd: Option<String>,
    /// Its own title (`metadata.title`).
    pub title: Option<String>,
    /// The prompt it was started with.
    pub prompt: Option<String>,
}

#[derive(Deserialize, Default)]
struct ManifestJson<'a> {
    #[serde(borrow, default)]
    started_at: LStr<'a>,
    #[serde(borrow, default)]
    cwd: LStr<'a>,
    #[serde(borrow, default)]
    prompt: LStr<'a>,
    #[serde(borrow, default)]
    metadata: Option<MetadataJson<'a>>,
}

#[derive(Deserialize, Default)]
struct MetadataJson<'a> {
    #[serde(borrow, default)]
    title: LStr<'a>,
}

fn own_title(metadata: Option<&MetadataJson<'_>>) -> Option<String> {
    metadata.and_then(|m| m.title.get()).and_then(title_from_text)
}

impl ManifestJson<'_> {
    fn info(&self) -> SessionInfo {
        SessionInfo {
            started: self.started_at.get().and_then(iso_ms),
            cwd: self.cwd.owned().filter(|c| !c.is_empty()),
            title: own_title(self.metadata.as_ref()),
            prompt: self.prompt.owned().filter(|p| !p.trim().is_empty()),
        }
    }
}

/// `sessions.db`'s rows by session id, with the stamps they were read at.
type RowsMemo = Option<(DbStamp, Arc<HashMap<String, SessionInfo>>)>;

/// A read-only session source over a Cline CLI sessions directory. Cheap
/// to clone; every method may run concurrently.
#[derive(Clone, Debug)]
pub struct CliSource {
    root: Arc<PathBuf>,
    rows: Arc<Mutex<RowsMemo>>,
    skipped: Arc<Mutex<Vec<(PathBuf, String)>>>,
}

/// One read session (the kind's one read, shared with the VS Code tasks).
pub use super::Read;

fn file_name(id: &str, suffix: &str) -> OsString {
    OsString::from(format!("{id}{suffix}"))
}

/// Whether `root` looks like a Cline CLI sessions directory: it holds
/// `sessions.db`, or is named `sessions` and holds no VS Code `tasks/`,
/// or one of its first entries is a session directory.
pub fn is_sessions_dir(root: &Path) -> bool {
    if root.join("tasks").is_dir() {
        return false;
    }
    if root.join(SESSIONS_DB).is_file() || root.file_name() == Some(OsStr::new("sessions")) {
        return true;
    }
    let Ok(entries) = std::fs::read_dir(root) else { return false };
    entries.filter_map(Result::ok).take(64).any(|e| {
        let name = e.file_name();
        let Some(id) = name.to_str() else { return false };
        e.file_type().is_ok_and(|t| t.is_dir()) && root.join(id).join(file_name(id, ".messages.json")).is_file()
    })
}

impl CliSource {
    /// A source over `root`, already checked to be a readable directory
    /// (see `open`, beside the kind's descriptor).
    pub(super) fn at(root: PathBuf) -> Self {
        CliSource { root: Arc::new(root), rows: Arc::default(), skipped: Arc::default() }
    }

    fn bare<'a>(&self, id: &'a str) -> &'a str {
        id.strip_prefix(PREFIX).unwrap_or(id)
    }

    fn path(&self, id: &str, suffix: &str) -> PathBuf {
        self.root.join(id).join(file_name(id, suffix))
    }

    /// A file of the session `id` (at most `max` bytes), `None` when absent.
    fn read_file(&self, id: &str, suffix: &str, max: u64) -> io::Result<Option<(Vec<u8>, FileIdentity)>> {
        let name = file_name(id, suffix);
        let (file, identity) = match open_under(&self.root, &[OsStr::new(id), &name]) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let bytes = read_opened(file, identity.size, usize::try_from(max).unwrap_or(usize::MAX))?;
        Ok(Some((bytes, identity)))
    }

    /// `sessions.db`'s rows (re-read only when the database or its `-wal`
    /// changed; empty when it is absent or cannot be read).
    pub fn rows(&self) -> Arc<HashMap<String, SessionInfo>> {
        let path = self.root.join(SESSIONS_DB);
        let stamp = DbStamp::now(&path);
        if stamp.db.is_none() {
            return Arc::default();
        }
        if let Some((known, rows)) = self.rows.lock().ok().and_then(|m| m.clone()) {
            if known == stamp {
                return rows;
            }
        }
        let read = db::read(
            &path,
            |e| e,
            |conn| {
                let mut stmt = conn.prepare(
                    "SELECT session_id, started_at, cwd, prompt, metadata_json FROM sessions \
                 WHERE COALESCE(is_subagent, 0) = 0",
                )?;
                let mut rows = stmt.query([])?;
                let mut out = HashMap::new();
                while let Some(row) = rows.next()? {
                    let Some(id) = text(row.get_ref(0)?) else { continue };
                    let metadata = text(row.get_ref(4)?);
                    let metadata = metadata.as_deref().and_then(|m| serde_json::from_str::<MetadataJson<'_>>(m).ok());
                    out.insert(
                        id,
                        SessionInfo {
                            started: time_ms(row.get_ref(1)?),
                            cwd: text(row.get_ref(2)?).filter(|c| !c.is_empty()),
                            title: own_title(metadata.as_ref()),
                            prompt: text(row.get_ref(3)?).filter(|p| !p.trim().is_empty()),
                        },
                    );
                }
                Ok(Ok::<_, String>(out))
            },
        );
        let rows = Arc::new(read.unwrap_or_default());
        if let Ok(mut memo) = self.rows.lock() {
            *memo = Some((stamp, rows.clone()));
        }
        rows
    }

    /// The manifest of `id` (`None` when absent, too large or not JSON).
    fn manifest(&self, id: &str) -> Option<SessionInfo> {
        let (bytes, _) = self.read_file(id, ".json", MAX_MANIFEST_BYTES as u64).ok()??;
        serde_json::from_slice::<ManifestJson<'_>>(&bytes).ok().map(|m| m.info())
    }

    /// What is known of `id`: its manifest, else its row in `rows`.
    fn info(id: &str, manifest: Option<SessionInfo>, rows: &HashMap<String, SessionInfo>) -> SessionInfo {
        manifest.or_else(|| rows.get(id).cloned()).unwrap_or_default()
    }

    /// The session directories, in byte order, with per-entry problems.
    fn dirs(&self, rejected: &mut Vec<(PathBuf, String)>) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in sorted_entries(&self.root)? {
            match entry.kind(&self.root) {
                Ok(EntryKind::Dir) => match entry.name.to_str() {
                    Some(name) => out.push(name.to_owned()),
                    None => rejected
                        .push((self.root.join(&entry.name), "a session directory name that is not UTF-8".into())),
                },
                Ok(EntryKind::Link) => rejected.push((self.root.join(&entry.name), LINK_REASON.to_owned())),
                Ok(_) => {}
                Err(e) => rejected.push((self.root.join(&entry.name), e.to_string())),
            }
        }
        Ok(out)
    }

    /// The sessions, newest first.
    pub fn list(&self) -> io::Result<Listing> {
        let mut rejected = Vec::new();
        let dirs = self.dirs(&mut rejected)?;
        let under = DirUnder::open(&self.root, &[]);
        // Per session: its messages file opened for its identity (read
        // when small, to tell an empty one), and its manifest read.
        let found = par_map(&dirs, |id, _: &mut ()| {
            let name = file_name(id, ".messages.json");
            let (file, stamp) = under.open_file(&[OsStr::new(id), &name])?;
            let mut empty = stamp.id.size == 0;
            if !empty && stamp.id.size <= SMALL_FILE {
                let bytes = read_opened(file, stamp.id.size, SMALL_FILE as usize)?;
                empty = sdk::parse(&bytes).is_ok_and(|p| p.messages.is_empty());
            }
            let manifest = under.open_file(&[OsStr::new(id), &file_name(id, ".json")]).ok().and_then(|(f, s)| {
                let bytes = read_opened(f, s.id.size, MAX_MANIFEST_BYTES).ok()?;
                serde_json::from_slice::<ManifestJson<'_>>(&bytes).ok().map(|m| m.info())
            });
            Ok::<_, io::Error>((stamp.id, empty, manifest))
        });
        let rows = if found.iter().any(|f| matches!(f, Ok((_, false, None)))) { self.rows() } else { Arc::default() };
        let mut listing =
            Listing { sessions: Vec::with_capacity(dirs.len()), rejected, without_conversation: Vec::new() };
        for (id, found) in dirs.iter().zip(found) {
            let path = self.path(id, ".messages.json");
            let (identity, empty, manifest) = match found {
                Ok(f) => f,
                // A directory without its messages is not a session.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => {
                    listing.rejected.push((path, e.to_string()));
                    continue;
                }
            };
            if empty {
                listing.without_conversation.push(path);
                continue;
            }
            let info = Self::info(id, manifest, &rows);
            let created = info.started.unwrap_or_else(|| mtime_ms(&identity));
            listing.sessions.push(ListedSession::new(PREFIX, id, created, info.cwd, path));
        }
        listing.sort();
        if let Ok(mut skipped) = self.skipped.lock() {
            *skipped = listing.skipped();
        }
        Ok(listing)
    }

    /// Reads the session `id` (with or without the prefix).
    pub fn read(&self, id: &str) -> Result<Read, HostError> {
        let bare = self.bare(id);
        let path = self.path(bare, ".messages.json");
        let fail = |e: String| read_error(FORMAT, id, &path, e);
        if bare.is_empty() || bare.contains(['/', '\\']) || bare == "." || bare == ".." {
            return Err(fail("not a session id".into()));
        }
        let (bytes, _) = self
            .read_file(bare, ".messages.json", MAX_HISTORY_BYTES)
            .map_err(|e| fail(e.to_string()))?
            .ok_or_else(|| fail("no such file or directory".into()))?;
        let parsed = sdk::parse(&bytes).map_err(fail)?;
        let sidecar = self.read_file(bare, ".compaction.json", MAX_HISTORY_BYTES).ok().flatten();
        let compaction = sidecar.as_ref().and_then(|(b, _)| sdk::parse_compaction(b));
        let (sent, compacted) = sdk::effective(&parsed.messages, compaction.as_ref());
        let items = sdk::items(&sent);
        let manifest = self.manifest(bare);
        let rows = if manifest.is_none() { self.rows() } else { Arc::default() };
        let info = Self::info(bare, manifest, &rows);
        let title = info
            .title
            .or_else(|| sdk::first_user_title(&parsed.messages))
            .or_else(|| info.prompt.as_deref().and_then(|p| title_from_text(&sdk::display_user_input(p))));
        let stats = LineStats { lines: parsed.messages.len() as u64, skipped: parsed.skipped };
        Ok(Read { items, title, cwd: info.cwd, stats, compacted })
    }

    /// The title of `id` by the rules of the module docs.
    pub fn title(&self, id: &str) -> Result<Option<String>, HostError> {
        self.read(id).map(|r| r.title)
    }

    /// The current conversation of `id`, as the resolver renders it.
    pub fn conversation(&self, id: &str) -> Result<Conversation, HostError> {
        let read = self.read(id)?;
        Ok(conversation(PREFIX, id, read.cwd, read.stats, read.items))
    }
}

impl BlockingSessionQuery for CliSource {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        Listing::headers(self.list(), FORMAT, &self.root)
    }

    /// The listing with every session's fingerprint (a few `lstat`s each).
    fn shared_listing(&self) -> Result<Option<SharedListing>, HostError> {
        crate::host::listing_with_fingerprints(self)
    }

    fn read_title(&self, session_id: &str) -> Result<Option<String>, HostError> {
        self.title(session_id)
    }

    fn read_surface(&self, session_id: &str) -> Result<SurfaceData, HostError> {
        self.conversation(session_id).map(SurfaceData::from)
    }

    /// What the last listing skipped (links, unreadable files, messages
    /// files with no message yet), with why.
    fn skipped(&self) -> Vec<(PathBuf, String)> {
        self.skipped.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// A session's fingerprint: the identities of every file its read may
    /// use: its messages, its compaction sidecar and its manifest, and,
    /// when it has no manifest, `sessions.db` and its `-wal`.
    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        let db = self.root.join(SESSIONS_DB);
        let db_stamp = DbStamp::now(&db);
        let print = |id: &String| {
            let id = self.bare(id);
            let messages = Stamp::lstat(&self.path(id, ".messages.json"))?;
            let manifest = Stamp::lstat(&self.path(id, ".json"));
            let mut extra = vec![Stamp::lstat(&self.path(id, ".compaction.json")), manifest];
            if manifest.is_none() {
                extra.extend([db_stamp.db, db_stamp.wal]);
            }
            Some(files_fingerprint(messages, extra))
        };
        Ok(Some(session_ids.iter().map(print).collect()))
    }
}

impl FileSource for CliSource {
    const FORMAT: &'static str = FORMAT;

    fn root(&self) -> &Path {
        &self.root
    }

    fn identity(&self, session_id: &str) -> Result<FileIdentity, HostError> {
        let id = self.bare(session_id);
        let name = file_name(id, ".messages.json");
        open_under(&self.root, &[OsStr::new(id), &name])
            .map(|(_, i)| i)
            .map_err(|e| read_error(FORMAT, session_id, &self.path(id, ".messages.json"), e))
    }
}
