//! Known-item search: for many sessions, queries made from that session's
//! own projected text, and where it ranks among every session that the
//! search returns, for ours and, beside it over the same text, SQLite
//! FTS5's `bm25()` and tantivy's BM25 (each over 3-grams and over words).
//!
//! Run: `cargo bench -p dsh-session-reference --bench known_item`
//! Environment: `DSR_BENCH_SESSIONS` (generated sessions, default 2,000),
//! `DSR_BENCH_KB` (log size per session, default 150), `DSR_KNOWN_TARGETS`
//! (sessions queries are made from, per corpus, default 200),
//! `DSR_BENCH_FTS5` and `DSR_BENCH_TANTIVY` (the peers, as in the discovery
//! benchmark; `DSR_FTS5_KEEP_DB` keeps and reuses their databases),
//! `DSR_KNOWN_QUERIES` (print every query and the rank each engine gave).
//!
//! Two corpora: the discovery benchmark's generated DSH sessions
//! (common/corpus.rs), and the project's copies of public transcripts
//! (tests/fixtures: the DSH fixture logs, the Claude Code and Codex logs of
//! other projects' tests, see tests/fixtures/foreign-logs/README.md), read
//! through the sources as every front reads them.
//!
//! Four kinds of query, each made from one target session with a seeded
//! generator; words are taken uniformly from the distinct words of at
//! least four characters of the text they come from (punctuation around a
//! word trimmed), so a query is made of the words a person could recall,
//! not weighted towards the most frequent:
//! - `phrase`: four consecutive words of one line of one message, as they
//!   stand (joined by single spaces);
//! - `one message`: two to four words of one message, in shuffled order;
//! - `title`: one to three words of its title;
//! - `spread`: two to four words, each from a different message.
//!
//! For each kind: MRR@10 (the mean of 1/rank, 0 past 10) and recall@1 and
//! @5 (the share of queries whose target ranks first, in the first five).
//! Every engine is asked for its first 10; ours is the index the resolver
//! searches (the crate's hidden `search_index`, over the same projected
//! texts and titles), ranked for a searching session with no cwd.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_session_reference::search_index::{Index, Session};
use dsh_session_reference::sources::{open_sources, SourceSpec};
use dsh_session_reference::{
    block_on, Config, DshStore, ReadOptions, Resolver, Role, SessionHeader, SessionQuery, Target,
};

#[path = "common/corpus.rs"]
mod corpus;
use corpus::{write_root, Rng};
#[path = "common/peers.rs"]
mod peers;
use peers::{build_tantivy_peer, fields_text, start_peers};

/// Results asked of every engine: the reciprocal rank is cut at 10.
const LIMIT: usize = 10;

/// A session as the search sees it: its header, title and projected
/// messages (who said each, and its text).
struct Known {
    header: SessionHeader,
    title: Option<String>,
    items: Vec<(Role, String)>,
}

/// Every session of `query`, read as a reference reads it (whole, one
/// page of every message).
fn read_all(query: Arc<dyn SessionQuery>) -> Vec<Known> {
    let headers = block_on(query.list_sessions()).expect("the listing");
    let resolver = Resolver::new(query.clone(), Config::default());
    let reader = Target::new("known-item-reader", None);
    let options = ReadOptions::default().with_max_bytes(1 << 40).with_start(Some(0));
    headers
        .into_iter()
        .filter_map(|header| {
            let page = match block_on(resolver.read(&reader, &header.id, &options, None)) {
                Ok(page) => page,
                Err(e) => {
                    println!("  (left out {}: {})", header.id, e.message());
                    return None;
                }
            };
            assert_eq!(page.messages.len() as u64, page.total_messages, "{}: one page holds it all", header.id);
            let title = block_on(query.read_title(&header.id)).ok().flatten();
            let items = page.messages.into_iter().map(|m| (m.role, m.text)).collect();
            Some(Known { header, title, items })
        })
        .collect()
}

/// The words of `text` a query may take: whitespace-separated, trimmed of
/// the punctuation around them, at least four characters, distinct, in
/// order of first appearance.
fn words_of(text: &str) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.chars().count() >= 4 && seen.insert(w.to_lowercase()))
        .collect()
}

/// `k` distinct picks of `items`, uniformly (fewer when there are fewer).
fn pick<T: Copy>(rng: &mut Rng, items: &[T], k: usize) -> Vec<T> {
    let mut pool = items.to_vec();
    let mut out = Vec::new();
    while out.len() < k && !pool.is_empty() {
        out.push(pool.swap_remove(rng.below(pool.len())));
    }
    out
}

