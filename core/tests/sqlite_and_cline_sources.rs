//! The OpenCode and Kilo sources (SQLite, read-only): the fixture's
//! listing, titles and snapshots pinned, a database read while another
//! connection (in this process, and in another one) writes it, and every
//! way a database can refuse a read.

use std::path::{Path, PathBuf};

use dsh_session_reference::sources::cline::{self, ClineSource};
use dsh_session_reference::sources::opencode::{Flavor, OpenCodeSource};
use dsh_session_reference::sources::{open_sources, SourceKind, SourceSpec};
use dsh_session_reference::{
    block_on, BlockingSessionQuery, CandidateOptions, Config, ConversationItem, PrepareOptions, Resolver, SessionQuery,
    SurfaceData, Target,
};
use rusqlite::Connection;
use serde_json::json;

mod sqlite_writes {
    include!("support/sqlite_writes.rs");
}
use sqlite_writes::{check_consistent, names, set};

fn foreign() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/foreign-logs")
}

fn fixtures() -> PathBuf {
    foreign().join("opencode")
}

fn cline_root() -> PathBuf {
    foreign().join("cline/saoudrizwan.claude-dev")
}

fn roo_root() -> PathBuf {
    foreign().join("roo-code/rooveterinaryinc.roo-cline")
}

/// `(id, createdAt, cwd)` of a listing, all of it listed.
fn listed(l: dsh_session_reference::sources::foreign::Listing) -> Vec<(String, u64, Option<String>)> {
    assert!(l.rejected.is_empty(), "{:?}", l.rejected);
    l.sessions.into_iter().map(|s| (s.header.id, s.header.created_at.as_u64().unwrap(), s.header.cwd)).collect()
}

fn conv<S: BlockingSessionQuery>(source: &S, id: &str) -> std::sync::Arc<dsh_session_reference::Conversation> {
    match source.read_surface(id).unwrap() {
        SurfaceData::Conversation(c) => c,
        _ => panic!("{id}: not a conversation"),
    }
}

/// A WAL-mode database at `path` holding the fixture's rows, closed (so
/// nothing lies beside it).
fn fixture_db(path: &Path) {
    let conn = Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    for file in ["schema.sql", "sessions.sql"] {
        conn.execute_batch(&std::fs::read_to_string(fixtures().join(file)).unwrap()).unwrap();
    }
}

/// `(is_user, text, checkpoint)` of each item.
fn items(list: &[ConversationItem]) -> Vec<(bool, &str, bool)> {
    list.iter().map(|i| (i.role.as_str() == "user", i.text.as_str(), i.checkpoint)).collect()
}

fn surface(source: &OpenCodeSource, id: &str) -> std::sync::Arc<dsh_session_reference::Conversation> {
    match source.read_surface(id).unwrap() {
        SurfaceData::Conversation(c) => c,
        _ => panic!("{id}: not a conversation"),
    }
}

#[test]
fn opencode_fixture_projects_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    fixture_db(&db);
    assert_eq!(names(dir.path()), set(&["opencode.db"]));
    let source = OpenCodeSource::open(&db, Flavor::OpenCode).unwrap();
    let listing = source.list().unwrap();
    assert!(listing.rejected.is_empty(), "{:?}", listing.rejected);
    let listed: Vec<(&str, u64, Option<&str>)> = listing
        .sessions
        .iter()
        .map(|s| (s.header.id.as_str(), s.header.created_at.as_u64().unwrap(), s.header.cwd.as_deref()))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("opencode:ses_b", 1_767_100_000_000, Some("/work/b")),
            ("opencode:ses_a", 1_767_000_000_000, Some("/work/a"))
        ]
    );
    // A placeholder title gives way to the first user text; an own title stays.
    assert_eq!(source.read_title("opencode:ses_a").unwrap().as_deref(), Some("Fix the build please"));
    assert_eq!(source.read_title("opencode:ses_b").unwrap().as_deref(), Some("Refactor the parser"));

    // The summary of the compaction, then the tail it kept, then what came
    // after: not the harness's "continue", not the failed reply, not the
    // ignored text, no reasoning or tool, nothing reverted.
    let a = surface(&source, "opencode:ses_a");
    assert_eq!(
        a.to_snapshot_json(),
        json!({
            "session": {"id": "opencode:ses_a", "cwd": "/work/a"},
            "capturedThroughSeq": 13,
            "conversation": [
                {"role": "user", "text": "Summary: the build needed a rule; it is fixed.", "checkpoint": true},
                {"role": "user", "text": "Older question"},
                {"role": "assistant", "text": "Older answer"},
                {"role": "assistant", "text": "Aborted, but said"},
                {"role": "user", "text": "Now add tests"},
                {"role": "assistant", "text": "Tests added."},
            ],
        })
    );
    let b = surface(&source, "opencode:ses_b");
    assert_eq!(b.captured_through_seq.as_ref().and_then(|n| n.as_u64()), Some(6));
    assert_eq!(
        items(&b.items),
        vec![
            (true, "Summary: the parser is split into a lexer and a parser.", true),
            (true, "Now document both", false),
            (false, "Summary in progress", false),
        ]
    );
    // Not listed: a subagent's session, one without a message; unknown ids fail naming the database.
    let err = source.read_title("opencode:ses_nope").unwrap_err().message().to_owned();
    assert!(err.contains("no such session") && err.contains("opencode.db"), "{err}");
    assert_eq!(names(dir.path()), set(&["opencode.db"]), "reading created nothing");
}

