//! Cline and Roo Code tasks (and legacy Kilo Code's, Roo's shape): a
//! read-only session source over a VS Code extension's global storage
//! directory (`…/globalStorage/saoudrizwan.claude-dev` for Cline,
//! `…/globalStorage/rooveterinaryinc.roo-cline` for Roo Code), reading
//! `tasks/<task id>/api_conversation_history.json`. The Cline CLI's own
//! sessions directory is read by [`cli::CliSource`], under the same kind.
//!
//! ```no_run
//! use dsh_session_reference::sources::cline::{ClineSource, Flavor};
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = ClineSource::open("/home/me/.config/Code/User/globalStorage/saoudrizwan.claude-dev", Flavor::Cline)?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Sessions
//!
//! - **id**: `cline:<task id>` (`roo-code:<task id>`), the task's directory
//!   name. A task directory without `api_conversation_history.json`, or with
//!   an empty one, is not a session (yet).
//! - **createdAt**: Cline: the task id (Cline's ids are the creation time in
//!   ms), else the task's `ts` in `state/taskHistory.json`; Roo Code: `ts`
//!   of the task's `history_item.json`; else the history file's
//!   modification time.
//! - **cwd**: Cline: `cwdOnTaskInitialization` of the task in
//!   `state/taskHistory.json`; Roo Code: `workspace` of `history_item.json`.
//! - **title**: the task's `task` text from that index (the prompt that
//!   started it, as the agent keeps it), else the first typed user text of
//!   the history (whitespace collapsed, at most 100 characters).
//! - **capturedThroughSeq**: the 0-based number of the last element of the
//!   history array read.
//!
//! # Replay
//!
//! The history is an array of Anthropic `MessageParam`s, rewritten whole
//! by the agent. It is read element by element: an element that is not an
//! object is skipped; a file cut short (read while being rewritten) gives
//! the elements before the cut.
//!
//! - **Cline** sends the first user-assistant pair, then every message
//!   after its `conversationHistoryDeletedRange` (`[start, end]`, inclusive),
//!   which it keeps on the task's history item (else on its UI messages,
//!   `ui_messages.json`, the last one that carries it).
//! - **Roo Code** keeps condensed and truncated messages, tagged: a message
//!   whose `condenseParent` is the `condenseId` of a summary still in the
//!   history (`isSummary`), or whose `truncationParent` is the
//!   `truncationId` of a truncation marker still there
//!   (`isTruncationMarker`), is not sent. A summary is a checkpoint; a
//!   truncation marker (a notice) is dropped.
//!
//! What reaches the conversation:
//!
//! - user: what the user typed, which the agents wrap in `<task>`,
//!   `<feedback>`, `<answer>` or `<user_message>` (inside tool results too:
//!   feedback on a denied tool); nothing else of a user message (tool
//!   output, environment details, resumption notices and errors are the
//!   harness's);
//! - assistant: text blocks, with the XML tool calls the agents write in
//!   them and `<thinking>` removed (the `result` of `attempt_completion`,
//!   the `question` of `ask_followup_question` and the `response` of
//!   `plan_mode_respond`, which the user reads, kept);
//! - never tool use or results, images, reasoning blocks, environment
//!   details.
//!
//! # Safety
//!
//! As for every source: nothing is written or locked, no link below the
//! root is followed; a history larger than [`MAX_HISTORY_BYTES`] makes
//! its task unreadable (the whole file is parsed at once).

mod canon;
pub mod cli;
mod fast;
pub mod history;
pub mod sdk;
mod shared;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use crate::conversation::Conversation;
use crate::error::HostError;
use crate::fs::{
    open_under, par_map, read_opened, sorted_entries, DirUnder, EntryKind, FileIdentity, Stamp, LINK_REASON,
};
use crate::host::{BlockingSessionQuery, Fingerprint, SessionHeader, SharedListing, SurfaceData};
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{conversation, mtime_ms, read_error, title_from_text, LineStats, ListedSession, Listing};
use crate::sources::kind::{named, seen, took, Env, Kind, Root, Taken};
use crate::sources::lenient::{lenient, LStr, LU64};

