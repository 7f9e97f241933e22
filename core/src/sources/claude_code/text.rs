//! Which text of a Claude Code `user` line the person typed.
//!
//! A text block is dropped whole when it is a harness marker: a slash
//! command's echo (`<command-name>`, `<command-message>`, `<command-args>`),
//! a local command's output or caveat, a task notification, shell mode's
//! echo and output (`<bash-input>`, `<bash-stdout>`, `<bash-stderr>`), or
//! an interrupt marker (`[Request interrupted by user…]`). Inside a kept
//! block, `<system-reminder>…</system-reminder>` and the IDE context blocks
//! (`<ide_opened_file>`, `<ide_selection>`, `<ide_diagnostics>`) are
//! removed wherever they are, with one line break after each; the rest of
//! the text is kept, and trimmed when something was removed.

/// Opening tags whose block is removed from inside a message.
const STRIPPED: [&str; 4] = ["system-reminder", "ide_opened_file", "ide_selection", "ide_diagnostics"];

/// Tags that mark a whole text block as written by the harness.
const MARKERS: [&str; 12] = [
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<command-contents>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<task-notification>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-prompt-submit-hook>",
];

/// The typed text of one text block, or `None` when nothing typed is left.
pub fn typed_text(block: &str) -> Option<String> {
    let trimmed = block.trim_start();
    if MARKERS.iter().any(|m| trimmed.starts_with(m)) || trimmed.starts_with("[Request interrupted by user") {
        return None;
    }
    let stripped = strip_blocks(block);
    let text = match &stripped {
        Some(s) => s.trim(),
        None => block,
    };
    if text.trim().is_empty() {
        return None;
    }
    Some(text.to_owned())
}

/// `text` without its reminder and IDE blocks, or `None` when it has none.
/// Linear in the text: each closing tag is searched for once from where a
/// search of it last stopped, and once a tag has no closing tag left, no
/// later opening of it searches again (an unclosed tag is kept as text).
fn strip_blocks(text: &str) -> Option<String> {
    let mut scanned = 0;
    let stripped = strip_blocks_scanning(text, &mut scanned);
    crate::work::add(scanned);
    stripped
}

/// [`strip_blocks`], adding to `scanned` the bytes its searches look at
/// (what its linear-time test counts).
fn strip_blocks_scanning(text: &str, scanned: &mut usize) -> Option<String> {
    const CLOSES: [&str; 4] = ["</system-reminder>", "</ide_opened_file>", "</ide_selection>", "</ide_diagnostics>"];
    // Per tag: where its next closing tag starts (absolute), `None` when
    // there is none after the point the last search started from.
    let mut next_close: [Option<Option<usize>>; 4] = [None; 4];
    let mut out = String::new();
    let mut at = 0;
    let mut changed = false;
    'outer: while let Some(lt) = {
        let lt = text[at..].find('<').map(|i| at + i);
        *scanned += lt.map_or(text.len(), |lt| lt + 1) - at;
        lt
    } {
        for (t, tag) in STRIPPED.iter().enumerate() {
            let Some(tail) = text[lt + 1..].strip_prefix(tag) else { continue };
            if !(tail.starts_with('>') || tail.starts_with(' ')) {
                continue;
            }
            let from = lt + 1 + tag.len();
            let close = CLOSES[t];
            let end = match next_close[t] {
                Some(Some(end)) if end >= from => Some(end),
                Some(None) => None,
                _ => {
                    let end = text[from..].find(close).map(|i| from + i);
                    *scanned += end.map_or(text.len(), |end| end + close.len()) - from;
                    end
                }
            };
            next_close[t] = Some(end);
            let Some(end) = end else { continue };
            out.push_str(&text[at..lt]);
            let next = &text[end + close.len()..];
            let skip = if next.starts_with("\r\n") { 2 } else { usize::from(next.starts_with('\n')) };
            at = end + close.len() + skip;
            changed = true;
            continue 'outer;
        }
        out.push_str(&text[at..=lt]);
        at = lt + 1;
    }
    out.push_str(&text[at..]);
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_and_blocks() {
        assert_eq!(typed_text("hello"), Some("hello".into()));
        assert_eq!(typed_text("  <command-name>/clear</command-name>"), None);
        assert_eq!(typed_text("[Request interrupted by user for tool use]"), None);
        assert_eq!(typed_text("<system-reminder>x</system-reminder>"), None);
        assert_eq!(typed_text("a\n<system-reminder>\nx\n</system-reminder>\nb"), Some("a\nb".into()));
        assert_eq!(typed_text("<ide_opened_file>The user opened f.rs</ide_opened_file>\nwhy?"), Some("why?".into()));
        // An unclosed tag and a look-alike stay.
        assert_eq!(typed_text("<system-reminder> never closed"), Some("<system-reminder> never closed".into()));
        assert_eq!(typed_text("a <system-reminders> b"), Some("a <system-reminders> b".into()));
        // Closed after unclosed ones of another tag, and nested openings.
        assert_eq!(
            typed_text("<ide_selection> x <system-reminder>r</system-reminder>\ny"),
            Some("<ide_selection> x y".into())
        );
        assert_eq!(
            typed_text("<system-reminder> a <system-reminder> b</system-reminder>\r\nc <system-reminder>"),
            Some("c <system-reminder>".into())
        );
    }

    /// Unclosed tags cost linear time: the searches look at each byte at
    /// most five times (once for `<`, once per stripped tag's closing
    /// tag), whatever the tags. Counted, not timed (a timed version failed
    /// on loaded machines): when each unclosed tag searched to the end of
    /// the text again, the first text's 4,000 tags made its searches look at
    /// 136 MB of its 68 KB (and 0.5 MB took 40 s).
    #[test]
    fn unclosed_tags_take_linear_time() {
        let texts = [
            format!("{}end", "<system-reminder> <ide_selection> ".repeat(2_000)),
            // Closed blocks of one tag among unclosed openings of others.
            format!("{}end", "<ide_diagnostics> <system-reminder>r</system-reminder> <ide_opened_file> ".repeat(2_000)),
            format!("{}</system-reminder>", "<system-reminder> x ".repeat(2_000)),
        ];
        let expected = [None, Some(texts[1].replace("<system-reminder>r</system-reminder>", "")), Some(String::new())];
        for (text, expected) in texts.iter().zip(expected) {
            let mut scanned = 0;
            assert_eq!(strip_blocks_scanning(text, &mut scanned), expected);
            assert!(scanned <= 5 * text.len(), "{scanned} bytes scanned for a text of {}", text.len());
        }
        assert_eq!(typed_text(&texts[0]).as_deref(), Some(texts[0].as_str()));
    }
}