#[test]
fn kilo_reads_the_same_schema_under_its_own_ids_beside_the_others() {
    let data = tempfile::tempdir().unwrap();
    fixture_db(&data.path().join("kilo.db"));
    let codex = tempfile::tempdir().unwrap();
    std::fs::create_dir(codex.path().join("sessions")).unwrap();
    // A data directory holding kilo.db is taken for it, and said so.
    let specs = [SourceSpec::new(SourceKind::Kilo, data.path()), SourceSpec::new(SourceKind::Codex, codex.path())];
    let multi = open_sources(&specs).unwrap();
    let listed = block_on(multi.list_sessions()).unwrap();
    let ids: Vec<&str> = listed.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["kilo:ses_b", "kilo:ses_a"]);
    let report = multi.last_report();
    assert!(report[0].note.as_deref().unwrap().contains("is a directory holding kilo.db"), "{report:?}");
    assert_eq!(block_on(multi.read_title("kilo:ses_a")).unwrap().as_deref(), Some("Fix the build please"));
    let SurfaceData::Conversation(c) = block_on(multi.read_surface("kilo:ses_b")).unwrap() else { panic!() };
    assert_eq!(c.session_id, "kilo:ses_b");
    assert_eq!(names(data.path()), set(&["kilo.db"]));
    // Every default location is looked at: a database kind's is a file.
    assert!(SourceKind::Kilo.root_exists(data.path()) && SourceKind::Kilo.root_exists(&data.path().join("kilo.db")));
    assert!(!SourceKind::OpenCode.root_exists(data.path()));
}

/// Parts stored out of order (a message's later part first, the messages'
/// parts interleaved) read in OpenCode's order, each message's by part id,
/// as a database whose rows were written in that order reads.
#[test]
fn parts_stored_out_of_order_read_in_part_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    fixture_db(&db);
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) \
         VALUES ('ses_o', 'prj_1', 'o', '/o', 'Out of order', '1', 1767600000000, 1767600000000)",
    )
    .unwrap();
    for (k, role) in [(1, "user"), (2, "assistant")] {
        let data = json!({"role": role, "time": {"created": k}, "parentID": "msg_o1", "finish": "stop"});
        conn.execute(
            "INSERT INTO message VALUES (?1, 'ses_o', ?2, ?2, ?3)",
            (format!("msg_o{k}"), 1_767_600_000_000i64 + k, data.to_string()),
        )
        .unwrap();
    }
    for (message, part, text) in [
        ("msg_o2", "prt_o9", "third"),
        ("msg_o1", "prt_o2", "two"),
        ("msg_o2", "prt_o10", "first"),
        ("msg_o2", "prt_o5", "second"),
        ("msg_o1", "prt_o1", "one"),
    ] {
        let data = json!({"type": "text", "text": text});
        conn.execute(
            "INSERT INTO part VALUES (?1, ?2, 'ses_o', 1767600000000, 1767600000000, ?3)",
            (part, message, data.to_string()),
        )
        .unwrap();
    }
    drop(conn);
    let source = OpenCodeSource::open(&db, Flavor::OpenCode).unwrap();
    // Part ids order as text: prt_o10 before prt_o5 before prt_o9.
    assert_eq!(
        items(&surface(&source, "opencode:ses_o").items),
        vec![(true, "one\ntwo", false), (false, "first\nsecond\nthird", false)]
    );
    assert_eq!(names(dir.path()), set(&["opencode.db"]));
}

