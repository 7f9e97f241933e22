//! Opening sources by kind and location: the table of every kind the
//! library reads ([`SourceKind::ALL`], one descriptor per reader, declared
//! in the reader's folder), `kind=DIR` specs, and one [`MultiQuery`] over
//! several, which every front uses so that they all open the same things
//! the same way.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::awaited::Awaited;
use super::kind::{take_root, Env, Kind, Root};
use super::multi::{MultiQuery, SourceNotes};
use super::{
    aider, claude_code, cline, codex, continue_cli, copilot_cli, crush, cursor, dsh, gemini_cli, goose, grok, hermes,
    kimi, opencode, openhands, pi, qwen_code, warp, zed,
};
use crate::error::HostError;
use crate::host::{Blocking, BlockingSessionQuery, SessionHeader, SessionQuery, SurfaceData};

/// Every kind the library reads, in the order defaults are opened and
/// help texts list them. Adding a kind is its reader's folder (with its
/// `KIND`) and one row here.
const KINDS: &[&Kind] = &[
    &dsh::KIND,
    &claude_code::KIND,
    &codex::KIND,
    &copilot_cli::KIND,
    &gemini_cli::KIND,
    &cursor::KIND,
    &aider::KIND,
    &opencode::KIND,
    &opencode::KILO_KIND,
    &cline::KIND,
    &cline::ROO_KIND,
    &pi::KIND,
    &qwen_code::KIND,
    &continue_cli::KIND,
    &kimi::KIND,
    &grok::KIND,
    &goose::KIND,
    &crush::KIND,
    &zed::KIND,
    &hermes::KIND,
    &warp::KIND,
    &openhands::KIND,
];

/// A format a source can read: one of [`SourceKind::ALL`], each described
/// once, by its reader.
#[derive(Clone, Copy)]
pub struct SourceKind(&'static Kind);

/// The kinds by name, for callers that name one.
#[allow(non_upper_case_globals)]
impl SourceKind {
    /// DeepSeek Harness session logs (a sessions root).
    pub const Dsh: SourceKind = SourceKind(&dsh::KIND);
    /// Claude Code transcripts (a projects root).
    pub const ClaudeCode: SourceKind = SourceKind(&claude_code::KIND);
    /// Codex CLI rollouts (a Codex home).
    pub const Codex: SourceKind = SourceKind(&codex::KIND);
    /// GitHub Copilot CLI event logs (a session-state directory).
    pub const CopilotCli: SourceKind = SourceKind(&copilot_cli::KIND);
    /// Gemini CLI chats (its `tmp` directory).
    pub const GeminiCli: SourceKind = SourceKind(&gemini_cli::KIND);
    /// Cursor agent transcripts (its `projects` directory).
    pub const Cursor: SourceKind = SourceKind(&cursor::KIND);
    /// Aider chat histories (no default location).
    pub const Aider: SourceKind = SourceKind(&aider::KIND);
    /// OpenCode sessions (its SQLite database).
    pub const OpenCode: SourceKind = SourceKind(&opencode::KIND);
    /// New Kilo's sessions (its SQLite database, OpenCode's schema).
    pub const Kilo: SourceKind = SourceKind(&opencode::KILO_KIND);
    /// Cline tasks (its VS Code global storage directory) or Cline CLI
    /// sessions (its sessions directory).
    pub const Cline: SourceKind = SourceKind(&cline::KIND);
    /// Roo Code tasks (its VS Code global storage directory).
    pub const RooCode: SourceKind = SourceKind(&cline::ROO_KIND);
    /// Pi sessions, also Oh-My-Pi's and Prime Agent's (its sessions
    /// directory).
    pub const Pi: SourceKind = SourceKind(&pi::KIND);
    /// Qwen Code chats (its projects directory).
    pub const QwenCode: SourceKind = SourceKind(&qwen_code::KIND);
    /// Continue CLI sessions (its sessions directory).
    pub const Continue: SourceKind = SourceKind(&continue_cli::KIND);
    /// Kimi Code sessions (its sessions directory).
    pub const Kimi: SourceKind = SourceKind(&kimi::KIND);
    /// Grok Build sessions (its sessions directory).
    pub const Grok: SourceKind = SourceKind(&grok::KIND);
    /// Goose sessions (its SQLite database).
    pub const Goose: SourceKind = SourceKind(&goose::KIND);
    /// Crush sessions (a project's SQLite database).
    pub const Crush: SourceKind = SourceKind(&crush::KIND);
    /// Zed agent threads (its SQLite database).
    pub const Zed: SourceKind = SourceKind(&zed::KIND);
    /// Hermes Agent sessions (its SQLite state store).
    pub const Hermes: SourceKind = SourceKind(&hermes::KIND);
    /// Warp agent conversations (its SQLite database).
    pub const Warp: SourceKind = SourceKind(&warp::KIND);
    /// OpenHands conversations (its conversations directory).
    pub const OpenHands: SourceKind = SourceKind(&openhands::KIND);
}

impl PartialEq for SourceKind {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for SourceKind {}

impl std::hash::Hash for SourceKind {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.name.hash(state);
    }
}

impl std::fmt::Debug for SourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SourceKind({:?})", self.0.name)
    }
}

