//! The embedded DSH store against hostile or broken roots: nothing here may
//! crash, hang, grow memory without bound, or hide the healthy sessions.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_session_reference::store::layout::{project_dir_name, session_dir_name};
use dsh_session_reference::store::{DshStore, StoreErrorKind};
use dsh_session_reference::{block_on, Config, ErrorCode, PrepareOptions, Resolver, Target};
use serde_json::{json, Value};

fn header(id: &str, created_at: u64, cwd: Option<&str>) -> String {
    let mut h = json!({"type": "session", "version": 0, "id": id, "createdAt": created_at});
    if let Some(cwd) = cwd {
        h["cwd"] = json!(cwd);
    }
    h["delegationDepth"] = json!(0);
    format!("{h}\n")
}

fn user(seq: u64, text: &str) -> String {
    let e = json!({"type": "user/message", "seq": seq, "time": seq, "data": {"content": [{"type": "text", "text": text}],
        "source": {"kind": "user"}}, "surfaceOp": "append"});
    format!("{e}\n")
}

fn event(seq: u64, kind: &str) -> String {
    format!("{}\n", json!({"type": kind, "seq": seq, "time": seq, "data": {"turn": 1}}))
}

fn log_dir(root: &Path, id: &str, cwd: Option<&str>) -> PathBuf {
    let dir = root.join(project_dir_name(cwd)).join(session_dir_name(id));
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes a plain log at the path derived from `id` and `cwd`.
fn write_log(root: &Path, id: &str, cwd: Option<&str>, body: &str) -> PathBuf {
    let path = log_dir(root, id, cwd).join("session.jsonl");
    fs::write(&path, body).unwrap();
    path
}

fn healthy(root: &Path) {
    let body = header("healthy", 5, Some("/w")) + &event(0, "turn/start") + &user(1, "hi") + &event(2, "turn/end");
    write_log(root, "healthy", Some("/w"), &body);
}

fn listed_ids(store: &DshStore) -> Vec<String> {
    store.list().unwrap().sessions.into_iter().map(|s| s.header.id).collect()
}

fn rejected_reason(store: &DshStore, needle: &str) -> String {
    let listing = store.list().unwrap();
    listing
        .rejected
        .iter()
        .find(|r| r.path.to_string_lossy().contains(needle))
        .unwrap_or_else(|| panic!("{needle} not rejected: {:?}", listing.rejected))
        .reason
        .clone()
}

#[test]
fn open_needs_a_readable_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = DshStore::open(tmp.path().join("nope")).unwrap_err();
    assert!(missing.to_string().contains("nope"), "{missing}");
    let file = tmp.path().join("file");
    fs::write(&file, "x").unwrap();
    assert!(DshStore::open(&file).unwrap_err().to_string().contains("not a directory"));
    let store = DshStore::open(tmp.path()).unwrap();
    assert_eq!(store.list().unwrap(), Default::default());
}

#[test]
fn header_that_is_not_json_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    healthy(tmp.path());
    write_log(tmp.path(), "bad", None, "{not json\n");
    let store = DshStore::open(tmp.path()).unwrap();
    assert_eq!(listed_ids(&store), vec!["healthy"]);
    assert!(rejected_reason(&store, "bad").contains("not a JSON object"));
    assert_eq!(store.read_surface_json("bad").unwrap_err().kind(), StoreErrorKind::NotFound);
}

#[test]
fn empty_log_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    healthy(tmp.path());
    write_log(tmp.path(), "empty", None, "");
    let store = DshStore::open(tmp.path()).unwrap();
    assert_eq!(listed_ids(&store), vec!["healthy"]);
    assert!(rejected_reason(&store, "empty").contains("no header"));
    let err = store.read_title("empty").unwrap_err();
    assert_eq!(err.kind(), StoreErrorKind::NotFound);
    assert!(err.message().contains("no header"), "{err}");
}

#[test]
fn header_id_or_cwd_that_does_not_match_the_path_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    healthy(tmp.path());
    // The directory says "other", the header says "impostor".
    let dir = log_dir(tmp.path(), "other", None);
    fs::write(dir.join("session.jsonl"), header("impostor", 1, None)).unwrap();
    // Right id, wrong project (cwd /x lives under --x--).
    let dir = log_dir(tmp.path(), "moved", Some("/y"));
    fs::write(dir.join("session.jsonl"), header("moved", 1, Some("/x"))).unwrap();
    let store = DshStore::open(tmp.path()).unwrap();
    assert_eq!(listed_ids(&store), vec!["healthy"]);
    assert!(rejected_reason(&store, "other").contains("expected _no-cwd/impostor/session.jsonl"));
    assert!(rejected_reason(&store, "moved").contains("expected --x--/moved/session.jsonl"));
    assert_eq!(store.read_surface_json("impostor").unwrap_err().kind(), StoreErrorKind::NotFound);
    assert_eq!(store.read_surface_json("moved").unwrap_err().kind(), StoreErrorKind::NotFound);
}

