//! Warp agent conversations: a read-only session source over Warp's SQLite
//! database, `warp.sqlite` in its state directory (read as
//! [`sqlite`](super::sqlite::SqliteSource) reads every database).
//!
//! ```no_run
//! use dsh_session_reference::sources::warp::WarpSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = WarpSource::open("/home/me/.local/state/warp-terminal/warp.sqlite")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The schema followed is warpdotdev/warp's `crates/persistence`
//! migrations (`agent_conversations`: `conversation_id`,
//! `conversation_data` JSON, `last_modified_at`, and the later `summary`
//! JSON; `agent_tasks`: one row per task, `task` a protobuf
//! `warp.multi_agent.v1.Task`), and what `app/src/persistence/agent.rs`
//! writes into them; the protobuf is warpdotdev/warp-proto-apis's
//! `task.proto` (the fields read are listed in its `proto` module).
//!
//! # Sessions
//!
//! - **id**: `warp:<agent_conversations.conversation_id>`. Listed: every
//!   conversation with at least one task, except a child agent's (a
//!   `parent_conversation_id` in its `conversation_data`) and one Warp
//!   hides from its history (its summary's `is_unlisted_auto_code_diff`:
//!   only passive code-diff suggestions, no user query).
//! - **createdAt**: `last_modified_at` (Warp keeps no creation time outside
//!   the protobuf).
//! - **cwd**: the summary's `initial_working_directory`.
//! - **title**: the root task's `description` (Warp's own title), else the
//!   first user query (whitespace collapsed, at most 100 characters).
//! - **capturedThroughSeq**: the number of the root task's messages, less
//!   one.
//!
//! # Replay
//!
//! The root task's messages in order (the task without a parent; of
//! several, the one with messages, as Warp restores them): a `user_query`'s
//! `query`, as typed (its `context`, attachments and the like are Warp's);
//! an `agent_output`'s `text`; a `conversation_summary` replaces what came
//! before it and is a checkpoint. Never tool calls or their results,
//! reasoning, system queries (what Warp sends on the user's behalf),
//! server events, todos or the other message types; nor the subtasks
//! (subagents' own conversations). Warp saves the whole task set each
//! time, deleting what a rewind dropped, so the tasks are the current
//! conversation. A message that does not decode is skipped and counted; a
//! task that does not decode is named in the error when no root task is
//! left, else skipped and counted.
//!
//! A task larger than [`MAX_LINE_BYTES`] is not read (it is counted as
//! damaged), so memory stays bounded.
//!
//! # Fingerprints
//!
//! Per conversation: `last_modified_at`, the length of `conversation_data`
//! and its tasks' count, largest row id, total length and latest
//! `last_modified_at` (Warp rewrites every task row each time it saves).

mod proto;

use std::path::Path;

use rusqlite::Connection;

use crate::conversation::ConversationItem;
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{title_from_text, Listing, MAX_LINE_BYTES};
use crate::sources::kind::{Kind, Root};
use crate::sources::sqlite::{self, bytes, text, Read, Schema, SqliteSource};

use proto::{Said, Task};

/// What every Warp conversation id starts with.
pub const PREFIX: &str = "warp:";

/// The App Group container Warp's macOS builds keep their state in.
const MACOS_GROUP: &str = "2BBY89MBSN.dev.warp";

/// Warp as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "warp",
    format: Warp::FORMAT,
    about: "Warp agent conversations (its SQLite database, warp.sqlite)",
    prefix: PREFIX,
    location: "$XDG_STATE_HOME/warp-terminal/warp.sqlite, else ~/.local/state/warp-terminal/warp.sqlite (Linux); \
               ~/Library/Group Containers/2BBY89MBSN.dev.warp/Library/Application Support/dev.warp.Warp-Stable/warp.sqlite \
               (macOS); %LOCALAPPDATA%\\warp\\Warp\\data\\warp.sqlite (Windows)",
    default: Some(|env| {
        if cfg!(target_os = "macos") {
            env.home()
                .join("Library")
                .join("Group Containers")
                .join(MACOS_GROUP)
                .join("Library")
                .join("Application Support")
                .join("dev.warp.Warp-Stable")
                .join(Warp::FILE)
        } else if cfg!(windows) {
            let local = env.var("LOCALAPPDATA").unwrap_or_else(|| env.home().join("AppData").join("Local"));
            local.join("warp").join("Warp").join("data").join(Warp::FILE)
        } else {
            let state = env.var("XDG_STATE_HOME").unwrap_or_else(|| env.home().join(".local").join("state"));
            state.join("warp-terminal").join(Warp::FILE)
        }
    }),
    also: &[],
    env: &["XDG_STATE_HOME", "LOCALAPPDATA", "HOME", "USERPROFILE"],
    root: Root::Database("warp.sqlite"),
    layout: "a Warp database (as ~/.local/state/warp-terminal/warp.sqlite)",
    open: |root| Ok(WarpSource::open(root)?.into_query()),
    empty: |kind, root| {
        format!(
            "{}: its agent_conversations table holds no conversation with a task (child agents' aside)",
            kind.no_session_in(root)
        )
    },
};

/// Warp's schema.
#[derive(Debug)]
pub struct Warp;

/// A read-only session source over Warp's database.
pub type WarpSource = SqliteSource<Warp>;

