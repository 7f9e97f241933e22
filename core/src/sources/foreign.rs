//! What the readers of other agents' transcripts share: reading a JSONL
//! file line by line with bad lines skipped and counted, ISO-8601
//! timestamps, titles taken from a first message, and the errors of one
//! session's read.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Number;

use crate::conversation::{Conversation, ConversationItem};
use crate::error::HostError;
use crate::fs::BoundedLines;
use crate::host::{BudgetedSurface, SessionHeader, SurfaceAnswer, SurfaceData};
use crate::retention::Elided;

/// The longest line a transcript may have, in bytes. A longer line makes
/// the session unreadable (a clear error naming the line) instead of
/// growing memory without bound; the longest lines seen in real Claude Code
/// transcripts are about 20 MB.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// The longest title taken from a message's text, in characters.
pub const MAX_TITLE_CHARS: usize = 100;

/// How a full read of a transcript went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineStats {
    /// Complete lines read (an unterminated last line is not one: a
    /// writer may be in the middle of it).
    pub lines: u64,
    /// Lines that were not a JSON object of the format and were skipped
    /// (corrupt, torn, too deeply nested).
    pub skipped: u64,
}

impl LineStats {
    /// `capturedThroughSeq` of a transcript: the 0-based number of its last
    /// line (`None` for an empty file).
    pub fn captured_through_seq(&self) -> Option<u64> {
        self.lines.checked_sub(1)
    }
}

/// Calls `parse` on every complete line of `file` (split on `\n` only)
/// that starts with `{`; a line that does not, or for which `parse` returns
/// `false`, is counted as skipped. An unterminated last line is not a line
/// (a writer may be in the middle of it): the read ends before it, so it
/// sees a prefix of the file ending at its last complete line. At most
/// `max_lines` lines are read (the rest of the file is not), and a line
/// longer than [`MAX_LINE_BYTES`] is an error.
pub fn each_line(
    file: impl io::Read,
    max_lines: u64,
    mut parse: impl FnMut(u64, &[u8]) -> bool,
) -> io::Result<LineStats> {
    each_line_at(file, max_lines, |n, _, line| parse(n, line))
}

/// [`each_line`], with each line's byte offset from where `file` stood
/// (a read that keeps where lines are, to read some of them again).
pub fn each_line_at(
    file: impl io::Read,
    max_lines: u64,
    mut parse: impl FnMut(u64, u64, &[u8]) -> bool,
) -> io::Result<LineStats> {
    let mut lines = BoundedLines::new(file, MAX_LINE_BYTES);
    let mut stats = LineStats::default();
    while stats.lines < max_lines {
        let at = lines.offset;
        let Some(line) = lines.next_line()? else { break };
        let n = stats.lines;
        stats.lines += 1;
        crate::work::add(1);
        // Every record is an object: anything else is skipped unparsed.
        let is_object = line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        if !is_object || !parse(n, at, line) {
            stats.skipped += 1;
        }
    }
    Ok(stats)
}

/// Gives `line(bytes)` every complete line of `file` from where it stands
/// (split on `\n` only; an unterminated last line is not one), until
/// `line` returns `false`. Returns how many bytes the lines it was given
/// take (where a later read of a grown file may go on). A line longer than
/// [`MAX_LINE_BYTES`] is an error.
pub fn scan_lines(file: impl io::Read, mut line: impl FnMut(&[u8]) -> bool) -> io::Result<u64> {
    let mut lines = BoundedLines::new(file, MAX_LINE_BYTES);
    while let Some(bytes) = lines.next_line()? {
        if !line(bytes) {
            break;
        }
    }
    Ok(lines.offset)
}

