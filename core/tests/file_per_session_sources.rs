//! The file-per-session sources (Copilot CLI, Gemini CLI, Cursor, Aider, Pi,
//! OpenHands): every
//! fixture's listing, title, cwd, capturedThroughSeq and projected
//! conversation pinned, and a crafted case for each rule and each kind of
//! damage.

use std::path::{Path, PathBuf};

mod common;

use dsh_session_reference::sources::aider::{self, AiderSource};
use dsh_session_reference::sources::copilot_cli::{self, CopilotCliSource};
use dsh_session_reference::sources::cursor::{self, CursorSource};
use dsh_session_reference::sources::files::file_created_ms;
use dsh_session_reference::sources::gemini_cli::{self, GeminiCliSource};
use dsh_session_reference::sources::openhands::{self, OpenHandsSource};
use dsh_session_reference::sources::pi::{self, PiSource};
use dsh_session_reference::sources::{open_sources, SourceKind, SourceSpec};
use dsh_session_reference::{block_on, BlockingSessionQuery, FileSource, SessionQuery, SurfaceData};

mod pinned;
use pinned::*;

// ---------------------------------------------------------------- Copilot CLI

fn copilot_fixture() -> PathBuf {
    fixtures().join("copilot-cli/synthetic/session-state")
}

#[test]
fn copilot_cli_fixtures_project_exactly() {
    let s = CopilotCliSource::open(copilot_fixture()).unwrap();
    check(
        &s,
        &[
            Pinned {
                id: "copilot-cli:3f1c2b4a-0000-4000-8000-00000000000a",
                created_at: 1_785_232_800_000,
                listed_cwd: Some("/work/app"),
                cwd: Some("/work/app/pkg"),
                title: Some("Fetch retries"),
                seq: 19,
                items: vec![
                    cp("Summary: the fetch helper now retries with backoff."),
                    m(U, "Also log each attempt"),
                    m(A, "Logged each attempt."),
                ],
            },
            Pinned {
                id: "copilot-cli:rewind-session",
                created_at: 1_784_116_800_000,
                listed_cwd: Some("/work/r"),
                cwd: Some("/work/r"),
                title: Some("Rewind \"right turn\" check"),
                seq: 7,
                items: vec![m(U, "First question"), m(A, "First answer"), m(U, "Right turn"), m(A, "Right answer")],
            },
            Pinned {
                id: "copilot-cli:legacy-0001",
                created_at: 1_782_896_400_000,
                listed_cwd: Some("/work/old"),
                cwd: Some("/work/old"),
                title: Some("Explain the build"),
                seq: 5,
                items: vec![m(U, "Start over:\n  list the tests"), m(A, "There are three.")],
            },
        ],
    );
    let listing = s.list().unwrap();
    assert_eq!(listing.without_conversation, vec![copilot_fixture().join("empty-session/events.jsonl")]);
    assert_eq!(copilot_cli::PREFIX, SourceKind::CopilotCli.prefix());
}

fn copilot_line(kind: &str, id: &str, data: serde_json::Value) -> String {
    serde_json::json!({"type": kind, "id": id, "timestamp": "2026-07-28T10:00:00.000Z", "parentId": null, "data": data})
        .to_string()
}

#[test]
fn copilot_cli_damage_is_skipped_or_reported_and_nothing_hides_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let start = copilot_line("session.start", "s", serde_json::json!({"startTime": "2026-07-28T10:00:00.000Z"}));
    let user = copilot_line("user.message", "u", serde_json::json!({"content": "hello"}));
    // Corrupt lines anywhere, a field of the wrong type, a torn tail.
    let odd = copilot_line("assistant.message", "a", serde_json::json!({"content": 5}));
    let text = format!(
        "{start}\n[1,2]\n{{not json\n{user}\n{odd}\n{}\n{{\"type\":\"assist",
        copilot_line("assistant.message", "b", serde_json::json!({"content": "world"}))
    );
    write(root.path(), "damaged/events.jsonl", &text);
    // A line over the limit makes its session unreadable, with why.
    let huge =
        format!("{start}\n{{\"type\":\"user.message\",\"data\":{{\"content\":\"{}\"}}}}\n", "x".repeat(65 << 20));
    write(root.path(), "huge/events.jsonl", &huge);
    // A link is not followed: it is rejected, and reading it fails.
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.path().join("damaged"), root.path().join("linked")).unwrap();
    let s = CopilotCliSource::open(root.path()).unwrap();
    let listing = s.list().unwrap();
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.header.id.as_str()).collect();
    assert_eq!(ids, ["copilot-cli:damaged", "copilot-cli:huge"]);
    #[cfg(unix)]
    assert_eq!(listing.rejected.len(), 1, "{:?}", listing.rejected);
    let SurfaceData::Conversation(c) = s.read_surface("copilot-cli:damaged").unwrap() else { panic!() };
    assert_eq!(items(&c.items), vec![m(U, "hello"), m(A, "world")]);
    assert_eq!(c.captured_through_seq.as_ref().and_then(|n| n.as_u64()), Some(5));
    let why = s.read_surface("copilot-cli:huge").unwrap_err().message().to_owned();
    assert!(why.contains("copilot-cli:huge") && why.contains("huge/events.jsonl"), "{why}");
    let why = s.read_surface("copilot-cli:linked").unwrap_err().message().to_owned();
    assert!(why.contains("no Copilot CLI session"), "{why}");
    // An id that would leave the root is not looked for there.
    assert!(s.read_surface("copilot-cli:../damaged").is_err());
}

#[test]
fn copilot_cli_fingerprints_follow_the_file() {
    let root = tempfile::tempdir().unwrap();
    let start = copilot_line("session.start", "s", serde_json::json!({}));
    let user = copilot_line("user.message", "u", serde_json::json!({"content": "one"}));
    write(root.path(), "a/events.jsonl", &format!("{start}\n{user}\n"));
    write(root.path(), "b/events.jsonl", &format!("{start}\n{user}\n"));
    let s = CopilotCliSource::open(root.path()).unwrap();
    let ids = vec!["copilot-cli:a".to_owned(), "copilot-cli:b".to_owned()];
    s.list().unwrap();
    let before = s.fingerprints(&ids).unwrap().unwrap();
    let more = copilot_line("assistant.message", "x", serde_json::json!({"content": "two"}));
    write(root.path(), "b/events.jsonl", &format!("{start}\n{user}\n{more}\n"));
    let after = s.fingerprints(&ids).unwrap().unwrap();
    assert_eq!(before[0], after[0], "an unchanged file keeps its fingerprint");
    assert_ne!(before[1], after[1], "a changed file changes it");
    assert!(before.iter().all(Option::is_some));
    assert_eq!(
        s.identity("copilot-cli:b").unwrap().size,
        std::fs::metadata(root.path().join("b/events.jsonl")).unwrap().len()
    );
}

