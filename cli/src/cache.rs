//! `--cache`: the discovery caches of the resolver kept on disk between
//! runs, under `$XDG_CACHE_HOME/dsh-session-reference/` (else
//! `~/.cache/dsh-session-reference/`), one file per sessions root, never
//! under the root itself. The store is read through an adapter that
//! fingerprints each listed log by its metadata (device, inode, size,
//! mtime), so the file's entries are used only for logs that did not change.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use dsh_session_reference::{BlockingSessionQuery, DshStore, Fingerprint, HostError, SessionHeader, SurfaceData};

/// The store, fingerprinting the logs of its last listing.
pub struct Fingerprinted {
    store: DshStore,
    paths: Mutex<HashMap<String, PathBuf>>,
}

impl Fingerprinted {
    pub fn new(store: DshStore) -> Self {
        Fingerprinted { store, paths: Mutex::default() }
    }
}

impl BlockingSessionQuery for Fingerprinted {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        let listing = self.store.list().map_err(|e| HostError::new(e.to_string()))?;
        let mut paths = self.paths.lock().unwrap_or_else(|e| e.into_inner());
        paths.clear();
        paths.extend(listing.sessions.iter().map(|s| (s.header.id.clone(), s.path.clone())));
        Ok(listing.sessions.into_iter().map(|s| s.header).collect())
    }
    fn read_title(&self, session_id: &str) -> Result<Option<String>, HostError> {
        self.store.read_title(session_id).map_err(HostError::from)
    }
    fn read_surface(&self, session_id: &str) -> Result<SurfaceData, HostError> {
        self.store.read_surface_json(session_id).map(SurfaceData::json).map_err(HostError::from)
    }
    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        let paths = self.paths.lock().unwrap_or_else(|e| e.into_inner());
        let fp = |id: &String| {
            let meta = std::fs::symlink_metadata(paths.get(id)?).ok()?;
            Some(Fingerprint::of_metadata(&meta))
        };
        Ok(Some(session_ids.iter().map(fp).collect()))
    }
}

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
