//! `dsh-session-ref daemon`: one long-lived process per user that answers
//! the command line, so that a command over thousands of sessions costs
//! what the MCP server's calls cost (docs/store-and-cli.md, "The daemon").
//!
//! A command (`candidates`, `search`, `prepare`, `read`, `show`, `mention`)
//! first tries the daemon's socket (`$XDG_RUNTIME_DIR/dsh-session-ref/`,
//! else `/tmp/dsh-session-ref-<uid>/`, a private directory). When one
//! answers — this user's, the same build, with the same environment for
//! every variable a command reads ([`ENVIRONMENT`]) — the command's
//! arguments, working directory and standard input, output and error (the
//! descriptors themselves, `SCM_RIGHTS`) go to it; it runs the command
//! exactly as this process would have, writing to those descriptors, and
//! sends back the exit code. Otherwise, or with `--no-daemon`, the command
//! runs in this process. Either way the output is the same bytes.
//!
//! The daemon keeps, for each set of sources and configuration, the sources
//! and the resolver over them for its whole life ([`kept`]): the DSH store
//! and the Claude Code source watch their roots (inotify), and a listing
//! drains the queued events before it answers, so every change made before
//! a command began is in its answer, with nothing read again that did not
//! change. Commands are answered one at a time. The cache files are saved
//! a few seconds after the last command, and when the daemon ends (`daemon
//! stop`, or an idle timeout). A caller that goes away cancels its command.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use clap::FromArgMatches;
use dsh_session_reference::{CancelToken, Error, ErrorCode};
use serde_json::{json, Value};

use crate::args::{Cli, Command, DaemonArgs, DaemonCommand, Global};
use crate::ctx::{command_cancel, keep_contexts, kept_sources, save_kept, set_command_cancel};
use crate::print::display;
use crate::{CliResult, Failure};

/// Every environment variable a command reads (the sources' default
/// locations, the cache directory, the switches): a command goes to the
/// daemon only when each is as it was when the daemon started. A test
/// checks that the code reads no other.
pub(crate) const ENVIRONMENT: &[&str] = &[
    "HOME",
    "USERPROFILE",
    "APPDATA",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "DSH_HOME",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "COPILOT_HOME",
    "GEMINI_CLI_HOME",
    "OPENCODE_DB",
    "KILO_DB",
    "DSR_NO_WATCH",
    "DSR_PROGRESS_AFTER_MS",
];

/// The first bytes of every request: the protocol and its version.
const MAGIC: &[u8; 8] = b"DSRD\0\0\0\x01";

/// The longest request accepted (arguments, environment, working directory).
const MAX_REQUEST: usize = 16 << 20;

/// The exit code of a command whose output was closed under it (as a
/// process killed by `SIGPIPE`, which the caller then is).
const BROKEN_PIPE: i32 = 128 + libc::SIGPIPE;

/// What a request asks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Run = b'R' as isize,
    Status = b'S' as isize,
    Stop = b'Q' as isize,
}

// ---------------------------------------------------------------------------
// Where the daemon listens, and who it is.

/// The daemon's directory: `$XDG_RUNTIME_DIR/dsh-session-ref`, else
/// `dsh-session-ref-<uid>` in the temporary directory.
fn home_path() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|d| d.is_absolute()) {
        Some(runtime) => runtime.join("dsh-session-ref"),
        None => std::env::temp_dir().join(format!("dsh-session-ref-{}", euid())),
    }
}

/// The daemon's directory ([`home_path`]) for the daemon: made 0700, and
/// refused when it is a link, another user's or writable by others.
fn home() -> Result<PathBuf, String> {
    let dir = home_path();
    dsh_session_reference::fs::private_dir(&dir)?;
    Ok(dir)
}