/// The text of a line of a plain-text transcript without its final `\r`:
/// borrowed when it is UTF-8, else with each invalid sequence replaced by
/// U+FFFD (as `String::from_utf8_lossy` gives it). The check is
/// `str::from_utf8`'s, which is several times faster on mostly ASCII text
/// than `from_utf8_lossy`'s (that was a third of an Aider read's time).
pub fn text_line(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Milliseconds since the Unix epoch of an ISO-8601 timestamp as agents
/// write them: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
pub fn iso_ms(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' {
        return None;
    }
    if b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut ms = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let digits = &s[start..i];
        if digits.is_empty() {
            return None;
        }
        let mut three = digits.chars().take(3).collect::<String>();
        while three.len() < 3 {
            three.push('0');
        }
        ms = three.parse().ok()?;
    }
    let offset_min = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let m = num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?;
            if sign == b'+' {
                m
            } else {
                -m
            }
        }
        _ => return None,
    };
    // Days from the civil date (proleptic Gregorian), Howard Hinnant's method.
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let total = ((days * 24 + h) * 60 + mi - offset_min) * 60 + sec;
    u64::try_from(total * 1000 + ms).ok()
}

/// A title from a message's text: whitespace runs become one space, and
/// a text longer than [`MAX_TITLE_CHARS`] characters is cut there with `…`.
/// `None` for a text that is only whitespace.
pub fn title_from_text(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = 0;
    for word in text.split_whitespace() {
        if chars >= MAX_TITLE_CHARS {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
            chars += 1;
        }
        for c in word.chars() {
            if chars >= MAX_TITLE_CHARS {
                break;
            }
            out.push(c);
            chars += 1;
        }
    }
    if out.is_empty() {
        return None;
    }
    if text.split_whitespace().map(|w| w.chars().count() + 1).sum::<usize>().saturating_sub(1) > MAX_TITLE_CHARS {
        out.push('…');
    }
    Some(out)
}

/// The modification time of a file in ms since the epoch (0 when unknown):
/// the `createdAt` of a Codex rollout whose first line is not a header.
pub fn mtime_ms(identity: &crate::fs::FileIdentity) -> u64 {
    u64::try_from(identity.mtime_ns / 1_000_000).unwrap_or(u64::MAX)
}

/// The `createdAt` of a Claude Code session whose transcript holds no
/// timestamp at all: 0, so that it is listed after every dated session
/// (the file's modification time would put an old session, or one still
/// being written, at the top of every listing).
pub const UNKNOWN_CREATED_AT: u64 = 0;

/// What one read of a transcript gives, whichever agent wrote it.
#[derive(Clone, Debug, Default)]
pub struct Transcript {
    /// The current model-visible conversation.
    pub items: Vec<ConversationItem>,
    /// The title by the rules of the format (for Codex, without
    /// `session_index.jsonl`, which the source looks up).
    pub title: Option<String>,
    /// The cwd a read gives (the newest on the current path for Claude
    /// Code, the last `turn_context` for Codex), else the first.
    pub cwd: Option<String>,
    /// The creation time the file records (ms), if any.
    pub created_at: Option<u64>,
    /// Lines read and skipped.
    pub stats: LineStats,
}

/// The error of a read of one session: `<format> session <id> (<path>): <why>`.
pub fn read_error(format: &str, id: &str, path: &Path, why: impl std::fmt::Display) -> HostError {
    HostError::new(format!("{format} session {} ({}): {why}", crate::json::js_string(id), path.display()))
}

/// One listed session of a foreign source.
#[derive(Clone, Debug, PartialEq)]
pub struct ListedSession {
    /// `{id, createdAt, cwd}`.
    pub header: SessionHeader,
    /// The file it was listed from.
    pub path: PathBuf,
}

impl ListedSession {
    /// The session `prefix` + `bare` (its id without the prefix), created
    /// at `created_at` (ms), listed from `path`.
    pub fn new(prefix: &str, bare: &str, created_at: u64, cwd: Option<String>, path: PathBuf) -> Self {
        ListedSession { header: SessionHeader::new(format!("{prefix}{bare}"), created_at, cwd), path }
    }
}

/// The order of a foreign listing: newest `createdAt` first, equal times
/// by id.
pub(crate) fn listing_order(a: &SessionHeader, b: &SessionHeader) -> std::cmp::Ordering {
    let (x, y) = (a.created_at.as_u64(), b.created_at.as_u64());
    y.cmp(&x).then_with(|| a.id.cmp(&b.id))
}

