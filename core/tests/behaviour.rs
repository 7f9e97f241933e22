//! Behaviour the conformance vectors cannot show: cancellation, concurrency,
//! all-or-nothing results, `prepare_messages` ordering, and linear retention.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_session_reference::work;
use dsh_session_reference::{
    block_on, encode_uri, format_mention, Blocking, BlockingSessionQuery, CancelToken, CandidateOptions, Config,
    ErrorCode, HostError, MemoryQuery, PrepareOptions, QueryFuture, Resolver, SessionHeader, SessionQuery, SurfaceData,
    Target,
};
use serde_json::{json, Value};

fn surface(id: &str, texts: &[&str]) -> Value {
    let events: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if i % 2 == 0 {
                json!({"seq": i, "type": "user/message",
                       "data": {"role": "user", "content": [{"type": "text", "text": t}], "source": {"kind": "user"}}})
            } else {
                json!({"seq": i, "type": "assistant/message",
                       "data": {"message": {"role": "assistant", "content": [{"type": "text", "text": t}]}}})
            }
        })
        .collect();
    json!({"session": {"id": id, "createdAt": 1}, "capturedThroughSeq": texts.len() as i64 - 1, "events": events})
}

/// A host whose reads behave per session id: `hang` never returns, `fail`
/// fails after a delay; anything else answers at once.
struct ScriptedHost {
    started: AtomicUsize,
}

impl SessionQuery for ScriptedHost {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        Box::pin(std::future::pending())
    }
    fn read_title<'a>(&'a self, _: &'a str) -> QueryFuture<'a, Option<String>> {
        Box::pin(std::future::pending())
    }
    fn read_surface<'a>(&'a self, id: &'a str) -> QueryFuture<'a, SurfaceData> {
        self.started.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if id == "hang" {
                std::future::pending::<()>().await;
            } else if id == "fail" {
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(HostError::new("disk on fire"));
            }
            Ok(SurfaceData::from(surface(id, &["hello", "world"])))
        })
    }
}

fn scripted() -> (Resolver, Arc<ScriptedHost>) {
    let host = Arc::new(ScriptedHost { started: AtomicUsize::new(0) });
    (Resolver::new(host.clone(), Config::default()), host)
}

fn refs(ids: &[&str]) -> Vec<Value> {
    ids.iter().map(|id| json!({"sessionId": id})).collect()
}

fn content() -> Value {
    json!([{"type": "text", "text": "go"}])
}

/// A token that another thread cancels after `ms` milliseconds.
/// How soon a cancelled call must return: against a read that never does
/// (an hour here), with room for a loaded machine's scheduling, where two
/// seconds once did not suffice at a load of 70 on two cores.
const PROMPTLY: Duration = Duration::from_secs(10);

fn cancelled_after(ms: u64) -> CancelToken {
    let cancel = CancelToken::new();
    let later = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(ms));
        later.cancel();
    });
    cancel
}

#[test]
fn a_read_that_never_returns_is_cancelled_promptly() {
    let (resolver, _) = scripted();
    let cancel = cancelled_after(100);
    let t = Instant::now();
    let err = block_on(resolver.prepare(
        &Target::new("t", None),
        &content(),
        &refs(&["hang"]),
        &PrepareOptions::default(),
        Some(&cancel),
    ))
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Cancelled);
    assert!(t.elapsed() < PROMPTLY, "took {:?}", t.elapsed());
}

