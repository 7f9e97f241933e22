//! Aider chat histories: a read-only session source over a directory given
//! by the user (Aider keeps no central directory: each repository has its
//! own `.aider.chat.history.md`), reading that directory's history and the
//! histories of the repositories below it (up to three levels down).
//!
//! ```no_run
//! use dsh_session_reference::sources::aider::AiderSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = AiderSource::open("/home/me/code")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The file is what Aider's `InputOutput` appends (`Aider-AI/aider`,
//! `aider/io.py`, Apache-2.0): `# aider chat started at <time>` starts a
//! run, user input is written as `#### ` lines, tool output and questions
//! as `> ` lines, the model's replies as plain Markdown.
//!
//! # Sessions
//!
//! - **id**: `aider:<directory>#<run>`: the absolute path of the directory
//!   holding the history (the repository), and the 1-based number of the run
//!   in the file. A run with no message (Aider started and quit) is not a
//!   session. Hidden directories and `node_modules` are not looked into.
//! - **createdAt**: the run's `started at` time. Aider writes local time
//!   without a zone; it is read as UTC.
//! - **cwd**: the directory holding the history.
//! - **title**: the run's first user message (whitespace collapsed, at
//!   most 100 characters).
//! - **capturedThroughSeq**: the 0-based number, in the file, of the run's
//!   last complete line read.
//!
//! # The conversation
//!
//! Aider summarizes old turns in memory and records nothing of it: the file
//! is display history, so every turn of a run is taken.
//!
//! - **user**: consecutive `#### ` lines, joined with `"\n"` (the two
//!   trailing spaces of a Markdown line break removed). A line that starts
//!   with `/` is a command and not a message, except `/ask`, `/code`,
//!   `/architect` and `/context`, whose text after the command is.
//! - **assistant**: the other lines between them, trimmed (inside a fenced
//!   code block, a `#### ` or `> ` line is part of the reply).
//! - **dropped**: `> ` lines (tool output, confirmations, warnings).
//!
//! An assistant reply's own level-4 Markdown heading (`#### …` outside a
//! code block) cannot be told from user input and reads as a user line.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::conversation::ConversationItem;
use crate::fs::{as_of_now, FileIdentity};
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::files::{walk_tree, FileSessions, Head, Rel, SessionFiles, Under};
use crate::sources::foreign::{iso_ms, scan_lines, text_line, title_from_text, LineStats, Transcript};
use crate::sources::kind::{named, seen, Kind, Root, Taken};

/// What every Aider session id starts with.
pub const PREFIX: &str = "aider:";

/// The name of Aider's chat history file.
pub const HISTORY_FILE: &str = ".aider.chat.history.md";

/// Aider as a kind of source: read only where it is given.
pub(crate) const KIND: Kind = Kind {
    name: "aider",
    format: "Aider",
    about: "Aider chat histories (a repository, or a directory of them; no default location)",
    prefix: PREFIX,
    location: "no default location: a repository holding .aider.chat.history.md, or a directory of them",
    default: None,
    also: &[],
    env: &[],
    root: Root::Own(take_root),
    layout: "a repository holding .aider.chat.history.md, or repositories up to three levels below",
    open: |root| Ok(AiderSource::open(root)?.into_query()),
    empty: empty_note,
};

/// A chat history file given as the root is taken for its directory.
fn take_root(root: &Path) -> Result<Taken, String> {
    if !root.is_file() || !named(root.file_name().unwrap_or_default(), &[HISTORY_FILE]) {
        return Ok(None);
    }
    let Some(dir) = root.parent() else { return Ok(None) };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let note = format!("{} is an Aider chat history: reading its directory {}", root.display(), dir.display());
    Ok(Some((dir.to_path_buf(), note)))
}

/// Why a directory lists no Aider session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    if entries.iter().any(|e| e.file && named(&e.name, &[HISTORY_FILE])) {
        return format!("{}: its {HISTORY_FILE} holds no run with a message", kind.no_session_in(root));
    }
    kind.expected(root, &entries)
}

/// How a run starts.
const RUN_HEADER: &str = "# aider chat started at ";

/// Commands whose text is a message to the model.
const PROMPT_COMMANDS: [&str; 4] = ["/ask", "/code", "/architect", "/context"];

/// The Aider layout: histories in a directory and the ones below it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Aider;

/// A read-only session source over Aider chat histories.
pub type AiderSource = FileSessions<Aider>;