#[test]
fn invalid_headers_are_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("v1", r#"{"type":"session","version":1,"id":"v1","createdAt":1}"#, "version"),
        ("notype", r#"{"version":0,"id":"notype","createdAt":1}"#, "not a session header"),
        ("neg", r#"{"type":"session","version":0,"id":"neg","createdAt":-1}"#, "createdAt"),
        ("emptycwd", r#"{"type":"session","version":0,"id":"emptycwd","createdAt":1,"cwd":""}"#, "cwd"),
        ("array", r#"[1,2]"#, "JSON object"),
    ];
    for (id, line, _) in cases {
        write_log(tmp.path(), id, None, &format!("{line}\n"));
    }
    write_log(tmp.path(), "partial", None, r#"{"type":"session","version":0,"id":"partial","createdAt":1}"#);
    let store = DshStore::open(tmp.path()).unwrap();
    assert!(listed_ids(&store).is_empty());
    for (id, _, why) in cases {
        assert!(rejected_reason(&store, id).contains(why), "{id}");
    }
    assert!(rejected_reason(&store, "partial").contains("incomplete"));
}

#[test]
fn duplicate_ids_keep_the_first_log_in_path_order() {
    let tmp = tempfile::tempdir().unwrap();
    // Same id under two project dirs: the header's cwd decides which path is
    // right, so only a header whose cwd matches is valid; make both valid by
    // writing ids whose derived session dir coincides.
    write_log(tmp.path(), "dup", Some("/a"), &(header("dup", 2, Some("/a")) + &user(0, "first")));
    write_log(tmp.path(), "dup", Some("/b"), &(header("dup", 3, Some("/b")) + &user(0, "second")));
    let store = DshStore::open(tmp.path()).unwrap();
    let listing = store.list().unwrap();
    assert_eq!(listing.sessions.len(), 1);
    assert_eq!(listing.sessions[0].header.cwd.as_deref(), Some("/a"));
    assert!(rejected_reason(&store, "--b--").contains("duplicate session id"));
    let surface: Value = serde_json::from_slice(&store.read_surface_json("dup").unwrap()).unwrap();
    assert_eq!(surface["events"][0]["data"]["content"][0]["text"], "first");
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_root_are_not_followed() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    healthy(tmp.path());
    // A real session outside the root...
    let body = header("secret", 9, Some("/s")) + &user(0, "outside the root");
    let real = write_log(outside.path(), "secret", Some("/s"), &body);
    // ...linked in as a project dir, as a session dir and as a log file.
    symlink(outside.path().join("--s--"), tmp.path().join("--s--")).unwrap();
    let proj = tmp.path().join("--t--");
    fs::create_dir_all(&proj).unwrap();
    symlink(real.parent().unwrap(), proj.join("linked")).unwrap();
    let dir = log_dir(tmp.path(), "filelink", Some("/u"));
    symlink(&real, dir.join("session.jsonl")).unwrap();
    let store = DshStore::open(tmp.path()).unwrap();
    assert_eq!(listed_ids(&store), vec!["healthy"]);
    let listing = store.list().unwrap();
    let links: Vec<_> = listing.rejected.iter().filter(|r| r.reason.contains("symbolic link")).collect();
    assert_eq!(links.len(), 3, "{:?}", listing.rejected);
    assert_eq!(store.read_surface_json("secret").unwrap_err().kind(), StoreErrorKind::NotFound);
    assert_eq!(store.read_title("filelink").unwrap_err().kind(), StoreErrorKind::NotFound);
}

#[cfg(unix)]
#[test]
fn a_fifo_in_place_of_a_log_does_not_hang() {
    let tmp = tempfile::tempdir().unwrap();
    healthy(tmp.path());
    let dir = log_dir(tmp.path(), "fifo", None);
    let path = dir.join("session.jsonl");
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
    let store = DshStore::open(tmp.path()).unwrap();
    assert_eq!(listed_ids(&store), vec!["healthy"]);
    assert!(rejected_reason(&store, "fifo").contains("not a regular file"));
    assert_eq!(store.read_surface_json("fifo").unwrap_err().kind(), StoreErrorKind::NotFound);
}

#[cfg(unix)]
extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
}

#[test]
fn a_root_that_mixes_encodings_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    healthy(tmp.path());
    let dir = log_dir(tmp.path(), "z", None);
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    enc.write_all(header("z", 1, None).as_bytes()).unwrap();
    fs::write(dir.join("session.jsonl.zstd"), enc.finish().unwrap()).unwrap();
    let store = DshStore::open(tmp.path()).unwrap();
    assert!(store.list().unwrap_err().to_string().contains("mixes"));
    // Reads apply the same rule: each session of such a root is refused too.
    for read in [store.read_title("healthy").err(), store.read_surface_json("z").err(), store.inspect("healthy").err()]
    {
        let err = read.expect("a read of a mixed root fails");
        assert_eq!(err.kind(), StoreErrorKind::Corrupt);
        assert!(err.message().contains("mixes"), "{err}");
    }
    // A fresh store (no remembered verdict) refuses a read before any listing.
    let fresh = DshStore::open(tmp.path()).unwrap();
    assert!(fresh.read_surface_json("healthy").unwrap_err().message().contains("mixes"));
}

#[test]
fn garbage_and_truncated_zstd_headers_are_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path(), "garbage", None);
    fs::write(dir.join("session.jsonl.zstd"), b"this is not zstd at all\n").unwrap();
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    enc.include_checksum(true).unwrap();
    enc.write_all(header("cut", 1, None).as_bytes()).unwrap();
    let frame = enc.finish().unwrap();
    let dir = log_dir(tmp.path(), "cut", None);
    fs::write(dir.join("session.jsonl.zstd"), &frame[..frame.len() - 6]).unwrap();
    let store = DshStore::open(tmp.path()).unwrap();
    assert!(listed_ids(&store).is_empty());
    assert!(rejected_reason(&store, "garbage").contains("not a Zstandard frame"));
    assert!(rejected_reason(&store, "cut").contains("no header"));
}

