//! Reading a whole log once, streaming, with the rules of its generation:
//! seqs must run 0, 1, 2, … (packed rows expanded, v0/v1 only); every
//! `sourceEventSeqs` is well formed; the surface fold is validated as it
//! goes ([`fold`](super::fold)) and message contents are checked against
//! the generation ([`message`](super::message)); the latest title is
//! remembered; and a log that ends inside a turn gets the recovery closers
//! of a cold load ([`recovery`](super::recovery)).
//!
//! The fold is resumable: everything a read carries from one line to the
//! next is a `Fold`, and a read can start from a `ResumePoint` (a fold and
//! the byte offset where it stopped) instead of from the header. A full
//! read and a resumed one run the same loop; when a read may resume is
//! decided in `resume.rs` (see "Resumed reads" in the [store's
//! docs](super)).

use std::fs::{self, File};
use std::io;
use std::path::Path;

use serde_json::{Map, Value};

use super::discover::Found;
use super::fold::{SeqMap, Surface, SurfaceOp};
use super::frames::{read_at, FrameStats, LineRead, LineReader, ZstdScratch, MAX_LINE_BYTES, ZSTD_CHUNK};
use super::generation::Generation;
use super::header::read_header;
use super::kept::{KeptLines, LineAt, LineStub};
use super::layout::Encoding;
use super::message::{check_facts, facts_of, CHECKED_TYPES};
use super::recovery::TurnTracker;
use super::rows::{may_be_turn_end, parse_row, Row, SeqRuns};
use super::title::{title_of, TITLE_EVENT};
use super::{LogStats, StoreError, StoreErrorKind, TornTail};
use crate::fs::{open_regular, FileIdentity};
use crate::retention::Elided;
use crate::sources::file_source::line_checksum;

/// The event type of a top-level streamed chunk (v0 and v1 only).
const CHUNK_EVENT: &str = "assistant/chunk";

fn corrupt_error(path: &Path, why: String) -> StoreError {
    StoreError::new(StoreErrorKind::Corrupt, format!("corrupt session log {}: {why}", path.display()))
}

fn io_error(path: &Path, e: io::Error) -> StoreError {
    if e.kind() == io::ErrorKind::InvalidData {
        StoreError::new(StoreErrorKind::Corrupt, format!("{}: {e}", path.display()))
    } else {
        StoreError::new(StoreErrorKind::Io, format!("cannot read {}: {e}", path.display()))
    }
}

/// Opens the log of `found`, with the identity it has now.
pub(crate) fn open_log(found: &Found) -> Result<(File, FileIdentity), StoreError> {
    open_regular(&found.path).map_err(|e| io_error(&found.path, e))
}

/// Checks a stored `sourceEventSeqs` of the event `seq`: every run
/// `[start, end]` has `start <= end`, every seq is earlier than the event's
/// own, and no seq is named twice.
fn check_source_seqs(kind: &str, seq: u64, runs: &SeqRuns) -> Result<(), String> {
    let bad = |why: &str| format!("{kind} event {seq} has an invalid `sourceEventSeqs`: {why}");
    for &[start, end] in runs {
        if start > end {
            return Err(bad(&format!("the run [{start}, {end}] ends before it starts")));
        }
        if end >= seq {
            return Err(bad(&format!("{end} is not earlier than the event")));
        }
    }
    let mut sorted = runs.clone();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[1][0] <= w[0][1]) {
        return Err(bad("a seq is named twice"));
    }
    Ok(())
}

/// The rules of `generation` for the envelope of one event; `Err` names
/// the problem.
fn check_envelope(
    generation: Generation,
    kind: &str,
    seq: u64,
    surface_eligible: bool,
    has_marker: bool,
    source_seqs: Option<&SeqRuns>,
    extra_key: Option<&str>,
) -> Result<(), String> {
    if kind == CHUNK_EVENT && !generation.has_packed_rows() {
        return Err(format!(
            "a top-level {CHUNK_EVENT} event ({seq}) in a {generation} log (streams are nested from v2)"
        ));
    }
    if let Some(key) = extra_key.filter(|_| generation.has_exact_header_keys()) {
        return Err(format!("{kind} event {seq} has the key `{key}`, which is not an event key of a v4 log"));
    }
    if let Some(runs) = source_seqs {
        check_source_seqs(kind, seq, runs)?;
    }
    if generation.refuses_markers_on_log_events() {
        if !surface_eligible && (has_marker || source_seqs.is_some()) {
            return Err(format!(
                "{kind} event {seq} carries surfaceOp or sourceEventSeqs, but {kind} is not a surface type \
                 in a {generation} log"
            ));
        }
        if kind == "assistant/message" && source_seqs.is_some() {
            return Err(format!("assistant/message event {seq} carries sourceEventSeqs (not allowed from v2)"));
        }
    }
    Ok(())
}

