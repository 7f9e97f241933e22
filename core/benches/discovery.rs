//! Discovery at scale: the title cache behind filtered `candidates` and
//! the full-text search index, over a generated root of realistic DSH
//! sessions (user and assistant text, reasoning, big tool outputs, titles).
//!
//! Run: `cargo bench -p dsh-session-reference --bench discovery`
//! Environment: `DSR_BENCH_SESSIONS` (default 2,000), `DSR_BENCH_KB` (log
//! size per session, default 150), `DSR_BENCH_ROOT` (write the root there
//! and keep it), `DSR_BENCH_GENERATE_ONLY` (with `DSR_BENCH_ROOT`: write the
//! root, time nothing), `DSR_BENCH_CANDIDATES_ONLY` (time the DSH store's
//! `candidates` rows, print them also as one `sdk-compare` JSON line, and
//! stop: what scripts/sdk_discovery_bench.py sets the SDK's figures beside).
//! `DSR_BENCH_SEARCH_ONLY`: the search rows alone. `DSR_BENCH_CURVE`
//! (sizes, comma-separated: `10000,40000,100000`): the discovery curve
//! alone, one run per size over one root grown from size to size (see
//! [`curve`]; `DSR_BENCH_KB=16` keeps 100,000 sessions near 1.7 GB). Peers timed beside the
//! search, on the same fields and queries: `DSR_BENCH_FTS5` (SQLite FTS5,
//! scripts/fts5_bench.py) and `DSR_BENCH_TANTIVY` (tantivy,
//! bench/tantivy-peer, built here on first use); `DSR_FTS5_KEEP_DB` keeps
//! their databases and reuses them while the export is the same;
//! `DSR_BENCH_PEER_TEXT` has them read each ranked result's text too.
//! `DSR_BENCH_PROFILE_QUERY=<query>`: after the first search, that query
//! alone, again and again until stopped (to profile it with `perf record
//! -p`), printing its median every 100 searches.
//! Each search row also times the index alone (the crate's hidden
//! `search_index`, no resolver, no listing) over the same sessions.
//!
//! Two sources over the same sessions: the embedded DSH store read from
//! disk (it fingerprints each log by its identity and, from its second
//! listing on, watches the root; also timed without watching and without
//! fingerprints), and an in-memory query holding each session's title and
//! surface JSON (no listing cost: the resolver's own cost alone).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_session_reference::sources::claude_code::ClaudeCodeSource;
use dsh_session_reference::sources::dsh::DshStore;
use dsh_session_reference::{
    block_on, CandidateOptions, Config, FileSource, MemoryQuery, QueryFuture, Resolver, SearchOptions, SessionHeader,
    SessionQuery, SurfaceData, Target,
};
use serde_json::json;

mod common;
use common::cpu_time;
#[path = "common/corpus.rs"]
mod corpus;
use corpus::{line, turn, write_root, write_sessions, Log, Rng, Words};
#[path = "common/peers.rs"]
mod peers;
use peers::{build_tantivy_peer, fields_text, start_peers};

/// Appends `lines` lines (whole turns) to a log.
fn append(log: &mut Log, lines: usize) {
    let mut rng = Rng(log.seq + 7);
    let words = Words::new(&mut rng);
    let mut text = String::new();
    let mut n = 0;
    while n < lines {
        log.turns += 1;
        let before = text.lines().count();
        turn(&words, &mut rng, &mut log.seq, log.turns, false, &mut text);
        n += text.lines().count() - before;
    }
    std::fs::OpenOptions::new().append(true).open(&log.path).unwrap().write_all(text.as_bytes()).unwrap();
}

