//! What a person sees: every line written to the terminal escapes what
//! could drive it, and `--json` prints the core's shapes exactly.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};

use dsh_session_reference::sources::dsh::RejectionKind;
use dsh_session_reference::wire::{is_invisible, stringify, stringify_escaping_invisible};
use dsh_session_reference::{Candidate, DshStore, Page, Prepared, SearchResult, SessionConversation};
use serde_json::{Number, Value};

pub(crate) fn context_text(prepared: &Prepared) -> Option<&str> {
    prepared.additional_context.as_ref().map(|c| c.prompt.as_str())
}

/// How a command prints its result: for a person (every line escaped), or
/// as JSON, exact (`JSON.stringify`), with every invisible character written
/// as a `\uXXXX` escape under `--escape-invisible` (the same value once
/// parsed: a terminal or a reviewer sees them, a program reads the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Out {
    Human,
    Json { escape_invisible: bool },
}

impl Out {
    pub(crate) fn is_json(self) -> bool {
        matches!(self, Out::Json { .. })
    }

    /// `value` as this mode writes JSON.
    pub(crate) fn json(self, value: &Value) -> String {
        match self {
            Out::Json { escape_invisible: true } => stringify_escaping_invisible(value),
            _ => stringify(value),
        }
    }
}

/// `s` with what could drive a terminal or hide from its reader written as
/// Rust escapes: control characters (C0, DEL, C1: CSI, OSC, 8-bit CSI …)
/// and format, bidirectional and other invisible characters
/// ([`is_invisible`]); line feeds and tabs too unless `keep_breaks`. The one
/// escaping of every line the command line writes for a person.
fn escaped(s: &str, keep_breaks: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let kept = keep_breaks && (c == '\n' || c == '\t');
        if !kept && (c.is_control() || is_invisible(c)) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` for a terminal, on one line (ids, cwds, labels, paths, messages of
/// errors and notes may hold anything).
pub(crate) fn display(s: &str) -> String {
    escaped(s, false)
}

/// A message's text for a terminal: like [`display`], but line feeds and
/// tabs stay as they are.
pub(crate) fn display_text(s: &str) -> String {
    escaped(s, true)
}

/// Prints a text result that programs read (`--prompt`, `read --text`,
/// `uri`, `mention`): exact when stdout is not a terminal, escaped as
/// [`display_text`] when it is (what a program needs exactly it reads
/// through a pipe or with `--json`).
pub(crate) fn print_data(text: &str, newline: bool) {
    let text = data_for(text, std::io::stdout().is_terminal());
    let mut out = std::io::stdout().lock();
    let _ = if newline { writeln!(out, "{text}") } else { write!(out, "{text}") };
}

/// [`print_data`]'s text, for a terminal or not.
fn data_for(text: &str, terminal: bool) -> std::borrow::Cow<'_, str> {
    if terminal {
        std::borrow::Cow::Owned(display_text(text))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

pub(crate) fn print_text_or_json(text: &str, out: Out) {
    if out.is_json() {
        println!("{}", out.json(&Value::from(text)));
    } else {
        print_data(text, true);
    }
}

/// Prints `error: CODE: message` on stderr, the message escaped.
pub(crate) fn print_error(code: impl std::fmt::Display, message: &str) {
    eprintln!("error: {code}: {}", display(message));
}

/// Tells, on stderr, about logs the store left out: each one a DSH newer
/// than this reader wrote (the other sessions were listed as usual), then
/// those it could not take (invalid, unreadable, a link not followed), the
/// first few with why and then how many.
pub(crate) fn note_rejected(store: &DshStore) {
    let Some(rejected) = store.last_rejected() else { return };
    let mut err = std::io::stderr().lock();
    for r in rejected.iter().filter(|r| r.kind == RejectionKind::Unsupported) {
        let _ = writeln!(err, "note: not listed: {}: {}", display(&r.path.to_string_lossy()), r.reason);
    }
    let others: Vec<(String, String)> = rejected
        .iter()
        .filter(|r| r.kind != RejectionKind::Unsupported)
        .map(|r| (r.path.to_string_lossy().into_owned(), r.reason.clone()))
        .collect();
    let what = if others.len() == 1 { "log was" } else { "logs were" };
    note_list(&mut err, &format!("{} {what} not listed", others.len()), &others);
}

/// Tells, on stderr, about sessions whose title or text could not be read
/// (discovery lists them by their id; search cannot look inside them).
pub(crate) fn note_failed_reads(failed: &[(String, String)]) {
    let what = if failed.len() == 1 { "session" } else { "sessions" };
    let head = format!("{} {what} could not be read (listed by id, not searched)", failed.len());
    note_list(&mut std::io::stderr().lock(), &head, failed);
}

/// How many of a list [`note_list`] names (as the SDKs' source reports
/// name unreadable sessions); the rest are counted.
const NAMED: usize = dsh_session_reference::sources::open::UNREADABLE_NAMED;

/// `note: HEAD:`, then the first few `(what, why)` and how many more; nothing
/// for an empty list.
fn note_list(err: &mut impl Write, head: &str, items: &[(String, String)]) {
    if items.is_empty() {
        return;
    }
    let _ = writeln!(err, "note: {head}:");
    for (what, why) in items.iter().take(NAMED) {
        let _ = writeln!(err, "note:   {}: {}", display(what), display(why));
    }
    if items.len() > NAMED {
        let _ = writeln!(err, "note:   and {} more", items.len() - NAMED);
    }
}

/// Epoch milliseconds as a local date and time, `2026-12-02 14:05` (UTC,
/// marked so, where the local time zone cannot be read); anything that is
/// not a time is shown as given.
pub(crate) fn local_time(ms: &Number) -> String {
    let Some(ms) = ms.as_i64().or_else(|| ms.as_f64().filter(|f| f.is_finite()).map(|f| f as i64)) else {
        return ms.to_string();
    };
    let secs = ms.div_euclid(1000);
    #[cfg(unix)]
    {
        // SAFETY: `libc::tm` is plain data, for which all-zero bytes are a
        // valid value.
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        let t: libc::time_t = secs as libc::time_t;
        // SAFETY: both pointers are valid for the call; `localtime_r` is
        // the thread-safe form and writes only `tm`.
        let converted = unsafe { libc::localtime_r(&t, &mut tm) };
        if !converted.is_null() {
            return format!(
                "{:04}-{:02}-{:02} {:02}:{:02}",
                i64::from(tm.tm_year) + 1900,
                tm.tm_mon + 1,
                tm.tm_mday,
                tm.tm_hour,
                tm.tm_min
            );
        }
    }
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

/// The title line of entry `i` of a list: its label, and, when another
/// entry of the list has the same label, its date and the start of its id
/// to tell them apart.
fn title_line(i: usize, c: &Candidate, labels: &HashMap<&str, usize>) -> String {
    let mut line = format!("{:>2}. {}", i + 1, display(&c.label));
    if labels.get(c.label.as_str()).copied().unwrap_or(0) > 1 {
        line.push_str(&format!("   [{}, {}]", local_time(&c.created_at), display(&short_id(&c.session_id))));
    }
    line
}

/// An id short enough for a title line and still told apart from its
/// neighbours: whole up to 40 characters, else its start and its end
/// (ids that differ share a prefix more often than both ends).
fn short_id(id: &str) -> String {
    let chars: Vec<char> = id.chars().collect();
    if chars.len() <= 40 {
        return id.to_owned();
    }
    let head: String = chars[..24].iter().collect();
    let tail: String = chars[chars.len() - 12..].iter().collect();
    format!("{head}…{tail}")
}

/// How many entries carry each label.
fn label_counts<'a>(list: impl Iterator<Item = &'a Candidate>) -> HashMap<&'a str, usize> {
    let mut counts = HashMap::new();
    for c in list {
        *counts.entry(c.label.as_str()).or_insert(0) += 1;
    }
    counts
}

pub(crate) fn print_candidates(list: &[Candidate], out_mode: Out) {
    if out_mode.is_json() {
        let array = Value::Array(list.iter().map(Candidate::to_json).collect());
        println!("{}", out_mode.json(&array));
        return;
    }
    if list.is_empty() {
        println!("No candidates.");
    }
    let labels = label_counts(list.iter());
    let mut out = std::io::stdout().lock();
    for (i, c) in list.iter().enumerate() {
        let cwd = c.cwd.as_deref().map_or_else(|| "(none)".to_owned(), display);
        let _ = writeln!(out, "{}", title_line(i, c, &labels));
        let _ =
            writeln!(out, "    id: {}   cwd: {}   created: {}", display(&c.session_id), cwd, local_time(&c.created_at));
        let _ = writeln!(out, "    {}", display(c.mention.as_deref().unwrap_or_default()));
    }
}

/// Says, on stderr, why sessions without a working directory come first
/// when none was started in the target's: the ranking puts the target's
/// own directory first, then sessions without one, then every other.
pub(crate) fn note_ranking(list: &[Candidate], target_cwd: Option<&str>) {
    let (Some(cwd), Some(first)) = (target_cwd, list.first()) else { return };
    if first.cwd.is_none() && list.iter().all(|c| c.cwd.as_deref() != Some(cwd)) {
        eprintln!(
            "note: no session here was started in {}; sessions without a working directory rank next, then the rest",
            display(cwd)
        );
    }
}

pub(crate) fn print_search(list: &[SearchResult], out_mode: Out) {
    if out_mode.is_json() {
        let array = Value::Array(list.iter().map(SearchResult::to_json).collect());
        println!("{}", out_mode.json(&array));
        return;
    }
    if list.is_empty() {
        println!("No matches.");
    }
    let labels = label_counts(list.iter().map(|r| &r.candidate));
    let mut out = std::io::stdout().lock();
    for (i, r) in list.iter().enumerate() {
        let c = &r.candidate;
        let cwd = c.cwd.as_deref().map_or_else(|| "(none)".to_owned(), display);
        // `message N` is the index `show` and `read` print (`[N role]`).
        let at = match r.message_index {
            Some(m) => format!("message {m}"),
            None => r.field.as_str().to_owned(),
        };
        let _ = writeln!(out, "{}", title_line(i, c, &labels));
        // A hit in the title is the title line above: not printed twice.
        if r.field == dsh_session_reference::MatchField::Title && r.message_index.is_none() {
            let _ = writeln!(out, "    in the title");
        } else {
            let _ = writeln!(out, "    {}: {}", at, display(&r.snippet));
        }
        let _ =
            writeln!(out, "    id: {}   cwd: {}   created: {}", display(&c.session_id), cwd, local_time(&c.created_at));
        let _ = writeln!(out, "    {}", display(c.mention.as_deref().unwrap_or_default()));
    }
}

pub(crate) fn print_prepared(prepared: &Prepared) {
    let mut out = std::io::stdout().lock();
    let text = prepared.content[0]["text"].as_str().unwrap_or_default();
    if text.is_empty() {
        // `prepare --ref ID` alone: the referenced sessions' context only.
        let _ = writeln!(out, "Message: (none: only the context of the referenced sessions)\n");
    } else {
        let _ = writeln!(out, "Message:\n{}\n", display_text(text));
    }
    let Some(ctx) = &prepared.additional_context else {
        let _ = writeln!(out, "No sessions referenced.");
        return;
    };
    let _ = writeln!(out, "Referenced sessions:");
    for r in &ctx.source.references {
        let _ = writeln!(
            out,
            "  - {} ({}): {} of {} messages retained, {} omitted ({} bytes omitted){}",
            display(&r.label),
            display(&r.session_id),
            r.stats.retained_messages,
            r.stats.original_messages,
            r.stats.omitted_messages,
            r.stats.omitted_bytes,
            if r.stats.truncated() { ", truncated" } else { ", complete" },
        );
    }
    let prompt = context_text(prepared).unwrap_or_default();
    let _ = writeln!(out, "\nContext ({} bytes) follows the message; print it with --prompt.", prompt.len());
}

/// A session's conversation for a person: a header line, then each
/// message under its role (checkpoints marked).
pub(crate) fn print_conversation(conversation: &SessionConversation) {
    let mut out = std::io::stdout().lock();
    let cwd = conversation.cwd.as_deref().map_or_else(|| "(none)".to_owned(), display);
    let seq = conversation.captured_through_seq.as_ref().map_or_else(|| "null".to_owned(), ToString::to_string);
    let id = display(&conversation.session_id);
    let _ = writeln!(out, "Session {id}   cwd: {cwd}   capturedThroughSeq: {seq}");
    if conversation.messages.is_empty() {
        let _ = writeln!(out, "(no projected messages)");
    }
    for m in &conversation.messages {
        let marker = if m.checkpoint { " (compaction checkpoint)" } else { "" };
        let _ = writeln!(out, "\n[{} {}{marker}]\n{}", m.index, m.role.as_str(), display_text(&m.text));
    }
}

/// A page for a person: which messages of how many, each message under its
/// index and role, then the cursors to read on.
pub(crate) fn print_page(page: &Page) {
    let mut out = std::io::stdout().lock();
    let id = display(&page.session_id);
    let which = match (page.messages.first(), page.messages.last()) {
        (Some(first), Some(last)) => format!("messages {}-{} of {}", first.index, last.index, page.total_messages),
        _ => format!("no messages here (of {})", page.total_messages),
    };
    let _ = writeln!(out, "Session {id} ({})   {which}   {} bytes", display(&page.title), page.text.len());
    for m in &page.messages {
        let mut marks = String::new();
        if m.checkpoint {
            marks.push_str(" (compaction checkpoint)");
        }
        if m.omitted_bytes > 0 {
            marks.push_str(&format!(" (cut: {} bytes omitted)", m.omitted_bytes));
        }
        let _ = writeln!(out, "\n[{} {}{marks}]\n{}", m.index, m.role.as_str(), display_text(&m.text));
    }
    if let Some(c) = &page.prev_cursor {
        let _ = writeln!(out, "\nEarlier: --cursor {c}");
    }
    if let Some(c) = &page.next_cursor {
        let _ = writeln!(out, "{}Later: --cursor {c}", if page.prev_cursor.is_some() { "" } else { "\n" });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_and_invisible_character_is_escaped_for_a_person() {
        let hostile = "a\u{1b}]0;title\u{7}b\u{1b}[31mc\u{9b}31md\u{7f}\u{202e}e\u{200b}f\u{fe0f}\u{2800}g\rh\n\ti";
        let line = display(hostile);
        assert_eq!(
            line,
            "a\\u{1b}]0;title\\u{7}b\\u{1b}[31mc\\u{9b}31md\\u{7f}\\u{202e}e\\u{200b}f\\u{fe0f}\\u{2800}g\\rh\\n\\ti"
        );
        let text = display_text(hostile);
        assert!(text.ends_with("g\\rh\n\ti"), "{text:?}");
        for s in [&line, &text] {
            assert!(!s.chars().any(|c| (c.is_control() && c != '\n' && c != '\t') || is_invisible(c)), "{s:?}");
        }
        assert_eq!(display("plain café 中文 😀"), "plain café 中文 😀");
    }

    #[test]
    fn data_is_exact_through_a_pipe_and_escaped_on_a_terminal() {
        let text = "{\"t\":\"x\u{9b}2J\u{202e}\"}\n";
        assert_eq!(data_for(text, false), text);
        assert_eq!(data_for(text, true), "{\"t\":\"x\\u{9b}2J\\u{202e}\"}\n");
    }

    #[test]
    fn json_escapes_invisible_characters_only_when_asked_and_parses_back_the_same() {
        let value = serde_json::json!({"snippet": "a\u{200b}b\u{fe0f}<c>\u{9b}", "k\u{202e}": 1});
        let exact = Out::Json { escape_invisible: false }.json(&value);
        assert_eq!(exact, stringify(&value));
        let escaped = Out::Json { escape_invisible: true }.json(&value);
        assert_eq!(escaped, r#"{"snippet":"a\u200bb\ufe0f<c>\u009b","k\u202e":1}"#);
        assert_eq!(serde_json::from_str::<Value>(&escaped).unwrap(), value);
    }
}
