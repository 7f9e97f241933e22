//! File-system helpers every file-backed source uses, so that each one keeps
//! the same guarantees: nothing under a root is written, created, locked or
//! repaired; no symbolic link below the root is followed; only regular files
//! are opened, and opening one never blocks (a FIFO in place of a log); a
//! directory is walked in byte order of its names, so "the first" and "the
//! second" of anything are well defined. Also the trust rules of cache
//! files and their directory ([`private_dir`]), which are never under a root.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

/// What a directory entry is, without following symbolic links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link (never followed below a root).
    Link,
    /// Anything else: a FIFO, a socket, a device.
    Other,
    /// Nothing by that name.
    Missing,
}

/// The reason given for a symbolic link that was not followed.
pub const LINK_REASON: &str = "symbolic link, not followed";

/// The kind of the entry at `path`, without following a final link.
pub fn entry_kind(path: &Path) -> io::Result<EntryKind> {
    match fs::symlink_metadata(path) {
        Ok(m) => Ok(kind_of_type(m.file_type())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(EntryKind::Missing),
        Err(e) => Err(e),
    }
}

fn kind_of_type(t: fs::FileType) -> EntryKind {
    if t.is_symlink() {
        EntryKind::Link
    } else if t.is_dir() {
        EntryKind::Dir
    } else if t.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    }
}

/// One entry of a directory: its name and, when the directory listing gives
/// it, its type (no link is followed either way).
#[derive(Clone, Debug)]
pub struct DirEntry {
    /// The entry's file name.
    pub name: OsString,
    file_type: Option<fs::FileType>,
}

impl DirEntry {
    /// The entry's kind, from the listing when it has the type, else from
    /// an `lstat` of `dir/name`.
    pub fn kind(&self, dir: &Path) -> io::Result<EntryKind> {
        match self.file_type {
            Some(t) => Ok(kind_of_type(t)),
            None => entry_kind(&dir.join(&self.name)),
        }
    }
}

/// The entries of a directory, sorted by name in byte order.
pub fn sorted_entries(dir: &Path) -> io::Result<Vec<DirEntry>> {
    crate::work::dir_read();
    let mut entries = fs::read_dir(dir)?
        .map(|e| e.map(|e| DirEntry { name: e.file_name(), file_type: e.file_type().ok() }))
        .collect::<io::Result<Vec<_>>>()?;
    entries.sort_by(|a, b| a.name.as_encoded_bytes().cmp(b.name.as_encoded_bytes()));
    Ok(entries)
}

/// What identifies the contents of a file between two reads: if none of
/// these changed, a source may assume the file did not (the usual
/// `make`-style rule). `dev` and `inode` are 0 where the platform has no
/// such numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    /// The device holding the file.
    pub dev: u64,
    /// The file's inode number.
    pub inode: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its modification time, nanoseconds since the Unix epoch (0 when unknown
    /// or before the epoch).
    pub mtime_ns: u128,
}

impl FileIdentity {
    /// The identity of the file `meta` describes.
    pub fn of(meta: &fs::Metadata) -> FileIdentity {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        #[cfg(unix)]
        let (dev, inode) = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (dev, inode) = (0, 0);
        FileIdentity { dev, inode, size: meta.len(), mtime_ns }
    }
}

/// A file's identity and its status-change time (ctime, which also changes
/// on `chmod`, `chown` and `link`): what a source compares to tell that a
/// file or directory it read is still the one it read, permissions included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub id: FileIdentity,
    /// Nanoseconds since the Unix epoch (0 where the system has no ctime).
    pub ctime_ns: i128,
}

