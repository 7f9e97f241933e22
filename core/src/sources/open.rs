//! Opening sources by kind and location: the default location of each
//! format, `kind=DIR` specs, and one [`MultiQuery`] over several, which
//! every front uses so that they all open the same things the same way.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use super::aider::AiderSource;
use super::awaited::Awaited;
use super::claude_code::ClaudeCodeSource;
use super::cline::{self, ClineSource};
use super::codex::CodexSource;
use super::copilot_cli::CopilotCliSource;
use super::cursor::CursorSource;
use super::dsh::DshStore;
use super::gemini_cli::GeminiCliSource;
use super::opencode::{Flavor, OpenCodeSource};
use super::{FileSource, MultiQuery};
use crate::error::HostError;
use crate::host::{Blocking, BlockingSessionQuery, SessionHeader, SessionQuery, SurfaceData};

use super::dsh::layout::Encoding;
use super::multi::SourceNotes;
use std::ffi::OsStr;
use std::path::Path;

/// The formats a source can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SourceKind {
    /// DeepSeek Harness session logs (a sessions root).
    Dsh,
    /// Claude Code transcripts (a projects root).
    ClaudeCode,
    /// Codex CLI rollouts (a Codex home).
    Codex,
    /// GitHub Copilot CLI event logs (a session-state directory).
    CopilotCli,
    /// Gemini CLI chats (its `tmp` directory).
    GeminiCli,
    /// Cursor agent transcripts (its `projects` directory).
    Cursor,
    /// Aider chat histories (a repository, or a directory of them; no
    /// default location).
    Aider,
    /// OpenCode sessions (its SQLite database, `opencode.db`).
    OpenCode,
    /// New Kilo's sessions (its SQLite database, `kilo.db`, OpenCode's schema).
    Kilo,
    /// Cline tasks (its VS Code global storage directory).
    Cline,
    /// Roo Code tasks (its VS Code global storage directory; legacy Kilo
    /// Code's too, given as the root).
    RooCode,
}

impl SourceKind {
    /// Every kind, in the order defaults are opened.
    pub const ALL: [SourceKind; 11] = [
        SourceKind::Dsh,
        SourceKind::ClaudeCode,
        SourceKind::Codex,
        SourceKind::CopilotCli,
        SourceKind::GeminiCli,
        SourceKind::Cursor,
        SourceKind::Aider,
        SourceKind::OpenCode,
        SourceKind::Kilo,
        SourceKind::Cline,
        SourceKind::RooCode,
    ];