/// One turn a writer commits at once: a user message and its reply, each
/// with a text part.
fn write_turn(conn: &Connection, n: i64) {
    let t: i64 = 1_767_500_000_000 + n * 10;
    let tx = conn.unchecked_transaction().unwrap();
    for (k, role, text) in [(0, "user", format!("q{n}")), (1, "assistant", format!("a{n}"))] {
        let id = format!("msg_w{n:06}{k}");
        let data =
            json!({"role": role, "time": {"created": t + k}, "parentID": format!("msg_w{n:06}0"), "finish": "stop"});
        tx.execute("INSERT INTO message VALUES (?1, 'ses_w', ?2, ?2, ?3)", (&id, t + k, data.to_string())).unwrap();
        let part = json!({"type": "text", "text": text});
        tx.execute(
            "INSERT INTO part VALUES (?1, ?2, 'ses_w', ?3, ?3, ?4)",
            (format!("prt_{id}"), &id, t + k, part.to_string()),
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

/// The fixture database in `dir` plus a session `ses_w` with its first
/// turn, for a writer to go on with (closed: nothing lies beside it).
fn written_db(dir: &Path) -> PathBuf {
    let db = dir.join("opencode.db");
    fixture_db(&db);
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) \
         VALUES ('ses_w', 'prj_1', 'w', '/w', 'written', '1', 1767500000000, 1767500000000)",
    )
    .unwrap();
    write_turn(&conn, 0);
    db
}

#[test]
fn a_database_being_written_reads_consistently_and_gains_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = written_db(dir.path());
    assert_eq!(names(dir.path()), set(&["opencode.db"]));
    let source = OpenCodeSource::open(&db, Flavor::OpenCode).unwrap();
    let id = "opencode:ses_w";
    let mut seen = check_consistent(&surface(&source, id), 2);
    assert_eq!(names(dir.path()), set(&["opencode.db"]), "an immutable read creates nothing");

    // A writer that keeps its connection open (so -wal and -shm exist),
    // checkpointing often, in another thread while this one reads.
    let turns = 150;
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            let conn = Connection::open(&db).unwrap();
            conn.pragma_update(None, "wal_autocheckpoint", 4).unwrap();
            for n in 1..turns {
                write_turn(&conn, n);
            }
        })
    };
    while !writer.is_finished() {
        seen = check_consistent(&surface(&source, id), seen);
        let now = names(dir.path());
        assert!(now.is_subset(&set(&["opencode.db", "opencode.db-wal", "opencode.db-shm"])), "{now:?}");
    }
    writer.join().unwrap();
    check_consistent(&surface(&source, id), (turns as usize) * 2);

    // A writer that opens, commits one turn and closes (checkpointing into
    // the database file and removing its -wal) again and again, so reads
    // alternate between the two ways and the file changes under immutable
    // reads.
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for n in turns..turns + 60 {
                let conn = Connection::open(&db).unwrap();
                conn.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
                write_turn(&conn, n);
            }
        })
    };
    let mut seen = 0;
    while !writer.is_finished() {
        seen = check_consistent(&surface(&source, id), seen);
    }
    writer.join().unwrap();
    check_consistent(&surface(&source, id), (turns as usize + 60) * 2);
    // What is left beside the database is what the writer left, nothing else.
    let now = names(dir.path());
    assert!(now.is_subset(&set(&["opencode.db", "opencode.db-wal", "opencode.db-shm"])), "{now:?}");
}

/// The environment variable that makes [`wal_writer_process`] the writer
/// of the database it names (set only by the test that starts it).
const WRITER_DB: &str = "DSR_TEST_WAL_WRITER_DB";

