//! JSON text parsed as JavaScript's `JSON.parse` parses it, into a
//! [`Value`]: the parser for JSON *text* that callers of the C ABI, the Node
//! addon and the CLI hand over (configs, references, session lists,
//! snapshots given as text).

use serde_json::{Map, Number, Value};

use super::bytes::unicode_escape;

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
                            let at = self.i - 2; // the backslash
                            let (cp, taken) = unicode_escape(self.s, at).ok_or_else(|| self.err("bad \\u escape"))?;
                            self.i = at + taken;
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
