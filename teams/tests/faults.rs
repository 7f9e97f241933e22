//! The team database's faults, each against a real server the test starts
//! itself (support/cluster.rs): an unreachable database, a wrong password,
//! no schema yet, a schema from the future, a connection cut in the middle
//! of a query, a statement timeout — each a clear error with a stable code
//! and no partial answer, and the next call connects again; and two
//! machines pushing the same sessions at once leave one version.

#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/local.rs"]
mod support_local;

use std::path::Path;
use std::sync::Arc;

use cluster::Cluster;
use dsh_session_reference::{block_on, Config, ErrorCode, Resolver, SessionQuery};
use dsh_session_reference_teams::{push, Database, DatabaseSource, PushSession, SCHEMA_VERSION};

fn examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("examples/sessions")
}

/// A resolver over the example DSH sessions, and what a push takes of them.
fn local() -> (Resolver, Vec<PushSession>) {
    support_local::local(&examples())
}

fn source(url: &str) -> (Arc<Database>, DatabaseSource) {
    let db = Arc::new(Database::new(url).unwrap());
    (Arc::clone(&db), DatabaseSource::new(db, Config::default()))
}

fn listing_error(source: &DatabaseSource) -> String {
    block_on(source.list_sessions()).expect_err("the listing must fail").message().to_owned()
}

/// Holds an exclusive lock on the sessions table from another connection
/// (a query of ours then waits on it) until [`release`] ends that
/// connection; returns once the lock is held.
fn hold_lock(pg: &Cluster, db: &str) -> std::thread::JoinHandle<()> {
    let sql = "SET application_name = 'fault-lock'; BEGIN; LOCK TABLE dsr_sessions IN ACCESS EXCLUSIVE MODE; \
               SELECT pg_sleep(600); COMMIT;";
    let (db_name, pg_addr) = (db.to_owned(), pg as *const Cluster as usize);
    let holder = std::thread::spawn(move || {
        // SAFETY: the cluster outlives the thread (joined before it drops).
        let pg = unsafe { &*(pg_addr as *const Cluster) };
        // Ended by `release`: its failure is the expected end.
        let _ = pg.try_psql(&db_name, sql);
    });
    wait_for(
        pg,
        db,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'fault-lock' AND wait_event = 'PgSleep'",
    );
    holder
}

