//! Finding logs under a root: the walk of `list()` and the lookup of one
//! session by id, on one rule set.
//!
//! - Exactly two levels are walked: `<root>/<project-dir>/<session-dir>/`.
//!   A symbolic link at either level (or in place of a log) is reported and
//!   not followed; other non-directories are skipped.
//! - In a session directory the canonical generation file names
//!   ([`parse_generation_file_name`]) are the candidates; every other name
//!   (`session.lock`, temporaries) is ignored, and a directory without one
//!   is not a session.
//! - A root holds one encoding: if canonical regular files of both
//!   encodings exist anywhere under it, the root is refused as a whole (by
//!   listing and by every read).
//! - The numerically highest canonical name of the root's encoding is the
//!   session's log; older generations beside it are ignored, never merged.
//!   If that name is a link or not a regular file, or its generation is
//!   newer than this reader implements, the session is rejected with the
//!   reason (an older generation is not used in its place).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use super::generation::{unsupported_message, Generation};
use super::header::{Header, HeaderError};
use super::layout::{
    parse_generation_file_name, project_dir_name, relative_generation_path, session_dir_name, Encoding,
};
use super::{RejectedLog, RejectionKind};
use crate::fs::{entry_kind, now_ns, par_map, par_map_by, sorted_entries, EntryKind, Stamp, LINK_REASON};

/// One log selected by discovery, before its header is checked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Found {
    pub project: OsString,
    pub session: OsString,
    pub path: PathBuf,
    pub encoding: Encoding,
    pub generation: Generation,
    /// Older canonical generations of the same encoding beside it.
    pub superseded: Vec<u64>,
}

/// A canonical generation file name in a session directory.
#[derive(Clone, Debug, PartialEq)]
struct Candidate {
    generation: u64,
    encoding: Encoding,
    name: OsString,
    kind: EntryKind,
}

/// The canonical names of one session directory.
#[derive(Clone, Debug, Default)]
pub(crate) struct SessionDir {
    project: OsString,
    session: OsString,
    path: PathBuf,
    candidates: Vec<Candidate>,
    /// A failure to read the directory.
    error: Option<String>,
    /// The directory's stamp, taken just before it was read (if it was).
    stamp: Option<Stamp>,
    /// When it was read (wall clock, ns).
    read_at_ns: i128,
}

impl SessionDir {
    /// Reads the directory's entries (types from the listing where given);
    /// `stamp` is the directory's, taken just before.
    fn read(project: &OsString, session: &OsString, path: PathBuf, stamp: Option<Stamp>) -> SessionDir {
        let mut dir = SessionDir {
            project: project.clone(),
            session: session.clone(),
            read_at_ns: now_ns(),
            stamp,
            ..SessionDir::default()
        };
        match sorted_entries(&path) {
            Ok(entries) => {
                for entry in entries {
                    let Some((generation, encoding)) = entry.name.to_str().and_then(parse_generation_file_name) else {
                        continue;
                    };
                    let kind = entry.kind(&path).unwrap_or(EntryKind::Other);
                    dir.candidates.push(Candidate { generation, encoding, name: entry.name, kind });
                }
            }
            Err(e) => dir.error = Some(format!("cannot read directory: {e}")),
        }
        dir.path = path;
        dir
    }

    /// Whether this read still holds for a directory whose stamp is now
    /// `now`: it was read without error, its stamp is the same, and it had
    /// settled before the read (see [`Stamp::settled_before`]).
    pub(crate) fn holds_for(&self, now: Option<Stamp>) -> bool {
        self.error.is_none()
            && now.is_some()
            && self.stamp == now
            && now.is_some_and(|s| s.settled_before(self.read_at_ns))
    }

