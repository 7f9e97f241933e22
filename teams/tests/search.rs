//! Search and push over the team database against a real server the test
//! starts itself (support/cluster.rs): a search answers what the local
//! files' search answers, whichever way the database finds it (walking the
//! sessions in the answer's order until the page is full, or narrowing by
//! the trigram indexes), at every page boundary, for a word nearly every
//! session holds and for rare ones; a push writes in batches, leaves out
//! alone a session the database refuses, and migrates an older schema.

#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/local.rs"]
mod support_local;

use std::path::Path;
use std::sync::Arc;

use cluster::Cluster;
use dsh_session_reference::{
    block_on, Config, Resolver, SearchOptions, SearchResult, SearchScope, SessionQuery, SharedListing, Target,
};
use dsh_session_reference_teams::{push, users, Database, DatabaseSource};
use serde_json::json;
use support_local::local;

/// Writes one DSH session: its header, a title when given, and its user and
/// assistant messages in turn.
fn session(root: &Path, id: &str, created: u64, cwd: Option<&str>, title: Option<&str>, texts: &[String]) {
    let mut header = json!({"type": "session", "version": 0, "id": id, "createdAt": created, "delegationDepth": 0});
    if let Some(cwd) = cwd {
        header["cwd"] = json!(cwd);
    }
    let mut lines = vec![header];
    for (seq, text) in texts.iter().enumerate() {
        let content = json!([{"type": "text", "text": text}]);
        lines.push(if seq % 2 == 0 {
            json!({"type": "user/message", "seq": seq, "time": seq, "surfaceOp": "append",
                   "data": {"id": format!("u{seq}"), "role": "user", "content": content, "source": {"kind": "user"}}})
        } else {
            json!({"type": "assistant/message", "seq": seq, "time": seq, "surfaceOp": "append",
                   "data": {"turn": seq, "step": 1, "message": {"id": format!("a{seq}"), "role": "assistant",
                   "content": content, "source": {"kind": "model", "provider": "p", "model": "m"}}}})
        });
    }
    if let Some(title) = title {
        let seq = texts.len();
        lines.push(json!({"type": "session/title", "seq": seq, "time": seq,
                          "data": {"title": title, "messageSeqs": [0], "source": {"kind": "fallback"}}}));
    }
    let dir = root.join(format!("--{}--", cwd.unwrap_or("none").trim_start_matches('/').replace('/', "-"))).join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("session.jsonl"), text).unwrap();
}

/// 90 sessions in three cwds, many sharing a `createdAt`: every one holds "the"; "common" and "word" together in
/// some, apart in others; a fifth with a title holding "the plan"; one
/// with "beacon"; "cedar" and "delta" in one message in some, apart in
/// others, "cedar" a varying number of times, and both in a few titles (the
/// later tiers and the relevance that orders the last).
fn corpus(root: &Path) {
    for i in 0..90u64 {
        let cwd = match i % 4 {
            0 | 1 => Some("/work/a"),
            2 => Some("/work/b"),
            _ => Some("/work/c"),
        };
        let title = match (i % 5, i % 11) {
            (0, _) => Some(format!("The plan {i}")),
            (_, 0) => Some(format!("Delta notes on cedar {i}")),
            _ => None,
        };
        let mut texts = vec![format!("the first message of {i}"), format!("a reply about the {i}")];
        texts.push(if i % 3 == 0 { "common and then word".to_owned() } else { "the common word".to_owned() });
        if i == 41 {
            texts.push("a rare beacon here".to_owned());
        }
        if i % 2 == 0 {
            texts.push(format!("delta {}", "cedar ".repeat((i % 5) as usize)));
        } else if i % 3 != 0 {
            texts.push("cedar ".repeat(1 + (i % 4) as usize));
            texts.push(format!("delta {}", "and more ".repeat((i % 7) as usize)));
        }
        session(root, &format!("s-{i:03}"), 1_700_000_000_000 + i / 3, cwd, title.as_deref(), &texts);
    }
}

