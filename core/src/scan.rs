//! A validating, single-pass JSON reader over bytes, for surface snapshots.
//!
//! Projection (SPEC §3) needs a few fields of a document that is mostly tool
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
        let base = self.stack.len();
        loop {
            // A value.
            match self.peek() {
                Some(b'{') => {
                    self.pos += 1;
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
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

/// The length of a backslash escape by the byte after the backslash: 2 for
/// the short escapes, 6 for `\\u` (four hex digits follow), 0 if invalid.
static ESCAPE_LEN: [u8; 256] = {
    let mut t = [0u8; 256];
    let short = *b"\"\\/bfnrt";
    let mut k = 0;
    while k < short.len() {
        t[short[k] as usize] = 2;
        k += 1;
    }
    t[b'u' as usize] = 6;
    t
};

/// The value of the four hex digits at `b[at..at + 4]`, if they are that.
fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    digits.iter().try_fold(0u32, |acc, &h| Some(acc * 16 + (h as char).to_digit(16)?))
}

/// The `\\uXXXX` escape whose backslash is at `b[at]`: the code point it
/// stands for and the bytes it takes. A high surrogate followed by an
/// escaped low surrogate is one character (12 bytes); any other surrogate
/// is returned alone. `None` when the four hex digits are not.
pub(crate) fn unicode_escape(b: &[u8], at: usize) -> Option<(u32, usize)> {
    let cp = hex4(b, at + 2)?;
    if (0xD800..0xDC00).contains(&cp) && b.get(at + 6..at + 8) == Some(b"\\u") {
        if let Some(lo) = hex4(b, at + 8).filter(|lo| (0xDC00..0xE000).contains(lo)) {
            return Some((0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00), 12));
        }
    }
    Some((cp, 6))
}

/// The UTF-8 length of the code point `cp`; a lone surrogate counts as
/// U+FFFD (3 bytes), as JavaScript's `TextEncoder` counts it.
fn utf8_len(cp: u32) -> usize {
    match cp {
        0..=0x7f => 1,
        0x80..=0x7ff => 2,
        0x800..=0xffff => 3,
        _ => 4,
    }
}

/// What [`classify`] found in up to 16 bytes of a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Block {
    /// Bit k: byte k is `"`, `\` or a control character.
    special: u32,
    /// Bit k: byte k is not ASCII.
    high: u32,
    /// How many bytes were classified: 16, fewer at the end of the input.
    len: usize,
}

/// Classifies the 16 bytes at `b[i..]` (fewer at the end of `b`), with
/// SSE2, part of every x86-64 CPU.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn classify(b: &[u8], i: usize) -> Block {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    if i + 16 > b.len() {
        return classify_scalar(b, i);
    }
    // SAFETY: SSE2 is enabled on every x86-64 target, and the unaligned load
    // reads the 16 bytes at `i..i + 16`, which are inside `b` (checked above).
    unsafe {
        let v = _mm_loadu_si128(b.as_ptr().add(i).cast::<__m128i>());
        let ctrl_max = _mm_set1_epi8(0x1f);
        // max(v, 0x1f) == 0x1f exactly for the bytes 0x00..=0x1f.
        let ctrl = _mm_cmpeq_epi8(_mm_max_epu8(v, ctrl_max), ctrl_max);
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        let special = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), ctrl)) as u32;
        Block { special, high: _mm_movemask_epi8(v) as u32, len: 16 }
    }
}

/// [`classify`] without vector instructions, eight bytes at a time.
#[cfg(not(target_arch = "x86_64"))]
fn classify(b: &[u8], i: usize) -> Block {
    classify_swar(b, i)
}

