//! The sources of other agents: reading a 100 MB Claude Code transcript and
//! a 100 MB Codex rollout (each against a plain line scan of the same file
//! in the same run), listing 10,000 foreign sessions, and a warm filtered
//! `candidates` over 10,000 Claude Code 2.0 sessions titled from other
//! transcripts, after a title is written into another file.
//!
//! Run: `cargo bench -p dsh-session-reference --bench sources`
//! (`-- --quick` for 20 MB files and 2,000 sessions, `-- --listing` for the
//! listings and candidates only).
//!
//! Inputs are generated deterministically in a temporary directory, shaped
//! like real files: thinking and tool use around the visible text, 3 KB
//! tool results, a 10 KB Codex `session_meta`, `event_msg` mirrors.

use std::path::Path;
use std::time::{Duration, Instant};

use dsh_session_reference::fs::{open_regular, BoundedLines};
use dsh_session_reference::sources::claude_code::ClaudeCodeSource;
use dsh_session_reference::sources::codex::CodexSource;
use dsh_session_reference::sources::{open_sources, SourceKind, SourceSpec};
use dsh_session_reference::{block_on, CandidateOptions, SessionQuery};
use serde_json::json;

use dsh_session_reference::{Config, FileSource, Resolver, Target};
use std::io::Write;

fn text(i: usize, n: usize) -> String {
    format!("turn {i}: reading the parser, <tags> and \"quotes\" in the output; ").chars().cycle().take(n).collect()
}

fn ts(i: usize) -> String {
    format!("2026-01-01T{:02}:{:02}:{:02}.000Z", (i / 3600) % 24, (i / 60) % 60, i % 60)
}

/// A Claude Code transcript of about `target` bytes.
fn claude_transcript(target: usize) -> String {
    let mut out = String::with_capacity(target + (1 << 20));
    let mut parent: Option<String> = None;
    let mut i = 0;
    let common = |uuid: &str, parent: &Option<String>, i: usize| {
        json!({"uuid": uuid, "parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/work/app",
            "sessionId": "s", "version": "2.1.200", "gitBranch": "main", "timestamp": ts(i)})
    };
    while out.len() < target {
        let mut push = |mut v: serde_json::Value, extra: serde_json::Value, parent: &mut Option<String>| {
            for (k, x) in extra.as_object().unwrap() {
                v[k] = x.clone();
            }
            *parent = v["uuid"].as_str().map(str::to_owned);
            out.push_str(&v.to_string());
            out.push('\n');
        };
        let u = format!("u{i}");
        let c = common(&u, &parent, i);
        push(c, json!({"type": "user", "message": {"role": "user", "content": text(i, 300)}}), &mut parent);
        for (k, block) in [
            json!({"type": "thinking", "thinking": text(i, 800), "signature": "sig".repeat(100)}),
            json!({"type": "text", "text": text(i, 400)}),
            json!({"type": "tool_use", "id": format!("t{i}"), "name": "Read", "input": {"file_path": "/work/app/src/lib.rs"}}),
        ]
        .into_iter()
        .enumerate()
        {
            let a = format!("a{i}.{k}");
            let c = common(&a, &parent, i);
            push(c, json!({"type": "assistant", "requestId": format!("r{i}"), "message": {"id": format!("msg{i}"),
                "role": "assistant", "model": "claude-x", "content": [block], "usage": {"input_tokens": 1}}}), &mut parent);
        }
        let r = format!("r{i}");
        let c = common(&r, &parent, i);
        push(
            c,
            json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": format!("t{i}"), "content": text(i, 3000)}]},
            "toolUseResult": {"type": "text", "file": {"content": text(i, 3000)}}}),
            &mut parent,
        );
        i += 1;
    }
    out
}

/// A Codex rollout of about `target` bytes.
fn codex_rollout(id: &str, target: usize, instructions: usize) -> String {
    let mut out = String::with_capacity(target + (1 << 20));
    let mut line = |v: serde_json::Value| {
        out.push_str(&v.to_string());
        out.push('\n');
    };
    let env = |i: usize, kind: &str, payload: serde_json::Value| json!({"timestamp": ts(i), "type": kind, "payload": payload});
    line(env(
        0,
        "session_meta",
        json!({"id": id, "timestamp": ts(0), "cwd": "/work/app", "originator": "codex_cli_rs",
        "cli_version": "0.150.0", "source": "cli", "base_instructions": {"text": text(0, instructions)}}),
    ));
    let mut i = 0;
    while out.len() < target {
        let mut line = |v: serde_json::Value| {
            out.push_str(&v.to_string());
            out.push('\n');
        };
        line(env(i, "turn_context", json!({"cwd": "/work/app", "model": "m", "approval_policy": "never"})));
        line(env(i, "event_msg", json!({"type": "user_message", "message": text(i, 300)})));
        line(env(
            i,
            "response_item",
            json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text(i, 300)}]}),
        ));
        line(env(
            i,
            "response_item",
            json!({"type": "reasoning", "summary": [],
            "encrypted_content": "e".repeat(1000)}),
        ));
        line(env(
            i,
            "response_item",
            json!({"type": "function_call", "name": "shell",
            "arguments": "{\"cmd\":\"cat src/lib.rs\"}", "call_id": format!("c{i}")}),
        ));
        line(env(
            i,
            "response_item",
            json!({"type": "function_call_output", "call_id": format!("c{i}"),
            "output": text(i, 3000)}),
        ));
        line(env(i, "event_msg", json!({"type": "agent_message", "message": text(i, 400)})));
        line(env(
            i,
            "response_item",
            json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text(i, 400)}]}),
        ));
        line(env(i, "event_msg", json!({"type": "token_count", "info": {"total": i}})));
        i += 1;
    }
    out
}