impl FileSessions<Aider> {
    /// Opens a directory of Aider histories (a repository, or a directory
    /// of repositories; a link to one is fine).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        FileSessions::with_format(root, Aider)
    }
}

/// The absolute form of `root` (links not resolved).
fn absolute(root: &Path) -> PathBuf {
    std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf())
}

/// The directory that holds the history at `rel`, absolute.
fn directory_of(root: &Path, rel: &[OsString]) -> String {
    let mut dir = absolute(root);
    for part in &rel[..rel.len().saturating_sub(1)] {
        dir.push(part);
    }
    dir.to_string_lossy().into_owned()
}

/// One run of a history.
#[derive(Clone, Debug, Default)]
struct Run {
    /// Its `started at` time (ms).
    started: Option<u64>,
    /// Whether it holds a message.
    has_message: bool,
    /// The 0-based number of its last line in the file.
    last_line: u64,
}

/// What a reply or an input is being gathered into.
#[derive(Default)]
struct Gather {
    user: Vec<String>,
    reply: String,
    in_fence: bool,
    /// Whether reply text is kept (a read), or only whether there is some
    /// (a listing, which then holds no more than a line).
    keep: bool,
    reply_seen: bool,
}

impl Gather {
    fn take_user(&mut self) -> Option<String> {
        let lines = std::mem::take(&mut self.user);
        let text = lines.join("\n");
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        if let Some(command) = text.strip_prefix('/') {
            let (name, rest) = command.split_once(char::is_whitespace).unwrap_or((command, ""));
            let name = format!("/{name}");
            return (PROMPT_COMMANDS.contains(&name.as_str()) && !rest.trim().is_empty())
                .then(|| rest.trim().to_owned());
        }
        Some(text.to_owned())
    }

    fn take_reply(&mut self) -> Option<String> {
        if !self.keep {
            return std::mem::take(&mut self.reply_seen).then(String::new);
        }
        let text = std::mem::take(&mut self.reply);
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_owned())
    }
}

/// Reads a history: every run's head, and the items of run `want`
/// (1-based) when given.
fn parse(file: File, want: Option<usize>) -> io::Result<(Vec<Run>, Vec<ConversationItem>, u64)> {
    let mut runs: Vec<Run> = Vec::new();
    let mut items = Vec::new();
    let mut g = Gather { keep: want.is_some(), ..Gather::default() };
    let mut line_no = 0u64;
    let mut lines = 0u64;
    // Ends what is being gathered: into the wanted run's items, and marks
    // the run as holding a message.
    let flush_user = |g: &mut Gather, runs: &mut Vec<Run>, items: &mut Vec<ConversationItem>| {
        if let Some(text) = g.take_user() {
            if let Some(run) = runs.last_mut() {
                run.has_message = true;
            }
            if want == Some(runs.len()) {
                items.push(ConversationItem::new(Role::User, text));
            }
        }
    };
    let flush_reply = |g: &mut Gather, runs: &mut Vec<Run>, items: &mut Vec<ConversationItem>| {
        if let Some(text) = g.take_reply() {
            if let Some(run) = runs.last_mut() {
                run.has_message = true;
            }
            if want == Some(runs.len()) {
                items.push(ConversationItem::new(Role::Assistant, text));
            }
        }
    };
    scan_lines(as_of_now(file)?, |bytes| {
        let n = line_no;
        line_no += 1;
        lines = line_no;
        let text = text_line(bytes);
        let line: &str = &text;
        if let Some(time) = line.strip_prefix(RUN_HEADER) {
            flush_user(&mut g, &mut runs, &mut items);
            flush_reply(&mut g, &mut runs, &mut items);
            g.in_fence = false;
            runs.push(Run { started: iso_ms(&format!("{}Z", time.trim())), has_message: false, last_line: n });
            return true;
        }
        if let Some(run) = runs.last_mut() {
            run.last_line = n;
        } else {
            // Before the first run (a front matter, say): not a session.
            return true;
        }
        let fenced = g.in_fence;
        if !fenced && (line.starts_with("#### ") || line == "####") {
            flush_reply(&mut g, &mut runs, &mut items);
            let input = line.strip_prefix("####").unwrap_or_default();
            let input = input.strip_prefix(' ').unwrap_or(input);
            g.user.push(input.strip_suffix("  ").unwrap_or(input).to_owned());
            return true;
        }
        flush_user(&mut g, &mut runs, &mut items);
        if !fenced && (line.starts_with("> ") || line == ">") {
            flush_reply(&mut g, &mut runs, &mut items);
            return true;
        }
        if line.trim_start().starts_with("```") {
            g.in_fence = !g.in_fence;
        }
        if g.keep {
            g.reply.push_str(line);
            g.reply.push('\n');
        } else if !line.trim().is_empty() {
            g.reply_seen = true;
        }
        true
    })?;
    flush_user(&mut g, &mut runs, &mut items);
    flush_reply(&mut g, &mut runs, &mut items);
    Ok((runs, items, lines))
}

