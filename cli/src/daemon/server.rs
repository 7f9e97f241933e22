//! The daemon itself: it listens, answers one caller at a time, runs each
//! command on the caller's descriptors, and saves its cache files.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use clap::FromArgMatches;
use dsh_session_reference::{CancelToken, ErrorCode};
use serde_json::{json, Value};

use super::pool::{command_cancel, keep_contexts, kept_sources, save_kept, set_command_cancel};
use super::protocol::{
    build_identity, euid, home, locked, peer_uid, private_file, receive_with_fds, write_reply, Fields, Kind,
    BROKEN_PIPE, MAGIC, MAX_REQUEST,
};
use super::{environment, environment_names, forwardable};
use crate::args::Cli;
use crate::failure::Failure;
use crate::print::display;

/// What the daemon keeps between commands.
struct Daemon {
    listener: UnixListener,
    socket: PathBuf,
    /// The socket file's device and inode: the daemon ends when its socket
    /// is removed or replaced.
    socket_id: (u64, u64),
    started: SystemTime,
    identity: Vec<u8>,
    /// This program's file as it was when the daemon started (said to a
    /// caller of another build).
    exe: String,
    /// Started by a command that found none, not by hand.
    first_use: bool,
    environment: Vec<(String, Option<OsString>)>,
    commands: u64,
    idle_timeout: Option<Duration>,
    /// The daemon's own standard input, output and error, restored after
    /// each command.
    own: [OwnedFd; 3],
    /// Held for the daemon's life: one daemon per user.
    _lock: std::fs::File,
}

/// Serves until stopped, idle for `idle_timeout` minutes (0: never), or its
/// socket is removed. `lock_fd`: its lock, taken for it by the process that
/// started it (else it takes it here); `first_use`: started by a command.
pub(super) fn serve(idle_timeout: u64, lock_fd: Option<RawFd>, first_use: bool) -> Result<(), String> {
    let dir = home()?;
    let lock_path = dir.join("daemon.lock");
    let lock = match lock_fd {
        Some(fd) => handed_lock(fd, &lock_path)?,
        None => private_file(&lock_path, false)?,
    };
    if !locked(&lock) {
        return Err("a daemon already runs for this user (dsh-session-ref daemon status)".into());
    }
    let socket = dir.join("daemon.sock");
    match std::fs::remove_file(&socket) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(format!("{}: {e}", socket.display())),
        _ => {}
    }
    let listener = UnixListener::bind(&socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("{}: {e}", socket.display()))?;
    let meta = std::fs::symlink_metadata(&socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    let own = [0, 1, 2].map(|fd| {
        // SAFETY: dup of a standard descriptor; /dev/null when it is closed.
        let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
        if copy >= 0 {
            // SAFETY: a new descriptor, owned here.
            unsafe { OwnedFd::from_raw_fd(copy) }
        } else {
            std::fs::File::open("/dev/null").map(OwnedFd::from).expect("/dev/null")
        }
    });
    // A closed reader ends the command as it would end the command's own
    // process, never the daemon ([`on_sigpipe`]).
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        DEV_NULL.store(OwnedFd::from(null).into_raw_fd(), Ordering::Relaxed);
    }
    // SAFETY: a handler that only loads and stores atomics and calls dup2,
    // which is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigpipe as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGPIPE, &action, std::ptr::null_mut());
    }
    // SIGTERM and SIGINT (a service manager's stop, Ctrl-C in the
    // foreground) end the daemon as `daemon stop` does: saved, socket gone.
    // SAFETY: a handler that only stores an atomic; no SA_RESTART, so the
    // wait for the next caller returns and sees it.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_stop as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
    install_panic_hook();
    keep_contexts();
    let mut daemon = Daemon {
        listener,
        socket: socket.clone(),
        socket_id: (meta.dev(), meta.ino()),
        started: SystemTime::now(),
        identity: build_identity(),
        exe: std::env::current_exe().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default(),
        first_use,
        environment: environment(),
        commands: 0,
        idle_timeout: (idle_timeout > 0).then(|| Duration::from_secs(idle_timeout.saturating_mul(60))),
        own,
        _lock: lock,
    };
    eprintln!("dsh-session-ref daemon: pid {} on {}", std::process::id(), socket.display());
    let result = daemon.run();
    save_kept();
    if daemon.socket_is_ours() {
        let _ = std::fs::remove_file(&socket);
    }
    result
}

