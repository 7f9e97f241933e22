//! The embedded, read-only DSH session store (SPEC §10): a
//! [`SessionQuery`] over a DeepSeek Harness sessions directory, so a host
//! can point the library at `~/.dsh/sessions` and write no code at all.
//!
//! ```no_run
//! use std::sync::Arc;
//! use dsh_session_reference::{Config, DshStore, Resolver, Target};
//!
//! let store = DshStore::open("/home/me/.dsh/sessions")?;
//! let resolver = Resolver::new(Arc::new(store), Config::default());
//! let target = Target::new("new-chat", Some("/work".into()));
//! for c in resolver.candidates_blocking(&target, "", None, None)? {
//!     println!("{} {}", c.label, c.mention.unwrap_or_default());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Layout and discovery
//!
//! Logs live at `<root>/<project-dir>/<session-dir>/session.jsonl` or
//! `session.jsonl.zstd` ([`layout`]). Discovery walks exactly these two
//! levels. A log is listed only when its path is the one derived from its
//! own header (id and cwd); otherwise, or when a second log has the same id,
//! or when its header cannot be read (a 0-byte log, a header that is not
//! JSON, a version other than 0, ...), it is **rejected**: not listed, and
//! reported with the reason in [`Listing::rejected`]. Directories and files
//! are visited in byte order of their names, so "the second log with the
//! same id" is well defined. A root that holds both encodings is refused
//! as a whole, as DSH does.
//!
//! # What a read does
//!
//! Listing reads only the header line (or header frame) of each log.
//! Reading a title or a surface reads the whole log once, streaming
//! ([`frames`]): one line at a time, keeping only the lines of events that
//! are on the surface. Each line is an event or a packed chunk row
//! ([`rows`]); seqs must run 0, 1, 2, … after packed rows are expanded. The
//! surface fold ([`fold`]) is validated as it goes, the latest title
//! ([`title`]) is remembered, and a log that ends inside a turn gets the
//! recovery closers of a cold load ([`recovery`]), which count in
//! `capturedThroughSeq` but are never surface events.
//!
//! # Damage
//!
//! - A torn tail (an unterminated last line of a plain log, an incomplete
//!   last frame of a zstd log) is dropped; every complete line before it
//!   is kept.
//! - A checksum or decoding failure in a complete zstd frame, a seq gap or
//!   malformed line inside a complete zstd frame, a seq gap in a plain log
//!   followed later by a `turn/end`, or an invalid surface fold make the
//!   session unreadable: its title and surface reads fail (so `prepare`
//!   fails with `SESSION_REFERENCE_READ_FAILED` naming the session). It is
//!   still listed. A seq gap in a plain log with no later `turn/end` is
//!   treated like a torn tail, as DSH does.
//! - One damaged session never hides the others.
//!
//! # Choices where DSH depends on its host
//!
//! - **cwd**: DSH rejects a header cwd that is not absolute under the host's
//!   path rules. This store accepts any non-empty string (the behaviour of
//!   DSH on Windows), so a root written on Windows (`C:\work\gamma`) reads
//!   the same on Linux and macOS.
//! - **Ties in listing order**: DSH orders equal `createdAt` by locale
//!   collation; this store uses code-point order of the ids.
//!
//! # Safety
//!
//! The store never writes, creates, locks or repairs anything under the
//! root. It never follows a symbolic link below the root (a link in place
//! of a project directory, session directory or log is reported in
//! [`Listing::rejected`] and skipped; logs are opened with `O_NOFOLLOW` on
//! Unix), and it opens only regular files. Memory stays bounded by the
//! surface being returned plus one line (lines longer than
//! [`frames::MAX_LINE_BYTES`] make a log unreadable).

pub mod fold;
pub mod frames;
mod kept;
pub mod layout;
pub mod recovery;
pub mod rows;
pub mod title;

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Number, Value};

use crate::config::MAX_SAFE_INTEGER;
use crate::error::HostError;
use crate::query::{QueryFuture, SessionHeader, SessionQuery, SurfaceData};

