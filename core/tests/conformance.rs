//! Runs every vector of the conformance set (tests/conformance, or
//! `$DSR_CONFORMANCE_DIR`) through the core API, as its README prescribes.

mod common;

use std::sync::Arc;

use common::{canonical, vectors};
use dsh_session_reference::{
    block_on, candidate_limit_from_json, decode_uri, encode_uri, format_mention, json::parse_js, parse_text,
    stringify_tag_safe, stringify_tag_safe_text, CandidateOptions, Config, Error, MemoryQuery, PrepareOptions,
    Resolver, SessionHeader, SurfaceData, Target,
};
use serde_json::{json, Value};

fn items<'a>(v: &'a Value, what: &str) -> &'a Vec<Value> {
    let list = v.as_array().unwrap_or_else(|| panic!("{what} must be an array"));
    assert!(!list.is_empty(), "{what} has no vectors");
    list
}

fn code(r: Result<impl std::fmt::Debug, Error>) -> String {
    match r {
        Ok(v) => format!("ok: {v:?}"),
        Err(e) => e.code().as_str().to_owned(),
    }
}

#[test]
fn uri_vectors() {
    let v = vectors("uri.json");
    let mut n = 0;
    for case in items(&v["valid"], "uri.valid") {
        let id = case["sessionId"].as_str().unwrap();
        let uri = case["uri"].as_str().unwrap();
        assert_eq!(encode_uri(id), uri, "encode {id:?}");
        assert_eq!(decode_uri(uri).unwrap(), id, "decode {uri}");
        n += 1;
    }
    for case in items(&v["invalid"], "uri.invalid") {
        let uri = case["uri"].as_str().unwrap();
        assert_eq!(code(decode_uri(uri)), case["error"].as_str().unwrap(), "{uri} ({})", case["note"]);
        n += 1;
    }
    assert!(n > 0);
}

#[test]
fn mention_vectors() {
    for case in items(&vectors("mention.json"), "mention") {
        let id = case["sessionId"].as_str().unwrap();
        let label = case.get("label").map(|l| l.as_str().unwrap());
        assert_eq!(format_mention(id, label), case["mention"].as_str().unwrap(), "{case}");
    }
}

#[test]
fn parse_vectors() {
    for case in items(&vectors("parse.json"), "parse") {
        let text = case["text"].as_str().unwrap();
        let got = parse_text(text);
        if let Some(err) = case.get("error") {
            assert_eq!(code(got), err.as_str().unwrap(), "{text:?}");
            continue;
        }
        let got = got.unwrap_or_else(|e| panic!("{text:?}: {e}"));
        let want = &case["expected"];
        assert_eq!(got.text, want["text"].as_str().unwrap(), "{text:?}");
        let refs: Vec<Value> =
            got.references.iter().map(|r| json!({"sessionId": r.session_id, "label": r.label})).collect();
        assert_eq!(Value::Array(refs), want["references"], "{text:?}");
    }
}

#[test]
fn tag_safe_vectors() {
    for case in items(&vectors("tag_safe.json"), "tag_safe") {
        let want = case["serialized"].as_str().unwrap();
        assert_eq!(stringify_tag_safe(&case["value"]), want, "{case}");
        assert!(!want.contains('<'));
        if let Some(text) = case.get("value_json").and_then(Value::as_str) {
            assert_eq!(stringify_tag_safe_text(text).unwrap(), want, "{text}");
        }
        // The output parses back to the same value.
        assert_eq!(
            stringify_tag_safe(&parse_js(want).unwrap()),
            want,
            "re-serializing the output of {case} is not stable"
        );
    }
}

#[test]
fn config_vectors() {
    for case in items(&vectors("config.json"), "config") {
        let got = Config::from_json(&case["config"]);
        match case.get("error") {
            Some(err) => assert_eq!(code(got), err.as_str().unwrap(), "{case}"),
            None => assert!(got.is_ok(), "{case}: {:?}", got.err()),
        }
    }
}

/// The case's configuration, or `None` when the case expects construction to
/// fail (checked here: the expected error must be the config error).
fn config_of(case: &Value, name: &str) -> Option<Config> {
    match Config::from_json(&case["config"]) {
        Ok(c) => Some(c),
        Err(e) => {
            assert_eq!(Some(e.code().as_str()), case["expected"]["error"].as_str(), "{name}");
            None
        }
    }
}

