//! The embedded, read-only DSH session store (docs/contract.md §10): a
//! [`SessionQuery`] over a DeepSeek Harness sessions directory, so a host
//! can point the library at `~/.dsh/sessions` and write no code at all.
//!
//! ```no_run
//! use std::sync::Arc;
//! use dsh_session_reference::{block_on, CandidateOptions, Config, DshStore, Resolver, Target};
//!
//! let store = DshStore::open("/home/me/.dsh/sessions")?;
//! let resolver = Resolver::new(Arc::new(store), Config::default());
//! let target = Target::new("new-chat", Some("/work".into()));
//! for c in block_on(resolver.candidates(&target, "", &CandidateOptions::default(), None))? {
//!     println!("{} {}", c.label, c.mention.unwrap_or_default());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Layout and discovery
//!
//! Logs live at `<root>/<project-dir>/<session-dir>/<generation file>`
//! ([`layout`]): `session.jsonl` is format v0 and `session.v<N>.jsonl` is
//! vN, each with `.zstd` in a compressed root ([`generation`] says what
//! differs between generations). Discovery ([`discover`]) walks exactly
//! these two levels; the numerically highest canonical name in a session
//! directory is the session's log and older generations beside it are
//! ignored, never merged; `session.lock` and every other name are ignored.
//! A log is listed only when its header is valid for its generation
//! ([`header`]: the header's version equals the file's generation) and
//! names the path the log was found at (id and cwd); otherwise, or when a
//! second log has the same id, it is **rejected**: not listed, and reported
//! with the reason and a [`RejectionKind`] in [`Listing::rejected`]. A log
//! of a generation above the newest implemented is rejected as
//! [`RejectionKind::Unsupported`] ("written by a newer DSH"), not as
//! invalid. Directories and files are visited in byte order of their names,
//! so "the second log with the same id" is well defined. A root that holds
//! both encodings is refused as a whole, as DSH does, by listing and by
//! every read.
//!
//! # What a read does
//!
//! Listing reads only the header line (or header frame) of each log.
//! Reading a title or a surface reads the whole log once, streaming
//! ([`frames`]): one line at a time, keeping only the lines of events that
//! are on the surface ([`load`]). Each line is an event or, in v0 and v1, a
//! packed chunk row ([`rows`]); seqs must run 0, 1, 2, … after packed rows
//! are expanded. The surface fold ([`fold`]) is validated as it goes with
//! the generation's surface types and replace marker, message contents are
//! checked against the generation ([`message`]), the latest title
//! ([`title`]) is remembered, and a log that ends inside a turn gets the
//! recovery closers of a cold load ([`recovery`]), which count in
//! `capturedThroughSeq` but are never surface events. A log whose
//! generation and contents disagree (a plugin-wrapped source in a v4 file,
//! a v3 replace marker in a v2 file, a packed row in a v2 file) fails to
//! read, naming the problem.
//!
//! # Resumed reads
//!
//! A title read ([`DshStore::read_title`], and [`DshStore::inspect`]) of a
//! log that only grew since the last one continues from where that read
//! stopped: the end of the last complete line it folded (plain logs) or of
//! the last complete frame (zstd logs), with the fold state it had there
//! (`resume.rs`: seq expected, surface, open turn, title, counts). It
//! does so only when the log is the same file (device and inode), is not
//! smaller, has no older mtime, and still has the same 4 KiB just before
//! that offset; otherwise, and after a read that failed, the log is read
//! from the start. The result — title, stats, errors — is always what a
//! read from the start gives. At most 128 logs' states, about 32 MiB in
//! all (about 8 bytes per surface event), are kept, least recently used
//! first out. Surface reads always read the whole log; a surface read for
//! projection ([`DshStore::read_visible_surface_json`], what the
//! resolver reads) keeps only the lines projection may use.
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
//! [`frames::MAX_LINE_BYTES`] make a log unreadable), plus the bounded
//! states of resumed reads.

pub mod discover;
pub mod fold;
pub mod frames;
pub mod generation;
pub mod header;
mod kept;
pub mod layout;
mod listing;
pub mod load;
pub mod message;
pub mod recovery;
mod resume;
mod root;
pub mod rows;
pub mod title;