/// The uuid of the leaf of session `n` of [`legacy_transcript`].
fn legacy_leaf(n: usize, turns: usize) -> String {
    format!("{n:05}-r{}", turns - 1)
}

/// A Claude Code 2.0 transcript of session `n`, `turns` turns long, started
/// `n` minutes after the first; `titles` is the session whose summary
/// Claude Code wrote at its start (the one before it in its project).
fn legacy_transcript(n: usize, titles: Option<usize>, turns: usize) -> String {
    let mut out = String::new();
    let mut line = |v: serde_json::Value| {
        out.push_str(&v.to_string());
        out.push('\n');
    };
    if let Some(t) = titles {
        line(json!({"type": "summary", "summary": format!("Title of session {t}"), "leafUuid": legacy_leaf(t, turns)}));
    }
    let at = |i: usize| {
        let s = n * 60 + i;
        format!("2025-10-{:02}T{:02}:{:02}:{:02}.000Z", 1 + s / 86_400, (s / 3600) % 24, (s / 60) % 60, s % 60)
    };
    let mut parent: Option<String> = None;
    for i in 0..turns {
        let common = |uuid: &str, parent: &Option<String>| {
            json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/work/app",
                "sessionId": format!("{n}"), "version": "2.0.50", "gitBranch": "main", "uuid": uuid, "timestamp": at(i)})
        };
        let (u, a, r) = (format!("{n:05}-u{i}"), format!("{n:05}-a{i}"), format!("{n:05}-r{i}"));
        let mut v = common(&u, &parent);
        v["type"] = json!("user");
        v["message"] = json!({"role": "user", "content": text(i, 300)});
        line(v);
        let mut v = common(&a, &Some(u));
        v["type"] = json!("assistant");
        v["message"] = json!({"id": format!("msg{n}.{i}"), "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": text(i, 400)}, {"type": "tool_use", "id": format!("t{i}"),
            "name": "Read", "input": {"file_path": "/work/app/src/lib.rs"}}]});
        line(v);
        let mut v = common(&r, &Some(a));
        v["type"] = json!("user");
        v["message"] = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"),
            "content": text(i, 1500)}]});
        line(v);
        parent = Some(r);
    }
    out
}

/// A plain line scan of the file, with the sources' own line reader.
fn scan(path: &Path) -> u64 {
    let (file, _) = open_regular(path).unwrap();
    let mut lines = BoundedLines::new(file, 64 << 20);
    let mut n = 0;
    while let Some(line) = lines.next_line().unwrap() {
        n += line.len() as u64 & 1;
    }
    n
}

/// Every line parsed by serde_json into `IgnoredAny` (a typed skip-parse
/// that builds nothing): what any JSON reader of the file must at least do.
fn skip_parse(path: &Path) -> u64 {
    let (file, _) = open_regular(path).unwrap();
    let mut lines = BoundedLines::new(file, 64 << 20);
    let mut n = 0;
    while let Some(line) = lines.next_line().unwrap() {
        n += u64::from(serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok());
    }
    n
}

