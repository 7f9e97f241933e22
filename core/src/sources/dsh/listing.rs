//! The store's listing, kept between calls: what each session directory
//! held and each log's header, so that a listing re-reads only what changed.
//!
//! - Without notifications (the first listing of a store, systems without
//!   inotify, remote file systems, `DSR_NO_WATCH`): every listing walks the
//!   root and reads every session directory, as the rules of `discover.rs`
//!   say, but a log whose identity (device, inode, size, mtime: one `lstat`)
//!   is the one its header was read under is not opened again.
//! - With notifications (from the second listing on, see
//!   [`DirWatcher`]): the root, the project directories and the session
//!   directories are watched, each before it is read. A listing drains the
//!   queued events first: none, and the last listing is the answer; events
//!   in session directories, and only those directories are read again;
//!   events in the root or a project directory (a session created, removed
//!   or renamed), and the walk is redone, reusing every session directory
//!   that had no event; an overflow, and everything is read again.
//!
//! Either way the answer is the one a fresh walk would give, rejections in
//! the same order.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Number, Value};

use super::discover::{path_matches, read_dirs, root_encoding, walk, Found, SessionDir, Step};
use super::generation::Generation;
use super::header::{read_log_header_at, Header};
use super::layout::Encoding;
use super::{Listing, RejectedLog, RejectionKind, StoredSession};
use crate::fs::{par_map, Stamp, StatUnder};
use crate::host::Fingerprint;
use crate::host::{SessionHeader, SharedListing};
use crate::sources::file_source::positions_in_order;
use crate::sources::watch::{drop_inherited, watching_allowed, Changes, DirWatcher};

/// One listed session of a [`Snapshot`].
#[derive(Debug)]
pub(crate) struct Listed {
    /// `{id, createdAt, cwd}` as the resolver sees it.
    pub header: SessionHeader,
    /// The header line without `type`.
    json: HeaderJson,
    /// Where its log was found.
    pub found: Found,
    /// The log's stamp when its header was read (or last found unchanged).
    pub stamp: Stamp,
}

/// A listed log's header line without `type`: parsed when read from the
/// log, kept as text when it came from a listing cache file (parsed when
/// first needed: a command that only ranks sessions never needs it).
#[derive(Debug)]
enum HeaderJson {
    Parsed(Map<String, Value>),
    Text(Box<[u8]>, OnceLock<Map<String, Value>>),
}

impl Listed {
    /// The header line without `type`, key order kept.
    pub(crate) fn header_json(&self) -> &Map<String, Value> {
        match &self.json {
            HeaderJson::Parsed(map) => map,
            // The text was checked to be a JSON object when the cache file
            // was read, so it parses.
            HeaderJson::Text(text, parsed) => parsed.get_or_init(|| serde_json::from_slice(text).unwrap_or_default()),
        }
    }

    /// The header line's text, as a listing cache file keeps it.
    fn header_json_text(&self) -> Vec<u8> {
        match &self.json {
            HeaderJson::Parsed(map) => serde_json::to_vec(map).unwrap_or_default(),
            HeaderJson::Text(text, _) => text.to_vec(),
        }
    }

    /// The session as the store's public [`Listing`] gives it.
    pub(crate) fn session(&self) -> StoredSession {
        StoredSession {
            header: self.header.clone(),
            header_json: self.header_json().clone(),
            path: self.found.path.clone(),
            encoding: self.found.encoding,
            generation: self.found.generation.number(),
            superseded: self.found.superseded.clone(),
        }
    }
}

/// Whether `text` is one JSON object (what a cache file's header text must
/// be), checked without building it.
fn is_json_object(text: &[u8]) -> bool {
    text.first() == Some(&b'{') && serde_json::from_slice::<serde::de::IgnoredAny>(text).is_ok()
}

/// A listing as of its refresh.
#[derive(Debug)]
pub(crate) struct Snapshot {
    /// Newest `createdAt` first, equal `createdAt` by id.
    pub sessions: Vec<Arc<Listed>>,
    pub rejected: Vec<RejectedLog>,
    pub encoding: Option<Encoding>,
    /// Each session's position, made when first needed and carried into
    /// the next listing while the sessions and their order stay the same.
    by_id: OnceLock<Arc<HashedPositions>>,
    /// The headers and fingerprints as one shared listing, made once.
    shared: OnceLock<SharedListing>,
}

impl Snapshot {
    /// The listing as the store's public [`Listing`].
    pub(crate) fn to_listing(&self) -> Listing {
        Listing { sessions: self.sessions.iter().map(|l| l.session()).collect(), rejected: self.rejected.clone() }
    }

    /// The listed sessions' headers, in listing order.
    pub(crate) fn headers(&self) -> Vec<SessionHeader> {
        self.sessions.iter().map(|l| l.header.clone()).collect()
    }

    /// The headers and each log's fingerprint (its stamp's identity, as
    /// of this listing), made on first use and shared by every caller.
    pub(crate) fn shared(&self) -> SharedListing {
        self.shared
            .get_or_init(|| {
                let fps: Arc<[Option<Fingerprint>]> =
                    self.sessions.iter().map(|l| Some(Fingerprint::from(l.stamp.id))).collect();
                SharedListing::new(self.headers().into(), fps).expect("one fingerprint per session")
            })
            .clone()
    }

