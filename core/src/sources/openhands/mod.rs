//! OpenHands conversations: a read-only session source over the
//! conversations directory of the OpenHands CLI and SDK
//! (`$OPENHANDS_CONVERSATIONS_DIR`, else
//! `$OPENHANDS_PERSISTENCE_DIR/conversations`, else
//! `~/.openhands/conversations`), reading `<id>/base_state.json` and
//! `<id>/events/event-NNNNN-<event id>.json`.
//!
//! ```no_run
//! use dsh_session_reference::sources::openhands::OpenHandsSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = OpenHandsSource::open("/home/me/.openhands/conversations")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The files follow the OpenHands software-agent SDK
//! (`openhands-sdk/openhands/sdk/conversation/state.py`, `event_store.py`,
//! `context/view/view.py`, `event/condenser.py`).
//!
//! # Sessions
//!
//! - **id**: `openhands:<id>`, the conversation's directory name (the
//!   conversation id as hex, as the CLI's `--resume` takes it). A directory
//!   without `base_state.json` is not a conversation; one whose events hold
//!   no first event yet holds no conversation yet; a `base_state.json` that
//!   is not a JSON object is reported.
//! - **createdAt**: the creation time of `base_state.json` (written when the
//!   conversation starts and rewritten in place since), else its
//!   modification time: the events' timestamps are local times without an
//!   offset.
//! - **cwd**: `workspace.working_dir` of `base_state.json`.
//! - **title**: the first user message of the current branch (whitespace
//!   collapsed, at most 100 characters); OpenHands keeps no title of its own
//!   on disk.
//! - **capturedThroughSeq**: the index of the last event file read.
//!
//! # The current conversation
//!
//! The events are the files `event-<index>-<id>.json` from index 0 up to
//! the first missing index, as OpenHands reads them. They form a tree by
//! `parent_id` (an event without one is the child of the event before it;
//! `__root__` starts a new root). The current branch is the path from
//! `leaf_event_id` of `base_state.json` to the root; without one, from the
//! last event that is not a `ConversationStateUpdateEvent` or a
//! `ConversationErrorEvent` (unless `head_is_empty`), so a branch left by a
//! rewind or a fork is not shown. Along it, as OpenHands builds the view it
//! gives the model: every event it sends is kept in order, and a
//! `Condensation` removes its `forgotten_event_ids` and puts its `summary`
//! (a checkpoint) at `summary_offset`. Of what the view holds:
//!
//! - `MessageEvent` from the `user` with role `user`: its text blocks, not
//!   the skills' `extended_content` joined to it;
//! - `MessageEvent` from the `agent` with role `assistant`: its text blocks,
//!   never `reasoning_content` or thinking blocks;
//! - a condensation's summary: a checkpoint;
//! - never `SystemPromptEvent`, `ActionEvent` (a tool call, with its
//!   `thought`), `ObservationEvent`, `UserRejectObservation`,
//!   `AgentErrorEvent`, or a message from the `environment` or a `hook`.
//!
//! An event file that is not JSON (one being written, or damaged) is
//! skipped and counted.
//!
//! # Safety
//!
//! As for every source: nothing is written or locked, no link below the
//! root is followed, and a file larger than [`MAX_FILE_BYTES`] is not read
//! (an event skipped, a `base_state.json` reported).

mod events;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::fs::{read_opened, sorted_entries, EntryKind, FileIdentity, LINK_REASON};
use crate::json::read::Reader;
use crate::sources::file_source::FileSource;
use crate::sources::files::{FileSessions, Head, Rel, SessionFiles, Under};
use crate::sources::foreign::Transcript;
use crate::sources::kind::{seen, Kind, Root};

/// What every OpenHands session id starts with.
pub const PREFIX: &str = "openhands:";

/// The largest `base_state.json` or event file read, in bytes.
pub const MAX_FILE_BYTES: usize = 64 << 20;

/// A conversation's state file.
const BASE_STATE: &str = "base_state.json";

/// A conversation's directory of events.
const EVENTS_DIR: &str = "events";