/// The run number of a bare id (`<directory>#<run>`).
fn run_of(bare: &str) -> Option<(&str, usize)> {
    let (dir, run) = bare.rsplit_once('#')?;
    Some((dir, run.parse().ok().filter(|&n| n > 0)?))
}

impl SessionFiles for Aider {
    const FORMAT: &'static str = "Aider";
    const PREFIX: &'static str = PREFIX;
    /// A read fails when the history has no such run with a message, so
    /// the history is read once (not listed first, then read).
    const READ_CHECKS_ID: bool = true;

    fn walk(&self, root: &Path, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>) {
        let descend =
            |_: &[OsString], name: &OsStr| name.to_str().is_some_and(|n| !n.starts_with('.') && n != "node_modules");
        let take = |_: &[OsString], name: &OsStr| name == HISTORY_FILE;
        walk_tree(root, 3, &descend, &take, out, rejected);
    }

    fn heads(&self, root: &Under<'_>, rel: &[OsString], file: File, _identity: &FileIdentity) -> io::Result<Vec<Head>> {
        let (runs, _, _) = parse(file, None)?;
        let dir = directory_of(root.path(), rel);
        Ok(runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.has_message)
            .map(|(i, r)| Head { bare: format!("{dir}#{}", i + 1), created_at: r.started, cwd: Some(dir.clone()) })
            .collect())
    }

    fn read(&self, root: &Path, rel: &[OsString], file: File, bare: &str) -> io::Result<Transcript> {
        let run_no = run_of(bare).map(|(_, n)| n).ok_or_else(|| io::Error::other("no run number in the id"))?;
        let (runs, items, _) = parse(file, Some(run_no))?;
        let run = runs.get(run_no - 1).filter(|r| r.has_message).ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("the history has no run {run_no} with a message"))
        })?;
        let title = items.iter().find(|i| i.role == Role::User).and_then(|i| title_from_text(&i.text));
        Ok(Transcript {
            items,
            title,
            cwd: Some(directory_of(root, rel)),
            created_at: run.started,
            // capturedThroughSeq is the run's last line in the file.
            stats: LineStats { lines: run.last_line + 1, skipped: 0 },
        })
    }

    /// The history in the id's directory, when it is below the root.
    fn guess(&self, root: &Path, bare: &str) -> Vec<Rel> {
        let Some((dir, _)) = run_of(bare) else { return Vec::new() };
        let Ok(below) = Path::new(dir).strip_prefix(absolute(root)) else { return Vec::new() };
        let mut rel: Rel = below.iter().map(OsStr::to_os_string).collect();
        rel.push(OsString::from(HISTORY_FILE));
        vec![rel]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs_of(text: &str, want: usize) -> (Vec<Run>, Vec<(bool, String)>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HISTORY_FILE);
        std::fs::write(&path, text).unwrap();
        let (runs, items, _) = parse(File::open(&path).unwrap(), Some(want)).unwrap();
        (runs, items.into_iter().map(|i| (i.role == Role::User, i.text)).collect())
    }

    #[test]
    fn commands_fences_and_tool_output() {
        let text = "# aider chat started at 2026-06-09 14:01:00\n\n#### /add src/a.py\n\n> Added src/a.py\n\n\
                    #### /ask why  \n#### is it slow?\n\nBecause:\n\n```\n#### not a user line\n> nor output\n```\n\n\
                    > Tokens: 1k sent\n";
        let (runs, items) = runs_of(text, 1);
        assert_eq!(runs.len(), 1);
        assert_eq!(
            items,
            vec![
                (true, "why\nis it slow?".to_owned()),
                (false, "Because:\n\n```\n#### not a user line\n> nor output\n```".to_owned()),
            ]
        );
    }
}
