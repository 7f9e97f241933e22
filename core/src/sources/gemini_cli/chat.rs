//! One Gemini CLI chat file replayed into its current model-visible
//! conversation (the rules are in the parent module's docs).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::fs::as_of_now;
use crate::projection::Role;
use crate::sources::foreign::{each_line, iso_ms, title_from_text, LineStats, Transcript, MAX_LINE_BYTES};
use crate::sources::lenient::{lenient, LBool, LStr};

/// How Gemini CLI's compression summary starts (a user message).
pub const SNAPSHOT_OPEN: &str = "<state_snapshot>";

/// The canned model reply Gemini CLI puts after a compression summary.
pub const SNAPSHOT_ACK: &str = "Got it. Thanks for the additional context!";

/// The block newer Gemini CLI versions inject as the first user message.
const SESSION_CONTEXT: (&str, &str) = ("<session_context>", "</session_context>");

/// The texts of a `PartListUnion`: a string, a part `{text, thought?}`, or
/// a list of either. Parts that are not text (function calls and
/// responses, inline data) and thought parts give none.
///
/// Qwen Code keeps the same `Content` parts in its records, so its reader
/// reads them with this type too.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Parts<'a>(Vec<Cow<'a, str>>);

impl<'a> Parts<'a> {
    /// The texts, concatenated (as the model is given them).
    pub(crate) fn joined(&self) -> String {
        self.0.concat()
    }
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow, default)]
    text: LStr<'a>,
    #[serde(default)]
    thought: LBool,
}

struct PartsVisitor;

impl<'de> Visitor<'de> for PartsVisitor {
    type Value = Parts<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Parts(vec![Cow::Borrowed(v)]))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Parts(vec![Cow::Owned(v.to_owned())]))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Parts(vec![Cow::Owned(v)]))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let part = Part::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(Parts(match (part.text.0, part.thought.0) {
            (Some(t), false) => vec![t],
            _ => Vec::new(),
        }))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(p) = seq.next_element::<Parts<'de>>()? {
            out.extend(p.0);
        }
        Ok(Parts(out))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Parts::default())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Parts::default())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Parts::default())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Parts::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Parts::default())
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Parts::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Parts<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(PartsVisitor)
    }
}

/// A message record (`{id, timestamp, type, content, displayContent?}`).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MessageRecord<'a> {
    #[serde(borrow, default)]
    id: LStr<'a>,
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    content: Parts<'a>,
    #[serde(borrow, default)]
    display_content: Parts<'a>,
}

/// What `$set` patches that a replay reads.
#[derive(Deserialize, Default)]
struct SetRecord<'a> {
    #[serde(borrow, default)]
    summary: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    messages: Option<Vec<MessageRecord<'a>>>,
}

/// A line of a chat file: metadata, a message, `$set` or `$rewindTo` (the
/// union of their fields, each lenient). A legacy `.json` file is one of
/// these with `messages`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    #[serde(borrow, default)]
    id: LStr<'a>,
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    content: Parts<'a>,
    #[serde(borrow, default)]
    display_content: Parts<'a>,
    #[serde(borrow, default)]
    session_id: LStr<'a>,
    #[serde(borrow, default)]
    start_time: LStr<'a>,
    #[serde(borrow, default)]
    summary: LStr<'a>,
    #[serde(rename = "$rewindTo", borrow, default)]
    rewind_to: LStr<'a>,
    #[serde(rename = "$set", borrow, default, deserialize_with = "lenient")]
    set: Option<SetRecord<'a>>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    messages: Option<Vec<MessageRecord<'a>>>,
}

/// What a message record is on the model surface.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Msg {
    User(String),
    Checkpoint(String),
    Gemini(String),
    /// `info`, `error`, `warning`, or a message without text.
    Other,
}

/// `text` without a leading injected `<session_context>` block.
fn without_session_context(text: &str) -> &str {
    let t = text.trim_start();
    match (t.strip_prefix(SESSION_CONTEXT.0), t.find(SESSION_CONTEXT.1)) {
        (Some(_), Some(end)) => t[end + SESSION_CONTEXT.1.len()..].trim_start(),
        _ => text,
    }
}

