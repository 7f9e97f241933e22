//! The file-per-session readers (Copilot CLI, Gemini CLI, Cursor,
//! Aider): reading a 100 MB transcript of each into its projected
//! conversation (MB/s), and listing 10,000 sessions of each kind with a new
//! source each round (no state kept between listings).
//!
//! Run: `cargo bench -p dsh-session-reference --bench file_per_session_sources`
//! (`-- --quick` for 20 MB files and 2,000 sessions).
//!
//! Inputs are generated deterministically in a temporary directory, shaped
//! like the formats' real files: reasoning, tool calls and 3 KB tool
//! outputs around the visible text, text with `"quotes"` and `<tags>`.
//!
//! Beside each wall time, the process's CPU time (user + system, all
//! threads) of the best round: on a machine shared with other work the
//! wall time grows with the load, the CPU time much less.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::cpu_time;

use dsh_session_reference::fs::{open_regular, BoundedLines};
use dsh_session_reference::sources::aider::AiderSource;
use dsh_session_reference::sources::copilot_cli::CopilotCliSource;
use dsh_session_reference::sources::cursor::CursorSource;
use dsh_session_reference::sources::files::{FileSessions, SessionFiles};
use dsh_session_reference::sources::gemini_cli::GeminiCliSource;
use serde_json::json;

fn text(i: usize, n: usize) -> String {
    format!("turn {i}: reading the parser, <tags> and \"quotes\" in the output; ").chars().cycle().take(n).collect()
}

fn ts(i: usize) -> String {
    format!("2026-07-01T{:02}:{:02}:{:02}.000Z", (i / 3600) % 24, (i / 60) % 60, i % 60)
}

fn lines(target: usize, mut turn: impl FnMut(usize, &mut Vec<serde_json::Value>)) -> String {
    let mut out = String::with_capacity(target + (1 << 20));
    let mut i = 0;
    let mut batch = Vec::new();
    while out.len() < target {
        turn(i, &mut batch);
        for v in batch.drain(..) {
            out.push_str(&v.to_string());
            out.push('\n');
        }
        i += 1;
    }
    out
}

/// A Copilot CLI `events.jsonl` of about `target` bytes.
fn copilot(target: usize) -> String {
    let head = json!({"type": "session.start", "id": "e0", "timestamp": ts(0), "parentId": null, "data": {
        "sessionId": "s", "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.76",
        "startTime": ts(0), "context": {"cwd": "/work/app", "gitRoot": "/work/app", "branch": "main"}}});
    let body = lines(target, |i, out| {
        let ev = |kind: &str, n: usize, data: serde_json::Value| json!({"type": kind, "id": format!("e{i}.{n}"), "timestamp": ts(i), "parentId": format!("e{i}.{}", n.max(1) - 1), "data": data});
        out.push(ev(
            "user.message",
            1,
            json!({"content": text(i, 300),
            "transformedContent": format!("<current_datetime>{}</current_datetime>\n{}", ts(i), text(i, 300)),
            "attachments": [], "agentMode": "interactive", "delivery": "idle"}),
        ));
        out.push(ev("assistant.turn_start", 2, json!({"turnId": i.to_string()})));
        out.push(ev("assistant.reasoning", 3, json!({"reasoningId": format!("r{i}"), "content": text(i, 800)})));
        out.push(ev(
            "assistant.message",
            4,
            json!({"messageId": format!("m{i}a"), "content": "",
            "toolRequests": [{"toolCallId": format!("t{i}"), "name": "view", "arguments": {"path": "src/lib.rs"}}],
            "reasoningText": text(i, 400)}),
        ));
        out.push(ev("tool.execution_start", 5, json!({"toolCallId": format!("t{i}"), "toolName": "view"})));
        out.push(ev(
            "tool.execution_complete",
            6,
            json!({"toolCallId": format!("t{i}"), "success": true,
            "result": {"content": text(i, 3000)}}),
        ));
        out.push(ev("assistant.message", 7, json!({"messageId": format!("m{i}b"), "content": text(i, 400)})));
        if i % 500 == 499 {
            out.push(ev("session.compaction_start", 8, json!({"trigger": "threshold"})));
            out.push(ev("session.compaction_complete", 9, json!({"success": true, "summaryContent": text(i, 2000)})));
        }
    });
    format!("{head}\n{body}")
}

/// A Gemini CLI chat `.jsonl` of about `target` bytes.
fn gemini(target: usize) -> String {
    let head = json!({"sessionId": "s", "projectHash": "h", "startTime": ts(0), "lastUpdated": ts(0), "kind": "main"});
    let body = lines(target, |i, out| {
        out.push(
            json!({"id": format!("u{i}"), "timestamp": ts(i), "type": "user", "content": [{"text": text(i, 300)}]}),
        );
        let call = json!({"id": format!("t{i}"), "name": "read_file", "args": {"path": "src/lib.rs"}, "status": "success",
            "timestamp": ts(i), "result": [{"functionResponse": {"id": format!("t{i}"), "name": "read_file",
            "response": {"output": text(i, 3000)}}}]});
        out.push(json!({"id": format!("g{i}"), "timestamp": ts(i), "type": "gemini", "content": "",
            "thoughts": [{"subject": "plan", "description": text(i, 800), "timestamp": ts(i)}], "toolCalls": [call]}));
        out.push(
            json!({"id": format!("g{i}"), "timestamp": ts(i), "type": "gemini", "content": [{"text": text(i, 400)}],
            "thoughts": [], "toolCalls": [call], "tokens": {"input": 1, "output": 1, "cached": 0, "total": 2}}),
        );
        out.push(json!({"$set": {"lastUpdated": ts(i)}}));
    });
    format!("{head}\n{body}")
}