#[test]
fn prepare_vectors() {
    let content = json!([{"type": "text", "text": "go"}]);
    for case in items(&vectors("prepare.json"), "prepare") {
        let name = case["name"].as_str().unwrap();
        let expected = &case["expected"];
        let Some(config) = config_of(case, name) else { continue };
        let query = MemoryQuery::new();
        for (id, surface) in case["surfaces"].as_object().unwrap() {
            query.set_surface(id.clone(), SurfaceData::from(surface.clone()));
        }
        for id in case["missing"].as_array().unwrap() {
            query.fail_surface(id.as_str().unwrap(), "missing in this vector");
        }
        let resolver = Resolver::new(Arc::new(query), config);
        let target = Target::new(case["targetId"].as_str().unwrap(), None);
        let refs = case["references"].as_array().unwrap();
        let got = block_on(resolver.prepare(&target, &content, refs, &PrepareOptions::default(), None));
        if let Some(err) = expected.get("error") {
            assert_eq!(code(got), err.as_str().unwrap(), "{name}");
            continue;
        }
        let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got.content, content, "{name}: content must be returned unchanged");
        if expected.get("expected_none").is_some() {
            assert!(got.additional_context.is_none(), "{name}");
            continue;
        }
        let ctx = got.additional_context.unwrap_or_else(|| panic!("{name}: no context")).into_json();
        let prompt = ctx["content"][0]["text"].as_str().unwrap();
        let want = expected["prompt"].as_str().unwrap();
        assert!(prompt == want, "{name}: prompt differs\n got: {prompt}\nwant: {want}");
        assert_eq!(canonical(&ctx["source"]), canonical(&expected["source"]), "{name}: source");
        assert_eq!(ctx["role"], "user", "{name}");
        assert_eq!(ctx["content"].as_array().unwrap().len(), 1);
        assert!(uuid_like(ctx["id"].as_str().unwrap()), "{name}: id");
        // The per-source budget holds for every data object.
        let budget = config.max_reference_bytes() as usize;
        let body = &prompt[dsh_session_reference::prompt::PROMPT_HEADER.len()
            ..prompt.len() - dsh_session_reference::prompt::PROMPT_FOOTER.len()];
        let parsed: Value = serde_json::from_str(body).unwrap();
        for source in parsed.as_array().unwrap() {
            assert!(stringify_tag_safe(source).len() <= budget, "{name}: over budget");
        }
    }
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

#[test]
fn candidates_vectors() {
    for case in items(&vectors("candidates.json"), "candidates") {
        let name = case["name"].as_str().unwrap();
        let expected = &case["expected"];
        let Some(config) = config_of(case, name) else { continue };
        let query = MemoryQuery::new();
        for s in case["sessions"].as_array().unwrap() {
            query.add_session(SessionHeader::from_json(s).unwrap());
        }
        for (id, title) in case["titles"].as_object().unwrap() {
            match title {
                Value::String(t) => query.set_title(id.clone(), Some(t.clone())),
                other => query.fail_title(id.clone(), other["rejected"].as_str().unwrap()),
            }
        }
        let resolver = Resolver::new(Arc::new(query), config);
        let target = Target::from_json(&case["target"]).unwrap();
        let q = case["query"].as_str().unwrap();
        let got = match case.get("limit") {
            Some(limit) => candidate_limit_from_json(limit).and_then(|l| {
                block_on(resolver.candidates(
                    &target,
                    q,
                    &CandidateOptions::default().with_limit(Some(l)).without_mentions(),
                    None,
                ))
                .map(|list| {
                    list.into_iter()
                        .map(|mut c| {
                            c.mention = Some(format_mention(&c.session_id, Some(&c.label)));
                            c
                        })
                        .collect::<Vec<_>>()
                })
            }),
            None => block_on(resolver.candidates(&target, q, &CandidateOptions::default(), None)),
        };
        if let Some(err) = expected.get("error") {
            assert_eq!(code(got), err.as_str().unwrap(), "{name}");
            continue;
        }
        let got: Vec<Value> = got.unwrap_or_else(|e| panic!("{name}: {e}")).iter().map(|c| c.to_json()).collect();
        assert_eq!(Value::Array(got), *expected, "{name}");
    }
}
