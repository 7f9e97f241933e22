//! The Claude Code and Codex sources: every fixture's projected
//! conversation, title, cwd and id pinned, and a crafted case for every
//! projection rule and every kind of damage.

mod common;
use common::copy_dir;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_session_reference::sources::claude_code::{self, ClaudeCodeSource};
use dsh_session_reference::sources::codex::{self, CodexSource};
use dsh_session_reference::sources::{open_sources, SourceKind, SourceSpec};
use dsh_session_reference::{
    block_on, BlockingSessionQuery, CandidateOptions, Config, ConversationItem, FileSource, PrepareOptions, Resolver,
    SessionQuery, Target,
};
use serde_json::json;

const U: bool = true;
const A: bool = false;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/foreign-logs")
}

/// `(is_user, text, checkpoint)` of each item.
fn items(list: &[ConversationItem]) -> Vec<(bool, &str, bool)> {
    list.iter().map(|i| (i.role.as_str() == "user", i.text.as_str(), i.checkpoint)).collect()
}

fn cp(text: &str) -> (bool, &str, bool) {
    (U, text, true)
}

fn m(user: bool, text: &str) -> (bool, &str, bool) {
    (user, text, false)
}

/// One pinned session: id, createdAt, listed cwd, read cwd, title,
/// capturedThroughSeq, items.
struct Pinned<'a> {
    id: &'a str,
    created_at: u64,
    cwd: Option<&'a str>,
    title: Option<&'a str>,
    seq: u64,
    items: Vec<(bool, &'a str, bool)>,
}