impl Stamp {
    /// The stamp of the file `meta` describes.
    pub(crate) fn of(meta: &fs::Metadata) -> Stamp {
        #[cfg(unix)]
        let ctime_ns = {
            use std::os::unix::fs::MetadataExt;
            i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec())
        };
        #[cfg(not(unix))]
        let ctime_ns = 0;
        Stamp { id: FileIdentity::of(meta), ctime_ns }
    }

    /// The stamp of the entry at `path`, without following a final link.
    pub(crate) fn lstat(path: &Path) -> Option<Stamp> {
        fs::symlink_metadata(path).ok().map(|m| Stamp::of(&m))
    }

    /// Whether a read made at `read_at_ns` (wall clock) of the entry with
    /// this stamp can be trusted while the stamp stays the same: the entry
    /// must have last changed well before the read, as timestamps are
    /// coarse (a change in the same tick after the read would leave them
    /// as they are; FAT counts in 2-second steps).
    pub(crate) fn settled_before(&self, read_at_ns: i128) -> bool {
        self.ctime_ns != 0
            && self.ctime_ns + SETTLE_NS <= read_at_ns
            && i128::try_from(self.id.mtime_ns).is_ok_and(|m| m + SETTLE_NS <= read_at_ns)
    }
}

/// `lstat`s of entries below the project directories of a root: on Linux
/// each relative to its project directory, opened once (`O_PATH`), so the
/// kernel walks one or two names instead of the whole path (a listing
/// without notifications `lstat`s every session directory and every log);
/// elsewhere, or when that fails, by the full path. Either way the stamp
/// is the one [`Stamp::lstat`] gives.
pub(crate) struct StatUnder {
    #[cfg(target_os = "linux")]
    dirs: std::collections::HashMap<std::ffi::OsString, rustix::fd::OwnedFd>,
}

impl StatUnder {
    /// Opens the project directories `projects` of `root`.
    pub(crate) fn open<'a>(root: &Path, projects: impl Iterator<Item = &'a std::ffi::OsStr>) -> StatUnder {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::{openat, Mode, OFlags, CWD};
            let mut dirs = std::collections::HashMap::new();
            for project in projects {
                if dirs.contains_key(project) {
                    continue;
                }
                let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                if let Ok(fd) = openat(CWD, root.join(project), flags, Mode::empty()) {
                    dirs.insert(project.to_owned(), fd);
                }
            }
            StatUnder { dirs }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (root, projects);
            StatUnder {}
        }
    }

    /// The stamp of `full`, the entry `rel` below the project directory
    /// `project`, without following a final link.
    pub(crate) fn lstat(&self, project: &std::ffi::OsStr, rel: &Path, full: &Path) -> Option<Stamp> {
        #[cfg(target_os = "linux")]
        if let Some(dir) = self.dirs.get(project) {
            use rustix::fs::{statx, AtFlags, StatxFlags};
            if let Ok(st) = statx(dir, rel, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::BASIC_STATS) {
                let wanted = StatxFlags::MTIME | StatxFlags::CTIME | StatxFlags::INO | StatxFlags::SIZE;
                if StatxFlags::from_bits_retain(st.stx_mask).contains(wanted) {
                    return Some(Stamp::of_statx(&st));
                }
            }
        }
        let _ = (project, rel);
        Stamp::lstat(full)
    }
}

#[cfg(target_os = "linux")]
impl Stamp {
    /// The stamp of what `statx` reported, as [`Stamp::of`] makes it from
    /// the same call through the standard library.
    fn of_statx(st: &rustix::fs::Statx) -> Stamp {
        let ns = |t: &rustix::fs::StatxTimestamp| i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec);
        let mtime = ns(&st.stx_mtime);
        Stamp {
            id: FileIdentity {
                dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
                inode: st.stx_ino,
                size: st.stx_size,
                // A time before the epoch counts as none, as in `FileIdentity::of`.
                mtime_ns: u128::try_from(mtime).unwrap_or(0),
            },
            ctime_ns: ns(&st.stx_ctime),
        }
    }
}

/// See [`Stamp::settled_before`].
const SETTLE_NS: i128 = 3_000_000_000;

/// The wall clock, nanoseconds since the Unix epoch.
pub(crate) fn now_ns() -> i128 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128)
}

/// Opens a regular file for reading without following a final symbolic link
/// (`O_NOFOLLOW` on Unix) and without blocking on a FIFO (`O_NONBLOCK`);
/// anything but a regular file is refused. Returns the file and its
/// identity. Callers check every directory above it (with [`entry_kind`])
/// before joining its name, so no link below a root is ever followed.
pub fn open_regular(path: &Path) -> io::Result<(File, FileIdentity)> {
    open_stamped(path).map(|(file, stamp)| (file, stamp.id))
}