#[test]
fn a_blocking_host_read_that_never_returns_is_cancelled_promptly() {
    struct Stuck;
    impl BlockingSessionQuery for Stuck {
        fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
            std::thread::sleep(Duration::from_secs(3600));
            Ok(vec![])
        }
        fn read_title(&self, _: &str) -> Result<Option<String>, HostError> {
            Ok(None)
        }
        fn read_surface(&self, _: &str) -> Result<SurfaceData, HostError> {
            std::thread::sleep(Duration::from_secs(3600));
            Err("unreachable".into())
        }
    }
    let resolver = Resolver::new(Arc::new(Blocking::new(Stuck)), Config::default());
    for call in 0..2 {
        let cancel = cancelled_after(50);
        let t = Instant::now();
        let target = Target::new("t", None);
        let err = if call == 0 {
            block_on(resolver.prepare(&target, &content(), &refs(&["a"]), &PrepareOptions::default(), Some(&cancel)))
                .unwrap_err()
        } else {
            block_on(resolver.candidates(&target, "", &CandidateOptions::default(), Some(&cancel))).unwrap_err()
        };
        assert_eq!(err.code(), ErrorCode::Cancelled);
        assert!(t.elapsed() < PROMPTLY, "took {:?}", t.elapsed());
    }
}

#[test]
fn an_already_cancelled_token_wins_before_any_read() {
    let (resolver, host) = scripted();
    let cancel = CancelToken::new();
    cancel.cancel();
    let err = block_on(resolver.prepare(
        &Target::new("t", None),
        &content(),
        &refs(&["a"]),
        &PrepareOptions::default(),
        Some(&cancel),
    ))
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Cancelled);
    assert_eq!(host.started.load(Ordering::SeqCst), 0);
    // Validation still comes first: an invalid reference is reported as such.
    let err = block_on(resolver.prepare(
        &Target::new("t", None),
        &content(),
        &[json!(1)],
        &PrepareOptions::default(),
        Some(&cancel),
    ))
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidReference);
}

/// Reads that meet: each waits (up to 10 s) until `expected` reads are in
/// flight at once, and `met` says whether every one saw them. Run one after
/// the other, each would time out alone. A count, not a duration, so a
/// loaded machine cannot fail it (three 300 ms reads within 800 ms could).
struct Meeting {
    expected: usize,
    arrived: std::sync::Mutex<usize>,
    all_here: std::sync::Condvar,
    met: AtomicUsize,
}

