//! JSON exactly as JavaScript's `JSON.stringify` prints it, and the tag-safe
//! variant (SPEC §5) in which every `<` is written `\u003c`.
//!
//! Also a JSON text parser with `JSON.parse` semantics (numbers are doubles,
//! `1e400` is Infinity, a duplicate key keeps the last value at the first
//! key's position), used where a caller hands us JSON *text* to stringify.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// What one byte of a UTF-8 string becomes inside a JSON string literal.
/// 0 = itself, b'u' = `\u00xx`, anything else = the short escape `\x`.
const fn escape_table(tag_safe: bool) -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    if tag_safe {
        t[b'<' as usize] = b'u';
    }
    t
}

static PLAIN: [u8; 256] = escape_table(false);
static TAG_SAFE: [u8; 256] = escape_table(true);

fn table(tag_safe: bool) -> &'static [u8; 256] {
    if tag_safe {
        &TAG_SAFE
    } else {
        &PLAIN
    }
}

/// The index of the first byte at or after `i` that `s` escapes (`"`, `\\`,
/// a control character, and `<` when tag-safe), or `s.len()`. Eight bytes at
/// a time: texts are mostly runs that need no escape.
fn next_escape(s: &[u8], mut i: usize, tag_safe: bool) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte below `n`; exact for the lowest such byte,
    // the only one used (a borrow reaches only bytes above a match).
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * n as u64) & !w & HIGHS;
    while let Some(chunk) = s.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let mut hits = below(w ^ (ONES * b'"' as u64), 1) | below(w ^ (ONES * b'\\' as u64), 1) | below(w, 0x20);
        if tag_safe {
            hits |= below(w ^ (ONES * b'<' as u64), 1);
        }
        if hits != 0 {
            return i + hits.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    let t = table(tag_safe);
    while i < s.len() && t[s[i] as usize] == 0 {
        i += 1;
    }
    i
}

/// Appends `s` as a JSON string literal (with quotes) to `out`.
pub fn write_string(out: &mut String, s: &str, tag_safe: bool) {
    out.reserve(s.len() + 2);
    out.push('"');
    write_string_body(out, s, tag_safe);
    out.push('"');
}

/// Appends `s` as the inside of a JSON string literal (no quotes).
pub(crate) fn write_string_body(out: &mut String, s: &str, tag_safe: bool) {
    let t = table(tag_safe);
    let bytes = s.as_bytes();
    let mut start = 0;
    loop {
        let i = next_escape(bytes, start, tag_safe);
        // Every escaped byte is ASCII, so `start..i` are char boundaries.
        out.push_str(&s[start..i]);
        let Some(&b) = bytes.get(i) else { break };
        out.push('\\');
        let e = t[b as usize];
        if e == b'u' {
            out.push_str("u00");
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        } else {
            out.push(e as char);
        }
        start = i + 1;
    }
}

/// The length in bytes of `s` written as a JSON string literal, quotes
/// included, without writing it.
pub fn string_len(s: &str, tag_safe: bool) -> usize {
    let t = table(tag_safe);
    let bytes = s.as_bytes();
    let mut extra = 0usize;
    let mut i = next_escape(bytes, 0, tag_safe);
    while let Some(&b) = bytes.get(i) {
        extra += if t[b as usize] == b'u' { 5 } else { 1 };
        i = next_escape(bytes, i + 1, tag_safe);
    }
    s.len() + extra + 2
}

/// `JSON.stringify(s)` for a string.
pub fn js_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_string(&mut out, s, false);
    out
}

/// Appends a double as JavaScript's `Number.prototype.toString` writes it
/// (shortest round-trip digits; exponent form below 1e-6 and from 1e21;
/// `-0` as `0`), or `null` for a non-finite value as `JSON.stringify` does.
pub fn write_f64(out: &mut String, x: f64) {
    if !x.is_finite() {
        out.push_str("null");
        return;
    }
    if x == 0.0 {
        out.push('0');
        return;
    }
    if x < 0.0 {
        out.push('-');
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "d.ddde-7", "de21".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{}", if n > 0 { '+' } else { '-' }, (n - 1).abs());
    }
}

/// Appends a JSON number as JavaScript would print it after `JSON.parse`
/// (integers beyond 2^53 lose precision exactly as a double does).
pub fn write_number(out: &mut String, n: &Number) {
    const SAFE: u64 = 1 << 53;
    if let Some(u) = n.as_u64() {
        if u <= SAFE {
            let _ = write!(out, "{u}");
            return;
        }
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= SAFE {
            let _ = write!(out, "{i}");
            return;
        }
    }
    write_f64(out, n.as_f64().unwrap_or(f64::NAN));
}