/// How long the cross-process test may take before it kills its writer and
/// fails (it takes well under a second when the machine is idle).
const WRITER_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// The writer process of
/// [`a_database_written_by_another_process_reads_consistently_and_gains_no_file`]:
/// this test binary started again running only this test, with
/// [`WRITER_DB`] set. It obeys one command a line on its standard input and
/// answers each with a line when it is done:
///
/// - `run A B`: commits turns `A..B` on the connection it keeps open
///   (opened on the first `run`, WAL mode, checkpointing every few pages),
///   saying `started` after the first commit and `ran B` at the end;
/// - `close`: closes that connection (the last one: SQLite checkpoints and
///   removes the `-wal` and `-shm`), answering `closed`;
/// - `reopen A B`: for each turn opens a connection, commits it and closes
///   it again, answering `started` after the first and `ran B` at the end.
///
/// It stops at the end of its input (the test ended, or died) and after
/// the deadline whatever happens. Without [`WRITER_DB`] it does nothing.
#[test]
#[ignore = "the writer process of a cross-process test, started by it"]
fn wal_writer_process() {
    use std::io::{BufRead as _, Write as _};
    let Some(db) = std::env::var_os(WRITER_DB) else { return };
    let start = std::time::Instant::now();
    let open = || {
        let conn = Connection::open(&db).unwrap();
        conn.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
        conn.pragma_update(None, "journal_mode", "wal").unwrap();
        conn
    };
    let say = |line: &str| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}").unwrap();
        out.flush().unwrap();
    };
    let range =
        |a: Option<&str>, b: Option<&str>| -> (i64, i64) { (a.unwrap().parse().unwrap(), b.unwrap().parse().unwrap()) };
    let mut kept: Option<Connection> = None;
    for line in std::io::stdin().lock().lines() {
        assert!(start.elapsed() < WRITER_DEADLINE, "the writer ran past its deadline");
        let line = line.unwrap();
        let mut words = line.split_whitespace();
        match words.next() {
            Some("run") => {
                let (a, b) = range(words.next(), words.next());
                let conn = kept.get_or_insert_with(|| {
                    let conn = open();
                    conn.pragma_update(None, "wal_autocheckpoint", 4).unwrap();
                    conn
                });
                for n in a..b {
                    write_turn(conn, n);
                    if n == a {
                        say("started");
                    }
                }
                say(&format!("ran {b}"));
            }
            Some("close") => {
                drop(kept.take());
                say("closed");
            }
            Some("reopen") => {
                let (a, b) = range(words.next(), words.next());
                for n in a..b {
                    write_turn(&open(), n);
                    if n == a {
                        say("started");
                    }
                }
                say(&format!("ran {b}"));
            }
            other => panic!("the writer was told {other:?}"),
        }
    }
}

/// The writer process as the test sees it: its input, its answers (read
/// on a thread, so that waiting for one has a deadline) and a kill when
/// the test ends, however it ends.
struct Writer {
    child: std::process::Child,
    input: std::process::ChildStdin,
    answers: std::sync::mpsc::Receiver<String>,
    deadline: std::time::Instant,
}