/// This build: the version, and the executable file's device, inode, size
/// and modification time (a rebuilt or upgraded binary is another build).
fn build_identity() -> Vec<u8> {
    let stamp = std::fs::metadata("/proc/self/exe")
        .or_else(|_| std::env::current_exe().and_then(std::fs::metadata))
        .map(|m| format!("{}:{}:{}:{}.{}", m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
        .unwrap_or_default();
    format!("{} {stamp}", env!("CARGO_PKG_VERSION")).into_bytes()
}

/// The values of [`ENVIRONMENT`] in this process.
fn environment() -> Vec<(String, Option<OsString>)> {
    ENVIRONMENT.iter().map(|&name| (name.to_owned(), std::env::var_os(name))).collect()
}

/// The user id of the process at the other end of `stream`.
fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of a `ucred`.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// A connection to this user's daemon, if one listens (nothing is created
/// to look: a command with no daemon costs one failed `connect`).
fn connect() -> Option<UnixStream> {
    let socket = home_path().join("daemon.sock");
    let stream = UnixStream::connect(socket).ok()?;
    // A socket another user could have put there is never trusted.
    (peer_uid(&stream).ok()? == euid()).then_some(stream)
}

// ---------------------------------------------------------------------------
// The wire: a request is a length and its bytes (the caller's descriptors
// ride with its first bytes); each field is a length and its bytes.

#[derive(Default)]
struct Frame(Vec<u8>);

impl Frame {
    fn put(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.0.extend_from_slice(bytes);
        self
    }
    fn framed(&self) -> Vec<u8> {
        let mut out = (self.0.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&self.0);
        out
    }
}

/// Reads the fields of a frame in turn.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn next(&mut self) -> io::Result<&'a [u8]> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "a malformed request");
        let len = self.0.get(..4).ok_or_else(bad)?;
        let len = u32::from_le_bytes(len.try_into().map_err(|_| bad())?) as usize;
        let field = self.0.get(4..4 + len).ok_or_else(bad)?;
        self.0 = &self.0[4 + len..];
        Ok(field)
    }
    fn count(&mut self) -> io::Result<usize> {
        let field = self.next()?;
        let bytes: [u8; 4] =
            field.try_into().map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a malformed count"))?;
        Ok(u32::from_le_bytes(bytes) as usize)
    }
}

/// Sends `data` with the descriptors `fds` attached to its first bytes.
fn send_with_fds(stream: &UnixStream, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let payload = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(payload as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec { iov_base: data.as_ptr() as *mut libc::c_void, iov_len: data.len() };
    // SAFETY: a zeroed msghdr is valid; every pointer set below outlives
    // the sendmsg call, and the control buffer holds one header of
    // CMSG_SPACE(payload) bytes, written through CMSG_FIRSTHDR/CMSG_DATA.
    let sent = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(payload as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr().cast::<u8>(), libc::CMSG_DATA(cmsg), payload);
        libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL)
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    (&*stream).write_all(&data[sent as usize..])
}

/// Receives the first bytes of a request into `buf` and the descriptors
/// that came with them (at most three).
fn receive_with_fds(stream: &UnixStream, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(3 * std::mem::size_of::<RawFd>() as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut fds = Vec::new();
    // SAFETY: as in `send_with_fds`; each descriptor the kernel put in the
    // control buffer is new to this process and owned once, here.
    let got = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let got = libc::recvmsg(stream.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for i in 0..bytes / std::mem::size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "too many descriptors"));
        }
        got as usize
    };
    Ok((got, fds))
}

/// Reads one reply: its kind and its bytes.
fn read_reply(stream: &mut UnixStream) -> io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    stream.read_exact(&mut head)?;
    let len = u32::from_le_bytes(head[1..].try_into().expect("four bytes")) as usize;
    let mut body = vec![0u8; len.min(MAX_REQUEST)];
    stream.read_exact(&mut body)?;
    Ok((head[0], body))
}

fn write_reply(stream: &mut UnixStream, kind: u8, body: &[u8]) -> io::Result<()> {
    let mut out = vec![kind];
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(body);
    stream.write_all(&out)
}

// ---------------------------------------------------------------------------
// The caller's side.

/// Whether `command` can be answered by the daemon: the commands that read
/// sessions (not `mcp`, `demo`, `daemon` and those that read none).
fn forwardable(command: &Command) -> bool {
    matches!(
        command,
        Command::Candidates { .. }
            | Command::Search { .. }
            | Command::Prepare { .. }
            | Command::Read { .. }
            | Command::Show { .. }
            | Command::Mention { .. }
    )
}

/// The names of the commands the daemon answers ([`forwardable`]).
const FORWARDED: &[&str] = &["candidates", "search", "prepare", "read", "show", "mention"];

