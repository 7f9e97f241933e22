//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) through the
//! same bodies the cargo-fuzz targets run (`fuzz/src/checks.rs`), on stable
//! Rust. `fuzz/replay.sh` runs this; `cargo +nightly fuzz run <target>`
//! explores further (see `fuzz/README.md`).

#[path = "../../fuzz/src/checks.rs"]
mod checks;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

fn corpus_dir() -> PathBuf {
    match std::env::var_os("DSR_FUZZ_CORPUS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus"),
    }
}

#[test]
fn every_corpus_file_passes_its_target() {
    let mut failures = Vec::new();
    for (name, check) in checks::TARGETS {
        let dir = corpus_dir().join(name);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert!(files.len() >= 3, "{}: only {} seed files", dir.display(), files.len());
        for file in files {
            let data = std::fs::read(&file).unwrap();
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(&data))) {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!("{name}: {}: {why}", file.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