/// Ends the connection of [`hold_lock`], which lets its lock go.
fn release(pg: &Cluster, db: &str, holder: std::thread::JoinHandle<()>) {
    pg.psql(db, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'fault-lock'");
    holder.join().unwrap();
}

/// Waits (at most a minute, polling) until `count_sql` counts at least one
/// row: a state of the server, not a guess of how long it takes.
fn wait_for(pg: &Cluster, db: &str, count_sql: &str) {
    for _ in 0..1_200 {
        if pg.psql(db, count_sql).trim().parse::<u64>().unwrap_or(0) > 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the server never reached {count_sql:?}");
}

#[test]
fn each_fault_is_a_clear_error_and_the_next_call_connects_again() {
    let pg = Cluster::start();
    let url = pg.new_database("faults");

    // Unreachable: a port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (_, nowhere) = source(&format!("postgres://dsr:x@127.0.0.1:{closed}/faults?sslmode=disable"));
    assert!(listing_error(&nowhere).contains("cannot reach the database dsr@127.0.0.1"), "{}", listing_error(&nowhere));
    // A wrong password (and the URL's password is never told).
    let (_, wrong) = source(&format!("postgres://dsr:not-it@127.0.0.1:{}/faults?sslmode=disable", pg.port));
    let why = listing_error(&wrong);
    assert!(why.contains("refused the credentials") && !why.contains("not-it"), "{why}");
    // Nothing pushed yet.
    let (db, team) = source(&url);
    assert!(listing_error(&team).contains("holds no pushed session yet"));

    let (resolver, sessions) = local();
    let n = sessions.len();
    let summary = block_on(push(&db, &resolver, sessions.clone(), &|_, _| {})).unwrap();
    assert_eq!(summary.pushed, n);
    assert_eq!(block_on(team.list_sessions()).unwrap().len(), n);

    // A connection cut in the middle of a query: the query waits on a lock
    // when its backend is terminated. A clean error, then a working call.
    let lock = hold_lock(&pg, "faults");
    let cut = std::thread::spawn({
        let url = url.clone();
        move || {
            let (_, team) = source(&url);
            // (It waits on the lock.)
            block_on(team.list_sessions())
        }
    });
    let waiting = "FROM pg_stat_activity WHERE application_name = 'dsh-session-ref' AND wait_event_type = 'Lock'";
    wait_for(&pg, "faults", &format!("SELECT count(*) {waiting}"));
    pg.psql("faults", &format!("SELECT pg_terminate_backend(pid) {waiting}"));
    let failed = cut.join().unwrap().expect_err("the cut query must fail");
    assert!(failed.message().contains("connects again"), "{}", failed.message());
    release(&pg, "faults", lock);
    // The same source's next call connects again.
    let before = block_on(team.list_sessions()).unwrap();
    pg.psql(
        "faults",
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'dsh-session-ref'",
    );
    let after = block_on(team.list_sessions());
    let after = after.or_else(|_| block_on(team.list_sessions())).unwrap();
    assert_eq!(after, before);
    // Through the resolver a failure is READ_FAILED, never a partial answer.
    let reader = Resolver::new(
        Arc::new(source(&format!("postgres://dsr:x@127.0.0.1:{closed}/f?sslmode=disable")).1),
        Config::default(),
    );
    let e = block_on(reader.conversation("goal-wrapup", None)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ReadFailed);

    // A statement timeout: the listing waits on a lock longer than allowed.
    let slow = format!("{url}&options=-c%20statement_timeout%3D200");
    let (_, impatient) = source(&slow);
    let lock = hold_lock(&pg, "faults");
    let why = listing_error(&impatient);
    assert!(why.contains("cancelled the statement"), "{why}");
    release(&pg, "faults", lock);
    assert_eq!(block_on(impatient.list_sessions()).unwrap().len(), n);

    // A schema from the future: refused by readers and by a push.
    pg.psql("faults", "UPDATE dsr_schema SET version = 99");
    let why = listing_error(&team);
    assert!(why.contains("schema version 99, newer than this"), "{why}");
    let e = block_on(push(&db, &resolver, sessions, &|_, _| {})).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ReadFailed);
    assert!(e.message().contains("schema version 99"), "{}", e.message());
    // One older than a reader reads: refused, with what to do.
    pg.psql("faults", "UPDATE dsr_schema SET version = 3");
    let why = listing_error(&team);
    assert!(why.contains("holds schema version 3; reading or serving it needs version 4: run"), "{why}");
    pg.psql("faults", &format!("UPDATE dsr_schema SET version = {SCHEMA_VERSION}"));
    assert_eq!(block_on(team.list_sessions()).unwrap().len(), n);
}

#[test]
fn two_machines_pushing_the_same_sessions_at_once_leave_one_version() {
    let pg = Cluster::start();
    let url = pg.new_database("race");
    let (resolver, sessions) = local();
    let n = sessions.len();
    let resolver = Arc::new(resolver);
    let pushes: Vec<_> = (0..2)
        .map(|machine| {
            let (resolver, sessions, url) = (Arc::clone(&resolver), sessions.clone(), url.clone());
            std::thread::spawn(move || {
                let db = Database::new(&url).unwrap();
                // Each machine its own fingerprints: both send every session.
                let sessions: Vec<PushSession> = sessions
                    .into_iter()
                    .map(|s| PushSession {
                        fingerprint: Some(dsh_session_reference::Fingerprint::from_u64(machine)),
                        ..s
                    })
                    .collect();
                block_on(push(&db, &resolver, sessions, &|_, _| {})).unwrap()
            })
        })
        .collect();
    for p in pushes {
        assert_eq!(p.join().unwrap().pushed, n);
    }
    assert_eq!(pg.psql("race", "SELECT count(*), count(DISTINCT id) FROM dsr_sessions").trim(), format!("{n}|{n}"));
    // Each session holds one machine's messages, whole: as many as the local
    // projection has, numbered from 0 without a gap or a copy.
    let (_, team) = source(&url);
    for s in block_on(team.list_sessions()).unwrap() {
        let here = block_on(resolver.conversation(&s.id, None)).unwrap();
        let there =
            block_on(Resolver::new(Arc::new(source(&url).1), Config::default()).conversation(&s.id, None)).unwrap();
        assert_eq!(there, here, "{}", s.id);
    }
    let revisions = pg.psql("race", "SELECT min(revision), max(revision) FROM dsr_sessions");
    assert_eq!(revisions.trim(), "2|2", "each session was replaced once by the second push");
}
