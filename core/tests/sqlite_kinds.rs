//! The SQLite-backed kinds read through `sources::sqlite` (Goose, Crush, Zed, Hermes Agent, Warp, …): each
//! fixture database, built from the published schema by this test, pinned
//! (listing, titles, snapshots, skipped rows), fingerprints that follow the
//! rows, and a database read while another connection writes it in WAL
//! mode: consistent answers, and no file beside it.

use std::path::{Path, PathBuf};

use dsh_session_reference::sources::crush::{self, CrushSource};
use dsh_session_reference::sources::foreign::Listing;
use dsh_session_reference::sources::goose::{self, GooseSource};
use dsh_session_reference::sources::hermes::{self, HermesSource};
use dsh_session_reference::sources::warp::{self, WarpSource};
use dsh_session_reference::sources::zed::{self, ZedSource};
use dsh_session_reference::sources::{open_sources, SourceKind, SourceSpec};
use dsh_session_reference::{block_on, BlockingSessionQuery, ConversationItem, SessionQuery, SurfaceData};
use rusqlite::Connection;
use serde_json::json;

mod sqlite_writes {
    include!("support/sqlite_writes.rs");
}
use sqlite_writes::{check_consistent, names, set};

mod sqlite_fixtures {
    include!("support/sqlite_fixtures.rs");
}
use sqlite_fixtures::{build_db, fixtures, zed_data, zed_threads_db};

/// `(id, createdAt, cwd)` of every listed session.
fn listed(l: &Listing) -> Vec<(&str, u64, Option<&str>)> {
    l.sessions
        .iter()
        .map(|s| (s.header.id.as_str(), s.header.created_at.as_u64().unwrap(), s.header.cwd.as_deref()))
        .collect()
}

fn conv<S: BlockingSessionQuery>(source: &S, id: &str) -> std::sync::Arc<dsh_session_reference::Conversation> {
    match source.read_surface(id).unwrap() {
        SurfaceData::Conversation(c) => c,
        _ => panic!("{id}: not a conversation"),
    }
}

/// `(is_user, text, checkpoint)` of each item.
fn items(list: &[ConversationItem]) -> Vec<(bool, &str, bool)> {
    list.iter().map(|i| (i.role.as_str() == "user", i.text.as_str(), i.checkpoint)).collect()
}

const U: bool = true;
const A: bool = false;

// ---------------------------------------------------------------------- Goose

fn goose_db(dir: &Path) -> PathBuf {
    let db = dir.join("sessions.db");
    build_db("goose", &db, &["schema.sql", "sessions.sql"]);
    db
}

#[test]
fn goose_fixture_projects_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = goose_db(dir.path());
    let source = GooseSource::open(&db).unwrap();
    let listing = source.list().unwrap();
    assert!(listing.rejected.is_empty(), "{:?}", listing.rejected);
    assert_eq!(
        listed(&listing),
        vec![
            ("goose:20260802_1", 1_785_661_200_000, Some("/home/u/other")),
            ("goose:20260801_1", 1_785_578_400_000, Some("/home/u/proj")),
        ]
    );
    assert_eq!(source.read_title("goose:20260801_1").unwrap().as_deref(), Some("Parser refactor"));
    assert_eq!(source.read_title("goose:20260802_1").unwrap().as_deref(), Some("What is the plan?"));
    // The compaction's summary, then what the model saw after it: not the
    // rows it replaced, not the note after the summary, no tool, thinking,
    // image, or the error only the user saw; damaged rows counted.
    assert_eq!(
        conv(&source, "goose:20260801_1").to_snapshot_json(),
        json!({
            "session": {"id": "goose:20260801_1", "cwd": "/home/u/proj"},
            "capturedThroughSeq": 12,
            "conversation": [
                {"role": "user", "text": "Summary: the parser was split into two modules.", "checkpoint": true},
                {"role": "user", "text": "Now add tests"},
                {"role": "assistant", "text": "Tests added."},
                {"role": "user", "text": "Ship it"},
            ],
        })
    );
    let b = conv(&source, "goose:20260802_1");
    assert_eq!(items(&b.items), vec![(U, "What is   the\nplan?", false), (A, "Plan A.\nThen B.", false)]);
    assert_eq!(b.captured_through_seq.as_ref().and_then(|n| n.as_u64()), Some(1));
    let err = source.read_title("goose:nope").unwrap_err().message().to_owned();
    assert!(err.contains("no such session") && err.contains("sessions.db"), "{err}");
    assert_eq!(names(dir.path()), set(&["sessions.db"]), "reading created nothing");
    assert_eq!(goose::PREFIX, SourceKind::Goose.prefix());
}

