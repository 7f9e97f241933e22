//! Pre-projected conversations (docs/contract.md §9.4): a host's snapshot
//! with `conversation` instead of `events`, `SurfaceData::Conversation`, and
//! the builders from OpenAI- and Anthropic-style messages. They go through
//! the same retention and rendering as DSH surfaces, byte for byte.

use std::sync::Arc;

use dsh_session_reference::conversation::{from_anthropic_messages, from_openai_messages};
use dsh_session_reference::projection::Role;
use dsh_session_reference::prompt::{PROMPT_FOOTER, PROMPT_HEADER};
use dsh_session_reference::{
    block_on, Config, Conversation, ConversationItem, ErrorCode, MemoryQuery, PrepareOptions, Resolver, SessionHeader,
    SurfaceData, Target,
};
use serde_json::{json, Value};

fn resolver_with(surface: SurfaceData, max_bytes: Option<u64>) -> Resolver {
    let q = MemoryQuery::new();
    q.add_session(SessionHeader::new("src", 1u64, Some("/w".into())));
    q.set_surface("src", surface);
    Resolver::new(Arc::new(q), Config::new(None, None, max_bytes).unwrap())
}

fn prompt_of(surface: SurfaceData, max_bytes: Option<u64>) -> Result<(String, Value), ErrorCode> {
    let r = resolver_with(surface, max_bytes);
    let p = block_on(r.prepare(
        &Target::new("t", None),
        &json!("go"),
        &[json!({"sessionId": "src", "label": "L"})],
        &PrepareOptions::default(),
        None,
    ))
    .map_err(|e| e.code())?;
    let ctx = p.additional_context.unwrap();
    let meta = ctx.source.references[0].to_json();
    Ok((ctx.prompt, meta))
}

/// The DSH events snapshot with the same visible content as `conversation()`.
fn events_snapshot() -> Value {
    json!({
        "session": {"id": "src", "createdAt": 1, "cwd": "/w"},
        "capturedThroughSeq": 7,
        "events": [
            {"seq": 0, "type": "user/message", "data": {"role": "user", "content": [{"type": "text", "text": "old summary"}],
                "source": {"kind": "plugin", "plugin": "compact"}}},
            {"seq": 1, "type": "user/message", "data": {"role": "user",
                "content": [{"type": "text", "text": "Use <tabs> or \"spaces\"?"}], "source": {"kind": "user"}}},
            {"seq": 2, "type": "tool/result", "data": {"content": "ignored"}},
            {"seq": 3, "type": "assistant/message", "data": {"message": {"role": "assistant",
                "content": [{"type": "text", "text": "Spaces.\u{2028}Always."}]}}}
        ]
    })
}

fn conversation() -> Conversation {
    Conversation {
        session_id: "src".into(),
        cwd: Some("/w".into()),
        captured_through_seq: Some(7u64.into()),
        items: vec![
            ConversationItem::checkpoint("old summary"),
            ConversationItem::new(Role::User, "Use <tabs> or \"spaces\"?"),
            ConversationItem::new(Role::Assistant, ""),
            ConversationItem::new(Role::Assistant, "Spaces.\u{2028}Always."),
        ],
    }
}

#[test]
fn a_conversation_renders_exactly_like_the_same_dsh_surface() {
    let expected_body =
        "[{\"sessionId\":\"src\",\"label\":\"L\",\"cwd\":\"/w\",\"capturedThroughSeq\":7,\"conversation\":[\
        {\"role\":\"user\",\"text\":\"old summary\"},\
        {\"role\":\"user\",\"text\":\"Use \\u003ctabs> or \\\"spaces\\\"?\"},\
        {\"role\":\"assistant\",\"text\":\"Spaces.\u{2028}Always.\"}]}]";
    let expected = format!("{PROMPT_HEADER}{expected_body}{PROMPT_FOOTER}");
    let (dsh, dsh_meta) = prompt_of(SurfaceData::from(events_snapshot()), None).unwrap();
    assert_eq!(dsh, expected, "the DSH surface, hand-computed");
    let snapshot = conversation().to_snapshot_json();
    for surface in [
        SurfaceData::from(conversation()),
        SurfaceData::from(snapshot.clone()),
        SurfaceData::from(dsh_session_reference::json::stringify(&snapshot)),
    ] {
        let (prompt, meta) = prompt_of(surface, None).unwrap();
        assert_eq!(prompt, expected);
        assert_eq!(meta, dsh_meta);
        assert_eq!(meta["compacted"], true);
        assert_eq!(meta["originalMessages"], 3, "the empty item is not a message");
    }
}

