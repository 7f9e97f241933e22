//! The Cline SDK's compaction source hash input of a message, written
//! straight from the message's JSON text where that text is already what
//! `JSON.stringify(JSON.parse(text))` gives back but for whitespace (the
//! SDK writes its messages file with `JSON.stringify`, indented): no value
//! is built. Anything this cannot be sure of (an escape `JSON.stringify`
//! would write otherwise, a number it would write otherwise, an object key
//! JavaScript orders first or one repeated, deep nesting, a user's text
//! part, which the SDK rewrites before hashing) is left to the exact path,
//! [`super::sdk`]'s parse and stringify, which gives the same bytes.

use std::ops::Range;

use crate::json::bytes::next_escape;

/// Deeper nesting is left to the exact path (which refuses beyond
/// [`crate::json::MAX_PARSE_DEPTH`]).
const MAX_DEPTH: usize = 64;

/// An object with more keys is left to the exact path (its keys are
/// checked for repeats one against another).
const MAX_KEYS: usize = 64;

/// The fields of the hash input, in its order.
const FIELDS: [&str; 7] = ["role", "content", "agent", "sessionId", "metadata", "modelInfo", "metrics"];

/// Appends to `out` the SDK's hash input of the message whose JSON text is
/// `raw` (`JSON.stringify` of `[["role", role], ["content", content],
/// ["agent", agent ?? null], …]`, the user's text parts as `text_part`
/// rewrites them), or returns `false` (with `out` as it was) where the
/// exact path must write it.
pub(super) fn hash_input(raw: &str, out: &mut Vec<u8>, text_part: impl Fn(&str) -> Option<String>) -> bool {
    let start = out.len();
    let ok = write_input(raw.as_bytes(), out, &text_part).is_some();
    if !ok {
        out.truncate(start);
    }
    ok
}

fn write_input(raw: &[u8], out: &mut Vec<u8>, text_part: &dyn Fn(&str) -> Option<String>) -> Option<()> {
    let fields = top_fields(raw)?;
    let get =
        |name: &str| fields.iter().find(|(k, _)| &raw[k.clone()] == name.as_bytes()).map(|(_, v)| &raw[v.clone()]);
    // The role: a plain string without `:` (else the SDK throws, or the
    // exact path says why).
    let role = get("role")?;
    let role_text = role.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if role_text.iter().any(|&b| b == b'\\' || b == b':' || b == b'"') {
        return None;
    }
    let user = role_text == b"user";
    out.push(b'[');
    for (n, name) in FIELDS.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"[\"");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\",");
        match get(name) {
            Some(content) if user && *name == "content" => user_content(content, out, text_part)?,
            Some(value) => minified(value, out)?,
            // A user message without content makes the SDK throw.
            None if user && *name == "content" => return None,
            None => out.extend_from_slice(b"null"),
        }
        out.push(b']');
    }
    out.push(b']');
    Some(())
}

/// A user message's content: a list whose text parts are rewritten (by the
/// exact path, `text_part`) and whose other parts are as they are; a string
/// is left to the exact path.
fn user_content(content: &[u8], out: &mut Vec<u8>, text_part: &dyn Fn(&str) -> Option<String>) -> Option<()> {
    let mut s = Scan { s: content, i: 0, out: None };
    (s.peek()? == b'[').then_some(())?;
    out.push(b'[');
    let mut more = s.opened(1, b"[", b']')?;
    let mut first = true;
    while more {
        let from = s.i;
        s.value(1)?;
        let part = &content[from..s.i];
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        let fields = top_fields(part)?;
        let is_text = fields.iter().any(|(k, v)| &part[k.clone()] == b"type" && &part[v.clone()] == b"\"text\"");
        if is_text {
            out.extend_from_slice(text_part(std::str::from_utf8(part).ok()?)?.as_bytes());
        } else {
            minified(part, out)?;
        }
        more = s.comma_or(b']')?;
    }
    out.push(b']');
    (s.i == content.len()).then_some(())
}

/// The keys (their insides, without quotes) and values of a JSON object's
/// top level, as ranges of `raw`; `None` for anything else, or a key with
/// an escape, or a key given twice.
fn top_fields(raw: &[u8]) -> Option<Vec<(Range<usize>, Range<usize>)>> {
    let mut s = Scan { s: raw, i: 0, out: None };
    s.ws();
    (s.peek()? == b'{').then_some(())?;
    let mut fields: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    let mut more = s.opened(1, b"{", b'}')?;
    while more {
        let key = s.plain_key()?;
        if fields.iter().any(|(k, _)| raw[k.clone()] == raw[key.clone()]) {
            return None;
        }
        s.ws();
        (s.peek()? == b':').then_some(())?;
        s.i += 1;
        s.ws();
        let from = s.i;
        s.value(1)?;
        fields.push((key, from..s.i));
        more = s.comma_or(b'}')?;
    }
    s.ws();
    (s.i == raw.len()).then_some(fields)
}