#[test]
fn invalid_folds_and_gaps() {
    let tmp = tempfile::tempdir().unwrap();
    let h = |id: &str| header(id, 1, None);
    let no_marker = format!("{}\n", json!({"type": "assistant/message", "seq": 1, "data": {}}));
    write_log(tmp.path(), "nomarker", None, &(h("nomarker") + &user(0, "a") + &no_marker));
    let bad_replace = format!(
        "{}\n",
        json!({"type": "user/message", "seq": 1, "data": {}, "surfaceOp": {"op": "replace", "start": 7, "end": 7}})
    );
    write_log(tmp.path(), "badreplace", None, &(h("badreplace") + &user(0, "a") + &bad_replace));
    let backwards = format!(
        "{}\n",
        json!({"type": "user/message", "seq": 2, "data": {}, "surfaceOp": {"op": "replace", "start": 1, "end": 0}})
    );
    write_log(tmp.path(), "backwards", None, &(h("backwards") + &user(0, "a") + &user(1, "b") + &backwards));
    // A gap with no later turn/end is a torn tail: the prefix is kept.
    write_log(tmp.path(), "gap-tail", None, &(h("gap-tail") + &user(0, "a") + &user(2, "c") + &event(3, "x")));
    // A gap before a turn/end is corruption.
    write_log(tmp.path(), "gap", None, &(h("gap") + &user(0, "a") + &user(2, "c") + &event(3, "turn/end")));
    // A garbage line before a turn/end too.
    write_log(tmp.path(), "garbage", None, &(h("garbage") + &user(0, "a") + "}{\n" + &event(1, "turn/end")));
    let store = DshStore::open(tmp.path()).unwrap();
    assert_eq!(listed_ids(&store).len(), 6, "damaged sessions are still listed");
    for (id, why) in [
        ("nomarker", "has no surfaceOp"),
        ("badreplace", "not on the surface"),
        ("backwards", "after its end"),
        ("gap", "expected 1, got 2"),
        ("garbage", "committed region"),
    ] {
        let err = store.read_surface_json(id).unwrap_err();
        assert_eq!(err.kind(), StoreErrorKind::Corrupt, "{id}");
        assert!(err.message().contains(why), "{id}: {err}");
        assert!(store.read_title(id).is_err());
    }
    let surface: Value = serde_json::from_slice(&store.read_surface_json("gap-tail").unwrap()).unwrap();
    assert_eq!(surface["capturedThroughSeq"], 0);
    assert_eq!(surface["events"].as_array().unwrap().len(), 1);
}