use std::fmt;
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::error::HostError;
use crate::fs::{open_regular, FileIdentity};
use crate::host::Fingerprint;
use crate::host::{
    Blocking, BlockingSessionQuery, BudgetedSurface, QueryFuture, SessionHeader, SessionQuery, SharedListing,
    StreamedItems, SurfaceAnswer, SurfaceData, SurfaceItems, SurfaceRead,
};
use crate::projection::Item;
use crate::sources::file_source::FileSource;

use self::discover::{again_at, candidates_for, check_root_encoding, path_matches, Found};
use self::header::{read_log_header, HeaderError};
use self::layout::Encoding;
use self::listing::{ListingCache, Snapshot};
use self::load::{load, load_within, Keep, LoadedStubs};
use crate::retention::Elided;

pub(crate) use self::root::KIND;

/// A read-only session query over a DSH sessions root. Cheap to clone;
/// every method may run concurrently from many threads.
///
/// It is a [`BlockingSessionQuery`] (the inherent methods
/// [`list`](Self::list), [`read_title`](Self::read_title),
/// [`read_surface_json`](Self::read_surface_json), [`inspect`](Self::inspect)
/// block the calling thread and need no runtime) and, through [`Blocking`],
/// a [`SessionQuery`]: each read then runs on tokio's blocking pool, so
/// reads of several sources run in parallel; that needs a tokio runtime,
/// which the [`Resolver`](crate::Resolver) always provides.
#[derive(Clone)]
pub struct DshStore {
    root: Arc<PathBuf>,
    /// The last verdict on the root's encoding (see [`ROOT_CHECK_TTL`]).
    root_check: Arc<Mutex<Option<RootCheck>>>,
    /// The last listing and what it was made of (see `listing.rs`).
    listing: Arc<Mutex<ListingCache>>,
    /// Where title reads of each log stopped (see `resume.rs`).
    resume: Arc<Mutex<resume::ResumeCache>>,
}

/// How long, at least, a verdict on the root's encoding is reused by reads
/// of single sessions. Listing always walks the whole root and renews it; a
/// read after a longer pause walks it again. Without it, each of the title
/// reads of one candidate listing would walk every session directory. A
/// verdict whose walk took longer than a tenth of this is reused for ten
/// times that walk, so that walking takes at most a tenth of the time of
/// reads one after another however many sessions the root holds (a walk of
/// 100,000 session directories takes about a second).
pub const ROOT_CHECK_TTL: Duration = Duration::from_secs(2);

/// How many times as long as its walk took a verdict is reused, at least.
const ROOT_CHECK_SHARE: u32 = 10;

#[derive(Clone, Debug)]
struct RootCheck {
    at: Instant,
    /// How long the walk that gave the verdict took.
    took: Duration,
    verdict: Result<Option<Encoding>, StoreError>,
}

impl RootCheck {
    /// Whether the verdict is still reused (see [`ROOT_CHECK_TTL`]).
    fn is_recent(&self) -> bool {
        self.at.elapsed() < ROOT_CHECK_TTL.max(self.took.saturating_mul(ROOT_CHECK_SHARE))
    }
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
    /// The log file: the session's highest canonical generation.
    pub path: PathBuf,
    /// The log's encoding.
    pub encoding: Encoding,
    /// The log's format generation (0 to 4).
    pub generation: u64,
    /// Older generations beside it, ascending: present, ignored.
    pub superseded: Vec<u64>,
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
    /// What kind of rejection it is.
    pub kind: RejectionKind,
}

/// What kind of rejection a [`RejectedLog`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectionKind {
    /// Written by a newer DSH: a generation above
    /// [`NEWEST_GENERATION`](generation::NEWEST_GENERATION).
    Unsupported,
    /// The log is invalid: no readable header, a header that breaks its
    /// generation's rules, a path that does not match the header, a
    /// duplicate id, or not a regular file.
    Invalid,
    /// A symbolic link below the root, not followed.
    NotFollowed,
    /// The file system failed.
    Io,
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
    /// The log's format generation.
    pub generation: u64,
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
    /// `capturedThroughSeq` of the surface snapshot: `last_seq` of the
    /// file as written plus the closers (for every generation; DSH ≥ 0.1.7
    /// counts a migrated stream instead, see `docs/store-and-cli.md`).
    pub captured_through_seq: Option<u64>,
    /// The latest title.
    pub title: Option<String>,
    /// The surface seqs in model order.
    pub surface_seqs: Vec<u64>,
}

fn copy_error(e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), e.to_string())
}

