//! Cursor agent transcripts: a read-only session source over Cursor's
//! projects directory (`~/.cursor/projects`), reading
//! `<project>/agent-transcripts/<id>.jsonl` (also
//! `<project>/agent-transcripts/<id>/<id>.jsonl`) and older `<id>.txt`
//! transcripts.
//!
//! ```no_run
//! use dsh_session_reference::sources::cursor::CursorSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = CursorSource::open("/home/me/.cursor/projects")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Cursor publishes no schema or producer source for these files; what is
//! read here was observed by third-party readers (see `docs/sources.md`),
//! and the IDE's `state.vscdb` and the CLI's `chats/*/store.db` are not read.
//!
//! # Sessions
//!
//! - **id**: `cursor:<id>`, the transcript's file name without its
//!   extension. When `<id>.jsonl` and `<id>.txt` both exist, the `.jsonl` is
//!   read. A zero-byte transcript is not a session yet.
//! - **createdAt**: the transcript records no time: the file's creation
//!   time where the system keeps one, else its modification time.
//! - **cwd**: none. The project directory's name is the path with its
//!   separators replaced by `-`, which cannot be decoded without guessing.
//! - **title**: the first user message (whitespace collapsed, at most 100
//!   characters).
//! - **capturedThroughSeq**: the 0-based number of the last line read (of
//!   a `.txt` transcript too).
//!
//! # The current conversation
//!
//! `.jsonl`: each line `{"role": "user"|"assistant", "message": {"content":
//! [{"type": "text", "text": …}]}}` (or a string content); only `text`
//! blocks. A user message's typed text is inside `<user_query>…</user_query>`
//! (the rest of it is context Cursor added, and is dropped); a user message
//! without the tags is kept whole. Other roles and blocks (tool use and
//! results, thinking) are dropped, as is a line that is not JSON.
//!
//! `.txt`: blocks headed by a line `user:` or `assistant:`. A user block's
//! text is what `<user_query>` encloses (else the whole block); in an
//! assistant block, a paragraph that starts with `[Thinking]`,
//! `[Tool call]` or `[Tool result]` runs to the next blank line and is
//! dropped.
//!
//! No rewind or compaction is known to be recorded in these transcripts:
//! every turn in the file is part of the conversation.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::fs::{as_of_now, FileIdentity};
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::files::{walk_tree, FileSessions, Head, Rel, SessionFiles, Under};
use crate::sources::foreign::{each_line, scan_lines, text_line, title_from_text, LineStats, Transcript};
use crate::sources::kind::{named, seen, Kind, Root, HOME_ENV};
use crate::sources::lenient::{lenient, Content, LStr};

/// What every Cursor session id starts with.
pub const PREFIX: &str = "cursor:";

/// The directory of a project that holds its transcripts.
pub const TRANSCRIPTS_DIR: &str = "agent-transcripts";

/// Cursor as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "cursor",
    format: "Cursor",
    about: "Cursor agent transcripts (its projects directory)",
    prefix: PREFIX,
    location: "~/.cursor/projects",
    default: Some(|env| env.home().join(".cursor").join("projects")),
    also: &[],
    env: HOME_ENV,
    root: Root::InHome("projects"),
    layout: "project directories holding agent-transcripts/<id>.jsonl (as ~/.cursor/projects)",
    open: |root| Ok(CursorSource::open(root)?.into_query()),
    empty: empty_note,
};

/// Why a projects root lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    let with = (entries.iter().filter(|d| d.dir))
        .filter(|d| seen(&root.join(&d.name)).iter().any(|e| e.dir && named(&e.name, &[TRANSCRIPTS_DIR])))
        .count();
    match with {
        0 => kind.expected(root, &entries),
        n => format!(
            "{}: the agent-transcripts/ of its {n} projects hold no readable transcript",
            kind.no_session_in(root)
        ),
    }
}

const QUERY: (&str, &str) = ("<user_query>", "</user_query>");

/// The Cursor layout of a projects root.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cursor;

/// A read-only session source over Cursor's projects directory.
pub type CursorSource = FileSessions<Cursor>;

impl FileSessions<Cursor> {
    /// Opens Cursor's projects directory (a directory; a link to one is
    /// fine).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        FileSessions::with_format(root, Cursor)
    }
}

/// The session id of the transcript at `rel`, if it is one.
fn id_of(rel: &[OsString]) -> Option<&str> {
    let name = rel.last()?.to_str()?;
    let stem = name.strip_suffix(".jsonl").or_else(|| name.strip_suffix(".txt")).filter(|s| !s.is_empty())?;
    match rel {
        [_, _, _] => Some(stem),
        // `<id>/<id>.jsonl`
        [_, _, dir, _] if dir.to_str() == Some(stem) => Some(stem),
        _ => None,
    }
}

fn is_txt(rel: &[OsString]) -> bool {
    rel.last().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".txt"))
}

/// The typed text of a user message: what `<user_query>` encloses (each
/// such block, joined with `"\n"`), else the whole text; trimmed.
fn user_text(text: &str) -> String {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(QUERY.0) {
        let after = &rest[open + QUERY.0.len()..];
        let Some(close) = after.find(QUERY.1) else { break };
        parts.push(after[..close].trim());
        rest = &after[close + QUERY.1.len()..];
    }
    if parts.is_empty() {
        text.trim().to_owned()
    } else {
        parts.join("\n")
    }
}

