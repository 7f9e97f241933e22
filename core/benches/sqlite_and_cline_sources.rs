//! The SQLite and Cline sources: listing an
//! OpenCode database of 5,000 sessions, the fingerprints of all of them,
//! and reading one session of about 100 MB of rows; listing 10,000 Cline
//! and 10,000 Roo Code tasks, and reading a 100 MB history of each (against
//! reading its bytes alone in the same run); listing 10,000 Cline CLI
//! sessions and reading a 100 MB one whose compaction sidecar replaces most
//! of it (its prefix hashed); then 5,000 sessions of each SQLite kind listed
//! by a new source, and one session of about 100 MB of each read (one row
//! of [`SQLITE`] per kind: OpenCode, Kilo and Warp generated, Goose, Crush,
//! Zed and Hermes listings copies of a fixture session; each large session
//! generated in its kind's schema, turns shaped as OpenCode's; Warp's and
//! Zed's, kept in one row, at most 60 MB).
//!
//! Run: `cargo bench -p dsh-session-reference --bench sqlite_and_cline_sources`
//! (`-- --quick` for 1,000 sessions and 20 MB; `-- --cline`,
//! `-- --cline-cli`, `-- --opencode`, `-- --sqlite` (the SQLite kinds'
//! listings) or `-- --reads` (their large sessions' reads) for one part;
//! with `--sqlite` or `--reads`, kind names (`goose zed`) for those kinds
//! only).
//!
//! Inputs are generated deterministically in a temporary directory, shaped
//! like OpenCode's rows: per turn a user message with a text part, an
//! assistant message with step, reasoning, tool (1 KB output) and text parts.

mod common;
#[path = "../tests/support/sqlite_fixtures.rs"]
mod sqlite_fixtures;
/// Protobuf's wire format (shared with the other tests that write Warp's tasks).
#[allow(dead_code)]
mod pb {
    include!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/protobuf.rs"));
}

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::cpu_time;

use dsh_session_reference::sources::cline::cli::CliSource;
use dsh_session_reference::sources::cline::{self, ClineSource};
use dsh_session_reference::sources::crush::CrushSource;
use dsh_session_reference::sources::goose::GooseSource;
use dsh_session_reference::sources::hermes::HermesSource;
use dsh_session_reference::sources::opencode::{Flavor, OpenCodeSource};
use dsh_session_reference::sources::warp::WarpSource;
use dsh_session_reference::sources::zed::ZedSource;
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
    let mut msg = conn.prepare("INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)").unwrap();
    let mut part = conn.prepare("INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)").unwrap();
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

/// The best wall time of `rounds` runs of `f`, and the least CPU time
/// (user + system, all threads of the process) one took: on a machine
/// shared with other work, the CPU time grows much less with the load.
fn best(rounds: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    let (mut wall, mut cpu) = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        let (t, c) = (Instant::now(), cpu_time());
        f();
        cpu = cpu.min(cpu_time() - c);
        wall = wall.min(t.elapsed());
    }
    (wall, cpu)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A Cline history of about `target` bytes, shaped like Cline's: a task
/// with environment details, assistant text with XML tool calls, tool
/// results as text blocks, feedback now and then.
fn cline_history(target: usize) -> String {
    let env =
        format!("<environment_details>\n# VSCode Visible Files\nsrc/lib.rs\n{}\n</environment_details>", text(0, 600));
    let mut out = String::with_capacity(target + (1 << 20));
    out.push('[');
    let mut i = 0;
    while out.len() < target {
        let user = if i == 0 {
            json!({"role": "user", "content": [{"type": "text", "text": format!("<task>\n{}\n</task>", text(i, 300))}, {"type": "text", "text": env}]})
        } else if i % 10 == 0 {
            json!({"role": "user", "content": [{"type": "text", "text": "[attempt_completion] Result:"},
                {"type": "text", "text": format!("<feedback>\n{}\n</feedback>", text(i, 200))}, {"type": "text", "text": env}]})
        } else {
            json!({"role": "user", "content": [{"type": "text", "text": "[read_file for 'src/lib.rs'] Result:"},
                {"type": "text", "text": text(i, 3000)}, {"type": "text", "text": env}]})
        };
        let asst = json!({"role": "assistant", "content": [{"type": "text", "text": format!(
            "<thinking>{}</thinking>\n{}\n<read_file>\n<path>src/lib.rs</path>\n</read_file>", text(i, 500), text(i, 400))}]});
        if i > 0 {
            out.push(',');
        }
        out.push_str(&user.to_string());
        out.push(',');
        out.push_str(&asst.to_string());
        i += 1;
    }
    out.push(']');
    out
}