/// The kinds of query, in report order.
const KINDS: [&str; 4] = ["phrase", "one message", "title", "spread"];

/// A query of `kind` made from `s`, if it has what the kind needs.
fn query_of(kind: &str, s: &Known, rng: &mut Rng) -> Option<String> {
    match kind {
        "phrase" => {
            // Windows of four single-space-separated words of one line.
            let mut windows = Vec::new();
            for (_, text) in &s.items {
                for line in text.lines() {
                    let tokens: Vec<&str> = line.split(' ').collect();
                    for w in tokens.windows(4) {
                        if w.iter().all(|t| !t.is_empty() && !t.contains(char::is_whitespace)) {
                            windows.push(w.join(" "));
                        }
                    }
                }
            }
            (!windows.is_empty()).then(|| windows.swap_remove(rng.below(windows.len())))
        }
        "one message" => {
            let rich: Vec<&str> = s.items.iter().map(|(_, t)| t.as_str()).filter(|t| words_of(t).len() >= 4).collect();
            let text = *pick(rng, &rich, 1).first()?;
            let k = 2 + rng.below(3);
            Some(pick(rng, &words_of(text), k).join(" "))
        }
        "title" => {
            let title = s.title.as_deref()?;
            let words = words_of(title);
            let k = 1 + rng.below(3);
            (!words.is_empty()).then(|| pick(rng, &words, k).join(" "))
        }
        "spread" => {
            let texts: Vec<&str> =
                s.items.iter().map(|(_, t)| t.as_str()).filter(|t| !words_of(t).is_empty()).collect();
            if texts.len() < 2 {
                return None;
            }
            let k = 2 + rng.below(3);
            let mut words: Vec<String> = Vec::new();
            for text in pick(rng, &texts, k) {
                let fresh: Vec<&str> = words_of(text)
                    .into_iter()
                    .filter(|w| !words.iter().any(|have| have.eq_ignore_ascii_case(w)))
                    .collect();
                if let Some(w) = pick(rng, &fresh, 1).first() {
                    words.push((*w).to_owned());
                }
            }
            (words.len() >= 2).then(|| words.join(" "))
        }
        _ => unreachable!("a kind of query"),
    }
}

/// Where `target` is among `ids` (1 for the first), if there.
fn rank_of(ids: &[String], target: &str) -> Option<usize> {
    ids.iter().position(|id| id == target).map(|i| i + 1)
}

/// MRR@10, recall@1 and recall@5 of a set of ranks.
#[derive(Default, Clone)]
struct Score {
    queries: usize,
    rr: f64,
    at1: usize,
    at5: usize,
}

impl Score {
    fn add(&mut self, rank: Option<usize>) {
        self.queries += 1;
        if let Some(r) = rank.filter(|&r| r <= LIMIT) {
            self.rr += 1.0 / r as f64;
            self.at1 += usize::from(r == 1);
            self.at5 += usize::from(r <= 5);
        }
    }

    fn cell(&self) -> String {
        let n = self.queries.max(1) as f64;
        format!("{:.3} / {:.2} / {:.2}", self.rr / n, self.at1 as f64 / n, self.at5 as f64 / n)
    }
}