    /// Appends the read (see `discovery/persist.rs`); `false`, and nothing
    /// written, for names that are not UTF-8 or a failed read.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) -> bool {
        use crate::cache_file::{put, put_stamp};
        let names = [self.project.to_str(), self.session.to_str(), self.path.to_str()];
        let (Some(stamp), None, [Some(project), Some(session), Some(path)]) = (self.stamp, &self.error, names) else {
            return false;
        };
        if self.candidates.iter().any(|c| c.name.to_str().is_none()) {
            return false;
        }
        put(out, project.as_bytes());
        put(out, session.as_bytes());
        put(out, path.as_bytes());
        put_stamp(out, &stamp);
        out.extend_from_slice(&self.read_at_ns.to_le_bytes());
        out.extend_from_slice(&(self.candidates.len() as u64).to_le_bytes());
        for c in &self.candidates {
            out.extend_from_slice(&c.generation.to_le_bytes());
            out.push(encoding_bit(c.encoding));
            put(out, c.name.to_str().unwrap_or_default().as_bytes());
            out.push(match c.kind {
                EntryKind::Dir => 0,
                EntryKind::File => 1,
                EntryKind::Link => 2,
                EntryKind::Other => 3,
                EntryKind::Missing => 4,
            });
        }
        true
    }

    /// Reads what [`encode`](Self::encode) wrote.
    pub(crate) fn decode(input: &mut crate::cache_file::Input<'_>) -> Option<SessionDir> {
        let project = OsString::from(input.string()?);
        let session = OsString::from(input.string()?);
        let path = PathBuf::from(input.string()?);
        let stamp = Some(input.stamp()?);
        let read_at_ns = input.i128()?;
        let n = input.u64()?;
        // Sized once (one or two names, nearly always), for what the input
        // can hold (a candidate takes more than 16 bytes).
        let mut candidates = Vec::with_capacity(usize::try_from(n).unwrap_or(usize::MAX).min(input.0.len() / 16));
        for _ in 0..n {
            let generation = input.u64()?;
            let encoding = match input.take(1)?[0] {
                1 => Encoding::Raw,
                2 => Encoding::Zstd,
                _ => return None,
            };
            let name = OsString::from(input.string()?);
            let kind = match input.take(1)?[0] {
                0 => EntryKind::Dir,
                1 => EntryKind::File,
                2 => EntryKind::Link,
                3 => EntryKind::Other,
                4 => EntryKind::Missing,
                _ => return None,
            };
            // Only what a read would have kept.
            if name.to_str().and_then(parse_generation_file_name) != Some((generation, encoding)) {
                return None;
            }
            candidates.push(Candidate { generation, encoding, name, kind });
        }
        Some(SessionDir { project, session, path, candidates, error: None, stamp, read_at_ns })
    }

    /// The directory's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Its project and session directory names.
    pub(crate) fn names(&self) -> (&OsString, &OsString) {
        (&self.project, &self.session)
    }

    /// The encodings of its canonical regular files (bit 0 raw, bit 1 zstd).
    pub(crate) fn file_encodings(&self) -> u8 {
        self.candidates.iter().filter(|c| c.kind == EntryKind::File).fold(0, |m, c| m | encoding_bit(c.encoding))
    }

    /// The session's log under the root encoding `root` (`None`: the root
    /// has no log files, so any candidate is reported), or why it has none
    /// usable. `None` when the directory is not a session at all.
    pub(crate) fn select(&self, root: Option<Encoding>) -> Option<Result<Found, RejectedLog>> {
        if let Some(reason) = &self.error {
            let kind = RejectionKind::Io;
            return Some(Err(RejectedLog { path: self.path.clone(), reason: reason.clone(), kind }));
        }
        let mine = |c: &&Candidate| root.is_none_or(|e| c.encoding == e);
        let best = self.candidates.iter().filter(mine).max_by_key(|c| c.generation)?;
        let path = self.path.join(&best.name);
        let reject = |reason: String, kind| Some(Err(RejectedLog { path: path.clone(), reason, kind }));
        match best.kind {
            EntryKind::File => {}
            EntryKind::Link => return reject(LINK_REASON.into(), RejectionKind::NotFollowed),
            _ => return reject("not a regular file".into(), RejectionKind::Invalid),
        }
        let Some(generation) = Generation::new(best.generation) else {
            return reject(unsupported_message(best.generation), RejectionKind::Unsupported);
        };
        let mut superseded: Vec<u64> =
            self.candidates.iter().filter(mine).map(|c| c.generation).filter(|g| *g != best.generation).collect();
        superseded.sort_unstable();
        Some(Ok(Found {
            project: self.project.clone(),
            session: self.session.clone(),
            path,
            encoding: best.encoding,
            generation,
            superseded,
        }))
    }
}

impl SessionDir {
    /// Whether `found` is what [`select`](Self::select) gives under the
    /// root encoding `found.encoding` (checked without building it).
    pub(crate) fn selects(&self, found: &Found) -> bool {
        if self.error.is_some() || found.project != self.project || found.session != self.session {
            return false;
        }
        let mine = |c: &&Candidate| c.encoding == found.encoding;
        let Some(best) = self.candidates.iter().filter(mine).max_by_key(|c| c.generation) else { return false };
        let mut older = self.candidates.iter().filter(mine).map(|c| c.generation).filter(|g| *g != best.generation);
        best.kind == EntryKind::File
            && best.generation == found.generation.number()
            && found.path.parent() == Some(self.path.as_path())
            && found.path.file_name() == Some(best.name.as_os_str())
            && found.superseded.len() == older.clone().count()
            && found.superseded.is_sorted()
            && older.all(|g| found.superseded.binary_search(&g).is_ok())
    }
}

fn encoding_bit(e: Encoding) -> u8 {
    match e {
        Encoding::Raw => 1,
        Encoding::Zstd => 2,
    }
}