use self::shared::files_fingerprint;
pub use self::shared::{MAX_HISTORY_BYTES, PREFIX};

/// What every Roo Code session id starts with.
pub const ROO_PREFIX: &str = "roo-code:";

/// Cline as a kind of source: the VS Code extension's global storage, or
/// the CLI's sessions directory (told apart by what the root holds); by
/// default both, each where it exists.
pub(crate) const KIND: Kind = Kind {
    name: "cline",
    format: Flavor::Cline.format(),
    about: "Cline tasks (its VS Code global storage directory) or Cline CLI sessions (its sessions directory)",
    prefix: Flavor::Cline.prefix(),
    location: "VS Code's globalStorage/saoudrizwan.claude-dev, and the Cline CLI's $CLINE_SESSION_DATA_DIR, else \
               $CLINE_DATA_DIR/sessions, else $CLINE_DIR/data/sessions, else ~/.cline/data/sessions (each that \
               exists)",
    default: Some(|env| env.vs_code_storage().join(Flavor::Cline.extension_id())),
    also: &[cli_sessions_dir],
    env: CLINE_ENV,
    root: Root::Own(take_cline_root),
    layout: "tasks/<id>/api_conversation_history.json (as VS Code's globalStorage/saoudrizwan.claude-dev) or \
             <id>/<id>.messages.json (as the Cline CLI's ~/.cline/data/sessions)",
    open: |root| {
        if cli::is_sessions_dir(root) {
            return Ok(cli::CliSource::open(root)?.into_query());
        }
        Ok(ClineSource::open(root, Flavor::Cline)?.into_query())
    },
    empty: cline_empty_note,
};

/// What Cline's default location is found by, on any platform.
const CLINE_ENV: &[&str] =
    &["XDG_CONFIG_HOME", "APPDATA", "HOME", "USERPROFILE", "CLINE_SESSION_DATA_DIR", "CLINE_DATA_DIR", "CLINE_DIR"];

/// The Cline CLI's sessions directory, as the SDK resolves it
/// (`resolveSessionDataDir`).
fn cli_sessions_dir(env: &Env) -> PathBuf {
    let var = |name: &str| env.var(name).filter(|p| !p.as_os_str().to_string_lossy().trim().is_empty());
    if let Some(dir) = var("CLINE_SESSION_DATA_DIR") {
        return dir;
    }
    let data = var("CLINE_DATA_DIR")
        .unwrap_or_else(|| var("CLINE_DIR").unwrap_or_else(|| env.home().join(".cline")).join("data"));
    data.join("sessions")
}

/// A root given for Cline: as for Roo Code, or the CLI's data directory
/// (holding `sessions/`, taken for it) or its home (holding
/// `data/sessions/`).
fn take_cline_root(root: &Path) -> Result<Taken, String> {
    if let Some(taken) = take_root(root)? {
        return Ok(Some(taken));
    }
    if !root.is_dir() || root.join("tasks").is_dir() || cli::is_sessions_dir(root) {
        return Ok(None);
    }
    if root.join("sessions").is_dir() {
        return Ok(took(root, root.join("sessions"), "is a Cline data directory holding sessions/"));
    }
    let nested = root.join("data").join("sessions");
    if nested.is_dir() {
        return Ok(took(root, nested, "is a Cline home holding data/sessions/"));
    }
    Ok(None)
}

/// Why a Cline root lists no session.
fn cline_empty_note(kind: &Kind, root: &Path) -> String {
    if cli::is_sessions_dir(root) {
        return format!("{}: no directory of it holds a <id>.messages.json with a message", kind.no_session_in(root));
    }
    empty_note(kind, root)
}

/// Roo Code as a kind of source (legacy Kilo Code's too, given as the root).
pub(crate) const ROO_KIND: Kind = Kind {
    name: "roo-code",
    format: Flavor::RooCode.format(),
    about: "Roo Code tasks (its VS Code global storage directory; legacy Kilo Code's too, given as the root)",
    prefix: Flavor::RooCode.prefix(),
    location: "VS Code's globalStorage/rooveterinaryinc.roo-cline",
    default: Some(|env| env.vs_code_storage().join(Flavor::RooCode.extension_id())),
    also: &[],
    env: VS_CODE_ENV,
    root: Root::Own(take_root),
    layout: "tasks/<id>/api_conversation_history.json (as VS Code's globalStorage/rooveterinaryinc.roo-cline)",
    open: |root| Ok(ClineSource::open(root, Flavor::RooCode)?.into_query()),
    empty: empty_note,
};

