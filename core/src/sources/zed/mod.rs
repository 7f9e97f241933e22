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

use std::borrow::Cow;
use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::foreign::{title_from_text, Listing, MAX_LINE_BYTES};
use crate::sources::kind::{Kind, Root};
use crate::sources::lenient::{scalars_are_none, Block, Field, FieldName, LStr, List};
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
fn document<'a>(data_type: Option<&str>, data: &'a [u8]) -> Result<Cow<'a, [u8]>, String> {
    match data_type {
        Some("json") => Ok(Cow::Borrowed(data)),
        Some("zstd") => {
            let decoder = zstd::stream::read::Decoder::new(data).map_err(|e| format!("its zstd data: {e}"))?;
            let mut out = Vec::new();
            let limit = u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX) + 1;
            decoder.take(limit).read_to_end(&mut out).map_err(|e| format!("its zstd data does not decompress: {e}"))?;
            if out.len() > MAX_LINE_BYTES {
                return Err(format!("its data decompresses to more than {MAX_LINE_BYTES} bytes"));
            }
            Ok(Cow::Owned(out))
        }
        Some(other) => Err(format!("its data_type {other:?} is not one Zed writes (json, zstd)")),
        None => Err("it has no data_type".to_owned()),
    }
}

/// The fields of a thread document a replay reads.
#[derive(Deserialize)]
struct Document<'a> {
    #[serde(borrow, default)]
    messages: Vec<Message<'a>>,
}

/// What a replay reads of one message of a thread document (every other
/// field skipped, never built).
#[derive(Default)]
enum Message<'a> {
    /// `Resume`, or the older agent's `system` message: left out.
    Left,
    /// A user or assistant message and the texts of its blocks or
    /// segments, joined by `by`.
    Said { role: Role, texts: Vec<Cow<'a, str>>, by: &'static str },
    /// A message of another shape.
    #[default]
    Unknown,
}

/// The conversation of a thread document; `title` holds the title from its
/// first user text.
fn replay(json: &[u8]) -> Result<Read, String> {
    let not_a_document = |e: &dyn std::fmt::Display| format!("its data is not a Zed thread document: {e}");
    let json = std::str::from_utf8(json).map_err(|e| not_a_document(&e))?;
    let doc: Document<'_> = serde_json::from_str(json).map_err(|e| not_a_document(&e))?;
    let mut out = Read::default();
    for message in doc.messages {
        out.stats.lines += 1;
        let (role, said) = match message {
            Message::Said { role, texts, by } => (role, texts.join(by)),
            Message::Left => continue,
            Message::Unknown => {
                out.stats.skipped += 1;
                continue;
            }
        };
        if role == Role::User && out.title.is_none() {
            out.title = title_from_text(&said);
        }
        if !said.trim().is_empty() {
            out.items.push(ConversationItem::new(role, said));
        }
    }
    Ok(out)
}

