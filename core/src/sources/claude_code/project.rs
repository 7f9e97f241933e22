//! What a listing learns of each transcript of a project directory, and the
//! summary titles of the project.
//!
//! Claude Code 1.x and 2.0.x write a session's summary title
//! (`{"type":"summary","summary":…,"leafUuid":…}`) into whichever transcript
//! of the project directory is written next, not into the session's own
//! file, and `/resume` titles each session with the summary whose
//! `leafUuid` is one of its messages. So a listing scans every transcript
//! written by those versions for its summary lines and the uuids it holds
//! ([`scan`]); the summaries of a project, the newest per leaf, are its
//! [`Winners`]; a session's fingerprint carries the winners whose leaf it
//! holds, so that a title written into another file makes it read again.
//!
//! A scan is kept with the file's stamp and goes on where it stopped when
//! the file only grew (same device and inode, the 4 KiB before the stopping
//! point unchanged), so an append costs a read of the appended lines.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

use memchr::memmem;
use serde::Deserialize;

use crate::fs::FileIdentity;
use crate::sources::foreign::{iso_ms, scan_lines};
use crate::sources::lenient::{LBool, LStr};

/// How many lines of a transcript's head are looked at for its first
/// timestamp, cwd and version (more when no message has been seen yet).
pub const HEAD_LINES: u64 = 64;

/// The bytes before the point where a scan stopped that must be unchanged
/// for a later scan of the grown file to go on from there.
const RESUME_CHECK_BYTES: u64 = 4096;

/// What the first lines of a transcript say, by rules a listing and a read
/// share: the first timestamp, cwd and `version` among the first
/// [`HEAD_LINES`] lines, or up to the first message when it comes later
/// (lines before it are metadata: summaries, file-history snapshots), and
/// whether the file holds a message at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// Lines looked at (skipped ones too).
    lines: u64,
    /// The first timestamp (ms).
    pub created: Option<u64>,
    /// The first non-empty cwd.
    pub cwd: Option<String>,
    /// The first `version` (the Claude Code release that wrote the line).
    pub version: Option<String>,
    /// Whether a message was seen: a `user` or `assistant` line with a
    /// `uuid` that is not a sidechain. A file without one is not a session.
    pub conversation: bool,
    /// Whether the head has been read to its end.
    done: bool,
}

/// The fields of one line the head rules look at.
#[derive(Default)]
pub(crate) struct HeadFields<'a> {
    pub timestamp: Option<&'a str>,
    pub cwd: Option<&'a str>,
    pub version: Option<&'a str>,
    pub message: bool,
}

impl Head {
    /// Takes line `n` (0-based), with its fields (`None`: a line that was
    /// skipped). Lines after the head's end change nothing.
    pub(crate) fn feed(&mut self, n: u64, fields: Option<HeadFields<'_>>) {
        // Lines skipped unseen (not objects) count too.
        if self.conversation && n >= HEAD_LINES {
            self.done = true;
        }
        if self.done {
            return;
        }
        self.lines = n + 1;
        if let Some(f) = fields {
            if self.created.is_none() {
                self.created = f.timestamp.and_then(iso_ms);
            }
            if self.cwd.is_none() {
                self.cwd = f.cwd.filter(|c| !c.is_empty()).map(str::to_owned);
            }
            if self.version.is_none() {
                self.version = f.version.filter(|v| !v.is_empty()).map(str::to_owned);
            }
            self.conversation |= f.message;
        }
        let all = self.created.is_some() && self.cwd.is_some() && self.version.is_some();
        self.done = self.conversation && (all || self.lines >= HEAD_LINES);
    }

    /// Whether the head has been read to its end.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether the file was written by a Claude Code that writes summary
    /// titles into other transcripts (before 2.1): its first `version` is
    /// below 2.1, or it has neither a version nor a message (a file of
    /// summary or file-history lines only). A transcript whose messages
    /// carry no version at all counts as a later one.
    pub fn writes_summaries(&self) -> bool {
        match &self.version {
            Some(v) => version_before_2_1(v),
            None => !self.conversation,
        }
    }
}

