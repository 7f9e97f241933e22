//! The tag-safe literal transcoder: a valid JSON string literal of the input
//! written as the tag-safe JSON of its decoded text (docs/contract.md §5), without
//! decoding it first. Kept texts go from a snapshot's bytes to the prompt
//! through here; [`tag_safe_len`] counts the same bytes without writing them.

use super::bytes::{find2, unicode_escape, HEX};
use super::invisible::{self, Piece, Pieces};
use super::read::Str;

/// Bytes of the tag-safe form of the literal `s`, quotes included (with
/// invisible characters escaped when `escape_invisible` is on).
pub(crate) fn tag_safe_len(s: &Str<'_>, escape_invisible: bool) -> usize {
    let mut count = Count(0);
    // The reader validated the literal; an error cannot happen.
    transcode(std::str::from_utf8(s.lit).unwrap_or("\"\""), &mut count, escape_invisible);
    count.0
}

/// Appends the tag-safe form of the literal `s` to `out` (with invisible
/// characters escaped when `escape_invisible` is on). An escaped lone
/// surrogate cannot be written as UTF-8: that is an error, and `out` is left
/// as it was.
pub(crate) fn write_tag_safe(s: &Str<'_>, out: &mut String, escape_invisible: bool) -> Result<(), String> {
    let start = out.len();
    let lit = std::str::from_utf8(s.lit).map_err(|e| format!("malformed text: {e}"))?;
    let mut sink = Write { out, lone_surrogate: false };
    transcode(lit, &mut sink, escape_invisible);
    if sink.lone_surrogate {
        out.truncate(start);
        return Err("malformed text: a lone surrogate cannot be written as UTF-8".into());
    }
    Ok(())
}

/// Where [`transcode`] puts the tag-safe form of a literal.
trait Sink {
    /// Text written as it is: a run of the literal or an escape.
    fn str(&mut self, s: &str);
    /// One character decoded from an escape.
    fn char(&mut self, c: char);
    /// An escaped lone surrogate (JavaScript writes it as `\udxxx`).
    fn lone_surrogate(&mut self);
}

/// Counts the bytes of the tag-safe form.
struct Count(usize);

impl Sink for Count {
    fn str(&mut self, s: &str) {
        self.0 += s.len();
    }
    fn char(&mut self, c: char) {
        self.0 += c.len_utf8();
    }
    fn lone_surrogate(&mut self) {
        self.0 += 6;
    }
}

/// Writes the tag-safe form; a lone surrogate cannot be written to a Rust
/// string and is only noted.
struct Write<'o> {
    out: &'o mut String,
    lone_surrogate: bool,
}

impl Sink for Write<'_> {
    fn str(&mut self, s: &str) {
        self.out.push_str(s);
    }
    fn char(&mut self, c: char) {
        self.out.push(c);
    }
    fn lone_surrogate(&mut self) {
        self.lone_surrogate = true;
    }
}

/// Turns a valid JSON string literal (quotes included) into the tag-safe
/// JSON of its decoded text, as `JSON.stringify` writes it with every `<`
/// as `\u003c`, without decoding it first: runs without `\` or `<` are
/// copied, and each escape is written in its canonical form. With
/// `escape_invisible`, invisible characters, raw or escaped, are written as
/// escapes (as `invisible::write_string` writes them).
fn transcode(text: &str, sink: &mut impl Sink, escape_invisible: bool) {
    let lit = text.as_bytes();
    let end = lit.len() - 1;
    sink.str("\"");
    let mut i = 1;
    while i < end {
        let Some(off) = find2(&lit[i..end], b'\\', b'<') else {
            run(sink, &text[i..end], escape_invisible);
            break;
        };
        // Runs end at ASCII bytes, so they are whole characters.
        run(sink, &text[i..i + off], escape_invisible);
        i += off;
        if lit[i] == b'<' {
            sink.str("\\u003c");
            i += 1;
            continue;
        }
        let (cp, taken) = match lit[i + 1] {
            b'u' => unicode_escape(lit, i).unwrap_or((0xFFFD, 6)),
            b'/' => (u32::from(b'/'), 2),
            // The other short escapes are already canonical.
            _ => {
                sink.str(&text[i..i + 2]);
                i += 2;
                continue;
            }
        };
        i += taken;
        match cp {
            0x08 => sink.str("\\b"),
            0x09 => sink.str("\\t"),
            0x0a => sink.str("\\n"),
            0x0c => sink.str("\\f"),
            0x0d => sink.str("\\r"),
            0x22 => sink.str("\\\""),
            0x5c => sink.str("\\\\"),
            0..=0x1f | 0x3c => {
                sink.str("\\u00");
                sink.char(HEX[(cp >> 4) as usize] as char);
                sink.char(HEX[(cp & 15) as usize] as char);
            }
            _ => match char::from_u32(cp) {
                Some(c) if escape_invisible && invisible::is_invisible(c) => {
                    sink.str(invisible::escape(c, &mut [0; 12]))
                }
                Some(c) => sink.char(c),
                None => sink.lone_surrogate(),
            },
        }
    }
    sink.str("\"");
}

/// A run of a literal without `\` or `<`, split at its invisible characters
/// when `escape_invisible` is on.
fn run(sink: &mut impl Sink, s: &str, escape_invisible: bool) {
    if !escape_invisible {
        return sink.str(s);
    }
    for piece in Pieces::new(s) {
        match piece {
            Piece::Run(r) => sink.str(r),
            Piece::Invisible(c) => sink.str(invisible::escape(c, &mut [0; 12])),
        }
    }
}