#[test]
fn goose_is_opened_by_kind_from_its_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    goose_db(dir.path());
    let multi = open_sources(&[SourceSpec::new(SourceKind::Goose, dir.path())]).unwrap();
    let ids: Vec<String> = block_on(multi.list_sessions()).unwrap().into_iter().map(|h| h.id).collect();
    assert_eq!(ids, ["goose:20260802_1", "goose:20260801_1"]);
    let note = multi.last_report()[0].note.clone().unwrap_or_default();
    assert!(note.contains("is a directory holding sessions.db"), "{note}");
    let env = |name: &str| match name {
        "HOME" => Some("/h".into()),
        _ => None,
    };
    if !cfg!(windows) {
        let at = SourceKind::Goose.default_location_with(&env);
        assert_eq!(at, PathBuf::from("/h/.local/share/goose/sessions/sessions.db"));
    }
    let env = |name: &str| (name == "GOOSE_PATH_ROOT").then(|| "/g".into());
    assert_eq!(SourceKind::Goose.default_location_with(&env), PathBuf::from("/g/data/sessions/sessions.db"));
}

#[test]
fn goose_says_what_a_database_of_another_format_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    Connection::open(&db).unwrap().execute_batch("CREATE TABLE t (x)").unwrap();
    let err = GooseSource::open(&db).unwrap().list().unwrap_err();
    assert!(err.ends_with("is not a Goose session database (schema v5 or later): it has no table sessions"), "{err}");
    std::fs::write(&db, b"plain text, not SQLite, long enough to hold a header of a hundred bytes or so....").unwrap();
    let err = GooseSource::open(&db).unwrap().list().unwrap_err();
    assert!(err.ends_with("it is not an SQLite database"), "{err}");
}

/// Rows stored out of order read in Goose's order: by `created_timestamp`
/// as SQLite orders values (numbers by value, whatever their type, before
/// text), then by row id.
#[test]
fn goose_rows_stored_out_of_order_read_in_goose_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    build_db("goose", &db, &["schema.sql"]);
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(
        "INSERT INTO sessions (id, name, working_dir) VALUES ('o', 'Out of order', '/o'); \
         INSERT INTO messages (id, session_id, role, content_json, created_timestamp) VALUES \
         (1, 'o', 'user', '[{\"type\":\"text\",\"text\":\"last\"}]', 'later'), \
         (2, 'o', 'assistant', '[{\"type\":\"text\",\"text\":\"fourth\"}]', 3), \
         (3, 'o', 'user', '[{\"type\":\"text\",\"text\":\"third\"}]', 2.5), \
         (4, 'o', 'user', '[{\"type\":\"text\",\"text\":\"first\"}]', 1), \
         (5, 'o', 'assistant', '[{\"type\":\"text\",\"text\":\"second\"}]', 2), \
         (6, 'o', 'assistant', '[{\"type\":\"text\",\"text\":\"fifth\"}]', 3.0)",
    )
    .unwrap();
    drop(conn);
    let source = GooseSource::open(&db).unwrap();
    assert_eq!(
        items(&conv(&source, "goose:o").items),
        vec![
            (U, "first", false),
            (A, "second", false),
            (U, "third", false),
            (A, "fourth", false),
            (A, "fifth", false),
            (U, "last", false)
        ]
    );
}

// ---------------------------------------------------------------------- Crush

/// The fixture as a project's `.crush/crush.db` under `dir`.
fn crush_db(dir: &Path) -> PathBuf {
    std::fs::create_dir(dir.join(".crush")).unwrap();
    let db = dir.join(".crush/crush.db");
    build_db("crush", &db, &["schema.sql", "sessions.sql"]);
    db
}

