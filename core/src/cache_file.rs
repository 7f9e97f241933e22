//! Cache files: what the discovery caches and the store's listing cache
//! write between processes, in one framing. A file is one zstd frame with a
//! content checksum over a payload that starts with a magic, a format
//! number and the library version ([`header`]); it is written to a
//! temporary file in the same directory and renamed over the old one, and
//! read all or nothing: a missing, truncated or corrupted file is `None`,
//! and its reader refuses any payload it does not parse to the end.
//!
//! The search index is too large to decode whole on every start, so its
//! file is read in place instead ([`write_in_place`], [`open_in_place`]):
//! the same header, uncompressed, then a small checksummed *directory*
//! read at once, then a region of stored texts (the index's filters and
//! compressed texts) the directory points into, each fetched on demand
//! ([`StoredTexts::read`], [`StoredTexts::read_into`]) and checked against
//! its own checksum by its user.

use std::io::{Read, Write};
use std::path::Path;

use crate::host::Fingerprint;

/// Appends what every cache file's payload starts with: its magic, its
/// layout number and the library version.
pub(crate) fn header(out: &mut Vec<u8>, magic: &[u8; 8], format: u32) {
    out.extend_from_slice(magic);
    out.extend_from_slice(&format.to_le_bytes());
    put(out, env!("CARGO_PKG_VERSION").as_bytes());
}

/// Appends a length-prefixed byte string.
pub(crate) fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Appends an optional byte string (a flag byte, then the string).
pub(crate) fn put_opt(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => out.push(0),
        Some(b) => {
            out.push(1);
            put(out, b);
        }
    }
}

/// Appends a file's stamp (identity and ctime).
pub(crate) fn put_stamp(out: &mut Vec<u8>, stamp: &crate::fs::Stamp) {
    let id = stamp.id;
    out.extend_from_slice(&id.dev.to_le_bytes());
    out.extend_from_slice(&id.inode.to_le_bytes());
    out.extend_from_slice(&id.size.to_le_bytes());
    out.extend_from_slice(&id.mtime_ns.to_le_bytes());
    out.extend_from_slice(&stamp.ctime_ns.to_le_bytes());
}

/// Reads what `put` and `put_opt` wrote; every read is bounds-checked.
pub(crate) struct Input<'a>(pub(crate) &'a [u8]);

impl<'a> Input<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }
    pub(crate) fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }
    pub(crate) fn opt_string(&mut self) -> Option<Option<String>> {
        match self.take(1)?[0] {
            0 => Some(None),
            1 => Some(Some(self.string()?)),
            _ => None,
        }
    }
    pub(crate) fn i128(&mut self) -> Option<i128> {
        Some(i128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }
    pub(crate) fn stamp(&mut self) -> Option<crate::fs::Stamp> {
        let id = crate::fs::FileIdentity {
            dev: self.u64()?,
            inode: self.u64()?,
            size: self.u64()?,
            mtime_ns: u128::from_le_bytes(self.take(16)?.try_into().ok()?),
        };
        Some(crate::fs::Stamp { id, ctime_ns: self.i128()? })
    }
    pub(crate) fn fingerprint(&mut self) -> Option<Fingerprint> {
        Some(Fingerprint::from_slice(self.bytes()?))
    }
}

/// Writes `payload` to `path` as one zstd frame with a content checksum,
/// through a temporary file in the same directory renamed over it (the
/// directory must exist): a concurrent reader sees the old file or the
/// new one, never half of one.
pub(crate) fn write_file(path: &Path, payload: &[u8]) -> std::io::Result<()> {
    write_atomically(path, |file| {
        let mut encoder = zstd::stream::Encoder::new(file, 1)?;
        encoder.include_checksum(true)?;
        // The frame records its size, so a reader decompresses into one
        // buffer of that size.
        encoder.set_pledged_src_size(Some(payload.len() as u64))?;
        encoder.write_all(payload)?;
        encoder.finish()?.sync_all()
    })
}

