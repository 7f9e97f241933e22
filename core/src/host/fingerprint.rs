//! Change detection for the discovery caches: a [`Fingerprint`] is an
//! opaque value a source gives for the current state of one session, such
//! that any change of the session changes it.

/// The state of one session as its source sees it: equal fingerprints
/// promise an unchanged session (same title, same surface). A file-backed
/// source derives it from the log's identity (device, inode, size,
/// modification time); an in-memory source from a version counter.
///
/// The discovery caches of a [`Resolver`](crate::Resolver) key what they
/// keep per session by it: a session whose fingerprint differs from the
/// cached one is read again, and one without a fingerprint is never cached.
#[derive(Clone)]
pub struct Fingerprint(Bytes);

/// A fingerprint's bytes: short ones (a file identity, a version number)
/// inline, so that fingerprinting thousands of sessions allocates nothing.
#[derive(Clone)]
enum Bytes {
    Inline(u8, [u8; INLINE]),
    Heap(Box<[u8]>),
}

const INLINE: usize = 48;

impl PartialEq for Fingerprint {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Fingerprint {}

impl std::hash::Hash for Fingerprint {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Fingerprint").field(&self.as_bytes()).finish()
    }
}

impl Fingerprint {
    /// A fingerprint from arbitrary bytes (a host's own version string, a
    /// content hash, an etag).
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Self {
        Fingerprint::from_slice(&bytes.into())
    }

    /// [`from_bytes`](Self::from_bytes) without taking the bytes (no copy
    /// for a short fingerprint).
    pub(crate) fn from_slice(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE {
            let mut inline = [0; INLINE];
            inline[..bytes.len()].copy_from_slice(bytes);
            Fingerprint(Bytes::Inline(bytes.len() as u8, inline))
        } else {
            Fingerprint(Bytes::Heap(bytes.into()))
        }
    }

    /// A fingerprint from a version number.
    pub fn from_u64(version: u64) -> Self {
        Fingerprint::from_slice(&version.to_le_bytes())
    }

    /// A fingerprint from a file's identity: device, inode, size and
    /// modification time in nanoseconds since the epoch (negative before
    /// it). A replaced file (new inode), a truncated or appended one (new
    /// size) and one rewritten in place (new mtime) all differ.
    pub fn from_file_identity(device: u64, inode: u64, size: u64, mtime_ns: i128) -> Self {
        let mut b = [0u8; 40];
        b[..8].copy_from_slice(&device.to_le_bytes());
        b[8..16].copy_from_slice(&inode.to_le_bytes());
        b[16..24].copy_from_slice(&size.to_le_bytes());
        b[24..].copy_from_slice(&mtime_ns.to_le_bytes());
        Fingerprint::from_slice(&b)
    }

    /// The fingerprint of a file's metadata: [`from_file_identity`](Self::from_file_identity)
    /// of its device, inode, size and modification time (on systems without
    /// inodes, device and inode are 0).
    pub fn of_metadata(meta: &std::fs::Metadata) -> Self {
        Fingerprint::from(crate::fs::FileIdentity::of(meta))
    }

    /// The fingerprint's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Bytes::Inline(len, bytes) => &bytes[..usize::from(*len)],
            Bytes::Heap(bytes) => bytes,
        }
    }
}

impl Fingerprint {
    /// Reads the fingerprints a host gave as JSON: an array with one item
    /// per session, each a string (its UTF-8 bytes), a number (its JSON
    /// text) or `null` (no fingerprint). The one reader behind the C ABI
    /// and Node hosts.
    pub fn list_from_json(value: &serde_json::Value) -> Result<Vec<Option<Fingerprint>>, String> {
        use serde_json::Value;
        let items = value.as_array().ok_or("fingerprints must be an array")?;
        items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(Some(Fingerprint::from_bytes(s.as_bytes()))),
                Value::Number(n) => Ok(Some(Fingerprint::from_bytes(n.to_string().into_bytes()))),
                Value::Null => Ok(None),
                _ => Err("each fingerprint must be a string, a number or null".to_owned()),
            })
            .collect()
    }
}

impl From<crate::fs::FileIdentity> for Fingerprint {
    /// A file-backed source's identity of a log, as its fingerprint.
    fn from(id: crate::fs::FileIdentity) -> Self {
        Fingerprint::from_file_identity(id.dev, id.inode, id.size, id.mtime_ns as i128)
    }
}

/// `n` times "no fingerprint", each made afresh: `vec![None; n]` clones a
/// `None` whose payload bytes are uninitialised, and the optimised clone of
/// this type branches on them (valgrind reports it; the result is right).
pub(crate) fn no_fingerprints(n: usize) -> Vec<Option<Fingerprint>> {
    std::iter::repeat_with(|| None).take(n).collect()
}