use self::fold::{is_surface_type, Surface, SurfaceOp};
use self::frames::{FrameStats, LineRead, LineReader, ZstdScratch, HEADER_CHUNK, MAX_LINE_BYTES, ZSTD_CHUNK};
use self::kept::KeptLines;
use self::layout::{project_dir_name, relative_log_path, session_dir_name, Encoding};
use self::recovery::TurnTracker;
use self::rows::{may_be_turn_end, parse_row, Row};
use self::title::{title_of, TITLE_EVENT};

/// The longest header line accepted, in bytes.
pub const MAX_HEADER_BYTES: usize = 1 << 20;
/// Read size for header-only reads of plain logs.
const HEADER_READ_CHUNK: usize = 4 << 10;

/// A read-only session query over a DSH sessions root. Cheap to clone;
/// every method may run concurrently from many threads.
///
/// As a [`SessionQuery`] it runs each read on tokio's blocking pool
/// (`spawn_blocking`), so reads of several sources run in parallel; it must
/// therefore be used inside a tokio runtime, which the
/// [`Resolver`](crate::Resolver) always provides. The inherent methods
/// ([`list`](Self::list), [`read_title`](Self::read_title),
/// [`read_surface_json`](Self::read_surface_json), [`inspect`](Self::inspect))
/// block the calling thread and need no runtime.
#[derive(Clone)]
pub struct DshStore {
    root: Arc<PathBuf>,
}

impl fmt::Debug for DshStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DshStore").field("root", &self.root).finish()
    }
}

/// One listed session.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredSession {
    /// `{id, createdAt, cwd}` as the resolver sees it.
    pub header: SessionHeader,
    /// The header line without `type`, key order kept
    /// (`{version, id, createdAt, cwd?, delegationDepth, ...}`).
    pub header_json: Map<String, Value>,
    /// The log file.
    pub path: PathBuf,
    /// The log's encoding.
    pub encoding: Encoding,
}

impl StoredSession {
    /// The header line without `type`, key order kept: what the store's
    /// `list_sessions` gives a host in every front (as DSH's store does).
    pub fn to_json(&self) -> Value {
        Value::Object(self.header_json.clone())
    }
}

/// A log that discovery found but does not list, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectedLog {
    /// The rejected log, or the symbolic link that was not followed.
    pub path: PathBuf,
    /// Why it was rejected, in words.
    pub reason: String,
}

/// The result of [`DshStore::list`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Listing {
    /// Listed sessions: newest `createdAt` first, equal `createdAt` by id
    /// in code-point order.
    pub sessions: Vec<StoredSession>,
    /// Logs (and links) that were found but not listed.
    pub rejected: Vec<RejectedLog>,
}

/// What kind of failure a [`StoreError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreErrorKind {
    /// No listed session has this id.
    NotFound,
    /// The session's log is damaged or invalid (see the module docs).
    Corrupt,
    /// The file system failed (permissions, I/O errors, a vanished file).
    Io,
}

/// A failed read of one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError {
    kind: StoreErrorKind,
    message: String,
}

impl StoreError {
    fn new(kind: StoreErrorKind, message: impl Into<String>) -> Self {
        StoreError { kind, message: message.into() }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// The reason, naming the log.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

impl From<StoreError> for HostError {
    fn from(e: StoreError) -> Self {
        HostError::new(e.message)
    }
}

/// A torn tail that a read dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Where the kept prefix of the file ends (for zstd: the end of the
    /// complete frames).
    pub truncate_to: u64,
    /// The file's size.
    pub file_bytes: u64,
    /// `file_bytes - truncate_to`.
    pub discarded_bytes: u64,
    /// Complete lines recovered from inside a torn zstd frame.
    pub recovered_lines: u64,
}

/// What a full read of a log kept (for diagnostics and tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogStats {
    /// Lines in the log, header included, counting an unterminated last
    /// line of decoded text.
    pub storage_lines: u64,
    /// Events kept, packed members expanded.
    pub decoded_events: u64,
    /// The seq of the last kept event (`None` for a header-only log).
    pub last_seq: Option<u64>,
    /// Packed chunk rows kept.
    pub packed_rows: u64,
    /// Events those rows stand for.
    pub packed_members: u64,
    /// Complete zstd frames (`None` for a plain log).
    pub complete_frames: Option<u64>,
    /// The torn tail that was dropped, if any.
    pub torn_tail: Option<TornTail>,
    /// Types of the synthetic recovery closers, in seq order after `last_seq`.
    pub recovery_closers: Vec<&'static str>,
    /// `capturedThroughSeq` of the surface snapshot: `last_seq` plus the
    /// closers.
    pub captured_through_seq: Option<u64>,
    /// The latest title.
    pub title: Option<String>,
    /// The surface seqs in model order.
    pub surface_seqs: Vec<u64>,
}