/// Whether `key` is an array index (`"0"` … `"4294967294"` in canonical
/// form), which JavaScript objects list first, in ascending numeric order.
fn array_index(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || (b.len() > 1 && b[0] == b'0') || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v: u64 = key.parse().ok()?;
    (v < u32::MAX as u64).then_some(v as u32)
}

/// An object's entries in JavaScript's property order: array-index keys
/// first, ascending, then the rest in insertion order.
fn js_order(map: &Map<String, Value>) -> Vec<(&str, &Value)> {
    let mut entries: Vec<(&str, &Value)> = Vec::with_capacity(map.len());
    if map.keys().any(|k| array_index(k).is_some()) {
        let mut idx: Vec<(u32, &str, &Value)> =
            map.iter().filter_map(|(k, v)| array_index(k).map(|i| (i, k.as_str(), v))).collect();
        idx.sort_by_key(|e| e.0);
        entries.extend(idx.into_iter().map(|(_, k, v)| (k, v)));
        entries.extend(map.iter().filter(|(k, _)| array_index(k).is_none()).map(|(k, v)| (k.as_str(), v)));
    } else {
        entries.extend(map.iter().map(|(k, v)| (k.as_str(), v)));
    }
    entries
}

/// A container being written: what is left of it, and whether a comma is due.
struct Open<'a> {
    rest: Rest<'a>,
    first: bool,
}

enum Rest<'a> {
    Array(std::slice::Iter<'a, Value>),
    Object(std::vec::IntoIter<(&'a str, &'a Value)>),
}

/// Appends `value` as `JSON.stringify` would (compact; object keys in
/// JavaScript's property order), tag-safe when asked. Iterative: any depth
/// of nesting is written without recursion.
pub fn write_value(out: &mut String, value: &Value, tag_safe: bool) {
    let mut stack: Vec<Open<'_>> = Vec::new();
    let mut value = value;
    loop {
        match value {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => write_number(out, n),
            Value::String(s) => write_string(out, s, tag_safe),
            Value::Array(items) => {
                out.push('[');
                stack.push(Open { rest: Rest::Array(items.iter()), first: true });
            }
            Value::Object(map) => {
                out.push('{');
                stack.push(Open { rest: Rest::Object(js_order(map).into_iter()), first: true });
            }
        }
        // The next value to write, closing every finished container.
        loop {
            let Some(open) = stack.last_mut() else { return };
            let next = match &mut open.rest {
                Rest::Array(items) => items.next().map(|v| (None, v)),
                Rest::Object(entries) => entries.next().map(|(k, v)| (Some(k), v)),
            };
            let Some((key, v)) = next else {
                out.push(if matches!(open.rest, Rest::Array(_)) { ']' } else { '}' });
                stack.pop();
                continue;
            };
            if !std::mem::take(&mut open.first) {
                out.push(',');
            }
            if let Some(k) = key {
                write_string(out, k, tag_safe);
                out.push(':');
            }
            value = v;
            break;
        }
    }
}

/// `JSON.stringify(value)`.
pub fn stringify(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, false);
    out
}

/// Tag-safe JSON (SPEC §5): `JSON.stringify(value)` with every `<` written
/// as `\u003c`. The result parses back to the same value and contains no `<`.
pub fn stringify_tag_safe(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, true);
    out
}

/// Tag-safe JSON of a JSON *text*, read with `JSON.parse` semantics first
/// (see [`parse_js`]). Errors describe where the text is not JSON.
pub fn stringify_tag_safe_text(text: &str) -> Result<String, String> {
    Ok(stringify_tag_safe(&parse_js(text)?))
}

/// The deepest nesting [`parse_js`] accepts: 128 levels, as serde_json.
/// The parser recurses on the caller's thread (about 500 bytes of stack per
/// level), and a C or musl caller may have as little as 128 KiB of stack.
pub const MAX_PARSE_DEPTH: usize = 128;

/// Parses JSON text as JavaScript's `JSON.parse` does, into a [`Value`]:
/// every number becomes a double (`1e400` becomes Infinity, kept as `null`
/// since that is how it stringifies; integral values within 2^53 are kept as
/// integers), and a duplicate key keeps its first position with the last
/// value. Lone surrogate escapes are rejected (Rust strings cannot hold them).
pub fn parse_js(text: &str) -> Result<Value, String> {
    let mut p = JsParser { s: text.as_bytes(), i: 0, depth: 0 };
    p.ws();
    let v = p.value()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("unexpected text after the JSON value"));
    }
    Ok(v)
}

