//! What the readers of formats that keep each session in a file of its own
//! (or several sessions in one file) share: a walk of the root that follows
//! no link, a listing read in parallel, the file of a session found again
//! on a read, and fingerprints from the files' identities. A format says
//! only where its files are ([`SessionFiles::walk`]), which sessions a file
//! holds ([`SessionFiles::heads`]) and what one of them says
//! ([`SessionFiles::read`]); [`FileSessions`] does the rest.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Seek};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::conversation::Conversation;
use crate::error::HostError;
use crate::fs::{
    open_under, par_map, read_opened, sorted_entries, DirUnder, EntryKind, FileIdentity, Stamp, LINK_REASON,
};
use crate::host::{
    BlockingSessionQuery, Fingerprint, SessionHeader, SharedListing, SurfaceAnswer, SurfaceData, SurfaceRead,
};
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{conversation, mtime_ms, read_error, ListedSession, Listing, Transcript};

/// A file's path below the root, as components.
pub type Rel = Vec<OsString>;

/// One session a file holds, as a listing sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// The session's id without the format's prefix.
    pub bare: String,
    /// Its creation time (ms), if the file records one (else the file's
    /// own creation time, else its modification time, is taken).
    pub created_at: Option<u64>,
    /// Its working directory, if known.
    pub cwd: Option<String>,
}

/// A format whose sessions live in files under a root.
pub trait SessionFiles: Clone + Send + Sync + 'static {
    /// The format's name in messages (`"Copilot CLI"`).
    const FORMAT: &'static str;
    /// What its session ids start with (`"copilot-cli:"`).
    const PREFIX: &'static str;

    /// The files under `root` that may hold sessions, in byte order, with
    /// the entries that could not be looked at (and why) in `rejected`.
    fn walk(&self, root: &Path, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>);

    /// The sessions the file at `rel` holds (none: it holds no
    /// conversation yet). `file` is open at its start; `identity` is its
    /// identity as opened. `root` is opened once for a whole listing: a
    /// format that reads a file beside each session's (its metadata,
    /// `Under::companion`) opens it relative to it.
    fn heads(&self, root: &Under<'_>, rel: &[OsString], file: File, identity: &FileIdentity) -> io::Result<Vec<Head>>;

    /// Session `bare` of the file at `rel`: its current conversation.
    fn read(&self, root: &Path, rel: &[OsString], file: File, bare: &str) -> io::Result<Transcript>;

    /// Whether [`read`](Self::read) itself fails when the file does not
    /// hold session `bare`. Then the file a listing found for a session, or
    /// the one its id names ([`guess`](Self::guess)), is read at once,
    /// without first being checked with [`heads`](Self::heads): for a
    /// format whose files hold several sessions that check is a second
    /// pass over the whole file. A read that fails there falls back to the
    /// checked way (so its error is the one that way gives).
    const READ_CHECKS_ID: bool = false;

    /// Where under `root` the file of `bare` would be, from the id alone,
    /// tried before a walk of the whole root (none: the id does not say).
    fn guess(&self, root: &Path, bare: &str) -> Vec<Rel> {
        let _ = (root, bare);
        Vec::new()
    }

    /// Other files under the root that [`read`](Self::read) reads beside
    /// the file at `rel` (a session's name kept apart from its log): their
    /// identities are part of its sessions' fingerprints, so a change to
    /// one is read again. None by default.
    fn companions(&self, rel: &[OsString]) -> Vec<Rel> {
        let _ = rel;
        Vec::new()
    }

    /// Whether a format's file names say which session a file may hold
    /// ([`named_for`](Self::named_for)).
    const NAMES_SESSIONS: bool = false;

    /// Whether the file at `rel`, as [`walk`](Self::walk) found it, may hold
    /// `bare` by its name. A session its id does not place
    /// ([`guess`](Self::guess)) is then looked for among the files so named
    /// (each opened once, and the one that holds it read on that open)
    /// before every file's heads are read by a listing.
    fn named_for(&self, rel: &[OsString], bare: &str) -> bool {
        let _ = (rel, bare);
        false
    }
}