    /// The listed session `id`.
    pub(crate) fn get(&self, id: &str) -> Option<&Listed> {
        self.position(id).map(|i| &*self.sessions[i])
    }

    fn position(&self, id: &str) -> Option<usize> {
        let id_at = |i: usize| self.sessions.get(i).map(|l| l.header.id.as_bytes());
        self.ids().find(id.as_bytes(), id_at)
    }

    /// Each session's position by its id, made now if not yet (a watched
    /// listing makes it with the listing: its first change then costs
    /// what changed).
    fn ids(&self) -> &HashedPositions {
        self.by_id
            .get_or_init(|| Arc::new(HashedPositions::new(self.sessions.iter().map(|l| Some(l.header.id.as_bytes())))))
    }

    /// The listed session of each of `ids` (same order; see
    /// [`positions_in_order`]).
    pub(crate) fn lookup<'a>(&'a self, ids: &'a [String]) -> impl Iterator<Item = Option<&'a Listed>> + 'a {
        let id_at = |i: usize| self.sessions[i].header.id.as_str();
        positions_in_order(self.sessions.len(), id_at, ids, |id| self.position(id))
            .map(|i| i.map(|i| &*self.sessions[i]))
    }
}

/// What one session directory gave under the root's encoding.
#[derive(Clone, Debug)]
enum Outcome {
    /// Not a session directory (no canonical log name).
    NotASession,
    /// Its log could not be selected (a link, not a file, a newer generation).
    Unselected(RejectedLog),
    /// Its log's header was rejected.
    BadHeader(RejectedLog),
    Listed(Arc<Listed>),
}

/// A session directory as last read, and its outcome.
struct Dir {
    read: SessionDir,
    /// `None` until worked out under the current encoding.
    outcome: Option<Outcome>,
}

/// The last walk of the root: rejections at the root's level, the steps in
/// path order, and for each step that is a session directory its last read.
#[derive(Default)]
struct Walked {
    root_rejected: Vec<RejectedLog>,
    /// Empty when read from a cache file ([`ListingCache::decode`]): the
    /// listing after that walks the root, as every first listing does.
    steps: Vec<Step>,
    /// One per step (`None` for a failed step); the reads a cache file
    /// held, in walk order, when the steps are empty. (Boxed: a walk moves
    /// every read into a list of its own, so the list holds pointers.)
    dirs: Vec<Option<Box<Dir>>>,
    /// The step of each session directory, made when first needed (only
    /// a watcher's events name directories by path; a watched walk makes
    /// it at once). (Keyed by the path's bytes: hashing a `Path` walks its
    /// components.)
    index: OnceLock<HashedPositions>,
}

impl Walked {
    /// The path of the session directory of step `i`.
    fn path_of(&self, i: usize) -> Option<&[u8]> {
        Some(self.steps.get(i)?.as_ref().ok()?.2.as_os_str().as_encoded_bytes())
    }

    /// The step of each session directory, made now if not yet.
    fn index(&self) -> &HashedPositions {
        self.index.get_or_init(|| HashedPositions::new((0..self.steps.len()).map(|i| self.path_of(i))))
    }

    /// The step of the session directory at `path`.
    fn step_of(&self, path: &Path) -> Option<usize> {
        self.index().find(path.as_os_str().as_encoded_bytes(), |i| self.path_of(i))
    }

    /// Takes out the read of each session directory of `steps` that this
    /// walk holds (`None` for the others), matched by project and session
    /// name: both walks list them in the same order (names in byte order),
    /// so one merge pass matches them all. (A read out of that order, from
    /// a cache file, is not matched: that directory is read again.)
    fn take_reads(&mut self, steps: &[Step]) -> Vec<Option<Box<Dir>>> {
        use std::cmp::Ordering;
        let mut old = self.dirs.iter_mut().filter(|d| d.is_some()).peekable();
        steps
            .iter()
            .map(|step| {
                let (project, session, path) = step.as_ref().ok()?;
                let key = (project.as_encoded_bytes(), session.as_encoded_bytes());
                while let Some(Some(dir)) = old.peek() {
                    let (p, s) = dir.read.names();
                    match (p.as_encoded_bytes(), s.as_encoded_bytes()).cmp(&key) {
                        Ordering::Less => drop(old.next()),
                        Ordering::Equal if dir.read.path() == path => return old.next().and_then(Option::take),
                        Ordering::Equal | Ordering::Greater => return None,
                    }
                }
                None
            })
            .collect()
    }
}

