//! JSON written exactly as JavaScript's `JSON.stringify` writes it, and the
//! tag-safe variant (docs/contract.md §5) in which every `<` is written `\u003c`.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

use super::bytes::{next_escape, table, HEX};
use super::parse_js::parse_js;

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
    write_value_with(out, value, |out, s| write_string(out, s, tag_safe));
}

/// [`write_value`] with every string (keys included) written by `string`.
pub(crate) fn write_value_with(out: &mut String, value: &Value, string: impl Fn(&mut String, &str)) {
    let mut stack: Vec<Open<'_>> = Vec::new();
    let mut value = value;
    loop {
        match value {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => write_number(out, n),
            Value::String(s) => string(out, s),
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
                string(out, k);
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

/// Tag-safe JSON (docs/contract.md §5): `JSON.stringify(value)` with every `<` written
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