#[test]
fn copilot_cli_title_is_the_workspace_name_read_again_when_it_changes() {
    let root = tempfile::tempdir().unwrap();
    let start = copilot_line("session.start", "s", serde_json::json!({}));
    let user = copilot_line("user.message", "u", serde_json::json!({"content": "the first prompt"}));
    write(root.path(), "a/events.jsonl", &format!("{start}\n{user}\n"));
    let s = CopilotCliSource::open(root.path()).unwrap();
    let ids = vec!["copilot-cli:a".to_owned()];
    s.list().unwrap();
    assert_eq!(s.read_title("copilot-cli:a").unwrap().as_deref(), Some("the first prompt"));
    let before = s.fingerprints(&ids).unwrap().unwrap();
    // Named (as Copilot CLI generates a name, or the user renames): a plain scalar.
    write(root.path(), "a/workspace.yaml", "id: a\nname: Port the parser # generated\n");
    assert_eq!(s.read_title("copilot-cli:a").unwrap().as_deref(), Some("Port the parser"));
    let named = s.fingerprints(&ids).unwrap().unwrap();
    assert_ne!(before, named, "a name given changes the fingerprint");
    write(root.path(), "a/workspace.yaml", "name: 'Renamed: it''s done'\n");
    assert_eq!(s.read_title("copilot-cli:a").unwrap().as_deref(), Some("Renamed: it's done"));
    assert_ne!(named, s.fingerprints(&ids).unwrap().unwrap(), "a rename changes it again");
    // A title_changed event wins over the name.
    let titled = copilot_line("session.title_changed", "t", serde_json::json!({"title": "From the event"}));
    write(root.path(), "a/events.jsonl", &format!("{start}\n{user}\n{titled}\n"));
    assert_eq!(s.read_title("copilot-cli:a").unwrap().as_deref(), Some("From the event"));
    // A workspace.yaml that is a link is not followed.
    #[cfg(unix)]
    {
        write(root.path(), "elsewhere.yaml", "name: Through a link\n");
        write(root.path(), "b/events.jsonl", &format!("{start}\n{user}\n"));
        std::os::unix::fs::symlink(root.path().join("elsewhere.yaml"), root.path().join("b/workspace.yaml")).unwrap();
        assert_eq!(s.read_title("copilot-cli:b").unwrap().as_deref(), Some("the first prompt"));
    }
}

// ----------------------------------------------------------------- Gemini CLI

fn gemini_fixture() -> PathBuf {
    fixtures().join("gemini-cli/synthetic/tmp")
}

const SNAPSHOT: &str = "<state_snapshot>\n<overall_goal>A faster parser.</overall_goal>\n</state_snapshot>";

#[test]
fn gemini_cli_fixtures_project_exactly() {
    let s = GeminiCliSource::open(gemini_fixture()).unwrap();
    check(
        &s,
        &[
            Pinned {
                id: "gemini-cli:1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
                created_at: 1_785_578_400_000,
                listed_cwd: Some("/home/u/myproj"),
                cwd: Some("/home/u/myproj"),
                title: Some("Parser refactor"),
                seq: 17,
                items: vec![
                    cp(SNAPSHOT),
                    m(U, "Make it faster, keep the API"),
                    m(A, "Kept the API; 2x faster."),
                    m(U, "Add tests for @src/p.rs"),
                    m(A, "Tests added."),
                ],
            },
            Pinned {
                id: "gemini-cli:cccc3333-0000-4000-8000-000000000003",
                created_at: 1_782_896_400_000,
                listed_cwd: Some("/home/u/myproj"),
                cwd: Some("/home/u/myproj"),
                title: Some("Old question"),
                seq: 4,
                items: vec![m(U, "Old question"), m(A, "Old answer"), m(U, "New question after resuming")],
            },
            Pinned {
                id: "gemini-cli:bbbb2222-0000-4000-8000-000000000002",
                created_at: 1_780_300_800_000,
                listed_cwd: None,
                cwd: None,
                title: Some("Hello legacy"),
                seq: 2,
                items: vec![m(U, "Hello legacy"), m(A, "Hi from 0.38")],
            },
        ],
    );
    assert_eq!(gemini_cli::PREFIX, SourceKind::GeminiCli.prefix());
}

fn gemini_items(lines: &[serde_json::Value]) -> Vec<(bool, String, bool)> {
    let root = tempfile::tempdir().unwrap();
    let mut text =
        serde_json::json!({"sessionId": "s", "projectHash": "h", "startTime": "2026-08-01T10:00:00Z"}).to_string();
    for l in lines {
        text.push('\n');
        text.push_str(&l.to_string());
    }
    text.push('\n');
    write(root.path(), "p/chats/session-x.jsonl", &text);
    let s = GeminiCliSource::open(root.path()).unwrap();
    let SurfaceData::Conversation(c) = s.read_surface("gemini-cli:s").unwrap() else { panic!() };
    items(&c.items)
}

#[test]
fn gemini_cli_rewinds_upserts_and_snapshots() {
    use serde_json::json;
    let u = |id: &str, t: &str| json!({"id": id, "type": "user", "content": [{"text": t}]});
    let g = |id: &str, t: &str| json!({"id": id, "type": "gemini", "content": [{"text": t}]});
    // An unknown rewind target clears everything (as Gemini CLI's loader does).
    assert_eq!(
        gemini_items(&[u("a", "one"), g("b", "two"), json!({"$rewindTo": "zzz"}), u("c", "three")]),
        vec![m(U, "three")]
    );
    // The first write fixes the position, the last the content.
    assert_eq!(
        gemini_items(&[u("a", "one"), g("b", "draft"), u("c", "three"), g("b", "final")]),
        vec![m(U, "one"), m(A, "final"), m(U, "three")]
    );
    // An empty `$set.messages` empties the conversation; later records follow.
    assert_eq!(gemini_items(&[u("a", "one"), json!({"$set": {"messages": []}}), u("d", "after")]), vec![m(U, "after")]);
    // The canned reply is dropped only right after a summary.
    assert_eq!(
        gemini_items(&[
            g("x", "Got it. Thanks for the additional context!"),
            u("s", "<state_snapshot>s</state_snapshot>")
        ]),
        vec![m(A, "Got it. Thanks for the additional context!"), cp("<state_snapshot>s</state_snapshot>")]
    );
    // Thought parts, tool results and warnings never reach the conversation.
    assert_eq!(
        gemini_items(&[
            json!({"id": "t", "type": "gemini", "content": [{"text": "hmm", "thought": true}, {"text": "yes"}]}),
            json!({"id": "w", "type": "warning", "content": "careful"}),
            json!({"id": "r", "type": "user", "content": [{"functionResponse": {"name": "f"}}]}),
        ]),
        vec![m(A, "yes")]
    );
}