/// The state kept between listings of one store.
#[derive(Default)]
pub(crate) struct ListingCache {
    /// Listings made so far (watching begins with the second, or with the
    /// first when `early`).
    listings: u64,
    /// Watch from the first listing on ([`set_watching_early`](Self::set_watching_early)).
    early: bool,
    watcher: Option<DirWatcher>,
    /// Watching is not possible or not wanted for this root.
    no_watch: bool,
    walked: Option<Walked>,
    encoding: Option<Option<Encoding>>,
    current: Option<Arc<Snapshot>>,
    /// Changes drained by [`current_if_watched`](Self::current_if_watched)
    /// and not yet read.
    pending: Option<Changes>,
    /// Whether a directory or a header was read since the cache was
    /// created, loaded or saved.
    pub(crate) changed: bool,
    /// Directory and header reads so far (for tests).
    reads: (u64, u64),
    /// Sessions put into listings so far: all of a listing put together
    /// afresh, the changed ones of a patched one (for tests).
    assembled: u64,
    /// Whether the last listing was put together to its end: every
    /// directory of the walk read and worked out, and [`encodings`](Self::encodings)
    /// counted. A watched change then reads and works out its
    /// directories only, without a pass over the others.
    settled: bool,
    /// Of the directories read, how many hold a plain log file and how
    /// many a compressed one (what decides the root's encoding).
    encodings: EncodingCounts,
    /// Directories looked at so far: outcomes worked out, log files
    /// counted for the root's encoding (for tests).
    looked_at: u64,
}

/// Of session directories, how many hold a plain log file (`[0]`) and how
/// many a compressed one (`[1]`).
type EncodingCounts = [usize; 2];

/// Counts the encodings of `dir`'s files into `counts`, or (`-`) out.
fn count_encodings(counts: &mut EncodingCounts, dir: &SessionDir, add: bool) {
    let bits = dir.file_encodings();
    for (at, count) in counts.iter_mut().enumerate() {
        if bits & (1 << at) != 0 {
            *count = if add { *count + 1 } else { count.saturating_sub(1) };
        }
    }
}

impl ListingCache {
    /// The listing of `root` as of now.
    pub(crate) fn refresh(&mut self, root: &Path) -> io::Result<Arc<Snapshot>> {
        drop_inherited(&mut self.watcher);
        let drained = match (&mut self.watcher, &self.current) {
            (Some(watcher), Some(_)) => watcher.drain(),
            _ => Changes::Everything,
        };
        let mut changes = match self.pending.take() {
            Some(pending) => pending.merge(drained),
            None => drained,
        };
        if let (Changes::Nothing, Some(current)) = (&changes, &self.current) {
            return Ok(current.clone());
        }
        self.listings += 1;
        if self.watcher.is_none() && !self.no_watch && (self.early || self.listings >= 2) {
            match DirWatcher::new(root).filter(|_| watching_allowed()) {
                Some(watcher) => self.watcher = Some(watcher),
                None => self.no_watch = true,
            }
            changes = Changes::Everything;
        }
        let previous = self.current.take();
        let snapshot = match self.rebuild(root, changes, previous) {
            Ok(s) => s,
            Err(Refused) => {
                // The kernel refused a watch: list without watching from now on.
                self.watcher = None;
                self.no_watch = true;
                self.rebuild(root, Changes::Everything, None)
                    .map_err(|_| io::Error::other("watching was refused twice"))?
            }
        }?;
        if self.watcher.is_some() {
            // A change is patched into the listing by its session's
            // position: found from the first change on without a pass over
            // the listing.
            snapshot.ids();
        }
        let snapshot = Arc::new(snapshot);
        self.current = Some(snapshot.clone());
        Ok(snapshot)
    }

