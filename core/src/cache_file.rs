//! Cache files: what the discovery caches and the store's listing cache
//! write between processes, in one framing. A file is one zstd frame with a
//! content checksum over a payload that starts with a magic, a format
//! number and the library version ([`header`]); it is written to a
//! temporary file in the same directory and renamed over the old one, and
//! read all or nothing: a missing, truncated or corrupted file is `None`,
//! and its reader refuses any payload it does not parse to the end.

use std::io::Write;
use std::path::Path;

use crate::discovery::Fingerprint;

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
pub(crate) fn put_stamp(out: &mut Vec<u8>, stamp: &crate::sources::fs::Stamp) {
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
    pub(crate) fn stamp(&mut self) -> Option<crate::sources::fs::Stamp> {
        let id = crate::sources::FileIdentity {
            dev: self.u64()?,
            inode: self.u64()?,
            size: self.u64()?,
            mtime_ns: u128::from_le_bytes(self.take(16)?.try_into().ok()?),
        };
        Some(crate::sources::fs::Stamp { id, ctime_ns: self.i128()? })
    }
    pub(crate) fn fingerprint(&mut self) -> Option<Fingerprint> {
        Some(Fingerprint::from_bytes(self.bytes()?))
    }
}

/// Writes `payload` to `path` as one zstd frame with a content checksum,
/// through a temporary file in the same directory renamed over it (the
/// directory must exist): a concurrent reader sees the old file or the
/// new one, never half of one.
pub(crate) fn write_file(path: &Path, payload: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let file = std::fs::File::create(&tmp)?;
        let mut encoder = zstd::stream::Encoder::new(file, 1)?;
        encoder.include_checksum(true)?;
        // The frame records its size, so a reader decompresses into one
        // buffer of that size.
        encoder.set_pledged_src_size(Some(payload.len() as u64))?;
        encoder.write_all(payload)?;
        encoder.finish()?.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        drop(std::fs::remove_file(&tmp));
    }
    written
}

/// The payload of a file [`write_file`] wrote, or `None` when it is
/// missing, truncated or corrupted (the frame's checksum is verified at its
/// end). The frame's recorded size is the buffer's (a frame without one,
/// or one claiming more than [`MAX_RATIO`] times the file, is decoded as a
/// stream, growing as it goes).
pub(crate) fn read_file(path: &Path) -> Option<Vec<u8>> {
    let packed = std::fs::read(path).ok()?;
    match zstd::zstd_safe::get_frame_content_size(&packed).ok()? {
        Some(size) if size <= (packed.len() as u64).saturating_mul(MAX_RATIO) => {
            let size = usize::try_from(size).ok()?;
            zstd::bulk::decompress(&packed, size).ok().filter(|payload| payload.len() == size)
        }
        _ => zstd::stream::decode_all(packed.as_slice()).ok(),
    }
}

/// The most a cache file's payload is trusted to outweigh the file before
/// its buffer is allocated (ours compress 3 to 10 times).
const MAX_RATIO: u64 = 256;
