//! The DSH store fingerprints its logs for the resolver's discovery caches:
//! a log that changes gets a new fingerprint, one that does not keeps it,
//! and a title read through a resolver is not repeated for an unchanged log.

mod common;
use common::example_root;
use std::io::Write as _;
use std::sync::Arc;

use dsh_session_reference::{block_on, CandidateOptions, Config, DshStore, Resolver, SessionQuery, Target};

#[test]
fn a_changed_log_gets_a_new_fingerprint_and_an_unchanged_one_keeps_its_own() {
    let tmp = example_root();
    let store = DshStore::open(tmp.path()).unwrap();
    let ids: Vec<String> = block_on(store.list_sessions()).unwrap().into_iter().map(|h| h.id).collect();
    assert!(ids.len() >= 3);
    let before = block_on(store.fingerprints(&ids)).unwrap().expect("the store fingerprints its logs");
    assert!(before.iter().all(Option::is_some));
    let again = block_on(store.fingerprints(&ids)).unwrap().unwrap();
    assert_eq!(before, again, "nothing changed");
    // Append to one log: only its fingerprint changes.
    let changed = &ids[0];
    let path = store.list().unwrap().sessions.into_iter().find(|s| &s.header.id == changed).unwrap().path;
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"\n").unwrap();
    drop(f);
    let after = block_on(store.fingerprints(&ids)).unwrap().unwrap();
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(after[i] == before[i], id != changed, "{id}");
    }
    // An unknown session has none.
    let unknown = block_on(store.fingerprints(&["no-such-session".to_owned()])).unwrap().unwrap();
    assert_eq!(unknown, vec![None]);
}

#[test]
fn filtered_candidates_through_the_store_agree_with_a_fresh_resolver_after_a_change() {
    let tmp = example_root();
    let store = DshStore::open(tmp.path()).unwrap();
    let resolver = Resolver::new(Arc::new(store.clone()), Config::default());
    let target = Target::new("someone-else", None);
    let fresh = |query: &str| {
        block_on(Resolver::new(Arc::new(DshStore::open(tmp.path()).unwrap()), Config::default()).candidates(
            &target,
            query,
            &CandidateOptions::default(),
            None,
        ))
        .unwrap()
    };
    assert_eq!(block_on(resolver.candidates(&target, "e", &CandidateOptions::default(), None)).unwrap(), fresh("e"));
    // A log gains a newer title: the long-lived resolver sees it at once.
    let listed = store.list().unwrap().sessions;
    let s = &listed[0];
    let seq = store.inspect(&s.header.id).unwrap().last_seq.unwrap_or(0);
    let line = format!(
        "{{\"type\":\"session/title\",\"seq\":{},\"time\":1,\"data\":{{\"title\":\"A brand new title\"}}}}\n",
        seq + 1
    );
    let mut f = std::fs::OpenOptions::new().append(true).open(&s.path).unwrap();
    f.write_all(line.as_bytes()).unwrap();
    drop(f);
    let cached = block_on(resolver.candidates(&target, "brand new", &CandidateOptions::default(), None)).unwrap();
    assert_eq!(cached, fresh("brand new"));
    assert_eq!(cached.len(), 1, "{cached:?}");
    assert_eq!(cached[0].label, "A brand new title");
}
