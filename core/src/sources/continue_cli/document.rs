//! A session file read as a stream: its top-level object key by key, and
//! the elements of one list (`history`) one at a time, so that a file of
//! any size is read within the memory of one element (at most
//! [`MAX_LINE_BYTES`], as a JSONL line) plus what the caller keeps of each.
//!
//! The structure between the values (`{`, keys, `:`, `,`, `[`, `]`, `}`)
//! is checked here as JSON's grammar has it; each value is found by a scan
//! of its brackets and strings (no value is built) and then parsed on its
//! own by serde_json, which checks it. So a file is accepted exactly when
//! serde_json accepts it whole, and every value reads as it would there.

use std::borrow::Cow;
use std::io::{self, Read};
use std::ops::Range;

use crate::sources::foreign::MAX_LINE_BYTES;

/// How much is read from the file at a time.
const CHUNK: u64 = 1 << 20;

/// A JSON document read from `R` in pieces.
pub(super) struct Document<R> {
    r: R,
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    at: usize,
    /// The file's offset of `buf[0]`.
    base: u64,
    /// The bytes the file is expected to hold after `buf` (each read asks
    /// for at most [`CHUNK`] of them, and at least one).
    left: u64,
    eof: bool,
}

/// A malformed document, saying why and where.
pub(super) fn invalid(why: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

impl<R: Read> Document<R> {
    /// A document of about `size` bytes (a read goes on past it while the
    /// reader gives more).
    pub(super) fn new(r: R, size: u64) -> Self {
        Document { r, buf: Vec::new(), at: 0, base: 0, left: size, eof: false }
    }

    /// Reads more of the file after what `buf` holds, first letting go of
    /// what was read (all before `keep`). `false` at the end of the file.
    fn more(&mut self, keep: usize) -> io::Result<bool> {
        if keep > 0 {
            self.buf.drain(..keep);
            self.base += keep as u64;
            self.at -= keep;
        }
        if self.eof {
            return Ok(false);
        }
        let want = self.left.clamp(1, CHUNK);
        self.buf.reserve(usize::try_from(want).unwrap_or(usize::MAX));
        let n = (&mut self.r).take(want).read_to_end(&mut self.buf)?;
        self.left = self.left.saturating_sub(n as u64);
        self.eof = n == 0;
        Ok(n > 0)
    }

    fn eof_error(&self, what: &str) -> io::Error {
        invalid(format!("EOF while parsing {what} (the file ends at byte {})", self.base + self.buf.len() as u64))
    }

    /// The next byte that is not whitespace, not taken (`None`: the end).
    fn peek(&mut self) -> io::Result<Option<u8>> {
        loop {
            while let Some(&b) = self.buf.get(self.at) {
                if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                    return Ok(Some(b));
                }
                self.at += 1;
            }
            let keep = self.at;
            if !self.more(keep)? {
                return Ok(None);
            }
        }
    }

    /// Takes the byte `want` after whitespace, or says what was found.
    fn expect(&mut self, want: u8, what: &str) -> io::Result<()> {
        match self.peek()? {
            Some(b) if b == want => {
                self.at += 1;
                Ok(())
            }
            Some(b) => Err(invalid(format!(
                "expected {what} at byte {}, found `{}`",
                self.base + self.at as u64,
                char::from(b).escape_default()
            ))),
            None => Err(self.eof_error(what)),
        }
    }

    /// Takes `close`, or a `,` before another entry: `true` when another
    /// follows.
    fn comma_or(&mut self, close: u8, what: &str) -> io::Result<bool> {
        match self.peek()? {
            Some(b',') => {
                self.at += 1;
                match self.peek()? {
                    Some(b) if b == close => {
                        Err(invalid(format!("trailing comma at byte {}", self.base + self.at as u64)))
                    }
                    _ => Ok(true),
                }
            }
            Some(b) if b == close => {
                self.at += 1;
                Ok(false)
            }
            Some(b) => Err(invalid(format!(
                "expected `,` or `{}` at byte {}, found `{}`",
                char::from(close),
                self.base + self.at as u64,
                char::from(b).escape_default()
            ))),
            None => Err(self.eof_error(what)),
        }
    }

    /// The next value's bytes (after whitespace), taken: found by its
    /// brackets and strings, not checked (its parse checks it). A value
    /// longer than [`MAX_LINE_BYTES`] is an error.
    #[cfg(test)]
    fn value(&mut self, what: &str) -> io::Result<&[u8]> {
        let range = self.value_range(what)?;
        Ok(&self.buf[range])
    }

    fn value_range(&mut self, what: &str) -> io::Result<Range<usize>> {
        if self.peek()?.is_none() {
            return Err(self.eof_error(what));
        }
        let mut scan = Scan::default();
        let mut start = self.at;
        let mut from = start;
        loop {
            if let Some(end) = scan.run(&self.buf, from) {
                self.at = end;
                return Ok(start..end);
            }
            if self.buf.len() - start > MAX_LINE_BYTES {
                return Err(invalid(format!(
                    "{what} at byte {} is longer than {MAX_LINE_BYTES} bytes",
                    self.base + start as u64
                )));
            }
            from = self.buf.len() - start;
            // Inside an object or a list, a value never ends the file.
            if !self.more(start)? {
                return Err(self.eof_error(what));
            }
            start = 0;
        }
    }

    /// The next value parsed as `T` (`what` names it in an error).
    pub(super) fn parse<'s, T: serde::Deserialize<'s>>(&'s mut self, what: &str) -> io::Result<T> {
        let at = self.base + self.at as u64;
        let range = self.value_range(what)?;
        serde_json::from_slice(&self.buf[range]).map_err(|e| invalid(format!("{e} (in {what} at byte {at})")))
    }

    /// Walks an object: `entry(self, key)` must take the key's value.
    pub(super) fn object(
        &mut self,
        what: &str,
        mut entry: impl FnMut(&mut Self, &str) -> io::Result<()>,
    ) -> io::Result<()> {
        self.expect(b'{', what)?;
        if self.peek()? == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        loop {
            let key: Cow<'_, str> = match self.peek()? {
                Some(b'"') => self.parse::<Cow<'_, str>>("a key")?.into_owned().into(),
                Some(_) => return Err(invalid(format!("expected a key at byte {}", self.base + self.at as u64))),
                None => return Err(self.eof_error(what)),
            };
            self.expect(b':', "`:`")?;
            entry(self, &key)?;
            if !self.comma_or(b'}', what)? {
                return Ok(());
            }
        }
    }

    /// Walks a list, whose `[` is next: `element(self)` must take each
    /// element.
    pub(super) fn list(&mut self, what: &str, mut element: impl FnMut(&mut Self) -> io::Result<()>) -> io::Result<()> {
        self.expect(b'[', what)?;
        if self.peek()? == Some(b']') {
            self.at += 1;
            return Ok(());
        }
        loop {
            element(self)?;
            if !self.comma_or(b']', what)? {
                return Ok(());
            }
        }
    }

    /// Whether anything but whitespace follows (serde_json's "trailing
    /// characters").
    pub(super) fn end(&mut self) -> io::Result<()> {
        match self.peek()? {
            None => Ok(()),
            Some(_) => Err(invalid(format!("trailing characters at byte {}", self.base + self.at as u64))),
        }
    }

    /// The next value's first byte (after whitespace), not taken.
    pub(super) fn next_byte(&mut self) -> io::Result<Option<u8>> {
        self.peek()
    }
}