/// The result of reading a whole log.
pub(crate) struct Loaded {
    pub header_json: Map<String, Value>,
    pub stats: LogStats,
    /// The lines of the surface events (only when asked for).
    pub lines: KeptLines,
}

/// Everything the fold carries from one line to the next: the state after
/// the last line it accepted. What a read finds after that line (a torn
/// tail, a broken line and the lines after it) is never part of it.
#[derive(Clone, Debug)]
pub(crate) struct Fold {
    header_json: Map<String, Value>,
    surface: Surface,
    keep_lines: bool,
    lines: KeptLines,
    turns: TurnTracker,
    title: Option<String>,
    /// The seq the next line must start with.
    expected: u64,
    /// Lines accepted, header included.
    storage_lines: u64,
    packed_rows: u64,
    packed_members: u64,
}

impl Fold {
    fn new(generation: Generation, header_json: Map<String, Value>, keep: Keep) -> Fold {
        Fold {
            header_json,
            surface: Surface::for_generation(generation),
            keep_lines: keep != Keep::Nothing,
            lines: match keep {
                Keep::Visible => KeptLines::visible_only(),
                Keep::Stubs => KeptLines::stubs_only(),
                Keep::Within(budget) => KeptLines::within(budget),
                Keep::Nothing | Keep::Surface => KeptLines::new(),
            },
            turns: TurnTracker::for_generation(generation),
            title: None,
            expected: 0,
            storage_lines: 1,
            packed_rows: 0,
            packed_members: 0,
        }
    }

    /// About how many bytes of memory the fold holds: the surface (a slot
    /// of 8 bytes per surface event, see [`Surface`]), the open tool calls,
    /// the title, the header and the kept lines.
    pub(crate) fn approx_bytes(&self) -> usize {
        /// The header map (a handful of short keys and values).
        const HEADER_BYTES: usize = 512;
        std::mem::size_of::<Fold>()
            + self.surface.approx_bytes()
            + self.turns.open_call_bytes()
            + self.title.as_ref().map_or(0, String::len)
            + HEADER_BYTES
            + self.lines.approx_bytes()
    }
}

impl Fold {
    /// Frees the slack of what the fold holds (before it is kept).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.surface.shrink_to_fit();
    }
}

/// Where a read stopped, such that a later read of the same, longer file
/// may continue from there and get what a full read of it gives.
#[derive(Clone, Debug)]
pub(crate) struct ResumePoint {
    /// The byte offset of the file where the fold stopped: the end of the
    /// last complete line it accepted (plain logs) or of the last frame
    /// whose lines it folded (zstd logs).
    pub offset: u64,
    /// Zstd logs: complete frames before `offset`, and where the last of
    /// them ends.
    pub frames: Option<(u64, u64)>,
    /// The fold there.
    pub fold: Fold,
    /// The last bytes of the file before `offset`, as this read saw them
    /// (see [`bytes_before`]).
    pub before: Vec<u8>,
}

/// Bytes just before the resume offset compared before a read resumes
/// (`resume.rs`).
pub const CHECK_BYTES: u64 = 4 << 10;

/// The last [`CHECK_BYTES`] (or fewer) bytes of `file` before `offset`;
/// `None` when they cannot all be read.
pub(crate) fn bytes_before(file: &File, offset: u64) -> Option<Vec<u8>> {
    let len = offset.min(CHECK_BYTES);
    let mut buf = vec![0; len as usize];
    match read_at(file, offset - len, &mut buf) {
        Ok(n) if n as u64 == len => Some(buf),
        _ => None,
    }
}

/// Parses one line and checks that it comes where `expected` says; the
/// error says why the line cannot be accepted there.
fn check_line(line: &[u8], expected: u64) -> Result<Row<'_>, String> {
    if std::str::from_utf8(line).is_err() {
        return Err("a line is not valid UTF-8".into());
    }
    let row = parse_row(line)?;
    if row.first_seq() != expected {
        return Err(format!("seq gap (expected {expected}, got {})", row.first_seq()));
    }
    Ok(row)
}