/// A sources root as a listing holds it: its path, and the directory
/// opened once, below which its files are opened.
pub struct Under<'a> {
    path: &'a Path,
    dir: Dir<'a>,
}

/// The root's directory, a listing's or one opened for a read.
enum Dir<'a> {
    Shared(&'a DirUnder),
    Own(DirUnder),
}

impl<'a> Under<'a> {
    pub(crate) fn new(path: &'a Path, dir: &'a DirUnder) -> Self {
        Under { path, dir: Dir::Shared(dir) }
    }

    /// The root at `path`, opened now.
    pub(crate) fn opened(path: &'a Path) -> Self {
        Under { path, dir: Dir::Own(DirUnder::open(path, &[])) }
    }

    /// The root's path.
    pub fn path(&self) -> &Path {
        self.path
    }

    /// The whole of a small file a format keeps beside a session's log
    /// (its metadata), at `rel` below the root and opened as every file is
    /// (no link followed): `None` when it is missing, unreadable or longer
    /// than `max` bytes.
    pub(crate) fn companion(&self, rel: &[&OsStr], max: u64) -> Option<Vec<u8>> {
        let dir = match &self.dir {
            Dir::Shared(dir) => dir,
            Dir::Own(dir) => dir,
        };
        let (file, stamp) = dir.open_file(rel).ok()?;
        read_opened(file, stamp.id.size, usize::try_from(max).unwrap_or(usize::MAX)).ok()
    }
}

/// A walk of `root` that looks into directories `descend(rel, name)`
/// accepts (up to `max_depth` levels below the root) and keeps the regular
/// files `take(rel, name)` accepts, all in byte order. A link is never
/// followed: one that would have been looked into or kept is rejected.
pub fn walk_tree(
    root: &Path,
    max_depth: usize,
    descend: &dyn Fn(&[OsString], &OsStr) -> bool,
    take: &dyn Fn(&[OsString], &OsStr) -> bool,
    out: &mut Vec<Rel>,
    rejected: &mut Vec<(PathBuf, String)>,
) {
    walk_with(root, max_depth, &Walk { descend, take, take_dir: &|_, _| false }, out, rejected);
}

/// What a walk ([`walk_with`]) looks into and keeps.
pub struct Walk<'a> {
    /// The directories looked into (`rel`: where the entry `name` is).
    pub descend: &'a dyn Fn(&[OsString], &OsStr) -> bool,
    /// The regular files kept.
    pub take: &'a dyn Fn(&[OsString], &OsStr) -> bool,
    /// The directories kept (not looked into): where a layout keeps a
    /// session's files at a fixed place inside its directory, they are
    /// opened there rather than found by reading every directory on the
    /// way.
    pub take_dir: &'a dyn Fn(&[OsString], &OsStr) -> bool,
}

