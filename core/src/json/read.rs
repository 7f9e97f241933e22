//! A validating, single-pass JSON reader over bytes, for surface snapshots.
//!
//! Projection (docs/contract.md §3) needs a few fields of a document that is mostly tool
//! output and reasoning. This reader walks the document once: the fields
//! projection reads come back as spans of the input (string literals are
//! never copied), and everything else is skipped with the same validation
//! (grammar, escapes, control characters, UTF-8) but without building any
//! value. Skipping is iterative, so nesting depth is limited only by memory.
//!
//! Strings are classified 16 bytes at a time (SSE2 on x86-64, exact
//! word-at-a-time code elsewhere) into masks of `"`, `\` and control bytes
//! and of non-ASCII bytes; escapes are taken from the masks, and only
//! strings holding non-ASCII bytes are run through the UTF-8 validator.

use std::borrow::Cow;

use super::bytes::{classify, unicode_escape, utf8_len, Block, ESCAPE_LEN};

/// A string literal of the input, quotes included, known to be valid JSON
/// and valid UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Str<'a> {
    /// The literal, quotes included.
    pub lit: &'a [u8],
    /// Whether it holds a backslash escape.
    pub escaped: bool,
    /// The UTF-8 length of the decoded string (an escaped lone surrogate
    /// counts as U+FFFD, 3 bytes, as JavaScript's `TextEncoder` counts it).
    pub len: usize,
}

impl<'a> Str<'a> {
    /// The bytes between the quotes.
    pub fn inner(&self) -> &'a [u8] {
        &self.lit[1..self.lit.len() - 1]
    }

    /// The string's bytes, to match on: decoded when it has escapes (empty,
    /// matching no name, when it cannot be decoded).
    pub fn name(&self) -> Cow<'a, [u8]> {
        match self.escaped.then(|| self.decode()) {
            None => Cow::Borrowed(self.inner()),
            Some(Ok(decoded)) => Cow::Owned(decoded.into_owned().into_bytes()),
            Some(Err(_)) => Cow::Borrowed(&[]),
        }
    }

    /// Whether the decoded string equals `name`.
    pub fn is(&self, name: &str) -> bool {
        if self.escaped {
            self.decode().is_ok_and(|d| d == name)
        } else {
            self.inner() == name.as_bytes()
        }
    }

    /// The decoded string: borrowed when it has no escapes. An escaped lone
    /// surrogate cannot be represented and is an error.
    pub fn decode(&self) -> Result<Cow<'a, str>, String> {
        if self.escaped {
            serde_json::from_slice::<String>(self.lit).map(Cow::Owned).map_err(|e| format!("malformed text: {e}"))
        } else {
            std::str::from_utf8(self.inner()).map(Cow::Borrowed).map_err(|e| format!("malformed text: {e}"))
        }
    }
}

/// What reading one value gives: the outer error is a syntax error (the
/// document is not JSON, which is always fatal); the inner one is a shape
/// error (the value is JSON of the wrong kind), which only counts if no
/// later value of the same key replaces it, as with `JSON.parse`.
pub(crate) type Read<T> = Result<Result<T, String>, String>;