/// Which lines a read keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// None: a read for the title and the stats.
    Nothing,
    /// The line of every surface event: the surface snapshot as DSH gives it.
    Surface,
    /// The lines of the surface events that projection does not drop
    /// unread (messages, and whatever would fail it): a snapshot that
    /// projects exactly as the whole surface does, without tool results,
    /// reasoning-only steps or system notes (`projection::may_project`).
    Visible,
    /// Of the lines [`Keep::Visible`] keeps, where they are and what
    /// retention needs of their items, not their bytes
    /// ([`LineStub`](super::kept::LineStub)): a read that streams the
    /// items reads them again.
    Stubs,
    /// The stubs of [`Keep::Stubs`], and the bytes of the lines retention
    /// may still keep under this budget as the log is read
    /// ([`KeptLines::within`]).
    Within(u64),
}

/// Reads a whole log once, streaming, and validates it (see the module
/// docs), keeping the lines `keep` says.
pub(crate) fn load(found: &Found, id: &str, keep: Keep) -> Result<Loaded, StoreError> {
    let (file, identity) = open_log(found)?;
    read_log(found, id, file, identity.size, None, keep, false).map(|(loaded, _)| loaded)
}

/// Reads the log of `found` from `file` (opened when its size was
/// `file_bytes`): from the header, or from `from`, which must be a resume
/// point of an earlier read of the same log that the file still begins
/// with. With `want_resume`, also returns where a later read could resume,
/// when there is such a point (see [`ResumePoint`]).
pub(crate) fn read_log(
    found: &Found,
    id: &str,
    file: File,
    file_bytes: u64,
    from: Option<ResumePoint>,
    keep: Keep,
    want_resume: bool,
) -> Result<(Loaded, Option<ResumePoint>), StoreError> {
    let keep_lines = keep != Keep::Nothing;
    let path = &found.path;
    let generation = found.generation;
    // A fold that keeps lines is never kept for later.
    let want_resume = want_resume && !keep_lines;
    let corrupt = |why: String| corrupt_error(path, why);
    let io_error = |e: io::Error| io_error(path, e);
    let (mut reader, mut fold) = match from {
        None => {
            let mut reader = match found.encoding {
                Encoding::Raw => LineReader::raw(file),
                Encoding::Zstd => {
                    LineReader::zstd_with(file, file_bytes, ZstdScratch::new().map_err(io_error)?, ZSTD_CHUNK)
                }
            };
            let header = read_header(&mut reader, generation).map_err(|e| corrupt(e.message().to_owned()))?;
            if header.id != id {
                return Err(corrupt(format!("its header names session {}", crate::json::js_string(&header.id))));
            }
            (reader, Fold::new(generation, header.json, keep))
        }
        Some(point) => {
            let reader = match (found.encoding, point.frames) {
                (Encoding::Zstd, Some(frames)) => {
                    let scratch = ZstdScratch::new().map_err(io_error)?;
                    LineReader::zstd_at(file, file_bytes, scratch, point.offset, frames)
                }
                _ => LineReader::raw_at(file, point.offset).map_err(io_error)?,
            };
            (reader, point.fold)
        }
    };

    let surface_types = generation.surface_types();
    // What the read finds after the last accepted line: it counts in the
    // stats but is never part of the fold.
    let mut tail_lines: u64 = 0;
    let mut kept_raw_offset = reader.raw_offset();
    let mut torn_bytes = 0u64;
    let mut broke = false;
    let mut recovered_lines = 0u64;
    // Zstd: the fold at the end of the complete frames, once a torn last
    // frame gives lines.
    let mut at_commit: Option<ResumePoint> = None;
    let mut buf = Vec::new();
    loop {
        let line_offset = reader.raw_offset();
        let info = match reader.next_line(&mut buf, MAX_LINE_BYTES).map_err(io_error)? {
            LineRead::Line(info) => info,
            LineRead::End { torn_bytes: t } => {
                if t > 0 {
                    tail_lines += 1;
                }
                torn_bytes = t;
                break;
            }
        };
        if want_resume && !info.strict && at_commit.is_none() {
            if let Some((offset, frames)) = reader.frame_boundary_before_last_line() {
                at_commit = Some(ResumePoint { offset, frames: Some(frames), fold: fold.clone(), before: Vec::new() });
            }
        }
        let line_no = fold.storage_lines + 1;
        let (row, mut why) = match check_line(&buf, fold.expected) {
            Ok(row) => (Some(row), None),
            Err(e) => (None, Some(e)),
        };
        // A `session/title` whose data is not readable is a broken line too.
        let mut new_title = None;
        if let Some(Row::Event { kind, .. }) = &row {
            if kind == TITLE_EVENT {
                match title_of(&buf) {
                    Ok(t) => new_title = Some(t),
                    Err(e) => why = Some(e),
                }
            }
        }
        if let Some(why) = why {
            tail_lines += 1;
            let why = format!("line {line_no}: {why}");
            if info.strict {
                return Err(corrupt(format!("{why}, inside a complete frame")));
            }
            // DSH ignores what follows a broken line unless a later line
            // ends a turn: then the break is inside the committed region.
            loop {
                match reader.next_line(&mut buf, MAX_LINE_BYTES).map_err(io_error)? {
                    LineRead::Line(_) if may_be_turn_end(&buf) => {
                        return Err(corrupt(format!("seq gap or bad line in committed region at {why}")));
                    }
                    LineRead::Line(_) => tail_lines += 1,
                    LineRead::End { .. } => break,
                }
            }
            broke = true;
            break;
        }
        let row = row.expect("an unbroken line parses");
        if !info.strict && reader.frame_stats().is_some_and(|s| s.torn) {
            recovered_lines += 1;
        }
        match row {
            Row::Packed { members, .. } => {
                if !generation.has_packed_rows() {
                    return Err(corrupt(format!(
                        "line {line_no}: a packed chunk row in a {generation} log (packed rows exist only in v0 and v1)"
                    )));
                }
                fold.packed_rows += 1;
                fold.packed_members += members;
                fold.expected = fold.expected.checked_add(members).ok_or_else(|| corrupt("seq overflow".into()))?;
            }
            Row::Event { seq, kind, surface_op, source_seqs, extra_key, facts } => {
                let eligible = surface_types.contains(&&*kind);
                check_envelope(
                    generation,
                    &kind,
                    seq,
                    eligible,
                    surface_op.is_some(),
                    source_seqs.as_ref(),
                    extra_key.as_deref(),
                )
                .map_err(corrupt)?;
                if eligible {
                    let op = SurfaceOp::parse_in(generation, &kind, seq, surface_op.as_ref()).map_err(corrupt)?;
                    if CHECKED_TYPES.contains(&&*kind) {
                        let facts = match facts {
                            Some(f) => *f,
                            None => facts_of(&kind, &buf).map_err(|e| corrupt(format!("line {line_no}: {e}")))?,
                        };
                        check_facts(generation, &kind, seq, &facts).map_err(corrupt)?;
                        if kind == "assistant/message" && fold.turns.tracks_advertised_calls() {
                            fold.turns.observe_advertised(&facts.tool_call_ids);
                        }
                    }
                    let removed = fold.surface.apply_event(seq, &kind, op).map_err(corrupt)?;
                    if fold.keep_lines {
                        for r in removed {
                            fold.lines.remove(r);
                        }
                        fold.lines.insert_at(seq, &buf, LineAt { line: line_no, offset: line_offset });
                        if fold.lines.should_let_go(fold.surface.len()) {
                            let surface = &fold.surface;
                            fold.lines.let_go(|| surface.seqs());
                        }
                    }
                }
                if let Some(t) = new_title {
                    fold.title = t;
                }
                fold.turns.observe(&kind, &buf);
                fold.expected += 1;
            }
        }
        fold.storage_lines += 1;
        kept_raw_offset = reader.raw_offset();
    }

    let frame_stats: Option<FrameStats> = reader.frame_stats();
    let torn_tail = match (frame_stats, kept_raw_offset) {
        (Some(fs), _) if fs.torn => Some(TornTail {
            truncate_to: fs.complete_end,
            file_bytes: fs.file_bytes,
            discarded_bytes: fs.file_bytes - fs.complete_end,
            recovered_lines,
        }),
        (None, Some(kept)) if broke || torn_bytes > 0 => {
            let file_bytes = fs::metadata(path).map(|m| m.len()).unwrap_or(kept + torn_bytes);
            Some(TornTail {
                truncate_to: kept,
                file_bytes,
                discarded_bytes: file_bytes.saturating_sub(kept),
                recovered_lines: 0,
            })
        }
        _ => None,
    };
    let closers = fold.turns.closers();
    let last_seq = fold.expected.checked_sub(1);
    let captured_through_seq = last_seq.map(|l| l + closers.len() as u64);
    let stats = LogStats {
        generation: generation.number(),
        storage_lines: fold.storage_lines + tail_lines,
        decoded_events: fold.expected,
        last_seq,
        packed_rows: fold.packed_rows,
        packed_members: fold.packed_members,
        complete_frames: frame_stats.map(|s| s.complete_frames),
        torn_tail,
        recovery_closers: closers.iter().map(|c| c.event_type()).collect(),
        captured_through_seq,
        title: fold.title.clone(),
        surface_seqs: fold.surface.seqs(),
    };
    // Where a later read may resume. A plain log: after the last accepted
    // line, always (a torn tail or a broken line is read again from its
    // start). A zstd log: at the end of the file when every frame was
    // complete and its text ended with a line, else at the end of the
    // complete frames when their text ended with a line; never inside a
    // frame.
    let boundary = if !want_resume {
        None
    } else if let Some(offset) = kept_raw_offset {
        Some((offset, None))
    } else if at_commit.is_none() && !broke {
        reader.frame_boundary_after_last_line().map(|(offset, frames)| (offset, Some(frames)))
    } else {
        None
    };
    let (header_json, lines, resume) = match boundary {
        Some((offset, frames)) => {
            let header_json = fold.header_json.clone();
            (header_json, KeptLines::new(), Some(ResumePoint { offset, frames, fold, before: Vec::new() }))
        }
        None => (fold.header_json, fold.lines, at_commit),
    };
    // The check bytes come from the file this read read, whatever happened
    // to the path since.
    let resume = resume.and_then(|mut point| {
        point.before = bytes_before(reader.file(), point.offset)?;
        Some(point)
    });
    Ok((Loaded { header_json, stats, lines }, resume))
}