/// The files whose opens are being counted ([`count_opens`]), each with
/// its count so far; `COUNTING` says whether there are any, so that an open
/// costs one atomic load when none are.
static COUNTED: std::sync::Mutex<Vec<(std::path::PathBuf, usize)>> = std::sync::Mutex::new(Vec::new());
static COUNTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Counts from now on every open of the file at `path` (as the readers
/// name it: under the root they were given) by the library's own readers,
/// starting from 0: how tests tell how many times a read opened a file.
#[doc(hidden)]
pub fn count_opens(path: &Path) {
    let mut counted = COUNTED.lock().unwrap_or_else(|e| e.into_inner());
    counted.retain(|(p, _)| p != path);
    counted.push((path.to_path_buf(), 0));
    COUNTING.store(true, Ordering::Relaxed);
}

/// How many times the file at `path` was opened since [`count_opens`] of it.
#[doc(hidden)]
pub fn opens_counted(path: &Path) -> usize {
    let counted = COUNTED.lock().unwrap_or_else(|e| e.into_inner());
    counted.iter().find(|(p, _)| p == path).map_or(0, |(_, n)| *n)
}

/// Counts an open of the file at `path()` when it is being counted.
fn opened(path: impl FnOnce() -> std::path::PathBuf) {
    if !COUNTING.load(Ordering::Relaxed) {
        return;
    }
    let path = path();
    let mut counted = COUNTED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, n)) = counted.iter_mut().find(|(p, _)| *p == path) {
        *n += 1;
    }
}

/// [`open_regular`], with the file's [`Stamp`].
pub(crate) fn open_stamped(path: &Path) -> io::Result<(File, Stamp)> {
    opened(|| path.to_path_buf());
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
    Ok((file, Stamp::of(&meta)))
}

/// Opens the regular file `root/parts[0]/…/parts[n-1]` for reading,
/// checking that every directory between the root and the file is a real
/// directory (not a symbolic link), so nothing below the root is followed;
/// the file itself is opened with [`open_regular`].
pub fn open_under(root: &Path, parts: &[&std::ffi::OsStr]) -> io::Result<(File, FileIdentity)> {
    let mut path = root.to_path_buf();
    let Some((file, dirs)) = parts.split_last() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no file name"));
    };
    for dir in dirs {
        path.push(dir);
        match entry_kind(&path)? {
            EntryKind::Dir => {}
            EntryKind::Link => return Err(io::Error::other(format!("{}: {LINK_REASON}", path.display()))),
            EntryKind::Missing => return Err(io::Error::new(io::ErrorKind::NotFound, "no such directory")),
            _ => return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a directory")),
        }
    }
    path.push(file);
    if entry_kind(&path)? == EntryKind::Link {
        return Err(io::Error::other(format!("{}: {LINK_REASON}", path.display())));
    }
    open_regular(&path)
}

/// A directory below a root, opened once, to open regular files below it
/// relative to it: on Linux each with one `openat2` that follows no
/// symbolic link anywhere on the way (`RESOLVE_NO_SYMLINKS`) and cannot
/// leave the directory (`RESOLVE_BENEATH`), instead of an `lstat` of every
/// directory on the way and of the file ([`open_under`]), which is what
/// is done elsewhere, where `openat2` is missing or refused, and whenever
/// it fails for another reason than a missing file (so that every error
/// reads as [`open_under`] gives it). The same files are opened either
/// way, with the same checks.
pub(crate) struct DirUnder {
    root: std::path::PathBuf,
    dir: Vec<OsString>,
    #[cfg(target_os = "linux")]
    fd: Option<rustix::fd::OwnedFd>,
}