fn search(resolver: &Resolver, target: &Target, q: &str, limit: u64, scope: SearchScope) -> Vec<SearchResult> {
    block_on(resolver.search(target, q, &SearchOptions { limit: Some(limit), scope }, None)).unwrap()
}

const QUERIES: &[&str] = &[
    "the",
    "THE",
    "common",
    "common word",
    "word common",
    "the plan",
    "beacon",
    "rare beacon",
    "cedar delta",
    "delta cedar",
    "cedar",
    "word the",
    "work/b",
    "zzqnomatch",
];

#[test]
fn a_search_answers_as_the_local_files_do_at_every_page_boundary() {
    let pg = Cluster::start();
    let url = pg.new_database("search");
    let tmp = tempfile::tempdir().unwrap();
    corpus(tmp.path());
    let (here, sessions) = local(tmp.path());
    let db = Arc::new(Database::new(&url).unwrap());
    let summary = block_on(push(&db, &here, sessions, &|_, _| {})).unwrap();
    assert_eq!((summary.pushed, summary.failed.len()), (90, 0));
    block_on(users::add_user(&db, "ana")).unwrap();
    block_on(users::grant(&db, "ana", "/work/a")).unwrap();
    let over = |walk: usize, user: bool| {
        let source = match user {
            false => DatabaseSource::new(Arc::clone(&db), Config::default()),
            true => DatabaseSource::for_user(Arc::clone(&db), Config::default(), "ana"),
        };
        // (Ranked seven matching sessions at a time besides the best so far
        // with two of the walks, all at once with the others.)
        let batch = if walk == 0 || walk == 7 { 7 } else { 1000 };
        Resolver::new(Arc::new(source.with_search_walk(walk).with_search_batch(batch)), Config::default())
    };
    // 0: by the indexes alone; 1 and 7: the walk stops short and the indexes
    // finish; the default: the walk sees every session.
    let walks = [0, 1, 7, 2000];
    let targets = [
        Target::new("s-005", Some("/work/a".into())),
        Target::new("x", None),
        Target::new("y", Some("/work/b".into())),
    ];
    let mut full_pages = 0;
    // `compare(q, target, limit, scope)`: every walk's answer, of every
    // session and of ana's, against what it must be.
    let compare = |local: bool, full_pages: &mut usize| {
        for q in QUERIES {
            for target in &targets {
                for limit in [1, 3, 10, 50] {
                    for scope in [SearchScope::All, SearchScope::SameCwd] {
                        let expected = match local {
                            true => search(&here, target, q, limit, scope),
                            false => search(&over(0, false), target, q, limit, scope),
                        };
                        if expected.len() as u64 == limit {
                            *full_pages += 1;
                        }
                        let mine = search(&over(0, true), target, q, limit, scope);
                        assert!(mine.iter().all(|r| r.candidate.session_id != "s-002"), "ana reads /work/a only");
                        for walk in walks {
                            let there = search(&over(walk, false), target, q, limit, scope);
                            assert_eq!(there, expected, "{q:?} {target:?} limit {limit} {scope:?} walking {walk}");
                            let theirs = search(&over(walk, true), target, q, limit, scope);
                            assert_eq!(theirs, mine, "ana: {q:?} {target:?} limit {limit} {scope:?} walking {walk}");
                        }
                    }
                }
            }
        }
    };
    compare(true, &mut full_pages);
    // Sessions without a cwd (which rank between those of the target's cwd
    // and the others): against the indexes' answer.
    pg.psql("search", "UPDATE dsr_sessions SET cwd = NULL, place_folded = id || E'\\n' WHERE cwd = '/work/c'");
    compare(false, &mut full_pages);
    assert!(full_pages > 50, "the queries fill pages: {full_pages}");
    // A word every session holds fills the page with the newest in the
    // target's cwd, titles holding the whole query first.
    let target = Target::new("s-005", Some("/work/a".into()));
    let found: Vec<String> = search(&over(2000, false), &target, "the plan", 3, SearchScope::All)
        .into_iter()
        .map(|r| r.candidate.session_id)
        .collect();
    assert_eq!(found, ["s-085", "s-080", "s-065"]);
}

