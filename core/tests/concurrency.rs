//! Concurrency (SECURITY.md): one resolver shared by 8 threads doing 1,000 mixed
//! calls with random cancellations. Every call ends, every call that was not
//! cancelled returns exactly what the same call returns single-threaded, and
//! a watchdog turns a deadlock into a failure instead of a hung CI job.

mod common;

use common::Rng;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use dsh_session_reference::{
    block_on, context, encode_uri, format_mention, CancelToken, CandidateOptions, Config, ErrorCode, HostError,
    PrepareOptions, QueryFuture, Resolver, SessionHeader, SessionQuery, SurfaceData, Target,
};
use serde_json::{json, Value};

const THREADS: usize = 8;
const CALLS: usize = 1_000;
const SESSIONS: usize = 24;

/// An async host with per-call jitter, so reads of concurrent calls
/// interleave; `fail` fails after a delay, everything else answers.
struct JitteryHost {
    calls: AtomicU64,
}

impl JitteryHost {
    async fn jitter(&self) {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let mut rng = Rng(n.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        match rng.below(4) {
            0 => {}
            1 => tokio::task::yield_now().await,
            _ => tokio::time::sleep(Duration::from_micros(rng.below(2_000))).await,
        }
    }
}

fn session_id(i: usize) -> String {
    format!("s{i}")
}

fn snapshot(i: usize) -> Value {
    let n = 1 + i % 9;
    let events: Vec<Value> = (0..n)
        .map(|k| {
            let text = format!("session {i} message {k} <b>{}</b>\u{2028}", "x".repeat(37 * (i + k) % 400));
            if k % 2 == 0 {
                let source = if k == 2 && i % 3 == 0 {
                    json!({"kind": "plugin", "plugin": "compact"})
                } else {
                    json!({"kind": "user"})
                };
                json!({"seq": k, "type": "user/message",
                       "data": {"content": [{"type": "text", "text": text}], "source": source}})
            } else {
                json!({"seq": k, "type": "assistant/message",
                       "data": {"message": {"content": [{"type": "text", "text": text}]}}})
            }
        })
        .collect();
    let cwd = (i % 3 == 0).then(|| "/work".to_string());
    json!({"session": {"id": session_id(i), "createdAt": i, "cwd": cwd}, "capturedThroughSeq": n - 1, "events": events})
}

impl SessionQuery for JitteryHost {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        Box::pin(async move {
            self.jitter().await;
            Ok((0..SESSIONS)
                .map(|i| SessionHeader::new(session_id(i), i as u64, (i % 3 == 0).then(|| "/work".to_string())))
                .chain([SessionHeader::new("fail", 99u64, None)])
                .collect())
        })
    }
    fn read_title<'a>(&'a self, id: &'a str) -> QueryFuture<'a, Option<String>> {
        Box::pin(async move {
            self.jitter().await;
            match id {
                "fail" => Err(HostError::new("no title store")),
                "s4" => Ok(None),
                _ => Ok(Some(format!("Title of {id}"))),
            }
        })
    }
    fn read_surface<'a>(&'a self, id: &'a str) -> QueryFuture<'a, SurfaceData> {
        Box::pin(async move {
            self.jitter().await;
            let i: usize = id.strip_prefix('s').and_then(|n| n.parse().ok()).ok_or(HostError::new("cannot read"))?;
            // Alternate between JSON text and values.
            let snap = snapshot(i);
            Ok(if i % 2 == 0 { SurfaceData::from(serde_json::to_vec(&snap).unwrap()) } else { SurfaceData::from(snap) })
        })
    }
}

