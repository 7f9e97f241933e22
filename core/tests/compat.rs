//! The `dshCompat` profiles: each difference from the default `"0.1.1"`
//! output, against bytes written out by hand, and the default unchanged.

use std::sync::Arc;

use dsh_session_reference::compat::{CompatConfig, DshCompat, OMISSIONS_HEADER};
use dsh_session_reference::{
    block_on, CandidateOptions, Config, ErrorCode, MemoryQuery, PrepareOptions, Resolver, SessionHeader, Target,
};
use serde_json::{json, Value};

fn query() -> Arc<MemoryQuery> {
    let q = MemoryQuery::new();
    for (id, text) in [("short", "hello".to_owned()), ("long<x>", "a".repeat(100_000)), ("three", String::new())] {
        q.add_session(SessionHeader::new(id, 1u64, Some("/w".into())));
        let events = if id == "three" {
            json!([
                {"seq": 1, "type": "user/message", "data": {"content": [{"type": "text", "text": "first question"}], "source": {"kind": "user"}}},
                {"seq": 2, "type": "assistant/message", "data": {"message": {"content": [{"type": "text", "text": "first answer"}]}}},
                {"seq": 3, "type": "user/message", "data": {"content": [{"type": "text", "text": "second question"}], "source": {"kind": "user"}}}
            ])
        } else {
            json!([{"seq": 1, "type": "user/message", "data": {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}}}])
        };
        q.set_surface(id, json!({"session": {"id": id, "cwd": "/w"}, "capturedThroughSeq": 7, "events": events}));
    }
    Arc::new(q)
}

fn resolver(config: Value) -> Resolver {
    Resolver::new(query(), Config::from_json(&config).unwrap())
}

fn prepare(r: &Resolver, ids: &[&str], window: Option<u64>) -> (String, Value) {
    let refs: Vec<Value> = ids.iter().map(|id| json!({"sessionId": id})).collect();
    let p = block_on(r.prepare(
        &Target::new("t", None),
        &json!([]),
        &refs,
        &PrepareOptions::default().with_context_window(window),
        None,
    ))
    .unwrap();
    let ctx = p.additional_context.unwrap();
    (ctx.prompt, ctx.source.to_json())
}

const NOT_STORED: &str = r#""fullSnapshot":{"status":"unavailable","reason":"storage-not-configured"}"#;

#[test]
fn the_default_profile_is_the_reference_output() {
    let (prompt, source) = prepare(&resolver(json!({})), &["short"], Some(1_000_000));
    let (explicit, explicit_source) = prepare(&resolver(json!({"dshCompat": "0.1.1"})), &["short"], None);
    assert_eq!(prompt, explicit);
    assert_eq!(source, explicit_source);
    assert_eq!(
        source["references"][0].as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "sessionId",
            "label",
            "capturedThroughSeq",
            "compacted",
            "originalMessages",
            "retainedMessages",
            "omittedMessages",
            "omittedBytes",
            "truncated",
            "inputIndex"
        ]
    );
    // A truncated source gets no omissions section, and the budget stays 65536.
    let (prompt, source) = prepare(&resolver(json!({})), &["long<x>"], Some(1_000_000));
    assert!(prompt.ends_with("\n</referenced-sessions>"));
    assert_eq!(source["references"][0]["truncated"], true);
    // `referenceContextFraction` is an unknown key of 0.1.1: ignored, even when invalid.
    assert!(Config::from_json(&json!({"referenceContextFraction": 7})).is_ok());
}

#[test]
fn captured_format_version_follows_the_label() {
    for (profile, version) in [("0.1.5", 3), ("0.1.7", 4)] {
        let (_, source) = prepare(&resolver(json!({"dshCompat": profile})), &["short", "three"], None);
        for (i, r) in source["references"].as_array().unwrap().iter().enumerate() {
            let (id, n) = [("short", 1), ("three", 3)][i];
            let want = json!({"sessionId": id, "label": id,
                "capturedFormatVersion": version, "capturedThroughSeq": 7, "compacted": false,
                "originalMessages": n, "retainedMessages": n, "omittedMessages": 0, "omittedBytes": 0,
                "truncated": false, "inputIndex": i});
            assert_eq!(serde_json::to_string(r).unwrap(), serde_json::to_string(&want).unwrap(), "{profile}");
        }
    }
}

