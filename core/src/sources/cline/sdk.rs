//! One Cline CLI (SDK) session's `<id>.messages.json`, with its compaction
//! sidecar, replayed into its current model-visible conversation (the
//! rules are in [`cli`](super::cli)'s docs).

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::OnceLock;

use regex::Regex;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::fast::{fast_object, fast_str, FAST_DEPTH};
use crate::conversation::ConversationItem;
use crate::json::read::Reader;
use crate::json::{parse_js, stringify};
use crate::projection::Role;
use crate::sources::foreign::title_from_text;
use crate::sources::lenient::LStr;

/// The user-role messages the SDK injects (its `metadata.kind`): notices,
/// reminders and compaction prompts, never typed by the user.
const INJECTED_KINDS: [&str; 7] = [
    "auto_compaction",
    "compaction_budget_emergency",
    "completion_reminder",
    "loop_detection_notice",
    "manual_compaction",
    "mistake_stop_notice",
    "recovery_notice",
];

/// The `metadata.kind` of a compaction summary.
const SUMMARY_KIND: &str = "compaction_summary";

/// The `metadata.kind` of the turn a basic compaction folds the dropped
/// work into (the user's prompt, with notices of what was dropped).
const FOLDED_KIND: &str = "compaction";

/// The text of a notice a basic compaction writes into a user turn
/// (`<SYSTEM_NOTICE>…</SYSTEM_NOTICE>`), trimmed; `None` for other text.
fn notice(text: &str) -> Option<&str> {
    const OPEN: &str = "<SYSTEM_NOTICE>";
    const CLOSE: &str = "</SYSTEM_NOTICE>";
    let inner = js_trim(text).strip_prefix(OPEN)?;
    Some(inner.strip_suffix(CLOSE).unwrap_or(inner).trim())
}

/// The prompt the SDK sends as the user when a plan is approved.
const ACT_CONTINUATION: &str = "The user approved switching to act mode. Continue with the approved plan now.";

/// The domain tag the SDK's compaction source hash starts with.
const HASH_VERSION: &str = "cline-session-compaction-source-v2\n";

/// One element of the history: its JSON text, and what a read needs of it
/// when it is an object.
pub struct Message<'a> {
    raw: &'a [u8],
    fields: Option<Fields<'a>>,
}

/// What a read needs of a message object, every field lenient.
#[derive(Default)]
struct Fields<'a> {
    role: LStr<'a>,
    /// `content` as written (`None` when absent or `null`).
    content_raw: Option<&'a [u8]>,
    /// `content` read (`None` when it is neither a string nor a list).
    content: Option<Content<'a>>,
    meta: Meta<'a>,
}

/// A message object's fields as serde reads them (a field given twice
/// makes the message not one).
#[derive(Deserialize)]
struct FieldsJson<'a> {
    #[serde(borrow, default)]
    role: LStr<'a>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    metadata: Option<&'a RawValue>,
}

/// What a read needs of a message's `metadata` (anything else reads as
/// absent).
#[derive(Deserialize, Default)]
struct Meta<'a> {
    #[serde(borrow, default)]
    kind: LStr<'a>,
    #[serde(rename = "displayRole", borrow, default)]
    display_role: LStr<'a>,
}

impl<'a> Meta<'a> {
    /// The metadata whose JSON text is `raw`, by serde.
    fn of(raw: Option<&'a str>) -> Meta<'a> {
        raw.and_then(|v| serde_json::from_str::<Meta<'_>>(v).ok()).unwrap_or_default()
    }
}

/// A message's `content`: a string, or its blocks' types and texts.
enum Content<'a> {
    Str(Cow<'a, str>),
    Blocks(Vec<(LStr<'a>, LStr<'a>)>),
}

#[derive(Deserialize)]
struct BlockJson<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    text: LStr<'a>,
}

impl<'a> Content<'a> {
    /// The content whose JSON text is `raw`, by serde: a string, or a list
    /// whose blocks are each read alone (one that is not a block reads as
    /// one without type or text); `None` for anything else.
    fn of(raw: &'a str) -> Option<Content<'a>> {
        if raw.starts_with('"') {
            let s = match serde_json::from_str::<&str>(raw) {
                Ok(s) => Cow::Borrowed(s),
                Err(_) => Cow::Owned(serde_json::from_str::<String>(raw).ok()?),
            };
            return Some(Content::Str(s));
        }
        let blocks: Vec<&RawValue> = serde_json::from_str(raw).ok()?;
        let blocks = blocks
            .iter()
            .map(|b| match serde_json::from_str::<BlockJson<'_>>(b.get()) {
                Ok(b) => (b.kind, b.text),
                Err(_) => (LStr(None), LStr(None)),
            })
            .collect();
        Some(Content::Blocks(blocks))
    }
}

impl<'a> Fields<'a> {
    /// The fields of the message object whose JSON text is `raw`, by serde.
    fn of(raw: &'a str) -> Option<Fields<'a>> {
        let f = serde_json::from_str::<FieldsJson<'_>>(raw).ok()?;
        Some(Fields {
            role: f.role,
            content_raw: f.content.map(|c| c.get().as_bytes()),
            content: f.content.and_then(|c| Content::of(c.get())),
            meta: Meta::of(f.metadata.map(RawValue::get)),
        })
    }
}

impl<'a> Message<'a> {
    /// The element whose JSON text is `raw`, read by serde.
    fn new(raw: &'a str) -> Self {
        let fields = if raw.starts_with('{') { Fields::of(raw) } else { None };
        Message { raw: raw.as_bytes(), fields }
    }
}

/// The message object at the reader, by the fast path (`None`: anything
/// serde could read otherwise, for it to read).
fn fast_fields<'a>(r: &mut Reader<'a>) -> Option<Fields<'a>> {
    let mut f = Fields::default();
    fast_object(r, &[b"role", b"content", b"metadata"], |r, field| {
        match field {
            0 => f.role = fast_str(r)?,
            1 => (f.content_raw, f.content) = fast_content(r)?,
            _ => f.meta = fast_meta(r)?,
        }
        Some(())
    })?;
    Some(f)
}