    /// The name fronts and `KIND=DIR` specs use: `"dsh"`, `"claude-code"`,
    /// `"codex"`, `"copilot-cli"`, `"gemini-cli"`, `"cursor"`, `"aider"`,
    /// `"opencode"`, `"kilo"`, `"cline"`, `"roo-code"`.
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Dsh => "dsh",
            SourceKind::ClaudeCode => "claude-code",
            SourceKind::Codex => "codex",
            SourceKind::CopilotCli => "copilot-cli",
            SourceKind::GeminiCli => "gemini-cli",
            SourceKind::Cursor => "cursor",
            SourceKind::Aider => "aider",
            SourceKind::OpenCode => "opencode",
            SourceKind::Kilo => "kilo",
            SourceKind::Cline => "cline",
            SourceKind::RooCode => "roo-code",
        }
    }

    /// Every kind's [`name`](Self::name), in [`ALL`](Self::ALL) order,
    /// joined with `", "`: what help texts and errors list.
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }

    /// The default location as help texts give it
    /// (`"$CODEX_HOME, else ~/.codex"`), from the one place that knows it.
    pub fn default_location_text(self) -> &'static str {
        match self {
            SourceKind::Dsh => "$DSH_HOME/sessions, else ~/.dsh/sessions",
            SourceKind::ClaudeCode => "$CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects",
            SourceKind::Codex => "$CODEX_HOME, else ~/.codex",
            SourceKind::CopilotCli => "$COPILOT_HOME/session-state, else ~/.copilot/session-state",
            SourceKind::GeminiCli => "$GEMINI_CLI_HOME/.gemini/tmp, else ~/.gemini/tmp",
            SourceKind::Cursor => "~/.cursor/projects",
            SourceKind::Aider => {
                "no default location: a repository holding .aider.chat.history.md, or a directory of them"
            }
            SourceKind::OpenCode => {
                "$OPENCODE_DB, else $XDG_DATA_HOME/opencode/opencode.db, else ~/.local/share/opencode/opencode.db"
            }
            SourceKind::Kilo => "$KILO_DB, else $XDG_DATA_HOME/kilo/kilo.db, else ~/.local/share/kilo/kilo.db",
            SourceKind::Cline => "VS Code's globalStorage/saoudrizwan.claude-dev",
            SourceKind::RooCode => "VS Code's globalStorage/rooveterinaryinc.roo-cline",
        }
    }

    /// Every kind with where it is read by default, for help texts:
    /// `"dsh ($DSH_HOME/sessions, else ~/.dsh/sessions), …"`.
    pub fn help_text() -> String {
        let each: Vec<String> =
            Self::ALL.iter().map(|k| format!("{} ({})", k.name(), k.default_location_text())).collect();
        each.join("; ")
    }

    /// Whether the kind has a default location (Aider keeps its history
    /// in each repository, so it is read only where it is given).
    pub fn has_default_location(self) -> bool {
        self != SourceKind::Aider
    }

    /// The kind of a name given by [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// What the ids of its sessions start with (`""` for DSH, whose ids
    /// stay exactly as DSH writes them).
    pub fn prefix(self) -> &'static str {
        match self {
            SourceKind::Dsh => "",
            SourceKind::ClaudeCode => super::claude_code::PREFIX,
            SourceKind::Codex => super::codex::PREFIX,
            SourceKind::CopilotCli => super::copilot_cli::PREFIX,
            SourceKind::GeminiCli => super::gemini_cli::PREFIX,
            SourceKind::Cursor => super::cursor::PREFIX,
            SourceKind::Aider => super::aider::PREFIX,
            SourceKind::OpenCode => super::opencode::PREFIX,
            SourceKind::Kilo => super::opencode::KILO_PREFIX,
            SourceKind::Cline => cline::PREFIX,
            SourceKind::RooCode => cline::ROO_PREFIX,
        }
    }

    /// Whether its root is a file (a database) rather than a directory.
    pub fn root_is_file(self) -> bool {
        matches!(self, SourceKind::OpenCode | SourceKind::Kilo)
    }

    /// Whether `root` exists as this kind's root: a directory, or for a
    /// database kind a file (or a data directory holding its database).
    pub fn root_exists(self, root: &Path) -> bool {
        match self.flavor() {
            Some(flavor) => root.is_file() || root.join(flavor.file_name()).is_file(),
            None => root.is_dir(),
        }
    }

    /// The database flavor of an OpenCode-schema kind.
    fn flavor(self) -> Option<Flavor> {
        match self {
            SourceKind::OpenCode => Some(Flavor::OpenCode),
            SourceKind::Kilo => Some(Flavor::Kilo),
            _ => None,
        }
    }

    /// The default location, from the environment `env` gives:
    /// `$DSH_HOME/sessions` else `~/.dsh/sessions`;
    /// `$CLAUDE_CONFIG_DIR/projects` else `~/.claude/projects`;
    /// `$CODEX_HOME` else `~/.codex`;
    /// `$COPILOT_HOME/session-state` else `~/.copilot/session-state`;
    /// `$GEMINI_CLI_HOME/.gemini/tmp` else `~/.gemini/tmp`;
    /// `~/.cursor/projects`; none for Aider (the empty path: see
    /// [`has_default_location`](Self::has_default_location));
    /// `$OPENCODE_DB` else `$XDG_DATA_HOME/opencode/opencode.db` else
    /// `~/.local/share/opencode/opencode.db`; `$KILO_DB` else
    /// `$XDG_DATA_HOME/kilo/kilo.db` else `~/.local/share/kilo/kilo.db` (a
    /// database variable is used only when it is an absolute path, not
    /// `:memory:`); for `cline` and `roo-code`, the extension's directory
    /// in VS Code's global storage: `$XDG_CONFIG_HOME/Code/User/globalStorage/<extension id>`
    /// else `~/.config/Code/…` (Linux), `~/Library/Application Support/Code/…`
    /// (macOS), `$APPDATA/Code/…` (Windows). (`~` is `$HOME`, else
    /// `$USERPROFILE`.)
    pub fn default_location_with(self, env: &dyn Fn(&str) -> Option<OsString>) -> PathBuf {
        let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = || var("HOME").or_else(|| var("USERPROFILE")).unwrap_or_default();
        let data = || var("XDG_DATA_HOME").unwrap_or_else(|| home().join(".local").join("share"));
        let db = |name: &str, dir: &str, file: &str| {
            var(name).filter(|p| p.is_absolute()).unwrap_or_else(|| data().join(dir).join(file))
        };
        match self {
            SourceKind::Dsh => var("DSH_HOME").unwrap_or_else(|| home().join(".dsh")).join("sessions"),
            SourceKind::ClaudeCode => {
                var("CLAUDE_CONFIG_DIR").unwrap_or_else(|| home().join(".claude")).join("projects")
            }
            SourceKind::Codex => var("CODEX_HOME").unwrap_or_else(|| home().join(".codex")),
            SourceKind::CopilotCli => {
                var("COPILOT_HOME").unwrap_or_else(|| home().join(".copilot")).join("session-state")
            }
            SourceKind::GeminiCli => var("GEMINI_CLI_HOME").unwrap_or_else(home).join(".gemini").join("tmp"),
            SourceKind::Cursor => home().join(".cursor").join("projects"),
            SourceKind::Aider => PathBuf::new(),
            SourceKind::OpenCode => db("OPENCODE_DB", "opencode", "opencode.db"),
            SourceKind::Kilo => db("KILO_DB", "kilo", "kilo.db"),
            SourceKind::Cline => vs_code_storage(&var, &home).join(cline::Flavor::Cline.extension_id()),
            SourceKind::RooCode => vs_code_storage(&var, &home).join(cline::Flavor::RooCode.extension_id()),
        }
    }

    /// The default location from this process's environment.
    pub fn default_location(self) -> PathBuf {
        self.default_location_with(&|name| std::env::var_os(name))
    }
}