#[test]
fn crush_fixture_projects_exactly() {
    let project = tempfile::tempdir().unwrap();
    let db = crush_db(project.path());
    let cwd = project.path().display().to_string();
    // A project directory is taken for its .crush/crush.db.
    let source = CrushSource::open(project.path()).unwrap();
    assert_eq!(source.path(), db);
    let listing = source.list().unwrap();
    assert!(listing.rejected.is_empty(), "{:?}", listing.rejected);
    let (s1, s2) = ("crush:0b8e1c2a-0000-4000-8000-000000000001", "crush:0b8e1c2a-0000-4000-8000-000000000002");
    assert_eq!(
        listed(&listing),
        vec![(s2, 1_785_661_200_000, Some(cwd.as_str())), (s1, 1_785_578_400_000, Some(cwd.as_str()))]
    );
    assert_eq!(source.read_title(s1).unwrap().as_deref(), Some("Fix the flaky test"));
    assert_eq!(source.read_title(s2).unwrap().as_deref(), Some("Rename the module"));
    // The summary in place of what came before it, then what followed: no
    // reasoning, tool call or result, attachment; the torn row counted.
    assert_eq!(
        conv(&source, s1).to_snapshot_json(),
        json!({
            "session": {"id": s1, "cwd": cwd},
            "capturedThroughSeq": 7,
            "conversation": [
                {"role": "user", "text": "Summary: the test races on a timer; a fake clock fixes it.", "checkpoint": true},
                {"role": "user", "text": "Use a fake clock"},
                {"role": "assistant", "text": "Done: the test uses a fake clock."},
            ],
        })
    );
    assert_eq!(items(&conv(&source, s2).items), vec![(U, "Rename   the\nmodule", false), (A, "Renamed.", false)]);
    assert_eq!(names(&project.path().join(".crush")), set(&["crush.db"]), "reading created nothing");
    assert_eq!(crush::PREFIX, SourceKind::Crush.prefix());
    let env = |name: &str| (name == "HOME").then(|| "/h".into());
    assert_eq!(SourceKind::Crush.default_location_with(&env), PathBuf::from("/h/.crush/crush.db"));
}

/// Rows stored out of order read in Crush's order: by `created_at`, then
/// by row id.
#[test]
fn crush_rows_stored_out_of_order_read_in_crush_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crush.db");
    build_db("crush", &db, &["schema.sql"]);
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch("INSERT INTO sessions (id, title, updated_at, created_at) VALUES ('o', 'Out of order', 2, 1)")
        .unwrap();
    for (id, role, text, at) in [
        ("m1", "assistant", "third", 30),
        ("m2", "user", "first", 10),
        ("m3", "assistant", "second", 20),
        ("m4", "user", "fourth", 30),
    ] {
        let parts = json!([{"type": "text", "data": {"text": text}}]).to_string();
        conn.execute(
            "INSERT INTO messages (id, session_id, role, parts, created_at, updated_at) VALUES (?1, 'o', ?2, ?3, ?4, ?4)",
            rusqlite::params![id, role, parts, at],
        )
        .unwrap();
    }
    drop(conn);
    let source = CrushSource::open(&db).unwrap();
    assert_eq!(
        items(&conv(&source, "crush:o").items),
        vec![(U, "first", false), (A, "second", false), (A, "third", false), (U, "fourth", false)]
    );
}

// ------------------------------------------------------------------------ Zed

/// The fixture's threads as `threads/threads.db` under `dir`.
fn zed_db(dir: &Path) -> PathBuf {
    std::fs::create_dir(dir.join("threads")).unwrap();
    let db = dir.join("threads/threads.db");
    zed_threads_db(&db);
    db
}

