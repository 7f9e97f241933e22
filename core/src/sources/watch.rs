//! Change notifications for the directories under a root, so that a
//! long-lived source can tell "nothing changed since the last listing"
//! without walking and `stat`ing every log again.
//!
//! On Linux a [`DirWatcher`] is an inotify instance with one watch per
//! directory the source walks (the root, each project directory, each
//! session directory). It is read without blocking when a listing starts:
//! the kernel queues an event while the write, rename or unlink that causes
//! it runs, so every change that finished before the listing began is
//! already in the queue when it is drained. That is what makes a listing
//! answered from the cache exact.
//!
//! What the watcher cannot see, and where none is used (the source then
//! walks and `stat`s each listing): systems other than Linux; network and
//! user-space file systems (NFS, SMB/CIFS, FUSE, 9P, Ceph, AFS), where
//! another machine's writes raise no event; a kernel that refuses another
//! watch (`fs.inotify.max_user_watches`) or another instance. A log written
//! through a hard link from outside the root raises no event either (DSH
//! and the other agents never do that). A queue overflow, a failed read, or
//! a root that was moved or replaced make the next listing walk everything.

use std::path::PathBuf;

/// What changed since the last [`DirWatcher::drain`].
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) enum Changes {
    /// Nothing under the watched directories.
    #[default]
    Nothing,
    /// Entries of these watched directories (each listed once), and
    /// nothing else.
    Dirs(Vec<PathBuf>),
    /// Possibly anything: walk the whole root again.
    Everything,
}

impl Changes {
    /// Both sets of changes.
    pub(crate) fn merge(self, other: Changes) -> Changes {
        match (self, other) {
            (Changes::Everything, _) | (_, Changes::Everything) => Changes::Everything,
            (Changes::Nothing, c) | (c, Changes::Nothing) => c,
            (Changes::Dirs(mut a), Changes::Dirs(b)) => {
                for d in b {
                    if !a.contains(&d) {
                        a.push(d);
                    }
                }
                Changes::Dirs(a)
            }
        }
    }
}