impl SourceKind {
    /// Every kind, in the order defaults are opened.
    pub const ALL: [SourceKind; KINDS.len()] = {
        let mut all = [SourceKind(KINDS[0]); KINDS.len()];
        let mut i = 1;
        while i < KINDS.len() {
            all[i] = SourceKind(KINDS[i]);
            i += 1;
        }
        all
    };

    /// The name fronts and `KIND=DIR` specs use: `"dsh"`, `"claude-code"`,
    /// `"codex"`, … (see [`names`](Self::names)).
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// Every kind's [`name`](Self::name), in [`ALL`](Self::ALL) order,
    /// joined with `", "`: what help texts and errors list.
    pub fn names() -> String {
        names_in(&Self::ALL)
    }

    /// The default location as help texts give it
    /// (`"$CODEX_HOME, else ~/.codex"`), from the one place that knows it.
    pub fn default_location_text(self) -> &'static str {
        self.0.location
    }

    /// Every kind with where it is read by default, for help texts:
    /// `"dsh ($DSH_HOME/sessions, else ~/.dsh/sessions), …"`.
    pub fn help_text() -> String {
        help_text_in(&Self::ALL)
    }

    /// Whether the kind has a default location (Aider keeps its history
    /// in each repository, so it is read only where it is given).
    pub fn has_default_location(self) -> bool {
        self.0.default.is_some()
    }

    /// The kind of a name given by [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Self> {
        from_name_in(&Self::ALL, name)
    }

    /// What the ids of its sessions start with (`""` for DSH, whose ids
    /// stay exactly as DSH writes them).
    pub fn prefix(self) -> &'static str {
        self.0.prefix
    }

    /// Whether its root is a file (a database) rather than a directory.
    pub fn root_is_file(self) -> bool {
        matches!(self.0.root, Root::Database(_))
    }

    /// Whether `root` exists as this kind's root: a directory, or for a
    /// database kind a file (or a data directory holding its database).
    pub fn root_exists(self, root: &Path) -> bool {
        match self.0.root {
            Root::Database(file) => root.is_file() || root.join(file).is_file(),
            _ => root.is_dir(),
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
    /// `$USERPROFILE`.) Each reads only the variables of
    /// [`location_variables`]. For a kind with several default locations
    /// (`cline`: also the Cline CLI's sessions directory), the first of
    /// [`default_locations_with`](Self::default_locations_with) that
    /// exists, else the first.
    pub fn default_location_with(self, env: &dyn Fn(&str) -> Option<OsString>) -> PathBuf {
        let all = self.default_locations_with(env);
        match all.len() {
            0 | 1 => all.into_iter().next().unwrap_or_default(),
            _ => all.iter().find(|at| self.root_exists(at)).unwrap_or(&all[0]).clone(),
        }
    }

    /// The default location from this process's environment.
    pub fn default_location(self) -> PathBuf {
        self.default_location_with(&|name| std::env::var_os(name))
    }

    /// Every default location, from the environment `env` gives: one for
    /// most kinds; for an agent that keeps sessions in more than one layout,
    /// each (`cline`: VS Code's extension storage, then the Cline CLI's
    /// `$CLINE_SESSION_DATA_DIR`, else `$CLINE_DATA_DIR/sessions`, else
    /// `$CLINE_DIR/data/sessions`, else `~/.cline/data/sessions`); none for
    /// a kind without a default location. With no `--source`, every one
    /// that exists is read, as one source of the kind.
    pub fn default_locations_with(self, env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
        let Some(first) = self.0.default else { return Vec::new() };
        let env = Env(env);
        std::iter::once(first).chain(self.0.also.iter().copied()).map(|at| at(&env)).collect()
    }

    /// [`default_locations_with`](Self::default_locations_with) this
    /// process's environment.
    pub fn default_locations(self) -> Vec<PathBuf> {
        self.default_locations_with(&|name| std::env::var_os(name))
    }

    /// The format's name in messages (`"Copilot CLI"`).
    pub fn format(self) -> &'static str {
        self.0.format
    }

    /// What it reads, in one line (`"Codex CLI rollouts (a Codex home)"`).
    pub fn about(self) -> &'static str {
        self.0.about
    }
}

