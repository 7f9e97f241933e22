//! What the readers of one SQLite database of sessions share (Goose,
//! Crush, Zed, Hermes, Warp): a [`SqliteSource`] over one database file,
//! read by the rules of OpenCode's reader (read-only, no file created
//! beside the database, nothing written or locked, one committed state
//! while another process writes; see [`opencode`](super::opencode)), its
//! schema given by a [`Schema`].
//!
//! A schema lists its sessions, reads one, and names the columns that make
//! each session's fingerprint; this module does the rest: opening, the
//! errors of a database that is not of the format, the listing's skipped
//! rows (each with why), and fingerprints computed again only when the
//! database or its `-wal` changed.

use std::collections::HashMap;
use std::io;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::conversation::{Conversation, ConversationItem};
use crate::error::HostError;
use crate::fs::{FileIdentity, Stamp};
use crate::host::{BlockingSessionQuery, Fingerprint, SessionHeader, SharedListing, SurfaceData};
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{conversation, iso_ms, read_error, LineStats, Listing};
use crate::sources::opencode::db::{self, DbStamp};

pub(crate) use crate::sources::opencode::db::Sorted;
pub(crate) use crate::sources::opencode::{bytes, str_ref, text, whole};

/// One format of SQLite session database.
pub trait Schema: Send + Sync + 'static {
    /// The format's name in messages (`"Goose"`).
    const FORMAT: &'static str;
    /// What its session ids start with (`"goose:"`).
    const PREFIX: &'static str;
    /// The database's file name, for a data directory given instead of it.
    const FILE: &'static str;
    /// What a database of the format is, for the error of one that is not
    /// (`"a Goose session database (schema v5 or later)"`).
    const WHAT: &'static str;
    /// A query whose rows are a listed session's id (text) then the values
    /// its fingerprint is made of.
    const FINGERPRINTS: &'static str;
    /// How many values follow the id in a row of
    /// [`FINGERPRINTS`](Self::FINGERPRINTS).
    const FINGERPRINT_COLUMNS: usize;

    /// Lists the sessions of the database at `db` into `listing` (its
    /// `sessions`, and in `rejected` every row that could not be listed,
    /// with why). The listing is sorted afterwards.
    fn list(conn: &Connection, db: &Path, listing: &mut Listing) -> rusqlite::Result<()>;

    /// The query of [`FINGERPRINTS`](Self::FINGERPRINTS) for this database
    /// (a schema whose columns vary by version builds its own).
    fn fingerprint_query(conn: &Connection) -> rusqlite::Result<String> {
        let _ = conn;
        Ok(Self::FINGERPRINTS.to_owned())
    }

    /// The database a directory given as the root means (default: its
    /// [`FILE`](Self::FILE)).
    fn in_dir(dir: &Path) -> PathBuf {
        dir.join(Self::FILE)
    }

    /// Reads the session `id` (without the prefix): `Ok(Err(why))` when
    /// the database has no such session or it cannot be read.
    fn read(conn: &Connection, db: &Path, id: &str) -> rusqlite::Result<Result<Read, String>>;
}

/// One read session.
#[derive(Clone, Debug, Default)]
pub struct Read {
    /// The title by the format's rules.
    pub title: Option<String>,
    /// The working directory the session records.
    pub cwd: Option<String>,
    /// Its current model-visible conversation.
    pub items: Vec<ConversationItem>,
    /// Message rows read (as `lines`) and skipped (damaged).
    pub stats: LineStats,
}

/// Fingerprints by session id, with the stamps of the database they were
/// computed from.
type FingerprintMemo = Option<(DbStamp, Arc<HashMap<String, Fingerprint>>)>;

/// A read-only session source over one SQLite database of the format `S`.
/// Cheap to clone; every method may run concurrently (each read opens its
/// own connection).
pub struct SqliteSource<S> {
    path: Arc<PathBuf>,
    fingerprints: Arc<Mutex<FingerprintMemo>>,
    skipped: Arc<Mutex<Vec<(PathBuf, String)>>>,
    schema: PhantomData<fn() -> S>,
}

impl<S> Clone for SqliteSource<S> {
    fn clone(&self) -> Self {
        SqliteSource {
            path: self.path.clone(),
            fingerprints: self.fingerprints.clone(),
            skipped: self.skipped.clone(),
            schema: PhantomData,
        }
    }
}