/// The lock handed down as descriptor `fd`, checked to be the file at
/// `path` (and closed at any later exec).
fn handed_lock(fd: RawFd, path: &std::path::Path) -> Result<std::fs::File, String> {
    // SAFETY: a zeroed `stat` is a valid value of the plain C struct.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat of a descriptor number into `stat`; fails when none is open.
    if fd < 3 || unsafe { libc::fstat(fd, &mut stat) } != 0 {
        return Err(format!("--lock-fd {fd}: no such open file"));
    }
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if (stat.st_dev, stat.st_ino) != (meta.dev(), meta.ino()) {
        return Err(format!("--lock-fd {fd}: not {}", path.display()));
    }
    // SAFETY: an open descriptor handed to this process, owned from here
    // on; FD_CLOEXEC keeps it from the commands' children.
    unsafe {
        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        Ok(std::fs::File::from_raw_fd(fd))
    }
}

impl Daemon {
    fn run(&mut self) -> Result<(), String> {
        let mut last = Instant::now();
        let mut saves = crate::save::Schedule::default();
        loop {
            if STOP.load(Ordering::Relaxed) {
                eprintln!("dsh-session-ref daemon: stopped by a signal: ending");
                return Ok(());
            }
            let wait = saves.due_in(Instant::now()).unwrap_or(Duration::from_secs(30));
            let wait = match self.idle_timeout {
                Some(idle) => wait.min(idle.saturating_sub(last.elapsed()).max(Duration::from_millis(1))),
                None => wait,
            };
            if !readable(self.listener.as_raw_fd(), wait) {
                let since = Instant::now();
                if saves.due_in(since) == Some(Duration::ZERO) {
                    save_kept();
                    saves.saved(since, Instant::now());
                }
                if !self.socket_is_ours() {
                    eprintln!("dsh-session-ref daemon: the socket was removed or replaced: ending");
                    return Ok(());
                }
                if self.idle_timeout.is_some_and(|idle| last.elapsed() >= idle) {
                    eprintln!("dsh-session-ref daemon: idle: ending");
                    return Ok(());
                }
                continue;
            }
            let Ok((mut stream, _)) = self.listener.accept() else { continue };
            // A command declined (another build, another environment) or
            // a look whether one listens does not keep the daemon.
            match self.answer(&mut stream) {
                Ok(Some(Kind::Stop)) => return Ok(()),
                Ok(Some(Kind::Run)) => {
                    last = Instant::now();
                    saves.changed(last);
                }
                Ok(Some(Kind::Status)) => last = Instant::now(),
                Ok(None) => {}
                Err(e) => eprintln!("dsh-session-ref daemon: a request failed: {e}"),
            }
        }
    }

    fn socket_is_ours(&self) -> bool {
        std::fs::symlink_metadata(&self.socket).is_ok_and(|m| (m.dev(), m.ino()) == self.socket_id)
    }

    fn status(&self) -> Value {
        let kept: Vec<Value> = kept_sources()
            .into_iter()
            .map(|(specs, cache)| {
                let sources: Vec<Value> =
                    specs.iter().map(|s| json!({"kind": s.kind.name(), "root": s.root.to_string_lossy()})).collect();
                json!({"sources": sources, "cache": cache})
            })
            .collect();
        let started = self.started.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        json!({
            "pid": std::process::id(),
            "version": env!("CARGO_PKG_VERSION"),
            "socket": self.socket.to_string_lossy(),
            "startedAt": started,
            "commands": self.commands,
            "idleTimeoutMinutes": self.idle_timeout.map(|d| d.as_secs() / 60).unwrap_or(0),
            "startedOnFirstUse": self.first_use,
            "kept": kept,
        })
    }