fn names_in(kinds: &[SourceKind]) -> String {
    kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
}

fn help_text_in(kinds: &[SourceKind]) -> String {
    let each: Vec<String> = kinds.iter().map(|k| format!("{} ({})", k.name(), k.default_location_text())).collect();
    each.join("; ")
}

fn from_name_in(kinds: &[SourceKind], name: &str) -> Option<SourceKind> {
    kinds.iter().copied().find(|k| k.name() == name)
}

fn sentence_in(kinds: &[SourceKind]) -> String {
    let formats: Vec<&str> = kinds.iter().map(|k| k.format()).collect();
    match formats.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => formats.concat(),
    }
}

fn variables_in(kinds: &[SourceKind]) -> Vec<&'static str> {
    let mut all: Vec<&'static str> = Vec::new();
    for name in kinds.iter().flat_map(|k| k.0.env) {
        if !all.contains(name) {
            all.push(name);
        }
    }
    all
}

/// Every kind's format, as prose names them: `"DSH, Claude Code, Codex,
/// …, Hermes Agent and OpenHands"` (for descriptions, titles and help that name
/// what is read).
pub fn kinds_sentence() -> String {
    sentence_in(&SourceKind::ALL)
}

/// Every environment variable a kind's default location reads, on any
/// platform (`HOME`, `DSH_HOME`, `CODEX_HOME`, `XDG_DATA_HOME`, …), each
/// once, in [`SourceKind::ALL`] order: what a process that opens the
/// default locations for another must compare.
pub fn location_variables() -> Vec<&'static str> {
    variables_in(&SourceKind::ALL)
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
        parse_in(&SourceKind::ALL, spec)
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

fn parse_in(kinds: &[SourceKind], spec: &str) -> Result<SourceSpec, String> {
    let (kind, dir) = spec.split_once('=').ok_or_else(|| format!("{spec:?} is not KIND=DIR"))?;
    let kind = from_name_in(kinds, kind)
        .ok_or_else(|| format!("unknown source kind {kind:?}: use one of {}", names_in(kinds)))?;
    if dir.is_empty() {
        return Err(format!("{spec:?} names no directory"));
    }
    Ok(SourceSpec::new(kind, dir))
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
    /// as that `sessions/`; for a kind whose root is a directory inside the
    /// agent's home (`copilot-cli`, `gemini-cli`, `cursor`), that home; for
    /// a database kind, its data directory; for `cline` and `roo-code`,
    /// the `tasks/` directory inside the global storage; for `aider`, a
    /// chat history file. A root that is one level too deep, where what it
    /// means is ambiguous (one project's directory, one session's, a dated
    /// directory of rollouts, rollouts outside a Codex home), is an error
    /// that says what was expected and what was found. A root that is not a
    /// directory is taken as given (opening it reports why).
    pub fn resolve(&self) -> Result<ResolvedSpec, String> {
        Ok(match take_root(self.kind.0, &self.root)? {
            None => ResolvedSpec { spec: self.clone(), note: None },
            Some((to, note)) => ResolvedSpec { spec: SourceSpec::new(self.kind, to), note: Some(note) },
        })
    }
}

