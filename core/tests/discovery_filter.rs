//! A filtered `candidates` query answered from the index over titles, ids
//! and cwds (a source that shares its listing) gives exactly what a scan of
//! every session gives (a source that does not), in the same order, cut at
//! the same limit, through any sequence of titles changed, sessions added
//! and removed, and reads that fail (docs/contract.md §7).

use std::sync::Arc;

use dsh_session_reference::{
    block_on, CandidateOptions, Config, Fingerprint, Hardening, MemoryQuery, QueryFuture, Resolver, SessionHeader,
    SessionQuery, SurfaceData, Target,
};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;

/// The same sessions without a shared listing: discovery scans them.
struct Scanned(Arc<MemoryQuery>);

impl SessionQuery for Scanned {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        self.0.list_sessions()
    }
    fn read_title<'a>(&'a self, id: &'a str) -> QueryFuture<'a, Option<String>> {
        self.0.read_title(id)
    }
    fn read_surface<'a>(&'a self, id: &'a str) -> QueryFuture<'a, SurfaceData> {
        self.0.read_surface(id)
    }
    fn fingerprints<'a>(&'a self, ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        self.0.fingerprints(ids)
    }
}

/// Text that stresses lower-casing: ASCII of both cases, letters whose
/// lower case is longer or context-dependent, and separators.
fn text() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "a", "A", "k", "K", "ka", "KA", "x", "/", " ", "-", "İ", "i", "ß", "Σ", "σ", "ς", "Å", "å", "ǅ", "\u{0}", "é",
        "E\u{301}", "ﬃ", "ab", "zz",
    ]);
    prop::collection::vec(pieces, 0..6).prop_map(|p| p.concat())
}

#[derive(Clone, Debug)]
enum Op {
    Query { needle: String, limit: u64, target: usize, cwd: Option<usize> },
    Title(usize, Option<String>),
    FailTitle(usize),
    Add(usize, Option<usize>),
    Remove(usize),
}

const IDS: usize = 12;
const CWDS: [&str; 3] = ["/work/Ka", "/work/x", "/İ/ß"];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (text(), 1u64..8, 0..IDS + 1, prop::option::of(0..CWDS.len()))
            .prop_map(|(needle, limit, target, cwd)| Op::Query { needle, limit, target, cwd }),
        3 => (0..IDS, prop::option::of(text())).prop_map(|(i, t)| Op::Title(i, t)),
        1 => (0..IDS).prop_map(Op::FailTitle),
        2 => (0..IDS, prop::option::of(0..CWDS.len())).prop_map(|(i, c)| Op::Add(i, c)),
        1 => (0..IDS).prop_map(Op::Remove),
    ]
}

fn id(i: usize) -> String {
    // Ids of both cases, some holding what a needle may ask for.
    ["s-ka", "S-KA-2", "sess", "Σς", "x1", "İd", "k", "a-b", "zz", "q", "ß-s", "Ka/x"][i].to_owned()
}

fn check(ops: Vec<Op>, hardening: Hardening) -> Result<(), TestCaseError> {
    let mem = Arc::new(MemoryQuery::new());
    for i in 0..IDS / 2 {
        mem.add_session(SessionHeader::new(id(i), (100 + i) as u64, Some(CWDS[i % CWDS.len()].to_owned())));
    }
    let config = Config::default().with_hardening(hardening);
    let indexed = Resolver::new(mem.clone(), config);
    let scanned = Resolver::new(Arc::new(Scanned(mem.clone())), config);
    for op in ops {
        match op {
            Op::Query { needle, limit, target, cwd } => {
                let target_id = if target == IDS { "new-chat".to_owned() } else { id(target) };
                let target = Target::new(target_id, cwd.map(|c| CWDS[c].to_owned()));
                let options = CandidateOptions::default().with_limit(Some(limit));
                let a = block_on(indexed.candidates(&target, &needle, &options, None)).unwrap();
                let b = block_on(scanned.candidates(&target, &needle, &options, None)).unwrap();
                prop_assert_eq!(a, b, "{:?}", needle);
            }
            Op::Title(i, t) => mem.set_title(id(i), t),
            Op::FailTitle(i) => mem.fail_title(id(i), "unreadable"),
            Op::Add(i, c) => {
                mem.add_session(SessionHeader::new(id(i), (100 + i) as u64, c.map(|c| CWDS[c].to_owned())))
            }
            Op::Remove(i) => mem.remove_session(&id(i)),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn the_index_answers_as_a_scan(ops in prop::collection::vec(op(), 1..40)) {
        check(ops, Hardening::default())?;
    }

    #[test]
    fn the_index_answers_as_a_scan_under_hardened_labels(ops in prop::collection::vec(op(), 1..40)) {
        check(ops, Hardening::ALL)?;
    }
}

/// Many sessions, one of them renamed between queries: the index answers
/// as the scan, in order and cut, for needles of one, two and more bytes.
#[test]
fn a_rename_among_many_sessions_answers_as_a_scan() {
    let mem = Arc::new(MemoryQuery::new());
    for i in 0..1500u64 {
        let id = format!("session-{i:05}");
        mem.add_session(SessionHeader::new(id.clone(), i, (i % 7 != 0).then(|| format!("/work/p{}", i % 5))));
        mem.set_title(
            id,
            (i % 3 != 0).then(|| format!("Title {} of {i}", ["Kappa", "alpha", "DELTA"][(i % 4) as usize % 3])),
        );
    }
    let indexed = Resolver::new(mem.clone(), Config::default());
    let scanned = Resolver::new(Arc::new(Scanned(mem.clone())), Config::default());
    let target = Target::new("session-00003", Some("/work/p2".into()));
    for round in 0..4u64 {
        for needle in ["k", "ka", "KAP", "session-0", "/work/p4", "of 29", "zq", "élan", "title kappa of 1"] {
            for limit in [1, 50, 2000] {
                let options = CandidateOptions::default().with_limit(Some(limit));
                let a = block_on(indexed.candidates(&target, needle, &options, None)).unwrap();
                let b = block_on(scanned.candidates(&target, needle, &options, None)).unwrap();
                assert_eq!(a, b, "round {round}, {needle:?}, limit {limit}");
            }
        }
        mem.set_title(format!("session-{:05}", round * 353), Some(format!("Élan zq {round}")));
    }
}