#[test]
fn a_push_writes_in_batches_and_leaves_out_alone_what_the_database_refuses() {
    let pg = Cluster::start();
    let url = pg.new_database("batches");
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..130u64 {
        // A NUL character, which PostgreSQL's text cannot hold, in one.
        let text = if i == 77 { "holds a \u{0} here".to_owned() } else { format!("message {i}") };
        session(tmp.path(), &format!("b-{i:03}"), 1_700_000_000_000 + i, Some("/work/a"), None, &[text]);
    }
    let (here, sessions) = local(tmp.path());
    let db = Database::new(&url).unwrap();
    let summary = block_on(push(&db, &here, sessions.clone(), &|_, _| {})).unwrap();
    assert_eq!(summary.pushed, 129);
    assert_eq!(summary.failed.len(), 1, "{:?}", summary.failed);
    assert_eq!(summary.failed[0].0, "b-077");
    assert!(summary.failed[0].1.contains("the database refused it"), "{:?}", summary.failed);
    assert_eq!(pg.psql("batches", "SELECT count(*), sum(revision) FROM dsr_sessions").trim(), "129|129");
    assert_eq!(pg.psql("batches", "SELECT count(*) FROM dsr_messages").trim(), "129");
    // Sent again (no fingerprint: always sent): each replaced once, whole.
    let again = block_on(push(&db, &here, sessions, &|_, _| {})).unwrap();
    assert_eq!((again.pushed, again.failed.len()), (129, 1));
    assert_eq!(pg.psql("batches", "SELECT count(*), sum(revision) FROM dsr_sessions").trim(), "129|258");
    assert_eq!(pg.psql("batches", "SELECT count(*) FROM dsr_messages").trim(), "129");
}

#[test]
fn a_push_migrates_a_database_of_the_previous_version() {
    let pg = Cluster::start();
    let url = pg.new_database("older");
    let tmp = tempfile::tempdir().unwrap();
    corpus(tmp.path());
    let (here, sessions) = local(tmp.path());
    let db = Database::new(&url).unwrap();
    block_on(push(&db, &here, sessions.clone(), &|_, _| {})).unwrap();
    let pushed = pg.psql("older", "SELECT id, text_folded FROM dsr_sessions ORDER BY id");
    // As version 3 left it: each message's folded text beside it, with its
    // own trigram index, and no search text per session. (The corpus is
    // ASCII, where PostgreSQL's lower() folds as the core does.)
    pg.psql(
        "older",
        "ALTER TABLE dsr_messages ADD COLUMN folded text; UPDATE dsr_messages SET folded = lower(text);
         ALTER TABLE dsr_messages ALTER COLUMN folded SET NOT NULL;
         CREATE INDEX dsr_messages_folded_trgm ON dsr_messages USING gin (folded gin_trgm_ops);
         CREATE INDEX dsr_sessions_place_trgm ON dsr_sessions USING gin (place_folded gin_trgm_ops);
         DROP INDEX dsr_sessions_text_trgm; ALTER TABLE dsr_sessions DROP COLUMN text_folded;
         UPDATE dsr_schema SET version = 3",
    );
    // A reader never migrates: it says what to do.
    let source = DatabaseSource::new(Arc::new(Database::new(&url).unwrap()), Config::default());
    let reader = Resolver::new(Arc::new(source), Config::default());
    let target = Target::new("x", Some("/work/a".into()));
    let options = SearchOptions { limit: Some(5), scope: SearchScope::All };
    let refused = block_on(reader.search(&target, "the", &options, None)).unwrap_err();
    assert!(refused.message().contains("holds schema version 3; reading or serving it needs version 4"), "{refused}");
    // A push that sends nothing migrates it: each session's search text made
    // from its rows is the one a push writes.
    block_on(push(&db, &here, Vec::new(), &|_, _| {})).unwrap();
    assert_eq!(pg.psql("older", "SELECT version FROM dsr_schema").trim(), "4");
    assert_eq!(pg.psql("older", "SELECT id, text_folded FROM dsr_sessions ORDER BY id"), pushed);
    let indexes = "SELECT string_agg(indexname, ' ' ORDER BY indexname) FROM pg_indexes WHERE indexname LIKE '%trgm'";
    assert_eq!(pg.psql("older", indexes).trim(), "dsr_sessions_text_trgm dsr_sessions_title_trgm");
    assert_eq!(
        pg.psql("older", "SELECT count(*) FROM information_schema.columns WHERE column_name = 'folded'").trim(),
        "0"
    );
    for q in QUERIES {
        assert_eq!(
            search(&reader, &target, q, 5, SearchScope::All),
            search(&here, &target, q, 5, SearchScope::All),
            "{q}"
        );
    }
}

