//! The JSON and JSONL sources of Qwen Code, Continue, Kimi Code and Grok
//! Build: every fixture's listing, title, cwd, capturedThroughSeq and
//! projected conversation pinned, and a crafted case for each rule and each
//! kind of damage.

use std::path::PathBuf;

use dsh_session_reference::sources::continue_cli::{self, ContinueSource};
use dsh_session_reference::sources::grok::{self, GrokSource};
use dsh_session_reference::sources::kimi::{self, KimiSource};
use dsh_session_reference::sources::qwen_code::{self, QwenCodeSource};
use dsh_session_reference::sources::{open_sources, SourceKind, SourceSpec};
use dsh_session_reference::{block_on, BlockingSessionQuery, SessionQuery, SurfaceData};

mod common;
mod pinned;
use pinned::*;

/// The note of the one source of `spec` after a listing.
fn note_of(spec: SourceSpec) -> String {
    let multi = open_sources(&[spec]).unwrap();
    block_on(multi.list_sessions()).unwrap();
    multi.last_report()[0].note.clone().unwrap_or_default()
}

// ------------------------------------------------------------------ Qwen Code

fn qwen_fixture() -> PathBuf {
    fixtures().join("qwen-code/synthetic/projects")
}

#[test]
fn qwen_code_fixtures_project_exactly() {
    let s = QwenCodeSource::open(qwen_fixture()).unwrap();
    check(
        &s,
        &[
            Pinned {
                id: "qwen-code:aaaa1111-0000-4000-8000-000000000001",
                created_at: 1_785_578_400_000,
                listed_cwd: Some("/home/u/proj"),
                cwd: Some("/home/u/proj"),
                title: Some("Parser refactor"),
                seq: 11,
                items: vec![
                    cp("<state_snapshot>The parser was split in two halves.</state_snapshot>"),
                    m(U, "Keep the API stable"),
                    m(A, "Understood."),
                    m(U, "Now add tests"),
                    m(U, "and run them"),
                    m(A, "Tests added and run."),
                ],
            },
            Pinned {
                id: "qwen-code:bbbb2222-0000-4000-8000-000000000002",
                created_at: 1_782_896_400_000,
                listed_cwd: Some("/home/u/other"),
                cwd: Some("/home/u/other"),
                title: Some("What is the plan?"),
                seq: 11,
                items: vec![m(U, "What is   the\nplan?"), m(A, "Plan A."), m(U, "Go with B instead"), m(A, "Doing B.")],
            },
        ],
    );
    assert_eq!(qwen_code::PREFIX, SourceKind::QwenCode.prefix());
}

/// One Qwen Code record.
fn qwen(uuid: &str, parent: Option<&str>, kind: &str, more: serde_json::Value) -> serde_json::Value {
    let mut r = serde_json::json!({"uuid": uuid, "parentUuid": parent, "sessionId": "s", "timestamp": "2026-08-01T10:00:00Z", "type": kind, "cwd": "/w"});
    r.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
    r
}

fn qwen_text(role: &str, text: &str) -> serde_json::Value {
    serde_json::json!({"message": {"role": role, "parts": [{"text": text}]}})
}

/// A chat of `records`; its conversation and title.
fn qwen_items(records: &[serde_json::Value]) -> (Vec<(bool, String, bool)>, Option<String>) {
    let root = tempfile::tempdir().unwrap();
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    write(root.path(), "-w/chats/s.jsonl", &text);
    let s = QwenCodeSource::open(root.path()).unwrap();
    let SurfaceData::Conversation(c) = s.read_surface("qwen-code:s").unwrap() else { panic!() };
    (items(&c.items), s.read_title("qwen-code:s").unwrap())
}