    /// Appends what a later process needs to list without reading
    /// unchanged directories and headers again: each session directory's
    /// read and stamp, and its listed log's stamp and header.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        use crate::cache_file::{put, put_opt, put_stamp};
        let Some(walked) = &self.walked else {
            out.extend_from_slice(&0u64.to_le_bytes());
            return;
        };
        let mut entries = Vec::new();
        let mut count = 0u64;
        for dir in walked.dirs.iter().flatten() {
            let mut entry = Vec::new();
            if !dir.read.encode(&mut entry) {
                continue;
            }
            match &dir.outcome {
                Some(Outcome::Listed(l)) if l.found.path.to_str().is_some() => {
                    entry.push(1);
                    let f = &l.found;
                    put(&mut entry, f.path.to_str().unwrap_or_default().as_bytes());
                    put_stamp(&mut entry, &l.stamp);
                    entry.push(match f.encoding {
                        Encoding::Raw => 1,
                        Encoding::Zstd => 2,
                    });
                    entry.extend_from_slice(&f.generation.number().to_le_bytes());
                    entry.extend_from_slice(&(f.superseded.len() as u64).to_le_bytes());
                    for g in &f.superseded {
                        entry.extend_from_slice(&g.to_le_bytes());
                    }
                    put(&mut entry, l.header.id.as_bytes());
                    entry.extend_from_slice(&l.header.created_at.as_u64().unwrap_or(0).to_le_bytes());
                    put_opt(&mut entry, l.header.cwd.as_deref().map(str::as_bytes));
                    put(&mut entry, &l.header_json_text());
                }
                _ => entry.push(0),
            }
            entries.extend_from_slice(&entry);
            count += 1;
        }
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(&entries);
    }

    /// Reads what [`encode`](Self::encode) wrote, all or nothing, as the
    /// reads of a previous walk: the next listing walks the root and uses
    /// a directory's read only if its stamp is still the same, a header
    /// only if its log's stamp is (see `discover.rs`). Whether it was used.
    pub(crate) fn decode(&mut self, input: &mut crate::cache_file::Input<'_>) -> bool {
        if self.walked.is_some() {
            return false;
        }
        let decoded = (|| {
            let n = input.u64()?;
            // Room for what the input can hold (an entry takes more than
            // 64 bytes), not for what a corrupted count says.
            let room = usize::try_from(n).unwrap_or(usize::MAX).min(input.0.len() / 64);
            let mut walked = Walked { dirs: Vec::with_capacity(room), ..Walked::default() };
            for _ in 0..n {
                let read = SessionDir::decode(input)?;
                let outcome = match input.take(1)?[0] {
                    0 => None,
                    1 => {
                        let path = PathBuf::from(input.string()?);
                        let stamp = input.stamp()?;
                        let encoding = match input.take(1)?[0] {
                            1 => Encoding::Raw,
                            2 => Encoding::Zstd,
                            _ => return None,
                        };
                        let generation = Generation::new(input.u64()?)?;
                        let mut superseded = Vec::new();
                        for _ in 0..input.u64()? {
                            superseded.push(input.u64()?);
                        }
                        let id = input.string()?;
                        let created_at = input.u64()?;
                        let cwd = input.opt_string()?;
                        let json = input.bytes()?;
                        if !is_json_object(json) {
                            return None;
                        }
                        let json = HeaderJson::Text(json.into(), OnceLock::new());
                        let (project, session) = read.names();
                        let found = Found {
                            project: project.clone(),
                            session: session.clone(),
                            path,
                            encoding,
                            generation,
                            superseded,
                        };
                        // What the directory's read selects, as a listing
                        // relies on (it does not select again a log of a
                        // directory whose read still holds).
                        if !read.selects(&found) {
                            return None;
                        }
                        let header = SessionHeader { id, created_at: Number::from(created_at), cwd };
                        Some(Outcome::Listed(Arc::new(Listed { header, json, found, stamp })))
                    }
                    _ => return None,
                };
                walked.dirs.push(Some(Box::new(Dir { read, outcome })));
            }
            Some(walked)
        })();
        let Some(walked) = decoded else { return false };
        if !input.0.is_empty() {
            return false;
        }
        self.walked = Some(walked);
        self.encoding = None;
        self.current = None;
        true
    }

    /// Allows or stops watching (stopping drops the watches).
    pub(crate) fn set_watching(&mut self, enabled: bool) {
        self.no_watch = !enabled;
        if !enabled {
            self.watcher = None;
        }
    }

    /// Watches from the first listing on rather than the second (where
    /// watching is allowed at all).
    pub(crate) fn set_watching_early(&mut self) {
        self.early = true;
    }

    /// Directories read, headers read and sessions put into listings so
    /// far (what listing cost, for tests).
    pub(crate) fn work(&self) -> (u64, u64, u64, u64) {
        (self.reads.0, self.reads.1, self.assembled, self.looked_at)
    }

    /// Whether a watcher is active.
    pub(crate) fn is_watching(&self) -> bool {
        self.watcher.is_some()
    }

    /// The last listing made, current or not.
    pub(crate) fn last(&self) -> Option<Arc<Snapshot>> {
        self.current.clone()
    }

    /// The last listing, if a watcher vouches that it is still current
    /// (drains the queued events; `None` when anything changed or nothing
    /// is watched).
    pub(crate) fn current_if_watched(&mut self) -> Option<Arc<Snapshot>> {
        drop_inherited(&mut self.watcher);
        let watcher = self.watcher.as_mut()?;
        let current = self.current.clone()?;
        match watcher.drain() {
            Changes::Nothing => Some(current),
            changes => {
                // Kept for the next refresh, which re-reads what changed.
                self.pending = Some(self.pending.take().unwrap_or_default().merge(changes));
                None
            }
        }
    }

    fn rebuild(
        &mut self,
        root: &Path,
        changes: Changes,
        previous: Option<Arc<Snapshot>>,
    ) -> Result<io::Result<Snapshot>, Refused> {
        let (everything, dirty) = match changes {
            Changes::Everything | Changes::Nothing => (true, Vec::new()),
            Changes::Dirs(dirs) => (false, dirs),
        };
        let settled = std::mem::replace(&mut self.settled, false);
        // Without a watcher nothing is known to be unchanged: every session
        // directory is read again (a log's header is still reused when its
        // identity is the same).
        let reread_all = everything || self.watcher.is_none();
        // (After a cache file was read, the root is walked: its reads are
        // not steps of a walk yet.)
        let structural = reread_all
            || self.walked.as_ref().is_none_or(|w| w.steps.len() != w.dirs.len())
            || dirty.iter().any(|d| d == root || d.parent() == Some(root));
        if structural {
            let mut root_rejected = Vec::new();
            let mut refused = false;
            let watcher = &mut self.watcher;
            let walked = walk(
                root,
                &mut |dir| {
                    if let Some(w) = watcher.as_mut() {
                        refused |= !w.watch(dir);
                    }
                },
                &mut root_rejected,
            );
            if refused {
                return Err(Refused);
            }
            let steps = match walked {
                Ok(steps) => steps,
                Err(e) => {
                    self.walked = None;
                    return Ok(Err(e));
                }
            };
            // Keep the reads of the session directories still there.
            let dirs = self.walked.take().unwrap_or_default().take_reads(&steps);
            let walked = Walked { root_rejected, steps, dirs, index: OnceLock::new() };
            if self.watcher.is_some() {
                // Events name directories by path: found by it from the
                // first change on without a pass over the walk.
                walked.index();
            }
            if let Some(w) = self.watcher.as_mut() {
                w.retain(|d| d == root || d.parent() == Some(root) || walked.step_of(d).is_some());
            }
            self.walked = Some(walked);
        }
        let walked = self.walked.as_mut().expect("walked above or before");
        let watched = self.watcher.is_some();
        // The session directories to read: with a watcher, those with
        // events (an event names the directory or an entry in it) and new
        // ones, or all after an overflow; without one, every directory whose
        // stamp says it may have changed since it was read.
        let mut to_read: Vec<usize> = Vec::new();
        let mut stamps: Vec<Option<Stamp>> = Vec::new();
        let mut fresh = vec![false; walked.steps.len()];
        // Without a watcher every directory and log is `lstat`ed, relative
        // to its project directory.
        let under = (!watched).then(|| {
            StatUnder::open(root, walked.steps.iter().filter_map(|s| s.as_ref().ok()).map(|(p, _, _)| p.as_os_str()))
        });
        if let Some(under) = &under {
            let all: Vec<usize> = (0..walked.steps.len()).filter(|&i| walked.steps[i].is_ok()).collect();
            let now = par_map(&all, |&i, _: &mut ()| {
                let (project, session, path) = walked.steps[i].as_ref().ok()?;
                under.lstat(project, Path::new(session), path)
            });
            for (i, stamp) in all.into_iter().zip(now) {
                fresh[i] = true;
                if !walked.dirs[i].as_ref().is_some_and(|d| d.read.holds_for(stamp)) {
                    to_read.push(i);
                    stamps.push(stamp);
                }
            }
        } else if reread_all {
            to_read.extend(walked.steps.iter().enumerate().filter(|(_, s)| s.is_ok()).map(|(i, _)| i));
        } else {
            for d in &dirty {
                for p in [Some(d.as_path()), d.parent()].into_iter().flatten() {
                    if let Some(i) = walked.step_of(p) {
                        to_read.push(i);
                    }
                }
            }
            // Directories never read (new in a walk; after a listing that
            // stopped short); a settled listing left none.
            if structural || !settled {
                to_read.extend(
                    walked
                        .steps
                        .iter()
                        .zip(&walked.dirs)
                        .enumerate()
                        .filter(|(_, (s, d))| s.is_ok() && d.is_none())
                        .map(|(i, _)| i),
                );
            }
            to_read.sort_unstable();
            to_read.dedup();
        }
        stamps.resize(to_read.len(), None);
        let reads: Vec<(&(_, _, PathBuf), Option<Stamp>)> =
            to_read.iter().zip(stamps).filter_map(|(&i, st)| Some((walked.steps[i].as_ref().ok()?, st))).collect();
        if let Some(w) = self.watcher.as_mut() {
            for ((_, _, path), _) in &reads {
                if !w.watch(path) {
                    return Err(Refused);
                }
            }
        }
        let read = read_dirs(&reads, !watched);
        self.changed |= !read.is_empty();
        self.reads.0 += read.len() as u64;
        let mut reread = vec![false; walked.steps.len()];
        // Only the reread directories' encodings are counted again when the
        // counts of a settled listing hold for the others.
        let mut counts = (!structural && settled).then_some(self.encodings);
        let touched = (watched && counts.is_some()).then(|| to_read.clone());
        for (i, dir) in to_read.into_iter().zip(read) {
            let old = walked.dirs[i].take();
            if let Some(counts) = counts.as_mut() {
                self.looked_at += 1;
                if let Some(old) = &old {
                    count_encodings(counts, &old.read, false);
                }
                count_encodings(counts, &dir, true);
            }
            walked.dirs[i] = Some(Box::new(Dir { read: dir, outcome: old.and_then(|d| d.outcome) }));
            fresh[i] = true;
            reread[i] = true;
        }
        let counts = counts.unwrap_or_else(|| {
            let mut counts = EncodingCounts::default();
            for dir in walked.dirs.iter().flatten() {
                count_encodings(&mut counts, &dir.read, true);
                self.looked_at += 1;
            }
            counts
        });
        let bits = counts.iter().enumerate().fold(0u8, |m, (at, &n)| if n > 0 { m | 1 << at } else { m });
        let encoding_changed;
        let encoding = match root_encoding(root, bits) {
            Ok(e) => {
                encoding_changed = self.encoding != Some(e);
                self.encoding = Some(e);
                e
            }
            Err(e) => return Ok(Err(e)),
        };
        // The last listing, patched when only logs it listed changed and
        // the walk was not redone.
        let previous = previous.filter(|_| !structural && !encoding_changed);
        // A watched change of a settled listing works out the directories
        // read again, not every directory.
        let only = touched.as_deref().filter(|_| !encoding_changed);
        let (snapshot, headers_read, assembled, looked_at) =
            assemble(walked, only, &fresh, &reread, encoding, encoding_changed, under.as_ref(), previous);
        self.looked_at += looked_at;
        self.encodings = counts;
        self.settled = true;
        self.assembled += assembled;
        self.changed |= headers_read > 0;
        self.reads.1 += headers_read;
        Ok(Ok(snapshot))
    }
}