/// What VS Code's global storage is found by, on any platform.
const VS_CODE_ENV: &[&str] = &["XDG_CONFIG_HOME", "APPDATA", "HOME", "USERPROFILE"];

/// A root given for Cline or Roo Code: its global storage directory (as
/// given), or the `tasks/` directory inside one (taken for its parent).
fn take_root(root: &Path) -> Result<Taken, String> {
    if !root.is_dir() || root.join("tasks").is_dir() || !named(root.file_name().unwrap_or_default(), &["tasks"]) {
        return Ok(None);
    }
    let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) else { return Ok(None) };
    Ok(took(root, parent.to_path_buf(), "is the tasks/ directory of an extension's global storage"))
}

/// Why a global storage directory lists no task.
fn empty_note(kind: &Kind, root: &Path) -> String {
    if !root.join("tasks").is_dir() {
        return kind.expected(root, &seen(root));
    }
    format!("{}: no directory of its tasks/ holds a non-empty api_conversation_history.json", kind.no_session_in(root))
}

/// The history file of a task.
pub const HISTORY: &str = "api_conversation_history.json";

/// Which extension wrote the tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// Cline (`saoudrizwan.claude-dev`).
    Cline,
    /// Roo Code (`rooveterinaryinc.roo-cline`), and legacy Kilo Code
    /// (`kilocode.kilo-code`), which writes Roo's shape.
    RooCode,
}

impl Flavor {
    /// The prefix of its session ids.
    pub const fn prefix(self) -> &'static str {
        match self {
            Flavor::Cline => PREFIX,
            Flavor::RooCode => ROO_PREFIX,
        }
    }

    /// Its name in messages.
    pub const fn format(self) -> &'static str {
        match self {
            Flavor::Cline => "Cline",
            Flavor::RooCode => "Roo Code",
        }
    }

    /// Its VS Code extension id (its global storage directory's name).
    pub const fn extension_id(self) -> &'static str {
        match self {
            Flavor::Cline => "saoudrizwan.claude-dev",
            Flavor::RooCode => "rooveterinaryinc.roo-cline",
        }
    }
}

/// What a task's index entry says (Cline's `taskHistory.json` item, Roo's
/// `history_item.json`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskInfo {
    /// `ts` (ms).
    pub ts: Option<u64>,
    /// The prompt that started the task.
    pub task: Option<String>,
    /// Its working directory.
    pub cwd: Option<String>,
    /// Cline's `conversationHistoryDeletedRange`.
    pub deleted: Option<(u64, u64)>,
}

#[derive(Deserialize, Default)]
struct ItemJson<'a> {
    #[serde(borrow, default)]
    id: LStr<'a>,
    #[serde(default)]
    ts: LU64,
    #[serde(borrow, default)]
    task: LStr<'a>,
    #[serde(rename = "cwdOnTaskInitialization", borrow, default)]
    cwd: LStr<'a>,
    #[serde(borrow, default)]
    workspace: LStr<'a>,
    #[serde(rename = "conversationHistoryDeletedRange", default, deserialize_with = "lenient")]
    deleted: Option<(u64, u64)>,
}

impl ItemJson<'_> {
    fn info(&self) -> TaskInfo {
        TaskInfo {
            ts: self.ts.0,
            task: self.task.owned().filter(|t| !t.trim().is_empty()),
            cwd: self.cwd.owned().or_else(|| self.workspace.owned()).filter(|c| !c.is_empty()),
            deleted: self.deleted,
        }
    }
}

/// A UI message's deleted range (the rest skipped).
#[derive(Deserialize, Default)]
struct UiJson {
    #[serde(rename = "conversationHistoryDeletedRange", default, deserialize_with = "lenient")]
    deleted: Option<(u64, u64)>,
}