impl Writer {
    fn start(db: &Path) -> Writer {
        use std::io::BufRead as _;
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["wal_writer_process", "--exact", "--ignored", "--nocapture", "--test-threads=1", "-q"])
            .env(WRITER_DB, db)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = std::io::BufReader::new(child.stdout.take().unwrap());
        let (send, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // The test harness's own lines ("running 1 test", …) are not answers.
            let words = ["started", "ran", "closed"];
            for line in output.lines().map_while(Result::ok) {
                if words.iter().any(|w| line.starts_with(w)) && send.send(line).is_err() {
                    return;
                }
            }
        });
        Writer { child, input, answers, deadline: std::time::Instant::now() + WRITER_DEADLINE }
    }

    fn tell(&mut self, command: &str) {
        use std::io::Write as _;
        writeln!(self.input, "{command}").unwrap();
        self.input.flush().unwrap();
    }

    /// The next answer, waiting for it at most until the deadline.
    fn answer(&self) -> String {
        let left = self.deadline.saturating_duration_since(std::time::Instant::now());
        self.answers.recv_timeout(left).expect("the writer process answered in time")
    }

    /// The next answer if there is one already.
    fn answered(&self) -> Option<String> {
        assert!(std::time::Instant::now() < self.deadline, "the writer process took too long");
        match self.answers.try_recv() {
            Ok(a) => Some(a),
            Err(std::sync::mpsc::TryRecvError::Empty) => None,
            Err(e) => panic!("the writer process ended: {e}"),
        }
    }

    /// Kills it and waits for it (it holds no lock after that).
    fn kill(mut self) {
        let _ = self.child.kill();
        self.child.wait().unwrap();
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_database_written_by_another_process_reads_consistently_and_gains_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = written_db(dir.path());
    let only_db = set(&["opencode.db"]);
    let with_wal = set(&["opencode.db", "opencode.db-wal", "opencode.db-shm"]);
    let source = OpenCodeSource::open(&db, Flavor::OpenCode).unwrap();
    let id = "opencode:ses_w";
    let mut writer = Writer::start(&db);

    // Reads while the other process commits on a connection it keeps open:
    // each sees whole turns, never fewer than before, and nothing but the
    // writer's own -wal and -shm appears.
    // Reads until the writer answers: each consistent, with at least
    // `seen` turns, and no file beside the database but the writer's own.
    let read_while_writing = |writer: &Writer, mut seen: usize| loop {
        seen = check_consistent(&surface(&source, id), seen);
        let now = names(dir.path());
        assert!(now.is_subset(&with_wal), "{now:?}");
        if let Some(done) = writer.answered() {
            break done;
        }
    };
    let (kept, reopened): (usize, usize) = (200, 260);
    writer.tell(&format!("run 1 {kept}"));
    assert_eq!(writer.answer(), "started");
    // (At least one read after the writer's first commit, however the
    // two processes are scheduled.)
    let done = read_while_writing(&writer, 2);
    assert_eq!(done, format!("ran {kept}"));
    // The writer is idle with its connection open: a read sees every turn
    // and leaves the writer's -wal as it is.
    assert_eq!(names(dir.path()), with_wal, "the writer's connection is open");
    let wal = std::fs::read(dir.path().join("opencode.db-wal")).unwrap();
    assert_eq!(check_consistent(&surface(&source, id), kept * 2), kept * 2);
    assert_eq!(source.read_title(id).unwrap().as_deref(), Some("written"));
    assert_eq!(std::fs::read(dir.path().join("opencode.db-wal")).unwrap(), wal, "a read wrote to the -wal");
    assert_eq!(names(dir.path()), with_wal);

    // The writer closes (the last connection: SQLite removes its files);
    // with no writer, reads create nothing.
    writer.tell("close");
    assert_eq!(writer.answer(), "closed");
    assert_eq!(names(dir.path()), only_db);
    assert_eq!(check_consistent(&surface(&source, id), kept * 2), kept * 2);
    assert_eq!(source.list().unwrap().sessions.len(), 3);
    assert_eq!(names(dir.path()), only_db, "a read with no writer created a file");

    // A writer that opens, commits one turn and closes again and again:
    // reads alternate between the immutable and the WAL way while the file
    // changes under them.
    writer.tell(&format!("reopen {kept} {reopened}"));
    assert_eq!(writer.answer(), "started");
    let done = read_while_writing(&writer, kept * 2);
    assert_eq!(done, format!("ran {reopened}"));
    assert_eq!(check_consistent(&surface(&source, id), reopened * 2), reopened * 2);

    // The writer dies with its connection open after committing (its
    // -wal and -shm stay, with no process holding them): still read whole,
    // and its -wal is left as it was.
    let crashed = reopened + 20;
    writer.tell(&format!("run {reopened} {crashed}"));
    assert_eq!(writer.answer(), "started");
    assert_eq!(writer.answer(), format!("ran {crashed}"));
    writer.kill();
    assert_eq!(names(dir.path()), with_wal, "a killed writer leaves its files");
    let wal = std::fs::read(dir.path().join("opencode.db-wal")).unwrap();
    assert_eq!(check_consistent(&surface(&source, id), crashed * 2), crashed * 2);
    assert_eq!(std::fs::read(dir.path().join("opencode.db-wal")).unwrap(), wal, "a read wrote to the -wal");
    assert_eq!(names(dir.path()), with_wal);
}