impl Meeting {
    fn new(expected: usize) -> Arc<Self> {
        Arc::new(Meeting {
            expected,
            arrived: std::sync::Mutex::new(0),
            all_here: std::sync::Condvar::new(),
            met: AtomicUsize::new(0),
        })
    }
    /// Arrives, and waits for the others on this thread.
    fn arrive_blocking(&self) {
        let mut arrived = self.arrived.lock().unwrap();
        *arrived += 1;
        self.all_here.notify_all();
        let (arrived, _) =
            self.all_here.wait_timeout_while(arrived, Duration::from_secs(10), |n| *n < self.expected).unwrap();
        if *arrived >= self.expected {
            self.met.fetch_add(1, Ordering::SeqCst);
        }
    }
    /// Arrives, and waits for the others without blocking the executor.
    async fn arrive(&self) {
        *self.arrived.lock().unwrap() += 1;
        let deadline = Instant::now() + Duration::from_secs(10);
        while *self.arrived.lock().unwrap() < self.expected && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if *self.arrived.lock().unwrap() >= self.expected {
            self.met.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn three_slow_reads_run_concurrently() {
    struct Slow(Arc<Meeting>);
    impl SessionQuery for Slow {
        fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
            Box::pin(std::future::pending())
        }
        fn read_title<'a>(&'a self, _: &'a str) -> QueryFuture<'a, Option<String>> {
            Box::pin(std::future::pending())
        }
        fn read_surface<'a>(&'a self, id: &'a str) -> QueryFuture<'a, SurfaceData> {
            Box::pin(async move {
                self.0.arrive().await;
                Ok(SurfaceData::from(surface(id, &["hello", "world"])))
            })
        }
    }
    let meeting = Meeting::new(3);
    let resolver = Resolver::new(Arc::new(Slow(meeting.clone())), Config::default());
    let prepared = block_on(resolver.prepare(
        &Target::new("t", None),
        &content(),
        &refs(&["slow-1", "slow-2", "slow-3"]),
        &PrepareOptions::default(),
        None,
    ))
    .unwrap();
    assert_eq!(meeting.met.load(Ordering::SeqCst), 3, "the three reads were not in flight at once");
    let refs = &prepared.additional_context.unwrap().into_json()["source"]["references"];
    let ids: Vec<&str> = refs.as_array().unwrap().iter().map(|r| r["sessionId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["slow-1", "slow-2", "slow-3"]);
}

#[test]
fn blocking_host_reads_run_in_parallel() {
    struct Meets(Arc<Meeting>);
    impl BlockingSessionQuery for Meets {
        fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
            Ok(vec![])
        }
        fn read_title(&self, _: &str) -> Result<Option<String>, HostError> {
            Ok(None)
        }
        fn read_surface(&self, id: &str) -> Result<SurfaceData, HostError> {
            self.0.arrive_blocking();
            Ok(SurfaceData::from(surface(id, &["hi"]).to_string()))
        }
    }
    let meeting = Meeting::new(3);
    let resolver = Resolver::new(Arc::new(Blocking::new(Meets(meeting.clone()))), Config::default());
    block_on(resolver.prepare(
        &Target::new("t", None),
        &content(),
        &refs(&["a", "b", "c"]),
        &PrepareOptions::default(),
        None,
    ))
    .unwrap();
    assert_eq!(meeting.met.load(Ordering::SeqCst), 3, "the three blocking reads did not run in parallel");
}

#[test]
fn a_failed_read_fails_fast_even_when_another_read_hangs() {
    let (resolver, _) = scripted();
    let t = Instant::now();
    let err = block_on(resolver.prepare(
        &Target::new("t", None),
        &content(),
        &refs(&["hang", "fail"]),
        &PrepareOptions::default(),
        None,
    ))
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ReadFailed);
    assert!(err.message().contains("disk on fire"), "{}", err.message());
    assert_eq!(err.host_error().unwrap().message(), "disk on fire");
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[test]
fn cancellation_racing_a_failing_read_reports_cancelled() {
    /// Cancels the caller's token, then fails: the failure arrives after
    /// the cancellation, which must win.
    struct CancelThenFail(CancelToken);
    impl SessionQuery for CancelThenFail {
        fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
            self.0.cancel();
            Box::pin(async { Err(HostError::new("listing failed")) })
        }
        fn read_title<'a>(&'a self, _: &'a str) -> QueryFuture<'a, Option<String>> {
            Box::pin(async { Ok(None) })
        }
        fn read_surface<'a>(&'a self, _: &'a str) -> QueryFuture<'a, SurfaceData> {
            self.0.cancel();
            Box::pin(async { Err(HostError::new("read failed")) })
        }
    }
    for call in 0..2 {
        let cancel = CancelToken::new();
        let resolver = Resolver::new(Arc::new(CancelThenFail(cancel.clone())), Config::default());
        let target = Target::new("t", None);
        let err = if call == 0 {
            block_on(resolver.prepare(&target, &content(), &refs(&["a"]), &PrepareOptions::default(), Some(&cancel)))
                .unwrap_err()
        } else {
            block_on(resolver.candidates(&target, "", &CandidateOptions::default(), Some(&cancel))).unwrap_err()
        };
        assert_eq!(err.code(), ErrorCode::Cancelled);
    }
    // Reads in flight when the cancellation comes, one of which fails
    // right after it (at once, or 20 ms later): the order is fixed by the
    // host, not by timers racing on a loaded machine.
    struct FailsOnceCancelled {
        cancel: CancelToken,
        started: AtomicUsize,
        fail_after: Duration,
    }
    impl SessionQuery for FailsOnceCancelled {
        fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
            Box::pin(std::future::pending())
        }
        fn read_title<'a>(&'a self, _: &'a str) -> QueryFuture<'a, Option<String>> {
            Box::pin(async { Ok(None) })
        }
        fn read_surface<'a>(&'a self, id: &'a str) -> QueryFuture<'a, SurfaceData> {
            self.started.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                self.cancel.cancelled().await;
                if id != "fail" {
                    std::future::pending::<()>().await;
                }
                tokio::time::sleep(self.fail_after).await;
                Err(HostError::new("disk on fire"))
            })
        }
    }
    for fail_after in [Duration::ZERO, Duration::from_millis(20)] {
        let cancel = CancelToken::new();
        let host = Arc::new(FailsOnceCancelled { cancel: cancel.clone(), started: AtomicUsize::new(0), fail_after });
        let resolver = Resolver::new(host.clone(), Config::default());
        // Cancelled once both reads have started.
        let canceller = {
            let (cancel, host) = (cancel.clone(), host.clone());
            std::thread::spawn(move || {
                while host.started.load(Ordering::SeqCst) < 2 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                cancel.cancel();
            })
        };
        let err = block_on(resolver.prepare(
            &Target::new("t", None),
            &content(),
            &refs(&["fail", "slow-x"]),
            &PrepareOptions::default(),
            Some(&cancel),
        ))
        .unwrap_err();
        canceller.join().unwrap();
        assert_eq!(err.code(), ErrorCode::Cancelled, "failing {fail_after:?} after the cancellation");
    }
}