/// Works out the outcome of every directory that needs one (`fresh`: read
/// now (`reread`) or `lstat`ed, or all when the root's encoding changed;
/// of `only`, when given: the directories read again, the others having
/// outcomes that hold) and puts the listing together (logs `lstat`ed through `under` when
/// given). Also returns how many headers were read, how many sessions
/// were put into the listing (only the changed ones when the last listing
/// was patched: see [`patch`]), and how many directories it looked at.
#[allow(clippy::too_many_arguments)]
fn assemble(
    walked: &mut Walked,
    only: Option<&[usize]>,
    fresh: &[bool],
    reread: &[bool],
    encoding: Option<Encoding>,
    encoding_changed: bool,
    under: Option<&StatUnder>,
    previous: Option<Arc<Snapshot>>,
) -> (Snapshot, u64, u64, u64) {
    // The log of each directory to look at: selected again, or (`None`)
    // the one it listed, when its read still holds and selects that log
    // under the root's encoding (a listed log is the read's selection under
    // the log's own encoding: see `decode`).
    let mut reads: Vec<DirRead> = Vec::new();
    // Whether every directory worked out again listed a session before
    // (what the last listing can be patched with).
    let mut all_listed = true;
    let count = walked.dirs.len();
    let positions: Box<dyn Iterator<Item = usize>> = match only {
        Some(only) => Box::new(only.iter().copied().filter(|&i| i < count)),
        None => Box::new(0..count),
    };
    let mut looked_at = 0;
    for i in positions {
        looked_at += 1;
        let Some(dir) = walked.dirs[i].as_mut() else { continue };
        if !(encoding_changed || fresh[i] || dir.outcome.is_none()) {
            continue;
        }
        let previous = match dir.outcome.take() {
            Some(Outcome::Listed(l)) => Some(l),
            _ => None,
        };
        all_listed &= previous.is_some();
        if let Some(l) = previous.as_ref().filter(|l| !reread[i] && Some(l.found.encoding) == encoding) {
            reads.push((i, None, Some(l.clone())));
            continue;
        }
        match dir.read.select(encoding) {
            None => dir.outcome = Some(Outcome::NotASession),
            Some(Err(r)) => dir.outcome = Some(Outcome::Unselected(r)),
            Some(Ok(found)) => reads.push((i, Some(found), previous)),
        }
    }
    // Headers: reused when the log's identity is the one they were read
    // under, else read (on several threads).
    let headers_read = std::sync::atomic::AtomicU64::new(0);
    let outcomes = par_map(&reads, |(_, found, previous), scratch| {
        let found = match (found, previous) {
            (Some(found), _) => found,
            (None, Some(previous)) => &previous.found,
            (None, None) => unreachable!("a log not selected again is a listed one"),
        };
        if let Some(previous) = previous {
            let now = match (under, found.path.file_name()) {
                (Some(under), Some(name)) => {
                    under.lstat(&found.project, &Path::new(&found.session).join(name), &found.path)
                }
                _ => Stamp::lstat(&found.path),
            };
            if previous.found == *found && now == Some(previous.stamp) {
                return Outcome::Listed(previous.clone());
            }
        }
        headers_read.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let read = read_log_header_at(&found.path, found.encoding, found.generation, scratch);
        let checked = read
            .and_then(|(identity, header)| Ok((identity, header.and_then(|h| path_matches(found, &h).map(|()| h))?)));
        match checked {
            Ok((identity, h)) => Outcome::Listed(Arc::new(listed(h, found.clone(), identity))),
            Err(e) => Outcome::BadHeader(RejectedLog {
                path: found.path.clone(),
                reason: e.message().to_owned(),
                kind: e.into(),
            }),
        }
    });
    let patched = match previous {
        Some(previous) if all_listed => patch(previous, &reads, &outcomes),
        _ => None,
    };
    for ((i, _, _), outcome) in reads.into_iter().zip(outcomes) {
        if let Some(dir) = walked.dirs[i].as_mut() {
            dir.outcome = Some(outcome);
        }
    }
    if let Some((snapshot, changed)) = patched {
        return (snapshot, headers_read.into_inner(), changed, looked_at);
    }
    // Rejections in the order a fresh walk gives them: the walk's and the
    // selection's in path order, then the headers' and duplicate ids in
    // path order.
    let mut rejected = walked.root_rejected.clone();
    let mut late = Vec::new();
    let mut sessions: Vec<Arc<Listed>> = Vec::with_capacity(walked.steps.len());
    let mut seen: HashMap<&str, &Path> = HashMap::with_capacity(walked.steps.len());
    for (step, dir) in walked.steps.iter().zip(&walked.dirs) {
        let outcome = match (step, dir) {
            (Err(r), _) => {
                rejected.push(r.clone());
                continue;
            }
            (Ok(_), Some(dir)) => dir.outcome.as_ref().expect("worked out above"),
            (Ok(_), None) => continue,
        };
        match outcome {
            Outcome::NotASession => {}
            Outcome::Unselected(r) => rejected.push(r.clone()),
            Outcome::BadHeader(r) => late.push(r.clone()),
            Outcome::Listed(l) => {
                let id = l.header.id.as_str();
                if let Some(first) = seen.get(id) {
                    late.push(RejectedLog {
                        path: l.found.path.clone(),
                        reason: format!("duplicate session id, already listed from {}", first.display()),
                        kind: RejectionKind::Invalid,
                    });
                    continue;
                }
                seen.insert(id, &l.found.path);
                sessions.push(l.clone());
            }
        }
    }
    rejected.extend(late);
    sessions.sort_by(|a, b| {
        let (a, b) = (&a.header, &b.header);
        let (ca, cb) = (a.created_at.as_u64(), b.created_at.as_u64());
        cb.cmp(&ca).then_with(|| a.id.cmp(&b.id))
    });
    let assembled = sessions.len() as u64;
    (
        Snapshot { sessions, rejected, encoding, by_id: OnceLock::new(), shared: OnceLock::new() },
        headers_read.into_inner(),
        assembled,
        looked_at,
    )
}