    /// Answers one connection: what it asked, when it was understood and
    /// (a command) answered.
    fn answer(&mut self, stream: &mut UnixStream) -> io::Result<Option<Kind>> {
        if peer_uid(stream)? != euid() {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, "a caller of another user"));
        }
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut first = vec![0u8; 64 << 10];
        let (got, fds) = receive_with_fds(stream, &mut first)?;
        if got == 0 {
            // A caller that only looked whether a daemon listens.
            return Ok(None);
        }
        first.truncate(got);
        let len = first.get(..4).map(|b| u32::from_le_bytes(b.try_into().expect("four bytes")) as usize);
        let len = len.filter(|&l| l <= MAX_REQUEST).ok_or_else(|| io::Error::other("a request too long"))?;
        let mut body = first.split_off(4.min(first.len()));
        if body.len() < len {
            let have = body.len();
            body.resize(len, 0);
            stream.read_exact(&mut body[have..])?;
        }
        stream.set_read_timeout(None)?;
        let mut fields = Fields(&body);
        if fields.next()? != MAGIC {
            return Err(io::Error::other("not a request of this version"));
        }
        let kind = match fields.next()? {
            [b'R'] => Kind::Run,
            [b'S'] => Kind::Status,
            [b'Q'] => Kind::Stop,
            _ => return Err(io::Error::other("an unknown request")),
        };
        match kind {
            Kind::Status => write_reply(stream, b'S', self.status().to_string().as_bytes())?,
            Kind::Stop => write_reply(stream, b'Q', self.status().to_string().as_bytes())?,
            Kind::Run => {
                let fds: [OwnedFd; 3] =
                    fds.try_into().map_err(|_| io::Error::other("a command without its three descriptors"))?;
                if !self.run_command(stream, fields, fds)? {
                    return Ok(None);
                }
            }
        }
        Ok(Some(kind))
    }

    /// Runs the command of a request (true), or declines it (false).
    fn run_command(&mut self, stream: &mut UnixStream, mut fields: Fields<'_>, fds: [OwnedFd; 3]) -> io::Result<bool> {
        let identity = fields.next()?;
        let cwd = PathBuf::from(OsStr::from_bytes(fields.next()?));
        let mut argv = Vec::new();
        for _ in 0..fields.count()? {
            argv.push(OsString::from_vec(fields.next()?.to_vec()));
        }
        let mut environment = Vec::new();
        for _ in 0..environment_names().len() {
            let name = String::from_utf8_lossy(fields.next()?).into_owned();
            let set = fields.next()? == b"=";
            let value = fields.next()?;
            environment.push((name, set.then(|| OsString::from_vec(value.to_vec()))));
        }
        let decline = |stream: &mut UnixStream, why: &str| write_reply(stream, b'D', why.as_bytes()).map(|()| false);
        if identity != self.identity {
            let detail = json!({"exe": self.exe, "startedOnFirstUse": self.first_use});
            return decline(stream, &format!("build: {detail}"));
        }
        if let Some((name, _)) = environment.iter().zip(&self.environment).find(|(a, b)| a != b).map(|(a, _)| a) {
            return decline(stream, &format!("environment: {name} differs"));
        }
        let cli = match crate::args::command().try_get_matches_from(&argv).and_then(|m| Cli::from_arg_matches(&m)) {
            Ok(cli) if forwardable(&cli.command) && !cli.global.no_daemon => cli,
            _ => return decline(stream, "arguments: not a command the daemon answers"),
        };
        if std::env::set_current_dir(&cwd).is_err() {
            return decline(stream, "cwd: the working directory cannot be entered");
        }
        write_reply(stream, b'A', b"")?;
        self.commands += 1;
        let code = self.run_with(stream, &cli, &fds);
        // Between commands it holds no caller's directory (one that is to
        // be removed or unmounted).
        let _ = std::env::set_current_dir("/");
        write_reply(stream, b'X', &code.to_le_bytes()).map(|()| true)
    }

    /// Runs `cli` writing to the caller's descriptors `fds`, cancelled if
    /// the caller goes away; its exit code.
    fn run_with(&self, stream: &UnixStream, cli: &Cli, fds: &[OwnedFd; 3]) -> i32 {
        let cancel = CancelToken::new();
        // The caller's end watched until the command ends (a byte on `done`).
        let (done_reader, mut done) = match io::pipe() {
            Ok((r, w)) => (Some(r), Some(w)),
            Err(_) => (None, None),
        };
        let watcher = {
            let cancel = cancel.clone();
            let fd = stream.try_clone().ok();
            std::thread::Builder::new()
                .name("caller-watch".into())
                .spawn(move || {
                    let (Some(fd), Some(done)) = (fd, done_reader) else { return };
                    if hung_up(fd.as_raw_fd(), done.as_raw_fd()) {
                        cancel.cancel();
                    }
                })
                .ok()
        };
        set_command_cancel(Some(cancel));
        redirect(fds.each_ref().map(|fd| fd.as_raw_fd()));
        PIPE_BROKEN.store(false, Ordering::Relaxed);
        IN_COMMAND.store(true, Ordering::Relaxed);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::run::run(cli)));
        let code = match result {
            Ok(Ok(())) => 0,
            Ok(Err(Failure(e))) => {
                crate::print::print_error(e.code(), e.message());
                1
            }
            Err(_) => {
                let message = PANIC.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
                if message.contains("Broken pipe") || message.contains("failed printing to std") {
                    BROKEN_PIPE
                } else {
                    eprintln!("error: {}: internal error: {}", ErrorCode::ReadFailed, display(&message));
                    1
                }
            }
        };
        let _ = io::stdout().flush();
        let _ = io::stderr().flush();
        IN_COMMAND.store(false, Ordering::Relaxed);
        let code = if PIPE_BROKEN.load(Ordering::Relaxed) { BROKEN_PIPE } else { code };
        redirect(self.own.each_ref().map(|fd| fd.as_raw_fd()));
        set_command_cancel(None);
        if let Some(done) = done.as_mut() {
            let _ = done.write_all(b"x");
        }
        if let Some(watcher) = watcher {
            let _ = watcher.join();
        }
        code
    }
}