fn cline_bench(quick: bool) {
    let tasks = if quick { 2_000 } else { 10_000 };
    let big = if quick { 20 << 20 } else { 100 << 20 };
    let dir = tempfile::tempdir().unwrap();
    for (flavor, name) in [(cline::Flavor::Cline, "cline"), (cline::Flavor::RooCode, "roo")] {
        let root = dir.path().join(name);
        let small = cline_history(4_000);
        let mut index = Vec::new();
        for t in 0..tasks {
            let id = match flavor {
                cline::Flavor::Cline => format!("{}", 1_767_000_000_000u64 + t as u64 * 1000),
                cline::Flavor::RooCode => format!("0199a1b2-c3d4-7e5f-8a9b-{t:012}"),
            };
            let task = root.join("tasks").join(&id);
            std::fs::create_dir_all(&task).unwrap();
            std::fs::write(task.join(cline::HISTORY), &small).unwrap();
            let item = json!({"id": id, "ts": 1_767_000_000_000u64 + t as u64 * 1000, "task": text(t, 200),
                "tokensIn": 1, "tokensOut": 1, "totalCost": 0.0, "cwdOnTaskInitialization": "/work", "workspace": "/work"});
            if flavor == cline::Flavor::RooCode {
                std::fs::write(task.join("history_item.json"), item.to_string()).unwrap();
            }
            index.push(item);
        }
        if flavor == cline::Flavor::Cline {
            std::fs::create_dir_all(root.join("state")).unwrap();
            std::fs::write(root.join("state/taskHistory.json"), serde_json::Value::Array(index).to_string()).unwrap();
        }
        let (list, list_cpu) = best(5, || {
            let s = ClineSource::open(&root, flavor).unwrap();
            assert_eq!(s.list_sessions().unwrap().len(), tasks);
        });
        println!("{name}: list {tasks} tasks (new source each time): {:.1} ms; cpu {:.1} ms", ms(list), ms(list_cpu));
    }
    // One big history of each flavor (the same messages: Roo Code keeps
    // Cline's layout and message shape), read against its bytes alone.
    let bytes = cline_history(big);
    let size = bytes.len() as f64;
    let big_tasks = [
        (cline::Flavor::Cline, "cline", "1767999999999"),
        (cline::Flavor::RooCode, "roo", "0199a1b2-c3d4-7e5f-8a9b-999999999999"),
    ];
    for (flavor, name, id) in big_tasks {
        let root = dir.path().join(name);
        let task = root.join("tasks").join(id);
        std::fs::create_dir_all(&task).unwrap();
        let path = task.join(cline::HISTORY);
        std::fs::write(&path, &bytes).unwrap();
        if flavor == cline::Flavor::RooCode {
            let item = json!({"id": id, "ts": 1_767_999_999_999u64, "task": text(0, 200), "workspace": "/work"});
            std::fs::write(task.join("history_item.json"), item.to_string()).unwrap();
        }
        let source = ClineSource::open(&root, flavor).unwrap();
        let (plain, plain_cpu) = best(3, || {
            let b = std::fs::read(&path).unwrap();
            assert!(b.len() as f64 == size);
        });
        let mut items = 0;
        let (read, read_cpu) = best(3, || {
            let SurfaceData::Conversation(c) = source.read_surface(&format!("{}{id}", flavor.prefix())).unwrap() else {
                panic!()
            };
            items = c.items.len();
        });
        println!(
            "{name}: read a {:.0} MB history ({items} items): {:.0} ms, {:.0} MB/s; cpu {:.0} ms \
             (reading its bytes alone: {:.0} ms; cpu {:.0} ms)",
            size / 1e6,
            ms(read),
            size / 1e6 / read.as_secs_f64(),
            ms(read_cpu),
            ms(plain),
            ms(plain_cpu)
        );
        std::fs::remove_file(&path).unwrap();
    }
}

/// A Cline CLI messages file of about `target` bytes (and how many
/// messages it holds), shaped like the SDK's: typed prompts in
/// `<user_input>`, assistant text with reasoning and a tool call, tool
/// results of 3 KB.
fn cline_cli_messages(id: &str, target: usize) -> (String, usize) {
    let mut messages = Vec::new();
    let mut size = 0;
    let mut i = 0;
    while size < target {
        let user = if i % 10 == 0 {
            json!({"id": format!("msg_u{i}"), "role": "user", "ts": 1_767_000_000_000u64 + i as u64,
                "content": [{"type": "text", "text": format!("<user_input mode=\"act\">{}</user_input>", text(i, 300))}]})
        } else {
            json!({"id": format!("msg_r{i}"), "role": "user", "ts": 1_767_000_000_000u64 + i as u64,
                "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{i}"), "name": "read_files", "content": text(i, 3000)}]})
        };
        let asst = json!({"id": format!("msg_a{i}"), "role": "assistant", "ts": 1_767_000_000_000u64 + i as u64,
            "content": [{"type": "thinking", "thinking": text(i, 500)}, {"type": "text", "text": text(i, 400)},
                {"type": "tool_use", "id": format!("toolu_{}", i + 1), "name": "read_files", "input": {"paths": ["src/lib.rs"]}}],
            "modelInfo": {"id": "anthropic/claude-sonnet-4.5", "provider": "cline"},
            "metrics": {"inputTokens": 1000 + i, "outputTokens": 200, "cost": 0.012_345_678_9}});
        size += user.to_string().len() + asst.to_string().len();
        messages.push(user);
        messages.push(asst);
        i += 1;
    }
    let n = messages.len();
    let file = json!({"version": 1, "updated_at": "2026-01-01T00:00:00.000Z", "agent": "lead", "sessionId": id, "messages": messages});
    (serde_json::to_string_pretty(&file).unwrap(), n)
}