/// VS Code's global storage directory on this platform.
fn vs_code_storage(var: &dyn Fn(&str) -> Option<PathBuf>, home: &dyn Fn() -> PathBuf) -> PathBuf {
    let config = if cfg!(target_os = "macos") {
        home().join("Library").join("Application Support")
    } else if cfg!(windows) {
        var("APPDATA").unwrap_or_else(|| home().join("AppData").join("Roaming"))
    } else {
        var("XDG_CONFIG_HOME").unwrap_or_else(|| home().join(".config"))
    };
    config.join("Code").join("User").join("globalStorage")
}

/// One source to open: a kind and its root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceSpec {
    /// The format.
    pub kind: SourceKind,
    /// Its root directory.
    pub root: PathBuf,
}

impl SourceSpec {
    /// A spec of `kind` at `root`.
    pub fn new(kind: SourceKind, root: impl Into<PathBuf>) -> Self {
        SourceSpec { kind, root: root.into() }
    }

    /// Parses `kind=DIR` (`dsh=…`, `claude-code=…`, `codex=…`, any
    /// [`SourceKind::name`]).
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (kind, dir) = spec.split_once('=').ok_or_else(|| format!("{spec:?} is not KIND=DIR"))?;
        let kind = SourceKind::from_name(kind)
            .ok_or_else(|| format!("unknown source kind {kind:?}: use one of {}", SourceKind::names()))?;
        if dir.is_empty() {
            return Err(format!("{spec:?} names no directory"));
        }
        Ok(SourceSpec::new(kind, dir))
    }

    /// The spec of a kind as `{"kind": …, "root": …}` names it.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, String> {
        let kind = value.get("kind").and_then(serde_json::Value::as_str).ok_or("a source needs a string `kind`")?;
        let kind = SourceKind::from_name(kind)
            .ok_or_else(|| format!("unknown source kind {kind:?}: use one of {}", SourceKind::names()))?;
        let root = match value.get("root") {
            None | Some(serde_json::Value::Null) if !kind.has_default_location() => {
                return Err(format!("a source of kind {} has no default location: give its `root`", kind.name()))
            }
            None | Some(serde_json::Value::Null) => kind.default_location(),
            Some(serde_json::Value::String(r)) if !r.is_empty() => PathBuf::from(r),
            Some(_) => return Err("a source's `root` must be a non-empty string or null".into()),
        };
        Ok(SourceSpec::new(kind, root))
    }
}

/// A spec whose root is the directory its source reads: the root given, or
/// the one a root given the way people give them obviously means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedSpec {
    /// The kind and the root to read.
    pub spec: SourceSpec,
    /// What was taken instead of the root given, and why (`None`: the root
    /// as given).
    pub note: Option<String>,
}

impl SourceSpec {
    /// The root this spec's source reads. A root given one level off is
    /// taken for what it obviously means: for `codex`, a home's
    /// `sessions/` or `archived_sessions/` directory (the directory users
    /// see their rollouts in) is read as its Codex home; for `claude-code`,
    /// a Claude configuration directory holding `projects/` (`~/.claude`) as
    /// that `projects/`; for `dsh`, a DSH home holding `sessions/` (`~/.dsh`)
    /// as that `sessions/`. A root that is one level too deep, where what it
    /// means is ambiguous (one project's directory, one session's, a dated
    /// directory of rollouts, rollouts outside a Codex home), is an error
    /// that says what was expected and what was found. A root that is not a
    /// directory is taken as given (opening it reports why).
    pub fn resolve(&self) -> Result<ResolvedSpec, String> {
        let root = self.root.as_path();
        if self.kind == SourceKind::Aider && root.is_file() {
            if let Some(dir) =
                root.parent().filter(|_| named(root.file_name().unwrap_or_default(), &[super::aider::HISTORY_FILE]))
            {
                let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
                let note =
                    format!("{} is an Aider chat history: reading its directory {}", root.display(), dir.display());
                return Ok(ResolvedSpec { spec: SourceSpec::new(self.kind, dir), note: Some(note) });
            }
        }
        if !root.is_dir() {
            return Ok(ResolvedSpec { spec: self.clone(), note: None });
        }
        let taken = match self.kind {
            SourceKind::Codex => codex_root(root)?,
            SourceKind::ClaudeCode => claude_root(root)?,
            SourceKind::Dsh => dsh_root(root)?,
            SourceKind::OpenCode | SourceKind::Kilo => database_root(self.kind, root),
            SourceKind::Cline | SourceKind::RooCode => tasks_root(root),
            kind => home_root(kind, root),
        };
        Ok(match taken {
            None => ResolvedSpec { spec: self.clone(), note: None },
            Some((to, why)) => {
                let note = format!("{} {why}: reading {}", root.display(), to.display());
                ResolvedSpec { spec: SourceSpec::new(self.kind, to), note: Some(note) }
            }
        })
    }
}

/// One directory entry, its kind seen without following a link.
struct Seen {
    name: std::ffi::OsString,
    dir: bool,
    file: bool,
}