/// Best of `rounds` alternating runs of the baseline and the read.
fn race(rounds: usize, path: &Path, mut read: impl FnMut()) -> [Duration; 3] {
    let mut best = [Duration::MAX; 3];
    for _ in 0..rounds {
        let t = Instant::now();
        std::hint::black_box(scan(path));
        best[0] = best[0].min(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(skip_parse(path));
        best[1] = best[1].min(t.elapsed());
        let t = Instant::now();
        read();
        best[2] = best[2].min(t.elapsed());
    }
    best
}

fn row(name: &str, bytes: f64, [scan, skip, read]: [Duration; 3], items: usize) {
    let mb = bytes / 1e6;
    println!(
        "{name:<11} {mb:7.1} {:9.2}ms {:9.2}ms {:9.2}ms {:7.0} {:7.2}x {:7.2}x {items:7}",
        ms(scan),
        ms(skip),
        ms(read),
        mb / read.as_secs_f64(),
        ms(read) / ms(scan),
        ms(read) / ms(skip)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (size, sessions, rounds) = if quick { (20 << 20, 2_000, 3) } else { (100 << 20, 10_000, 5) };
    let tmp = tempfile::tempdir().unwrap();
    if std::env::args().any(|a| a == "--profile") {
        // Only the reads, for a profiler.
        std::fs::create_dir_all(tmp.path().join("c/-w")).unwrap();
        std::fs::write(tmp.path().join("c/-w/big.jsonl"), claude_transcript(size)).unwrap();
        let source = ClaudeCodeSource::open(tmp.path().join("c")).unwrap();
        let t = Instant::now();
        for _ in 0..20 {
            std::hint::black_box(source.conversation("claude-code:big").unwrap());
        }
        println!("{:.1}ms per read", ms(t.elapsed()) / 20.0);
        return;
    }

    // `--listing`: the listings and candidates only (not the 100 MB reads).
    if !std::env::args().any(|a| a == "--listing") {
        println!("format         MB   line scan   skip-parse        read    MB/s  /scan   /skip   items");
        let claude = tmp.path().join("claude");
        std::fs::create_dir_all(claude.join("-work-app")).unwrap();
        let path = claude.join("-work-app/big.jsonl");
        std::fs::write(&path, claude_transcript(size)).unwrap();
        let bytes = std::fs::metadata(&path).unwrap().len() as f64;
        let source = ClaudeCodeSource::open(&claude).unwrap();
        let mut items = 0;
        let best = race(rounds, &path, || items = source.conversation("claude-code:big").unwrap().items.len());
        row("claude-code", bytes, best, items);

        let codex = tmp.path().join("codex");
        let dir = codex.join("sessions/2026/01/01");
        std::fs::create_dir_all(&dir).unwrap();
        let id = "0199aaaa-0000-7000-8000-000000000000";
        let path = dir.join(format!("rollout-2026-01-01T00-00-00-{id}.jsonl"));
        std::fs::write(&path, codex_rollout(id, size, 10_000)).unwrap();
        let bytes = std::fs::metadata(&path).unwrap().len() as f64;
        let source = CodexSource::open(&codex).unwrap();
        let full = format!("codex:{id}");
        let best = race(rounds, &path, || items = source.conversation(&full).unwrap().items.len());
        row("codex", bytes, best, items);
    }

    // Listing: half Claude Code transcripts in 100 projects, half Codex
    // rollouts in dated directories, each a short real-shaped session.
    let many = tmp.path().join("many");
    let (cl, cx) = (many.join("claude"), many.join("codex"));
    let small_claude = claude_transcript(8_000);
    for n in 0..sessions / 2 {
        let project = cl.join(format!("-work-p{}", n % 100));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join(format!("{:08x}-0000-4000-8000-000000000000.jsonl", n)), &small_claude).unwrap();
        let day = cx.join(format!("sessions/2026/{:02}/{:02}", 1 + n % 12, 1 + (n / 12) % 28));
        std::fs::create_dir_all(&day).unwrap();
        let id = format!("0199aaaa-0000-7000-8000-{n:012x}");
        std::fs::write(day.join(format!("rollout-2026-01-01T00-00-00-{id}.jsonl")), codex_rollout(&id, 8_000, 4_000))
            .unwrap();
    }
    let view =
        open_sources(&[SourceSpec::new(SourceKind::ClaudeCode, &cl), SourceSpec::new(SourceKind::Codex, &cx)]).unwrap();
    let claude_only = ClaudeCodeSource::open(&cl).unwrap();
    let codex_only = CodexSource::open(&cx).unwrap();
    let mut best = [Duration::MAX; 3];
    let mut listed = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        listed = block_on(view.list_sessions()).unwrap().len();
        best[0] = best[0].min(t.elapsed());
        let t = Instant::now();
        assert_eq!(claude_only.list().unwrap().sessions.len(), sessions / 2);
        best[1] = best[1].min(t.elapsed());
        let t = Instant::now();
        assert_eq!(codex_only.list().unwrap().sessions.len(), sessions / 2);
        best[2] = best[2].min(t.elapsed());
    }
    assert_eq!(listed, sessions);
    println!("\nlisting {sessions} sessions (both sources): {:.1}ms", ms(best[0]));
    println!(
        "  {} Claude Code alone: {:.1}ms; {} Codex alone: {:.1}ms",
        sessions / 2,
        ms(best[1]),
        sessions / 2,
        ms(best[2])
    );

    // A kept source (watching, as a host keeps it) behind a resolver: a
    // warm filtered `candidates` after one append to a 2.1 transcript.
    let target = Target::new("new", Some("/work/app".into()));
    let kept = ClaudeCodeSource::open(&cl).unwrap();
    let resolver = Resolver::new(kept.clone().into_query(), Config::default());
    // A filter that few titles match (every title is compared to it): the
    // source's and the title cache's cost, not that of making thousands of
    // candidates.
    let query = |r: &Resolver| block_on(r.candidates(&target, "ka", &CandidateOptions::default(), None)).unwrap();
    query(&resolver);
    query(&resolver);
    let reps = if quick { 9 } else { 21 };
    let mut times = Vec::new();
    for rep in 0..reps {
        let project = cl.join(format!("-work-p{}", rep % 100));
        let file = std::fs::read_dir(&project).unwrap().next().unwrap().unwrap().path();
        let note = json!({"type": "system", "subtype": "informational", "content": "x", "uuid": format!("x{rep}"),
            "parentUuid": null, "timestamp": ts(0)});
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap()
            .write_all(format!("{note}\n").as_bytes())
            .unwrap();
        let t = Instant::now();
        query(&resolver);
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "\ncandidates --query over {} Claude Code 2.1 sessions (watching: {}), after one transcript gained a line: \
         {:.2}ms median",
        sessions / 2,
        kept.is_watching(),
        ms(times[times.len() / 2])
    );

    // Titles across transcripts: Claude Code 2.0 sessions in 100 projects,
    // each titled by a summary written at the start of the next transcript
    // of its project. After a title of one project's oldest session is
    // appended to the project's newest transcript, a warm filtered
    // `candidates` of a kept source shows it.
    let legacy = tmp.path().join("legacy");
    let turns = 2;
    let per_project = sessions / 100;
    for n in 0..sessions {
        let project = legacy.join(format!("-work-q{}", n % 100));
        std::fs::create_dir_all(&project).unwrap();
        let titles = n.checked_sub(100);
        std::fs::write(
            project.join(format!("{n:08x}-0000-4000-8000-000000000000.jsonl")),
            legacy_transcript(n, titles, turns),
        )
        .unwrap();
    }
    let bytes: u64 = (0..100)
        .flat_map(|p| std::fs::read_dir(legacy.join(format!("-work-q{p}"))).unwrap())
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let kept = ClaudeCodeSource::open(&legacy).unwrap();
    let resolver = Resolver::new(kept.clone().into_query(), Config::default());
    let query = |r: &Resolver, q: &str| block_on(r.candidates(&target, q, &CandidateOptions::default(), None)).unwrap();
    // The query: the sessions whose title says "Retitled" (none at first).
    let t = Instant::now();
    query(&resolver, "retitled");
    let cold = t.elapsed();
    let titled = |r: &Resolver, q: &str| {
        block_on(r.candidates(&target, q, &CandidateOptions::default().with_limit(Some(sessions as u64)), None))
            .unwrap()
    };
    assert_eq!(titled(&resolver, "title").len(), sessions - 100, "all but the newest of each project are titled");
    query(&resolver, "retitled");
    let mut warm = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        query(&resolver, "retitled");
        warm.push(t.elapsed());
    }
    warm.sort();
    let mut retitled = Vec::new();
    for rep in 0..reps {
        let p = rep % 100;
        let newest = p + 100 * (per_project - 1);
        let file = legacy.join(format!("-work-q{p}/{newest:08x}-0000-4000-8000-000000000000.jsonl"));
        let summary =
            json!({"type": "summary", "summary": format!("Retitled {rep}"), "leafUuid": legacy_leaf(p, turns)});
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap()
            .write_all(format!("{summary}\n").as_bytes())
            .unwrap();
        let t = Instant::now();
        let got = query(&resolver, "retitled");
        retitled.push(t.elapsed());
        assert_eq!(got.len(), rep + 1, "the new title is shown");
        assert!(got.iter().any(|c| c.label == format!("Retitled {rep}")), "the new title is shown");
    }
    retitled.sort();
    let fresh = Resolver::new(ClaudeCodeSource::open(&legacy).unwrap().into_query(), Config::default());
    assert_eq!(titled(&resolver, "title"), titled(&fresh, "title"), "the kept source agrees with a fresh one");
    println!(
        "\ncandidates --query over {sessions} Claude Code 2.0 sessions titled from other transcripts ({:.0} MB, \
         watching: {}):",
        bytes as f64 / 1e6,
        kept.is_watching()
    );
    println!("  first query (cold): {:.1}ms", ms(cold));
    println!("  later, nothing changed: {:.2}ms median", ms(warm[warm.len() / 2]));
    println!(
        "  after one append titled a session of another file: {:.2}ms median (min {:.2}, max {:.2})",
        ms(retitled[retitled.len() / 2]),
        ms(retitled[0]),
        ms(retitled[retitled.len() - 1])
    );
}