/// A root of `n` Claude Code transcripts of about `kb` KB each, in 20
/// project directories: user text, assistant text and tool use, a big tool
/// result, and now and then a custom title.
fn write_claude_root(root: &Path, n: usize, kb: usize) -> (Vec<PathBuf>, usize) {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let words = Words::new(&mut rng);
    let mut paths = Vec::with_capacity(n);
    let mut total = 0;
    for i in 0..n {
        let dir = root.join(format!("-work-q{}", i % 20));
        std::fs::create_dir_all(&dir).unwrap();
        let (id, cwd) = (format!("c{i:05}"), format!("/work/q{}", i % 20));
        let mut text = String::new();
        let mut parent: Option<String> = None;
        let mut t = 0u64;
        while text.len() < kb * 1024 {
            t += 1;
            let ts = format!("2026-01-01T00:{:02}:{:02}.000Z", (t / 60) % 60, t % 60);
            let (u, a, r) = (format!("u{t}"), format!("a{t}"), format!("r{t}"));
            let tool = 2000 + rng.below(4000);
            let rec = |uuid: &str, parent: Option<&str>, message: serde_json::Value| {
                line(json!({"type": if message["role"] == "user" { "user" } else { "assistant" }, "uuid": uuid,
                    "parentUuid": parent, "isSidechain": false, "cwd": cwd, "sessionId": id, "timestamp": ts,
                    "message": message}))
            };
            text.push_str(&rec(&u, parent.as_deref(), json!({"role": "user", "content": words.text(&mut rng, 300)})));
            text.push_str(&rec(
                &a,
                Some(&u),
                json!({"id": format!("m{t}"), "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": words.text(&mut rng, 600)},
                    {"type": "tool_use", "id": format!("t{t}"), "name": "Read", "input": {"file_path": "/x"}}]}),
            ));
            text.push_str(&rec(
                &r,
                Some(&a),
                json!({"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": format!("t{t}"), "content": words.text(&mut rng, tool)}]}),
            ));
            if t % 7 == 1 {
                text.push_str(&line(json!({"type": "custom-title", "customTitle": words.text(&mut rng, 30).trim(),
                    "sessionId": id})));
            }
            parent = Some(r);
        }
        total += text.len();
        let path = dir.join(format!("{id}.jsonl"));
        std::fs::write(&path, &text).unwrap();
        paths.push(path);
    }
    (paths, total)
}

/// The store without its fingerprints: every filtered query reads every
/// title (what a query cost before the discovery caches).
struct Plain(DshStore);

impl SessionQuery for Plain {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        SessionQuery::list_sessions(&self.0)
    }
    fn read_title<'a>(&'a self, id: &'a str) -> QueryFuture<'a, Option<String>> {
        SessionQuery::read_title(&self.0, id)
    }
    fn read_surface<'a>(&'a self, id: &'a str) -> QueryFuture<'a, SurfaceData> {
        SessionQuery::read_surface(&self.0, id)
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let out = f();
    (out, t.elapsed())
}

/// A log as written, to append to: its next seq and its turns, from its
/// last lines.
fn reopen(path: &Path) -> Log {
    let text = std::fs::read_to_string(path).unwrap();
    let (mut seq, mut turns) = (0, 0);
    for line in text.lines().rev().take(8) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        seq = seq.max(v["seq"].as_u64().unwrap_or(0) + 1);
        if v["type"] == "turn/end" {
            turns = turns.max(v["data"]["turn"].as_u64().unwrap());
        }
    }
    Log { path: path.to_owned(), seq, turns }
}