#[test]
fn qwen_code_follows_the_chain_of_the_last_record() {
    use serde_json::json;
    let u = |id: &str, p: Option<&str>, t: &str| qwen(id, p, "user", qwen_text("user", t));
    let a = |id: &str, p: &str, t: &str| qwen(id, Some(p), "assistant", qwen_text("model", t));
    // A rewind re-roots the chain: the turns after its parent are gone.
    let (got, title) = qwen_items(&[
        u("1", None, "one"),
        a("2", "1", "two"),
        u("3", Some("2"), "gone"),
        qwen("4", Some("2"), "system", json!({"subtype": "rewind", "systemPayload": {"truncatedCount": 1}})),
        u("5", Some("4"), "three"),
    ]);
    assert_eq!(got, vec![m(U, "one"), m(A, "two"), m(U, "three")]);
    assert_eq!(title.as_deref(), Some("one"));
    // The first record of a uuid counts; a missing parent ends the chain; a
    // cycle does not hang.
    let (got, _) = qwen_items(&[u("1", None, "first"), u("1", None, "again"), a("2", "1", "reply")]);
    assert_eq!(got, vec![m(U, "first"), m(A, "reply")]);
    let (got, _) = qwen_items(&[u("1", None, "lost"), u("2", Some("gone"), "kept")]);
    assert_eq!(got, vec![m(U, "kept")]);
    let (got, _) = qwen_items(&[u("1", Some("2"), "a"), u("2", Some("1"), "b")]);
    assert_eq!(got, vec![m(U, "a"), m(U, "b")]);
    // The latest compaction counts; one without a history leaves nothing
    // before it.
    let compaction = |id: &str, p: &str, history: serde_json::Value| {
        qwen(
            id,
            Some(p),
            "system",
            json!({"subtype": "chat_compression", "systemPayload": {"compressedHistory": history}}),
        )
    };
    let (got, _) = qwen_items(&[
        u("1", None, "a"),
        compaction("2", "1", json!([{"role": "user", "parts": [{"text": "S1"}]}])),
        u("3", Some("2"), "b"),
        compaction(
            "4",
            "3",
            json!([{"role": "user", "parts": [{"text": "S2"}]}, {"role": "user", "parts": [{"text": "kept"}]}]),
        ),
        u("5", Some("4"), "c"),
    ]);
    assert_eq!(got, vec![cp("S2"), m(U, "kept"), m(U, "c")]);
    let (got, _) = qwen_items(&[u("1", None, "a"), compaction("2", "1", json!(null)), u("3", Some("2"), "b")]);
    assert_eq!(got, vec![m(U, "b")]);
    // A slash command sent to the model stays; the latest title wins, an
    // empty one is passed over.
    let title_record = |id: &str, p: &str, t: &str| {
        qwen(id, Some(p), "system", json!({"subtype": "custom_title", "systemPayload": {"customTitle": t}}))
    };
    let (got, title) = qwen_items(&[
        u("1", None, "/review"),
        qwen(
            "2",
            Some("1"),
            "system",
            json!({"subtype": "slash_command", "systemPayload": {"phase": "result", "rawCommand": "/review", "sentToModel": true}}),
        ),
        title_record("3", "2", "First"),
        title_record("4", "3", "Second"),
        title_record("5", "4", " "),
    ]);
    assert_eq!(got, vec![m(U, "/review")]);
    assert_eq!(title.as_deref(), Some("Second"));
    // A subagent's records after the main chain do not move its leaf.
    let (got, _) = qwen_items(&[
        u("1", None, "main"),
        qwen(
            "2",
            None,
            "assistant",
            json!({"isSidechain": true, "message": {"role": "model", "parts": [{"text": "side"}]}}),
        ),
    ]);
    assert_eq!(got, vec![m(U, "main")]);
}

#[test]
fn qwen_code_damage_is_reported_without_hiding_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let rec = |sid: Option<&str>| {
        let mut r = qwen("u", None, "user", qwen_text("user", "hi"));
        match sid {
            Some(s) => r["sessionId"] = s.into(),
            None => drop(r.as_object_mut().unwrap().remove("sessionId")),
        }
        r.to_string()
    };
    write(root.path(), "-w/chats/good.jsonl", &format!("{}\n", rec(Some("good"))));
    write(root.path(), "-w/chats/noid.jsonl", &format!("{}\n", rec(None)));
    write(root.path(), "-w/chats/torn.jsonl", &rec(Some("torn"))[..20]);
    write(root.path(), "-w/chats/empty.jsonl", "");
    write(root.path(), "-w/chats/deeper/nested.jsonl", &format!("{}\n", rec(Some("nested"))));
    write(root.path(), "-w/other/elsewhere.jsonl", &format!("{}\n", rec(Some("elsewhere"))));
    let s = QwenCodeSource::open(root.path()).unwrap();
    let listing = s.list().unwrap();
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.header.id.as_str()).collect();
    assert_eq!(ids, ["qwen-code:good"]);
    let why: Vec<String> = listing.rejected.iter().map(|(p, why)| format!("{}: {why}", p.display())).collect();
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(why[0].contains("noid.jsonl") && why[0].contains("not a Qwen Code chat: its first line has no sessionId"));
    assert_eq!(
        listing.without_conversation,
        vec![root.path().join("-w/chats/empty.jsonl"), root.path().join("-w/chats/torn.jsonl")]
    );
    let note = note_of(SourceSpec::new(SourceKind::QwenCode, root.path()));
    let noid = root.path().join("-w/chats/noid.jsonl");
    assert!(note.contains(&format!("{} (not a Qwen Code chat: its first line has no sessionId)", noid.display())));
    // Found by its file's name, without a listing.
    let fresh = QwenCodeSource::open(root.path()).unwrap();
    assert_eq!(fresh.read_title("qwen-code:good").unwrap().as_deref(), Some("hi"));
    // A root that holds none says what it expected.
    let empty = tempfile::tempdir().unwrap();
    let note = note_of(SourceSpec::new(SourceKind::QwenCode, empty.path()));
    assert!(note.contains("expected project directories holding chats/<session id>.jsonl"), "{note}");
}