#[test]
fn zed_fixture_projects_exactly() {
    let data = tempfile::tempdir().unwrap();
    let db = zed_db(data.path());
    // Zed's data directory is taken for its threads/threads.db.
    let source = ZedSource::open(data.path()).unwrap();
    assert_eq!(source.path(), db);
    let listing = source.list().unwrap();
    let (t1, t2, t5) = (
        "zed:11111111-0000-4000-8000-000000000001",
        "zed:22222222-0000-4000-8000-000000000002",
        "zed:55555555-0000-4000-8000-000000000005",
    );
    assert_eq!(
        listed(&listing),
        vec![
            (t1, 1_785_578_400_000, Some("/home/u/zed-proj")),
            (t2, 1_782_896_400_500, None),
            (t5, 1_780_272_000_000, None)
        ]
    );
    let why: Vec<String> = listing.rejected.iter().map(|(p, why)| format!("{}: {why}", p.display())).collect();
    assert_eq!(
        why,
        [format!(
            "{}: thread \"44444444-0000-4000-8000-000000000004\": its data_type \"brotli\" is not one Zed writes (json, zstd)",
            db.display()
        )]
    );
    assert_eq!(source.skipped().len(), 1, "the listing's note names it");
    assert_eq!(source.read_title(t1).unwrap().as_deref(), Some("Explain the db layer"));
    assert_eq!(source.read_title(t2).unwrap().as_deref(), Some("Why is the build slow?"));
    // No thinking, tool use or result, Resume, mention content or image;
    // the message of an unknown shape counted.
    assert_eq!(
        conv(&source, t1).to_snapshot_json(),
        json!({
            "session": {"id": t1, "cwd": "/home/u/zed-proj"},
            "capturedThroughSeq": 5,
            "conversation": [
                {"role": "user", "text": "Explain the database layer"},
                {"role": "assistant", "text": "It opens threads.db."},
                {"role": "assistant", "text": "Then it reads rows."},
                {"role": "user", "text": "Now look at  too"},
            ],
        })
    );
    let old = conv(&source, t2);
    assert_eq!(items(&old.items), vec![(U, "Why is   the\nbuild slow?", false), (A, "Too many crates.", false)]);
    assert_eq!(old.captured_through_seq.as_ref().and_then(|n| n.as_u64()), Some(2));
    let err = source.read_surface(t5).unwrap_err().message().to_owned();
    assert!(err.contains("its zstd data") && err.contains("threads.db"), "{err}");
    assert_eq!(names(&data.path().join("threads")), set(&["threads.db"]), "reading created nothing");
    assert_eq!(zed::PREFIX, SourceKind::Zed.prefix());
}

#[test]
fn zed_bounds_what_a_compressed_thread_decompresses_to() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("threads.db");
    build_db("zed", &db, &["schema.sql"]);
    // 65 MiB of one repeated byte compresses to a few kilobytes.
    let huge = zstd::encode_all(std::io::Read::take(std::io::repeat(b' '), 65 << 20), 3).unwrap();
    assert!(huge.len() < 1 << 20);
    Connection::open(&db)
        .unwrap()
        .execute(
            "INSERT INTO threads (id, summary, updated_at, data_type, data) VALUES ('big', 'Big', '2026-08-01T00:00:00Z', 'zstd', ?1)",
            [huge],
        )
        .unwrap();
    let source = ZedSource::open(&db).unwrap();
    assert_eq!(source.list().unwrap().sessions.len(), 1);
    let err = source.read_surface("zed:big").unwrap_err().message().to_owned();
    assert!(err.contains("decompresses to more than"), "{err}");
}

// ------------------------------------------------------------- Hermes Agent

#[test]
fn hermes_fixture_projects_exactly() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("state.db");
    build_db("hermes", &db, &["schema.sql", "sessions.sql"]);
    // A Hermes home is taken for its state.db.
    let source = HermesSource::open(home.path()).unwrap();
    let listing = source.list().unwrap();
    assert!(listing.rejected.is_empty(), "{:?}", listing.rejected);
    let (h1, h2) = ("hermes:20260801_100000_a1b2c3", "hermes:20260802_080140_0a0b0c");
    assert_eq!(listed(&listing), vec![(h2, 1_785_650_100_000, None), (h1, 1_785_578_400_000, Some("/home/u/h"))]);
    assert_eq!(source.read_title(h1).unwrap().as_deref(), Some("Deploy fix"));
    assert_eq!(source.read_title(h2).unwrap().as_deref(), Some("New question"));
    // Live rows only: the kept head, the summary, what followed; not the
    // archived or rewound rows, tools, reasoning, the review, system or
    // hidden rows; the damaged row counted.
    assert_eq!(
        conv(&source, h1).to_snapshot_json(),
        json!({
            "session": {"id": h1, "cwd": "/home/u/h"},
            "capturedThroughSeq": 15,
            "conversation": [
                {"role": "user", "text": "Deploy is failing"},
                {"role": "user", "text": "[CONTEXT COMPACTION] Earlier turns were compacted. Summary: the deploy failed on a missing env var FOO.", "checkpoint": true},
                {"role": "assistant", "text": "Set the env var."},
                {"role": "user", "text": "Ship it"},
                {"role": "assistant", "text": "Shipped."},
            ],
        })
    );
    assert_eq!(
        items(&conv(&source, h2).items),
        vec![
            (U, "[CONTEXT SUMMARY]: the old question was answered.", true),
            (U, "New   question", false),
            (A, "New answer", false)
        ]
    );
    assert_eq!(names(home.path()), set(&["state.db"]), "reading created nothing");
    assert_eq!(hermes::PREFIX, SourceKind::Hermes.prefix());
    let env = |name: &str| match name {
        "HOME" => Some("/h".into()),
        _ => None,
    };
    assert_eq!(SourceKind::Hermes.default_location_with(&env), PathBuf::from("/h/.hermes/state.db"));
    let env = |name: &str| (name == "HERMES_HOME").then(|| "/hh".into());
    assert_eq!(SourceKind::Hermes.default_location_with(&env), PathBuf::from("/hh/state.db"));
}