/// Whether `openat2` failed as missing or refused (then not tried again).
#[cfg(target_os = "linux")]
static NO_OPENAT2: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl DirUnder {
    /// The directory `root/dir[0]/…` (each part a real directory, not a
    /// link). Never fails: a directory that cannot be opened leaves every
    /// open to [`open_under`], which says why.
    pub(crate) fn open(root: &Path, dir: &[&std::ffi::OsStr]) -> DirUnder {
        #[cfg(target_os = "linux")]
        let fd = {
            use rustix::fs::{openat2, Mode, OFlags, ResolveFlags, CWD};
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let root_fd = openat2(CWD, root, flags & !OFlags::NOFOLLOW, Mode::empty(), ResolveFlags::empty()).ok();
            let rel: std::path::PathBuf = dir.iter().collect();
            root_fd.and_then(|root_fd| {
                if dir.is_empty() {
                    return Some(root_fd);
                }
                openat2(&root_fd, &rel, flags, Mode::empty(), ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH).ok()
            })
        };
        DirUnder {
            root: root.to_path_buf(),
            dir: dir.iter().map(|d| (*d).to_owned()).collect(),
            #[cfg(target_os = "linux")]
            fd,
        }
    }

    /// Opens the regular file `rel[0]/…` below the directory, as
    /// [`open_under`] opens `root/dir…/rel…`, with its [`Stamp`].
    pub(crate) fn open_file(&self, rel: &[&std::ffi::OsStr]) -> io::Result<(File, Stamp)> {
        #[cfg(target_os = "linux")]
        if let Some(fd) = self.fd.as_ref().filter(|_| !NO_OPENAT2.load(Ordering::Relaxed)) {
            use rustix::fs::{openat2, Mode, OFlags, ResolveFlags};
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
            let path: std::path::PathBuf = rel.iter().collect();
            match openat2(fd, &path, flags, Mode::empty(), ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH) {
                Ok(fd) => {
                    opened(|| {
                        let dir = self.dir.iter().map(OsString::as_os_str);
                        std::iter::once(self.root.as_os_str()).chain(dir).chain(rel.iter().copied()).collect()
                    });
                    let file = File::from(fd);
                    let meta = file.metadata()?;
                    if meta.is_file() {
                        return Ok((file, Stamp::of(&meta)));
                    }
                }
                Err(rustix::io::Errno::NOENT) => {
                    return Err(io::Error::new(io::ErrorKind::NotFound, "no such file or directory"))
                }
                Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => NO_OPENAT2.store(true, Ordering::Relaxed),
                Err(_) => {}
            }
        }
        let parts: Vec<&std::ffi::OsStr> =
            self.dir.iter().map(OsString::as_os_str).chain(rel.iter().copied()).collect();
        let (file, _) = open_under(&self.root, &parts)?;
        let meta = file.metadata()?;
        Ok((file, Stamp::of(&meta)))
    }

    /// The whole of the small file `name` of the directory, which its
    /// listing gave as a regular file, read into `buf` (at most `max`
    /// bytes: a larger file is an error), for a reader of many small files
    /// that needs neither their identity nor their size: on Linux one
    /// `openat2` as [`Self::open_file`]'s, then `read`s into `buf` until one
    /// comes back short, with no `fstat` (a fifth of the system calls of a
    /// file of a few kilobytes). What the `fstat` would have refused fails
    /// as plainly: a directory's `read` is an error, and a FIFO (opened
    /// without blocking) gives no bytes. Elsewhere, or when `openat2`
    /// fails, [`Self::open_file`] and [`read_opened_into`].
    pub(crate) fn read_file_into(&self, name: &std::ffi::OsStr, max: usize, buf: &mut Vec<u8>) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(fd) = self.fd.as_ref().filter(|_| !NO_OPENAT2.load(Ordering::Relaxed)) {
            use rustix::fs::{openat2, Mode, OFlags, ResolveFlags};
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
            match openat2(fd, name, flags, Mode::empty(), ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH) {
                Ok(fd) => {
                    opened(|| {
                        let dir = self.dir.iter().map(OsString::as_os_str);
                        std::iter::once(self.root.as_os_str()).chain(dir).chain([name]).collect()
                    });
                    return read_until_short(fd, max, buf);
                }
                Err(rustix::io::Errno::NOENT) => {
                    return Err(io::Error::new(io::ErrorKind::NotFound, "no such file or directory"))
                }
                Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => NO_OPENAT2.store(true, Ordering::Relaxed),
                Err(_) => {}
            }
        }
        let (file, stamp) = self.open_file(&[name])?;
        read_opened_into(file, stamp.id.size, max, buf)
    }
}