/// The JSON text of the value the reader was at, from `start` to where it
/// is (valid UTF-8: the reader checked it).
fn taken<'a>(r: &Reader<'a>, start: usize) -> &'a [u8] {
    &r.input()[start..r.pos()]
}

/// A message's `content` by the fast path: as written, and read.
#[allow(clippy::type_complexity)]
fn fast_content<'a>(r: &mut Reader<'a>) -> Option<(Option<&'a [u8]>, Option<Content<'a>>)> {
    let start = match r.peek()? {
        b'n' => return r.eat_literal(b"null").then_some((None, None)),
        _ => r.pos(),
    };
    let content = match r.peek()? {
        b'"' => Some(Content::Str(r.maybe_string().ok()??.decode().ok()?)),
        b'[' => {
            r.enter_array().ok()?;
            let (mut blocks, mut first) = (Vec::new(), true);
            while r.next_element(&mut first).ok()? {
                let (mut kind, mut text) = (LStr(None), LStr(None));
                fast_object(r, &[b"type", b"text"], |r, field| {
                    match field {
                        0 => kind = fast_str(r)?,
                        _ => text = fast_str(r)?,
                    }
                    Some(())
                })?;
                blocks.push((kind, text));
            }
            Some(Content::Blocks(blocks))
        }
        _ => {
            r.skip_within(FAST_DEPTH).ok()?;
            None
        }
    };
    Some((Some(taken(r, start)), content))
}

/// A message's `metadata` by the fast path (an object of the usual shape),
/// else by serde from its text.
fn fast_meta<'a>(r: &mut Reader<'a>) -> Option<Meta<'a>> {
    let start = match r.peek()? {
        b'n' => return r.eat_literal(b"null").then(Meta::default),
        _ => r.pos(),
    };
    let mut meta = Meta::default();
    let read = fast_object(r, &[b"kind", b"displayRole"], |r, field| {
        match field {
            0 => meta.kind = fast_str(r)?,
            _ => meta.display_role = fast_str(r)?,
        }
        Some(())
    });
    if read.is_some() {
        return Some(meta);
    }
    r.seek(start);
    r.skip_within(FAST_DEPTH).ok()?;
    Some(Meta::of(std::str::from_utf8(taken(r, start)).ok()))
}

impl Message<'_> {
    fn role(&self) -> Option<&str> {
        self.fields.as_ref().and_then(|f| f.role.get())
    }

    fn meta(&self) -> Option<&Meta<'_>> {
        self.fields.as_ref().map(|f| &f.meta)
    }

    /// Whether it is a compaction summary (any role).
    pub fn is_summary(&self) -> bool {
        self.meta().and_then(|m| m.kind.get()) == Some(SUMMARY_KIND)
    }

    /// The texts of its `text` blocks (or its string content), in order.
    fn texts(&self) -> Vec<&str> {
        match self.fields.as_ref().and_then(|f| f.content.as_ref()) {
            None => Vec::new(),
            Some(Content::Str(s)) => vec![s],
            Some(Content::Blocks(blocks)) => {
                blocks.iter().filter(|(k, _)| k.get() == Some("text")).filter_map(|(_, t)| t.get()).collect()
            }
        }
    }

    /// Whether the harness wrote it (tool results, injected notices, a
    /// message shown as system, status or error): none of its text is
    /// what the user typed. A compaction's folded turn (`kind`
    /// `compaction`) is the user's, with its notices.
    fn injected(&self) -> bool {
        let Some(meta) = self.meta() else { return false };
        if meta.kind.get().is_some_and(|k| INJECTED_KINDS.contains(&k)) {
            return true;
        }
        let shown = meta.display_role.get().map(|r| r.trim().to_ascii_lowercase());
        matches!(shown.as_deref(), Some("system" | "status" | "error")) && meta.kind.get() != Some(FOLDED_KIND)
    }

    /// A user message's pieces in order: what the user typed (as the SDK
    /// displays it) and, as summaries, the notices a compaction folded in
    /// (`<SYSTEM_NOTICE>`); nothing for a message the harness wrote.
    fn user_pieces(&self) -> Vec<(bool, String)> {
        if self.role() != Some("user") || self.is_summary() || self.injected() {
            return Vec::new();
        }
        let mut out: Vec<(bool, String)> = Vec::new();
        for text in self.texts() {
            if let Some(notice) = notice(text) {
                if !notice.is_empty() {
                    out.push((true, notice.to_owned()));
                }
                continue;
            }
            let shown = display_user_input(text);
            if shown.is_empty() || shown.starts_with("[TASK RESUMPTION]") || shown == ACT_CONTINUATION {
                continue;
            }
            match out.last_mut() {
                Some((false, typed)) => {
                    typed.push('\n');
                    typed.push_str(&shown);
                }
                _ => out.push((false, shown)),
            }
        }
        out
    }

    /// What the user typed in it, its pieces joined with `"\n"`.
    pub fn user_text(&self) -> String {
        let typed: Vec<String> = self.user_pieces().into_iter().filter(|(n, _)| !n).map(|(_, t)| t).collect();
        typed.join("\n")
    }

    /// The assistant's visible text: its text blocks (never reasoning,
    /// tool calls or media), each trimmed, joined with `"\n"`.
    pub fn assistant_text(&self) -> String {
        if self.role() != Some("assistant") {
            return String::new();
        }
        let texts: Vec<&str> = self.texts().into_iter().map(str::trim).filter(|t| !t.is_empty()).collect();
        texts.join("\n")
    }

    /// A summary's text as the model is sent it.
    fn summary_text(&self) -> String {
        self.texts().join("\n").trim().to_owned()
    }
}