#[test]
fn errors_leave_no_partial_output_and_budget_errors_follow_read_errors() {
    let query = MemoryQuery::new();
    query.set_surface("big", surface("big", &["x"]));
    query.fail_surface("gone", "deleted");
    let resolver = Resolver::new(Arc::new(query), Config::new(None, None, Some(20)).unwrap());
    let target = Target::new("t", None);
    let err =
        block_on(resolver.prepare(&target, &content(), &refs(&["big", "gone"]), &PrepareOptions::default(), None))
            .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ReadFailed);
    let err =
        block_on(resolver.prepare(&target, &content(), &refs(&["big"]), &PrepareOptions::default(), None)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::BudgetExceeded);
}

#[test]
fn malformed_snapshots_are_read_failures() {
    let query = MemoryQuery::new();
    query.set_surface("text", SurfaceData::from("not json".to_string()));
    query.set_surface("shape", json!({"session": {"id": "shape"}, "events": []}));
    query.set_surface("events", json!({"session": {"id": "e"}, "capturedThroughSeq": 1, "events": {}}));
    query.set_surface(
        "content",
        json!({"session": {"id": "c"}, "capturedThroughSeq": 1, "events": [
        {"type": "user/message", "data": {"content": "x", "source": {"kind": "user"}}}]}),
    );
    query.set_surface("trailing", SurfaceData::from(format!("{} x", surface("trailing", &["a"]))));
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    // `data` before `type` is buffered as a value, whose nesting is bounded.
    query.set_surface(
        "deep",
        SurfaceData::from(format!(
            r#"{{"session":{{"id":"d"}},"capturedThroughSeq":1,"events":[{{"data":{deep},"type":"user/message"}}]}}"#
        )),
    );
    let resolver = Resolver::new(Arc::new(query), Config::default());
    for id in ["text", "shape", "events", "content", "trailing", "deep"] {
        let err = block_on(resolver.prepare(
            &Target::new("t", None),
            &content(),
            &refs(&[id]),
            &PrepareOptions::default(),
            None,
        ))
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ReadFailed, "{id}: {err}");
    }
}