fn check_pinned<S: BlockingSessionQuery>(source: &S, listed: &[(String, u64, Option<String>)], want: &[Pinned<'_>]) {
    let ids: Vec<&str> = listed.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(ids, want.iter().map(|p| p.id).collect::<Vec<_>>(), "listing order");
    for (p, (id, created, cwd)) in want.iter().zip(listed) {
        assert_eq!((*created, cwd.as_deref()), (p.created_at, p.cwd), "{id}");
        assert_eq!(source.read_title(id).unwrap().as_deref(), p.title, "{id}");
        let surface = source.read_surface(id).unwrap();
        let dsh_session_reference::SurfaceData::Conversation(c) = surface else { panic!("{id}: not a conversation") };
        assert_eq!(c.session_id, p.id);
        assert_eq!(c.cwd.as_deref(), p.cwd, "{id}");
        assert_eq!(c.captured_through_seq.as_ref().and_then(|n| n.as_u64()), Some(p.seq), "{id}");
        assert_eq!(items(&c.items), p.items, "{id}");
    }
}

fn claude_listing(s: &ClaudeCodeSource) -> Vec<(String, u64, Option<String>)> {
    let l = s.list().unwrap();
    assert!(l.rejected.is_empty(), "{:?}", l.rejected);
    l.sessions.into_iter().map(|s| (s.header.id, s.header.created_at.as_u64().unwrap(), s.header.cwd)).collect()
}

fn codex_listing(s: &CodexSource) -> Vec<(String, u64, Option<String>)> {
    let l = s.list().unwrap();
    assert!(l.rejected.is_empty(), "{:?}", l.rejected);
    l.sessions.into_iter().map(|s| (s.header.id, s.header.created_at.as_u64().unwrap(), s.header.cwd)).collect()
}

const SUMMARY: &str = "This session is being continued from a previous conversation that ran out of context. \
                       Summary: the user asked for a plan.";

#[test]
fn claude_code_fixtures_project_exactly() {
    let s = ClaudeCodeSource::open(fixtures().join("claude-code")).unwrap();
    let listed = claude_listing(&s);
    check_pinned(
        &s,
        &listed,
        &[
            Pinned {
                id: "claude-code:session_id_steering_order",
                created_at: 1_783_753_200_000,
                cwd: Some("/tmp/project"),
                title: Some("Please start the migration."),
                seq: 4,
                items: vec![
                    m(U, "Please start the migration."),
                    m(A, "Starting the migration now."),
                    m(U, "actually \u{2014} focus on the parser first"),
                    m(U, "Here is the extra context you asked for."),
                    m(A, "Understood \u{2014} parser first, done."),
                ],
            },
            Pinned {
                id: "claude-code:sample_session",
                created_at: 1_766_570_400_000,
                cwd: Some("/project"),
                // Its `summary` names a leaf that is not in the file.
                title: Some("Create a hello world function"),
                seq: 7,
                items: vec![
                    m(U, "Create a hello world function"),
                    m(A, "I'll create that function for you."),
                    m(U, "Now add a goodbye function"),
                    m(A, "Done! The hello function is ready."),
                ],
            },
            Pinned {
                id: "claude-code:sidechain_integrated",
                created_at: 1_763_592_814_908,
                cwd: Some("e:\\Workspace\\src\\github\\claude-code-log"),
                title: None,
                seq: 5,
                items: vec![m(A, "Excellent research! The sub-assistant has identifi...")],
            },
            Pinned {
                id: "claude-code:dag_compact_after_rewind",
                created_at: 1_751_364_000_000,
                cwd: Some("/tmp"),
                title: Some("Start"),
                seq: 11,
                items: vec![cp(SUMMARY), m(U, "After compaction"), m(A, "Final answer")],
            },
            Pinned {
                id: "claude-code:dag_compact_after_rewind_preserved",
                created_at: 1_751_364_000_000,
                cwd: Some("/tmp"),
                title: Some("Start"),
                seq: 11,
                items: vec![
                    cp(SUMMARY),
                    m(A, "Second answer"),
                    m(U, "Keep going"),
                    m(A, "Kept going"),
                    m(U, "After compaction"),
                    m(A, "Final answer"),
                ],
            },
            Pinned {
                id: "claude-code:system_reminder",
                created_at: 1_749_902_400_000,
                cwd: Some("/tmp/project"),
                title: Some("Please review the change. # Project notes The tail content still renders as user text."),
                seq: 2,
                items: vec![
                    m(U, "Please review the change.\n# Project notes\nThe tail content still renders as user text."),
                    m(A, "Reviewed \u{2014} the tail is preserved and the reminder is annotated."),
                ],
            },
        ],
    );
    // The modern layout: the session's own directory (subagents/) is not a
    // project and its agent files are not sessions.
    let s = ClaudeCodeSource::open(fixtures().join("claude-code/daaain")).unwrap();
    let listed = claude_listing(&s);
    check_pinned(
        &s,
        &listed,
        &[Pinned {
            id: "claude-code:55550000-0000-4000-8000-000000000001",
            created_at: 1_781_517_601_000,
            cwd: Some("/workspace/example-app"),
            title: Some(
                "Give me a tour of the repository: its structure, then compare the web and jobs modules side by side.",
            ),
            seq: 10,
            items: vec![
                m(U, "Give me a tour of the repository: its structure, then compare the web and jobs modules side by side."),
                m(A, "Let me inspect the repository structure first."),
                m(A, "Now two agents, one per module, so their reports can be compared."),
                m(
                    A,
                    "Both modules are surveyed: **web** renders the column layout, and **jobs** runs three scheduled jobs.",
                ),
            ],
        }],
    );
}

#[test]
fn codex_fixtures_project_exactly() {
    let s = CodexSource::open(fixtures().join("codex/daaain")).unwrap();
    let listed = codex_listing(&s);
    check_pinned(
        &s,
        &listed,
        &[
            Pinned {
                id: "codex:44444444-4444-4444-8444-444444444444",
                created_at: 1_767_503_167_000,
                cwd: None,
                title: Some("Open the synthetic legacy session."),
                seq: 2,
                items: vec![m(U, "Open the synthetic legacy session."), m(A, "The synthetic legacy session is open.")],
            },
            // Parent and child threads hold no response_item message: their
            // event_msg mirrors are not read, so nothing is on the surface.
            Pinned {
                id: "codex:33333333-3333-4333-8333-333333333333",
                created_at: 1_767_413_110_000,
                cwd: Some("/workspace/synthetic-project"),
                title: None,
                seq: 4,
                items: vec![],
            },
            Pinned {
                id: "codex:22222222-2222-4222-8222-222222222222",
                created_at: 1_767_413_106_000,
                cwd: Some("/workspace/synthetic-project"),
                title: None,
                seq: 4,
                items: vec![],
            },
            Pinned {
                id: "codex:11111111-1111-4111-8111-111111111111",
                created_at: 1_767_323_045_000,
                cwd: Some("/workspace/synthetic-project"),
                title: Some("List the synthetic files."),
                seq: 13,
                items: vec![m(U, "List the synthetic files."), m(A, "The synthetic files are alpha.txt and beta.txt.")],
            },
        ],
    );
    // The torn fixture, under a home of its own.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("sessions")).unwrap();
    let name = "rollout-66666666-6666-4666-8666-666666666666.jsonl";
    std::fs::copy(fixtures().join("codex/daaain/malformed").join(name), home.path().join("sessions").join(name))
        .unwrap();
    let s = CodexSource::open(home.path()).unwrap();
    let listed = codex_listing(&s);
    check_pinned(
        &s,
        &listed,
        &[Pinned {
            id: "codex:66666666-6666-4666-8666-666666666666",
            created_at: 1_769_904_000_000,
            cwd: Some("/workspace/synthetic-project"),
            title: None,
            seq: 2,
            items: vec![],
        }],
    );
    let (_, read) = s.read("codex:66666666-6666-4666-8666-666666666666").unwrap();
    assert_eq!((read.stats.lines, read.stats.skipped), (3, 1));
}

// ---- crafted Claude Code transcripts ----

/// A Claude Code projects root with one project holding `files`.
fn claude_root(files: &[(&str, String)]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("-work-p");
    std::fs::create_dir(&project).unwrap();
    for (name, text) in files {
        std::fs::write(project.join(format!("{name}.jsonl")), text).unwrap();
    }
    root
}

fn lines(values: &[serde_json::Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

fn user(uuid: &str, parent: Option<&str>, ts: u32, content: serde_json::Value) -> serde_json::Value {
    json!({"type": "user", "uuid": uuid, "parentUuid": parent, "isSidechain": false, "cwd": "/work/p",
        "sessionId": "s", "timestamp": format!("2026-01-01T00:00:{ts:02}.000Z"),
        "message": {"role": "user", "content": content}})
}

fn asst(uuid: &str, parent: Option<&str>, ts: u32, msg_id: &str, content: serde_json::Value) -> serde_json::Value {
    json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "isSidechain": false, "cwd": "/work/p",
        "sessionId": "s", "timestamp": format!("2026-01-01T00:00:{ts:02}.000Z"),
        "message": {"id": msg_id, "role": "assistant", "model": "claude-x", "content": content}})
}

fn text(t: &str) -> serde_json::Value {
    json!([{"type": "text", "text": t}])
}

fn claude_items(root: &tempfile::TempDir, stem: &str) -> Vec<(bool, String, bool)> {
    let s = ClaudeCodeSource::open(root.path()).unwrap();
    let c = s.conversation(&format!("claude-code:{stem}")).unwrap();
    c.items.iter().map(|i| (i.role.as_str() == "user", i.text.clone(), i.checkpoint)).collect()
}

fn owned(v: Vec<(bool, &str, bool)>) -> Vec<(bool, String, bool)> {
    v.into_iter().map(|(u, t, c)| (u, t.to_owned(), c)).collect()
}

#[test]
fn claude_code_rewind_takes_the_newest_branch_and_drops_sidechains() {
    let mut side = asst("s1", None, 9, "msg_s", text("subagent talk"));
    side["isSidechain"] = json!(true);
    let t = lines(&[
        user("u1", None, 0, text("Start")),
        asst("a1", Some("u1"), 1, "m1", text("Ready")),
        user("b1", Some("a1"), 2, text("old branch")),
        asst("b1a", Some("b1"), 3, "m2", text("old answer")),
        user("b2", Some("a1"), 4, text("new branch")),
        asst("b2a", Some("b2"), 5, "m3", text("new answer")),
        // A sidechain line last in the file is never the leaf.
        side,
    ]);
    let root = claude_root(&[("fork", t)]);
    assert_eq!(
        claude_items(&root, "fork"),
        owned(vec![m(U, "Start"), m(A, "Ready"), m(U, "new branch"), m(A, "new answer")])
    );
}

#[test]
fn claude_code_compaction_keeps_a_preserved_segment() {
    let boundary = json!({"type": "system", "subtype": "compact_boundary", "uuid": "cb", "parentUuid": null,
        "logicalParentUuid": "a2", "timestamp": "2026-01-01T00:00:10.000Z",
        "compactMetadata": {"preservedSegment": {"headUuid": "u2", "anchorUuid": "cs", "tailUuid": "a2"}}});
    // The first child of the boundary is the summary, flagged or not.
    let summary = user("cs", Some("cb"), 11, text("Summary of it all."));
    let t = lines(&[
        user("u1", None, 0, text("dropped by compaction")),
        asst("a1", Some("u1"), 1, "m1", text("dropped too")),
        user("u2", Some("a1"), 2, text("kept question")),
        asst("a2", Some("u2"), 3, "m2", text("kept answer")),
        boundary,
        summary,
        user("u3", Some("cs"), 12, text("after")),
    ]);
    let root = claude_root(&[("c", t)]);
    assert_eq!(
        claude_items(&root, "c"),
        owned(vec![cp("Summary of it all."), m(U, "kept question"), m(A, "kept answer"), m(U, "after")])
    );
}

#[test]
fn claude_code_keeps_typed_user_text_only() {
    let mut meta = user("u2", Some("a1"), 2, text("Caveat: generated"));
    meta["isMeta"] = json!(true);
    let mut synthetic = asst("a3", Some("u4"), 5, "m3", text("API Error"));
    synthetic["message"]["model"] = json!("<synthetic>");
    let t = lines(&[
        user(
            "u1",
            None,
            0,
            json!([
                {"type": "text", "text": "<ide_opened_file>The user opened src/a.rs</ide_opened_file>"},
                {"type": "text", "text": "Why does <system-reminder>secret harness note</system-reminder>this fail?"},
                {"type": "image", "source": {"type": "base64", "data": "AAAA"}}
            ]),
        ),
        asst("a1", Some("u1"), 1, "m1", json!([{"type": "thinking", "thinking": "hmm", "signature": "x"}])),
        meta,
        user(
            "u3",
            Some("u2"),
            3,
            json!("<command-name>/clear</command-name>\n<command-message>clear</command-message>"),
        ),
        user("u4", Some("u3"), 4, json!([{"type": "tool_result", "tool_use_id": "t", "content": "output"}])),
        synthetic,
        user("u5", Some("a3"), 6, text("[Request interrupted by user]")),
        user("u6", Some("u5"), 7, json!("plain string prompt")),
        asst("a4", Some("u6"), 8, "m4", json!([{"type": "text", "text": "part one"}])),
        asst("a5", Some("a4"), 9, "m4", json!([{"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}])),
        asst("a6", Some("a5"), 10, "m4", json!([{"type": "text", "text": "part two"}])),
    ]);
    let root = claude_root(&[("typed", t)]);
    assert_eq!(
        claude_items(&root, "typed"),
        owned(vec![
            m(U, "Why does this fail?"),
            m(U, "plain string prompt"),
            // One message.id: its text lines joined at the first of them.
            m(A, "part one\npart two"),
        ])
    );
}

#[test]
fn claude_code_steering_prompts_and_titles() {
    let queued = json!({"type": "attachment", "uuid": "q1", "parentUuid": "a1", "timestamp": "2026-01-01T00:00:02.000Z",
        "attachment": {"type": "queued_command", "commandMode": "prompt", "prompt": "also check the docs"}});
    let note = json!({"type": "attachment", "uuid": "q2", "parentUuid": "q1", "timestamp": "2026-01-01T00:00:03.000Z",
        "attachment": {"type": "queued_command", "commandMode": "task-notification", "prompt": "task done"}});
    let t = lines(&[
        json!({"type": "ai-title", "aiTitle": "First guess", "sessionId": "s"}),
        user("u1", None, 0, text("Do the thing")),
        asst("a1", Some("u1"), 1, "m1", text("Doing it")),
        // The same prompt as a queue removal and as an attachment: once.
        json!({"type": "queue-operation", "operation": "remove", "timestamp": "2026-01-01T00:00:02.000Z",
            "content": "also check the docs"}),
        // Typed before the current view started: not on it.
        json!({"type": "queue-operation", "operation": "remove", "timestamp": "2025-01-01T00:00:00.000Z",
            "content": "ancient"}),
        queued,
        note,
        asst("a2", Some("q2"), 4, "m2", text("Checked")),
        json!({"type": "custom-title", "customTitle": "Renamed", "sessionId": "s"}),
        json!({"type": "ai-title", "aiTitle": "Better guess", "sessionId": "s"}),
    ]);
    let root = claude_root(&[("steer", t)]);
    assert_eq!(
        claude_items(&root, "steer"),
        owned(vec![m(U, "Do the thing"), m(A, "Doing it"), m(U, "also check the docs"), m(A, "Checked")])
    );
    let s = ClaudeCodeSource::open(root.path()).unwrap();
    // custom-title beats the later ai-title.
    assert_eq!(s.read_title("claude-code:steer").unwrap().as_deref(), Some("Renamed"));
    // ai-title (latest) beats a summary on the chain, which beats the prompt.
    let t = lines(&[
        json!({"type": "summary", "summary": "Legacy summary", "leafUuid": "a1"}),
        user("u1", None, 0, text("prompt")),
        asst("a1", Some("u1"), 1, "m1", text("answer")),
    ]);
    std::fs::write(root.path().join("-work-p/sum.jsonl"), &t).unwrap();
    assert_eq!(s.read_title("claude-code:sum").unwrap().as_deref(), Some("Legacy summary"));
    let ai = format!(
        "{t}{}\n{}\n",
        json!({"type": "ai-title", "aiTitle": "A"}),
        json!({"type": "ai-title", "aiTitle": "B"})
    );
    std::fs::write(root.path().join("-work-p/sum.jsonl"), ai).unwrap();
    assert_eq!(s.read_title("claude-code:sum").unwrap().as_deref(), Some("B"));
}

#[test]
fn claude_code_skips_torn_corrupt_and_deep_lines() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let mut wrong = user("u9", Some("a1"), 3, text("x"));
    wrong["message"] = json!(5);
    wrong["isSidechain"] = json!("yes");
    wrong["cwd"] = json!(["not", "a", "string"]);
    let t = format!(
        "{}garbage line\n{deep}\n{}{}{{\"type\":\"user\",\"uuid\":\"torn",
        lines(&[user("u1", None, 0, text("before"))]),
        lines(&[asst("a1", Some("u1"), 1, "m1", text("middle")), wrong]),
        lines(&[user("u2", Some("u9"), 4, text("after"))]),
    );
    let root = claude_root(&[("damaged", t)]);
    // The line with wrong types is still a chain line (its odd fields read
    // as absent); the rest reads around the bad lines.
    assert_eq!(claude_items(&root, "damaged"), owned(vec![m(U, "before"), m(A, "middle"), m(U, "after")]));
    let s = ClaudeCodeSource::open(root.path()).unwrap();
    let (_, read) = s.read("claude-code:damaged").unwrap();
    // The torn tail is not a line (a writer may be in the middle of it).
    assert_eq!((read.stats.lines, read.stats.skipped), (6, 2));
}

#[test]
fn claude_code_a_50_mb_transcript_reads_in_bounded_passes() {
    let big = "x".repeat(100_000);
    let mut t = String::with_capacity(52 << 20);
    let mut parent: Option<String> = None;
    let mut n = 0;
    while t.len() < 50 << 20 {
        let u = format!("u{n}");
        t.push_str(&format!("{}\n", user(&u, parent.as_deref(), 0, text(&format!("question {n}")))));
        let a = format!("a{n}");
        let body = json!([{"type": "tool_use", "id": "t", "name": "Read", "input": {"blob": big}},
            {"type": "text", "text": format!("answer {n}")}]);
        t.push_str(&format!("{}\n", asst(&a, Some(&u), 0, &format!("m{n}"), body)));
        parent = Some(a);
        n += 1;
    }
    let root = claude_root(&[("big", t)]);
    let got = claude_items(&root, "big");
    assert_eq!(got.len(), 2 * n);
    assert_eq!(got[2 * n - 1], (A, format!("answer {}", n - 1), false));
}

#[test]
fn claude_code_refuses_a_line_over_the_limit_and_links_out_of_the_root() {
    let root = claude_root(&[("ok", lines(&[user("u1", None, 0, text("fine"))]))]);
    let project = root.path().join("-work-p");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(project.join("huge.jsonl")).unwrap();
        let chunk = vec![b'a'; 1 << 20];
        f.write_all(b"{\"type\":\"user\",\"x\":\"").unwrap();
        for _ in 0..100 {
            f.write_all(&chunk).unwrap();
        }
        f.write_all(b"\"}\n").unwrap();
    }
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.jsonl"), lines(&[user("x", None, 0, text("outside"))])).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path().join("secret.jsonl"), project.join("linked.jsonl")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("-linked-project")).unwrap();
    }
    let s = ClaudeCodeSource::open(root.path()).unwrap();
    let listing = s.list().unwrap();
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.header.id.as_str()).collect();
    assert!(ids.contains(&"claude-code:ok") && ids.contains(&"claude-code:huge"), "{ids:?}");
    let err = s.read_surface("claude-code:huge").unwrap_err();
    assert!(
        err.message().contains("longer than 67108864 bytes") && err.message().contains("huge"),
        "{}",
        err.message()
    );
    #[cfg(unix)]
    {
        assert!(!ids.contains(&"claude-code:linked") && !ids.contains(&"claude-code:secret"), "{ids:?}");
        assert_eq!(listing.rejected.len(), 2, "{:?}", listing.rejected);
        let err = s.read_surface("claude-code:linked").unwrap_err();
        assert!(err.message().contains("symbolic link, not followed"), "{}", err.message());
        assert!(s.read_surface("claude-code:secret").is_err());
    }
    // Reading never wrote anything.
    assert_eq!(std::fs::read_dir(&project).unwrap().count(), if cfg!(unix) { 3 } else { 2 });
    let err = s.read_surface("claude-code:../x").unwrap_err();
    assert!(err.message().contains("no Claude Code session"), "{}", err.message());
}

// ---- crafted Codex rollouts ----

fn env(ts: u32, kind: &str, payload: serde_json::Value) -> serde_json::Value {
    json!({"timestamp": format!("2026-03-01T00:00:{ts:02}.000Z"), "type": kind, "payload": payload})
}

fn msg(role: &str, part: &str, t: &str) -> serde_json::Value {
    json!({"type": "message", "role": role, "content": [{"type": part, "text": t}]})
}

fn meta(id: &str) -> serde_json::Value {
    env(
        0,
        "session_meta",
        json!({"id": id, "timestamp": "2026-03-01T00:00:00.000Z", "cwd": "/start", "cli_version": "0.150.0"}),
    )
}

const ID: &str = "0199aaaa-0000-7000-8000-000000000001";

fn codex_home(rollout: &[serde_json::Value]) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions/2026/03/01");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("rollout-2026-03-01T00-00-00-{ID}.jsonl")), lines(rollout)).unwrap();
    home
}

