//! The cache (on unless `--no-cache`): what the store and the resolver learn
//! kept on disk between runs, under `$XDG_CACHE_HOME/dsh-session-reference/`
//! (else `~/.cache/dsh-session-reference/`), never under a sessions root:
//! for a DSH root read alone, three files; for several sources (or one of
//! another kind), the titles and the index files of that set of sources:
//! - `listing-<root>.bin`: each session directory's entries and each log's
//!   header, with their stamps (used only while a stamp is unchanged);
//! - `titles-<root>.bin`: each session's latest title, by fingerprint
//!   (device, inode, size, mtime of its log), read and written by
//!   `candidates --query` (not by `search`: the index holds each indexed
//!   session's title under the same fingerprint);
//! - `index-<root>.bin`: the search index, by fingerprint (read by `search`
//!   only, so `candidates --query` reads the two small files). It is read
//!   in place: loading reads its checksummed directory (titles, where
//!   each filter and compressed text is), and a search reads from the file
//!   the filters, in one sweep, and the texts of the sessions it verifies
//!   (`docs/discovery.md`).
//!
//! The titles and index files of a process with `redactSecrets` on (a
//! hardened command, the MCP server by default) are `titles-redacted-…`
//! and `index-redacted-…`: each file holds only what its setting allows,
//! so the two settings keep a file each rather than replacing each other's.
//!
//! The files hold what sessions said, so the directory is private
//! ([`dsh_session_reference::wire::private_dir`]): created 0700, its files
//! 0600, and refused (with a warning, and then no cache is read or
//! written) when it is a symbolic link, belongs to another user or is
//! writable by others; each file is read only when it is this user's and
//! no one else can write it.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use dsh_session_reference::sources::SourceSpec;
use dsh_session_reference::{DiscoveryCachePart, Resolver};

/// The cache files of one sessions root, or of one set of sources.
pub struct Files {
    pub listing: PathBuf,
    pub titles: PathBuf,
    pub index: PathBuf,
}

impl Files {
    /// The cache files of the sources `specs` for `resolver`: those of its
    /// root for a DSH root alone ([`Files::for_root`]); else the files of
    /// that set of sources (kinds and roots, in any order), whose listing
    /// file is not used (only the DSH store keeps a listing cache).
    pub fn for_sources(specs: &[SourceSpec], view: Option<&str>, resolver: &Resolver) -> Result<Files, String> {
        let mut roots: Vec<(String, PathBuf)> = specs
            .iter()
            .map(|s| (s.kind.name().to_owned(), s.root.canonicalize().unwrap_or_else(|_| s.root.clone())))
            .collect();
        roots.sort();
        let dir = Files::dir(&roots.iter().map(|(_, r)| r.as_path()).collect::<Vec<_>>())?;
        Ok(Files::named(&dir, &roots, view, resolver))
    }

    /// The cache files of `root` for `resolver` in the private cache
    /// directory (made so when missing), or why there are none.
    pub fn for_root(root: &Path, view: Option<&str>, resolver: &Resolver) -> Result<Files, String> {
        let dir = Files::dir(&[root])?;
        Ok(Files::named(&dir, &root.canonicalize().unwrap_or_else(|_| root.to_owned()), view, resolver))
    }

    /// The files in `dir` keyed by a hash of `key`; the titles and index
    /// files are named by the resolver (one pair per `redactSecrets`
    /// setting, so a hardened server and a plain command line over the same
    /// sources do not replace each other's files), and by `view`, the part
    /// of the sources a server offers when not all of them (a server
    /// scoped to one project keeps only that project's sessions).
    fn named(dir: &Path, key: &impl Hash, view: Option<&str>, resolver: &Resolver) -> Files {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        if let Some(view) = view {
            view.hash(&mut h);
        }
        let key = format!("{:016x}", h.finish());
        let file = |part| dir.join(format!("{}-{key}.bin", resolver.discovery_cache_name(part)));
        Files {
            listing: dir.join(format!("listing-{key}.bin")),
            titles: file(DiscoveryCachePart::Titles),
            index: file(DiscoveryCachePart::Index),
        }
    }

    /// The private cache directory, or why there is none (no home, or the
    /// cache directory inside one of `roots`).
    fn dir(roots: &[&Path]) -> Result<PathBuf, String> {
        let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
                Some(home) => PathBuf::from(home).join(".cache"),
                None => return Err("neither XDG_CACHE_HOME nor HOME is set".into()),
            },
        };
        let dir = base.join("dsh-session-reference");
        let base_real = base.canonicalize().unwrap_or(base);
        for each in roots {
            let each = each.canonicalize().unwrap_or_else(|_| each.to_path_buf());
            if base_real.starts_with(&each) {
                return Err(format!("the cache directory {} is inside the sessions root", dir.display()));
            }
        }
        dsh_session_reference::wire::private_dir(&dir)?;
        Ok(dir)
    }
}