/// OpenHands as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "openhands",
    format: "OpenHands",
    about: "OpenHands conversations (its conversations directory)",
    prefix: PREFIX,
    location:
        "$OPENHANDS_CONVERSATIONS_DIR, else $OPENHANDS_PERSISTENCE_DIR/conversations, else ~/.openhands/conversations",
    default: Some(|env| {
        env.var("OPENHANDS_CONVERSATIONS_DIR").unwrap_or_else(|| {
            env.var("OPENHANDS_PERSISTENCE_DIR").unwrap_or_else(|| env.home().join(".openhands")).join("conversations")
        })
    }),
    also: &[],
    env: &["OPENHANDS_CONVERSATIONS_DIR", "OPENHANDS_PERSISTENCE_DIR", "HOME", "USERPROFILE"],
    root: Root::InHome("conversations"),
    layout: "conversation directories holding base_state.json and events/ (as ~/.openhands/conversations)",
    open: |root| Ok(OpenHandsSource::open(root)?.into_query()),
    empty: empty_note,
};

/// Why a conversations root lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    let states = (entries.iter().filter(|d| d.dir)).filter(|d| root.join(&d.name).join(BASE_STATE).is_file()).count();
    match states {
        0 => kind.expected(root, &entries),
        n => format!("{}: its {n} conversations hold no event yet or are unreadable", kind.no_session_in(root)),
    }
}

/// The OpenHands layout of a conversations root.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenHands;

/// A read-only session source over OpenHands' conversations directory.
pub type OpenHandsSource = FileSessions<OpenHands>;

impl FileSessions<OpenHands> {
    /// Opens OpenHands' conversations directory (a directory; a link to one
    /// is fine).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        FileSessions::with_format(root, OpenHands)
    }
}

/// What `base_state.json` says that is read.
#[derive(Debug, Default, PartialEq, Eq)]
struct BaseState {
    cwd: Option<String>,
    leaf: Option<String>,
    head_is_empty: bool,
}

/// The fields of `base_state.json` that are read, from its start: the file
/// is rewritten in place after every event, so a read may see a prefix of
/// it, which gives what it holds (the fields read come before the large
/// ones). `Err` when it does not start as a JSON object.
fn base_state(bytes: &[u8]) -> io::Result<BaseState> {
    let mut out = BaseState::default();
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(out);
    }
    let mut r = Reader::new(bytes);
    match r.peek() {
        Some(b'{') => {}
        _ => return Err(io::Error::new(io::ErrorKind::InvalidData, "base_state.json is not a JSON object")),
    }
    // A read that stops early (a prefix, or damage after the fields read)
    // keeps what it found.
    let _ = (|| -> Result<(), String> {
        r.enter_object()?;
        let mut first = true;
        let mut workspace = false;
        while let Some(key) = r.next_key(&mut first)? {
            // The SDK writes the workspace, then the leaf (when there is
            // one) and head_is_empty, then the statistics, which grow with
            // every call and are not needed.
            if workspace && key.is("stats") {
                return Ok(());
            }
            if key.is("workspace") {
                workspace = true;
                if r.enter_object()? {
                    let mut first = true;
                    while let Some(key) = r.next_key(&mut first)? {
                        match r.maybe_string()? {
                            Some(s) if key.is("working_dir") => out.cwd = s.decode().ok().map(|c| c.into_owned()),
                            _ => {}
                        }
                    }
                }
            } else if key.is("leaf_event_id") {
                out.leaf = r.maybe_string()?.and_then(|s| s.decode().ok().map(|c| c.into_owned()));
            } else if key.is("head_is_empty") {
                out.head_is_empty = r.bool_or_null("")?.unwrap_or(None).unwrap_or(false);
            } else {
                r.skip()?;
            }
        }
        Ok(())
    })();
    out.cwd = out.cwd.filter(|c| !c.is_empty());
    out.leaf = out.leaf.filter(|l| !l.is_empty());
    Ok(out)
}

/// `base_state.json` of a file open at its start, `size` bytes as opened.
fn read_base_state(file: File, size: u64) -> io::Result<BaseState> {
    base_state(&read_opened(file, size, MAX_FILE_BYTES)?)
}

/// The conversation directory's name as an id.
fn id_of(dir: &OsStr) -> io::Result<&str> {
    dir.to_str().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "a directory name that is not UTF-8"))
}

