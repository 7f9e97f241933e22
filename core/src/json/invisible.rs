//! `escapeInvisible`: characters a reader of the prompt cannot see, written
//! as `\uXXXX` escapes by the tag-safe serializer (lossless: the JSON parses
//! back to the same text).

use super::write_string_body;

/// Whether `c` is written as an escape when `escapeInvisible` is on (and
/// dropped from labels by `sanitizeLabels`):
///
/// - DEL and the C1 controls (U+007F–U+009F), which `JSON.stringify` leaves
///   raw (it escapes only U+0000–U+001F);
/// - every format character (general category Cf), among them the soft
///   hyphen, the Arabic letter mark U+061C, the zero-width characters
///   U+200B–U+200D, U+2060 and U+FEFF, the direction marks U+200E/U+200F,
///   the bidirectional embeddings and overrides U+202A–U+202E and isolates
///   U+2066–U+2069, the interlinear annotation controls U+FFF9–U+FFFB and the
///   tag characters U+E0001 and U+E0020–U+E007F (the whole tag block
///   U+E0000–U+E007F is escaped, assigned or not);
/// - the line and paragraph separators U+2028/U+2029;
/// - other characters that render as nothing: the combining grapheme joiner
///   U+034F, the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, the Khmer
///   inherent vowels U+17B4/U+17B5, the Mongolian variation selectors and
///   vowel separator U+180B–U+180F, the braille pattern blank U+2800, and
///   every variation selector, U+FE00–U+FE0F and the supplement
///   U+E0100–U+E01EF (256 of them spell any byte invisibly after a visible
///   character; an emoji's U+FE0F is escaped too, and reads the same once
///   parsed);
/// - the fullwidth and small-form look-alikes of `<` and `>` (U+FF1C,
///   U+FF1E, U+FE64, U+FE65), which cannot close the frame but can look
///   like a closing tag to a model or a reviewer.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c as u32,
        0x7F..=0x9F
            | 0xAD
            | 0x34F
            | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x206F
            | 0x2800
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFE64..=0xFE65
            | 0xFEFF
            | 0xFF1C
            | 0xFF1E
            | 0xFFA0
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE007F
            | 0xE0100..=0xE01EF
    )
}

/// One piece of a text split at its invisible characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Piece<'s> {
    /// A run without invisible characters (never empty).
    Run(&'s str),
    /// One invisible character.
    Invisible(char),
}

/// The pieces of a text, left to right. ASCII is skipped eight bytes at a
/// time; every character at or above U+007F is looked at once.
pub(crate) struct Pieces<'s> {
    s: &'s str,
    /// The start of the current run.
    start: usize,
    /// Where the search for the next invisible character resumes.
    at: usize,
    /// An invisible character found after a run that was returned first.
    pending: Option<char>,
}

impl<'s> Pieces<'s> {
    pub(crate) fn new(s: &'s str) -> Self {
        Pieces { s, start: 0, at: 0, pending: None }
    }
}

/// The index of the first byte at or after `i` that is 0x7F or above, or `s.len()`.
fn next_candidate(s: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = s.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        // A byte below 0x7F has neither its high bit nor, plus one, a carry
        // into it; the lowest hit is exact (a carry only rises from a hit).
        let hits = (w | w.wrapping_add(ONES)) & HIGHS;
        if hits != 0 {
            return i + hits.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while i < s.len() && s[i] < 0x7F {
        i += 1;
    }
    i
}

impl<'s> Iterator for Pieces<'s> {
    type Item = Piece<'s>;

    fn next(&mut self) -> Option<Piece<'s>> {
        if let Some(c) = self.pending.take() {
            return Some(Piece::Invisible(c));
        }
        let bytes = self.s.as_bytes();
        loop {
            let i = next_candidate(bytes, self.at);
            // `i` is a character boundary: everything before it since the
            // last boundary was ASCII.
            let Some(c) = self.s[i..].chars().next() else {
                self.at = i;
                let run = &self.s[self.start..i];
                self.start = i;
                return (!run.is_empty()).then_some(Piece::Run(run));
            };
            self.at = i + c.len_utf8();
            if is_invisible(c) {
                let run = &self.s[self.start..i];
                self.start = self.at;
                if run.is_empty() {
                    return Some(Piece::Invisible(c));
                }
                self.pending = Some(c);
                return Some(Piece::Run(run));
            }
        }
    }
}

/// The JSON escape of `c`: `\uxxxx` (lowercase hex, as `JSON.stringify`
/// writes its escapes), or a surrogate pair of them above U+FFFF.
pub(crate) fn escape(c: char, buf: &mut [u8; 12]) -> &str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut units = [0u16; 2];
    let units = c.encode_utf16(&mut units);
    for (k, u) in units.iter().enumerate() {
        let at = &mut buf[k * 6..k * 6 + 6];
        at[0] = b'\\';
        at[1] = b'u';
        for d in 0..4 {
            at[2 + d] = HEX[((u >> (12 - 4 * d)) & 15) as usize];
        }
    }
    std::str::from_utf8(&buf[..units.len() * 6]).unwrap_or_default()
}

/// The length of [`escape`]`(c)`.
pub(crate) fn escape_len(c: char) -> usize {
    c.len_utf16() * 6
}