/// Cline's task index, by task id, with the identity it was read at.
type IndexMemo = Option<(FileIdentity, Arc<HashMap<String, TaskInfo>>)>;

/// A read-only session source over Cline's or Roo Code's global storage.
/// Cheap to clone; every method may run concurrently.
#[derive(Clone, Debug)]
pub struct ClineSource {
    root: Arc<PathBuf>,
    flavor: Flavor,
    index: Arc<Mutex<IndexMemo>>,
}

/// Cline's index of tasks, below the storage root.
const TASK_INDEX: [&str; 2] = ["state", "taskHistory.json"];

/// One read task (of the VS Code storage) or session (of the Cline CLI).
#[derive(Clone, Debug, Default)]
pub struct Read {
    /// The current conversation.
    pub items: Vec<crate::conversation::ConversationItem>,
    /// The title by the rules of the module docs.
    pub title: Option<String>,
    /// The working directory.
    pub cwd: Option<String>,
    /// Elements read (`lines`) and skipped.
    pub stats: LineStats,
    /// Whether a Cline CLI session's compaction sidecar was applied
    /// (always `false` for a VS Code task, which keeps none).
    pub compacted: bool,
}

fn os(parts: &[&str]) -> Vec<OsString> {
    parts.iter().map(OsString::from).collect()
}

impl cli::CliSource {
    /// Opens a Cline CLI sessions directory (a link to one is fine). It
    /// need not hold a session yet.
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        Ok(cli::CliSource::at(crate::sources::file_source::open_root(root.as_ref(), cli::FORMAT)?))
    }
}

impl ClineSource {
    /// Opens a global storage directory (a link to one is fine). It need not
    /// have `tasks/` yet.
    pub fn open(root: impl AsRef<Path>, flavor: Flavor) -> io::Result<Self> {
        let root = crate::sources::file_source::open_root(root.as_ref(), flavor.format())?;
        Ok(ClineSource { root: Arc::new(root), flavor, index: Arc::default() })
    }