/// A directory worked out again: its place in the listing's directories,
/// what was found there, and what the last listing listed from it.
type DirRead = (usize, Option<Found>, Option<Arc<Listed>>);

/// The last listing with the sessions whose logs changed replaced, when
/// that is all that changed: every directory worked out again (`reads`,
/// whose new `outcomes` are given) listed a session before and lists one
/// now with the same header from the same log, which the last listing
/// holds. The order, the rejections and the positions stay; the shared
/// listing, when the last one was made, is made from it with only those
/// sessions' fingerprints changed ([`SharedListing::with_changed`]), so a
/// consumer updates those sessions only. Patched in place when nothing
/// else holds the last listing. `None` when anything else changed (a
/// fresh listing is put together).
fn patch(previous: Arc<Snapshot>, reads: &[DirRead], outcomes: &[Outcome]) -> Option<(Snapshot, u64)> {
    let mut changed: Vec<(usize, Arc<Listed>)> = Vec::new();
    for ((_, _, old), new) in reads.iter().zip(outcomes) {
        let (Some(old), Outcome::Listed(new)) = (old, new) else { return None };
        if Arc::ptr_eq(old, new) {
            continue;
        }
        if old.header != new.header || old.found != new.found {
            return None;
        }
        let at = previous.position(&old.header.id)?;
        if !Arc::ptr_eq(&previous.sessions[at], old) {
            // A duplicate id's log, not listed.
            return None;
        }
        changed.push((at, new.clone()));
    }
    let mut snapshot = Arc::try_unwrap(previous).unwrap_or_else(|shared| Snapshot {
        sessions: shared.sessions.clone(),
        rejected: shared.rejected.clone(),
        encoding: shared.encoding,
        by_id: shared.by_id.clone(),
        shared: shared.shared.clone(),
    });
    if changed.is_empty() {
        return Some((snapshot, 0));
    }
    let count = changed.len() as u64;
    changed.sort_unstable_by_key(|(at, _)| *at);
    let fps = changed.iter().map(|(_, l)| Some(Fingerprint::from(l.stamp.id))).collect();
    let positions: Vec<usize> = changed.iter().map(|(at, _)| *at).collect();
    let shared = snapshot.shared.take().and_then(|last| last.with_changed(positions, fps));
    for (at, l) in changed {
        snapshot.sessions[at] = l;
    }
    if let Some(shared) = shared {
        snapshot.shared = OnceLock::from(shared);
    }
    Some((snapshot, count))
}