#[test]
fn deep_nesting_in_skipped_data_is_read_without_recursion() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let query = MemoryQuery::new();
    query.set_surface("deep", SurfaceData::from(format!(
        r#"{{"session":{{"id":"deep"}},"capturedThroughSeq":1,"events":[{{"type":"tool/result","data":{deep}}},
        {{"type":"user/message","data":{{"content":[{{"type":"text","text":"kept"}},{{"type":"tool-call","arguments":{deep}}}],
        "source":{{"kind":"user"}}}}}}]}}"#
    )));
    let resolver = Resolver::new(Arc::new(query), Config::default());
    let p = block_on(resolver.prepare(
        &Target::new("t", None),
        &content(),
        &refs(&["deep"]),
        &PrepareOptions::default(),
        None,
    ))
    .unwrap();
    assert!(p.additional_context.unwrap().into_json()["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains(r#""text":"kept""#));
}

#[test]
fn json_bytes_and_values_give_the_same_prompt() {
    let s = surface("s", &["<b>bold</b> \"quoted\" \u{2028}", "ok\u{1}", "final"]);
    let (a, b) = (MemoryQuery::new(), MemoryQuery::new());
    a.set_surface("s", s.clone());
    b.set_surface("s", SurfaceData::from(serde_json::to_vec(&s).unwrap()));
    let target = Target::new("t", None);
    let pa = block_on(Resolver::new(Arc::new(a), Config::default()).prepare(
        &target,
        &content(),
        &refs(&["s"]),
        &PrepareOptions::default(),
        None,
    ));
    let pb = block_on(Resolver::new(Arc::new(b), Config::default()).prepare(
        &target,
        &content(),
        &refs(&["s"]),
        &PrepareOptions::default(),
        None,
    ));
    let (pa, pb) =
        (pa.unwrap().additional_context.unwrap().into_json(), pb.unwrap().additional_context.unwrap().into_json());
    assert_eq!(pa["content"], pb["content"]);
    assert_eq!(pa["source"], pb["source"]);
    assert_ne!(pa["id"], pb["id"], "every context message gets a fresh id");
}

#[test]
fn prepare_messages_keeps_order_ids_and_untouched_messages() {
    let query = MemoryQuery::new();
    query.set_surface("a", surface("a", &["alpha"]));
    query.set_surface("b", surface("b", &["beta"]));
    let resolver = Resolver::new(Arc::new(query), Config::default());
    let mention_a = format_mention("a", Some("Session [A]"));
    let messages = vec![
        json!({"id": "m1", "role": "user", "source": {"kind": "user"},
               "content": [{"type": "text", "text": format!("see {mention_a}")}, {"type": "image", "url": "x"}]}),
        json!({"id": "m2", "role": "user", "source": {"kind": "plugin", "plugin": "x"},
               "content": [{"type": "text", "text": format!("not parsed {}", encode_uri("b"))}]}),
        json!({"id": "m3", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": "plain"}]}),
        json!({"id": "m4", "role": "user", "source": {"kind": "user"},
               "content": [{"type": "text", "text": format!("{} and {}", encode_uri("b"), encode_uri("a"))}]}),
    ];
    let before = messages.clone();
    let out: Vec<Value> =
        block_on(resolver.prepare_messages(&Target::new("t", None), &messages, &PrepareOptions::default(), None))
            .unwrap()
            .into_iter()
            .map(Value::from)
            .collect();
    assert_eq!(messages, before, "the caller's messages are not mutated");
    let ids: Vec<&str> = out.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 6);
    assert_eq!([ids[0], ids[2], ids[3], ids[4]], ["m1", "m2", "m3", "m4"]);
    assert_eq!(out[0]["content"][0]["text"], "see @Session [A]");
    assert_eq!(out[0]["content"][1], messages[0]["content"][1]);
    assert_eq!(out[1]["source"]["kind"], "session-reference");
    assert_eq!(out[1]["source"]["references"][0]["label"], "Session [A]");
    assert_eq!(out[2], messages[1]);
    assert_eq!(out[3], messages[2]);
    assert_eq!(out[4]["content"][0]["text"], "@b and @a");
    let refs = out[5]["source"]["references"].as_array().unwrap();
    assert_eq!(refs.iter().map(|r| r["sessionId"].as_str().unwrap()).collect::<Vec<_>>(), ["b", "a"]);
    // A malformed mention fails the whole call.
    let bad = vec![json!({"id": "x", "source": {"kind": "user"},
                          "content": [{"type": "text", "text": "@[x](dsh-session:)"}]})];
    let err = block_on(resolver.prepare_messages(&Target::new("t", None), &bad, &PrepareOptions::default(), None))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidReference);
    // A self reference inside a message fails too.
    let selfref = vec![json!({"id": "x", "source": {"kind": "user"},
                              "content": [{"type": "text", "text": encode_uri("t")}]})];
    let err = block_on(resolver.prepare_messages(&Target::new("t", None), &selfref, &PrepareOptions::default(), None))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::SelfReference);
}

