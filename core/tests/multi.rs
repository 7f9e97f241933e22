//! The view over several sources: merged listing, routing by id, failures
//! reported and never fatal to the other sources, and a one-source view
//! identical to its source.

use std::sync::Arc;

mod common;
use common::Unshared;

use dsh_session_reference::sources::MultiQuery;
use dsh_session_reference::{
    block_on, CandidateOptions, Config, MemoryQuery, PrepareOptions, Resolver, SessionHeader, SessionQuery, Target,
};
use serde_json::json;

fn surface(id: &str, text: &str) -> serde_json::Value {
    json!({"session": {"id": id, "createdAt": 1}, "capturedThroughSeq": 0, "events": [
        {"seq": 0, "type": "user/message", "data": {"role": "user", "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"}}}]})
}

fn dsh() -> Arc<MemoryQuery> {
    let q = MemoryQuery::new();
    for (id, t) in [("d-new", 30u64), ("codex:not-really", 20), ("d-old", 10)] {
        q.add_session(SessionHeader::new(id, t, Some("/w".into())));
        q.set_surface(id, surface(id, &format!("dsh {id}")));
        q.set_title(id, Some(format!("title {id}")));
    }
    Arc::new(q)
}

fn codex() -> Arc<MemoryQuery> {
    let q = MemoryQuery::new();
    for (id, t) in [("codex:b", 25u64), ("codex:a", 30)] {
        q.add_session(SessionHeader::new(id, t, None));
        q.set_surface(id, surface(id, &format!("codex {id}")));
    }
    Arc::new(q)
}

fn ids(list: &[SessionHeader]) -> Vec<&str> {
    list.iter().map(|h| h.id.as_str()).collect()
}

#[test]
fn listings_merge_newest_first_and_reads_route_by_prefix() {
    let multi = MultiQuery::new().with_source("dsh", "", dsh()).with_source("codex", "codex:", codex());
    let list = block_on(multi.list_sessions()).unwrap();
    // Equal createdAt (30): source order first.
    assert_eq!(ids(&list), vec!["d-new", "codex:a", "codex:b", "codex:not-really", "d-old"]);
    let report = multi.last_report();
    assert_eq!(report.len(), 2);
    assert_eq!(report[1].outcome, Ok(2));
    let resolver = Resolver::new(Arc::new(multi), Config::default());
    let target = Target::new("t", None);
    let refs = [json!({"sessionId": "codex:a"}), json!({"sessionId": "d-old"})];
    let p = block_on(resolver.prepare(&target, &json!("x"), &refs, &PrepareOptions::default(), None)).unwrap();
    let prompt = p.additional_context.unwrap().prompt;
    assert!(prompt.contains("codex codex:a") && prompt.contains("dsh d-old"), "{prompt}");
    // A DSH id that looks like another source's is shadowed by it: the read
    // goes to codex, which does not have it.
    let err = block_on(resolver.prepare(
        &target,
        &json!("x"),
        &[json!({"sessionId": "codex:not-really"})],
        &PrepareOptions::default(),
        None,
    ));
    assert!(err.unwrap_err().message().contains("codex:not-really"));
}

#[test]
fn a_failing_source_is_reported_and_the_others_still_list() {
    let broken = MemoryQuery::new();
    broken.fail_listing("permission denied");
    let multi =
        MultiQuery::new().with_source("dsh", "", dsh()).with_source("claude-code", "claude-code:", Arc::new(broken));
    let list = block_on(multi.list_sessions()).unwrap();
    assert_eq!(ids(&list), vec!["d-new", "codex:not-really", "d-old"]);
    let report = multi.last_report();
    assert_eq!(report[0].outcome, Ok(3));
    assert!(report[1].outcome.as_ref().unwrap_err().contains("permission denied"));
    // Only when every source fails does the listing fail, naming each.
    let a = MemoryQuery::new();
    a.fail_listing("gone");
    let only = MultiQuery::new().with_source("codex", "codex:", Arc::new(a));
    let err = block_on(only.list_sessions()).unwrap_err();
    assert_eq!(err.message(), "codex: gone");
}

#[test]
fn a_view_of_one_source_is_that_source() {
    let resolver_of = |q: Arc<dyn SessionQuery>| Resolver::new(q, Config::default());
    let direct = resolver_of(dsh());
    let viewed = resolver_of(Arc::new(MultiQuery::new().with_source("dsh", "", dsh())));
    let target = Target::new("t", Some("/w".into()));
    let a = block_on(direct.candidates(&target, "", &CandidateOptions::default(), None)).unwrap();
    let b = block_on(viewed.candidates(&target, "", &CandidateOptions::default(), None)).unwrap();
    assert_eq!(a, b);
    let refs = [json!({"sessionId": "d-new"})];
    let pa = block_on(direct.prepare(&target, &json!("x"), &refs, &PrepareOptions::default(), None)).unwrap();
    let pb = block_on(viewed.prepare(&target, &json!("x"), &refs, &PrepareOptions::default(), None)).unwrap();
    assert_eq!(pa.additional_context.unwrap().prompt, pb.additional_context.unwrap().prompt);
}