#[test]
fn hermes_reads_a_store_of_the_first_schema() {
    // Schema version 2: no title, cwd, live or summary columns.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, model_config TEXT, \
         system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, \
         message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0, \
         output_tokens INTEGER DEFAULT 0); \
         CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL, \
         content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL, \
         token_count INTEGER, finish_reason TEXT); \
         INSERT INTO sessions (id, source, started_at) VALUES ('old', 'cli', 1785578400.5); \
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('old', 'user', 'Hello there', 1), \
         ('old', 'assistant', 'Hi.', 2);",
    )
    .unwrap();
    drop(conn);
    let source = HermesSource::open(&db).unwrap();
    assert_eq!(listed(&source.list().unwrap()), vec![("hermes:old", 1_785_578_400_500, None)]);
    assert_eq!(source.read_title("hermes:old").unwrap().as_deref(), Some("Hello there"));
    assert_eq!(items(&conv(&source, "hermes:old").items), vec![(U, "Hello there", false), (A, "Hi.", false)]);
    let prints = source.fingerprints(&["hermes:old".to_owned()]).unwrap().unwrap();
    assert!(prints[0].is_some());
}

// ----------------------------------------------------------------------- Warp

/// Protobuf's wire format (shared with the other tests that write Warp's tasks).
#[allow(dead_code)]
mod pb {
    include!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/protobuf.rs"));
}

fn warp_db(dir: &Path) -> PathBuf {
    let db = dir.join("warp.sqlite");
    build_db("warp", &db, &["schema.sql", "sessions.sql"]);
    db
}