#[test]
fn header_only_log_has_null_captured_through_seq() {
    let tmp = tempfile::tempdir().unwrap();
    write_log(tmp.path(), "fresh", Some("/w"), &header("fresh", 1, Some("/w")));
    let store = DshStore::open(tmp.path()).unwrap();
    let surface: Value = serde_json::from_slice(&store.read_surface_json("fresh").unwrap()).unwrap();
    assert_eq!(
        surface,
        json!({"session": {"version": 0, "id": "fresh", "createdAt": 1, "cwd": "/w", "delegationDepth": 0},
               "capturedThroughSeq": null, "events": []})
    );
    assert_eq!(store.read_title("fresh").unwrap(), None);
}

#[test]
fn open_tool_calls_get_closers() {
    let tmp = tempfile::tempdir().unwrap();
    let call = format!("{}\n", json!({"type": "tool/call", "seq": 3, "data": {"callId": "c1"}}));
    let body = header("open", 1, None) + &event(0, "turn/start") + &event(1, "step/start") + &user(2, "q") + &call;
    write_log(tmp.path(), "open", None, &body);
    let store = DshStore::open(tmp.path()).unwrap();
    let stats = store.inspect("open").unwrap();
    assert_eq!(stats.recovery_closers, vec!["tool/result", "step/end", "turn/end"]);
    assert_eq!(stats.captured_through_seq, Some(6));
    assert_eq!(stats.surface_seqs, vec![2]);
}

#[test]
fn listing_order_is_newest_first_then_id() {
    let tmp = tempfile::tempdir().unwrap();
    for (id, at) in [("b", 1), ("a", 1), ("c", 2), ("é", 1), ("Z", 1)] {
        write_log(tmp.path(), id, None, &header(id, at, None));
    }
    let store = DshStore::open(tmp.path()).unwrap();
    assert_eq!(listed_ids(&store), vec!["c", "Z", "a", "b", "é"]);
}

/// A log of about 100 MB: many chunk events and a few large messages.
#[test]
fn a_100_mb_log_reads_in_bounded_time_and_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let path = log_dir(tmp.path(), "big", None).join("session.jsonl");
    let mut out = std::io::BufWriter::new(fs::File::create(&path).unwrap());
    out.write_all(header("big", 1, None).as_bytes()).unwrap();
    let filler = "x".repeat(1000);
    let mut seq = 0u64;
    let mut written = 0usize;
    while written < 100 << 20 {
        let line = if seq % 1000 == 0 {
            user(seq, &format!("message {seq} {filler}"))
        } else {
            format!(
                "{}\n",
                json!({"type": "assistant/chunk", "seq": seq, "time": seq, "data": {"chunk": {"type": "text-delta", "text": filler}}})
            )
        };
        out.write_all(line.as_bytes()).unwrap();
        written += line.len();
        seq += 1;
    }
    drop(out);
    let store = DshStore::open(tmp.path()).unwrap();
    let started = Instant::now();
    assert_eq!(listed_ids(&store), vec!["big"]);
    assert_eq!(store.read_title("big").unwrap(), None);
    let surface = store.read_surface_json("big").unwrap();
    let parsed: Value = serde_json::from_slice(&surface).unwrap();
    assert_eq!(parsed["capturedThroughSeq"], seq - 1);
    assert_eq!(parsed["events"].as_array().unwrap().len() as u64, seq.div_ceil(1000));
    // Only the surface is held: about 1 KB per message, not the whole log.
    assert!(surface.len() < 1 << 20, "{}", surface.len());
    let resolver = Resolver::new(Arc::new(store), Config::default());
    let prepared = block_on(resolver.prepare(
        &Target::new("t", None),
        &json!("go"),
        &[json!({"sessionId": "big"})],
        &PrepareOptions::default(),
        None,
    ))
    .unwrap();
    assert!(prepared.additional_context.is_some());
    assert!(started.elapsed() < Duration::from_secs(300));
}

