//! Zed agent threads: a read-only session source over Zed's SQLite
//! database of agent threads, `threads/threads.db` in Zed's data directory
//! (read as [`sqlite`](super::sqlite::SqliteSource) reads every database).
//!
//! ```no_run
//! use dsh_session_reference::sources::zed::ZedSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = ZedSource::open("/home/me/.local/share/zed/threads/threads.db")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The schema followed is zed-industries/zed's `crates/agent/src/db.rs`:
//! one row per thread in `threads` (`id`, `summary` (the title),
//! `updated_at`, `data_type`, `data`, and the later `parent_id`,
//! `folder_paths`, `created_at`), `data` one JSON thread document, plain
//! (`data_type` `json`) or zstd-compressed (`zstd`): version `0.3.0`
//! (`DbThread`: `messages` of `{"User": …}`, `{"Agent": …}` and `"Resume"`)
//! or the older agent's (`SerializedThread`: `messages` with `role` and
//! `segments`), as `DbThread::from_json` reads both.
//!
//! # Sessions
//!
//! - **id**: `zed:<threads.id>`. Listed: every thread but a subagent's (a
//!   `parent_id`); a row whose `data_type` Zed does not write, or whose
//!   `data` is empty, is not listed and is named in the listing's note.
//! - **createdAt**: `created_at`, else `updated_at` (RFC 3339).
//! - **cwd**: the first of `folder_paths` (the project's folders, one a
//!   line).
//! - **title**: `summary` unless it is Zed's placeholder (`New Thread`),
//!   else the first user text (whitespace collapsed, at most 100
//!   characters).
//! - **capturedThroughSeq**: the number of the document's messages, less
//!   one.
//!
//! # Replay
//!
//! The document's `messages` in order: a user message's `Text` blocks
//! joined as the pieces of one prompt (a mention's inlined file content, images and the
//! older agent's loaded `context` are context Zed added, not what the user
//! typed); an agent message's `Text` blocks (never `Thinking`,
//! `RedactedThinking`, `ToolUse` or its `tool_results`); `Resume` and the
//! older agent's `system` messages are left out. A message of another
//! shape is skipped and counted. Zed keeps no compaction in a thread, and a
//! thread restored to a checkpoint is saved without what followed it, so
//! the document is the current conversation.
//!
//! A compressed document is decompressed to at most
//! [`MAX_LINE_BYTES`]: a larger
//! one makes its thread unreadable (a clear error), so memory stays
//! bounded.
//!
//! # Fingerprints
//!
//! Per thread: `updated_at`, `summary`, `data_type` and the length of
//! `data` (Zed rewrites the whole row each time it saves).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::Deserialize;
use serde_json::Value;

use crate::conversation::ConversationItem;
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{title_from_text, Listing, MAX_LINE_BYTES};
use crate::sources::kind::{Kind, Root};
use crate::sources::sqlite::{self, bytes, text, Read, Schema, SqliteSource};

/// What every Zed thread id starts with.
pub const PREFIX: &str = "zed:";

/// Zed as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "zed",
    format: Zed::FORMAT,
    about: "Zed agent threads (its SQLite database, threads/threads.db)",
    prefix: PREFIX,
    location: "Zed's data directory's threads/threads.db: $FLATPAK_XDG_DATA_HOME/zed or $XDG_DATA_HOME/zed \
               else ~/.local/share/zed (Linux), ~/Library/Application Support/Zed (macOS), %LOCALAPPDATA%\\Zed (Windows)",
    default: Some(|env| {
        let data = if cfg!(target_os = "macos") {
            env.home().join("Library").join("Application Support").join("Zed")
        } else if cfg!(windows) {
            env.var("LOCALAPPDATA").unwrap_or_else(|| env.home().join("AppData").join("Local")).join("Zed")
        } else {
            env.var("FLATPAK_XDG_DATA_HOME").unwrap_or_else(|| env.data_home()).join("zed")
        };
        data.join("threads").join("threads.db")
    }),
    also: &[],
    env: &["FLATPAK_XDG_DATA_HOME", "XDG_DATA_HOME", "LOCALAPPDATA", "HOME", "USERPROFILE"],
    root: Root::Database("threads.db"),
    layout: "a Zed threads database (as ~/.local/share/zed/threads/threads.db)",
    open: |root| Ok(ZedSource::open(root)?.into_query()),
    empty: |kind, root| format!("{}: its threads table holds no thread but subagents'", kind.no_session_in(root)),
};