/// [`classify`] in portable word-at-a-time code: exact per-byte tests on
/// two 64-bit words, their high bits packed into masks.
#[cfg(any(not(target_arch = "x86_64"), test))]
fn classify_swar(b: &[u8], i: usize) -> Block {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let Some(words) = b.get(i..i + 16) else { return classify_scalar(b, i) };
    // The high bit of each byte equal to zero (exact, no borrows).
    let zero = |x: u64| !(((x & LO7) + LO7) | x | LO7);
    // The high bit of each byte below 0x20 (exact: no carry leaves a byte).
    let below_space = |w: u64| !((w & LO7) + ONES * 0x60) & !w & HIGHS;
    // The high bits of the eight bytes, packed into eight bits.
    let pack = |m: u64| ((m & HIGHS).wrapping_mul(0x0002_0408_1020_4081) >> 56) as u32;
    let (mut special, mut high) = (0u32, 0u32);
    for (k, chunk) in words.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let hits = zero(w ^ (ONES * b'"' as u64)) | zero(w ^ (ONES * b'\\' as u64)) | below_space(w);
        special |= pack(hits) << (8 * k);
        high |= pack(w) << (8 * k);
    }
    Block { special, high, len: 16 }
}

/// [`classify`] one byte at a time (for the last bytes of the input).
fn classify_scalar(b: &[u8], i: usize) -> Block {
    let tail = b.get(i..).unwrap_or_default();
    let len = tail.len().min(16);
    let (mut special, mut high) = (0u32, 0u32);
    for (k, &c) in tail[..len].iter().enumerate() {
        special |= u32::from(c == b'"' || c == b'\\' || c < 0x20) << k;
        high |= u32::from(c >= 0x80) << k;
    }
    Block { special, high, len }
}

/// The offset of the first byte of `s` that is `a` or `b`. For the short
/// gaps between escapes in text, an inline loop over 16-byte blocks (SSE2)
/// beats a call into `memchr2`.
pub(crate) fn find2(s: &[u8], a: u8, b: u8) -> Option<usize> {
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is enabled on every x86-64 target, and each unaligned
        // load reads the 16 bytes at `i..i + 16`, which are inside `s`.
        unsafe {
            let (va, vb) = (_mm_set1_epi8(a as i8), _mm_set1_epi8(b as i8));
            while i + 16 <= s.len() {
                let v = _mm_loadu_si128(s.as_ptr().add(i).cast::<__m128i>());
                let mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb)));
                if mask != 0 {
                    return Some(i + mask.trailing_zeros() as usize);
                }
                i += 16;
            }
        }
    }
    s[i..].iter().position(|&c| c == a || c == b).map(|p| i + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find2_finds_the_first_of_either_byte() {
        let mut seed = 11u64;
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (seed >> 33) as usize % 80;
            let s: Vec<u8> =
                (0..len).map(|k| [b'x', b'x', b'x', b'<', b'\\', 0xe9][(seed >> (k % 60)) as usize % 6]).collect();
            assert_eq!(find2(&s, b'\\', b'<'), s.iter().position(|&c| c == b'\\' || c == b'<'), "{s:?}");
        }
    }

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
    fn every_classifier_classifies_blocks_alike() {
        let alphabet = [b'a', b'"', b'\\', 0x01, 0x1f, 0x20, 0x7f, 0x80, 0xff, b'<', 0xc3, 0xa9, 0x00, 0x9f];
        let mut seed = 7u64;
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (seed >> 33) as usize % 40;
            let plain = (seed >> 20) as usize % 4 == 0;
            let s: Vec<u8> = (0..len)
                .map(|k| {
                    let r = (seed >> (k % 50)) as usize ^ k.wrapping_mul(2654435761);
                    if plain && r % 9 != 0 {
                        b'x'
                    } else {
                        alphabet[r % alphabet.len()]
                    }
                })
                .collect();
            for i in 0..=s.len() {
                let want = classify_scalar(&s, i);
                assert_eq!(classify(&s, i), want, "{s:?} at {i}");
                assert_eq!(classify_swar(&s, i), want, "{s:?} at {i}");
            }
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