/// Reads `fd` into `buf` (emptied first, its capacity reused, nothing
/// zeroed) until a `read` gives fewer bytes than asked for (the end of a
/// regular file) or none; more than `max` bytes is an error.
#[cfg(target_os = "linux")]
fn read_until_short(fd: rustix::fd::OwnedFd, max: usize, buf: &mut Vec<u8>) -> io::Result<()> {
    /// What a first `read` asks for at least.
    const FIRST: usize = 16 << 10;
    buf.clear();
    buf.reserve(FIRST);
    loop {
        let asked = buf.capacity() - buf.len();
        let n = match rustix::io::read(&fd, rustix::buffer::spare_capacity(buf)) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => {
                buf.clear();
                return Err(e.into());
            }
        };
        if buf.len() > max {
            buf.clear();
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("the file is over the {max} bytes read")));
        }
        if n < asked {
            return Ok(());
        }
        // Full: room for as much again, up to one byte past `max`.
        let more = buf.len().min(max.saturating_add(1) - buf.len()).max(1);
        buf.reserve(more);
    }
}

/// The whole of a small file just opened, whose stamp says it holds `size`
/// bytes: one `read` when it still does; more (up to `max` bytes: a larger
/// file is an error) when it changed since.
pub(crate) fn read_opened(file: File, size: u64, max: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    read_opened_into(file, size, max, &mut buf)?;
    Ok(buf)
}

/// [`read_opened`] into `buf` (its bytes replaced), so that a reader of
/// many small files reuses one buffer.
pub(crate) fn read_opened_into(mut file: File, size: u64, max: usize, buf: &mut Vec<u8>) -> io::Result<()> {
    use io::Read;
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    if size > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the file is {size} bytes, over the {max} read"),
        ));
    }
    // One byte more than the stamp says, to see a file that grew (a new
    // buffer allocated zeroed, which the allocator may have for free).
    if buf.capacity() == 0 {
        *buf = vec![0; size + 1];
    } else {
        buf.clear();
        buf.resize(size + 1, 0);
    }
    let mut len = 0;
    loop {
        let n = match file.read(&mut buf[len..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        len += n;
        if n == 0 || len == size {
            buf.truncate(len);
            return Ok(());
        }
        if len == buf.len() {
            if len > max {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("the file is over the {max} bytes read"),
                ));
            }
            buf.resize((len * 2).min(max + 1), 0);
        }
    }
}

/// What one [`read_line`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineEnd {
    /// A complete line (its `\n` is not kept).
    Line,
    /// The end of the input. `torn_bytes` is the length of an unterminated
    /// last line, which is not a line (0 when the input ended with `\n`).
    End {
        /// Bytes of the unterminated last line.
        torn_bytes: u64,
    },
    /// A line longer than the limit (what was read of it is not kept).
    TooLong,
}

/// Reads the next line of `reader` into `buf` (cleared first), split on
/// `\n` only (a `\u{2028}` inside a string is not a line break), its `\n`
/// removed. A line is a line only once its `\n` is written: an
/// unterminated last line (one a writer may be in the middle of) is the
/// [`End`](LineEnd::End), so that a reader that stops there sees a prefix
/// of the file ending at its last complete line, and a line completed
/// during the read never comes back as a second, bad line. A line longer
/// than `max` bytes is [`TooLong`](LineEnd::TooLong), so memory stays
/// bounded by one line. Every reader of lines (DSH logs, transcripts,
/// rollouts) reads through this.
pub fn read_line<R: io::BufRead>(reader: &mut R, buf: &mut Vec<u8>, max: usize) -> io::Result<LineEnd> {
    use io::{BufRead, Read};
    buf.clear();
    let limit = max as u64 + 1;
    let n = reader.take(limit).read_until(b'\n', buf)?;
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok(LineEnd::Line);
    }
    if n as u64 >= limit {
        return Ok(LineEnd::TooLong);
    }
    Ok(LineEnd::End { torn_bytes: n as u64 })
}

/// `file` from where it stands to its length as of now: a read through it
/// sees the file as it was when the read began, whatever a writer appends
/// meanwhile (with [`read_line`], up to its last complete line).
pub fn as_of_now(file: File) -> io::Result<io::Take<File>> {
    use io::{Read, Seek};
    let len = file.metadata()?.len();
    let at = (&file).stream_position()?;
    Ok(file.take(len.saturating_sub(at)))
}

