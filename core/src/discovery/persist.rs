//! The discovery caches on disk, so that a short-lived process (the
//! command line) starts warm. The file is one zstd frame with a content
//! checksum over a versioned payload; a file that is missing, truncated,
//! corrupted (the checksum), from another version of the library, or
//! malformed in any way is ignored as a whole, never partly used. What it
//! holds is keyed by fingerprints like the caches in memory, so an entry
//! for a session that changed since is never used. It is written to a
//! temporary file in the same directory and renamed over the old one, so a
//! concurrent reader sees the old file or the new one, never half of one.

use std::io::Write;
use std::path::Path;

use super::fingerprint::Fingerprint;
use crate::resolver::Resolver;

const MAGIC: &[u8; 8] = b"DSRDISC\0";
/// The payload layout; bumped on any change (2: the index's zstd
/// dictionaries, and filter keys around spaces instead of trigrams across
/// whitespace, so a format-1 filter would miss phrases; 3: titles and the
/// index in files of their own, the part named in the header).
const FORMAT: u32 = 3;

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

/// The file's header: what it is, its format, the library version, the
/// part it holds, and whether its texts were indexed with credentials redacted (`redactSecrets`),
/// so a resolver never uses an index built under the other setting.
fn header(out: &mut Vec<u8>, part: DiscoveryCachePart, redacted: bool) {
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    put(out, env!("CARGO_PKG_VERSION").as_bytes());
    out.push(part.tag());
    out.push(u8::from(redacted));
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
/// end).
pub(crate) fn read_file(path: &Path) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    zstd::stream::decode_all(file).ok()
}

/// Which part of a resolver's discovery caches a cache file holds: they
/// are kept apart so that a process that only needs titles (filtered
/// `candidates`) reads a small file, not the whole search index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DiscoveryCachePart {
    /// The latest title of each session (filtered `candidates`).
    Titles,
    /// The full-text search index (`search`).
    Index,
}

impl DiscoveryCachePart {
    fn tag(self) -> u8 {
        match self {
            DiscoveryCachePart::Titles => 1,
            DiscoveryCachePart::Index => 2,
        }
    }
}

impl Resolver {
    /// Writes one part of the discovery caches to `path`, through a
    /// temporary file in the same directory renamed over it (the directory
    /// must exist), so a concurrent reader sees the old file or the new
    /// one. Never needed for correctness.
    pub fn save_discovery_cache(&self, part: DiscoveryCachePart, path: &Path) -> std::io::Result<()> {
        let mut payload = Vec::new();
        header(&mut payload, part, self.config.hardening().redact_secrets);
        self.discovery.encode(part, &mut payload);
        let written = write_file(path, &payload);
        if written.is_ok() {
            self.discovery.changed(part).store(false, std::sync::atomic::Ordering::Relaxed);
        }
        written
    }

    /// Whether this part of the discovery caches gained or lost anything
    /// since this resolver was created or the part was last loaded or saved
    /// (so a process that found everything cached need not write it again).
    pub fn discovery_cache_changed(&self, part: DiscoveryCachePart) -> bool {
        self.discovery.changed(part).load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Loads a part written by [`save_discovery_cache`](Self::save_discovery_cache)
    /// into this resolver (entries it already holds are replaced). Returns
    /// whether the file was used: `false` for a missing, truncated,
    /// corrupted, foreign, other-part or other-version file, or one written
    /// under the other `redactSecrets` setting, which is ignored as a whole.
    /// Its entries count only for sessions whose fingerprint is unchanged.
    pub fn load_discovery_cache(&self, part: DiscoveryCachePart, path: &Path) -> bool {
        let Some(payload) = read_file(path) else { return false };
        let mut expected = Vec::new();
        header(&mut expected, part, self.config.hardening().redact_secrets);
        let Some(body) = payload.strip_prefix(expected.as_slice()) else { return false };
        let used = self.discovery.decode(part, &mut Input(body));
        if used {
            self.discovery.changed(part).store(false, std::sync::atomic::Ordering::Relaxed);
        }
        used
    }
}
