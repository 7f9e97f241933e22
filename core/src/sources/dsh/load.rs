//! Reading a whole log once, streaming, with the rules of its generation:
//! seqs must run 0, 1, 2, … (packed rows expanded, v0/v1 only); every
//! `sourceEventSeqs` is well formed; the surface fold is validated as it
//! goes ([`fold`](super::fold)) and message contents are checked against
//! the generation ([`message`](super::message)); the latest title is
//! remembered; and a log that ends inside a turn gets the recovery closers
//! of a cold load ([`recovery`](super::recovery)).

use std::fs;
use std::io;

use serde_json::{Map, Value};

use super::discover::Found;
use super::fold::{Surface, SurfaceOp};
use super::frames::{FrameStats, LineRead, LineReader, ZstdScratch, MAX_LINE_BYTES, ZSTD_CHUNK};
use super::generation::Generation;
use super::header::read_header;
use super::kept::KeptLines;
use super::layout::Encoding;
use super::message::check_message;
use super::recovery::TurnTracker;
use super::rows::{may_be_turn_end, parse_row, Row, SeqRuns};
use super::title::{title_of, TITLE_EVENT};
use super::{LogStats, StoreError, StoreErrorKind, TornTail};
use crate::sources::fs::open_regular;

/// The event type of a top-level streamed chunk (v0 and v1 only).
const CHUNK_EVENT: &str = "assistant/chunk";

fn line_reader(found: &Found) -> io::Result<LineReader> {
    let (file, identity) = open_regular(&found.path)?;
    match found.encoding {
        Encoding::Raw => Ok(LineReader::raw(file)),
        Encoding::Zstd => Ok(LineReader::zstd_with(file, identity.size, ZstdScratch::new()?, ZSTD_CHUNK)),
    }
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

/// Reads a whole log once, streaming, and validates it (see the module
/// docs). With `keep_lines`, the lines of surface events are kept.
pub(crate) fn load(found: &Found, id: &str, keep_lines: bool) -> Result<Loaded, StoreError> {
    let path = &found.path;
    let generation = found.generation;
    let corrupt = |why: String| {
        StoreError::new(StoreErrorKind::Corrupt, format!("corrupt session log {}: {why}", path.display()))
    };
    let io_error = |e: io::Error| {
        if e.kind() == io::ErrorKind::InvalidData {
            StoreError::new(StoreErrorKind::Corrupt, format!("{}: {e}", path.display()))
        } else {
            StoreError::new(StoreErrorKind::Io, format!("cannot read {}: {e}", path.display()))
        }
    };
    let mut reader = line_reader(found).map_err(io_error)?;
    let header = read_header(&mut reader, generation).map_err(|e| corrupt(e.message().to_owned()))?;
    if header.id != id {
        return Err(corrupt(format!("its header names session {}", crate::json::js_string(&header.id))));
    }

    let mut surface = Surface::for_generation(generation);
    let surface_types = generation.surface_types();
    let mut lines = KeptLines::new();
    let mut turns = TurnTracker::new();
    let mut title: Option<String> = None;
    let mut expected: u64 = 0;
    let mut storage_lines: u64 = 1;
    let (mut packed_rows, mut packed_members) = (0u64, 0u64);
    let mut kept_raw_offset = reader.raw_offset();
    let mut torn_bytes = 0u64;
    let mut broke = false;
    let mut recovered_lines = 0u64;
    let mut buf = Vec::new();
    loop {
        let info = match reader.next_line(&mut buf, MAX_LINE_BYTES).map_err(io_error)? {
            LineRead::Line(info) => info,
            LineRead::End { torn_bytes: t } => {
                if t > 0 {
                    storage_lines += 1;
                }
                torn_bytes = t;
                break;
            }
        };
        storage_lines += 1;
        let line_no = storage_lines;
        let (row, mut why) = match check_line(&buf, expected) {
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
                    LineRead::Line(_) => storage_lines += 1,
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
                packed_rows += 1;
                packed_members += members;
                expected = expected.checked_add(members).ok_or_else(|| corrupt("seq overflow".into()))?;
            }
            Row::Event { seq, kind, surface_op, source_seqs, extra_key } => {
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
                    check_message(generation, &kind, seq, &buf).map_err(corrupt)?;
                    let removed = surface.apply_event(seq, &kind, op).map_err(corrupt)?;
                    if keep_lines {
                        for r in removed {
                            lines.remove(r);
                        }
                        lines.insert(seq, &buf);
                    }
                }
                if let Some(t) = new_title {
                    title = t;
                }
                turns.observe(&kind, &buf);
                expected += 1;
            }
        }
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
    let closers = turns.closers();
    let last_seq = expected.checked_sub(1);
    let captured_through_seq = last_seq.map(|l| l + closers.len() as u64);
    let stats = LogStats {
        generation: generation.number(),
        storage_lines,
        decoded_events: expected,
        last_seq,
        packed_rows,
        packed_members,
        complete_frames: frame_stats.map(|s| s.complete_frames),
        torn_tail,
        recovery_closers: closers.iter().map(|c| c.event_type()).collect(),
        captured_through_seq,
        title,
        surface_seqs: surface.seqs(),
    };
    Ok(Loaded { header_json: header.json, stats, lines })
}
