//! The DSH kind: where its sessions root is, how a root given one level
//! off is taken, and what a root that lists no session holds.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::layout::Encoding;
use super::DshStore;
use crate::sources::kind::{named, seen, took, Env, Kind, Root, Seen, Taken};

/// DSH as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "dsh",
    format: "DSH",
    about: "DeepSeek Harness session logs (a sessions root)",
    prefix: "",
    location: "$DSH_HOME/sessions, else ~/.dsh/sessions",
    default: Some(default_location),
    also: &[],
    env: &["DSH_HOME", "HOME", "USERPROFILE"],
    root: Root::Own(take),
    layout: "project directories of session directories holding session.jsonl (as ~/.dsh/sessions)",
    open: |root| Ok(Arc::new(DshStore::open(root)?)),
    empty: empty_note,
};

fn default_location(env: &Env) -> PathBuf {
    env.var("DSH_HOME").unwrap_or_else(|| env.home().join(".dsh")).join("sessions")
}

/// A DSH log file name of any generation.
fn is_dsh_log(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| Encoding::from_file_name(n).is_some())
}

/// Whether `dir` holds a DSH session log itself.
fn holds_dsh_log(dir: &Path) -> bool {
    seen(dir).iter().any(|e| e.file && is_dsh_log(&e.name))
}

/// Whether `dir` holds DSH session directories (each holding a log).
fn holds_dsh_sessions(dir: &Path) -> bool {
    seen(dir).iter().filter(|e| e.dir).any(|e| holds_dsh_log(&dir.join(&e.name)))
}

/// A DSH project directory's name: `--<key>--` or `_no-cwd`.
fn dsh_project_name(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| n == "_no-cwd" || (n.len() >= 4 && n.starts_with("--") && n.ends_with("--")))
}

/// A root given for `dsh`: a sessions root (as given), or the directory a
/// root one level off means.
fn take(root: &Path) -> Result<Taken, String> {
    if !root.is_dir() {
        return Ok(None);
    }
    let entries = seen(root);
    let hint = "give the sessions root (as ~/.dsh/sessions)";
    if entries.iter().any(|e| e.file && is_dsh_log(&e.name)) {
        let sessions = root.parent().and_then(Path::parent).unwrap_or(root);
        return Err(format!(
            "dsh root {} is one session's directory (it holds its log): {hint}, two levels up: {}",
            root.display(),
            sessions.display()
        ));
    }
    if entries.iter().any(|e| e.dir && dsh_project_name(&e.name)) {
        return Ok(None);
    }
    let others = || entries.iter().filter(|e| e.dir && !named(&e.name, &["sessions"]));
    if entries.iter().any(|e| e.dir && named(&e.name, &["sessions"]))
        && !others().any(|e| holds_dsh_sessions(&root.join(&e.name)))
    {
        return Ok(took(root, root.join("sessions"), "is a DSH home"));
    }
    // One project's directory: its directories are sessions (a few looked at).
    let dirs: Vec<&Seen> = entries.iter().filter(|e| e.dir).take(16).collect();
    if dirs.iter().any(|e| holds_dsh_log(&root.join(&e.name)))
        && !dirs.iter().any(|e| holds_dsh_sessions(&root.join(&e.name)))
    {
        let parent = root.parent().unwrap_or(root);
        return Err(format!(
            "dsh root {} is one project's directory (its directories are sessions): {hint}, its parent: {}",
            root.display(),
            parent.display()
        ));
    }
    Ok(None)
}

/// Why a DSH root lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    let dirs: Vec<&Seen> = entries.iter().filter(|e| e.dir).collect();
    if dirs.is_empty() {
        return kind.expected(root, &entries);
    }
    let head = kind.no_session_in(root);
    if dirs.iter().any(|d| holds_dsh_sessions(&root.join(&d.name))) {
        format!("{head}: its session logs could not be listed")
    } else {
        format!("{head}: its {} directories hold no session directory with a log", dirs.len())
    }
}