/// A history parsed: its elements (an element that is not an object kept,
/// without fields, so that positions stay the file's), how many were not
/// messages, and whether the file was cut short.
pub struct Parsed<'a> {
    /// Every element read, in order.
    pub messages: Vec<Message<'a>>,
    /// Elements that are not a JSON object of the format.
    pub skipped: u64,
    /// Whether the file ended inside its history (read while rewritten).
    pub torn: bool,
}

/// Collects a JSON array's elements, each as its raw text, as they come:
/// what was read before an error stays collected. At the top (`true`), an
/// object is looked into for its `messages`.
struct Collect<'c, 'a>(&'c RefCell<Vec<&'a RawValue>>, bool);

impl<'de, 'c> DeserializeSeed<'de> for Collect<'c, 'de> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'c> Visitor<'de> for Collect<'c, 'de> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of messages, or an object holding `messages`")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while let Some(v) = seq.next_element::<&'de RawValue>()? {
            self.0.borrow_mut().push(v);
        }
        Ok(true)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        if !self.1 {
            return Err(serde::de::Error::custom("`messages` is not a list"));
        }
        let mut found = false;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "messages" && !found {
                found = map.next_value_seed(Collect(self.0, false))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Parses a messages file: an object whose `messages` is the history (or,
/// as older files and the SDK's reader allow, the history itself). A file
/// cut short gives the elements before the cut; `Err` says why a file is
/// not one.
///
/// A whole file of the usual shape is read in one pass (`fast_parse`);
/// any other is read by serde, element by element, with the same answer.
pub fn parse(bytes: &[u8]) -> Result<Parsed<'_>, String> {
    if let Some(messages) = fast_parse(bytes) {
        let skipped = messages.iter().filter(|m| m.fields.is_none()).count() as u64;
        return Ok(Parsed { messages, skipped, torn: false });
    }
    let collected = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let torn = match Collect(&collected, true).deserialize(&mut de) {
        Ok(true) => false,
        Ok(false) => return Err("an object without a `messages` list".into()),
        Err(e) if e.is_eof() => true,
        Err(e) => return Err(format!("not JSON of a messages file: {e}")),
    };
    let messages: Vec<Message<'_>> = collected.into_inner().into_iter().map(|raw| Message::new(raw.get())).collect();
    let skipped = messages.iter().filter(|m| m.fields.is_none()).count() as u64;
    Ok(Parsed { messages, skipped, torn })
}

/// A messages file read in one pass by the crate's validating reader: the
/// history's elements, each message's fields by the fast path (else by
/// serde from the element's text). `None` for a file that is not whole
/// and of the usual shape (torn, damaged, without `messages`, a key that
/// cannot be decoded, nesting past [`FAST_DEPTH`]), which serde reads.
fn fast_parse(bytes: &[u8]) -> Option<Vec<Message<'_>>> {
    let mut r = Reader::new(bytes);
    if r.peek()? == b'[' {
        return fast_list(&mut r);
    }
    if r.peek()? != b'{' || !r.enter_object().ok()? {
        return None;
    }
    let (mut first, mut found) = (true, None);
    while let Some(key) = r.next_key(&mut first).ok()? {
        if key.escaped && key.decode().is_err() {
            return None;
        }
        if found.is_none() && key.is("messages") {
            found = Some(fast_list(&mut r)?);
        } else {
            r.skip_within(FAST_DEPTH).ok()?;
        }
    }
    found
}

/// The list of messages at the reader, by the fast path.
fn fast_list<'a>(r: &mut Reader<'a>) -> Option<Vec<Message<'a>>> {
    if r.peek()? != b'[' || !r.enter_array().ok()? {
        return None;
    }
    let (mut out, mut first) = (Vec::new(), true);
    while r.next_element(&mut first).ok()? {
        let start = r.peek().map(|_| r.pos())?;
        let fields = if r.peek() == Some(b'{') { fast_fields(r) } else { None };
        let message = match fields {
            Some(fields) => Message { raw: taken(r, start), fields: Some(fields) },
            None => {
                r.seek(start);
                r.skip_within(FAST_DEPTH).ok()?;
                Message::new(std::str::from_utf8(taken(r, start)).ok()?)
            }
        };
        out.push(message);
    }
    Some(out)
}