#[test]
fn qwen_code_fingerprints_follow_the_file_and_a_home_is_read_as_its_projects() {
    let root = tempfile::tempdir().unwrap();
    let first = format!("{}\n", qwen("u", None, "user", qwen_text("user", "one")));
    write(root.path(), "projects/-w/chats/a.jsonl", &first.replace("\"s\"", "\"a\""));
    write(root.path(), "projects/-w/chats/b.jsonl", &first.replace("\"s\"", "\"b\""));
    let s = QwenCodeSource::open(root.path().join("projects")).unwrap();
    let ids = vec!["qwen-code:a".to_owned(), "qwen-code:b".to_owned()];
    s.list().unwrap();
    let before = s.fingerprints(&ids).unwrap().unwrap();
    let more = qwen("v", Some("u"), "assistant", qwen_text("model", "two"));
    write(root.path(), "projects/-w/chats/b.jsonl", &format!("{}{more}\n", first.replace("\"s\"", "\"b\"")));
    let after = s.fingerprints(&ids).unwrap().unwrap();
    assert_eq!(before[0], after[0], "an unchanged file keeps its fingerprint");
    assert_ne!(before[1], after[1], "a changed file changes it");
    assert!(before.iter().all(Option::is_some));
    // `~/.qwen` given is read as its `projects/`.
    let resolved = SourceSpec::new(SourceKind::QwenCode, root.path()).resolve().unwrap();
    assert_eq!(resolved.spec.root, root.path().join("projects"));
    let multi = open_sources(&[SourceSpec::new(SourceKind::QwenCode, root.path())]).unwrap();
    assert_eq!(block_on(multi.list_sessions()).unwrap().len(), 2);
}

// ------------------------------------------------------------------- Continue

fn continue_fixture() -> PathBuf {
    fixtures().join("continue/synthetic/sessions")
}

#[test]
fn continue_fixtures_project_exactly() {
    let root = continue_fixture();
    let s = ContinueSource::open(&root).unwrap();
    let mut want = vec![
        Pinned {
            id: "continue:cccc3333-0000-4000-8000-000000000003",
            created_at: born_ms(&root.join("cccc3333-0000-4000-8000-000000000003.json")),
            listed_cwd: Some("/home/u/app"),
            cwd: Some("/home/u/app"),
            title: Some("Login bug fix"),
            seq: 8,
            items: vec![
                cp("The login bug was fixed in auth.ts; a test is next."),
                m(U, "Now add a test\nlike this one"),
                m(A, "Test added."),
            ],
        },
        Pinned {
            id: "continue:dddd4444-0000-4000-8000-000000000004",
            created_at: born_ms(&root.join("dddd4444-0000-4000-8000-000000000004.json")),
            listed_cwd: None,
            cwd: None,
            title: Some("How do I run the tests?"),
            seq: 1,
            items: vec![m(U, "How do I   run\nthe tests?"), m(A, "Run\nnpm test.")],
        },
    ];
    want.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| a.id.cmp(b.id)));
    check(&s, &want);
    assert_eq!(continue_cli::PREFIX, SourceKind::Continue.prefix());
}

/// A session of `history` titled `title`; its conversation and title.
fn continue_items(history: serde_json::Value, title: &str) -> (Vec<(bool, String, bool)>, Option<String>) {
    let root = tempfile::tempdir().unwrap();
    let session = serde_json::json!({"sessionId": "s", "title": title, "workspaceDirectory": "/w", "history": history});
    write(root.path(), "s.json", &session.to_string());
    let s = ContinueSource::open(root.path()).unwrap();
    let SurfaceData::Conversation(c) = s.read_surface("continue:s").unwrap() else { panic!() };
    (items(&c.items), s.read_title("continue:s").unwrap())
}

#[test]
fn continue_starts_at_the_first_compaction() {
    use serde_json::json;
    let say = |role: &str, text: &str| json!({"message": {"role": role, "content": text}, "contextItems": []});
    let summary = |text: &str| json!({"message": {"role": "assistant", "content": text}, "contextItems": [], "conversationSummary": text});
    // As `findCompactionIndex`: the first summary starts the history, a
    // later one is a checkpoint where it stands.
    let (got, title) = continue_items(
        json!([say("user", "gone"), summary("S1"), say("user", "a"), summary("S2"), say("assistant", "b")]),
        "",
    );
    assert_eq!(got, vec![cp("S1"), m(U, "a"), cp("S2"), m(A, "b")]);
    assert_eq!(title.as_deref(), Some("a"));
    // No history, or one of odd shapes, is an empty conversation.
    let (got, title) = continue_items(json!([]), "Untitled Session");
    assert!(got.is_empty());
    assert_eq!(title, None);
    let (got, _) = continue_items(
        json!([5, {"message": "x"}, {"message": {"role": "user", "content": 7}}, say("user", "kept")]),
        "T",
    );
    assert_eq!(got, vec![m(U, "kept")]);
}

