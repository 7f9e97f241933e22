//! Reading an SQLite database that another program may be writing, without
//! writing, creating or write-locking anything.
//!
//! SQLite's own read-only mode is not enough: a connection opened
//! `SQLITE_OPEN_READONLY` to a WAL-mode database whose `-wal` and `-shm`
//! files are absent creates both (and leaves them). So a read goes one of
//! two ways, chosen by what lies beside the database when it starts:
//!
//! - **`-wal` and `-shm` exist** (a writer has the database open, or left
//!   them): open read-only (`SQLITE_OPEN_READONLY`, checkpoint on close
//!   disabled) and read in one transaction. SQLite's WAL protocol gives the
//!   transaction one consistent snapshot while the writer goes on; the
//!   database file is opened `O_RDONLY`, so no write lock can be taken on
//!   it, and a reader never takes the WAL write lock (it marks what it reads
//!   in the `-shm` index, as every reader does).
//! - **no `-wal`**: open with `immutable=1` (no lock, no `-wal` or `-shm`,
//!   the file as it is) and, after the read, check that the database file
//!   is the one that was read (identity, size, modification and change
//!   times unchanged) and that no rollback journal appeared. A writer that
//!   starts meanwhile appends to a new `-wal` and leaves the database file
//!   as it was until a checkpoint, which changes it: so an unchanged file
//!   means the read saw one committed state. A changed one is read again.
//!
//! A `-wal` without its `-shm` (left by a crash, with no process holding
//! the database) or a rollback journal (a write in progress, or one that
//! was interrupted) cannot be read without writing: after a few tries the
//! read fails with a message saying why.
//!
//! Nor does a read write a temporary file: the connection keeps SQLite's
//! temporary storage in memory (`temp_store = MEMORY`; a sort larger than
//! the cache would otherwise spill to a file), and where no index gives
//! the order a reader needs, it reads the rows in an index's order and
//! sorts what it parsed of them itself ([`Sorted`]) rather than have
//! SQLite's sorter hold whole rows, a copy of the session.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::fs::Stamp;

/// How many times a read is tried before it gives up (each waits a little
/// longer for a writer to finish).
pub const TRIES: u32 = 5;

/// The longest value (a row's JSON `data`) a read accepts, in bytes: the
/// same bound as a transcript's line, so that memory stays bounded.
const MAX_VALUE_BYTES: usize = crate::sources::foreign::MAX_LINE_BYTES;

/// `path` with `suffix` appended to its file name (`-wal`, `-shm`, `-journal`).
pub fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The stamps of the database and of its `-wal`, for telling whether
/// anything changed between two looks (`None` for a file that is absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DbStamp {
    /// The database file.
    pub db: Option<Stamp>,
    /// Its `-wal` file.
    pub wal: Option<Stamp>,
}

impl DbStamp {
    /// The stamps as they are now.
    pub fn now(path: &Path) -> DbStamp {
        DbStamp { db: Stamp::lstat(path), wal: Stamp::lstat(&beside(path, "-wal")) }
    }
}

/// A `file:` URI of `path` for `sqlite3_open_v2` (every byte that is not
/// plainly safe percent-encoded) with `query` appended.
fn uri(path: &Path, query: &str) -> String {
    let mut out = String::from("file:");
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'-' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.push('?');
    out.push_str(query);
    out
}

fn prepare(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_millis(500))?;
    conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, i32::try_from(MAX_VALUE_BYTES).unwrap_or(i32::MAX))?;
    // A read-only connection must not try to checkpoint when it closes.
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    // Sorts and temporary tables in memory, never in a file.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    Ok(())
}

/// What went wrong with one try.
enum Try<E> {
    /// Try again (the database changed, or a writer was busy).
    Again(String),
    /// Give up with this error.
    Fail(E),
}

/// Runs `read` on a read-only connection to the database at `path`, in one
/// read transaction, by the rules of the module docs. `read`'s own error
/// (`E`) ends the read; an SQLite error is given to `sqlite_error` to make
/// one.
pub fn read<T, E>(
    path: &Path,
    sqlite_error: impl Fn(String) -> E,
    mut read: impl FnMut(&Connection) -> Result<Result<T, E>, rusqlite::Error>,
) -> Result<T, E> {
    let mut last = String::new();
    for attempt in 0..TRIES {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(10 << attempt));
        }
        match read_once(path, &mut read) {
            Ok(v) => return v,
            Err(Try::Fail(e)) => return Err(sqlite_error(e)),
            Err(Try::Again(why)) => last = why,
        }
    }
    Err(sqlite_error(format!("{last} (tried {TRIES} times)")))
}