/// The kernel refused a watch.
struct Refused;

/// Positions found by their key's hash: `(hash, position)`, sorted, so
/// that a key is found by a binary search and checked against the key at
/// the position found (two keys may share a hash). Made by hashing each
/// key once and one sort: no key copied.
#[derive(Debug, Default)]
pub(crate) struct HashedPositions(Box<[(u64, u32)]>);

impl HashedPositions {
    /// The positions of `keys` (by their place; `None`: no key there).
    fn new<'a>(keys: impl Iterator<Item = Option<&'a [u8]>>) -> HashedPositions {
        let mut all: Vec<(u64, u32)> =
            keys.enumerate().filter_map(|(i, k)| Some((key_hash(k?), u32::try_from(i).ok()?))).collect();
        all.sort_unstable();
        HashedPositions(all.into())
    }

    /// The first position whose key (`key_at`) is `key`.
    fn find<'a>(&self, key: &[u8], key_at: impl Fn(usize) -> Option<&'a [u8]>) -> Option<usize> {
        let h = key_hash(key);
        let from = self.0.partition_point(|&(x, _)| x < h);
        self.0[from..].iter().take_while(|&&(x, _)| x == h).map(|&(_, i)| i as usize).find(|&i| key_at(i) == Some(key))
    }
}

/// A hash of `bytes`, eight at a time.
fn key_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap_or_default());
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    h ^ (h >> 32)
}