/// One line of 100 MB: longer than the line limit, so the log is unreadable
/// (without first buffering the whole line), and the listing is unaffected.
#[test]
fn a_100_mb_line_is_refused_without_holding_it() {
    let tmp = tempfile::tempdir().unwrap();
    healthy(tmp.path());
    let path = log_dir(tmp.path(), "wide", None).join("session.jsonl");
    let mut out = std::io::BufWriter::new(fs::File::create(&path).unwrap());
    out.write_all(header("wide", 1, None).as_bytes()).unwrap();
    out.write_all(br#"{"type":"x","seq":0,"data":""#).unwrap();
    let chunk = vec![b'y'; 1 << 20];
    for _ in 0..100 {
        out.write_all(&chunk).unwrap();
    }
    out.write_all(b"\"}\n").unwrap();
    drop(out);
    let store = DshStore::open(tmp.path()).unwrap();
    assert_eq!(listed_ids(&store), vec!["healthy", "wide"]);
    let err = store.read_surface_json("wide").unwrap_err();
    assert!(err.message().contains("longer than"), "{err}");
    // A huge header line is refused at listing.
    let path = log_dir(tmp.path(), "hugeheader", None).join("session.jsonl");
    let mut out = std::io::BufWriter::new(fs::File::create(&path).unwrap());
    for _ in 0..8 {
        out.write_all(&chunk).unwrap();
    }
    drop(out);
    assert!(rejected_reason(&store, "hugeheader").contains("longer than"));
}

#[test]
fn reads_run_in_parallel_through_the_resolver() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..3 {
        let id = format!("s{i}");
        let body = header(&id, i, None) + &user(0, &format!("hello from {id}"));
        write_log(tmp.path(), &id, None, &body);
    }
    let store = DshStore::open(tmp.path()).unwrap();
    let resolver = Resolver::new(Arc::new(store), Config::default());
    let refs: Vec<Value> = (0..3).map(|i| json!({"sessionId": format!("s{i}")})).collect();
    let prepared =
        block_on(resolver.prepare(&Target::new("t", None), &json!("go"), &refs, &PrepareOptions::default(), None))
            .unwrap();
    let text = prepared.additional_context.unwrap().prompt;
    for i in 0..3 {
        assert!(text.contains(&format!("hello from s{i}")));
    }
    let err = block_on(resolver.prepare(
        &Target::new("t", None),
        &json!("go"),
        &[json!({"sessionId": "missing"})],
        &PrepareOptions::default(),
        None,
    ))
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ReadFailed);
}

/// Many sessions list quickly when titles are not needed.
#[test]
fn a_large_root_lists_quickly() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 10_000u64;
    for i in 0..n {
        let id = format!("session-{i:05}");
        write_log(tmp.path(), &id, Some("/w"), &(header(&id, i, Some("/w")) + &user(0, "x")));
    }
    let store = DshStore::open(tmp.path()).unwrap();
    let started = Instant::now();
    let listing = store.list().unwrap();
    let elapsed = started.elapsed();
    assert_eq!(listing.sessions.len() as u64, n);
    assert_eq!(listing.sessions[0].header.id, "session-09999");
    eprintln!("listed {n} sessions in {elapsed:?}");
    // Generous for unoptimized test builds on a shared machine.
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
}

/// Without a watcher, a read looks first where the last listing found the
/// session: a log still there (its directory read again) is read at once;
/// one that moved is found by walking the root; a duplicate id made since
/// in an earlier directory is seen from the next listing on, as the
/// listing sees it.
#[test]
fn a_read_looks_where_the_last_listing_found_the_session_first() {
    let tmp = tempfile::tempdir().unwrap();
    let store = DshStore::open(tmp.path()).unwrap().with_watching(false);
    let text = |store: &DshStore, id: &str| -> Value {
        let surface: Value = serde_json::from_slice(&store.read_surface_json(id).unwrap()).unwrap();
        surface["events"][0]["data"]["content"][0]["text"].clone()
    };
    write_log(tmp.path(), "moves", Some("/m"), &(header("moves", 1, Some("/m")) + &user(0, "at m")));
    write_log(tmp.path(), "dup", Some("/b"), &(header("dup", 2, Some("/b")) + &user(0, "at b")));
    assert_eq!(listed_ids(&store), vec!["dup", "moves"]);
    assert_eq!(text(&store, "moves"), "at m");
    // Moved to another project directory since the listing: walked to.
    fs::remove_dir_all(tmp.path().join(project_dir_name(Some("/m")))).unwrap();
    write_log(tmp.path(), "moves", Some("/n"), &(header("moves", 1, Some("/n")) + &user(0, "at n")));
    assert_eq!(text(&store, "moves"), "at n");
    // Gone: not found.
    fs::remove_dir_all(tmp.path().join(project_dir_name(Some("/n")))).unwrap();
    assert_eq!(store.read_surface_json("moves").unwrap_err().kind(), StoreErrorKind::NotFound);
    // A duplicate made since in an earlier directory: the listed log until
    // the next listing, which keeps the first in path order.
    write_log(tmp.path(), "dup", Some("/a"), &(header("dup", 2, Some("/a")) + &user(0, "at a")));
    assert_eq!(text(&store, "dup"), "at b");
    assert_eq!(listed_ids(&store), vec!["dup"]);
    assert_eq!(text(&store, "dup"), "at a");
}