/// Writes `path` through a temporary file in the same directory (the
/// directory must exist) that `fill` writes and syncs, renamed over it: a
/// concurrent reader sees the old file or the new one, never half of one,
/// and a process holding the old file open keeps reading the old file.
fn write_atomically(path: &Path, fill: impl FnOnce(std::fs::File) -> std::io::Result<()>) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), uuid::Uuid::new_v4().simple()));
    let mut options = std::fs::OpenOptions::new();
    // A new file (never one planted under the temporary name), readable
    // by its owner only: cache files hold what sessions said.
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&tmp).and_then(fill).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        drop(std::fs::remove_file(&tmp));
    }
    written
}

/// The payload of a file [`write_file`] wrote, or `None` when it is
/// missing, truncated, corrupted (the frame's checksum is verified at its
/// end), not [trusted](open_trusted), or larger than [`MAX_RATIO`] times
/// the file once decompressed: a small file never takes much memory (a
/// zstd bomb is ignored like a corrupt file). A frame that records its size
/// is decompressed into one buffer of that size; one that does not, as a
/// stream that stops at the cap.
pub(crate) fn read_file(path: &Path) -> Option<Vec<u8>> {
    let mut packed = Vec::new();
    open_trusted(path)?.read_to_end(&mut packed).ok()?;
    let cap = (packed.len() as u64).saturating_mul(MAX_RATIO);
    match zstd::zstd_safe::get_frame_content_size(&packed).ok()? {
        Some(size) if size <= cap => {
            let size = usize::try_from(size).ok()?;
            zstd::bulk::decompress(&packed, size).ok().filter(|payload| payload.len() == size)
        }
        Some(_) => None,
        None => {
            let mut decoder = zstd::stream::Decoder::new(packed.as_slice()).ok()?;
            decoder.window_log_max(MAX_WINDOW_LOG).ok()?;
            let mut payload = Vec::new();
            decoder.take(cap + 1).read_to_end(&mut payload).ok()?;
            (payload.len() as u64 <= cap).then_some(payload)
        }
    }
}

/// Opens a cache file for reading, not following a final symbolic link,
/// when it is a regular file of this user that no one else can write
/// ([`crate::fs::owned_privately`]); else `None`, as for a missing file.
fn open_trusted(path: &Path) -> Option<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = options.open(path).ok()?;
    crate::fs::owned_privately(&file.metadata().ok()?).then_some(file)
}

/// The most a cache file's payload may outweigh the file (ours compress 3
/// to 10 times); a file that would decompress to more is ignored.
const MAX_RATIO: u64 = 256;

/// The largest window a streamed cache file may ask the decoder for
/// (16 MiB; ours, written at level 1, use at most 512 KiB).
const MAX_WINDOW_LOG: u32 = 24;

/// The 64-bit checksum of `bytes` (with `seed` folded in) that files read
/// in place keep of their directory and of each stored text. It detects
/// corruption (a torn write, a flipped bit, a stale or foreign region), not
/// tampering: anyone can compute it. Four lanes of xxHash64's round over
/// 32-byte stripes, then the tail word by word and an avalanche (the
/// structure of xxHash64, not its exact value); each step is a bijection of
/// the state for a fixed word and of the word for a fixed state, so a
/// change confined to one 8-byte word always changes the sum. About 4 bytes
/// a cycle (several GB/s) in an optimized build.
pub(crate) fn checksum(seed: u64, bytes: &[u8]) -> u64 {
    let mut sum = Checksum::new(seed);
    sum.update(bytes);
    sum.finish()
}

const P1: u64 = 0x9e37_79b1_85eb_ca87;
const P2: u64 = 0xc2b2_ae3d_27d4_eb4f;
const P3: u64 = 0x1656_67b1_9e37_79f9;

