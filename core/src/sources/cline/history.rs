//! One task's `api_conversation_history.json` replayed into its current
//! model-visible conversation (the rules are in the parent module's docs).

use std::borrow::Cow;

use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::json::bytes::find2;
use crate::json::read::Reader;
use crate::projection::Role;
use crate::sources::foreign::title_from_text;
use crate::sources::lenient::{Content, LBool, LStr};

use super::fast::{fast_bool, fast_object, fast_raw, fast_skip, fast_str};

/// One content block of a message: its type, its text and (for a tool
/// result) its own content, both as written, still escaped (the JSON text
/// of the value): most of a history is tool output, which a read only looks
/// for a user tag in (without unescaping it, and without building a tool
/// result's blocks unless one is there).
#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "raw")]
    text: Option<&'a [u8]>,
    #[serde(borrow, default, deserialize_with = "raw")]
    content: Option<&'a [u8]>,
}

/// A value's JSON text as written (`None` for `null`).
fn raw<'de: 'a, 'a, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'a [u8]>, D::Error> {
    let value = Option::<&'de serde_json::value::RawValue>::deserialize(d)?;
    Ok(value.map(|v| v.get().as_bytes()))
}

/// A message's content: a string, or blocks.
#[derive(Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
enum Body<'a> {
    #[default]
    None,
    Str(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
}

struct BodyVisitor;

impl<'de> serde::de::Visitor<'de> for BodyVisitor {
    type Value = Body<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string or a list of blocks")
    }
    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Body::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Body::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut blocks = Vec::new();
        while let Some(b) = seq.next_element::<Block<'de>>()? {
            blocks.push(b);
        }
        Ok(Body::Blocks(blocks))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
        Ok(Body::None)
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Body::None)
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Body::None)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Body::None)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Body::None)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Body::None)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Body<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BodyVisitor)
    }
}

/// One element of the history (an Anthropic `MessageParam` with the
/// agent's own tags); every field lenient.
#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
pub struct RawMessage<'a> {
    #[serde(borrow, default)]
    role: LStr<'a>,
    #[serde(borrow, default)]
    content: Body<'a>,
    #[serde(rename = "isSummary", default)]
    is_summary: LBool,
    #[serde(rename = "condenseId", borrow, default)]
    condense_id: LStr<'a>,
    #[serde(rename = "condenseParent", borrow, default)]
    condense_parent: LStr<'a>,
    #[serde(rename = "isTruncationMarker", default)]
    is_truncation_marker: LBool,
    #[serde(rename = "truncationId", borrow, default)]
    truncation_id: LStr<'a>,
    #[serde(rename = "truncationParent", borrow, default)]
    truncation_parent: LStr<'a>,
}

/// What a history parse gives: the messages read, and whether the array
/// ended early (a torn or damaged tail, not read).
pub struct Parsed<'a> {
    /// The elements read, in order (one that is not an object as an empty
    /// message).
    pub messages: Vec<RawMessage<'a>>,
    /// Elements that were not a JSON object (skipped, counted).
    pub skipped: u64,
    /// The array did not close: the file ends, or is damaged, after the
    /// last element read.
    pub torn: bool,
}

fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while b.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// Parses a JSON array element by element, so that a file cut short (a
/// writer rewriting it in place) gives the elements before the cut.
/// `None` when the file does not start as an array.
pub fn parse(bytes: &[u8]) -> Option<Parsed<'_>> {
    let mut at = skip_ws(bytes, 0);
    if bytes.get(at) != Some(&b'[') {
        return None;
    }
    at += 1;
    let mut out = Parsed { messages: Vec::new(), skipped: 0, torn: false };
    let mut reader = Reader::new(bytes);
    loop {
        at = skip_ws(bytes, at);
        match bytes.get(at) {
            Some(b']') => return Some(out),
            None => {
                out.torn = true;
                return Some(out);
            }
            _ => {}
        }
        // An object parses as a message in one pass, by the crate's reader
        // when it is of the usual shape, else by serde; anything else (or
        // a torn element) is looked at again to tell where it ends.
        if bytes[at] == b'{' {
            if let Some(m) = fast_message(&mut reader, at) {
                out.messages.push(m);
                at = skip_ws(bytes, reader.pos());
                match bytes.get(at) {
                    Some(b',') => at += 1,
                    Some(b']') => return Some(out),
                    _ => {
                        out.torn = true;
                        return Some(out);
                    }
                }
                continue;
            }
        }
        let mut stream = serde_json::Deserializer::from_slice(&bytes[at..]).into_iter::<RawMessage<'_>>();
        let end = match stream.next() {
            Some(Ok(m)) if bytes[at] == b'{' => {
                out.messages.push(m);
                at + stream.byte_offset()
            }
            _ => {
                let mut any = serde_json::Deserializer::from_slice(&bytes[at..]).into_iter::<serde::de::IgnoredAny>();
                match any.next() {
                    Some(Ok(_)) => {
                        // Kept as an empty place, so that positions (Cline's
                        // deleted range) stay those of the file.
                        out.messages.push(RawMessage::default());
                        out.skipped += 1;
                        at + any.byte_offset()
                    }
                    _ => {
                        out.torn = true;
                        return Some(out);
                    }
                }
            }
        };
        at = skip_ws(bytes, end);
        match bytes.get(at) {
            Some(b',') => at += 1,
            Some(b']') => return Some(out),
            _ => {
                out.torn = true;
                return Some(out);
            }
        }
    }
}

/// The message object at `at`, read by the crate's validating reader
/// ([`Reader`], strings classified 16 bytes at a time) into the same
/// message serde builds from it, the reader left after it. `None` when
/// anything in it is outside the shape read here exactly, for serde to read
/// by its own rules: a syntax error or torn text, a block that is not an
/// object, a field given twice (serde refuses the message), a number
/// where a string, flag or content goes (serde checks its range), a key
/// or a string in those places that cannot be decoded, invalid UTF-8
/// anywhere (serde does not check what it skips), or nesting deeper than
/// [`FAST_DEPTH`](super::fast::FAST_DEPTH).
fn fast_message<'a>(r: &mut Reader<'a>, at: usize) -> Option<RawMessage<'a>> {
    r.seek(at);
    let mut m = RawMessage::default();
    let names: [&[u8]; 8] = [
        b"role",
        b"content",
        b"isSummary",
        b"condenseId",
        b"condenseParent",
        b"isTruncationMarker",
        b"truncationId",
        b"truncationParent",
    ];
    fast_object(r, &names, |r, field| {
        match field {
            0 => m.role = fast_str(r)?,
            1 => m.content = fast_body(r)?,
            2 => m.is_summary = fast_bool(r)?,
            3 => m.condense_id = fast_str(r)?,
            4 => m.condense_parent = fast_str(r)?,
            5 => m.is_truncation_marker = fast_bool(r)?,
            6 => m.truncation_id = fast_str(r)?,
            _ => m.truncation_parent = fast_str(r)?,
        }
        Some(())
    })?;
    Some(m)
}

/// [`Body`] by the fast path.
fn fast_body<'a>(r: &mut Reader<'a>) -> Option<Body<'a>> {
    match r.peek()? {
        b'"' => fast_str(r).map(|s| s.0.map_or(Body::None, Body::Str)),
        b'[' => {
            r.enter_array().ok()?;
            let mut blocks = Vec::new();
            let mut first = true;
            while r.next_element(&mut first).ok()? {
                blocks.push(fast_block(r)?);
            }
            Some(Body::Blocks(blocks))
        }
        _ => fast_skip(r).map(|()| Body::None),
    }
}

