//! How many times one command opens a session's file, counted by `strace`
//! (installed when missing and possible; the tests say loudly when they
//! cannot run): a page of a Gemini CLI session read through the command
//! line, and through the MCP server's `read_session`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;

const ID: &str = "gemini-cli:1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
const FILE: &str = "session-2026-08-01T10-00-1a2b3c4d.jsonl";

/// `strace`, when it is here or can be installed, and may trace a child.
fn strace() -> Option<&'static str> {
    let works = || {
        let run = Command::new("strace").args(["-f", "-qq", "-o", "/dev/null", "true"]).output();
        run.is_ok_and(|o| o.status.success())
    };
    if !works() {
        // (scripts/test-all.sh installs it first; a test run alone tries here,
        // with the package lists read first when the install finds none)
        let install = || Command::new("apt-get").args(["install", "-y", "-qq", "strace"]).output();
        if !install().is_ok_and(|o| o.status.success()) {
            let _ = Command::new("apt-get").args(["update", "-qq"]).output();
            let _ = install();
        }
    }
    if works() {
        return Some("strace");
    }
    // In CI the count is part of what must pass: a missing strace fails.
    assert!(
        std::env::var_os("CI").is_none(),
        "strace is missing and could not be installed: the opens were not counted"
    );
    eprintln!(
        "\n*** SKIPPED: strace is missing and could not be installed (apt-get install -y strace), \
         or it may not trace here: the opens of a session's file were NOT counted ***\n"
    );
    None
}

/// A directory holding a copy of the Gemini CLI fixture root, the
/// `--source` naming that copy, and where `strace` writes its log.
fn gemini_copy() -> (tempfile::TempDir, String, PathBuf) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/foreign-logs/gemini-cli/synthetic/tmp");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tmp");
    common::copy_tree(&fixture, &root);
    assert!(root.join("myproj/chats").join(FILE).is_file());
    let log = dir.path().join("strace.log");
    (dir, format!("gemini-cli={}", root.display()), log)
}

/// The command under `strace`, writing its log to `log`, in the
/// environment of [`common::cmd`].
fn traced(strace: &str, log: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(strace);
    c.args(["-f", "-qq", "-s", "128", "-e", "trace=open,openat,openat2,read", "-o"]).arg(log);
    c.arg(assert_cmd::cargo::cargo_bin("dsh-session-ref")).args(args);
    for var in ["DSH_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "GEMINI_CLI_HOME"] {
        c.env_remove(var);
    }
    c.env("XDG_CACHE_HOME", common::cache_dir());
    c.env("DSR_NO_DAEMON", "1");
    c.env("XDG_RUNTIME_DIR", common::cache_dir().with_extension("no-daemon"));
    c
}

/// The opens of `FILE` in the log lines.
fn opens<'a>(lines: impl Iterator<Item = &'a str>) -> usize {
    lines.filter(|l| l.contains("open") && l.contains(FILE)).count()
}

/// One `read`, and one `show`, of a Gemini CLI session by its id with the
/// cache warm: the session's file is opened once, for the session, title
/// and surface together, and no other session file is (the id is read as
/// given; only an id no source has is looked for in a listing, which
/// reads the first line of every session file).
#[test]
fn a_cli_read_or_show_opens_the_session_file_once() {
    let Some(strace) = strace() else { return };
    let (_dir, source, log) = gemini_copy();
    for command in ["read", "show"] {
        let args = ["--no-daemon", "--source", &source, command, ID];
        let warm = common::run(&args);
        assert_eq!(warm.code, 0, "{}", warm.stderr);
        let out = traced(strace, &log, &args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), warm.stdout, "the same {command}");
        let log = std::fs::read_to_string(&log).unwrap();
        assert_eq!(opens(log.lines()), 1, "{command}: one open of the file:\n{log}");
        let others = log.lines().filter(|l| l.contains("open") && l.contains("session-2026-")).count();
        assert_eq!(others, 1, "{command}: no other session file opened:\n{log}");
    }
}

/// One `read_session` over MCP of a Gemini CLI session the server has
/// listed: its file opened once (the title comes with the surface read).
#[test]
fn an_mcp_read_session_opens_the_session_file_once() {
    let Some(strace) = strace() else { return };
    let (_dir, source, log) = gemini_copy();
    let mut child = traced(strace, &log, &["--source", &source, "mcp", "--scope", "all"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |line: &str, answered: bool| {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        if answered {
            stdout.read_line(&mut answer).unwrap();
        }
        answer
    };
    ask(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"opens","version":"1"}}}"#,
        true,
    );
    ask(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, false);
    let listed =
        ask(r#"{"method":"tools/call","params":{"name":"list_sessions","arguments":{}},"jsonrpc":"2.0","id":2}"#, true);
    assert!(listed.contains("Parser refactor"), "{listed}");
    // The request names its tool in the first bytes the server reads of
    // it: the mark in the log from which its opens are counted.
    let page = ask(
        &format!(
            r#"{{"method":"tools/call","params":{{"name":"read_session","arguments":{{"id":"{ID}"}}}},"jsonrpc":"2.0","id":3}}"#
        ),
        true,
    );
    assert!(page.contains("Parser refactor") && page.contains("Tests added."), "{page}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let log = std::fs::read_to_string(&log).unwrap();
    let mark = log.lines().position(|l| l.contains("read") && l.contains("\\\"read_session\\\""));
    let mark = mark.unwrap_or_else(|| panic!("the request is not in the log:\n{log}"));
    assert_eq!(opens(log.lines().skip(mark)), 1, "one open of the file for the page:\n{log}");
}
