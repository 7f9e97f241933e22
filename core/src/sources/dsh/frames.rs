//! Reading a log as a stream of lines: plain JSONL directly, `.jsonl.zstd`
//! frame by frame.
//!
//! A `.jsonl.zstd` log is a concatenation of independent, checksummed
//! Zstandard frames. Before a frame is decoded its block headers are walked
//! to learn whether the file holds all of it:
//! - a **complete** frame is decoded with its checksum verified; any
//!   decoding or checksum failure makes the whole log unreadable;
//! - an **incomplete last frame** is a torn tail (a crash during an append):
//!   its complete blocks are decoded without verification and only the
//!   complete lines they give are kept ("recovered" lines, which are not
//!   strict, see [`LineInfo::strict`]).
//!
//! Nothing is held beyond one input window, one output chunk and the
//! current line, so memory does not grow with the size of the log. The
//! compressed file is read through the window with positioned reads: frame
//! and block headers are walked in memory, and a small log (or a header
//! frame) costs one read.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

use crate::fs::{read_line, LineEnd};
use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};

/// The longest line accepted, in bytes (without its `\n`). A longer line
/// makes the log unreadable instead of growing memory without bound.
pub const MAX_LINE_BYTES: usize = 64 << 20;

const ZSTD_MAGIC: u32 = 0xFD2F_B528;
const SKIPPABLE_MAGIC_MASK: u32 = 0xFFFF_FFF0;
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;
const CHUNK: usize = 64 << 10;
/// Input window and output chunk of a zstd read of a whole log.
pub const ZSTD_CHUNK: usize = 128 << 10;
/// Input window and output chunk of a zstd read of the header only.
pub const HEADER_CHUNK: usize = 4 << 10;

/// What one call to [`LineReader::next_line`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineRead {
    /// A complete line (terminated by `\n`, which is not kept).
    Line(LineInfo),
    /// The end of the log. `torn_bytes` is the length of an unterminated
    /// last line that was dropped (0 when the log ended with `\n`).
    End {
        /// Bytes of the dropped unterminated last line.
        torn_bytes: u64,
    },
}

/// Facts about one complete line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineInfo {
    /// Whether the line lies in a complete, checksum-verified zstd frame:
    /// such a line must be accepted as it is (a seq gap there is
    /// corruption). Lines of plain logs and lines recovered from a torn last
    /// frame are not strict.
    pub strict: bool,
}

/// Facts about the frames of a zstd log, known once it has been read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// Complete frames read.
    pub complete_frames: u64,
    /// Byte offset where the complete frames end (the committed prefix).
    pub complete_end: u64,
    /// Size of the file.
    pub file_bytes: u64,
    /// Whether the last frame was incomplete (a torn tail).
    pub torn: bool,
}

/// A source of lines: a plain log or a zstd log.
pub enum LineReader {
    /// A plain JSONL log.
    Raw {
        /// The buffered file.
        reader: BufReader<File>,
        /// Bytes of complete lines consumed so far.
        offset: u64,
    },
    /// A zstd log.
    Zstd(Box<FrameReader>),
}

impl LineReader {
    /// A reader of a plain log.
    pub fn raw(file: File) -> Self {
        Self::raw_with_capacity(file, CHUNK)
    }

    /// A reader of a plain log with a read buffer of `capacity` bytes (a
    /// small one suits reading only the header).
    pub fn raw_with_capacity(file: File, capacity: usize) -> Self {
        LineReader::Raw { reader: BufReader::with_capacity(capacity, file), offset: 0 }
    }

    /// A reader of a plain log that starts at `offset` (the end of a
    /// complete line a previous read folded) instead of at the header.
    pub(crate) fn raw_at(mut file: File, offset: u64) -> io::Result<Self> {
        file.seek(SeekFrom::Start(offset))?;
        Ok(LineReader::Raw { reader: BufReader::with_capacity(CHUNK, file), offset })
    }