/// Whether a source should watch for changes: `DSR_NO_WATCH` set to
/// anything but `0` or empty turns watching off for every source.
pub(crate) fn watching_allowed() -> bool {
    !matches!(std::env::var_os("DSR_NO_WATCH"), Some(v) if !v.is_empty() && v != "0")
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::HashMap;
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::path::{Path, PathBuf};

    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    use rustix::io::Errno;

    use super::Changes;

    /// File systems whose changes may come from elsewhere (or from a user-space
    /// server) without an inotify event: NFS, SMB, CIFS, SMB2, FUSE, 9P,
    /// Ceph, AFS, Coda.
    const REMOTE_MAGICS: [u64; 9] =
        [0x6969, 0x517b, 0xff53_4d42, 0xfe53_4d42, 0x6573_5546, 0x0102_1997, 0x00c3_6400, 0x5346_414f, 0x7372_6577];

    /// An inotify instance and its watches, by directory.
    pub(crate) struct DirWatcher {
        fd: OwnedFd,
        /// The directory of each watch descriptor.
        dirs: HashMap<i32, PathBuf>,
        /// The watch descriptor of each directory.
        watches: HashMap<PathBuf, i32>,
        /// The root's device and inode when watching began.
        root_id: (u64, u64),
        root: PathBuf,
        /// The process that made it: a forked child shares the instance's
        /// queue with its parent (each would drain the other's events), so
        /// the child must not use it.
        pid: u32,
    }

    fn dir_id(path: &Path) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }

    impl DirWatcher {
        /// A watcher for directories under `root`, or `None` where changes
        /// could go unseen (a remote or user-space file system) or inotify
        /// is not available.
        pub(crate) fn new(root: &Path) -> Option<DirWatcher> {
            let fs = rustix::fs::statfs(root).ok()?;
            #[allow(clippy::unnecessary_cast)]
            let magic = (fs.f_type as u64) & 0xffff_ffff;
            if REMOTE_MAGICS.contains(&magic) {
                return None;
            }
            let root_id = dir_id(root)?;
            let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
            Some(DirWatcher {
                fd,
                dirs: HashMap::new(),
                watches: HashMap::new(),
                root_id,
                root: root.to_path_buf(),
                pid: std::process::id(),
            })
        }

        /// Whether this process made the watcher (not a forked child, which
        /// must drop it and start its own).
        pub(crate) fn owned_here(&self) -> bool {
            self.pid == std::process::id()
        }

        /// Starts watching `dir` (the root, a project or a session
        /// directory; links are not followed below the root) for changes of
        /// its entries and of itself. Must be called before the directory
        /// is read, so that no change falls between the read and the watch.
        /// `false` when the kernel refuses (the caller then stops watching).
        pub(crate) fn watch(&mut self, dir: &Path) -> bool {
            let mut flags = WatchFlags::CREATE
                | WatchFlags::DELETE
                | WatchFlags::MOVED_FROM
                | WatchFlags::MOVED_TO
                | WatchFlags::MODIFY
                | WatchFlags::ATTRIB
                | WatchFlags::DELETE_SELF
                | WatchFlags::MOVE_SELF
                | WatchFlags::ONLYDIR;
            if dir != self.root {
                flags |= WatchFlags::DONT_FOLLOW;
            }
            match inotify::add_watch(&self.fd, dir, flags) {
                Ok(wd) => {
                    // The same inode under a new name returns the same
                    // descriptor: it now stands for the new path.
                    if let Some(old) = self.dirs.insert(wd, dir.to_path_buf()) {
                        if old != dir && self.watches.get(&old) == Some(&wd) {
                            self.watches.remove(&old);
                        }
                    }
                    self.watches.insert(dir.to_path_buf(), wd);
                    true
                }
                // Gone or not a directory any more: the walk that follows
                // finds out and the parent's watch has the event.
                Err(Errno::NOENT | Errno::NOTDIR | Errno::ACCESS | Errno::LOOP) => true,
                Err(_) => false,
            }
        }

        /// Stops watching every directory not kept by `keep`.
        pub(crate) fn retain(&mut self, keep: impl Fn(&Path) -> bool) {
            let dropped: Vec<(PathBuf, i32)> =
                self.watches.iter().filter(|(d, _)| !keep(d)).map(|(d, wd)| (d.clone(), *wd)).collect();
            for (dir, wd) in dropped {
                self.watches.remove(&dir);
                if self.dirs.get(&wd) == Some(&dir) {
                    self.dirs.remove(&wd);
                    let _ = inotify::remove_watch(&self.fd, wd);
                }
            }
        }

        /// The changes queued since the last call, without blocking.
        pub(crate) fn drain(&mut self) -> Changes {
            if !self.owned_here() || dir_id(&self.root) != Some(self.root_id) {
                return Changes::Everything;
            }
            let mut buf = [MaybeUninit::<u8>::uninit(); 16 * 1024];
            let mut reader = inotify::Reader::new(&self.fd, &mut buf);
            let mut changed: Vec<PathBuf> = Vec::new();
            loop {
                let event = match reader.next() {
                    Ok(event) => event,
                    Err(Errno::AGAIN) => break,
                    Err(Errno::INTR) => continue,
                    Err(_) => return Changes::Everything,
                };
                let flags = event.events();
                if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                    return Changes::Everything;
                }
                let wd = event.wd();
                let Some(dir) = self.dirs.get(&wd).cloned() else { continue };
                let mut push = |p: PathBuf| {
                    if !changed.contains(&p) {
                        changed.push(p);
                    }
                };
                if flags.intersects(ReadFlags::IGNORED | ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF) {
                    // The directory itself went away or moved: its parent
                    // changed too (and everything if it was the root).
                    if dir == self.root {
                        return Changes::Everything;
                    }
                    if flags.contains(ReadFlags::IGNORED) {
                        self.dirs.remove(&wd);
                        if self.watches.get(&dir) == Some(&wd) {
                            self.watches.remove(&dir);
                        }
                    }
                    if let Some(parent) = dir.parent() {
                        push(parent.to_path_buf());
                    }
                }
                // The entry the event names changed, and so did its directory.
                if let Some(name) = event.file_name() {
                    use std::os::unix::ffi::OsStrExt;
                    push(dir.join(std::ffi::OsStr::from_bytes(name.to_bytes())));
                }
                push(dir);
            }
            if changed.is_empty() {
                Changes::Nothing
            } else {
                Changes::Dirs(changed)
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::Path;

    use super::Changes;

    /// No notifications on this system: sources walk and `stat` instead.
    pub(crate) struct DirWatcher(());

    impl DirWatcher {
        pub(crate) fn new(_root: &Path) -> Option<DirWatcher> {
            None
        }
        pub(crate) fn watch(&mut self, _dir: &Path) -> bool {
            false
        }
        pub(crate) fn retain(&mut self, _keep: impl Fn(&Path) -> bool) {}
        pub(crate) fn owned_here(&self) -> bool {
            false
        }
        pub(crate) fn drain(&mut self) -> Changes {
            Changes::Everything
        }
    }
}

pub(crate) use imp::DirWatcher;

/// Drops a watcher a forked child inherited (it shares its parent's event
/// queue); the source starts its own at its next listing.
pub(crate) fn drop_inherited(watcher: &mut Option<DirWatcher>) {
    if watcher.as_ref().is_some_and(|w| !w.owned_here()) {
        *watcher = None;
    }
}