/// Appends `raw` (one JSON value) without its whitespace, when that is
/// what `JSON.stringify(JSON.parse(raw))` writes; `None` otherwise (`out`
/// may then hold part of it).
fn minified(raw: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let mut s = Scan { s: raw, i: 0, out: Some(out) };
    s.ws();
    s.value(0)?;
    s.ws();
    (s.i == raw.len()).then_some(())
}

/// A walk over JSON text, copying what it accepts to `out` (when there is
/// one).
struct Scan<'a, 'o> {
    s: &'a [u8],
    i: usize,
    out: Option<&'o mut Vec<u8>>,
}

impl Scan<'_, '_> {
    fn emit(&mut self, bytes: &[u8]) {
        if let Some(out) = self.out.as_deref_mut() {
            out.extend_from_slice(bytes);
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.s[self.i..].starts_with(word).then_some(())?;
        self.i += word.len();
        self.emit(word);
        Some(())
    }

    /// A string escaped only as `JSON.stringify` escapes (`\"`, `\\`, the
    /// short escapes of control characters, `\u00xx` in lower case for the
    /// others); its inside as a range.
    fn string(&mut self) -> Option<Range<usize>> {
        let from = self.i;
        self.i += 1;
        loop {
            self.i = next_escape(self.s, self.i, false);
            match self.peek()? {
                b'"' => break,
                b'\\' => match self.s.get(self.i + 1)? {
                    b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                    b'u' => {
                        let hex = self.s.get(self.i + 2..self.i + 6)?;
                        let digit = |b: u8| match b {
                            b'0'..=b'9' => Some(b - b'0'),
                            b'a'..=b'f' => Some(b - b'a' + 10),
                            _ => None,
                        };
                        let (hi, lo) = (digit(hex[2])?, digit(hex[3])?);
                        let code = hi * 16 + lo;
                        let short = matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
                        (hex[..2] == *b"00" && code < 0x20 && !short).then_some(())?;
                        self.i += 6;
                    }
                    _ => return None,
                },
                // A raw control character: not JSON.
                _ => return None,
            }
        }
        self.i += 1;
        self.emit(&self.s[from..self.i]);
        Some(from + 1..self.i - 1)
    }

    /// A key as [`string`](Self::string), without escapes, and not one
    /// JavaScript lists first (all digits).
    fn plain_key(&mut self) -> Option<Range<usize>> {
        (self.peek()? == b'"').then_some(())?;
        let key = self.string()?;
        let k = &self.s[key.clone()];
        let index_like = !k.is_empty() && k.iter().all(u8::is_ascii_digit);
        (!k.contains(&b'\\') && !index_like).then_some(key)
    }

    /// A number that `JSON.parse` then `JSON.stringify` write back as it is.
    fn number(&mut self) -> Option<()> {
        let from = self.i;
        while let Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        let text = std::str::from_utf8(&self.s[from..self.i]).ok()?;
        let plain = text.len() <= 15
            && text.strip_prefix('-').unwrap_or(text).bytes().all(|b| b.is_ascii_digit())
            && !text.starts_with("-0")
            && (text == "0" || !text.starts_with('0'))
            && !text.is_empty()
            && text != "-";
        if !plain {
            let again = crate::json::stringify(&crate::json::parse_js(text).ok()?);
            (again == text).then_some(())?;
        }
        self.emit(text.as_bytes());
        Some(())
    }

    /// A container's opening `open` (and its closing `close` when it is
    /// empty: `false`, nothing more to read).
    fn opened(&mut self, depth: usize, open: &[u8], close: u8) -> Option<bool> {
        (depth <= MAX_DEPTH).then_some(())?;
        self.i += 1;
        self.emit(open);
        self.ws();
        self.next_or(close)
    }

    /// The close `close` here (copied: `false`, the container ends), or
    /// anything else (`true`).
    fn next_or(&mut self, close: u8) -> Option<bool> {
        self.ws();
        let b = self.peek()?;
        if b == close {
            self.i += 1;
            self.emit(&[close]);
            return Some(false);
        }
        Some(true)
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        let mut more = self.opened(depth, b"[", b']')?;
        while more {
            self.value(depth)?;
            more = self.comma_or(b']')?;
        }
        Some(())
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        let mut more = self.opened(depth, b"{", b'}')?;
        let mut keys: Vec<Range<usize>> = Vec::new();
        while more {
            let key = self.plain_key()?;
            (keys.len() < MAX_KEYS && !keys.iter().any(|k| self.s[k.clone()] == self.s[key.clone()])).then_some(())?;
            keys.push(key);
            self.ws();
            (self.peek()? == b':').then_some(())?;
            self.i += 1;
            self.emit(b":");
            self.ws();
            self.value(depth)?;
            more = self.comma_or(b'}')?;
        }
        Some(())
    }

    /// After an element: a comma, copied (`true`), or the close (`false`).
    fn comma_or(&mut self, close: u8) -> Option<bool> {
        self.ws();
        if self.peek()? == b',' {
            self.i += 1;
            self.emit(b",");
            self.ws();
            return Some(true);
        }
        (!self.next_or(close)?).then_some(false)
    }
}