/// Makes `dir` the private directory of cache files, or says why it is not
/// trusted with them. A missing directory is created with mode 0700, and
/// so are its missing parents (an XDG base directory). An existing one must be a real directory
/// (not a symbolic link: a link could lead the files into a sessions root
/// or into another user's hands), owned by the effective user, and not
/// writable by its group or others (who could plant or swap files in it);
/// then any permission its group or others still have is taken away
/// (0700), so no one else can read what it holds. The cache is never
/// needed for correctness: a caller that gets an error uses none.
pub fn private_dir(dir: &Path) -> Result<(), String> {
    let shown = dir.display();
    let meta = match fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let mut builder = fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            // The directories above it that do not exist yet (an XDG base
            // directory such as `$XDG_CACHE_HOME`) are made 0700 as well,
            // as the XDG specification asks; existing ones are left as
            // they are.
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                builder
                    .recursive(true)
                    .create(parent)
                    .map_err(|e| format!("could not create {}: {e}", parent.display()))?;
                builder.recursive(false);
            }
            match builder.create(dir) {
                // Made by someone else meanwhile: checked below like any other.
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                    return Err(format!("could not create {shown}: {e}"))
                }
                _ => {}
            }
            fs::symlink_metadata(dir).map_err(|e| format!("{shown}: {e}"))?
        }
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    if meta.file_type().is_symlink() {
        return Err(format!("{shown} is a symbolic link"));
    }
    if !meta.is_dir() {
        return Err(format!("{shown} is not a directory"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if meta.uid() != effective_uid() {
            return Err(format!("{shown} belongs to another user (uid {})", meta.uid()));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(format!("{shown} is writable by others (mode {:03o})", meta.mode() & 0o777));
        }
        if meta.mode() & 0o077 != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .map_err(|e| format!("could not make {shown} private: {e}"))?;
        }
    }
    Ok(())
}

/// Whether a cache file (its metadata, not following a link) may be read:
/// a regular file of the effective user that its group and others cannot
/// write. A file anyone else could have written is ignored like a corrupt
/// one.
pub(crate) fn owned_privately(meta: &fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.is_file() && meta.uid() == effective_uid() && meta.mode() & 0o022 == 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// The process's effective user id.
#[cfg(unix)]
fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The complete lines of a file ([`read_line`]), each at most `max` bytes:
/// a longer line is an error, so memory stays bounded by one line. An
/// unterminated last line is not given: the lines end before it
/// ([`torn_bytes`](Self::torn_bytes) says how long it was), and nothing
/// after it is read.
pub struct BoundedLines<R: io::Read = File> {
    reader: io::BufReader<R>,
    buf: Vec<u8>,
    max: usize,
    /// Lines given so far.
    pub count: u64,
    /// Bytes consumed so far (of complete lines).
    pub offset: u64,
    /// The length of the unterminated last line, once the end was reached
    /// (`None` before).
    pub torn_bytes: Option<u64>,
}

impl<R: io::Read> BoundedLines<R> {
    /// Lines of `file` (read from its current position), at most `max` bytes each.
    pub fn new(file: R, max: usize) -> Self {
        BoundedLines {
            reader: io::BufReader::with_capacity(256 << 10, file),
            buf: Vec::new(),
            max,
            count: 0,
            offset: 0,
            torn_bytes: None,
        }
    }

    /// The next complete line without its `\n`; `None` at the end of the
    /// file or at an unterminated last line (and at every call after).
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        if self.torn_bytes.is_some() {
            return Ok(None);
        }
        match read_line(&mut self.reader, &mut self.buf, self.max)? {
            LineEnd::Line => {
                self.count += 1;
                self.offset += self.buf.len() as u64 + 1;
                crate::work::line_read(self.buf.len());
                Ok(Some(&self.buf))
            }
            LineEnd::End { torn_bytes } => {
                self.torn_bytes = Some(torn_bytes);
                Ok(None)
            }
            LineEnd::TooLong => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("line {} is longer than {} bytes", self.count + 1, self.max),
            )),
        }
    }
}

/// Items per batch a [`par_map`] thread takes at a time.
const BATCH: usize = 64;