impl<S: Schema> std::fmt::Debug for SqliteSource<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSource").field("format", &S::FORMAT).field("path", &self.path).finish()
    }
}

impl<S: Schema> SqliteSource<S> {
    /// Opens the database at `path` (a link to it is fine), or the one a
    /// data directory given as `path` holds ([`Schema::in_dir`]). Nothing is
    /// read until a listing.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        let given = path.as_ref();
        let fail = |e: io::Error| {
            io::Error::new(e.kind(), format!("cannot open {} database {}: {e}", S::FORMAT, given.display()))
        };
        let meta = std::fs::metadata(given).map_err(fail)?;
        let path = if meta.is_dir() { S::in_dir(given) } else { given.to_path_buf() };
        let meta = std::fs::metadata(&path).map_err(fail)?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} database {} is not a regular file", S::FORMAT, path.display()),
            ));
        }
        Ok(SqliteSource {
            path: Arc::new(path),
            fingerprints: Arc::default(),
            skipped: Arc::default(),
            schema: PhantomData,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn bare<'a>(&self, id: &'a str) -> &'a str {
        id.strip_prefix(S::PREFIX).unwrap_or(id)
    }

    fn read_db<T>(
        &self,
        read: impl FnMut(&Connection) -> Result<Result<T, String>, rusqlite::Error>,
    ) -> Result<T, String> {
        db::read(&self.path, |e| db::explain(&self.path, S::WHAT, &e), read)
    }

    /// The sessions, newest first, with the rows that could not be listed
    /// (in `rejected`, each with why).
    pub fn list(&self) -> Result<Listing, String> {
        let path = self.path.to_path_buf();
        let listing = self.read_db(|conn| {
            let mut listing = Listing::default();
            S::list(conn, &path, &mut listing)?;
            listing.sort();
            Ok(Ok(listing))
        })?;
        if let Ok(mut skipped) = self.skipped.lock() {
            *skipped = listing.skipped();
        }
        Ok(listing)
    }

    /// Reads `id` (with or without the prefix).
    pub fn read(&self, id: &str) -> Result<Read, HostError> {
        let bare = self.bare(id).to_owned();
        let path = self.path.to_path_buf();
        self.read_db(|conn| S::read(conn, &path, &bare)).map_err(|why| read_error(S::FORMAT, id, &self.path, why))
    }

    /// The title of `id` by the format's rules.
    pub fn title(&self, id: &str) -> Result<Option<String>, HostError> {
        self.read(id).map(|r| r.title)
    }

    /// The current conversation of `id`, as the resolver renders it.
    pub fn conversation(&self, id: &str) -> Result<Conversation, HostError> {
        let read = self.read(id)?;
        Ok(conversation(S::PREFIX, id, read.cwd, read.stats, read.items))
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
            let mut stmt = conn.prepare(&S::fingerprint_query(conn)?)?;
            let mut rows = stmt.query([])?;
            let mut prints = HashMap::new();
            while let Some(row) = rows.next()? {
                let Some(id) = text(row.get_ref(0)?) else { continue };
                prints.insert(id, db::fingerprint(row, 1..1 + S::FINGERPRINT_COLUMNS)?);
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

impl<S: Schema> BlockingSessionQuery for SqliteSource<S> {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        let listed = self.list().map_err(io::Error::other);
        Listing::headers(listed, S::FORMAT, &self.path)
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

    /// Each session's fingerprint from its rows ([`Schema::FINGERPRINTS`];
    /// `None` for one not listed, so it is read afresh).
    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        let Ok(prints) = self.all_fingerprints() else { return Ok(None) };
        Ok(Some(session_ids.iter().map(|id| prints.get(self.bare(id)).cloned()).collect()))
    }

    /// The rows the last listing could not list, each with why.
    fn skipped(&self) -> Vec<(PathBuf, String)> {
        self.skipped.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl<S: Schema> FileSource for SqliteSource<S> {
    const FORMAT: &'static str = S::FORMAT;

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
            .ok_or_else(|| read_error(S::FORMAT, session_id, &self.path, "the database file is gone"))
    }
}

/// The database `file` in `dir`, else in `dir/sub` when only that one
/// exists (a directory given one level above the database's own).
pub(crate) fn here_or_in(dir: &Path, sub: &str, file: &str) -> PathBuf {
    let nested = dir.join(sub).join(file);
    if !dir.join(file).is_file() && nested.is_file() {
        return nested;
    }
    dir.join(file)
}

/// Milliseconds since the epoch of a time column as these programs write
/// them: an integer in seconds or milliseconds (a number below 10^11 is
/// taken for seconds: that is the year 5138 in seconds, 1973 in
/// milliseconds), a real in seconds, or text: ISO-8601 with a zone, or
/// SQLite's `CURRENT_TIMESTAMP` (`YYYY-MM-DD HH:MM:SS[.fff]`, UTC).
pub(crate) fn time_ms(v: ValueRef<'_>) -> Option<u64> {
    const SECONDS_BELOW: u64 = 100_000_000_000;
    match v {
        ValueRef::Integer(i) => {
            let i = u64::try_from(i).ok()?;
            Some(if i < SECONDS_BELOW { i.saturating_mul(1000) } else { i })
        }
        ValueRef::Real(r) if r.is_finite() && r >= 0.0 => Some((r * 1000.0) as u64),
        ValueRef::Text(t) => {
            let s = std::str::from_utf8(t).ok()?.trim();
            iso_ms(s).or_else(|| iso_ms(&format!("{s}Z")))
        }
        _ => None,
    }
}

/// `column` when the table `table` has it, else `or` (for the columns a
/// later version of a schema added).
pub(crate) fn column_or(conn: &Connection, table: &str, column: &str, or: &str) -> rusqlite::Result<String> {
    qualified(conn, table, "", column, or)
}

/// [`column_or`] with the column named through `alias` (`"s"`: `s.title`).
pub(crate) fn qualified(
    conn: &Connection,
    table: &str,
    alias: &str,
    column: &str,
    or: &str,
) -> rusqlite::Result<String> {
    Ok(match (has_column(conn, table, column)?, alias) {
        (false, _) => or.to_owned(),
        (true, "") => column.to_owned(),
        (true, alias) => format!("{alias}.{column}"),
    })
}

/// Whether the table `table` has the column `column` (for the columns a
/// later version of a schema added).
pub(crate) fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")?;
    stmt.exists([table, column])
}

/// Lists the rows of `query` (id, time, cwd; bound to nothing) as sessions
/// of `S` listed from `db`; a row whose id is not text is rejected.
pub(crate) fn list_rows<S: Schema>(
    conn: &Connection,
    db: &Path,
    listing: &mut Listing,
    query: &str,
) -> rusqlite::Result<()> {
    use crate::sources::foreign::{ListedSession, UNKNOWN_CREATED_AT};
    let mut stmt = conn.prepare(query)?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let Some(id) = text(row.get_ref(0)?) else {
            listing.rejected.push((db.to_path_buf(), "a session row whose id is not text".to_owned()));
            continue;
        };
        let created = time_ms(row.get_ref(1)?).unwrap_or(UNKNOWN_CREATED_AT);
        let cwd = text(row.get_ref(2)?).filter(|c| !c.is_empty());
        listing.sessions.push(ListedSession::new(S::PREFIX, &id, created, cwd, db.to_path_buf()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_every_unit() {
        assert_eq!(time_ms(ValueRef::Integer(1_767_000_000)), Some(1_767_000_000_000));
        assert_eq!(time_ms(ValueRef::Integer(1_767_000_000_123)), Some(1_767_000_000_123));
        assert_eq!(time_ms(ValueRef::Real(1_767_000_000.5)), Some(1_767_000_000_500));
        assert_eq!(time_ms(ValueRef::Text(b"2026-01-01 00:00:00")), Some(1_767_225_600_000));
        assert_eq!(time_ms(ValueRef::Text(b"2026-01-01T00:00:00+00:00")), Some(1_767_225_600_000));
        assert_eq!(time_ms(ValueRef::Text(b"soon")), None);
        assert_eq!(time_ms(ValueRef::Integer(-1)), None);
        assert_eq!(time_ms(ValueRef::Null), None);
    }
}