fn cline_cli_bench(quick: bool) {
    let sessions = if quick { 2_000 } else { 10_000 };
    let big = if quick { 20 << 20 } else { 100 << 20 };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let (small, _) = cline_cli_messages("x", 6_000);
    for t in 0..sessions {
        let id = format!("{}_{:05}", 1_767_000_000_000u64 + t as u64 * 1000, t);
        let session = root.join(&id);
        std::fs::create_dir_all(&session).unwrap();
        std::fs::write(session.join(format!("{id}.messages.json")), &small).unwrap();
        let manifest = json!({"version": 1, "session_id": id, "source": "cli", "pid": 1, "started_at": "2026-01-01T00:00:00.000Z",
            "status": "completed", "interactive": true, "provider": "cline", "model": "m", "cwd": "/work", "workspace_root": "/work",
            "enable_tools": true, "enable_spawn": false, "enable_teams": false, "prompt": text(t, 200),
            "metadata": {"title": text(t, 60)}});
        std::fs::write(session.join(format!("{id}.json")), serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    }
    let (list, list_cpu) = best(5, || {
        let s = CliSource::open(&root).unwrap();
        assert_eq!(s.list_sessions().unwrap().len(), sessions);
    });
    println!(
        "cline-cli: list {sessions} sessions (new source each time): {:.1} ms; cpu {:.1} ms",
        ms(list),
        ms(list_cpu)
    );
    // One big session; its sidecar (a summary) replaces all but its last
    // two messages, with a hash that does not match (computing it is
    // the work: a match changes only which messages are rendered).
    let id = "1767999999999_big00";
    let session = root.join(id);
    std::fs::create_dir_all(&session).unwrap();
    let (bytes, n) = cline_cli_messages(id, big);
    let path = session.join(format!("{id}.messages.json"));
    std::fs::write(&path, &bytes).unwrap();
    let size = bytes.len() as f64;
    drop(bytes);
    let sidecar = json!({"version": 1, "updated_at": "2026-01-01T00:00:00.000Z", "source_message_count": n - 2,
        "source_prefix_hash": format!("sha256:{}", "0".repeat(64)),
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Context summary:\n\nsummary"}], "metadata": {"kind": "compaction_summary"}}]});
    std::fs::write(session.join(format!("{id}.compaction.json")), sidecar.to_string()).unwrap();
    let source = CliSource::open(&root).unwrap();
    let mut items = 0;
    let (read, read_cpu) = best(3, || {
        let SurfaceData::Conversation(c) = source.read_surface(&format!("cline:{id}")).unwrap() else { panic!() };
        items = c.items.len();
    });
    println!(
        "cline-cli: read a {:.0} MB session ({items} items; its {} -message prefix hashed): {:.0} ms, {:.0} MB/s; cpu {:.0} ms",
        size / 1e6,
        n - 2,
        ms(read),
        size / 1e6 / read.as_secs_f64(),
        ms(read_cpu)
    );
}

/// One SQLite kind of the listing and read benchmarks.
struct SqliteBench {
    name: &'static str,
    /// Builds a database of `sessions` sessions in `dir`; its path.
    build: fn(dir: &Path, sessions: usize) -> PathBuf,
    /// A new source over the database at `db`.
    open: fn(db: &Path) -> Box<dyn BlockingSessionQuery>,
    /// Builds a database in `dir` holding one session of about `bytes`
    /// bytes, its turns shaped as the listing's sessions are (`None`: read
    /// by another row's reader, or by the OpenCode part of `main`).
    session: Option<fn(dir: &Path, bytes: usize) -> BigSession>,
}

/// One large session of a SQLite kind, in a database of its own.
struct BigSession {
    db: PathBuf,
    /// Its id, with the kind's prefix.
    id: String,
    /// The bytes of its rows' payload columns: what the agent stored of it
    /// (for Zed, the thread document decompressed).
    bytes: usize,
    /// Its turns (each reads as one user and one assistant item).
    turns: usize,
    /// What the bytes are, for the report.
    what: String,
}

/// Every SQLite kind, one row each.
const SQLITE: &[SqliteBench] = &[
    SqliteBench {
        name: "opencode",
        build: |dir, sessions| {
            let db = dir.join("opencode.db");
            build(&db, sessions - 1, 10, 10);
            db
        },
        open: |db| Box::new(OpenCodeSource::open(db, Flavor::OpenCode).unwrap()),
        session: None,
    },
    SqliteBench {
        name: "kilo",
        build: |dir, sessions| {
            let db = dir.join("kilo.db");
            build(&db, sessions - 1, 10, 10);
            db
        },
        open: |db| Box::new(OpenCodeSource::open(db, Flavor::Kilo).unwrap()),
        session: None,
    },
    SqliteBench {
        name: "warp",
        build: |dir, sessions| {
            let db = dir.join("warp.sqlite");
            warp_db(&db, sessions, |s| warp_task(s, 10, 1000));
            db
        },
        open: |db| Box::new(WarpSource::open(db).unwrap()),
        session: Some(warp_session),
    },
    SqliteBench {
        name: "goose",
        build: |dir, sessions| {
            let db = dir.join("sessions.db");
            sqlite_fixtures::build_db("goose", &db, &["schema.sql", "sessions.sql"]);
            let first = listed_first(GooseSource::open(&db).unwrap().list_sessions().unwrap(), "goose:");
            copies(&db, sessions, &first, &[("sessions", "id", None), ("messages", "session_id", Some(("id", true)))]);
            db
        },
        open: |db| Box::new(GooseSource::open(db).unwrap()),
        session: Some(goose_session),
    },
    SqliteBench {
        name: "crush",
        build: |dir, sessions| {
            let db = dir.join("crush.db");
            sqlite_fixtures::build_db("crush", &db, &["schema.sql", "sessions.sql"]);
            let first = listed_first(CrushSource::open(&db).unwrap().list_sessions().unwrap(), "crush:");
            copies(&db, sessions, &first, &[("sessions", "id", None), ("messages", "session_id", Some(("id", false)))]);
            db
        },
        open: |db| Box::new(CrushSource::open(db).unwrap()),
        session: Some(crush_session),
    },
    SqliteBench {
        name: "zed",
        build: |dir, sessions| {
            let db = dir.join("threads.db");
            sqlite_fixtures::zed_threads_db(&db);
            let first = listed_first(ZedSource::open(&db).unwrap().list_sessions().unwrap(), "zed:");
            copies(&db, sessions, &first, &[("threads", "id", None)]);
            db
        },
        open: |db| Box::new(ZedSource::open(db).unwrap()),
        session: Some(zed_session),
    },
    SqliteBench {
        name: "hermes",
        build: |dir, sessions| {
            let db = dir.join("state.db");
            sqlite_fixtures::build_db("hermes", &db, &["schema.sql", "sessions.sql"]);
            // A session of its own (the first listed continues another).
            let first = "20260801_100000_a1b2c3".to_owned();
            copies(&db, sessions, &first, &[("sessions", "id", None), ("messages", "session_id", Some(("id", true)))]);
            db
        },
        open: |db| Box::new(HermesSource::open(db).unwrap()),
        session: Some(hermes_session),
    },
];

/// The bare id of the first session a listing of a fixture gives.
fn listed_first(listed: Vec<dsh_session_reference::SessionHeader>, prefix: &str) -> String {
    listed[0].id.strip_prefix(prefix).unwrap().to_owned()
}

/// The fixture database `db` made `sessions` copies of its session `id`
/// (and nothing else): for each table, its rows whose `column` is `id`,
/// copied with that column set to each copy's id; a table's own key
/// (`Some((key, numbered))`) left for SQLite to number, or made unique by
/// the copy's id.
#[allow(clippy::type_complexity)]
fn copies(db: &Path, sessions: usize, id: &str, tables: &[(&str, &str, Option<(&str, bool)>)]) {
    let conn = Connection::open(db).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF; BEGIN").unwrap();
    for (table, column, key) in tables {
        conn.execute(&format!("CREATE TEMP TABLE t_{table} AS SELECT * FROM main.{table} WHERE {column} = ?1"), [id])
            .unwrap();
        if let Some((key, true)) = key {
            conn.execute_batch(&format!("UPDATE t_{table} SET {key} = NULL")).unwrap();
        }
        conn.execute(&format!("DELETE FROM main.{table}"), []).unwrap();
    }
    for n in 0..sessions {
        let copy = format!("{id}-{n:05}");
        for (table, column, key) in tables {
            conn.execute(&format!("UPDATE t_{table} SET {column} = ?1"), [&copy]).unwrap();
            let insert = match key {
                Some((key, false)) => format!(
                    "INSERT INTO main.{table} SELECT * FROM t_{table}; UPDATE main.{table} SET {key} = {key} || '-{n}' \
                     WHERE {column} = '{copy}'"
                ),
                _ => format!("INSERT INTO main.{table} SELECT * FROM t_{table}"),
            };
            conn.execute_batch(&insert).unwrap();
        }
    }
    conn.execute_batch("COMMIT").unwrap();
}

/// A Warp database of `sessions` conversations as Warp writes them: the
/// conversation row with its summary JSON, and one root task, `task(s)`.
fn warp_db(db: &Path, sessions: usize, task: impl Fn(usize) -> Vec<u8>) {
    let conn = Connection::open(db).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/foreign-logs/warp/schema.sql");
    conn.execute_batch(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    conn.execute_batch("BEGIN").unwrap();
    let mut conv = conn
        .prepare(
            "INSERT INTO agent_conversations (conversation_id, conversation_data, last_modified_at, summary) \
             VALUES (?1, '{\"server_conversation_token\":\"t\"}', ?2, ?3)",
        )
        .unwrap();
    let mut task_row =
        conn.prepare("INSERT INTO agent_tasks (conversation_id, task_id, task) VALUES (?1, ?2, ?3)").unwrap();
    for s in 0..sessions {
        let id = warp_id(s);
        let summary = json!({"initial_query": text(s, 40), "title": text(s, 40), "initial_working_directory": "/work", "is_restorable": true});
        let at = format!("2026-08-{:02} {:02}:{:02}:{:02}", 1 + s / 86_400 % 28, s / 3600 % 24, s / 60 % 60, s % 60);
        conv.execute(rusqlite::params![id, at, summary.to_string()]).unwrap();
        task_row.execute(rusqlite::params![id, format!("task-{s}"), task(s)]).unwrap();
    }
    drop((conv, task_row));
    conn.execute_batch("COMMIT").unwrap();
}

fn warp_id(s: usize) -> String {
    format!("0199a1b2-c3d4-7e5f-8a9b-{s:012}")
}

/// The root task of conversation `s`, a protobuf `Task` of `turns` turns:
/// a user query with a directory context, reasoning, a tool call and its
/// result of `result_bytes`, the agent's text.
fn warp_task(s: usize, turns: usize, result_bytes: usize) -> Vec<u8> {
    let mut t = pb::field(1, format!("task-{s}").as_bytes());
    t.extend(pb::field(2, text(s, 40).as_bytes()));
    for i in 0..turns {
        let context = pb::field(2, pb::field(1, pb::field(1, b"/work")));
        let user = pb::field(2, [pb::field(1, text(i, 200).as_bytes()), context].concat());
        let reasoning = pb::field(15, pb::field(1, text(i, 300).as_bytes()));
        let call = pb::field(4, [pb::field(1, b"call"), pb::field(2, pb::field(1, b"cargo test"))].concat());
        let result = pb::field(
            5,
            [pb::field(1, b"call"), pb::field(2, pb::field(5, pb::field(1, text(i, result_bytes).as_bytes())))]
                .concat(),
        );
        let agent = pb::field(3, pb::field(1, text(i, 400).as_bytes()));
        for m in [user, reasoning, call, result, agent] {
            t.extend(pb::field(5, &m));
        }
    }
    t
}

/// How many bytes a tool's output in a large session is (as OpenCode's).
const TOOL_BYTES: usize = 16_000;

/// The largest a session kept in one row is read at: a row longer than
/// `MAX_LINE_BYTES` (64 MiB) is refused, so memory stays bounded.
const ONE_ROW: usize = 60_000_000;

/// Turns of a large session until its rows hold `bytes`: `turn(i)` adds
/// turn `i` and says how many bytes it added. How many turns it took.
fn turns_until(bytes: usize, mut turn: impl FnMut(usize) -> usize) -> usize {
    let (mut i, mut total) = (0, 0);
    while total < bytes {
        total += turn(i);
        i += 1;
    }
    i
}

/// The sum of the integer `query` gives in `db`.
fn sum(db: &Path, query: &str) -> usize {
    let n: i64 = Connection::open(db).unwrap().query_row(query, [], |r| r.get(0)).unwrap();
    n as usize
}

/// A Warp conversation whose root task is about `bytes` (at most
/// [`ONE_ROW`]), shaped as the listing's with outputs of [`TOOL_BYTES`].
fn warp_session(dir: &Path, bytes: usize) -> BigSession {
    let db = dir.join("warp.sqlite");
    let per_turn = warp_task(0, 1, TOOL_BYTES).len() - warp_task(0, 0, TOOL_BYTES).len();
    let turns = bytes.min(ONE_ROW) / per_turn;
    warp_db(&db, 1, |s| warp_task(s, turns, TOOL_BYTES));
    let bytes = sum(&db, "SELECT sum(length(task)) FROM agent_tasks");
    BigSession { db, id: format!("warp:{}", warp_id(0)), bytes, turns, what: "its task, one row".into() }
}

/// A Goose session of about `bytes` of `content_json` and `metadata_json`:
/// per turn the user's text, the assistant's thinking, text and a tool
/// request, and the tool's response.
fn goose_session(dir: &Path, bytes: usize) -> BigSession {
    let db = dir.join("sessions.db");
    sqlite_fixtures::build_db("goose", &db, &["schema.sql"]);
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(
        "BEGIN; INSERT INTO sessions (id, name, working_dir, created_at, updated_at) VALUES \
         ('20260801_1', 'A long session', '/work', '2026-08-01 10:00:00', '2026-08-01 11:00:00')",
    )
    .unwrap();
    let mut msg = conn
        .prepare(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json, message_id) \
             VALUES ('20260801_1', ?1, ?2, ?3, '{\"userVisible\":true,\"agentVisible\":true}', ?4)",
        )
        .unwrap();
    let turns = turns_until(bytes, |i| {
        let call = format!("t{i}");
        let rows = [
            ("user", json!([{"type": "text", "text": text(i, 300)}])),
            (
                "assistant",
                json!([{"type": "thinking", "thinking": text(i, 400), "signature": "s"},
                {"type": "text", "text": text(i, 400)},
                {"type": "toolRequest", "id": call, "toolCall": {"status": "success", "value":
                    {"name": "developer__text_editor", "arguments": {"command": "view", "path": "/work/src/lib.rs"}}}}]),
            ),
            (
                "user",
                json!([{"type": "toolResponse", "id": call, "toolResult": {"status": "success",
                "value": [{"type": "text", "text": text(i, TOOL_BYTES)}]}}]),
            ),
        ];
        let t = 1_785_578_400 + 3 * i as i64;
        rows.iter().enumerate().fold(0, |n, (k, (role, content))| {
            let content = content.to_string();
            msg.execute(rusqlite::params![role, content, t + k as i64, format!("msg_{i}_{k}")]).unwrap();
            n + content.len() + 40
        })
    });
    drop(msg);
    conn.execute_batch("COMMIT").unwrap();
    let bytes = sum(&db, "SELECT sum(length(content_json) + length(metadata_json)) FROM messages");
    BigSession { db, id: "goose:20260801_1".into(), bytes, turns, what: "content and metadata".into() }
}

/// A Crush session of about `bytes` of `parts`: per turn the user's text,
/// the assistant's reasoning, text, tool call and finish, and the tool's
/// result.
fn crush_session(dir: &Path, bytes: usize) -> BigSession {
    let db = dir.join("crush.db");
    sqlite_fixtures::build_db("crush", &db, &["schema.sql"]);
    let conn = Connection::open(&db).unwrap();
    let id = "0b8e1c2a-0000-4000-8000-000000000001";
    conn.execute_batch(&format!(
        "BEGIN; INSERT INTO sessions (id, title, updated_at, created_at) \
         VALUES ('{id}', 'A long session', 1785578500, 1785578400)"
    ))
    .unwrap();
    let mut msg = conn
        .prepare(
            "INSERT INTO messages (id, session_id, role, parts, model, created_at, updated_at, finished_at, provider) \
             VALUES (?1, ?2, ?3, ?4, 'gpt-5', ?5, ?5, ?5, 'openai')",
        )
        .unwrap();
    let turns = turns_until(bytes, |i| {
        let (call, t) = (format!("c{i}"), 1_785_578_400 + 3 * i as i64);
        let rows = [
            ("user", json!([{"type": "text", "data": {"text": text(i, 300)}}])),
            (
                "assistant",
                json!([{"type": "reasoning", "data": {"thinking": text(i, 400)}},
                {"type": "text", "data": {"text": text(i, 400)}},
                {"type": "tool_call", "data": {"id": call, "name": "view", "input": "{\"file_path\":\"/work/src/lib.rs\"}", "finished": true}},
                {"type": "finish", "data": {"reason": "tool_use", "time": t + 1}}]),
            ),
            (
                "tool",
                json!([{"type": "tool_result", "data": {"tool_call_id": call, "name": "view",
                "content": text(i, TOOL_BYTES), "is_error": false}}]),
            ),
        ];
        rows.iter().enumerate().fold(0, |n, (k, (role, parts))| {
            let parts = parts.to_string();
            msg.execute(rusqlite::params![format!("m{i:06}{k}"), id, role, parts, t + k as i64]).unwrap();
            n + parts.len()
        })
    });
    drop(msg);
    conn.execute_batch("COMMIT").unwrap();
    let bytes = sum(&db, "SELECT sum(length(parts)) FROM messages");
    BigSession { db, id: format!("crush:{id}"), bytes, turns, what: "parts".into() }
}

/// A Zed thread whose document is about `bytes` (at most [`ONE_ROW`]),
/// zstd-compressed as Zed writes it: per turn the user's text, and the
/// agent's thinking, text and tool use with its result.
fn zed_session(dir: &Path, bytes: usize) -> BigSession {
    let db = dir.join("threads.db");
    sqlite_fixtures::build_db("zed", &db, &["schema.sql"]);
    let mut messages = Vec::new();
    let turns = turns_until(bytes.min(ONE_ROW), |i| {
        let call = format!("t{i}");
        let turn = [
            json!({"User": {"id": format!("u{i}"), "content": [{"Text": text(i, 300)}]}}),
            json!({"Agent": {"content": [{"Thinking": {"text": text(i, 400), "signature": null}}, {"Text": text(i, 400)},
                {"ToolUse": {"id": call, "name": "read_file", "raw_input": "{\"path\":\"src/lib.rs\"}",
                    "input": {"path": "src/lib.rs"}, "is_input_complete": true}}],
                "tool_results": {call.clone(): {"tool_use_id": call, "tool_name": "read_file", "is_error": false,
                    "content": {"Text": text(i, TOOL_BYTES)}, "output": null}}}}),
        ];
        let n = turn.iter().map(|m| m.to_string().len() + 1).sum();
        messages.extend(turn);
        n
    });
    let document = json!({"version": "0.3.0", "title": "A long thread", "updated_at": "2026-08-01T10:05:00Z",
        "messages": messages, "detailed_summary": null, "cumulative_token_usage": {}, "request_token_usage": {}});
    let bytes = serde_json::to_vec(&document).unwrap().len();
    let data = sqlite_fixtures::zed_data("zstd", &document);
    let what = format!("its document, zstd-compressed to {:.1} MB in one row", data.len() as f64 / 1e6);
    let id = "11111111-0000-4000-8000-000000000001";
    Connection::open(&db)
        .unwrap()
        .execute(
            "INSERT INTO threads (id, summary, updated_at, data_type, data, folder_paths, folder_paths_order, created_at) \
             VALUES (?1, 'A long thread', '2026-08-01T10:05:00+00:00', 'zstd', ?2, '/work', '0', '2026-08-01T10:00:00+00:00')",
            rusqlite::params![id, data],
        )
        .unwrap();
    BigSession { db, id: format!("zed:{id}"), bytes, turns, what }
}

/// A Hermes Agent session of about `bytes` of `content`, `tool_calls` and
/// `reasoning`: per turn the user's text, the assistant's text with its
/// reasoning and a tool call, and the tool's output.
fn hermes_session(dir: &Path, bytes: usize) -> BigSession {
    let db = dir.join("state.db");
    sqlite_fixtures::build_db("hermes", &db, &["schema.sql"]);
    let conn = Connection::open(&db).unwrap();
    let id = "20260801_100000_a1b2c3";
    conn.execute_batch(&format!(
        "BEGIN; INSERT INTO sessions (id, source, model_config, started_at, cwd, title, title_source) \
         VALUES ('{id}', 'cli', '{{}}', 1785578400.0, '/work', 'A long session', 'llm')"
    ))
    .unwrap();
    let mut msg = conn
        .prepare(
            "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, reasoning) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .unwrap();
    let turns = turns_until(bytes, |i| {
        let (call, t) = (format!("c{i}"), 1_785_578_400.0 + 3.0 * i as f64);
        let calls = json!([{"id": call, "type": "function",
            "function": {"name": "terminal", "arguments": "{\"command\":\"cargo test\"}"}}])
        .to_string();
        let output = json!({"output": text(i, TOOL_BYTES), "exit_code": 0}).to_string();
        let (user, said, reasoning) = (text(i, 300), text(i, 400), text(i, 400));
        let none: Option<&str> = None;
        let mut row = |k: usize, role: &str, content: &str, call_id, calls, tool, reasoning| {
            msg.execute(rusqlite::params![id, role, content, call_id, calls, tool, t + k as f64, reasoning]).unwrap();
        };
        row(0, "user", &user, none, none, none, none);
        row(1, "assistant", &said, none, Some(&calls), none, Some(&reasoning));
        row(2, "tool", &output, Some(&call), none, Some("terminal"), none);
        user.len() + said.len() + calls.len() + reasoning.len() + output.len()
    });
    drop(msg);
    conn.execute_batch("COMMIT").unwrap();
    let bytes = sum(
        &db,
        "SELECT sum(length(content) + coalesce(length(tool_calls), 0) + coalesce(length(reasoning), 0)) FROM messages",
    );
    BigSession { db, id: format!("hermes:{id}"), bytes, turns, what: "content, tool calls and reasoning".into() }
}

/// Lists `sessions` sessions of each SQLite kind chosen, a new source each
/// round.
fn sqlite_listings(sessions: usize, chosen: &dyn Fn(&SqliteBench) -> bool) {
    println!("listing {sessions} sessions of each SQLite kind (new source each time; best of 5, least CPU):");
    for kind in SQLITE.iter().filter(|k| chosen(k)) {
        let dir = tempfile::tempdir().unwrap();
        let db = (kind.build)(dir.path(), sessions);
        let (wall, cpu) = best(5, || assert_eq!((kind.open)(&db).list_sessions().unwrap().len(), sessions));
        println!("  {}: {:.1} ms; cpu {:.1} ms", kind.name, ms(wall), ms(cpu));
    }
}

/// Reads one session of about `bytes` of each SQLite kind chosen that has
/// its own (the kind's `session`), by one source.
fn sqlite_reads(bytes: usize, chosen: &dyn Fn(&SqliteBench) -> bool) {
    println!("reading one session of about {} MB of each SQLite kind (best of 3, least CPU):", bytes / 1_000_000);
    for kind in SQLITE.iter().filter(|k| chosen(k)) {
        let Some(session) = kind.session else { continue };
        let dir = tempfile::tempdir().unwrap();
        let big = session(dir.path(), bytes);
        let source = (kind.open)(&big.db);
        let (wall, cpu) = best(3, || {
            let SurfaceData::Conversation(c) = source.read_surface(&big.id).unwrap() else { panic!() };
            assert_eq!(c.items.len(), 2 * big.turns, "{}: every turn's user and assistant text", kind.name);
        });
        let mb = big.bytes as f64 / 1e6;
        println!(
            "  {}: {mb:.0} MB ({}; {} turns): {:.0} ms, {:.0} MB/s; cpu {:.0} ms ({:.0} MB/s)",
            kind.name,
            big.what,
            big.turns,
            ms(wall),
            mb / wall.as_secs_f64(),
            ms(cpu),
            mb / cpu.as_secs_f64()
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let quick = flag("--quick");
    let only_cline = flag("--cline");
    let only_cline_cli = flag("--cline-cli");
    let only_opencode = flag("--opencode");
    let only_sqlite = flag("--sqlite");
    let only_reads = flag("--reads");
    // Any other word names SQLite kinds: only those are listed and read.
    let kinds: Vec<&str> = args.iter().map(String::as_str).filter(|a| !a.starts_with('-')).collect();
    let chosen = |k: &SqliteBench| kinds.is_empty() || kinds.contains(&k.name);
    let big = if quick { 20_000_000 } else { 100_000_000 };
    println!("load: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
    if only_sqlite || only_reads {
        if only_sqlite {
            sqlite_listings(if quick { 1_000 } else { 5_000 }, &chosen);
        }
        if only_reads {
            sqlite_reads(big, &chosen);
        }
        println!("load: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
        return;
    }
    if !only_opencode && !only_cline_cli {
        cline_bench(quick);
    }
    if !only_opencode && !only_cline {
        cline_cli_bench(quick);
    }
    if only_cline || only_cline_cli {
        println!("load: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
        return;
    }
    let (sessions, turns, big_turns) = if quick { (1_000, 10, 1_000) } else { (5_000, 10, 5_000) };
    if !only_opencode {
        sqlite_listings(sessions, &chosen);
        sqlite_reads(big, &chosen);
    }
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
    let (cold, cold_cpu) = best(5, || {
        let s = OpenCodeSource::open(&db, Flavor::OpenCode).unwrap();
        assert_eq!(s.list_sessions().unwrap().len(), sessions + 1);
    });
    println!("list {} sessions (new source each time): {:.1} ms; cpu {:.1} ms", sessions + 1, ms(cold), ms(cold_cpu));
    let (shared_cold, shared_cold_cpu) = best(5, || {
        let s = OpenCodeSource::open(&db, Flavor::OpenCode).unwrap();
        let l = s.shared_listing().unwrap().unwrap();
        assert!(l.fingerprints().iter().all(Option::is_some));
    });
    println!(
        "list + fingerprint every session (new source): {:.1} ms; cpu {:.1} ms",
        ms(shared_cold),
        ms(shared_cold_cpu)
    );
    let source = OpenCodeSource::open(&db, Flavor::OpenCode).unwrap();
    source.shared_listing().unwrap();
    let (shared_warm, shared_warm_cpu) = best(5, || {
        source.shared_listing().unwrap().unwrap();
    });
    println!(
        "list + fingerprints, database unchanged (memo): {:.1} ms; cpu {:.1} ms",
        ms(shared_warm),
        ms(shared_warm_cpu)
    );

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
    let (read, read_cpu) = best(3, || {
        let SurfaceData::Conversation(c) = source.read_surface(&big).unwrap() else { panic!() };
        items = c.items.len();
    });
    println!(
        "read one session of {:.0} MB of rows ({items} items): {:.0} ms, {:.0} MB/s; cpu {:.0} ms",
        rows_bytes as f64 / 1e6,
        ms(read),
        rows_bytes as f64 / 1e6 / read.as_secs_f64(),
        ms(read_cpu)
    );
    println!("load: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
}
