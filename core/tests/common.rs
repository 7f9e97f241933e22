//! Helpers shared by the core's integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

/// The conformance directory: `$DSR_CONFORMANCE_DIR`, else `tests/conformance`
/// at the workspace root.
pub fn conformance_dir() -> PathBuf {
    match std::env::var_os("DSR_CONFORMANCE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance"),
    }
}

/// Reads one vector file of the conformance set.
pub fn vectors(name: &str) -> Value {
    let path = conformance_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Compact JSON of a value with object keys sorted recursively: structural
/// comparison that ignores key order.
pub fn canonical(v: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sort(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sort(v)).unwrap()
}

/// A small deterministic generator (xorshift64*) for randomized tests.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Copies the directory tree `from` to `to` (created), files and directories only.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A temporary copy of `examples/sessions`.
pub fn example_root() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sessions"), tmp.path());
    tmp
}

/// A session query with its shared listing hidden: what discovery does
/// with a source that has none (`list_sessions`, then `fingerprints` of
/// what it needs). Tests compare answers through it with the source's own.
pub struct Unshared<Q>(pub Q);

impl<Q: dsh_session_reference::SessionQuery> dsh_session_reference::SessionQuery for Unshared<Q> {
    fn list_sessions(&self) -> dsh_session_reference::QueryFuture<'_, Vec<dsh_session_reference::SessionHeader>> {
        self.0.list_sessions()
    }
    fn read_title<'a>(&'a self, id: &'a str) -> dsh_session_reference::QueryFuture<'a, Option<String>> {
        self.0.read_title(id)
    }
    fn read_surface<'a>(
        &'a self,
        id: &'a str,
    ) -> dsh_session_reference::QueryFuture<'a, dsh_session_reference::SurfaceData> {
        self.0.read_surface(id)
    }
    fn fingerprints<'a>(
        &'a self,
        ids: &'a [String],
    ) -> dsh_session_reference::QueryFuture<'a, Option<Vec<Option<dsh_session_reference::Fingerprint>>>> {
        self.0.fingerprints(ids)
    }
}