impl From<HeaderError> for RejectionKind {
    fn from(e: HeaderError) -> Self {
        match e {
            HeaderError::Invalid(_) => RejectionKind::Invalid,
            HeaderError::Unsupported(_) => RejectionKind::Unsupported,
        }
    }
}

impl DshStore {
    /// Opens a sessions root. The root must be a readable directory (a
    /// symbolic link to one is fine: the root itself is the one link that
    /// is followed). Nothing is read beyond that until a call needs it.
    pub fn open(root: impl AsRef<Path>) -> io::Result<DshStore> {
        let root = root.as_ref();
        let meta = std::fs::metadata(root)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot open DSH sessions root {}: {e}", root.display())))?;
        if !meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("DSH sessions root {} is not a directory", root.display()),
            ));
        }
        std::fs::read_dir(root)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot read DSH sessions root {}: {e}", root.display())))?;
        Ok(DshStore {
            root: Arc::new(root.to_path_buf()),
            root_check: Arc::new(Mutex::new(None)),
            listing: Arc::default(),
            resume: Arc::default(),
        })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the store may watch its root for changes (the default: yes,
    /// from its second listing on, where the system can; see
    /// [`is_watching`](Self::is_watching)). Without watching every listing
    /// walks the root and `lstat`s each log (a log whose identity did not
    /// change is not opened again); a one-shot process, or a host that
    /// knows its file system misses notifications, turns it off. The
    /// setting is shared by the store's clones. `DSR_NO_WATCH=1` in the
    /// environment turns it off for every store.
    pub fn with_watching(self, enabled: bool) -> DshStore {
        self.listing_cache().set_watching(enabled);
        self
    }

    /// The store watching from its first listing on, not its second (where
    /// it may watch at all: [`with_watching`](Self::with_watching),
    /// `DSR_NO_WATCH` and the file system still decide). For a store kept
    /// for the life of a process (the Python and Node `DshSessionStore`, the
    /// C `dsr_resolver_new_dsh_store`, the MCP server): its first
    /// listing watches each directory before reading it, so the reads
    /// that follow it (a first filtered `candidates` reads every title)
    /// find each session's log in that listing while no event says
    /// otherwise, instead of looking for it under the root (a read of the
    /// root and an `lstat` in each project directory per read), and the
    /// second listing does not walk the root again. A process that lists
    /// once would only pay for the watches. Shared by the store's clones.
    pub fn watching_from_first_listing(self) -> DshStore {
        self.listing_cache().set_watching_early();
        self
    }

    /// Writes what the store learned of its root (each session directory's
    /// entries and each listed log's header, with the stamps they had when
    /// read) to `path`, so that a later process (the command line) lists
    /// without reading what did not change: one `lstat` per directory and
    /// per log instead of a directory read and a header read. Written
    /// through a temporary file renamed over `path` (its directory must
    /// exist). Never needed for correctness.
    pub fn save_listing_cache(&self, path: &Path) -> io::Result<()> {
        let mut payload = Vec::new();
        listing_cache_header(&mut payload, &self.root);
        let mut cache = self.listing_cache();
        cache.encode(&mut payload);
        let written = crate::cache_file::write_file(path, &payload);
        if written.is_ok() {
            cache.changed = false;
        }
        written
    }

    /// Loads a file written by [`save_listing_cache`](Self::save_listing_cache)
    /// for this root; returns whether it was used (`false` for a missing,
    /// truncated, corrupted, other-root or other-version file, ignored as a
    /// whole, or when the store has listed already). A directory's entries
    /// from the file are used only while its stamp (device, inode, size,
    /// mtime, ctime) is the one it had when it was read and it had not
    /// changed in the seconds before that read (timestamps are coarse); a
    /// header only while its log's stamp is the same. Everything else is
    /// read as usual, so listings are the same with or without the file.
    pub fn load_listing_cache(&self, path: &Path) -> bool {
        let Some(payload) = crate::cache_file::read_file(path) else { return false };
        let mut expected = Vec::new();
        listing_cache_header(&mut expected, &self.root);
        let Some(body) = payload.strip_prefix(expected.as_slice()) else { return false };
        let mut cache = self.listing_cache();
        let used = cache.decode(&mut crate::cache_file::Input(body));
        if used {
            cache.changed = false;
        }
        used
    }

    /// Whether the store read a session directory or a header since it was
    /// opened or its listing cache was last loaded or saved (so a process
    /// that found everything unchanged need not write the file again).
    pub fn listing_cache_changed(&self) -> bool {
        self.listing_cache().changed
    }

    /// What the last call that listed (through [`list`](Self::list),
    /// `list_sessions` or a resolver's query) found but did not list
    /// ([`Listing::rejected`]), reading nothing; `None` before the first
    /// listing or after a failed one.
    pub fn last_rejected(&self) -> Option<Vec<RejectedLog>> {
        self.listing_cache().last().map(|s| s.rejected.clone())
    }

    /// How many sessions the last call that listed listed, reading
    /// nothing; `None` before the first listing or after a failed one.
    pub fn last_listed(&self) -> Option<usize> {
        self.listing_cache().last().map(|s| s.sessions.len())
    }

    /// Whether the store watches its root now: a listing that finds no
    /// queued change then answers from the last one, reading nothing. On
    /// Linux, from the second listing on, unless turned off, the root is on
    /// a network or user-space file system (NFS, SMB, FUSE, …), or the
    /// kernel refused a watch (`fs.inotify.max_user_watches`).
    pub fn is_watching(&self) -> bool {
        self.listing_cache().is_watching()
    }

    /// Directories read, headers read, sessions put into listings, and
    /// directories looked at (each a directory whose outcome was worked
    /// out or whose log files were counted for the root's encoding) by
    /// this store so far: what listing cost (for tests and benchmarks).
    #[doc(hidden)]
    pub fn listing_work(&self) -> (u64, u64, u64, u64) {
        self.listing_cache().work()
    }

    /// Keeps `verdict`, given by a walk of the root that took `took`.
    fn remember_root_check(&self, verdict: Result<Option<Encoding>, StoreError>, took: Duration) {
        if let Ok(mut memo) = self.root_check.lock() {
            *memo = Some(RootCheck { at: Instant::now(), took, verdict });
        }
    }

    /// The verdict on a walk of the root: a root that mixes encodings is
    /// corrupt, a root that cannot be read an I/O failure.
    fn root_verdict(walked: &io::Result<Option<Encoding>>) -> Result<Option<Encoding>, StoreError> {
        match walked {
            Ok(encoding) => Ok(*encoding),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                Err(StoreError::new(StoreErrorKind::Corrupt, e.to_string()))
            }
            Err(e) => Err(StoreError::new(StoreErrorKind::Io, e.to_string())),
        }
    }

    /// The root's encoding by the rule listing applies, from a recent
    /// verdict or a fresh walk of the session directories.
    fn root_encoding(&self) -> Result<Option<Encoding>, StoreError> {
        if let Some(snapshot) = self.watched_snapshot() {
            return Ok(snapshot.encoding);
        }
        let recent = self.root_check.lock().ok().and_then(|m| m.clone()).filter(RootCheck::is_recent);
        if let Some(check) = recent {
            return check.verdict;
        }
        let walk = Instant::now();
        let verdict = Self::root_verdict(&check_root_encoding(&self.root));
        self.remember_root_check(verdict.clone(), walk.elapsed());
        verdict
    }

    /// Lists the sessions of the root, reading only the header of each
    /// session's log (its highest generation).
    ///
    /// Fails only when the root itself cannot be read or holds both plain
    /// and compressed logs (DSH refuses such a root); every per-log problem
    /// is reported in [`Listing::rejected`].
    pub fn list(&self) -> io::Result<Listing> {
        self.snapshot().map(|s| s.to_listing())
    }

    /// The listing as of now (see `listing.rs`: only what changed since the
    /// last one is read again), renewing the verdict on the root.
    fn snapshot(&self) -> io::Result<Arc<Snapshot>> {
        let walk = Instant::now();
        let refreshed = self.listing_cache().refresh(&self.root);
        let verdict = Self::root_verdict(&refreshed.as_ref().map(|s| s.encoding).map_err(copy_error));
        self.remember_root_check(verdict, walk.elapsed());
        refreshed
    }

    fn listing_cache(&self) -> std::sync::MutexGuard<'_, ListingCache> {
        self.listing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The last listing if a watcher vouches that nothing changed since.
    fn watched_snapshot(&self) -> Option<Arc<Snapshot>> {
        self.listing_cache().current_if_watched()
    }

    /// Finds the log of `id` by the rules of listing: under a root of one
    /// encoding, the first session directory, in path order, whose selected
    /// log has a valid header naming this id and that path.
    ///
    /// Without a watcher, the directory the last listing found it in is
    /// read again first (its log selected again and its header checked,
    /// as the walk does for each directory): only when it no longer holds
    /// the session is every project directory walked: walking for every
    /// read (a directory listing and a `stat` per project) takes a tenth
    /// of the CPU time of indexing a root of 10,000 sessions in 20
    /// projects, reading the one directory again about half of that.
    /// A duplicate of the id made since in an earlier directory is seen
    /// from the next listing on, as the listing itself sees it.
    fn locate(&self, id: &str) -> Result<Found, StoreError> {
        if let Some(listed) = self.watched_snapshot().and_then(|s| s.get(id).map(|l| l.found.clone())) {
            return Ok(listed);
        }
        let encoding = self.root_encoding()?;
        let holds = |found: &Found| {
            let header = read_log_header(&found.path, found.encoding, found.generation, &mut None);
            header.and_then(|h| path_matches(found, &h).map(|()| h)).map(|h| h.id == id)
        };
        let last = self.listing_cache().last();
        if let Some(Some(Ok(found))) = last.as_ref().and_then(|s| s.get(id)).map(|l| again_at(&l.found, encoding)) {
            if matches!(holds(&found), Ok(true)) {
                return Ok(found);
            }
        }
        let io_err = |e: io::Error| StoreError::new(StoreErrorKind::Io, format!("cannot read DSH sessions root: {e}"));
        let mut last_reason = None;
        for candidate in candidates_for(&self.root, id, encoding).map_err(io_err)? {
            let found = match candidate {
                Ok(found) => found,
                Err(r) => {
                    last_reason = Some(format!("{}: {}", r.path.display(), r.reason));
                    continue;
                }
            };
            match holds(&found) {
                Ok(true) => return Ok(found),
                Ok(false) => {}
                Err(e) => last_reason = Some(format!("{}: {}", found.path.display(), e.message())),
            }
        }
        let mut message = format!("no session {} in {}", crate::json::js_string(id), self.root.display());
        if let Some(reason) = last_reason {
            message.push_str(&format!(" (a log was rejected: {reason})"));
        }
        Err(StoreError::new(StoreErrorKind::NotFound, message))
    }

    /// The latest title of a session (`data.title` of its last
    /// `session/title` event). Validates the whole log, so a damaged
    /// session fails here as its surface read does; a log that only grew
    /// since the last title read of it is read from where that read
    /// stopped (see "Resumed reads" in the module docs).
    pub fn read_title(&self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(self.inspect(id)?.title)
    }

    /// The surface snapshot of a session as JSON text:
    /// `{"session":<header without type>,"capturedThroughSeq":N|null,"events":[...]}`,
    /// where each event is the log's own line, byte for byte (packed chunk
    /// rows and recovery closers are never surface events).
    pub fn read_surface_json(&self, id: &str) -> Result<Vec<u8>, StoreError> {
        self.surface_json(id, Keep::Surface)
    }

    /// [`read_surface_json`](Self::read_surface_json) with only the events
    /// projection may not drop unread (`projection::may_project`): it
    /// projects exactly as the whole surface does, and a log of tool output
    /// is read holding its messages only.
    pub fn read_visible_surface_json(&self, id: &str) -> Result<Vec<u8>, StoreError> {
        self.surface_json(id, Keep::Visible)
    }

    fn surface_json(&self, id: &str, keep: Keep) -> Result<Vec<u8>, StoreError> {
        let found = self.locate(id)?;
        let loaded = load(&found, id, keep)?;
        let prefix = surface_prefix(&loaded.header_json, &loaded.stats);
        Ok(loaded.lines.into_joined(&prefix, &loaded.stats.surface_seqs, b"]}"))
    }

    /// [`read_visible_surface_json`](Self::read_visible_surface_json) for a
    /// reference retained under `budget` bytes: without the oldest messages
    /// retention certainly drops under it (`retention::certainly_dropped`),
    /// which are returned counted; it retains exactly as the whole surface.
    /// The log is read twice from one open file, the first time keeping
    /// where the messages are, not their text, the second reading only the
    /// messages kept; if those are not the bytes the first pass read (the
    /// log was rewritten meanwhile), the log is read whole again, once.
    /// So a log of conversation is read holding what the budget keeps.
    pub fn read_visible_surface_within(&self, id: &str, budget: u64) -> Result<(Vec<u8>, Elided), StoreError> {
        let found = self.locate(id)?;
        let Some(loaded) = load_within(&found, id, budget)? else {
            return self.read_visible_surface_json(id).map(|json| (json, Elided::default()));
        };
        let prefix = surface_prefix(&loaded.header_json, &loaded.stats);
        let body: usize = loaded.lines.iter().map(|l| l.len() + 1).sum();
        let mut out = Vec::with_capacity(prefix.len() + body + 2);
        out.extend_from_slice(&prefix);
        for (i, line) in loaded.lines.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(line);
        }
        out.extend_from_slice(b"]}");
        Ok((out, loaded.elided))
    }

    /// The items of the visible surface of a session, read one at a time
    /// (as the search index reads them): the log is read once keeping
    /// where each visible line is (as `read_visible_surface_within` does), then each pass
    /// over the items reads those lines again from the same open file,
    /// checked (length and checksum), and projects each on its own
    /// (`projection::project_event`, what projecting the snapshot does to
    /// each event). A pass that finds a line changed, or a projection that
    /// fails, is an error: the caller reads the surface whole instead.
    pub fn visible_items(&self, id: &str) -> Result<VisibleItems, StoreError> {
        let found = self.locate(id)?;
        let loaded = load::load_stubs(&found, id)?;
        // The snapshot's own fields project (or fail) as in the whole one.
        let mut empty = surface_prefix(&loaded.header_json, &loaded.stats);
        empty.extend_from_slice(b"]}");
        let header = crate::projection::project_json(&empty).map(drop);
        let LoadedStubs { stubs, again, file_bytes, stats, .. } = loaded;
        Ok(VisibleItems { found, stubs, again, file_bytes, header, title: stats.title })
    }

    /// Reads a session's whole log and reports what was kept: line and
    /// event counts, packed rows, frames, the torn tail, recovery closers,
    /// the title and the surface seqs. Resumed like
    /// [`read_title`](Self::read_title), with the same result as a read
    /// from the start.
    pub fn inspect(&self, id: &str) -> Result<LogStats, StoreError> {
        let found = self.locate(id)?;
        resume::read_stats(&self.resume, &found, id)
    }

    /// The identity of the log a read of `id` would read now.
    pub fn log_identity(&self, id: &str) -> Result<FileIdentity, StoreError> {
        let found = self.locate(id)?;
        open_regular(&found.path)
            .map(|(_, identity)| identity)
            .map_err(|e| StoreError::new(StoreErrorKind::Io, format!("cannot open {}: {e}", found.path.display())))
    }
}

