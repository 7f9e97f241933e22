//! `dsh-session-ref daemon`: a command it answers prints what the command
//! prints in its own process (the same bytes on stdout and stderr, the same
//! exit code), every change made before the command is in its answer, and a
//! daemon that cannot answer a command exactly (another environment) leaves
//! it to the command's own process.
#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};

use common::{cmd, copy_tree, run_with, Out};
use serde_json::Value;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/sessions")
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// A daemon of this test's own (its own runtime directory), stopped when
/// dropped.
struct Daemon {
    runtime: tempfile::TempDir,
}

impl Daemon {
    fn start() -> Daemon {
        let daemon = Daemon::none();
        let out = daemon.run(&["daemon", "start", "--idle-timeout", "5"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.starts_with("the daemon started (pid "), "{}", out.stdout);
        daemon
    }

    /// A runtime directory of this test's own where no daemon runs yet.
    fn none() -> Daemon {
        Daemon { runtime: tempfile::tempdir().unwrap() }
    }

    /// The command as [`cmd`] makes it, with this daemon's runtime
    /// directory, asking the daemon (`DSR_NO_DAEMON` unset) and starting
    /// one on first use (`CI` unset).
    fn cmd(&self) -> assert_cmd::Command {
        let mut c = cmd();
        c.env("XDG_RUNTIME_DIR", self.runtime.path()).env_remove("DSR_NO_DAEMON").env_remove("CI");
        c
    }

    /// The daemon's directory.
    fn dir(&self) -> PathBuf {
        self.runtime.path().join("dsh-session-ref")
    }

    /// Its status (`daemon status --json`).
    fn status(&self) -> Value {
        let out = self.run(&["daemon", "status", "--json"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    }

    /// Its status once it runs (a daemon started on first use answers soon
    /// after the command that started it ended).
    fn running(&self) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let status = self.status();
            if status["running"] == true || std::time::Instant::now() > deadline {
                assert_eq!(status["running"], true, "no daemon came: {status}");
                return status;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Whether a daemon runs or is starting: its lock is held (a command
    /// that starts one takes the lock first and hands it over, so a daemon
    /// started by a command that has ended holds it by now).
    fn lock_held(&self) -> bool {
        use std::os::fd::AsRawFd;
        let Ok(lock) = std::fs::OpenOptions::new().write(true).open(self.dir().join("daemon.lock")) else {
            return false;
        };
        // SAFETY: flock on an open descriptor (released when it is closed).
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) != 0 }
    }

    fn run(&self, args: &[&str]) -> Out {
        run_with(self.cmd(), args, None)
    }

    /// How many commands the daemon answered so far.
    fn answered(&self) -> u64 {
        let out = self.run(&["daemon", "status", "--json"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let status: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(status["running"], true, "{status}");
        status["commands"].as_u64().unwrap()
    }

    /// Runs `args` in `dir` through the daemon and again in the command's own
    /// process (`--no-daemon`), asserting the same output and exit code and
    /// that the daemon answered the first; the output.
    fn same_in(&self, dir: Option<&Path>, args: &[&str], stdin: Option<&str>) -> Out {
        let before = self.answered();
        let mut through = self.cmd();
        let mut own = self.cmd();
        if let Some(dir) = dir {
            through.current_dir(dir);
            own.current_dir(dir);
        }
        let daemon = run_with(through, args, stdin);
        assert_eq!(self.answered(), before + 1, "{args:?}: answered by the daemon");
        let alone = run_with(own, &[&["--no-daemon"], args].concat(), stdin);
        // A prepared message's id is new on every run.
        let (ours, theirs) = (without_message_ids(&daemon.stdout), without_message_ids(&alone.stdout));
        assert_eq!(
            (daemon.code, &ours, &daemon.stderr),
            (alone.code, &theirs, &alone.stderr),
            "{args:?}: the daemon's answer (left) and the command's own (right)"
        );
        daemon
    }

    fn same(&self, args: &[&str]) -> Out {
        self.same_in(None, args, None)
    }
}

/// `text` with each `"id":"<uuid>"` as `"id":"…"`.
fn without_message_ids(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\"id\":\"") {
        let (head, tail) = rest.split_at(at + 6);
        out.push_str(head);
        let uuid = tail.get(..36).filter(|u| u.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'));
        rest = match uuid {
            Some(_) => {
                out.push('…');
                &tail[36..]
            }
            None => tail,
        };
    }
    out.push_str(rest);
    out
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let out = self.run(&["daemon", "stop"]);
        let stopped = out.stdout.starts_with("the daemon stopped") || out.stdout.starts_with("no daemon runs");
        assert!(stopped || std::thread::panicking(), "{}", out.stdout);
    }
}

#[test]
fn every_command_it_answers_prints_what_the_command_prints_alone() {
    let daemon = Daemon::start();
    let root = examples();
    let root = root.to_str().unwrap();
    let raw = fixtures().join("dsh-logs/raw");
    let raw = raw.to_str().unwrap();
    let claude = format!("claude-code={}", fixtures().join("foreign-logs/claude-code").display());
    let codex = format!("codex={}", fixtures().join("foreign-logs/codex/daaain").display());
    let runs: Vec<Vec<&str>> = vec![
        vec!["--root", root, "candidates"],
        vec!["--root", root, "candidates", "--json"],
        vec!["--root", root, "candidates", "--query", "goal", "--cwd", "/home/dev/alpha"],
        vec!["--root", root, "search", "goal", "snapshot"],
        vec!["--root", root, "search", "goal", "--json", "--limit", "2"],
        vec!["--root", root, "search", "nowhere-at-all"],
        vec!["--root", root, "show", "goal-wrapup"],
        vec!["--root", root, "show", "goal-wrapup", "--json", "--hardened"],
        vec!["--root", root, "read", "goal-wrapup", "--max-bytes", "600"],
        vec!["--root", root, "read", "goal-wrapup", "--json", "--start", "1"],
        vec!["--root", root, "prepare", "--ref", "goal-wrapup", "--prompt"],
        vec!["--root", root, "prepare", "--message", "see @[x](dsh-session:ImdvYWwtd3JhcHVwIg)", "--json"],
        vec!["--root", root, "mention", "goal-wrapup"],
        vec!["--root", root, "--quiet", "--no-cache", "candidates"],
        // Errors: the same message and exit code.
        vec!["--root", root, "show", "no-such-session"],
        vec!["--root", root, "prepare", "--message", "@[x](dsh-session:bad)"],
        vec!["--root", "/no/such/root", "candidates"],
        vec!["--root", raw, "candidates", "--target", "t", "--json"],
        vec!["--root", raw, "search", "the", "--target", "t"],
        vec!["--source", &claude, "--source", &codex, "candidates", "--target", "t", "--limit", "100"],
        vec!["--source", &claude, "show", "claude-code:dag_compact_after_rewind"],
        vec!["--source", &claude, "--source", &codex, "search", "the", "--json"],
    ];
    let mut errors = 0;
    for args in &runs {
        let out = daemon.same(args);
        errors += usize::from(out.code != 0);
    }
    assert_eq!(errors, 3, "the three error cases fail, and only those");
    // A root given relative to the caller's directory is that directory's.
    let parent = examples().parent().unwrap().to_owned();
    let out = daemon.same_in(Some(&parent), &["--root", "sessions", "candidates", "--json"], None);
    assert!(out.stdout.contains("goal-wrapup"), "{}", out.stdout);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = daemon.same_in(Some(elsewhere.path()), &["--root", "sessions", "candidates"], None);
    assert_eq!(out.code, 1, "no such root there: {}", out.stderr);
    // Standard input is the caller's.
    let out = daemon.same_in(
        None,
        &["--root", root, "prepare", "--stdin", "--json"],
        Some("see @[x](dsh-session:ImdvYWwtd3JhcHVwIg)\n"),
    );
    assert!(out.stdout.contains("goal-wrapup"), "{}", out.stdout);
}

fn append_message(log: &Path, seq: u64, text: &str) {
    use std::io::Write;
    let line = serde_json::json!({
        "type": "user/message", "seq": seq, "time": 1760025300000u64 + seq,
        "data": {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}, "role": "user", "id": "goal-wrapup"},
        "surfaceOp": "append",
    });
    let mut f = std::fs::OpenOptions::new().append(true).open(log).unwrap();
    writeln!(f, "{line}").unwrap();
}

#[test]
fn every_change_made_before_a_command_is_in_its_answer() {
    let daemon = Daemon::start();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("sessions");
    copy_tree(&examples(), &root);
    let r = root.to_str().unwrap();
    let ids = |out: &Out| -> Vec<String> {
        let list: Value = serde_json::from_str(&out.stdout).unwrap();
        let mut ids: Vec<String> =
            list.as_array().unwrap().iter().map(|c| c["sessionId"].as_str().unwrap().to_owned()).collect();
        ids.sort();
        ids
    };
    // Warm: the daemon has listed, indexed and watches the root.
    let first = daemon.same(&["--root", r, "candidates", "--json"]);
    assert!(ids(&first).contains(&"goal-wrapup".to_owned()));
    assert_eq!(ids(&daemon.same(&["--root", r, "search", "zebrafish", "--json"])), Vec::<String>::new());
    // A log that grew: the next search finds what it said (no wait between).
    let log = root.join("--home-dev-alpha--/goal-wrapup/session.jsonl");
    append_message(&log, 55, "the zebrafish result is in");
    assert_eq!(ids(&daemon.same(&["--root", r, "search", "zebrafish", "--json"])), vec!["goal-wrapup"]);
    // A new session (after a command that listed and read no more: `show`
    // of a short id, which is found by a listing), then one removed.
    daemon.same(&["--root", r, "show", "goal-wrap"]);
    copy_tree(&root.join("--home-dev-alpha--/goal-wrapup"), &root.join("--home-dev-alpha--/goal-copy"));
    let copy = root.join("--home-dev-alpha--/goal-copy/session.jsonl");
    let text = std::fs::read_to_string(&copy).unwrap().replacen("\"id\":\"goal-wrapup\"", "\"id\":\"goal-copy\"", 1);
    std::fs::write(&copy, text).unwrap();
    let listed = ids(&daemon.same(&["--root", r, "candidates", "--json"]));
    assert!(listed.contains(&"goal-copy".to_owned()), "{listed:?}");
    let found = ids(&daemon.same(&["--root", r, "search", "zebrafish", "--json"]));
    assert_eq!(found, vec!["goal-copy", "goal-wrapup"]);
    std::fs::remove_dir_all(root.join("--home-dev-alpha--/goal-wrapup")).unwrap();
    assert_eq!(ids(&daemon.same(&["--root", r, "search", "zebrafish", "--json"])), vec!["goal-copy"]);
    let listed = ids(&daemon.same(&["--root", r, "candidates", "--json"]));
    assert!(listed.contains(&"goal-copy".to_owned()) && !listed.contains(&"goal-wrapup".to_owned()), "{listed:?}");
    // A log replaced by a rename, as an editor saves.
    let renamed = root.join("--home-dev-alpha--/goal-copy/session.jsonl.tmp");
    std::fs::copy(&copy, &renamed).unwrap();
    append_message(&renamed, 56, "and the okapi too");
    std::fs::rename(&renamed, &copy).unwrap();
    assert_eq!(ids(&daemon.same(&["--root", r, "search", "okapi", "--json"])), vec!["goal-copy"]);
}

#[test]
fn a_daemon_started_in_another_environment_answers_nothing() {
    let daemon = Daemon::start();
    let root = examples();
    let before = daemon.answered();
    let mut other = daemon.cmd();
    other.env("DSH_HOME", "/somewhere/else");
    let out = run_with(other, &["--root", root.to_str().unwrap(), "candidates", "--json"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("goal-wrapup"));
    assert_eq!(daemon.answered(), before, "answered in the command's own process");
    // Commands that read no session never go to it; nor do usage errors
    // and help, which the command says itself.
    let out = daemon.run(&["uri", "encode", "goal-wrapup"]);
    assert_eq!(out.code, 0);
    let usage = daemon.run(&["search"]);
    assert_eq!(usage.code, 2, "{}", usage.stderr);
    assert!(usage.stderr.contains("Usage:"), "{}", usage.stderr);
    let help = daemon.run(&["search", "--help"]);
    assert_eq!(help.code, 0);
    assert!(help.stdout.contains("Usage: dsh-session-ref search"), "{}", help.stdout);
    let no_daemon = daemon.run(&["--no-daemon", "--root", root.to_str().unwrap(), "candidates"]);
    assert_eq!(no_daemon.code, 0);
    assert_eq!(daemon.answered(), before);
}

#[test]
fn start_stop_and_status_say_what_runs() {
    let daemon = Daemon::start();
    let again = daemon.run(&["daemon", "start"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.starts_with("the daemon already runs (pid "), "{}", again.stdout);
    let status = daemon.run(&["daemon", "status"]);
    assert!(status.stdout.contains("commands answered: 0"), "{}", status.stdout);
    assert!(!status.stdout.contains("started: by a command"), "{}", status.stdout);
    let root = examples();
    daemon.run(&["--root", root.to_str().unwrap(), "candidates"]);
    let status = daemon.run(&["daemon", "status"]);
    assert!(status.stdout.contains("commands answered: 1"), "{}", status.stdout);
    assert!(status.stdout.contains(&format!("keeps: dsh={}", root.display())), "{}", status.stdout);
    // Its directory and socket are private.
    use std::os::unix::fs::PermissionsExt;
    let dir = daemon.runtime.path().join("dsh-session-ref");
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(dir.join("daemon.sock")).unwrap().permissions().mode() & 0o777, 0o600);
    // A second daemon in the foreground is refused while one runs.
    let second = daemon.run(&["daemon", "run"]);
    assert_eq!(second.code, 1);
    assert!(second.stderr.contains("a daemon already runs"), "{}", second.stderr);
    let stopped = daemon.run(&["daemon", "stop"]);
    assert!(stopped.stdout.starts_with("the daemon stopped"), "{}", stopped.stdout);
    assert!(!dir.join("daemon.sock").exists(), "the socket goes with it");
    let status = daemon.run(&["daemon", "status", "--json"]);
    assert_eq!(status.stdout.trim(), r#"{"running":false}"#);
    // Commands run in their own process again (and, under CI, start none).
    let mut ci = daemon.cmd();
    ci.env("CI", "true");
    let out = run_with(ci, &["--root", root.to_str().unwrap(), "candidates"], None);
    assert_eq!(out.code, 0);
    assert!(!daemon.lock_held());
    // SIGTERM ends it as `stop` does: the socket goes, nothing is left running.
    let out = daemon.run(&["daemon", "start", "--json"]);
    let pid = serde_json::from_str::<Value>(&out.stdout).unwrap()["pid"].as_i64().unwrap();
    // SAFETY: a signal to the daemon this test started.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) }, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while dir.join("daemon.sock").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!dir.join("daemon.sock").exists(), "the socket goes at SIGTERM");
    assert_eq!(daemon.run(&["daemon", "status", "--json"]).stdout.trim(), r#"{"running":false}"#);
    // (Started again for the drop's stop.)
    let out = daemon.run(&["daemon", "start"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_closed_pipe_ends_the_caller_as_it_ends_a_command_alone() {
    use std::os::unix::process::ExitStatusExt;
    let daemon = Daemon::start();
    let root = examples();
    for no_daemon in [false, true] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_dsh-session-ref"));
        c.env("XDG_RUNTIME_DIR", daemon.runtime.path()).env("XDG_CACHE_HOME", common::cache_dir());
        for name in ["DSH_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "GEMINI_CLI_HOME"] {
            c.env_remove(name);
        }
        if no_daemon {
            c.arg("--no-daemon");
        }
        let out = c
            .args(["--root", root.to_str().unwrap(), "candidates"])
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
        assert_eq!(out.status.signal(), Some(13), "ended by SIGPIPE ({no_daemon}): {:?}", out.status);
    }
    // The daemon answers on.
    assert_eq!(daemon.same(&["--root", root.to_str().unwrap(), "candidates"]).code, 0);
}

/// The output of `args` in the command's own process, where no daemon runs.
fn alone(args: &[&str]) -> Out {
    let none = Daemon::none();
    run_with(none.cmd(), &[&["--no-daemon"], args].concat(), None)
}

#[test]
fn a_first_command_starts_the_daemon_and_the_next_is_answered_by_it() {
    let daemon = Daemon::none();
    let root = examples();
    let args = ["--root", root.to_str().unwrap(), "search", "goal", "--json"];
    assert_eq!(daemon.status()["running"], false);
    // The first answers in its own process, with the same output, and
    // starts the daemon in the background.
    let first = daemon.run(&args);
    let own = alone(&args);
    assert_eq!((first.code, &first.stdout, &first.stderr), (own.code, &own.stdout, &own.stderr));
    let status = daemon.running();
    assert_eq!(status["startedOnFirstUse"], true, "{status}");
    assert_eq!(status["idleTimeoutMinutes"], 30, "{status}");
    assert_eq!(status["commands"], 0, "the first command answered itself: {status}");
    // Its log beside its socket, both private.
    use std::os::unix::fs::PermissionsExt;
    for file in ["daemon.log", "daemon.sock"] {
        let mode = std::fs::metadata(daemon.dir().join(file)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
    let text = daemon.run(&["daemon", "status"]);
    assert!(text.stdout.contains("started: by a command that found none running"), "{}", text.stdout);
    assert!(text.stdout.contains("ends: after 30 minutes without a command"), "{}", text.stdout);
    // The second is answered by it: the same bytes.
    let second = daemon.same(&args);
    assert_eq!(second.stdout, own.stdout);
    assert_eq!(daemon.answered(), 1, "the second call, and only it");
    // Its process is detached: a session of its own, its working directory
    // `/`, nothing open but its standard descriptors, its lock, its socket
    // and what it reads and watches.
    let pid = status["pid"].as_u64().unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    assert_eq!(fields[3], pid.to_string(), "the leader of its own session: {stat}");
    assert_eq!(std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(), Path::new("/"));
    let mut pipes = 0;
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().flatten() {
        let target = std::fs::read_link(fd.path()).unwrap_or_default();
        pipes += usize::from(target.to_string_lossy().starts_with("pipe:"));
    }
    assert_eq!(pipes, 0, "it holds no pipe of its caller's");
}

#[test]
fn nothing_starts_a_daemon_when_told_not_to_or_when_it_could_not_answer() {
    let root = examples();
    let root = root.to_str().unwrap();
    let args = ["--root", root, "candidates"];
    let own = alone(&args);
    assert_eq!(own.code, 0, "{}", own.stderr);
    // `--no-daemon`, `DSR_NO_DAEMON`, `CI`: the same output, no daemon.
    type Case<'a> = (&'a [&'a str], Option<(&'a str, &'a str)>);
    let cases: [Case; 5] = [
        (&["--no-daemon"], None),
        (&[], Some(("DSR_NO_DAEMON", "1"))),
        (&[], Some(("DSR_NO_DAEMON", "yes"))),
        (&[], Some(("CI", "true"))),
        (&[], Some(("CI", "1"))),
    ];
    for (flags, var) in cases {
        let daemon = Daemon::none();
        let mut c = daemon.cmd();
        if let Some((name, value)) = var {
            c.env(name, value);
        }
        let out = run_with(c, &[flags, &args].concat(), None);
        assert_eq!((out.code, &out.stdout, &out.stderr), (own.code, &own.stdout, &own.stderr), "{flags:?} {var:?}");
        assert!(!daemon.lock_held(), "{flags:?} {var:?}: no daemon started");
        assert!(!daemon.dir().join("daemon.sock").exists(), "{flags:?} {var:?}");
    }
    // Nor a command line it would not answer: help, a usage error, a
    // command that reads no session though a word of it names one.
    let daemon = Daemon::none();
    for line in [&["search", "--help"][..], &["search"], &["uri", "encode", "search"], &["--root", root, "nosuch"]] {
        daemon.run(line);
        assert!(!daemon.lock_held(), "{line:?}: no daemon started");
    }
    // `DSR_NO_DAEMON=0` and `CI=false` say no.
    for (name, value) in [("DSR_NO_DAEMON", "0"), ("CI", "false")] {
        let daemon = Daemon::none();
        let mut c = daemon.cmd();
        c.env(name, value);
        let out = run_with(c, &args, None);
        assert_eq!(out.stdout, own.stdout);
        daemon.running();
    }
}

#[test]
fn a_daemon_directory_that_cannot_be_used_leaves_the_command_alone_in_silence() {
    let root = examples();
    let args = ["--root", root.to_str().unwrap(), "candidates"];
    let own = alone(&args);
    // The directory is a file; then it is open to others.
    let daemon = Daemon::none();
    std::fs::write(daemon.dir(), "").unwrap();
    let out = daemon.run(&args);
    assert_eq!((out.code, &out.stdout, &out.stderr), (own.code, &own.stdout, &own.stderr));
    std::fs::remove_file(daemon.dir()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(daemon.dir()).unwrap();
    std::fs::set_permissions(daemon.dir(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = daemon.run(&args);
    assert_eq!((out.code, &out.stdout, &out.stderr), (own.code, &own.stdout, &own.stderr));
    assert!(!daemon.lock_held() && !daemon.dir().join("daemon.sock").exists());
}

#[test]
fn a_stale_socket_is_replaced_by_the_daemon_a_command_starts() {
    use std::os::unix::fs::PermissionsExt;
    let daemon = Daemon::none();
    let root = examples();
    let args = ["--root", root.to_str().unwrap(), "candidates", "--json"];
    // A daemon that ended without removing its socket (killed).
    std::fs::create_dir(daemon.dir()).unwrap();
    std::fs::set_permissions(daemon.dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
    drop(std::os::unix::net::UnixListener::bind(daemon.dir().join("daemon.sock")).unwrap());
    assert!(daemon.dir().join("daemon.sock").exists());
    let out = daemon.run(&args);
    assert_eq!(out.stdout, alone(&args).stdout);
    daemon.running();
    daemon.same(&args);
}

#[test]
fn parallel_first_commands_start_one_daemon() {
    let daemon = Daemon::none();
    let root = examples();
    let args = ["--root", root.to_str().unwrap(), "search", "goal", "--json"];
    let own = alone(&args);
    let children: Vec<std::process::Child> = (0..8)
        .map(|_| {
            let mut c = common::std_cmd();
            c.env("XDG_RUNTIME_DIR", daemon.runtime.path()).env_remove("DSR_NO_DAEMON").env_remove("CI");
            c.args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), own.stdout);
        assert_eq!(String::from_utf8(out.stderr).unwrap(), own.stderr);
    }
    let status = daemon.running();
    // Every process of this user running `daemon run` in this directory.
    let runtime = format!("XDG_RUNTIME_DIR={}", daemon.runtime.path().display());
    let mut daemons = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u64>() else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let is_daemon = cmdline.split(|&b| b == 0).any(|a| a == b"run") && cmdline.windows(6).any(|w| w == b"daemon");
        if is_daemon && environ.split(|&b| b == 0).any(|v| v == runtime.as_bytes()) {
            daemons.push(pid);
        }
    }
    assert_eq!(daemons, vec![status["pid"].as_u64().unwrap()], "one daemon");
}

#[test]
fn a_daemon_of_an_older_build_gives_way_to_the_new_one_in_silence() {
    let daemon = Daemon::none();
    let root = examples();
    let args = ["--root", root.to_str().unwrap(), "candidates"];
    let own = alone(&args);
    // This program installed as a file of its own, which starts the daemon.
    let bin = tempfile::tempdir().unwrap();
    let installed = bin.path().join("dsh-session-ref");
    let install = || {
        let fresh = bin.path().join("new");
        std::fs::copy(env!("CARGO_BIN_EXE_dsh-session-ref"), &fresh).unwrap();
        std::fs::rename(&fresh, &installed).unwrap();
    };
    install();
    let from = |program: &Path| {
        let mut c = assert_cmd::Command::new(program);
        for name in ["DSH_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "GEMINI_CLI_HOME", "CI"] {
            c.env_remove(name);
        }
        c.env_remove("DSR_NO_DAEMON").env("XDG_CACHE_HOME", common::cache_dir());
        c.env("XDG_RUNTIME_DIR", daemon.runtime.path());
        run_with(c, &args, None)
    };
    let same = |out: Out| assert_eq!((out.code, &out.stdout, &out.stderr), (own.code, &own.stdout, &own.stderr));
    same(from(&installed));
    let old = daemon.running()["pid"].as_u64().unwrap();
    // Another program file (another installation): answered here, nothing
    // said, the daemon left alone.
    same(from(Path::new(env!("CARGO_BIN_EXE_dsh-session-ref"))));
    assert_eq!(daemon.running()["pid"].as_u64(), Some(old));
    // The same file upgraded: answered here, nothing said; the old daemon
    // stopped and the new build's started.
    install();
    same(from(&installed));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut pid = Some(old);
    while std::time::Instant::now() < deadline && pid.is_none_or(|p| p == old) {
        let out = from(&installed);
        same(out);
        let status = daemon.status();
        pid = if status["running"] == true { status["pid"].as_u64() } else { None };
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(pid.is_some_and(|p| p != old), "a new daemon: {pid:?}");
    assert!(ended(old), "the old daemon ended");
    // (The drop's `daemon stop` is of another build: stopped by the file.)
    let mut stop = assert_cmd::Command::new(&installed);
    stop.env("XDG_RUNTIME_DIR", daemon.runtime.path()).args(["daemon", "stop"]).assert().success();
}

/// Whether process `pid` has ended (gone, or a zombie not yet reaped).
fn ended(pid: u64) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
        if matches!(state, None | Some("Z" | "X")) {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