#[test]
fn warp_fixture_projects_exactly() {
    let state = tempfile::tempdir().unwrap();
    let db = warp_db(state.path());
    // Warp's state directory is taken for its warp.sqlite.
    let source = WarpSource::open(state.path()).unwrap();
    assert_eq!(source.path(), db);
    let listing = source.list().unwrap();
    assert!(listing.rejected.is_empty(), "{:?}", listing.rejected);
    let (c1, c2, c6) = (
        "warp:c1a5e000-0000-4000-8000-000000000001",
        "warp:c2b6f000-0000-4000-8000-000000000002",
        "warp:c6fa0000-0000-4000-8000-000000000006",
    );
    // Not the child agent's, the hidden code-diff one, or the one without
    // a task.
    assert_eq!(
        listed(&listing),
        vec![
            (c1, 1_785_661_200_000, Some("/home/u/app")),
            (c2, 1_785_574_800_000, None),
            (c6, 1_785_412_800_000, Some("/home/u/lost"))
        ]
    );
    assert_eq!(source.read_title(c1).unwrap().as_deref(), Some("Fix the failing build"));
    assert_eq!(source.read_title(c2).unwrap().as_deref(), Some("Explain this error"));
    // The summary in place of what came before it, then what followed: no
    // reasoning, tool call or result, system query, todos or subtask; the
    // damaged message counted.
    assert_eq!(
        conv(&source, c1).to_snapshot_json(),
        json!({
            "session": {"id": c1, "cwd": "/home/u/app"},
            "capturedThroughSeq": 11,
            "conversation": [
                {"role": "user", "text": "Summary: the build failed on a stale lockfile, which was regenerated.", "checkpoint": true},
                {"role": "user", "text": "Now run the tests"},
                {"role": "assistant", "text": "All tests pass."},
            ],
        })
    );
    // Of two root tasks, the one with messages.
    let b = conv(&source, c2);
    assert_eq!(items(&b.items), vec![(U, "Explain   this\nerror", false), (A, "It is a typo.", false)]);
    assert_eq!(b.captured_through_seq.as_ref().and_then(|n| n.as_u64()), Some(2));
    assert_eq!(b.cwd, None);
    let err = source.read_surface(c6).unwrap_err().message().to_owned();
    assert!(err.contains("no root task decodes: task \"t6-root\": a field of") && err.contains("warp.sqlite"), "{err}");
    let err = source.read_title("warp:nope").unwrap_err().message().to_owned();
    assert!(err.contains("no such conversation"), "{err}");
    assert_eq!(names(state.path()), set(&["warp.sqlite"]), "reading created nothing");
    assert_eq!(warp::PREFIX, SourceKind::Warp.prefix());
    let env = |name: &str| match name {
        "HOME" => Some("/h".into()),
        _ => None,
    };
    let at = SourceKind::Warp.default_location_with(&env);
    if cfg!(target_os = "macos") {
        let group = "/h/Library/Group Containers/2BBY89MBSN.dev.warp/Library/Application Support";
        assert_eq!(at, PathBuf::from(format!("{group}/dev.warp.Warp-Stable/warp.sqlite")));
    } else if !cfg!(windows) {
        assert_eq!(at, PathBuf::from("/h/.local/state/warp-terminal/warp.sqlite"));
        let env = |name: &str| (name == "XDG_STATE_HOME").then(|| "/s".into());
        assert_eq!(SourceKind::Warp.default_location_with(&env), PathBuf::from("/s/warp-terminal/warp.sqlite"));
    }
}

#[test]
fn warp_reads_a_database_from_before_the_summary_column() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("warp.sqlite");
    let schema = std::fs::read_to_string(fixtures("warp").join("schema.sql")).unwrap();
    let first = &schema[..schema.find("ALTER TABLE agent_conversations DROP").unwrap()];
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(first).unwrap();
    conn.execute(
        "INSERT INTO agent_conversations (conversation_id, active_task_id, conversation_data, last_modified_at) \
         VALUES ('old', 'root', '{\"server_conversation_token\":null}', '2025-07-01 08:00:00')",
        [],
    )
    .unwrap();
    let said = [(true, "Hello there".to_owned()), (false, "Hi.".to_owned())];
    conn.execute(
        "INSERT INTO agent_tasks (conversation_id, task_id, task) VALUES ('old', 'root', ?1)",
        [pb::task("root", &said)],
    )
    .unwrap();
    drop(conn);
    let source = WarpSource::open(&db).unwrap();
    assert_eq!(listed(&source.list().unwrap()), vec![("warp:old", 1_751_356_800_000, None)]);
    assert_eq!(source.read_title("warp:old").unwrap().as_deref(), Some("Hello there"));
    assert_eq!(items(&conv(&source, "warp:old").items), vec![(U, "Hello there", false), (A, "Hi.", false)]);
    assert!(source.fingerprints(&["warp:old".to_owned()]).unwrap().unwrap()[0].is_some());
}

#[test]
fn warp_says_what_a_database_of_another_format_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("warp.sqlite");
    Connection::open(&db).unwrap().execute_batch("CREATE TABLE t (x)").unwrap();
    let err = WarpSource::open(&db).unwrap().list().unwrap_err();
    assert!(err.contains("is not a Warp database with agent conversations"), "{err}");
}

// ------------------------------------------------------- every SQLite kind