fn read_once<T, E>(
    path: &Path,
    read: &mut impl FnMut(&Connection) -> Result<Result<T, E>, rusqlite::Error>,
) -> Result<Result<T, E>, Try<String>> {
    let exists = |suffix: &str| Stamp::lstat(&beside(path, suffix)).is_some();
    if exists("-journal") {
        return Err(Try::Again(
            "a rollback journal lies beside the database (a write is in progress or was interrupted; \
             reading it would need a recovery that writes)"
                .into(),
        ));
    }
    let before = Stamp::lstat(path).ok_or_else(|| Try::Fail("the database file is gone".to_owned()))?;
    let wal = exists("-wal");
    let (conn, immutable) = if wal {
        if !exists("-shm") {
            return Err(Try::Again(
                "the database has a -wal file but no -shm file (left by a crash?): reading it would create \
                 the -shm file; open it once with the program that wrote it to recover it"
                    .into(),
            ));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        (Connection::open_with_flags(path, flags).map_err(|e| Try::Fail(e.to_string()))?, false)
    } else {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        (Connection::open_with_flags(uri(path, "immutable=1"), flags).map_err(|e| Try::Fail(e.to_string()))?, true)
    };
    prepare(&conn).map_err(|e| Try::Fail(e.to_string()))?;
    let outcome = (|| {
        conn.execute_batch("BEGIN")?;
        let v = read(&conn)?;
        conn.execute_batch("COMMIT")?;
        Ok(v)
    })();
    drop(conn);
    let value = match outcome {
        Ok(v) => v,
        Err(e) if is_busy(&e) => return Err(Try::Again(e.to_string())),
        // An immutable read of a file that changed under it may see a
        // torn page: read again rather than report it.
        Err(e) if immutable && Stamp::lstat(path) != Some(before) => return Err(Try::Again(e.to_string())),
        Err(e) => return Err(Try::Fail(e.to_string())),
    };
    if immutable && (Stamp::lstat(path) != Some(before) || exists("-journal")) {
        return Err(Try::Again("the database changed while it was read".into()));
    }
    Ok(value)
}

/// A failed read's error: for a file that is not SQLite or lacks the
/// tables or columns read, that `path` is not `what` (`"an OpenCode
/// database (1.2 or later)"`) and what it lacks, never SQLite's own words
/// alone; any other error as it is.
pub fn explain(path: &Path, what: &str, why: &str) -> String {
    let lacks = if let Some(table) = after(why, "no such table: ") {
        format!("it has no table {table}")
    } else if let Some(column) = after(why, "no such column: ") {
        format!("it has no column {column}")
    } else if why.contains("file is not a database") {
        "it is not an SQLite database".to_owned()
    } else {
        return why.to_owned();
    };
    format!("{} is not {what}: {lacks}", path.display())
}

/// What follows `marker` in `text`, up to the end of its line (`None`
/// without the marker).
fn after<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    let at = text.find(marker)? + marker.len();
    text[at..].lines().next().map(str::trim).filter(|s| !s.is_empty())
}

/// The fingerprint of the columns `cols` of `row`: their values, each
/// typed and text or blob length-prefixed, so that no two rows' values run
/// together the same way.
pub fn fingerprint(
    row: &rusqlite::Row<'_>,
    cols: std::ops::Range<usize>,
) -> rusqlite::Result<crate::host::Fingerprint> {
    use rusqlite::types::ValueRef;
    let mut out = Vec::new();
    for col in cols {
        match row.get_ref(col)? {
            ValueRef::Null => out.push(0),
            ValueRef::Integer(i) => out.extend_from_slice(&i.to_le_bytes()),
            ValueRef::Real(r) => out.extend_from_slice(&r.to_le_bytes()),
            ValueRef::Text(t) | ValueRef::Blob(t) => {
                out.extend_from_slice(&(t.len() as u64).to_le_bytes());
                out.extend_from_slice(t);
            }
        }
    }
    Ok(crate::host::Fingerprint::from_bytes(out))
}

