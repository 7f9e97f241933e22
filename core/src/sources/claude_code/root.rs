//! The Claude Code kind: where its projects root is, how a root given one
//! level off is taken, and what a root that lists no session holds.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::{ClaudeCodeSource, FORMAT, PREFIX};
use crate::sources::file_source::FileSource;
use crate::sources::kind::{named, seen, took, Env, Kind, Root, Seen, Taken};

/// Claude Code as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "claude-code",
    format: FORMAT,
    about: "Claude Code transcripts (a projects root)",
    prefix: PREFIX,
    location: "$CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects",
    default: Some(default_location),
    also: &[],
    env: &["CLAUDE_CONFIG_DIR", "HOME", "USERPROFILE"],
    root: Root::Own(take),
    layout: "project directories holding <session>.jsonl transcripts (as ~/.claude/projects)",
    open: |root| Ok(ClaudeCodeSource::open(root)?.into_query()),
    empty: empty_note,
};

fn default_location(env: &Env) -> PathBuf {
    env.var("CLAUDE_CONFIG_DIR").unwrap_or_else(|| env.home().join(".claude")).join("projects")
}

/// A Claude Code transcript's name (not a subagent's).
fn is_transcript(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| n.ends_with(".jsonl") && n.len() > 6 && !n.starts_with("agent-"))
}

/// Whether `dir` holds a Claude Code transcript itself.
fn holds_transcripts(dir: &Path) -> bool {
    seen(dir).iter().any(|e| e.file && is_transcript(&e.name))
}

/// A root given for `claude-code`: a projects root (as given), or the
/// directory a root one level off means.
fn take(root: &Path) -> Result<Taken, String> {
    if !root.is_dir() {
        return Ok(None);
    }
    let entries = seen(root);
    let project_dirs = || entries.iter().filter(|e| e.dir && !named(&e.name, &["projects"]));
    if entries.iter().any(|e| e.dir && named(&e.name, &["projects"]))
        && !project_dirs().any(|e| holds_transcripts(&root.join(&e.name)))
    {
        return Ok(took(root, root.join("projects"), "is a Claude Code configuration directory"));
    }
    let here = entries.iter().filter(|e| e.file && is_transcript(&e.name)).count();
    if here > 0 && !project_dirs().any(|e| holds_transcripts(&root.join(&e.name))) {
        let parent = root.parent().unwrap_or(root);
        return Err(format!(
            "claude-code root {} holds {here} transcript(s) itself: it is one project's directory; give the \
             projects root, its parent {} (as ~/.claude/projects)",
            root.display(),
            parent.display()
        ));
    }
    Ok(None)
}

/// Why a Claude Code root lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    let dirs: Vec<&Seen> = entries.iter().filter(|e| e.dir).collect();
    if dirs.is_empty() {
        return kind.expected(root, &entries);
    }
    let transcripts: usize = dirs
        .iter()
        .map(|d| seen(&root.join(&d.name)).iter().filter(|e| e.file && is_transcript(&e.name)).count())
        .sum();
    let head = kind.no_session_in(root);
    match transcripts {
        0 => format!("{head}: its {} directories hold no <session>.jsonl transcript", dirs.len()),
        n => format!(
            "{head}: none of its {n} transcripts holds a message (empty, only summary or file-history lines, or \
             unreadable)"
        ),
    }
}
