//! What the library knows of a kind of source, as one descriptor: its
//! names, where it lives by default and which environment variables say
//! so, how a root given one level off is taken, how it is opened, and what
//! to say of a root that holds none of its sessions. Each reader declares
//! its own (`KIND` in its folder); `open.rs` gathers them in one table
//! that the command line's help, the SDKs' kind names, the MCP server's
//! descriptions and the daemon's environment list all read.
//!
//! Also the looks at a directory the descriptors share (its entries, what
//! it holds in a message).

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::host::SessionQuery;

/// A root taken for the one it means: the root to read, and the note that
/// says so (`"<given> is …: reading <taken>"`).
pub(crate) type Taken = Option<(PathBuf, String)>;

/// One kind of source.
pub(crate) struct Kind {
    /// The name fronts and `KIND=DIR` specs use (`"claude-code"`).
    pub(crate) name: &'static str,
    /// The format's name in messages and prose (`"Claude Code"`).
    pub(crate) format: &'static str,
    /// What it reads, in one line (`"Claude Code transcripts (a projects root)"`).
    pub(crate) about: &'static str,
    /// What the ids of its sessions start with (`""`: ids as the program
    /// writes them).
    pub(crate) prefix: &'static str,
    /// The default location as help texts give it
    /// (`"$CODEX_HOME, else ~/.codex"`), or why there is none.
    pub(crate) location: &'static str,
    /// The default location from an environment; `None`: the kind is read
    /// only where it is given.
    pub(crate) default: Option<fn(&Env) -> PathBuf>,
    /// Further default locations, for an agent that keeps its sessions in
    /// more than one layout: every one that exists is read with `default`,
    /// as one source (ids stay the kind's; one listed in two is read from
    /// the first).
    pub(crate) also: &'static [fn(&Env) -> PathBuf],
    /// Every environment variable `default` may read, on any platform.
    pub(crate) env: &'static [&'static str],
    /// How a root given is taken.
    pub(crate) root: Root,
    /// What a root of this kind holds, for a message saying that one holds
    /// no session.
    pub(crate) layout: &'static str,
    /// Opens a root (already [taken](Root)) as a session query.
    pub(crate) open: fn(&Path) -> io::Result<Arc<dyn SessionQuery>>,
    /// Why a root lists no session: what it holds, from a look at it.
    pub(crate) empty: fn(&Kind, &Path) -> String,
}

/// How a root given for a kind is taken.
pub(crate) enum Root {
    /// The directory of this name inside the agent's home
    /// (`session-state` of `~/.copilot`): the home given instead, when it
    /// holds that directory, is read as it.
    InHome(&'static str),
    /// A database file of this name: the root is that file, or its data
    /// directory holding it (taken for the file).
    Database(&'static str),
    /// The reader's own rule, run on every root given (a directory or not):
    /// the root it means, an error saying what was expected and what was
    /// found, or `None` for the root as given.
    Own(fn(&Path) -> Result<Taken, String>),
}

impl Kind {
    /// `"no <format> session in <root>"`, how every empty-root note starts.
    pub(crate) fn no_session_in(&self, root: &Path) -> String {
        format!("no {} session in {}", self.format, root.display())
    }

    /// The note for a root that does not look like one of this kind: what
    /// it was expected to hold and what it holds.
    pub(crate) fn expected(&self, root: &Path, entries: &[Seen]) -> String {
        format!("{}: expected {}; {}", self.no_session_in(root), self.layout, found(entries))
    }
}

/// The environment a default location is computed from.
pub(crate) struct Env<'a>(pub(crate) &'a dyn Fn(&str) -> Option<OsString>);

impl Env<'_> {
    /// A variable's value as a path, when it is set and not empty.
    pub(crate) fn var(&self, name: &str) -> Option<PathBuf> {
        (self.0)(name).filter(|v| !v.is_empty()).map(PathBuf::from)
    }

