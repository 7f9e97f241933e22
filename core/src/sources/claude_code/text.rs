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
fn strip_blocks(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = text;
    let mut changed = false;
    'outer: while let Some(lt) = rest.find('<') {
        for tag in STRIPPED {
            let after = &rest[lt + 1..];
            let Some(tail) = after.strip_prefix(tag) else { continue };
            if !(tail.starts_with('>') || tail.starts_with(' ')) {
                continue;
            }
            let close = format!("</{tag}>");
            let Some(end) = tail.find(&close) else { continue };
            out.push_str(&rest[..lt]);
            let mut next = &tail[end + close.len()..];
            next = next.strip_prefix("\r\n").or_else(|| next.strip_prefix('\n')).unwrap_or(next);
            rest = next;
            changed = true;
            continue 'outer;
        }
        out.push_str(&rest[..=lt]);
        rest = &rest[lt + 1..];
    }
    out.push_str(rest);
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
    }
}
