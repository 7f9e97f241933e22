//! Resumed reads against full reads: after every change to a log, the
//! store's (possibly resumed) read must equal a read from the start, and
//! the read must resume exactly when it may.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{ReadKind, MAX_ENTRIES, MAX_KEPT_BYTES};
use crate::sources::dsh::layout::Encoding;
use crate::sources::dsh::load::{load, open_log, read_log, Keep};
use crate::sources::dsh::{DshStore, LogStats, StoreError};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// One session's log in a private copy of a fixture root.
struct Log {
    _dir: tempfile::TempDir,
    store: DshStore,
    id: String,
    path: PathBuf,
    encoding: Encoding,
    generation: u64,
    /// The seq the next appended event gets.
    next: u64,
}

impl Log {
    /// The session `id` of a copy of the root `root` (relative to the
    /// repository).
    fn new(root: &str, id: &str) -> Log {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&repo().join(root), dir.path());
        let store = DshStore::open(dir.path()).unwrap();
        let found = store.locate(id).unwrap();
        let mut log = Log {
            store,
            id: id.to_owned(),
            path: found.path.clone(),
            encoding: found.encoding,
            generation: found.generation.number(),
            next: 0,
            _dir: dir,
        };
        log.next = log.full().map(|s| s.decoded_events).unwrap_or(0);
        log
    }

    /// A read from the start, without the store's resume points.
    fn full(&self) -> Result<LogStats, StoreError> {
        let found = self.store.locate(&self.id).unwrap();
        load(&found, &self.id, Keep::Nothing).map(|l| l.stats)
    }

    fn size(&self) -> u64 {
        fs::metadata(&self.path).unwrap().len()
    }

    /// Reads through the store, checks it against a full read, and says
    /// how the store's read began.
    fn check(&self) -> (Result<LogStats, StoreError>, ReadKind) {
        let read = self.store.inspect(&self.id);
        assert_eq!(read, self.full(), "{}: a resumed read differs from a full read", self.path.display());
        let kind = *self.store.resume.lock().unwrap().reads.last().expect("a read was noted");
        (read, kind)
    }

    /// As [`check`](Self::check), and the read must succeed.
    fn check_ok(&self) -> (LogStats, ReadKind) {
        let (read, kind) = self.check();
        (read.unwrap_or_else(|e| panic!("{}: {e}", self.path.display())), kind)
    }

    fn append_bytes(&self, bytes: &[u8]) {
        OpenOptions::new().append(true).open(&self.path).unwrap().write_all(bytes).unwrap();
    }

    /// The bytes that append `lines` to the log: the lines, or one frame
    /// holding them.
    fn encode(&self, lines: &[String]) -> Vec<u8> {
        let mut text = Vec::new();
        for line in lines {
            text.extend_from_slice(line.as_bytes());
            text.push(b'\n');
        }
        match self.encoding {
            Encoding::Raw => text,
            Encoding::Zstd => frame(&text),
        }
    }

    fn append(&self, lines: &[String]) {
        self.append_bytes(&self.encode(lines));
    }

    /// The next seq, counted as used.
    fn seq(&mut self) -> u64 {
        self.next += 1;
        self.next - 1
    }

    fn event(&mut self, kind: &str, data: &str) -> String {
        let seq = self.seq();
        format!(r#"{{"type":"{kind}","seq":{seq},"time":1790000000000,"data":{data}}}"#)
    }

    fn title(&mut self, title: &str) -> String {
        self.event("session/title", &format!(r#"{{"title":"{title}"}}"#))
    }

    fn user(&mut self, surface_op: &str) -> String {
        let seq = self.seq();
        format!(
            r#"{{"type":"user/message","seq":{seq},"time":1790000000000,"data":{{"content":[{{"type":"text","text":"more {seq}"}}],"source":{{"kind":"user"}},"role":"user","id":"u{seq}"}},"surfaceOp":{surface_op}}}"#
        )
    }

    /// A replace marker over `start..=end` in the log's spelling.
    fn replace_marker(&self, start: u64, end: u64) -> String {
        if self.generation >= 3 {
            format!(r#"{{"op":"replace","startSeq":{start},"endSeq":{end}}}"#)
        } else {
            format!(r#"{{"op":"replace","start":{start},"end":{end}}}"#)
        }
    }

    /// An open turn with a step and a started tool call.
    fn open_turn(&mut self) -> Vec<String> {
        let call = format!("c{}", self.next);
        let mut lines =
            vec![self.event("turn/start", r#"{"turn":9}"#), self.event("step/start", r#"{"turn":9,"step":1}"#)];
        lines.push(self.user(r#""append""#));
        if self.generation >= 4 {
            let seq = self.seq();
            lines.push(format!(
                r#"{{"type":"assistant/message","seq":{seq},"time":1,"data":{{"message":{{"role":"assistant","content":[{{"type":"tool-call","id":"{call}","name":"bash","arguments":"{{}}"}}],"source":{{"kind":"model"}}}}}},"surfaceOp":"append"}}"#
            ));
        }
        lines.push(self.event("tool/call", &format!(r#"{{"callId":"{call}","name":"bash","arguments":"{{}}"}}"#)));
        lines
    }

    fn close_turn(&mut self) -> Vec<String> {
        vec![
            self.event("step/end", r#"{"turn":9,"step":1}"#),
            self.event("turn/end", r#"{"turn":9,"reason":{"kind":"completed"}}"#),
        ]
    }
}

/// One checksummed zstd frame holding `text`.
fn frame(text: &[u8]) -> Vec<u8> {
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    encoder.include_checksum(true).unwrap();
    encoder.write_all(text).unwrap();
    encoder.finish().unwrap()
}

/// Logs of v0 and v4 (and v2, v3) in both encodings, and an example log.
const CASES: &[(&str, &str)] = &[
    ("tests/fixtures/dsh-generations/raw", "gen-v0"),
    ("tests/fixtures/dsh-generations/raw", "gen-v2"),
    ("tests/fixtures/dsh-generations/raw", "tool-call-turn"),
    ("tests/fixtures/dsh-generations/raw", "compaction-output-reserve"),
    ("tests/fixtures/dsh-generations/zstd", "gen-v0"),
    ("tests/fixtures/dsh-generations/zstd", "gen-v3"),
    ("tests/fixtures/dsh-generations/zstd", "tool-call-turn"),
    ("tests/fixtures/dsh-generations/zstd", "tool-error-details"),
    ("examples/sessions", "multi-turn"),
    ("examples/sessions", "compaction-recovery"),
];

#[test]
fn appends_are_resumed_and_read_as_a_full_read() {
    for &(root, id) in CASES {
        let mut log = Log::new(root, id);
        assert_eq!(log.check_ok().1, ReadKind::Full, "{root} {id}: the first read is a full one");
        // Nothing changed: nothing is read again, same answer.
        let size = log.size();
        assert_eq!(log.check_ok().1, ReadKind::Resumed(size));

        // A turn left open: recovery closers from the resumed fold.
        let lines = log.open_turn();
        log.append(&lines);
        let (stats, kind) = log.check_ok();
        assert_eq!(kind, ReadKind::Resumed(size), "{root} {id}");
        assert_eq!(stats.recovery_closers, ["tool/result", "step/end", "turn/end"], "{root} {id}");

        // Its end, a title, and a replacement of the surface's last event.
        let size = log.size();
        let mut lines = log.close_turn();
        lines.push(log.title("Resumed title"));
        log.append(&lines);
        let (stats, kind) = log.check_ok();
        assert_eq!(kind, ReadKind::Resumed(size));
        assert_eq!(stats.title.as_deref(), Some("Resumed title"));
        assert!(stats.recovery_closers.is_empty());
        let last = *stats.surface_seqs.last().unwrap();
        let size = log.size();
        let marker = log.replace_marker(last, last);
        let line = log.user(&marker);
        log.append(&[line]);
        let (stats, kind) = log.check_ok();
        assert_eq!(kind, ReadKind::Resumed(size));
        assert_eq!(stats.surface_seqs.last(), Some(&(log.next - 1)));
        assert_eq!(log.store.read_title(id).unwrap().as_deref(), Some("Resumed title"));
    }
}

#[test]
fn many_appends_in_a_row() {
    for root in ["tests/fixtures/dsh-generations/raw", "tests/fixtures/dsh-generations/zstd"] {
        let mut log = Log::new(root, "tool-call-turn");
        log.check_ok();
        for n in 0..40 {
            let size = log.size();
            let mut lines = vec![log.title(&format!("title {n}"))];
            if n % 3 == 0 {
                lines.push(log.user(r#""append""#));
            }
            log.append(&lines);
            let (stats, kind) = log.check_ok();
            assert_eq!(kind, ReadKind::Resumed(size), "{root}, append {n}");
            assert_eq!(stats.title, Some(format!("title {n}")));
        }
    }
}

#[test]
fn a_torn_append_then_its_completion() {
    for root in ["tests/fixtures/dsh-generations/raw", "tests/fixtures/dsh-generations/zstd"] {
        let mut log = Log::new(root, "gen-v0");
        log.check_ok();
        let size = log.size();
        let lines = [log.title("torn then whole"), log.user(r#""append""#)];
        let bytes = log.encode(&lines);
        // Inside the first line, or inside the one frame.
        let cut = if log.encoding == Encoding::Raw { lines[0].len() / 2 } else { bytes.len() * 2 / 3 };
        log.append_bytes(&bytes[..cut]);
        let (stats, kind) = log.check_ok();
        assert_eq!(kind, ReadKind::Resumed(size), "{root}");
        assert!(stats.torn_tail.is_some(), "{root}");
        log.append_bytes(&bytes[cut..]);
        let (stats, kind) = log.check_ok();
        assert_eq!(kind, ReadKind::Resumed(size), "{root}: resumed from before the torn part");
        assert!(stats.torn_tail.is_none());
        assert_eq!(stats.title.as_deref(), Some("torn then whole"));
    }
}

/// A zstd frame of several blocks cut short gives lines from its complete
/// blocks; the next read resumes from the end of the complete frames.
#[test]
fn a_torn_frame_with_recovered_lines() {
    let mut log = Log::new("tests/fixtures/dsh-generations/zstd", "tool-call-turn");
    log.check_ok();
    let size = log.size();
    let filler = "x".repeat(900);
    let lines: Vec<String> = (0..400).map(|n| log.title(&format!("{n} {filler}"))).collect();
    let bytes = log.encode(&lines);
    let cut = bytes.len() * 9 / 10;
    log.append_bytes(&bytes[..cut]);
    let (stats, kind) = log.check_ok();
    assert_eq!(kind, ReadKind::Resumed(size));
    let torn = stats.torn_tail.expect("a torn frame");
    assert!(torn.recovered_lines > 0, "the cut leaves complete blocks");
    assert_eq!(torn.truncate_to, size);
    // Reading again without a change, then after the completion: both from
    // the end of the complete frames, not from after the recovered lines.
    assert_eq!(log.check_ok().1, ReadKind::Resumed(size));
    log.append_bytes(&bytes[cut..]);
    let (stats, kind) = log.check_ok();
    assert_eq!(kind, ReadKind::Resumed(size));
    assert!(stats.torn_tail.is_none());
    assert_eq!(stats.title, Some(format!("399 {filler}")));
}

#[test]
fn truncation_and_replacement_read_from_the_start() {
    for root in ["tests/fixtures/dsh-generations/raw", "tests/fixtures/dsh-generations/zstd"] {
        let mut log = Log::new(root, "tool-call-turn");
        log.check_ok();
        let before = fs::read(&log.path).unwrap();
        let line = log.title("appended");
        log.append(&[line]);
        assert!(matches!(log.check_ok().1, ReadKind::Resumed(_)));

        // Truncated back (smaller than when last read): from the start.
        OpenOptions::new().write(true).open(&log.path).unwrap().set_len(before.len() as u64).unwrap();
        log.next -= 1;
        assert_eq!(log.check_ok().1, ReadKind::Full, "{root}: truncated");
        // And that read is resumed from in turn.
        let size = log.size();
        let line = log.title("again");
        log.append(&[line]);
        assert_eq!(log.check_ok().1, ReadKind::Resumed(size));

        // Replaced by a longer file (written beside it, renamed over it):
        // a new inode, read from the start, even though its first bytes
        // are the same.
        let mut replacement = fs::read(&log.path).unwrap();
        replacement.extend_from_slice(&log.encode(&[log.clone_title("replaced")]));
        let tmp = log.path.with_extension("tmp");
        fs::write(&tmp, &replacement).unwrap();
        fs::rename(&tmp, &log.path).unwrap();
        let (stats, kind) = log.check_ok();
        assert_eq!(kind, ReadKind::Full, "{root}: replaced");
        assert_eq!(stats.title.as_deref(), Some("replaced"));
    }
}

impl Log {
    /// A title event with the next seq, without using it up.
    fn clone_title(&self, title: &str) -> String {
        let seq = self.next;
        format!(r#"{{"type":"session/title","seq":{seq},"time":1790000000000,"data":{{"title":"{title}"}}}}"#)
    }
}

#[test]
fn an_in_place_rewrite_that_grew_is_caught() {
    for root in ["tests/fixtures/dsh-generations/raw", "tests/fixtures/dsh-generations/zstd"] {
        let mut log = Log::new(root, "gen-v0");
        let line = log.title("original");
        log.append(&[line]);
        log.check_ok();
        let ino = inode(&log.path);
        // Rewrite the file in place: the same bytes up to the last event,
        // which now says another title, then one more event.
        let mut rewritten = fs::read(&log.path).unwrap();
        let tail = log.encode(&[log.clone_title("original")]);
        rewritten.truncate(rewritten.len() - tail.len());
        log.next -= 1;
        let lines = [log.title("rewritten"), log.user(r#""append""#)];
        rewritten.extend_from_slice(&log.encode(&lines));
        fs::write(&log.path, &rewritten).unwrap();
        assert_eq!(inode(&log.path), ino, "written in place");
        let (stats, kind) = log.check_ok();
        assert_eq!(kind, ReadKind::Full, "{root}: the check bytes differ");
        assert_eq!(stats.title.as_deref(), Some("rewritten"));
    }
}

#[cfg(unix)]
fn inode(path: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&fs::metadata(path).unwrap())
}

#[cfg(not(unix))]
fn inode(_: &Path) -> u64 {
    0
}

#[test]
fn an_older_mtime_reads_from_the_start() {
    let mut log = Log::new("tests/fixtures/dsh-generations/raw", "gen-v0");
    log.check_ok();
    let line = log.title("later");
    log.append(&[line]);
    let file = OpenOptions::new().write(true).open(&log.path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)).unwrap();
    assert_eq!(log.check_ok().1, ReadKind::Full);
}

#[test]
fn an_appended_broken_line() {
    // A plain log: the broken line is kept out of the fold, so each later
    // read judges it again with what follows.
    let mut log = Log::new("tests/fixtures/dsh-generations/raw", "tool-call-turn");
    log.check_ok();
    let size = log.size();
    log.append_bytes(b"{\"type\":\"session/title\",\"seq\":\n");
    let (stats, kind) = log.check_ok();
    assert_eq!(kind, ReadKind::Resumed(size));
    assert_eq!(stats.torn_tail.map(|t| t.truncate_to), Some(size));
    let line = log.title("after the break");
    log.append(&[line]);
    let (stats, kind) = log.check_ok();
    assert_eq!(kind, ReadKind::Resumed(size));
    assert_ne!(stats.title.as_deref(), Some("after the break"));
    let lines = log.close_turn();
    log.append(&lines);
    let (read, kind) = log.check();
    assert_eq!(kind, ReadKind::Resumed(size));
    assert!(read.unwrap_err().message().contains("committed region"));
    // A failed read keeps nothing.
    assert_eq!(log.check().1, ReadKind::Full);

    // A zstd log: a broken line in a complete frame fails the read.
    let mut log = Log::new("tests/fixtures/dsh-generations/zstd", "tool-call-turn");
    log.check_ok();
    let size = log.size();
    let lines = [log.title("fine"), "not json".to_owned()];
    log.append(&lines);
    let (read, kind) = log.check();
    assert_eq!(kind, ReadKind::Resumed(size));
    assert!(read.unwrap_err().message().contains("inside a complete frame"));
    assert_eq!(log.check().1, ReadKind::Full);
}

#[test]
fn an_appended_invalid_fold_or_seq_gap_fails_as_a_full_read() {
    for root in ["tests/fixtures/dsh-generations/raw", "tests/fixtures/dsh-generations/zstd"] {
        let mut log = Log::new(root, "gen-v0");
        log.check_ok();
        let marker = log.replace_marker(1000, 1001);
        let line = log.user(&marker);
        log.append(&[line]);
        let (read, kind) = log.check();
        assert!(matches!(kind, ReadKind::Resumed(_)));
        assert!(read.unwrap_err().message().contains("invalid surface fold"), "{root}");

        let mut log = Log::new(root, "gen-v0");
        log.check_ok();
        log.next += 5;
        let lines = [log.title("after a gap"), log.close_turn().remove(1)];
        log.append(&lines);
        let (read, kind) = log.check();
        assert!(matches!(kind, ReadKind::Resumed(_)));
        assert!(read.is_err(), "{root}");
    }
}

/// A frame whose text ends inside a line leaves no point to resume from:
/// the next read is a full one.
#[test]
fn a_frame_ending_inside_a_line() {
    let mut log = Log::new("tests/fixtures/dsh-generations/zstd", "gen-v0");
    log.check_ok();
    let line = log.title("split across frames");
    let (first, second) = line.split_at(line.len() / 2);
    log.append_bytes(&frame(first.as_bytes()));
    assert!(matches!(log.check_ok().1, ReadKind::Resumed(_)));
    let mut rest = second.as_bytes().to_vec();
    rest.push(b'\n');
    log.append_bytes(&frame(&rest));
    let (stats, kind) = log.check_ok();
    assert_eq!(kind, ReadKind::Full);
    assert_eq!(stats.title.as_deref(), Some("split across frames"));
}

/// The fixture logs that end torn: resumed reads of them and of what is
/// appended after the torn tail read as full reads do.
#[test]
fn logs_that_end_torn() {
    for root in ["tests/fixtures/dsh-generations/raw", "tests/fixtures/dsh-generations/zstd"] {
        let mut log = Log::new(root, "gen-v4-open");
        let (stats, _) = log.check_ok();
        assert!(stats.torn_tail.is_some());
        assert!(matches!(log.check_ok().1, ReadKind::Resumed(_)), "{root}");
        let lines = [log.title("after the torn tail")];
        log.append(&lines);
        let _ = log.check();
        log.append_bytes(b"\n");
        let _ = log.check();
    }
}

#[test]
fn kept_points_are_bounded() {
    let log = Log::new("tests/fixtures/dsh-generations/raw", "tool-call-turn");
    let found = log.store.locate(&log.id).unwrap();
    let (file, identity) = open_log(&found).unwrap();
    let (_, point) = read_log(&found, &log.id, file, identity.size, None, Keep::Nothing, true).unwrap();
    let point = point.expect("a clean plain log has a resume point");
    let mut cache = super::ResumeCache::default();
    let entry = |cost| super::Entry { id: log.id.clone(), identity, point: point.clone(), cost, used: 0 };
    for n in 0..MAX_ENTRIES + 10 {
        cache.keep(PathBuf::from(format!("/log/{n}")), entry(1000));
    }
    assert_eq!(cache.len(), MAX_ENTRIES);
    // The least recently kept went first.
    assert!(!cache.entries.contains_key(Path::new("/log/0")));
    assert!(cache.entries.contains_key(&PathBuf::from(format!("/log/{}", MAX_ENTRIES + 9))));
    // The memory budget holds too; a point bigger than all of it is not kept.
    cache.keep(PathBuf::from("/big"), entry(MAX_KEPT_BYTES - 1000));
    assert!(cache.kept_bytes <= MAX_KEPT_BYTES);
    assert!(cache.entries.len() <= 2);
    cache.keep(PathBuf::from("/huge"), entry(MAX_KEPT_BYTES + 1));
    assert!(!cache.entries.contains_key(Path::new("/huge")));
}