/// Reads again the lines of `stubs` (in ascending line order) from `file`
/// (the log of `found`, `file_bytes` long: a plain log from the first of
/// them on, a zstd log decompressed again from its start), calling `f`
/// with each. `None` when a line is not the line its stub was made of
/// (same length and checksum; the file changed under the read), or `f`
/// stops.
pub(crate) fn lines_again(
    found: &Found,
    file: File,
    file_bytes: u64,
    stubs: &[LineStub],
    mut f: impl FnMut(&[u8]) -> Option<()>,
) -> Result<Option<()>, StoreError> {
    let Some(first) = stubs.first() else { return Ok(Some(())) };
    let io_error = |e: io::Error| io_error(&found.path, e);
    // Where the reader is, as a stub says where its line is: the byte
    // offset of a plain log, the number of the next line of a zstd log.
    let (mut reader, mut line) = match found.encoding {
        Encoding::Raw => (LineReader::raw_at(file, first.at).map_err(io_error)?, None),
        Encoding::Zstd => {
            let scratch = ZstdScratch::new().map_err(io_error)?;
            (LineReader::zstd_with(file, file_bytes, scratch, ZSTD_CHUNK), Some(1u64))
        }
    };
    let mut buf = Vec::new();
    let next = |reader: &mut LineReader, buf: &mut Vec<u8>, line: &mut Option<u64>| {
        let read = reader.next_line(buf, MAX_LINE_BYTES).map_err(io_error)?;
        if let Some(l) = line {
            *l += 1;
        }
        Ok::<bool, StoreError>(matches!(read, LineRead::Line(_)))
    };
    for stub in stubs {
        let here = |reader: &LineReader, line: Option<u64>| line.or_else(|| reader.raw_offset()).unwrap_or(u64::MAX);
        while here(&reader, line) < stub.at {
            if !next(&mut reader, &mut buf, &mut line)? {
                return Ok(None);
            }
        }
        // A plain log's line must begin exactly where the stub says.
        if here(&reader, line) != stub.at || !next(&mut reader, &mut buf, &mut line)? {
            return Ok(None);
        }
        if buf.len() != stub.len || line_checksum(&buf) != stub.checksum {
            return Ok(None);
        }
        if f(&buf).is_none() {
            return Ok(None);
        }
    }
    Ok(Some(()))
}

