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

/// Where `role` and `content` are among [`FIELDS`].
const ROLE: usize = 0;
const CONTENT: usize = 1;

/// Appends to `out` the SDK's hash input of the message whose JSON text is
/// `raw` (`JSON.stringify` of `[["role", role], ["content", content],
/// ["agent", agent ?? null], …]`, the user's text parts as `text_part`
/// rewrites them), or returns `false` (with `out` as it was) where the
/// exact path must write it. `scratch` is room to write the fields in
/// while they are read, in the message's order (reused from one message to
/// the next).
pub(super) fn hash_input(
    raw: &[u8],
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    text_part: impl Fn(&str) -> Option<String>,
) -> bool {
    let start = out.len();
    let ok = write_input(raw, out, scratch, &text_part).is_some();
    if !ok {
        out.truncate(start);
    }
    ok
}

/// One pass over the message: each field of the input written minified
/// into `scratch` as it is read (a user's content once its role is known),
/// every other field checked as the exact path would need it; then the
/// input put together from them in its order.
fn write_input(
    raw: &[u8],
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    text_part: &dyn Fn(&str) -> Option<String>,
) -> Option<()> {
    scratch.clear();
    let mut s = Scan { s: raw, i: 0, out: None };
    s.ws();
    (s.peek()? == b'{').then_some(())?;
    let mut keys: Vec<Range<usize>> = Vec::new();
    let mut slots: [Option<Range<usize>>; FIELDS.len()] = Default::default();
    // The role's text, and the content's place when it came before it.
    let (mut user, mut content_at) = (None, None);
    let mut more = s.opened(1, b"{", b'}')?;
    while more {
        let key = s.plain_key()?;
        if keys.iter().any(|k| raw[k.clone()] == raw[key.clone()]) {
            return None;
        }
        s.ws();
        (s.peek()? == b':').then_some(())?;
        s.i += 1;
        s.ws();
        match FIELDS.iter().position(|f| f.as_bytes() == &raw[key.clone()]) {
            Some(CONTENT) if user.is_none() => {
                let from = s.i;
                s.value(1)?;
                content_at = Some(from);
            }
            Some(field) => {
                let at = scratch.len();
                let mut v = Scan { s: raw, i: s.i, out: Some(scratch) };
                if field == CONTENT && user == Some(true) {
                    v.user_content(text_part)?;
                } else {
                    v.value(1)?;
                }
                s.i = v.i;
                slots[field] = Some(at..scratch.len());
                if field == ROLE {
                    // A plain string without `:` (else the SDK throws, or
                    // the exact path says why).
                    let role = scratch[at..].strip_prefix(b"\"")?.strip_suffix(b"\"")?;
                    if role.iter().any(|&b| b == b'\\' || b == b':' || b == b'"') {
                        return None;
                    }
                    user = Some(role == b"user");
                }
            }
            None => s.value(1)?,
        }
        keys.push(key);
        more = s.comma_or(b'}')?;
    }
    s.ws();
    (s.i == raw.len()).then_some(())?;
    let user = user?;
    if let Some(from) = content_at {
        let at = scratch.len();
        let mut v = Scan { s: raw, i: from, out: Some(scratch) };
        if user {
            v.user_content(text_part)?;
        } else {
            v.value(1)?;
        }
        slots[CONTENT] = Some(at..scratch.len());
    }
    out.push(b'[');
    for (n, name) in FIELDS.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"[\"");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\",");
        match &slots[n] {
            Some(value) => out.extend_from_slice(&scratch[value.clone()]),
            // A user message without content makes the SDK throw.
            None if user && n == CONTENT => return None,
            None => out.extend_from_slice(b"null"),
        }
        out.push(b']');
    }
    out.push(b']');
    Some(())
}