/// A column's value as SQLite's `ORDER BY` orders it with the `BINARY`
/// collation (the only one these schemas declare): NULL first, then
/// numbers (integers and reals by value), then text, then blobs, text and
/// blobs by their bytes.
///
/// A read whose order no index gives sorts its rows by these keys itself
/// rather than by an `ORDER BY`: SQLite's sorter holds whole rows, so it
/// would copy every payload of the session and, once the rows outgrow its
/// cache (a few MB), write them to a temporary file and read them back.
#[derive(Clone, Debug)]
pub enum Sorted {
    /// NULL.
    Null,
    /// An integer.
    Integer(i64),
    /// A real.
    Real(f64),
    /// Text, as its bytes.
    Text(Box<[u8]>),
    /// A blob.
    Blob(Box<[u8]>),
}

impl Sorted {
    /// The key of one column's value.
    pub fn of(v: rusqlite::types::ValueRef<'_>) -> Sorted {
        use rusqlite::types::ValueRef;
        match v {
            ValueRef::Null => Sorted::Null,
            ValueRef::Integer(i) => Sorted::Integer(i),
            ValueRef::Real(r) => Sorted::Real(r),
            ValueRef::Text(t) => Sorted::Text(t.into()),
            ValueRef::Blob(b) => Sorted::Blob(b.into()),
        }
    }

    /// NULL, numbers, text and blobs, in that order.
    fn class(&self) -> u8 {
        match self {
            Sorted::Null => 0,
            Sorted::Integer(_) | Sorted::Real(_) => 1,
            Sorted::Text(_) => 2,
            Sorted::Blob(_) => 3,
        }
    }
}

/// An integer against a real as SQLite compares them (`sqlite3IntFloatCompare`):
/// by the integer part, then, when that is equal, as reals.
fn integer_real(i: i64, r: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    if r < -9_223_372_036_854_775_808.0 {
        return Ordering::Greater;
    }
    if r >= 9_223_372_036_854_775_808.0 {
        return Ordering::Less;
    }
    i.cmp(&(r as i64)).then_with(|| (i as f64).partial_cmp(&r).unwrap_or(Ordering::Equal))
}

impl Ord for Sorted {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (self, other) {
            (Sorted::Integer(a), Sorted::Integer(b)) => a.cmp(b),
            (Sorted::Real(a), Sorted::Real(b)) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
            (Sorted::Integer(i), Sorted::Real(r)) => integer_real(*i, *r),
            (Sorted::Real(r), Sorted::Integer(i)) => integer_real(*i, *r).reverse(),
            (Sorted::Text(a), Sorted::Text(b)) | (Sorted::Blob(a), Sorted::Blob(b)) => a.cmp(b),
            _ => self.class().cmp(&other.class()),
        }
    }
}

impl PartialOrd for Sorted {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Sorted {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Sorted {}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of every type in a column, sorted by SQLite and by their
    /// keys: the same order.
    #[test]
    fn keys_sort_as_sqlite_orders_them() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (v); INSERT INTO t VALUES (NULL), (3), (2.5), (-1), (-1.5), ('b'), ('a'), ('ab'), \
             (x'00'), (x'0001'), (2), (2.0), (9223372036854775807), (9.3e18), (-9.3e18), (''), (x''), (0.0), (-0.0), \
             ('10'), ('9'), (1e300), (-1e300)",
        )
        .unwrap();
        let mut stmt = conn.prepare("SELECT v, rowid FROM t ORDER BY v, rowid").unwrap();
        let by_sqlite: Vec<i64> = stmt.query_map([], |r| r.get(1)).unwrap().map(Result::unwrap).collect();
        let mut stmt = conn.prepare("SELECT v, rowid FROM t").unwrap();
        let mut rows = stmt.query([]).unwrap();
        let mut keys = Vec::new();
        while let Some(row) = rows.next().unwrap() {
            keys.push((Sorted::of(row.get_ref(0).unwrap()), row.get::<_, i64>(1).unwrap()));
        }
        keys.sort();
        assert_eq!(keys.into_iter().map(|(_, rowid)| rowid).collect::<Vec<_>>(), by_sqlite);
    }

    #[test]
    fn uris_escape_every_odd_byte() {
        assert_eq!(uri(Path::new("/a b/c?d#e%.db"), "immutable=1"), "file:/a%20b/c%3Fd%23e%25.db?immutable=1");
    }
}