/// [`Block`] by the fast path.
fn fast_block<'a>(r: &mut Reader<'a>) -> Option<Block<'a>> {
    let mut b = Block::default();
    fast_object(r, &[b"type", b"text", b"content"], |r, field| {
        match field {
            0 => b.kind = fast_str(r)?,
            1 => b.text = fast_raw(r)?,
            _ => b.content = fast_raw(r)?,
        }
        Some(())
    })?;
    Some(b)
}

impl Block<'_> {
    /// The text, unescaped (`None` when it is not a string).
    fn text(&self) -> Option<Cow<'_, str>> {
        let raw = self.text?;
        let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        if memchr::memchr(b'\\', inner).is_none() {
            return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
        }
        serde_json::from_slice::<String>(raw).ok().map(Cow::Owned)
    }

    /// The text, when it may hold a user tag (one is written without
    /// escapes, so the raw text must hold its `<…>` as is).
    fn user_text(&self) -> Option<Cow<'_, str>> {
        opens_user_tag(self.text?).then(|| self.text()).flatten()
    }

    /// A tool result's content (a string, or blocks), when it may hold a
    /// user tag (as for [`user_text`](Self::user_text)); built only then.
    fn user_content(&self) -> Option<Content<'_>> {
        let raw = self.content?;
        opens_user_tag(raw).then(|| serde_json::from_slice(raw).ok()).flatten()
    }

    /// The text with its XML tool calls and reasoning removed
    /// ([`visible_assistant_text`]; `None` when it is not a string). The
    /// calls are cut out of the text as written, and only what is kept is
    /// unescaped, when no escape in it can stand for a byte of a tag (none
    /// is `\u` or `\/`; a tag's `<`, name and `>` are then the same bytes
    /// escaped or not); else the whole text is unescaped first.
    fn visible_text(&self) -> Option<String> {
        let raw = self.text?;
        let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        if !two_byte_escapes_only(inner) {
            return self.text().map(|t| visible_assistant_text(&t));
        }
        let inner = std::str::from_utf8(inner).ok()?;
        let mut out = String::new();
        let mut shown = String::new();
        cut_tool_calls(inner, |piece, is_shown| {
            if is_shown {
                shown.clear();
                unescape_short(&mut shown, piece);
                out.push_str(shown.trim());
            } else {
                unescape_short(&mut out, piece);
            }
        });
        Some(trimmed(out))
    }
}

/// Whether every escape of the string literal body `inner` is a two-byte
/// one other than `\/` (so none stands for a `<`, `>`, `/` or a letter).
fn two_byte_escapes_only(inner: &[u8]) -> bool {
    let mut at = 0;
    while let Some(p) = find2(&inner[at..], b'\\', b'\\') {
        match inner.get(at + p + 1) {
            Some(b'u' | b'/') | None => return false,
            Some(_) => at += p + 2,
        }
    }
    true
}

/// Appends the string literal body `piece`, whose escapes are all two-byte
/// ones ([`two_byte_escapes_only`]), unescaped.
fn unescape_short(out: &mut String, piece: &str) {
    let mut rest = piece;
    while let Some(p) = find2(rest.as_bytes(), b'\\', b'\\') {
        out.push_str(&rest[..p]);
        out.push(match rest.as_bytes().get(p + 1) {
            Some(b'n') => '\n',
            Some(b't') => '\t',
            Some(b'r') => '\r',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(&c) => char::from(c),
            None => return,
        });
        rest = rest.get(p + 2..).unwrap_or_default();
    }
    out.push_str(rest);
}

/// `s` without its leading and trailing whitespace, in place.
fn trimmed(mut s: String) -> String {
    s.truncate(s.trim_end().len());
    let lead = s.len() - s.trim_start().len();
    s.drain(..lead);
    s
}

/// The tags Cline and Roo Code wrap what the user typed in.
const USER_TAGS: [&str; 4] = ["task", "feedback", "answer", "user_message"];

