//! OpenCode sessions (and new Kilo's, the same schema under another name):
//! a read-only session source over one SQLite database, OpenCode's
//! `$XDG_DATA_HOME/opencode/opencode.db` (OpenCode 1.2 and later) or Kilo's
//! `kilo.db`.
//!
//! ```no_run
//! use dsh_session_reference::sources::opencode::{Flavor, OpenCodeSource};
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = OpenCodeSource::open("/home/me/.local/share/opencode/opencode.db", Flavor::OpenCode)?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The schema followed is OpenCode's `session.sql.ts` and `message-v2.ts`
//! (tables `session`, `message`, `part`, each row's body a JSON `data`
//! column), as published in anomalyco/opencode in late 2026; the
//! compaction rule is its `filterCompacted` with kept tails
//! (`tail_start_id`), the revert rule its `SessionRevert.cleanup`.
//!
//! # Sessions
//!
//! - **id**: `opencode:<session.id>` (`kilo:<session.id>` for Kilo). Only
//!   top-level sessions are listed (no `parent_id`: a child session is a
//!   subagent's), and only those with at least one message.
//! - **createdAt**: `session.time_created` (ms; 0 when it is not a number).
//! - **cwd**: `session.directory`.
//! - **title**: `session.title`, unless it is OpenCode's placeholder
//!   (`New session - <ISO time>`), else the first visible user text, else
//!   the first assistant text (whitespace collapsed, at most 100 characters).
//! - **capturedThroughSeq**: the number of the session's message rows read,
//!   less one (`None` for none): it grows as the session does.
//!
//! # Replay
//!
//! Messages are read in OpenCode's order (`time_created`, then id), each
//! with its parts (by part id); a row whose `data` is not JSON is skipped
//! and counted. Then:
//!
//! 1. **revert**: when `session.revert` is set, the messages from its
//!    `messageID` on are dropped and, when it names a `partID`, the parts of
//!    the last message kept from that part on (what OpenCode deletes before
//!    its next prompt);
//! 2. **compaction**: walking back from the newest message, the view stops
//!    at the user message holding a `compaction` part that a *completed*
//!    summary answered (an assistant message with `summary: true`,
//!    `finish` set and no `error` whose `parentID` is that user message);
//!    a compaction that kept a tail (`tail_start_id`) keeps the messages from
//!    that one on, sent after the summary;
//! 3. what reaches the conversation: user messages' `text` parts that are
//!    neither `synthetic` (harness-made: the "continue" after a compaction,
//!    file contents read for the user) nor `ignored`, joined with `"\n"`;
//!    assistant messages' `text` parts; a completed summary's text as a
//!    checkpoint. Never reasoning, tools and their output, files, patches,
//!    snapshots, subtasks, or a failed reply (one with an `error`, unless it
//!    was aborted after saying something, as OpenCode keeps those).
//!
//! # Reading without writing
//!
//! The database is read by the rules below: no file is created beside it,
//! nothing written or write-locked, and a database another process is
//! writing reads as one committed state. A value longer than
//! [`MAX_LINE_BYTES`](crate::sources::foreign::MAX_LINE_BYTES) makes its
//! session unreadable (a clear error), so memory stays bounded.
//!
//! SQLite's own read-only mode is not enough: a connection opened
//! `SQLITE_OPEN_READONLY` to a WAL-mode database whose `-wal` and `-shm`
//! files are absent creates both. So a read goes one of two ways, chosen by
//! what lies beside the database when it starts:
//!
//! - **`-wal` and `-shm` exist** (a writer has the database open): open
//!   read-only, checkpoint on close disabled, and read in one transaction,
//!   which SQLite's WAL protocol keeps on one committed state while the
//!   writer goes on. The database file is opened `O_RDONLY`, so no write
//!   lock can be taken on it; a reader never takes the WAL write lock (it
//!   marks what it reads in the `-shm` index, as every reader does).
//! - **no `-wal`**: open with `immutable=1` (no lock, no `-wal` or `-shm`)
//!   and, after the read, check that the database file is unchanged
//!   (identity, size, modification and change times) and that no rollback
//!   journal appeared; a writer that starts meanwhile writes to a new
//!   `-wal` and changes the database file only when it checkpoints, so an
//!   unchanged file means the read saw one committed state. A changed one
//!   is read again.
//!
//! A `-wal` without its `-shm` (left by a crash) or a rollback journal (a
//! write in progress, or interrupted) cannot be read without writing:
//! after a few tries the read fails, saying why.
//!
//! # Fingerprints
//!
//! Per session, from the session row (`time_updated`, `title`, `revert`)
//! and, for its messages and parts, how many there are, the largest rowid
//! and the newest `time_updated`: computed in one query for all sessions,
//! and only when the database or its `-wal` changed since the last time.