/// A compaction sidecar (`<id>.compaction.json`) as the SDK validates it.
#[derive(Deserialize)]
struct StateJson<'a> {
    version: u64,
    #[allow(dead_code)]
    updated_at: String,
    source_message_count: u64,
    #[serde(default)]
    source_prefix_hash: Option<String>,
    #[serde(default)]
    source_last_message_key: Option<String>,
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
}

/// A compaction sidecar that holds: the compacted messages that replace
/// the first `count` messages of the history.
pub struct Compaction<'a> {
    /// How many history messages it replaces.
    pub count: usize,
    prefix_hash: Option<String>,
    last_key: Option<String>,
    /// The messages sent instead of them (a summary, then what was kept).
    pub messages: Vec<Message<'a>>,
}

/// Parses a compaction sidecar; `None` for one the SDK would not use
/// (not JSON, not version 1, a message that is not a user or assistant
/// message with a string or list content).
pub fn parse_compaction(bytes: &[u8]) -> Option<Compaction<'_>> {
    let state: StateJson<'_> = serde_json::from_slice(bytes).ok()?;
    let empty = |v: &Option<String>| v.as_deref() == Some("");
    if state.version != 1 || empty(&state.source_prefix_hash) || empty(&state.source_last_message_key) {
        return None;
    }
    let messages: Vec<Message<'_>> = state.messages.into_iter().map(|m| Message::new(m.get())).collect();
    let valid = messages.iter().all(|m| {
        matches!(m.role(), Some("user" | "assistant"))
            && m.fields.as_ref().and_then(|f| f.content_raw).is_some_and(|c| matches!(c.first(), Some(b'"' | b'[')))
    });
    valid.then(|| Compaction {
        count: usize::try_from(state.source_message_count).unwrap_or(usize::MAX),
        prefix_hash: state.source_prefix_hash,
        last_key: state.source_last_message_key,
        messages,
    })
}

/// The messages the model is sent: the compaction's messages then the
/// history after the prefix it replaces, when it still describes the
/// history (its prefix hash matches; for a sidecar without one, its last
/// message's key); else the whole history. With whether the compaction
/// was applied.
pub fn effective<'m, 'a>(
    history: &'m [Message<'a>],
    compaction: Option<&'m Compaction<'a>>,
) -> (Vec<&'m Message<'a>>, bool) {
    if let Some(c) = compaction.filter(|c| projects(c, history)) {
        return (c.messages.iter().chain(&history[c.count..]).collect(), true);
    }
    (history.iter().collect(), false)
}

fn projects(c: &Compaction<'_>, history: &[Message<'_>]) -> bool {
    if c.count > history.len() {
        return false;
    }
    match (&c.prefix_hash, &c.last_key) {
        (Some(hash), _) => prefix_hash(&history[..c.count]).as_deref() == Some(hash.as_str()),
        (None, Some(key)) if c.count > 0 => boundary_key(&history[c.count - 1]).as_deref() == Some(key.as_str()),
        _ => false,
    }
}

/// A message as the SDK hashes it (`JSON.parse` of its text, a user
/// message's texts as displayed); `None` where the SDK's code would throw.
fn normalized(m: &Message<'_>) -> Option<serde_json::Map<String, Value>> {
    let Value::Object(mut obj) = parse_js(std::str::from_utf8(m.raw).ok()?).ok()? else { return None };
    if obj.get("role").and_then(Value::as_str) == Some("user") {
        let content = match obj.get("content")? {
            Value::String(s) => Value::String(display_user_input(s)),
            Value::Array(parts) => {
                let mut out = Vec::with_capacity(parts.len());
                for part in parts {
                    let Value::Object(p) = part else {
                        // `part.type` of a string or number is undefined;
                        // of null it throws.
                        (!part.is_null()).then_some(())?;
                        out.push(part.clone());
                        continue;
                    };
                    out.push(Value::Object(normalized_part(p.clone())?));
                }
                Value::Array(out)
            }
            _ => return None,
        };
        obj.insert("content".into(), content);
    }
    Some(obj)
}

/// A part of a user message's content as the SDK hashes it: a text part's
/// text as displayed; `None` where the SDK's code would throw.
fn normalized_part(mut p: serde_json::Map<String, Value>) -> Option<serde_json::Map<String, Value>> {
    if p.get("type").and_then(Value::as_str) == Some("text") {
        let text = match p.get("text") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => display_user_input(s),
            Some(_) => return None,
        };
        p.insert("text".into(), Value::String(text));
    }
    Some(p)
}

/// The role of a normalized message, as the SDK's boundary check allows.
fn checked_role(obj: &serde_json::Map<String, Value>) -> Option<&str> {
    obj.get("role").and_then(Value::as_str).filter(|r| !r.contains(':'))
}