/// [`checksum`] over bytes given in pieces: the same sum as of the pieces
/// joined, whatever their cut (a stored text copied in chunks is checked
/// without being held whole).
pub(crate) struct Checksum {
    lanes: [u64; 4],
    /// The bytes of a stripe not yet complete.
    tail: [u8; 32],
    tail_len: usize,
    total: u64,
}

impl Checksum {
    pub(crate) fn new(seed: u64) -> Checksum {
        Checksum {
            lanes: [seed.wrapping_add(P1).wrapping_add(P2), seed.wrapping_add(P2), seed, seed.wrapping_sub(P1)],
            tail: [0; 32],
            tail_len: 0,
            total: 0,
        }
    }

    fn round(acc: u64, word: u64) -> u64 {
        acc.wrapping_add(word.wrapping_mul(P2)).rotate_left(31).wrapping_mul(P1)
    }

    fn word(b: &[u8]) -> u64 {
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    fn stripe(&mut self, stripe: &[u8]) {
        for (k, lane) in self.lanes.iter_mut().enumerate() {
            *lane = Self::round(*lane, Self::word(&stripe[8 * k..8 * k + 8]));
        }
    }

    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.tail_len > 0 {
            let take = (32 - self.tail_len).min(bytes.len());
            self.tail[self.tail_len..self.tail_len + take].copy_from_slice(&bytes[..take]);
            self.tail_len += take;
            bytes = &bytes[take..];
            if self.tail_len < 32 {
                return;
            }
            let tail = self.tail;
            self.stripe(&tail);
            self.tail_len = 0;
        }
        let mut stripes = bytes.chunks_exact(32);
        for stripe in &mut stripes {
            self.stripe(stripe);
        }
        let rest = stripes.remainder();
        self.tail[..rest.len()].copy_from_slice(rest);
        self.tail_len = rest.len();
    }

    pub(crate) fn finish(&self) -> u64 {
        let [a, b, c, d] = self.lanes;
        let mut h = a
            .rotate_left(1)
            .wrapping_add(b.rotate_left(7))
            .wrapping_add(c.rotate_left(12))
            .wrapping_add(d.rotate_left(18))
            .wrapping_add(self.total);
        let mut words = self.tail[..self.tail_len].chunks_exact(8);
        for w in &mut words {
            h = (h ^ Self::round(0, Self::word(w))).rotate_left(27).wrapping_mul(P1).wrapping_add(P3);
        }
        let mut last = [0u8; 8];
        last[..words.remainder().len()].copy_from_slice(words.remainder());
        h = (h ^ Self::round(0, u64::from_le_bytes(last))).rotate_left(27).wrapping_mul(P1).wrapping_add(P3);
        h = (h ^ (h >> 33)).wrapping_mul(P2);
        h = (h ^ (h >> 29)).wrapping_mul(P3);
        h ^ (h >> 32)
    }
}

/// The bytes after the header of a file read in place: the directory's
/// length, the stored texts' length and the directory's checksum.
const IN_PLACE_LENGTHS: usize = 24;

/// The stored texts of a file to be read in place, written piece by piece
/// (so a writer need not gather them into one buffer first: the index's
/// compressed texts are most of its file, and held twice while it was
/// written).
pub(crate) trait Region {
    /// How many bytes [`write_to`](Self::write_to) writes.
    fn len(&self) -> u64;
    /// Writes exactly [`len`](Self::len) bytes to `out`, or fails.
    fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()>;
}

impl Region for [u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }

    fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(self)
    }
}