/// The listing of `source`, as a long-lived reader asks for it.
fn listed(source: &DatabaseSource) -> SharedListing {
    block_on(source.shared_listing()).unwrap().expect("a database source shares its listing")
}

/// The fingerprint `listing` gives session `id`.
fn fingerprint_of(listing: &SharedListing, id: &str) -> Vec<u8> {
    let at = listing.sessions().iter().position(|s| s.id == id).expect("listed");
    listing.fingerprints()[at].as_ref().expect("fingerprinted").as_bytes().to_vec()
}

#[test]
fn a_listing_is_read_again_only_when_its_sessions_changed() {
    let pg = Cluster::start();
    let url = pg.new_database("stamped");
    let tmp = tempfile::tempdir().unwrap();
    corpus(tmp.path());
    let (here, sessions) = local(tmp.path());
    let db = Arc::new(Database::new(&url).unwrap());
    block_on(push(&db, &here, sessions.clone(), &|_, _| {})).unwrap();
    block_on(users::add_user(&db, "ana")).unwrap();
    block_on(users::grant(&db, "ana", "/work/a")).unwrap();
    let in_cwd = |cwds: &[&str]| sessions.iter().filter(|s| cwds.contains(&s.header.cwd.as_deref().unwrap())).count();
    for (source, cwds) in [
        (DatabaseSource::for_user(Arc::clone(&db), Config::default(), "ana"), &["/work/a"][..]),
        (DatabaseSource::new(Arc::clone(&db), Config::default()), &["/work/a", "/work/b", "/work/c"][..]),
    ] {
        let first = listed(&source);
        assert_eq!(first.sessions().len(), in_cwd(cwds));
        assert!(listed(&source).ptr_eq(&first), "nothing changed: the listing is not read again");
        // A session pushed again (a new revision): read again, its
        // fingerprint a new one, the others' the same.
        let again = sessions.iter().find(|s| s.header.id == "s-004").unwrap().clone();
        block_on(push(&db, &here, vec![again], &|_, _| {})).unwrap();
        let pushed = listed(&source);
        assert!(!pushed.ptr_eq(&first));
        assert_ne!(fingerprint_of(&pushed, "s-004"), fingerprint_of(&first, "s-004"));
        assert_eq!(fingerprint_of(&pushed, "s-005"), fingerprint_of(&first, "s-005"));
        // A session deleted by hand: gone from the next listing.
        pg.psql("stamped", "DELETE FROM dsr_sessions WHERE id = 's-000'");
        let deleted = listed(&source);
        assert_eq!(deleted.sessions().len(), pushed.sessions().len() - 1);
        assert!(!deleted.sessions().iter().any(|s| s.id == "s-000"));
        block_on(push(&db, &here, sessions.clone(), &|_, _| {})).unwrap();
    }
    // A project granted, then taken back: the user's listing follows.
    let ana = DatabaseSource::for_user(Arc::clone(&db), Config::default(), "ana");
    let before = listed(&ana);
    block_on(users::grant(&db, "ana", "/work/b")).unwrap();
    let granted = listed(&ana);
    assert_eq!(granted.sessions().len(), in_cwd(&["/work/a", "/work/b"]));
    pg.psql("stamped", "DELETE FROM dsr_grants WHERE project = '/work/b'");
    let taken = listed(&ana);
    assert_eq!(
        taken.sessions().iter().map(|s| &s.id).collect::<Vec<_>>(),
        before.sessions().iter().map(|s| &s.id).collect::<Vec<_>>()
    );
}