/// A message: `"Resume"`; an object with `User` or `Agent` (in that
/// order), each an object whose `content` is a list of blocks, of which
/// the `Text` ones are read (a user's joined as the pieces of one prompt,
/// a mention or image between them; an agent's with `"\n"`); or the older
/// agent's object with a `role` and, for a user or assistant, `segments`
/// (their `text` ones read). A field given twice counts as its last, as a
/// JSON object read whole would have it. Anything else is of an unknown
/// shape.
impl<'de: 'a, 'a> Deserialize<'de> for Message<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Message<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Message<'de>, E> {
                self.visit_str(v)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Message<'de>, E> {
                Ok(if v == "Resume" { Message::Left } else { Message::Unknown })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message<'de>, A::Error> {
                let (mut user, mut agent, mut role, mut segments) = (None, None, LStr::default(), None);
                while let Some(key) = map.next_key::<LStr<'de>>()? {
                    match key.get() {
                        Some("User") => user = Some(texts(map.next_value::<Blocks<'de>>()?)),
                        Some("Agent") => agent = Some(texts(map.next_value::<Blocks<'de>>()?)),
                        Some("role") => role = map.next_value()?,
                        Some("segments") => segments = Some(map.next_value::<List<Block<'de>>>()?.0),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let said = |role, texts: Option<Vec<Cow<'de, str>>>, by| match texts {
                    Some(texts) => Message::Said { role, texts, by },
                    None => Message::Unknown,
                };
                if let Some(blocks) = user {
                    return Ok(said(Role::User, blocks, ""));
                }
                if let Some(blocks) = agent {
                    return Ok(said(Role::Assistant, blocks, "\n"));
                }
                let role = match role.get() {
                    Some("user") => Role::User,
                    Some("assistant") => Role::Assistant,
                    Some("system") => return Ok(Message::Left),
                    _ => return Ok(Message::Unknown),
                };
                let texts = segments.flatten().map(|segments| {
                    segments.into_iter().filter(|s| s.kind.get() == Some("text")).filter_map(|s| s.text.0).collect()
                });
                Ok(said(role, texts, "\n"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Message<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Message::Unknown)
            }
            scalars_are_none!();
        }
        d.deserialize_any(V)
    }
}

/// A `User` or `Agent` message's value: its `content` list of blocks, each
/// block's `Text` (`None`: not an object whose `content` is a list).
type Blocks<'a> = Field<Content, List<Field<Text, LStr<'a>>>>;

/// The key of a message's blocks.
struct Content;

impl FieldName for Content {
    const NAME: &'static str = "content";
}

/// The key of a block's text.
struct Text;

impl FieldName for Text {
    const NAME: &'static str = "Text";
}

/// The texts of [`Blocks`] (`None`: not a list of blocks).
fn texts(blocks: Blocks<'_>) -> Option<Vec<Cow<'_, str>>> {
    blocks.0 .0.map(|blocks| blocks.into_iter().filter_map(|b| b.0 .0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each message's role and text (`Ok(None)` for one left out, `Err(())`
    /// for one of an unknown shape).
    fn said(messages: &str) -> Vec<Result<Option<(Role, String)>, ()>> {
        let doc = format!(r#"{{"messages":{messages}}}"#);
        let doc: Document<'_> = serde_json::from_str(&doc).unwrap();
        doc.messages
            .into_iter()
            .map(|m| match m {
                Message::Said { role, texts, by } => Ok(Some((role, texts.join(by)))),
                Message::Left => Ok(None),
                Message::Unknown => Err(()),
            })
            .collect()
    }

    #[test]
    fn messages_of_every_shape() {
        let (u, a) = (Role::User, Role::Assistant);
        let (unknown, left) = (Err(()), Ok(None));
        let s = |role, t: &str| Ok(Some((role, t.to_owned())));
        assert_eq!(
            said(
                r#"["Resume", "Other", 5, null, [1], {"User": {"content": [{"Text": "a"}, {"Mention": {}}, 3, {"Text": "b"}]}},
                {"Agent": {"content": [{"Text": "x"}, {"Text": "y", "Text": 2}, {"Text": "z"}]}, "User": null},
                {"User": {"content": "a"}}, {"User": 5}, {"Agent": {"content": [], "content": [{"Text": "last"}]}},
                {"role": "system"}, {"role": "user", "segments": [{"type": "text", "text": "s"}, {"type": "tool", "text": "t"}, 4]},
                {"role": "assistant"}, {"role": "tool", "segments": []}, {"role": 5}, {}]"#
            ),
            vec![
                left.clone(),
                unknown.clone(),
                unknown.clone(),
                unknown.clone(),
                unknown.clone(),
                s(u, "ab"),
                unknown.clone(),
                unknown.clone(),
                unknown.clone(),
                s(a, "last"),
                left.clone(),
                s(u, "s"),
                unknown.clone(),
                unknown.clone(),
                unknown.clone(),
                unknown.clone(),
            ]
        );
        assert_eq!(
            said(r#"[{"Agent": {"content": [{"Text": "x"}, {"Text": "y", "Text": 2}, {"Text": "z"}]}}]"#),
            vec![s(a, "x\nz")]
        );
    }
}