/// Counts what passes through it.
struct Counted<W> {
    inner: W,
    written: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes a file to be read in place (through a temporary file renamed
/// over `path`, as [`write_file`]): `head` (a [`header`] and what else its
/// reader compares byte for byte), the lengths of `directory` and `texts`,
/// the directory's [`checksum`] (seeded with the texts' length), then the
/// directory and the texts, uncompressed, the texts as [`Region::write_to`]
/// gives them (an error if it gives another length than it said: no file
/// is written then).
pub(crate) fn write_in_place(
    path: &Path,
    head: &[u8],
    directory: &[u8],
    texts: &(impl Region + ?Sized),
) -> std::io::Result<()> {
    write_atomically(path, |file| {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        out.write_all(head)?;
        out.write_all(&(directory.len() as u64).to_le_bytes())?;
        out.write_all(&texts.len().to_le_bytes())?;
        out.write_all(&checksum(texts.len(), directory).to_le_bytes())?;
        out.write_all(directory)?;
        let mut counted = Counted { inner: &mut out, written: 0 };
        texts.write_to(&mut counted)?;
        if counted.written != texts.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the stored texts changed length while written",
            ));
        }
        out.into_inner().map_err(std::io::IntoInnerError::into_error)?.sync_all()
    })
}

/// The stored texts of a file read in place: its open handle (shared by
/// every doc loaded from it, so it outlives a rename of a newer file over
/// its path) and where the region is in it.
pub(crate) struct StoredTexts {
    file: std::fs::File,
    /// Where the region starts in the file.
    base: u64,
    /// Its length.
    len: u64,
}

impl StoredTexts {
    /// The `len` bytes at `offset` in the region, read at their position
    /// (no shared cursor, so concurrent reads need no lock); an error when
    /// they lie outside it or the file cannot give them (it was truncated
    /// since, say). Their checksum is the caller's to test.
    pub(crate) fn read(&self, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_into(offset, len, &mut buf)?;
        Ok(buf)
    }

    /// [`read`](Self::read) into `buf` (resized to `len`; a buffer reused
    /// across reads is not allocated and faulted in again each time).
    pub(crate) fn read_into(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
        let end = offset.checked_add(len as u64).filter(|&end| end <= self.len);
        let Some(at) = end.and_then(|_| self.base.checked_add(offset)) else {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "outside the stored texts"));
        };
        buf.resize(len, 0);
        read_exact_at(&self.file, buf, at)
    }

    /// The length of the region.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }
}

/// Fills `buf` from `file` at `offset`, without moving a cursor.
#[cfg(unix)]
fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