/// Why a root lists no session of `kind`: what it was expected to hold and
/// what it holds, from a look at it (for [`SourceStatus::note`](super::SourceStatus::note)
/// and the command line).
pub fn empty_root_note(kind: SourceKind, root: &Path) -> String {
    (kind.0.empty)(kind.0, root)
}

/// Every default location of every kind that exists on this machine, in
/// [`SourceKind::ALL`] order (a kind with several, each of them that
/// exists, in its own order: see [`SourceKind::default_locations`]).
pub fn default_specs() -> Vec<SourceSpec> {
    SourceKind::ALL
        .into_iter()
        .flat_map(|k| k.default_locations().into_iter().map(move |at| SourceSpec::new(k, at)))
        .filter(|s| s.kind.root_exists(&s.root))
        .collect()
}

/// `found` (the default locations that exist); when none does, every
/// kind at every default location (`locations`), so that a view over them
/// says, per source, that its root does not exist, and its listing fails
/// naming every place looked at, rather than answering an empty list as if
/// there were nothing to find.
pub fn defaults_or_every_location(
    found: Vec<SourceSpec>,
    locations: impl Fn(SourceKind) -> Vec<PathBuf>,
) -> Vec<SourceSpec> {
    if !found.is_empty() {
        return found;
    }
    let every = |k: SourceKind| locations(k).into_iter().map(move |at| SourceSpec::new(k, at));
    SourceKind::ALL.into_iter().filter(|k| k.has_default_location()).flat_map(every).collect()
}

/// The specs of `kind` at its default locations: each that exists, else the
/// first (none when it has no default location).
fn defaults_of(kind: SourceKind) -> Vec<SourceSpec> {
    let all = kind.default_locations();
    let found: Vec<SourceSpec> =
        all.iter().filter(|at| kind.root_exists(at)).map(|at| SourceSpec::new(kind, at.clone())).collect();
    match found.is_empty() {
        true => all.into_iter().take(1).map(|at| SourceSpec::new(kind, at)).collect(),
        false => found,
    }
}