/// Resident and peak resident memory of this process, in bytes.
fn rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// `DSR_BENCH_CURVE=10000,40000,100000`: one run at each size over one
/// root grown from size to size (sessions of `DSR_BENCH_KB`), each timed
/// in a process of its own ([`curve_at`]) through the view every front
/// opens (a `MultiQuery` over the DSH store, watched from its first
/// listing as the SDKs' stores are): one table row per size. The first
/// query lists every session and reads every title; the warm one is
/// median of 15 with nothing changed; "after one log grew" is the median
/// (and the slowest) of 15 queries, each after another log gained 100
/// lines (20 turns, new titles among them); the warm search is the median
/// of 15 of `PR1137` once the index is built; memory is the process's
/// resident set after the candidates queries and after the searches.
fn curve(sizes: &[usize], kb: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::env::var_os("DSR_BENCH_ROOT").map_or_else(|| tmp.path().to_owned(), PathBuf::from);
    std::fs::create_dir_all(&root).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let words = Words::new(&mut rng);
    let (mut written, mut bytes) = (0, 0);
    println!(
        "| sessions (logs) | first filtered query | warm filtered query | after one log grew | warm search | resident \
         memory |"
    );
    println!("|---|---|---|---|---|---|");
    let mut rows: Vec<serde_json::Value> = Vec::new();
    for &n in sizes {
        let ((_, more), took) = time(|| write_sessions(&root, written..n.max(written), kb, &words, &mut rng));
        (written, bytes) = (n.max(written), bytes + more);
        eprintln!(
            "root at {written} sessions, {:.0} MB of logs (written in {:.0} s)",
            bytes as f64 / 1e6,
            took.as_secs_f64()
        );
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .env("DSR_BENCH_CURVE_AT", &root)
            .env("DSR_BENCH_SESSIONS", n.to_string())
            .env("DSR_BENCH_LOG_BYTES", bytes.to_string())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let line = String::from_utf8_lossy(&out.stdout);
        let v: serde_json::Value = serde_json::from_str(line.lines().last().unwrap()).unwrap();
        let ms = |k: &str| format!("{:.2} ms", v[k].as_f64().unwrap() * 1e3);
        let mb = |k: &str| v[k].as_f64().unwrap() / 1e6;
        println!(
            "| {n} ({:.0} MB) | {:.2} s ({:.0} MB/s; CPU {:.2} s) | {} (CPU {}) | {} (CPU {}; slowest {}, most CPU {}) | \
             {} (CPU {}) | {:.0} MB ({:.0} MB with the search index) |",
            bytes as f64 / 1e6,
            v["first_s"].as_f64().unwrap(),
            bytes as f64 / 1e6 / v["first_s"].as_f64().unwrap(),
            v["first_cpu_s"].as_f64().unwrap(),
            ms("warm_s"),
            ms("warm_cpu_s"),
            ms("appended_s"),
            ms("appended_cpu_s"),
            ms("appended_max_s"),
            ms("appended_max_cpu_s"),
            ms("search_s"),
            ms("search_cpu_s"),
            mb("rss_candidates"),
            mb("rss_search"),
        );
        let at = |i: usize| v["load"][i].as_f64().unwrap_or(f64::NAN);
        eprintln!("load at {n} sessions: {:.1} at the start, {:.1} at the end", at(0), at(1));
        rows.push(v);
    }
    if let (Some(a), Some(b)) = (rows.first(), rows.last()) {
        let growth = |k: &str| (b[k].as_f64().unwrap() - a[k].as_f64().unwrap()) / 1e6;
        println!(
            "resident memory from {} to {} sessions: +{:.0} MB (+{:.0} MB with the search index)",
            a["sessions"],
            b["sessions"],
            growth("rss_candidates"),
            growth("rss_search")
        );
    }
}

/// The machine's load (the one-minute average of `/proc/loadavg`).
fn load() -> f64 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().next().and_then(|l| l.parse().ok()).unwrap_or(f64::NAN)
}