/// Whether `text`, a decimal with a fraction and no exponent (a cost, a
/// ratio), is the shortest text of its double that `JSON.stringify` writes:
/// between 1e-6 and 1e21 JavaScript writes a double that is not an integer
/// as Rust's `Display` does (the shortest digits that read back, without
/// an exponent), so it is compared with that, without building a value.
/// `false` for anything else (then the exact path decides).
fn written_back(text: &str) -> bool {
    /// Compares what is written with the bytes expected, as it is written.
    struct Same<'t>(&'t [u8], bool);
    impl std::fmt::Write for Same<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            match self.0.strip_prefix(s.as_bytes()) {
                Some(rest) => self.0 = rest,
                None => self.1 = false,
            }
            Ok(())
        }
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    let Some((int, frac)) = digits.split_once('.') else { return false };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(int) || !all_digits(frac) || (int.len() > 1 && int.starts_with('0')) {
        return false;
    }
    let Ok(x) = text.parse::<f64>() else { return false };
    if !(1e-6..1e21).contains(&x.abs()) || x.fract() == 0.0 {
        return false;
    }
    let mut same = Same(text.as_bytes(), true);
    std::fmt::Write::write_fmt(&mut same, format_args!("{x}")).is_ok() && same.1 && same.0.is_empty()
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
            b'{' => self.object(depth + 1).map(drop),
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
        if !plain && !written_back(text) {
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

    /// An object, copied; whether it is a text part (its `type` is
    /// `"text"`).
    fn object(&mut self, depth: usize) -> Option<bool> {
        let mut more = self.opened(depth, b"{", b'}')?;
        let mut keys: Vec<Range<usize>> = Vec::new();
        let mut text = false;
        while more {
            let key = self.plain_key()?;
            (keys.len() < MAX_KEYS && !keys.iter().any(|k| self.s[k.clone()] == self.s[key.clone()])).then_some(())?;
            self.ws();
            (self.peek()? == b':').then_some(())?;
            self.i += 1;
            self.emit(b":");
            self.ws();
            let from = self.i;
            self.value(depth)?;
            text |= self.s[key.clone()] == *b"type" && self.s[from..self.i] == *b"\"text\"";
            keys.push(key);
            more = self.comma_or(b'}')?;
        }
        Some(text)
    }

    /// A user message's content, a list: its text parts as the exact path
    /// (`text_part`) rewrites them, its other parts copied; anything else
    /// (a string, a part that is not an object) is left to the exact path.
    fn user_content(&mut self, text_part: &dyn Fn(&str) -> Option<String>) -> Option<()> {
        (self.peek()? == b'[').then_some(())?;
        let mut more = self.opened(1, b"[", b']')?;
        while more {
            let (from, mark) = (self.i, self.out.as_deref().map_or(0, Vec::len));
            (self.peek()? == b'{').then_some(())?;
            if self.object(2)? {
                let text = text_part(std::str::from_utf8(&self.s[from..self.i]).ok()?)?;
                if let Some(out) = self.out.as_deref_mut() {
                    out.truncate(mark);
                    out.extend_from_slice(text.as_bytes());
                }
            }
            more = self.comma_or(b']')?;
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

#[cfg(test)]
mod tests {
    use super::written_back;
    use crate::json::{parse_js, stringify};

    /// A decimal is taken as written exactly where the exact path writes it
    /// back the same, for the decimals it is meant for.
    #[test]
    fn a_decimal_is_taken_as_written_where_the_exact_path_writes_it_back() {
        let exact = |t: &str| parse_js(t).is_ok_and(|v| stringify(&v) == t);
        let mut texts: Vec<String> = [
            "0.1",
            "0.10",
            "-0.5",
            "0.0123456789",
            "0.48953100000000005",
            "0.4895310000000001",
            "01.5",
            "0.000001",
            "0.0000015",
            "0.0000001",
            "100000000000000000000.5",
            "999999999999999900000.0",
            "1.0",
            "-0.0",
            "0.30000000000000004",
            "0.3000000000000000444",
            "9007199254740993.5",
        ]
        .map(str::to_owned)
        .to_vec();
        let mut seed = 0x853c_49e6_748f_ea9bu64;
        for _ in 0..3000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let digits = (seed >> 11) % 10u64.pow((seed % 17) as u32 + 1);
            let x = digits as f64 * 10f64.powi((seed >> 5) as i32 % 24 - 22) * if seed & 16 == 0 { 1.0 } else { -1.0 };
            texts.push(format!("{x}"));
            texts.push(format!("{x:.4}"));
        }
        let mut taken = 0;
        for t in &texts {
            if written_back(t) {
                taken += 1;
                assert!(exact(t), "{t}");
            } else if exact(t) && t.contains('.') && !t.contains('e') {
                let x: f64 = t.parse().unwrap();
                assert!(!(1e-6..1e21).contains(&x.abs()), "{t} is left to the exact path");
            }
        }
        assert!(taken > 1000, "{taken} of {} taken", texts.len());
    }
}