struct JsParser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl JsParser<'_> {
    fn err(&self, what: &str) -> String {
        format!("invalid JSON at byte {}: {what}", self.i)
    }
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }
    fn eat(&mut self, lit: &[u8]) -> bool {
        if self.s[self.i..].starts_with(lit) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }
    fn value(&mut self) -> Result<Value, String> {
        match self.s.get(self.i) {
            None => Err(self.err("unexpected end")),
            Some(b'n') if self.eat(b"null") => Ok(Value::Null),
            Some(b't') if self.eat(b"true") => Ok(Value::Bool(true)),
            Some(b'f') if self.eat(b"false") => Ok(Value::Bool(false)),
            Some(b'"') => self.string().map(Value::String),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'[') => {
                self.enter()?;
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if !self.eat(b"]") {
                    loop {
                        self.ws();
                        items.push(self.value()?);
                        self.ws();
                        if self.eat(b"]") {
                            break;
                        }
                        if !self.eat(b",") {
                            return Err(self.err("expected `,` or `]`"));
                        }
                    }
                }
                self.depth -= 1;
                Ok(Value::Array(items))
            }
            Some(b'{') => {
                self.enter()?;
                self.i += 1;
                let mut map = Map::new();
                self.ws();
                if !self.eat(b"}") {
                    loop {
                        self.ws();
                        if self.s.get(self.i) != Some(&b'"') {
                            return Err(self.err("expected a key"));
                        }
                        let k = self.string()?;
                        self.ws();
                        if !self.eat(b":") {
                            return Err(self.err("expected `:`"));
                        }
                        self.ws();
                        let v = self.value()?;
                        map.insert(k, v); // keeps the first position
                        self.ws();
                        if self.eat(b"}") {
                            break;
                        }
                        if !self.eat(b",") {
                            return Err(self.err("expected `,` or `}`"));
                        }
                    }
                }
                self.depth -= 1;
                Ok(Value::Object(map))
            }
            Some(_) => Err(self.err("unexpected character")),
        }
    }
    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_PARSE_DEPTH {
            return Err(self.err("nesting is too deep"));
        }
        Ok(())
    }
    fn number(&mut self) -> Result<Value, String> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let s = p.i;
            while let Some(b'0'..=b'9') = p.s.get(p.i) {
                p.i += 1;
            }
            p.i - s
        };
        self.eat(b"-");
        if self.eat(b"0") {
        } else if digits(self) == 0 {
            return Err(self.err("expected a digit"));
        }
        if self.eat(b".") && digits(self) == 0 {
            return Err(self.err("expected a digit after `.`"));
        }
        if matches!(self.s.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if !self.eat(b"+") {
                self.eat(b"-");
            }
            if digits(self) == 0 {
                return Err(self.err("expected an exponent"));
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|_| self.err("bad number"))?;
        let f: f64 = text.parse().map_err(|_| self.err("bad number"))?;
        Ok(if !f.is_finite() {
            Value::Null
        } else if f.fract() == 0.0 && f.abs() <= (1u64 << 53) as f64 && !(f == 0.0 && f.is_sign_negative()) {
            Value::Number(Number::from(f as i64))
        } else {
            Number::from_f64(f).map_or(Value::Null, Value::Number)
        })
    }
    fn hex4(&mut self) -> Result<u32, String> {
        let h = self.s.get(self.i..self.i + 4).ok_or_else(|| self.err("short \\u escape"))?;
        let h = std::str::from_utf8(h).map_err(|_| self.err("bad \\u escape"))?;
        let v = u32::from_str_radix(h, 16).map_err(|_| self.err("bad \\u escape"))?;
        self.i += 4;
        Ok(v)
    }
    fn string(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let start = self.i;
            while let Some(&b) = self.s.get(self.i) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.i += 1;
            }
            out.extend_from_slice(&self.s[start..self.i]);
            match self.s.get(self.i) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.i += 1;
                    return String::from_utf8(out).map_err(|_| self.err("invalid UTF-8"));
                }
                Some(b'\\') => {
                    self.i += 1;
                    let e = *self.s.get(self.i).ok_or_else(|| self.err("unterminated escape"))?;
                    self.i += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi) {
                                if !self.eat(b"\\u") {
                                    return Err(self.err("lone surrogate"));
                                }
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err("lone surrogate"));
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            char::from_u32(cp).ok_or_else(|| self.err("lone surrogate"))?
                        }
                        _ => return Err(self.err("bad escape")),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                Some(_) => return Err(self.err("control character in string")),
            }
        }
    }
}