impl BlockingSessionQuery for DshStore {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        self.snapshot().map(|s| s.headers()).map_err(|e| HostError::new(e.to_string()))
    }

    /// Each session's fingerprint is the identity (device, inode, size,
    /// mtime) of its log as of now: from the last listing when a watcher
    /// vouches that nothing changed since, else from an `lstat` of the log
    /// that listing found (a log that is not listed: the one a read would
    /// read now). A log that was appended to, truncated, replaced or
    /// superseded by a newer generation gets a new one; a session that
    /// cannot be found has none.
    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        let watched = self.watched_snapshot();
        let last = watched.clone().or_else(|| self.listing_cache().last());
        let unlisted = |id: &String| self.log_identity(id).ok();
        let identities: Vec<Option<FileIdentity>> = match &last {
            Some(snapshot) => snapshot
                .lookup(session_ids)
                .zip(session_ids)
                .map(|(listed, id)| match (listed, &watched) {
                    (Some(l), Some(_)) => Some(l.stamp.id),
                    (Some(l), None) => crate::fs::Stamp::lstat(&l.found.path).map(|s| s.id),
                    (None, _) => unlisted(id),
                })
                .collect(),
            None => session_ids.iter().map(unlisted).collect(),
        };
        Ok(Some(identities.into_iter().map(|i| i.map(Fingerprint::from)).collect()))
    }

    /// The listing as `list_sessions` gives it, with the fingerprints that
    /// listing saw (each log's identity when it was listed: an unwatched
    /// listing `lstat`s every log, a watched one vouches for the identities
    /// it holds), shared while nothing changes.
    fn shared_listing(&self) -> Result<Option<SharedListing>, HostError> {
        self.snapshot().map(|s| Some(s.shared())).map_err(|e| HostError::new(e.to_string()))
    }

    fn read_title(&self, session_id: &str) -> Result<Option<String>, HostError> {
        DshStore::read_title(self, session_id).map_err(HostError::from)
    }

    fn read_surface(&self, session_id: &str) -> Result<SurfaceData, HostError> {
        self.read_surface_json(session_id).map(SurfaceData::json).map_err(HostError::from)
    }

    /// For projection, the surface without the events projection drops
    /// unread (tool results, system notes): most of a log, never needed to
    /// project it. Under a budget, that surface without the messages
    /// retention certainly drops, read holding only the messages it keeps
    /// ([`DshStore::read_visible_surface_within`]). For the index, its items
    /// streamed ([`DshStore::visible_items`]) with the title the same read
    /// learned, or that surface whole for a zstd log whose surface is far
    /// from log order.
    fn read_surface_as(&self, session_id: &str, read: SurfaceRead) -> Result<SurfaceAnswer, HostError> {
        let visible = || self.read_visible_surface_json(session_id).map(SurfaceData::json).map_err(HostError::from);
        match read {
            SurfaceRead::Whole => BlockingSessionQuery::read_surface(self, session_id).map(SurfaceAnswer::whole),
            SurfaceRead::Within(budget) => {
                let (json, elided) = self.read_visible_surface_within(session_id, budget).map_err(HostError::from)?;
                Ok(SurfaceAnswer::within(BudgetedSurface { data: SurfaceData::json(json), elided }))
            }
            SurfaceRead::Items => {
                let mut items = self.visible_items(session_id).map_err(HostError::from)?;
                match items.streams() {
                    // The title the read learned: the log is read once.
                    true => {
                        let title = items.title.take();
                        Ok(SurfaceAnswer::items(SurfaceItems::Streamed(Box::new(items))).with_title(title))
                    }
                    false => visible().map(SurfaceAnswer::whole),
                }
            }
            _ => visible().map(SurfaceAnswer::whole),
        }
    }
}