pub(crate) mod db;
pub mod replay;

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::conversation::Conversation;
use crate::error::HostError;
use crate::fs::{FileIdentity, Stamp};
use crate::host::{BlockingSessionQuery, Fingerprint, SessionHeader, SharedListing, SurfaceData};
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{conversation, read_error, LineStats, ListedSession, Listing, UNKNOWN_CREATED_AT};
use crate::sources::kind::{Kind, Root};

use self::db::DbStamp;
use self::replay::{Message, Revert};

/// What every OpenCode session id starts with.
pub const PREFIX: &str = "opencode:";

/// What every Kilo session id starts with.
pub const KILO_PREFIX: &str = "kilo:";

/// OpenCode as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "opencode",
    format: Flavor::OpenCode.format(),
    about: "OpenCode sessions (its SQLite database, opencode.db)",
    prefix: Flavor::OpenCode.prefix(),
    location: "$OPENCODE_DB, else $XDG_DATA_HOME/opencode/opencode.db, else ~/.local/share/opencode/opencode.db",
    default: Some(|env| env.db("OPENCODE_DB", "opencode", "opencode.db")),
    also: &[],
    env: &["OPENCODE_DB", "XDG_DATA_HOME", "HOME", "USERPROFILE"],
    root: Root::Database(Flavor::OpenCode.file_name()),
    layout: "an OpenCode database (as ~/.local/share/opencode/opencode.db)",
    open: |root| Ok(OpenCodeSource::open(root, Flavor::OpenCode)?.into_query()),
    empty: empty_note,
};

/// Kilo as a kind of source.
pub(crate) const KILO_KIND: Kind = Kind {
    name: "kilo",
    format: Flavor::Kilo.format(),
    about: "New Kilo's sessions (its SQLite database, kilo.db, OpenCode's schema)",
    prefix: Flavor::Kilo.prefix(),
    location: "$KILO_DB, else $XDG_DATA_HOME/kilo/kilo.db, else ~/.local/share/kilo/kilo.db",
    default: Some(|env| env.db("KILO_DB", "kilo", "kilo.db")),
    also: &[],
    env: &["KILO_DB", "XDG_DATA_HOME", "HOME", "USERPROFILE"],
    root: Root::Database(Flavor::Kilo.file_name()),
    layout: "a Kilo database (as ~/.local/share/kilo/kilo.db)",
    open: |root| Ok(OpenCodeSource::open(root, Flavor::Kilo)?.into_query()),
    empty: empty_note,
};

/// Which program wrote the database: the schema is the same, the names differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// OpenCode (`opencode.db`, ids `opencode:…`).
    OpenCode,
    /// Kilo, the OpenCode-based CLI (`kilo.db`, ids `kilo:…`).
    Kilo,
}

impl Flavor {
    /// The prefix of its session ids.
    pub const fn prefix(self) -> &'static str {
        match self {
            Flavor::OpenCode => PREFIX,
            Flavor::Kilo => KILO_PREFIX,
        }
    }

    /// Its name in messages.
    pub const fn format(self) -> &'static str {
        match self {
            Flavor::OpenCode => "OpenCode",
            Flavor::Kilo => "Kilo",
        }
    }

    /// The database's file name in its data directory.
    pub const fn file_name(self) -> &'static str {
        match self {
            Flavor::OpenCode => "opencode.db",
            Flavor::Kilo => "kilo.db",
        }
    }
}

