//! Claude Code and Codex as they are on disk: prompts queued
//! while the model worked, titles written into other transcripts, files
//! with no conversation, and roots given the way people give them. Each
//! case is a fixture of `tests/fixtures/on-disk/` (its README says what
//! each file models) with its exact listing, titles and snapshots.

mod common;
use common::copy_dir;
use std::path::{Path, PathBuf};

use dsh_session_reference::sources::claude_code::ClaudeCodeSource;
use dsh_session_reference::{
    block_on, BlockingSessionQuery, CandidateOptions, Config, ConversationItem, FileSource, Resolver, SurfaceData,
    Target,
};
use serde_json::json;

const U: bool = true;
const A: bool = false;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/on-disk")
}

/// `(is_user, text, checkpoint)` of each item.
fn items(list: &[ConversationItem]) -> Vec<(bool, String, bool)> {
    list.iter().map(|i| (i.role.as_str() == "user", i.text.clone(), i.checkpoint)).collect()
}

fn m(user: bool, text: &str) -> (bool, String, bool) {
    (user, text.to_owned(), false)
}

/// The listing as `(id, createdAt, cwd)`.
fn listing(s: &ClaudeCodeSource) -> Vec<(String, u64, Option<String>)> {
    let l = s.list().unwrap();
    assert!(l.rejected.is_empty(), "{:?}", l.rejected);
    l.sessions.into_iter().map(|s| (s.header.id, s.header.created_at.as_u64().unwrap(), s.header.cwd)).collect()
}

fn surface(s: &impl BlockingSessionQuery, id: &str) -> (Option<u64>, Vec<(bool, String, bool)>) {
    let SurfaceData::Conversation(c) = s.read_surface(id).unwrap() else { panic!("{id}: not a conversation") };
    (c.captured_through_seq.as_ref().and_then(|n| n.as_u64()), items(&c.items))
}