/// Whether SIGTERM or SIGINT asked the daemon to end.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Whether a command is running (its output on the caller's descriptors).
static IN_COMMAND: AtomicBool = AtomicBool::new(false);
/// Whether the running command wrote to a pipe no one reads.
static PIPE_BROKEN: AtomicBool = AtomicBool::new(false);
/// `/dev/null`, open for writing.
static DEV_NULL: AtomicI32 = AtomicI32::new(-1);

/// `SIGPIPE` while a command runs: the command's own process would end
/// here, killed by it, so nothing more of it may reach the caller's
/// output or error: both go to `/dev/null`, and the caller ends by the same
/// signal ([`BROKEN_PIPE`]). Outside a command (a reply to a caller gone)
/// the failed write is only an error.
extern "C" fn on_sigpipe(_: libc::c_int) {
    if IN_COMMAND.load(Ordering::Relaxed) {
        PIPE_BROKEN.store(true, Ordering::Relaxed);
        let null = DEV_NULL.load(Ordering::Relaxed);
        if null >= 0 {
            // SAFETY: dup2 is async-signal-safe; both descriptors are open.
            unsafe {
                libc::dup2(null, 1);
                libc::dup2(null, 2);
            }
        }
    }
}

/// Points the standard descriptors at `fds` (flushing what was written
/// before to the old ones).
fn redirect(fds: [RawFd; 3]) {
    let _ = io::stdout().flush();
    let _ = io::stderr().flush();
    for (target, fd) in fds.into_iter().enumerate() {
        // SAFETY: dup2 onto a standard descriptor from one that is open.
        unsafe { libc::dup2(fd, target as RawFd) };
    }
}

/// Whether `fd` becomes readable within `wait`.
fn readable(fd: RawFd, wait: Duration) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ms = wait.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, ms) > 0 }
}

/// Waits until the peer of socket `fd` closes its end (true) or `done`
/// becomes readable (false).
fn hung_up(fd: RawFd, done: RawFd) -> bool {
    let mut p = [
        libc::pollfd { fd, events: libc::POLLRDHUP, revents: 0 },
        libc::pollfd { fd: done, events: libc::POLLIN, revents: 0 },
    ];
    loop {
        // SAFETY: two valid pollfds.
        let ready = unsafe { libc::poll(p.as_mut_ptr(), 2, -1) };
        if ready < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if ready <= 0 || p[1].revents != 0 {
            return false;
        }
        return p[0].revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0;
    }
}

/// The message of the last panic in a command (said as the command's error).
static PANIC: Mutex<Option<String>> = Mutex::new(None);

/// A panic in a command is kept for its error line, not printed.
fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned());
        if command_cancel().is_some() {
            *PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(message.unwrap_or_else(|| info.to_string()));
        } else {
            default(info);
        }
    }));
}