impl FileSource for DshStore {
    const FORMAT: &'static str = "DSH";

    fn root(&self) -> &Path {
        &self.root
    }

    fn identity(&self, session_id: &str) -> Result<FileIdentity, HostError> {
        self.log_identity(session_id).map_err(HostError::from)
    }
}

/// The most runs of lines in log order a zstd log's visible surface is
/// read in when streamed (each decompresses the log again from its start);
/// past it the surface is read whole.
const MAX_ZSTD_RUNS: usize = 4;

/// The items of a session's visible surface, read again from its log on
/// each pass ([`DshStore::visible_items`]).
pub struct VisibleItems {
    found: Found,
    /// Where the visible lines are, in surface order (their floors and the
    /// log's surface seqs are not kept).
    stubs: Vec<kept::LineStub>,
    /// A handle of the log read, and its length then.
    again: std::fs::File,
    file_bytes: u64,
    /// Whether the snapshot's own fields project.
    header: Result<(), String>,
    /// The latest title, read on the way (as [`DshStore::read_title`] gives it).
    title: Option<String>,
}

impl VisibleItems {
    /// Whether streaming the items pays: a zstd log whose surface is in
    /// more than [`MAX_ZSTD_RUNS`] runs of lines in log order is read
    /// whole instead.
    fn streams(&self) -> bool {
        let runs = || self.stubs.chunk_by(|a, b| a.at < b.at).count();
        self.found.encoding == Encoding::Raw || runs() <= MAX_ZSTD_RUNS
    }