fn codex_items(home: &tempfile::TempDir) -> Vec<(bool, String, bool)> {
    let s = CodexSource::open(home.path()).unwrap();
    let c = s.conversation(&format!("codex:{ID}")).unwrap();
    c.items.iter().map(|i| (i.role.as_str() == "user", i.text.clone(), i.checkpoint)).collect()
}

#[test]
fn codex_replays_compaction_rollback_and_drops_context() {
    let summary = "Another language model started to solve this problem and produced a summary: all good.";
    let home = codex_home(&[
        meta(ID),
        env(1, "response_item", msg("developer", "input_text", "<permissions instructions>")),
        env(
            1,
            "response_item",
            msg("user", "input_text", "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nrules\n</INSTRUCTIONS>"),
        ),
        env(
            1,
            "response_item",
            msg("user", "input_text", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        ),
        env(2, "response_item", msg("user", "input_text", "old question")),
        env(3, "response_item", msg("assistant", "output_text", "old answer")),
        env(
            4,
            "compacted",
            json!({"message": "", "replacement_history": [
                msg("user", "input_text", "old question"),
                msg("user", "input_text", summary),
                msg("developer", "input_text", "fresh permissions"),
            ]}),
        ),
        env(5, "event_msg", json!({"type": "user_message", "message": "mirror, never read"})),
        env(5, "response_item", msg("user", "input_text", "new question")),
        env(6, "response_item", json!({"type": "reasoning", "summary": [], "encrypted_content": "SECRET"})),
        env(6, "response_item", json!({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"})),
        env(6, "response_item", json!({"type": "function_call_output", "call_id": "c", "output": "tool out"})),
        env(7, "response_item", msg("assistant", "output_text", "new answer")),
        env(8, "response_item", msg("user", "input_text", "rolled back question")),
        env(9, "response_item", msg("assistant", "output_text", "rolled back answer")),
        env(10, "event_msg", json!({"type": "thread_rolled_back", "num_turns": 1})),
        env(11, "turn_context", json!({"cwd": "/moved", "model": "m"})),
        env(12, "response_item", msg("user", "input_text", "<turn_aborted>\nstopped\n</turn_aborted>")),
        env(12, "response_item", msg("user", "input_text", "final question")),
    ]);
    assert_eq!(
        codex_items(&home),
        owned(vec![
            m(U, "old question"),
            cp(summary),
            m(U, "new question"),
            m(A, "new answer"),
            m(U, "final question"),
        ])
    );
    let s = CodexSource::open(home.path()).unwrap();
    let c = s.conversation(&format!("codex:{ID}")).unwrap();
    assert_eq!(c.cwd.as_deref(), Some("/moved"));
    assert_eq!(s.list().unwrap().sessions[0].header.cwd.as_deref(), Some("/start"));
    // No index, no rename: the first real user message (the AGENTS.md
    // preamble and environment context are not it).
    assert_eq!(s.read_title(&format!("codex:{ID}")).unwrap().as_deref(), Some("old question"));
}

#[test]
fn codex_encrypted_and_legacy_compaction_are_checkpoints() {
    let home = codex_home(&[
        meta(ID),
        env(1, "response_item", msg("user", "input_text", "q1")),
        env(2, "response_item", msg("assistant", "output_text", "a1")),
        env(
            3,
            "compacted",
            json!({"message": "", "replacement_history": [
                msg("user", "input_text", "q1"),
                {"type": "compaction", "encrypted_content": "opaque"}
            ]}),
        ),
        env(4, "response_item", msg("user", "input_text", "q2")),
    ]);
    assert_eq!(codex_items(&home), owned(vec![m(U, "q1"), cp(codex::rollout::ENCRYPTED_CHECKPOINT), m(U, "q2")]));
    let home = codex_home(&[
        meta(ID),
        env(1, "response_item", msg("user", "input_text", "q1")),
        env(2, "response_item", msg("assistant", "output_text", "a1")),
        env(3, "compacted", json!({"message": "What happened so far."})),
        env(4, "response_item", msg("assistant", "output_text", "a2")),
    ]);
    assert_eq!(codex_items(&home), owned(vec![m(U, "q1"), cp("What happened so far."), m(A, "a2")]));
}

#[test]
fn codex_titles_archived_sessions_and_damage() {
    let home = codex_home(&[
        meta(ID),
        env(1, "response_item", msg("user", "input_text", "first prompt")),
        env(2, "event_msg", json!({"type": "thread_name_updated", "thread_id": ID, "thread_name": "Renamed in file"})),
    ]);
    let s = CodexSource::open(home.path()).unwrap();
    let id = format!("codex:{ID}");
    assert_eq!(s.read_title(&id).unwrap().as_deref(), Some("Renamed in file"));
    let index = lines(&[
        json!({"id": ID, "thread_name": "Indexed", "updated_at": "2026-03-01T00:00:00Z"}),
        json!({"id": "other", "thread_name": "Not this", "updated_at": "2026-03-01T00:00:00Z"}),
        json!({"id": ID, "thread_name": "Indexed later", "updated_at": "2026-03-02T00:00:00Z"}),
    ]);
    std::fs::write(home.path().join("session_index.jsonl"), format!("{index}not json\n")).unwrap();
    assert_eq!(s.read_title(&id).unwrap().as_deref(), Some("Indexed later"));
    // Archived rollouts are listed after (and lose to) live ones.
    let archived = home.path().join("archived_sessions");
    std::fs::create_dir(&archived).unwrap();
    let other = "0199aaaa-0000-7000-8000-000000000002";
    std::fs::write(
        archived.join(format!("rollout-2026-02-01T00-00-00-{other}.jsonl")),
        lines(&[meta(other), env(1, "response_item", msg("user", "input_text", "archived"))]),
    )
    .unwrap();
    std::fs::write(archived.join(format!("rollout-2026-02-01T00-00-00-{ID}.jsonl")), lines(&[meta(ID)])).unwrap();
    let listing = s.list().unwrap();
    assert_eq!(listing.sessions.len(), 2);
    assert_eq!(listing.rejected.len(), 1, "{:?}", listing.rejected);
    assert_eq!(s.read_title(&format!("codex:{other}")).unwrap().as_deref(), Some("archived"));
    // Garbage, wrong types and a 10,000-deep line are skipped; a torn tail is not read.
    let deep = format!("{}{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
    let dir = home.path().join("sessions/2026/03/01");
    let body = format!(
        "{}\x00\x01garbage\n{deep}\n{}{{\"timestamp\":",
        lines(&[meta(ID), env(1, "response_item", msg("user", "input_text", "kept"))]),
        lines(&[
            env(2, "response_item", json!({"type": "message", "role": 7, "content": "not a list"})),
            env(
                3,
                "response_item",
                json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": 5}, {"type": "output_text", "text": "ok"}]})
            ),
        ]),
    );
    std::fs::write(dir.join(format!("rollout-2026-03-01T00-00-00-{ID}.jsonl")), body).unwrap();
    assert_eq!(codex_items(&home), owned(vec![m(U, "kept"), m(A, "ok")]));
    let (_, read) = s.read(&id).unwrap();
    // The torn tail is not a line (a writer may be in the middle of it).
    assert_eq!((read.stats.lines, read.stats.skipped), (6, 2));
    assert!(s
        .read_surface("codex:0199aaaa-0000-7000-8000-00000000dead")
        .unwrap_err()
        .message()
        .contains("no Codex session"));
}

// ---- every source through the resolver ----

#[test]
fn one_view_over_every_source_prepares_each() {
    let dsh_root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sessions");
    let specs = [
        SourceSpec::new(SourceKind::Dsh, &dsh_root),
        SourceSpec::new(SourceKind::ClaudeCode, fixtures().join("claude-code")),
        SourceSpec::new(SourceKind::Codex, fixtures().join("codex/daaain")),
        SourceSpec::new(SourceKind::Codex, "/nonexistent"),
    ];
    assert!(open_sources(&specs).is_err());
    let mut specs = specs[..3].to_vec();
    let multi = open_sources(&specs).unwrap();
    let list = block_on(multi.list_sessions()).unwrap();
    let dsh_only = dsh_session_reference::DshStore::open(&dsh_root).unwrap();
    let dsh_ids: Vec<String> = dsh_only.list().unwrap().sessions.into_iter().map(|s| s.header.id).collect();
    assert_eq!(list.len(), dsh_ids.len() + 6 + 4);
    for w in list.windows(2) {
        assert!(w[0].created_at.as_f64() >= w[1].created_at.as_f64());
    }
    let report = multi.last_report();
    assert_eq!(report.iter().map(|r| r.outcome.clone()).collect::<Vec<_>>(), vec![Ok(dsh_ids.len()), Ok(6), Ok(4)]);
    // Every source shares its listing, so the view does: the same sessions,
    // each with the fingerprint of the source that holds it.
    let shared = block_on(multi.shared_listing()).unwrap().expect("every source shares its listing");
    assert_eq!(shared.sessions(), &list[..]);
    let ids: Vec<String> = list.iter().map(|s| s.id.clone()).collect();
    assert_eq!(shared.fingerprints(), &block_on(multi.fingerprints(&ids)).unwrap().unwrap()[..]);
    let resolver = Resolver::new(Arc::new(multi), Config::default());
    let target = Target::new("new", Some("/work".into()));
    let refs = [
        json!({"sessionId": "claude-code:dag_compact_after_rewind"}),
        json!({"sessionId": "codex:11111111-1111-4111-8111-111111111111"}),
        json!({"sessionId": dsh_ids[0]}),
    ];
    let p = block_on(resolver.prepare(&target, &json!("compare"), &refs, &PrepareOptions::default(), None)).unwrap();
    let prompt = p.additional_context.unwrap().prompt;
    assert!(prompt.contains("Final answer") && prompt.contains("alpha.txt and beta.txt"), "{prompt}");
    assert!(!prompt.contains("Second attempt") && !prompt.contains("SYNTHETIC_ENCRYPTED"), "{prompt}");
    // A DSH reference prepares to the same bytes through the view as
    // through the store alone.
    let alone = Resolver::new(Arc::new(dsh_only), Config::default());
    let one = [json!({"sessionId": dsh_ids[0]})];
    let a = block_on(alone.prepare(&target, &json!("x"), &one, &PrepareOptions::default(), None)).unwrap();
    specs.truncate(1);
    let view = Resolver::new(Arc::new(open_sources(&specs).unwrap()), Config::default());
    let b = block_on(view.prepare(&target, &json!("x"), &one, &PrepareOptions::default(), None)).unwrap();
    let context = |p: &dsh_session_reference::Prepared| {
        let c = p.additional_context.as_ref().unwrap();
        (c.prompt.clone(), c.source.to_json())
    };
    assert_eq!(context(&a), context(&b));
    // A missing root is reported and the others still list.
    let specs = [
        SourceSpec::new(SourceKind::ClaudeCode, "/nonexistent/projects"),
        SourceSpec::new(SourceKind::Codex, fixtures().join("codex/daaain")),
    ];
    let multi = open_sources(&specs).unwrap();
    assert_eq!(block_on(multi.list_sessions()).unwrap().len(), 4);
    let report = multi.last_report();
    assert!(report[0].outcome.as_ref().unwrap_err().contains("/nonexistent/projects"), "{report:?}");
    // A FileSource tells the identity of the file a read would read.
    let s = ClaudeCodeSource::open(fixtures().join("claude-code")).unwrap();
    assert_eq!(s.identity("claude-code:system_reminder").unwrap().size, 1424);
    assert_eq!(claude_code::PREFIX, SourceKind::ClaudeCode.prefix());
}

#[test]
fn a_codex_rollout_with_no_id_anywhere_is_reported_not_dropped() {
    let home = codex_home(&[meta(ID), env(1, "response_item", msg("user", "input_text", "kept"))]);
    // No session_meta line and no uuid in its name.
    let nameless = home.path().join("sessions/2026/03/01/rollout-nameless.jsonl");
    std::fs::write(&nameless, lines(&[env(1, "response_item", msg("user", "input_text", "lost"))])).unwrap();
    let listing = CodexSource::open(home.path()).unwrap().list().unwrap();
    assert_eq!(listing.sessions.len(), 1);
    let why = "no session id (no session_meta line, no uuid in the name)";
    assert_eq!(listing.rejected, vec![(nameless.clone(), why.to_owned())]);
    let multi = open_sources(&[SourceSpec::new(SourceKind::Codex, home.path())]).unwrap();
    assert_eq!(block_on(multi.list_sessions()).unwrap().len(), 1);
    let note = multi.last_report()[0].note.clone().unwrap_or_default();
    assert_eq!(note, format!("skipped {} ({why})", nameless.display()));
}

#[cfg(unix)]
#[test]
fn codex_links_below_the_home_are_not_followed() {
    let home = codex_home(&[meta(ID), env(1, "response_item", msg("user", "input_text", "inside"))]);
    let outside = tempfile::tempdir().unwrap();
    let other = "0199aaaa-0000-7000-8000-0000000000ff";
    let name = format!("rollout-2026-03-01T00-00-00-{other}.jsonl");
    std::fs::write(outside.path().join(&name), lines(&[meta(other)])).unwrap();
    let day = home.path().join("sessions/2026/03/01");
    std::os::unix::fs::symlink(outside.path().join(&name), day.join(&name)).unwrap();
    std::os::unix::fs::symlink(outside.path(), home.path().join("sessions/2026/04")).unwrap();
    std::os::unix::fs::symlink(outside.path().join(&name), home.path().join("session_index.jsonl")).unwrap();
    let s = CodexSource::open(home.path()).unwrap();
    let listing = s.list().unwrap();
    assert_eq!(listing.sessions.len(), 1);
    assert_eq!(listing.rejected.len(), 2, "{:?}", listing.rejected);
    let err = s.read_surface(&format!("codex:{other}")).unwrap_err();
    assert!(err.message().contains("symbolic link, not followed"), "{}", err.message());
    // A linked title index is not read either: the title falls back.
    assert_eq!(s.read_title(&format!("codex:{ID}")).unwrap().as_deref(), Some("inside"));
}

#[test]
fn claude_code_titles_near_the_end_and_far_from_it() {
    let filler: Vec<serde_json::Value> = (0..200)
        .map(|i| {
            let parent = if i == 0 { None } else { Some(format!("f{}", i - 1)) };
            user(&format!("f{i}"), parent.as_deref(), 1, text(&"words ".repeat(100)))
        })
        .collect();
    // A custom title far from the end (over 64 KiB before it) still beats
    // a later ai-title: the tail holds no custom title, so all is read.
    let mut far = vec![json!({"type": "custom-title", "customTitle": "Early rename"})];
    far.extend(filler.iter().cloned());
    far.push(json!({"type": "ai-title", "aiTitle": "Late guess"}));
    // In the tail, the last custom title wins over an earlier one.
    let mut near = vec![json!({"type": "custom-title", "customTitle": "Old name"})];
    near.extend(filler.iter().cloned());
    near.push(json!({"type": "custom-title", "customTitle": "New name"}));
    let root = claude_root(&[("far", lines(&far)), ("near", lines(&near))]);
    assert!(std::fs::metadata(root.path().join("-work-p/far.jsonl")).unwrap().len() > 2 * (64 << 10));
    let s = ClaudeCodeSource::open(root.path()).unwrap();
    assert_eq!(s.read_title("claude-code:far").unwrap().as_deref(), Some("Early rename"));
    assert_eq!(s.read_title("claude-code:near").unwrap().as_deref(), Some("New name"));
}

/// A long-lived Claude Code source keeps its listing (and, on Linux,
/// watches its root): after every kind of change its listing, titles and a
/// resolver's filtered candidates are those of a fresh source.
fn claude_kept_agrees_after_changes(watching: bool) {
    let root = claude_root(&[
        (
            "one",
            lines(&[user("u1", None, 1, json!("first question")), asst("a1", Some("u1"), 2, "m1", text("answer"))]),
        ),
        ("two", lines(&[user("u1", None, 3, json!("second topic"))])),
    ]);
    let project = root.path().join("-work-p");
    let kept = ClaudeCodeSource::open(root.path()).unwrap().with_watching(watching);
    let resolver = Resolver::new(kept.clone().into_query(), Config::default());
    let target = Target::new("someone", Some("/work/p".into()));
    let agree = |what: &str| {
        let fresh = ClaudeCodeSource::open(root.path()).unwrap().with_watching(false);
        assert_eq!(kept.list().unwrap(), fresh.list().unwrap(), "listing after {what}");
        let fresh_resolver = Resolver::new(fresh.clone().into_query(), Config::default());
        for filter in ["", "o", "topic"] {
            assert_eq!(
                block_on(resolver.candidates(&target, filter, &CandidateOptions::default(), None))
                    .map_err(|e| e.to_string()),
                block_on(fresh_resolver.candidates(&target, filter, &CandidateOptions::default(), None))
                    .map_err(|e| e.to_string()),
                "candidates {filter:?} after {what}"
            );
        }
        let ids: Vec<String> = fresh.list().unwrap().sessions.into_iter().map(|s| s.header.id).collect();
        assert_eq!(
            BlockingSessionQuery::fingerprints(&kept, &ids).unwrap(),
            BlockingSessionQuery::fingerprints(&fresh, &ids).unwrap(),
            "fingerprints after {what}"
        );
        // The shared listing is the listing with those fingerprints.
        let shared = BlockingSessionQuery::shared_listing(&kept).unwrap().unwrap();
        let headers: Vec<_> = fresh.list().unwrap().sessions.into_iter().map(|s| s.header).collect();
        assert_eq!(shared.sessions(), &headers[..], "shared listing after {what}");
        let fps = BlockingSessionQuery::fingerprints(&fresh, &ids).unwrap().unwrap();
        assert_eq!(shared.fingerprints(), &fps[..], "shared fingerprints after {what}");
    };
    agree("nothing");
    agree("nothing, twice");
    assert_eq!(kept.is_watching(), watching && cfg!(target_os = "linux") && std::env::var_os("DSR_NO_WATCH").is_none());
    let append = |name: &str, v: serde_json::Value| {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new().append(true).open(project.join(name)).unwrap();
        f.write_all(format!("{v}\n").as_bytes()).unwrap();
    };
    append("one.jsonl", json!({"type": "custom-title", "customTitle": "renamed topic", "sessionId": "s"}));
    agree("a custom title appended");
    std::fs::write(project.join("three.jsonl"), lines(&[user("u1", None, 5, json!("third topic"))])).unwrap();
    agree("a new transcript");
    let other = root.path().join("-work-q");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("four.jsonl"), lines(&[user("u1", None, 6, json!("fourth"))])).unwrap();
    agree("a new project");
    std::fs::write(project.join("two.jsonl"), lines(&[user("u1", None, 7, json!("rewritten topic"))])).unwrap();
    agree("a rewritten transcript");
    let tmp = project.join("one.jsonl.tmp");
    std::fs::write(&tmp, lines(&[user("u1", None, 8, json!("replaced"))])).unwrap();
    std::fs::rename(&tmp, project.join("one.jsonl")).unwrap();
    agree("a replaced transcript");
    std::fs::remove_file(project.join("three.jsonl")).unwrap();
    agree("a deleted transcript");
    std::fs::rename(other.join("four.jsonl"), project.join("five.jsonl")).unwrap();
    agree("a transcript moved between projects");
    std::fs::remove_dir(&other).unwrap();
    agree("a deleted project");
}

#[test]
fn a_kept_claude_code_source_agrees_with_a_fresh_one_watched() {
    claude_kept_agrees_after_changes(true);
}

#[test]
fn a_kept_claude_code_source_agrees_with_a_fresh_one_unwatched() {
    claude_kept_agrees_after_changes(false);
}

/// Codex fingerprints cover the rollout and `session_index.jsonl` (where a
/// title may come from): a resolver caching under them agrees with one that
/// caches nothing after a rollout grows and after the index renames one.
#[test]
fn codex_fingerprints_cover_the_rollout_and_the_index() {
    let home = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join("codex/daaain"), home.path());
    let source = CodexSource::open(home.path()).unwrap();
    let resolver = Resolver::new(source.clone().into_query(), Config::default());
    let target = Target::new("someone", None);
    let listing = source.list().unwrap();
    let ids: Vec<String> = listing.sessions.iter().map(|s| s.header.id.clone()).collect();
    assert!(ids.len() >= 2);
    let fps = || BlockingSessionQuery::fingerprints(&source, &ids).unwrap().expect("fingerprints");
    let before = fps();
    assert!(before.iter().all(Option::is_some));
    assert_eq!(fps(), before, "nothing changed");
    let agree = |what: &str| {
        let fresh = Resolver::new(CodexSource::open(home.path()).unwrap().into_query(), Config::default());
        for filter in ["", "session", "renamed"] {
            assert_eq!(
                block_on(resolver.candidates(&target, filter, &CandidateOptions::default(), None))
                    .map_err(|e| e.to_string()),
                block_on(fresh.candidates(&target, filter, &CandidateOptions::default(), None))
                    .map_err(|e| e.to_string()),
                "candidates {filter:?} after {what}"
            );
        }
    };
    agree("nothing");
    // A rollout grows: its fingerprint only.
    let grown = &listing.sessions[0];
    {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new().append(true).open(&grown.path).unwrap();
        f.write_all(b"\n").unwrap();
    }
    let after = fps();
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(after[i] == before[i], *id != grown.header.id, "{id}");
    }
    agree("a grown rollout");
    // The index renames a session: every fingerprint changes, and the new
    // title is what candidates show.
    let bare = ids[1].strip_prefix("codex:").unwrap();
    let entry = json!({"id": bare, "thread_name": "renamed by the index", "updated_at": "2026-02-01T00:00:00Z"});
    std::fs::write(home.path().join(codex::SESSION_INDEX), format!("{entry}\n")).unwrap();
    let renamed = fps();
    assert!(renamed.iter().zip(&after).all(|(a, b)| a != b), "the index is part of every fingerprint");
    agree("a renamed session");
    let found = block_on(resolver.candidates(&target, "renamed", &CandidateOptions::default(), None)).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].session_id, ids[1]);
}