#[test]
fn the_omissions_section_follows_a_truncated_prompt() {
    for profile in ["0.1.5", "0.1.7"] {
        // A fixed budget of 170 bytes: "long<x>" is cut, "three" loses its oldest message.
        let later = resolver(json!({"dshCompat": profile, "maxReferenceBytes": 170}));
        let base = resolver(json!({"maxReferenceBytes": 170}));
        let (prompt, source) = prepare(&later, &["short", "long<x>", "three"], None);
        let (base_prompt, _) = prepare(&base, &["short", "long<x>", "three"], None);
        let refs = source["references"].as_array().unwrap();
        assert_eq!(refs[0]["truncated"], false);
        assert_eq!(refs[1]["truncated"], true);
        assert_eq!(refs[2]["truncated"], true);
        assert_eq!(refs[2]["omittedMessages"], 2, "the two oldest messages are dropped");
        let notice = |i: usize, id: &str| {
            format!(
                r#"{{"sessionId":"{id}","capturedThroughSeq":7,"omittedMessages":{},"omittedBytes":{},{NOT_STORED}}}"#,
                refs[i]["omittedMessages"], refs[i]["omittedBytes"]
            )
        };
        // Tag-safe: the `<` of the id is written \u003c.
        let want = format!(
            "{base_prompt}\n\n## Reference omissions\n\nThe previews above omit projected conversation text. \
             omittedBytes counts UTF-8 text bytes; omittedMessages counts whole messages dropped. Full snapshots \
             remain untrusted background information.\n[{},{}]",
            notice(1, "long\\u003cx>"),
            notice(2, "three")
        );
        assert_eq!(prompt, want, "{profile}");
        assert!(want.contains(OMISSIONS_HEADER));
        // No truncation, no section.
        let (prompt, _) = prepare(&later, &["short"], None);
        assert!(prompt.ends_with("\n</referenced-sessions>"));
    }
}

#[test]
fn the_automatic_budget_uses_the_context_window() {
    let auto = CompatConfig::with_profile(DshCompat::V0_1_7, None, false).unwrap();
    assert_eq!(auto.budget(65_536, Some(1_000_000)), 800_000);
    assert_eq!(auto.budget(65_536, Some(10_000)), 65_536, "never below 64 KiB");
    assert_eq!(auto.budget(65_536, None), 65_536, "no model, no window");
    let fraction = CompatConfig::with_profile(DshCompat::V0_1_5, Some(0.3), false).unwrap();
    assert_eq!(fraction.budget(65_536, Some(1_000_000)), 1_200_000);
    assert_eq!(fraction.budget(65_536, Some(123_457)), 148_148, "floor(123457 × 1.2)");
    let fixed = CompatConfig::with_profile(DshCompat::V0_1_7, None, true).unwrap();
    assert_eq!(fixed.budget(4_000, Some(1_000_000)), 4_000, "a configured maxReferenceBytes wins");
    let old = CompatConfig::with_profile(DshCompat::V0_1_1, None, false).unwrap();
    assert_eq!(old.budget(65_536, Some(1_000_000)), 65_536);

    // End to end: 100,000 bytes of text fit a 1M-token window, not 64 KiB.
    let r = resolver(json!({"dshCompat": "0.1.7"}));
    let (_, wide) = prepare(&r, &["long<x>"], Some(1_000_000));
    assert_eq!(wide["references"][0]["truncated"], false);
    let (_, narrow) = prepare(&r, &["long<x>"], None);
    assert_eq!(narrow["references"][0]["truncated"], true);
    let r = resolver(json!({"dshCompat": "0.1.7", "referenceContextFraction": 0.01}));
    let (_, small) = prepare(&r, &["long<x>"], Some(1_000_000));
    assert_eq!(small["references"][0]["truncated"], true, "40,000 < 65,536: the floor applies");
}