/// The entries of `dir` in byte order of their names (none when it cannot
/// be read).
fn seen(dir: &Path) -> Vec<Seen> {
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
fn found(entries: &[Seen]) -> String {
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

fn named(name: &OsStr, wanted: &[&str]) -> bool {
    name.to_str().is_some_and(|n| wanted.contains(&n))
}

/// A Claude Code transcript's name (not a subagent's).
fn is_transcript(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| n.ends_with(".jsonl") && n.len() > 6 && !n.starts_with("agent-"))
}

fn is_rollout(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
}

/// A DSH log file name of any generation.
fn is_dsh_log(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| Encoding::from_file_name(n).is_some())
}

fn all_digits(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A root given for `codex`: a home (as given), or the directory a root one
/// level off means.
fn codex_root(root: &Path) -> Result<Option<(std::path::PathBuf, String)>, String> {
    let entries = seen(root);
    if entries.iter().any(|e| named(&e.name, &["sessions", "archived_sessions", "session_index.jsonl"])) {
        return Ok(None);
    }
    let rollouts = |e: &[Seen]| e.iter().any(|e| (e.file && is_rollout(&e.name)) || (e.dir && all_digits(&e.name)));
    let name = root.file_name().unwrap_or_default();
    if named(name, &["sessions", "archived_sessions"]) && (entries.is_empty() || rollouts(&entries)) {
        if let Some(home) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
            let why = format!("is the {}/ directory of a Codex home", name.to_string_lossy());
            return Ok(Some((home.to_path_buf(), why)));
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

/// A directory given for a database kind: its data directory, holding the
/// database (taken), or anything else (taken as given: opening it says why).
fn database_root(kind: SourceKind, root: &Path) -> Option<(std::path::PathBuf, String)> {
    let flavor = kind.flavor()?;
    let db = root.join(flavor.file_name());
    db.is_file().then(|| (db, format!("is a directory holding {}", flavor.file_name())))
}

/// A root given for Cline or Roo Code: its global storage directory (as
/// given), or the `tasks/` directory inside one (taken for its parent).
fn tasks_root(root: &Path) -> Option<(std::path::PathBuf, String)> {
    if root.join("tasks").is_dir() || !named(root.file_name().unwrap_or_default(), &["tasks"]) {
        return None;
    }
    let parent = root.parent().filter(|p| !p.as_os_str().is_empty())?;
    Some((parent.to_path_buf(), "is the tasks/ directory of an extension's global storage".to_owned()))
}

/// Whether `dir` holds a Claude Code transcript itself.
fn holds_transcripts(dir: &Path) -> bool {
    seen(dir).iter().any(|e| e.file && is_transcript(&e.name))
}

/// A root given for `claude-code`: a projects root (as given), or the
/// directory a root one level off means.
fn claude_root(root: &Path) -> Result<Option<(std::path::PathBuf, String)>, String> {
    let entries = seen(root);
    let project_dirs = || entries.iter().filter(|e| e.dir && !named(&e.name, &["projects"]));
    if entries.iter().any(|e| e.dir && named(&e.name, &["projects"]))
        && !project_dirs().any(|e| holds_transcripts(&root.join(&e.name)))
    {
        return Ok(Some((root.join("projects"), "is a Claude Code configuration directory".to_owned())));
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
fn dsh_root(root: &Path) -> Result<Option<(std::path::PathBuf, String)>, String> {
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
        return Ok(Some((root.join("sessions"), "is a DSH home".to_owned())));
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

/// For a kind whose default location is a directory inside the agent's
/// home (`~/.copilot/session-state`): the home given instead, when it holds
/// that directory, is read as it.
fn home_root(kind: SourceKind, root: &Path) -> Option<(PathBuf, String)> {
    let inner = kind.home_subdir()?;
    let entries = seen(root);
    let holds = |name: &str| entries.iter().any(|e| e.dir && named(&e.name, &[name]));
    if root.file_name().is_some_and(|n| named(n, &[inner])) || !holds(inner) {
        return None;
    }
    Some((root.join(inner), format!("is a {} home holding {inner}/", kind.format())))
}

impl SourceKind {
    /// The format's name in messages (`"Copilot CLI"`).
    pub fn format(self) -> &'static str {
        match self {
            SourceKind::Dsh => "DSH",
            SourceKind::ClaudeCode => "Claude Code",
            SourceKind::Codex => "Codex",
            SourceKind::CopilotCli => "Copilot CLI",
            SourceKind::GeminiCli => "Gemini CLI",
            SourceKind::Cursor => "Cursor",
            SourceKind::Aider => "Aider",
            SourceKind::OpenCode => "OpenCode",
            SourceKind::Kilo => "Kilo",
            SourceKind::Cline => "Cline",
            SourceKind::RooCode => "Roo Code",
        }
    }

    /// The directory of the agent's home that is the root (`session-state`
    /// for Copilot CLI), for kinds whose root a home given is taken for.
    fn home_subdir(self) -> Option<&'static str> {
        match self {
            SourceKind::CopilotCli => Some("session-state"),
            SourceKind::GeminiCli => Some("tmp"),
            SourceKind::Cursor => Some("projects"),
            _ => None,
        }
    }

    /// What a root of this kind holds, for a message saying that one holds
    /// no session.
    fn layout(self) -> &'static str {
        match self {
            SourceKind::Dsh => "project directories of session directories holding session.jsonl (as ~/.dsh/sessions)",
            SourceKind::ClaudeCode => "project directories holding <session>.jsonl transcripts (as ~/.claude/projects)",
            SourceKind::Codex => "a Codex home, holding sessions/ or archived_sessions/ (as ~/.codex)",
            SourceKind::CopilotCli => {
                "session directories holding events.jsonl, or <id>.jsonl logs (as ~/.copilot/session-state)"
            }
            SourceKind::GeminiCli => "project directories holding chats/session-*.jsonl (as ~/.gemini/tmp)",
            SourceKind::Cursor => "project directories holding agent-transcripts/<id>.jsonl (as ~/.cursor/projects)",
            SourceKind::Aider => {
                "a repository holding .aider.chat.history.md, or repositories up to three levels below"
            }
            SourceKind::OpenCode => "an OpenCode database (as ~/.local/share/opencode/opencode.db)",
            SourceKind::Kilo => "a Kilo database (as ~/.local/share/kilo/kilo.db)",
            SourceKind::Cline => {
                "tasks/<id>/api_conversation_history.json (as VS Code's globalStorage/saoudrizwan.claude-dev)"
            }
            SourceKind::RooCode => {
                "tasks/<id>/api_conversation_history.json (as VS Code's globalStorage/rooveterinaryinc.roo-cline)"
            }
        }
    }
}

/// Why a root lists no session of `kind`: what it was expected to hold and
/// what it holds, from a look at it (for [`SourceStatus::note`](super::SourceStatus::note)
/// and the command line).
pub fn empty_root_note(kind: SourceKind, root: &Path) -> String {
    let entries = seen(root);
    let dirs: Vec<&Seen> = entries.iter().filter(|e| e.dir).collect();
    match kind {
        SourceKind::ClaudeCode => {
            let head = format!("no Claude Code session in {}", root.display());
            if dirs.is_empty() {
                return format!(
                    "{head}: expected project directories holding <session>.jsonl transcripts (as \
                     ~/.claude/projects); {}",
                    found(&entries)
                );
            }
            let transcripts: usize = dirs
                .iter()
                .map(|d| seen(&root.join(&d.name)).iter().filter(|e| e.file && is_transcript(&e.name)).count())
                .sum();
            match transcripts {
                0 => format!("{head}: its {} directories hold no <session>.jsonl transcript", dirs.len()),
                n => format!(
                    "{head}: none of its {n} transcripts holds a message (empty, only summary or \
                     file-history lines, or unreadable)"
                ),
            }
        }
        SourceKind::Codex => {
            let head = format!("no Codex session in {}", root.display());
            let homes: Vec<&&Seen> =
                dirs.iter().filter(|e| named(&e.name, &["sessions", "archived_sessions"])).collect();
            if homes.is_empty() {
                return format!(
                    "{head}: expected a Codex home, holding sessions/ or archived_sessions/ (as ~/.codex); {}",
                    found(&entries)
                );
            }
            let mut rollouts = 0;
            let mut stack: Vec<(std::path::PathBuf, usize)> = homes.iter().map(|e| (root.join(&e.name), 0)).collect();
            while let Some((dir, depth)) = stack.pop() {
                for e in seen(&dir) {
                    if e.file && is_rollout(&e.name) {
                        rollouts += 1;
                    } else if e.dir && depth < 3 {
                        stack.push((dir.join(&e.name), depth + 1));
                    }
                }
            }
            match rollouts {
                0 => format!("{head}: its sessions/ and archived_sessions/ hold no rollout-*.jsonl"),
                n => format!("{head}: its {n} rollouts are empty or unreadable"),
            }
        }
        SourceKind::CopilotCli => {
            let head = format!("no {} session in {}", kind.format(), root.display());
            let logs = entries
                .iter()
                .filter(|e| e.file && e.name.to_str().is_some_and(|n| n.ends_with(".jsonl")))
                .count()
                + dirs
                    .iter()
                    .filter(|d| seen(&root.join(&d.name)).iter().any(|e| e.file && named(&e.name, &["events.jsonl"])))
                    .count();
            match logs {
                0 => format!("{head}: expected {}; {}", kind.layout(), found(&entries)),
                n => format!("{head}: its {n} event logs are empty or unreadable"),
            }
        }
        SourceKind::GeminiCli => {
            let head = format!("no {} session in {}", kind.format(), root.display());
            let chats: usize = dirs
                .iter()
                .map(|d| {
                    seen(&root.join(&d.name).join("chats"))
                        .iter()
                        .filter(|e| e.file && e.name.to_str().is_some_and(|n| n.starts_with("session-")))
                        .count()
                })
                .sum();
            match chats {
                0 => format!("{head}: expected {}; {}", kind.layout(), found(&entries)),
                n => format!("{head}: its {n} chat files are empty or unreadable"),
            }
        }
        SourceKind::Aider => {
            let head = format!("no {} session in {}", kind.format(), root.display());
            if entries.iter().any(|e| e.file && named(&e.name, &[super::aider::HISTORY_FILE])) {
                return format!("{head}: its {} holds no run with a message", super::aider::HISTORY_FILE);
            }
            format!("{head}: expected {}; {}", kind.layout(), found(&entries))
        }
        SourceKind::Cursor => {
            let head = format!("no {} session in {}", kind.format(), root.display());
            let with = dirs
                .iter()
                .filter(|d| seen(&root.join(&d.name)).iter().any(|e| e.dir && named(&e.name, &["agent-transcripts"])))
                .count();
            match with {
                0 => format!("{head}: expected {}; {}", kind.layout(), found(&entries)),
                n => format!("{head}: the agent-transcripts/ of its {n} projects hold no readable transcript"),
            }
        }
        SourceKind::OpenCode | SourceKind::Kilo => {
            format!(
                "no {} session in {}: its session table holds no top-level session with a message",
                kind.format(),
                root.display()
            )
        }
        SourceKind::Cline | SourceKind::RooCode => {
            let head = format!("no {} session in {}", kind.format(), root.display());
            if !root.join("tasks").is_dir() {
                return format!("{head}: expected {}; {}", kind.layout(), found(&entries));
            }
            format!("{head}: no directory of its tasks/ holds a non-empty api_conversation_history.json")
        }
        SourceKind::Dsh => {
            let head = format!("no DSH session in {}", root.display());
            if dirs.is_empty() {
                return format!(
                    "{head}: expected project directories of session directories holding session.jsonl (as \
                     ~/.dsh/sessions); {}",
                    found(&entries)
                );
            }
            if dirs.iter().any(|d| holds_dsh_sessions(&root.join(&d.name))) {
                format!("{head}: its session logs could not be listed")
            } else {
                format!("{head}: its {} directories hold no session directory with a log", dirs.len())
            }
        }
    }
}

/// The default location of every kind that exists as a directory on this
/// machine, in [`SourceKind::ALL`] order.
pub fn default_specs() -> Vec<SourceSpec> {
    SourceKind::ALL
        .into_iter()
        .filter(|k| k.has_default_location())
        .map(|k| SourceSpec::new(k, k.default_location()))
        .filter(|s| s.kind.root_exists(&s.root))
        .collect()
}

/// `found` (the default locations that exist); when none does, every
/// kind at its default location (`location`), so that a view over them
/// says, per source, that its root does not exist, and its listing fails
/// naming every place looked at, rather than answering an empty list as if
/// there were nothing to find.
pub fn defaults_or_every_location(found: Vec<SourceSpec>, location: impl Fn(SourceKind) -> PathBuf) -> Vec<SourceSpec> {
    if !found.is_empty() {
        return found;
    }
    SourceKind::ALL.into_iter().filter(|k| k.has_default_location()).map(|k| SourceSpec::new(k, location(k))).collect()
}

/// What to say when no default location exists (so [`default_specs`] is
/// empty): every place that was looked at, and what to give instead.
pub fn no_default_location_message() -> String {
    let looked: Vec<String> = SourceKind::ALL
        .into_iter()
        .filter(|k| k.has_default_location())
        .map(|k| format!("{} at {}", k.name(), k.default_location().display()))
        .collect();
    let opt_in: Vec<&str> =
        SourceKind::ALL.into_iter().filter(|k| !k.has_default_location()).map(SourceKind::name).collect();
    format!(
        "no session history found: looked for {} (none exists; {} has no default location); give --source KIND=DIR \
         (or --root DIR for DSH)",
        looked.join(", "),
        opt_in.join(", ")
    )
}

/// The specs a front was given as JSON: `null` for [`default_specs`], or
/// an array of `{"kind": "dsh"|"claude-code"|"codex", "root"?: string|null}`
/// (a missing or null root is the kind's default location). The C ABI,
/// Python and Node all take this shape.
pub fn specs_from_json(value: &serde_json::Value) -> Result<Vec<SourceSpec>, String> {
    match value {
        serde_json::Value::Null => Ok(defaults_or_every_location(default_specs(), |k| k.default_location())),
        serde_json::Value::Array(list) if !list.is_empty() => list.iter().map(SourceSpec::from_json).collect(),
        serde_json::Value::Array(_) => Err("the list of sources is empty".into()),
        _ => Err("sources must be null (every default location) or an array of {kind, root}".into()),
    }
}

/// How many unreadable sessions [`report_json`] names per source.
pub const UNREADABLE_NAMED: usize = 3;

/// How each source of `multi` fared in its last listing, as the SDKs give
/// it: `[{"name", "sessions": n}]` or `[{"name", "error": why}]`, with a
/// `"note"` when there is one (a root taken for the one it meant; why a
/// source listed no session), and, when sessions of it could not be read
/// since (a title or a text), `"unreadable": [{"sessionId", "why"}]` (the
/// first [`UNREADABLE_NAMED`]) and `"unreadableCount"`.
pub fn report_json(multi: &MultiQuery) -> serde_json::Value {
    let report = multi.last_report().into_iter().map(|s| {
        let mut item = match s.outcome {
            Ok(n) => serde_json::json!({"name": s.name, "sessions": n}),
            Err(e) => serde_json::json!({"name": s.name, "error": e}),
        };
        if let Some(note) = s.note {
            item["note"] = serde_json::Value::String(note);
        }
        if !s.unreadable.is_empty() {
            // The first few with why, and how many in all.
            let named: Vec<serde_json::Value> = s
                .unreadable
                .iter()
                .take(UNREADABLE_NAMED)
                .map(|(id, why)| serde_json::json!({"sessionId": id, "why": why}))
                .collect();
            item["unreadable"] = serde_json::Value::Array(named);
            item["unreadableCount"] = serde_json::Value::from(s.unreadable.len());
        }
        item
    });
    serde_json::Value::Array(report.collect())
}

/// A surface as JSON bytes, for an SDK's `read_surface`: DSH events as the
/// source gave them, a conversation as its pre-projected snapshot.
pub fn surface_json_bytes(surface: &SurfaceData) -> Vec<u8> {
    let text = match surface {
        SurfaceData::Json(bytes) => return (**bytes).as_ref().to_vec(),
        SurfaceData::Value(value) => crate::json::stringify(value),
        SurfaceData::Conversation(c) => crate::json::stringify(&c.to_snapshot_json()),
    };
    text.into_bytes()
}

/// A source that could not be opened: listing it reports why (so a view
/// over several sources reports it and lists the others), reading fails.
#[derive(Clone, Debug)]
struct Unavailable(String);

impl BlockingSessionQuery for Unavailable {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        Err(HostError::new(self.0.clone()))
    }
    fn read_title(&self, _: &str) -> Result<Option<String>, HostError> {
        Err(HostError::new(self.0.clone()))
    }
    fn read_surface(&self, _: &str) -> Result<SurfaceData, HostError> {
        Err(HostError::new(self.0.clone()))
    }
}

/// Opens one source as a session query, its root [resolved](SourceSpec::resolve).
/// An error names the root.
pub fn open_source(spec: &SourceSpec) -> std::io::Result<Arc<dyn SessionQuery>> {
    let resolved = spec.resolve().map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    open_resolved(&resolved.spec)
}

fn open_resolved(spec: &SourceSpec) -> std::io::Result<Arc<dyn SessionQuery>> {
    Ok(match spec.kind {
        SourceKind::Dsh => Arc::new(DshStore::open(&spec.root)?),
        SourceKind::ClaudeCode => ClaudeCodeSource::open(&spec.root)?.into_query(),
        SourceKind::Codex => CodexSource::open(&spec.root)?.into_query(),
        SourceKind::CopilotCli => CopilotCliSource::open(&spec.root)?.into_query(),
        SourceKind::GeminiCli => GeminiCliSource::open(&spec.root)?.into_query(),
        SourceKind::Cursor => CursorSource::open(&spec.root)?.into_query(),
        SourceKind::Aider => AiderSource::open(&spec.root)?.into_query(),
        SourceKind::OpenCode => OpenCodeSource::open(&spec.root, Flavor::OpenCode)?.into_query(),
        SourceKind::Kilo => OpenCodeSource::open(&spec.root, Flavor::Kilo)?.into_query(),
        SourceKind::Cline => ClineSource::open(&spec.root, cline::Flavor::Cline)?.into_query(),
        SourceKind::RooCode => ClineSource::open(&spec.root, cline::Flavor::RooCode)?.into_query(),
    })
}

/// One view over the sources of `specs`, in order, named by kind, each
/// root [resolved](SourceSpec::resolve). A root that cannot be opened (or
/// is ambiguous) becomes a source whose listing fails with the reason
/// (reported by [`MultiQuery::last_report`], never fatal to the others); a
/// root taken for the one it meant, and one that lists no session (with
/// what it holds), are said in the report's note. Two sources of one kind
/// are refused: reads are routed by the id's prefix, so the second could
/// never be read.
pub fn open_sources(specs: &[SourceSpec]) -> Result<MultiQuery, String> {
    open_sources_with(specs, false)
}

/// [`open_sources`], for a process that lives on (a server): a source
/// whose root does not exist yet lists no session, its note saying so, and
/// is opened when a listing first finds its root there.
pub fn open_sources_awaiting(specs: &[SourceSpec]) -> Result<MultiQuery, String> {
    open_sources_with(specs, true)
}

fn open_sources_with(specs: &[SourceSpec], awaiting: bool) -> Result<MultiQuery, String> {
    let mut multi = MultiQuery::new();
    let mut seen = Vec::new();
    for spec in specs {
        if seen.contains(&spec.kind) {
            return Err(format!("two {} sources: give at most one root per kind", spec.kind.name()));
        }
        seen.push(spec.kind);
        let mut notes = SourceNotes::default();
        if awaiting && !spec.kind.root_exists(&spec.root) {
            let (kind, root) = (spec.kind, spec.root.clone());
            notes.if_empty = Some(Arc::new(move || match kind.root_exists(&root) {
                true => empty_root_note(kind, &root),
                false => format!("{} does not exist yet: its sessions are listed once it does", root.display()),
            }));
            let (kind, root, given) = (spec.kind, spec.root.clone(), spec.clone());
            let open = move || open_resolved(&given.resolve()?.spec).map_err(|e| e.to_string());
            let query = Arc::new(Awaited::new(spec.root.clone(), move || kind.root_exists(&root), open));
            multi = multi.with_noted_source(spec.kind.name(), spec.kind.prefix(), query, notes);
            continue;
        }
        let opened = spec.resolve().and_then(|r| {
            notes.opened = r.note;
            let (kind, root) = (r.spec.kind, r.spec.root.clone());
            notes.if_empty = Some(Arc::new(move || empty_root_note(kind, &root)));
            open_resolved(&r.spec).map_err(|e| e.to_string())
        });
        let query: Arc<dyn SessionQuery> = match opened {
            Ok(q) => q,
            Err(e) => Arc::new(Blocking::new(Unavailable(e))),
        };
        multi = multi.with_noted_source(spec.kind.name(), spec.kind.prefix(), query, notes);
    }
    Ok(multi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_environment() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
        };
        let plain = env(&[("HOME", "/h")]);
        assert_eq!(SourceKind::Dsh.default_location_with(&plain), PathBuf::from("/h/.dsh/sessions"));
        assert_eq!(SourceKind::ClaudeCode.default_location_with(&plain), PathBuf::from("/h/.claude/projects"));
        assert_eq!(SourceKind::Codex.default_location_with(&plain), PathBuf::from("/h/.codex"));
        assert_eq!(
            SourceKind::OpenCode.default_location_with(&plain),
            PathBuf::from("/h/.local/share/opencode/opencode.db")
        );
        assert_eq!(SourceKind::Kilo.default_location_with(&plain), PathBuf::from("/h/.local/share/kilo/kilo.db"));
        let data = env(&[("HOME", "/h"), ("XDG_DATA_HOME", "/x"), ("KILO_DB", ":memory:")]);
        assert_eq!(SourceKind::OpenCode.default_location_with(&data), PathBuf::from("/x/opencode/opencode.db"));
        assert_eq!(SourceKind::Kilo.default_location_with(&data), PathBuf::from("/x/kilo/kilo.db"));
        let dbs = env(&[("HOME", "/h"), ("OPENCODE_DB", "/o.db"), ("KILO_DB", "/k.db")]);
        assert_eq!(SourceKind::OpenCode.default_location_with(&dbs), PathBuf::from("/o.db"));
        assert_eq!(SourceKind::Kilo.default_location_with(&dbs), PathBuf::from("/k.db"));
        if cfg!(target_os = "linux") {
            let cfg = env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/c")]);
            assert_eq!(
                SourceKind::Cline.default_location_with(&plain),
                PathBuf::from("/h/.config/Code/User/globalStorage/saoudrizwan.claude-dev")
            );
            assert_eq!(
                SourceKind::RooCode.default_location_with(&cfg),
                PathBuf::from("/c/Code/User/globalStorage/rooveterinaryinc.roo-cline")
            );
        }
        let set = env(&[("HOME", "/h"), ("DSH_HOME", "/d"), ("CLAUDE_CONFIG_DIR", "/c"), ("CODEX_HOME", "/x")]);
        assert_eq!(SourceKind::Dsh.default_location_with(&set), PathBuf::from("/d/sessions"));
        assert_eq!(SourceKind::ClaudeCode.default_location_with(&set), PathBuf::from("/c/projects"));
        assert_eq!(SourceKind::Codex.default_location_with(&set), PathBuf::from("/x"));
    }

    #[test]
    fn with_no_default_location_every_place_is_looked_at_and_reported() {
        let home = tempfile::tempdir().unwrap();
        let at = |k: SourceKind| home.path().join(k.name());
        let specs = defaults_or_every_location(Vec::new(), at);
        assert_eq!(specs.len(), SourceKind::ALL.iter().filter(|k| k.has_default_location()).count());
        let multi = open_sources(&specs).unwrap();
        let listed = crate::block_on(multi.list_sessions());
        let why = listed.expect_err("no source could list").message().to_owned();
        let report = report_json(&multi);
        for kind in SourceKind::ALL.into_iter().filter(|k| k.has_default_location()) {
            let place = at(kind).display().to_string();
            assert!(why.contains(&place), "{place} not in {why}");
            let status = report.as_array().unwrap().iter().find(|s| s["name"] == kind.name()).unwrap();
            assert!(status["error"].as_str().unwrap().contains(&place), "{report}");
        }
        let some = vec![SourceSpec::new(SourceKind::Codex, "/x")];
        assert_eq!(defaults_or_every_location(some.clone(), at), some, "what exists is used as found");
    }

    #[test]
    fn specs_parse() {
        assert_eq!(SourceSpec::parse("codex=/x").unwrap(), SourceSpec::new(SourceKind::Codex, "/x"));
        assert!(SourceSpec::parse("gemini=/x").unwrap_err().contains("unknown source kind"));
        assert!(SourceSpec::parse("codex").is_err());
        assert!(SourceSpec::parse("codex=").is_err());
        let two = [SourceSpec::new(SourceKind::Codex, "/a"), SourceSpec::new(SourceKind::Codex, "/b")];
        assert!(open_sources(&two).unwrap_err().contains("two codex sources"));
        let specs = specs_from_json(&serde_json::json!([{"kind": "codex", "root": "/x"}, {"kind": "dsh"}])).unwrap();
        assert_eq!(specs[0], SourceSpec::new(SourceKind::Codex, "/x"));
        assert_eq!(specs[1], SourceSpec::new(SourceKind::Dsh, SourceKind::Dsh.default_location()));
        for bad in [
            serde_json::json!([]),
            serde_json::json!({}),
            serde_json::json!([{"kind": "x"}]),
            serde_json::json!([{"kind": "dsh", "root": 5}]),
        ] {
            assert!(specs_from_json(&bad).is_err(), "{bad}");
        }
    }
}