    /// Calls `f` with each line of the stubs in surface order, read again
    /// and checked: `None` when one changed or `f` stops.
    fn each_line(&self, mut f: impl FnMut(&[u8]) -> Option<()>) -> Result<Option<()>, StoreError> {
        let (stubs, again, file_bytes) = (&self.stubs, &self.again, &self.file_bytes);
        let reopen = || again.try_clone().map_err(|e| StoreError::new(StoreErrorKind::Io, e.to_string()));
        // Surface order may differ from the log's (an event replaced in
        // place): each run of lines in log order is read from where it
        // starts (a plain log from its first line, a zstd log decompressed
        // again from its start, so at most a few such runs are streamed).
        for run in stubs.chunk_by(|a, b| a.at < b.at) {
            if load::lines_again(&self.found, reopen()?, *file_bytes, run, &mut f)?.is_none() {
                return Ok(None);
            }
        }
        Ok(Some(()))
    }
}

impl StreamedItems for VisibleItems {
    fn each_item(&mut self, f: &mut dyn FnMut(&Item<'_>) -> ControlFlow<()>) -> Result<ControlFlow<()>, HostError> {
        self.header.clone().map_err(HostError::new)?;
        let (mut flow, mut failed) = (ControlFlow::Continue(()), None);
        let read = self.each_line(|line| match crate::projection::project_event(line) {
            Ok(Some(item)) => {
                flow = f(&item);
                flow.is_continue().then_some(())
            }
            // Never: a stub is of a line that projects to an item or fails.
            Ok(None) => Some(()),
            Err(e) => {
                failed = Some(e);
                None
            }
        })?;
        if let Some(e) = failed {
            return Err(HostError::new(format!("malformed surface snapshot: {e}")));
        }
        match read {
            Some(()) => Ok(ControlFlow::Continue(())),
            None if flow.is_break() => Ok(ControlFlow::Break(())),
            None => Err(HostError::new(format!("{} changed while it was read", self.found.path.display()))),
        }
    }
}

/// `{"session":…,"capturedThroughSeq":…,"events":[`: a surface snapshot
/// up to its events.
fn surface_prefix(header_json: &Map<String, Value>, stats: &LogStats) -> Vec<u8> {
    let session = serde_json::to_vec(header_json).expect("a JSON map serializes");
    let mut prefix = Vec::with_capacity(session.len() + 64);
    prefix.extend_from_slice(b"{\"session\":");
    prefix.extend_from_slice(&session);
    prefix.extend_from_slice(b",\"capturedThroughSeq\":");
    match stats.captured_through_seq {
        Some(n) => prefix.extend_from_slice(n.to_string().as_bytes()),
        None => prefix.extend_from_slice(b"null"),
    }
    prefix.extend_from_slice(b",\"events\":[");
    prefix
}

/// The header of a listing cache file: what it is, its layout, the library
/// version and the root it describes.
fn listing_cache_header(out: &mut Vec<u8>, root: &Path) {
    crate::cache_file::header(out, b"DSRLIST\0", 1);
    crate::cache_file::put(out, root.as_os_str().as_encoded_bytes());
}

/// As a [`SessionQuery`] the store runs each read on tokio's blocking pool
/// through [`Blocking`], the one adapter for blocking queries.
impl SessionQuery for DshStore {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        let blocking = Blocking::new(self.clone());
        Box::pin(async move { SessionQuery::list_sessions(&blocking).await })
    }

    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        let blocking = Blocking::new(self.clone());
        Box::pin(async move { SessionQuery::read_title(&blocking, session_id).await })
    }

    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        let blocking = Blocking::new(self.clone());
        Box::pin(async move { SessionQuery::read_surface(&blocking, session_id).await })
    }

    fn read_surface_as<'a>(&'a self, session_id: &'a str, read: SurfaceRead) -> QueryFuture<'a, SurfaceAnswer> {
        let blocking = Blocking::new(self.clone());
        Box::pin(async move { SessionQuery::read_surface_as(&blocking, session_id, read).await })
    }

    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        let blocking = Blocking::new(self.clone());
        Box::pin(async move { SessionQuery::fingerprints(&blocking, session_ids).await })
    }

    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        let blocking = Blocking::new(self.clone());
        Box::pin(async move { SessionQuery::shared_listing(&blocking).await })
    }
}

#[cfg(test)]
mod root_check_tests {
    use super::*;

    fn check(age: Duration, took: Duration) -> RootCheck {
        let at = Instant::now().checked_sub(age).expect("an instant that long ago");
        RootCheck { at, took, verdict: Ok(None) }
    }

    /// A verdict is reused for two seconds, or for ten times as long as its
    /// walk took: the walks of a root of many sessions take a tenth of the
    /// time of reads one after another, not most of it.
    #[test]
    fn a_verdict_lasts_two_seconds_or_ten_times_its_walk() {
        let ms = Duration::from_millis;
        assert!(check(ms(1_500), ms(5)).is_recent());
        assert!(!check(ms(2_500), ms(5)).is_recent());
        assert!(!check(ms(2_500), ms(200)).is_recent());
        assert!(check(ms(2_500), ms(300)).is_recent());
        assert!(check(ms(9_000), ms(1_000)).is_recent());
        assert!(!check(ms(11_000), ms(1_000)).is_recent());
    }
}
