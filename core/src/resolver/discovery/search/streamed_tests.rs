//! A session indexed from its streamed items is the doc built from its
//! surface read whole, byte for byte in the index file, on every fixture
//! log and on generated ones (small and past the size from which the
//! text is compressed as a stream), without and with a dictionary, plain
//! and with credentials redacted.

use std::path::{Path, PathBuf};

use super::*;
use crate::host::{BlockingSessionQuery, SurfaceItems};
use crate::index::DocCache;
use crate::sources::claude_code::ClaudeCodeSource;
use crate::sources::dsh::DshStore;

/// The generated logs (shared with `core/tests/memory_bounds.rs`).
#[allow(dead_code)]
mod big_logs {
    include!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/big_logs.rs"));
}

fn fingerprint() -> Option<Fingerprint> {
    Some(Fingerprint::from_u64(7))
}

/// The doc of `id` built from its surface read whole, as the first search
/// builds it.
fn whole(q: &dyn BlockingSessionQuery, id: &str, encoder: Option<&Encoder>, redact: bool) -> Doc {
    match q.read_surface_as(id, SurfaceRead::ForProjection).and_then(SurfaceAnswer::into_data) {
        Ok(data) => whole_doc(&data, fingerprint(), Some("title".into()), encoder, redact),
        Err(_) => Doc::build(None, Some("title".into()), Vec::new(), None),
    }
}

/// The doc of `id` built from its streamed items; `None` when the source
/// could not stream them as it found them.
fn streamed(q: &dyn BlockingSessionQuery, id: &str, encoder: Option<&Encoder>, redact: bool) -> Option<Doc> {
    match q.read_surface_as(id, SurfaceRead::Items).map(|a| a.surface) {
        Ok(SurfaceItems::Streamed(items)) => streamed_doc(items, fingerprint(), Some("title".into()), encoder, redact),
        // (A zstd log whose surface is far from log order.)
        Ok(SurfaceItems::Whole(data)) => Some(whole_doc(&data, fingerprint(), Some("title".into()), encoder, redact))
            .filter(|d| d.fingerprint.is_some()),
        Err(_) => None,
    }
}

/// The index file's directory and stored region of a cache of `doc` alone.
fn file_bytes(doc: Doc) -> (Vec<u8>, Vec<u8>) {
    let cache = DocCache::default();
    cache.insert_all(vec![("s".to_owned(), Arc::new(doc))]);
    let (directory, region) = cache.encode();
    (directory, region.to_vec())
}

/// Every session of every root, with its source.
fn sessions(roots: &[(PathBuf, bool)]) -> Vec<(Arc<dyn BlockingSessionQuery>, String, String)> {
    let mut out = Vec::new();
    for (root, dsh) in roots {
        let source: Arc<dyn BlockingSessionQuery> = if *dsh {
            match DshStore::open(root) {
                Ok(store) => Arc::new(store.with_watching(false)),
                Err(_) => continue,
            }
        } else {
            Arc::new(ClaudeCodeSource::open(root).unwrap().with_watching(false))
        };
        let Ok(listed) = source.list_sessions() else { continue };
        for s in listed {
            out.push((Arc::clone(&source), s.id, root.display().to_string()));
        }
    }
    out
}

#[test]
fn a_streamed_build_is_the_whole_build_byte_for_byte() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let small_dsh = big_logs::dsh_root(60, 3_000, 500);
    // Past `STREAM_AT` (8 MiB; 2 MiB in unit tests) of text: compressed as a stream.
    let big_dsh = big_logs::dsh_root(140, 22_000, 300);
    let rich = big_logs::claude_rich_root("rich", 90, 700);
    let big_claude = big_logs::claude_root("big", 100, 14_000, 16_000);
    let mut roots: Vec<(PathBuf, bool)> =
        ["dsh-logs/raw", "dsh-logs/zstd", "dsh-logs/damaged", "dsh-generations/raw", "dsh-generations/zstd"]
            .iter()
            .map(|r| (fixtures.join(r), true))
            .collect();
    for r in [
        "foreign-logs/claude-code",
        "on-disk/claude-code-queue",
        "on-disk/claude-code-titles/first",
        "on-disk/claude-code-empty",
    ] {
        roots.push((fixtures.join(r), false));
    }
    roots.extend([(small_dsh.path().to_owned(), true), (rich.path().to_owned(), false)]);
    let big_roots = [(big_dsh.path().to_owned(), true), (big_claude.path().to_owned(), false)];
    let (all, big) = (sessions(&roots), sessions(&big_roots));

    // A dictionary trained on words like theirs.
    let texts: Vec<String> = (0..64).map(|i| big_logs::words(4_000, i)).collect();
    let encoder = Encoder::trained_on(&texts).expect("a dictionary");

    let (mut compared, mut failed, mut streamed_big) = (0, 0, 0);
    for ((q, id, root), is_big) in all.iter().map(|s| (s, false)).chain(big.iter().map(|s| (s, true))) {
        let q = q.as_ref();
        for (dict, redact) in [(false, false), (true, false), (false, true), (true, true)] {
            if is_big && dict == redact {
                // (Debug builds are slow: two of the four for the big ones.)
                continue;
            }
            let copies = dict.then(|| (encoder.fresh_copy().unwrap(), encoder.fresh_copy().unwrap()));
            let (a, b) = match &copies {
                Some((a, b)) => (Some(a), Some(b)),
                None => (None, None),
            };
            let expected = whole(q, id, a, redact);
            match streamed(q, id, b, redact) {
                Some(doc) => {
                    assert!(expected.fingerprint.is_some(), "{id}: streamed, but its surface does not project");
                    streamed_big += usize::from(doc.text_bytes() >= Doc::STREAM_AT);
                    assert_eq!(file_bytes(doc), file_bytes(expected), "{root} {id} dict {dict} redact {redact}");
                    compared += 1;
                }
                None => {
                    // Read whole instead: only a log whose surface does not
                    // project (or cannot be read) fails its streamed read.
                    assert!(expected.fingerprint.is_none(), "{id}: not streamed, but it projects ({root})");
                    failed += 1;
                }
            }
        }
    }
    assert!(compared >= 200 && streamed_big == 4, "{compared} compared, {streamed_big} big, {failed} failed");
}
