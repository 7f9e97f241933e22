//! The team database at scale (BENCHMARKS.md, "Teams"): a push of a DSH
//! root (the discovery benchmark's generated one: `DSR_BENCH_ROOT` with
//! `DSR_BENCH_GENERATE_ONLY`), the database's size against the projected
//! text, and the listings and searches timed with 16 clients at once: of
//! every session, and of a user granted one project (`/work/p3`, what
//! `serve --users` answers that user with).
//!
//! ```sh
//! cargo run --release -p dsh-session-reference-teams --example teams_bench -- ROOT URL [QUERY...]
//! ```
//!
//! Each client has a source (and a connection) of its own and runs every
//! query `DSR_BENCH_REPS` times (default 10). `DSR_BENCH_SKIP_PUSH` times
//! the queries alone; `DSR_BENCH_PUSH_ONLY`, the push alone
//! (`scripts/teams_serve_bench.py` times them through `serve`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_session_reference::{block_on, Config, DshStore, Hardening, Resolver, SearchOptions, SessionQuery, Target};
use dsh_session_reference_teams::{push, users, Database, DatabaseSource, ProjectKeys, PushSession};

const CLIENTS: usize = 16;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn du(root: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(root).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() { du(&entry.path()) } else { meta.len() };
    }
    total
}

/// `f` run `reps` times by each of 16 clients at once: p50 and p99.
fn timed(reps: usize, make: &(dyn Fn() -> Box<dyn FnMut() + Send> + Sync)) -> (Duration, Duration) {
    let all = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let mut f = make();
                scope.spawn(move || {
                    f(); // (connects)
                    (0..reps)
                        .map(|_| {
                            let at = Instant::now();
                            f();
                            at.elapsed()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    let mut all = all;
    all.sort();
    (percentile(&all, 0.5), percentile(&all, 0.99))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [root, url, queries @ ..] = &args[..] else { panic!("usage: teams_bench ROOT URL [QUERY...]") };
    let reps: usize = std::env::var("DSR_BENCH_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    let root = std::path::Path::new(root);

    if std::env::var_os("DSR_BENCH_SKIP_PUSH").is_none() {
        let bytes = du(root);
        let store = DshStore::open(root).unwrap();
        let config = Config::default().with_hardening(Hardening { redact_secrets: true, ..Hardening::default() });
        let resolver = Resolver::new(Arc::new(store), config);
        let listed = block_on(resolver.session_query().list_sessions()).unwrap();
        let ids: Vec<String> = listed.iter().map(|h| h.id.clone()).collect();
        let fps = block_on(resolver.session_query().fingerprints(&ids)).unwrap().unwrap_or_default();
        let mut keys = ProjectKeys::default();
        let sessions: Vec<PushSession> = listed
            .into_iter()
            .zip(fps.into_iter().chain(std::iter::repeat(None)))
            .map(|(header, fingerprint)| PushSession {
                project: keys.of(header.cwd.as_deref()),
                header,
                fingerprint,
                kind: "dsh".into(),
                owner: None,
            })
            .collect();
        let n = sessions.len();
        let db = Database::new(url).unwrap();
        let at = Instant::now();
        let summary = block_on(push(&db, &resolver, sessions.clone(), &|_, _| {})).unwrap();
        let took = at.elapsed();
        println!(
            "push: {n} sessions, {:.0} MB of logs, {:.0} MB of projected text, {:.1} s: {:.1} MB/s of logs, {:.0} sessions/s ({} failed)",
            bytes as f64 / 1e6,
            summary.text_bytes as f64 / 1e6,
            took.as_secs_f64(),
            bytes as f64 / 1e6 / took.as_secs_f64(),
            n as f64 / took.as_secs_f64(),
            summary.failed.len()
        );
        let at = Instant::now();
        let again = block_on(push(&db, &resolver, sessions, &|_, _| {})).unwrap();
        println!("push again (nothing changed): {} unchanged, {:.2} s", again.unchanged, at.elapsed().as_secs_f64());
        if std::env::var_os("DSR_BENCH_PUSH_ONLY").is_some() {
            return;
        }
    }

    let db = Arc::new(Database::new(url).unwrap());
    // A user who reads one project's sessions.
    drop(block_on(users::add_user(&db, "bench")));
    block_on(users::grant(&db, "bench", PROJECT)).unwrap();
    // Each client its own source (and connection): of every session, or the user's.
    let make = |user: bool| {
        let db = Arc::new(Database::new(url).unwrap());
        match user {
            false => DatabaseSource::new(db, Config::default()),
            true => DatabaseSource::for_user(db, Config::default(), "bench"),
        }
    };
    for (user, what) in [(false, "every session"), (true, "one project (a user's)")] {
        let n = block_on(make(user).list_sessions()).unwrap().len();
        let (p50, p99) = timed(reps, &|| {
            let source = make(user);
            Box::new(move || drop(block_on(source.list_sessions()).unwrap()))
        });
        println!("list {what}: {n} sessions, 16 clients: p50 {p50:.1?}, p99 {p99:.1?}");
    }

    for (user, what) in [(false, "every session"), (true, "one project")] {
        for q in queries {
            let resolver = Resolver::new(Arc::new(make(user)), Config::default());
            let target = Target::new("bench", Some(PROJECT.to_owned()));
            let found = block_on(resolver.search(&target, q, &SearchOptions::default(), None)).unwrap().len();
            let (p50, p99) = timed(reps, &|| {
                let resolver = Resolver::new(Arc::new(make(user)), Config::default());
                let q = q.clone();
                Box::new(move || {
                    let target = Target::new("bench", Some(PROJECT.to_owned()));
                    drop(block_on(resolver.search(&target, &q, &SearchOptions::default(), None)).unwrap());
                })
            });
            println!("search {what} for {q:?} ({found} results shown), 16 clients: p50 {p50:.1?}, p99 {p99:.1?}");
        }
    }

    // A read: one session's whole projected conversation, of the project.
    let ids: Vec<String> = block_on(make(true).list_sessions()).unwrap().into_iter().map(|h| h.id).collect();
    let (p50, p99) = timed(reps, &|| {
        let (source, ids) = (make(true), ids.clone());
        let mut at = 0;
        Box::new(move || {
            at = (at + 7) % ids.len();
            drop(block_on(source.read_surface(&ids[at])).unwrap());
        })
    });
    println!("read one session's conversation, 16 clients: p50 {p50:.1?}, p99 {p99:.1?}");
}

/// The project the user is granted (a twentieth of the generated sessions).
const PROJECT: &str = "/work/p3";