/// A cursor over one JSON document. Errors are messages naming the byte
/// offset where reading stopped.
pub(crate) struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    /// The closing brackets of the containers `skip` is inside.
    stack: Vec<u8>,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `b`.
    pub fn new(b: &'a [u8]) -> Self {
        Reader { b, pos: 0, stack: Vec::new() }
    }

    /// A reader over the value at `start..end` of the same input (a span
    /// this reader has already validated), keeping absolute offsets.
    pub fn span(&self, start: usize, end: usize) -> Reader<'a> {
        Reader { b: &self.b[..end], pos: start, stack: Vec::new() }
    }

    /// The current byte offset.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The whole input.
    pub fn input(&self) -> &'a [u8] {
        self.b
    }

    /// Moves to the byte offset `pos` of the same input (to read a value
    /// found by other means, or again after an error).
    pub fn seek(&mut self, pos: usize) {
        self.pos = pos.min(self.b.len());
        self.stack.clear();
    }

    /// An error message for the current position.
    #[cold]
    #[inline(never)]
    pub fn err(&self, what: &str) -> String {
        if self.pos >= self.b.len() {
            format!("{what} at the end of the input (byte {})", self.pos)
        } else {
            format!("{what} at byte {}", self.pos)
        }
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(c) = self.b.get(self.pos) {
            if !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                break;
            }
            self.pos += 1;
        }
    }

    /// The first byte of the next value, after whitespace.
    #[inline]
    pub fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.pos).copied()
    }

    /// Consumes `c` after whitespace, or fails with `what`.
    #[inline]
    fn expect(&mut self, c: u8, what: &str) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(what))
        }
    }

    /// Consumes `c` after whitespace, if it is next.
    pub fn eat(&mut self, c: u8) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.pos += 1;
        }
        found
    }

    /// Consumes the literal `word` (`null`, `"append"`) after whitespace, if
    /// it is next.
    pub fn eat_literal(&mut self, word: &[u8]) -> bool {
        self.ws();
        let found = self.b[self.pos..].starts_with(word);
        if found {
            self.pos += word.len();
        }
        found
    }

    /// Only whitespace is left.
    pub fn end(&mut self) -> Result<(), String> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.err("trailing characters")),
        }
    }

    /// Enters the object here (`true`), or skips any other value (`false`).
    pub fn enter_object(&mut self) -> Result<bool, String> {
        self.enter(b'{')
    }

    /// Enters the array here (`true`), or skips any other value (`false`).
    pub fn enter_array(&mut self) -> Result<bool, String> {
        self.enter(b'[')
    }

    fn enter(&mut self, open: u8) -> Result<bool, String> {
        if self.peek() == Some(open) {
            self.pos += 1;
            Ok(true)
        } else {
            self.skip().map(|()| false)
        }
    }

    /// The next key of the object just entered (`first` tracks the comma),
    /// positioned at its value; `None` after the closing brace.
    #[inline]
    pub fn next_key(&mut self, first: &mut bool) -> Result<Option<Str<'a>>, String> {
        match self.peek() {
            Some(b'}') => {
                self.pos += 1;
                return Ok(None);
            }
            Some(b',') if !*first => {
                self.pos += 1;
                self.ws();
            }
            _ if *first => {}
            _ => return Err(self.err("expected ',' or '}'")),
        }
        *first = false;
        let key = self.key()?;
        self.expect(b':', "expected ':'")?;
        Ok(Some(key))
    }

    #[inline]
    fn key(&mut self) -> Result<Str<'a>, String> {
        if self.peek() != Some(b'"') {
            return Err(self.err("expected a string key"));
        }
        self.string()
    }

    /// Whether the array just entered has another element (`first` tracks
    /// the comma); positioned at it when it has.
    pub fn next_element(&mut self, first: &mut bool) -> Result<bool, String> {
        match self.peek() {
            Some(b']') => {
                self.pos += 1;
                Ok(false)
            }
            Some(b',') if !*first => {
                self.pos += 1;
                Ok(true)
            }
            _ if *first => {
                *first = false;
                Ok(true)
            }
            _ => Err(self.err("expected ',' or ']'")),
        }
    }

    /// The string value here, `None` (skipped) for any other value.
    pub fn maybe_string(&mut self) -> Result<Option<Str<'a>>, String> {
        if self.peek() == Some(b'"') {
            self.string().map(Some)
        } else {
            self.skip().map(|()| None)
        }
    }

    /// The string value here, or `None` for `null`; any other value is
    /// skipped and gives the shape error `what`.
    pub fn string_or_null(&mut self, what: &str) -> Read<Option<Str<'a>>> {
        match self.peek() {
            Some(b'"') => self.string().map(|s| Ok(Some(s))),
            Some(b'n') => self.literal(b"null").map(|()| Ok(None)),
            _ => self.skip().map(|()| Err(what.to_owned())),
        }
    }

    /// The number literal here, or `None` for `null`; any other value is
    /// skipped and gives the shape error `what`.
    pub fn number_or_null(&mut self, what: &str) -> Read<Option<&'a [u8]>> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.number().map(|n| Ok(Some(n))),
            Some(b'n') => self.literal(b"null").map(|()| Ok(None)),
            _ => self.skip().map(|()| Err(what.to_owned())),
        }
    }

    /// `true` or `false` here, or `None` for `null`; any other value is
    /// skipped and gives the shape error `what`.
    pub fn bool_or_null(&mut self, what: &str) -> Read<Option<bool>> {
        match self.peek() {
            Some(b't') => self.literal(b"true").map(|()| Ok(Some(true))),
            Some(b'f') => self.literal(b"false").map(|()| Ok(Some(false))),
            Some(b'n') => self.literal(b"null").map(|()| Ok(None)),
            _ => self.skip().map(|()| Err(what.to_owned())),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), String> {
        if self.b[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.err("invalid literal"))
        }
    }

    /// The string literal starting at the current `"`. Inlined for the usual
    /// short ASCII string without escapes (keys, `type` values), which ends
    /// in the first 16 bytes; anything else takes [`Reader::string_at`].
    #[inline(always)]
    fn string(&mut self) -> Result<Str<'a>, String> {
        let start = self.pos;
        let Block { special, high, .. } = classify(self.b, start + 1);
        let at = special.trailing_zeros() as usize; // 32 when there is none
        if at < 16 && high & ((1 << at) - 1) == 0 && self.b[start + 1 + at] == b'"' {
            self.pos = start + 2 + at;
            return Ok(Str { lit: &self.b[start..self.pos], escaped: false, len: at });
        }
        self.string_at(start)
    }

    /// [`Reader::string`] in full: escapes, non-ASCII text, errors. Each
    /// block of 16 bytes is classified once; every `"`, `\` or control
    /// byte in it is dealt with from the block's mask, so text with an
    /// escape every few dozen bytes is not scanned again after each one.
    #[inline(never)]
    fn string_at(&mut self, start: usize) -> Result<Str<'a>, String> {
        let b = self.b;
        let mut i = start + 1; // the start of the current block
        let (mut escaped, mut non_ascii) = (false, false);
        let mut saved = 0; // bytes the escapes take beyond the text they stand for
        let end = 'scan: loop {
            let Block { mut special, high, len } = classify(b, i);
            if len == 0 {
                self.pos = b.len();
                return Err(self.err("unterminated string"));
            }
            loop {
                if special == 0 {
                    non_ascii |= high != 0;
                    i += len;
                    continue 'scan;
                }
                let p = special.trailing_zeros() as usize;
                non_ascii |= high & ((1 << p) - 1) != 0;
                let at = i + p;
                match b[at] {
                    b'"' => break 'scan at,
                    b'\\' => {}
                    _ => {
                        self.pos = at;
                        return Err(self.err("control character in string"));
                    }
                }
                escaped = true;
                let next = match b.get(at + 1).map_or(0, |&e| ESCAPE_LEN[e as usize]) {
                    2 => {
                        saved += 1; // two bytes of escape, one byte of text
                        at + 2
                    }
                    6 => {
                        let Some((cp, taken)) = unicode_escape(b, at) else {
                            self.pos = at;
                            return Err(self.err("invalid escape"));
                        };
                        saved += taken - utf8_len(cp);
                        at + taken
                    }
                    _ => {
                        self.pos = at;
                        return Err(self.err("invalid escape"));
                    }
                };
                if next >= i + len {
                    i = next; // the escape reaches past this block
                    continue 'scan;
                }
                special &= !((1 << (next - i)) - 1); // the escape's own bytes
            }
        };
        if non_ascii {
            if let Err(e) = std::str::from_utf8(&b[start + 1..end]) {
                self.pos = start + 1 + e.valid_up_to();
                return Err(self.err("invalid UTF-8 in string"));
            }
        }
        self.pos = end + 1;
        Ok(Str { lit: &b[start..=end], escaped, len: end - start - 1 - saved })
    }

    /// The number literal here (JSON grammar).
    fn number(&mut self) -> Result<&'a [u8], String> {
        let b = self.b;
        let start = self.pos;
        let mut i = start;
        let digits = |i: &mut usize| {
            let s = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > s
        };
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let ok = match b.get(i) {
            Some(b'0') => {
                i += 1;
                true
            }
            Some(b'1'..=b'9') => digits(&mut i),
            _ => false,
        } && (b.get(i) != Some(&b'.') || {
            i += 1;
            digits(&mut i)
        }) && (!matches!(b.get(i), Some(b'e' | b'E')) || {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            digits(&mut i)
        });
        self.pos = i;
        if ok {
            Ok(&b[start..i])
        } else {
            Err(self.err("invalid number"))
        }
    }

    /// Skips the value here, validating it, without recursion.
    pub fn skip(&mut self) -> Result<(), String> {
        self.skip_within(usize::MAX)
    }

    /// [`skip`](Self::skip), failing on a value nested deeper than
    /// `max_depth` non-empty containers (for a caller whose fallback
    /// parser has a depth limit of its own).
    pub fn skip_within(&mut self, max_depth: usize) -> Result<(), String> {
        let base = self.stack.len();
        let limit = base.saturating_add(max_depth);
        loop {
            // A value.
            match self.peek() {
                Some(b'{') => {
                    self.pos += 1;
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                    } else if self.stack.len() == limit {
                        return Err(self.err("nesting is too deep"));
                    } else {
                        self.stack.push(b'}');
                        self.key()?;
                        self.expect(b':', "expected ':'")?;
                        continue;
                    }
                }
                Some(b'[') => {
                    self.pos += 1;
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                    } else if self.stack.len() == limit {
                        return Err(self.err("nesting is too deep"));
                    } else {
                        self.stack.push(b']');
                        continue;
                    }
                }
                Some(b'"') => {
                    self.string()?;
                }
                Some(b'-' | b'0'..=b'9') => {
                    self.number()?;
                }
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                _ => return Err(self.err("expected a value")),
            }
            // After a value: close containers until one continues.
            loop {
                let Some(&close) = self.stack.get(base..).and_then(<[u8]>::last) else {
                    return Ok(());
                };
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        if close == b'}' {
                            self.key()?;
                            self.expect(b':', "expected ':'")?;
                        }
                        break;
                    }
                    Some(c) if c == close => {
                        self.pos += 1;
                        self.stack.pop();
                    }
                    _ if close == b'}' => return Err(self.err("expected ',' or '}'")),
                    _ => return Err(self.err("expected ',' or ']'")),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip_all(doc: &str) -> Result<(), String> {
        let mut r = Reader::new(doc.as_bytes());
        r.skip()?;
        r.end()
    }

    #[test]
    fn skip_agrees_with_serde_json_on_validity() {
        let docs = [
            "0",
            "-0",
            "01",
            "1.",
            "1.5",
            "-1e5",
            "1E+2",
            "1e",
            "-",
            "--1",
            "true",
            "tru",
            "nul",
            "null ",
            "[]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{}",
            "{,}",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{"a":1 "b":2}"#,
            r#"{1:2}"#,
            r#""\x""#,
            r#""\u12""#,
            r#""\u12g4""#,
            r#""\ud800""#,
            "\"a\u{1}\"",
            "\"tab\there\"",
            r#""ok\"\\\/\b\f\n\r\t""#,
            r#"[[[[{"a":[{}]}]]]]"#,
            "[[[",
            "]",
            "",
            " ",
            "\u{feff}1",
            r#"{"a":{"b":[1,{"c":null}]},"d":"é😀"}"#,
            "[1]x",
            "\"unterminated",
            "\"unterminated\\",
        ];
        for doc in docs {
            let ours = skip_all(doc).is_ok();
            let theirs = serde_json::from_str::<serde::de::IgnoredAny>(doc).is_ok();
            assert_eq!(ours, theirs, "{doc:?}: ours {:?}", skip_all(doc));
        }
    }

    #[test]
    fn strings_with_escapes_across_blocks_are_read_exactly() {
        // Escapes at every offset around the 16-byte block edges.
        for pad in 0..40 {
            for esc in [r#"\""#, r"\\", r"\n", r"\u00e9", r"\ud83d\ude00", r"\/", r"\u003c"] {
                let text = format!("{}{esc}{}é<{esc}", "a".repeat(pad), "b".repeat(pad % 7));
                let doc = format!("\"{text}\"");
                let mut r = Reader::new(doc.as_bytes());
                let got = r.maybe_string().unwrap().unwrap();
                let want: String = serde_json::from_str(&doc).unwrap();
                assert_eq!(got.decode().unwrap(), want, "{doc}");
                assert_eq!(got.len, want.len(), "{doc}");
                assert!(r.end().is_ok());
            }
        }
    }

    #[test]
    fn invalid_utf8_in_any_string_is_an_error() {
        for doc in [&b"\"\xff\""[..], b"[\"ok\",\"\xed\xa0\x80\"]", b"{\"\xc3\":1}", b"\"\xe2\x82\""] {
            let mut r = Reader::new(doc);
            let err = r.skip().and_then(|()| r.end()).unwrap_err();
            assert!(err.contains("invalid UTF-8"), "{err}");
        }
        let mut r = Reader::new("\"h\u{e9}llo \u{1F600}\"".as_bytes());
        assert!(r.skip().is_ok());
    }

    #[test]
    fn deep_nesting_is_skipped_without_recursion() {
        let deep = format!("{}0{}", "[{\"a\":".repeat(200_000), "}]".repeat(200_000));
        assert!(skip_all(&deep).is_ok());
        assert!(skip_all(&deep[..deep.len() - 1]).is_err());
    }

    #[test]
    fn errors_name_the_offset() {
        let err = skip_all(r#"{"a":[1,2 3]}"#).unwrap_err();
        assert_eq!(err, "expected ',' or ']' at byte 10");
        let err = skip_all(r#"{"a":"x"#).unwrap_err();
        assert_eq!(err, "unterminated string at the end of the input (byte 7)");
    }

    #[test]
    fn strings_decode_and_compare_through_escapes() {
        let mut r = Reader::new(br#""\u0074ype""#);
        let s = r.maybe_string().unwrap().unwrap();
        assert!(s.escaped && s.is("type") && !s.is("typ"));
        assert_eq!(s.decode().unwrap(), "type");
        let mut r = Reader::new(br#""\ud800""#);
        let s = r.maybe_string().unwrap().unwrap();
        assert!(s.decode().is_err() && !s.is("x"));
    }
}
