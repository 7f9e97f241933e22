//! `prepare` on one big source, measured against the cost of reading its
//! JSON once (the scaling figures and targets 1 and 2 of BENCHMARKS.md).
//!
//! Run: `cargo bench -p dsh-session-reference --bench prepare`
//! (`-- --quick` for fewer sizes and repetitions, `-- --only synthetic` or
//! `-- --only realistic` or `-- --only hardened` for one table).
//!
//! Inputs are generated deterministically, nothing is downloaded:
//! - "messages": n messages of 500 bytes, a compaction checkpoint first, then
//!   alternating user/assistant (the synthetic input of BENCHMARKS.md);
//! - "session": a realistic agent log of a given size: every assistant
//!   message carries reasoning and is followed by a tool result of about
//!   2 KB, which projection skips.
//!
//! For every input the baseline is a typed serde_json parse of the same bytes
//! that skips everything (`IgnoredAny`), measured in the same run, one
//! baseline run after each prepare run; `ratio` is prepare / baseline.
//! Times are medians of wall time; `cpu` is the median of the process CPU
//! time of the same runs (steadier on a shared machine).
//! `peak/in` is the peak of live heap memory during `prepare`, input included,
//! divided by the input size (a counting global allocator measures it).
//! The "hardened" table measures the realistic sessions with every option
//! of the hardened mode off and with the `hardened` preset, alternately;
//! its ratio is on / off.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cpu_time;