#[test]
fn the_callers_content_is_copied_not_mutated() {
    let query = MemoryQuery::new();
    query.set_surface("a", surface("a", &["alpha"]));
    let resolver = Resolver::new(Arc::new(query), Config::default());
    let content = json!([{"type": "text", "text": "go", "extra": {"k": [1, 2]}}]);
    let before = content.clone();
    let prepared =
        block_on(resolver.prepare(&Target::new("t", None), &content, &refs(&["a"]), &PrepareOptions::default(), None))
            .unwrap();
    assert_eq!(content, before);
    assert_eq!(prepared.content, content);
    let json = prepared.into_json();
    assert_eq!(json.as_object().unwrap().keys().collect::<Vec<_>>(), ["content", "additionalContext"]);
}

#[test]
fn candidate_listing_fails_with_the_host_reason_and_honours_cancel() {
    struct NoList;
    impl SessionQuery for NoList {
        fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
            Box::pin(async { Err(HostError::new("index unavailable")) })
        }
        fn read_title<'a>(&'a self, _: &'a str) -> QueryFuture<'a, Option<String>> {
            Box::pin(async { Ok(None) })
        }
        fn read_surface<'a>(&'a self, _: &'a str) -> QueryFuture<'a, SurfaceData> {
            Box::pin(async { Err(HostError::new("no")) })
        }
    }
    let resolver = Resolver::new(Arc::new(NoList), Config::default());
    let err =
        block_on(resolver.candidates(&Target::new("t", None), "", &CandidateOptions::default(), None)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ReadFailed);
    assert!(err.message().contains("index unavailable"));
    assert_eq!(err.host_error().map(|h| h.message()), Some("index unavailable"));
    let err = block_on(resolver.candidates(
        &Target::new("t", None),
        "",
        &CandidateOptions::default().with_limit(Some(0)).without_mentions(),
        None,
    ))
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidReference);
}

