//! Goose sessions: a read-only session source over Goose's SQLite
//! database, `sessions/sessions.db` in its data directory (Goose 1.10 and
//! later; read as [`sqlite`](super::sqlite::SqliteSource) reads every database).
//!
//! ```no_run
//! use dsh_session_reference::sources::goose::GooseSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = GooseSource::open("/home/me/.local/share/goose/sessions/sessions.db")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The schema followed is block/goose's `session_manager.rs` and
//! `migrations.rs` (tables `sessions` and `messages`, schema versions 5 to
//! 15; only columns every one of them has are read), and the compaction
//! rule its `context_mgmt::compact_messages`.
//!
//! # Sessions
//!
//! - **id**: `goose:<sessions.id>` (`20260101_1`). Listed: sessions with at
//!   least one message, except a subagent's (`session_type` `sub_agent`) and
//!   hidden ones (`hidden`).
//! - **createdAt**: `sessions.created_at` (SQLite's `CURRENT_TIMESTAMP`
//!   text, RFC 3339 text, or a number).
//! - **cwd**: `sessions.working_dir`.
//! - **title**: `sessions.name` (the name the user gave, or the one Goose
//!   generated), else `description` (the older column), else the first
//!   visible user text (whitespace collapsed, at most 100 characters).
//! - **capturedThroughSeq**: the number of the session's message rows
//!   read, less one.
//!
//! # Replay
//!
//! Message rows in Goose's order (`created_timestamp`, then row id). Each
//! row's `metadata_json` says whether the model sees it (`agentVisible`,
//! true when absent) and whether the user does (`userVisible`). Then:
//!
//! - a row the model does not see is left out (what a compaction
//!   replaced, an error shown to the user only);
//! - a row only the model sees (`userVisible: false`) is Goose's own: the
//!   first one after rows the model no longer sees is a compaction's
//!   summary, a checkpoint; any other (the "your context was compacted"
//!   note after it) is injected and left out;
//! - of every other row, the `text` blocks of its `content_json`, joined
//!   with `"\n"`: never tool requests or responses, thinking, images or
//!   notifications.
//!
//! A row whose `content_json` is not a JSON list, or whose role is neither
//! `user` nor `assistant`, is skipped and counted.
//!
//! Goose's older `*.jsonl` session files are not read: Goose imports them
//! into `sessions.db` when it creates it.
//!
//! # Fingerprints
//!
//! Per session: `updated_at`, `name`, `description`, and its messages'
//! count, largest row id and total metadata length (a compaction rewrites
//! every row).

use std::path::Path;

use rusqlite::Connection;

use crate::conversation::ConversationItem;
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{title_from_text, Listing};
use crate::sources::kind::{Kind, Root};
use crate::sources::lenient::Content;
use crate::sources::sqlite::{self, bytes, str_ref, text, Read, Schema, Sorted, SqliteSource};

/// What every Goose session id starts with.
pub const PREFIX: &str = "goose:";

/// Goose as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "goose",
    format: Goose::FORMAT,
    about: "Goose sessions (its SQLite database, sessions.db)",
    prefix: PREFIX,
    location: "$GOOSE_PATH_ROOT/data/sessions/sessions.db, else $XDG_DATA_HOME/goose/sessions/sessions.db, \
               else ~/.local/share/goose/sessions/sessions.db (Windows: %APPDATA%\\Block\\goose\\data\\sessions\\sessions.db)",
    default: Some(|env| {
        let data = if let Some(root) = env.var("GOOSE_PATH_ROOT") {
            root.join("data")
        } else if cfg!(windows) {
            let app = env.var("APPDATA").unwrap_or_else(|| env.home().join("AppData").join("Roaming"));
            app.join("Block").join("goose").join("data")
        } else {
            env.data_home().join("goose")
        };
        data.join("sessions").join("sessions.db")
    }),
    also: &[],
    env: &["GOOSE_PATH_ROOT", "XDG_DATA_HOME", "APPDATA", "HOME", "USERPROFILE"],
    root: Root::Database("sessions.db"),
    layout: "a Goose session database (as ~/.local/share/goose/sessions/sessions.db)",
    open: |root| Ok(GooseSource::open(root)?.into_query()),
    empty: |kind, root| {
        format!("{}: its sessions table holds no session with a message (subagents' aside)", kind.no_session_in(root))
    },
};

/// Goose's schema.
#[derive(Debug)]
pub struct Goose;

/// A read-only session source over a Goose database.
pub type GooseSource = SqliteSource<Goose>;