/// The SDK's `sourcePrefixHash` of `prefix`: SHA-256 over a version line,
/// the count, then each message's role, content, agent, session id,
/// metadata, model info and metrics as `JSON.stringify` writes them.
///
/// Each message's input is written from its text where that is already as
/// `JSON.stringify` writes it (`canon.rs`), else from its
/// value parsed as `JSON.parse` parses it: the same bytes either way. A
/// long prefix is hashed on a thread of its own while its inputs are
/// written, `CHUNK` bytes at a time.
pub fn prefix_hash(prefix: &[Message<'_>]) -> Option<String> {
    let mut hash = Sha256::new();
    hash.update(HASH_VERSION.as_bytes());
    hash.update(format!("{}\n", prefix.len()).as_bytes());
    let long = prefix.iter().map(|m| m.raw.len()).sum::<usize>() >= 4 * CHUNK;
    let hash = if long { hashed_beside(prefix, hash)? } else { hashed_here(prefix, hash)? };
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Some(format!("sha256:{hex}"))
}

/// How many bytes of hash input are written before they are hashed.
const CHUNK: usize = 1 << 20;

/// `hash` given the inputs of `prefix`, on this thread.
fn hashed_here(prefix: &[Message<'_>], mut hash: Sha256) -> Option<Sha256> {
    write_inputs(prefix, |chunk| {
        hash.update(&chunk);
        Some(chunk)
    })?;
    Some(hash)
}

/// `hash` given the inputs of `prefix`, hashed on a thread of its own while
/// this one writes them (on this thread when none can start).
fn hashed_beside(prefix: &[Message<'_>], hash: Sha256) -> Option<Sha256> {
    std::thread::scope(|scope| {
        let (full, to_hash) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
        let (hashed, empty) = std::sync::mpsc::channel::<Vec<u8>>();
        let start = hash.clone();
        let hasher = std::thread::Builder::new().spawn_scoped(scope, move || {
            let mut hash = start;
            for chunk in to_hash {
                hash.update(&chunk);
                // Its room back for the next (none when writing stopped).
                let _ = hashed.send(chunk);
            }
            hash
        });
        let Ok(hasher) = hasher else { return hashed_here(prefix, hash) };
        let written = write_inputs(prefix, |chunk| {
            full.send(chunk).ok()?;
            Some(empty.try_recv().unwrap_or_default())
        });
        drop(full);
        let hash = hasher.join().ok()?;
        written.map(|()| hash)
    })
}

/// Writes the inputs of `prefix` (each followed by `\n`) and gives them to
/// `hashed` [`CHUNK`] bytes or more at a time, which gives back room for
/// the next; `None` when a message has none (the SDK's code would throw).
fn write_inputs(prefix: &[Message<'_>], mut hashed: impl FnMut(Vec<u8>) -> Option<Vec<u8>>) -> Option<()> {
    let (mut chunk, mut scratch) = (Vec::new(), Vec::new());
    for m in prefix {
        if !super::canon::hash_input(m.raw, &mut chunk, &mut scratch, text_part_input) {
            chunk.extend_from_slice(hash_input(m)?.as_bytes());
        }
        chunk.push(b'\n');
        if chunk.len() >= CHUNK {
            chunk = hashed(chunk)?;
            chunk.clear();
        }
    }
    hashed(chunk).map(drop)
}

/// The SDK's hash input of a message (`sourceMessageHashInput`, as
/// `JSON.stringify` writes it), from its value; `None` where the SDK's code
/// would throw.
fn hash_input(m: &Message<'_>) -> Option<String> {
    let obj = normalized(m)?;
    checked_role(&obj)?;
    let field = |k: &str| obj.get(k).cloned().unwrap_or(Value::Null);
    let pair = |k: &str| Value::Array(vec![Value::String(k.into()), field(k)]);
    let input =
        Value::Array(["role", "content", "agent", "sessionId", "metadata", "modelInfo", "metrics"].map(pair).to_vec());
    Some(stringify(&input))
}

/// A text part of a user message's content (its JSON text) as the hash
/// input writes it.
fn text_part_input(part: &str) -> Option<String> {
    let Value::Object(p) = parse_js(part).ok()? else { return None };
    Some(stringify(&Value::Object(normalized_part(p)?)))
}

/// The SDK's `messageBoundaryKey` (sidecars written without a hash).
fn boundary_key(m: &Message<'_>) -> Option<String> {
    let obj = normalized(m)?;
    if let Some(id) = obj.get("id").and_then(Value::as_str).map(str::trim).filter(|i| !i.is_empty()) {
        return Some(format!("id:{id}"));
    }
    let role = checked_role(&obj)?;
    if let Some(ts) = obj.get("ts").filter(|t| t.is_number()) {
        return Some(format!("ts:{role}:{}", stringify(ts)));
    }
    // `JSON.stringify(undefined)` is `undefined`, which the template writes.
    let content = obj.get("content").map_or_else(|| "undefined".to_owned(), stringify);
    Some(format!("content:{role}:{content}"))
}

/// The conversation of the messages sent: a summary as a checkpoint, what
/// the user typed, the assistant's text.
pub fn items(messages: &[&Message<'_>]) -> Vec<ConversationItem> {
    let mut out = Vec::new();
    for m in messages {
        if m.is_summary() {
            let text = m.summary_text();
            if !text.is_empty() {
                out.push(ConversationItem::checkpoint(text));
            }
            continue;
        }
        match m.role() {
            Some("user") => {
                for (summary, text) in m.user_pieces() {
                    out.push(if summary {
                        ConversationItem::checkpoint(text)
                    } else {
                        ConversationItem::new(Role::User, text)
                    });
                }
            }
            Some("assistant") => {
                let text = m.assistant_text();
                if !text.is_empty() {
                    out.push(ConversationItem::new(Role::Assistant, text));
                }
            }
            _ => {}
        }
    }
    out
}

/// The first prompt the user typed in the whole history, as a title.
pub fn first_user_title(history: &[Message<'_>]) -> Option<String> {
    history.iter().find_map(|m| title_from_text(&m.user_text()))
}

/// JavaScript's `String.prototype.trim` (Rust's `trim` and the BOM).
fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("a valid pattern"))
}

/// The SDK's `formatDisplayUserInput`: a user text without the wrappers
/// the CLI adds (`<user_input mode="…">`, `<user_command slash="…">`, the
/// latter shown as `/<slash> …`) and without `<mode_notice>` elements.
pub fn display_user_input(input: &str) -> String {
    plain_user_input(input).map_or_else(|| display_by_patterns(input), str::to_owned)
}

/// [`display_user_input`] by the SDK's regular expressions.
fn display_by_patterns(input: &str) -> String {
    static COMMAND: OnceLock<Regex> = OnceLock::new();
    static SLASH: OnceLock<Regex> = OnceLock::new();
    let normalized = strip_mode_notices(&normalize_user_input(input));
    let trimmed = js_trim(input);
    let command = regex(&COMMAND, r"(?i)^<user_command(?-u:\b)([^>]*)>([\s\S]*?)</user_command>$").captures(trimmed);
    let slash = command.as_ref().and_then(|c| {
        let attrs = c.get(1).map_or("", |m| m.as_str());
        let s = regex(&SLASH, r#"(?i)slash="([^"]+)""#).captures(attrs)?.get(1)?.as_str();
        Some(js_trim(s)).filter(|s| !s.is_empty())
    });
    let Some(slash) = slash else { return normalized };
    if slash.eq_ignore_ascii_case("team") {
        const PREFIX: &str = "spawn a team of agents for the following task:";
        let lower = normalized.to_lowercase();
        let stripped = if lower.starts_with(PREFIX) && normalized.is_char_boundary(PREFIX.len()) {
            js_trim(&normalized[PREFIX.len()..])
        } else {
            normalized.as_str()
        };
        return if stripped.is_empty() { "/team".into() } else { format!("/team {stripped}") };
    }
    if normalized.is_empty() {
        format!("/{slash}")
    } else {
        format!("/{slash} {normalized}")
    }
}

/// What [`display_user_input`] gives for the usual texts, found without its
/// regular expressions: a text that holds none of the tags it looks for
/// (and does not start with `<u`, which a case-insensitive
/// `<user_command` could match), trimmed; a text wrapped whole in one
/// `<user_input …>` and holding no other tag it looks for, its inside
/// trimmed. `None` for anything else.
fn plain_user_input(input: &str) -> Option<&str> {
    const OPEN: &str = "<user_input";
    const CLOSE: &str = "</user_input>";
    let has = |text: &str, tag: &str| memchr::memmem::find(text.as_bytes(), tag.as_bytes()).is_some();
    let other_tags = |text: &str| has(text, "<user_command") || has(text, "<mode_notice>");
    let t = js_trim(input);
    let Some(rest) = t.strip_prefix(OPEN) else {
        let command_like = t.starts_with("<u") || t.starts_with("<U");
        return (!command_like && !has(t, OPEN) && !other_tags(t)).then_some(t);
    };
    // `<user_input` then a byte that ends the word, its attributes to the
    // first `>`, and the text to the first `</user_input>`, which ends it.
    (!rest.as_bytes().first().is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')).then_some(())?;
    let body = &rest[rest.find('>')? + 1..];
    let end = memchr::memmem::find(body.as_bytes(), CLOSE.as_bytes())?;
    (end + CLOSE.len() == body.len()).then_some(())?;
    let body = &body[..end];
    (!has(body, OPEN) && !other_tags(body)).then(|| js_trim(body))
}

/// The SDK's `normalizeUserInput`: the `<user_input>` and
/// `<user_command>` wrappers removed (their contents kept).
fn normalize_user_input(input: &str) -> String {
    static ELEMENT: [OnceLock<Regex>; 2] = [OnceLock::new(), OnceLock::new()];
    static OPEN: [OnceLock<Regex>; 2] = [OnceLock::new(), OnceLock::new()];
    if js_trim(input).is_empty() {
        return String::new();
    }
    let mut next = js_trim(input).to_owned();
    for (i, tag) in ["user_input", "user_command"].into_iter().enumerate() {
        let element = regex(&ELEMENT[i], &format!(r"<{tag}(?-u:\b)[^>]*>([\s\S]*?)</{tag}>"));
        let extracted = element.replace_all(&next, "$1");
        next = if extracted != next {
            js_trim(&extracted).to_owned()
        } else {
            js_trim(&regex(&OPEN[i], &format!("<{tag}[^>]*>")).replace_all(&next, "")).to_owned()
        };
    }
    next
}

/// The SDK's `stripModeNotices`: `<mode_notice>…</mode_notice>` elements
/// removed.
fn strip_mode_notices(input: &str) -> String {
    const OPEN: &str = "<mode_notice>";
    const CLOSE: &str = "</mode_notice>";
    if js_trim(input).is_empty() {
        return String::new();
    }
    let mut result = input.to_owned();
    let mut start = result.find(OPEN);
    while let Some(s) = start {
        let Some(end) = result[s + OPEN.len()..].find(CLOSE).map(|e| s + OPEN.len() + e) else { break };
        result.replace_range(s..end + CLOSE.len(), "");
        start = result[s..].find(OPEN).map(|n| s + n);
    }
    js_trim(&result).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash input of `raw` by the text path, when it takes it, and by
    /// the value path.
    fn both_ways(raw: &str) -> (Option<String>, Option<String>) {
        let value: &RawValue = serde_json::from_str(raw).unwrap();
        let exact = hash_input(&Message::new(value.get()));
        let mut out = Vec::new();
        let fast = super::super::canon::hash_input(raw.as_bytes(), &mut out, &mut Vec::new(), text_part_input)
            .then(|| String::from_utf8(out).unwrap());
        (fast, exact)
    }

    /// Where the text path writes a message's hash input, it writes what
    /// the value path writes; it takes the usual messages (indented as the
    /// SDK writes them, numbers of its metrics, tool output with quotes,
    /// tags and control characters) and leaves what it cannot be sure of.
    #[test]
    fn the_hash_input_written_from_the_text_is_the_one_from_the_value() {
        let usual = [
            r#"{"id": "a1", "role": "assistant", "ts": 1767000000000, "content": [{"type": "thinking", "thinking": "hm \"q\" <b>"}, {"type": "text", "text": "line\n\ttab \u001f é ☃ \\ /"}, {"type": "tool_use", "id": "t1", "name": "read_files", "input": {"paths": ["src/lib.rs"], "n": -12, "deep": [[[{}]], []]}}], "modelInfo": {"id": "m", "provider": "cline"}, "metrics": {"inputTokens": 1000, "cost": 0.48953100000000005, "tiny": 1e-7, "t": true, "f": false, "z": null, "zero": 0}}"#,
            r#"{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "3 KB of \"output\"\r\n"}, {"type": "text", "text": "<user_input mode=\"act\">go on</user_input>"}], "agent": "lead", "sessionId": "s1", "metadata": {"kind": "x"}}"#,
            r#"{"role": "user", "content": [], "metadata": null}"#,
            r#"{"role": "assistant", "content": "plain"}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"compact"}]}"#,
        ];
        for raw in usual {
            let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(raw).unwrap()).unwrap();
            for text in [raw.to_owned(), pretty.replace("  ", "\t")] {
                let (fast, exact) = both_ways(&text);
                assert!(fast.is_some(), "the text path takes {text}");
                assert_eq!(fast, exact, "{text}");
            }
        }
        let unsure = [
            r#"{"role": "assistant", "content": "a\/b"}"#,
            r#"{"role": "assistant", "content": "\u0041"}"#,
            r#"{"role": "assistant", "content": "\u001F"}"#,
            r#"{"role": "assistant", "content": "\u000a"}"#,
            r#"{"role": "assistant", "content": "\ud83d\ude00"}"#,
            r#"{"role": "assistant", "content": [1e21, 1E5, 1.0, -0, 12345678901234567890, 0.1e1, 100]}"#,
            r#"{"role": "assistant", "content": {"b": 1, "0": 2, "10": 3}}"#,
            r#"{"role": "assistant", "content": {"a": 1, "a": 2}}"#,
            r#"{"role": "assistant", "role": "user", "content": []}"#,
            r#"{"role": "a:b", "content": []}"#,
            r#"{"role": 5, "content": []}"#,
            r#"{"role": "user", "content": "<user_input mode=\"act\">typed</user_input>"}"#,
            r#"{"role": "user"}"#,
            r#"{"role": "user", "content": [{"type": "text", "text": 5}]}"#,
            r#"{"role": "user", "content": [null, "s"]}"#,
            r#"{"r\u006fle": "assistant", "content": []}"#,
        ];
        for raw in unsure {
            let (fast, exact) = both_ways(raw);
            if let Some(fast) = fast {
                assert_eq!(Some(fast), exact, "{raw}");
            }
        }
        let deep = format!(r#"{{"role": "assistant", "content": {}1{}}}"#, "[".repeat(200), "]".repeat(200));
        let (fast, exact) = both_ways(&deep);
        assert_eq!((fast, exact), (None, None), "nesting past the parser's limit: not hashed either way");
        // Random values, written compact and indented: the same input.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..300 {
            let content = random_value(&mut seed, 0);
            let role = if next(&mut seed) % 3 == 0 { "user" } else { "assistant" };
            let content = match (role, content) {
                ("user", Value::Array(parts)) => Value::Array(parts),
                ("user", other) => Value::Array(vec![serde_json::json!({"type": "text", "text": "x"}), other]),
                (_, other) => other,
            };
            let message = serde_json::json!({"role": role, "content": content, "metrics": random_value(&mut seed, 2)});
            for text in [message.to_string(), serde_json::to_string_pretty(&message).unwrap()] {
                let (fast, exact) = both_ways(&text);
                if let Some(fast) = fast {
                    assert_eq!(Some(fast), exact, "{text}");
                }
            }
        }
    }

    fn next(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    fn random_value(seed: &mut u64, depth: usize) -> Value {
        let strings = ["", "a", "q\"u", "b\\s", "c\u{1}d", "\n\t\r\u{8}\u{c}", "é☃😀", "</tag>", "0", "10", "k"];
        match next(seed) % if depth > 3 { 5 } else { 8 } {
            0 => Value::Null,
            1 => Value::Bool(next(seed) % 2 == 0),
            2 => {
                let numbers = [0.0, -1.0, 3.5, 0.1, 1e21, 1e-7, 123_456_789.0, 0.489_531_000_000_000_05, -0.0];
                serde_json::json!(numbers[(next(seed) % numbers.len() as u64) as usize])
            }
            3 => Value::from(next(seed) % 100_000),
            4 => Value::String(strings[(next(seed) % strings.len() as u64) as usize].to_owned()),
            5 | 6 => {
                let n = next(seed) % 4;
                let mut map = serde_json::Map::new();
                for _ in 0..n {
                    let key = strings[(next(seed) % strings.len() as u64) as usize];
                    map.insert(key.to_owned(), random_value(seed, depth + 1));
                }
                if next(seed) % 4 == 0 {
                    map.insert("type".into(), Value::String("text".into()));
                    map.insert("text".into(), Value::String("<user_input mode=\"plan\"> hi </user_input>".into()));
                }
                Value::Object(map)
            }
            _ => Value::Array((0..next(seed) % 4).map(|_| random_value(seed, depth + 1)).collect()),
        }
    }

    #[test]
    fn user_input_is_shown_as_the_sdk_shows_it() {
        assert_eq!(display_user_input("<user_input mode=\"act\">fix the bug</user_input>"), "fix the bug");
        assert_eq!(
            display_user_input(
                "<mode_notice>The user switched from plan mode to act mode before sending this message.</mode_notice>\
                 <user_input mode=\"act\"> go </user_input>"
            ),
            "go"
        );
        assert_eq!(
            display_user_input("<user_command slash=\"review\">look at it</user_command>"),
            "/review look at it"
        );
        assert_eq!(
            display_user_input(
                "<user_command slash=\"team\">Spawn a team of agents for the following task: ship</user_command>"
            ),
            "/team ship"
        );
        assert_eq!(display_user_input("  plain  "), "plain");
        assert_eq!(display_user_input("<user_input mode=\"plan\">unclosed"), "unclosed");
        assert_eq!(display_user_input("   "), "");
    }

    /// Where the direct scan shows a user's text, it shows what the SDK's
    /// regular expressions show; it takes the plain and the wrapped texts.
    #[test]
    fn the_direct_scan_shows_user_input_as_the_patterns_do() {
        let taken = [
            "plain",
            "  \u{feff} padded\n ",
            "",
            "a <tag> and </user_input> in it",
            "<user_input mode=\"act\">fix <b>it</b></user_input>",
            " <user_input>  spaced  </user_input>\n",
            "<user_input mode=\"plan\"></user_input>",
            "<user_input\u{e9}>accent</user_input>",
            "<p>not the user's</p>",
        ];
        for input in taken {
            assert_eq!(plain_user_input(input).map(str::to_owned), Some(display_by_patterns(input)), "{input:?}");
        }
        let left = [
            "<user_inputs>x</user_inputs>",
            "<user_input mode=\"act\">a</user_input> b",
            "<user_input>a</user_input><user_input>b</user_input>",
            "<user_input>a <mode_notice>n</mode_notice></user_input>",
            "<user_input>unclosed",
            "<USER_COMMAND slash=\"x\">y</USER_COMMAND>",
            "<u\u{17f}er_command slash=\"x\">y</u\u{17f}er_command>",
            "say <user_command slash=\"x\">y</user_command>",
            "<mode_notice>n</mode_notice> go",
            "<user_input",
        ];
        for input in left {
            assert_eq!(plain_user_input(input), None, "{input:?}");
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let pieces =
            ["<user_input", ">", "</user_input>", " mode=\"act\"", "<", "x", " ", "<mode_notice>", "\u{feff}", "_"];
        for _ in 0..2000 {
            let n = next(&mut seed) % 7;
            let input: String = (0..n).map(|_| pieces[(next(&mut seed) % pieces.len() as u64) as usize]).collect();
            if let Some(shown) = plain_user_input(&input) {
                assert_eq!(shown, display_by_patterns(&input), "{input:?}");
            }
        }
    }

    #[test]
    fn a_torn_file_gives_the_messages_before_the_cut() {
        let full =
            br#"{"version":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"x":1}"#;
        let p = parse(full).unwrap();
        assert_eq!((p.messages.len(), p.torn), (2, false));
        let p = parse(&full[..60]).unwrap();
        assert_eq!((p.messages.len(), p.torn), (1, true));
        assert!(parse(br#"{"version":1}"#).is_err());
        assert!(parse(br#"{"messages":[}"#).is_err());
        let p = parse(br#"[1,{"role":"user","content":"a"}]"#).unwrap();
        assert_eq!((p.messages.len(), p.skipped), (2, 1));
    }
}