/// [`walk_tree`] keeping what `w` says (directories too).
pub fn walk_with(
    root: &Path,
    max_depth: usize,
    w: &Walk<'_>,
    out: &mut Vec<Rel>,
    rejected: &mut Vec<(PathBuf, String)>,
) {
    fn go(
        root: &Path,
        rel: &mut Rel,
        max_depth: usize,
        w: &Walk<'_>,
        out: &mut Vec<Rel>,
        rejected: &mut Vec<(PathBuf, String)>,
    ) {
        let dir: PathBuf = std::iter::once(root.as_os_str()).chain(rel.iter().map(OsString::as_os_str)).collect();
        let entries = match sorted_entries(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound && rel.is_empty() => return,
            Err(e) => {
                rejected.push((dir, e.to_string()));
                return;
            }
        };
        for entry in entries {
            let kind = match entry.kind(&dir) {
                Ok(k) => k,
                Err(e) => {
                    rejected.push((dir.join(&entry.name), e.to_string()));
                    continue;
                }
            };
            let deeper = rel.len() < max_depth;
            match kind {
                EntryKind::File if (w.take)(rel, &entry.name) => {
                    let mut r = rel.clone();
                    r.push(entry.name);
                    out.push(r);
                }
                EntryKind::Dir if (w.take_dir)(rel, &entry.name) => {
                    let mut r = rel.clone();
                    r.push(entry.name);
                    out.push(r);
                }
                EntryKind::Dir if deeper && (w.descend)(rel, &entry.name) => {
                    rel.push(entry.name);
                    go(root, rel, max_depth, w, out, rejected);
                    rel.pop();
                }
                EntryKind::Link
                    if (w.take)(rel, &entry.name)
                        || (w.take_dir)(rel, &entry.name)
                        || (deeper && (w.descend)(rel, &entry.name)) =>
                {
                    rejected.push((dir.join(&entry.name), LINK_REASON.to_owned()));
                }
                _ => {}
            }
        }
    }
    go(root, &mut Vec::new(), max_depth, w, out, rejected);
}

/// Whether every component of `rel` is a plain name (not empty, `.` or
/// `..`, and without a separator), so that a path guessed from an id can
/// never leave the root.
fn plain_rel(rel: &[OsString]) -> bool {
    rel.iter().all(|c| {
        let b = c.as_encoded_bytes();
        !b.is_empty() && b != b"." && b != b".." && !b.contains(&b'/') && !b.contains(&b'\\') && !b.contains(&0)
    })
}

/// The creation time of the file at `path` (ms) where the system records
/// one, else its modification time (from `identity`): the `createdAt` of a
/// session whose file records none.
pub fn file_created_ms(path: &Path, identity: &FileIdentity) -> u64 {
    let born = std::fs::symlink_metadata(path).ok().and_then(|m| m.created().ok());
    born.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| u64::try_from(d.as_millis()).ok())
        .unwrap_or_else(|| mtime_ms(identity))
}

/// A read-only session source over a root of `F`'s files. Cheap to clone;
/// every method may run concurrently.
#[derive(Clone, Debug)]
pub struct FileSessions<F: SessionFiles> {
    root: Arc<PathBuf>,
    format: F,
    /// Where the last listing found each session (checked again on reads).
    found: Arc<Mutex<HashMap<String, Rel>>>,
    /// What the last listing read of each file: its stamp, its heads and
    /// the creation time taken for a session that records none. A listing
    /// reads again only the files whose stamp changed, so one in a
    /// long-lived process (the MCP server, the daemon) opens what changed,
    /// not every session's file.
    heads: Arc<Mutex<HashMap<Rel, KnownHeads>>>,
    /// What the last listing skipped, and why.
    skipped: Arc<Mutex<Vec<(PathBuf, String)>>>,
}

/// A file's heads as a listing read them, under the stamp it had.
#[derive(Clone, Debug)]
struct KnownHeads {
    stamp: Stamp,
    heads: Vec<Head>,
    created: u64,
}

impl<F: SessionFiles> FileSessions<F> {
    /// A source of `format` over `root` (a directory; a link to one is fine).
    pub fn with_format(root: impl AsRef<Path>, format: F) -> io::Result<Self> {
        let root = crate::sources::file_source::open_root(root.as_ref(), F::FORMAT)?;
        Ok(FileSessions {
            root: Arc::new(root),
            format,
            found: Arc::default(),
            heads: Arc::default(),
            skipped: Arc::default(),
        })
    }

