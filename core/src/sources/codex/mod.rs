//! Codex CLI rollouts: a read-only session source over a Codex home
//! (`$CODEX_HOME`, default `~/.codex`), reading
//! `sessions/YYYY/MM/DD/rollout-*.jsonl`, legacy flat `sessions/rollout-*.jsonl`
//! and `archived_sessions/` (flat or dated), plus `session_index.jsonl` for
//! titles.
//!
//! ```no_run
//! use dsh_session_reference::sources::codex::CodexSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = CodexSource::open("/home/me/.codex")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Sessions
//!
//! - **id**: `codex:<id>`, the id of the first `session_meta` line (or of a
//!   legacy header line `{id, timestamp}`), else the uuid that ends the file
//!   name. Of two rollouts with one id the first found wins (`sessions/`
//!   before `archived_sessions/`, byte order within each). A zero-byte
//!   rollout is not a session until something is written to it.
//! - **createdAt**: `session_meta.timestamp`, else the envelope's, else the
//!   file's modification time.
//! - **cwd**: listing gives `session_meta.cwd`; a read gives the last
//!   `turn_context.cwd`, else `session_meta.cwd`.
//! - **title**: the latest `session_index.jsonl` entry for the id, else the
//!   latest `thread_name_updated` event, else the first real user message,
//!   else the first assistant text (whitespace collapsed, at most 100
//!   characters).
//! - **capturedThroughSeq**: the 0-based number of the last line read. A
//!   read sees the file as it was when it began, up to its last complete
//!   line: a last line without its `\n` (a writer in the middle of it) is
//!   not read.
//!
//! # Replay
//!
//! Lines are read in order, a line that is not JSON skipped wherever it is:
//!
//! - `response_item`s append to the history (in a legacy flat rollout the
//!   bare items do);
//! - a `compacted` record with `replacement_history` replaces the history
//!   with that list; one without it (older Codex) keeps the real user
//!   messages so far and adds its `message` as the checkpoint;
//! - `event_msg` `thread_rolled_back{num_turns}` drops the newest
//!   `num_turns` user turns (from the turn's user message on); every other
//!   `event_msg` (user and agent message mirrors, `item_completed`, token
//!   counts) is ignored, since they duplicate response items.
//!
//! Of the history, what reaches the conversation:
//!
//! - user messages' `input_text` parts joined with `"\n"`, unless any part
//!   is a contextual fragment ([`rollout::is_contextual`]: AGENTS.md
//!   instructions, `<environment_context>`, `<skill>`,
//!   `<user_shell_command>`, `<turn_aborted>`, `<subagent_notification>`,
//!   …), which drops the whole message;
//! - a user message starting with Codex's summary prefix is a checkpoint;
//!   a `compaction` item (an encrypted summary) is a checkpoint whose text
//!   says that the summary is encrypted ([`rollout::ENCRYPTED_CHECKPOINT`]);
//! - assistant messages' `output_text` parts (commentary and final answers);
//! - never developer or system messages, reasoning, or tool calls and
//!   outputs; images are dropped.
//!
//! # Safety
//!
//! As for every source: nothing is written or locked, no link below the
//! home is followed, a line longer than
//! [`MAX_LINE_BYTES`](crate::sources::foreign::MAX_LINE_BYTES) makes the
//! session unreadable. A title read keeps no text but the title's; a
//! `prepare` of the whole session (`SurfaceRead::Within`) replays the
//! rollout keeping where each text is, then reads again only the lines of
//! the texts retention may keep under the budget (checked by length and
//! checksum; a rollout rewritten under the read is read again whole), and
//! the first search of a session (`SurfaceRead::Items`) reads them again
//! one item at a time.

pub mod rollout;
mod root;

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use crate::conversation::Conversation;
use crate::error::HostError;
use crate::fs::{open_under, par_map, sorted_entries, EntryKind, FileIdentity, LINK_REASON};
use crate::host::Fingerprint;
use crate::host::{
    BlockingSessionQuery, SessionHeader, SharedListing, SurfaceAnswer, SurfaceData, SurfaceItems, SurfaceRead,
};
use crate::retention::Elided;
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{conversation, each_line, mtime_ms, read_error, within_or_whole};
use crate::sources::lenient::LStr;

use crate::sources::foreign::Transcript;

/// What every Codex session id starts with.
pub const PREFIX: &str = "codex:";

pub(crate) use self::root::KIND;

const FORMAT: &str = "Codex";

/// The directories of rollouts under a Codex home, in the order they win.
pub const SESSION_DIRS: [&str; 2] = ["sessions", "archived_sessions"];

/// The title index under a Codex home.
pub const SESSION_INDEX: &str = "session_index.jsonl";

/// A rollout's path below the home, as components.
type Rel = Vec<OsString>;