impl SessionFiles for OpenHands {
    const FORMAT: &'static str = "OpenHands";
    const PREFIX: &'static str = PREFIX;

    /// Each directory of the root, as the `base_state.json` it would hold
    /// (a directory without one is not listed), without looking into it.
    fn walk(&self, root: &Path, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>) {
        let entries = match sorted_entries(root) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(e) => {
                rejected.push((root.to_path_buf(), e.to_string()));
                return;
            }
        };
        for entry in entries {
            match entry.kind(root) {
                Ok(EntryKind::Dir) => out.push(vec![entry.name, OsString::from(BASE_STATE)]),
                Ok(EntryKind::Link) => rejected.push((root.join(&entry.name), LINK_REASON.to_owned())),
                Ok(_) => {}
                Err(e) => rejected.push((root.join(&entry.name), e.to_string())),
            }
        }
    }

    fn heads(&self, root: &Under<'_>, rel: &[OsString], file: File, identity: &FileIdentity) -> io::Result<Vec<Head>> {
        let [dir, _] = rel else { return Ok(Vec::new()) };
        let id = id_of(dir)?;
        let state = read_base_state(file, identity.size)?;
        // A leaf is set once an event is written; without one, the events
        // directory says whether there is a first event.
        if state.leaf.is_none() && !events::has_first(root.path(), dir) {
            return Ok(Vec::new());
        }
        Ok(vec![Head { bare: id.to_owned(), created_at: None, cwd: state.cwd }])
    }

    fn read(&self, root: &Path, rel: &[OsString], file: File, _bare: &str) -> io::Result<Transcript> {
        let [dir, _] = rel else { return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a conversation")) };
        let size = file.metadata()?.len();
        let state = read_base_state(file, size)?;
        let read = events::read(root, dir, state.leaf.as_deref(), state.head_is_empty)?;
        Ok(Transcript { items: read.items, title: read.title, cwd: state.cwd, created_at: None, stats: read.stats })
    }

    fn guess(&self, _root: &Path, bare: &str) -> Vec<Rel> {
        vec![vec![OsString::from(bare), OsString::from(BASE_STATE)]]
    }

    /// The events directory, which gains a file with every event.
    fn companions(&self, rel: &[OsString]) -> Vec<Rel> {
        match rel {
            [dir, _] => vec![vec![dir.clone(), OsString::from(EVENTS_DIR)]],
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_state_reads_the_fields_from_a_prefix() {
        let whole = r#"{"id": "x", "agent": {"llm": {"model": "m"}, "tools": [{"name": "t"}]},
            "workspace": {"kind": "LocalWorkspace", "working_dir": "/w"}, "persistence_dir": "/p",
            "leaf_event_id": "e2", "head_is_empty": false, "stats": {"usage_to_metrics": {}}}"#;
        let want = BaseState { cwd: Some("/w".into()), leaf: Some("e2".into()), head_is_empty: false };
        assert_eq!(base_state(whole.as_bytes()).unwrap(), want);
        // Cut inside the statistics, or before the leaf.
        let cut = &whole[..whole.find("usage_to").unwrap()];
        assert_eq!(base_state(cut.as_bytes()).unwrap(), want);
        let cut = &whole[..whole.find("\"leaf_event_id\"").unwrap()];
        assert_eq!(
            base_state(cut.as_bytes()).unwrap(),
            BaseState { leaf: None, cwd: want.cwd.clone(), ..BaseState::default() }
        );
        assert_eq!(base_state(b"").unwrap(), BaseState::default());
        assert!(base_state(b"[1]").is_err());
        let empty_head = r#"{"workspace": {"working_dir": ""}, "head_is_empty": true}"#;
        assert_eq!(base_state(empty_head.as_bytes()).unwrap(), BaseState { head_is_empty: true, ..Default::default() });
        // Another order of the keys reads the same.
        let sorted =
            r#"{"head_is_empty": false, "leaf_event_id": "e2", "stats": {}, "workspace": {"working_dir": "/w"}}"#;
        assert_eq!(base_state(sorted.as_bytes()).unwrap(), want);
    }
}