/// Where a scan of one value stands: it resumes where the bytes it had
/// ended.
#[derive(Default)]
struct Scan {
    depth: usize,
    in_str: bool,
    /// The byte after a `\` in a string is skipped.
    escaped: bool,
    started: bool,
}

impl Scan {
    /// Scans `buf[from..]`: the end of the value (one past it), or `None`
    /// when it goes on past the bytes.
    fn run(&mut self, buf: &[u8], from: usize) -> Option<usize> {
        let mut i = from;
        while i < buf.len() {
            if self.in_str {
                if self.escaped {
                    self.escaped = false;
                    i += 1;
                    continue;
                }
                match memchr::memchr2(b'"', b'\\', &buf[i..]) {
                    None => return None,
                    Some(k) => {
                        i += k;
                        if buf[i] == b'\\' {
                            self.escaped = true;
                        } else {
                            self.in_str = false;
                            if self.depth == 0 {
                                return Some(i + 1);
                            }
                        }
                        i += 1;
                    }
                }
                continue;
            }
            let b = buf[i];
            if !self.started {
                self.started = true;
                match b {
                    b'"' => self.in_str = true,
                    b'{' | b'[' => self.depth = 1,
                    _ => {}
                }
                i += 1;
                continue;
            }
            if self.depth == 0 {
                // A number or a literal: up to the next delimiter.
                if matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                    return Some(i);
                }
                i += 1;
                continue;
            }
            match b {
                b'"' => self.in_str = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each top-level value's text, by a document read `chunk` bytes at a
    /// time.
    fn values(text: &str, chunk: usize) -> io::Result<Vec<(String, String)>> {
        struct Slow<'a>(&'a [u8], usize);
        impl Read for Slow<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(out.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut doc = Document::new(Slow(text.as_bytes(), chunk), 0);
        let mut out = Vec::new();
        doc.object("the session", |d, key| {
            let v = d.value("a value")?;
            serde_json::from_slice::<serde::de::IgnoredAny>(v).map_err(invalid)?;
            out.push((key.to_owned(), String::from_utf8(v.to_vec()).unwrap()));
            Ok(())
        })?;
        doc.end()?;
        Ok(out)
    }

    #[test]
    fn values_are_found_whatever_the_reads() {
        let text = r#" {"a" : 1, "b\"c":"x\\\"}]" ,"d":[{"e":[1,{"f":"]"}]},null], "g":{}, "h": -1.5e3 } "#;
        let want: Vec<(String, String)> = vec![
            ("a".into(), "1".into()),
            ("b\"c".into(), r#""x\\\"}]""#.into()),
            ("d".into(), r#"[{"e":[1,{"f":"]"}]},null]"#.into()),
            ("g".into(), "{}".into()),
            ("h".into(), "-1.5e3".into()),
        ];
        for chunk in [1, 2, 3, 7, 1 << 20] {
            assert_eq!(values(text, chunk).unwrap(), want, "{chunk}");
        }
    }

    #[test]
    fn what_serde_json_refuses_is_refused() {
        for bad in [
            r#"{"a":1"#,
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{"a":1} x"#,
            r#"{"a":[1,]}"#,
            r#"{"a":{]}"#,
            r#"{"a":tru}"#,
            r#"{a:1}"#,
            r#"{"a":"x"#,
        ] {
            assert!(serde_json::from_str::<serde_json::Value>(bad).is_err(), "{bad}");
            for chunk in [1, 4, 1 << 20] {
                assert!(values(bad, chunk).is_err(), "{bad} {chunk}");
            }
        }
        assert!(values(r#"{"a":1"#, 1).unwrap_err().to_string().starts_with("EOF while parsing"));
        // A document that is not an object is not a session.
        assert!(values(r#"["a"]"#, 1).is_err());
    }
}
