//! `dsh-session-ref`: cross-session references from the command line, over
//! the sessions of every kind the core reads (a DeepSeek Harness sessions
//! directory, Claude Code transcripts, Codex rollouts, …: `--source` lists
//! them all, docs/sources.md describes each).
//!
//! Exit codes: 0 on success, 2 on usage errors, 1 on contract errors (the
//! contract error code (docs/contract.md §8.2) is printed to stderr as `error: CODE: message`).

use std::process::ExitCode;

mod args;
mod cache;
mod ctx;
mod daemon;
mod example;
mod failure;
mod mcp;
mod print;
mod push;
mod run;
mod save;
mod serve;
mod users;

use args::Cli;
use failure::Failure;
use run::run;

fn main() -> ExitCode {
    restore_sigpipe();
    return_big_blocks();
    // A command this user's daemon answers runs there (the same output).
    #[cfg(target_os = "linux")]
    if let Some(code) = daemon::forward() {
        return code;
    }
    let cli = Cli::parse_or_exit();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(e)) => {
            print::print_error(e.code(), e.message());
            ExitCode::from(1)
        }
    }
}

/// A command piped into `head` ends quietly when `head` has read enough, as
/// a Unix command does: Rust ignores SIGPIPE, so the next write would fail
/// and `println!` would panic ("failed printing to stdout").
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists;
    // `SIG_DFL` is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Big blocks (256 KiB and more) are mapped on their own and given back to
/// the system when freed. glibc otherwise raises that threshold to the size
/// of the biggest block freed so far (up to 32 MiB), so the buffers of one
/// phase (a big log's structure, the dictionary trainer) would stay in
/// the process's memory for the rest of it (figures in BENCHMARKS.md,
/// "Memory").
fn return_big_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: called first thing in `main`, before any other thread exists
    // or allocates; a fixed threshold is a documented setting of glibc.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
    }
}