/// Whether a Claude Code version (`1.0.24`, `2.0.46`) is below 2.1; a
/// version that does not start with two numbers is not.
fn version_before_2_1(v: &str) -> bool {
    let mut parts = v.split('.').map(|p| {
        let digits = p.bytes().take_while(u8::is_ascii_digit).count();
        p[..digits].parse::<u64>().ok()
    });
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) < (2, 1),
        _ => false,
    }
}

/// One summary line: the leaf it titles, its text, and its line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// `leafUuid`.
    pub leaf: String,
    /// `summary`.
    pub text: String,
    /// The 0-based line number in its file.
    pub line: u64,
}

/// What a listing learned of one transcript.
#[derive(Clone, Debug)]
pub struct Scanned {
    /// The file's identity when it was opened.
    pub identity: FileIdentity,
    /// Its head.
    pub head: Head,
    /// Its summary lines, in file order (files that write summaries only).
    pub summaries: Arc<[Summary]>,
    /// Hashes of the uuids it holds, sorted (files that write summaries
    /// only): which summary leaves are its messages.
    pub uuids: Arc<[u64]>,
    /// A line too long to read ended the scan.
    pub too_long: bool,
    resume: Option<Resume>,
}

/// Where a later scan of the grown file may go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Resume {
    offset: u64,
    lines: u64,
    check: u64,
    /// Nothing after `offset` matters (a later transcript whose head is read).
    complete: bool,
}

impl Scanned {
    /// Whether the file is a session: it holds a message (or a line too
    /// long to read, so that reading it reports the line).
    pub fn is_session(&self) -> bool {
        self.head.conversation || self.too_long
    }

    /// Whether its summaries count for its project and its uuids were
    /// collected.
    pub fn writes_summaries(&self) -> bool {
        self.head.writes_summaries()
    }
}

#[derive(Deserialize)]
struct ScanLine<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    uuid: LStr<'a>,
    #[serde(rename = "isSidechain", default)]
    sidechain: LBool,
    #[serde(borrow, default)]
    timestamp: LStr<'a>,
    #[serde(borrow, default)]
    cwd: LStr<'a>,
    #[serde(borrow, default)]
    version: LStr<'a>,
    #[serde(borrow, default)]
    summary: LStr<'a>,
    #[serde(rename = "leafUuid", borrow, default)]
    leaf: LStr<'a>,
}

/// A summary line's fields.
#[derive(Deserialize)]
struct SummaryLine<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    summary: LStr<'a>,
    #[serde(rename = "leafUuid", borrow, default)]
    leaf: LStr<'a>,
}

impl SummaryLine<'_> {
    fn get(&self, line: u64) -> Option<Summary> {
        if self.kind.get() != Some("summary") {
            return None;
        }
        let text = self.summary.owned().filter(|t| !t.trim().is_empty())?;
        Some(Summary { leaf: self.leaf.owned()?, text, line })
    }
}

/// The 64-bit FNV-1a hash of `bytes`: stable across runs and platforms.
pub(crate) fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The hash under which a uuid is kept.
pub(crate) fn uuid_hash(uuid: &str) -> u64 {
    fnv(uuid.as_bytes())
}

/// The values of every `"uuid":"…"` key of a raw line.
fn raw_uuids(line: &[u8], finders: &Finders, out: &mut Vec<u64>) {
    for finder in [&finders.uuid, &finders.uuid_spaced] {
        for at in finder.find_iter(line) {
            let start = at + finder.needle().len();
            let mut end = start;
            let mut escaped = false;
            while end < line.len() && line[end] != b'"' {
                escaped |= line[end] == b'\\';
                end += if line[end] == b'\\' { 2 } else { 1 };
            }
            if end >= line.len() {
                continue;
            }
            if escaped {
                if let Ok(s) = serde_json::from_slice::<String>(&line[start - 1..=end]) {
                    out.push(uuid_hash(&s));
                }
            } else if let Ok(s) = std::str::from_utf8(&line[start..end]) {
                out.push(uuid_hash(s));
            }
        }
    }
}