/// Zed's schema.
#[derive(Debug)]
pub struct Zed;

/// A read-only session source over Zed's threads database.
pub type ZedSource = SqliteSource<Zed>;

/// The title Zed gives a thread before it has one.
const PLACEHOLDER_TITLE: &str = "New Thread";

impl Schema for Zed {
    const FORMAT: &'static str = "Zed";
    const PREFIX: &'static str = PREFIX;
    const FILE: &'static str = "threads.db";
    const WHAT: &'static str = "a Zed threads database";
    const FINGERPRINTS: &'static str = "SELECT id, updated_at, summary, data_type, length(data) FROM threads";
    const FINGERPRINT_COLUMNS: usize = 4;

    /// A directory holding `threads.db`, or Zed's data directory holding
    /// `threads/threads.db`.
    fn in_dir(dir: &Path) -> PathBuf {
        sqlite::here_or_in(dir, "threads", Self::FILE)
    }

    fn list(conn: &Connection, db: &Path, listing: &mut Listing) -> rusqlite::Result<()> {
        let column = |name: &str, or: &str| sqlite::column_or(conn, "threads", name, or);
        let (parent, folders, created) =
            (column("parent_id", "NULL")?, column("folder_paths", "NULL")?, column("created_at", "NULL")?);
        // Rows Zed could not read either are named, not listed.
        let mut stmt = conn.prepare(&format!(
            "SELECT id, data_type, length(data) FROM threads WHERE {parent} IS NULL \
             AND (data_type IS NOT 'json' AND data_type IS NOT 'zstd' OR coalesce(length(data), 0) = 0)"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let id = text(row.get_ref(0)?).unwrap_or_default();
            let why = match text(row.get_ref(1)?) {
                Some(t) if t == "json" || t == "zstd" => "its data is empty".to_owned(),
                Some(t) => format!("its data_type {t:?} is not one Zed writes (json, zstd)"),
                None => "it has no data_type".to_owned(),
            };
            listing.rejected.push((db.to_path_buf(), format!("thread {id:?}: {why}")));
        }
        drop(rows);
        sqlite::list_rows::<Self>(
            conn,
            db,
            listing,
            &format!(
                "SELECT id, coalesce({created}, updated_at), {folders} FROM threads WHERE {parent} IS NULL \
                 AND data_type IN ('json', 'zstd') AND length(data) > 0"
            ),
        )?;
        for s in &mut listing.sessions {
            s.header.cwd = s.header.cwd.take().and_then(|f| first_folder(&f));
        }
        Ok(())
    }

    fn read(conn: &Connection, _db: &Path, id: &str) -> rusqlite::Result<Result<Read, String>> {
        let folders = sqlite::column_or(conn, "threads", "folder_paths", "NULL")?;
        let mut stmt =
            conn.prepare(&format!("SELECT summary, data_type, data, {folders} FROM threads WHERE id = ?1"))?;
        let mut rows = stmt.query([id])?;
        let Some(row) = rows.next()? else { return Ok(Err("no such thread".to_owned())) };
        let own = text(row.get_ref(0)?).filter(|t| t.trim() != PLACEHOLDER_TITLE);
        let json = match document(text(row.get_ref(1)?).as_deref(), bytes(row.get_ref(2)?)) {
            Ok(json) => json,
            Err(why) => return Ok(Err(why)),
        };
        let cwd = text(row.get_ref(3)?).and_then(|f| first_folder(&f));
        let mut out = match replay(&json) {
            Ok(read) => read,
            Err(why) => return Ok(Err(why)),
        };
        out.cwd = cwd;
        let first_user = out.title.take();
        out.title = own.as_deref().and_then(title_from_text).or(first_user);
        Ok(Ok(out))
    }
}

/// The first path of a serialized `PathList` (paths one a line).
fn first_folder(folders: &str) -> Option<String> {
    folders.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_owned)
}