/// A validated header line.
struct Header {
    id: String,
    created_at: u64,
    cwd: Option<String>,
    json: Map<String, Value>,
}

fn parse_header(line: &[u8]) -> Result<Header, String> {
    let mut json: Map<String, Value> =
        serde_json::from_slice(line).map_err(|e| format!("the header line is not a JSON object: {e}"))?;
    if json.get("type").and_then(Value::as_str) != Some("session") {
        return Err("the first line is not a session header (`type` is not \"session\")".into());
    }
    match json.get("version").and_then(Value::as_u64) {
        Some(0) => {}
        _ => return Err(format!("unsupported header version {} (only 0 is understood)", show(json.get("version")))),
    }
    let id = match json.get("id") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err("the header has no string `id`".into()),
    };
    let created_at = match json.get("createdAt").and_then(Value::as_u64) {
        Some(n) if n <= MAX_SAFE_INTEGER => n,
        _ => return Err("the header's `createdAt` is not a non-negative safe integer".into()),
    };
    let cwd = match json.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => return Err("the header's `cwd` is not a non-empty string".into()),
    };
    json.shift_remove("type");
    Ok(Header { id, created_at, cwd, json })
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "(missing)".to_owned(), Value::to_string)
}

/// Opens a log without following a final symbolic link (Unix) and checks
/// that it is a regular file; returns it with its size. `O_NONBLOCK` keeps a
/// FIFO from hanging the open.
fn open_log(path: &Path) -> io::Result<(File, u64)> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok((file, meta.len()))
}

fn line_reader(path: &Path, encoding: Encoding) -> io::Result<LineReader> {
    let (file, len) = open_log(path)?;
    match encoding {
        Encoding::Raw => Ok(LineReader::raw(file)),
        Encoding::Zstd => Ok(LineReader::zstd_with(file, len, ZstdScratch::new()?, ZSTD_CHUNK)),
    }
}

/// Reads and validates the header of the log at `path`, reading as little
/// as it can: plain logs in small chunks, zstd logs with small buffers and
/// a decoder and buffers from `scratch` (created there if empty, and left there for the
/// next log: creating one costs more than reading a header).
fn read_log_header(path: &Path, encoding: Encoding, scratch: &mut Option<ZstdScratch>) -> Result<Header, String> {
    let opened = open_log(path).and_then(|(file, len)| match encoding {
        Encoding::Raw => Ok(LineReader::raw_with_capacity(file, HEADER_READ_CHUNK)),
        Encoding::Zstd => {
            let reused = match scratch.take() {
                Some(reused) => reused,
                None => ZstdScratch::new()?,
            };
            Ok(LineReader::zstd_with(file, len, reused, HEADER_CHUNK))
        }
    });
    let mut reader = opened.map_err(|e| format!("cannot open: {e}"))?;
    let header = read_header(&mut reader);
    if let Some(reused) = reader.into_scratch() {
        *scratch = Some(reused);
    }
    header
}

/// Reads and validates the header of a log (line 1 or the first frame).
fn read_header(reader: &mut LineReader) -> Result<Header, String> {
    let mut buf = Vec::with_capacity(512);
    match reader.next_line(&mut buf, MAX_HEADER_BYTES) {
        Ok(LineRead::Line(_)) => {}
        Ok(LineRead::End { torn_bytes: 0 }) => {
            return Err("the log has no header (it is empty, or its first frame is incomplete)".into())
        }
        Ok(LineRead::End { .. }) => return Err("the header line is incomplete (no newline)".into()),
        Err(e) => return Err(format!("the header cannot be read: {e}")),
    }
    std::str::from_utf8(&buf).map_err(|_| "the header line is not UTF-8".to_owned())?;
    parse_header(&buf)
}

/// Items per batch a listing thread takes at a time.
const LIST_BATCH: usize = 64;

