//! Excerpts in a reference (docs/contract.md §6.10): `range` and `around`
//! carry a run of a session's messages under the same budget rules, and
//! say which run in the source object and the metadata. Without them every
//! byte is the reference's (the conformance vectors check that too).

use std::sync::Arc;

use dsh_session_reference::{
    block_on, normalize_references, Config, ErrorCode, Excerpt, MemoryQuery, PrepareOptions, Reference, Resolver,
    Target, PROMPT_FOOTER, PROMPT_HEADER,
};
use serde_json::{json, Value};

const ID: &str = "src";

fn surface(id: &str, texts: &[&str]) -> Value {
    let events: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let content = json!([{"type": "text", "text": t}]);
            if i % 2 == 0 {
                json!({"seq": i, "type": "user/message", "data": {"content": content, "source": {"kind": "user"}}})
            } else {
                json!({"seq": i, "type": "assistant/message", "data": {"message": {"content": content}}})
            }
        })
        .collect();
    json!({"session": {"id": id, "cwd": "/w"}, "capturedThroughSeq": 9, "events": events})
}

fn resolver(texts: &[&str], config: Value) -> Resolver {
    let q = MemoryQuery::new();
    q.set_surface(ID, surface(ID, texts));
    q.set_surface("other", surface("other", &["o0", "o1"]));
    Resolver::new(Arc::new(q), Config::from_json(&config).unwrap())
}

/// The prompt's sources and the metadata of every reference.
fn prepare(r: &Resolver, references: Value) -> Result<(String, Vec<Value>), ErrorCode> {
    let refs = references.as_array().unwrap().clone();
    let p = block_on(r.prepare(&Target::new("t", None), &json!("go"), &refs, &PrepareOptions::default(), None))
        .map_err(|e| e.code())?;
    let ctx = p.additional_context.unwrap();
    let body = ctx.prompt.strip_prefix(PROMPT_HEADER).unwrap().strip_suffix(PROMPT_FOOTER).unwrap().to_owned();
    Ok((body, ctx.source.references.iter().map(|r| r.to_json()).collect()))
}

const TEXTS: [&str; 6] = ["m0", "m1 <b>", "m2", "m3", "m4", "m5"];

#[test]
fn without_an_excerpt_every_byte_is_the_whole_sessions() {
    let r = resolver(&TEXTS, json!(null));
    let whole = prepare(&r, json!([{"sessionId": ID}])).unwrap();
    assert_eq!(prepare(&r, json!([{"sessionId": ID, "range": null, "around": null}])).unwrap(), whole);
    assert!(!whole.0.contains("\"range\"") && whole.1[0].get("range").is_none() && whole.1[0].get("around").is_none());
    assert_eq!(
        whole.0,
        "[{\"sessionId\":\"src\",\"label\":\"src\",\"cwd\":\"/w\",\"capturedThroughSeq\":9,\"conversation\":[\
         {\"role\":\"user\",\"text\":\"m0\"},{\"role\":\"assistant\",\"text\":\"m1 \\u003cb>\"},{\"role\":\"user\",\"text\":\"m2\"},\
         {\"role\":\"assistant\",\"text\":\"m3\"},{\"role\":\"user\",\"text\":\"m4\"},{\"role\":\"assistant\",\"text\":\"m5\"}]}]"
    );
}

#[test]
fn a_range_carries_that_run_and_says_so() {
    let r = resolver(&TEXTS, json!(null));
    let (body, meta) = prepare(&r, json!([{"sessionId": ID, "label": "L", "range": {"start": 1, "end": 3}}])).unwrap();
    assert_eq!(
        body,
        "[{\"sessionId\":\"src\",\"label\":\"L\",\"cwd\":\"/w\",\"capturedThroughSeq\":9,\"range\":{\"start\":1,\"end\":3},\
         \"conversation\":[{\"role\":\"assistant\",\"text\":\"m1 \\u003cb>\"},{\"role\":\"user\",\"text\":\"m2\"}]}]"
    );
    assert_eq!(
        meta[0],
        json!({"sessionId": ID, "label": "L", "capturedThroughSeq": 9, "compacted": false, "originalMessages": 2,
            "retainedMessages": 2, "omittedMessages": 0, "omittedBytes": 0, "truncated": false, "inputIndex": 0,
            "range": {"start": 1, "end": 3}})
    );
    // Open-ended, and clamped to the conversation.
    let (body, meta) = prepare(&r, json!([{"sessionId": ID, "range": {"start": 4}}])).unwrap();
    assert!(body.contains("\"range\":{\"start\":4,\"end\":6},\"conversation\":[{\"role\":\"user\",\"text\":\"m4\"},"));
    assert_eq!(meta[0]["range"], json!({"start": 4, "end": 6}));
    let (_, meta) = prepare(&r, json!([{"sessionId": ID, "range": {"start": 5, "end": 100}}])).unwrap();
    assert_eq!(
        (meta[0]["range"].clone(), meta[0]["originalMessages"].clone()),
        (json!({"start": 5, "end": 6}), json!(1))
    );
    // Past the end: an empty run at the end.
    let (body, meta) = prepare(&r, json!([{"sessionId": ID, "range": {"start": 9, "end": 12}}])).unwrap();
    assert!(body.ends_with("\"range\":{\"start\":6,\"end\":6},\"conversation\":[]}]"), "{body}");
    assert_eq!(meta[0]["originalMessages"], 0);
}