/// `items.iter().map(f)` on up to four threads, results in order. Meant for
/// work that is a few system calls and a small decode per item (listing a
/// root), which overlaps well even on two cores. Each thread has its own
/// `S` (a reusable decoder, say). A helper thread that cannot start leaves
/// its batches to the calling thread.
pub fn par_map<T, R, S, F>(items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    S: Default,
    F: Fn(&T, &mut S) -> R + Sync,
{
    par_map_by(items, BATCH, f)
}

/// [`par_map`] with `batch` items per batch (1 for items that are each
/// much work, like reading a directory of hundreds of entries).
pub(crate) fn par_map_by<T, R, S, F>(items: &[T], batch: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    S: Default,
    F: Fn(&T, &mut S) -> R + Sync,
{
    let batch = batch.max(1);
    let run = |batch: &[T], state: &mut S| -> Vec<R> { batch.iter().map(|item| f(item, state)).collect() };
    // More threads than cores: a header read may block on the disk.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_mul(2).min(4);
    if threads < 2 || items.len() < 2 * batch {
        return run(items, &mut S::default());
    }
    let batches: Vec<&[T]> = items.chunks(batch).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        let mut state = S::default();
        let mut done = Vec::new();
        loop {
            let b = next.fetch_add(1, Ordering::Relaxed);
            let Some(batch) = batches.get(b) else { return done };
            done.push((b, run(batch, &mut state)));
        }
    };
    let mut results: Vec<Option<Vec<R>>> = batches.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
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
    // Sized once (a growing list of thousands of results is copied and
    // faulted in anew at each doubling).
    let mut out = Vec::with_capacity(items.len());
    for (r, batch) in results.into_iter().zip(&batches) {
        out.extend(r.unwrap_or_else(|| run(batch, &mut state)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn par_map_keeps_order() {
        let items: Vec<u32> = (0..1000).collect();
        let out = par_map(&items, |i, seen: &mut u32| {
            *seen += 1;
            i * 2
        });
        assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn identity_and_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, b"abc").unwrap();
        let (_, id) = open_regular(&path).unwrap();
        assert_eq!(id.size, 3);
        assert_eq!(entry_kind(&path).unwrap(), EntryKind::File);
        assert_eq!(entry_kind(dir.path()).unwrap(), EntryKind::Dir);
        assert_eq!(entry_kind(&dir.path().join("nope")).unwrap(), EntryKind::Missing);
        assert!(open_regular(dir.path()).is_err());
        let names: Vec<_> = sorted_entries(dir.path()).unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, vec![OsString::from("f")]);
    }

    #[test]
    fn files_opened_below_a_directory_follow_no_link() {
        let root = tempfile::tempdir().unwrap();
        let task = root.path().join("tasks").join("t1");
        fs::create_dir_all(&task).unwrap();
        fs::write(task.join("h.json"), b"[1]").unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("h.json"), b"secret").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path(), root.path().join("tasks").join("t2")).unwrap();
            std::os::unix::fs::symlink(task.join("h.json"), task.join("link.json")).unwrap();
        }
        let os = |s: &'static str| std::ffi::OsStr::new(s);
        for dir in [DirUnder::open(root.path(), &[os("tasks")]), DirUnder::open(root.path().join("nope").as_ref(), &[])]
        {
            let found = dir.open_file(&[os("t1"), os("h.json")]);
            if dir.dir.is_empty() {
                // A directory that cannot be opened: every open says why.
                assert_eq!(found.unwrap_err().kind(), io::ErrorKind::NotFound);
                continue;
            }
            let (file, stamp) = found.unwrap();
            let (_, want) = open_stamped(&task.join("h.json")).unwrap();
            assert_eq!(stamp, want);
            assert_eq!(read_opened(file, stamp.id.size, 10).unwrap(), b"[1]");
            let missing = dir.open_file(&[os("t1"), os("none.json")]).unwrap_err();
            assert_eq!(missing.kind(), io::ErrorKind::NotFound);
            assert_eq!(dir.open_file(&[os("t3"), os("h.json")]).unwrap_err().kind(), io::ErrorKind::NotFound);
            #[cfg(unix)]
            for rel in [[os("t2"), os("h.json")], [os("t1"), os("link.json")]] {
                let err = dir.open_file(&rel).unwrap_err();
                assert!(err.to_string().contains(LINK_REASON), "{err}");
            }
            assert!(dir.open_file(&[os("t1")]).is_err(), "a directory is not a regular file");
        }
    }

    /// A file read whole without its size (`read_file_into`): every size
    /// around the buffer's steps read exactly, a reused buffer's old bytes
    /// never kept, more than the limit an error, and what the open with a
    /// stamp refuses (a link, a directory, a missing file) refused too,
    /// with the directory opened and without.
    #[test]
    fn a_file_read_without_its_size_is_read_whole_and_checked_alike() {
        let root = tempfile::tempdir().unwrap();
        let events = root.path().join("events");
        fs::create_dir_all(events.join("sub")).unwrap();
        let sizes = [0usize, 1, 100, (16 << 10) - 1, 16 << 10, (16 << 10) + 1, 40_000, 65_536, 100_000];
        for &n in &sizes {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
            fs::write(events.join(format!("f{n}")), bytes).unwrap();
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink("f100", events.join("link")).unwrap();
        let os = std::ffi::OsStr::new;
        for dir in [DirUnder::open(root.path(), &[os("events")]), DirUnder::open(root.path(), &[os("nope")])] {
            // One buffer for every read, big and dirty after the first ones.
            let mut buf = Vec::new();
            for &n in sizes.iter().rev().chain(&sizes) {
                let name = format!("f{n}");
                let read = dir.read_file_into(os(&name), 200_000, &mut buf);
                if dir.dir == [os("nope")] {
                    assert_eq!(read.unwrap_err().kind(), io::ErrorKind::NotFound);
                    continue;
                }
                read.unwrap();
                assert_eq!(buf, fs::read(events.join(&name)).unwrap(), "{name}");
                // Over the limit, and exactly at it.
                assert!(dir.read_file_into(os(&name), n.saturating_sub(1), &mut buf).is_err() || n == 0, "{name}");
                assert!(buf.is_empty() || n == 0);
                dir.read_file_into(os(&name), n, &mut buf).unwrap();
                assert_eq!(buf.len(), n);
            }
            if dir.dir == [os("nope")] {
                continue;
            }
            assert_eq!(dir.read_file_into(os("none"), 10, &mut buf).unwrap_err().kind(), io::ErrorKind::NotFound);
            assert!(dir.read_file_into(os("sub"), 10, &mut buf).is_err(), "a directory is not read");
            #[cfg(unix)]
            {
                let err = dir.read_file_into(os("link"), 1000, &mut buf).unwrap_err();
                assert!(err.to_string().contains(LINK_REASON), "a link is not followed: {err}");
            }
        }
    }

    #[test]
    fn a_small_read_takes_what_is_there_up_to_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, b"abcdef").unwrap();
        let read = |size: u64, max: usize| read_opened(File::open(&path).unwrap(), size, max);
        assert_eq!(read(6, 6).unwrap(), b"abcdef");
        // The file changed since its stamp: what is there now.
        assert_eq!(read(2, 6).unwrap(), b"abcdef");
        assert_eq!(read(9, 9).unwrap(), b"abcdef");
        assert!(read(2, 4).is_err() && read(7, 6).is_err());
    }

    #[test]
    fn stamps_under_a_project_directory_are_the_full_path_stamps() {
        let root = tempfile::tempdir().unwrap();
        let session = root.path().join("proj").join("sess");
        fs::create_dir_all(&session).unwrap();
        fs::write(session.join("log"), b"abc").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("log", session.join("link")).unwrap();
        let under = StatUnder::open(root.path(), [std::ffi::OsStr::new("proj")].into_iter());
        for rel in ["sess", "sess/log", "sess/link", "sess/missing"] {
            let full = root.path().join("proj").join(rel);
            let stamp = under.lstat("proj".as_ref(), Path::new(rel), &full);
            assert_eq!(stamp, Stamp::lstat(&full), "{rel}");
            assert_eq!(stamp.is_some(), rel != "sess/missing", "{rel}");
        }
        // A project it did not open: the full path.
        let other = root.path().join("other");
        fs::create_dir_all(&other).unwrap();
        assert_eq!(under.lstat("other".as_ref(), Path::new("."), &other), Stamp::lstat(&other));
    }
}
