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

use std::fmt;

use rusqlite::Connection;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{title_from_text, Listing};
use crate::sources::kind::{Kind, Root};
use crate::sources::lenient::{scalars_are_none, LStr};
use crate::sources::sqlite::{self, bytes, str_ref, text, Read, Schema, Sorted, SqliteSource};

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
        // Rows in the order of `ORDER BY created_at, rowid`, sorted here (no
        // index gives it; see `Sorted`).
        let mut stmt = conn.prepare("SELECT created_at, rowid, id, role, parts FROM messages WHERE session_id = ?1")?;
        let mut rows = stmt.query([id])?;
        let mut messages = Vec::new();
        while let Some(row) = rows.next()? {
            let at = (Sorted::of(row.get_ref(0)?), row.get::<_, i64>(1)?);
            let role = match str_ref(row.get_ref(3)?) {
                Some("user") => Some(Role::User),
                Some("assistant") => Some(Role::Assistant),
                _ => None,
            };
            messages.push((at, text(row.get_ref(2)?), role, parts_text(bytes(row.get_ref(4)?))));
        }
        messages.sort_by(|(a, ..), (b, ..)| a.cmp(b));
        let mut first_user = None;
        for (_, mid, role, said) in messages {
            out.stats.lines += 1;
            let Some(said) = said else {
                out.stats.skipped += 1;
                continue;
            };
            let role = match role {
                Some(role) => role,
                None => continue,
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

/// What a replay reads of one part of a message's `parts`: its `type` and
/// its data's `text`, from an object (`{"type": …, "data": {"text": …}}`)
/// or, as serde reads a struct, a list of those two in order; anything
/// else, or a list of more, has neither. A field given twice counts as its
/// last, as a JSON object read whole would have it.
#[derive(Default)]
struct Part<'a> {
    kind: LStr<'a>,
    text: LStr<'a>,
}

/// A part's `data`: its `text`, read as [`Part`] is.
#[derive(Default)]
struct Data<'a>(LStr<'a>);

/// The rest of a list read as a struct: `true` when it held more.
fn longer<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<bool, A::Error> {
    let mut more = false;
    while seq.next_element::<IgnoredAny>()?.is_some() {
        more = true;
    }
    Ok(more)
}

impl<'de: 'a, 'a> Deserialize<'de> for Part<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Part<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part<'de>, A::Error> {
                let mut part = Part::default();
                while let Some(key) = map.next_key::<LStr<'de>>()? {
                    match key.get() {
                        Some("type") => part.kind = map.next_value()?,
                        Some("data") => part.text = map.next_value::<Data<'de>>()?.0,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(part)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Part<'de>, A::Error> {
                let kind = seq.next_element::<LStr<'de>>()?.unwrap_or_default();
                let text = seq.next_element::<Data<'de>>()?.unwrap_or_default().0;
                Ok(if longer(seq)? { Part::default() } else { Part { kind, text } })
            }
            fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Part<'de>, E> {
                Ok(Part::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Part<'de>, E> {
                Ok(Part::default())
            }
            scalars_are_none!();
        }
        d.deserialize_any(V)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Data<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Data<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Data<'de>, A::Error> {
                let mut text = LStr::default();
                while let Some(key) = map.next_key::<LStr<'de>>()? {
                    if key.get() == Some("text") {
                        text = map.next_value()?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Data(text))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Data<'de>, A::Error> {
                let text = seq.next_element::<LStr<'de>>()?.unwrap_or_default();
                Ok(if longer(seq)? { Data::default() } else { Data(text) })
            }
            fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Data<'de>, E> {
                Ok(Data::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Data<'de>, E> {
                Ok(Data::default())
            }
            scalars_are_none!();
        }
        d.deserialize_any(V)
    }
}

/// The `text` parts of a message's `parts`, joined with `"\n"` (`None`:
/// not a JSON list).
fn parts_text(parts: &[u8]) -> Option<String> {
    let parts: Vec<Part<'_>> = serde_json::from_slice(parts).ok()?;
    let texts: Vec<&str> = parts.iter().filter(|p| p.kind.get() == Some("text")).filter_map(|p| p.text.get()).collect();
    Some(texts.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_of_odd_shapes_give_no_text() {
        let read = |json: &str| parts_text(json.as_bytes());
        assert_eq!(
            read(r#"[{"type":"text","data":{"text":"a"}},{"type":"reasoning","data":{"thinking":"x"}}]"#).as_deref(),
            Some("a")
        );
        // A field given twice counts as its last.
        assert_eq!(
            read(r#"[{"type":"text","data":{"text":"a","text":"b"}},{"type":"x","type":"text","data":{"text":"c"}}]"#)
                .as_deref(),
            Some("b\nc")
        );
        assert_eq!(read(r#"[{"type":"text","data":{"text":"a"},"data":5}]"#).as_deref(), Some(""));
        // A list of the two fields, as serde reads a struct; one longer is nothing.
        assert_eq!(
            read(r#"[["text",{"text":"a"}],["text",["b"]],["text",{"text":"c"},1],["text",["d",2]]]"#).as_deref(),
            Some("a\nb")
        );
        assert_eq!(
            read(r#"[5,"text",null,{"type":"text","data":"a"},{"type":"text","data":{"text":7}}]"#).as_deref(),
            Some("")
        );
        assert_eq!(read(r#"{"type":"text"}"#), None);
        assert_eq!(read("not json"), None);
    }
}
