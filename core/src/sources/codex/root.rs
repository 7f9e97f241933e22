//! The Codex kind: where a Codex home is, how a root given one level off
//! is taken, and what a root that lists no session holds.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::{CodexSource, PREFIX};
use crate::sources::file_source::FileSource;
use crate::sources::kind::{all_digits, named, seen, took, Env, Kind, Root, Seen, Taken};

/// Codex as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "codex",
    format: "Codex",
    about: "Codex CLI rollouts (a Codex home)",
    prefix: PREFIX,
    location: "$CODEX_HOME, else ~/.codex",
    default: Some(default_location),
    also: &[],
    env: &["CODEX_HOME", "HOME", "USERPROFILE"],
    root: Root::Own(take),
    layout: "a Codex home, holding sessions/ or archived_sessions/ (as ~/.codex)",
    open: |root| Ok(CodexSource::open(root)?.into_query()),
    empty: empty_note,
};

fn default_location(env: &Env) -> PathBuf {
    env.var("CODEX_HOME").unwrap_or_else(|| env.home().join(".codex"))
}

fn is_rollout(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
}

/// A root given for `codex`: a home (as given), or the directory a root one
/// level off means.
fn take(root: &Path) -> Result<Taken, String> {
    if !root.is_dir() {
        return Ok(None);
    }
    let entries = seen(root);
    if entries.iter().any(|e| named(&e.name, &["sessions", "archived_sessions", "session_index.jsonl"])) {
        return Ok(None);
    }
    let rollouts = |e: &[Seen]| e.iter().any(|e| (e.file && is_rollout(&e.name)) || (e.dir && all_digits(&e.name)));
    let name = root.file_name().unwrap_or_default();
    if named(name, &["sessions", "archived_sessions"]) && (entries.is_empty() || rollouts(&entries)) {
        if let Some(home) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
            let why = format!("is the {}/ directory of a Codex home", name.to_string_lossy());
            return Ok(took(root, home.to_path_buf(), &why));
        }
    }
    let home_hint = "give the Codex home, the directory holding sessions/ (as ~/.codex)";
    if all_digits(name) {
        // A dated directory (YYYY, MM or DD) inside sessions/.
        let mut at = root;
        for _ in 0..3 {
            let Some(parent) = at.parent() else { break };
            if named(parent.file_name().unwrap_or_default(), &["sessions", "archived_sessions"]) {
                let home = parent.parent().unwrap_or(parent);
                return Err(format!(
                    "codex root {} is a dated directory inside {}: {home_hint}: {}",
                    root.display(),
                    parent.display(),
                    home.display()
                ));
            }
            if !all_digits(parent.file_name().unwrap_or_default()) {
                break;
            }
            at = parent;
        }
    }
    if rollouts(&entries) {
        return Err(format!(
            "codex root {} holds rollouts but is not a Codex home nor its sessions/ directory; {home_hint}",
            root.display()
        ));
    }
    Ok(None)
}

/// Why a Codex root lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    let homes: Vec<&Seen> =
        entries.iter().filter(|e| e.dir && named(&e.name, &["sessions", "archived_sessions"])).collect();
    if homes.is_empty() {
        return kind.expected(root, &entries);
    }
    let mut rollouts = 0;
    let mut stack: Vec<(PathBuf, usize)> = homes.iter().map(|e| (root.join(&e.name), 0)).collect();
    while let Some((dir, depth)) = stack.pop() {
        for e in seen(&dir) {
            if e.file && is_rollout(&e.name) {
                rollouts += 1;
            } else if e.dir && depth < 3 {
                stack.push((dir.join(&e.name), depth + 1));
            }
        }
    }
    let head = kind.no_session_in(root);
    match rollouts {
        0 => format!("{head}: its sessions/ and archived_sessions/ hold no rollout-*.jsonl"),
        n => format!("{head}: its {n} rollouts are empty or unreadable"),
    }
}