#[derive(Clone, Debug)]
enum Op {
    Prepare(Vec<&'static str>),
    PrepareMessages(Vec<&'static str>),
    Candidates(&'static str),
    ListCandidates(&'static str, u64),
}

fn ops() -> Vec<Op> {
    vec![
        Op::Prepare(vec!["s1"]),
        Op::Prepare(vec!["s2", "s3", "s5"]),
        Op::Prepare(vec!["s8", "s8", "s0"]),
        Op::Prepare(vec!["s7", "fail"]),
        Op::Prepare(vec!["s23"]),
        Op::Prepare(vec!["target"]),
        Op::PrepareMessages(vec!["s6", "s9"]),
        Op::PrepareMessages(vec!["s11", "fail"]),
        Op::PrepareMessages(vec![]),
        Op::Candidates(""),
        Op::Candidates("title of s1"),
        Op::ListCandidates("", 5),
        Op::ListCandidates("/work", 3),
        Op::ListCandidates("s2", 100),
    ]
}

fn messages(ids: &[&str]) -> Vec<Value> {
    let mut out = vec![json!({"id": "sys", "role": "system", "source": {"kind": "system"},
                              "content": [{"type": "text", "text": format!("not parsed: {}", encode_uri("s1"))}]})];
    for (k, id) in ids.iter().enumerate() {
        out.push(json!({"id": format!("u{k}"), "role": "user", "source": {"kind": "user"},
                        "content": [{"type": "text", "text": format!("see {} and {}", format_mention(id, Some("it")),
                                                                  encode_uri("s10"))}]}));
        out.push(json!({"id": format!("a{k}"), "role": "assistant", "source": {"kind": "model"},
                        "content": [{"type": "text", "text": "ok"}]}));
    }
    out
}

/// Drops the fresh UUID of every context message.
fn without_context_ids(mut v: Value) -> Value {
    fn strip(m: &mut Value) {
        if m["source"]["kind"] == "session-reference" {
            m.as_object_mut().unwrap().remove("id");
        }
    }
    match &mut v {
        Value::Array(list) => list.iter_mut().for_each(strip),
        Value::Object(o) => {
            if let Some(ctx) = o.get_mut("additionalContext") {
                strip(ctx);
            }
        }
        _ => {}
    }
    v
}

/// Runs one op; the outcome as comparable JSON or an error code.
fn run(resolver: &Resolver, op: &Op, cancel: Option<&CancelToken>) -> Result<Value, ErrorCode> {
    let target = Target::new("target", Some("/work".into()));
    let content = json!([{"type": "text", "text": "hi"}]);
    let out = match op {
        Op::Prepare(ids) => {
            let refs: Vec<Value> = ids.iter().map(|id| json!({"sessionId": id})).collect();
            block_on(resolver.prepare(&target, &content, &refs, &PrepareOptions::default(), cancel))
                .map(|p| p.into_json())
        }
        Op::PrepareMessages(ids) => {
            block_on(resolver.prepare_messages(&target, &messages(ids), &PrepareOptions::default(), cancel))
                .map(context::messages_into_json)
        }
        Op::Candidates(q) => block_on(resolver.candidates(&target, q, &CandidateOptions::default(), cancel))
            .map(|l| Value::from(l.iter().map(|c| c.to_json()).collect::<Vec<_>>())),
        Op::ListCandidates(q, limit) => block_on(resolver.candidates(
            &target,
            q,
            &CandidateOptions::default().with_limit(Some(*limit)).without_mentions(),
            cancel,
        ))
        .map(|l| Value::from(l.iter().map(|c| c.to_json()).collect::<Vec<_>>())),
    };
    out.map(without_context_ids).map_err(|e| e.code())
}

#[test]
fn eight_threads_share_one_resolver_for_1000_mixed_calls_with_cancellations() {
    let resolver = Resolver::new(
        Arc::new(JitteryHost { calls: AtomicU64::new(0) }),
        Config::new(None, Some(10), Some(1_500)).unwrap(),
    );
    let ops = Arc::new(ops());
    // Single-threaded results first; they must cover successes and failures.
    let expected: Arc<Vec<Result<Value, ErrorCode>>> =
        Arc::new(ops.iter().map(|op| run(&resolver, op, None)).collect());
    let codes: Vec<Option<ErrorCode>> = expected.iter().map(|r| r.as_ref().err().copied()).collect();
    assert!(codes.contains(&Some(ErrorCode::ReadFailed)) && codes.contains(&Some(ErrorCode::SelfReference)));
    assert!(codes.iter().filter(|c| c.is_none()).count() >= 10, "{codes:?}");
    // Sanity: the expected results are themselves reproducible.
    for (op, want) in ops.iter().zip(expected.iter()) {
        assert_eq!(&run(&resolver, op, None), want, "{op:?} is not deterministic");
    }

    let (done_tx, done_rx) = mpsc::channel::<(usize, usize, usize)>();
    let mut handles = Vec::new();
    for t in 0..THREADS {
        let (resolver, ops, expected, done_tx) = (resolver.clone(), ops.clone(), expected.clone(), done_tx.clone());
        handles.push(thread::spawn(move || {
            let mut rng = Rng(0xc0ff_ee00 + t as u64 * 7919);
            let (mut matched, mut cancelled) = (0, 0);
            for call in 0..CALLS / THREADS {
                let k = rng.below(ops.len() as u64) as usize;
                let cancel = match rng.below(6) {
                    0 => {
                        let c = CancelToken::new();
                        c.cancel();
                        Some(c)
                    }
                    1 | 2 => {
                        // Cancelled from another thread after a random delay.
                        let c = CancelToken::new();
                        let (c2, delay) = (c.clone(), Duration::from_micros(rng.below(3_000)));
                        dsh_session_reference::runtime().spawn(async move {
                            tokio::time::sleep(delay).await;
                            c2.cancel();
                        });
                        Some(c)
                    }
                    3 => Some(CancelToken::new()), // a token that is never cancelled
                    _ => None,
                };
                let got = run(&resolver, &ops[k], cancel.as_ref());
                let was_cancelled = cancel.as_ref().is_some_and(CancelToken::is_cancelled);
                if got == expected[k] {
                    matched += 1;
                } else if was_cancelled && got == Err(ErrorCode::Cancelled) {
                    cancelled += 1;
                } else {
                    panic!("thread {t} call {call} {:?}: got {got:?}, want {:?}", ops[k], expected[k]);
                }
            }
            done_tx.send((t, matched, cancelled)).unwrap();
        }));
    }
    drop(done_tx);

    // Watchdog: generous, since CI shares two cores with other jobs; a
    // deadlock fails here instead of hanging the test run.
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    let (mut matched, mut cancelled) = (0, 0);
    for _ in 0..THREADS {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match done_rx.recv_timeout(left) {
            Ok((_, m, c)) => {
                matched += m;
                cancelled += c;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("deadlock: not every thread finished within 180 s"),
            Err(mpsc::RecvTimeoutError::Disconnected) => break, // a worker panicked; join reports it
        }
    }
    for h in handles {
        h.join().expect("a worker failed");
    }
    assert_eq!(matched + cancelled, CALLS);
    assert!(cancelled > 0, "no call was actually cancelled");
    assert!(matched > CALLS / 2, "only {matched} calls completed");
}