fn listed(header: Header, found: Found, stamp: Stamp) -> Listed {
    Listed {
        header: SessionHeader { id: header.id, created_at: Number::from(header.created_at), cwd: header.cwd },
        json: HeaderJson::Parsed(header.json),
        found,
        stamp,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy_dir(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }

    fn fresh(root: &Path) -> Listing {
        let mut cache = ListingCache::default();
        cache.set_watching(false);
        cache.refresh(root).unwrap().to_listing()
    }

    fn logs(listing: &Listing) -> Vec<PathBuf> {
        listing.sessions.iter().map(|s| s.path.clone()).collect()
    }

    /// Without a watcher, a directory whose stamp did not change since it
    /// settled is not read again, nor a header whose log's stamp did not;
    /// a listing cache file carries that to another process. Every listing
    /// equals a fresh one.
    #[test]
    fn unchanged_directories_and_headers_are_not_read_again_and_the_answer_is_the_same() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sessions"), root);
        let mut cache = ListingCache::default();
        cache.set_watching(false);
        // Read right after the copy: nothing has settled, so a second listing
        // reads every directory again (a change in the same timestamp tick
        // would be invisible), though not the unchanged headers.
        let first = cache.refresh(root).unwrap().to_listing();
        let n = first.sessions.len() as u64;
        assert!(n >= 4);
        let before = cache.reads;
        assert_eq!(cache.refresh(root).unwrap().to_listing(), first);
        assert_eq!(cache.reads.1, before.1, "no header is read again");
        assert!(cache.reads.0 >= before.0 + n, "unsettled directories are read again");
        // Once settled, nothing is read.
        std::thread::sleep(std::time::Duration::from_millis(3_200));
        cache.refresh(root).unwrap();
        let settled = cache.reads;
        assert_eq!(cache.refresh(root).unwrap().to_listing(), first);
        assert_eq!(cache.reads, settled, "nothing read for an unchanged root");
        // An append: one header, no directory.
        let all = logs(&first);
        std::fs::OpenOptions::new().append(true).open(&all[0]).unwrap().write_all(b"\n").unwrap();
        assert_eq!(cache.refresh(root).unwrap().to_listing(), fresh(root));
        assert_eq!(cache.reads, (settled.0, settled.1 + 1));
        // A file created in a session directory: that directory only.
        let older = all[1].with_file_name("session.jsonl.tmp");
        std::fs::write(&older, b"x").unwrap();
        let before = cache.reads;
        assert_eq!(cache.refresh(root).unwrap().to_listing(), fresh(root));
        assert_eq!(cache.reads.0, before.0 + 1);
        assert_eq!(cache.reads.1, before.1, "its log did not change");
        // A newer generation beside a settled log: that directory is read
        // again and its log selected again (never the older one kept).
        // (A plain log's lines under a generation-2 name: its header is
        // rejected, and the session with it.)
        let newer = all[3].with_file_name("session.v2.jsonl");
        std::fs::copy(&all[3], &newer).unwrap();
        let now = cache.refresh(root).unwrap().to_listing();
        assert_eq!(now, fresh(root));
        assert!(!logs(&now).contains(&all[3]), "the older generation is no longer the log");
        assert!(now.rejected.iter().any(|r| r.path == newer), "{:?}", now.rejected);

        // The cache file: another process lists without reading what is
        // unchanged and settled, and reads what changed.
        let mut payload = Vec::new();
        cache.encode(&mut payload);
        std::fs::write(&all[2], std::fs::read(&all[2]).unwrap()).unwrap();
        let mut other = ListingCache::default();
        other.set_watching(false);
        assert!(other.decode(&mut crate::cache_file::Input(&payload)));
        assert_eq!(other.refresh(root).unwrap().to_listing(), fresh(root));
        // Read again: the three directories changed in the last seconds
        // (not settled), the rewritten log's header, and the rejected
        // header (a rejection is not kept in the file).
        assert_eq!(other.reads.1, 2, "only the rewritten log's header and the rejected one");
        assert!(other.reads.0 <= 3, "{:?}", other.reads);
        // A listing cache decodes once, into a cache that has not listed.
        assert!(!other.decode(&mut crate::cache_file::Input(&payload)));
        // Truncated or padded: refused as a whole.
        let mut third = ListingCache::default();
        assert!(!third.decode(&mut crate::cache_file::Input(&payload[..payload.len() - 1])));
        let mut padded = payload.clone();
        padded.push(0);
        assert!(!third.decode(&mut crate::cache_file::Input(&padded)));
        assert!(third.decode(&mut crate::cache_file::Input(&payload)));
    }

    #[test]
    fn a_cached_header_text_must_be_one_json_object() {
        for (text, ok) in [
            (&b"{}"[..], true),
            (b"{\"id\":\"a\"}", true),
            (b"[1]", false),
            (b"{", false),
            (b"{} {}", false),
            (b"", false),
        ] {
            assert_eq!(is_json_object(text), ok, "{:?}", String::from_utf8_lossy(text));
        }
    }
}
