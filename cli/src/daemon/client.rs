//! The caller's side: a command line sent to the daemon, and the commands
//! `daemon start|stop|status|run`.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::process::{Child, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::FromArgMatches;
use dsh_session_reference::{Error, ErrorCode};
use serde_json::{json, Value};

use super::protocol::{
    build_identity, connect, home, home_path, private_file, read_reply, send_with_fds, take_lock, try_connect, Frame,
    Kind, BROKEN_PIPE, MAGIC,
};
use super::server::serve;
use super::{environment, forwardable, FORWARDED};
use crate::args::{Cli, DaemonArgs, DaemonCommand, Global};
use crate::failure::{CliResult, Failure};
use crate::print::display;

/// How many minutes without a command a daemon started on first use waits
/// before it ends.
pub(super) const FIRST_USE_IDLE_MINUTES: u64 = 30;

/// Runs this process's command line in this user's daemon when one answers
/// it (the exit code it ended with); `None` when the command is to run in
/// this process: no daemon, `--no-daemon` or `DSR_NO_DAEMON`, a command it
/// does not answer, a command line that does not parse (its error is this
/// process's to say), or a daemon that declined (another build, another
/// environment). When no daemon runs, one is started in the background for
/// the commands after this one ([`start_on_first_use`]); this one never
/// waits for it.
///
/// Called before the command line is parsed: the daemon parses it (the
/// same definition), so a command it answers costs this process no more
/// than starting and one exchange on the socket. Only a line that names
/// none of the commands it answers, or says `--no-daemon`, is not sent.
pub(crate) fn forward() -> Option<ExitCode> {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let named = argv.iter().skip(1).any(|a| FORWARDED.iter().any(|c| a.as_bytes() == c.as_bytes()));
    if !named || argv.iter().any(|a| a == "--no-daemon") || switched_on("DSR_NO_DAEMON") {
        return None;
    }
    let mut stream = match try_connect() {
        Ok(stream) => stream,
        Err(e) => {
            // No socket, or one no daemon listens on (it ended without
            // removing it): none runs. Any other failure (a directory of
            // another user, a path too long) is left as it is, in silence.
            if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused) {
                start_on_first_use(&argv);
            }
            return None;
        }
    };
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
            // Another environment is not worth saying (the command's answer
            // is the same); another build may be ([`another_build`]).
            if let Some(build) = why.strip_prefix(b"build:") {
                drop(stream);
                another_build(build, &argv);
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

/// Whether the environment variable `name` is set to say yes: to anything
/// but nothing, `0` or `false`.
fn switched_on(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// Starts this user's daemon in the background, for the commands after
/// this one, when none runs and none is starting, and when `argv` is a
/// command line the daemon answers (not help, not a usage error, not
/// `--no-daemon`); not under CI (`CI` set: a job's commands stay in their
/// own processes and leave nothing running), and not when its directory
/// cannot be made private. It fails in silence: the command answers in its
/// own process either way, with the same output.
fn start_on_first_use(argv: &[OsString]) {
    if switched_on("CI") {
        return;
    }
    let cli = crate::args::command().try_get_matches_from(argv).ok().and_then(|m| Cli::from_arg_matches(&m).ok());
    if !cli.is_some_and(|cli| forwardable(&cli.command) && !cli.global.no_daemon) {
        return;
    }
    let Ok(dir) = home() else { return };
    // Held by a daemon that runs or starts: nothing to do. Taken here, it
    // is handed to the daemon, so that no second one starts meanwhile.
    if let Ok(Some(lock)) = take_lock(&dir) {
        let _ = spawn(&dir, lock, FIRST_USE_IDLE_MINUTES, true);
    }
}

/// A daemon of another build declined this command (`detail`: its program
/// file and how it started, as JSON). One started by hand is worth a
/// warning: it would never answer again until restarted. One started on
/// first use by this very program file, since rebuilt or upgraded, is
/// stopped, and this build's started in its place. One of another program
/// file (another installation) is left alone, in silence: declined commands
/// do not keep it from ending when idle.
fn another_build(detail: &[u8], argv: &[OsString]) {
    let detail: Value = serde_json::from_slice(detail.trim_ascii()).unwrap_or(Value::Null);
    if detail["startedOnFirstUse"] != Value::Bool(true) {
        eprintln!(
            "warning: the daemon runs another build of dsh-session-ref; answered in this process (restart it: dsh-session-ref daemon stop && dsh-session-ref daemon start)"
        );
        return;
    }
    let ours = std::env::current_exe().ok();
    if ours.is_some_and(|p| detail["exe"].as_str() == Some(&*p.to_string_lossy())) && !switched_on("CI") {
        // Asked to stop, not waited for (it saves its cache files first):
        // this build's is started here if it has ended, else by a command
        // after this one.
        if let Some(mut stream) = connect() {
            let mut frame = Frame::default();
            frame.put(MAGIC).put(&[Kind::Stop as u8]);
            if stream.write_all(&frame.framed()).is_ok() && read_reply(&mut stream).is_ok() {
                start_on_first_use(argv);
            }
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
        DaemonCommand::Run { idle_timeout, lock_fd, first_use } => {
            serve(*idle_timeout, *lock_fd, *first_use).map_err(failed)
        }
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
    if status["startedOnFirstUse"] == Value::Bool(true) {
        println!("  started: by a command that found none running");
    }
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

/// Starts the daemon in the background and waits until it answers (or,
/// when one is starting already, until that one answers).
fn start(idle_timeout: u64) -> Result<(), String> {
    let dir = home()?;
    let mut child = match take_lock(&dir)? {
        Some(lock) => Some(spawn(&dir, lock, idle_timeout, false)?),
        None => None,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if connect().is_some() {
            return Ok(());
        }
        if let Some(Ok(Some(status))) = child.as_mut().map(|c| c.try_wait()) {
            let log = std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default();
            return Err(format!("the daemon ended at once ({status}): {}", log.trim()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err("the daemon did not answer within 20 s".into())
}

/// Starts `daemon run` in the background, detached: a session of its own,
/// its working directory `/`, its standard error in `daemon.log` beside its
/// socket, nothing else of this process's open, and `lock` (its lock, taken
/// by this process) handed to it, which it holds from then on.
fn spawn(dir: &std::path::Path, lock: std::fs::File, idle_timeout: u64, first_use: bool) -> Result<Child, String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let log = private_file(&dir.join("daemon.log"), true)?;
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let fd = lock.as_raw_fd();
    let mut child = std::process::Command::new(exe);
    child.args(["daemon", "run", "--idle-timeout", &idle_timeout.to_string(), "--lock-fd", &fd.to_string()]);
    if first_use {
        child.arg("--first-use");
    }
    child.current_dir("/").stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
    // SAFETY: only async-signal-safe calls (setsid, syscall, fcntl) on
    // descriptors of the child. It leaves the caller's session and
    // terminal, so it outlives the shell that started it; every descriptor
    // it inherited but its standard ones and the lock is closed at exec, so
    // it holds no pipe of the caller's (a caller's caller waiting for the
    // end of one would otherwise wait for the daemon).
    unsafe {
        child.pre_exec(move || {
            libc::setsid();
            if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) != 0 {
                for other in 3..4096 {
                    libc::fcntl(other, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = child.spawn().map_err(|e| format!("starting the daemon: {e}"))?;
    drop(lock);
    Ok(child)
}