/// Many sources' worth of messages, 500 bytes each, a checkpoint first.
fn synthetic(n: usize) -> Vec<u8> {
    let text = "x".repeat(500);
    let mut s = String::from(r#"{"session":{"id":"big","createdAt":1},"capturedThroughSeq":"#);
    s.push_str(&format!("{},\"events\":[", n - 1));
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        let ev = if i == 0 {
            json!({"seq": i, "type": "user/message", "data": {"role": "user", "content": [{"type": "text", "text": text}],
                   "source": {"kind": "plugin", "plugin": "compact"}}})
        } else if i % 2 == 1 {
            json!({"seq": i, "type": "user/message", "data": {"role": "user", "content": [{"type": "text", "text": text}],
                   "source": {"kind": "user"}}})
        } else {
            json!({"seq": i, "type": "assistant/message",
                   "data": {"message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}})
        };
        s.push_str(&ev.to_string());
    }
    s.push_str("]}");
    s.into_bytes()
}

/// A prepare of one `n`-message session: the steps it took on this thread
/// (`work::steps`; a snapshot under 4 MiB is projected where the call runs).
fn steps_of_prepare(n: usize) -> u64 {
    let query = MemoryQuery::new();
    query.set_surface("big", SurfaceData::from(synthetic(n)));
    let resolver = Resolver::new(Arc::new(query), Config::default());
    let before = work::steps();
    let p = block_on(resolver.prepare(
        &Target::new("t", None),
        &content(),
        &refs(&["big"]),
        &PrepareOptions::default(),
        None,
    ))
    .unwrap();
    let steps = work::steps() - before;
    let r = &p.additional_context.unwrap().into_json()["source"]["references"][0];
    assert_eq!(r["originalMessages"], n);
    assert!(r["truncated"].as_bool().unwrap());
    steps
}

/// A guard against quadratic retention: 10× the messages takes about 10×
/// the steps (items looked at, sizes measured, texts cut), far from the
/// ~100× of a loop that measures everything again per dropped message.
/// Counted, not timed, so a loaded machine cannot fail it.
#[test]
fn retention_scales_linearly() {
    let (small, large) = (steps_of_prepare(600), steps_of_prepare(6_000));
    assert!(small >= 600 && large >= 6_000, "the steps were counted on another thread: {small}, {large}");
    assert!(large <= 11 * small, "600 messages: {small} steps, 6,000: {large} (×{:.1})", large as f64 / small as f64);
}

#[test]
fn a_panicking_host_is_a_read_failure_not_a_crash() {
    struct Panics;
    impl SessionQuery for Panics {
        fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
            Box::pin(async { panic!("host bug in list") })
        }
        fn read_title<'a>(&'a self, _: &'a str) -> QueryFuture<'a, Option<String>> {
            Box::pin(async { panic!("host bug in title") })
        }
        fn read_surface<'a>(&'a self, _: &'a str) -> QueryFuture<'a, SurfaceData> {
            Box::pin(async { panic!("host bug in read") })
        }
    }
    let resolver = Resolver::new(Arc::new(Panics), Config::default());
    let target = Target::new("t", None);
    let err =
        block_on(resolver.prepare(&target, &content(), &refs(&["a"]), &PrepareOptions::default(), None)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ReadFailed);
    assert!(err.message().contains("panicked"), "{}", err.message());
    let err = block_on(resolver.candidates(&target, "", &CandidateOptions::default(), None)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ReadFailed);
}

/// Every resolver future can be spawned on a multi-threaded runtime (the
/// Node and Python fronts do exactly that).
#[test]
fn resolver_futures_are_send_and_spawnable() {
    fn spawnable<F: std::future::Future + Send + 'static>(f: F) -> tokio::task::JoinHandle<F::Output>
    where
        F::Output: Send,
    {
        dsh_session_reference::runtime().spawn(f)
    }
    let query = MemoryQuery::new();
    query.add_session(SessionHeader::new("a", 1u64, None));
    query.set_surface("a", surface("a", &["alpha"]));
    let resolver = Resolver::new(Arc::new(query), Config::default());
    let target = Target::new("t", None);
    let (r, t) = (resolver.clone(), target.clone());
    let prepare =
        spawnable(async move { r.prepare(&t, &content(), &refs(&["a"]), &PrepareOptions::default(), None).await });
    let (r, t) = (resolver.clone(), target.clone());
    let messages = spawnable(async move {
        r.prepare_messages(&t, &[json!({"source": {"kind": "user"}})], &PrepareOptions::default(), None).await
    });
    let (r, t) = (resolver.clone(), target.clone());
    let list = spawnable(async move {
        r.candidates(&t, "A", &CandidateOptions::default().with_limit(Some(5)).without_mentions(), None).await
    });
    let (r, t) = (resolver.clone(), target.clone());
    let candidates = spawnable(async move { r.candidates(&t, "", &CandidateOptions::default(), None).await });
    block_on(async {
        assert!(prepare.await.unwrap().unwrap().additional_context.is_some());
        assert_eq!(messages.await.unwrap().unwrap().len(), 1);
        assert_eq!(list.await.unwrap().unwrap().len(), 1);
        assert_eq!(candidates.await.unwrap().unwrap()[0].mention.as_deref(), Some("@[a](dsh-session:ImEi)"));
    });
}

#[test]
fn a_child_token_follows_its_parent_but_not_the_other_way() {
    let parent = CancelToken::new();
    let child = parent.child();
    let other = parent.child();
    other.cancel();
    assert!(other.is_cancelled() && !parent.is_cancelled() && !child.is_cancelled());
    parent.cancel();
    assert!(child.is_cancelled());
}