/// Why the reader does not simply open read-only: SQLite's read-only mode
/// creates the -wal and -shm of a WAL database that has none (and leaves
/// them). If this ever stops being true, the rule could be simpler.
#[test]
fn sqlite_read_only_mode_alone_creates_files_beside_a_wal_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    fixture_db(&db);
    {
        let conn = Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let n: i64 = conn.query_row("SELECT count(*) FROM session", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 4);
    }
    assert_eq!(names(dir.path()), set(&["opencode.db", "opencode.db-shm", "opencode.db-wal"]));
}

#[test]
fn a_database_that_cannot_be_read_without_writing_is_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    fixture_db(&db);
    let source = OpenCodeSource::open(&db, Flavor::OpenCode).unwrap();
    // A -wal without its -shm (left by a crash).
    std::fs::write(dir.path().join("opencode.db-wal"), b"").unwrap();
    let err = source.list().unwrap_err();
    assert!(err.contains("-wal file but no -shm"), "{err}");
    std::fs::remove_file(dir.path().join("opencode.db-wal")).unwrap();
    // A rollback journal (a write in progress, or interrupted).
    std::fs::write(dir.path().join("opencode.db-journal"), b"").unwrap();
    let err = source.read_title("opencode:ses_a").unwrap_err().message().to_owned();
    assert!(err.contains("rollback journal") && err.contains("ses_a"), "{err}");
    std::fs::remove_file(dir.path().join("opencode.db-journal")).unwrap();
    assert_eq!(names(dir.path()), set(&["opencode.db"]));
    assert_eq!(source.list().unwrap().sessions.len(), 2, "readable again");

    // Not a database, and a database of another program: the error names the file.
    let other = dir.path().join("other.db");
    std::fs::write(&other, b"not sqlite at all, just some text that is long enough to be a header").unwrap();
    let err = OpenCodeSource::open(&other, Flavor::OpenCode).unwrap().list().unwrap_err();
    assert!(
        err.ends_with("other.db is not an OpenCode database (1.2 or later): it is not an SQLite database"),
        "{err}"
    );
    let empty = dir.path().join("empty.db");
    Connection::open(&empty).unwrap().execute_batch("CREATE TABLE t(x)").unwrap();
    let err = OpenCodeSource::open(&empty, Flavor::Kilo).unwrap().list_sessions().unwrap_err().message().to_owned();
    assert!(err.ends_with("empty.db is not a Kilo database (1.2 or later): it has no table session"), "{err}");
    assert!(!err.contains("no such"), "{err}");
    // Tables of the name without the columns read: the same error, not SQLite's.
    let bare = dir.path().join("bare.db");
    Connection::open(&bare)
        .unwrap()
        .execute_batch("CREATE TABLE session(id TEXT); CREATE TABLE message(id TEXT); CREATE TABLE part(id TEXT)")
        .unwrap();
    let source = OpenCodeSource::open(&bare, Flavor::OpenCode).unwrap();
    let err = source.list().unwrap_err();
    assert!(err.contains("bare.db is not an OpenCode database (1.2 or later): it has no column"), "{err}");
    assert!(!err.contains("no such"), "{err}");
    let err = source.read_title("opencode:ses_a").unwrap_err().message().to_owned();
    assert!(err.contains("is not an OpenCode database (1.2 or later): it has no column"), "{err}");
    assert!(!err.contains("no such"), "{err}");
    // A missing file or a directory without the database.
    let err = OpenCodeSource::open(dir.path().join("none.db"), Flavor::OpenCode).unwrap_err().to_string();
    assert!(err.contains("none.db"), "{err}");
    assert!(OpenCodeSource::open(tempfile::tempdir().unwrap().path(), Flavor::Kilo).is_err());
}

#[test]
fn fingerprints_change_for_the_session_that_changed_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    fixture_db(&db);
    let source = OpenCodeSource::open(&db, Flavor::OpenCode).unwrap();
    let ids = vec!["opencode:ses_a".to_owned(), "opencode:ses_b".to_owned(), "opencode:ses_child".to_owned()];
    let before = source.fingerprints(&ids).unwrap().unwrap();
    assert!(before[0].is_some() && before[1].is_some());
    assert_eq!(before[2], None, "not a listed session: read afresh");
    assert_eq!(source.fingerprints(&ids).unwrap().unwrap(), before, "nothing changed");
    {
        let conn = Connection::open(&db).unwrap();
        conn.execute(
            "INSERT INTO part VALUES ('prt_b502', 'msg_b5', 'ses_b', 1767100005001, 1767100005001, \
             '{\"type\":\"text\",\"text\":\"and the lexer\"}')",
            [],
        )
        .unwrap();
    }
    let after = source.fingerprints(&ids).unwrap().unwrap();
    assert_eq!(after[0], before[0], "ses_a did not change");
    assert_ne!(after[1], before[1], "ses_b gained a part");
    let listing = source.shared_listing().unwrap().unwrap();
    assert_eq!(listing.sessions().len(), 2);
    assert!(listing.fingerprints().iter().all(Option::is_some));
}