#[test]
fn continue_damage_is_reported_without_hiding_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let session = |id: &str| {
        serde_json::json!({"sessionId": id, "title": "T", "history": [{"message": {"role": "user", "content": "hi"}}]})
            .to_string()
    };
    write(root.path(), "good.json", &session("good"));
    write(root.path(), "torn.json", &session("torn")[..30]);
    write(root.path(), "noid.json", "{\"title\": \"x\", \"history\": []}");
    write(root.path(), "empty.json", "");
    write(root.path(), "sessions.json", "[]");
    write(root.path(), "nested/deeper.json", &session("deeper"));
    let s = ContinueSource::open(root.path()).unwrap();
    let listing = s.list().unwrap();
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.header.id.as_str()).collect();
    assert_eq!(ids, ["continue:good"]);
    let why: Vec<String> = listing.rejected.iter().map(|(p, why)| format!("{}: {why}", p.display())).collect();
    assert_eq!(why.len(), 2, "{why:?}");
    assert!(why[0].contains("noid.json: not a Continue session: it has no sessionId"), "{why:?}");
    assert!(why[1].contains("torn.json: not a Continue session: EOF while parsing"), "{why:?}");
    assert_eq!(listing.without_conversation, vec![root.path().join("empty.json")]);
    let note = note_of(SourceSpec::new(SourceKind::Continue, root.path()));
    assert!(
        note.contains(&format!(
            "{} (not a Continue session: it has no sessionId)",
            root.path().join("noid.json").display()
        )),
        "{note}"
    );
    // Found by its file's name, without a listing; one in a torn file is
    // not found, and the error says which files could not be read.
    let fresh = ContinueSource::open(root.path()).unwrap();
    assert_eq!(fresh.read_title("continue:good").unwrap().as_deref(), Some("T"));
    let why = fresh.read_surface("continue:torn").unwrap_err().message().to_owned();
    assert!(why.contains("no Continue session \"torn\"") && why.contains("2 entries could not be read"), "{why}");
}

#[test]
fn continue_fingerprints_follow_the_file_and_a_home_is_read_as_its_sessions() {
    let root = tempfile::tempdir().unwrap();
    let session = |id: &str, text: &str| {
        serde_json::json!({"sessionId": id, "history": [{"message": {"role": "user", "content": text}}]}).to_string()
    };
    write(root.path(), "sessions/a.json", &session("a", "one"));
    write(root.path(), "sessions/b.json", &session("b", "one"));
    let s = ContinueSource::open(root.path().join("sessions")).unwrap();
    let ids = vec!["continue:a".to_owned(), "continue:b".to_owned()];
    s.list().unwrap();
    let before = s.fingerprints(&ids).unwrap().unwrap();
    write(root.path(), "sessions/b.json", &session("b", "one, then two"));
    let after = s.fingerprints(&ids).unwrap().unwrap();
    assert_eq!(before[0], after[0], "an unchanged file keeps its fingerprint");
    assert_ne!(before[1], after[1], "a changed file changes it");
    let resolved = SourceSpec::new(SourceKind::Continue, root.path()).resolve().unwrap();
    assert_eq!(resolved.spec.root, root.path().join("sessions"));
}