fn lines(values: &[serde_json::Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

// ---- prompts queued while the model worked

const QUEUED: &str = "claude-code:7b0f3c2e-5a41-4c8e-9d6a-1e2f3a4b5c61";
const CANCELLED: &str = "claude-code:7b0f3c2e-5a41-4c8e-9d6a-1e2f3a4b5c62";

#[test]
fn queued_prompts_of_2_0_are_user_messages_where_they_were_delivered() {
    let s = ClaudeCodeSource::open(fixtures().join("claude-code-queue")).unwrap();
    let cwd = Some("/home/dev/parser".to_owned());
    assert_eq!(
        listing(&s),
        vec![(CANCELLED.to_owned(), 1_763_636_400_000, cwd.clone()), (QUEUED.to_owned(), 1_763_632_800_000, cwd)]
    );
    // Each `remove` (no content in 2.0.x) delivers the oldest queued prompt,
    // placed among the messages by its time.
    assert_eq!(
        surface(&s, QUEUED),
        (
            Some(13),
            vec![
                m(U, "Refactor the tokenizer so it streams."),
                m(A, "I'll start with the tokenizer's input loop."),
                m(U, "Keep the public API unchanged."),
                m(A, "Streaming works and the public API is unchanged."),
                m(U, "Thanks. Add a benchmark."),
                m(U, "Use criterion."),
                m(U, "Name it tokenizer."),
                m(A, "Added benches/tokenizer.rs with criterion."),
            ]
        )
    );
    assert_eq!(s.read_title(QUEUED).unwrap().as_deref(), Some("Refactor the tokenizer so it streams."));
}

#[test]
fn a_cancelled_or_taken_up_queued_prompt_invents_no_message() {
    let s = ClaudeCodeSource::open(fixtures().join("claude-code-queue")).unwrap();
    // A `dequeue` hands the prompt back (to the prompt box, or as the next
    // prompt, which has its own user line); a `remove` with nothing queued
    // delivers nothing.
    assert_eq!(
        surface(&s, CANCELLED),
        (
            Some(9),
            vec![
                m(U, "Write the migration for the orders table."),
                m(A, "Writing the migration."),
                m(A, "The migration is in migrations/0003_orders.sql."),
                m(U, "Now add a test for it."),
                m(A, "Added tests/orders.rs."),
            ]
        )
    );
}

#[test]
fn a_2_1_queued_prompt_is_one_message_from_its_attachment() {
    // 2.1.x before 2.1.205: the enqueue, the `queued_command` attachment on
    // the chain, and a `remove` without content, all for one prompt.
    let (sid, ts) = ("s21", |s: u32| format!("2026-02-01T09:00:{s:02}.000Z"));
    let chain = |kind: &str, uuid: &str, parent: Option<&str>, s: u32| {
        json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/w", "sessionId": sid,
            "version": "2.1.100", "type": kind, "uuid": uuid, "timestamp": ts(s)})
    };
    let mut u1 = chain("user", "u1", None, 0);
    u1["message"] = json!({"role": "user", "content": "Start the build."});
    let mut a1 = chain("assistant", "a1", Some("u1"), 2);
    a1["message"] = json!({"id": "m1", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": "Building."}]});
    let mut q = chain("attachment", "q1", Some("a1"), 4);
    q["attachment"] = json!({"type": "queued_command", "prompt": "Skip the docs.", "commandMode": "prompt"});
    let mut a2 = chain("assistant", "a2", Some("q1"), 6);
    a2["message"] = json!({"id": "m2", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": "Built, without the docs."}]});
    let t = lines(&[
        u1,
        a1,
        json!({"type": "queue-operation", "operation": "enqueue", "timestamp": ts(3), "sessionId": sid, "content": "Skip the docs."}),
        json!({"type": "queue-operation", "operation": "remove", "timestamp": ts(4), "sessionId": sid, "content": null}),
        q,
        a2,
    ]);
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("-w")).unwrap();
    std::fs::write(root.path().join("-w/s21.jsonl"), t).unwrap();
    let s = ClaudeCodeSource::open(root.path()).unwrap();
    assert_eq!(
        surface(&s, "claude-code:s21").1,
        vec![m(U, "Start the build."), m(A, "Building."), m(U, "Skip the docs."), m(A, "Built, without the docs.")]
    );
}

// ---- titles written into other transcripts

const SHOP: &str = "-home-dev-shop";
const TA: &str = "a3c1e0f2-7b1d-4c55-9e0a-5b2f1d3c4e01";
const TB: &str = "b7d2f1a3-8c2e-4d66-8f1b-6c3a2e4d5f02";
const TC: &str = "c9e3a2b4-9d3f-4e77-9a2c-7d4b3f5e6a03";
const TD: &str = "d1f4b3c5-ae40-4f88-8b3d-8e5c4a6f7b04";

fn cc(stem: &str) -> String {
    format!("claude-code:{stem}")
}

/// A projects root holding sessions A (1.0.24) and B (2.0.30).
fn titles_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join("claude-code-titles/first"), root.path());
    root
}

/// Adds a later file of the titles fixture to the project: `C`, `D`, or
/// `C.append` (appended to C).
fn add_later(root: &Path, which: &str) {
    let later = fixtures().join("claude-code-titles/later");
    let project = root.join(SHOP);
    match which {
        "C" => std::fs::copy(later.join(format!("{TC}.jsonl")), project.join(format!("{TC}.jsonl"))).map(drop),
        "D" => {
            let to = project.join(format!("{TD}.jsonl"));
            std::fs::copy(later.join(format!("{TD}.jsonl")), &to).unwrap();
            // Written the day after C was started (its titles are newer).
            let day = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_759_536_000_000);
            std::fs::File::options().write(true).open(&to).and_then(|f| f.set_modified(day))
        }
        "C.append" => {
            use std::io::Write as _;
            let more = std::fs::read(later.join(format!("{TC}.append.jsonl"))).unwrap();
            std::fs::OpenOptions::new().append(true).open(project.join(format!("{TC}.jsonl"))).unwrap().write_all(&more)
        }
        _ => unreachable!(),
    }
    .unwrap();
}