// ---- logs written while they are read ----

/// A line is read once its `\n` is written: a last line without one (a
/// writer in the middle of it) is not read, even when it is whole JSON,
/// and is once it ends.
#[test]
fn a_last_line_without_its_newline_is_not_read_until_it_ends() {
    use std::io::Write as _;
    let append = |path: &Path, text: &str| {
        std::fs::OpenOptions::new().append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap()
    };
    let first = lines(&[user("u1", None, 0, text("one")), asst("a1", Some("u1"), 1, "m1", text("two"))]);
    let last = user("u2", Some("a1"), 2, text("three")).to_string();
    let root = claude_root(&[("live", format!("{first}{last}"))]);
    let path = root.path().join("-work-p/live.jsonl");
    let s = ClaudeCodeSource::open(root.path()).unwrap();
    let read = |s: &ClaudeCodeSource| s.conversation("claude-code:live").unwrap();
    let c = read(&s);
    assert_eq!(items(&c.items), vec![m(U, "one"), m(A, "two")]);
    assert_eq!(c.captured_through_seq, Some(1.into()));
    assert_eq!(s.list().unwrap().sessions.len(), 1);
    append(&path, "\n");
    let c = read(&s);
    assert_eq!(items(&c.items), vec![m(U, "one"), m(A, "two"), m(U, "three")]);
    assert_eq!(c.captured_through_seq, Some(2.into()));

    let first = lines(&[meta(ID), env(1, "response_item", msg("user", "input_text", "one"))]);
    let last = env(2, "response_item", msg("assistant", "output_text", "two")).to_string();
    let home = codex_home(&[]);
    let path = home.path().join(format!("sessions/2026/03/01/rollout-2026-03-01T00-00-00-{ID}.jsonl"));
    std::fs::write(&path, format!("{first}{last}")).unwrap();
    let s = CodexSource::open(home.path()).unwrap();
    let c = s.conversation(&format!("codex:{ID}")).unwrap();
    assert_eq!((items(&c.items), c.captured_through_seq), (vec![m(U, "one")], Some(1.into())));
    append(&path, "\n");
    let c = s.conversation(&format!("codex:{ID}")).unwrap();
    assert_eq!(items(&c.items), vec![m(U, "one"), m(A, "two")]);
}