#[test]
fn gemini_cli_damage_is_reported_without_hiding_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let meta = serde_json::json!({"sessionId": "good", "projectHash": "h"}).to_string();
    let msg = serde_json::json!({"id": "a", "type": "user", "content": "hi"}).to_string();
    write(root.path(), "p/chats/session-a.jsonl", &format!("{meta}\n{msg}\n"));
    write(root.path(), "p/chats/session-b.jsonl", &format!("{{broken\n{msg}\n"));
    write(root.path(), "p/chats/session-c.json", "{\"sessionId\": \"legacy\", \"messages\": [");
    write(root.path(), "p/chats/session-d.jsonl", "");
    let s = GeminiCliSource::open(root.path()).unwrap();
    let listing = s.list().unwrap();
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.header.id.as_str()).collect();
    assert_eq!(ids, ["gemini-cli:good"]);
    let why: Vec<String> = listing.rejected.iter().map(|(p, why)| format!("{}: {why}", p.display())).collect();
    assert_eq!(why.len(), 2, "{why:?}");
    assert!(why[0].contains("session-b.jsonl") && why[0].contains("no sessionId"), "{why:?}");
    assert!(why[1].contains("session-c.json") && why[1].contains("not a chat file"), "{why:?}");
    assert_eq!(listing.without_conversation, vec![root.path().join("p/chats/session-d.jsonl")]);
}

// --------------------------------------------------------------------- Cursor

fn cursor_fixture() -> PathBuf {
    fixtures().join("cursor/synthetic/projects")
}

#[test]
fn cursor_fixtures_project_exactly() {
    let root = cursor_fixture();
    let s = CursorSource::open(&root).unwrap();
    let mut want = vec![
        Pinned {
            id: "cursor:aaaa1111-0000-4000-8000-000000000001",
            created_at: born_ms(&root.join("home-u-shop/agent-transcripts/aaaa1111-0000-4000-8000-000000000001.jsonl")),
            listed_cwd: None,
            cwd: None,
            title: Some("Add a cart badge"),
            seq: 5,
            items: vec![
                m(U, "Add a cart badge"),
                m(A, "I'll add the badge."),
                m(A, "Done: the badge shows the count."),
                m(U, "Make it red"),
            ],
        },
        Pinned {
            id: "cursor:bbbb2222",
            created_at: born_ms(&root.join("home-u-shop/agent-transcripts/bbbb2222/bbbb2222.jsonl")),
            listed_cwd: None,
            cwd: None,
            title: Some("Nested question"),
            seq: 1,
            items: vec![m(U, "Nested question"), m(A, "Nested answer")],
        },
        Pinned {
            id: "cursor:cccc3333",
            created_at: born_ms(&root.join("home-u-old/agent-transcripts/cccc3333.txt")),
            listed_cwd: None,
            cwd: None,
            title: Some("Explain the router"),
            seq: 16,
            items: vec![m(U, "Explain the router"), m(A, "The router maps paths to handlers.\nIt has no routes yet.")],
        },
        Pinned {
            id: "cursor:dddd4444",
            created_at: born_ms(&root.join("home-u-old/agent-transcripts/dddd4444.jsonl")),
            listed_cwd: None,
            cwd: None,
            title: Some("Both formats"),
            seq: 0,
            items: vec![m(U, "Both formats")],
        },
    ];
    want.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| a.id.cmp(b.id)));
    check(&s, &want);
    let listing = s.list().unwrap();
    assert_eq!(listing.without_conversation, vec![root.join("home-u-old/agent-transcripts/empty.jsonl")]);
    assert_eq!(cursor::PREFIX, SourceKind::Cursor.prefix());
}

// ---------------------------------------------------------------------- Aider

fn aider_id(dir: &Path, run: u32) -> String {
    format!("aider:{}#{run}", std::path::absolute(dir).unwrap().display())
}

#[test]
fn aider_public_sample_projects_exactly() {
    // kenn-io/agentsview's fixture (MIT): two runs with messages, a third
    // with none; its `#### Step 1` is the assistant's own heading, which
    // the format cannot tell from user input (documented).
    let root = fixtures().join("aider/agentsview");
    let dir = root.join("myrepo");
    let (one, two) = (aider_id(&dir, 1), aider_id(&dir, 2));
    let cwd = std::path::absolute(&dir).unwrap().display().to_string();
    let s = AiderSource::open(&root).unwrap();
    check(
        &s,
        &[
            Pinned {
                id: &two,
                created_at: 1_781_019_000_000,
                listed_cwd: Some(&cwd),
                cwd: Some(&cwd),
                title: Some("make the timeout configurable"),
                seq: 23,
                items: vec![
                    m(U, "make the timeout configurable"),
                    m(A, "Done. The timeout now reads from the environment."),
                ],
            },
            Pinned {
                id: &one,
                created_at: 1_781_013_660_000,
                listed_cwd: Some(&cwd),
                cwd: Some(&cwd),
                title: Some("add a retry to the webhook"),
                seq: 16,
                items: vec![
                    m(U, "add a retry to the webhook"),
                    m(A, "I'll add exponential backoff to the webhook handler.\n\nHere is the plan:"),
                    m(U, "Step 1"),
                    m(A, "Wrap the call in a loop."),
                ],
            },
        ],
    );
    assert!(s.read_surface(&aider_id(&dir, 3)).is_err(), "a run without a message is no session");
    assert_eq!(aider::PREFIX, SourceKind::Aider.prefix());
}