/// Whether `text` holds the opening of a user tag (`<task>`, …): one pass,
/// each `<` found by [`find2`] (texts hold one every few dozen bytes, where
/// an inline loop beats a call into `memchr`) and the name after it
/// compared.
fn opens_user_tag(text: &[u8]) -> bool {
    let mut at = 0;
    while let Some(lt) = find2(&text[at..], b'<', b'<') {
        let after = &text[at + lt + 1..];
        if USER_TAGS.iter().any(|t| after.starts_with(t.as_bytes()) && after.get(t.len()) == Some(&b'>')) {
            return true;
        }
        at += lt + 1;
    }
    false
}

/// The inner texts of `<tag>…</tag>` for the user tags, in order.
fn user_tagged(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        let next =
            USER_TAGS.iter().filter_map(|t| rest.find(&format!("<{t}>")).map(|at| (at, *t))).min_by_key(|(at, _)| *at);
        let Some((at, tag)) = next else { return out };
        let inner = &rest[at + tag.len() + 2..];
        let close = format!("</{tag}>");
        match inner.find(&close) {
            Some(end) => {
                out.push(inner[..end].trim());
                rest = &inner[end + close.len()..];
            }
            None => {
                out.push(inner.trim());
                return out;
            }
        }
    }
}

/// The typed text of a user message: the inner texts of the user tags,
/// in its text blocks and its tool results (feedback on a tool); nothing
/// else (tool output, environment details and notices are the harness's).
fn user_text(m: &RawMessage<'_>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut take = |t: &str| out.extend(user_tagged(t).into_iter().filter(|s| !s.is_empty()).map(str::to_owned));
    match &m.content {
        Body::None => {}
        Body::Str(s) => take(s),
        Body::Blocks(blocks) => {
            for b in blocks {
                match b.kind.get() {
                    Some("text") => {
                        if let Some(t) = b.user_text() {
                            take(&t);
                        }
                    }
                    // Only what the user typed in answer to a tool (its
                    // tags); the result itself is tool output.
                    Some("tool_result") => {
                        if let Some(content) = b.user_content() {
                            content.texts(&["text"]).for_each(&mut take);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    out.join("\n")
}

/// The tool calls Cline and Roo Code write as XML in an assistant's text,
/// and their reasoning tag: removed from the visible text.
const XML_TOOLS: [&str; 31] = [
    "thinking",
    "read_file",
    "write_to_file",
    "replace_in_file",
    "apply_diff",
    "insert_content",
    "search_and_replace",
    "execute_command",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "codebase_search",
    "browser_action",
    "use_mcp_tool",
    "access_mcp_resource",
    "new_task",
    "switch_mode",
    "fetch_instructions",
    "update_todo_list",
    "new_rule",
    "report_bug",
    "condense",
    "summarize_task",
    "load_mcp_documentation",
    "web_fetch",
    "web_search",
    "generate_image",
    "run_slash_command",
    "attempt_completion",
    "ask_followup_question",
    "plan_mode_respond",
];

/// The tool (or reasoning) tag `after` starts with, closed by its `>`
/// (`after` is what follows a `<`): the name is read up to the first byte
/// that cannot be in one, then looked up, rather than every tag compared.
fn xml_tool(after: &str) -> Option<&'static str> {
    let len = after.bytes().position(|b| !(b.is_ascii_lowercase() || b == b'_')).unwrap_or(after.len());
    if after.as_bytes().get(len) != Some(&b'>') {
        return None;
    }
    let name = &after[..len];
    XML_TOOLS.iter().copied().find(|t| *t == name)
}

/// The tools whose one parameter is what the user reads: the text shown.
fn shown_part(tool: &str) -> Option<&'static str> {
    match tool {
        "attempt_completion" => Some("result"),
        "ask_followup_question" => Some("question"),
        "plan_mode_respond" => Some("response"),
        _ => None,
    }
}

/// An assistant text with its XML tool calls and reasoning removed (a
/// completion's result, a question and a plan-mode response kept as text).
/// A call left open (the reply was cut) is removed to the end.
pub fn visible_assistant_text(text: &str) -> String {
    let mut out = String::new();
    cut_tool_calls(text, |piece, shown| out.push_str(if shown { piece.trim() } else { piece }));
    trimmed(out)
}

/// The rule of [`visible_assistant_text`]: gives the pieces of `text` kept,
/// in order, each with whether it is the shown part of a tool call (which
/// is trimmed on its own). A piece starts and ends at a `<` or after a
/// `>`, never inside a JSON escape of the text as written.
fn cut_tool_calls<'t>(text: &'t str, mut keep: impl FnMut(&'t str, bool)) {
    let mut rest = text;
    while let Some(lt) = find2(rest.as_bytes(), b'<', b'<') {
        let after = &rest[lt + 1..];
        let tool = xml_tool(after);
        let Some(tool) = tool else {
            keep(&rest[..=lt], false);
            rest = after;
            continue;
        };
        keep(&rest[..lt], false);
        let inner_start = &after[tool.len() + 1..];
        let close = format!("</{tool}>");
        let (inner, tail) = match memchr::memmem::find(inner_start.as_bytes(), close.as_bytes()) {
            Some(end) => (&inner_start[..end], &inner_start[end + close.len()..]),
            None => (inner_start, ""),
        };
        if let Some(part) = shown_part(tool) {
            let (open, close) = (format!("<{part}>"), format!("</{part}>"));
            if let Some(s) = inner.find(&open) {
                let body = &inner[s + open.len()..];
                keep(body.find(&close).map_or(body, |e| &body[..e]), true);
            }
        }
        rest = tail;
    }
    keep(rest, false);
}

/// The visible text of an assistant message: its text blocks (never
/// reasoning or tool use), each without XML tool calls, joined with `"\n"`.
fn assistant_text(m: &RawMessage<'_>) -> String {
    let texts: Vec<String> = match &m.content {
        Body::None => Vec::new(),
        Body::Str(s) => vec![visible_assistant_text(s)],
        Body::Blocks(blocks) => {
            blocks.iter().filter(|b| b.kind.get() == Some("text")).filter_map(Block::visible_text).collect()
        }
    };
    texts.into_iter().filter(|t| !t.is_empty()).collect::<Vec<_>>().join("\n")
}

/// The whole text of a summary message (any role), its text blocks joined.
fn summary_text(m: &RawMessage<'_>) -> String {
    match &m.content {
        Body::None => String::new(),
        Body::Str(s) => s.trim().to_owned(),
        Body::Blocks(blocks) => {
            let texts: Vec<Cow<'_, str>> =
                blocks.iter().filter(|b| b.kind.get() == Some("text")).filter_map(Block::text).collect();
            texts.join("\n").trim().to_owned()
        }
    }
}

/// The positions Cline sends after truncation: the first user-assistant
/// pair, then every message after the deleted range's end (`[start, end]`,
/// inclusive; no range: every message).
pub fn cline_effective(len: usize, deleted: Option<(u64, u64)>) -> Vec<usize> {
    match deleted {
        None => (0..len).collect(),
        Some((_, end)) => {
            let from = usize::try_from(end).unwrap_or(usize::MAX).saturating_add(1).max(2);
            (0..len.min(2)).chain(from..len).collect()
        }
    }
}

/// The positions Roo Code sends: every message but those whose
/// `condenseParent` names a summary still there (`isSummary` with that
/// `condenseId`) or whose `truncationParent` names a truncation marker
/// still there (`isTruncationMarker` with that `truncationId`).
pub fn roo_effective(messages: &[RawMessage<'_>]) -> Vec<usize> {
    let summaries: std::collections::HashSet<&str> =
        messages.iter().filter(|m| m.is_summary.0).filter_map(|m| m.condense_id.get()).collect();
    let markers: std::collections::HashSet<&str> =
        messages.iter().filter(|m| m.is_truncation_marker.0).filter_map(|m| m.truncation_id.get()).collect();
    (0..messages.len())
        .filter(|&i| {
            let m = &messages[i];
            !m.condense_parent.get().is_some_and(|p| summaries.contains(p))
                && !m.truncation_parent.get().is_some_and(|p| markers.contains(p))
        })
        .collect()
}

/// The conversation items of the messages at `positions`: a summary as a
/// checkpoint, a truncation marker dropped, user and assistant text.
pub fn items(messages: &[RawMessage<'_>], positions: &[usize]) -> Vec<ConversationItem> {
    let mut out = Vec::new();
    for &i in positions {
        let m = &messages[i];
        if m.is_truncation_marker.0 {
            continue;
        }
        if m.is_summary.0 {
            let text = summary_text(m);
            if !text.is_empty() {
                out.push(ConversationItem::checkpoint(text));
            }
            continue;
        }
        let (role, text) = match m.role.get() {
            Some("user") => (Role::User, user_text(m)),
            Some("assistant") => (Role::Assistant, assistant_text(m)),
            _ => continue,
        };
        if !text.is_empty() {
            out.push(ConversationItem::new(role, text));
        }
    }
    out
}

/// The first typed user text of the whole history, as a title.
pub fn first_user_title(messages: &[RawMessage<'_>]) -> Option<String> {
    messages
        .iter()
        .filter(|m| m.role.get() == Some("user") && !m.is_summary.0)
        .find_map(|m| title_from_text(&user_text(m)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::cline::fast::FAST_DEPTH;

    /// The message serde reads from `text` (the whole of it), and the one
    /// the fast path reads with where it stops.
    fn both(text: &[u8]) -> (Option<RawMessage<'_>>, Option<(RawMessage<'_>, usize)>) {
        let slow = serde_json::from_slice::<RawMessage<'_>>(text).ok().filter(|_| text.first() == Some(&b'{'));
        let mut r = Reader::new(text);
        let fast = fast_message(&mut r, 0).map(|m| (m, r.pos()));
        (slow, fast)
    }

    /// The fast path reads a message only as serde does (`false` when it
    /// leaves it to serde).
    fn agree(text: &[u8]) -> bool {
        let (slow, fast) = both(text);
        let Some((fast, end)) = fast else { return false };
        assert_eq!(end, text.len(), "{}", String::from_utf8_lossy(text));
        assert_eq!(slow.as_ref(), Some(&fast), "{}", String::from_utf8_lossy(text));
        true
    }

    #[test]
    fn the_fast_path_reads_usual_messages_as_serde_does() {
        for text in [
            r#"{"role":"user","content":[{"type":"text","text":"<task>\nFix \"it\"\n</task>"},{"type":"image","source":{"data":"x"}}]}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","input":{"a":[1,2.5e3,null]}}],"ts":1}"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}],"is_error":false}]}"#,
            r#"{ "role" : "assistant" , "content" : "plain \u00e9" , "isSummary" : true , "condenseId" : "c1" }"#,
            r#"{"role":"user","content":"x","condenseParent":"c1","truncationParent":"t1","isTruncationMarker":false,"truncationId":"t2"}"#,
            r#"{"\u0072ole":"user","content":null,"isSummary":null,"condenseId":["a"],"truncationId":{"b":1}}"#,
            r#"{"role":"user","content":{"text":"<task>x</task>"},"isSummary":"yes"}"#,
            r#"{"role":true,"content":[{"type":null,"text":null,"content":null},{}]}"#,
            r#"{"role":"user","content":[{"type":"text","text":[1,{"a":"b"}]}],"extra":[[[[1e400]]]]}"#,
            r#"{}"#,
        ] {
            assert!(agree(text.as_bytes()), "not read by the fast path: {text}");
        }
    }

    #[test]
    fn the_fast_path_leaves_what_serde_reads_differently() {
        for text in [
            &br#"{"role":"user","role":"assistant"}"#[..],
            br#"{"role":"user","content":[{"type":"text","type":"text"}]}"#,
            br#"{"role":"user","content":["a string block"]}"#,
            br#"{"role":"user","content":[["text","\"x\""]]}"#,
            br#"{"role":1e400}"#,
            br#"{"role":"user","content":[{"type":7,"text":"x"}]}"#,
            br#"{"role":"user","isSummary":2}"#,
            br#"{"role":"\ud800"}"#,
            br#"{"\ud800":1}"#,
            br#"{"role":"user","isSummary":"\udc00"}"#,
            b"{\"role\":\"user\",\"x\":\"\xff\"}",
            br#"{"role":"user","content":"torn"#,
            br#"["role","user"]"#,
        ] {
            let (slow, fast) = both(text);
            assert!(fast.is_none(), "{}: {slow:?}", String::from_utf8_lossy(text));
        }
        let nested = |n: usize| format!(r#"{{"role":"user","x":{}1{}}}"#, "[".repeat(n), "]".repeat(n));
        assert!(both(nested(FAST_DEPTH + 1).as_bytes()).1.is_none());
        assert!(agree(nested(FAST_DEPTH).as_bytes()));
    }

    #[test]
    fn random_messages_read_alike_both_ways() {
        // Fields and blocks of every kind the two ways could read apart,
        // joined at random (repeats included).
        let values = [
            r#""user""#,
            r#""assistant""#,
            r#""a \"q\" \\ \/ \u00e9 \ud83d\ude00""#,
            r#""\ud800""#,
            "null",
            "true",
            "false",
            "0",
            "-1.5e3",
            "1e400",
            "[]",
            "{}",
            r#"[1,"x",{"y":null}]"#,
            r#"{"text":"<task>t</task>"}"#,
        ];
        let blocks = [
            r#"{"type":"text","text":"<feedback>f</feedback>"}"#,
            r#"{"type":"tool_result","content":[{"type":"text","text":"<answer>a</answer>"}]}"#,
            r#"{"type":"text","text":null,"content":"c"}"#,
            r#"{"type":"text","type":"x"}"#,
            r#""s""#,
            "3",
            "{}",
        ];
        let keys = [
            "role",
            "content",
            "isSummary",
            "condenseId",
            "condenseParent",
            "isTruncationMarker",
            "truncationId",
            "truncationParent",
            "other",
            r"r\u006fle",
        ];
        let mut seed = 7u64;
        let mut next = |n: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        let mut read_fast = 0;
        for _ in 0..20_000 {
            let fields: Vec<String> = (0..next(5))
                .map(|_| {
                    let key = keys[next(keys.len())];
                    let value = if next(3) == 0 {
                        let list: Vec<&str> = (0..next(4)).map(|_| blocks[next(blocks.len())]).collect();
                        format!("[{}]", list.join(","))
                    } else {
                        values[next(values.len())].to_owned()
                    };
                    format!(r#""{key}":{value}"#)
                })
                .collect();
            read_fast += usize::from(agree(format!("{{{}}}", fields.join(",")).as_bytes()));
        }
        // Most are of a shape the fast path reads.
        assert!(read_fast > 5_000, "{read_fast}");
    }

    #[test]
    fn tool_calls_cut_from_the_escaped_text_as_from_the_unescaped() {
        let texts = [
            r#"<thinking>a \"b\"\n</thinking>\nI will read it.\n<read_file>\n<path>a.rs</path>\n</read_file>"#,
            r#"<attempt_completion>\n<result>\n\tAll \"fixed\".\n</result>\n</attempt_completion>"#,
            r"x <\/thinking> <thinking>y<\/thinking>z",
            r"\u003cthinking>y</thinking>z",
            r#"a\\<b> c \\\"<thinking>t</thinking>"#,
            r"<ask_followup_question><question>\n Why? \n</question>",
            r"tab\t<thinking\t>x</thinking>",
            r"\ud800 <thinking>x</thinking>",
            r"\r\n\b\f plain",
        ];
        for text in texts {
            let literal = format!("\"{text}\"");
            let block = Block { text: Some(literal.as_bytes()), ..Block::default() };
            let want = serde_json::from_str::<String>(&literal).ok().map(|t| visible_assistant_text(&t));
            assert_eq!(block.visible_text(), want, "{text}");
        }
    }

    #[test]
    fn xml_tool_calls_leave_only_what_is_shown() {
        let t = "<thinking>plan</thinking>\nI will read it.\n<read_file>\n<path>a.rs</path>\n</read_file>";
        assert_eq!(visible_assistant_text(t), "I will read it.");
        let done =
            "<attempt_completion>\n<result>\nAll fixed.\n</result>\n<command>ls</command>\n</attempt_completion>";
        assert_eq!(visible_assistant_text(done), "All fixed.");
        assert_eq!(visible_assistant_text("a < b and <b>bold</b>"), "a < b and <b>bold</b>");
        assert_eq!(visible_assistant_text("Cut: <execute_command><command>make"), "Cut:");
    }

    #[test]
    fn tool_names_are_read_whole() {
        // Every listed tag, and names that only start or end like one.
        for t in XML_TOOLS {
            assert_eq!(xml_tool(&format!("{t}>rest")), Some(t));
            assert_eq!(xml_tool(t), None);
            assert_eq!(xml_tool(&format!("{t}x>")), None);
            assert_eq!(xml_tool(&format!("{t} >")), None);
            assert_eq!(xml_tool(&format!("x{t}>")), None);
        }
        assert_eq!(xml_tool("Thinking>"), None);
        assert_eq!(xml_tool(">"), None);
        let t = "a <b> <read_file <thinking>x</thinking>y <é> <attempt_completion><result>r</result>";
        assert_eq!(visible_assistant_text(t), "a <b> <read_file y <é> r");
    }

    #[test]
    fn user_tags_are_found_in_tool_results_only_when_written() {
        let message = |content: &str| {
            let json = format!(r#"{{"role":"user","content":[{{"type":"tool_result","content":{content}}}]}}"#);
            let m: RawMessage<'_> = serde_json::from_str(&json).unwrap();
            user_text(&m)
        };
        assert_eq!(message(r#""denied\n<feedback>\nuse \"b\"\n</feedback>""#), "use \"b\"");
        assert_eq!(message(r#"[{"type":"text","text":"<answer>yes</answer>"},{"type":"image"},7]"#), "yes");
        assert_eq!(message(r#""output with <tags> and \"quotes\"""#), "");
        assert_eq!(message(r#"{"text":"<task>not a list</task>"}"#), "");
        assert!(
            opens_user_tag(b"x<task>") && opens_user_tag(b"<user_message>") && !opens_user_tag(b"<task <tasks> task>")
        );
    }

    #[test]
    fn user_tags_give_the_typed_text() {
        assert_eq!(user_tagged("<task>\nFix it\n</task>"), vec!["Fix it"]);
        assert_eq!(user_tagged("[TASK RESUMPTION] …\n<user_message>\ngo on\n</user_message>"), vec!["go on"]);
        assert!(user_tagged("<environment_details>x</environment_details>").is_empty());
    }

    #[test]
    fn a_torn_array_gives_the_elements_before_the_cut() {
        let p =
            parse(br#"[{"role":"user","content":"a"}, 5, {"role":"assistant","content":"b"}, {"role":"us"#).unwrap();
        assert_eq!((p.messages.len(), p.skipped, p.torn), (3, 1, true));
        let p = parse(b" [ ] ").unwrap();
        assert_eq!((p.messages.len(), p.torn), (0, false));
        assert!(parse(b"{}").is_none());
        assert_eq!(cline_effective(6, Some((2, 3))), vec![0, 1, 4, 5]);
        assert_eq!(cline_effective(3, None), vec![0, 1, 2]);
    }
}