impl Schema for Goose {
    const FORMAT: &'static str = "Goose";
    const PREFIX: &'static str = PREFIX;
    const FILE: &'static str = "sessions.db";
    const WHAT: &'static str = "a Goose session database (schema v5 or later)";
    const FINGERPRINTS: &'static str = "SELECT s.id, s.updated_at, s.name, s.description, \
         (SELECT count(*) || ':' || coalesce(max(m.id), '') || ':' || total(length(m.metadata_json)) \
          FROM messages m WHERE m.session_id = s.id) FROM sessions s";
    const FINGERPRINT_COLUMNS: usize = 4;

    fn list(conn: &Connection, db: &Path, listing: &mut Listing) -> rusqlite::Result<()> {
        sqlite::list_rows::<Self>(
            conn,
            db,
            listing,
            "SELECT s.id, s.created_at, s.working_dir FROM sessions s \
             WHERE coalesce(s.session_type, 'user') NOT IN ('sub_agent', 'hidden') \
             AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)",
        )
    }

    fn read(conn: &Connection, _db: &Path, id: &str) -> rusqlite::Result<Result<Read, String>> {
        let mut stmt = conn.prepare("SELECT name, description, working_dir FROM sessions WHERE id = ?1")?;
        let mut rows = stmt.query([id])?;
        let Some(row) = rows.next()? else { return Ok(Err("no such session".to_owned())) };
        let own = [text(row.get_ref(0)?), text(row.get_ref(1)?)];
        let mut out = Read { cwd: text(row.get_ref(2)?).filter(|c| !c.is_empty()), ..Read::default() };
        drop(rows);
        // Rows in the order of `ORDER BY created_timestamp, id`, sorted
        // here (no index gives it; see `Sorted`).
        let mut stmt = conn.prepare(
            "SELECT created_timestamp, id, role, content_json, metadata_json FROM messages WHERE session_id = ?1",
        )?;
        let mut rows = stmt.query([id])?;
        let mut messages = Vec::new();
        while let Some(row) = rows.next()? {
            let at = (Sorted::of(row.get_ref(0)?), Sorted::of(row.get_ref(1)?));
            let role = str_ref(row.get_ref(2)?);
            messages.push((at, Message::parse(role, bytes(row.get_ref(3)?), bytes(row.get_ref(4)?))));
        }
        messages.sort_by(|(a, _), (b, _)| a.cmp(b));
        let mut replay = Replay::default();
        for (_, message) in messages {
            out.stats.lines += 1;
            match message {
                Some(message) => replay.push(message),
                None => out.stats.skipped += 1,
            }
        }
        let first_user = replay.first_user.take();
        out.items = replay.items;
        out.title = own.iter().flatten().find_map(|t| title_from_text(t)).or(first_user);
        Ok(Ok(out))
    }
}

/// One message row, parsed.
struct Message {
    user: bool,
    /// `agentVisible`.
    model_sees: bool,
    /// `userVisible`.
    user_sees: bool,
    /// Its `text` blocks, joined with `"\n"`.
    text: String,
}

impl Message {
    /// `None`: not a user or assistant message, or content that is not a
    /// JSON list.
    fn parse(role: Option<&str>, content: &[u8], metadata: &[u8]) -> Option<Message> {
        let user = match role? {
            "user" => true,
            "assistant" => false,
            _ => return None,
        };
        let Ok(content @ Content::Blocks(_)) = serde_json::from_slice::<Content<'_>>(content) else { return None };
        let text = content.texts(&["text"]).collect::<Vec<_>>().join("\n");
        let meta: serde_json::Value = serde_json::from_slice(metadata).unwrap_or_default();
        let flag = |name: &str| meta.get(name).and_then(serde_json::Value::as_bool).unwrap_or(true);
        Some(Message { user, model_sees: flag("agentVisible"), user_sees: flag("userVisible"), text })
    }
}

/// The conversation being replayed.
#[derive(Default)]
struct Replay {
    items: Vec<ConversationItem>,
    /// Whether the row before was one the model no longer sees.
    after_hidden: bool,
    /// The title from the first user text the user saw.
    first_user: Option<String>,
}

impl Replay {
    fn push(&mut self, m: Message) {
        if m.user && m.user_sees && self.first_user.is_none() {
            self.first_user = title_from_text(&m.text);
        }
        if !m.model_sees {
            self.after_hidden = true;
            return;
        }
        let summary = !m.user_sees && self.after_hidden;
        self.after_hidden = false;
        if m.text.trim().is_empty() || (!m.user_sees && !summary) {
            return;
        }
        self.items.push(match (summary, m.user) {
            (true, _) => ConversationItem::checkpoint(m.text),
            (false, true) => ConversationItem::new(Role::User, m.text),
            (false, false) => ConversationItem::new(Role::Assistant, m.text),
        });
    }
}