fn classify(kind: Option<&str>, content: &Parts<'_>, display: &Parts<'_>) -> Msg {
    match kind {
        Some("user") => {
            let text = if display.0.is_empty() { content.joined() } else { display.joined() };
            if text.trim_start().starts_with(SNAPSHOT_OPEN) {
                return Msg::Checkpoint(text);
            }
            let typed = without_session_context(&text);
            if typed.trim().is_empty() {
                Msg::Other
            } else {
                Msg::User(typed.to_owned())
            }
        }
        Some("gemini") => {
            let text = content.joined();
            if text.trim().is_empty() {
                Msg::Other
            } else {
                Msg::Gemini(text)
            }
        }
        _ => Msg::Other,
    }
}

/// The replayed messages: upserted by id (the first write fixes the
/// position, the last one the content), cut by rewinds, replaced by
/// `$set.messages`.
#[derive(Default)]
struct Replay {
    order: Vec<(String, Msg)>,
    at: HashMap<String, usize>,
}

impl Replay {
    fn upsert(&mut self, id: &str, msg: Msg) {
        match self.at.get(id) {
            Some(&i) => self.order[i].1 = msg,
            None => {
                self.at.insert(id.to_owned(), self.order.len());
                self.order.push((id.to_owned(), msg));
            }
        }
    }

    /// Drops `id` and everything after it (everything, when `id` is not
    /// there), as Gemini CLI's loader does.
    fn rewind(&mut self, id: &str) {
        let cut = self.at.get(id).copied().unwrap_or(0);
        for (gone, _) in self.order.drain(cut..) {
            self.at.remove(&gone);
        }
    }

    fn replace(&mut self, list: &[MessageRecord<'_>]) {
        *self = Replay::default();
        for (n, r) in list.iter().enumerate() {
            let msg = classify(r.kind.get(), &r.content, &r.display_content);
            // A record without an id still holds its place.
            let id = r.id.owned().unwrap_or_else(|| format!("\u{0}{n}"));
            self.upsert(&id, msg);
        }
    }

    /// The conversation: the canned acknowledgement right after a
    /// compression summary is not part of it.
    fn items(self) -> Vec<ConversationItem> {
        let mut out: Vec<ConversationItem> = Vec::with_capacity(self.order.len());
        for (_, msg) in self.order {
            match msg {
                Msg::User(t) => out.push(ConversationItem::new(Role::User, t)),
                Msg::Checkpoint(t) => out.push(ConversationItem::checkpoint(t)),
                Msg::Gemini(t) if t.trim() == SNAPSHOT_ACK && out.last().is_some_and(|i| i.checkpoint) => {}
                Msg::Gemini(t) => out.push(ConversationItem::new(Role::Assistant, t)),
                Msg::Other => {}
            }
        }
        out
    }
}

/// A chat file's identity and creation time, from its first line (or the
/// legacy object).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// `sessionId`.
    pub session_id: Option<String>,
    /// `startTime` (ms).
    pub created_at: Option<u64>,
}

fn meta_of(line: &Line<'_>) -> Meta {
    Meta { session_id: line.session_id.owned(), created_at: line.start_time.get().and_then(iso_ms) }
}

/// The metadata of a `.jsonl` chat file, from its first line.
pub fn read_meta(file: File) -> io::Result<Meta> {
    let mut meta = Meta::default();
    let read = each_line(file, 1, |_, bytes| {
        let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes) else { return false };
        meta = meta_of(&line);
        true
    });
    match read {
        Err(e) if e.kind() != io::ErrorKind::InvalidData => Err(e),
        _ => Ok(meta),
    }
}

/// Whether a replayed message is a real user prompt (for the title).
fn first_prompt(msg: &Msg) -> Option<String> {
    match msg {
        Msg::User(t) => title_from_text(t),
        _ => None,
    }
}

