//! Hermes Agent sessions: a read-only session source over Hermes's SQLite
//! state store, `~/.hermes/state.db` (read as [`sqlite`](super::sqlite::SqliteSource)
//! reads every database).
//!
//! ```no_run
//! use dsh_session_reference::sources::hermes::HermesSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = HermesSource::open("/home/me/.hermes/state.db")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The schema followed is NousResearch/hermes-agent's `hermes_state.py`
//! and `hermes_state_common.py` (`SCHEMA_SQL`, schema version 30: tables
//! `sessions` and `messages`, OpenAI-style rows); a store of an older
//! version, without the columns added since version 2, is read too.
//!
//! # Sessions
//!
//! - **id**: `hermes:<sessions.id>`. Listed: sessions with at least one
//!   message, except a subagent's run or tool session (a child whose parent
//!   did not end by compression or `/branch` and that carries no branch or
//!   reset marker; `source` `tool`), one `hidden`, and one ended by a
//!   compression that a continuation session carries on (the continuation is
//!   listed instead).
//! - **createdAt**: `sessions.started_at` (seconds).
//! - **cwd**: `sessions.cwd`.
//! - **title**: `sessions.title`, else the first user text (whitespace
//!   collapsed, at most 100 characters).
//! - **capturedThroughSeq**: the number of the session's message rows read,
//!   less one.
//!
//! # Replay
//!
//! Message rows in insertion order (`id`), only the live ones (`active`;
//! a row rewound away or archived by a compaction is not): a compaction's
//! summary (`_compressed_summary`, or content starting `[CONTEXT
//! COMPACTION` or the older `[CONTEXT SUMMARY]:`) is a checkpoint; a user
//! or assistant row's `content` (a multimodal `\0json:` list's text parts)
//! is a message. Never `tool` or `system` rows, an assistant's
//! `tool_calls` or reasoning, rows only the model sees that Hermes never
//! shows (`display_kind` `hidden`), nor the background review's prompt
//! and the reply to it, which older versions wrote into sessions.
//!
//! Hermes's legacy JSON and JSONL session files are not read.
//!
//! # Fingerprints
//!
//! Per session: `title`, `ended_at`, and its messages' count, largest id
//! and how many are live.

use std::path::Path;

use rusqlite::Connection;
use serde_json::Value;

use crate::conversation::ConversationItem;
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{title_from_text, Listing};
use crate::sources::kind::{Kind, Root};
use crate::sources::sqlite::{self, column_or, qualified, text, whole, Read, Schema, SqliteSource};

/// What every Hermes session id starts with.
pub const PREFIX: &str = "hermes:";

/// Hermes Agent as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "hermes",
    format: Hermes::FORMAT,
    about: "Hermes Agent sessions (its SQLite state store, state.db)",
    prefix: PREFIX,
    location: "$HERMES_HOME/state.db, else ~/.hermes/state.db",
    default: Some(|env| env.var("HERMES_HOME").unwrap_or_else(|| env.home().join(".hermes")).join("state.db")),
    also: &[],
    env: &["HERMES_HOME", "HOME", "USERPROFILE"],
    root: Root::Database("state.db"),
    layout: "a Hermes Agent state store (as ~/.hermes/state.db)",
    open: |root| Ok(HermesSource::open(root)?.into_query()),
    empty: |kind, root| {
        format!("{}: its sessions table holds no conversation with a message", kind.no_session_in(root))
    },
};

/// Hermes Agent's schema.
#[derive(Debug)]
pub struct Hermes;

/// A read-only session source over a Hermes Agent state store.
pub type HermesSource = SqliteSource<Hermes>;

/// How a compaction's summary starts (current and older Hermes).
const SUMMARY_PREFIXES: [&str; 2] = ["[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:"];

/// How the background review's prompts start (older Hermes wrote them,
/// and the reply to each, into the session reviewed).
const REVIEW_PREFIXES: [&str; 2] = [
    "Review the conversation above and update the skill library",
    "Review the conversation above and consider saving to memory",
];

impl Schema for Hermes {
    const FORMAT: &'static str = "Hermes Agent";
    const PREFIX: &'static str = PREFIX;
    const FILE: &'static str = "state.db";
    const WHAT: &'static str = "a Hermes Agent state store";
    const FINGERPRINTS: &'static str = "";
    const FINGERPRINT_COLUMNS: usize = 3;

    fn fingerprint_query(conn: &Connection) -> rusqlite::Result<String> {
        let title = qualified(conn, "sessions", "s", "title", "NULL")?;
        let active = qualified(conn, "messages", "m", "active", "1")?;
        Ok(format!(
            "SELECT s.id, {title}, s.ended_at, (SELECT count(*) || ':' || coalesce(max(m.id), '') || ':' || \
             total({active}) FROM messages m WHERE m.session_id = s.id) FROM sessions s"
        ))
    }