    /// The root, opened for one read.
    fn under(&self) -> Under<'_> {
        Under::opened(&self.root)
    }

    fn path_of(&self, rel: &[OsString]) -> PathBuf {
        std::iter::once(self.root.as_os_str()).chain(rel.iter().map(OsString::as_os_str)).collect()
    }

    fn open_rel(&self, rel: &[OsString]) -> io::Result<(File, FileIdentity)> {
        let parts: Vec<&OsStr> = rel.iter().map(OsString::as_os_str).collect();
        open_under(&self.root, &parts)
    }

    /// The sessions under the root, newest first, with per-file problems.
    pub fn list(&self) -> io::Result<Listing> {
        let mut rejected = Vec::new();
        let mut files = Vec::new();
        self.format.walk(&self.root, &mut files, &mut rejected);
        // Each file opened by one call relative to the root.
        let root = DirUnder::open(&self.root, &[]);
        let under = Under::new(&self.root, &root);
        // A concurrent listing meanwhile finds no memo and reads every file.
        let known = self.heads.lock().map(|mut m| std::mem::take(&mut *m)).unwrap_or_default();
        let heads = par_map(&files, |rel, _: &mut ()| {
            // (A file the last listing did not read is opened at once.)
            if let Some(was) = known.get(rel) {
                if Stamp::lstat(&self.path_of(rel)) == Some(was.stamp) {
                    return Ok::<_, io::Error>(was.clone());
                }
            }
            let parts: Vec<&OsStr> = rel.iter().map(OsString::as_os_str).collect();
            let (file, stamp) = root.open_file(&parts)?;
            let identity = stamp.id;
            let heads = self.format.heads(&under, rel, file, &identity)?;
            // The file's own time only where a session records none.
            let created =
                heads.iter().any(|h| h.created_at.is_none()).then(|| file_created_ms(&self.path_of(rel), &identity));
            Ok(KnownHeads { stamp, heads, created: created.unwrap_or_default() })
        });
        let mut seen = HashSet::new();
        let mut found = HashMap::new();
        let mut memo = HashMap::with_capacity(files.len());
        let mut sessions = Vec::with_capacity(files.len());
        let mut without_conversation = Vec::new();
        for (rel, heads) in files.into_iter().zip(heads) {
            let path = self.path_of(&rel);
            let (heads, created) = match heads {
                Ok(known) => {
                    let read = (known.heads.clone(), known.created);
                    memo.insert(rel.clone(), known);
                    read
                }
                // Gone since the walk, or a guessed file that is not there
                // (a session directory without its log): not a session.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => {
                    rejected.push((path, e.to_string()));
                    continue;
                }
            };
            if heads.is_empty() {
                without_conversation.push(path);
                continue;
            }
            for head in heads {
                if !seen.insert(head.bare.clone()) {
                    rejected.push((path.clone(), format!("a session with the id {} was listed first", head.bare)));
                    continue;
                }
                let at = head.created_at.unwrap_or(created);
                sessions.push(ListedSession::new(F::PREFIX, &head.bare, at, head.cwd, path.clone()));
                found.insert(head.bare, rel.clone());
            }
        }
        if let Ok(mut was) = self.found.lock() {
            *was = found;
        }
        if let Ok(mut was) = self.heads.lock() {
            *was = memo;
        }
        let mut listing = Listing { sessions, rejected, without_conversation };
        listing.sort();
        if let Ok(mut was) = self.skipped.lock() {
            *was = listing.skipped();
        }
        Ok(listing)
    }

    /// Whether the file at `rel` holds session `bare`.
    fn holds(&self, rel: &[OsString], bare: &str) -> bool {
        let Ok((file, identity)) = self.open_rel(rel) else { return false };
        self.format.heads(&self.under(), rel, file, &identity).is_ok_and(|heads| heads.iter().any(|h| h.bare == bare))
    }

    /// Session `bare` read from the file at `rel` when that file holds it
    /// (`None` when it cannot be opened or does not hold it): one open,
    /// its heads checked, then read again from its start, so the session
    /// read is the one checked.
    fn read_if_holds(&self, rel: &[OsString], bare: &str) -> Option<io::Result<Transcript>> {
        let (file, identity) = self.open_rel(rel).ok()?;
        let mut again = match file.try_clone() {
            Ok(f) => f,
            Err(e) => return Some(Err(e)),
        };
        let heads = self.format.heads(&self.under(), rel, file, &identity).ok()?;
        if !heads.iter().any(|h| h.bare == bare) {
            return None;
        }
        Some(again.seek(io::SeekFrom::Start(0)).and_then(|_| self.format.read(&self.root, rel, again, bare)))
    }

    /// The files that may hold `bare` without a listing: where the last
    /// listing found it, then where its id says.
    fn likely(&self, bare: &str) -> impl Iterator<Item = Rel> {
        let remembered = self.found.lock().ok().and_then(|m| m.get(bare).cloned());
        let guesses = self.format.guess(&self.root, bare).into_iter().filter(|r| plain_rel(r));
        remembered.into_iter().chain(guesses)
    }

    /// The file of `bare`: where the last listing found it, else where its
    /// id says, else by a new listing.
    fn locate(&self, bare: &str) -> Result<Rel, HostError> {
        match self.likely(bare).find(|r| self.holds(r, bare)) {
            Some(rel) => Ok(rel),
            None => self.listed(bare),
        }
    }

    /// The file of `bare` as a new listing finds it.
    fn listed(&self, bare: &str) -> Result<Rel, HostError> {
        let listing = self.list().map_err(|e| HostError::new(format!("cannot list {}: {e}", F::FORMAT)))?;
        if let Some(rel) = self.found.lock().ok().and_then(|m| m.get(bare).cloned()) {
            return Ok(rel);
        }
        let mut m = format!("no {} session {} in {}", F::FORMAT, crate::json::js_string(bare), self.root.display());
        if let Some((path, why)) = listing.rejected.first() {
            m.push_str(&format!(
                " ({} entries could not be read, the first {}: {why})",
                listing.rejected.len(),
                path.display()
            ));
        }
        Err(HostError::new(m))
    }

    /// Reads session `id` (with or without the prefix): the file it was
    /// read from and what it says.
    pub fn read(&self, id: &str) -> Result<(PathBuf, Transcript), HostError> {
        let bare = id.strip_prefix(F::PREFIX).unwrap_or(id);
        let read_at =
            |rel: &Rel| self.open_rel(rel).and_then(|(file, _)| self.format.read(&self.root, rel, file, bare));
        if F::READ_CHECKS_ID {
            if let Some((rel, read)) = self.likely(bare).find_map(|rel| read_at(&rel).ok().map(|read| (rel, read))) {
                return Ok((self.path_of(&rel), read));
            }
        }
        let (rel, read) = match self.likely(bare).find_map(|rel| self.read_if_holds(&rel, bare).map(|r| (rel, r))) {
            Some(found) => found,
            None => match self.read_named(bare) {
                Some(found) => found,
                None => {
                    let rel = self.listed(bare)?;
                    let read = read_at(&rel);
                    (rel, read)
                }
            },
        };
        let path = self.path_of(&rel);
        let read = read.map_err(|e| read_error(F::FORMAT, id, &path, e))?;
        Ok((path, read))
    }

    /// Session `bare` read from the file named for it that holds it (kept
    /// as where it was found), by a walk of the root that opens only such
    /// files; `None` when the format's names do not say or none holds it.
    fn read_named(&self, bare: &str) -> Option<(Rel, io::Result<Transcript>)> {
        if !F::NAMES_SESSIONS {
            return None;
        }
        let (mut files, mut rejected) = (Vec::new(), Vec::new());
        self.format.walk(&self.root, &mut files, &mut rejected);
        let mut named = files.into_iter().filter(|rel| self.format.named_for(rel, bare));
        let (rel, read) = named.find_map(|rel| self.read_if_holds(&rel, bare).map(|r| (rel, r)))?;
        if let Ok(mut memo) = self.found.lock() {
            memo.insert(bare.to_owned(), rel.clone());
        }
        Some((rel, read))
    }

    /// The current conversation of `id`, as the resolver renders it.
    pub fn conversation(&self, id: &str) -> Result<Conversation, HostError> {
        self.conversation_titled(id).map(|(conversation, _)| conversation)
    }

    /// The current conversation of `id` and its title, from one read.
    fn conversation_titled(&self, id: &str) -> Result<(Conversation, Option<String>), HostError> {
        let (_, read) = self.read(id)?;
        Ok((conversation(F::PREFIX, id, read.cwd, read.stats, read.items), read.title))
    }
}

