//! A search that answers before the index is built
//! (`Resolver::search_available`) and the indexing run behind it
//! (`Resolver::index_sessions`): counted in sessions read and sessions
//! indexed, never timed. The source's surface reads wait at a gate the
//! test opens a number of reads at a time, so what is indexed when each
//! search answers is known exactly.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use dsh_session_reference::projection::Role;
use dsh_session_reference::{
    block_on, CandidateOptions, Config, Conversation, ConversationItem, Fingerprint, IndexProgress, MemoryQuery,
    QueryFuture, Resolver, SearchOptions, SessionHeader, SessionQuery, SharedListing, SurfaceData, Target,
};

/// Forwards to a memory query; each surface read waits for a permit of
/// the gate, and is counted.
struct Gated {
    inner: MemoryQuery,
    gate: tokio::sync::Semaphore,
    surfaces: AtomicUsize,
}

impl SessionQuery for Gated {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        self.inner.list_sessions()
    }
    fn read_title<'a>(&'a self, id: &'a str) -> QueryFuture<'a, Option<String>> {
        self.inner.read_title(id)
    }
    fn read_surface<'a>(&'a self, id: &'a str) -> QueryFuture<'a, SurfaceData> {
        Box::pin(async move {
            self.gate.acquire().await.expect("the gate stays open").forget();
            self.surfaces.fetch_add(1, Ordering::SeqCst);
            self.inner.read_surface(id).await
        })
    }
    fn fingerprints<'a>(&'a self, ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        self.inner.fingerprints(ids)
    }
    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        self.inner.shared_listing()
    }
}

/// `n` sessions `s000`…, each saying "common words" and its own
/// `wordNNN`, titled `title NNN` (`s007`'s: `the alpha plan`).
fn gated(n: usize) -> Arc<Gated> {
    let inner = MemoryQuery::new();
    for i in 0..n {
        let id = format!("s{i:03}");
        inner.add_session(SessionHeader::new(&id, i as u64, Some("/p".into())));
        let title = if i == 7 { "the alpha plan".to_owned() } else { format!("title {i:03}") };
        inner.set_title(&id, Some(title));
        let text = format!("common words and word{i:03}");
        inner.set_surface(
            &id,
            Conversation {
                session_id: id.clone(),
                cwd: Some("/p".into()),
                captured_through_seq: None,
                items: vec![ConversationItem::new(Role::User, text)],
            },
        );
    }
    Arc::new(Gated { inner, gate: tokio::sync::Semaphore::new(0), surfaces: AtomicUsize::new(0) })
}

fn target() -> Target {
    Target::new("me", Some("/p".into()))
}

fn every() -> SearchOptions {
    SearchOptions { limit: Some(1000), ..Default::default() }
}