/// Replays a `.jsonl` chat file as it was when the read began, up to its
/// last complete line.
pub fn read(file: File) -> io::Result<Transcript> {
    let mut out = Transcript::default();
    let mut replay = Replay::default();
    let mut summary = None::<String>;
    let mut first_user = None::<String>;
    let mut head_seen = false;
    let stats = each_line(as_of_now(file)?, u64::MAX, |_, bytes| {
        let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes) else { return false };
        if let Some(rewind) = line.rewind_to.get() {
            replay.rewind(rewind);
        } else if let Some(id) = line.id.get() {
            let msg = classify(line.kind.get(), &line.content, &line.display_content);
            if first_user.is_none() {
                first_user = first_prompt(&msg);
            }
            replay.upsert(id, msg);
        } else if let Some(set) = &line.set {
            if let Some(s) = set.summary.get().filter(|s| !s.trim().is_empty()) {
                summary = Some(s.to_owned());
            }
            if let Some(list) = &set.messages {
                replay.replace(list);
            }
        } else if line.session_id.get().is_some() {
            if !head_seen {
                head_seen = true;
                out.created_at = meta_of(&line).created_at;
            }
            if let Some(s) = line.summary.get().filter(|s| !s.trim().is_empty()) {
                summary = Some(s.to_owned());
            }
        }
        true
    })?;
    out.stats = stats;
    if first_user.is_none() {
        first_user = replay.order.iter().find_map(|(_, m)| first_prompt(m));
    }
    out.title = summary.or(first_user);
    out.items = replay.items();
    Ok(out)
}

/// A legacy (before 0.39) `.json` chat file: one object, read whole (at
/// most [`MAX_LINE_BYTES`]). `metadata_only` skips the messages.
fn legacy_line(file: File, buf: &mut Vec<u8>) -> io::Result<()> {
    as_of_now(file)?.take(MAX_LINE_BYTES as u64 + 1).read_to_end(buf)?;
    if buf.len() > MAX_LINE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a legacy chat file longer than {MAX_LINE_BYTES} bytes"),
        ));
    }
    Ok(())
}

/// The metadata of a legacy `.json` chat file.
pub fn read_legacy_meta(file: File) -> io::Result<Meta> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Head<'a> {
        #[serde(borrow, default)]
        session_id: LStr<'a>,
        #[serde(borrow, default)]
        start_time: LStr<'a>,
        #[serde(default)]
        #[allow(dead_code)]
        messages: IgnoredAny,
    }
    let mut buf = Vec::new();
    legacy_line(file, &mut buf)?;
    let head: Head<'_> = serde_json::from_slice(&buf)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not a chat file: {e}")))?;
    Ok(Meta { session_id: head.session_id.owned(), created_at: head.start_time.get().and_then(iso_ms) })
}

/// Reads a legacy `.json` chat file: its `messages` in order (upserted by
/// id). `capturedThroughSeq` is the index of its last message.
pub fn read_legacy(file: File) -> io::Result<Transcript> {
    let mut buf = Vec::new();
    legacy_line(file, &mut buf)?;
    let line: Line<'_> = serde_json::from_slice(&buf)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not a chat file: {e}")))?;
    let mut replay = Replay::default();
    let list = line.messages.as_deref().unwrap_or_default();
    replay.replace(list);
    let first_user = replay.order.iter().find_map(|(_, m)| first_prompt(m));
    let n = list.len() as u64;
    Ok(Transcript {
        title: line.summary.owned().filter(|s| !s.trim().is_empty()).or(first_user),
        cwd: None,
        created_at: line.start_time.get().and_then(iso_ms),
        stats: LineStats { lines: n, skipped: 0 },
        items: replay.items(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_read_every_shape() {
        let p: Parts<'_> = serde_json::from_str(r#""a""#).unwrap();
        assert_eq!(p.joined(), "a");
        let p: Parts<'_> = serde_json::from_str(r#"{"text":"b"}"#).unwrap();
        assert_eq!(p.joined(), "b");
        let p: Parts<'_> = serde_json::from_str(
            r#"["x",{"text":"y"},{"text":"z","thought":true},{"functionResponse":{"name":"f"}},5,null]"#,
        )
        .unwrap();
        assert_eq!(p.joined(), "xy");
    }

    #[test]
    fn session_context_is_stripped() {
        assert_eq!(without_session_context("<session_context>\nos: linux\n</session_context>\n\nhi"), "hi");
        assert_eq!(without_session_context("hi <session_context>"), "hi <session_context>");
    }
}