/// A SQLite kind as the generic tests see it: how to build its database
/// with one session `w` (no message yet), and how a writer commits one
/// turn of it (`q<n>` then `a<n>`, in one transaction).
struct Case {
    kind: SourceKind,
    file: &'static str,
    setup: fn(&Path),
    write_turn: fn(&Connection, i64),
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            kind: SourceKind::Warp,
            file: "warp.sqlite",
            setup: |db| build_db("warp", db, &["schema.sql"]),
            // Warp saves the conversation and its whole task set each time,
            // upserting by id: turns 0..=n in the root task.
            write_turn: |conn, n| {
                let said: Vec<(bool, String)> =
                    (0..=n).flat_map(|k| [(true, format!("q{k}")), (false, format!("a{k}"))]).collect();
                let tx = conn.unchecked_transaction().unwrap();
                tx.execute(
                    "INSERT INTO agent_conversations (conversation_id, conversation_data, summary) \
                     VALUES ('w', '{}', '{\"title\":\"q0\",\"is_restorable\":true}') \
                     ON CONFLICT (conversation_id) DO UPDATE SET conversation_data = excluded.conversation_data, \
                     summary = excluded.summary",
                    [],
                )
                .unwrap();
                tx.execute(
                    "INSERT INTO agent_tasks (conversation_id, task_id, task) VALUES ('w', 'root', ?1) \
                     ON CONFLICT (task_id) DO UPDATE SET task = excluded.task",
                    [pb::task("root", &said)],
                )
                .unwrap();
                tx.commit().unwrap();
            },
        },
        Case {
            kind: SourceKind::Hermes,
            file: "state.db",
            setup: |db| {
                build_db("hermes", db, &["schema.sql"]);
                Connection::open(db)
                    .unwrap()
                    .execute("INSERT INTO sessions (id, source, started_at) VALUES ('w', 'cli', 1785578400)", [])
                    .unwrap();
            },
            write_turn: |conn, n| {
                let tx = conn.unchecked_transaction().unwrap();
                for (role, text) in [("user", format!("q{n}")), ("assistant", format!("a{n}"))] {
                    tx.execute(
                        "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('w', ?1, ?2, ?3)",
                        (role, text, 1_785_578_400 + n),
                    )
                    .unwrap();
                }
                tx.commit().unwrap();
            },
        },
        Case {
            kind: SourceKind::Zed,
            file: "threads.db",
            setup: |db| build_db("zed", db, &["schema.sql"]),
            // Zed saves the whole thread each time: turns 0..=n, compressed
            // on odd turns.
            write_turn: |conn, n| {
                let mut messages = Vec::new();
                for k in 0..=n {
                    messages.push(json!({"User": {"id": format!("u{k}"), "content": [{"Text": format!("q{k}")}]}}));
                    messages.push(json!({"Agent": {"content": [{"Text": format!("a{k}")}], "tool_results": {}}}));
                }
                let document = json!({"version": "0.3.0", "title": "W", "updated_at": "2026-08-01T00:00:00Z", "messages": messages});
                let data_type = if n % 2 == 1 { "zstd" } else { "json" };
                conn.execute(
                    "INSERT OR REPLACE INTO threads (id, summary, updated_at, data_type, data, created_at) \
                     VALUES ('w', 'W', ?1, ?2, ?3, '2026-08-01T00:00:00Z')",
                    (format!("2026-08-01T00:00:{:02}.{n:06}Z", n % 60), data_type, zed_data(data_type, &document)),
                )
                .unwrap();
            },
        },
        Case {
            kind: SourceKind::Crush,
            file: "crush.db",
            setup: |db| {
                build_db("crush", db, &["schema.sql"]);
                Connection::open(db)
                    .unwrap()
                    .execute("INSERT INTO sessions (id, title, updated_at, created_at) VALUES ('w', 'W', 1, 1)", [])
                    .unwrap();
            },
            write_turn: |conn, n| {
                let tx = conn.unchecked_transaction().unwrap();
                for (k, role, text) in [(0, "user", format!("q{n}")), (1, "assistant", format!("a{n}"))] {
                    let parts = json!([{"type": "text", "data": {"text": text}}]).to_string();
                    tx.execute(
                        "INSERT INTO messages (id, session_id, role, parts, created_at, updated_at) \
                         VALUES (?1, 'w', ?2, ?3, ?4, ?4)",
                        (format!("w{n:06}{k}"), role, parts, 1_785_578_400 + n),
                    )
                    .unwrap();
                }
                tx.commit().unwrap();
            },
        },
        Case {
            kind: SourceKind::Goose,
            file: "sessions.db",
            setup: |db| {
                build_db("goose", db, &["schema.sql"]);
                Connection::open(db)
                    .unwrap()
                    .execute(
                        "INSERT INTO sessions (id, working_dir, created_at) VALUES ('w', '/w', '2026-08-01 10:00:00')",
                        [],
                    )
                    .unwrap();
            },
            write_turn: |conn, n| {
                let tx = conn.unchecked_transaction().unwrap();
                for (role, text) in [("user", format!("q{n}")), ("assistant", format!("a{n}"))] {
                    let content = json!([{"type": "text", "text": text}]).to_string();
                    tx.execute(
                    "INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES ('w', ?1, ?2, ?3)",
                    (role, content, 1_785_578_400 + n),
                )
                .unwrap();
                }
                tx.commit().unwrap();
            },
        },
    ]
}

