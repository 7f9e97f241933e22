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
/// whitespace, so a format-1 filter would miss phrases).
const FORMAT: u32 = 2;

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
    pub(crate) fn fingerprint(&mut self) -> Option<Fingerprint> {
        Some(Fingerprint::from_bytes(self.bytes()?))
    }
}

/// The file's header: what it is, its format, the library version, and
/// whether its texts were indexed with credentials redacted (`redactSecrets`),
/// so a resolver never uses an index built under the other setting.
fn header(out: &mut Vec<u8>, redacted: bool) {
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    put(out, env!("CARGO_PKG_VERSION").as_bytes());
    out.push(u8::from(redacted));
}

impl Resolver {
    /// Writes the discovery caches (titles and indexed texts) to `path`,
    /// through a temporary file in the same directory renamed over it. The
    /// directory must exist. Never needed for correctness.
    pub fn save_discovery_cache(&self, path: &Path) -> std::io::Result<()> {
        let mut payload = Vec::new();
        header(&mut payload, self.config.hardening().redact_secrets);
        self.discovery.encode(&mut payload);
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), uuid::Uuid::new_v4().simple()));
        let written = (|| {
            let file = std::fs::File::create(&tmp)?;
            let mut encoder = zstd::stream::Encoder::new(file, 1)?;
            encoder.include_checksum(true)?;
            encoder.write_all(&payload)?;
            encoder.finish()?.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        match written {
            Ok(()) => self.discovery.changed.store(false, std::sync::atomic::Ordering::Relaxed),
            Err(_) => drop(std::fs::remove_file(&tmp)),
        }
        written
    }

    /// Whether the discovery caches gained or lost anything since this
    /// resolver was created or its caches were last loaded or saved (so a
    /// process that found everything cached need not write its file again).
    pub fn discovery_cache_changed(&self) -> bool {
        self.discovery.changed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Loads the discovery caches written by
    /// [`save_discovery_cache`](Self::save_discovery_cache) into this
    /// resolver (entries it already holds are replaced). Returns whether
    /// the file was used: `false` for a missing, truncated, corrupted,
    /// foreign or other-version file, which is ignored as a whole.
    pub fn load_discovery_cache(&self, path: &Path) -> bool {
        let Ok(file) = std::fs::File::open(path) else { return false };
        // The frame's checksum is verified at its end: a truncated or
        // corrupted file fails here.
        let Ok(payload) = zstd::stream::decode_all(file) else { return false };
        let mut expected = Vec::new();
        header(&mut expected, self.config.hardening().redact_secrets);
        let Some(body) = payload.strip_prefix(expected.as_slice()) else { return false };
        let used = self.discovery.decode(&mut Input(body));
        if used {
            self.discovery.changed.store(false, std::sync::atomic::Ordering::Relaxed);
        }
        used
    }
}