/// The root's one encoding from the union of encoding bits, or the error
/// that refuses a root mixing them.
pub(crate) fn root_encoding(root: &Path, bits: u8) -> io::Result<Option<Encoding>> {
    match bits {
        0 => Ok(None),
        1 => Ok(Some(Encoding::Raw)),
        2 => Ok(Some(Encoding::Zstd)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "DSH sessions root {} mixes plain (session*.jsonl) and compressed (session*.jsonl.zstd) logs; \
                 a root uses one encoding",
                root.display()
            ),
        )),
    }
}

fn root_error(root: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("cannot read DSH sessions root {}: {e}", root.display()))
}

/// The project directories of the root, links and unreadable ones reported;
/// `before_read` is called with each directory just before it is read.
fn projects(
    root: &Path,
    before_read: &mut dyn FnMut(&Path),
    rejected: &mut Vec<RejectedLog>,
) -> io::Result<Vec<(OsString, PathBuf)>> {
    let mut out = Vec::new();
    before_read(root);
    for entry in sorted_entries(root).map_err(|e| root_error(root, e))? {
        let path = root.join(&entry.name);
        match entry_kind(&path) {
            Ok(EntryKind::Dir) => out.push((entry.name, path)),
            Ok(EntryKind::Link) => {
                rejected.push(RejectedLog { path, reason: LINK_REASON.into(), kind: RejectionKind::NotFollowed })
            }
            Ok(_) => {}
            Err(e) => {
                rejected.push(RejectedLog { path, reason: format!("cannot inspect: {e}"), kind: RejectionKind::Io })
            }
        }
    }
    Ok(out)
}

/// One entry of the walk: a session directory to read (project name,
/// session name, path), or why an entry is not one.
pub(crate) type Step = Result<(OsString, OsString, PathBuf), RejectedLog>;

/// The session directories under the root, in path order, without reading
/// them; links and unreadable directories of the root reported into
/// `rejected`, those of project directories as failed steps.
/// `before_read` is called with the root and each project directory just
/// before it is read (where a watcher starts watching it).
pub(crate) fn walk(
    root: &Path,
    before_read: &mut dyn FnMut(&Path),
    rejected: &mut Vec<RejectedLog>,
) -> io::Result<Vec<Step>> {
    let projects = projects(root, before_read, rejected)?;
    for (_, project_path) in &projects {
        before_read(project_path);
    }
    // The project directories are read on several threads (hundreds of
    // entries each), their steps put together in order.
    let read = par_map_by(&projects, 1, |(_, project_path), _: &mut ()| sorted_entries(project_path));
    let mut steps = Vec::with_capacity(read.iter().map(|r| r.as_ref().map_or(1, Vec::len)).sum());
    for ((project, project_path), sessions) in projects.into_iter().zip(read) {
        let sessions = match sessions {
            Ok(s) => s,
            Err(e) => {
                let reason = format!("cannot read directory: {e}");
                steps.push(Err(RejectedLog { path: project_path, reason, kind: RejectionKind::Io }));
                continue;
            }
        };
        for entry in sessions {
            let path = project_path.join(&entry.name);
            match entry.kind(&project_path) {
                Ok(EntryKind::Dir) => steps.push(Ok((project.clone(), entry.name, path))),
                Ok(EntryKind::Link) => {
                    steps.push(Err(RejectedLog { path, reason: LINK_REASON.into(), kind: RejectionKind::NotFollowed }))
                }
                Ok(_) => {}
                Err(e) => steps.push(Err(RejectedLog {
                    path,
                    reason: format!("cannot inspect: {e}"),
                    kind: RejectionKind::Io,
                })),
            }
        }
    }
    Ok(steps)
}

/// A session directory to read (project name, session name, path) and its
/// stamp if one was taken before.
pub(crate) type ToRead<'a> = (&'a (OsString, OsString, PathBuf), Option<Stamp>);

/// Reads the session directories of `steps` on several threads, each with
/// the stamp given (taken before) or, with `stamp`, one taken now.
pub(crate) fn read_dirs(steps: &[ToRead<'_>], stamp: bool) -> Vec<SessionDir> {
    par_map(steps, |((project, session, path), given), _: &mut ()| {
        let taken = if stamp && given.is_none() { Stamp::lstat(path) } else { *given };
        SessionDir::read(project, session, path.clone(), taken)
    })
}

/// Every session directory under the root, read, in path order; links and
/// unreadable directories reported into `rejected` as they are met.
fn session_dirs(root: &Path, rejected: &mut Vec<RejectedLog>) -> io::Result<Vec<Result<SessionDir, RejectedLog>>> {
    let steps = walk(root, &mut |_| {}, rejected)?;
    let dirs = read_dirs(&steps.iter().filter_map(|s| s.as_ref().ok()).map(|s| (s, None)).collect::<Vec<_>>(), false);
    let mut dirs = dirs.into_iter();
    Ok(steps.into_iter().map(|s| s.map(|_| dirs.next().expect("one read per step"))).collect())
}

/// The root's one encoding by the rule of the module docs, from its
/// session directories (read); fails when they mix encodings.
pub(crate) fn root_encoding_of<'a>(
    root: &Path,
    dirs: impl Iterator<Item = &'a SessionDir>,
) -> io::Result<Option<Encoding>> {
    root_encoding(root, dirs.fold(0, |m, d| m | d.file_encodings()))
}

