//! What a warm search costs a long-lived resolver over a watched DSH root,
//! counted (not timed): once the index holds every session and a search
//! was made over the same sessions, a search looks its words up, so the
//! sessions whose id, cwd and title it tests and the sessions it looks at
//! past them must be the same at 100 sessions as at 2,000, when the same
//! few sessions hold a word the vocabularies can tell of (a rare number). Its answers stay those the searches gave
//! while the index was being built (exactness against a pass over every
//! session is the index's own test).

use std::path::Path;
use std::sync::Arc;

use dsh_session_reference::sources::MultiQuery;
use dsh_session_reference::{block_on, Config, DshStore, Resolver, SearchOptions, SearchResult, Target};

fn line(v: serde_json::Value) -> String {
    format!("{v}\n")
}

/// A deterministic generator (a linear congruential one's high bits).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// `bytes` of prose from a vocabulary of 3,000 words of letters alone (no
/// digit: the numbers searched are only where they are put), the first
/// words far more often, as in writing.
fn prose(rng: &mut Rng, bytes: usize) -> String {
    const LETTERS: &[u8; 26] = b"etaoinshrdlcumwfgypbvkjxqz";
    let mut text = String::new();
    while text.len() < bytes {
        // A word of the vocabulary: its rank drawn skewed to the first.
        let rank = (rng.next() % 3000) * (rng.next() % 3000) / 3000;
        let mut word = Rng(rank + 1);
        let len = 2 + word.next() % 5 + word.next() % 5;
        for _ in 0..len {
            text.push(LETTERS[((word.next() % 26) * (word.next() % 26) / 26) as usize] as char);
        }
        text.push(if rng.next() % 12 == 0 { '.' } else { ' ' });
    }
    text
}

/// A root of `n` sessions in 20 project directories: the 100 newest with
/// about 24 KB of messages each (enough text to train the index's
/// dictionary, whatever `n`), the others with about 1 KB. Sessions 3, 40
/// and 77 hold `PR4711` in a message, session 12 in its title, and
/// sessions 40 and 55 hold `zebrafish`.
fn root(dir: &Path, n: usize) {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for i in 0..n {
        let (id, cwd) = (format!("session-{i:05}"), format!("/work/p{:02}", i % 20));
        let at = dir.join(format!("--work-p{:02}--", i % 20)).join(&id);
        std::fs::create_dir_all(&at).unwrap();
        let mut text = line(serde_json::json!({"type": "session", "version": 0, "id": id,
            "createdAt": 1_700_000_000_000u64 - i as u64, "cwd": cwd, "delegationDepth": 0}));
        let mut title = format!("Task {} of the day", prose(&mut rng, 12).trim());
        if i == 12 {
            title.push_str(" PR4711");
        }
        text.push_str(&line(serde_json::json!({"type": "session/title", "seq": 0, "time": 0,
            "data": {"title": title}})));
        let per_message = if i < 100 { 2_000 } else { 500 };
        for m in 0..if i < 100 { 12 } else { 2 } {
            let mut said = prose(&mut rng, per_message);
            if m == 1 && [3, 40, 77].contains(&i) {
                said.push_str(" see PR4711 here");
            }
            if m == 0 && [40, 55].contains(&i) {
                said.push_str(" zebrafish");
            }
            let seq = 1 + 2 * m as u64;
            text.push_str(&line(serde_json::json!({"type": "user/message", "seq": seq, "time": seq,
                "data": {"id": format!("u{m}"), "role": "user", "content": [{"type": "text", "text": said}],
                "source": {"kind": "user"}}, "surfaceOp": "append"})));
            let answer = prose(&mut rng, per_message);
            text.push_str(&line(serde_json::json!({"type": "assistant/message", "seq": seq + 1, "time": seq,
                "data": {"turn": m, "step": 1, "message": {"id": format!("a{m}"), "role": "assistant",
                "content": [{"type": "text", "text": answer}], "source": {"kind": "model", "provider": "p",
                "model": "m"}}}, "surfaceOp": "append"})));
        }
        std::fs::write(at.join("session.jsonl"), text).unwrap();
    }
}

fn ids(results: &[SearchResult]) -> Vec<(&str, String)> {
    results.iter().map(|r| (r.candidate.session_id.as_str(), format!("{:?} {}", r.field, r.snippet))).collect()
}

/// What one warm search touched (sessions whose fields it tested, sessions
/// it looked at) and what it found (ids, and each hit's field and snippet).
type Warm = ((u64, u64), Vec<(String, String)>);

/// What one warm search of each query costs a long-lived resolver over
/// `n` sessions (sessions whose fields it tested, sessions it looked at),
/// through the view the fronts open; and its answers.
fn warm_search(n: usize, queries: &[&str]) -> Vec<Warm> {
    let tmp = tempfile::tempdir().unwrap();
    root(tmp.path(), n);
    let store = DshStore::open(tmp.path()).unwrap().watching_from_first_listing();
    let multi = MultiQuery::new().with_source("dsh", "", Arc::new(store.clone()));
    let r = Resolver::new(Arc::new(multi), Config::default());
    let target = Target::new("new-chat", Some("/work/p03".into()));
    let opts = SearchOptions::default();
    let search = |q: &str| block_on(r.search(&target, q, &opts, None)).unwrap();
    // The first search indexes every session.
    let first: Vec<Vec<SearchResult>> = queries.iter().map(|q| search(q)).collect();
    assert!(store.is_watching(), "this test needs the root watched (inotify)");
    let stats = r.search_index_stats();
    assert_eq!(stats.sessions, n, "every session indexed");
    queries
        .iter()
        .zip(first)
        .map(|(q, first)| {
            let before = r.discovery_search_work();
            let warm = search(q);
            let after = r.discovery_search_work();
            assert_eq!(ids(&warm), ids(&first), "{q:?}: the same answer as while the index was built");
            assert_eq!(ids(&search(q)), ids(&first), "{q:?}: and again");
            let answer = ids(&warm).into_iter().map(|(id, hit)| (id.to_owned(), hit)).collect();
            ((after.0 - before.0, after.1 - before.1), answer)
        })
        .collect()
}

#[test]
fn a_warm_search_costs_the_same_at_100_and_at_2000_sessions() {
    let queries = ["PR4711", "zebrafish", "pr4711 zebrafish", "4711"];
    let small = warm_search(100, &queries);
    let large = warm_search(2000, &queries);
    for ((q, (small_work, small_answer)), (large_work, large_answer)) in queries.iter().zip(&small).zip(&large) {
        assert_eq!(small_answer, large_answer, "{q:?}: the same sessions hold it at both sizes");
        if *q == "zebrafish" {
            // A word of common letters: no vocabulary can tell who holds
            // it, so every session's filter is tested (the same answer).
            assert_eq!((small_work.1, large_work.1), (100, 2000), "{q:?}");
            continue;
        }
        assert_eq!(small_work, large_work, "{q:?}: the work of a warm search grows with the number of sessions");
    }
    let found = |q: usize| small[q].1.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>();
    // The title first, then the messages, newest first.
    assert_eq!(found(0), ["session-00012", "session-00003", "session-00040", "session-00077"]);
    assert_eq!(found(1), ["session-00040", "session-00055"]);
    assert_eq!(found(2), ["session-00040"]);
    let (fields, sessions) = small[0].0;
    assert!(fields <= 4 && sessions <= 8, "a few sessions touched: {fields} fields, {sessions} sessions");
}