fn titles(s: &impl BlockingSessionQuery, stems: &[&str]) -> Vec<Option<String>> {
    stems.iter().map(|stem| s.read_title(&cc(stem)).unwrap()).collect()
}

fn some(list: &[&str]) -> Vec<Option<String>> {
    list.iter().map(|t| Some((*t).to_owned())).collect()
}

#[test]
fn summaries_title_the_session_whose_message_they_name_from_any_file_of_the_project() {
    let root = titles_root();
    let s = ClaudeCodeSource::open(root.path()).unwrap();
    let cwd = Some("/home/dev/shop".to_owned());
    assert_eq!(listing(&s), vec![(cc(TB), 1_759_413_600_000, cwd.clone()), (cc(TA), 1_751_360_400_000, cwd.clone())]);
    assert_eq!(titles(&s, &[TA, TB]), some(&["Set up the database schema for orders.", "Add login with OAuth."]));
    // C is written next, starting with the titles of A (its leaf) and of B
    // (a message B has since gone on from: the newest of its path that has
    // a summary).
    add_later(root.path(), "C");
    assert_eq!(
        listing(&s),
        vec![
            (cc(TC), 1_759_485_600_000, cwd.clone()),
            (cc(TB), 1_759_413_600_000, cwd.clone()),
            (cc(TA), 1_751_360_400_000, cwd.clone())
        ]
    );
    assert_eq!(
        titles(&s, &[TA, TB, TC]),
        some(&["Orders database schema", "OAuth login flow", "Style the checkout page."])
    );
    // D holds only titles: not a session; its title of A is newer than C's.
    add_later(root.path(), "D");
    let l = s.list().unwrap();
    assert_eq!(l.sessions.len(), 3);
    assert_eq!(l.without_conversation, vec![root.path().join(SHOP).join(format!("{TD}.jsonl"))]);
    assert_eq!(
        titles(&s, &[TA, TB, TC]),
        some(&["Orders schema, revised", "OAuth login flow", "Checkout page styling"])
    );
    // C goes on, and first titles B as it is now (its leaf). Titles use the
    // project's summaries as the last listing found them.
    add_later(root.path(), "C.append");
    assert_eq!(s.list().unwrap().sessions.len(), 3);
    assert_eq!(
        titles(&s, &[TA, TB, TC]),
        some(&["Orders schema, revised", "Remember-me sessions", "Checkout page styling"])
    );
    // The conversations are what each file says; titles change nothing there.
    assert_eq!(
        surface(&s, &cc(TB)),
        (
            Some(5),
            vec![
                m(U, "Add login with OAuth."),
                m(A, "OAuth login is in place, with GitHub as the provider."),
                m(U, "Also remember the user between visits."),
                m(A, "Sessions now persist for 30 days."),
            ]
        )
    );
    assert_eq!(
        surface(&s, &cc(TC)),
        (
            Some(8),
            vec![
                m(U, "Style the checkout page."),
                m(A, "The checkout page now uses the new design tokens."),
                m(U, "Make the pay button larger."),
                m(A, "The pay button is larger."),
            ]
        )
    );
    // A fresh source agrees.
    let fresh = ClaudeCodeSource::open(root.path()).unwrap();
    assert_eq!(titles(&fresh, &[TA, TB, TC]), titles(&s, &[TA, TB, TC]));
}