#[test]
fn continue_files_are_read_as_a_stream_and_checked_as_json() {
    use serde_json::json;
    let root = tempfile::tempdir().unwrap();
    // A history over several of the reader's 1 MiB reads, its items between
    // odd whitespace and around keys the reader skips.
    let history: Vec<serde_json::Value> = (0..600)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"contextItems": [{"content": "x\"]}".repeat(1000)}], "message": {"role": role, "content": format!("m{i}")}})
        })
        .collect();
    let big = json!({"usage": {"a": [1, 2]}, "history": history, "title": "", "sessionId": "big"}).to_string();
    assert!(big.len() > 2 << 20);
    write(root.path(), "big.json", &big.replace(",\"", " ,\n\t\"").replace("[{", "[ {"));
    let bad = [
        ("twice", r#"{"sessionId": "twice", "history": [], "history": []}"#, "duplicate field `history`"),
        ("comma", r#"{"sessionId": "comma", "history": [{"message": {}},]}"#, "trailing comma"),
        ("after", r#"{"sessionId": "after", "history": []} {}"#, "trailing characters"),
    ];
    for (name, text, _) in bad {
        write(root.path(), &format!("{name}.json"), text);
    }
    // An item that is not what Continue writes is found by a read, which
    // builds the items (a listing checks them as JSON only).
    let item = r#"{"sessionId": "item", "history": [{"message": {"role": "user", "content": "a"}, "message": 1}]}"#;
    write(root.path(), "item.json", item);
    let s = ContinueSource::open(root.path()).unwrap();
    let listing = s.list().unwrap();
    let mut ids: Vec<&str> = listing.sessions.iter().map(|s| s.header.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["continue:big", "continue:item"]);
    let why = s.read_surface("continue:item").unwrap_err().message().to_owned();
    assert!(why.contains("duplicate field `message`"), "{why}");
    for (name, _, why) in bad {
        let (_, got) = listing.rejected.iter().find(|(p, _)| p.ends_with(format!("{name}.json"))).unwrap();
        assert!(got.starts_with("not a Continue session: ") && got.contains(why), "{name}: {got}");
    }
    let SurfaceData::Conversation(c) = s.read_surface("continue:big").unwrap() else { panic!() };
    let want: Vec<(bool, String, bool)> = (0..600).map(|i| m(i % 2 == 0, &format!("m{i}"))).collect();
    assert_eq!(items(&c.items), want);
    assert_eq!(c.captured_through_seq.as_ref().and_then(|n| n.as_u64()), Some(599));
    assert_eq!(s.read_title("continue:big").unwrap().as_deref(), Some("m0"));
    // A file is read by the id it holds, not by its name.
    write(root.path(), "other.json", r#"{"sessionId": "big2", "history": []}"#);
    assert!(s.read_surface("continue:other").is_err());
}

// ------------------------------------------------------------------ Kimi Code

fn kimi_fixture() -> PathBuf {
    fixtures().join("kimi/synthetic/sessions")
}

#[test]
fn kimi_fixtures_project_exactly() {
    let s = KimiSource::open(kimi_fixture()).unwrap();
    check(
        &s,
        &[
            Pinned {
                id: "kimi:session_aaaa1111-0000-4000-8000-000000000001",
                created_at: 1_785_578_400_000,
                listed_cwd: Some("/home/u/proj"),
                cwd: Some("/home/u/proj"),
                title: Some("Parser refactor"),
                seq: 32,
                items: vec![
                    m(U, "Refactor the parser"),
                    m(U, "Now split it"),
                    cp("The parser was split in two modules."),
                    m(U, "Add tests"),
                    m(A, "Tests added."),
                ],
            },
            Pinned {
                id: "kimi:session_bbbb2222-0000-4000-8000-000000000002",
                created_at: 1_782_896_400_000,
                listed_cwd: Some("/home/u/other"),
                cwd: Some("/home/u/other"),
                title: Some("Start over: plan B"),
                seq: 14,
                items: vec![m(U, "Start over: plan B"), m(U, "/review the plan"), m(A, "Reviewed B.")],
            },
        ],
    );
    assert_eq!(kimi::PREFIX, SourceKind::Kimi.prefix());
}

const KIMI_LOG: &str = "wd/session_s/agents/main/wire.jsonl";

fn kimi_log(records: &[serde_json::Value]) -> String {
    let head = serde_json::json!({"type": "metadata", "protocol_version": "1.5", "created_at": 1_785_578_400_000u64});
    std::iter::once(&head).chain(records).map(|r| format!("{r}\n")).collect()
}

/// A session of `records` after its metadata; its conversation.
fn kimi_items(records: &[serde_json::Value]) -> Vec<(bool, String, bool)> {
    let root = tempfile::tempdir().unwrap();
    write(root.path(), KIMI_LOG, &kimi_log(records));
    let s = KimiSource::open(root.path()).unwrap();
    let SurfaceData::Conversation(c) = s.read_surface("kimi:session_s").unwrap() else { panic!() };
    items(&c.items)
}

fn kimi_user(text: &str, origin: Option<&str>) -> serde_json::Value {
    let mut message = serde_json::json!({"role": "user", "content": [{"type": "text", "text": text}]});
    if let Some(kind) = origin {
        message["origin"] = serde_json::json!({"kind": kind});
    }
    serde_json::json!({"type": "context.append_message", "message": message})
}

fn kimi_compaction(more: serde_json::Value) -> serde_json::Value {
    let mut r =
        serde_json::json!({"type": "context.apply_compaction", "summary": "S", "tokensBefore": 1, "tokensAfter": 1});
    r.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
    r
}

#[test]
fn kimi_compactions_keep_the_prompts_kimi_code_keeps() {
    use serde_json::json;
    // Over the budget: the oldest prompts within 2,000 estimated tokens (the
    // last one cut, keeping its beginning), the newest within the other
    // 18,000 (the oldest of them cut, keeping its end), then the summary.
    let (a, b, c, d) = ("a".repeat(4_000), "b".repeat(8_000), "c".repeat(60_000), "d".repeat(20_000));
    let got = kimi_items(&[
        kimi_user(&a, None),
        kimi_user(&b, Some("user")),
        kimi_user("injected", Some("injection")),
        kimi_user(&c, None),
        kimi_user(&d, None),
        kimi_compaction(json!({"compactedCount": 5, "keptUserMessageCount": 4, "keptHeadUserMessageCount": 2})),
    ]);
    let shape: Vec<(bool, usize, bool)> = got.iter().map(|(u, t, c)| (*u, t.len(), *c)).collect();
    assert_eq!(shape, [(U, 4_000, false), (U, 3_996, false), (U, 51_996, false), (U, 20_000, false), (U, 1, true)]);
    assert!(got[2].1.bytes().all(|b| b == b'c') && got[1].1.bytes().all(|x| x == b'b'));
    // Without a head (an older record): the newest within 20,000 tokens.
    let got = kimi_items(&[
        kimi_user(&a, None),
        kimi_user(&c, None),
        kimi_user(&d, None),
        kimi_compaction(json!({"compactedCount": 3, "keptUserMessageCount": 2})),
    ]);
    let shape: Vec<usize> = got.iter().map(|(_, t, _)| t.len()).collect();
    assert_eq!(shape, [59_996, 20_000, 1]);
    // From before the kept-prompt rule: the summary, then what came after
    // the compacted messages.
    let got = kimi_items(&[
        kimi_user("one", None),
        kimi_user("two", None),
        kimi_user("three", None),
        kimi_compaction(json!({"compactedCount": 2})),
    ]);
    assert_eq!(got, vec![cp("S"), m(U, "three")]);
}

#[test]
fn kimi_undo_and_clear_follow_kimi_code() {
    use serde_json::json;
    let step = |uuid: &str, text: &str| {
        [
            json!({"type": "context.append_loop_event", "event": {"type": "step.begin", "uuid": uuid}}),
            json!({"type": "context.append_loop_event", "event": {"type": "content.part", "stepUuid": uuid, "part": {"type": "text", "text": text}}}),
            json!({"type": "context.append_loop_event", "event": {"type": "step.end", "uuid": uuid}}),
        ]
    };
    // An undo of two prompts keeps an injection inside its window and
    // stops at a compaction's summary.
    let mut records =
        vec![kimi_user("kept", None), kimi_compaction(json!({"compactedCount": 0, "keptUserMessageCount": 1}))];
    records.push(kimi_user("one", None));
    records.extend(step("s1", "r1"));
    records.push(kimi_user("note", Some("injection")));
    records.push(kimi_user("two", None));
    records.extend(step("s2", "r2"));
    records.push(json!({"type": "context.undo", "count": 2}));
    records.extend(step("s3", "after"));
    assert_eq!(kimi_items(&records), vec![m(U, "kept"), cp("S"), m(A, "after")]);
    let records = vec![
        json!({"type": "context.undo", "count": 5}),
        kimi_user("a", None),
        json!({"type": "context.undo", "count": 5}),
    ];
    assert!(kimi_items(&records).is_empty());
    // A clear empties the context; a content part of a step already ended
    // or never begun adds nothing.
    let mut records = vec![kimi_user("gone", None), json!({"type": "context.clear"}), kimi_user("new", None)];
    records.extend(step("s", "answer"));
    records.push(json!({"type": "context.append_loop_event", "event": {"type": "content.part", "stepUuid": "s", "part": {"type": "text", "text": "late"}}}));
    assert_eq!(kimi_items(&records), vec![m(U, "new"), m(A, "answer")]);
}

#[test]
fn kimi_damage_is_reported_without_hiding_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let good = kimi_log(&[kimi_user("hi", None)]);
    write(root.path(), "wd/session_good/agents/main/wire.jsonl", &good);
    write(root.path(), "wd/session_nometa/agents/main/wire.jsonl", &format!("{}\n", kimi_user("hi", None)));
    write(root.path(), "wd/session_torn/agents/main/wire.jsonl", &good[..20]);
    write(root.path(), "wd/session_empty/agents/main/wire.jsonl", "");
    write(root.path(), "wd/session_good/agents/agent-1/wire.jsonl", &good);
    write(root.path(), "wd/other/agents/main/wire.jsonl", &good);
    write(root.path(), "wd/session_bad_state/agents/main/wire.jsonl", &good);
    write(root.path(), "wd/session_bad_state/state.json", "{\"title\": ");
    let s = KimiSource::open(root.path()).unwrap();
    let listing = s.list().unwrap();
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.header.id.as_str()).collect();
    assert_eq!(ids, ["kimi:session_bad_state", "kimi:session_good"]);
    let why: Vec<String> = listing.rejected.iter().map(|(p, why)| format!("{}: {why}", p.display())).collect();
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(
        why[0].contains("session_nometa")
            && why[0].contains("not a Kimi Code wire log: its first line is not a metadata record")
    );
    let main = |s: &str| root.path().join(format!("wd/{s}/agents/main/wire.jsonl"));
    assert_eq!(listing.without_conversation, vec![main("session_empty"), main("session_torn")]);
    let note = note_of(SourceSpec::new(SourceKind::Kimi, root.path()));
    assert!(note.contains(&format!("{} (not a Kimi Code wire log", main("session_nometa").display())), "{note}");
    // A damaged state.json gives no title or cwd, and hides nothing.
    assert_eq!(s.read_title("kimi:session_bad_state").unwrap().as_deref(), Some("hi"));
    // Found by its directory's name, without a listing.
    let fresh = KimiSource::open(root.path()).unwrap();
    assert_eq!(fresh.read_title("kimi:session_good").unwrap().as_deref(), Some("hi"));
}

#[test]
fn kimi_fingerprints_follow_the_log_and_its_state() {
    let root = tempfile::tempdir().unwrap();
    let log = kimi_log(&[kimi_user("one", None)]);
    write(root.path(), "sessions/wd/session_a/agents/main/wire.jsonl", &log);
    write(root.path(), "sessions/wd/session_b/agents/main/wire.jsonl", &log);
    write(root.path(), "sessions/wd/session_c/agents/main/wire.jsonl", &log);
    let s = KimiSource::open(root.path().join("sessions")).unwrap();
    let ids: Vec<String> = ["a", "b", "c"].iter().map(|x| format!("kimi:session_{x}")).collect();
    s.list().unwrap();
    let before = s.fingerprints(&ids).unwrap().unwrap();
    write(root.path(), "sessions/wd/session_b/agents/main/wire.jsonl", &format!("{log}{}\n", kimi_user("two", None)));
    write(root.path(), "sessions/wd/session_c/state.json", "{\"title\": \"Named\"}");
    let after = s.fingerprints(&ids).unwrap().unwrap();
    assert_eq!(before[0], after[0], "an unchanged session keeps its fingerprint");
    assert_ne!(before[1], after[1], "a changed log changes it");
    assert_ne!(before[2], after[2], "a changed state.json changes it");
    assert_eq!(s.read_title("kimi:session_c").unwrap().as_deref(), Some("Named"));
    let resolved = SourceSpec::new(SourceKind::Kimi, root.path()).resolve().unwrap();
    assert_eq!(resolved.spec.root, root.path().join("sessions"));
}

// ----------------------------------------------------------------- Grok Build

fn grok_fixture() -> PathBuf {
    fixtures().join("grok/synthetic/sessions")
}

#[test]
fn grok_fixtures_project_exactly() {
    let s = GrokSource::open(grok_fixture()).unwrap();
    check(
        &s,
        &[
            Pinned {
                id: "grok:019f6000-0000-7000-8000-000000000001",
                created_at: 1_785_578_400_000,
                listed_cwd: Some("/home/u/proj"),
                cwd: Some("/home/u/proj"),
                title: Some("Parser refactor"),
                seq: 16,
                items: vec![
                    m(U, "Refactor the parser"),
                    m(A, "It has two halves."),
                    cp("The parser was split in two halves."),
                    m(A, "Continuing: both halves compile."),
                    m(U, "Now add tests"),
                    m(U, "and run them"),
                    m(A, "Tests added and run."),
                ],
            },
            Pinned {
                id: "grok:019f6000-0000-7000-8000-000000000002",
                created_at: 1_782_896_400_000,
                listed_cwd: Some("/home/u/other"),
                cwd: Some("/home/u/other"),
                title: Some("What is the plan?"),
                seq: 6,
                items: vec![m(U, "What is   the\nplan?"), m(A, "Plan A."), m(U, "Go with B instead"), m(A, "Doing B.")],
            },
        ],
    );
    assert_eq!(grok::PREFIX, SourceKind::Grok.prefix());
}

#[test]
fn grok_damage_is_reported_without_hiding_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let history = "{\"type\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"hi\"}]}\n";
    write(root.path(), "cwd/good/chat_history.jsonl", history);
    write(root.path(), "cwd/good/updates.jsonl", "{}\n");
    write(root.path(), "cwd/only-updates/updates.jsonl", "{}\n");
    write(root.path(), "cwd/fresh/updates.jsonl", "");
    write(root.path(), "cwd/empty/chat_history.jsonl", "");
    write(root.path(), "cwd/torn/chat_history.jsonl", &history[..20]);
    write(root.path(), "cwd/bad-summary/chat_history.jsonl", history);
    write(root.path(), "cwd/bad-summary/summary.json", "{\"generated_title\": 5, \"info\": []}");
    write(root.path(), "cwd/good/subagents/s1/chat_history.jsonl", history);
    let s = GrokSource::open(root.path()).unwrap();
    let listing = s.list().unwrap();
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.header.id.as_str()).collect();
    // Each dated by its file (no summary.json says when): the order is the
    // files' own.
    let mut got = ids.clone();
    got.sort();
    assert_eq!(got, ["grok:bad-summary", "grok:good", "grok:torn"], "{ids:?}");
    let why: Vec<String> = listing.rejected.iter().map(|(p, why)| format!("{}: {why}", p.display())).collect();
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(why[0].contains("only-updates") && why[0].contains("the session has no chat_history.jsonl"), "{why:?}");
    let at = |rel: &str| root.path().join(rel);
    assert_eq!(listing.without_conversation, vec![at("cwd/empty/chat_history.jsonl"), at("cwd/fresh/updates.jsonl")]);
    // A torn last line is not read; a summary.json of odd shapes gives nothing.
    let SurfaceData::Conversation(c) = s.read_surface("grok:torn").unwrap() else { panic!() };
    assert!(c.items.is_empty() && c.captured_through_seq.is_none());
    assert_eq!(s.read_title("grok:bad-summary").unwrap().as_deref(), Some("hi"));
    let note = note_of(SourceSpec::new(SourceKind::Grok, root.path()));
    assert!(
        note.contains(&format!(
            "{} (the session has no chat_history.jsonl",
            at("cwd/only-updates/updates.jsonl").display()
        )),
        "{note}"
    );
    // Found by its directory's name, without a listing.
    let fresh = GrokSource::open(root.path()).unwrap();
    assert_eq!(fresh.read_title("grok:good").unwrap().as_deref(), Some("hi"));
}