    /// `~`: `$HOME`, else `$USERPROFILE`.
    pub(crate) fn home(&self) -> PathBuf {
        self.var("HOME").or_else(|| self.var("USERPROFILE")).unwrap_or_default()
    }

    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    pub(crate) fn data_home(&self) -> PathBuf {
        self.var("XDG_DATA_HOME").unwrap_or_else(|| self.home().join(".local").join("share"))
    }

    /// A database's path: the variable `name` when it is an absolute path
    /// (not `:memory:`), else `<data home>/<dir>/<file>`.
    pub(crate) fn db(&self, name: &str, dir: &str, file: &str) -> PathBuf {
        self.var(name).filter(|p| p.is_absolute()).unwrap_or_else(|| self.data_home().join(dir).join(file))
    }

    /// VS Code's global storage directory on this platform.
    pub(crate) fn vs_code_storage(&self) -> PathBuf {
        let config = if cfg!(target_os = "macos") {
            self.home().join("Library").join("Application Support")
        } else if cfg!(windows) {
            self.var("APPDATA").unwrap_or_else(|| self.home().join("AppData").join("Roaming"))
        } else {
            self.var("XDG_CONFIG_HOME").unwrap_or_else(|| self.home().join(".config"))
        };
        config.join("Code").join("User").join("globalStorage")
    }
}

/// `~`'s variables, for the kinds whose default location is under it only.
pub(crate) const HOME_ENV: &[&str] = &["HOME", "USERPROFILE"];

/// One directory entry, its kind seen without following a link.
pub(crate) struct Seen {
    pub(crate) name: OsString,
    pub(crate) dir: bool,
    pub(crate) file: bool,
}

/// The entries of `dir` in byte order of their names (none when it cannot
/// be read).
pub(crate) fn seen(dir: &Path) -> Vec<Seen> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<Seen> = read
        .filter_map(Result::ok)
        .map(|e| {
            let t = e.file_type().ok();
            Seen { name: e.file_name(), dir: t.is_some_and(|t| t.is_dir()), file: t.is_some_and(|t| t.is_file()) }
        })
        .collect();
    out.sort_by(|a, b| a.name.as_encoded_bytes().cmp(b.name.as_encoded_bytes()));
    out
}

/// What a directory holds, for a message: up to five names, then how many
/// more.
pub(crate) fn found(entries: &[Seen]) -> String {
    if entries.is_empty() {
        return "it is empty".to_owned();
    }
    let names: Vec<String> = entries
        .iter()
        .take(5)
        .map(|e| format!("{}{}", e.name.to_string_lossy(), if e.dir { "/" } else { "" }))
        .collect();
    let more = entries.len().saturating_sub(5);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    format!("it holds {}{more}", names.join(", "))
}

/// Whether `name` is one of `wanted`.
pub(crate) fn named(name: &OsStr, wanted: &[&str]) -> bool {
    name.to_str().is_some_and(|n| wanted.contains(&n))
}

/// Whether `name` is all ASCII digits (and not empty).
pub(crate) fn all_digits(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `root` taken as `to`, because it `why` (`"is a DSH home"`).
pub(crate) fn took(root: &Path, to: PathBuf, why: &str) -> Taken {
    let note = format!("{} {why}: reading {}", root.display(), to.display());
    Some((to, note))
}

/// How `root` is taken for `kind`: the reader's own rule, else (for a
/// directory) the home or data directory it obviously means, else as given.
pub(crate) fn take_root(kind: &Kind, root: &Path) -> Result<Taken, String> {
    if let Root::Own(own) = kind.root {
        return own(root);
    }
    if !root.is_dir() {
        return Ok(None);
    }
    Ok(match kind.root {
        Root::InHome(inner) => {
            let entries = seen(root);
            let holds = entries.iter().any(|e| e.dir && named(&e.name, &[inner]));
            if root.file_name().is_some_and(|n| named(n, &[inner])) || !holds {
                return Ok(None);
            }
            took(root, root.join(inner), &format!("is a {} home holding {inner}/", kind.format))
        }
        Root::Database(file) => {
            let db = root.join(file);
            if !db.is_file() {
                return Ok(None);
            }
            took(root, db, &format!("is a directory holding {file}"))
        }
        Root::Own(_) => None,
    })
}