/// The JSON document of a row's `data`: as it is (`json`) or decompressed
/// (`zstd`) to at most [`MAX_LINE_BYTES`].
fn document(data_type: Option<&str>, data: &[u8]) -> Result<Vec<u8>, String> {
    match data_type {
        Some("json") => Ok(data.to_vec()),
        Some("zstd") => {
            let decoder = zstd::stream::read::Decoder::new(data).map_err(|e| format!("its zstd data: {e}"))?;
            let mut out = Vec::new();
            let limit = u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX) + 1;
            decoder.take(limit).read_to_end(&mut out).map_err(|e| format!("its zstd data does not decompress: {e}"))?;
            if out.len() > MAX_LINE_BYTES {
                return Err(format!("its data decompresses to more than {MAX_LINE_BYTES} bytes"));
            }
            Ok(out)
        }
        Some(other) => Err(format!("its data_type {other:?} is not one Zed writes (json, zstd)")),
        None => Err("it has no data_type".to_owned()),
    }
}

/// The fields of a thread document a replay reads.
#[derive(Deserialize)]
struct Document {
    #[serde(default)]
    messages: Vec<Value>,
}

/// The conversation of a thread document; `title` holds the title from its
/// first user text.
fn replay(json: &[u8]) -> Result<Read, String> {
    let doc: Document =
        serde_json::from_slice(json).map_err(|e| format!("its data is not a Zed thread document: {e}"))?;
    let mut out = Read::default();
    for message in &doc.messages {
        out.stats.lines += 1;
        let Some((role, said)) = message_text(message) else {
            out.stats.skipped += 1;
            continue;
        };
        let Some(role) = role else { continue };
        if role == Role::User && out.title.is_none() {
            out.title = title_from_text(&said);
        }
        if !said.trim().is_empty() {
            out.items.push(ConversationItem::new(role, said));
        }
    }
    Ok(out)
}

/// A message's role and text: `Some((None, _))` for one that is left out
/// (`Resume`, a `system` message), `None` for one of an unknown shape.
fn message_text(message: &Value) -> Option<(Option<Role>, String)> {
    let join = |blocks: &[Value], text_of: &dyn Fn(&Value) -> Option<String>, by: &str| -> String {
        blocks.iter().filter_map(text_of).collect::<Vec<_>>().join(by)
    };
    if message.as_str() == Some("Resume") {
        return Some((None, String::new()));
    }
    let text_block = |b: &Value| b.get("Text").and_then(Value::as_str).map(str::to_owned);
    if let Some(user) = message.get("User") {
        let blocks = user.get("content")?.as_array()?;
        // The pieces of one prompt, a mention or image between them.
        return Some((Some(Role::User), join(blocks, &text_block, "")));
    }
    if let Some(agent) = message.get("Agent") {
        let blocks = agent.get("content")?.as_array()?;
        return Some((Some(Role::Assistant), join(blocks, &text_block, "\n")));
    }
    // The older agent's message: a role and segments.
    let role = match message.get("role")?.as_str()? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" => return Some((None, String::new())),
        _ => return None,
    };
    let segment = |s: &Value| {
        (s.get("type").and_then(Value::as_str) == Some("text"))
            .then(|| s.get("text").and_then(Value::as_str).map(str::to_owned))
            .flatten()
    };
    Some((Some(role), join(message.get("segments")?.as_array()?, &segment, "\n")))
}