/// A Cursor agent transcript of about `target` bytes.
fn cursor(target: usize) -> String {
    lines(target, |i, out| {
        out.push(json!({"role": "user", "message": {"content": [{"type": "text", "text":
            format!("<user_info>\nOS: linux\n</user_info>\n<user_query>\n{}\n</user_query>", text(i, 300))}]}}));
        out.push(json!({"role": "assistant", "message": {"content": [{"type": "text", "text": text(i, 400)},
            {"type": "tool_use", "name": "read_file", "input": {"path": "src/lib.rs"}}]}}));
        out.push(json!({"role": "tool", "message": {"content": [{"type": "tool_result", "content": text(i, 3000)}]}}));
        out.push(json!({"role": "assistant", "message": {"content": [{"type": "text", "text": text(i, 400)}]}}));
    })
}

/// An Aider history of about `target` bytes in `runs` runs.
fn aider(target: usize, runs: usize) -> String {
    let mut out = String::with_capacity(target + 4096);
    let per_run = target / runs.max(1);
    for r in 0..runs {
        out.push_str(&format!("\n# aider chat started at 2026-07-{:02} 10:{:02}:00\n\n", 1 + r % 28, r % 60));
        out.push_str("> Aider v0.86.1  \n> Main model: gpt-5 with diff edit format  \n\n");
        let start = out.len();
        let mut i = 0;
        while out.len() - start < per_run {
            out.push_str(&format!("#### {}  \n#### {}  \n\n", text(i, 150), text(i + 1, 150)));
            out.push_str(&format!("{}\n\nsrc/lib.rs\n```rust\n{}\n```\n\n", text(i, 400), text(i, 600)));
            for _ in 0..20 {
                out.push_str(&format!("> {}  \n", text(i, 150)));
            }
            out.push('\n');
            i += 1;
        }
    }
    out
}

/// The floor of any reader of the file, best of `rounds`: its lines read
/// with the sources' own line reader (nothing parsed), and every line
/// parsed by serde_json into `IgnoredAny` (builds nothing).
fn floors(path: &Path, rounds: usize) -> (Duration, Duration) {
    let pass = |parse: bool| {
        let (file, _) = open_regular(path).unwrap();
        let mut lines = BoundedLines::new(file, 64 << 20);
        let mut n = 0u64;
        while let Some(line) = lines.next_line().unwrap() {
            n += if parse { u64::from(serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok()) } else { 1 };
        }
        std::hint::black_box(n);
    };
    let (mut scan, mut skip) = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        let t = Instant::now();
        pass(false);
        scan = scan.min(t.elapsed());
        let t = Instant::now();
        pass(true);
        skip = skip.min(t.elapsed());
    }
    (scan, skip)
}

/// `f`'s wall and CPU time.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration, Duration) {
    let (t, c) = (Instant::now(), cpu_time());
    let v = f();
    (v, t.elapsed(), cpu_time() - c)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_owned()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Best of `rounds` reads of `id`: (wall time, CPU time, items).
fn read_best<F: SessionFiles>(source: &FileSessions<F>, id: &str, rounds: usize) -> (Duration, Duration, usize) {
    let (mut best, mut best_cpu) = (Duration::MAX, Duration::MAX);
    let mut items = 0;
    for _ in 0..rounds {
        let (n, wall, cpu) = timed(|| source.conversation(id).unwrap().items.len());
        items = n;
        best = best.min(wall);
        best_cpu = best_cpu.min(cpu);
    }
    (best, best_cpu, items)
}