    /// A reader of a zstd log that starts at `offset`, the end of a frame
    /// that a previous read decoded up to a line boundary, after
    /// `complete_frames` complete frames the last of which ended at
    /// `complete_end`.
    pub(crate) fn zstd_at(
        file: File,
        file_bytes: u64,
        scratch: ZstdScratch,
        offset: u64,
        (complete_frames, complete_end): (u64, u64),
    ) -> Self {
        let mut frames = FrameReader::new(file, file_bytes, scratch, ZSTD_CHUNK);
        frames.pos = offset;
        frames.stats.complete_frames = complete_frames;
        frames.stats.complete_end = complete_end;
        LineReader::Zstd(Box::new(frames))
    }

    /// A reader of a zstd log.
    pub fn zstd(file: File) -> io::Result<Self> {
        let file_bytes = file.metadata()?.len();
        Ok(Self::zstd_with(file, file_bytes, ZstdScratch::new()?, ZSTD_CHUNK))
    }

    /// A reader of a zstd log of `file_bytes` bytes that decodes with the
    /// decoder and buffers of `scratch` (a decoder is costly to create:
    /// reuse one across logs, see [`into_scratch`](Self::into_scratch)) and
    /// reads and decodes `chunk` bytes at a time ([`HEADER_CHUNK`] suits
    /// reading only the header).
    pub fn zstd_with(file: File, file_bytes: u64, scratch: ZstdScratch, chunk: usize) -> Self {
        LineReader::Zstd(Box::new(FrameReader::new(file, file_bytes, scratch, chunk)))
    }

    /// The decoder and buffers of a zstd reader, for reuse.
    pub fn into_scratch(self) -> Option<ZstdScratch> {
        match self {
            LineReader::Raw { .. } => None,
            LineReader::Zstd(frames) => {
                let FrameReader { decoder, window, output, .. } = *frames;
                Some(ZstdScratch { decoder, window, output })
            }
        }
    }

    /// Reads the next complete line into `buf` (cleared first, without the
    /// `\n`), refusing lines longer than `max` bytes.
    pub fn next_line(&mut self, buf: &mut Vec<u8>, max: usize) -> io::Result<LineRead> {
        match self {
            LineReader::Raw { reader, offset } => {
                let outcome = read_line_limited(reader, buf, max)?;
                if let LineRead::Line(_) = outcome {
                    *offset += buf.len() as u64 + 1;
                    crate::work::line_read(buf.len());
                }
                Ok(outcome)
            }
            LineReader::Zstd(frames) => {
                let outcome = read_line_limited(&mut **frames, buf, max)?;
                Ok(match outcome {
                    LineRead::Line(_) => {
                        crate::work::line_read(buf.len());
                        frames.prev_line_end = frames.line_end;
                        frames.line_end += buf.len() as u64 + 1;
                        let strict = frames.committed_end.is_none_or(|end| frames.line_end <= end);
                        LineRead::Line(LineInfo { strict })
                    }
                    end => end,
                })
            }
        }
    }

    /// Frame facts of a zstd log (`None` for a plain log).
    pub fn frame_stats(&self) -> Option<FrameStats> {
        match self {
            LineReader::Raw { .. } => None,
            LineReader::Zstd(frames) => Some(frames.stats),
        }
    }

    /// The file being read.
    pub(crate) fn file(&self) -> &File {
        match self {
            LineReader::Raw { reader, .. } => reader.get_ref(),
            LineReader::Zstd(frames) => &frames.file,
        }
    }

    /// Zstd logs: where a later read could start so as to see exactly the
    /// lines after the last one given, if that is the end of a frame; with
    /// the complete frames before it and where the last of them ends. At
    /// the end of the log this is the end of the file when every frame was
    /// complete and its text ended with a line, or the end of the complete
    /// frames when the last frame is torn and the complete ones ended with
    /// a line; otherwise `None`. Plain logs: `None` (see
    /// [`raw_offset`](Self::raw_offset)).
    pub(crate) fn frame_boundary_after_last_line(&self) -> Option<(u64, (u64, u64))> {
        let LineReader::Zstd(frames) = self else { return None };
        let at = match frames.committed_end {
            Some(end) if end == frames.line_end => frames.stats.complete_end,
            None if frames.frame.is_none() && frames.produced == frames.line_end => frames.pos,
            _ => return None,
        };
        Some((at, (frames.stats.complete_frames, frames.stats.complete_end)))
    }