/// A kept source (watched or not) and a resolver caching its titles agree
/// with fresh ones at every step: a title written into another transcript
/// changes the fingerprint of the session it titles.
fn kept_titles_agree(watching: bool) {
    let root = titles_root();
    let kept = ClaudeCodeSource::open(root.path()).unwrap().with_watching(watching);
    let resolver = Resolver::new(kept.clone().into_query(), Config::default());
    let target = Target::new("new", Some("/home/dev/shop".into()));
    let agree = |what: &str| {
        let fresh = ClaudeCodeSource::open(root.path()).unwrap().with_watching(false);
        assert_eq!(kept.list().unwrap(), fresh.list().unwrap(), "listing after {what}");
        let fresh_resolver = Resolver::new(fresh.clone().into_query(), Config::default());
        for filter in ["", "OAuth", "Orders", "remember", "checkout"] {
            assert_eq!(
                block_on(resolver.candidates(&target, filter, &CandidateOptions::default(), None))
                    .map_err(|e| e.to_string()),
                block_on(fresh_resolver.candidates(&target, filter, &CandidateOptions::default(), None))
                    .map_err(|e| e.to_string()),
                "candidates {filter:?} after {what}"
            );
        }
        let shared = BlockingSessionQuery::shared_listing(&kept).unwrap().unwrap();
        let ids: Vec<String> = shared.sessions().iter().map(|h| h.id.clone()).collect();
        let fps = BlockingSessionQuery::fingerprints(&fresh, &ids).unwrap().unwrap();
        assert_eq!(shared.fingerprints(), &fps[..], "fingerprints after {what}");
    };
    agree("A and B");
    agree("nothing");
    add_later(root.path(), "C");
    agree("C was written");
    let found = block_on(resolver.candidates(&target, "OAuth login flow", &CandidateOptions::default(), None)).unwrap();
    assert_eq!(found.iter().map(|c| c.session_id.as_str()).collect::<Vec<_>>(), vec![cc(TB)]);
    add_later(root.path(), "D");
    agree("D was written");
    add_later(root.path(), "C.append");
    agree("C went on");
    let found = block_on(resolver.candidates(&target, "Remember-me", &CandidateOptions::default(), None)).unwrap();
    assert_eq!(found.iter().map(|c| c.label.as_str()).collect::<Vec<_>>(), vec!["Remember-me sessions"]);
}

#[test]
fn a_kept_source_retitles_sessions_from_other_files_watched() {
    kept_titles_agree(true);
}

#[test]
fn a_kept_source_retitles_sessions_from_other_files_unwatched() {
    kept_titles_agree(false);
}

// ---- files with no conversation

const EMPTY_DIR: &str = "claude-code-empty";

fn app(stem: &str) -> String {
    format!("claude-code:e5a6c7d8-{stem}")
}