/// A log read for where its visible lines are, not their bytes: the
/// header, the stats, and a [`LineStub`] of each visible surface line, in
/// surface order ([`Keep::Stubs`]), and a second handle of the file it
/// read (to read them again from) and that file's length then.
pub(crate) struct LoadedStubs {
    pub header_json: Map<String, Value>,
    pub stats: LogStats,
    pub stubs: Vec<LineStub>,
    pub again: File,
    pub file_bytes: u64,
}

/// The read of a log that streams its visible items (each pass over them
/// reads their lines again).
pub(crate) fn load_stubs(found: &Found, id: &str) -> Result<LoadedStubs, StoreError> {
    let (file, identity) = open_log(found)?;
    let again = file.try_clone().map_err(|e| io_error(&found.path, e))?;
    let (loaded, _) = read_log(found, id, file, identity.size, None, Keep::Stubs, false)?;
    let Loaded { header_json, stats, lines } = loaded;
    let stubs = lines.into_stubs(&stats.surface_seqs);
    Ok(LoadedStubs { header_json, stats, stubs, again, file_bytes: identity.size })
}

/// A read of a log under a byte budget: the header, the stats, and the
/// surface's visible lines in surface order, without those retention
/// certainly drops under the budget, which are counted in `elided`.
pub(crate) struct LoadedWithin {
    pub header_json: Map<String, Value>,
    pub stats: LogStats,
    pub lines: Vec<Vec<u8>>,
    pub elided: Elided,
}