/// One corpus measured: every engine's scores per kind of query.
fn measure(name: &str, sessions: Vec<Known>, targets: usize, peers_wanted: (bool, Option<&Path>), keep_at: &Path) {
    let text: usize = sessions.iter().flat_map(|s| &s.items).map(|(_, t)| t.len()).sum();
    println!("{name}: {} sessions, {:.1} MB of projected text", sessions.len(), text as f64 / 1e6);
    let index = Index::build(
        sessions
            .iter()
            .map(|s| Session {
                header: s.header.clone(),
                title: s.title.clone(),
                texts: s.items.iter().map(|(_, t)| t.clone()).collect(),
            })
            .collect(),
    );
    let corpus: Vec<(String, String, f64, String)> = sessions
        .iter()
        .map(|s| {
            let (h, cwd) = (&s.header, s.header.cwd.clone().unwrap_or_default());
            let body = fields_text(s.items.iter().map(|(_, t)| t), s.title.as_deref().unwrap_or(""), &h.id, &cwd);
            (h.id.clone(), cwd, h.created_at.as_f64().unwrap_or(0.0), body)
        })
        .collect();
    let (want_fts5, tantivy) = peers_wanted;
    let mut peers = start_peers(want_fts5, tantivy, &corpus, keep_at, "known.");
    let mut engines = vec!["ours".to_owned()];
    for p in &peers {
        engines.push(format!("{} bm25, trigrams", p.name));
        engines.push(format!("{} bm25, words", p.name));
    }
    let searcher = Target::new("known-item-searcher", None);
    let chosen: Vec<usize> = {
        let mut rng = Rng(0x51ed_2701_8f3c_9a4b);
        let all: Vec<usize> = (0..sessions.len()).collect();
        pick(&mut rng, &all, targets)
    };
    let print_queries = std::env::var_os("DSR_KNOWN_QUERIES").is_some();
    let mut table = Vec::new();
    for (k, kind) in KINDS.iter().enumerate() {
        let mut rng = Rng(0x2f6b_11d3_a4c5_e897 ^ (k as u64 + 1));
        let mut scores = vec![Score::default(); engines.len()];
        for &t in &chosen {
            let s = &sessions[t];
            let Some(q) = query_of(kind, s, &mut rng) else { continue };
            let id = &s.header.id;
            let ours: Vec<String> =
                index.search(&searcher, &q, LIMIT).expect("our search").into_iter().map(|f| f.id).collect();
            let mut ranks = vec![rank_of(&ours, id)];
            assert!(
                ours.len() == LIMIT || ranks[0].is_some(),
                "{kind} {q:?}: the target holds every word, so it is found"
            );
            for p in &mut peers {
                for tok in ["trigram", "words"] {
                    ranks.push(rank_of(&p.ranked(&q, tok, LIMIT), id));
                }
            }
            if print_queries {
                let shown: Vec<String> = ranks.iter().map(|r| r.map_or("-".into(), |r| r.to_string())).collect();
                println!("  {kind} {q:?} in {id}: {}", shown.join(" "));
            }
            for (score, rank) in scores.iter_mut().zip(ranks) {
                score.add(rank);
            }
        }
        table.push((kind, scores));
    }
    println!("  MRR@10 / recall@1 / recall@5 ({} target sessions):", chosen.len());
    println!("  | query kind (queries) | {} |", engines.join(" | "));
    for (kind, scores) in &table {
        let cells: Vec<String> = scores.iter().map(Score::cell).collect();
        println!("  | {kind} ({}) | {} |", scores[0].queries, cells.join(" | "));
    }
    let (sessions_n, text_bytes, index_bytes, _) = index.stats();
    println!(
        "  our index: {sessions_n} sessions, {:.1}% of the projected text",
        100.0 * index_bytes as f64 / text_bytes.max(1) as f64
    );
}

fn main() {
    let env_num = |var: &str, default: usize| std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let (n, kb, targets) =
        (env_num("DSR_BENCH_SESSIONS", 2_000), env_num("DSR_BENCH_KB", 150), env_num("DSR_KNOWN_TARGETS", 200));
    let want_fts5 = std::env::var_os("DSR_BENCH_FTS5").is_some();
    let tantivy = std::env::var_os("DSR_BENCH_TANTIVY").map(|_| build_tantivy_peer());
    let tmp = tempfile::tempdir().unwrap();
    // The peers' databases: kept in the system's temporary directory under
    // a name of the corpus with `DSR_FTS5_KEEP_DB`, else beside the root.
    let keep = std::env::var_os("DSR_FTS5_KEEP_DB").is_some();
    let base = |name: &str| -> PathBuf {
        if keep {
            std::env::temp_dir().join(format!("dsr-known-{name}"))
        } else {
            tmp.path().join(name)
        }
    };

    let root = tmp.path().join("generated");
    std::fs::create_dir_all(&root).unwrap();
    let (_, bytes) = write_root(&root, n, kb);
    println!("generated {n} sessions, {:.0} MB of plain logs", bytes as f64 / 1e6);
    let store: Arc<dyn SessionQuery> = Arc::new(DshStore::open(&root).unwrap());
    let generated = read_all(store);
    measure("generated sessions", generated, targets, (want_fts5, tantivy.as_deref()), &base(&format!("{n}x{kb}")));

    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let specs = [
        format!("dsh={}", fixtures.join("dsh-logs/raw").display()),
        format!("claude-code={}", fixtures.join("foreign-logs/claude-code").display()),
        format!("codex={}", fixtures.join("foreign-logs/codex/daaain").display()),
    ];
    let specs: Vec<SourceSpec> = specs.iter().map(|s| SourceSpec::parse(s).unwrap().resolve().unwrap().spec).collect();
    let multi: Arc<dyn SessionQuery> = Arc::new(open_sources(&specs).unwrap());
    let real = read_all(multi);
    measure("public transcripts", real, targets, (want_fts5, tantivy.as_deref()), &base("fixtures"));
}