#[test]
fn files_without_a_message_are_not_sessions_and_undated_ones_come_last() {
    let root = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join(EMPTY_DIR), root.path());
    let s = ClaudeCodeSource::open(root.path()).unwrap();
    let cwd = Some("/home/dev/app".to_owned());
    assert_eq!(
        listing(&s),
        vec![
            (app("1111-4a11-8a11-000000000001"), 1_762_070_400_000, cwd.clone()),
            // Its first message comes after 70 lines of titles and snapshots.
            (app("2222-4a22-8a22-000000000002"), 1_761_825_600_000, cwd.clone()),
            // No timestamp anywhere: dated 0, after every dated session.
            (app("3333-4a33-8a33-000000000003"), 0, cwd.clone()),
        ]
    );
    let project = root.path().join("-home-dev-app");
    let names = ["4444-4a44-8a44-000000000004", "5555-4a55-8a55-000000000005", "6666-4a66-8a66-000000000006"];
    let without: Vec<PathBuf> = names.iter().map(|n| project.join(format!("e5a6c7d8-{n}.jsonl"))).collect();
    assert_eq!(s.list().unwrap().without_conversation, without);
    // Titles of the summary-only file (Claude Code 2.0.50 wrote it) name
    // the real sessions' leaves.
    assert_eq!(
        titles(&s, &["e5a6c7d8-1111-4a11-8a11-000000000001", "e5a6c7d8-2222-4a22-8a22-000000000002"]),
        some(&["Build speed investigation", "Feature flag cleanup"])
    );
    assert_eq!(
        surface(&s, &app("2222-4a22-8a22-000000000002")),
        (Some(71), vec![m(U, "Clean up the old feature flags."), m(A, "Removed eleven flags that were always on.")])
    );
    // Through a resolver: only the three sessions are candidates.
    let resolver = Resolver::new(s.clone().into_query(), Config::default());
    let target = Target::new("new", None);
    let got = block_on(resolver.candidates(&target, "", &CandidateOptions::default(), None)).unwrap();
    assert_eq!(
        got.iter().map(|c| c.label.as_str()).collect::<Vec<_>>(),
        vec!["Build speed investigation", "Feature flag cleanup", "Summarize the README."]
    );
    // A file that gains a message is a session from then on, for a kept
    // source as for a fresh one.
    let snapshots = &without[2];
    let line = json!({"parentUuid": null, "isSidechain": false, "userType": "external", "cwd": "/home/dev/app",
        "sessionId": "e5a6c7d8-6666-4a66-8a66-000000000006", "version": "2.0.50", "type": "user",
        "message": {"role": "user", "content": "Bump the MSRV."}, "uuid": "90c9a5ea-0000-4c00-8000-000000000001",
        "timestamp": "2025-11-03T09:00:05.000Z"});
    {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new().append(true).open(snapshots).unwrap();
        f.write_all(format!("{line}\n").as_bytes()).unwrap();
    }
    let fresh = ClaudeCodeSource::open(root.path()).unwrap();
    assert_eq!(s.list().unwrap(), fresh.list().unwrap());
    assert_eq!(listing(&s)[0], (app("6666-4a66-8a66-000000000006"), 1_762_160_405_000, cwd));
    assert_eq!(s.list().unwrap().without_conversation, without[..2].to_vec());
}

#[test]
fn a_zero_byte_codex_rollout_is_not_a_session_until_it_is_written() {
    use dsh_session_reference::sources::codex::CodexSource;
    let home = tempfile::tempdir().unwrap();
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/foreign-logs/codex/daaain"), home.path());
    let id = "0199bbbb-0000-7000-8000-000000000001";
    let day = home.path().join("sessions/2026/02/01");
    std::fs::create_dir_all(&day).unwrap();
    let path = day.join(format!("rollout-2026-02-01T00-00-00-{id}.jsonl"));
    std::fs::write(&path, "").unwrap();
    let s = CodexSource::open(home.path()).unwrap();
    let l = s.list().unwrap();
    assert_eq!(l.sessions.len(), 4);
    assert_eq!(l.without_conversation, vec![path.clone()]);
    let meta = json!({"timestamp": "2026-02-01T00:00:00.000Z", "type": "session_meta",
        "payload": {"id": id, "timestamp": "2026-02-01T00:00:00.000Z", "cwd": "/w", "cli_version": "0.128.0"}});
    std::fs::write(&path, lines(&[meta])).unwrap();
    let l = s.list().unwrap();
    assert_eq!(l.sessions[0].header.id, format!("codex:{id}"));
    assert!(l.without_conversation.is_empty());
}

// ---- roots given the way people give them

use dsh_session_reference::sources::{open_sources, report_json, SourceKind, SourceSpec};
use dsh_session_reference::SessionQuery;

fn foreign() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/foreign-logs")
}

/// Lists one source opened at `root` through a view: the ids listed, and
/// the source's report (`{"name", "sessions"|"error", "note"?}`).
fn open_one(kind: SourceKind, root: &Path) -> (Vec<String>, serde_json::Value) {
    let view = open_sources(&[SourceSpec::new(kind, root)]).unwrap();
    let ids = block_on(view.list_sessions()).map(|l| l.into_iter().map(|h| h.id).collect()).unwrap_or_default();
    (ids, report_json(&view)[0].clone())
}

