//! What one change costs a long-lived resolver's filtered `candidates`
//! over a watched DSH root, counted (not timed): after one log grew, the
//! directories and headers the listing read, the directories it looked
//! at, the sessions it put together again, the titles read and their logs'
//! bytes, and the index entries checked and remade must be the same at 100
//! sessions as at 2,000.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use dsh_session_reference::sources::MultiQuery;
use dsh_session_reference::{
    block_on, CandidateOptions, Config, DshStore, Fingerprint, QueryFuture, Resolver, SessionHeader, SessionQuery,
    SharedListing, SurfaceData, Target,
};

/// The DSH store, counting the titles read and the bytes of the logs they
/// were read from.
struct Counted {
    store: DshStore,
    logs: HashMap<String, PathBuf>,
    titles: AtomicU64,
    bytes: AtomicU64,
}

impl SessionQuery for Counted {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        SessionQuery::list_sessions(&self.store)
    }
    fn read_title<'a>(&'a self, id: &'a str) -> QueryFuture<'a, Option<String>> {
        self.titles.fetch_add(1, Ordering::Relaxed);
        let size = self.logs.get(id).and_then(|p| std::fs::metadata(p).ok()).map_or(0, |m| m.len());
        self.bytes.fetch_add(size, Ordering::Relaxed);
        SessionQuery::read_title(&self.store, id)
    }
    fn read_surface<'a>(&'a self, id: &'a str) -> QueryFuture<'a, SurfaceData> {
        SessionQuery::read_surface(&self.store, id)
    }
    fn fingerprints<'a>(&'a self, ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        SessionQuery::fingerprints(&self.store, ids)
    }
    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        SessionQuery::shared_listing(&self.store)
    }
}

fn line(v: serde_json::Value) -> String {
    format!("{v}\n")
}

/// A root of `n` sessions in 20 project directories, each a header and a
/// title (every log the same size).
fn root(dir: &Path, n: usize) -> HashMap<String, PathBuf> {
    let mut logs = HashMap::new();
    for i in 0..n {
        let (id, cwd) = (format!("session-{i:05}"), format!("/work/p{:02}", i % 20));
        let at = dir.join(format!("--work-p{:02}--", i % 20)).join(&id);
        std::fs::create_dir_all(&at).unwrap();
        let mut text = line(serde_json::json!({"type": "session", "version": 0, "id": id,
            "createdAt": 1_700_000_000_000u64 + i as u64, "cwd": cwd, "delegationDepth": 0}));
        let title = format!("Task {i:05} of the {} kind", ["alpha", "kappa", "gamma", "delta"][i % 4]);
        text.push_str(&line(serde_json::json!({"type": "session/title", "seq": 0, "time": 0,
            "data": {"title": title}})));
        let path = at.join("session.jsonl");
        std::fs::write(&path, text).unwrap();
        logs.insert(id, path);
    }
    logs
}

/// Counts so far: the listing's (directories, headers, sessions put
/// together), the titles read and their bytes, the index's (checked,
/// remade, matched by id).
type Work = [u64; 9];

fn work(r: &Resolver, store: &DshStore, counted: &Counted) -> Work {
    let (dirs, headers, assembled, looked_at) = store.listing_work();
    let (checked, remade, matched) = r.discovery_filter_work();
    let (titles, bytes) = (counted.titles.load(Ordering::Relaxed), counted.bytes.load(Ordering::Relaxed));
    [dirs, headers, assembled, looked_at, titles, bytes, checked, remade, matched]
}

fn minus(a: Work, b: Work) -> Work {
    std::array::from_fn(|i| a[i] - b[i])
}

/// What a filtered query after one log grew (by a new title) costs a
/// long-lived resolver over `n` sessions, through the view the fronts open
/// (a `MultiQuery` over the store, watched from its first listing).
fn one_change(n: usize) -> Work {
    let tmp = tempfile::tempdir().unwrap();
    let logs = root(tmp.path(), n);
    let store = DshStore::open(tmp.path()).unwrap().watching_from_first_listing();
    let counted = Arc::new(Counted {
        store: store.clone(),
        logs: logs.clone(),
        titles: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    });
    let multi = MultiQuery::new().with_source("dsh", "", counted.clone());
    let r = Resolver::new(Arc::new(multi), Config::default());
    let target = Target::new("new-chat", Some("/work/p03".into()));
    let ask = |q: &str| block_on(r.candidates(&target, q, &CandidateOptions::default(), None)).unwrap();
    let first = ask("kappa");
    assert_eq!(first.len(), 50.min(n / 4));
    assert_eq!(counted.titles.load(Ordering::Relaxed), n as u64, "the first query reads every title");
    assert!(store.is_watching(), "this test needs the root watched (inotify)");
    ask("kappa");
    let before = work(&r, &store, &counted);
    let mut f = std::fs::OpenOptions::new().append(true).open(&logs["session-00007"]).unwrap();
    f.write_all(
        line(serde_json::json!({"type": "session/title", "seq": 1, "time": 1,
        "data": {"title": "Renamed ZQX"}}))
        .as_bytes(),
    )
    .unwrap();
    drop(f);
    let found = ask("zqx");
    assert_eq!(found.iter().map(|c| c.session_id.as_str()).collect::<Vec<_>>(), ["session-00007"]);
    let cost = minus(work(&r, &store, &counted), before);
    // Nothing changed since: nothing is read, checked or remade.
    let settled = work(&r, &store, &counted);
    assert_eq!(ask("zqx"), found);
    assert_eq!(ask("kappa").len(), first.len());
    assert_eq!(minus(work(&r, &store, &counted), settled), [0; 9], "a query with nothing changed does no work");
    cost
}

#[test]
fn one_change_costs_the_same_at_100_and_at_2000_sessions() {
    let small = one_change(100);
    let large = one_change(2000);
    assert_eq!(small, large, "the work of one change grows with the number of sessions");
    let [dirs, headers, assembled, looked_at, titles, bytes, checked, remade, matched] = small;
    assert_eq!([dirs, headers, assembled], [1, 1, 1], "one directory, one header, one session listed again");
    assert_eq!(looked_at, 2, "one directory looked at to list it, once to count its log for the root's encoding");
    assert_eq!(titles, 1, "one title read");
    assert!(bytes > 0 && bytes < 1024, "the grown log's bytes alone: {bytes}");
    assert_eq!([checked, remade, matched], [1, 1, 0], "one index entry checked and remade, no listing matched by id");
}