#[test]
fn aider_runs_commands_fences_and_tool_output() {
    let root = fixtures().join("aider/synthetic");
    let proj = root.join("proj");
    let repo2 = root.join("group/repo2");
    let (p1, p3, r1) = (aider_id(&proj, 1), aider_id(&proj, 3), aider_id(&repo2, 1));
    let proj_cwd = std::path::absolute(&proj).unwrap().display().to_string();
    let repo2_cwd = std::path::absolute(&repo2).unwrap().display().to_string();
    let s = AiderSource::open(&root).unwrap();
    check(
        &s,
        &[
            Pinned {
                id: &p3,
                created_at: 1_777_806_000_000,
                listed_cwd: Some(&proj_cwd),
                cwd: Some(&proj_cwd),
                title: Some("Add a test"),
                seq: 41,
                items: vec![m(U, "Add a test"), m(A, "Added `test_handle`.")],
            },
            Pinned {
                id: &p1,
                created_at: 1_777_626_000_000,
                listed_cwd: Some(&proj_cwd),
                cwd: Some(&proj_cwd),
                title: Some("Rename the handler and keep the old name as an alias"),
                seq: 30,
                items: vec![
                    m(U, "Rename the handler\nand keep the old name as an alias"),
                    m(A, "I'll rename it.\n\nsrc/app.py\n```python\n#### this is code, not input\ndef handle(): ...\n```"),
                    m(U, "why an alias?"),
                    m(A, "So existing imports keep working."),
                ],
            },
            Pinned {
                id: &r1,
                created_at: 1_775_030_400_000,
                listed_cwd: Some(&repo2_cwd),
                cwd: Some(&repo2_cwd),
                title: Some("hello from repo2"),
                seq: 6,
                items: vec![m(U, "hello from repo2"), m(A, "Hi.")],
            },
        ],
    );
    // A new source reads a run from the history its id names, with no
    // listing first; a run without a message, or past the last, is no
    // session, as a listing says.
    let fresh = AiderSource::open(&root).unwrap();
    let read = fresh.conversation(&p3).unwrap();
    assert_eq!(items(&read.items), vec![m(U, "Add a test"), m(A, "Added `test_handle`.")]);
    for missing in [aider_id(&proj, 2), aider_id(&proj, 4), format!("aider:{}", proj.display())] {
        let err = fresh.conversation(&missing).unwrap_err().message().to_owned();
        assert!(err.contains("no Aider session"), "{missing}: {err}");
    }
    // A history file given instead of its directory is read as meant.
    let file = proj.join(aider::HISTORY_FILE);
    let resolved = SourceSpec::new(SourceKind::Aider, &file).resolve().unwrap();
    assert_eq!(resolved.spec.root, proj);
    assert!(resolved.note.unwrap().contains("Aider chat history"));
    // No default location: a spec without a root is refused, saying so.
    let why = dsh_session_reference::sources::specs_from_json(&serde_json::json!([{"kind": "aider"}])).unwrap_err();
    assert!(why.contains("no default location"), "{why}");
    assert!(!SourceKind::Aider.has_default_location());
}

// ------------------------------------------------------------------------- Pi

fn pi_fixture() -> PathBuf {
    fixtures().join("pi/synthetic/sessions")
}

#[test]
fn pi_fixtures_project_exactly() {
    let s = PiSource::open(pi_fixture()).unwrap();
    check(
        &s,
        &[
            Pinned {
                id: "pi:aaaa1111-0000-4000-8000-000000000001",
                created_at: 1_785_578_400_000,
                listed_cwd: Some("/home/u/proj"),
                cwd: Some("/home/u/proj"),
                title: Some("Parser refactor"),
                seq: 20,
                items: vec![
                    cp("The parser was split; tests were added carefully."),
                    m(A, "I will split it."),
                    m(A, "Split into two modules."),
                    cp("Tried adding tests; a bug was introduced."),
                    m(U, "Add tests, carefully"),
                    m(A, "Careful tests added."),
                    m(U, "Ship it"),
                    m(A, "Shipped."),
                ],
            },
            Pinned {
                id: "pi:bbbb2222-0000-4000-8000-000000000002",
                created_at: 1_782_896_400_000,
                listed_cwd: Some("/home/u/other"),
                cwd: Some("/home/u/other"),
                title: Some("What is the plan?"),
                seq: 7,
                items: vec![m(U, "What is   the\nplan?"), m(A, "Plan A."), m(U, "Go with B instead"), m(A, "Doing B.")],
            },
            Pinned {
                id: "pi:cccc3333-0000-4000-8000-000000000003",
                created_at: 1_780_300_800_000,
                listed_cwd: Some("/home/u/old"),
                cwd: Some("/home/u/old"),
                title: Some("Second question"),
                seq: 6,
                items: vec![
                    cp("An old question was answered."),
                    m(U, "Second question"),
                    m(A, "Second answer"),
                    m(U, "After compaction"),
                ],
            },
        ],
    );
    assert_eq!(pi::PREFIX, SourceKind::Pi.prefix());
}

/// A version 3 file of `entries` after a header; its conversation.
fn pi_items(entries: &[serde_json::Value]) -> Vec<(bool, String, bool)> {
    let root = tempfile::tempdir().unwrap();
    let mut text = serde_json::json!({"type": "session", "version": 3, "id": "s", "timestamp": "2026-08-01T10:00:00Z", "cwd": "/w"}).to_string();
    for l in entries {
        text.push('\n');
        text.push_str(&l.to_string());
    }
    text.push('\n');
    write(root.path(), "--w--/2026-08-01T10-00-00-000Z_s.jsonl", &text);
    let s = PiSource::open(root.path()).unwrap();
    let SurfaceData::Conversation(c) = s.read_surface("pi:s").unwrap() else { panic!() };
    items(&c.items)
}

#[test]
fn pi_follows_the_branch_of_the_last_entry() {
    use serde_json::json;
    let u = |id: &str, p: Option<&str>, t: &str| json!({"type": "message", "id": id, "parentId": p, "message": {"role": "user", "content": t}});
    let a = |id: &str, p: &str, t: &str| json!({"type": "message", "id": id, "parentId": p, "message": {"role": "assistant", "content": [{"type": "text", "text": t}]}});
    // The leaf is the file's last entry, whatever it is: a label moved back
    // to the first branch shows that branch.
    assert_eq!(
        pi_items(&[
            u("1", None, "one"),
            a("2", "1", "two"),
            u("3", Some("2"), "old"),
            u("4", Some("2"), "new"),
            json!({"type": "label", "id": "5", "parentId": "3", "targetId": "1", "label": "x"}),
        ]),
        vec![m(U, "one"), m(A, "two"), m(U, "old")]
    );
    // A parent that is not in the file ends the branch; a cycle does not hang.
    assert_eq!(pi_items(&[u("1", None, "lost"), u("2", Some("gone"), "kept")]), vec![m(U, "kept")]);
    assert_eq!(pi_items(&[u("1", Some("2"), "a"), u("2", Some("1"), "b")]), vec![m(U, "a"), m(U, "b")]);
    // A compaction whose first kept entry is not on the branch keeps nothing before it.
    assert_eq!(
        pi_items(&[
            u("1", None, "before"),
            json!({"type": "compaction", "id": "2", "parentId": "1", "summary": "S", "firstKeptEntryId": "nope"}),
            u("3", Some("2"), "after"),
        ]),
        vec![cp("S"), m(U, "after")]
    );
    // The latest compaction on the branch is the one that counts.
    assert_eq!(
        pi_items(&[
            u("1", None, "a"),
            json!({"type": "compaction", "id": "2", "parentId": "1", "summary": "S1", "firstKeptEntryId": "1"}),
            u("3", Some("2"), "b"),
            json!({"type": "compaction", "id": "4", "parentId": "3", "summary": "S2", "firstKeptEntryId": "3"}),
            u("5", Some("4"), "c"),
        ]),
        vec![cp("S2"), m(U, "b"), m(U, "c")]
    );
}