#[test]
fn retention_keeps_a_conversations_checkpoints_as_it_keeps_dsh_ones() {
    let mut c = conversation();
    for i in 0..50 {
        c.items.push(ConversationItem::new(if i % 2 == 0 { Role::User } else { Role::Assistant }, "x".repeat(300)));
    }
    let mut events = events_snapshot();
    let list = events["events"].as_array_mut().unwrap();
    for (i, item) in c.items[4..].iter().enumerate() {
        let seq = 4 + i;
        list.push(if item.role == Role::User {
            json!({"seq": seq, "type": "user/message", "data": {"role": "user",
                "content": [{"type": "text", "text": item.text}], "source": {"kind": "user"}}})
        } else {
            json!({"seq": seq, "type": "assistant/message", "data": {"message": {"role": "assistant",
                "content": [{"type": "text", "text": item.text}]}}})
        });
    }
    let budget = Some(4_000);
    let (dsh, dsh_meta) = prompt_of(SurfaceData::from(events), budget).unwrap();
    let (ours, meta) = prompt_of(SurfaceData::from(c.clone()), budget).unwrap();
    assert_eq!(ours, dsh);
    assert_eq!(meta, dsh_meta);
    assert_eq!(meta["truncated"], true);
    assert!(ours.contains("old summary"), "the checkpoint is kept");
    let (from_json, _) = prompt_of(SurfaceData::from(c.to_snapshot_json()), budget).unwrap();
    assert_eq!(from_json, dsh);
}

#[test]
fn malformed_conversations_are_read_failures() {
    let base = |conversation: Value| json!({"session": {"id": "src", "cwd": null}, "capturedThroughSeq": null, "conversation": conversation});
    let cases = [
        base(json!({"role": "user"})),
        base(json!([{"role": "system", "text": "x"}])),
        base(json!([{"role": "user", "text": 5}])),
        base(json!([{"text": "no role"}])),
        base(json!([{"role": "user"}])),
        base(json!([{"role": "user", "text": "x", "checkpoint": "yes"}])),
        base(json!(["plain"])),
        json!({"session": {"id": "src"}, "capturedThroughSeq": 1, "events": [], "conversation": []}),
    ];
    for case in cases {
        assert_eq!(prompt_of(SurfaceData::from(case.clone()), None).unwrap_err(), ErrorCode::ReadFailed, "{case}");
    }
    // A role given twice counts with its last value, as with events.
    let twice = base(json!([{"role": "system", "role": "user", "text": "ok"}]));
    let text =
        serde_json::to_string(&twice).unwrap().replace("\"role\":\"user\"", "\"role\":\"system\",\"role\":\"user\"");
    assert!(prompt_of(SurfaceData::from(text), None).is_ok());
}

#[test]
fn message_builders_feed_the_same_rendering() {
    let openai = json!([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "Use <tabs> or \"spaces\"?"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Spaces.\u{2028}Always."}],
         "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": "ignored"}
    ]);
    let anthropic = json!([
        {"role": "user", "content": [{"type": "text", "text": "Use <tabs> or \"spaces\"?"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"},
                                          {"type": "text", "text": "Spaces.\u{2028}Always."}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "ignored"}]}
    ]);
    let mut want = conversation();
    want.items.remove(0);
    want.items.remove(1);
    for items in [from_openai_messages(&openai).unwrap(), from_anthropic_messages(&anthropic).unwrap()] {
        let got = Conversation { items, ..want.clone() };
        assert_eq!(got, want);
        let (a, _) = prompt_of(SurfaceData::from(got.to_snapshot_json()), None).unwrap();
        let (b, _) = prompt_of(SurfaceData::from(want.clone()), None).unwrap();
        assert_eq!(a, b);
    }
}

#[test]
fn snapshot_requests_build_what_the_resolver_reads() {
    use dsh_session_reference::conversation::snapshot_from_request;
    let request = json!({"format": "anthropic", "sessionId": "src", "cwd": "/w", "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
        {"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]});
    let snapshot = snapshot_from_request(&request).unwrap();
    assert_eq!(
        snapshot,
        json!({"session": {"id": "src", "cwd": "/w"}, "capturedThroughSeq": 2, "conversation": [
            {"role": "user", "text": "hi"}, {"role": "assistant", "text": "yo"}]})
    );
    let mut explicit = request.clone();
    explicit["capturedThroughSeq"] = json!(41);
    explicit["format"] = json!("openai");
    assert_eq!(snapshot_from_request(&explicit).unwrap()["capturedThroughSeq"], 41);
    let empty = json!({"format": "openai", "sessionId": "e", "messages": []});
    assert_eq!(snapshot_from_request(&empty).unwrap()["capturedThroughSeq"], Value::Null);
    for (bad, needle) in [
        (json!({"format": "gemini", "sessionId": "s", "messages": []}), "unknown message format"),
        (json!({"sessionId": "s", "messages": []}), "format"),
        (json!({"format": "openai", "messages": []}), "sessionId"),
        (json!({"format": "openai", "sessionId": "s"}), "messages"),
        (json!({"format": "openai", "sessionId": "s", "messages": [], "capturedThroughSeq": -1}), "capturedThroughSeq"),
        (json!({"format": "openai", "sessionId": "s", "messages": [], "cwd": 3}), "cwd"),
        (json!([]), "object"),
    ] {
        let err = snapshot_from_request(&bad).unwrap_err();
        assert!(err.contains(needle), "{bad}: {err}");
    }
}
