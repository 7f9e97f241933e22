//! `prepare` on one big source, against the cost of reading its JSON once.
//!
//! Run: `cargo bench -p dsh-session-reference --bench prepare`
//! (add `-- --quick` for fewer sizes and repetitions).
//!
//! Inputs are generated deterministically: n messages of 500 bytes, a
//! compaction checkpoint first, then alternating user/assistant messages,
//! each followed by a tool result of the same size that projection skips
//! (`--no-tools` leaves those out, the core issue's exact input).
//! For every input the baseline is a typed serde_json parse of the same bytes
//! that skips everything (`IgnoredAny`), measured in the same run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_session_reference::{Config, MemoryQuery, Resolver, SurfaceData, Target, MAX_SAFE_INTEGER};
use serde::de::IgnoredAny;
use serde_json::json;

fn synthetic(n: usize, tools: bool) -> Vec<u8> {
    let mut s = String::with_capacity(n * if tools { 1200 } else { 620 });
    s.push_str(r#"{"session":{"id":"big","createdAt":1700000000000,"cwd":"/work"},"capturedThroughSeq":"#);
    s.push_str(&format!("{},\"events\":[", n * 2));
    let mut seq = 0;
    for i in 0..n {
        // 500 bytes of text with a few characters JSON must escape.
        let text: String = format!("message {i:>8} <tag> \"quoted\" ").chars().cycle().take(500).collect();
        let ev = if i == 0 {
            json!({"seq": seq, "time": seq, "type": "user/message", "data": {"id": format!("m{i}"), "role": "user",
                   "content": [{"type": "text", "text": text}], "source": {"kind": "plugin", "plugin": "compact"}},
                   "surfaceOp": "append"})
        } else if i % 2 == 1 {
            json!({"seq": seq, "time": seq, "type": "user/message", "data": {"id": format!("m{i}"), "role": "user",
                   "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}, "surfaceOp": "append"})
        } else {
            json!({"seq": seq, "time": seq, "type": "assistant/message", "data": {"turn": i, "step": 1,
                   "message": {"id": format!("m{i}"), "role": "assistant",
                   "content": [{"type": "reasoning", "text": "thinking"}, {"type": "text", "text": text}],
                   "source": {"kind": "model", "provider": "p", "model": "m"}}}, "surfaceOp": "append"})
        };
        if i > 0 {
            s.push(',');
        }
        s.push_str(&ev.to_string());
        seq += 1;
        if tools {
            let tool = json!({"seq": seq, "time": seq, "type": "tool/result", "data": {"turn": i, "step": 1,
                "message": {"id": format!("t{i}"), "role": "user", "content": [{"type": "tool-result", "toolCallId": "c",
                "content": [{"type": "text", "text": text}], "isError": false}], "source": {"kind": "tool", "callId": "c"}}},
                "surfaceOp": "append"});
            s.push(',');
            s.push_str(&tool.to_string());
            seq += 1;
        }
    }
    s.push_str("]}");
    s.into_bytes()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn measure(reps: usize, mut f: impl FnMut()) -> Duration {
    f(); // warm up
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let tools = !args.iter().any(|a| a == "--no-tools");
    let sizes: &[usize] = if quick { &[1_000, 10_000] } else { &[1_000, 10_000, 100_000] };
    println!("prepare of one source; median of runs; baseline = typed skip-parse of the same bytes");
    println!("inputs: {} ", if tools { "messages + skipped tool results" } else { "messages only" });
    println!(
        "{:>8} {:>9} {:>10} {:>11} {:>10} {:>9} {:>11} {:>10}",
        "messages", "MB", "baseline", "default", "MB/s", "ratio", "unlimited", "MB/s"
    );
    for &n in sizes {
        let bytes = synthetic(n, tools);
        let mb = bytes.len() as f64 / 1e6;
        let reps = if quick {
            5
        } else if n >= 100_000 {
            7
        } else {
            15
        };
        let baseline = measure(reps, || {
            let _: IgnoredAny = serde_json::from_slice(&bytes).unwrap();
        });
        let shared: Arc<Vec<u8>> = Arc::new(bytes);
        let run = |budget: u64| {
            let query = MemoryQuery::new();
            query.set_surface("big", SurfaceData::Json(shared.clone()));
            let resolver = Resolver::new(Arc::new(query), Config::new(None, None, Some(budget)).unwrap());
            let target = Target::new("t", None);
            let content = json!([{"type": "text", "text": "go"}]);
            let refs = [json!({"sessionId": "big"})];
            measure(reps, || {
                let p = resolver.prepare_blocking(&target, &content, &refs, None).unwrap();
                assert!(p.additional_context.is_some());
            })
        };
        let default = run(65_536);
        let unlimited = run(MAX_SAFE_INTEGER);
        println!(
            "{:>8} {:>9.1} {:>8.2}ms {:>9.2}ms {:>10.0} {:>8.2}x {:>9.2}ms {:>10.0}",
            n,
            mb,
            baseline.as_secs_f64() * 1e3,
            default.as_secs_f64() * 1e3,
            mb / default.as_secs_f64(),
            default.as_secs_f64() / baseline.as_secs_f64(),
            unlimited.as_secs_f64() * 1e3,
            mb / unlimited.as_secs_f64(),
        );
    }
}
