//! The embedded DSH store against the fixture roots in
//! `tests/fixtures/dsh-logs/` and their `expected.json`, produced by running
//! DSH's own loader, fold, session query and session-reference code.
//! `DSR_DSH_FIXTURES_DIR` points the test at another fixture set.

use std::path::PathBuf;
use std::sync::Arc;

use dsh_session_reference::store::{DshStore, StoreErrorKind};
use dsh_session_reference::{
    block_on, CandidateOptions, Config, ErrorCode, PrepareOptions, Resolver, SessionQuery, Target,
};
use serde_json::{json, Value};

fn fixtures_dir() -> PathBuf {
    match std::env::var_os("DSR_DSH_FIXTURES_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/dsh-logs"),
    }
}

fn expected() -> Value {
    let path = fixtures_dir().join("expected.json");
    serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

fn target(e: &Value) -> Target {
    Target::from_json(&e["target"]).unwrap()
}

fn roots(e: &Value) -> Vec<(String, Value)> {
    e["roots"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn open(root: &str) -> DshStore {
    DshStore::open(fixtures_dir().join(root)).unwrap()
}

#[test]
fn listings_match_expected() {
    let e = expected();
    for (root, r) in roots(&e) {
        let listing = open(&root).list().unwrap();
        assert!(listing.rejected.is_empty(), "{root}: {:?}", listing.rejected);
        let got: Vec<Value> = listing.sessions.iter().map(|s| Value::Object(s.header_json.clone())).collect();
        assert_eq!(got, r["listing"].as_array().unwrap().clone(), "listing of {root}");
        for (s, exp) in listing.sessions.iter().zip(r["sessions"].as_array().unwrap()) {
            let rel = s.path.strip_prefix(fixtures_dir().join(&root)).unwrap();
            assert_eq!(rel.to_str().unwrap(), exp["file"].as_str().unwrap(), "{root}");
            assert_eq!(s.encoding.as_str(), r["compression"].as_str().unwrap());
            assert_eq!(s.header.id, exp["sessionId"].as_str().unwrap());
        }
    }
}

#[test]
fn titles_match_expected() {
    let e = expected();
    for (root, r) in roots(&e) {
        let store = open(&root);
        for s in r["sessions"].as_array().unwrap() {
            let id = s["sessionId"].as_str().unwrap();
            let got = store.read_title(id);
            match s["titleObservation"].as_str().unwrap() {
                "fulfilled" => assert_eq!(got.unwrap().as_deref(), s["title"].as_str(), "{root} {id}"),
                "rejected" => assert_eq!(got.unwrap_err().kind(), StoreErrorKind::Corrupt, "{root} {id}"),
                other => panic!("unknown observation {other}"),
            }
        }
    }
}

#[test]
fn surfaces_match_expected() {
    let e = expected();
    for (root, r) in roots(&e) {
        let store = open(&root);
        for s in r["sessions"].as_array().unwrap() {
            let id = s["sessionId"].as_str().unwrap();
            let got = store.read_surface_json(id);
            if !s["readSurfaceError"].is_null() {
                let err = got.unwrap_err();
                assert_eq!(err.kind(), StoreErrorKind::Corrupt, "{root} {id}");
                assert!(err.message().contains("compaction-recovery"), "the error names the log: {err}");
                continue;
            }
            let bytes = got.unwrap_or_else(|err| panic!("{root} {id}: {err}"));
            let snapshot: Value = serde_json::from_slice(&bytes).unwrap();
            let exp = &s["surface"];
            assert_eq!(snapshot["session"], exp["session"], "{root} {id}");
            assert_eq!(snapshot["capturedThroughSeq"], exp["capturedThroughSeq"], "{root} {id}");
            let events = snapshot["events"].as_array().unwrap();
            let seqs: Vec<Value> = events.iter().map(|ev| ev["seq"].clone()).collect();
            let types: Vec<Value> = events.iter().map(|ev| ev["type"].clone()).collect();
            assert_eq!(Value::from(seqs), exp["seqs"], "{root} {id}");
            assert_eq!(Value::from(types), exp["types"], "{root} {id}");
            // The events are the log's own lines, byte for byte.
            let log = std::fs::read(fixtures_dir().join(&root).join(s["file"].as_str().unwrap())).unwrap();
            if r["compression"] == "none" {
                for ev in events {
                    let line = serde_json::to_string(ev).unwrap();
                    assert!(log.windows(line.len()).any(|w| w == line.as_bytes()), "{root} {id}: line not verbatim");
                }
            }
        }
    }
}

#[test]
fn stored_prefix_and_closers_match_expected() {
    let e = expected();
    for (root, r) in roots(&e) {
        let store = open(&root);
        for s in r["sessions"].as_array().unwrap() {
            let id = s["sessionId"].as_str().unwrap();
            let prefix = &s["storedPrefix"];
            let stats = store.inspect(id);
            if !prefix["error"].is_null() {
                assert_eq!(stats.unwrap_err().kind(), StoreErrorKind::Corrupt, "{root} {id}");
                continue;
            }
            let stats = stats.unwrap();
            assert_eq!(stats.decoded_events, prefix["decodedEvents"].as_u64().unwrap(), "{root} {id}");
            assert_eq!(stats.last_seq, prefix["lastSeq"].as_u64(), "{root} {id}");
            assert_eq!(stats.storage_lines, prefix["storageLines"].as_u64().unwrap(), "{root} {id}");
            assert_eq!(stats.packed_rows, prefix["packedRows"].as_u64().unwrap(), "{root} {id}");
            assert_eq!(stats.packed_members, prefix["packedMembers"].as_u64().unwrap(), "{root} {id}");
            assert_eq!(stats.complete_frames, prefix["completeFrames"].as_u64(), "{root} {id}");
            match (&stats.torn_tail, &prefix["tornTail"]) {
                (None, Value::Null) => {}
                (Some(t), exp) => {
                    assert_eq!(t.truncate_to, exp["truncateTo"].as_u64().unwrap(), "{root} {id}");
                    assert_eq!(t.file_bytes, exp["fileBytes"].as_u64().unwrap(), "{root} {id}");
                    assert_eq!(t.discarded_bytes, exp["discardedBytes"].as_u64().unwrap(), "{root} {id}");
                    assert_eq!(t.recovered_lines, exp["recoveredEventsFromTornFrame"].as_u64().unwrap());
                }
                (got, exp) => panic!("{root} {id}: torn tail {got:?}, expected {exp}"),
            }
            let closers: Vec<&str> =
                s["recoveryClosers"].as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap()).collect();
            assert_eq!(stats.recovery_closers, closers, "{root} {id}");
            if let Some(last) = closers.len().checked_sub(1) {
                assert_eq!(s["recoveryClosers"][last]["seq"], json!(stats.captured_through_seq));
            }
            // Without closers capturedThroughSeq would be the committed prefix's.
            if !s["committedPrefixOnly"].is_null() {
                assert_eq!(
                    stats.last_seq,
                    s["committedPrefixOnly"]["surface"]["capturedThroughSeq"].as_u64(),
                    "{root} {id}"
                );
            }
        }
    }
}

#[test]
fn prepare_matches_expected_for_every_config() {
    let e = expected();
    let target = target(&e);
    let content = e["prepareInput"]["content"].clone();
    for (root, r) in roots(&e) {
        let store: Arc<dyn SessionQuery> = Arc::new(open(&root));
        for (name, config) in e["configs"].as_object().unwrap() {
            let resolver = Resolver::new(Arc::clone(&store), Config::from_json(config).unwrap());
            for s in r["sessions"].as_array().unwrap() {
                let id = s["sessionId"].as_str().unwrap();
                let exp = &s["prepare"][name];
                let got = block_on(resolver.prepare(
                    &target,
                    &content,
                    &[json!({"sessionId": id})],
                    &PrepareOptions::default(),
                    None,
                ));
                if let Some(code) = exp["error"].as_str() {
                    let err = got.unwrap_err();
                    assert_eq!(err.code(), ErrorCode::from_wire(code).unwrap(), "{root} {id} {name}");
                    if err.code() == ErrorCode::ReadFailed {
                        assert!(err.message().contains(id), "the session is named: {err}");
                    }
                    continue;
                }
                let prepared = got.unwrap_or_else(|err| panic!("{root} {id} {name}: {err}"));
                assert_eq!(prepared.content, content);
                let ctx = prepared.additional_context.unwrap();
                assert_eq!(ctx.prompt, exp["prompt"].as_str().unwrap(), "{root} {id} {name}: prompt bytes");
                assert_eq!(ctx.source.to_json(), exp["source"], "{root} {id} {name}: source");
            }
        }
    }
}

#[test]
fn candidates_match_expected() {
    let e = expected();
    let target = target(&e);
    let mut cases = 0;
    for (root, r) in roots(&e) {
        let Some(list) = r["candidates"].as_array() else { continue };
        let store: Arc<dyn SessionQuery> = Arc::new(open(&root));
        for case in list {
            let config = Config::new(None, case["candidateLimit"].as_u64(), None).unwrap();
            let resolver = Resolver::new(Arc::clone(&store), config);
            let query = case["query"].as_str().unwrap();
            let got = block_on(resolver.candidates(&target, query, &CandidateOptions::default(), None)).unwrap();
            let got: Vec<Value> = got.iter().map(|c| c.to_json()).collect();
            assert_eq!(Value::from(got), case["expected"], "{root} query {query:?}");
            cases += 1;
        }
    }
    assert_eq!(cases, 16);
}

#[test]
fn raw_and_zstd_roots_agree() {
    let (raw, zstd) = (open("raw"), open("zstd"));
    let (lr, lz) = (raw.list().unwrap(), zstd.list().unwrap());
    let headers =
        |l: &dsh_session_reference::store::Listing| l.sessions.iter().map(|s| s.header.clone()).collect::<Vec<_>>();
    assert_eq!(headers(&lr), headers(&lz));
    for s in &lr.sessions {
        let id = &s.header.id;
        assert_eq!(raw.read_title(id).unwrap(), zstd.read_title(id).unwrap());
        assert_eq!(raw.read_surface_json(id).unwrap(), zstd.read_surface_json(id).unwrap(), "{id}");
        let (mut a, mut b) = (raw.inspect(id).unwrap(), zstd.inspect(id).unwrap());
        assert!(a.complete_frames.is_none() && b.complete_frames.is_some());
        a.complete_frames = None;
        b.complete_frames = None;
        assert_eq!(a, b);
    }
}

#[test]
fn damaged_sessions_are_still_listed_and_never_hide_others() {
    // One root holding an intact session and the damaged ones' logs side by side.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let copy = |from: &str, to: &str| {
        let dst = root.join(to);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(fixtures_dir().join(from), dst).unwrap();
    };
    copy(
        "damaged/seq-gap/--home-dev-alpha--/compaction-recovery/session.jsonl",
        "--home-dev-alpha--/compaction-recovery/session.jsonl",
    );
    copy("raw/_no-cwd/multi-turn/session.jsonl", "_no-cwd/multi-turn/session.jsonl");
    copy("raw/--home-dev-beta--/~002E~002E/session.jsonl", "--home-dev-beta--/~002E~002E/session.jsonl");
    let store = DshStore::open(root).unwrap();
    let ids: Vec<String> = store.list().unwrap().sessions.into_iter().map(|s| s.header.id).collect();
    assert_eq!(ids, vec!["..", "multi-turn", "compaction-recovery"]);
    assert!(store.read_surface_json("compaction-recovery").unwrap_err().message().contains("expected 2, got 3"));
    assert!(store.read_surface_json("multi-turn").is_ok());

    let resolver = Resolver::new(Arc::new(store), Config::default());
    let target = Target::new("t", Some("/home/dev/alpha".into()));
    let candidates = block_on(resolver.candidates(&target, "", &CandidateOptions::default(), None)).unwrap();
    let labels: Vec<&str> = candidates.iter().map(|c| c.label.as_str()).collect();
    // The damaged session's title read fails, so its label is its id.
    assert_eq!(labels, vec!["compaction-recovery", "Reply with exactly the word:", "First use the read tool"]);
    let err = block_on(resolver.prepare(
        &target,
        &json!("x"),
        &[json!({"sessionId": "multi-turn"}), json!({"sessionId": "compaction-recovery"})],
        &PrepareOptions::default(),
        None,
    ))
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ReadFailed);
    assert!(err.message().contains("compaction-recovery"));
}