impl<F: SessionFiles> BlockingSessionQuery for FileSessions<F> {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        Listing::headers(self.list(), F::FORMAT, &self.root)
    }

    /// The listing with every session's fingerprint, so that a view over
    /// several sources can share its merged listing.
    fn shared_listing(&self) -> Result<Option<SharedListing>, HostError> {
        crate::host::listing_with_fingerprints(self)
    }

    fn read_title(&self, session_id: &str) -> Result<Option<String>, HostError> {
        self.read(session_id).map(|(_, read)| read.title)
    }

    /// What the last listing skipped (files rejected, with why; files
    /// holding no conversation yet).
    fn skipped(&self) -> Vec<(PathBuf, String)> {
        self.skipped.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn read_surface(&self, session_id: &str) -> Result<SurfaceData, HostError> {
        self.conversation(session_id).map(SurfaceData::from)
    }

    /// Every read is of the whole conversation, which the file gives with
    /// its title: a page of a session reads its file once.
    fn read_surface_as(&self, session_id: &str, _: SurfaceRead) -> Result<SurfaceAnswer, HostError> {
        let (conversation, title) = self.conversation_titled(session_id)?;
        Ok(SurfaceAnswer::whole(SurfaceData::from(conversation)).with_title(title))
    }

    /// A session is in its file (and the format's
    /// [companions](SessionFiles::companions) of it), so its fingerprint is
    /// their identities (one `lstat` each where the last listing found it;
    /// a session not listed is looked up): a long-lived resolver reads
    /// again only the sessions whose files changed.
    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        let found = self.found.lock().map(|m| m.clone()).unwrap_or_default();
        let fingerprint = |id: &String| {
            let bare = id.strip_prefix(F::PREFIX).unwrap_or(id);
            let (rel, identity) = match found.get(bare) {
                Some(rel) => (rel.clone(), Stamp::lstat(&self.path_of(rel))?.id),
                None => {
                    let rel = self.locate(bare).ok()?;
                    let identity = self.open_rel(&rel).ok()?.1;
                    (rel, identity)
                }
            };
            let fingerprint = Fingerprint::from(identity);
            let companions = self.format.companions(&rel);
            if companions.is_empty() {
                return Some(fingerprint);
            }
            // Each companion's identity follows the file's (a zero byte for
            // one that is not there).
            let mut bytes = fingerprint.as_bytes().to_vec();
            for companion in companions.iter().filter(|r| plain_rel(r)) {
                match Stamp::lstat(&self.path_of(companion)) {
                    Some(stamp) => bytes.extend_from_slice(Fingerprint::from(stamp.id).as_bytes()),
                    None => bytes.push(0),
                }
            }
            Some(Fingerprint::from_bytes(bytes))
        };
        Ok(Some(session_ids.iter().map(fingerprint).collect()))
    }
}

impl<F: SessionFiles> FileSource for FileSessions<F> {
    const FORMAT: &'static str = F::FORMAT;

    fn root(&self) -> &Path {
        &self.root
    }

    fn identity(&self, session_id: &str) -> Result<FileIdentity, HostError> {
        let bare = session_id.strip_prefix(F::PREFIX).unwrap_or(session_id);
        let rel = self.locate(bare)?;
        self.open_rel(&rel).map(|(_, i)| i).map_err(|e| read_error(F::FORMAT, session_id, &self.path_of(&rel), e))
    }
}