/// Waits (without timing anything) until `resolver`'s run has done `n`
/// sessions.
fn until_indexed(resolver: &Resolver, n: u64) {
    for _ in 0..100_000 {
        if resolver.index_progress().indexed >= n {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("the run never reached {n} sessions: {:?}", resolver.index_progress());
}

#[test]
fn a_search_before_the_index_is_built_answers_from_what_it_holds_and_says_so() {
    let query = gated(100);
    let resolver = Resolver::new(query.clone(), Config::default());
    // Titles listed first (a filtered listing reads them all): the
    // sessions not indexed yet are still found by title.
    block_on(resolver.candidates(&target(), "title", &CandidateOptions::default(), None)).unwrap();

    // Nothing indexed: nothing found in a text, the titles found.
    let first = block_on(resolver.search_available(&target(), "alpha", &every(), None)).unwrap();
    assert!(!first.complete());
    assert_eq!(first.progress, IndexProgress { indexed: 0, total: 100 });
    assert_eq!(first.results.iter().map(|r| r.candidate.session_id.as_str()).collect::<Vec<_>>(), ["s007"]);
    let none = block_on(resolver.search_available(&target(), "common", &every(), None)).unwrap();
    assert!(none.results.is_empty() && !none.complete());
    assert_eq!(query.surfaces.load(Ordering::SeqCst), 0, "an early answer reads no session");
    // It started the run, which waits at the gate.
    assert!(resolver.indexing());
    let json = none.to_json();
    assert_eq!(json["complete"], false);
    assert_eq!((json["indexed"].as_u64(), json["total"].as_u64()), (Some(0), Some(100)));
    assert!(none.note().unwrap().contains("0 of 100 sessions"), "{:?}", none.note());

    // Ten sessions read: a later search finds exactly those ten by text.
    query.gate.add_permits(10);
    until_indexed(&resolver, 10);
    let later = block_on(resolver.search_available(&target(), "common", &every(), None)).unwrap();
    assert_eq!(later.progress, IndexProgress { indexed: 10, total: 100 });
    assert_eq!(later.results.len(), 10);
    assert!(!later.complete());

    // The rest: the run ends, every session read once, and the answer is
    // complete and exactly the one-shot search's.
    query.gate.add_permits(1000);
    let progress = block_on(resolver.index_sessions(None)).unwrap();
    assert_eq!(progress, IndexProgress { indexed: 100, total: 100 });
    assert!(!resolver.indexing());
    assert_eq!(query.surfaces.load(Ordering::SeqCst), 100, "each session read once");
    let done = block_on(resolver.search_available(&target(), "common", &every(), None)).unwrap();
    assert!(done.complete() && done.note().is_none());
    assert_eq!(done.progress, IndexProgress { indexed: 100, total: 100 });
    assert_eq!(done.results.len(), 100);
    let fresh = Resolver::new(gated_open(100), Config::default());
    let exact = block_on(fresh.search(&target(), "common", &every(), None)).unwrap();
    assert_eq!(done.results, exact);
    assert_eq!(query.surfaces.load(Ordering::SeqCst), 100, "nothing read again");
}

/// [`gated`] with the gate open.
fn gated_open(n: usize) -> Arc<Gated> {
    let q = gated(n);
    q.gate.add_permits(100_000);
    q
}

#[test]
fn the_one_shot_search_and_a_few_missing_sessions_stay_exact() {
    // `search` answers exactly however little is indexed.
    let query = gated_open(100);
    let resolver = Resolver::new(query.clone(), Config::default());
    let exact = block_on(resolver.search(&target(), "word042", &every(), None)).unwrap();
    assert_eq!(exact.len(), 1);
    assert_eq!(query.surfaces.load(Ordering::SeqCst), 100);
    assert!(!resolver.indexing(), "no run: it indexed everything itself");

    // With no more than a few sessions missing, an early answer indexes
    // them first and is complete.
    let query = gated_open(30);
    let resolver = Resolver::new(query.clone(), Config::default());
    let answer = block_on(resolver.search_available(&target(), "word012", &every(), None)).unwrap();
    assert!(answer.complete());
    assert_eq!(answer.progress, IndexProgress { indexed: 30, total: 30 });
    assert_eq!(answer.results.len(), 1);
    assert_eq!(query.surfaces.load(Ordering::SeqCst), 30);
}

#[test]
fn a_run_indexes_every_session_once_and_a_second_run_waits_for_it() {
    let query = gated(50);
    let resolver = Resolver::new(query.clone(), Config::default());
    assert_eq!(resolver.index_progress(), IndexProgress::default());
    let (a, b) = (resolver.clone(), resolver.clone());
    let first = std::thread::spawn(move || block_on(a.index_sessions(None)).unwrap());
    until_running(&resolver);
    let second = std::thread::spawn(move || block_on(b.index_sessions(None)).unwrap());
    query.gate.add_permits(1000);
    assert_eq!(first.join().unwrap(), IndexProgress { indexed: 50, total: 50 });
    assert_eq!(second.join().unwrap(), IndexProgress { indexed: 50, total: 50 });
    assert_eq!(query.surfaces.load(Ordering::SeqCst), 50, "the second run read nothing");
    // Nothing changed: a third run reads nothing either.
    assert_eq!(block_on(resolver.index_sessions(None)).unwrap(), IndexProgress { indexed: 50, total: 50 });
    assert_eq!(query.surfaces.load(Ordering::SeqCst), 50);
    // A changed session is indexed again.
    query.inner.set_title("s003", Some("renamed".into()));
    query.inner.set_surface(
        "s003",
        Conversation {
            session_id: "s003".into(),
            cwd: Some("/p".into()),
            captured_through_seq: None,
            items: vec![ConversationItem::new(Role::User, "changed text")],
        },
    );
    block_on(resolver.index_sessions(None)).unwrap();
    assert_eq!(query.surfaces.load(Ordering::SeqCst), 51);
    let found = block_on(resolver.search_available(&target(), "changed", &every(), None)).unwrap();
    assert!(found.complete());
    assert_eq!(found.results.len(), 1);
}

fn until_running(resolver: &Resolver) {
    for _ in 0..100_000 {
        if resolver.indexing() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("the run never began");
}