/// `items.iter().map(f)` on up to four threads, in order. Listing work is a
/// few system calls and a small decode per log, so even two cores overlap
/// it well. Each thread has its own `S` (a reusable decoder, say).
fn par_map<T, R, S, F>(items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    S: Default,
    F: Fn(&T, &mut S) -> R + Sync,
{
    let run = |batch: &[T], state: &mut S| -> Vec<R> { batch.iter().map(|item| f(item, state)).collect() };
    // More threads than cores: a header read may block on the disk.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_mul(2).min(4);
    if threads < 2 || items.len() < 2 * LIST_BATCH {
        return run(items, &mut S::default());
    }
    let batches: Vec<&[T]> = items.chunks(LIST_BATCH).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut state = S::default();
        let mut done = Vec::new();
        loop {
            let b = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(batch) = batches.get(b) else { return done };
            done.push((b, run(batch, &mut state)));
        }
    };
    let mut results: Vec<Option<Vec<R>>> = batches.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        // A helper that cannot start, or fails, leaves its batches to the
        // calling thread (below).
        let helpers: Vec<_> =
            (1..threads).filter_map(|_| std::thread::Builder::new().spawn_scoped(scope, work).ok()).collect();
        let mut all = work();
        for h in helpers {
            if let Ok(done) = h.join() {
                all.extend(done);
            }
        }
        for (b, r) in all {
            results[b] = Some(r);
        }
    });
    let mut state = S::default();
    results.into_iter().zip(&batches).flat_map(|(r, batch)| r.unwrap_or_else(|| run(batch, &mut state))).collect()
}

/// What kind of entry a directory entry is, without following links.
enum Kind {
    Dir,
    File,
    Link,
    Other,
    Missing,
}

fn kind_of(path: &Path) -> io::Result<Kind> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Ok(Kind::Link),
        Ok(m) if m.is_dir() => Ok(Kind::Dir),
        Ok(m) if m.is_file() => Ok(Kind::File),
        Ok(_) => Ok(Kind::Other),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Kind::Missing),
        Err(e) => Err(e),
    }
}

/// The entries of a directory, sorted by name (byte order).
fn sorted_entries(dir: &Path) -> io::Result<Vec<OsString>> {
    Ok(sorted_typed_entries(dir)?.into_iter().map(|(name, _)| name).collect())
}

/// The entries of a directory with their types when the directory listing
/// gives them (no symbolic link is followed), sorted by name (byte order).
fn sorted_typed_entries(dir: &Path) -> io::Result<Vec<(OsString, Option<fs::FileType>)>> {
    let mut entries =
        fs::read_dir(dir)?.map(|e| e.map(|e| (e.file_name(), e.file_type().ok()))).collect::<io::Result<Vec<_>>>()?;
    entries.sort_by(|a, b| a.0.as_encoded_bytes().cmp(b.0.as_encoded_bytes()));
    Ok(entries)
}

/// [`kind_of`] from a directory entry's type, when it has one.
fn kind_of_entry(path: &Path, file_type: Option<fs::FileType>) -> io::Result<Kind> {
    match file_type {
        Some(t) if t.is_symlink() => Ok(Kind::Link),
        Some(t) if t.is_dir() => Ok(Kind::Dir),
        Some(t) if t.is_file() => Ok(Kind::File),
        Some(_) => Ok(Kind::Other),
        None => kind_of(path),
    }
}

const LINK_REASON: &str = "symbolic link, not followed";

/// One log file found by discovery, before its header is checked.
struct Found {
    project: OsString,
    session: OsString,
    path: PathBuf,
    encoding: Encoding,
}

/// A located session: its log and header.
struct Located {
    path: PathBuf,
    encoding: Encoding,
}

/// Whether a header names the path its log was found at.
fn path_matches(found: &Found, header: &Header) -> Result<(), String> {
    let project = project_dir_name(header.cwd.as_deref());
    let session = session_dir_name(&header.id);
    if found.project.to_str() == Some(project.as_str()) && found.session.to_str() == Some(session.as_str()) {
        Ok(())
    } else {
        Err(format!(
            "the log's path does not match its header (id {}, cwd {}): expected {}",
            crate::json::js_string(&header.id),
            header.cwd.as_deref().map_or_else(|| "none".to_owned(), crate::json::js_string),
            relative_log_path(&header.id, header.cwd.as_deref(), found.encoding)
        ))
    }
}

