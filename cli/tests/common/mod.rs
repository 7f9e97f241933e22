//! What the command line's integration tests share: the command without the
//! environment that would point it at the user's own logs, and a run's
//! exit code and output.
#![allow(dead_code)]

use assert_cmd::Command;

/// The command, with `DSH_HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME`,
/// `COPILOT_HOME` and `GEMINI_CLI_HOME` unset, a cache directory of this
/// test run's own (the cache is on by default: never the user's), and no
/// daemon (`DSR_NO_DAEMON`: none asked, none started on first use).
pub fn cmd() -> Command {
    Command::from_std(std_cmd())
}

/// [`cmd`] as the standard library's command (for a test that keeps the
/// process running: a server).
pub fn std_cmd() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("dsh-session-ref"));
    c.env_remove("DSH_HOME");
    c.env_remove("CLAUDE_CONFIG_DIR");
    c.env_remove("CODEX_HOME");
    c.env_remove("COPILOT_HOME");
    c.env_remove("GEMINI_CLI_HOME");
    c.env("XDG_CACHE_HOME", cache_home());
    // No daemon asked and none started: a test that wants one starts its
    // own (tests/daemon.rs), and a runtime directory of its own besides.
    c.env("DSR_NO_DAEMON", "1");
    c.env("XDG_RUNTIME_DIR", cache_home().with_extension("no-daemon"));
    c
}

/// This test process's cache directory (for a test that starts commands
/// of its own with the same environment as [`cmd`]).
pub fn cache_dir() -> &'static std::path::Path {
    cache_home()
}

/// This test process's cache directory, once asked for.
static HOME: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// This test process's cache directory: under cargo's scratch directory
/// for integration tests (`target/tmp`), not the system's temporary
/// directory, removed when the process exits; the directories of earlier
/// runs whose process did not exit (killed; cargo-nextest runs each test in
/// a process of its own, side by side, so only those no longer running)
/// are removed the first time it is asked for, so runs leave nothing
/// behind.
fn cache_home() -> &'static std::path::Path {
    HOME.get_or_init(|| {
        let scratch = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        let own = format!("cli-tests-cache-{}", std::process::id());
        if let Ok(entries) = std::fs::read_dir(scratch) {
            for entry in entries.flatten() {
                let file_name = entry.file_name();
                let pid = file_name.to_str().and_then(|n| n.strip_prefix("cli-tests-cache-"));
                let pid = pid.map(|p| p.split_once('.').map_or(p, |(pid, _)| pid));
                if pid.and_then(|p| p.parse().ok()).is_some_and(|pid| !running(pid)) {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        #[cfg(unix)]
        // SAFETY: registers a handler that only removes this process's
        // own directories; it runs once, at the process's normal exit.
        unsafe {
            libc::atexit(remove_own);
        }
        scratch.join(own)
    })
}

/// Removes this process's cache directory and its daemon's (at exit).
#[cfg(unix)]
extern "C" fn remove_own() {
    if let Some(home) = HOME.get() {
        let _ = std::fs::remove_dir_all(home);
        let _ = std::fs::remove_dir_all(home.with_extension("no-daemon"));
    }
}

/// Whether a process `pid` is running (unknown elsewhere than on Unix:
/// taken as running, its directory kept).
fn running(pid: i32) -> bool {
    #[cfg(unix)]
    {
        // SAFETY: signal 0 sends nothing; it only checks that the process
        // exists and may be signalled.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        alive || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// A run's exit code and output.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The root of the repository.
pub fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// [`run`], failing the test unless the command succeeds.
pub fn ok(args: &[&str]) -> Out {
    let out = run(args);
    assert_eq!(out.code, 0, "{args:?} failed: {}", out.stderr);
    out
}

/// Runs the command with `args`.
pub fn run(args: &[&str]) -> Out {
    run_with(cmd(), args, None)
}

/// Runs `c` with `args`, writing `stdin` to it when given.
pub fn run_with(mut c: Command, args: &[&str], stdin: Option<&str>) -> Out {
    c.args(args);
    if let Some(input) = stdin {
        c.write_stdin(input);
    }
    let o = c.output().unwrap();
    Out {
        code: o.status.code().unwrap(),
        stdout: String::from_utf8(o.stdout).unwrap(),
        stderr: String::from_utf8(o.stderr).unwrap(),
    }
}

/// Copies the directory `from` to `to`, recursively.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
