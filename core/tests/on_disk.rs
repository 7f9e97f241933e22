//! Claude Code and Codex as they are on disk (issue 25): prompts queued
//! while the model worked, titles written into other transcripts, files
//! with no conversation, and roots given the way people give them. Each
//! case is a fixture of `tests/fixtures/on-disk/` (its README says what
//! each file models) with its exact listing, titles and snapshots.

mod common;
use std::path::{Path, PathBuf};

use dsh_session_reference::sources::claude_code::ClaudeCodeSource;
use dsh_session_reference::{BlockingSessionQuery, ConversationItem, SurfaceData};
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