/// Runs this process's command line in this user's daemon when one answers
/// it (the exit code it ended with); `None` when the command is to run in
/// this process: no daemon, `--no-daemon`, a command it does not answer, a
/// command line that does not parse (its error is this process's to say),
/// or a daemon that declined (another build, another environment).
///
/// Called before the command line is parsed: the daemon parses it (the
/// same definition), so a command it answers costs this process no more
/// than starting and one exchange on the socket. Only a line that names
/// none of the commands it answers, or says `--no-daemon`, is not sent.
pub(crate) fn forward() -> Option<ExitCode> {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let named = argv.iter().skip(1).any(|a| FORWARDED.iter().any(|c| a.as_bytes() == c.as_bytes()));
    if !named || argv.iter().any(|a| a == "--no-daemon") {
        return None;
    }
    let mut stream = connect()?;
    let cwd = std::env::current_dir().ok()?;
    let mut frame = Frame::default();
    frame.put(MAGIC).put(&[Kind::Run as u8]).put(&build_identity()).put(cwd.as_os_str().as_bytes());
    frame.put(&(argv.len() as u32).to_le_bytes());
    for arg in &argv {
        frame.put(arg.as_bytes());
    }
    for (name, value) in environment() {
        frame.put(name.as_bytes());
        match value {
            Some(v) => frame.put(b"=").put(v.as_bytes()),
            None => frame.put(b"").put(b""),
        };
    }
    send_with_fds(&stream, &frame.framed(), &[0, 1, 2]).ok()?;
    match read_reply(&mut stream) {
        Ok((b'A', _)) => {}
        Ok((b'D', why)) => {
            // Another build is worth saying (the daemon would never answer
            // again until restarted); another environment is not.
            if why.starts_with(b"build:") {
                eprintln!(
                    "warning: the daemon runs another build of dsh-session-ref; answered in this process (restart it: dsh-session-ref daemon stop && dsh-session-ref daemon start)"
                );
            }
            return None;
        }
        _ => return None,
    }
    // From here the daemon writes the command's output.
    match read_reply(&mut stream) {
        Ok((b'X', code)) if code.len() == 4 => {
            let code = i32::from_le_bytes(code[..].try_into().expect("four bytes"));
            if code == BROKEN_PIPE {
                // SAFETY: restores the default action and raises the signal
                // the command's output would have raised in this process.
                unsafe {
                    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                    libc::raise(libc::SIGPIPE);
                }
            }
            Some(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
        _ => {
            crate::print::print_error(
                ErrorCode::ReadFailed,
                "the daemon ended before the command did (run it again, or with --no-daemon)",
            );
            Some(ExitCode::from(1))
        }
    }
}

// ---------------------------------------------------------------------------
// The commands `daemon start|stop|status|run`.

/// `dsh-session-ref daemon …`.
pub(crate) fn command(global: &Global, args: &DaemonArgs) -> CliResult {
    let failed = |m: String| Failure(Error::new(ErrorCode::ReadFailed, m));
    match &args.command {
        DaemonCommand::Status => {
            let status = ask(Kind::Status).map_err(failed)?;
            match status {
                Some(status) => print_status(global, &status, "runs"),
                None if global.json => println!("{}", json!({"running": false})),
                None => println!("no daemon runs (start one with: dsh-session-ref daemon start)"),
            }
            Ok(())
        }
        DaemonCommand::Stop => {
            match ask(Kind::Stop).map_err(failed)? {
                Some(status) => {
                    // "stopped" once it has ended: its socket removed (it
                    // removes it on the way out, after answering), for up
                    // to 5 s, so that a `start` right after finds no daemon.
                    let socket = home_path().join("daemon.sock");
                    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
                    while socket.exists() && std::time::Instant::now() < until {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                    print_status(global, &status, "stopped")
                }
                None if global.json => println!("{}", json!({"running": false})),
                None => println!("no daemon runs"),
            }
            Ok(())
        }
        DaemonCommand::Start { idle_timeout } => {
            if let Some(status) = ask(Kind::Status).map_err(failed)? {
                print_status(global, &status, "already runs");
                return Ok(());
            }
            start(*idle_timeout).map_err(failed)?;
            let status = ask(Kind::Status).map_err(failed)?.ok_or_else(|| failed("the daemon did not start".into()))?;
            print_status(global, &status, "started");
            Ok(())
        }
        DaemonCommand::Run { idle_timeout } => serve(*idle_timeout).map_err(failed),
    }
}

fn print_status(global: &Global, status: &Value, what: &str) {
    if global.json {
        let mut status = status.clone();
        status["running"] = Value::Bool(what != "stopped");
        println!("{status}");
        return;
    }
    let pid = status["pid"].as_u64().unwrap_or(0);
    println!("the daemon {what} (pid {pid}, socket {})", display(status["socket"].as_str().unwrap_or("")));
    if what == "stopped" {
        return;
    }
    println!("  commands answered: {}", status["commands"]);
    match status["idleTimeoutMinutes"].as_u64() {
        Some(0) | None => println!("  ends: at dsh-session-ref daemon stop"),
        Some(m) => println!("  ends: after {m} minutes without a command, or at dsh-session-ref daemon stop"),
    }
    for kept in status["kept"].as_array().into_iter().flatten() {
        let sources: Vec<String> = kept["sources"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| format!("{}={}", s["kind"].as_str().unwrap_or(""), s["root"].as_str().unwrap_or("")))
            .collect();
        let cache = if kept["cache"] == Value::Bool(true) { "" } else { " (no cache)" };
        println!("  keeps: {}{cache}", display(&sources.join(" ")));
    }
}

/// Asks the daemon for its status or to stop: `None` when none runs.
fn ask(kind: Kind) -> Result<Option<Value>, String> {
    let Some(mut stream) = connect() else { return Ok(None) };
    let mut frame = Frame::default();
    frame.put(MAGIC).put(&[kind as u8]);
    let talk = |stream: &mut UnixStream| -> io::Result<Vec<u8>> {
        stream.write_all(&frame.framed())?;
        let (_, body) = read_reply(stream)?;
        if kind == Kind::Stop {
            // It closes the connection when it has saved and removed its socket.
            let mut rest = Vec::new();
            let _ = stream.read_to_end(&mut rest);
        }
        Ok(body)
    };
    let body = talk(&mut stream).map_err(|e| format!("asking the daemon: {e}"))?;
    serde_json::from_slice(&body).map(Some).map_err(|e| format!("the daemon's answer: {e}"))
}

/// `path` in the daemon's directory opened for writing, created 0600,
/// never through a symbolic link; emptied when `truncate`.
fn private_file(path: &std::path::Path, truncate: bool) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(truncate)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Starts the daemon in the background (a session of its own, its standard
/// error in `daemon.log` beside its socket) and waits until it answers.
fn start(idle_timeout: u64) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let dir = home()?;
    let log = dir.join("daemon.log");
    let log = private_file(&log, true)?;
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let mut child = std::process::Command::new(exe);
    child
        .args(["daemon", "run", "--idle-timeout", &idle_timeout.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log);
    // SAFETY: setsid is async-signal-safe; the child leaves the caller's
    // session and terminal, so it outlives the shell that started it.
    unsafe {
        child.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = child.spawn().map_err(|e| format!("starting the daemon: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if connect().is_some() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default();
            return Err(format!("the daemon ended at once ({status}): {}", log.trim()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err("the daemon did not answer within 20 s".into())
}

// ---------------------------------------------------------------------------
// The daemon itself.

/// What the daemon keeps between commands.
struct Daemon {
    listener: UnixListener,
    socket: PathBuf,
    /// The socket file's device and inode: the daemon ends when its socket
    /// is removed or replaced.
    socket_id: (u64, u64),
    started: SystemTime,
    identity: Vec<u8>,
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
/// socket is removed.
fn serve(idle_timeout: u64) -> Result<(), String> {
    let dir = home()?;
    let lock_path = dir.join("daemon.lock");
    let lock = private_file(&lock_path, false)?;
    // SAFETY: flock on an open descriptor.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
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
            last = Instant::now();
            match self.answer(&mut stream) {
                Ok(Some(Kind::Stop)) => return Ok(()),
                Ok(Some(Kind::Run)) => saves.changed(Instant::now()),
                Ok(_) => {}
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
            "kept": kept,
        })
    }

    /// Answers one connection: what it asked, when it was understood.
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
                self.run_command(stream, fields, fds)?;
            }
        }
        Ok(Some(kind))
    }

    /// Runs the command of a request, or declines it.
    fn run_command(&mut self, stream: &mut UnixStream, mut fields: Fields<'_>, fds: [OwnedFd; 3]) -> io::Result<()> {
        let identity = fields.next()?;
        let cwd = PathBuf::from(OsStr::from_bytes(fields.next()?));
        let mut argv = Vec::new();
        for _ in 0..fields.count()? {
            argv.push(OsString::from_vec(fields.next()?.to_vec()));
        }
        let mut environment = Vec::new();
        for _ in 0..ENVIRONMENT.len() {
            let name = String::from_utf8_lossy(fields.next()?).into_owned();
            let set = fields.next()? == b"=";
            let value = fields.next()?;
            environment.push((name, set.then(|| OsString::from_vec(value.to_vec()))));
        }
        let decline = |stream: &mut UnixStream, why: &str| write_reply(stream, b'D', why.as_bytes());
        if identity != self.identity {
            return decline(stream, "build: another build");
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
        write_reply(stream, b'X', &code.to_le_bytes())
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
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::run(cli)));
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Every environment variable the core and the command line read is in
    /// [`ENVIRONMENT`]: a daemon started with another value of one would
    /// otherwise answer as if the caller had its value.
    #[test]
    fn the_environment_compared_is_every_variable_read() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned();
        let mut read = std::collections::BTreeSet::new();
        let mut stack = vec![root.join("core/src"), root.join("cli/src")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if path.extension() != Some(OsStr::new("rs")) || path.ends_with("daemon.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for line in text.lines().filter(|l| l.contains("var(") || l.contains("var_os(") || l.contains("db(\""))
                {
                    // Every quoted NAME of capitals on such a line.
                    for piece in line.split('"').skip(1).step_by(2) {
                        if piece.len() > 2
                            && piece.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                        {
                            read.insert(piece.to_owned());
                        }
                    }
                }
            }
        }
        assert!(read.contains("DSH_HOME") && read.contains("DSR_NO_WATCH"), "the scan finds the reads: {read:?}");
        let missing: Vec<&String> = read.iter().filter(|n| !ENVIRONMENT.contains(&n.as_str())).collect();
        assert!(missing.is_empty(), "read but not compared by the daemon: {missing:?}");
    }

    /// The names a command line is sent to the daemon for are exactly the
    /// commands it answers, and every command is one or the other.
    #[test]
    fn the_commands_sent_are_the_commands_answered() {
        let parse = |line: &[&str]| {
            let m = crate::args::command().try_get_matches_from(line).unwrap();
            Cli::from_arg_matches(&m).unwrap()
        };
        let answered: [&[&str]; 6] = [
            &["x", "candidates"],
            &["x", "search", "w"],
            &["x", "prepare", "--message", "m"],
            &["x", "read", "i"],
            &["x", "show", "i"],
            &["x", "mention", "i"],
        ];
        let not: [&[&str]; 6] = [
            &["x", "uri", "encode", "i"],
            &["x", "demo"],
            &["x", "daemon", "status"],
            &["x", "mcp"],
            &["x", "completions", "bash"],
            &["x", "man"],
        ];
        for line in answered {
            assert!(forwardable(&parse(line).command), "{line:?}");
            assert!(FORWARDED.contains(&line[1]), "{line:?}");
        }
        for line in not {
            assert!(!forwardable(&parse(line).command), "{line:?}");
            assert!(!FORWARDED.contains(&line[1]), "{line:?}");
        }
        let mut every: Vec<String> =
            crate::args::command().get_subcommands().map(|c| c.get_name().to_owned()).filter(|n| n != "help").collect();
        every.sort();
        let mut classified: Vec<String> = answered.iter().chain(&not).map(|l| l[1].to_owned()).collect();
        classified.sort();
        assert_eq!(every, classified, "a new command: say whether the daemon answers it");
    }

    #[test]
    fn fields_round_trip_and_reject_truncation() {
        let mut frame = Frame::default();
        frame.put(b"abc").put(b"").put(&7u32.to_le_bytes());
        let framed = frame.framed();
        let mut fields = Fields(&framed[4..]);
        assert_eq!(fields.next().unwrap(), b"abc");
        assert_eq!(fields.next().unwrap(), b"");
        assert_eq!(fields.count().unwrap(), 7);
        assert!(fields.next().is_err());
        let mut short = Fields(&framed[4..framed.len() - 1]);
        short.next().unwrap();
        short.next().unwrap();
        assert!(short.next().is_err());
    }
}