#[test]
fn cline_fixtures_project_exactly() {
    let s = ClineSource::open(cline_root(), cline::Flavor::Cline).unwrap();
    assert_eq!(
        listed(s.list().unwrap()),
        vec![
            ("cline:1767200000000".to_owned(), 1_767_200_000_000, None),
            ("cline:1767000000000".to_owned(), 1_767_000_000_000, Some("/work/app".to_owned())),
        ]
    );
    // The deleted range of taskHistory.json ([2, 5]): the first pair, then
    // from 6 on; only what the user typed (in <task>, <feedback>: not tool
    // output nor environment details), the assistant's text without its
    // XML tool calls or thinking; a number in the array is skipped.
    let one = conv(&s, "cline:1767000000000");
    assert_eq!(
        one.to_snapshot_json(),
        json!({
            "session": {"id": "cline:1767000000000", "cwd": "/work/app"},
            "capturedThroughSeq": 10,
            "conversation": [
                {"role": "user", "text": "Fix the failing test in parser.rs"},
                {"role": "assistant", "text": "I'll read the parser."},
                {"role": "assistant", "text": "The test passes now."},
                {"role": "user", "text": "Thanks, also add a comment"},
                {"role": "assistant", "text": "Added the comment.\nAnything else?"},
            ],
        })
    );
    assert_eq!(s.read_title("cline:1767000000000").unwrap().as_deref(), Some("Fix the failing test in parser.rs"));
    // No history item: the range from the UI messages ([2, 3]), the title
    // from the first typed text.
    let two = conv(&s, "cline:1767200000000");
    assert_eq!(
        items(&two.items),
        vec![(true, "Rename   the\nmodule", false), (false, "Renaming.", false), (false, "Renamed to lexer.", false)]
    );
    assert_eq!(two.captured_through_seq.as_ref().and_then(|n| n.as_u64()), Some(5));
    assert_eq!(s.read_title("cline:1767200000000").unwrap().as_deref(), Some("Rename the module"));
    let err = s.read_title("cline:1767999999999").unwrap_err().message().to_owned();
    assert!(err.contains("1767999999999") && err.contains("api_conversation_history.json"), "{err}");
}

#[test]
fn roo_code_fixture_projects_exactly() {
    let s = ClineSource::open(roo_root(), cline::Flavor::RooCode).unwrap();
    let id = "roo-code:0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
    assert_eq!(listed(s.list().unwrap()), vec![(id.to_owned(), 1_767_300_000_000, Some("/work/roo".to_owned()))]);
    // Condensed messages (their summary is there) and truncated ones (their
    // marker is there) are not sent; the summary is a checkpoint, the
    // marker a notice; a condensed message whose summary is gone is sent.
    assert_eq!(
        conv(&s, id).to_snapshot_json(),
        json!({
            "session": {"id": id, "cwd": "/work/roo"},
            "capturedThroughSeq": 10,
            "conversation": [
                {"role": "user", "text": "## Conversation Summary\nLogging was added to every module.", "checkpoint": true},
                {"role": "assistant", "text": "Running them."},
                {"role": "assistant", "text": "All green."},
            ],
        })
    );
    assert_eq!(s.read_title(id).unwrap().as_deref(), Some("Add logging"));
}

/// A storage root holding one Cline task whose history is `history`.
fn cline_task(task: &str, history: &[u8]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("tasks").join(task);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(cline::HISTORY), history).unwrap();
    root
}