#[test]
fn grok_fingerprints_follow_the_history_and_its_summary() {
    let root = tempfile::tempdir().unwrap();
    let history = "{\"role\": \"user\", \"content\": \"one\"}\n";
    for id in ["a", "b", "c"] {
        write(root.path(), &format!("sessions/cwd/{id}/chat_history.jsonl"), history);
    }
    let s = GrokSource::open(root.path().join("sessions")).unwrap();
    let ids: Vec<String> = ["a", "b", "c"].iter().map(|x| format!("grok:{x}")).collect();
    s.list().unwrap();
    let before = s.fingerprints(&ids).unwrap().unwrap();
    write(
        root.path(),
        "sessions/cwd/b/chat_history.jsonl",
        &format!("{history}{{\"role\": \"assistant\", \"content\": \"two\"}}\n"),
    );
    write(root.path(), "sessions/cwd/c/summary.json", "{\"generated_title\": \"Renamed\"}");
    let after = s.fingerprints(&ids).unwrap().unwrap();
    assert_eq!(before[0], after[0], "an unchanged session keeps its fingerprint");
    assert_ne!(before[1], after[1], "a rewritten history changes it");
    assert_ne!(before[2], after[2], "a changed summary.json changes it");
    assert_eq!(s.read_title("grok:c").unwrap().as_deref(), Some("Renamed"));
    let resolved = SourceSpec::new(SourceKind::Grok, root.path()).resolve().unwrap();
    assert_eq!(resolved.spec.root, root.path().join("sessions"));
}