const CODEX_IDS: [&str; 4] = [
    "codex:44444444-4444-4444-8444-444444444444",
    "codex:33333333-3333-4333-8333-333333333333",
    "codex:22222222-2222-4222-8222-222222222222",
    "codex:11111111-1111-4111-8111-111111111111",
];

#[test]
fn a_codex_sessions_directory_is_read_as_its_home() {
    let home = tempfile::tempdir().unwrap();
    copy_dir(&foreign().join("codex/daaain/sessions"), &home.path().join("sessions"));
    // The home as given: as before, no note.
    let (ids, report) = open_one(SourceKind::Codex, home.path());
    assert_eq!(ids, CODEX_IDS);
    assert_eq!(report, json!({"name": "codex", "sessions": 4}));
    // Its sessions/ directory, where users see their rollouts.
    let sessions = home.path().join("sessions");
    let (ids, report) = open_one(SourceKind::Codex, &sessions);
    assert_eq!(ids, CODEX_IDS);
    let note =
        format!("{} is the sessions/ directory of a Codex home: reading {}", sessions.display(), home.path().display());
    assert_eq!(report, json!({"name": "codex", "sessions": 4, "note": note}));
    // archived_sessions/ alike (and its home's sessions/ are read too).
    let archived = home.path().join("archived_sessions");
    std::fs::create_dir(&archived).unwrap();
    let (ids, report) = open_one(SourceKind::Codex, &archived);
    assert_eq!(ids, CODEX_IDS);
    assert!(report["note"].as_str().unwrap().contains("is the archived_sessions/ directory of a Codex home"));
    // A dated directory inside sessions/ is ambiguous: an error naming the home.
    let day = sessions.join("2026/01/03");
    let (ids, report) = open_one(SourceKind::Codex, &day);
    assert!(ids.is_empty());
    let want = format!(
        "codex root {} is a dated directory inside {}: give the Codex home, the directory holding sessions/ \
         (as ~/.codex): {}",
        day.display(),
        sessions.display(),
        home.path().display()
    );
    assert_eq!(report, json!({"name": "codex", "error": want}));
    // Rollouts outside any Codex home: an error too.
    let loose = tempfile::tempdir().unwrap();
    let name = "rollout-44444444-4444-4444-8444-444444444444.jsonl";
    std::fs::copy(sessions.join(name), loose.path().join(name)).unwrap();
    let (_, report) = open_one(SourceKind::Codex, loose.path());
    assert!(report["error"].as_str().unwrap().ends_with("holds rollouts but is not a Codex home nor its sessions/ directory; give the Codex home, the directory holding sessions/ (as ~/.codex)"), "{report}");
}

#[test]
fn a_claude_configuration_directory_is_read_through_its_projects() {
    let config = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join("claude-code-queue"), &config.path().join("projects"));
    for dir in ["todos", "statsig"] {
        std::fs::create_dir(config.path().join(dir)).unwrap();
    }
    std::fs::write(config.path().join("todos/x-agent-x.json"), "[]").unwrap();
    std::fs::write(config.path().join("history.jsonl"), "{}\n").unwrap();
    let (ids, report) = open_one(SourceKind::ClaudeCode, config.path());
    assert_eq!(ids, vec![CANCELLED, QUEUED]);
    let note = format!(
        "{} is a Claude Code configuration directory: reading {}",
        config.path().display(),
        config.path().join("projects").display()
    );
    assert_eq!(report, json!({"name": "claude-code", "sessions": 2, "note": note}));
    let (_, report) = open_one(SourceKind::ClaudeCode, &config.path().join("projects"));
    assert_eq!(report, json!({"name": "claude-code", "sessions": 2}));
    // One project's directory: ambiguous, an error naming the projects root.
    let project = config.path().join("projects/-home-dev-parser");
    let (ids, report) = open_one(SourceKind::ClaudeCode, &project);
    assert!(ids.is_empty());
    let want = format!(
        "claude-code root {} holds 2 transcript(s) itself: it is one project's directory; give the projects \
         root, its parent {} (as ~/.claude/projects)",
        project.display(),
        config.path().join("projects").display()
    );
    assert_eq!(report, json!({"name": "claude-code", "error": want}));
}