impl Schema for Warp {
    const FORMAT: &'static str = "Warp";
    const PREFIX: &'static str = PREFIX;
    const FILE: &'static str = "warp.sqlite";
    const WHAT: &'static str = "a Warp database with agent conversations";
    const FINGERPRINTS: &'static str =
        "SELECT c.conversation_id, c.last_modified_at, length(c.conversation_data), t.n \
         FROM agent_conversations c LEFT JOIN (SELECT conversation_id, count(*) || ':' || max(id) || ':' || \
         total(length(task)) || ':' || max(last_modified_at) AS n FROM agent_tasks GROUP BY conversation_id) t \
         ON t.conversation_id = c.conversation_id";
    const FINGERPRINT_COLUMNS: usize = 3;

    fn list(conn: &Connection, db: &Path, listing: &mut Listing) -> rusqlite::Result<()> {
        let summary = sqlite::qualified(conn, "agent_conversations", "c", "summary", "NULL")?;
        sqlite::list_rows::<Self>(
            conn,
            db,
            listing,
            &format!(
                "SELECT c.conversation_id, c.last_modified_at, \
                 CASE WHEN json_valid({summary}) THEN json_extract({summary}, '$.initial_working_directory') END \
                 FROM agent_conversations c \
                 WHERE c.conversation_id IN (SELECT conversation_id FROM agent_tasks) \
                 AND NOT (coalesce(json_valid(c.conversation_data), 0) \
                      AND json_extract(c.conversation_data, '$.parent_conversation_id') IS NOT NULL) \
                 AND NOT (coalesce(json_valid({summary}), 0) \
                      AND coalesce(json_extract({summary}, '$.is_unlisted_auto_code_diff'), 0) = 1)"
            ),
        )
    }

    fn read(conn: &Connection, _db: &Path, id: &str) -> rusqlite::Result<Result<Read, String>> {
        let summary = sqlite::column_or(conn, "agent_conversations", "summary", "NULL")?;
        let mut stmt = conn.prepare(&format!(
            "SELECT CASE WHEN json_valid({summary}) THEN json_extract({summary}, '$.initial_working_directory') END \
             FROM agent_conversations WHERE conversation_id = ?1"
        ))?;
        let mut rows = stmt.query([id])?;
        let Some(row) = rows.next()? else { return Ok(Err("no such conversation".to_owned())) };
        let cwd = text(row.get_ref(0)?).filter(|c| !c.is_empty());
        drop(rows);
        let limit = i64::try_from(MAX_LINE_BYTES).unwrap_or(i64::MAX);
        let mut stmt = conn.prepare(
            "SELECT task_id, length(task), CASE WHEN length(task) <= ?2 THEN task END \
             FROM agent_tasks WHERE conversation_id = ?1 ORDER BY id",
        )?;
        let mut rows = stmt.query(rusqlite::params![id, limit])?;
        let mut tasks = Vec::new();
        let mut damaged = Vec::new();
        while let Some(row) = rows.next()? {
            let task_id = text(row.get_ref(0)?).unwrap_or_default();
            let length = row.get_ref(1)?.as_i64_or_null().ok().flatten().unwrap_or(0);
            let decoded = if length > limit {
                Err(format!("it is {length} bytes, more than {MAX_LINE_BYTES}"))
            } else {
                Task::decode(bytes(row.get_ref(2)?))
            };
            match decoded {
                Ok(task) => tasks.push(task),
                Err(why) => damaged.push(format!("task {task_id:?}: {why}")),
            }
        }
        Ok(replay(tasks, damaged).map(|mut read| {
            read.cwd = cwd;
            read
        }))
    }
}

/// The conversation of a conversation's tasks (in row order), `damaged`
/// naming each task that did not decode.
fn replay(tasks: Vec<Task>, damaged: Vec<String>) -> Result<Read, String> {
    let mut roots = tasks.into_iter().filter(Task::is_root).collect::<Vec<_>>();
    // Of several roots (a stub beside the real one), the one with messages.
    let at = roots.iter().position(|t| !t.messages.is_empty()).unwrap_or(0);
    if roots.is_empty() {
        return Err(if damaged.is_empty() {
            "it has no root task (every task has a parent)".to_owned()
        } else {
            format!("no root task decodes: {}", damaged.join("; "))
        });
    }
    let root = roots.swap_remove(at);
    let mut out = Read::default();
    out.stats.skipped += damaged.len() as u64;
    let mut first_user = None;
    for said in root.messages {
        out.stats.lines += 1;
        let Ok(said) = said else {
            out.stats.skipped += 1;
            continue;
        };
        match said {
            Said::User(query) => {
                if first_user.is_none() {
                    first_user = title_from_text(&query);
                }
                if !query.trim().is_empty() {
                    out.items.push(ConversationItem::new(Role::User, query));
                }
            }
            Said::Assistant(text) if !text.trim().is_empty() => {
                out.items.push(ConversationItem::new(Role::Assistant, text));
            }
            Said::Summary(summary) if !summary.trim().is_empty() => {
                out.items.clear();
                out.items.push(ConversationItem::checkpoint(summary));
            }
            _ => {}
        }
    }
    out.title = title_from_text(&root.description).or(first_user);
    Ok(out)
}