#[test]
fn cline_torn_damaged_and_linked_histories() {
    // Cut while being rewritten: the elements before the cut.
    let torn = br#"[{"role":"user","content":"<task>a</task>"},{"role":"assistant","content":[{"type":"text","text":"b"}]},{"role":"user","content":"<feedback>c"#;
    let root = cline_task("1767000000001", torn);
    let s = ClineSource::open(root.path(), cline::Flavor::Cline).unwrap();
    let c = conv(&s, "cline:1767000000001");
    assert_eq!(items(&c.items), vec![(true, "a", false), (false, "b", false)]);
    // Not an array: unreadable, saying why, and the others still list.
    std::fs::create_dir_all(root.path().join("tasks/1767000000002")).unwrap();
    std::fs::write(root.path().join("tasks/1767000000002").join(cline::HISTORY), b"{\"role\":1}").unwrap();
    assert_eq!(s.list().unwrap().sessions.len(), 2);
    let err = s.read_title("cline:1767000000002").unwrap_err().message().to_owned();
    assert!(err.contains("not a JSON array"), "{err}");
    // An empty history is no session yet; a directory without one is none.
    std::fs::create_dir_all(root.path().join("tasks/1767000000003")).unwrap();
    std::fs::write(root.path().join("tasks/1767000000003").join(cline::HISTORY), b"").unwrap();
    std::fs::create_dir_all(root.path().join("tasks/1767000000004")).unwrap();
    let l = s.list().unwrap();
    assert_eq!(l.sessions.len(), 2);
    assert_eq!(l.without_conversation.len(), 1);
    // Ids cannot leave the tasks directory.
    assert!(s.read_title("cline:../state").is_err());
    #[cfg(unix)]
    {
        let outside = cline_task("1767000000005", br#"[{"role":"user","content":"<task>secret</task>"}]"#);
        std::os::unix::fs::symlink(outside.path().join("tasks/1767000000005"), root.path().join("tasks/1767000000005"))
            .unwrap();
        let l = s.list().unwrap();
        assert!(
            l.rejected.iter().any(|(p, why)| p.ends_with("1767000000005") && why.contains("link")),
            "{:?}",
            l.rejected
        );
        assert!(s.read_title("cline:1767000000005").is_err());
    }
}

#[test]
fn every_kind_of_this_issue_together_in_one_view() {
    let dir = tempfile::tempdir().unwrap();
    fixture_db(&dir.path().join("opencode.db"));
    let specs = [
        SourceSpec::new(SourceKind::OpenCode, dir.path().join("opencode.db")),
        SourceSpec::new(SourceKind::Cline, cline_root()),
        SourceSpec::new(SourceKind::RooCode, roo_root().join("tasks")),
    ];
    let multi = open_sources(&specs).unwrap();
    let ids: Vec<String> = block_on(multi.list_sessions()).unwrap().into_iter().map(|h| h.id).collect();
    assert_eq!(
        ids,
        [
            "roo-code:0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
            "cline:1767200000000",
            "opencode:ses_b",
            // Equal times: in source order.
            "opencode:ses_a",
            "cline:1767000000000",
        ]
    );
    let report = multi.last_report();
    assert!(report[2].note.as_deref().unwrap().contains("tasks/ directory"), "{report:?}");
    let resolver = Resolver::new(std::sync::Arc::new(multi), Config::default());
    let target = Target::new("new", Some("/work".into()));
    let found = block_on(resolver.candidates(&target, "parser", &CandidateOptions::default(), None)).unwrap();
    let found: Vec<&str> = found.iter().map(|c| c.session_id.as_str()).collect();
    assert!(found.contains(&"cline:1767000000000") && found.contains(&"opencode:ses_b"), "{found:?}");
    let refs = [
        json!({"sessionId": "opencode:ses_a"}),
        json!({"sessionId": "cline:1767000000000"}),
        json!({"sessionId": "roo-code:0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}),
    ];
    let p = block_on(resolver.prepare(&target, &json!("compare"), &refs, &PrepareOptions::default(), None)).unwrap();
    let prompt = p.additional_context.unwrap().prompt;
    for seen in ["Tests added.", "Thanks, also add a comment", "All green."] {
        assert!(prompt.contains(seen), "{seen} not in {prompt}");
    }
    for unseen in ["So was this reply", "fn parse() {}", "Tests written."] {
        assert!(!prompt.contains(unseen), "{unseen} in {prompt}");
    }
}