    /// Zstd logs: as [`frame_boundary_after_last_line`](Self::frame_boundary_after_last_line)
    /// but for the point just before the last line given, when that line
    /// is the first one read from a torn last frame.
    pub(crate) fn frame_boundary_before_last_line(&self) -> Option<(u64, (u64, u64))> {
        let LineReader::Zstd(frames) = self else { return None };
        match frames.committed_end {
            Some(end) if end == frames.prev_line_end => {
                Some((frames.stats.complete_end, (frames.stats.complete_frames, frames.stats.complete_end)))
            }
            _ => None,
        }
    }

    /// Bytes of the file occupied by the complete lines read so far (plain
    /// logs only).
    pub fn raw_offset(&self) -> Option<u64> {
        match self {
            LineReader::Raw { offset, .. } => Some(*offset),
            LineReader::Zstd(_) => None,
        }
    }
}

/// The next line of `reader` by [`crate::fs::read_line`], the one line
/// reader every source shares.
fn read_line_limited<R: BufRead>(reader: &mut R, buf: &mut Vec<u8>, max: usize) -> io::Result<LineRead> {
    match read_line(reader, buf, max)? {
        LineEnd::Line => Ok(LineRead::Line(LineInfo { strict: false })),
        LineEnd::End { torn_bytes } => Ok(LineRead::End { torn_bytes }),
        LineEnd::TooLong => {
            Err(io::Error::new(io::ErrorKind::InvalidData, format!("a line is longer than {max} bytes")))
        }
    }
}

fn corrupt(offset: u64, why: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("corrupt Zstandard session log: frame at byte {offset} {why}"))
}

