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
//! The files hold what sessions said, so the directory is private
//! ([`dsh_session_reference::fs::private_dir`]): created 0700, its files
//! 0600, and refused (with a warning, and then no cache is read or
//! written) when it is a symbolic link, belongs to another user or is
//! writable by others; each file is read only when it is this user's and
//! no one else can write it.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use dsh_session_reference::sources::SourceSpec;

/// The cache files of one sessions root, or of one set of sources.
pub struct Files {
    pub listing: PathBuf,
    pub titles: PathBuf,
    pub index: PathBuf,
}

impl Files {
    /// The cache files of the sources `specs`: those of its root for a DSH
    /// root alone ([`Files::for_root`]); else the files of that set of
    /// sources (kinds and roots, in any order), whose listing file is not
    /// used (only the DSH store keeps a listing cache).
    pub fn for_sources(specs: &[SourceSpec]) -> Result<Files, String> {
        let mut roots: Vec<(String, PathBuf)> = specs
            .iter()
            .map(|s| (s.kind.name().to_owned(), s.root.canonicalize().unwrap_or_else(|_| s.root.clone())))
            .collect();
        roots.sort();
        let mut files = Files::at(&roots.iter().map(|(_, r)| r.as_path()).collect::<Vec<_>>())?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        roots.hash(&mut h);
        let key = format!("{:016x}", h.finish());
        let dir = files.titles.parent().map(Path::to_owned).unwrap_or_default();
        files.listing = dir.join(format!("listing-{key}.bin"));
        files.titles = dir.join(format!("titles-{key}.bin"));
        files.index = dir.join(format!("index-{key}.bin"));
        Ok(files)
    }

    /// The cache files of `root` in the private cache directory (made so
    /// when missing), or why there are none.
    pub fn for_root(root: &Path) -> Result<Files, String> {
        Files::at(&[root])
    }

    /// The cache files keyed by `roots[0]` in the cache directory, or why
    /// there are none (no home, or the cache directory inside one of
    /// `roots`).
    fn at(roots: &[&Path]) -> Result<Files, String> {
        let root = roots.first().copied().unwrap_or(Path::new(""));
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
        dsh_session_reference::fs::private_dir(&dir)?;
        let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
        let mut h = std::collections::hash_map::DefaultHasher::new();
        root.hash(&mut h);
        let key = format!("{:016x}", h.finish());
        Ok(Files {
            listing: dir.join(format!("listing-{key}.bin")),
            titles: dir.join(format!("titles-{key}.bin")),
            index: dir.join(format!("index-{key}.bin")),
        })
    }
}