/// Titles by session id from `session_index.jsonl`, with the identity of
/// the file they were read from.
type IndexMemo = Option<(FileIdentity, Arc<HashMap<String, String>>)>;

/// A read-only session source over a Codex home. Cheap to clone; every
/// method may run concurrently.
#[derive(Clone, Debug)]
pub struct CodexSource {
    home: Arc<PathBuf>,
    /// Where the last listing found each id (checked again on every read).
    found: Arc<Mutex<HashMap<String, Rel>>>,
    /// What the last listing skipped, and why.
    skipped: Arc<Mutex<Vec<(PathBuf, String)>>>,
    /// `session_index.jsonl` as last read, by its identity.
    index: Arc<Mutex<IndexMemo>>,
}

pub use crate::sources::foreign::{ListedSession, Listing};

fn is_rollout(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
}

/// The uuid at the end of a rollout's file name.
fn uuid_of_name(name: &OsStr) -> Option<String> {
    let n = name.to_str()?.strip_suffix(".jsonl")?;
    let tail = n.get(n.len().checked_sub(36)?..)?;
    uuid::Uuid::parse_str(tail).ok().map(|_| tail.to_owned())
}

#[derive(Deserialize)]
struct IndexLine<'a> {
    #[serde(borrow, default)]
    id: LStr<'a>,
    #[serde(borrow, default)]
    thread_name: LStr<'a>,
}

impl CodexSource {
    /// Opens a Codex home (a directory; a link to one is fine). It need not
    /// have `sessions/` yet.
    pub fn open(home: impl AsRef<Path>) -> io::Result<Self> {
        let home = crate::sources::file_source::open_root(home.as_ref(), FORMAT)?;
        Ok(CodexSource { home: Arc::new(home), found: Arc::default(), skipped: Arc::default(), index: Arc::default() })
    }

    /// Rollout files below `dir` (up to `YYYY/MM/DD`), in byte order.
    fn walk(&self, rel: &mut Rel, depth: usize, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>) {
        let dir: PathBuf = std::iter::once(self.home.as_os_str()).chain(rel.iter().map(OsString::as_os_str)).collect();
        let entries = match sorted_entries(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound && depth == 0 => return,
            Err(e) => {
                rejected.push((dir, e.to_string()));
                return;
            }
        };
        for entry in entries {
            let kind = match entry.kind(&dir) {
                Ok(k) => k,
                Err(e) => {
                    rejected.push((dir.join(&entry.name), e.to_string()));
                    continue;
                }
            };
            match kind {
                EntryKind::File if is_rollout(&entry.name) => {
                    let mut r = rel.clone();
                    r.push(entry.name);
                    out.push(r);
                }
                EntryKind::Dir if depth < 3 => {
                    rel.push(entry.name);
                    self.walk(rel, depth + 1, out, rejected);
                    rel.pop();
                }
                EntryKind::Link if is_rollout(&entry.name) || depth < 3 => {
                    rejected.push((dir.join(&entry.name), LINK_REASON.to_owned()));
                }
                _ => {}
            }
        }
    }

    fn path_of(&self, rel: &[OsString]) -> PathBuf {
        std::iter::once(self.home.as_os_str()).chain(rel.iter().map(OsString::as_os_str)).collect()
    }

    fn open_rel(&self, rel: &[OsString]) -> io::Result<(std::fs::File, FileIdentity)> {
        let parts: Vec<&OsStr> = rel.iter().map(OsString::as_os_str).collect();
        open_under(&self.home, &parts)
    }

    /// The rollouts under the home, with per-entry problems.
    pub fn list(&self) -> io::Result<Listing> {
        let mut rejected = Vec::new();
        let mut files = Vec::new();
        for dir in SESSION_DIRS {
            let mut rel = vec![OsString::from(dir)];
            self.walk(&mut rel, 0, &mut files, &mut rejected);
        }
        let heads = par_map(&files, |rel, _: &mut ()| {
            let (file, identity) = self.open_rel(rel)?;
            rollout::read_head(file).map(|h| (h, identity))
        });
        let mut seen = HashSet::new();
        let mut found = HashMap::new();
        let mut sessions = Vec::with_capacity(files.len());
        let mut without_conversation = Vec::new();
        for (rel, head) in files.into_iter().zip(heads) {
            let path = self.path_of(&rel);
            let (head, identity) = match head {
                Ok(h) => h,
                Err(e) => {
                    rejected.push((path, e.to_string()));
                    continue;
                }
            };
            if identity.size == 0 {
                // Nothing written yet: not a session (listed once it is).
                without_conversation.push(path);
                continue;
            }
            let head = head.unwrap_or_default();
            let Some(id) = head.id.clone().or_else(|| rel.last().and_then(|n| uuid_of_name(n))) else {
                rejected.push((path, "no session id (no session_meta line, no uuid in the name)".to_owned()));
                continue;
            };
            if !seen.insert(id.clone()) {
                rejected.push((path, "a rollout with the same id was listed first".to_owned()));
                continue;
            }
            let created = head.created_at.unwrap_or_else(|| mtime_ms(&identity));
            sessions.push(ListedSession::new(PREFIX, &id, created, head.cwd, path));
            found.insert(id, rel);
        }
        if let Ok(mut memo) = self.found.lock() {
            *memo = found;
        }
        let mut listing = Listing { sessions, rejected, without_conversation };
        listing.sort();
        if let Ok(mut was) = self.skipped.lock() {
            *was = listing.skipped();
        }
        Ok(listing)
    }