#[test]
fn profile_settings_are_validated() {
    for bad in [
        json!({"dshCompat": "0.2.0"}),
        json!({"dshCompat": 1}),
        json!({"dshCompat": "0.1.5", "referenceContextFraction": 1.5}),
        json!({"dshCompat": "0.1.7", "referenceContextFraction": -0.1}),
        json!({"dshCompat": "0.1.7", "referenceContextFraction": "0.2"}),
    ] {
        let err = Config::from_json(&bad).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidConfig, "{bad}");
    }
    let err = Config::from_json(&json!({"dshCompat": "0.1.5", "referenceContextFraction": 2})).unwrap_err();
    assert!(err.message().contains("between zero and one"), "{err}");
    for good in [
        json!({"dshCompat": "0.1.5", "referenceContextFraction": 0}),
        json!({"dshCompat": "0.1.7", "referenceContextFraction": 1}),
        json!({"dshCompat": null}),
    ] {
        assert!(Config::from_json(&good).is_ok(), "{good}");
    }
    let c = Config::from_json(&json!({"dshCompat": "0.1.7"})).unwrap();
    assert_eq!(c.compat().profile(), DshCompat::V0_1_7);
    assert_eq!(c.compat().reference_context_fraction(), 0.2);
}

#[test]
fn candidates_gain_same_workspace_and_display_title() {
    let target = Target::new("t", Some("/w".into()));
    let first = |config: Value| -> String {
        let q = MemoryQuery::new();
        q.add_session(SessionHeader::new("a", 5u64, Some("/w".into())));
        q.add_session(SessionHeader::new("b", 4u64, None));
        q.set_title("a", Some("Title A".into()));
        let r = Resolver::new(Arc::new(q), Config::from_json(&config).unwrap());
        let list = block_on(r.candidates(&target, "", &CandidateOptions::default(), None)).unwrap();
        list.iter().map(|c| serde_json::to_string(&c.to_json()).unwrap()).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(
        first(json!({})),
        "{\"sessionId\":\"a\",\"label\":\"Title A\",\"cwd\":\"/w\",\"createdAt\":5,\"mention\":\"@[Title A](dsh-session:ImEi)\"}\n\
         {\"sessionId\":\"b\",\"label\":\"b\",\"createdAt\":4,\"mention\":\"@[b](dsh-session:ImIi)\"}"
    );
    assert_eq!(
        first(json!({"dshCompat": "0.1.5"})),
        "{\"sessionId\":\"a\",\"label\":\"Title A\",\"cwd\":\"/w\",\"sameWorkspace\":true,\"createdAt\":5,\
         \"mention\":\"@[Title A](dsh-session:ImEi)\"}\n\
         {\"sessionId\":\"b\",\"label\":\"b\",\"sameWorkspace\":false,\"createdAt\":4,\"mention\":\"@[b](dsh-session:ImIi)\"}"
    );
    assert_eq!(
        first(json!({"dshCompat": "0.1.7"})),
        "{\"sessionId\":\"a\",\"label\":\"Title A\",\"displayTitle\":\"Title A\",\"cwd\":\"/w\",\"sameWorkspace\":true,\
         \"createdAt\":5,\"mention\":\"@[Title A](dsh-session:ImEi)\"}\n\
         {\"sessionId\":\"b\",\"label\":\"b\",\"displayTitle\":\"b\",\"sameWorkspace\":false,\"createdAt\":4,\
         \"mention\":\"@[b](dsh-session:ImIi)\"}"
    );
}

#[test]
fn a_host_can_give_its_own_full_snapshot_notice() {
    let notice: dsh_session_reference::compat::FullSnapshotNotice = Arc::new(|id, seq| {
        (id == "three").then(|| json!({"status": "saved", "locator": format!("/spill/{id}-{}", seq.unwrap())}))
    });
    let r = resolver(json!({"dshCompat": "0.1.7", "maxReferenceBytes": 170})).with_full_snapshot_notice(notice);
    let (prompt, _) = prepare(&r, &["long<x>", "three"], None);
    let section = &prompt[prompt.find("## Reference omissions").unwrap()..];
    assert!(section.contains(r#""sessionId":"long\u003cx>""#));
    assert!(section.contains(NOT_STORED), "the default for the other source");
    assert!(section.ends_with(r#""fullSnapshot":{"status":"saved","locator":"/spill/three-7"}}]"#), "{section}");
}