impl DshStore {
    /// Opens a sessions root. The root must be a readable directory (a
    /// symbolic link to one is fine: the root itself is the one link that
    /// is followed). Nothing is read beyond that until a call needs it.
    pub fn open(root: impl AsRef<Path>) -> io::Result<DshStore> {
        let root = root.as_ref();
        let meta = fs::metadata(root)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot open DSH sessions root {}: {e}", root.display())))?;
        if !meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("DSH sessions root {} is not a directory", root.display()),
            ));
        }
        fs::read_dir(root)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot read DSH sessions root {}: {e}", root.display())))?;
        Ok(DshStore { root: Arc::new(root.to_path_buf()) })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Walks `<root>/<project>/<session>/` and returns every log file, with
    /// links and oddities reported into `rejected`, both in path order. The
    /// session directories are looked into on several threads.
    fn discover(&self, rejected: &mut Vec<RejectedLog>) -> io::Result<Vec<Found>> {
        /// A session directory to look into, or something already rejected.
        enum Step {
            Rejected(RejectedLog),
            Session { project: OsString, session: OsString, path: PathBuf },
        }
        let root = self.root.as_path();
        let projects = sorted_entries(root)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot read DSH sessions root {}: {e}", root.display())))?;
        let mut steps = Vec::new();
        for project in projects {
            let project_path = root.join(&project);
            match kind_of(&project_path) {
                Ok(Kind::Dir) => {}
                Ok(Kind::Link) => {
                    steps.push(Step::Rejected(RejectedLog { path: project_path, reason: LINK_REASON.into() }));
                    continue;
                }
                Ok(_) => continue,
                Err(e) => {
                    let reason = format!("cannot inspect: {e}");
                    steps.push(Step::Rejected(RejectedLog { path: project_path, reason }));
                    continue;
                }
            }
            let sessions = match sorted_typed_entries(&project_path) {
                Ok(s) => s,
                Err(e) => {
                    let reason = format!("cannot read directory: {e}");
                    steps.push(Step::Rejected(RejectedLog { path: project_path, reason }));
                    continue;
                }
            };
            for (session, file_type) in sessions {
                let session_path = project_path.join(&session);
                match kind_of_entry(&session_path, file_type) {
                    Ok(Kind::Dir) => {}
                    Ok(Kind::Link) => {
                        steps.push(Step::Rejected(RejectedLog { path: session_path, reason: LINK_REASON.into() }));
                        continue;
                    }
                    Ok(_) => continue,
                    Err(e) => {
                        let reason = format!("cannot inspect: {e}");
                        steps.push(Step::Rejected(RejectedLog { path: session_path, reason }));
                        continue;
                    }
                }
                steps.push(Step::Session { project: project.clone(), session, path: session_path });
            }
        }
        let looked = par_map(&steps, |step, _: &mut ()| {
            let Step::Session { project, session, path: session_path } = step else { return Vec::new() };
            let mut out = Vec::new();
            for encoding in [Encoding::Raw, Encoding::Zstd] {
                let path = session_path.join(encoding.file_name());
                let found = match kind_of(&path) {
                    Ok(Kind::File) => Ok(Found { project: project.clone(), session: session.clone(), path, encoding }),
                    Ok(Kind::Missing) => continue,
                    Ok(Kind::Link) => Err(RejectedLog { path, reason: LINK_REASON.into() }),
                    Ok(Kind::Dir | Kind::Other) => Err(RejectedLog { path, reason: "not a regular file".into() }),
                    Err(e) => Err(RejectedLog { path, reason: format!("cannot inspect: {e}") }),
                };
                out.push(found);
            }
            out
        });
        let mut found = Vec::new();
        for (step, looked) in steps.into_iter().zip(looked) {
            if let Step::Rejected(r) = step {
                rejected.push(r);
            }
            // Rejections first, as the files of a session were looked at.
            let (logs, others): (Vec<_>, Vec<_>) = looked.into_iter().partition(Result::is_ok);
            rejected.extend(others.into_iter().filter_map(Result::err));
            found.extend(logs.into_iter().filter_map(Result::ok));
        }
        Ok(found)
    }

    /// Lists the sessions of the root, reading only the header of each log.
    ///
    /// Fails only when the root itself cannot be read or holds both
    /// `session.jsonl` and `session.jsonl.zstd` logs (DSH refuses such a
    /// root); every per-log problem is reported in [`Listing::rejected`].
    pub fn list(&self) -> io::Result<Listing> {
        let mut rejected = Vec::new();
        let found = self.discover(&mut rejected)?;
        let encodings: HashSet<Encoding> = found.iter().map(|f| f.encoding).collect();
        if encodings.len() > 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "DSH sessions root {} mixes session.jsonl and session.jsonl.zstd logs; a root uses one encoding",
                    self.root.display()
                ),
            ));
        }
        let headers = par_map(&found, |f, scratch| read_log_header(&f.path, f.encoding, scratch));
        let mut seen: HashMap<String, PathBuf> = HashMap::new();
        let mut sessions = Vec::new();
        for (f, header) in found.into_iter().zip(headers) {
            let header = match header.and_then(|h| path_matches(&f, &h).map(|()| h)) {
                Ok(h) => h,
                Err(reason) => {
                    rejected.push(RejectedLog { path: f.path, reason });
                    continue;
                }
            };
            if let Some(first) = seen.get(&header.id) {
                rejected.push(RejectedLog {
                    path: f.path,
                    reason: format!("duplicate session id, already listed from {}", first.display()),
                });
                continue;
            }
            seen.insert(header.id.clone(), f.path.clone());
            sessions.push(StoredSession {
                header: SessionHeader { id: header.id, created_at: Number::from(header.created_at), cwd: header.cwd },
                header_json: header.json,
                path: f.path,
                encoding: f.encoding,
            });
        }
        sessions.sort_by(|a, b| {
            let (ca, cb) = (a.header.created_at.as_u64(), b.header.created_at.as_u64());
            cb.cmp(&ca).then_with(|| a.header.id.cmp(&b.header.id))
        });
        Ok(Listing { sessions, rejected })
    }

    /// Finds the log of `id` the way listing would: the first log, in
    /// byte order of paths, whose header names this id and its path.
    fn locate(&self, id: &str) -> Result<Located, StoreError> {
        let io_err = |e: io::Error| StoreError::new(StoreErrorKind::Io, format!("cannot read DSH sessions root: {e}"));
        let session = OsString::from(session_dir_name(id));
        let mut last_reason = None;
        for project in sorted_entries(&self.root).map_err(io_err)? {
            let project_path = self.root.join(&project);
            if !matches!(kind_of(&project_path), Ok(Kind::Dir)) {
                continue;
            }
            let session_path = project_path.join(&session);
            if !matches!(kind_of(&session_path), Ok(Kind::Dir)) {
                continue;
            }
            let logs: Vec<Encoding> = [Encoding::Raw, Encoding::Zstd]
                .into_iter()
                .filter(|e| matches!(kind_of(&session_path.join(e.file_name())), Ok(Kind::File)))
                .collect();
            for encoding in logs {
                let path = session_path.join(encoding.file_name());
                let found = Found { project: project.clone(), session: session.clone(), path, encoding };
                let header = read_log_header(&found.path, encoding, &mut None);
                match header.and_then(|h| path_matches(&found, &h).map(|()| h)) {
                    Ok(h) if h.id == id => return Ok(Located { path: found.path, encoding }),
                    Ok(_) => {}
                    Err(reason) => last_reason = Some(format!("{}: {reason}", found.path.display())),
                }
            }
        }
        let mut message = format!("no session {} in {}", crate::json::js_string(id), self.root.display());
        if let Some(reason) = last_reason {
            message.push_str(&format!(" (a log was rejected: {reason})"));
        }
        Err(StoreError::new(StoreErrorKind::NotFound, message))
    }

    /// The latest title of a session (`data.title` of its last
    /// `session/title` event). Reads and validates the whole log, so a
    /// damaged session fails here as its surface read does.
    pub fn read_title(&self, id: &str) -> Result<Option<String>, StoreError> {
        let located = self.locate(id)?;
        Ok(load(&located, id, false)?.stats.title)
    }

    /// The surface snapshot of a session as JSON text:
    /// `{"session":<header without type>,"capturedThroughSeq":N|null,"events":[...]}`,
    /// where each event is the log's own line, byte for byte (packed chunk
    /// rows and recovery closers are never surface events).
    pub fn read_surface_json(&self, id: &str) -> Result<Vec<u8>, StoreError> {
        let located = self.locate(id)?;
        let loaded = load(&located, id, true)?;
        let session = serde_json::to_vec(&loaded.header_json).expect("a JSON map serializes");
        let mut prefix = Vec::with_capacity(session.len() + 64);
        prefix.extend_from_slice(b"{\"session\":");
        prefix.extend_from_slice(&session);
        prefix.extend_from_slice(b",\"capturedThroughSeq\":");
        match loaded.stats.captured_through_seq {
            Some(n) => prefix.extend_from_slice(n.to_string().as_bytes()),
            None => prefix.extend_from_slice(b"null"),
        }
        prefix.extend_from_slice(b",\"events\":[");
        Ok(loaded.lines.into_joined(&prefix, &loaded.stats.surface_seqs, b"]}"))
    }

    /// Reads a session's whole log and reports what was kept: line and
    /// event counts, packed rows, frames, the torn tail, recovery closers,
    /// the title and the surface seqs.
    pub fn inspect(&self, id: &str) -> Result<LogStats, StoreError> {
        let located = self.locate(id)?;
        Ok(load(&located, id, false)?.stats)
    }
}