    fn bare<'a>(&self, id: &'a str) -> &'a str {
        id.strip_prefix(self.flavor.prefix()).unwrap_or(id)
    }

    fn open_in(&self, parts: &[OsString]) -> io::Result<(std::fs::File, FileIdentity)> {
        let parts: Vec<&OsStr> = parts.iter().map(OsString::as_os_str).collect();
        open_under(&self.root, &parts)
    }

    /// The whole file at `parts` below the root (at most `max` bytes: a
    /// larger file is an error), with its identity.
    fn read_all(&self, parts: &[OsString], max: u64) -> io::Result<(Vec<u8>, FileIdentity)> {
        let (mut file, identity) = self.open_in(parts)?;
        if identity.size > max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the file is {} bytes, over the {max} read", identity.size),
            ));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(identity.size).unwrap_or(0));
        (&mut file).take(max).read_to_end(&mut bytes)?;
        Ok((bytes, identity))
    }

    fn task_path(&self, task: &str, file: &str) -> PathBuf {
        self.root.join("tasks").join(task).join(file)
    }

    /// Cline's `state/taskHistory.json`, by task id (re-read only when it
    /// changed; empty for Roo Code, or when it is absent or not JSON).
    pub fn task_index(&self) -> Arc<HashMap<String, TaskInfo>> {
        if self.flavor != Flavor::Cline {
            return Arc::default();
        }
        let Some(identity) = Stamp::lstat(&self.root.join(TASK_INDEX[0]).join(TASK_INDEX[1])).map(|s| s.id) else {
            return Arc::default();
        };
        if let Some((known, index)) = self.index.lock().ok().and_then(|m| m.clone()) {
            if known == identity {
                return index;
            }
        }
        let Ok((bytes, identity)) = self.read_all(&os(&TASK_INDEX), MAX_HISTORY_BYTES) else { return Arc::default() };
        let items: Vec<ItemJson<'_>> = serde_json::from_slice(&bytes).unwrap_or_default();
        let index: HashMap<String, TaskInfo> =
            items.iter().filter_map(|i| i.id.owned().map(|id| (id, i.info()))).collect();
        let index = Arc::new(index);
        if let Ok(mut memo) = self.index.lock() {
            *memo = Some((identity, index.clone()));
        }
        index
    }

    /// Roo Code's `history_item.json` of a task (`None` when absent or not
    /// JSON), opened in the tasks directory `tasks`.
    fn history_item(tasks: &DirUnder, task: &str) -> Option<TaskInfo> {
        let (file, stamp) = tasks.open_file(&[OsStr::new(task), OsStr::new("history_item.json")]).ok()?;
        let bytes = read_opened(file, stamp.id.size, 1 << 20).ok()?;
        serde_json::from_slice::<ItemJson<'_>>(&bytes).ok().map(|i| i.info())
    }

    /// The tasks directory, opened to open files below it.
    fn tasks_dir(&self) -> DirUnder {
        DirUnder::open(&self.root, &[OsStr::new("tasks")])
    }

    /// What the agent's index says of `task` (`tasks`: the tasks directory).
    fn info(&self, tasks: &DirUnder, task: &str, index: &HashMap<String, TaskInfo>) -> Option<TaskInfo> {
        match self.flavor {
            Flavor::Cline => index.get(task).cloned(),
            Flavor::RooCode => Self::history_item(tasks, task),
        }
    }

    /// The task directories, in byte order, with per-entry problems.
    fn tasks(&self, rejected: &mut Vec<(PathBuf, String)>) -> Vec<String> {
        let dir = self.root.join("tasks");
        let entries = match sorted_entries(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                rejected.push((dir, e.to_string()));
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for entry in entries {
            match entry.kind(&dir) {
                Ok(EntryKind::Dir) => match entry.name.to_str() {
                    Some(name) => out.push(name.to_owned()),
                    None => rejected.push((dir.join(&entry.name), "a task directory name that is not UTF-8".into())),
                },
                Ok(EntryKind::Link) => rejected.push((dir.join(&entry.name), LINK_REASON.to_owned())),
                Ok(_) => {}
                Err(e) => rejected.push((dir.join(&entry.name), e.to_string())),
            }
        }
        out
    }

    /// The tasks with a history, newest first.
    pub fn list(&self) -> io::Result<Listing> {
        let mut rejected = Vec::new();
        let tasks = self.tasks(&mut rejected);
        let index = self.task_index();
        // Per task: its history opened (and closed) for its identity, and
        // for Roo Code its `history_item.json` read, each opened by one
        // call relative to the tasks directory.
        let dir = self.tasks_dir();
        let found = par_map(&tasks, |task, _: &mut ()| {
            let (_, stamp) = dir.open_file(&[OsStr::new(task), OsStr::new(HISTORY)])?;
            Ok::<_, io::Error>((stamp.id, self.info(&dir, task, &index)))
        });
        let mut listing =
            Listing { sessions: Vec::with_capacity(tasks.len()), rejected, without_conversation: Vec::new() };
        for (task, found) in tasks.iter().zip(found) {
            let path = self.task_path(task, HISTORY);
            let (identity, info) = match found {
                Ok(f) => f,
                // A task directory without its history is not a session.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => {
                    listing.rejected.push((path, e.to_string()));
                    continue;
                }
            };
            if identity.size == 0 {
                listing.without_conversation.push(path);
                continue;
            }
            let info = info.unwrap_or_default();
            let from_id =
                (self.flavor == Flavor::Cline && task.len() >= 12 && task.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| task.parse().ok())
                    .flatten();
            let created = from_id.or(info.ts).unwrap_or_else(|| mtime_ms(&identity));
            listing.sessions.push(ListedSession::new(self.flavor.prefix(), task, created, info.cwd, path));
        }
        listing.sort();
        Ok(listing)
    }

    /// Cline's deleted range from the task's UI messages (the last one
    /// that carries it).
    fn ui_deleted_range(&self, task: &str) -> Option<(u64, u64)> {
        let (bytes, _) = self.read_all(&os(&["tasks", task, "ui_messages.json"]), MAX_HISTORY_BYTES).ok()?;
        let ui: Vec<UiJson> = serde_json::from_slice(&bytes).ok()?;
        ui.iter().rev().find_map(|m| m.deleted)
    }

    /// Reads the task `id` (with or without the prefix).
    pub fn read(&self, id: &str) -> Result<Read, HostError> {
        let task = self.bare(id);
        let path = self.task_path(task, HISTORY);
        let fail = |e: String| read_error(self.flavor.format(), id, &path, e);
        if task.is_empty() || task.contains(['/', '\\']) || task == "." || task == ".." {
            return Err(fail("not a task id".into()));
        }
        let (bytes, _) =
            self.read_all(&os(&["tasks", task, HISTORY]), MAX_HISTORY_BYTES).map_err(|e| fail(e.to_string()))?;
        let parsed = history::parse(&bytes).ok_or_else(|| fail("not a JSON array of messages".into()))?;
        let info = self.info(&self.tasks_dir(), task, &self.task_index()).unwrap_or_default();
        let positions = match self.flavor {
            Flavor::Cline => {
                let deleted = info.deleted.or_else(|| self.ui_deleted_range(task));
                history::cline_effective(parsed.messages.len(), deleted)
            }
            Flavor::RooCode => history::roo_effective(&parsed.messages),
        };
        let items = history::items(&parsed.messages, &positions);
        let title =
            info.task.as_deref().and_then(title_from_text).or_else(|| history::first_user_title(&parsed.messages));
        let stats = LineStats { lines: parsed.messages.len() as u64, skipped: parsed.skipped };
        Ok(Read { items, title, cwd: info.cwd, stats, compacted: false })
    }

    /// The title of `id` by the rules of the module docs.
    pub fn title(&self, id: &str) -> Result<Option<String>, HostError> {
        self.read(id).map(|r| r.title)
    }

    /// The current conversation of `id`, as the resolver renders it.
    pub fn conversation(&self, id: &str) -> Result<Conversation, HostError> {
        let read = self.read(id)?;
        Ok(conversation(self.flavor.prefix(), id, read.cwd, read.stats, read.items))
    }
}