#[test]
fn fingerprints_come_from_the_source_that_holds_each_session() {
    let (d, c) = (dsh(), codex());
    let multi = MultiQuery::new().with_source("dsh", "", d.clone()).with_source("codex", "codex:", c.clone());
    let ids: Vec<String> = ["codex:a", "d-new", "codex:b"].iter().map(|s| s.to_string()).collect();
    let direct = |q: &MemoryQuery, id: &str| block_on(q.fingerprints(&[id.to_owned()])).unwrap().unwrap()[0].clone();
    let got = block_on(multi.fingerprints(&ids)).unwrap().unwrap();
    assert_eq!(got, vec![direct(&c, "codex:a"), direct(&d, "d-new"), direct(&c, "codex:b")]);
    assert!(got.iter().all(Option::is_some));
    // A change in one source changes only its sessions' fingerprints.
    d.set_title("d-new", Some("renamed".into()));
    let after = block_on(multi.fingerprints(&ids)).unwrap().unwrap();
    assert_eq!((after[0] == got[0], after[1] == got[1], after[2] == got[2]), (true, false, true));
}

#[test]
fn the_shared_listing_is_the_merged_listing_with_each_sources_fingerprints() {
    use dsh_session_reference::block_on;
    let (d, c) = (dsh(), codex());
    let multi = Arc::new(MultiQuery::new().with_source("dsh", "", d.clone()).with_source("codex", "codex:", c.clone()));
    let agree = |what: &str| {
        let shared = block_on(multi.shared_listing()).unwrap().unwrap();
        let listed = block_on(multi.list_sessions()).unwrap();
        assert_eq!(shared.sessions(), &listed[..], "{what}");
        let ids: Vec<String> = listed.iter().map(|s| s.id.clone()).collect();
        let fps = block_on(multi.fingerprints(&ids)).unwrap().unwrap();
        for (i, id) in ids.iter().enumerate() {
            if id == "codex:not-really" {
                // Listed by dsh, read through codex: no fingerprint, read afresh.
                assert_eq!(shared.fingerprints()[i], None, "{what}");
            } else {
                assert_eq!(shared.fingerprints()[i], fps[i], "{id} {what}");
            }
        }
        // And a resolver answers the same with it as without it.
        let target = Target::new("t", Some("/w".into()));
        let with = Resolver::new(multi.clone(), Config::default());
        let without = Resolver::new(Arc::new(Unshared(multi.clone())), Config::default());
        for filter in ["", "title", "codex"] {
            assert_eq!(
                block_on(with.candidates(&target, filter, &CandidateOptions::default(), None)).unwrap(),
                block_on(without.candidates(&target, filter, &CandidateOptions::default(), None)).unwrap(),
                "{filter:?} {what}"
            );
        }
        let options = dsh_session_reference::SearchOptions::default();
        assert_eq!(
            block_on(with.search(&target, "dsh", &options, None)).unwrap(),
            block_on(without.search(&target, "dsh", &options, None)).unwrap(),
            "search {what}"
        );
        shared
    };
    let first = agree("at first");
    assert!(block_on(multi.shared_listing()).unwrap().unwrap().ptr_eq(&first), "nothing changed: shared again");
    c.set_title("codex:b", Some("new".into()));
    let after = agree("after a change in one source");
    assert!(!after.ptr_eq(&first));
    // A failing source is reported, the others still shared.
    c.fail_listing("unreadable");
    let partial = block_on(multi.shared_listing()).unwrap().unwrap();
    assert_eq!(ids(partial.sessions()), vec!["d-new", "codex:not-really", "d-old"]);
    assert!(multi.last_report()[1].outcome.as_ref().unwrap_err().contains("unreadable"));
    d.fail_listing("gone");
    assert_eq!(block_on(multi.shared_listing()).unwrap_err().message(), "dsh: gone; codex: unreadable");
    // A source without a shared listing: the view has none either.
    d.clear_listing_failure();
    let with_plain =
        MultiQuery::new().with_source("dsh", "", d).with_source("other", "o:", Arc::new(Unshared(multi.clone())));
    assert!(block_on(with_plain.shared_listing()).unwrap().is_none());
}