/// Reads a log under `budget` in one pass, streaming: it keeps where each
/// visible line is and its item's floor, and the bytes of only the lines
/// retention may still keep as the surface stands ([`Keep::Within`]). A
/// replacement may bring a line let go back into the budget: such lines
/// alone are then read again from the same open file (a plain log from
/// the first of them on, a zstd log decompressed again from its start).
/// `None` when a line read again is not the line the first pass read
/// (same length and checksum): the file changed under the read, and the
/// caller reads it whole again rather than mix two versions.
pub(crate) fn load_within(found: &Found, id: &str, budget: u64) -> Result<Option<LoadedWithin>, StoreError> {
    let (file, identity) = open_log(found)?;
    let again_file = file.try_clone().map_err(|e| io_error(&found.path, e))?;
    let (loaded, _) = read_log(found, id, file, identity.size, None, Keep::Within(budget), false)?;
    let Loaded { header_json, stats, mut lines } = loaded;
    // The lines let go whose floors retention's walk needs after all (a
    // replacement brought them back), read again: the newest first, a
    // batch that doubles each time (each read of a zstd log decompresses
    // it from its start).
    let mut again: SeqMap<Vec<u8>> = SeqMap::default();
    let mut batch = 1;
    let (stubs, mut got, elided) = loop {
        match lines.within_lines(&stats.surface_seqs, budget, &again) {
            Ok(within) => break within,
            Err(mut missing) => {
                missing.truncate(batch);
                batch *= 2;
                missing.sort_by_key(|(_, stub)| stub.at);
                let picked: Vec<LineStub> = missing.iter().map(|(_, stub)| *stub).collect();
                let mut next = missing.iter();
                let file = again_file.try_clone().map_err(|e| io_error(&found.path, e))?;
                let read = lines_again(found, file, identity.size, &picked, |line| {
                    again.insert(next.next()?.0, line.to_vec());
                    Some(())
                })?;
                if read.is_none() {
                    return Ok(None);
                }
            }
        }
    };
    drop((lines, again));
    // The lines let go and kept after all, read again in line order
    // (surface order may differ).
    let mut wanted: Vec<usize> = (0..stubs.len()).filter(|&k| got[k].is_none()).collect();
    if !wanted.is_empty() {
        wanted.sort_by_key(|&k| stubs[k].at);
        let picked: Vec<LineStub> = wanted.iter().map(|&k| stubs[k]).collect();
        let mut next = wanted.iter();
        let read = lines_again(found, again_file, identity.size, &picked, |line| {
            // A copy of its size (the buffer grew to the longest line read).
            got[*next.next()?] = Some(line.to_vec());
            Some(())
        })?;
        if read.is_none() {
            return Ok(None);
        }
    }
    let lines = got.into_iter().map(Option::unwrap_or_default).collect();
    Ok(Some(LoadedWithin { header_json, stats, lines, elided }))
}