// ------------------------------------------------------------ the four at once

#[test]
fn one_view_lists_the_four_kinds_newest_first_and_routes_reads_by_prefix() {
    let specs = [
        SourceSpec::new(SourceKind::QwenCode, qwen_fixture()),
        SourceSpec::new(SourceKind::Continue, continue_fixture()),
        SourceSpec::new(SourceKind::Kimi, kimi_fixture()),
        SourceSpec::new(SourceKind::Grok, grok_fixture()),
    ];
    let multi = open_sources(&specs).unwrap();
    let listed = block_on(multi.list_sessions()).unwrap();
    assert_eq!(listed.len(), 8);
    let times: Vec<u64> = listed.iter().map(|h| h.created_at.as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    for (kind, id, title) in [
        ("qwen-code:", "qwen-code:bbbb2222-0000-4000-8000-000000000002", "What is the plan?"),
        ("continue:", "continue:cccc3333-0000-4000-8000-000000000003", "Login bug fix"),
        ("kimi:", "kimi:session_aaaa1111-0000-4000-8000-000000000001", "Parser refactor"),
        ("grok:", "grok:019f6000-0000-7000-8000-000000000002", "What is the plan?"),
    ] {
        assert_eq!(listed.iter().filter(|h| h.id.starts_with(kind)).count(), 2, "{kind}");
        assert_eq!(block_on(multi.read_title(id)).unwrap().as_deref(), Some(title), "{id}");
        assert!(matches!(block_on(multi.read_surface(id)).unwrap(), SurfaceData::Conversation(_)), "{id}");
    }
    let report = multi.last_report();
    assert!(
        report.iter().all(|s| s.note.is_none()),
        "nothing skipped: {:?}",
        report.iter().map(|s| &s.note).collect::<Vec<_>>()
    );
}

/// A listing of Kimi Code's or Grok Build's sessions reads the directories
/// above the sessions' and none inside one (a session's files are at fixed
/// places in its directory, looked up by name): as many directories for
/// twice the sessions, and every session still listed.
#[test]
fn kimi_and_grok_listings_read_no_directory_inside_a_session() {
    use dsh_session_reference::work::dirs_read;
    type Open = fn(&std::path::Path) -> Vec<String>;
    type Name = fn(usize) -> String;
    let kinds: [(PathBuf, &str, Name, Open); 2] = [
        (
            kimi_fixture().join("wd_home-u-other_4d5e6f/session_bbbb2222-0000-4000-8000-000000000002"),
            "wd_work_1a2b3c",
            |i| format!("session_{i:08x}-0000-4000-8000-000000000000"),
            |root| KimiSource::open(root).unwrap().list_sessions().unwrap().into_iter().map(|h| h.id).collect(),
        ),
        (
            grok_fixture().join("%2Fhome%2Fu%2Fother/019f6000-0000-7000-8000-000000000002"),
            "%2Fwork",
            |i| format!("019f6000-0000-7000-8000-{i:012x}"),
            |root| GrokSource::open(root).unwrap().list_sessions().unwrap().into_iter().map(|h| h.id).collect(),
        ),
    ];
    for (session, bucket, name, list) in kinds {
        for n in [4, 8] {
            let tmp = tempfile::tempdir().unwrap();
            for i in 0..n {
                common::copy_dir(&session, &tmp.path().join(bucket).join(name(i)));
            }
            let before = dirs_read();
            let listed = list(tmp.path());
            let read = dirs_read() - before;
            let mut want: Vec<String> = (0..n).map(name).collect();
            let mut got: Vec<String> = listed.iter().map(|id| id.split_once(':').unwrap().1.to_owned()).collect();
            want.sort();
            got.sort();
            assert_eq!(got, want, "{bucket}");
            assert_eq!(read, 2, "{bucket}: the root and its one directory of sessions, with {n} sessions");
        }
    }
}