/// The root's encoding by the same rule as a listing, reading only the
/// session directories (no headers).
pub(crate) fn check_root_encoding(root: &Path) -> io::Result<Option<Encoding>> {
    let dirs = session_dirs(root, &mut Vec::new())?;
    root_encoding_of(root, dirs.iter().filter_map(|d| d.as_ref().ok()))
}

/// The selected logs of the session directories named after `id`, one per
/// project directory, in path order, with the reasons of those that were
/// not usable, under the root encoding `encoding`.
pub(crate) fn candidates_for(
    root: &Path,
    id: &str,
    encoding: Option<Encoding>,
) -> io::Result<Vec<Result<Found, RejectedLog>>> {
    let session = OsString::from(session_dir_name(id));
    let mut out = Vec::new();
    for (project, project_path) in projects(root, &mut |_| {}, &mut Vec::new())? {
        let path = project_path.join(&session);
        if entry_kind(&path).ok() != Some(EntryKind::Dir) {
            continue;
        }
        if let Some(selected) = SessionDir::read(&project, &session, path, None).select(encoding) {
            out.push(selected);
        }
    }
    Ok(out)
}

/// The log of the session directory where `listed` was found, selected
/// again under the root encoding `encoding` (the directory read now, as
/// [`candidates_for`] reads each): the log a read of that directory finds
/// today, or why there is none.
pub(crate) fn again_at(listed: &Found, encoding: Option<Encoding>) -> Option<Result<Found, RejectedLog>> {
    let dir = listed.path.parent()?.to_path_buf();
    SessionDir::read(&listed.project, &listed.session, dir, None).select(encoding)
}

/// Whether a header names the path its log was found at.
pub(crate) fn path_matches(found: &Found, header: &Header) -> Result<(), HeaderError> {
    let project = project_dir_name(header.cwd.as_deref());
    let session = session_dir_name(&header.id);
    if found.project.to_str() == Some(project.as_str()) && found.session.to_str() == Some(session.as_str()) {
        Ok(())
    } else {
        Err(HeaderError::Invalid(format!(
            "the log's path does not match its header (id {}, cwd {}): expected {}",
            crate::json::js_string(&header.id),
            header.cwd.as_deref().map_or_else(|| "none".to_owned(), crate::json::js_string),
            relative_generation_path(&header.id, header.cwd.as_deref(), found.generation.number(), found.encoding)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `selects` agrees with `select` and refuses any other log: the
    /// listing trusts a cache file's log of a directory whose read holds
    /// only when it passes.
    #[test]
    fn a_log_is_selected_exactly_when_select_gives_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("proj").join("sess");
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["session.jsonl", "session.v3.jsonl", "session.v2.jsonl", "session.lock"] {
            std::fs::write(dir.join(name), b"{}\n").unwrap();
        }
        let (project, session) = (OsString::from("proj"), OsString::from("sess"));
        let read = SessionDir::read(&project, &session, dir.clone(), None);
        let found = read.select(Some(Encoding::Raw)).unwrap().unwrap();
        assert_eq!(found.generation.number(), 3);
        assert_eq!(found.superseded, [0, 2], "session.jsonl is generation 0");
        assert!(read.selects(&found));
        let changed = |f: &dyn Fn(&mut Found)| {
            let mut other = found.clone();
            f(&mut other);
            read.selects(&other)
        };
        assert!(!changed(&|f| f.path = dir.join("session.v2.jsonl")));
        assert!(!changed(&|f| f.path = tmp.path().join("session.v3.jsonl")));
        assert!(!changed(&|f| f.generation = Generation::new(2).unwrap()));
        assert!(!changed(&|f| f.superseded = vec![0]));
        assert!(!changed(&|f| f.superseded = vec![2, 0]));
        assert!(!changed(&|f| f.superseded = vec![0, 2, 2]));
        assert!(!changed(&|f| f.project = OsString::from("other")));
        assert!(!changed(&|f| f.session = OsString::from("other")));
        assert!(!changed(&|f| f.encoding = Encoding::Zstd));
        // Not a regular file: never selected as a log.
        std::fs::remove_file(dir.join("session.v3.jsonl")).unwrap();
        std::fs::create_dir(dir.join("session.v3.jsonl")).unwrap();
        let read = SessionDir::read(&project, &session, dir.clone(), None);
        assert!(!read.selects(&found));
    }
}
