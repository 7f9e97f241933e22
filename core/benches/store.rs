//! The embedded DSH store: reading the surface of a big zstd log of format
//! v0 and of format v4 (target: at least 300 MB/s of decompressed log for
//! each), and listing a root of many sessions (headers only).
//!
//! Run: `cargo bench -p dsh-session-reference --bench store`
//! (`-- --quick` for a 20 MB log and 2,000 sessions).
//!
//! Logs are generated deterministically in a temporary directory, in DSH's
//! layout: a header frame, then one zstd frame per batch of 64 lines.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use dsh_session_reference::sources::dsh::DshStore;
use serde_json::json;

fn line(v: serde_json::Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

/// Writes `<root>/--work--/<id>/session.jsonl.zstd` (format v0) with
/// about `target` bytes of decompressed log; returns the decompressed size.
fn write_log(root: &Path, id: &str, created: u64, target: usize) -> usize {
    let dir = root.join("--work--").join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let mut out = std::fs::File::create(dir.join("session.jsonl.zstd")).unwrap();
    let header = line(json!({"type": "session", "version": 0, "id": id, "createdAt": created, "cwd": "/work",
                             "delegationDepth": 0}));
    out.write_all(&zstd::bulk::compress(header.as_bytes(), 3).unwrap()).unwrap();
    let mut total = header.len();
    let (mut seq, mut turn, mut batch) = (0u64, 0u64, String::new());
    let text = |i: u64, n: usize| -> String {
        format!("turn {i}: reading the parser, <tags> and \"quotes\" in the output ").chars().cycle().take(n).collect()
    };
    while total < target {
        turn += 1;
        let events = [
            json!({"type": "turn/start", "seq": seq, "time": seq, "data": {"turn": turn}}),
            json!({"type": "user/message", "seq": seq + 1, "time": seq, "data": {"id": format!("u{turn}"), "role": "user",
                "content": [{"type": "text", "text": text(turn, 300)}], "source": {"kind": "user"}}, "surfaceOp": "append"}),
            json!({"type": "assistant/message", "seq": seq + 2, "time": seq, "data": {"turn": turn, "step": 1,
                "message": {"id": format!("a{turn}"), "role": "assistant", "content": [
                    {"type": "reasoning", "text": text(turn, 200)}, {"type": "text", "text": text(turn, 400)},
                    {"type": "tool-call", "id": format!("c{turn}"), "name": "read", "arguments": {"path": "src/lib.rs"}}],
                "source": {"kind": "model", "provider": "p", "model": "m"}}}, "surfaceOp": "append"}),
            json!({"type": "tool/result", "seq": seq + 3, "time": seq, "data": {"turn": turn, "step": 1, "message": {
                "id": format!("t{turn}"), "role": "user", "content": [{"type": "tool-result", "toolCallId": format!("c{turn}"),
                "content": [{"type": "text", "text": text(turn, 3000)}], "isError": false}],
                "source": {"kind": "tool", "callId": format!("c{turn}")}}}, "surfaceOp": "append"}),
            json!({"type": "turn/end", "seq": seq + 4, "time": seq, "data": {"turn": turn, "reason": "completed"}}),
        ];
        seq += 5;
        for e in events {
            let l = line(e);
            total += l.len();
            batch.push_str(&l);
        }
        if turn % 13 == 0 {
            flush(&mut out, &mut batch);
        }
    }
    flush(&mut out, &mut batch);
    total
}

/// Writes `<root>/--work--/<id>/session.v4.jsonl.zstd` (format v4, as DSH
/// 0.2 writes it: a system head, nested streams, tool results with role
/// `tool`, a tool call per turn) with about `target` bytes of decompressed
/// log; returns the decompressed size.
fn write_v4_log(root: &Path, id: &str, created: u64, target: usize) -> usize {
    let dir = root.join("--work--").join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let mut out = std::fs::File::create(dir.join("session.v4.jsonl.zstd")).unwrap();
    let header = line(json!({"type": "session", "version": 4, "id": id, "createdAt": created, "cwd": "/work",
                             "isSeeded": false, "delegationDepth": 0}));
    out.write_all(&zstd::bulk::compress(header.as_bytes(), 3).unwrap()).unwrap();
    let mut total = header.len();
    let (mut seq, mut turn, mut batch) = (0u64, 0u64, String::new());
    let text = |i: u64, n: usize| -> String {
        format!("turn {i}: reading the parser, <tags> and \"quotes\" in the output ").chars().cycle().take(n).collect()
    };
    let model = json!({"kind": "model", "provider": "p", "model": "m"});
    while total < target {
        turn += 1;
        let mut events = Vec::new();
        if turn == 1 {
            events.push(json!({"type": "system/message", "data": {"turn": 1, "step": 1, "message": {"role": "system",
                "content": [{"type": "text", "text": "You are DSH."}], "source": {"kind": "system-prompt"},
                "id": "s0"}}, "surfaceOp": "append"}));
        }
        let call = format!("c{turn}");
        events.extend([
            json!({"type": "turn/start", "data": {"turn": turn}}),
            json!({"type": "step/start", "data": {"turn": turn, "step": 1}}),
            json!({"type": "user/message", "data": {"content": [{"type": "text", "text": text(turn, 300)}],
                "source": {"kind": "user"}, "role": "user", "id": format!("u{turn}")}, "surfaceOp": "append"}),
            json!({"type": "assistant/message", "data": {"turn": turn, "step": 1, "message": {"role": "assistant",
                "content": [{"type": "reasoning", "text": text(turn, 200)}, {"type": "text", "text": text(turn, 400)},
                    {"type": "tool-call", "id": call, "name": "read", "arguments": "{\"path\":\"src/lib.rs\"}"}],
                "source": model, "id": format!("a{turn}")}, "usage": {"inputTokens": 3, "outputTokens": 3},
                "stream": [{"type": "text-chunks", "time0": seq, "index": 1, "dt": [0, 0],
                            "texts": [text(turn, 200), text(turn, 200)]},
                           {"type": "chunk", "time": seq, "chunk": {"type": "finish", "reason": {"kind": "tool-calls"}}}]},
                "surfaceOp": "append"}),
            json!({"type": "tool/call", "data": {"turn": turn, "step": 1, "callId": call, "name": "read",
                "arguments": "{\"path\":\"src/lib.rs\"}"}}),
            json!({"type": "tool/result", "data": {"turn": turn, "step": 1, "message": {"role": "tool",
                "source": {"kind": "tool", "callId": call}, "toolCallId": call,
                "content": [{"type": "text", "text": text(turn, 3000)}], "isError": false, "id": format!("t{turn}")}},
                "sourceEventSeqs": [seq + events.len() as u64 + 4], "surfaceOp": "append"}),
            json!({"type": "step/end", "data": {"turn": turn, "step": 1}}),
            json!({"type": "turn/end", "data": {"turn": turn, "reason": {"kind": "completed"}}}),
        ]);
        for mut e in events {
            // `{type, seq, time, data, ...}`, DSH's key order.
            let mut ordered = serde_json::Map::new();
            ordered.insert("type".into(), e["type"].take());
            ordered.insert("seq".into(), json!(seq));
            ordered.insert("time".into(), json!(seq));
            for (k, v) in e.as_object_mut().unwrap().iter_mut() {
                if k != "type" {
                    ordered.insert(k.clone(), v.take());
                }
            }
            seq += 1;
            let l = line(serde_json::Value::Object(ordered));
            total += l.len();
            batch.push_str(&l);
        }
        if turn % 13 == 0 {
            flush(&mut out, &mut batch);
        }
    }
    flush(&mut out, &mut batch);
    total
}

/// One surface read of `id`, timed.
fn read_once(store: &DshStore, id: &str, size: usize) -> Duration {
    let t = Instant::now();
    let surface = store.read_surface_json(id).unwrap();
    assert!(surface.len() > size / 2);
    t.elapsed()
}

/// Writes `batch` as one zstd frame (nothing when empty) and clears it.
fn flush(out: &mut std::fs::File, batch: &mut String) {
    if !batch.is_empty() {
        out.write_all(&zstd::bulk::compress(batch.as_bytes(), 3).unwrap()).unwrap();
        batch.clear();
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (log_mb, sessions, reps) = if quick { (20, 2_000, 3) } else { (100, 10_000, 5) };

    let dir = tempfile::tempdir().unwrap();
    let size = write_log(dir.path(), "big", 1, log_mb << 20);
    let v4_dir = tempfile::tempdir().unwrap();
    let v4_size = write_v4_log(v4_dir.path(), "big-v4", 1, log_mb << 20);
    let (store, v4_store) = (DshStore::open(dir.path()).unwrap(), DshStore::open(v4_dir.path()).unwrap());
    assert_eq!(v4_store.inspect("big-v4").unwrap().generation, 4);
    // Alternately, so that both see the same machine load.
    let (mut v0_runs, mut v4_runs) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        v0_runs.push(read_once(&store, "big", size));
        v4_runs.push(read_once(&v4_store, "big-v4", v4_size));
    }
    for (name, size, runs) in [("v0", size, v0_runs), ("v4", v4_size, v4_runs)] {
        let read = median(runs);
        println!(
            "surface of a {:.0} MB {name} zstd log: {:.1} ms, {:.0} MB/s of decompressed log (target: at least 300 MB/s)",
            size as f64 / 1e6,
            read.as_secs_f64() * 1e3,
            size as f64 / 1e6 / read.as_secs_f64()
        );
    }

    let root = tempfile::tempdir().unwrap();
    for i in 0..sessions {
        write_log(root.path(), &format!("session-{i:05}"), 1_700_000_000_000 + i as u64, 0);
    }
    let store = DshStore::open(root.path()).unwrap();
    let times: Vec<Duration> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            let listing = store.list().unwrap();
            assert_eq!(listing.sessions.len(), sessions);
            t.elapsed()
        })
        .collect();
    println!(
        "listing {sessions} sessions (headers only): {:.1} ms (target: under 200 ms for 10,000)",
        median(times).as_secs_f64() * 1e3
    );
}