#[test]
fn every_sqlite_kind_reads_consistently_while_written_and_gains_no_file() {
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join(case.file);
        (case.setup)(&db);
        (case.write_turn)(&Connection::open(&db).unwrap(), 0);
        let allowed = set(&[case.file, &format!("{}-wal", case.file), &format!("{}-shm", case.file)]);
        assert_eq!(names(dir.path()), set(&[case.file]), "{:?}", case.kind);
        let multi = open_sources(&[SourceSpec::new(case.kind, &db)]).unwrap();
        let id = format!("{}w", case.kind.prefix());
        let read = || match block_on(multi.read_surface(&id)).unwrap() {
            SurfaceData::Conversation(c) => c,
            _ => panic!("not a conversation"),
        };
        let mut seen = check_consistent(&read(), 2);
        assert_eq!(names(dir.path()), set(&[case.file]), "{:?}: an immutable read creates nothing", case.kind);
        // A writer that keeps its connection open (so -wal and -shm exist),
        // checkpointing often, while this thread reads; then one that
        // opens, commits and closes again and again (checkpointing into the
        // database file and removing its -wal), so reads alternate between
        // the two ways and the file changes under immutable reads.
        let turns = 80;
        let writer = {
            let (db, write_turn) = (db.clone(), case.write_turn);
            std::thread::spawn(move || {
                let conn = Connection::open(&db).unwrap();
                conn.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
                conn.pragma_update(None, "wal_autocheckpoint", 4).unwrap();
                for n in 1..turns {
                    write_turn(&conn, n);
                }
                drop(conn);
                for n in turns..turns + 30 {
                    let conn = Connection::open(&db).unwrap();
                    conn.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
                    write_turn(&conn, n);
                }
            })
        };
        let mut reads = 0;
        while !writer.is_finished() {
            seen = check_consistent(&read(), seen);
            reads += 1;
            let now = names(dir.path());
            assert!(now.is_subset(&allowed), "{:?}: {now:?}", case.kind);
        }
        writer.join().unwrap();
        check_consistent(&read(), (turns as usize + 30) * 2);
        let listed = block_on(multi.list_sessions()).unwrap();
        assert_eq!(listed.len(), 1, "{:?}", case.kind);
        assert!(reads > 0);
        let now = names(dir.path());
        assert!(now.is_subset(&allowed), "{:?}: {now:?}", case.kind);
    }
}

#[test]
fn every_sqlite_kind_fingerprints_follow_the_rows() {
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join(case.file);
        (case.setup)(&db);
        let conn = Connection::open(&db).unwrap();
        (case.write_turn)(&conn, 0);
        let multi = open_sources(&[SourceSpec::new(case.kind, &db)]).unwrap();
        let ids = vec![format!("{}w", case.kind.prefix()), format!("{}nope", case.kind.prefix())];
        let before = block_on(multi.fingerprints(&ids)).unwrap().unwrap();
        assert!(before[0].is_some() && before[1].is_none(), "{:?}: {before:?}", case.kind);
        assert_eq!(before, block_on(multi.fingerprints(&ids)).unwrap().unwrap(), "{:?}", case.kind);
        (case.write_turn)(&conn, 1);
        drop(conn);
        let after = block_on(multi.fingerprints(&ids)).unwrap().unwrap();
        assert_ne!(before[0], after[0], "{:?}: a new turn changes the fingerprint", case.kind);
    }
}