/// Fills `buf` from `file` at `offset` (`seek_read` may read less than
/// asked: looped until full; it moves the cursor, which nothing here uses).
#[cfg(windows)]
fn read_exact_at(file: &std::fs::File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Elsewhere no positioned read: every stored text reads as unavailable,
/// so its session is indexed again from its source.
#[cfg(not(any(unix, windows)))]
fn read_exact_at(_file: &std::fs::File, _buf: &mut [u8], _offset: u64) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// Opens a file [`write_in_place`] wrote with exactly this `head`: its
/// directory (read with one positioned read, its checksum verified) and
/// its stored texts, left in the file. `None` for a missing, foreign,
/// other-version, truncated or extended file, or a directory that does
/// not match its checksum, or a file not [trusted](open_trusted).
pub(crate) fn open_in_place(path: &Path, head: &[u8]) -> Option<(Vec<u8>, std::sync::Arc<StoredTexts>)> {
    let file = open_trusted(path)?;
    let mut prelude = vec![0u8; head.len() + IN_PLACE_LENGTHS];
    read_exact_at(&file, &mut prelude, 0).ok()?;
    let mut input = Input(prelude.strip_prefix(head)?);
    let (directory_len, texts_len, sum) = (input.u64()?, input.u64()?, input.u64()?);
    let base = (prelude.len() as u64).checked_add(directory_len)?;
    if file.metadata().ok()?.len() != base.checked_add(texts_len)? {
        return None;
    }
    let mut directory = vec![0u8; usize::try_from(directory_len).ok()?];
    read_exact_at(&file, &mut directory, prelude.len() as u64).ok()?;
    if checksum(texts_len, &directory) != sum {
        return None;
    }
    Some((directory, std::sync::Arc::new(StoredTexts { file, base, len: texts_len })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_sees_any_changed_byte_and_any_cut() {
        let bytes: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        let whole = checksum(1, &bytes);
        assert_ne!(whole, checksum(2, &bytes), "the seed counts");
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x10;
            assert_ne!(checksum(1, &flipped), whole, "byte {at}");
        }
        for cut in 0..bytes.len() {
            assert_ne!(checksum(1, &bytes[..cut]), whole, "cut at {cut}");
        }
        // Trailing zeros are not padding.
        assert_ne!(checksum(1, &[0; 5]), checksum(1, &[0; 6]));
        assert_ne!(checksum(1, &[]), checksum(1, &[0]));
    }

    /// The sums files already on disk hold (the one-shot function before
    /// it was computed in pieces), and the same sum for any cut into
    /// pieces.
    #[test]
    fn the_checksum_in_pieces_is_the_checksum_of_the_whole() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 31 + 7) as u8).collect();
        let pinned = [
            (0, 0x121b_def7_3761_de3a),
            (1, 0x409c_cd71_ae12_41a6),
            (7, 0x70e4_af0b_b4f7_2e71),
            (8, 0xd150_8dbe_1744_0a54),
            (31, 0x2b7c_a968_7061_7d9a),
            (32, 0xac35_6f9d_05ae_7992),
            (33, 0xd6ac_dcbc_4a58_45c7),
            (64, 0x1d0c_c91b_f1b6_6bc8),
            (100, 0xda5e_e7e4_0b2e_09c2),
            (1000, 0xd8c6_bc61_5b11_e93b_u64),
        ];
        for (n, sum) in pinned {
            let seed = n as u64 * 3 + 1;
            assert_eq!(checksum(seed, &bytes[..n]), sum, "{n} bytes");
            for piece in [1, 3, 8, 31, 32, 33, 100] {
                let mut pieces = Checksum::new(seed);
                bytes[..n].chunks(piece).for_each(|p| pieces.update(p));
                assert_eq!(pieces.finish(), sum, "{n} bytes in pieces of {piece}");
            }
        }
    }

    /// A region that writes another length than it said leaves no file.
    #[test]
    fn a_region_of_another_length_writes_nothing() {
        struct Liar;
        impl Region for Liar {
            fn len(&self) -> u64 {
                5
            }
            fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
                out.write_all(b"four")
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        assert!(write_in_place(&path, b"HEAD", b"dir", &Liar).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no file, no temporary file");
    }

    #[test]
    fn a_file_read_in_place_gives_its_directory_and_texts_and_refuses_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        let head = b"HEAD\x01".as_slice();
        write_in_place(&path, head, b"the directory", &b"0123456789"[..]).unwrap();
        let (directory, texts) = open_in_place(&path, head).expect("well-formed");
        assert_eq!(directory, b"the directory");
        assert_eq!((texts.len(), texts.read(3, 4).unwrap()), (10, b"3456".to_vec()));
        assert!(texts.read(8, 3).is_err(), "past the region");
        assert!(texts.read(u64::MAX, 2).is_err());
        assert!(open_in_place(&path, b"HEAD\x02").is_none(), "another header");
        let good = std::fs::read(&path).unwrap();
        let damaged = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            open_in_place(&path, head).is_none()
        };
        for at in head.len()..head.len() + IN_PLACE_LENGTHS + 13 {
            let mut flipped = good.clone();
            flipped[at] ^= 1;
            assert!(damaged(&flipped), "byte {at} flipped");
        }
        for cut in [0, 3, head.len() + 8, good.len() - 1] {
            assert!(damaged(&good[..cut]), "cut at {cut}");
        }
        assert!(damaged(&[&good[..], b"!"].concat()), "extended");
        // A text flipped is the reader's to find (by its own checksum).
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(!damaged(&flipped));
        // Truncated after it was opened: the read fails.
        std::fs::write(&path, &good).unwrap();
        let (_, texts) = open_in_place(&path, head).unwrap();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(good.len() as u64 - 5).unwrap();
        assert!(texts.read(0, 10).is_err());
        assert_eq!(texts.read(0, 4).unwrap(), b"0123");
    }
}
