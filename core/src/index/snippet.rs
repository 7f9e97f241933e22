//! The snippet shown around a hit.

/// Characters of context before and after a hit in a snippet.
const SNIPPET_BEFORE: usize = 40;
const SNIPPET_AFTER: usize = 100;

/// The text of `original` around byte `at`, whitespace runs as one
/// space, with an ellipsis where it was cut.
pub(super) fn snippet(original: &str, at: usize) -> String {
    let at = at.min(original.len());
    let before: Vec<(usize, char)> = original[..at].char_indices().rev().take(SNIPPET_BEFORE + 1).collect();
    let start = if before.len() > SNIPPET_BEFORE { before[SNIPPET_BEFORE - 1].0 } else { 0 };
    let end = original[at..].char_indices().nth(SNIPPET_AFTER).map_or(original.len(), |(i, _)| at + i);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(&original[start..end].split_whitespace().collect::<Vec<_>>().join(" "));
    if end < original.len() {
        out.push('…');
    }
    out
}

/// The start of `text` as a snippet.
pub(super) fn whole(text: &str) -> String {
    snippet(text, 0)
}