use dsh_session_reference::{
    block_on, Config, Hardening, MemoryQuery, PrepareOptions, Resolver, SurfaceData, Target, MAX_SAFE_INTEGER,
};
use serde::de::IgnoredAny;
use serde_json::json;

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator, which
// upholds `GlobalAlloc`'s contract; the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `layout` is passed on as `GlobalAlloc::alloc` requires.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with this `layout` (alloc above).
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with `layout`; the caller guarantees `new_size`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size > layout.size() {
                let live = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
                PEAK.fetch_max(live, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn text(i: usize, len: usize) -> String {
    format!("message {i:>8} <tag> \"quoted\" and plain words that fill the line ").chars().cycle().take(len).collect()
}

fn event(seq: usize, i: usize, kind: &str, text: &str) -> serde_json::Value {
    match kind {
        "checkpoint" => json!({"seq": seq, "time": seq, "type": "user/message", "data": {"id": format!("m{i}"),
            "role": "user", "content": [{"type": "text", "text": text}],
            "source": {"kind": "plugin", "plugin": "compact"}}, "surfaceOp": "append"}),
        "user" => json!({"seq": seq, "time": seq, "type": "user/message", "data": {"id": format!("m{i}"),
            "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}},
            "surfaceOp": "append"}),
        "assistant" => json!({"seq": seq, "time": seq, "type": "assistant/message", "data": {"turn": i, "step": 1,
            "message": {"id": format!("m{i}"), "role": "assistant", "content": [
                {"type": "reasoning", "text": "thinking about it ".repeat(20)},
                {"type": "text", "text": text},
                {"type": "tool-call", "id": format!("c{i}"), "name": "read", "arguments": {"path": "/src/lib.rs"}}],
            "source": {"kind": "model", "provider": "p", "model": "m"}}}, "surfaceOp": "append"}),
        _ => json!({"seq": seq, "time": seq, "type": "tool/result", "data": {"turn": i, "step": 1,
            "message": {"id": format!("t{i}"), "role": "user", "content": [{"type": "tool-result",
            "toolCallId": format!("c{i}"), "content": [{"type": "text", "text": text}], "isError": false}],
            "source": {"kind": "tool", "callId": format!("c{i}")}}}, "surfaceOp": "append"}),
    }
}

/// n messages of 500 bytes: checkpoint, then alternating user/assistant.
fn messages(n: usize) -> Vec<u8> {
    let mut events = Vec::with_capacity(n);
    for i in 0..n {
        let kind = if i == 0 {
            "checkpoint"
        } else if i % 2 == 1 {
            "user"
        } else {
            "assistant"
        };
        let ev = json!({"seq": i, "type": if kind == "assistant" { "assistant/message" } else { "user/message" },
        "data": if kind == "assistant" {
            json!({"message": {"role": "assistant", "content": [{"type": "text", "text": text(i, 500)}]}})
        } else {
            json!({"role": "user", "content": [{"type": "text", "text": text(i, 500)}],
                   "source": if kind == "user" { json!({"kind": "user"}) } else { json!({"kind": "plugin", "plugin": "compact"}) }})
        }});
        events.push(ev.to_string());
    }
    wrap(n, &events)
}

/// A realistic session of about `target` bytes.
fn session(target: usize) -> Vec<u8> {
    let mut events = Vec::new();
    let (mut size, mut i, mut seq) = (0usize, 0usize, 0usize);
    while size < target {
        let kind = match i % 3 {
            _ if i == 0 => "checkpoint",
            1 => "user",
            _ => "assistant",
        };
        for (k, t) in [(kind, text(i, 400)), ("tool", text(i, 2000))] {
            if k == "tool" && kind != "assistant" {
                continue;
            }
            let e = event(seq, i, k, &t).to_string();
            size += e.len() + 1;
            events.push(e);
            seq += 1;
        }
        i += 1;
    }
    wrap(seq, &events)
}

fn wrap(n: usize, events: &[String]) -> Vec<u8> {
    let mut s = format!(
        r#"{{"session":{{"id":"big","createdAt":1700000000000,"cwd":"/work"}},"capturedThroughSeq":{},"events":["#,
        n.max(1) - 1
    );
    s.push_str(&events.join(","));
    s.push_str("]}");
    // Exact capacity: the allocator counts capacity, and the input must
    // count as its own size.
    s.shrink_to_fit();
    s.into_bytes()
}

struct Sample {
    wall: Duration,
    cpu: Duration,
}

/// Medians of `reps` runs of `f` and, when given, of `g`, run alternately
/// (one of each per round) so that both see the same machine: on a shared
/// virtual machine the speed of a core drifts from second to second.
fn measure(reps: usize, mut f: impl FnMut(), mut g: Option<&mut dyn FnMut()>) -> (Sample, Sample) {
    f(); // warm up
    let mut runs = [(Vec::with_capacity(reps), Vec::with_capacity(reps)), (Vec::new(), Vec::new())];
    for _ in 0..reps {
        let time = |run: &mut (Vec<Duration>, Vec<Duration>), f: &mut dyn FnMut()| {
            let (t, c) = (Instant::now(), cpu_time());
            f();
            run.0.push(t.elapsed());
            run.1.push(cpu_time() - c);
        };
        let [first, second] = &mut runs;
        time(first, &mut f);
        if let Some(g) = g.as_mut() {
            time(second, &mut **g);
        }
    }
    let median = |(walls, cpus): &mut (Vec<Duration>, Vec<Duration>)| {
        walls.sort();
        cpus.sort();
        let at = walls.len() / 2;
        Sample { wall: walls.get(at).copied().unwrap_or_default(), cpu: cpus.get(at).copied().unwrap_or_default() }
    };
    let [first, second] = &mut runs;
    (median(first), median(second))
}

struct Run {
    time: Sample,
    /// The baseline, measured alternately with `time` (when asked for).
    base: Sample,
    peak: usize,
}

/// `prepare` of `bytes` under `budget`; with `with_baseline`, the typed
/// skip-parse of the same bytes is measured alternately with it.
fn prepare(bytes: &Arc<Vec<u8>>, budget: u64, reps: usize, with_baseline: bool) -> Run {
    let query = MemoryQuery::new();
    query.set_surface("big", SurfaceData::Json(bytes.clone()));
    let resolver = Resolver::new(Arc::new(query), Config::new(None, None, Some(budget)).unwrap());
    let target = Target::new("t", None);
    let content = json!([{"type": "text", "text": "go"}]);
    let refs = [json!({"sessionId": "big"})];
    let once = || {
        let p = block_on(resolver.prepare(&target, &content, &refs, &PrepareOptions::default(), None)).unwrap();
        assert!(p.additional_context.is_some());
    };
    once();
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    once();
    let peak = PEAK.load(Ordering::Relaxed);
    let mut baseline = || {
        let _: IgnoredAny = serde_json::from_slice(bytes).unwrap();
    };
    let (time, base) = measure(reps, once, with_baseline.then_some(&mut baseline as &mut dyn FnMut()));
    Run { time, base, peak }
}

/// `prepare` of `bytes` under the default budget with every option of the
/// hardened mode off, then with the `hardened` preset, run alternately.
fn prepare_hardened(bytes: &Arc<Vec<u8>>, reps: usize) -> (Sample, Sample) {
    let resolver = |hardening: Hardening| {
        let query = MemoryQuery::new();
        query.set_surface("big", SurfaceData::Json(bytes.clone()));
        Resolver::new(Arc::new(query), Config::default().with_hardening(hardening))
    };
    let (off, on) = (resolver(Hardening::default()), resolver(Hardening::ALL));
    let target = Target::new("t", None);
    let content = json!([{"type": "text", "text": "go"}]);
    let refs = [json!({"sessionId": "big"})];
    let once = |r: &Resolver| {
        let p = block_on(r.prepare(&target, &content, &refs, &PrepareOptions::default(), None)).unwrap();
        assert!(p.additional_context.is_some());
    };
    let mut hardened = || once(&on);
    measure(reps, || once(&off), Some(&mut hardened))
}

fn ms(d: Duration) -> String {
    format!("{:.2}ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `--only synthetic` or `--only realistic` runs one table (for profiling).
    let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).map(String::as_str);
    let run = |table: &str| only.is_none_or(|o| o == table);
    let reps = |mb: f64| {
        if quick {
            3
        } else if mb > 50.0 {
            5
        } else {
            11
        }
    };

    if run("synthetic") {
        println!("== synthetic messages (500 bytes each, checkpoint first): default and unlimited budget ==");
        println!(
            "{:>8} {:>7} {:>10} {:>10} {:>9} {:>7} {:>11} {:>9}",
            "messages", "MB", "baseline", "default", "MB/s", "ratio", "unlimited", "MB/s"
        );
        let counts: &[usize] = if quick { &[1_000, 10_000] } else { &[1_000, 10_000, 100_000] };
        for &n in counts {
            let bytes = Arc::new(messages(n));
            let mb = bytes.len() as f64 / 1e6;
            let d = prepare(&bytes, 65_536, reps(mb), true);
            let base = &d.base;
            let u = prepare(&bytes, MAX_SAFE_INTEGER, reps(mb), false);
            println!(
                "{:>8} {:>7.1} {:>10} {:>10} {:>9.0} {:>6.2}x {:>11} {:>9.0}",
                n,
                mb,
                ms(base.wall),
                ms(d.time.wall),
                mb / d.time.wall.as_secs_f64(),
                d.time.wall.as_secs_f64() / base.wall.as_secs_f64(),
                ms(u.time.wall),
                mb / u.time.wall.as_secs_f64(),
            );
        }
    }
    if run("realistic") {
        println!("\n== realistic sessions (reasoning, tool calls, 2 KB tool results), default budget ==");
        println!(
            "{:>7} {:>10} {:>10} {:>9} {:>7} {:>10} {:>10} {:>7} {:>8}",
            "MB", "baseline", "prepare", "MB/s", "ratio", "base cpu", "cpu", "ratio", "peak/in"
        );
        let sizes: &[usize] = if quick { &[1 << 20, 16 << 20] } else { &[1 << 20, 16 << 20, 128 << 20] };
        for &size in sizes {
            let bytes = Arc::new(session(size));
            let mb = bytes.len() as f64 / 1e6;
            let run = prepare(&bytes, 65_536, reps(mb), true);
            let base = &run.base;
            println!(
                "{:>7.1} {:>10} {:>10} {:>9.0} {:>6.2}x {:>10} {:>10} {:>6.2}x {:>7.2}x",
                mb,
                ms(base.wall),
                ms(run.time.wall),
                mb / run.time.wall.as_secs_f64(),
                run.time.wall.as_secs_f64() / base.wall.as_secs_f64(),
                ms(base.cpu),
                ms(run.time.cpu),
                run.time.cpu.as_secs_f64() / base.cpu.as_secs_f64(),
                run.peak as f64 / bytes.len() as f64,
            );
        }
    }
    if run("hardened") {
        println!("\n== realistic sessions, default budget: hardened mode off and on (`hardened` preset) ==");
        println!(
            "{:>7} {:>10} {:>10} {:>7} {:>10} {:>10} {:>7}",
            "MB", "off", "hardened", "ratio", "off cpu", "on cpu", "ratio"
        );
        let sizes: &[usize] = if quick { &[1 << 20, 16 << 20] } else { &[1 << 20, 16 << 20, 128 << 20] };
        for &size in sizes {
            let bytes = Arc::new(session(size));
            let mb = bytes.len() as f64 / 1e6;
            let (off, on) = prepare_hardened(&bytes, reps(mb));
            println!(
                "{:>7.1} {:>10} {:>10} {:>6.2}x {:>10} {:>10} {:>6.2}x",
                mb,
                ms(off.wall),
                ms(on.wall),
                on.wall.as_secs_f64() / off.wall.as_secs_f64(),
                ms(off.cpu),
                ms(on.cpu),
                on.cpu.as_secs_f64() / off.cpu.as_secs_f64(),
            );
        }
    }
}