struct Finders {
    uuid: memmem::Finder<'static>,
    uuid_spaced: memmem::Finder<'static>,
    summary: memmem::Finder<'static>,
}

fn finders() -> &'static Finders {
    static FINDERS: std::sync::OnceLock<Finders> = std::sync::OnceLock::new();
    FINDERS.get_or_init(|| Finders {
        uuid: memmem::Finder::new(b"\"uuid\":\""),
        uuid_spaced: memmem::Finder::new(b"\"uuid\": \""),
        summary: memmem::Finder::new(b"\"summary\""),
    })
}

/// The hash of the [`RESUME_CHECK_BYTES`] of `file` before `offset`.
fn window_hash(file: &mut File, offset: u64) -> io::Result<u64> {
    let start = offset.saturating_sub(RESUME_CHECK_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((offset - start) as usize);
    file.by_ref().take(offset - start).read_to_end(&mut buf)?;
    if buf.len() as u64 != offset - start {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file shrank"));
    }
    Ok(fnv(&buf))
}

/// Scans a transcript: its head, and, when it was written by a Claude Code
/// that writes summaries, every summary line and uuid. With the scan of an
/// earlier state of the same file (`prev`), only what was appended since is
/// read when that is all that changed.
pub fn scan(mut file: File, identity: FileIdentity, prev: Option<&Scanned>) -> io::Result<Scanned> {
    if let Some((prev, r)) = prev.and_then(|p| p.resume.map(|r| (p, r))) {
        let same_file = prev.identity.dev == identity.dev && prev.identity.inode == identity.inode;
        if same_file && identity.size >= r.offset && window_hash(&mut file, r.offset).ok() == Some(r.check) {
            if r.complete {
                return Ok(Scanned { identity, ..prev.clone() });
            }
            file.seek(SeekFrom::Start(r.offset))?;
            return scan_from(file, identity, prev, r);
        }
        file.seek(SeekFrom::Start(0))?;
    }
    let empty = Scanned {
        identity,
        head: Head::default(),
        summaries: Arc::from([]),
        uuids: Arc::from([]),
        too_long: false,
        resume: None,
    };
    scan_from(file, identity, &empty, Resume { offset: 0, lines: 0, check: 0, complete: false })
}

fn scan_from(mut file: File, identity: FileIdentity, prev: &Scanned, from: Resume) -> io::Result<Scanned> {
    let finders = finders();
    let mut head = prev.head.clone();
    let mut summaries: Vec<Summary> = Vec::new();
    let mut uuids: Vec<u64> = Vec::new();
    let mut line_no = from.lines;
    // The file as it was opened: what a writer appends since is the next
    // scan's.
    let rest = identity.size.saturating_sub(from.offset);
    let scanned = scan_lines((&mut file).take(rest), |bytes| {
        let n = line_no;
        line_no += 1;
        let is_object = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        if !head.is_done() {
            let line = is_object.then(|| serde_json::from_slice::<ScanLine<'_>>(bytes).ok()).flatten();
            let fields = line.as_ref().map(|l| HeadFields {
                timestamp: l.timestamp.get(),
                cwd: l.cwd.get(),
                version: l.version.get(),
                message: matches!(l.kind.get(), Some("user" | "assistant")) && l.uuid.get().is_some() && !l.sidechain.0,
            });
            head.feed(n, fields);
            if let Some(l) = &line {
                if let Some(u) = l.uuid.get() {
                    uuids.push(uuid_hash(u));
                }
                let s = SummaryLine { kind: l.kind.clone(), summary: l.summary.clone(), leaf: l.leaf.clone() };
                summaries.extend(s.get(n));
            }
            if head.is_done() && !head.writes_summaries() {
                // A later Claude Code's transcript: its head is all a listing needs.
                return false;
            }
            return true;
        }
        if !is_object {
            return true;
        }
        raw_uuids(bytes, finders, &mut uuids);
        if finders.summary.find(bytes).is_some() {
            if let Ok(s) = serde_json::from_slice::<SummaryLine<'_>>(bytes) {
                summaries.extend(s.get(n));
            }
        }
        true
    });
    let (consumed, too_long) = match scanned {
        Ok(c) => (Some(c), false),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => (None, true),
        Err(e) => return Err(e),
    };
    let final_later = head.is_done() && !head.writes_summaries();
    let summaries: Arc<[Summary]> = if final_later {
        Arc::from([])
    } else if summaries.is_empty() {
        prev.summaries.clone()
    } else {
        prev.summaries.iter().cloned().chain(summaries).collect()
    };
    let uuids: Arc<[u64]> = if final_later {
        Arc::from([])
    } else if uuids.is_empty() {
        prev.uuids.clone()
    } else {
        uuids.sort_unstable();
        uuids.dedup();
        merge_sorted(&prev.uuids, &uuids).into()
    };
    let resume = match consumed {
        Some(offset) if !too_long => {
            let offset = from.offset + offset;
            let check = window_hash(&mut file, offset)?;
            Some(Resume { offset, lines: line_no, check, complete: final_later })
        }
        _ => None,
    };
    Ok(Scanned { identity, head, summaries, uuids, too_long, resume })
}

/// Two sorted lists of hashes merged, each once.
fn merge_sorted(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let next = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x <= y => {
                i += 1;
                if x == y {
                    j += 1;
                }
                x
            }
            (_, Some(&y)) => {
                j += 1;
                y
            }
            (Some(&x), None) => {
                i += 1;
                x
            }
            (None, None) => break,
        };
        out.push(next);
    }
    out
}