#[test]
fn pi_damage_is_reported_without_hiding_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let header = |id: &str| serde_json::json!({"type": "session", "version": 3, "id": id, "cwd": "/w"}).to_string();
    let msg = serde_json::json!({"type": "message", "id": "a", "parentId": null, "message": {"role": "user", "content": "hi"}})
        .to_string();
    write(root.path(), "--w--/1_good.jsonl", &format!("{}\n{msg}\n", header("good")));
    write(root.path(), "--w--/2_bad.jsonl", &format!("{msg}\n{}\n", header("bad")));
    write(root.path(), "--w--/3_torn.jsonl", &header("torn")[..20]);
    write(root.path(), "--w--/4_empty.jsonl", "");
    write(root.path(), "--w--/deeper/5_nested.jsonl", &format!("{}\n{msg}\n", header("nested")));
    let s = PiSource::open(root.path()).unwrap();
    let listing = s.list().unwrap();
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.header.id.as_str()).collect();
    assert_eq!(ids, ["pi:good"]);
    let why: Vec<String> = listing.rejected.iter().map(|(p, why)| format!("{}: {why}", p.display())).collect();
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(why[0].contains("2_bad.jsonl") && why[0].contains("not a Pi session header"), "{why:?}");
    assert_eq!(
        listing.without_conversation,
        vec![root.path().join("--w--/3_torn.jsonl"), root.path().join("--w--/4_empty.jsonl")]
    );
    // Found by its file's name, without a listing.
    let fresh = PiSource::open(root.path()).unwrap();
    assert_eq!(fresh.read_title("pi:good").unwrap().as_deref(), Some("hi"));
}

#[test]
fn pi_fingerprints_follow_the_file() {
    let root = tempfile::tempdir().unwrap();
    let header = |id: &str| serde_json::json!({"type": "session", "version": 3, "id": id}).to_string();
    let msg = serde_json::json!({"type": "message", "id": "a", "parentId": null, "message": {"role": "user", "content": "one"}})
        .to_string();
    write(root.path(), "--w--/1_a.jsonl", &format!("{}\n{msg}\n", header("a")));
    write(root.path(), "--w--/1_b.jsonl", &format!("{}\n{msg}\n", header("b")));
    let s = PiSource::open(root.path()).unwrap();
    let ids = vec!["pi:a".to_owned(), "pi:b".to_owned()];
    s.list().unwrap();
    let before = s.fingerprints(&ids).unwrap().unwrap();
    let more = serde_json::json!({"type": "message", "id": "b", "parentId": "a", "message": {"role": "assistant", "content": []}});
    write(root.path(), "--w--/1_b.jsonl", &format!("{}\n{msg}\n{more}\n", header("b")));
    let after = s.fingerprints(&ids).unwrap().unwrap();
    assert_eq!(before[0], after[0], "an unchanged file keeps its fingerprint");
    assert_ne!(before[1], after[1], "a changed file changes it");
    assert!(before.iter().all(Option::is_some));
}

// ------------------------------------------------------------------ OpenHands

fn openhands_fixture() -> PathBuf {
    fixtures().join("openhands/synthetic/conversations")
}

/// The createdAt of an OpenHands conversation: its base_state.json's
/// creation (else modification) time.
fn openhands_created(root: &Path, id: &str) -> u64 {
    let path = root.join(id).join("base_state.json");
    let (_, identity) = dsh_session_reference::fs::open_regular(&path).unwrap();
    file_created_ms(&path, &identity)
}

#[test]
fn openhands_fixtures_project_exactly() {
    let root = openhands_fixture();
    let s = OpenHandsSource::open(&root).unwrap();
    let a = "aaaa1111000040008000000000000001";
    let b = "bbbb2222000040008000000000000002";
    let mut want = vec![
        Pinned {
            id: "openhands:aaaa1111000040008000000000000001",
            created_at: openhands_created(&root, a),
            listed_cwd: Some("/home/u/proj"),
            cwd: Some("/home/u/proj"),
            title: Some("Fix the flaky test"),
            seq: 13,
            items: vec![
                cp("The user asked to fix a flaky test; it races on a timer."),
                m(A, "The test races on a timer."),
                m(U, "Use a fake clock instead"),
                m(A, "Switched to a fake clock."),
            ],
        },
        Pinned {
            id: "openhands:bbbb2222000040008000000000000002",
            created_at: openhands_created(&root, b),
            listed_cwd: Some("/home/u/legacy"),
            cwd: Some("/home/u/legacy"),
            title: Some("What does main.rs do?"),
            seq: 8,
            items: vec![m(U, "What does   main.rs\ndo?"), m(A, "It starts the server."), m(A, "Done.")],
        },
    ];
    // Newest first, equal times by id.
    want.sort_by(|x, y| y.created_at.cmp(&x.created_at).then(x.id.cmp(y.id)));
    check(&s, &want);
    let listing = s.list().unwrap();
    assert_eq!(listing.without_conversation, vec![root.join("cccc3333000040008000000000000003/base_state.json")]);
    assert_eq!(openhands::PREFIX, SourceKind::OpenHands.prefix());
}

fn oh_msg(id: &str, parent: Option<&str>, source: &str, role: &str, text: &str) -> serde_json::Value {
    let mut e = serde_json::json!({"id": id, "source": source, "kind": "MessageEvent",
        "llm_message": {"role": role, "content": [{"type": "text", "text": text}]}});
    if let Some(p) = parent {
        e["parent_id"] = p.into();
    }
    e
}

/// Writes conversation `id` under `root`: a base_state.json naming `leaf`
/// (and `head_is_empty`), and `events` as its event files.
fn oh_write(root: &Path, id: &str, leaf: Option<&str>, head_is_empty: bool, events: &[serde_json::Value]) {
    let mut state = serde_json::json!({"id": id, "workspace": {"working_dir": "/w"}, "head_is_empty": head_is_empty});
    if let Some(l) = leaf {
        state["leaf_event_id"] = l.into();
    }
    write(root, &format!("{id}/base_state.json"), &state.to_string());
    std::fs::create_dir_all(root.join(id).join("events")).unwrap();
    for (i, e) in events.iter().enumerate() {
        write(root, &format!("{id}/events/event-{i:05}-{:08x}.json", i + 1), &e.to_string());
    }
}

