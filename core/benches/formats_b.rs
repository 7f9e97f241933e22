//! The SQLite and Cline sources (issue 26, "formats B"): listing an
//! OpenCode database of 5,000 sessions, the fingerprints of all of them,
//! and reading one session of about 100 MB of rows.
//!
//! Run: `cargo bench -p dsh-session-reference --bench formats_b`
//! (`-- --quick` for 1,000 sessions and 20 MB).
//!
//! Inputs are generated deterministically in a temporary directory, shaped
//! like OpenCode's rows: per turn a user message with a text part, an
//! assistant message with step, reasoning, tool (1 KB output) and text parts.

use std::path::Path;
use std::time::{Duration, Instant};

use dsh_session_reference::sources::opencode::{Flavor, OpenCodeSource};
use dsh_session_reference::{BlockingSessionQuery, SurfaceData};
use rusqlite::Connection;
use serde_json::json;

fn text(i: usize, n: usize) -> String {
    format!("turn {i}: reading the parser, <tags> and \"quotes\" in the output; ").chars().cycle().take(n).collect()
}

const SCHEMA: &str = include_str!("../../tests/fixtures/foreign-logs/opencode/schema.sql");

/// Adds session `s` with `turns` turns to the database.
fn opencode_session(conn: &Connection, s: usize, turns: usize, tool_bytes: usize) {
    let sid = format!("ses_{s:06}");
    let t0 = 1_767_000_000_000i64 + s as i64 * 1000;
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) \
         VALUES (?1, 'prj', 'slug', ?2, ?3, '1.14.2', ?4, ?4)",
        (&sid, format!("/work/p{}", s % 50), format!("Session {s}"), t0),
    )
    .unwrap();
    let mut msg = conn.prepare_cached("INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)").unwrap();
    let mut part = conn.prepare_cached("INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)").unwrap();
    for i in 0..turns {
        let t = t0 + i as i64 * 2;
        let (u, a) = (format!("msg_{s:06}_{i:06}u"), format!("msg_{s:06}_{i:06}a"));
        let user = json!({"role": "user", "time": {"created": t}, "agent": "build",
            "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4"}});
        msg.execute((&u, &sid, t, user.to_string())).unwrap();
        part.execute((format!("prt_{u}1"), &u, &sid, t, json!({"type": "text", "text": text(i, 300)}).to_string()))
            .unwrap();
        let asst = json!({"role": "assistant", "time": {"created": t + 1, "completed": t + 1}, "parentID": u,
            "modelID": "claude-sonnet-4", "providerID": "anthropic", "mode": "build", "agent": "build",
            "path": {"cwd": "/work", "root": "/work"}, "cost": 0.01,
            "tokens": {"input": 100, "output": 50, "reasoning": 10, "cache": {"read": 0, "write": 0}}, "finish": "stop"});
        msg.execute((&a, &sid, t + 1, asst.to_string())).unwrap();
        let parts = [
            json!({"type": "step-start", "snapshot": "4b825dc6"}),
            json!({"type": "reasoning", "text": text(i, 400), "time": {"start": t, "end": t}}),
            json!({"type": "tool", "callID": format!("c{i}"), "tool": "read", "state": {"status": "completed",
                "input": {"filePath": "/work/src/lib.rs"}, "output": text(i, tool_bytes), "title": "lib.rs",
                "metadata": {}, "time": {"start": t, "end": t}}}),
            json!({"type": "text", "text": text(i, 400)}),
        ];
        for (k, p) in parts.iter().enumerate() {
            part.execute((format!("prt_{a}{k}"), &a, &sid, t + 1, p.to_string())).unwrap();
        }
    }
}

fn build(path: &Path, sessions: usize, turns: usize, big_turns: usize) {
    let conn = Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute_batch("INSERT INTO project VALUES ('prj', '/work', 'git', NULL, 0, 0); BEGIN").unwrap();
    for s in 0..sessions {
        opencode_session(&conn, s, turns, 1000);
    }
    opencode_session(&conn, sessions, big_turns, 16_000);
    conn.execute_batch("COMMIT").unwrap();
}

fn best(rounds: usize, mut f: impl FnMut()) -> Duration {
    (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (sessions, turns, big_turns) = if quick { (1_000, 10, 1_000) } else { (5_000, 10, 5_000) };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    let t = Instant::now();
    build(&db, sessions, turns, big_turns);
    let size = std::fs::metadata(&db).unwrap().len();
    println!(
        "opencode.db: {sessions} sessions of {turns} turns + one of {big_turns}: {:.0} MB, built in {:.1} s",
        size as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    // Cold: a new source (no memo) on a database no connection has open.
    let cold = best(5, || {
        let s = OpenCodeSource::open(&db, Flavor::OpenCode).unwrap();
        assert_eq!(s.list_sessions().unwrap().len(), sessions + 1);
    });
    println!("list {} sessions (new source each time): {:.1} ms", sessions + 1, ms(cold));
    let shared_cold = best(5, || {
        let s = OpenCodeSource::open(&db, Flavor::OpenCode).unwrap();
        let l = s.shared_listing().unwrap().unwrap();
        assert!(l.fingerprints().iter().all(Option::is_some));
    });
    println!("list + fingerprint every session (new source): {:.1} ms", ms(shared_cold));
    let source = OpenCodeSource::open(&db, Flavor::OpenCode).unwrap();
    source.shared_listing().unwrap();
    let shared_warm = best(5, || {
        source.shared_listing().unwrap().unwrap();
    });
    println!("list + fingerprints, database unchanged (memo): {:.1} ms", ms(shared_warm));

    let big = format!("opencode:ses_{sessions:06}");
    let mut rows_bytes = 0u64;
    {
        let conn = Connection::open(&db).unwrap();
        let n: i64 = conn
            .query_row(
                "SELECT (SELECT sum(length(data)) FROM message WHERE session_id = ?1) + \
                 (SELECT sum(length(data)) FROM part WHERE session_id = ?1)",
                [&big["opencode:".len()..]],
                |r| r.get(0),
            )
            .unwrap();
        rows_bytes += n as u64;
    }
    let mut items = 0;
    let read = best(3, || {
        let SurfaceData::Conversation(c) = source.read_surface(&big).unwrap() else { panic!() };
        items = c.items.len();
    });
    println!(
        "read one session of {:.0} MB of rows ({items} items): {:.0} ms, {:.0} MB/s",
        rows_bytes as f64 / 1e6,
        ms(read),
        rows_bytes as f64 / 1e6 / read.as_secs_f64()
    );
}