#[test]
fn a_range_keeps_the_newest_of_its_run_under_the_budget_as_a_session_does() {
    let texts: Vec<String> = (0..10).map(|i| format!("message {i} {}", "z".repeat(80))).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let r = resolver(&texts, json!({"maxReferenceBytes": 400}));
    let (body, meta) = prepare(&r, json!([{"sessionId": ID, "range": {"start": 2, "end": 8}}])).unwrap();
    assert!(body.len() <= 400 + 2);
    let m = &meta[0];
    assert_eq!(m["range"], json!({"start": 2, "end": 8}));
    assert_eq!(m["originalMessages"], 6);
    let retained = m["retainedMessages"].as_u64().unwrap();
    assert!((1..6).contains(&retained), "{m}");
    assert_eq!(m["omittedMessages"].as_u64().unwrap() + retained, 6);
    assert!(body.contains("message 7") && !body.contains("message 8") && !body.contains("message 2 "), "{body}");
}

#[test]
fn around_carries_the_centred_run_that_fits() {
    let texts: Vec<String> = (0..11).map(|i| format!("message {i:02} {}", "w".repeat(40))).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let r = resolver(&texts, json!({"maxReferenceBytes": 500}));
    let (body, meta) = prepare(&r, json!([{"sessionId": ID, "around": 5}])).unwrap();
    assert!(body.len() <= 502, "{}", body.len());
    let m = &meta[0];
    let (start, end) = (m["range"]["start"].as_u64().unwrap(), m["range"]["end"].as_u64().unwrap());
    assert!(start <= 5 && 5 < end && end - start >= 3, "{m}");
    assert!((5 - start) == (end - 1 - 5) || (5 - start) == (end - 1 - 5) + 1, "centred: {m}");
    assert_eq!(m["around"], 5);
    assert_eq!(
        (m["originalMessages"].clone(), m["retainedMessages"].clone()),
        (json!(end - start), json!(end - start))
    );
    assert_eq!(m["truncated"], false);
    assert!(body.contains(&format!("\"range\":{{\"start\":{start},\"end\":{end}}},\"around\":5,\"conversation\":[")));
    for i in 0..11u64 {
        assert_eq!(body.contains(&format!("message {i:02}")), (start..end).contains(&i), "{i}: {body}");
    }
    // Near the end it goes on before; past the end it is empty.
    let (_, meta) = prepare(&r, json!([{"sessionId": ID, "around": 10}])).unwrap();
    assert_eq!(meta[0]["range"]["end"], 11);
    let (body, meta) = prepare(&r, json!([{"sessionId": ID, "around": 11}])).unwrap();
    assert_eq!(meta[0]["range"], json!({"start": 11, "end": 11}));
    assert!(body.ends_with("\"around\":11,\"conversation\":[]}]"));
}

#[test]
fn around_a_message_longer_than_the_budget_cuts_it_as_retention_does() {
    let long = "L".repeat(5000);
    let r = resolver(&["a", &long, "b"], json!({"maxReferenceBytes": 600}));
    let (body, meta) = prepare(&r, json!([{"sessionId": ID, "around": 1}])).unwrap();
    let m = &meta[0];
    assert_eq!(m["range"], json!({"start": 1, "end": 2}));
    assert_eq!(m["retainedMessages"], 1);
    let n = m["omittedBytes"].as_u64().unwrap();
    assert!(n > 4000 && m["truncated"] == true, "{m}");
    assert!(body.contains(&format!("\\n[\u{2026} omitted {n} UTF-8 bytes \u{2026}]\"}}]}}]")), "{body}");
    assert!(body.len() <= 602 && body.len() > 560, "the cut fills the budget: {}", body.len());
    // Too small a budget for even the cut: as a whole session, it does not fit.
    let tiny = resolver(&["a", &long, "b"], json!({"maxReferenceBytes": 90}));
    assert_eq!(prepare(&tiny, json!([{"sessionId": ID, "around": 1}])).unwrap_err(), ErrorCode::BudgetExceeded);
}