/// The conversation of one crafted OpenHands conversation.
fn oh_items(leaf: Option<&str>, head_is_empty: bool, events: &[serde_json::Value]) -> Vec<(bool, String, bool)> {
    let root = tempfile::tempdir().unwrap();
    oh_write(root.path(), "c", leaf, head_is_empty, events);
    let s = OpenHandsSource::open(root.path()).unwrap();
    let SurfaceData::Conversation(c) = s.read_surface("openhands:c").unwrap() else { panic!() };
    items(&c.items)
}

#[test]
fn openhands_follows_the_leaf_and_applies_condensations() {
    use serde_json::json;
    let u = |id: &str, p: Option<&str>, t: &str| oh_msg(id, p, "user", "user", t);
    let a = |id: &str, p: &str, t: &str| oh_msg(id, Some(p), "agent", "assistant", t);
    let condense = |id: &str, p: &str, forgotten: &[&str], summary: Option<&str>, offset: Option<u64>| {
        json!({"id": id, "parent_id": p, "source": "environment", "kind": "Condensation",
            "forgotten_event_ids": forgotten, "summary": summary, "summary_offset": offset})
    };
    // The leaf base_state.json names, not the last event.
    let events = [u("1", None, "one"), a("2", "1", "two"), u("3", Some("2"), "kept"), u("4", Some("2"), "left")];
    assert_eq!(oh_items(Some("3"), false, &events), vec![m(U, "one"), m(A, "two"), m(U, "kept")]);
    // No leaf: the last event; a leaf not among the events read: the same.
    assert_eq!(oh_items(None, false, &events), vec![m(U, "one"), m(A, "two"), m(U, "left")]);
    assert_eq!(oh_items(Some("nope"), false, &events), vec![m(U, "one"), m(A, "two"), m(U, "left")]);
    // An empty HEAD shows nothing; __root__ starts a new root.
    assert_eq!(oh_items(None, true, &events), vec![]);
    assert_eq!(oh_items(None, false, &[u("1", None, "old"), u("2", Some("__root__"), "new")]), vec![m(U, "new")]);
    // A cycle does not hang.
    assert_eq!(
        oh_items(Some("1"), false, &[u("1", Some("2"), "a"), u("2", Some("1"), "b")]),
        vec![m(U, "b"), m(U, "a")]
    );
    // A summary goes at its offset in what is left; a later condensation
    // may forget it; one without an offset puts no summary; an offset past
    // the end appends it.
    let events = [
        u("1", None, "q1"),
        a("2", "1", "a1"),
        condense("3", "2", &["1"], Some("S1"), Some(0)),
        u("4", Some("3"), "q2"),
        condense("5", "4", &["3-summary", "2"], Some("S2"), Some(9)),
        condense("6", "5", &[], Some("S3"), None),
        a("7", "6", "a2"),
    ];
    assert_eq!(oh_items(None, false, &events), vec![m(U, "q2"), cp("S2"), m(A, "a2")]);
    // Messages from the environment or a hook, and the skills' extended
    // content, are not the user's.
    let mut typed = u("1", None, "typed");
    typed["extended_content"] = json!([{"type": "text", "text": "skill text"}]);
    let events =
        [typed, oh_msg("2", Some("1"), "environment", "user", "nudge"), oh_msg("3", Some("2"), "hook", "user", "h")];
    assert_eq!(oh_items(None, false, &events), vec![m(U, "typed")]);
}

#[test]
fn openhands_damage_is_reported_without_hiding_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let events = [oh_msg("1", None, "user", "user", "hi")];
    oh_write(root.path(), "good", None, false, &events);
    oh_write(root.path(), "bad", None, false, &events);
    write(root.path(), "bad/base_state.json", "[\"not a state\"]");
    oh_write(root.path(), "noevents", None, false, &[]);
    std::fs::remove_dir(root.path().join("noevents/events")).unwrap();
    write(root.path(), "notaconversation/readme.txt", "x");
    write(root.path(), "stray.json", "{}");
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.path().join("good"), root.path().join("linked")).unwrap();
    let s = OpenHandsSource::open(root.path()).unwrap();
    let listing = s.list().unwrap();
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.header.id.as_str()).collect();
    assert_eq!(ids, ["openhands:good"]);
    let why: Vec<String> = listing.rejected.iter().map(|(p, why)| format!("{}: {why}", p.display())).collect();
    assert!(why.iter().any(|w| w.contains("bad/base_state.json") && w.contains("not a JSON object")), "{why:?}");
    #[cfg(unix)]
    assert!(why.iter().any(|w| w.contains("linked") && w.contains("not followed")), "{why:?}");
    assert_eq!(listing.without_conversation, vec![root.path().join("noevents/base_state.json")]);
    // Found by its directory's name, without a listing.
    let fresh = OpenHandsSource::open(root.path()).unwrap();
    assert_eq!(fresh.read_title("openhands:good").unwrap().as_deref(), Some("hi"));
    // An event file that is a link is not followed.
    #[cfg(unix)]
    {
        let other = tempfile::tempdir().unwrap();
        write(other.path(), "e.json", &oh_msg("2", Some("1"), "agent", "assistant", "secret").to_string());
        let name = root.path().join("good/events/event-00001-00000002.json");
        std::os::unix::fs::symlink(other.path().join("e.json"), name).unwrap();
        let SurfaceData::Conversation(c) = fresh.read_surface("openhands:good").unwrap() else { panic!() };
        assert_eq!(items(&c.items), vec![m(U, "hi")]);
    }
}

#[test]
fn openhands_fingerprints_follow_the_events() {
    let root = tempfile::tempdir().unwrap();
    let first = oh_msg("1", None, "user", "user", "one");
    oh_write(root.path(), "a", None, false, std::slice::from_ref(&first));
    oh_write(root.path(), "b", None, false, std::slice::from_ref(&first));
    let s = OpenHandsSource::open(root.path()).unwrap();
    let ids = vec!["openhands:a".to_owned(), "openhands:b".to_owned()];
    s.list().unwrap();
    let before = s.fingerprints(&ids).unwrap().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let more = oh_msg("2", Some("1"), "agent", "assistant", "two");
    write(root.path(), "b/events/event-00001-00000002.json", &more.to_string());
    let after = s.fingerprints(&ids).unwrap().unwrap();
    assert_eq!(before[0], after[0], "an unchanged conversation keeps its fingerprint");
    assert_ne!(before[1], after[1], "a new event changes it");
    assert!(before.iter().all(Option::is_some));
}

// ------------------------------------------------------------ every kind at once