    /// Whether the rollout at `rel` is the one of `id`.
    fn holds(&self, rel: &[OsString], id: &str) -> bool {
        let head = self.open_rel(rel).and_then(|(f, _)| rollout::read_head(f)).ok().flatten();
        match head.and_then(|h| h.id) {
            Some(h) => h == id,
            None => rel.last().and_then(|n| uuid_of_name(n)).as_deref() == Some(id),
        }
    }

    /// The rollout of `id` (without the prefix): where the last listing
    /// found it, else by walking the home for a name ending in the id, else
    /// by reading every rollout's header.
    fn locate(&self, id: &str) -> Result<Rel, HostError> {
        let remembered = self.found.lock().ok().and_then(|m| m.get(id).cloned());
        if let Some(rel) = remembered.filter(|r| self.holds(r, id)) {
            return Ok(rel);
        }
        let mut files = Vec::new();
        let mut rejected = Vec::new();
        for dir in SESSION_DIRS {
            self.walk(&mut vec![OsString::from(dir)], 0, &mut files, &mut rejected);
        }
        let suffix = format!("{id}.jsonl");
        let by_name = files.iter().filter(|r| r.last().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(&suffix)));
        if let Some(rel) = by_name.clone().find(|r| self.holds(r, id)) {
            return Ok(rel.clone());
        }
        if let Some(rel) = files.iter().find(|r| self.holds(r, id)) {
            return Ok(rel.clone());
        }
        let mut m = format!("no {FORMAT} session {} in {}", crate::json::js_string(id), self.home.display());
        if let Some((path, why)) = rejected.iter().find(|(p, _)| p.to_string_lossy().ends_with(&suffix)) {
            m.push_str(&format!(" ({}: {why})", path.display()));
        }
        Err(HostError::new(m))
    }

    /// Titles from `session_index.jsonl` (latest entry per id), re-read
    /// only when the file changed.
    pub fn index_titles(&self) -> Arc<HashMap<String, String>> {
        let Ok((file, identity)) = open_under(&self.home, &[OsStr::new(SESSION_INDEX)]) else {
            return Arc::default();
        };
        if let Some((known, titles)) = self.index.lock().ok().and_then(|m| m.clone()) {
            if known == identity {
                return titles;
            }
        }
        let mut titles = HashMap::new();
        let read = each_line(file, u64::MAX, |_, bytes| {
            let Ok(line) = serde_json::from_slice::<IndexLine<'_>>(bytes) else { return false };
            if let (Some(id), Some(name)) = (line.id.owned(), line.thread_name.owned()) {
                if !name.trim().is_empty() {
                    titles.insert(id, name);
                }
            }
            true
        });
        let titles = Arc::new(if read.is_ok() { titles } else { HashMap::new() });
        if let Ok(mut memo) = self.index.lock() {
            *memo = Some((identity, titles.clone()));
        }
        titles
    }

    /// Replays the rollout of `id` (with or without the prefix).
    pub fn read(&self, id: &str) -> Result<(PathBuf, Transcript), HostError> {
        self.read_as(id, true)
    }

    /// [`read`](Self::read); for the title alone (`texts` off) without
    /// replaying the history or keeping its texts.
    fn read_as(&self, id: &str, texts: bool) -> Result<(PathBuf, Transcript), HostError> {
        let (file, path) = self.open_rollout(id)?;
        let read = rollout::read(file, texts).map_err(|e| read_error(FORMAT, id, &path, e))?;
        Ok((path, read))
    }

    /// The title of `id` by the rules of the module docs.
    pub fn title(&self, id: &str) -> Result<Option<String>, HostError> {
        let bare = id.strip_prefix(PREFIX).unwrap_or(id);
        let (_, read) = self.read_as(id, false)?;
        Ok(self.index_titles().get(bare).cloned().or(read.title))
    }

    /// The current conversation of `id`, as the resolver renders it.
    pub fn conversation(&self, id: &str) -> Result<Conversation, HostError> {
        let (_, read) = self.read(id)?;
        Ok(conversation(PREFIX, id, read.cwd, read.stats, read.items))
    }

    /// The rollout of `id` (with or without the prefix), open, and its path.
    fn open_rollout(&self, id: &str) -> Result<(std::fs::File, PathBuf), HostError> {
        let bare = id.strip_prefix(PREFIX).unwrap_or(id);
        let rel = self.locate(bare)?;
        let path = self.path_of(&rel);
        let (file, _) = self.open_rel(&rel).map_err(|e| read_error(FORMAT, id, &path, e))?;
        Ok((file, path))
    }

    /// The conversation of `id` for a prompt of `budget` bytes, holding
    /// what retention may keep ([`rollout::read_within`]), with the items
    /// left out; `None` when the rollout changed under the read.
    fn conversation_within(&self, id: &str, budget: u64) -> Result<Option<(Conversation, Elided)>, HostError> {
        let (file, path) = self.open_rollout(id)?;
        let read = rollout::read_within(file, budget).map_err(|e| read_error(FORMAT, id, &path, e))?;
        Ok(read.map(|(read, elided)| (conversation(PREFIX, id, read.cwd, read.stats, read.items), elided)))
    }
}

