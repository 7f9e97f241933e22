//! The prospects of a search verified by several threads reach the
//! ranking exactly as verified by one, in order, whatever breaks it.

use std::borrow::Cow;

use super::*;
use crate::index::query::Query;
use crate::index::IndexedItem;

/// `n` sessions: every third holds "needle" in one of its messages
/// (every ninth the phrase "needle haystack"), every fifth is a big one
/// (a longer verification), the others hold neither.
fn corpus(n: usize) -> (Vec<SessionHeader>, Vec<Arc<Doc>>) {
    static MADE: std::sync::OnceLock<(Vec<SessionHeader>, Vec<Arc<Doc>>)> = std::sync::OnceLock::new();
    MADE.get_or_init(|| make(n)).clone()
}

fn make(n: usize) -> (Vec<SessionHeader>, Vec<Arc<Doc>>) {
    let (mut sessions, mut docs) = (Vec::new(), Vec::new());
    for i in 0..n {
        let filler = "lorem ipsum dolor sit amet ".repeat(if i % 5 == 0 { 1000 } else { 20 });
        let found = match i % 9 {
            0 => format!("the needle haystack {i}"),
            3 | 6 => format!("a needle {i}, then a haystack"),
            _ => format!("nothing here {i}"),
        };
        let items = [filler.clone(), found, filler];
        let items = items.iter().map(|t| IndexedItem { text: Cow::Owned(t.clone()) }).collect();
        docs.push(Arc::new(Doc::build(None, None, items, None)));
        sessions.push(SessionHeader::new(format!("s{i}"), i as u64, Some("/w".into())));
    }
    (sessions, docs)
}

/// A prospect's place and what its verification gave: its tier, message
/// and snippet.
type Seen = (usize, Option<(u8, Option<u64>, String)>);

/// What `f` saw, prospect by prospect, when verified by `threads` threads
/// and stopped after `stop_after` hits.
fn seen(threads: usize, stop_after: usize, query: &str) -> Vec<Seen> {
    let (sessions, docs) = corpus(120);
    let sessions = Headers::all(&sessions);
    let query = Query::parse(query).unwrap();
    let finders = Finders::of(&query);
    let prospects: Vec<Prospect> = (0..sessions.len())
        .map(|at| Prospect {
            at,
            key: Key { tier: PHRASE, relevance: 0.0, cwd_rank: 0, created: 0.0, order: at },
            // Every seventh settled without its body.
            settled: (at % 7 == 0).then(|| (MatchField::Id, format!("s{at}"))),
        })
        .collect();
    let mut out = Vec::new();
    let mut hits = 0;
    in_order(&prospects, sessions, &docs, &finders, threads, |p, verified| {
        let hit = verified().expect("readable");
        hits += usize::from(hit.is_some() || p.settled.is_some());
        out.push((p.at, hit.map(|h| (h.key.tier, h.message_index, h.snippet))));
        if hits >= stop_after {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    out
}

#[test]
fn several_threads_verify_as_one_in_order_and_stop_where_it_stops() {
    for query in ["needle", "needle haystack", "haystack needle", "absent"] {
        for stop_after in [1, 2, 5, 17, 40, usize::MAX] {
            let alone = seen(1, stop_after, query);
            assert!(!alone.is_empty());
            for threads in [2, 3, 4] {
                assert_eq!(seen(threads, stop_after, query), alone, "{query:?}, {threads} threads, {stop_after}");
            }
        }
    }
    // (Matches were found: the comparison is not of empty answers.)
    let found = seen(4, usize::MAX, "needle haystack");
    assert!(found.iter().filter(|(_, hit)| hit.as_ref().is_some_and(|h| h.0 == PHRASE)).count() >= 10);
    assert!(found.iter().any(|(_, hit)| hit.as_ref().is_some_and(|h| h.0 >= ONE_MESSAGE)), "words apart");
}

/// A few prospects on more threads than they need: each is taken and
/// verified once, also when the threads race for the last one (a thread
/// that found one left must not take one past the end), and the ranking
/// sees them all in order.
#[test]
fn a_few_prospects_on_many_threads_are_each_taken_once() {
    let (sessions, docs) = corpus(120);
    let sessions = Headers::all(&sessions);
    let query = Query::parse("needle").unwrap();
    let finders = Finders::of(&query);
    for n in 2..=4 {
        let prospects: Vec<Prospect> = (1..=n)
            .map(|at| Prospect {
                at,
                key: Key { tier: PHRASE, relevance: 0.0, cwd_rank: 0, created: 0.0, order: at },
                settled: None,
            })
            .collect();
        for _ in 0..4000 {
            let mut got = Vec::new();
            in_order(&prospects, sessions, &docs, &finders, VERIFIERS, |p, verified| {
                got.push((p.at, verified().expect("readable").is_some()));
                ControlFlow::Continue(())
            });
            let expected: Vec<(usize, bool)> = (1..=n).map(|at| (at, at % 9 == 3 || at % 9 == 6)).collect();
            assert_eq!(got, expected, "{n} prospects");
        }
    }
}