/// Where a summary line stands among the summaries of its project: the
/// line of the transcript started last wins (its first timestamp, else, for
/// a file of titles only, its modification time), then that of the file
/// named later (byte order), then the later line.
type Order = (u64, usize, u64);

/// The summary titles of one project directory: for each leaf (by
/// `uuid_hash`), the newest summary line that names it, of the files
/// that write summaries.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Winners(HashMap<u64, (Order, String, String)>);

impl Winners {
    /// The winners of a project's files, each given with the time it was
    /// started (ms, see `Order`) and its place in the project (byte order
    /// of names).
    pub fn build<'a>(files: impl Iterator<Item = (u64, usize, &'a Scanned)>) -> Winners {
        let mut by_leaf: HashMap<u64, (Order, String, String)> = HashMap::new();
        for (mtime, place, scanned) in files {
            if !scanned.writes_summaries() {
                continue;
            }
            for s in scanned.summaries.iter() {
                let order = (mtime, place, s.line);
                match by_leaf.get_mut(&uuid_hash(&s.leaf)) {
                    Some(held) if held.0 >= order => {}
                    Some(held) => *held = (order, s.leaf.clone(), s.text.clone()),
                    None => {
                        by_leaf.insert(uuid_hash(&s.leaf), (order, s.leaf.clone(), s.text.clone()));
                    }
                }
            }
        }
        Winners(by_leaf)
    }

    /// Whether no summary names any leaf.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The summary that titles `leaf`.
    pub fn get(&self, leaf: &str) -> Option<&str> {
        self.get_hashed(uuid_hash(leaf))
    }

    /// The summary that titles the leaf whose `uuid_hash` is `leaf`.
    pub fn get_hashed(&self, leaf: u64) -> Option<&str> {
        self.0.get(&leaf).map(|(_, _, text)| text.as_str())
    }

    /// Whether the two hold the same summary for every leaf (their order
    /// aside).
    pub fn same_titles(&self, other: &Winners) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().all(|(&h, (_, _, text))| other.get_hashed(h) == Some(text.as_str()))
    }

    /// What of the project's summaries a session holding `uuids` may be
    /// titled by, as a hash for its fingerprint: of each winning summary
    /// whose leaf it holds, by leaf (`None` when there is none).
    pub fn digest(&self, uuids: &[u64]) -> Option<u64> {
        if self.0.is_empty() || uuids.is_empty() {
            return None;
        }
        // The smaller side is walked, the other looked up: linear in the
        // uuids of the project's sessions however many summaries it has.
        let mut held: Vec<(&str, &str)> = if self.0.len() <= uuids.len() {
            let held = self.0.iter().filter(|(h, _)| uuids.binary_search(h).is_ok());
            held.map(|(_, (_, leaf, text))| (leaf.as_str(), text.as_str())).collect()
        } else {
            uuids.iter().filter_map(|h| self.0.get(h)).map(|(_, leaf, text)| (leaf.as_str(), text.as_str())).collect()
        };
        if held.is_empty() {
            return None;
        }
        held.sort_unstable();
        let mut out = Vec::new();
        for (leaf, text) in held {
            for part in [leaf, text] {
                out.extend_from_slice(&(part.len() as u64).to_le_bytes());
                out.extend_from_slice(part.as_bytes());
            }
        }
        Some(fnv(&out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        for v in ["1.0.24", "0.2.9", "2.0.46", "2.0.77-beta"] {
            assert!(version_before_2_1(v), "{v}");
        }
        for v in ["2.1.0", "2.1.114", "3.0.0", "10.0.0", "x", "2", ""] {
            assert!(!version_before_2_1(v), "{v}");
        }
    }

    #[test]
    fn merged_hashes_stay_sorted_and_unique() {
        assert_eq!(merge_sorted(&[1, 3, 5], &[2, 3, 6]), vec![1, 2, 3, 5, 6]);
        assert_eq!(merge_sorted(&[], &[4]), vec![4]);
        assert_eq!(merge_sorted(&[4], &[]), vec![4]);
    }

    #[test]
    fn a_digest_is_the_same_whichever_side_is_walked() {
        let summaries = |leaves: &[&str]| -> Arc<[Summary]> {
            let s = leaves.iter().enumerate().map(|(i, l)| Summary {
                leaf: (*l).to_owned(),
                text: format!("title {l}"),
                line: i as u64,
            });
            s.collect()
        };
        let scanned = |leaves: &[&str], uuids: &[&str]| {
            let mut hashes: Vec<u64> = uuids.iter().map(|u| uuid_hash(u)).collect();
            hashes.sort_unstable();
            Scanned {
                identity: FileIdentity { dev: 0, inode: 0, size: 0, mtime_ns: 0 },
                head: Head::default(),
                summaries: summaries(leaves),
                uuids: hashes.into(),
                too_long: false,
                resume: None,
            }
        };
        let holder = scanned(&["a", "b", "c", "d"], &[]);
        let few = Winners::build([(0, 0, &holder)].into_iter());
        let one = scanned(&[], &["b", "x", "d", "y", "z"]);
        let both = scanned(&[], &["b", "d"]);
        // Four winners against five uuids (winners walked), and against two
        // (uuids walked): the same two summaries, the same hash.
        assert_eq!(few.digest(&one.uuids), few.digest(&both.uuids));
        assert!(few.digest(&one.uuids).is_some());
        assert_eq!(few.digest(&scanned(&[], &["x"]).uuids), None);
    }

    #[test]
    fn raw_uuid_values_are_read_with_their_escapes() {
        let mut out = Vec::new();
        raw_uuids(br#"{"message":{"x":{"uuid":"a\"b"}},"uuid": "c"}"#, finders(), &mut out);
        assert_eq!(out, vec![uuid_hash("a\"b"), uuid_hash("c")]);
    }
}
