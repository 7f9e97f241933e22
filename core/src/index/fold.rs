//! The case mapping every comparison of search uses, and the way back
//! from a position in folded text to the original.

use std::borrow::Cow;

/// The case mapping every comparison of search uses: each character's
/// Unicode default lower-case mapping (`char::to_lowercase`), so a position
/// in the folded text maps back to the original one character at a time.
/// Runs of ASCII are lowered in bulk and CJK and Hangul (which have no case)
/// are copied, so folding costs about a copy.
pub(super) fn fold(text: &str) -> Cow<'_, str> {
    if !text.bytes().any(|b| b.is_ascii_uppercase() || b >= 0x80) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    fold_into(text, &mut out);
    Cow::Owned(out)
}

/// Appends [`fold`]`(text)` to `out`.
pub(super) fn fold_into(text: &str, out: &mut String) {
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = ascii_len(rest.as_bytes());
        let start = out.len();
        out.push_str(&rest[..ascii]);
        out[start..].make_ascii_lowercase();
        rest = &rest[ascii..];
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            if c.is_ascii() {
                break;
            }
            if caseless(c) {
                out.push(c);
            } else {
                out.extend(c.to_lowercase());
            }
            rest = chars.as_str();
        }
    }
}

/// The length of the ASCII prefix of `bytes`, found 8 bytes at a time.
pub(super) fn ascii_len(bytes: &[u8]) -> usize {
    let mut n = 0;
    for chunk in bytes.chunks_exact(8) {
        let word = u64::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7]]);
        if word & 0x8080_8080_8080_8080 != 0 {
            break;
        }
        n += 8;
    }
    n + bytes[n..].iter().position(|&b| b >= 0x80).unwrap_or(bytes.len() - n)
}

/// CJK and Hangul: no case, copied as they are.
pub(super) fn caseless(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{9fff}' | '\u{ac00}'..='\u{d7a3}')
}

/// The byte offset in `original` of the character whose lower-cased form
/// starts at `folded_at` in `fold(original)`.
pub(super) fn original_offset(original: &str, folded_at: usize) -> usize {
    if original.is_ascii() {
        return folded_at.min(original.len());
    }
    let mut folded = 0;
    for (i, c) in original.char_indices() {
        if folded >= folded_at {
            return i;
        }
        folded += if caseless(c) { c.len_utf8() } else { c.to_lowercase().map(char::len_utf8).sum::<usize>() };
    }
    original.len()
}