/// Reads while a writer appends big lines, each write finishing one line
/// and starting the next (so the file mostly ends inside a line): every
/// read gives the conversation of some prefix of complete lines. Before,
/// a read that reached the end inside a line took what it had for a line
/// and the rest, completed meanwhile, for a second, bad one, then read on:
/// Claude Code's chain broke and collapsed to its last messages, Codex
/// dropped a message in the middle.
fn reads_under_a_writer_see_whole_lines(
    path: &Path,
    lines: Vec<String>,
    want: &[(bool, String)],
    read: impl Fn() -> Vec<(bool, String, bool)>,
) {
    use std::io::Write as _;
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (path, done) = (path.to_path_buf(), done.clone());
        std::thread::spawn(move || {
            let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            let mut rest = String::new();
            for line in lines {
                let (a, b) = line.split_at(line.len() * 9 / 10);
                file.write_all(format!("{rest}{a}").as_bytes()).unwrap();
                rest = format!("{b}\n");
                std::thread::sleep(std::time::Duration::from_millis(15));
            }
            file.write_all(rest.as_bytes()).unwrap();
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    let mut reads = 0;
    loop {
        let finished = done.load(std::sync::atomic::Ordering::SeqCst);
        let got = read();
        let n = got.len();
        assert!(n <= want.len(), "read {reads}: {n} items of {}", want.len());
        let same = got.iter().zip(want).all(|((u, t, cp), (wu, wt))| u == wu && t == wt && !cp);
        assert!(same, "read {reads} is not a prefix of the conversation ({n} items)");
        reads += 1;
        if finished {
            assert_eq!(n, want.len());
            break;
        }
    }
    writer.join().unwrap();
    assert!(reads > 2, "{reads} reads");
}

#[test]
fn claude_code_reads_under_a_live_writer_see_whole_lines() {
    let big = |i: usize| format!("{i}: {}", "x".repeat(2 << 20));
    let head: Vec<serde_json::Value> = (0..10)
        .map(|i| {
            let parent = (i > 0).then(|| format!("n{}", i - 1));
            let uuid = format!("n{i}");
            if i % 2 == 0 {
                user(&uuid, parent.as_deref(), 0, text(&format!("m{i}")))
            } else {
                asst(&uuid, parent.as_deref(), 0, &format!("id{i}"), text(&format!("m{i}")))
            }
        })
        .collect();
    let root = claude_root(&[("live", lines(&head))]);
    let more: Vec<String> = (10..30)
        .map(|i| {
            let (uuid, parent) = (format!("n{i}"), format!("n{}", i - 1));
            let line = if i % 2 == 0 {
                user(&uuid, Some(&parent), 0, text(&big(i)))
            } else {
                asst(&uuid, Some(&parent), 0, &format!("id{i}"), text(&big(i)))
            };
            line.to_string()
        })
        .collect();
    let want: Vec<(bool, String)> =
        (0..30).map(|i| (i % 2 == 0, if i < 10 { format!("m{i}") } else { big(i) })).collect();
    let path = root.path().join("-work-p/live.jsonl");
    reads_under_a_writer_see_whole_lines(&path, more, &want, || claude_items(&root, "live"));
}

#[test]
fn codex_reads_under_a_live_writer_see_whole_lines() {
    let big = |i: usize| format!("{i}: {}", "x".repeat(2 << 20));
    let say = |i: usize, t: &str| {
        let (role, part) = if i % 2 == 0 { ("user", "input_text") } else { ("assistant", "output_text") };
        env(1, "response_item", msg(role, part, t))
    };
    let head: Vec<serde_json::Value> =
        std::iter::once(meta(ID)).chain((0..10).map(|i| say(i, &format!("m{i}")))).collect();
    let home = codex_home(&head);
    let more: Vec<String> = (10..30).map(|i| say(i, &big(i)).to_string()).collect();
    let want: Vec<(bool, String)> =
        (0..30).map(|i| (i % 2 == 0, if i < 10 { format!("m{i}") } else { big(i) })).collect();
    let path = home.path().join(format!("sessions/2026/03/01/rollout-2026-03-01T00-00-00-{ID}.jsonl"));
    reads_under_a_writer_see_whole_lines(&path, more, &want, || codex_items(&home));
}