impl BlockingSessionQuery for ClineSource {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        Listing::headers(self.list(), self.flavor.format(), &self.root)
    }

    /// The listing with every task's fingerprint (a few `lstat`s each).
    fn shared_listing(&self) -> Result<Option<SharedListing>, HostError> {
        crate::host::listing_with_fingerprints(self)
    }

    fn read_title(&self, session_id: &str) -> Result<Option<String>, HostError> {
        self.title(session_id)
    }

    fn read_surface(&self, session_id: &str) -> Result<SurfaceData, HostError> {
        self.conversation(session_id).map(SurfaceData::from)
    }

    /// A task's fingerprint: the identities of every file its read may
    /// use: its history, its UI messages (Cline's deleted range may come
    /// from them), and the index (Cline's `taskHistory.json`, Roo Code's
    /// `history_item.json`).
    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        let cline_index = Stamp::lstat(&self.root.join(TASK_INDEX[0]).join(TASK_INDEX[1]));
        let print = |id: &String| {
            let task = self.bare(id);
            let history = Stamp::lstat(&self.task_path(task, HISTORY))?;
            let extra = match self.flavor {
                Flavor::Cline => [Stamp::lstat(&self.task_path(task, "ui_messages.json")), cline_index],
                Flavor::RooCode => [Stamp::lstat(&self.task_path(task, "history_item.json")), None],
            };
            Some(files_fingerprint(history, extra))
        };
        Ok(Some(session_ids.iter().map(print).collect()))
    }
}

impl FileSource for ClineSource {
    const FORMAT: &'static str = "Cline";

    fn root(&self) -> &Path {
        &self.root
    }

    fn identity(&self, session_id: &str) -> Result<FileIdentity, HostError> {
        let task = self.bare(session_id);
        self.open_in(&os(&["tasks", task, HISTORY]))
            .map(|(_, i)| i)
            .map_err(|e| read_error(self.flavor.format(), session_id, &self.task_path(task, HISTORY), e))
    }
}