/// Why a database lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    format!("{}: its session table holds no top-level session with a message", kind.no_session_in(root))
}

/// Fingerprints by session id, with the stamps of the database they were
/// computed from.
type FingerprintMemo = Option<(DbStamp, Arc<HashMap<String, Fingerprint>>)>;

/// A read-only session source over an OpenCode (or Kilo) database. Cheap
/// to clone; every method may run concurrently (each read opens its own
/// connection).
#[derive(Clone, Debug)]
pub struct OpenCodeSource {
    path: Arc<PathBuf>,
    flavor: Flavor,
    fingerprints: Arc<Mutex<FingerprintMemo>>,
}

/// One read session.
#[derive(Clone, Debug, Default)]
pub struct Read {
    /// The session's own title (`session.title`).
    pub own_title: Option<String>,
    /// Its messages with their parts, reverted.
    pub messages: Vec<Message>,
    /// The title by the rules of the module docs.
    pub title: Option<String>,
    /// `session.directory`.
    pub cwd: Option<String>,
    /// `session.time_created`.
    pub created_at: Option<u64>,
    /// Message rows read (as `lines`) and skipped (rows or parts that
    /// were not JSON).
    pub stats: LineStats,
}

/// A text column (`None` for NULL or another type).
pub(crate) fn text(v: ValueRef<'_>) -> Option<String> {
    str_ref(v).map(str::to_owned)
}

/// A text column borrowed (`None` for NULL, another type, or text that
/// is not UTF-8).
pub(crate) fn str_ref(v: ValueRef<'_>) -> Option<&str> {
    match v {
        ValueRef::Text(t) => std::str::from_utf8(t).ok(),
        _ => None,
    }
}

/// An integer column as a non-negative number.
pub(crate) fn whole(v: ValueRef<'_>) -> Option<u64> {
    match v {
        ValueRef::Integer(i) => u64::try_from(i).ok(),
        ValueRef::Real(r) if r >= 0.0 && r.is_finite() => Some(r as u64),
        _ => None,
    }
}

/// The bytes of a text or blob column.
pub(crate) fn bytes(v: ValueRef<'_>) -> &[u8] {
    match v {
        ValueRef::Text(t) | ValueRef::Blob(t) => t,
        _ => &[],
    }
}

