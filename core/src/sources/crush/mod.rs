//! Crush sessions: a read-only session source over one of Crush's SQLite
//! databases, `.crush/crush.db` in a project (or `~/.crush/crush.db`; read
//! as [`sqlite`](super::sqlite::SqliteSource) reads every database).
//!
//! ```no_run
//! use dsh_session_reference::sources::crush::CrushSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = CrushSource::open("/home/me/code/app/.crush/crush.db")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The schema followed is charmbracelet/crush's `internal/db/migrations`
//! (tables `sessions` and `messages`, with `summary_message_id`), its
//! message parts (`internal/message/content.go`: a JSON list of
//! `{"type", "data"}`) and the compaction rule of its agent
//! (`getSessionMessages`: from the session's summary message on).
//!
//! # Sessions
//!
//! - **id**: `crush:<sessions.id>`. Listed: top-level sessions (no
//!   `parent_session_id`: a child session is a subagent's or a title's)
//!   with at least one message.
//! - **createdAt**: `sessions.created_at` (seconds, or milliseconds).
//! - **cwd**: the project the database is in: the directory holding
//!   `.crush/` when the database lies in one (Crush records none).
//! - **title**: `sessions.title` unless it is Crush's placeholder
//!   (`New Session`), else the first user text (whitespace collapsed, at
//!   most 100 characters).
//! - **capturedThroughSeq**: the number of the session's message rows
//!   read, less one.
//!
//! # Replay
//!
//! Message rows in Crush's order (`created_at`, then row id). When the
//! session has a `summary_message_id` that is one of its messages, what
//! comes before it is left out and its text is a checkpoint (Crush sends
//! it to the model as a user message in place of everything before it).
//! Of every row: the `text` parts (`data.text`), joined with `"\n"`;
//! never `reasoning`, `tool_call`, `tool_result`, `finish`, `image_url`
//! or `binary` parts, nor rows of role `tool` or `system`. A row whose
//! `parts` is not a JSON list is skipped and counted.
//!
//! # Fingerprints
//!
//! Per session: `updated_at`, `title`, `summary_message_id`, and its
//! messages' count, largest row id, newest `updated_at` and total parts
//! length (Crush rewrites a message's parts in place as it streams).

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{title_from_text, Listing};
use crate::sources::kind::{Kind, Root};
use crate::sources::lenient::{lenient, LStr};
use crate::sources::sqlite::{self, bytes, text, Read, Schema, SqliteSource};

/// What every Crush session id starts with.
pub const PREFIX: &str = "crush:";

/// Crush as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "crush",
    format: Crush::FORMAT,
    about: "Crush sessions (a crush.db, or a project holding .crush/crush.db)",
    prefix: PREFIX,
    location: "~/.crush/crush.db (a project's .crush/crush.db when given)",
    default: Some(|env| env.home().join(".crush").join("crush.db")),
    also: &[],
    env: crate::sources::kind::HOME_ENV,
    root: Root::Database("crush.db"),
    layout: "a Crush database (a crush.db, or a project directory holding .crush/crush.db)",
    open: |root| Ok(CrushSource::open(root)?.into_query()),
    empty: |kind, root| {
        format!("{}: its sessions table holds no top-level session with a message", kind.no_session_in(root))
    },
};

/// Crush's schema.
#[derive(Debug)]
pub struct Crush;

/// A read-only session source over a Crush database.
pub type CrushSource = SqliteSource<Crush>;

/// The title Crush gives a session before it has one.
const PLACEHOLDER_TITLE: &str = "New Session";

/// The project a database at `db` belongs to: the directory holding its
/// `.crush/`.
fn project_of(db: &Path) -> Option<String> {
    let dir = db.parent()?;
    (dir.file_name()? == ".crush").then(|| dir.parent()).flatten().map(|p| p.display().to_string())
}

