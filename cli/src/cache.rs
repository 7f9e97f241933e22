//! `--cache`: the discovery caches of the resolver kept on disk between
//! runs, under `$XDG_CACHE_HOME/dsh-session-reference/` (else
//! `~/.cache/dsh-session-reference/`), one file per sessions root, never
//! under the root itself. The store fingerprints each log by its identity
//! (device, inode, size, mtime), so the file's entries are used only for
//! logs that did not change.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// The cache file of `root`, or why there is none.
pub fn path_for(root: &Path) -> Result<PathBuf, String> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => PathBuf::from(home).join(".cache"),
            None => return Err("neither XDG_CACHE_HOME nor HOME is set".into()),
        },
    };
    let dir = base.join("dsh-session-reference");
    let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    let base_real = base.canonicalize().unwrap_or(base);
    if base_real.starts_with(&root) {
        return Err(format!("the cache directory {} is inside the sessions root", dir.display()));
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    root.hash(&mut h);
    Ok(dir.join(format!("discovery-{:016x}.bin", h.finish())))
}