/// What to say when no default location exists (so [`default_specs`] is
/// empty): every place that was looked at, and what to give instead.
pub fn no_default_location_message() -> String {
    let looked: Vec<String> = SourceKind::ALL
        .into_iter()
        .flat_map(|k| k.default_locations().into_iter().map(move |at| format!("{} at {}", k.name(), at.display())))
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
/// an array of `{"kind": <a kind's name>, "root"?: string|null}`
/// (a missing or null root is the kind's default location; for a kind with
/// several, each that exists). The C ABI, Python and Node all take this
/// shape.
pub fn specs_from_json(value: &serde_json::Value) -> Result<Vec<SourceSpec>, String> {
    match value {
        serde_json::Value::Null => Ok(defaults_or_every_location(default_specs(), SourceKind::default_locations)),
        serde_json::Value::Array(list) if !list.is_empty() => {
            let mut specs = Vec::with_capacity(list.len());
            for item in list {
                let spec = SourceSpec::from_json(item)?;
                let defaulted = matches!(item.get("root"), None | Some(serde_json::Value::Null));
                match defaulted && !spec.kind.0.also.is_empty() {
                    true => specs.extend(defaults_of(spec.kind)),
                    false => specs.push(spec),
                }
            }
            Ok(specs)
        }
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
    (spec.kind.0.open)(&spec.root)
}

/// One view over the sources of `specs`, in order, named by kind, each
/// root [resolved](SourceSpec::resolve). A root that cannot be opened (or
/// is ambiguous) becomes a source whose listing fails with the reason
/// (reported by [`MultiQuery::last_report`], never fatal to the others); a
/// root taken for the one it meant, and one that lists no session (with
/// what it holds), are said in the report's note. Two sources of one kind
/// are refused (reads are routed by the id's prefix), except for a kind
/// with several default locations (`cline`), whose roots are read together:
/// a read goes to the root that listed the id, and an id two of them list
/// is read from the first (the other's copy named in its note). One root
/// given twice is refused.
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
        if seen.contains(&spec) || (spec.kind.0.also.is_empty() && seen.iter().any(|s| s.kind == spec.kind)) {
            return Err(format!("two {} sources: give at most one root per kind", spec.kind.name()));
        }
        seen.push(spec);
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
    use crate::sources::kind::seen;
    use std::cell::RefCell;

    /// A kind outside the built-in table, declared the way a reader
    /// declares its own: plain-text notes, one session per `<name>.txt`.
    static NOTES: Kind = Kind {
        name: "notes",
        format: "Notes",
        about: "Plain-text notes (a directory of <name>.txt)",
        prefix: "notes:",
        location: "$DSR_TEST_NOTES_HOME/notes, else ~/.notes/notes",
        default: Some(|env| env.var(NOTES_VAR).unwrap_or_else(|| env.home().join(".notes")).join("notes")),
        also: &[],
        env: &[NOTES_VAR, "HOME", "USERPROFILE"],
        root: Root::InHome("notes"),
        layout: "<name>.txt files (as ~/.notes/notes)",
        open: open_notes,
        empty: |kind, root| kind.expected(root, &seen(root)),
    };

    const NOTES_VAR: &str = "DSR_TEST_NOTES_HOME";

    /// The notes reader: each `<name>.txt` a session `notes:<name>`, titled
    /// by its first line.
    fn open_notes(root: &Path) -> std::io::Result<Arc<dyn SessionQuery>> {
        let query = crate::MemoryQuery::new();
        for entry in std::fs::read_dir(root)? {
            let path = entry?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".txt")) else {
                continue;
            };
            let id = format!("{}{name}", NOTES.prefix);
            query.add_session(SessionHeader::new(&id, 0u64, None));
            query.set_title(&id, std::fs::read_to_string(&path)?.lines().next().map(str::to_owned));
        }
        Ok(Arc::new(query))
    }

    /// One more row in a table of kinds is all a new kind needs: its name
    /// is parsed, listed, helped and described, its variables are
    /// compared, its home given is taken for its root, its sessions are
    /// listed under its name and an empty root gets its note.
    #[test]
    fn a_kind_added_to_a_table_is_read_wherever_the_table_is() {
        let notes = SourceKind(&NOTES);
        let table: Vec<SourceKind> = SourceKind::ALL.into_iter().chain([notes]).collect();
        assert_eq!(names_in(&table), format!("{}, notes", SourceKind::names()));
        assert_eq!(
            help_text_in(&table),
            format!("{}; notes ($DSR_TEST_NOTES_HOME/notes, else ~/.notes/notes)", SourceKind::help_text())
        );
        let last = SourceKind::ALL[SourceKind::ALL.len() - 1];
        let sentence = sentence_in(&table);
        assert!(sentence.ends_with(&format!(", {} and Notes", last.format())), "{sentence}");
        assert_eq!(variables_in(&table).last(), Some(&NOTES_VAR));
        assert_eq!(parse_in(&table, "notes=/x"), Ok(SourceSpec::new(notes, "/x")));
        assert!(parse_in(&SourceKind::ALL, "notes=/x").unwrap_err().contains("unknown source kind"));
        assert!(parse_in(&table, "nope=/x").unwrap_err().ends_with(&format!(", {}, notes", last.name())));
        let env = |name: &str| (name == NOTES_VAR).then(|| OsString::from("/n"));
        assert_eq!(notes.default_location_with(&env), PathBuf::from("/n/notes"));

        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("notes")).unwrap();
        std::fs::write(home.path().join("notes/first.txt"), "A first note\nmore").unwrap();
        let multi = open_sources(&[SourceSpec::new(notes, home.path())]).unwrap();
        let listed = crate::block_on(multi.list_sessions()).unwrap();
        assert_eq!(listed.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["notes:first"]);
        assert_eq!(crate::block_on(multi.read_title("notes:first")).unwrap().as_deref(), Some("A first note"));
        let report = report_json(&multi);
        assert_eq!(report[0]["name"], "notes");
        let note = report[0]["note"].as_str().unwrap();
        assert!(
            note.ends_with(&format!("is a Notes home holding notes/: reading {}", home.path().join("notes").display()))
        );

        let empty = tempfile::tempdir().unwrap();
        let multi = open_sources(&[SourceSpec::new(notes, empty.path())]).unwrap();
        assert!(crate::block_on(multi.list_sessions()).unwrap().is_empty());
        let expected = format!(
            "no Notes session in {}: expected <name>.txt files (as ~/.notes/notes); it is empty",
            empty.path().display()
        );
        assert_eq!(report_json(&multi)[0]["note"], expected.as_str());
    }

    /// The variables a kind declares are every one its default location
    /// reads (so the list the daemon compares misses none).
    #[test]
    fn each_kind_reads_only_the_variables_it_declares() {
        let all = location_variables();
        for kind in SourceKind::ALL.into_iter().chain([SourceKind(&NOTES)]) {
            let asked = RefCell::new(Vec::<String>::new());
            for set in [true, false] {
                let env = |name: &str| {
                    asked.borrow_mut().push(name.to_owned());
                    set.then(|| OsString::from("/v"))
                };
                kind.default_location_with(&env);
            }
            let asked = asked.into_inner();
            let undeclared: Vec<&String> = asked.iter().filter(|n| !kind.0.env.contains(&n.as_str())).collect();
            assert!(undeclared.is_empty(), "{} reads {undeclared:?} without declaring it", kind.name());
            assert_eq!(asked.is_empty(), !kind.has_default_location(), "{}", kind.name());
            if kind != SourceKind(&NOTES) {
                assert!(kind.0.env.iter().all(|v| all.contains(v)), "{}", kind.name());
            }
        }
        for v in ["HOME", "USERPROFILE", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "APPDATA", "DSH_HOME", "KILO_DB"] {
            assert!(all.contains(&v), "{v} in {all:?}");
        }
    }

    /// Names, formats and prefixes each name one kind, and a prefix is its
    /// kind's name and a colon (DSH's ids alone have none), so an id's
    /// prefix routes it to exactly one source.
    #[test]
    fn the_table_names_each_kind_once() {
        let all = SourceKind::ALL;
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert!(a.name() != b.name() && a.format() != b.format() && a.prefix() != b.prefix(), "{a:?} {b:?}");
            }
            assert!(a.prefix().is_empty() || a.prefix() == format!("{}:", a.name()), "{a:?}");
            assert!(!a.about().is_empty() && !a.default_location_text().is_empty(), "{a:?}");
        }
        assert_eq!(all.iter().filter(|k| k.prefix().is_empty()).count(), 1);
        assert_eq!(
            kinds_sentence(),
            "DSH, Claude Code, Codex, Copilot CLI, Gemini CLI, Cursor, Aider, OpenCode, Kilo, Cline, Roo Code, Pi, Qwen \
             Code, Continue, Kimi Code, Grok Build, Goose, Crush, Zed, Hermes Agent, Warp and OpenHands"
        );
    }

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
        assert_eq!(SourceKind::Pi.default_location_with(&plain), PathBuf::from("/h/.pi/agent/sessions"));
        let pi = env(&[("HOME", "/h"), ("PI_CODING_AGENT_DIR", "/a")]);
        assert_eq!(SourceKind::Pi.default_location_with(&pi), PathBuf::from("/a/sessions"));
        let pi = env(&[("HOME", "/h"), ("PI_CODING_AGENT_DIR", "/a"), ("PI_CODING_AGENT_SESSION_DIR", "/s")]);
        assert_eq!(SourceKind::Pi.default_location_with(&pi), PathBuf::from("/s"));
        let oh = SourceKind::OpenHands;
        assert_eq!(oh.default_location_with(&plain), PathBuf::from("/h/.openhands/conversations"));
        let set = env(&[("HOME", "/h"), ("OPENHANDS_PERSISTENCE_DIR", "/p")]);
        assert_eq!(oh.default_location_with(&set), PathBuf::from("/p/conversations"));
        let set = env(&[("HOME", "/h"), ("OPENHANDS_PERSISTENCE_DIR", "/p"), ("OPENHANDS_CONVERSATIONS_DIR", "/c")]);
        assert_eq!(oh.default_location_with(&set), PathBuf::from("/c"));
    }

    #[test]
    fn with_no_default_location_every_place_is_looked_at_and_reported() {
        let home = tempfile::tempdir().unwrap();
        let at = |k: SourceKind| home.path().join(k.name());
        let every = |k: SourceKind| vec![at(k)];
        let specs = defaults_or_every_location(Vec::new(), every);
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
        assert_eq!(defaults_or_every_location(some.clone(), every), some, "what exists is used as found");
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