impl OpenCodeSource {
    /// Opens the database at `path` (a link to it is fine), or the one a
    /// data directory given as `path` holds (`opencode.db`, `kilo.db`).
    /// Nothing is read until a listing.
    pub fn open(path: impl AsRef<Path>, flavor: Flavor) -> io::Result<Self> {
        let given = path.as_ref();
        let fail = |e: io::Error| {
            io::Error::new(e.kind(), format!("cannot open {} database {}: {e}", flavor.format(), given.display()))
        };
        let meta = std::fs::metadata(given).map_err(fail)?;
        let path = if meta.is_dir() { given.join(flavor.file_name()) } else { given.to_path_buf() };
        let meta = std::fs::metadata(&path).map_err(fail)?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} database {} is not a regular file", flavor.format(), path.display()),
            ));
        }
        Ok(OpenCodeSource { path: Arc::new(path), flavor, fingerprints: Arc::default() })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which program's database it is.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    fn bare<'a>(&self, id: &'a str) -> &'a str {
        id.strip_prefix(self.flavor.prefix()).unwrap_or(id)
    }

    fn read_db<T>(
        &self,
        read: impl FnMut(&Connection) -> Result<Result<T, String>, rusqlite::Error>,
    ) -> Result<T, String> {
        db::read(&self.path, |e| e, read)
    }

    /// The top-level sessions with a message, newest first. A row whose
    /// id is not text is reported in `rejected`.
    pub fn list(&self) -> Result<Listing, String> {
        let path = self.path.to_path_buf();
        self.read_db(|conn| {
            let mut listing = Listing::default();
            let mut stmt = conn.prepare(
                "SELECT s.id, s.time_created, s.directory FROM session s \
                 WHERE s.parent_id IS NULL AND EXISTS (SELECT 1 FROM message m WHERE m.session_id = s.id)",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let Some(id) = text(row.get_ref(0)?) else {
                    listing.rejected.push((path.clone(), "a session row whose id is not text".to_owned()));
                    continue;
                };
                let created = whole(row.get_ref(1)?).unwrap_or(UNKNOWN_CREATED_AT);
                let cwd = text(row.get_ref(2)?).filter(|c| !c.is_empty());
                listing.sessions.push(ListedSession::new(self.flavor.prefix(), &id, created, cwd, path.clone()));
            }
            listing.sort();
            Ok(Ok(listing))
        })
        .map_err(|e| self.db_error(&e))
    }

    /// A failed read's error: for a file that is not SQLite or lacks the
    /// tables or columns read, that it is not a database of the format
    /// (and what it lacks), never SQLite's own words alone.
    fn db_error(&self, why: &str) -> String {
        let format = self.flavor.format();
        let a = if format.starts_with(['A', 'E', 'I', 'O', 'U']) { "an" } else { "a" };
        db::explain(&self.path, &format!("{a} {format} database (1.2 or later)"), why)
    }

    /// Reads the rows of `id` (with or without the prefix).
    pub fn read(&self, id: &str) -> Result<Read, HostError> {
        let bare = self.bare(id).to_owned();
        let format = self.flavor.format();
        let fail = |why: String| read_error(format, id, &self.path, self.db_error(&why));
        self.read_db(|conn| read_session(conn, &bare)).map_err(fail)
    }

    /// The title of `id` by the rules of the module docs.
    pub fn title(&self, id: &str) -> Result<Option<String>, HostError> {
        self.read(id).map(|r| r.title)
    }

    /// The current conversation of `id`, as the resolver renders it.
    pub fn conversation(&self, id: &str) -> Result<Conversation, HostError> {
        let read = self.read(id)?;
        let items = replay::items(&read.messages);
        Ok(conversation(self.flavor.prefix(), id, read.cwd, read.stats, items))
    }

    /// Every session's fingerprint, computed again only when the database
    /// or its `-wal` changed.
    fn all_fingerprints(&self) -> Result<Arc<HashMap<String, Fingerprint>>, String> {
        let stamp = DbStamp::now(&self.path);
        if let Some((known, prints)) = self.fingerprints.lock().ok().and_then(|m| m.clone()) {
            if known == stamp {
                return Ok(prints);
            }
        }
        let prints = self.read_db(|conn| {
            let mut stmt = conn.prepare(
                "SELECT s.id, s.time_updated, s.title, s.revert, \
                 (SELECT count(*) || ':' || coalesce(max(m.rowid), '') || ':' || coalesce(max(m.time_updated), '') \
                  FROM message m WHERE m.session_id = s.id), \
                 (SELECT count(*) || ':' || coalesce(max(p.rowid), '') || ':' || coalesce(max(p.time_updated), '') \
                  FROM part p WHERE p.session_id = s.id) \
                 FROM session s WHERE s.parent_id IS NULL",
            )?;
            let mut rows = stmt.query([])?;
            let mut prints = HashMap::new();
            while let Some(row) = rows.next()? {
                let Some(id) = text(row.get_ref(0)?) else { continue };
                prints.insert(id, db::fingerprint(row, 1..6)?);
            }
            Ok(Ok(prints))
        })?;
        let prints = Arc::new(prints);
        if let Ok(mut memo) = self.fingerprints.lock() {
            *memo = Some((stamp, prints.clone()));
        }
        Ok(prints)
    }
}