impl Schema for Crush {
    const FORMAT: &'static str = "Crush";
    const PREFIX: &'static str = PREFIX;
    const FILE: &'static str = "crush.db";
    const WHAT: &'static str = "a Crush database";
    const FINGERPRINTS: &'static str = "SELECT s.id, s.updated_at, s.title, s.summary_message_id, \
         (SELECT count(*) || ':' || coalesce(max(m.rowid), '') || ':' || coalesce(max(m.updated_at), '') \
          || ':' || total(length(m.parts)) FROM messages m WHERE m.session_id = s.id) \
         FROM sessions s WHERE s.parent_session_id IS NULL";
    const FINGERPRINT_COLUMNS: usize = 4;

    /// A project directory holding `.crush/crush.db`, or a directory
    /// holding `crush.db`.
    fn in_dir(dir: &Path) -> PathBuf {
        sqlite::here_or_in(dir, ".crush", Self::FILE)
    }

    fn list(conn: &Connection, db: &Path, listing: &mut Listing) -> rusqlite::Result<()> {
        sqlite::list_rows::<Self>(
            conn,
            db,
            listing,
            "SELECT s.id, s.created_at, NULL FROM sessions s WHERE s.parent_session_id IS NULL \
             AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)",
        )?;
        let cwd = project_of(db);
        for s in &mut listing.sessions {
            s.header.cwd.clone_from(&cwd);
        }
        Ok(())
    }

    fn read(conn: &Connection, db: &Path, id: &str) -> rusqlite::Result<Result<Read, String>> {
        let mut stmt = conn.prepare("SELECT title, summary_message_id FROM sessions WHERE id = ?1")?;
        let mut rows = stmt.query([id])?;
        let Some(row) = rows.next()? else { return Ok(Err("no such session".to_owned())) };
        let own = text(row.get_ref(0)?).filter(|t| t.trim() != PLACEHOLDER_TITLE);
        let summary = text(row.get_ref(1)?).filter(|s| !s.is_empty());
        drop(rows);
        let mut out = Read { cwd: project_of(db), ..Read::default() };
        let mut stmt =
            conn.prepare("SELECT id, role, parts FROM messages WHERE session_id = ?1 ORDER BY created_at, rowid")?;
        let mut rows = stmt.query([id])?;
        let mut first_user = None;
        while let Some(row) = rows.next()? {
            out.stats.lines += 1;
            let mid = text(row.get_ref(0)?);
            let role = text(row.get_ref(1)?);
            let Some(said) = parts_text(bytes(row.get_ref(2)?)) else {
                out.stats.skipped += 1;
                continue;
            };
            let role = match role.as_deref() {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                _ => continue,
            };
            if role == Role::User && first_user.is_none() {
                first_user = title_from_text(&said);
            }
            if summary.is_some() && mid == summary {
                out.items.clear();
                if !said.trim().is_empty() {
                    out.items.push(ConversationItem::checkpoint(said));
                }
                continue;
            }
            if !said.trim().is_empty() {
                out.items.push(ConversationItem::new(role, said));
            }
        }
        out.title = own.as_deref().and_then(title_from_text).or(first_user);
        Ok(Ok(out))
    }
}

/// One part of a message's `parts`.
#[derive(Deserialize, Default)]
struct PartJson<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    data: Option<TextData<'a>>,
}

#[derive(Deserialize, Default)]
struct TextData<'a> {
    #[serde(borrow, default)]
    text: LStr<'a>,
}

/// The `text` parts of a message's `parts`, joined with `"\n"` (`None`:
/// not a JSON list).
fn parts_text(parts: &[u8]) -> Option<String> {
    let parts: Vec<serde_json::Value> = serde_json::from_slice(parts).ok()?;
    let texts: Vec<String> = parts
        .iter()
        .filter_map(|p| PartJson::deserialize(p).ok())
        .filter(|p| p.kind.get() == Some("text"))
        .filter_map(|p| p.data.and_then(|d| d.text.owned()))
        .collect();
    Some(texts.join("\n"))
}