/// Why a file of the format that holds no conversation is not listed.
pub const NO_CONVERSATION_YET: &str = "it holds no conversation yet";

/// The listing of a foreign source.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Listing {
    /// Newest `createdAt` first, equal times by id.
    pub sessions: Vec<ListedSession>,
    /// Entries that were not listed, and why (links, unreadable files,
    /// a second file for one id).
    pub rejected: Vec<(PathBuf, String)>,
    /// Files of the format that hold no conversation (empty, or only
    /// metadata lines), so are not sessions; a file that gains a message is
    /// listed from then on.
    pub without_conversation: Vec<PathBuf>,
}

impl Listing {
    /// Puts the sessions in listing order: newest `createdAt` first, equal
    /// times by id.
    pub fn sort(&mut self) {
        self.sessions.sort_by(|a, b| listing_order(&a.header, &b.header));
    }

    /// What this listing skipped, each with why: the rejected entries,
    /// then the files that hold no conversation yet (what a source's
    /// [`skipped`](crate::BlockingSessionQuery::skipped) answers).
    pub fn skipped(&self) -> Vec<(PathBuf, String)> {
        let empty = self.without_conversation.iter().map(|p| (p.clone(), NO_CONVERSATION_YET.to_owned()));
        self.rejected.iter().cloned().chain(empty).collect()
    }

    /// A source's `list_sessions`: the headers, or the error naming the root.
    pub fn headers(listed: io::Result<Listing>, format: &str, root: &Path) -> Result<Vec<SessionHeader>, HostError> {
        listed
            .map(|l| l.sessions.into_iter().map(|s| s.header).collect())
            .map_err(|e| HostError::new(format!("cannot list {format} sessions in {}: {e}", root.display())))
    }
}

/// The answer to a read under a budget: the conversation `read` kept and
/// what it left out, or, when it could not keep it (`None`: the file
/// changed under the read), the `whole` conversation read again.
pub(crate) fn within_or_whole(
    read: Option<(Conversation, Elided)>,
    whole: impl FnOnce() -> Result<SurfaceData, HostError>,
) -> Result<SurfaceAnswer, HostError> {
    match read {
        Some((conversation, elided)) => {
            Ok(SurfaceAnswer::within(BudgetedSurface { data: SurfaceData::from(conversation), elided }))
        }
        None => whole().map(SurfaceAnswer::whole),
    }
}

/// The conversation of a read transcript, under its prefixed id.
pub fn conversation(
    prefix: &str,
    id: &str,
    cwd: Option<String>,
    stats: LineStats,
    items: Vec<ConversationItem>,
) -> Conversation {
    let bare = id.strip_prefix(prefix).unwrap_or(id);
    Conversation {
        session_id: format!("{prefix}{bare}"),
        cwd,
        captured_through_seq: stats.captured_through_seq().map(Number::from),
        items,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(iso_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(iso_ms("2025-07-01T10:00:00.000Z"), Some(1_751_364_000_000));
        assert_eq!(iso_ms("2025-07-01T12:00:00.5+02:00"), Some(1_751_364_000_500));
        assert_eq!(iso_ms("2026-01-02T03:04:05.123456Z"), Some(1_767_323_045_123));
        for bad in ["", "2025-07-01", "2025-13-01T00:00:00Z", "2025-07-01T00:00:00", "x025-07-01T00:00:00Z"] {
            assert_eq!(iso_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn titles() {
        assert_eq!(title_from_text("  Fix\n the   build "), Some("Fix the build".into()));
        assert_eq!(title_from_text(" \n"), None);
        let long = "word ".repeat(40);
        let t = title_from_text(&long).unwrap();
        assert_eq!(t.chars().count(), MAX_TITLE_CHARS + 1);
        assert!(t.ends_with('…'));
        assert_eq!(title_from_text(&"x".repeat(100)).unwrap().chars().count(), 100);
    }
}