/// First and best of `rounds` listings, each by a newly opened source, and
/// the least CPU time one took.
fn list_best<F: SessionFiles>(
    open: impl Fn() -> FileSessions<F>,
    want: usize,
    rounds: usize,
) -> (Duration, Duration, Duration) {
    let mut first = None;
    let (mut best, mut best_cpu) = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        let source = open();
        let (listed, took, cpu) = timed(|| source.list().unwrap());
        assert_eq!(listed.sessions.len(), want, "{:?}", listed.rejected.first());
        first.get_or_insert(took);
        best = best.min(took);
        best_cpu = best_cpu.min(cpu);
    }
    (first.unwrap(), best, best_cpu)
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (size, sessions, rounds) = if quick { (20 << 20, 2_000, 3) } else { (100 << 20, 10_000, 5) };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();

    println!("load average at the start: {}", load());
    println!("format          MB   line scan  skip-parse        read     MB/s   /skip   items   read cpu");
    let row = |name: &str, path: &Path, (best, cpu, items): (Duration, Duration, usize)| {
        let mb = std::fs::metadata(path).unwrap().len() as f64 / 1e6;
        let (scan, skip) = floors(path, rounds);
        let skip_text = if name == "aider" { "         -".to_owned() } else { format!("{:9.1}ms", ms(skip)) };
        let ratio = if name == "aider" { "      -".to_owned() } else { format!("{:6.2}x", ms(best) / ms(skip)) };
        println!(
            "{name:<12} {mb:6.1} {:9.1}ms {skip_text} {:9.1}ms {:8.0} {ratio} {items:7} {:8.1}ms",
            ms(scan),
            ms(best),
            mb / best.as_secs_f64(),
            ms(cpu)
        );
    };
    let path = t.join("copilot/big/events.jsonl");
    write(&path, &copilot(size));
    row(
        "copilot-cli",
        &path,
        read_best(&CopilotCliSource::open(t.join("copilot")).unwrap(), "copilot-cli:big", rounds),
    );
    std::fs::remove_dir_all(t.join("copilot")).unwrap();

    let path = t.join("gemini/p/chats/session-2026-07-01T00-00-big.jsonl");
    write(&path, &gemini(size));
    let source = GeminiCliSource::open(t.join("gemini")).unwrap();
    source.list().unwrap();
    row("gemini-cli", &path, read_best(&source, "gemini-cli:s", rounds));
    std::fs::remove_dir_all(t.join("gemini")).unwrap();

    let path = t.join("cursor/-work-app/agent-transcripts/big.jsonl");
    write(&path, &cursor(size));
    row("cursor", &path, read_best(&CursorSource::open(t.join("cursor")).unwrap(), "cursor:big", rounds));
    std::fs::remove_dir_all(t.join("cursor")).unwrap();

    // One run of 100 MB: the reader goes through the whole file either way.
    let path = t.join("aider/app/.aider.chat.history.md");
    write(&path, &aider(size, 1));
    let source = AiderSource::open(t.join("aider")).unwrap();
    let id = source.list().unwrap().sessions[0].header.id.clone();
    row("aider", &path, read_best(&source, &id, rounds));
    std::fs::remove_dir_all(t.join("aider")).unwrap();

    // Listings: `sessions` of each kind, each a short real-shaped session.
    println!("load average: {}", load());
    println!(
        "\nlisting {sessions} sessions of each kind, a new source each round (first / best of {rounds}; least CPU):"
    );
    let small = copilot(8_000);
    for n in 0..sessions {
        write(&t.join(format!("l/copilot/{n:08x}-0000-4000-8000-000000000000/events.jsonl")), &small);
    }
    let (first, best, cpu) = list_best(|| CopilotCliSource::open(t.join("l/copilot")).unwrap(), sessions, rounds);
    println!("  copilot-cli: {:.1} / {:.1} ms; cpu {:.1} ms", ms(first), ms(best), ms(cpu));
    std::fs::remove_dir_all(t.join("l/copilot")).unwrap();

    let small = gemini(8_000);
    for n in 0..sessions {
        let text = small.replacen("\"sessionId\":\"s\"", &format!("\"sessionId\":\"{n:08x}\""), 1);
        write(&t.join(format!("l/gemini/p{}/chats/session-2026-07-01T00-00-{n:08x}.jsonl", n % 100)), &text);
    }
    for p in 0..100.min(sessions) {
        write(&t.join(format!("l/gemini/p{p}/.project_root")), &format!("/work/p{p}\n"));
    }
    let (first, best, cpu) = list_best(|| GeminiCliSource::open(t.join("l/gemini")).unwrap(), sessions, rounds);
    println!("  gemini-cli: {:.1} / {:.1} ms; cpu {:.1} ms", ms(first), ms(best), ms(cpu));
    std::fs::remove_dir_all(t.join("l/gemini")).unwrap();

    let small = cursor(8_000);
    for n in 0..sessions {
        write(&t.join(format!("l/cursor/-work-p{}/agent-transcripts/{n:08x}.jsonl", n % 100)), &small);
    }
    let (first, best, cpu) = list_best(|| CursorSource::open(t.join("l/cursor")).unwrap(), sessions, rounds);
    println!("  cursor: {:.1} / {:.1} ms; cpu {:.1} ms", ms(first), ms(best), ms(cpu));
    std::fs::remove_dir_all(t.join("l/cursor")).unwrap();

    // Aider: 5 runs (sessions) per history, in repositories two levels down.
    let small = aider(8_000, 5);
    for n in 0..sessions / 5 {
        write(&t.join(format!("l/aider/org{}/repo{n}/.aider.chat.history.md", n % 20)), &small);
    }
    let (first, best, cpu) = list_best(|| AiderSource::open(t.join("l/aider")).unwrap(), sessions, rounds);
    println!(
        "  aider ({} histories of 5 runs): {:.1} / {:.1} ms; cpu {:.1} ms",
        sessions / 5,
        ms(first),
        ms(best),
        ms(cpu)
    );
    println!("load average at the end: {}", load());
}