/// Appends `s` as a tag-safe JSON string literal (quotes included) with
/// every [invisible](is_invisible) character escaped.
pub fn write_string(out: &mut String, s: &str) {
    write_string_with(out, s, true);
}

/// [`write_string`], tag-safe or not.
fn write_string_with(out: &mut String, s: &str, tag_safe: bool) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut buf = [0u8; 12];
    for piece in Pieces::new(s) {
        match piece {
            Piece::Run(run) => write_string_body(out, run, tag_safe),
            Piece::Invisible(c) => out.push_str(escape(c, &mut buf)),
        }
    }
    out.push('"');
}

/// `JSON.stringify(value)` with every [invisible](is_invisible) character
/// of its strings written as a `\uXXXX` escape: the same value once
/// parsed, with no invisible character left raw in the text (what the
/// command line prints for `--json` under `escapeInvisible`).
pub fn stringify(value: &serde_json::Value) -> String {
    let mut out = String::new();
    super::write::write_value_with(&mut out, value, |out, s| write_string_with(out, s, false));
    out
}

/// `s` with every [invisible](is_invisible) character replaced by the
/// text of its escape (`\u200b`: a backslash, `u` and four hex digits),
/// for a text that leaves as a parsed string (a structured result a client
/// decodes), where a JSON escape would turn back into the character. Lossy
/// only in that a reader cannot tell the escape from the same six
/// characters typed; borrowed when there is nothing to replace.
pub fn escape_as_text(s: &str) -> std::borrow::Cow<'_, str> {
    let mut pieces = Pieces::new(s).peekable();
    if matches!(pieces.peek(), Some(Piece::Run(run)) if run.len() == s.len()) || s.is_empty() {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 12);
    let mut buf = [0u8; 12];
    for piece in pieces {
        match piece {
            Piece::Run(run) => out.push_str(run),
            Piece::Invisible(c) => out.push_str(escape(c, &mut buf)),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The length in bytes of [`write_string`]`(s)`, without writing it.
pub fn string_len(s: &str) -> usize {
    let mut len = 2;
    for piece in Pieces::new(s) {
        len += match piece {
            Piece::Run(run) => super::string_len(run, true) - 2,
            Piece::Invisible(c) => escape_len(c),
        };
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces of `s`, found one character at a time.
    fn naive(s: &str) -> Vec<Piece<'_>> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, c) in s.char_indices() {
            if is_invisible(c) {
                if start < i {
                    out.push(Piece::Run(&s[start..i]));
                }
                out.push(Piece::Invisible(c));
                start = i + c.len_utf8();
            }
        }
        if start < s.len() {
            out.push(Piece::Run(&s[start..]));
        }
        out
    }

    #[test]
    fn pieces_match_a_character_by_character_split() {
        let alphabet = [
            "a",
            "<",
            "\"",
            "\\",
            "\n",
            "\u{7f}",
            "\u{80}",
            "\u{9f}",
            "\u{a0}",
            "é",
            "\u{200b}",
            "\u{202e}",
            "\u{2066}",
            "\u{feff}",
            "\u{fe0f}",
            "\u{ff1c}",
            "中",
            "😀",
            "\u{e0041}",
            "\u{e007f}",
            "\u{e0100}",
            "0123456789",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let n = (next() % 24) as usize;
            let s: String = (0..n).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
            assert_eq!(Pieces::new(&s).collect::<Vec<_>>(), naive(&s), "{s:?}");
            let mut out = String::new();
            write_string(&mut out, &s);
            assert_eq!(out.len(), string_len(&s), "{s:?}");
            assert_eq!(serde_json::from_str::<String>(&out).unwrap(), s, "{s:?}");
            assert!(!out.contains('<'));
            assert!(!out.chars().any(is_invisible), "{out:?}");
        }
    }

    #[test]
    fn escapes_are_lowercase_and_pairs_above_the_bmp() {
        let mut buf = [0u8; 12];
        assert_eq!(escape('\u{200b}', &mut buf), "\\u200b");
        assert_eq!(escape('\u{feff}', &mut buf), "\\ufeff");
        assert_eq!(escape('\u{e0041}', &mut buf), "\\udb40\\udc41");
        assert_eq!(escape_len('\u{e0041}'), 12);
        let mut out = String::new();
        write_string(&mut out, "a\u{202e}b<\u{e0049}\u{7f}");
        assert_eq!(out, r#""a\u202eb\u003c\udb40\udc49\u007f""#);
    }

    #[test]
    fn every_listed_range_is_escaped_and_neighbours_are_not() {
        for cp in [
            0x7F, 0x9F, 0xAD, 0x61C, 0x200B, 0x200F, 0x202A, 0x202E, 0x2060, 0x2066, 0x2069, 0xFEFF, 0xE0000, 0xE007F,
            0xE0100, 0xE01EF, 0xFE00, 0xFE0F, 0x2800,
        ] {
            assert!(is_invisible(char::from_u32(cp).unwrap()), "{cp:x}");
        }
        for cp in [
            0x7E, 0xA0, 0xAE, 0x200A, 0x2030, 0x2070, 0x27FF, 0x2801, 0xFDFF, 0xFE10, 0xFF1D, 0xE0080, 0xE01F0, 0x1F600,
        ] {
            assert!(!is_invisible(char::from_u32(cp).unwrap()), "{cp:x}");
        }
    }
}