#[test]
fn sessions_that_cannot_be_read_are_in_the_report_until_the_next_listing() {
    use dsh_session_reference::sources::report_json;
    use dsh_session_reference::SearchOptions;
    let broken = MemoryQuery::new();
    for (id, t) in
        [("codex:ok", 5u64), ("codex:gone-1", 4), ("codex:gone-2", 3), ("codex:gone-3", 2), ("codex:gone-4", 1)]
    {
        broken.add_session(SessionHeader::new(id, t, None));
        if id == "codex:ok" {
            broken.set_surface(id, surface(id, "codex words"));
        }
    }
    let multi =
        Arc::new(MultiQuery::new().with_source("dsh", "", dsh()).with_source("codex", "codex:", Arc::new(broken)));
    let resolver = Resolver::new(multi.clone(), Config::default());
    let target = Target::new("t", None);
    let found = block_on(resolver.search(&target, "words", &SearchOptions::default(), None)).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let report = report_json(&multi);
    let codex = report.as_array().unwrap().iter().find(|s| s["name"] == "codex").unwrap();
    // The four without a text, and the DSH session whose id routes its
    // reads to codex (`codex:not-really`, which codex does not have).
    assert_eq!(codex["unreadableCount"], 5, "{report}");
    let named = codex["unreadable"].as_array().unwrap();
    assert_eq!(named.len(), 3, "the first three are named");
    assert!(named
        .iter()
        .all(|u| u["sessionId"] != "codex:ok" && u["sessionId"].as_str().unwrap().starts_with("codex:")));
    assert!(named.iter().all(|u| !u["why"].as_str().unwrap().is_empty()));
    let dsh_status = report.as_array().unwrap().iter().find(|s| s["name"] == "dsh").unwrap();
    assert!(dsh_status.get("unreadable").is_none(), "{report}");
    // A new listing starts afresh.
    block_on(multi.list_sessions()).unwrap();
    assert!(report_json(&multi).as_array().unwrap().iter().all(|s| s.get("unreadable").is_none()));
}

#[test]
fn a_source_awaited_lists_nothing_until_its_root_appears_and_then_is_that_source() {
    use dsh_session_reference::sources::{open_sources_awaiting, report_json, SourceKind, SourceSpec};
    let home = tempfile::tempdir().unwrap();
    let (claude, codex) = (home.path().join("projects"), home.path().join("codex"));
    let specs = [SourceSpec::new(SourceKind::ClaudeCode, &claude), SourceSpec::new(SourceKind::Codex, &codex)];
    let multi = open_sources_awaiting(&specs).unwrap();
    assert!(block_on(multi.list_sessions()).unwrap().is_empty(), "no root: no session, and no failure");
    let empty = block_on(multi.shared_listing()).unwrap().unwrap();
    assert!(empty.sessions().is_empty());
    assert!(block_on(multi.shared_listing()).unwrap().unwrap().ptr_eq(&empty), "unchanged while nothing appears");
    let report = report_json(&multi);
    for (status, root) in report.as_array().unwrap().iter().zip([&claude, &codex]) {
        assert_eq!(status["sessions"], 0, "{report}");
        let note = status["note"].as_str().unwrap();
        assert!(note.contains(&root.display().to_string()) && note.contains("does not exist yet"), "{note}");
    }
    let missing = block_on(multi.read_surface("claude-code:x")).err().unwrap();
    assert!(missing.message().contains("does not exist yet"), "{}", missing.message());

    // The root appears, empty: the source is opened and says what it holds.
    std::fs::create_dir_all(claude.join("-workspace")).unwrap();
    assert!(block_on(multi.list_sessions()).unwrap().is_empty());
    let note = report_json(&multi)[0]["note"].as_str().unwrap().to_owned();
    assert!(!note.contains("does not exist yet") && note.contains("no Claude Code session"), "{note}");
    // A session is written: listed and read on the next call.
    let id = "55550000-0000-4000-8000-000000000001";
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/foreign-logs/claude-code/daaain/minimal_showcase")
        .join(format!("{id}.jsonl"));
    std::fs::copy(fixture, claude.join("-workspace").join(format!("{id}.jsonl"))).unwrap();
    let listed = block_on(multi.list_sessions()).unwrap();
    assert_eq!(ids(&listed), [format!("claude-code:{id}").as_str()]);
    assert!(block_on(multi.read_surface(&listed[0].id)).is_ok());
    let shared = block_on(multi.shared_listing()).unwrap().unwrap();
    assert_eq!(ids(shared.sessions()), [format!("claude-code:{id}").as_str()]);
}