    fn list(conn: &Connection, db: &Path, listing: &mut Listing) -> rusqlite::Result<()> {
        let col = |name: &str, or: &str| qualified(conn, "sessions", "s", name, or);
        let (cwd, hidden, config) = (col("cwd", "NULL")?, col("hidden", "0")?, col("model_config", "NULL")?);
        let marker = |key: &str| {
            format!("json_extract(CASE WHEN json_valid({config}) THEN {config} ELSE '{{}}' END, '$.{key}')")
        };
        sqlite::list_rows::<Self>(
            conn,
            db,
            listing,
            &format!(
                "SELECT s.id, s.started_at, {cwd} FROM sessions s \
                 WHERE EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id) \
                 AND coalesce(s.source, '') != 'tool' AND coalesce({hidden}, 0) = 0 \
                 AND NOT (coalesce(s.end_reason, '') = 'compression' \
                          AND EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id)) \
                 AND (s.parent_session_id IS NULL \
                      OR {branched} IS NOT NULL OR {reset} IS NOT NULL \
                      OR EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id \
                                 AND p.end_reason IN ('compression', 'branched')))",
                branched = marker("_branched_from"),
                reset = marker("_reset_from"),
            ),
        )
    }

    fn read(conn: &Connection, _db: &Path, id: &str) -> rusqlite::Result<Result<Read, String>> {
        let col = |table: &str, name: &str, or: &str| column_or(conn, table, name, or);
        let (title, cwd) = (col("sessions", "title", "NULL")?, col("sessions", "cwd", "NULL")?);
        let mut stmt = conn.prepare(&format!("SELECT {title}, {cwd} FROM sessions WHERE id = ?1"))?;
        let mut rows = stmt.query([id])?;
        let Some(row) = rows.next()? else { return Ok(Err("no such session".to_owned())) };
        let own = text(row.get_ref(0)?);
        let mut out = Read { cwd: text(row.get_ref(1)?).filter(|c| !c.is_empty()), ..Read::default() };
        drop(rows);
        let (active, summary, display) = (
            col("messages", "active", "1")?,
            col("messages", "_compressed_summary", "0")?,
            col("messages", "display_kind", "NULL")?,
        );
        let mut stmt = conn.prepare(&format!(
            "SELECT role, content, {active}, {summary}, {display} FROM messages WHERE session_id = ?1 ORDER BY id"
        ))?;
        let mut rows = stmt.query([id])?;
        let mut first_user = None;
        let mut after_review = false;
        while let Some(row) = rows.next()? {
            out.stats.lines += 1;
            let role = text(row.get_ref(0)?);
            let live = whole(row.get_ref(2)?).is_none_or(|a| a != 0);
            let marked = whole(row.get_ref(3)?).is_some_and(|s| s != 0);
            let hidden = text(row.get_ref(4)?).as_deref() == Some("hidden");
            let Some(said) = content_text(row.get_ref(1)?) else {
                out.stats.skipped += 1;
                continue;
            };
            let role = match role.as_deref() {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some("tool" | "system") => continue,
                _ => {
                    out.stats.skipped += 1;
                    continue;
                }
            };
            let review = role == Role::User && REVIEW_PREFIXES.iter().any(|p| said.trim_start().starts_with(p));
            let reply_to_review = std::mem::replace(&mut after_review, review) && role == Role::Assistant;
            if !live || hidden || review || reply_to_review || said.trim().is_empty() {
                continue;
            }
            if marked || SUMMARY_PREFIXES.iter().any(|p| said.trim_start().starts_with(p)) {
                out.items.push(ConversationItem::checkpoint(said));
                continue;
            }
            if role == Role::User && first_user.is_none() {
                first_user = title_from_text(&said);
            }
            out.items.push(ConversationItem::new(role, said));
        }
        out.title = own.as_deref().and_then(title_from_text).or(first_user);
        Ok(Ok(out))
    }
}

/// A row's `content` as text: as it is, or the text parts of a multimodal
/// `\0json:` list (`None`: such a list that is not JSON; `Some("")` for
/// NULL).
fn content_text(v: rusqlite::types::ValueRef<'_>) -> Option<String> {
    let Some(content) = text(v) else { return Some(String::new()) };
    let Some(json) = content.strip_prefix("\0json:") else { return Some(content) };
    let parts: Vec<Value> = serde_json::from_str(json).ok()?;
    let texts: Vec<&str> = parts
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    Some(texts.join("\n"))
}
