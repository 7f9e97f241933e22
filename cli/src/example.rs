//! The example DSH store embedded in the binary (see `build.rs`), unpacked
//! into a private temporary directory for `demo` and removed afterwards.

use std::path::{Path, PathBuf};
use std::{fs, io};

/// Every file of `examples/sessions/`: (path relative to the root, bytes).
const FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/example_store.rs"));

/// A copy of the example store in a fresh temporary directory, deleted on drop.
pub struct ExampleRoot(PathBuf);

impl ExampleRoot {
    /// Writes the embedded files into a new directory under the system's
    /// temporary directory (created exclusively, so never a pre-existing one).
    pub fn unpack() -> io::Result<ExampleRoot> {
        if FILES.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "this build has no bundled example store: pass --root",
            ));
        }
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = base.join(format!("dsh-session-ref-demo-{}-{nanos}", std::process::id()));
        fs::create_dir(&dir)?;
        let root = ExampleRoot(dir);
        for (rel, bytes) in FILES {
            let path = root.0.join(rel);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::write(path, bytes)?;
        }
        Ok(root)
    }

    /// The directory holding the copy.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ExampleRoot {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