/// The result of reading a whole log.
struct Loaded {
    header_json: Map<String, Value>,
    stats: LogStats,
    /// The lines of the surface events (only when asked for).
    lines: KeptLines,
}

/// Parses one line and checks that it comes where `expected` says; the
/// error says why the line cannot be accepted there.
fn check_line(line: &[u8], expected: u64) -> Result<Row<'_>, String> {
    if std::str::from_utf8(line).is_err() {
        return Err("a line is not valid UTF-8".into());
    }
    let row = parse_row(line)?;
    if row.first_seq() != expected {
        return Err(format!("seq gap (expected {expected}, got {})", row.first_seq()));
    }
    Ok(row)
}

/// Reads a whole log once, streaming, and validates it (see the module
/// docs). With `keep_lines`, the lines of surface events are kept.
fn load(located: &Located, id: &str, keep_lines: bool) -> Result<Loaded, StoreError> {
    let path = &located.path;
    let corrupt = |why: String| {
        StoreError::new(StoreErrorKind::Corrupt, format!("corrupt session log {}: {why}", path.display()))
    };
    let io_error = |e: io::Error| {
        if e.kind() == io::ErrorKind::InvalidData {
            StoreError::new(StoreErrorKind::Corrupt, format!("{}: {e}", path.display()))
        } else {
            StoreError::new(StoreErrorKind::Io, format!("cannot read {}: {e}", path.display()))
        }
    };
    let mut reader = line_reader(path, located.encoding).map_err(io_error)?;
    let header = read_header(&mut reader).map_err(corrupt)?;
    if header.id != id {
        return Err(corrupt(format!("its header names session {}", crate::json::js_string(&header.id))));
    }

    let mut surface = Surface::new();
    let mut lines = KeptLines::new();
    let mut turns = TurnTracker::new();
    let mut title: Option<String> = None;
    let mut expected: u64 = 0;
    let mut storage_lines: u64 = 1;
    let (mut packed_rows, mut packed_members) = (0u64, 0u64);
    let mut kept_raw_offset = reader.raw_offset();
    let mut torn_bytes = 0u64;
    let mut broke = false;
    let mut recovered_lines = 0u64;
    let mut buf = Vec::new();
    loop {
        let info = match reader.next_line(&mut buf, MAX_LINE_BYTES).map_err(io_error)? {
            LineRead::Line(info) => info,
            LineRead::End { torn_bytes: t } => {
                if t > 0 {
                    storage_lines += 1;
                }
                torn_bytes = t;
                break;
            }
        };
        storage_lines += 1;
        let line_no = storage_lines;
        let (row, mut why) = match check_line(&buf, expected) {
            Ok(row) => (Some(row), None),
            Err(e) => (None, Some(e)),
        };
        // A `session/title` whose data is not readable is a broken line too.
        let mut new_title = None;
        if let Some(Row::Event { kind, .. }) = &row {
            if kind == TITLE_EVENT {
                match title_of(&buf) {
                    Ok(t) => new_title = Some(t),
                    Err(e) => why = Some(e),
                }
            }
        }
        if let Some(why) = why {
            let why = format!("line {line_no}: {why}");
            if info.strict {
                return Err(corrupt(format!("{why}, inside a complete frame")));
            }
            // DSH ignores what follows a broken line unless a later line
            // ends a turn: then the break is inside the committed region.
            loop {
                match reader.next_line(&mut buf, MAX_LINE_BYTES).map_err(io_error)? {
                    LineRead::Line(_) if may_be_turn_end(&buf) => {
                        return Err(corrupt(format!("seq gap or bad line in committed region at {why}")));
                    }
                    LineRead::Line(_) => storage_lines += 1,
                    LineRead::End { .. } => break,
                }
            }
            broke = true;
            break;
        }
        let row = row.expect("an unbroken line parses");
        if !info.strict && reader.frame_stats().is_some_and(|s| s.torn) {
            recovered_lines += 1;
        }
        match row {
            Row::Packed { members, .. } => {
                packed_rows += 1;
                packed_members += members;
                expected = expected.checked_add(members).ok_or_else(|| corrupt("seq overflow".into()))?;
            }
            Row::Event { seq, kind, surface_op } => {
                if is_surface_type(&kind) {
                    let op = SurfaceOp::parse(&kind, seq, surface_op.as_ref()).map_err(corrupt)?;
                    let removed = surface.apply(seq, op).map_err(corrupt)?;
                    if keep_lines {
                        for r in removed {
                            lines.remove(r);
                        }
                        lines.insert(seq, &buf);
                    }
                }
                if let Some(t) = new_title {
                    title = t;
                }
                turns.observe(&kind, &buf);
                expected += 1;
            }
        }
        kept_raw_offset = reader.raw_offset();
    }

    let frame_stats: Option<FrameStats> = reader.frame_stats();
    let torn_tail = match (frame_stats, kept_raw_offset) {
        (Some(fs), _) if fs.torn => Some(TornTail {
            truncate_to: fs.complete_end,
            file_bytes: fs.file_bytes,
            discarded_bytes: fs.file_bytes - fs.complete_end,
            recovered_lines,
        }),
        (None, Some(kept)) if broke || torn_bytes > 0 => {
            let file_bytes = fs::metadata(path).map(|m| m.len()).unwrap_or(kept + torn_bytes);
            Some(TornTail {
                truncate_to: kept,
                file_bytes,
                discarded_bytes: file_bytes.saturating_sub(kept),
                recovered_lines: 0,
            })
        }
        _ => None,
    };
    let closers = turns.closers();
    let last_seq = expected.checked_sub(1);
    let captured_through_seq = last_seq.map(|l| l + closers.len() as u64);
    let stats = LogStats {
        storage_lines,
        decoded_events: expected,
        last_seq,
        packed_rows,
        packed_members,
        complete_frames: frame_stats.map(|s| s.complete_frames),
        torn_tail,
        recovery_closers: closers.iter().map(|c| c.event_type()).collect(),
        captured_through_seq,
        title,
        surface_seqs: surface.seqs(),
    };
    Ok(Loaded { header_json: header.json, stats, lines })
}

/// Runs blocking store work on tokio's blocking pool.
fn on_blocking_pool<T, F>(f: F) -> QueryFuture<'static, T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, HostError> + Send + 'static,
{
    let task = tokio::task::spawn_blocking(f);
    Box::pin(async move {
        match task.await {
            Ok(result) => result,
            Err(e) if e.is_panic() => Err(HostError::new("the DSH session store panicked")),
            Err(_) => Err(HostError::new("the DSH session store read was aborted")),
        }
    })
}

impl SessionQuery for DshStore {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        let store = self.clone();
        on_blocking_pool(move || {
            store
                .list()
                .map(|l| l.sessions.into_iter().map(|s| s.header).collect())
                .map_err(|e| HostError::new(e.to_string()))
        })
    }

    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        let (store, id) = (self.clone(), session_id.to_owned());
        on_blocking_pool(move || DshStore::read_title(&store, &id).map_err(HostError::from))
    }

    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        let (store, id) = (self.clone(), session_id.to_owned());
        on_blocking_pool(move || store.read_surface_json(&id).map(SurfaceData::json).map_err(HostError::from))
    }
}