#[derive(Deserialize, Default)]
struct Message<'a> {
    #[serde(borrow, default)]
    content: Content<'a>,
}

#[derive(Deserialize, Default)]
struct Line<'a> {
    #[serde(borrow, default)]
    role: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    message: Option<Message<'a>>,
}

/// The conversation of a `.jsonl` transcript.
fn read_jsonl(file: File) -> io::Result<(Vec<ConversationItem>, LineStats)> {
    let mut items = Vec::new();
    let stats = each_line(as_of_now(file)?, u64::MAX, |_, bytes| {
        let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes) else { return false };
        let texts = || line.message.as_ref().map(|m| m.content.texts(&["text"]).collect::<Vec<_>>().join("\n"));
        match line.role.get() {
            Some("user") => {
                let text = user_text(&texts().unwrap_or_default());
                if !text.is_empty() {
                    items.push(ConversationItem::new(Role::User, text));
                }
            }
            Some("assistant") => {
                let text = texts().unwrap_or_default();
                if !text.trim().is_empty() {
                    items.push(ConversationItem::new(Role::Assistant, text.trim().to_owned()));
                }
            }
            _ => {}
        }
        true
    })?;
    Ok((items, stats))
}

/// The conversation of a `.txt` transcript.
fn read_txt(file: File) -> io::Result<(Vec<ConversationItem>, LineStats)> {
    let mut items = Vec::new();
    let mut role: Option<Role> = None;
    let mut block = String::new();
    let mut skipping = false;
    let mut lines = 0u64;
    let flush = |role: Option<Role>, block: &mut String, items: &mut Vec<ConversationItem>| {
        let text = match role {
            Some(Role::User) => user_text(block),
            Some(_) => block.trim().to_owned(),
            None => String::new(),
        };
        if let (Some(r), false) = (role, text.is_empty()) {
            items.push(ConversationItem::new(r, text));
        }
        block.clear();
    };
    scan_lines(as_of_now(file)?, |bytes| {
        lines += 1;
        let line = text_line(bytes);
        let line: &str = &line;
        match line {
            "user:" | "assistant:" => {
                flush(role, &mut block, &mut items);
                role = Some(if line == "user:" { Role::User } else { Role::Assistant });
                skipping = false;
            }
            _ if role == Some(Role::Assistant)
                && ["[Thinking]", "[Tool call]", "[Tool result]"].iter().any(|m| line.starts_with(m)) =>
            {
                skipping = true;
            }
            _ if skipping => skipping = !line.trim().is_empty(),
            _ => {
                block.push_str(line);
                block.push('\n');
            }
        }
        true
    })?;
    flush(role, &mut block, &mut items);
    Ok((items, LineStats { lines, skipped: 0 }))
}

impl SessionFiles for Cursor {
    const FORMAT: &'static str = "Cursor";
    const PREFIX: &'static str = PREFIX;

    fn walk(&self, root: &Path, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>) {
        let descend = |rel: &[OsString], name: &OsStr| match rel {
            [] => true,
            [_] => name == TRANSCRIPTS_DIR,
            [_, _] => true,
            _ => false,
        };
        let take = |rel: &[OsString], name: &OsStr| {
            let mut r = rel.to_vec();
            r.push(name.to_owned());
            id_of(&r).is_some()
        };
        let mut found = Vec::new();
        walk_tree(root, 3, &descend, &take, &mut found, rejected);
        // `<id>.txt` beside `<id>.jsonl` is the same session: the `.jsonl` is read.
        let jsonl: std::collections::HashSet<(OsString, String)> =
            found.iter().filter(|r| !is_txt(r)).filter_map(|r| Some((r[0].clone(), id_of(r)?.to_owned()))).collect();
        out.extend(
            found
                .into_iter()
                .filter(|r| !is_txt(r) || id_of(r).is_none_or(|id| !jsonl.contains(&(r[0].clone(), id.to_owned())))),
        );
    }

    fn heads(&self, _: &Under<'_>, rel: &[OsString], _file: File, identity: &FileIdentity) -> io::Result<Vec<Head>> {
        let Some(id) = id_of(rel) else { return Ok(Vec::new()) };
        if identity.size == 0 {
            return Ok(Vec::new());
        }
        Ok(vec![Head { bare: id.to_owned(), created_at: None, cwd: None }])
    }

    fn read(&self, _root: &Path, rel: &[OsString], file: File, _bare: &str) -> io::Result<Transcript> {
        let (items, stats) = if is_txt(rel) { read_txt(file)? } else { read_jsonl(file)? };
        let title = items.iter().find(|i| i.role == Role::User).and_then(|i| title_from_text(&i.text));
        Ok(Transcript { items, title, cwd: None, created_at: None, stats })
    }

    const NAMES_SESSIONS: bool = true;

    /// A transcript's id is its name.
    fn named_for(&self, rel: &[OsString], bare: &str) -> bool {
        id_of(rel) == Some(bare)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_typed_text_is_what_user_query_encloses() {
        assert_eq!(user_text("<user_query>\nfix it\n</user_query>"), "fix it");
        assert_eq!(user_text("ctx\n<user_query>a</user_query>\n<user_query>b</user_query>"), "a\nb");
        assert_eq!(user_text("  plain  "), "plain");
        assert_eq!(user_text("<user_query>unclosed"), "<user_query>unclosed");
    }
}