#[test]
fn every_kind_name_is_accepted_and_opens() {
    for kind in SourceKind::ALL {
        assert_eq!(SourceKind::from_name(kind.name()), Some(kind));
        let spec = SourceSpec::parse(&format!("{}=/nonexistent/{}", kind.name(), kind.name())).unwrap();
        assert_eq!(spec.kind, kind);
        assert!(SourceKind::names().contains(kind.name()));
    }
    let why = SourceSpec::parse("nope=/x").unwrap_err();
    assert!(why.contains(&SourceKind::names()), "{why}");
}

/// Every kind of the table is documented where a user looks for it: a row
/// of docs/sources.md's table (by name, as `--source` takes it) and its
/// title, the README's list of the agents whose sessions are read, and
/// docs/mcp.md's (its format) and its `source` values (its name); and the
/// SDKs' typed lists of kind names (Node's `SessionSourceKind`, the Python
/// stub's `SessionSources`).
#[test]
fn every_kind_is_named_in_the_docs() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    // Prose is wrapped: line breaks read as spaces.
    let read = |file: &str| {
        let text = std::fs::read_to_string(repo.join(file)).unwrap();
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let between = |text: &str, start: &str, end: &str| -> String {
        let from = text.find(start).unwrap_or_else(|| panic!("no {start:?}")) + start.len();
        text[from..from + text[from..].find(end).unwrap()].to_owned()
    };
    let sources = std::fs::read_to_string(repo.join("docs/sources.md")).unwrap();
    let title = sources.lines().next().unwrap();
    let readme = between(&read("README.md"), "on-disk sessions of other agents beside them (", ")");
    let mcp = read("docs/mcp.md");
    let mcp_list = between(&mcp, "the model can find the sessions any of them wrote (", "`docs/sources.md`)");
    let mcp_values = between(&mcp, "and the kinds are ", "(docs/sources.md)");
    let node = between(&read("node/wrapper.d.ts"), "export type SessionSourceKind =", "/**");
    let python = between(&read("python/dsh_session_reference/_native.pyi"), "KIND is one of", "lists them");
    for kind in SourceKind::ALL {
        let (name, format) = (kind.name(), kind.format());
        assert!(sources.contains(&format!("\n| `{name}` | ")), "no row of docs/sources.md's table for {name}");
        assert!(title.contains(format), "docs/sources.md's title misses {format}: {title}");
        assert!(kind == SourceKind::Dsh || readme.contains(format), "README.md's list misses {format}: {readme}");
        assert!(mcp_list.contains(format), "docs/mcp.md's list misses {format}: {mcp_list}");
        assert!(mcp_values.contains(&format!("`{name}`")), "docs/mcp.md's kinds of ids miss `{name}`: {mcp_values}");
        assert!(node.contains(&format!("| '{name}'")), "node/wrapper.d.ts's SessionSourceKind misses {name}");
        assert!(python.contains(&format!("``{name}``")), "_native.pyi's SessionSources misses {name}: {python}");
    }
}