impl BlockingSessionQuery for CodexSource {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        Listing::headers(self.list(), FORMAT, &self.home)
    }

    /// The listing with every session's fingerprint (so a view over
    /// several sources can share its merged listing): a Codex listing reads
    /// every rollout's head, next to which one `lstat` per rollout is small.
    fn shared_listing(&self) -> Result<Option<SharedListing>, HostError> {
        crate::host::listing_with_fingerprints(self)
    }

    fn read_title(&self, session_id: &str) -> Result<Option<String>, HostError> {
        self.title(session_id)
    }

    /// What the last listing skipped (a rollout with no id anywhere, a
    /// second one for an id, an unreadable one; a zero-byte one), with why.
    fn skipped(&self) -> Vec<(PathBuf, String)> {
        self.skipped.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn read_surface(&self, session_id: &str) -> Result<SurfaceData, HostError> {
        self.conversation(session_id).map(SurfaceData::from)
    }

    /// Under a budget, the conversation without the items retention
    /// certainly drops, read holding only the texts it may keep (a rollout
    /// rewritten under the read is read again whole). For the index, its
    /// items streamed: the rollout replayed once for where each text is,
    /// each text read again as its item is given ([`rollout::read_items`]).
    fn read_surface_as(&self, session_id: &str, read: SurfaceRead) -> Result<SurfaceAnswer, HostError> {
        match read {
            SurfaceRead::Within(budget) => {
                within_or_whole(self.conversation_within(session_id, budget)?, || self.read_surface(session_id))
            }
            SurfaceRead::Items => {
                let (file, path) = self.open_rollout(session_id)?;
                let items = rollout::read_items(file).map_err(|e| read_error(FORMAT, session_id, &path, e))?;
                Ok(SurfaceAnswer::items(SurfaceItems::Streamed(Box::new(items))))
            }
            _ => self.read_surface(session_id).map(SurfaceAnswer::whole),
        }
    }

    /// A session's title may come from `session_index.jsonl` and the rest
    /// from its rollout, so its fingerprint is both files' identities: the
    /// rollout where the last listing found it (one `lstat`; a session not
    /// listed is looked up) and the index's (any change of the index changes
    /// every session's fingerprint, so each is read again: exact).
    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        let index = crate::fs::Stamp::lstat(&self.home.join(SESSION_INDEX));
        let found = self.found.lock().map(|m| m.clone()).unwrap_or_default();
        let fingerprint = |id: &String| {
            let bare = id.strip_prefix(PREFIX).unwrap_or(id);
            let rollout = match found.get(bare) {
                Some(rel) => crate::fs::Stamp::lstat(&self.path_of(rel)).map(|s| s.id),
                None => self.identity(id).ok(),
            }?;
            let mut bytes = Fingerprint::from(rollout).as_bytes().to_vec();
            match index {
                Some(index) => bytes.extend_from_slice(Fingerprint::from(index.id).as_bytes()),
                None => bytes.push(0),
            }
            Some(Fingerprint::from_bytes(bytes))
        };
        Ok(Some(session_ids.iter().map(fingerprint).collect()))
    }
}

impl FileSource for CodexSource {
    const FORMAT: &'static str = FORMAT;

    fn root(&self) -> &Path {
        &self.home
    }

    fn identity(&self, session_id: &str) -> Result<FileIdentity, HostError> {
        let bare = session_id.strip_prefix(PREFIX).unwrap_or(session_id);
        let rel = self.locate(bare)?;
        self.open_rel(&rel).map(|(_, i)| i).map_err(|e| read_error(FORMAT, session_id, &self.path_of(&rel), e))
    }
}
