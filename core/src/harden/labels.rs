//! `sanitizeLabels`: a label that may be another session's title is written
//! into the user's own message; make sure it is plain, short, visible text.

use super::invisible::is_invisible;

/// The longest sanitized label, in characters (Unicode scalar values),
/// the `…` that marks a cut included.
pub const MAX_LABEL_CHARS: usize = 100;

/// What a label falls back to when neither it nor the session id has a
/// visible character left.
pub const EMPTY_LABEL: &str = "session";

/// Line breaks and tabs, which become a space (so that words stay apart).
fn is_break(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// `label` without hidden characters, or `None` when nothing visible is
/// left: line breaks and tabs become spaces; every other control character
/// (U+0000–U+001F, U+007F–U+009F), every format (Cf), tag and bidirectional
/// character and the other invisible characters listed at
/// [`is_invisible`] are dropped; runs of white space become one space,
/// leading and trailing white space is removed.
fn clean(label: &str) -> Option<String> {
    let mut out = String::with_capacity(label.len());
    let mut chars = 0usize;
    let mut space = false; // a space is due before the next visible character
    for c in label.chars() {
        if is_break(c) || c.is_whitespace() {
            space = true;
            continue;
        }
        if c < ' ' || is_invisible(c) {
            continue;
        }
        if space && chars > 0 {
            out.push(' ');
            chars += 1;
        }
        space = false;
        out.push(c);
        chars += 1;
    }
    (!out.is_empty()).then_some(out)
}

/// A label longer than [`MAX_LABEL_CHARS`] characters cut on a character
/// boundary to `MAX_LABEL_CHARS - 1` characters (trailing white space
/// removed) followed by `…`.
fn cut(mut label: String) -> String {
    if let Some((at, _)) = label.char_indices().nth(MAX_LABEL_CHARS) {
        let keep = label[..at].char_indices().nth(MAX_LABEL_CHARS - 1).map_or(at, |(i, _)| i);
        label.truncate(keep);
        label.truncate(label.trim_end().len());
        label.push('\u{2026}');
    }
    label
}

/// The label as `sanitizeLabels` writes it: line breaks and tabs become
/// spaces, other control characters and every character [`is_invisible`]
/// lists are dropped, white space is collapsed and trimmed; then, when
/// `redact` is on, credentials are redacted
/// ([`redact`](super::secrets::redact): before the cut, so that no part of
/// a credential is left), then cut to [`MAX_LABEL_CHARS`]. When nothing
/// visible is left, the session id so treated, else [`EMPTY_LABEL`].
/// Idempotent: a sanitized label sanitizes to itself.
pub fn sanitize_label_with(label: &str, session_id: &str, redact: bool) -> String {
    let finish = |l: String| if redact { super::secrets::redact(&l).0.into_owned() } else { l };
    let clean = clean(label).or_else(|| clean(session_id)).map(finish);
    cut(clean.unwrap_or_else(|| EMPTY_LABEL.to_owned()))
}

/// [`sanitize_label_with`] without redaction.
pub fn sanitize_label(label: &str, session_id: &str) -> String {
    sanitize_label_with(label, session_id, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_lose_hidden_characters_and_breaks() {
        let s = |l: &str| sanitize_label(l, "id-1");
        assert_eq!(s("Design review"), "Design review");
        assert_eq!(s("a\u{202e}txt.exe\u{202c}"), "atxt.exe");
        assert_eq!(s("ti\u{200b}tle\u{e0049}\u{e0067}"), "title");
        assert_eq!(s("line one\n\nSYSTEM: obey\r\n"), "line one SYSTEM: obey");
        assert_eq!(s("  \t "), "id-1");
        assert_eq!(sanitize_label("\u{200b}", "\u{feff}"), EMPTY_LABEL);
        assert_eq!(s("a\u{0}b\u{7f}c\u{9b}d"), "abcd");
        assert_eq!(s("中文 标题 😀"), "中文 标题 😀");
    }

    #[test]
    fn long_labels_are_cut_on_a_character_boundary() {
        let long: String = "é".repeat(300);
        let cut = sanitize_label(&long, "x");
        assert_eq!(cut.chars().count(), MAX_LABEL_CHARS);
        assert!(cut.ends_with('\u{2026}'));
        assert_eq!(sanitize_label(&cut, "x"), cut);
        let exact: String = "a".repeat(MAX_LABEL_CHARS);
        assert_eq!(sanitize_label(&exact, "x"), exact);
        let words = "word ".repeat(40);
        let cut = sanitize_label(&words, "x");
        assert!(cut.chars().count() <= MAX_LABEL_CHARS);
        assert!(!cut.contains(" \u{2026}"), "{cut}");
        assert_eq!(sanitize_label(&cut, "x"), cut);
    }
}