/// One row of [`curve`], in this process: a long-lived resolver over the
/// root at `DSR_BENCH_CURVE_AT`; its figures as one JSON line.
fn curve_at(root: &Path) {
    let load_before = load();
    let target = Target::new("new-chat", Some("/work/p3".into()));
    let (rss_before, _) = rss();
    // Watching from its first listing, as the SDKs' stores and the servers do.
    let store = DshStore::open(root).unwrap().watching_from_first_listing();
    let query = dsh_session_reference::sources::MultiQuery::new().with_source("dsh", "", Arc::new(store.clone()));
    let r = Resolver::new(Arc::new(query), Config::default());
    let ask = || block_on(r.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap();
    // Wall time and the process's CPU time (the machine may be busy).
    let timed = || {
        let cpu = cpu_time();
        let (_, wall) = time(ask);
        (wall, cpu_time() - cpu)
    };
    // `DSR_BENCH_CURVE_REPS`: more repetitions (to profile a phase: each
    // phase's start is written to stderr as the monotonic clock's reading,
    // what `perf record -k mono` stamps its samples with).
    let reps: usize = std::env::var("DSR_BENCH_CURVE_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(15);
    let phase = |name: &str| eprintln!("phase {name} at {:?}", Instant::now());
    phase("first");
    let (first, first_cpu) = timed();
    ask();
    phase("warm");
    let (warm, warm_cpu): (Vec<_>, Vec<_>) = (0..reps).map(|_| timed()).unzip();
    let listing = store.list().unwrap();
    let n = listing.sessions.len();
    let (mut appended, mut appended_cpu) = (Vec::new(), Vec::new());
    phase("appended");
    for i in 0..reps {
        append(&mut reopen(&listing.sessions[i * 7919 % n].path), 100);
        let (wall, cpu) = timed();
        appended.push(wall);
        appended_cpu.push(cpu);
    }
    eprintln!("after one log grew, in order: {:?}", appended.iter().map(|d| ms(*d)).collect::<Vec<_>>());
    eprintln!("and their CPU time: {:?}", appended_cpu.iter().map(|d| ms(*d)).collect::<Vec<_>>());
    let appended_max = *appended.iter().max().unwrap();
    let appended_max_cpu = *appended_cpu.iter().max().unwrap();
    let (rss_candidates, _) = rss();
    let fresh = Resolver::new(Arc::new(Plain(DshStore::open(root).unwrap())), Config::default());
    assert_eq!(
        ask(),
        block_on(fresh.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap(),
        "the same answer as a fresh scan"
    );
    drop(fresh);
    let opts = SearchOptions::default();
    block_on(r.search(&target, "alphamarker", &opts, None)).unwrap();
    block_on(r.search(&target, "PR1137", &opts, None)).unwrap();
    phase("search");
    let (search, search_cpu): (Vec<_>, Vec<_>) = (0..reps)
        .map(|_| {
            let cpu = cpu_time();
            let (_, wall) = time(|| block_on(r.search(&target, "PR1137", &opts, None)).unwrap());
            (wall, cpu_time() - cpu)
        })
        .unzip();
    phase("end");
    let (rss_search, peak) = rss();
    let secs = |d: Duration| d.as_secs_f64();
    println!(
        "{}",
        json!({"sessions": n, "load": [load_before, load()], "first_s": secs(first), "first_cpu_s": secs(first_cpu), "warm_s": secs(median(warm)), "warm_cpu_s": secs(median(warm_cpu)),
            "appended_s": secs(median(appended)), "appended_cpu_s": secs(median(appended_cpu)),
            "appended_max_s": secs(appended_max), "appended_max_cpu_s": secs(appended_max_cpu), "search_s": secs(median(search)),
            "search_cpu_s": secs(median(search_cpu)), "rss_candidates": rss_candidates,
            "rss_search": rss_search, "rss_peak": peak, "rss_before": rss_before})
    );
}

fn main() {
    if let Some(root) = std::env::var_os("DSR_BENCH_CURVE_AT") {
        return curve_at(Path::new(&root));
    }
    let kb_default: usize = std::env::var("DSR_BENCH_KB").ok().and_then(|v| v.parse().ok()).unwrap_or(150);
    if let Ok(sizes) = std::env::var("DSR_BENCH_CURVE") {
        let sizes: Vec<usize> = sizes.split(',').map(|s| s.trim().parse().expect("sizes, comma-separated")).collect();
        return curve(&sizes, kb_default);
    }
    let n: usize = std::env::var("DSR_BENCH_SESSIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000);
    let kb: usize = std::env::var("DSR_BENCH_KB").ok().and_then(|v| v.parse().ok()).unwrap_or(150);
    // `DSR_BENCH_ROOT`: write the root there and keep it (to time the
    // command line on it); else a temporary directory.
    // The tantivy peer is built before anything is timed.
    let tantivy = std::env::var_os("DSR_BENCH_TANTIVY").map(|_| build_tantivy_peer());
    let tmp = tempfile::tempdir().unwrap();
    let kept = std::env::var_os("DSR_BENCH_ROOT").map(PathBuf::from);
    let root = kept.clone().unwrap_or_else(|| tmp.path().to_owned());
    std::fs::create_dir_all(&root).unwrap();
    let (gen, took) = time(|| write_root(&root, n, kb));
    let (mut logs, bytes) = gen;
    println!("generated {n} sessions, {:.0} MB of plain logs, in {:.1} s", bytes as f64 / 1e6, took.as_secs_f64());
    if kept.is_some() && std::env::var_os("DSR_BENCH_GENERATE_ONLY").is_some() {
        // The root alone, for a benchmark of another front (the MCP
        // server's, bench/mcp_bench.py).
        return;
    }
    let target = Target::new("new-chat", Some("/work/p3".into()));
    let store = DshStore::open(&root).unwrap();
    let reps = 15;

    // `DSR_BENCH_SEARCH_ONLY`: the search rows alone (no `candidates`).
    let search_only = std::env::var_os("DSR_BENCH_SEARCH_ONLY").is_some();
    if !search_only {
        // --- candidates through the store, with and without fingerprints
        let plain = Resolver::new(Arc::new(Plain(store.clone())), Config::default());
        let (_, uncached) =
            time(|| block_on(plain.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap());
        // Two long-lived stores: the default (watching from its second listing
        // on, where the system can) and one that walks and stats on every call.
        let watched = DshStore::open(&root).unwrap();
        let unwatched = DshStore::open(&root).unwrap().with_watching(false);
        let r = Resolver::new(Arc::new(watched.clone()), Config::default());
        let ru = Resolver::new(Arc::new(unwatched.clone()), Config::default());
        let cpu = cpu_time();
        let (first_list, first) =
            time(|| block_on(r.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap());
        let first_cpu = cpu_time() - cpu;
        // A store kept for the process that watches from its first listing on
        // (the Python `DshSessionStore`): its title reads find each log in
        // that listing.
        let early =
            Resolver::new(Arc::new(DshStore::open(&root).unwrap().watching_from_first_listing()), Config::default());
        let cpu = cpu_time();
        let (early_list, first_early) =
            time(|| block_on(early.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap());
        let first_early_cpu = cpu_time() - cpu;
        assert_eq!(early_list, first_list, "the same candidates");
        assert_eq!(
            first_list,
            block_on(plain.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap(),
            "the cache changes cost only"
        );
        block_on(ru.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap();
        let warm = median(
            (0..reps)
                .map(|_| time(|| block_on(r.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap()).1)
                .collect(),
        );
        let warm_unwatched = median(
            (0..reps)
                .map(|_| time(|| block_on(ru.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap()).1)
                .collect(),
        );
        let listing = median((0..reps).map(|_| time(|| watched.list().unwrap()).1).collect());
        let (_, walk) = time(|| DshStore::open(&root).unwrap().list().unwrap());
        let mut appended = Vec::new();
        let mut appended_unwatched = Vec::new();
        for i in 0..reps {
            append(&mut logs[i * 7 % n], 100);
            appended
                .push(time(|| block_on(r.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap()).1);
            appended_unwatched
                .push(time(|| block_on(ru.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap()).1);
        }
        assert_eq!(
            block_on(r.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap(),
            block_on(plain.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap(),
            "after the appends too"
        );
        println!("candidates --query (DSH store, files; watching: {}):", watched.is_watching());
        println!(
            "  without fingerprints, every query: {} ({:.0} MB/s of logs)",
            ms(uncached),
            bytes as f64 / 1e6 / uncached.as_secs_f64()
        );
        println!(
            "  first query (cold cache):        {} ({:.0} MB/s)",
            ms(first),
            bytes as f64 / 1e6 / first.as_secs_f64()
        );
        println!(
            "  first query, watching from the first listing: {} ({:.0} MB/s; CPU {} against {})",
            ms(first_early),
            bytes as f64 / 1e6 / first_early.as_secs_f64(),
            ms(first_early_cpu),
            ms(first_cpu)
        );
        println!("  later, nothing changed (median): {}   (the listing alone: {})", ms(warm), ms(listing));
        println!("  after one log gained 100 lines:  {}", ms(median(appended.clone())));
        println!("  unwatched store, nothing changed: {}", ms(warm_unwatched));
        println!("  unwatched store, after an append: {}", ms(median(appended_unwatched)));
        println!("  a fresh store's first listing (walk and header reads): {}", ms(walk));
        if std::env::var_os("DSR_BENCH_CANDIDATES_ONLY").is_some() {
            let secs = |d: Duration| d.as_secs_f64();
            let figures = json!({"sessions": n, "log_bytes": bytes, "first_s": secs(first), "first_cpu_s": secs(first_cpu),
                "first_early_s": secs(first_early), "first_early_cpu_s": secs(first_early_cpu),
                "warm_s": secs(warm), "appended_s": secs(median(appended)), "watching": watched.is_watching()});
            println!("sdk-compare {figures}");
            return;
        }
    }

    // --- the same sessions in memory: the resolver's own cost
    let mem = MemoryQuery::new();
    let listed = store.list().unwrap();
    for s in &listed.sessions {
        let id = &s.header.id;
        mem.add_session(s.header.clone());
        mem.set_title(id.clone(), store.read_title(id).unwrap());
        mem.set_surface(id.clone(), SurfaceData::json(store.read_surface_json(id).unwrap()));
    }
    let mem = Arc::new(mem);
    let rm = Resolver::new(mem.clone(), Config::default());
    if !search_only {
        block_on(rm.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap();
        let warm_mem = median(
            (0..reps)
                .map(|_| time(|| block_on(rm.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap()).1)
                .collect(),
        );
        let changed_mem = median(
            (0..reps)
                .map(|i| {
                    let id = &listed.sessions[i * 11 % n].header.id;
                    mem.set_title(id.clone(), Some(format!("renamed {i}")));
                    time(|| block_on(rm.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap()).1
                })
                .collect(),
        );
        println!("candidates --query (in memory):");
        println!("  later, nothing changed (median): {}", ms(warm_mem));
        println!("  after one session changed:       {}", ms(changed_mem));

        // --- the same count of Claude Code transcripts
        if std::env::var_os("DSR_BENCH_NO_FOREIGN").is_none() {
            let croot = tempfile::tempdir().unwrap();
            let ((cpaths, cbytes), took) = time(|| write_claude_root(croot.path(), n, kb));
            println!(
                "generated {n} Claude Code transcripts, {:.0} MB, in {:.1} s",
                cbytes as f64 / 1e6,
                took.as_secs_f64()
            );
            let source = ClaudeCodeSource::open(croot.path()).unwrap();
            let rc = Resolver::new(source.clone().into_query(), Config::default());
            let ctarget = Target::new("new-chat", Some("/work/q3".into()));
            let (_, cfirst) =
                time(|| block_on(rc.candidates(&ctarget, "ka", &CandidateOptions::default(), None)).unwrap());
            block_on(rc.candidates(&ctarget, "ka", &CandidateOptions::default(), None)).unwrap();
            let cwarm = median(
                (0..reps)
                    .map(|_| {
                        time(|| block_on(rc.candidates(&ctarget, "ka", &CandidateOptions::default(), None)).unwrap()).1
                    })
                    .collect(),
            );
            let cappended = median(
                (0..reps)
                    .map(|i| {
                        let mut f = std::fs::OpenOptions::new().append(true).open(&cpaths[i * 7 % n]).unwrap();
                        for _ in 0..100 {
                            f.write_all(b"{\"type\":\"system\",\"subtype\":\"note\",\"content\":\"x\"}\n").unwrap();
                        }
                        drop(f);
                        time(|| block_on(rc.candidates(&ctarget, "ka", &CandidateOptions::default(), None)).unwrap()).1
                    })
                    .collect(),
            );
            let fresh = Resolver::new(ClaudeCodeSource::open(croot.path()).unwrap().into_query(), Config::default());
            assert_eq!(
                block_on(rc.candidates(&ctarget, "ka", &CandidateOptions::default(), None)).unwrap(),
                block_on(fresh.candidates(&ctarget, "ka", &CandidateOptions::default(), None)).unwrap(),
                "the kept source agrees with a fresh one"
            );
            println!("candidates --query (Claude Code source, files; watching: {}):", source.is_watching());
            println!(
                "  first query (cold cache):        {} ({:.0} MB/s)",
                ms(cfirst),
                cbytes as f64 / 1e6 / cfirst.as_secs_f64()
            );
            println!("  later, nothing changed (median): {}", ms(cwarm));
            println!("  after one transcript gained 100 lines: {}", ms(cappended));
        }
    }

    // --- search
    let opts = SearchOptions::default();
    let (_, build) = time(|| block_on(rm.search(&target, "alphamarker", &opts, None)).unwrap());
    if let Ok(q) = std::env::var("DSR_BENCH_PROFILE_QUERY") {
        // One query, searched again and again (to profile it, `perf record
        // -p`): its median every 100.
        loop {
            let times: Vec<Duration> =
                (0..100).map(|_| time(|| block_on(rm.search(&target, q.as_str(), &opts, None)).unwrap()).1).collect();
            println!("  {q:?}: {} median", ms(median(times)));
        }
    }
    let stats = rm.search_index_stats();
    println!("search (in memory):");
    println!(
        "  index build (first search): {:.2} s for {:.0} MB of projected text ({:.0} MB/s of logs)",
        build.as_secs_f64(),
        stats.text_bytes as f64 / 1e6,
        bytes as f64 / 1e6 / build.as_secs_f64()
    );
    println!(
        "  index memory: {:.1} MB = {:.2}% of the projected text it covers ({} sessions); filters {:.0}%, \
         the rest compressed text",
        stats.index_bytes as f64 / 1e6,
        100.0 * stats.index_bytes as f64 / stats.text_bytes as f64,
        stats.sessions,
        100.0 * stats.filter_bytes as f64 / stats.text_bytes as f64,
    );
    // Query words from the generator's vocabulary (same seed): a word of
    // at least 5 letters at or after a given frequency rank (lower ranks
    // are more frequent).
    let words = Words::new(&mut Rng(0x9e37_79b9_7f4a_7c15));
    let pick = |from: usize| words.0[from..].iter().find(|w| w.len() >= 5).cloned().unwrap_or_default();
    let three = format!("{} {} {}", pick(1200), pick(2500), pick(3100));
    let queries = [
        ("identifier fragment", "PR1137".to_owned()),
        ("one word (rank ~2000)", pick(2000)),
        ("one word (rank ~3000)", pick(3000)),
        ("one rare word of common trigrams (rank ~4900)", pick(4900)),
        ("one frequent word (rank ~50)", pick(50)),
        ("three words", three),
        ("substring in half the sessions", "alphamarker".to_owned()),
        ("CJK substring", "缓存索引".to_owned()),
        ("CJK pair, no match", "模型".to_owned()),
        ("no match", "zzqqxx".to_owned()),
        ("no match, a word of common trigrams", "teranise".to_owned()),
    ];
    // Every session's searched fields, for the brute-force check (and the
    // export FTS5 is built from): its projected items, title, id and cwd,
    // one per line (a word holds no line break, so none spans two).
    let corpus: Vec<(String, String, f64, String)> = listed
        .sessions
        .iter()
        .map(|s| {
            let h = &s.header;
            let json = store.read_surface_json(&h.id).unwrap();
            let projection = dsh_session_reference::projection::project_json(&json).unwrap();
            let title = store.read_title(&h.id).unwrap().unwrap_or_default();
            let cwd = h.cwd.clone().unwrap_or_default();
            let body = fields_text(projection.items.iter().map(|i| i.text.decode().unwrap()), &title, &h.id, &cwd);
            (h.id.clone(), cwd, h.created_at.as_f64().unwrap_or(0.0), body)
        })
        .collect();
    // The index alone over the same sessions: their projected items and
    // titles, built as the resolver builds them.
    let alone = dsh_session_reference::search_index::Index::build(
        listed
            .sessions
            .iter()
            .map(|s| {
                let json = store.read_surface_json(&s.header.id).unwrap();
                let projection = dsh_session_reference::projection::project_json(&json).unwrap();
                dsh_session_reference::search_index::Session {
                    header: s.header.clone(),
                    title: store.read_title(&s.header.id).unwrap(),
                    texts: projection.items.iter().map(|i| i.text.decode().unwrap().into_owned()).collect(),
                }
            })
            .collect(),
    );
    let lowered: Vec<String> = corpus.iter().map(|(_, _, _, body)| body.to_lowercase()).collect();
    let brute = |q: &str| -> std::collections::BTreeSet<String> {
        let words: Vec<String> = q.to_lowercase().split_whitespace().map(str::to_owned).collect();
        corpus
            .iter()
            .zip(&lowered)
            .filter(|(_, body)| words.iter().all(|w| body.contains(w.as_str())))
            .map(|((id, ..), _)| id.clone())
            .collect()
    };
    // The peers beside it (`DSR_BENCH_FTS5=1`, `DSR_BENCH_TANTIVY=1`): each
    // over an export of the same fields, asked in turn with each of our
    // queries. With `DSR_FTS5_KEEP_DB` their databases are kept (and reused
    // while the export is the same) beside the root, or, for a temporary
    // root, in the system's temporary directory under a name of the corpus.
    let want = |var: &str| std::env::var_os(var).is_some();
    let want_fts5 = want("DSR_BENCH_FTS5");
    let base = match (&kept, want("DSR_FTS5_KEEP_DB")) {
        (None, true) => std::env::temp_dir().join(format!("dsr-bench-{n}x{kb}")),
        _ => root.clone(),
    };
    let mut peers = start_peers(want_fts5, tantivy.as_deref(), &corpus, &base, "");
    let limit = dsh_session_reference::DEFAULT_CANDIDATE_LIMIT as usize;
    if !peers.is_empty() {
        let names: Vec<&str> = peers.iter().map(|p| p.name).collect();
        println!(
            "  (ratios: ours / {}, medians interleaved in this run; results checked against a brute-force scan)",
            names.join(", ours / ")
        );
    }
    for (what, q) in &queries {
        let expected = brute(q);
        let mut found = 0;
        let mut theirs: Vec<Vec<(Duration, usize)>> = vec![Vec::new(); peers.len()];
        let mut cpu_ours = Duration::ZERO;
        let mut alone_times = Vec::new();
        let t = median(
            (0..reps)
                .map(|_| {
                    let cpu = cpu_time();
                    let (res, t) = time(|| block_on(rm.search(&target, q.as_str(), &opts, None)).unwrap());
                    cpu_ours += cpu_time() - cpu;
                    found = res.len();
                    assert_eq!(found, expected.len().min(limit), "{q:?}: as many results as a scan finds");
                    for r in &res {
                        assert!(expected.contains(&r.candidate.session_id), "{q:?}: {}", r.candidate.session_id);
                    }
                    for (p, times) in peers.iter_mut().zip(&mut theirs) {
                        times.push(p.time(q, "/work/p3"));
                    }
                    let (bare, t_alone) = time(|| alone.search(&target, q, limit).unwrap());
                    let ours: Vec<&str> = res.iter().map(|r| r.candidate.session_id.as_str()).collect();
                    assert!(bare.iter().map(|f| f.id.as_str()).eq(ours), "{q:?}: the index alone answers as ours");
                    alone_times.push(t_alone);
                    t
                })
                .collect(),
        );
        let mut side = format!("; index alone {}", ms(median(alone_times)));
        for (p, times) in peers.iter_mut().zip(theirs) {
            let all = p.all(q);
            let mut check = if all == expected {
                "exact".to_owned()
            } else {
                format!("{} of {} sessions", all.intersection(&expected).count(), expected.len())
            };
            // The ranked answer holds as many as the scan finds, up to 50.
            if let Some((_, n)) = times.iter().find(|(_, n)| *n != expected.len().min(limit)) {
                check.push_str(&format!(", ranked {n} of {}", expected.len().min(limit)));
            }
            let theirs = median(times.into_iter().map(|(t, _)| t).collect());
            side.push_str(&format!(
                "; {} {} ({check}), ratio {:.2}x",
                p.name,
                ms(theirs),
                t.as_secs_f64() / theirs.as_secs_f64().max(1e-9)
            ));
        }
        println!(
            "  warm, {what} {q:?}: {} median, CPU {} mean ({found} results of {} matching){side}",
            ms(t),
            ms(cpu_ours / reps as u32),
            expected.len()
        );
    }
    drop(peers);
    if search_only {
        return;
    }
    let r = Resolver::new(Arc::new(DshStore::open(&root).unwrap()), Config::default());
    let (_, sbuild) = time(|| block_on(r.search(&target, "alphamarker", &opts, None)).unwrap());
    let swarm =
        median((0..reps).map(|_| time(|| block_on(r.search(&target, "PR1137", &opts, None)).unwrap()).1).collect());
    println!("search (DSH store, files): first {:.2} s, warm \"PR1137\" {} median", sbuild.as_secs_f64(), ms(swarm));
}
