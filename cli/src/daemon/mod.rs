//! `dsh-session-ref daemon`: one long-lived process per user that answers
//! the command line, so that a command over thousands of sessions costs
//! what the MCP server's calls cost (docs/store-and-cli.md, "The daemon").
//!
//! A command (`candidates`, `search`, `prepare`, `read`, `show`, `mention`)
//! first tries the daemon's socket (`$XDG_RUNTIME_DIR/dsh-session-ref/`,
//! else `/tmp/dsh-session-ref-<uid>/`, a private directory). When one
//! answers — this user's, the same build, with the same environment for
//! every variable a command reads ([`environment_names`]) — the command's
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
//!
//! The parts: `protocol` (where the daemon listens, who it is, and the
//! bytes on its socket), `client` (a command sent to it, and `daemon
//! start|stop|status`), `server` (the daemon itself), all on Linux only;
//! and [`pool`] (the contexts it keeps between commands, which a command's
//! context asks for on every system).

#[cfg(target_os = "linux")]
use std::ffi::OsString;

#[cfg(target_os = "linux")]
use crate::args::Command;

#[cfg(target_os = "linux")]
mod client;
pub(crate) mod pool;
#[cfg(target_os = "linux")]
mod protocol;
#[cfg(target_os = "linux")]
mod server;

#[cfg(target_os = "linux")]
pub(crate) use client::{command, forward};

/// Every environment variable a command reads beyond the sources' default
/// locations (those come from the kinds' table: `location_variables`): the
/// cache directory and the switches.
#[cfg(target_os = "linux")]
const OWN_VARIABLES: &[&str] = &["XDG_CACHE_HOME", "DSR_NO_WATCH", "DSR_PROGRESS_AFTER_MS"];

/// Every environment variable a command reads (the sources' default
/// locations, the cache directory, the switches): a command goes to the
/// daemon only when each is as it was when the daemon started. A test
/// checks that the code reads no other.
#[cfg(target_os = "linux")]
pub(crate) fn environment_names() -> Vec<&'static str> {
    let mut names = dsh_session_reference::sources::location_variables();
    for name in OWN_VARIABLES {
        if !names.contains(name) {
            names.push(name);
        }
    }
    names
}

/// The values of [`environment_names`] in this process.
#[cfg(target_os = "linux")]
fn environment() -> Vec<(String, Option<OsString>)> {
    environment_names().into_iter().map(|name| (name.to_owned(), std::env::var_os(name))).collect()
}

/// Whether `command` can be answered by the daemon: the commands that read
/// sessions (not the servers `mcp` and `serve`, `demo`, `daemon` and those
/// that read none).
#[cfg(target_os = "linux")]
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
#[cfg(target_os = "linux")]
const FORWARDED: &[&str] = &["candidates", "search", "prepare", "read", "show", "mention"];

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::ffi::OsStr;
    use std::path::Path;

    use clap::FromArgMatches;

    use super::*;
    use crate::args::Cli;

    /// Every environment variable the core and the command line read is in
    /// [`environment_names`]: a daemon started with another value of one would
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
                if path.extension() != Some(OsStr::new("rs")) || path.starts_with(root.join("cli/src/daemon")) {
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
        let compared = environment_names();
        let missing: Vec<&String> = read.iter().filter(|n| !compared.contains(&n.as_str())).collect();
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
        let not: [&[&str]; 9] = [
            &["x", "uri", "encode", "i"],
            // (a push runs in its own process: it writes to a database)
            &["x", "push", "--to", "postgres://h/db"],
            &["x", "users", "list"],
            &["x", "demo"],
            &["x", "daemon", "status"],
            &["x", "mcp"],
            &["x", "serve"],
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
}