#[test]
fn a_dsh_home_is_read_through_its_sessions_and_a_root_too_deep_is_refused() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sessions");
    let home = tempfile::tempdir().unwrap();
    copy_dir(&examples, &home.path().join("sessions"));
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    let (direct, report) = open_one(SourceKind::Dsh, &home.path().join("sessions"));
    assert!(!direct.is_empty());
    assert_eq!(report, json!({"name": "dsh", "sessions": direct.len()}));
    let (ids, report) = open_one(SourceKind::Dsh, home.path());
    assert_eq!(ids, direct);
    let note = format!("{} is a DSH home: reading {}", home.path().display(), home.path().join("sessions").display());
    assert_eq!(report, json!({"name": "dsh", "sessions": direct.len(), "note": note}));
    let project = home.path().join("sessions/--home-dev-alpha--");
    let (_, report) = open_one(SourceKind::Dsh, &project);
    let want = format!(
        "dsh root {} is one project's directory (its directories are sessions): give the sessions root (as \
         ~/.dsh/sessions), its parent: {}",
        project.display(),
        home.path().join("sessions").display()
    );
    assert_eq!(report, json!({"name": "dsh", "error": want}));
    let session = std::fs::read_dir(&project).unwrap().map(|e| e.unwrap().path()).find(|p| p.is_dir()).unwrap();
    let (_, report) = open_one(SourceKind::Dsh, &session);
    assert!(report["error"].as_str().unwrap().contains("is one session's directory (it holds its log)"), "{report}");
    // A single source opened alone resolves its root the same way.
    let store = dsh_session_reference::sources::open_source(&SourceSpec::new(SourceKind::Dsh, home.path())).unwrap();
    assert_eq!(block_on(store.list_sessions()).unwrap().len(), direct.len());
    assert!(dsh_session_reference::sources::open_source(&SourceSpec::new(SourceKind::Dsh, &project)).is_err());
}

#[test]
fn a_root_with_no_session_of_its_kind_says_what_it_holds() {
    // Claude Code: transcripts without a message only.
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("-home-dev-app");
    std::fs::create_dir(&project).unwrap();
    for n in ["4444-4a44-8a44-000000000004", "5555-4a55-8a55-000000000005"] {
        let name = format!("e5a6c7d8-{n}.jsonl");
        std::fs::copy(fixtures().join(EMPTY_DIR).join("-home-dev-app").join(&name), project.join(&name)).unwrap();
    }
    let (ids, report) = open_one(SourceKind::ClaudeCode, root.path());
    assert!(ids.is_empty());
    let note = format!(
        "no Claude Code session in {}: none of its 2 transcripts holds a message (empty, only summary or \
         file-history lines, or unreadable)",
        root.path().display()
    );
    assert_eq!(report, json!({"name": "claude-code", "sessions": 0, "note": note}));
    // Codex: a directory that is no Codex home.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("notes.txt"), "").unwrap();
    let (_, report) = open_one(SourceKind::Codex, other.path());
    let note = format!(
        "no Codex session in {}: expected a Codex home, holding sessions/ or archived_sessions/ (as ~/.codex); \
         it holds notes.txt",
        other.path().display()
    );
    assert_eq!(report, json!({"name": "codex", "sessions": 0, "note": note}));
    // DSH: an empty root.
    let empty = tempfile::tempdir().unwrap();
    let (_, report) = open_one(SourceKind::Dsh, empty.path());
    let note = format!(
        "no DSH session in {}: expected project directories of session directories holding session.jsonl (as \
         ~/.dsh/sessions); it is empty",
        empty.path().display()
    );
    assert_eq!(report, json!({"name": "dsh", "sessions": 0, "note": note}));
}
