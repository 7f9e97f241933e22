//! The discovery caches on disk, so that a short-lived process (the
//! command line) starts warm: a file that is missing, truncated, corrupted,
//! from another version of the library, of the other part or malformed in
//! any way is ignored as a whole, never partly used. What it holds is keyed
//! by fingerprints like the caches in memory, so an entry for a session
//! that changed since is never used.
//!
//! The titles are one zstd frame ([`crate::cache_file::write_file`]). The
//! search index is read in place ([`crate::cache_file::write_in_place`]):
//! loading it reads only its checksummed directory (ids, fingerprints,
//! titles, dictionaries, item lengths, and where each filter and each
//! compressed text is, with its checksum); the filters and texts stay in
//! the file. A search reads the filters in one sweep through a reused
//! buffer (kept in memory from a process's second search on) and the
//! texts of the sessions it verifies. A filter or text that cannot be read
//! back or does not match its checksum (or a text that does not
//! decompress to its length) makes its session indexed again from its
//! source before the search answers (`search.rs`), so damage is never a
//! wrong answer.

use std::path::Path;

use crate::cache_file::{open_in_place, read_file, write_file, write_in_place, Input};
use crate::resolver::Resolver;

const MAGIC: &[u8; 8] = b"DSRDISC\0";
/// The payload layout; bumped on any change (2: the index's zstd
/// dictionaries, and filter keys around spaces instead of trigrams across
/// whitespace, so a format-1 filter would miss phrases; 3: titles and the
/// index in files of their own, the part named in the header; 4: the index
/// read in place, uncompressed, its texts out of its checksummed
/// directory; 5: its filters out of the directory too, each with its
/// checksum, all of them before the texts; 6: each dictionary's
/// vocabulary and each doc's serial in it, without which a doc built with
/// it could be ruled out wrongly; 7: filter keys of 4 bytes with three
/// digits or more, which a format-6 filter lacks, so it would rule out a
/// session holding a number the query asks for; 8: those keys listed by
/// the vocabularies and left out of the filters of docs built with a
/// dictionary, so a format-7 vocabulary, which does not list them, would
/// rule out every such doc for a number).
const FORMAT: u32 = 8;

/// The file's header: what it is, its format, the library version, the
/// part it holds, and whether its texts were indexed with credentials redacted (`redactSecrets`),
/// so a resolver never uses an index built under the other setting.
fn header(out: &mut Vec<u8>, part: DiscoveryCachePart, redacted: bool) {
    crate::cache_file::header(out, MAGIC, FORMAT);
    out.push(part.tag());
    out.push(u8::from(redacted));
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
    /// one; the file is readable by its owner only (0600). What it writes
    /// leaves out every session the last discovery query did not list (a
    /// deleted session's title and text do not outlive it in the file).
    /// Never needed for correctness.
    pub fn save_discovery_cache(&self, part: DiscoveryCachePart, path: &Path) -> std::io::Result<()> {
        // Sessions deleted since are not carried into the new file.
        self.discovery.prune_unlisted();
        let mut head = Vec::new();
        header(&mut head, part, self.config.hardening().redact_secrets);
        let written = match part {
            DiscoveryCachePart::Titles => {
                self.discovery.encode_titles(&mut head);
                write_file(path, &head)
            }
            DiscoveryCachePart::Index => {
                let (directory, texts) = self.discovery.docs.encode();
                write_in_place(path, &head, &directory, &texts)
            }
        };
        if written.is_ok() {
            self.discovery.changed(part).store(false, std::sync::atomic::Ordering::Relaxed);
        }
        written
    }

    /// The name (without directory or extension) under which this resolver
    /// keeps `part` of its discovery caches among such files: `titles` or
    /// `index`, with `-redacted` under `redactSecrets`. A file holds only
    /// what one setting allows and is ignored under the other, so processes
    /// under both settings over the same sources (a hardened server and a
    /// plain command line) keep a file each instead of replacing each
    /// other's on every run.
    pub fn discovery_cache_name(&self, part: DiscoveryCachePart) -> &'static str {
        match (part, self.config.hardening().redact_secrets) {
            (DiscoveryCachePart::Titles, false) => "titles",
            (DiscoveryCachePart::Titles, true) => "titles-redacted",
            (DiscoveryCachePart::Index, false) => "index",
            (DiscoveryCachePart::Index, true) => "index-redacted",
        }
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
        let mut expected = Vec::new();
        header(&mut expected, part, self.config.hardening().redact_secrets);
        let used = match part {
            DiscoveryCachePart::Titles => read_file(path).is_some_and(|payload| {
                payload
                    .strip_prefix(expected.as_slice())
                    .is_some_and(|body| self.discovery.decode_titles(&mut Input(body)))
            }),
            DiscoveryCachePart::Index => {
                let docs =
                    open_in_place(path, &expected).and_then(|(dir, texts)| self.discovery.docs.decode(dir, &texts));
                docs.map(|docs| self.discovery.docs.insert_all(docs)).is_some()
            }
        };
        if used {
            self.discovery.changed(part).store(false, std::sync::atomic::Ordering::Relaxed);
        }
        used
    }
}