#[test]
fn the_hardened_mode_counts_what_an_excerpt_redacted() {
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let with = format!("key {secret}");
    let texts = ["a", with.as_str(), "b", with.as_str(), "c"];
    let r = resolver(&texts, json!({"redactSecrets": true}));
    let (body, meta) = prepare(&r, json!([{"sessionId": ID, "range": {"start": 0, "end": 2}}])).unwrap();
    assert!(!body.contains(secret));
    assert_eq!(meta[0]["redactedSecrets"], 1);
    let (_, meta) = prepare(&r, json!([{"sessionId": ID, "around": 2}])).unwrap();
    assert_eq!(meta[0]["redactedSecrets"], 2);
    let keys: Vec<&String> = meta[0].as_object().unwrap().keys().collect();
    assert_eq!(keys[keys.len() - 4..], ["inputIndex", "range", "around", "redactedSecrets"]);
}

#[test]
fn excerpts_are_validated_with_the_references() {
    let invalid = [
        json!([{"sessionId": ID, "range": [1, 3]}]),
        json!([{"sessionId": ID, "range": {"end": 3}}]),
        json!([{"sessionId": ID, "range": {"start": -1}}]),
        json!([{"sessionId": ID, "range": {"start": 1.5}}]),
        json!([{"sessionId": ID, "range": {"start": 3, "end": 3}}]),
        json!([{"sessionId": ID, "range": {"start": 3, "end": 2}}]),
        json!([{"sessionId": ID, "around": "2"}]),
        json!([{"sessionId": ID, "around": 2, "range": {"start": 0}}]),
        json!([{"sessionId": ID, "around": 1}, {"sessionId": ID, "around": 2}]),
        json!([{"sessionId": ID}, {"sessionId": ID, "range": {"start": 0}}]),
        // The first problem in list order wins, as in docs/contract.md §6.2.
        json!([{"sessionId": ID, "around": -1}, {"sessionId": "t"}]),
    ];
    for refs in invalid {
        let e = normalize_references("t", refs.as_array().unwrap(), 3).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidReference, "{refs}: {e}");
    }
    let e = normalize_references("t", json!([{"sessionId": "t", "around": 1}]).as_array().unwrap(), 3).unwrap_err();
    assert_eq!(e.code(), ErrorCode::SelfReference);
    // The same excerpt twice: the first occurrence wins, with its label.
    let refs = json!([{"sessionId": ID, "label": "A", "range": {"start": 1}}, {"sessionId": ID, "label": "B", "range": {"start": 1, "end": null}}]);
    let got = normalize_references("t", refs.as_array().unwrap(), 3).unwrap();
    assert_eq!(got, [Reference::new(ID, Some("A".into())).with_excerpt(Some(Excerpt::Range { start: 1, end: None }))]);
    // An excerpt does not count for the limit: the ids do.
    let refs = json!([{"sessionId": "a", "around": 0}, {"sessionId": "b"}]);
    assert_eq!(normalize_references("t", refs.as_array().unwrap(), 1).unwrap_err().code(), ErrorCode::TooMany);
    // Several sources, some with excerpts, in one prompt.
    let r = resolver(&TEXTS, json!(null));
    let (body, meta) = prepare(&r, json!([{"sessionId": "other"}, {"sessionId": ID, "range": {"start": 5}}])).unwrap();
    assert!(meta[0].get("range").is_none() && meta[1]["range"] == json!({"start": 5, "end": 6}));
    assert!(body.starts_with(
        "[{\"sessionId\":\"other\",\"label\":\"other\",\"cwd\":\"/w\",\"capturedThroughSeq\":9,\"conversation\":["
    ));
    assert!(body.contains("},{\"sessionId\":\"src\",\"label\":\"src\",\"cwd\":\"/w\",\"capturedThroughSeq\":9,\"range\":{\"start\":5,\"end\":6},"));
}