#[test]
fn one_view_lists_the_new_kinds_with_the_others_newest_first() {
    let specs = [
        SourceSpec::new(SourceKind::Codex, fixtures().join("codex/daaain")),
        SourceSpec::new(SourceKind::CopilotCli, copilot_fixture()),
        SourceSpec::new(SourceKind::GeminiCli, gemini_fixture()),
        SourceSpec::new(SourceKind::Cursor, cursor_fixture()),
        SourceSpec::new(SourceKind::Aider, fixtures().join("aider")),
        SourceSpec::new(SourceKind::Pi, pi_fixture()),
        SourceSpec::new(SourceKind::OpenHands, openhands_fixture()),
    ];
    let multi = open_sources(&specs).unwrap();
    let listed = block_on(multi.list_sessions()).unwrap();
    let times: Vec<u64> = listed.iter().map(|h| h.created_at.as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    for kind in ["codex:", "copilot-cli:", "gemini-cli:", "cursor:", "aider:", "pi:", "openhands:"] {
        assert!(listed.iter().any(|h| h.id.starts_with(kind)), "{kind}");
    }
    let surface = block_on(multi.read_surface("copilot-cli:rewind-session")).unwrap();
    assert!(matches!(surface, SurfaceData::Conversation(_)));
}

/// The note of the one source of `spec` after a listing.
fn note_of(spec: SourceSpec) -> String {
    let multi = open_sources(&[spec]).unwrap();
    block_on(multi.list_sessions()).unwrap();
    multi.last_report()[0].note.clone().unwrap_or_default()
}

#[test]
fn a_listing_note_names_each_file_skipped_with_why() {
    let tmp = tempfile::tempdir().unwrap();
    let chats = "p/chats";
    let good = r#"{"sessionId": "g1", "startTime": "2026-08-01T10:00:00.000Z"}
{"id": "m1", "type": "user", "content": [{"text": "hi"}]}
"#;
    write(tmp.path(), &format!("{chats}/session-a-good.jsonl"), good);
    // Not Gemini CLI's format: a legacy-named file of another program, a
    // chat file whose first record has no sessionId, one with nothing yet.
    write(tmp.path(), &format!("{chats}/session-b-other.json"), "[1, 2, 3]");
    write(tmp.path(), &format!("{chats}/session-c-noid.jsonl"), "{\"kind\": \"main\"}\n");
    write(tmp.path(), &format!("{chats}/session-d-empty.jsonl"), "");
    let note = note_of(SourceSpec::new(SourceKind::GeminiCli, tmp.path()));
    let at = |name: &str| tmp.path().join(chats).join(name).display().to_string();
    assert!(note.starts_with("skipped "), "{note}");
    let other =
        format!("{} (not a Gemini CLI chat: the file is not an object with a sessionId)", at("session-b-other.json"));
    assert!(note.contains(&other), "{note}");
    let noid = format!("{} (not a Gemini CLI chat: its first line has no sessionId)", at("session-c-noid.jsonl"));
    assert!(note.contains(&noid), "{note}");
    assert!(note.contains(&format!("{} (it holds no conversation yet)", at("session-d-empty.jsonl"))), "{note}");
    assert!(!note.contains("session-a-good"), "{note}");
    // Bounded: the first three are named, the rest counted.
    for n in 0..4 {
        write(tmp.path(), &format!("{chats}/session-e{n}.jsonl"), "not json\n");
    }
    let note = note_of(SourceSpec::new(SourceKind::GeminiCli, tmp.path()));
    assert_eq!(note.matches(" (").count(), 3, "{note}");
    assert!(note.ends_with(" and 4 more"), "{note}");
    // A root that lists nothing says why, and still names what it skipped.
    let only_bad = tempfile::tempdir().unwrap();
    write(only_bad.path(), &format!("{chats}/session-c-noid.jsonl"), "{}\n");
    let note = note_of(SourceSpec::new(SourceKind::GeminiCli, only_bad.path()));
    assert!(
        note.contains("no Gemini CLI session in")
            && note.contains("(not a Gemini CLI chat: its first line has no sessionId)"),
        "{note}"
    );

    // Copilot CLI and Cursor: an empty log, and (where links are) one that is not followed.
    let copilot = tempfile::tempdir().unwrap();
    let start = copilot_line("session.start", "s", serde_json::json!({}));
    write(copilot.path(), "a/events.jsonl", &format!("{start}\n"));
    write(copilot.path(), "b/events.jsonl", "");
    #[cfg(unix)]
    std::os::unix::fs::symlink(copilot.path().join("a"), copilot.path().join("c")).unwrap();
    let note = note_of(SourceSpec::new(SourceKind::CopilotCli, copilot.path()));
    let b = copilot.path().join("b/events.jsonl");
    assert!(note.contains(&format!("{} (it holds no conversation yet)", b.display())), "{note}");
    #[cfg(unix)]
    assert!(note.contains(&format!("{} (", copilot.path().join("c").display())), "{note}");
    let cursor = tempfile::tempdir().unwrap();
    write(cursor.path(), "home-u/agent-transcripts/t1.jsonl", "{\"role\": \"user\"}\n");
    write(cursor.path(), "home-u/agent-transcripts/t2.jsonl", "");
    let note = note_of(SourceSpec::new(SourceKind::Cursor, cursor.path()));
    let t2 = cursor.path().join("home-u/agent-transcripts/t2.jsonl");
    assert_eq!(note, format!("skipped {} (it holds no conversation yet)", t2.display()));
    // A listing that skipped nothing says nothing.
    std::fs::remove_file(&t2).unwrap();
    assert_eq!(note_of(SourceSpec::new(SourceKind::Cursor, cursor.path())), "");
}

/// One page, one conversation and one reference of a session of a source
/// that keeps each in a file each open its file once: the title comes with
/// the surface read, and the file is checked and replayed on the same
/// open, whether the session was listed before or is found by its id or
/// its file's name.
#[test]
fn a_read_of_a_file_per_session_source_opens_its_file_once() {
    use std::sync::Arc;

    use dsh_session_reference::fs::{count_opens, opens_counted};
    use dsh_session_reference::{CandidateOptions, Config, PrepareOptions, ReadOptions, Resolver, Target};
    type Open = fn(&Path) -> Arc<dyn SessionQuery>;
    let kinds: [(PathBuf, &str, &str, &str, Open); 4] = [
        (
            gemini_fixture(),
            "myproj/chats/session-2026-08-01T10-00-1a2b3c4d.jsonl",
            "gemini-cli:1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
            "Parser refactor",
            |root| GeminiCliSource::open(root).unwrap().into_query(),
        ),
        (
            cursor_fixture(),
            "home-u-shop/agent-transcripts/aaaa1111-0000-4000-8000-000000000001.jsonl",
            "cursor:aaaa1111-0000-4000-8000-000000000001",
            "Add a cart badge",
            |root| CursorSource::open(root).unwrap().into_query(),
        ),
        (
            copilot_fixture(),
            "3f1c2b4a-0000-4000-8000-00000000000a/events.jsonl",
            "copilot-cli:3f1c2b4a-0000-4000-8000-00000000000a",
            "Fetch retries",
            |root| CopilotCliSource::open(root).unwrap().into_query(),
        ),
        (
            pi_fixture(),
            "--home-u-proj--/2026-08-01T10-00-00-000Z_aaaa1111-0000-4000-8000-000000000001.jsonl",
            "pi:aaaa1111-0000-4000-8000-000000000001",
            "Parser refactor",
            |root| PiSource::open(root).unwrap().into_query(),
        ),
    ];
    let target = Target::new("new-chat", None);
    for (fixture, file, id, title, open) in kinds {
        let tmp = tempfile::tempdir().unwrap();
        common::copy_dir(&fixture, tmp.path());
        let file = tmp.path().join(file);
        for listed_first in [false, true] {
            let resolver = Resolver::new(open(tmp.path()), Config::default());
            if listed_first {
                block_on(resolver.candidates(&target, "", &CandidateOptions::default(), None)).unwrap();
            }
            let once = |what: &str| assert_eq!(opens_counted(&file), 1, "{id}: {what} (listed first: {listed_first})");
            count_opens(&file);
            let page = block_on(resolver.read(&target, id, &ReadOptions::default(), None)).unwrap();
            once("one page");
            count_opens(&file);
            let conversation = block_on(resolver.conversation(id, None)).unwrap();
            once("one conversation");
            assert_eq!((page.title.as_str(), conversation.label.as_str()), (title, title));
            count_opens(&file);
            let refs = [serde_json::json!({"sessionId": id})];
            let content = serde_json::json!([{"type": "text", "text": "see"}]);
            block_on(resolver.prepare(&target, &content, &refs, &PrepareOptions::default(), None)).unwrap();
            once("one reference");
        }
    }
}

/// A listing reads again only the files that changed since the last one
/// (a long-lived server lists before it resolves an id): an unchanged
/// session's file is not opened, a changed one is read again and its change
/// listed.
#[test]
fn a_listing_opens_only_the_files_that_changed() {
    use dsh_session_reference::fs::{count_opens, opens_counted};
    let tmp = tempfile::tempdir().unwrap();
    common::copy_dir(&gemini_fixture(), tmp.path());
    let file = tmp.path().join("myproj/chats/session-2026-08-01T10-00-1a2b3c4d.jsonl");
    let query = GeminiCliSource::open(tmp.path()).unwrap().into_query();
    let ids = || -> Vec<String> {
        block_on(async { query.list_sessions().await }).unwrap().into_iter().map(|h| h.id).collect::<Vec<_>>()
    };
    let old = "gemini-cli:1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
    count_opens(&file);
    assert!(ids().contains(&old.to_owned()));
    assert_eq!(opens_counted(&file), 1, "the first listing reads the file");
    count_opens(&file);
    let again = ids();
    assert_eq!(opens_counted(&file), 0, "an unchanged file is not opened again");
    assert!(again.contains(&old.to_owned()));
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5e"))
        .unwrap();
    count_opens(&file);
    let changed = ids();
    assert_eq!(opens_counted(&file), 1, "a changed file is read again");
    assert!(changed.contains(&"gemini-cli:1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5e".to_owned()), "{changed:?}");
    assert!(!changed.contains(&old.to_owned()), "{changed:?}");
}