/// One session's rows, in one read transaction.
fn read_session(conn: &Connection, id: &str) -> Result<Result<Read, String>, rusqlite::Error> {
    let mut out = Read::default();
    let mut stmt = conn.prepare("SELECT title, directory, time_created, revert FROM session WHERE id = ?1")?;
    let mut rows = stmt.query([id])?;
    let Some(row) = rows.next()? else { return Ok(Err("no such session".to_owned())) };
    out.own_title = text(row.get_ref(0)?);
    out.cwd = text(row.get_ref(1)?).filter(|c| !c.is_empty());
    out.created_at = whole(row.get_ref(2)?);
    let revert: Option<Revert> = match row.get_ref(3)? {
        ValueRef::Null => None,
        v => serde_json::from_slice(bytes(v)).ok(),
    };
    drop(rows);
    let mut messages = Vec::new();
    let mut stmt = conn.prepare("SELECT id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id")?;
    let mut rows = stmt.query([id])?;
    while let Some(row) = rows.next()? {
        out.stats.lines += 1;
        let data = row.get_ref(1)?;
        let parsed = text(row.get_ref(0)?).and_then(|mid| Message::parse(mid, bytes(data)));
        match parsed {
            Some(m) => messages.push(m),
            None => out.stats.skipped += 1,
        }
    }
    drop(rows);
    // Parts in the order of `ORDER BY message_id, id`, sorted here: no index
    // gives that order for one session's parts, and SQLite would sort
    // them with their data (see `db::Sorted`). Both are text, so their
    // bytes order them as SQLite does.
    let mut parts = Vec::new();
    let mut stmt = conn.prepare("SELECT message_id, id, data FROM part WHERE session_id = ?1")?;
    let mut rows = stmt.query([id])?;
    while let Some(row) = rows.next()? {
        let (Some(message), Some(pid)) = (text(row.get_ref(0)?), text(row.get_ref(1)?)) else {
            out.stats.skipped += 1;
            continue;
        };
        match replay::parse_part(bytes(row.get_ref(2)?)) {
            Some(p) => parts.push((message, pid, p)),
            None => out.stats.skipped += 1,
        }
    }
    parts.sort_by(|(m1, p1, _), (m2, p2, _)| (m1, p1).cmp(&(m2, p2)));
    replay::attach(&mut messages, parts);
    out.title = replay::title(out.own_title.as_deref(), &messages);
    if let Some(r) = &revert {
        replay::revert(&mut messages, r);
    }
    out.messages = messages;
    Ok(Ok(out))
}

impl BlockingSessionQuery for OpenCodeSource {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        let format = self.flavor.format();
        let listed = self.list().map_err(io::Error::other);
        Listing::headers(listed, format, &self.path)
    }

    /// The listing with every session's fingerprint, from one more query
    /// (skipped while the database did not change).
    fn shared_listing(&self) -> Result<Option<SharedListing>, HostError> {
        crate::host::listing_with_fingerprints(self)
    }

    fn read_title(&self, session_id: &str) -> Result<Option<String>, HostError> {
        self.title(session_id)
    }

    fn read_surface(&self, session_id: &str) -> Result<SurfaceData, HostError> {
        self.conversation(session_id).map(SurfaceData::from)
    }

    /// Each session's fingerprint by the rules of the module docs (`None`
    /// for one that is not a top-level session, so it is read afresh).
    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        let Ok(prints) = self.all_fingerprints() else { return Ok(None) };
        Ok(Some(session_ids.iter().map(|id| prints.get(self.bare(id)).cloned()).collect()))
    }
}

impl FileSource for OpenCodeSource {
    const FORMAT: &'static str = "OpenCode";

    /// The database file (every session is read from it).
    fn root(&self) -> &Path {
        &self.path
    }

    /// The database file's identity (shared by every session; see
    /// [`fingerprints`](BlockingSessionQuery::fingerprints) for one per
    /// session).
    fn identity(&self, session_id: &str) -> Result<FileIdentity, HostError> {
        Stamp::lstat(&self.path)
            .map(|s| s.id)
            .ok_or_else(|| read_error(self.flavor.format(), session_id, &self.path, "the database file is gone"))
    }
}