/// Reads from `offset` until `buf` is full or the file ends.
pub(crate) fn read_at(file: &File, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match read_once_at(file, offset + filled as u64, &mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(unix)]
fn read_once_at(file: &File, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_once_at(file: &File, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

#[cfg(not(any(unix, windows)))]
fn read_once_at(mut file: &File, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.read(buf)
}

/// A zstd decoder and the buffers of a [`FrameReader`], reusable from one
/// log to the next.
pub struct ZstdScratch {
    decoder: Decoder<'static>,
    window: Vec<u8>,
    output: Vec<u8>,
}

impl ZstdScratch {
    /// A new decoder, no buffers yet.
    pub fn new() -> io::Result<Self> {
        Ok(ZstdScratch { decoder: Decoder::new()?, window: Vec::new(), output: Vec::new() })
    }
}

/// Where the frame being decoded ends.
#[derive(Clone, Copy, Debug)]
enum FrameEnd {
    /// The frame is complete and ends at this file offset.
    Complete(u64),
    /// The frame runs past the end of the file.
    Torn,
}

/// Decodes a zstd log frame by frame and serves the decompressed bytes
/// through [`BufRead`].
pub struct FrameReader {
    file: File,
    /// File offset of the next compressed byte to decode (or of the next
    /// frame to walk).
    pos: u64,
    stats: FrameStats,
    decoder: Decoder<'static>,
    /// The frame being decoded: its start offset and end.
    frame: Option<(u64, FrameEnd)>,
    /// `window[..window_len]` are the bytes of the file from
    /// `window_start` (at most two chunks).
    window: Vec<u8>,
    window_len: usize,
    window_start: u64,
    /// How much to read into the window at a time.
    chunk: usize,
    /// Set when the file ended before the size it had when opened.
    starved: bool,
    /// Decoded bytes; `output[output_pos..output_len]` are not consumed yet.
    output: Vec<u8>,
    output_pos: usize,
    output_len: usize,
    /// Set when the torn last frame has given everything it can.
    finished: bool,
    /// Decompressed bytes produced by complete frames, known once the torn
    /// frame starts (`None` while every frame so far was complete).
    committed_end: Option<u64>,
    /// Decompressed bytes produced so far.
    produced: u64,
    /// Decompressed bytes consumed as complete lines.
    line_end: u64,
    /// `line_end` before the last line.
    prev_line_end: u64,
}

impl FrameReader {
    fn new(file: File, file_bytes: u64, scratch: ZstdScratch, chunk: usize) -> Self {
        let ZstdScratch { decoder, window, output } = scratch;
        FrameReader {
            file,
            pos: 0,
            stats: FrameStats { file_bytes, ..FrameStats::default() },
            decoder,
            frame: None,
            window,
            window_len: 0,
            window_start: 0,
            chunk: chunk.max(64),
            starved: false,
            output,
            output_pos: 0,
            output_len: 0,
            finished: false,
            committed_end: None,
            produced: 0,
            line_end: 0,
            prev_line_end: 0,
        }
    }

    /// The bytes of the file from `offset`, at least `want` of them unless
    /// the file ends first (an empty slice at or past its end). When the
    /// window must be refilled it starts at `anchor` (at most `offset`) if
    /// that keeps it within two chunks, so that walking a frame keeps its
    /// start in the window for decoding.
    fn bytes_at(&mut self, anchor: u64, offset: u64, want: usize) -> io::Result<&[u8]> {
        let window_end = self.window_start + self.window_len as u64;
        if offset < self.window_start || offset + want as u64 > window_end {
            let from = if offset + want as u64 - anchor <= 2 * self.chunk as u64 { anchor } else { offset };
            let need = (offset - from) as usize + want;
            let len = self.stats.file_bytes.saturating_sub(from).min(need.max(self.chunk) as u64) as usize;
            if self.window.len() < len {
                self.window.resize(len, 0);
            }
            self.window_len = read_at(&self.file, from, &mut self.window[..len])?;
            self.window_start = from;
        }
        let at = (offset - self.window_start) as usize;
        Ok(&self.window[at.min(self.window_len)..self.window_len])
    }

    /// Walks the frame starting at `start`: its header and block headers.
    /// Returns `None` for a skippable frame (and moves past it).
    fn walk_frame(&mut self, start: u64) -> io::Result<Option<FrameEnd>> {
        let len = self.stats.file_bytes;
        let mut head = [0u8; 14];
        let got = {
            let bytes = self.bytes_at(start, start, head.len())?;
            let n = bytes.len().min(head.len());
            head[..n].copy_from_slice(&bytes[..n]);
            n
        };
        if got < 4 {
            return Ok(Some(FrameEnd::Torn));
        }
        let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        if magic & SKIPPABLE_MAGIC_MASK == SKIPPABLE_MAGIC {
            if got < 8 {
                return Ok(Some(FrameEnd::Torn));
            }
            let size = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as u64;
            let end = start + 8 + size;
            if end > len {
                return Ok(Some(FrameEnd::Torn));
            }
            self.pos = end;
            return Ok(None);
        }
        if magic != ZSTD_MAGIC {
            return Err(corrupt(start, "is not a Zstandard frame"));
        }
        if got < 5 {
            return Ok(Some(FrameEnd::Torn));
        }
        let descriptor = head[4];
        if descriptor & 0x08 != 0 {
            return Err(corrupt(start, "has a reserved header bit set"));
        }
        let single_segment = descriptor & 0x20 != 0;
        let checksum = descriptor & 0x04 != 0;
        let dict_bytes = [0u64, 1, 2, 4][usize::from(descriptor & 0x03)];
        let fcs_bytes = match descriptor >> 6 {
            0 => u64::from(single_segment),
            1 => 2,
            2 => 4,
            _ => 8,
        };
        let header_len = 5 + u64::from(!single_segment) + dict_bytes + fcs_bytes;
        let mut at = start + header_len;
        loop {
            let bytes = self.bytes_at(start, at, 3)?;
            if bytes.len() < 3 {
                return Ok(Some(FrameEnd::Torn));
            }
            let header = u32::from(bytes[0]) | u32::from(bytes[1]) << 8 | u32::from(bytes[2]) << 16;
            let last = header & 1 != 0;
            let size = u64::from(header >> 3);
            let content = match (header >> 1) & 3 {
                0 | 2 => size,
                1 => 1,
                _ => return Err(corrupt(start, "has a block of reserved type")),
            };
            at += 3 + content;
            if at > len {
                return Ok(Some(FrameEnd::Torn));
            }
            if last {
                break;
            }
        }
        if checksum {
            at += 4;
        }
        Ok(Some(if at > len { FrameEnd::Torn } else { FrameEnd::Complete(at) }))
    }

    /// Starts the next frame; `false` at the end of the log.
    fn start_frame(&mut self) -> io::Result<bool> {
        loop {
            if self.finished || self.pos >= self.stats.file_bytes {
                return Ok(false);
            }
            let start = self.pos;
            let Some(end) = self.walk_frame(start)? else { continue };
            if let FrameEnd::Torn = end {
                self.committed_end = Some(self.produced);
                self.stats.torn = true;
            }
            self.decoder.reinit()?;
            self.frame = Some((start, end));
            self.pos = start;
            return Ok(true);
        }
    }

    /// Decodes until some output is available or the log ends.
    fn decode_some(&mut self) -> io::Result<()> {
        self.output_pos = 0;
        self.output_len = 0;
        if self.output.len() < self.chunk {
            self.output.resize(self.chunk, 0);
        }
        loop {
            let Some((start, end)) = self.frame else {
                if !self.start_frame()? {
                    return Ok(());
                }
                continue;
            };
            let frame_stop = match end {
                FrameEnd::Complete(e) => e,
                FrameEnd::Torn => self.stats.file_bytes,
            };
            let want = (frame_stop.saturating_sub(self.pos)).min(self.chunk as u64) as usize;
            let input = if self.starved || want == 0 {
                &[][..]
            } else {
                let window_end = self.window_start + self.window_len as u64;
                if self.pos < self.window_start || self.pos >= window_end {
                    self.bytes_at(self.pos, self.pos, want)?;
                }
                let from = (self.pos - self.window_start) as usize;
                let to = ((frame_stop - self.window_start) as usize).min(self.window_len);
                if from >= to {
                    // The file shrank under us: whatever is left is torn.
                    self.starved = true;
                }
                &self.window[from.min(to)..to]
            };
            let mut inb = InBuffer::around(input);
            let mut outb = OutBuffer::around(&mut self.output[..]);
            let result = self.decoder.run(&mut inb, &mut outb);
            let (read, written) = (inb.pos(), outb.pos());
            self.pos += read as u64;
            self.output_len = written;
            self.produced += written as u64;
            let input_left = !self.starved && self.pos < frame_stop;
            match (result, end) {
                (Err(code), FrameEnd::Complete(_)) => {
                    return Err(corrupt(start, format!("failed validation ({code})")));
                }
                (Err(_), FrameEnd::Torn) => {
                    // Keep what the complete blocks gave; the rest is lost.
                    self.finish_torn();
                    return Ok(());
                }
                (Ok(0), FrameEnd::Complete(e)) => {
                    if input_left {
                        return Err(corrupt(start, "ends before its last block"));
                    }
                    self.stats.complete_frames += 1;
                    self.stats.complete_end = e;
                    self.frame = None;
                    self.pos = e;
                }
                (Ok(0), FrameEnd::Torn) => {
                    // A torn frame cannot end cleanly: its last block was cut.
                    self.finish_torn();
                    return Ok(());
                }
                (Ok(_), _) if !input_left && written == 0 && read == 0 => match end {
                    FrameEnd::Complete(_) => return Err(corrupt(start, "is truncated")),
                    FrameEnd::Torn => {
                        self.finish_torn();
                        return Ok(());
                    }
                },
                (Ok(_), _) => {}
            }
            if self.output_len > 0 {
                return Ok(());
            }
        }
    }

    fn finish_torn(&mut self) {
        self.finished = true;
        self.frame = None;
    }
}

impl Read for FrameReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for FrameReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.output_pos == self.output_len {
            self.decode_some()?;
        }
        Ok(&self.output[self.output_pos..self.output_len])
    }

    fn consume(&mut self, amt: usize) {
        self.output_pos = (self.output_pos + amt).min(self.output_len);
    }
}
