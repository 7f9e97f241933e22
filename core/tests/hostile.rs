//! Hostile hosts (the guarantees of SECURITY.md): session queries that fail, panic, return
//! non-JSON, return 100 MB or 10,000 levels of nesting, answer for another
//! session than asked, never return, or list 100,000 sessions. Each gives
//! the right contract code (docs/contract.md §8.2) or a correct result, within bounds, and cancellation
//! keeps working.
//!
//! (Async hosts whose *future* panics are in `behaviour.rs`; slow and hung
//! reads of a single prepare are there too.)

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use dsh_session_reference::prompt::{PROMPT_FOOTER, PROMPT_HEADER};
use dsh_session_reference::{
    block_on, stringify_tag_safe, Blocking, BlockingSessionQuery, CancelToken, CandidateOptions, Config, ErrorCode,
    HostError, MemoryQuery, PrepareOptions, QueryFuture, Resolver, SessionHeader, SessionQuery, SurfaceData, Target,
};
use serde_json::{json, Value};

fn target() -> Target {
    Target::new("target", Some("/work".into()))
}

fn content() -> Value {
    json!([{"type": "text", "text": "go"}])
}

fn refs(ids: &[&str]) -> Vec<Value> {
    ids.iter().map(|id| json!({"sessionId": id})).collect()
}

fn user(seq: usize, text: &str) -> Value {
    json!({"seq": seq, "type": "user/message",
           "data": {"role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}})
}

fn snapshot(id: &str, texts: &[&str]) -> Value {
    let events: Vec<Value> = texts.iter().enumerate().map(|(i, t)| user(i, t)).collect();
    json!({"session": {"id": id, "createdAt": 1}, "capturedThroughSeq": texts.len() as i64 - 1, "events": events})
}

/// The data between the prompt's tags, parsed.
fn sources_of(ctx: &Value) -> Vec<Value> {
    let prompt = ctx["content"][0]["text"].as_str().unwrap();
    assert!(prompt.starts_with(PROMPT_HEADER) && prompt.ends_with(PROMPT_FOOTER));
    let data = &prompt[PROMPT_HEADER.len()..prompt.len() - PROMPT_FOOTER.len()];
    serde_json::from_str::<Vec<Value>>(data).unwrap()
}

/// Lets hung host calls go once the test is done with them, so no thread
/// of the blocking pool stays parked forever.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
    waiting: AtomicUsize,
}

impl Gate {
    fn wait(&self) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
    }
    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

/// A blocking host whose every operation does what its mode says.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Fail,
    Panic,
    PanicWithAnyPayload,
    Hang,
}

struct BlockingHost {
    mode: Mode,
    gate: Arc<Gate>,
}

impl BlockingHost {
    fn act<T>(&self, what: &str) -> Result<T, HostError> {
        match self.mode {
            Mode::Fail => Err(HostError::new(format!("{what}: disk on fire"))),
            Mode::Panic => panic!("host bug in {what}"),
            Mode::PanicWithAnyPayload => std::panic::panic_any(42u8),
            Mode::Hang => {
                self.gate.wait();
                Err(HostError::new("released"))
            }
        }
    }
}

impl BlockingSessionQuery for BlockingHost {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        self.act("list")
    }
    fn read_title(&self, _: &str) -> Result<Option<String>, HostError> {
        self.act("title")
    }
    fn read_surface(&self, _: &str) -> Result<SurfaceData, HostError> {
        self.act("surface")
    }
}

fn blocking(mode: Mode) -> (Resolver, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let host = BlockingHost { mode, gate: gate.clone() };
    (Resolver::new(Arc::new(Blocking::new(host)), Config::default()), gate)
}

#[test]
fn failing_blocking_reads_are_read_failures_that_keep_the_hosts_reason() {
    let (resolver, _) = blocking(Mode::Fail);
    let err = block_on(resolver.prepare(&target(), &content(), &refs(&["a", "b"]), &PrepareOptions::default(), None))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ReadFailed);
    assert!(err.message().contains("surface: disk on fire"), "{}", err.message());
    assert_eq!(err.host_error().map(HostError::message), Some("surface: disk on fire"));
    let err = block_on(resolver.candidates(&target(), "x", &CandidateOptions::default().without_mentions(), None))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ReadFailed);
    assert!(err.message().contains("list: disk on fire"), "{}", err.message());
}

#[test]
fn panicking_blocking_hosts_are_read_failures_not_crashes() {
    for mode in [Mode::Panic, Mode::PanicWithAnyPayload] {
        let (resolver, _) = blocking(mode);
        let err = block_on(resolver.prepare(&target(), &content(), &refs(&["a"]), &PrepareOptions::default(), None))
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ReadFailed, "{err}");
        assert!(err.message().contains("panicked"), "{}", err.message());
        let err = block_on(resolver.candidates(&target(), "", &CandidateOptions::default(), None)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ReadFailed, "{err}");
        let err = block_on(resolver.prepare_messages(&target(), &[json!({"id": "m", "role": "user", "source": {"kind": "user"},
                     "content": [{"type": "text", "text": format!("see {}", dsh_session_reference::encode_uri("a"))}]})], &PrepareOptions::default(), None));
        assert_eq!(err.unwrap_err().code(), ErrorCode::ReadFailed);
    }
}

/// Only titles panic: the listing still succeeds and labels fall back to ids.
#[test]
fn a_panicking_title_read_falls_back_to_the_id() {
    struct TitlesPanic;
    impl BlockingSessionQuery for TitlesPanic {
        fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
            Ok(vec![SessionHeader::new("a", 1u64, None), SessionHeader::new("b", 2u64, Some("/work".into()))])
        }
        fn read_title(&self, id: &str) -> Result<Option<String>, HostError> {
            if id == "a" {
                panic!("title bug")
            }
            Ok(Some("B title".into()))
        }
        fn read_surface(&self, _: &str) -> Result<SurfaceData, HostError> {
            Err("unused".into())
        }
    }
    let resolver = Resolver::new(Arc::new(Blocking::new(TitlesPanic)), Config::default());
    for query in ["", "a"] {
        let got = block_on(resolver.candidates(&target(), query, &CandidateOptions::default(), None)).unwrap();
        let labels: Vec<(&str, &str)> = got.iter().map(|c| (c.session_id.as_str(), c.label.as_str())).collect();
        if query.is_empty() {
            assert_eq!(labels, [("b", "B title"), ("a", "a")]);
        } else {
            assert_eq!(labels, [("a", "a")]);
        }
    }
}

/// An async host whose method panics *before* returning its future (not
/// inside it): the call itself must be guarded too.
#[test]
fn an_async_host_that_panics_when_called_is_a_read_failure() {
    struct PanicsOnCall;
    impl SessionQuery for PanicsOnCall {
        fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
            panic!("list called")
        }
        fn read_title<'a>(&'a self, _: &'a str) -> QueryFuture<'a, Option<String>> {
            panic!("title called")
        }
        fn read_surface<'a>(&'a self, _: &'a str) -> QueryFuture<'a, SurfaceData> {
            panic!("surface called")
        }
    }
    let resolver = Resolver::new(Arc::new(PanicsOnCall), Config::default());
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        (
            block_on(resolver.prepare(&target(), &content(), &refs(&["a"]), &PrepareOptions::default(), None))
                .map(|_| ()),
            block_on(resolver.candidates(&target(), "", &CandidateOptions::default(), None)).map(|_| ()),
        )
    }));
    let (prepare, candidates) = outcome.expect("a host panic unwound through the resolver into its caller");
    assert_eq!(prepare.unwrap_err().code(), ErrorCode::ReadFailed);
    assert_eq!(candidates.unwrap_err().code(), ErrorCode::ReadFailed);
}

#[test]
fn non_json_and_wrongly_shaped_snapshots_are_read_failures() {
    let query = MemoryQuery::new();
    let bad: Vec<(&str, SurfaceData)> = vec![
        ("empty", SurfaceData::from(Vec::new())),
        ("invalid-utf8", SurfaceData::from(b"{\"session\":{\"id\":\"\xff\"}}".to_vec())),
        ("truncated", SurfaceData::from(serde_json::to_string(&snapshot("t", &["abc"])).unwrap()[..30].to_string())),
        ("nul", SurfaceData::from(vec![0u8; 16])),
        ("number", SurfaceData::from(json!(42))),
        ("array", SurfaceData::from(json!([snapshot("a", &["x"])]))),
        ("id-not-string", SurfaceData::from(json!({"session": {"id": 7}, "capturedThroughSeq": 1, "events": []}))),
        ("seq-fraction", SurfaceData::from(json!({"session": {"id": "s"}, "capturedThroughSeq": 1.5, "events": []}))),
        ("seq-string", SurfaceData::from(json!({"session": {"id": "s"}, "capturedThroughSeq": "1", "events": []}))),
        ("no-type", SurfaceData::from(json!({"session": {"id": "s"}, "capturedThroughSeq": 1, "events": [{}]}))),
        (
            "raw-control-char",
            SurfaceData::from(b"{\"session\":{\"id\":\"a\x01\"},\"capturedThroughSeq\":1,\"events\":[]}".to_vec()),
        ),
    ];
    let ids: Vec<&str> = bad.iter().map(|(id, _)| *id).collect();
    for (id, data) in bad {
        query.set_surface(id, data);
    }
    query.set_surface("good", snapshot("good", &["fine"]));
    let resolver = Resolver::new(Arc::new(query), Config::default());
    for id in ids {
        // Paired with a good source: one bad snapshot fails the whole call.
        let err =
            block_on(resolver.prepare(&target(), &content(), &refs(&["good", id]), &PrepareOptions::default(), None))
                .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ReadFailed, "{id}: {err}");
    }
    assert!(
        block_on(resolver.prepare(&target(), &content(), &refs(&["good"]), &PrepareOptions::default(), None)).is_ok()
    );
}

/// A lone surrogate escape in a text that retention keeps cannot become a
/// Rust string: it is a read failure, never a panic; in a text that
/// retention drops, it is never decoded.
#[test]
fn lone_surrogates_in_texts_are_read_failures_only_when_kept() {
    let doc = |first: &str| {
        format!(
            r#"{{"session":{{"id":"s"}},"capturedThroughSeq":1,"events":[
            {{"type":"user/message","data":{{"content":[{{"type":"text","text":"{first}"}}],"source":{{"kind":"user"}}}}}},
            {{"type":"user/message","data":{{"content":[{{"type":"text","text":"last"}}],"source":{{"kind":"user"}}}}}}]}}"#
        )
    };
    let query = MemoryQuery::new();
    query.set_surface("kept", SurfaceData::from(doc(r"a\ud800b")));
    query.set_surface("dropped", SurfaceData::from(doc(&format!(r"\ud800{}", "x".repeat(500)))));
    let resolver = Resolver::new(Arc::new(query), Config::new(None, None, Some(200)).unwrap());
    let err = block_on(resolver.prepare(&target(), &content(), &refs(&["kept"]), &PrepareOptions::default(), None))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ReadFailed, "{err}");
    let ok = block_on(resolver.prepare(&target(), &content(), &refs(&["dropped"]), &PrepareOptions::default(), None))
        .unwrap();
    let src = &sources_of(&ok.additional_context.unwrap().into_json())[0];
    assert_eq!(src["conversation"], json!([{"role": "user", "text": "last"}]));
}

/// 100 MB of snapshot JSON (many messages and one giant one) yields a
/// context within budget, with exact statistics.
#[test]
fn a_100_mb_snapshot_gives_a_context_within_budget() {
    const MESSAGES: usize = 50_000;
    const GIANT: usize = 50 << 20;
    // ~1 KB per message, with characters that need escaping.
    let chunk_json = r#"0123456789abcdef<>\""#.repeat(53);
    let chunk_len = "0123456789abcdef<>\"".len() * 53;
    let mut doc = String::with_capacity(110 << 20);
    doc.push_str(r#"{"session":{"id":"big","cwd":"/big","createdAt":1},"capturedThroughSeq":50000,"events":["#);
    for i in 0..MESSAGES {
        doc.push_str(&format!(
            r#"{{"seq":{i},"type":"user/message","data":{{"content":[{{"type":"text","text":"{i} {chunk_json}"}}],"source":{{"kind":"user"}}}}}},"#
        ));
    }
    doc.push_str(r#"{"seq":50000,"type":"assistant/message","data":{"message":{"content":[{"type":"text","text":""#);
    doc.extend(std::iter::repeat_n('g', GIANT));
    doc.push_str(r#""}]}}}]}"#);
    assert!(doc.len() > 100 << 20, "{} bytes", doc.len());
    let query = MemoryQuery::new();
    query.set_surface("big", SurfaceData::from(doc));
    let budget = 65_536u64;
    let resolver = Resolver::new(Arc::new(query), Config::default());
    let started = Instant::now();
    let p =
        block_on(resolver.prepare(&target(), &content(), &refs(&["big"]), &PrepareOptions::default(), None)).unwrap();
    let elapsed = started.elapsed();
    let ctx = p.additional_context.unwrap().into_json();
    let src = &sources_of(&ctx)[0];
    assert!(stringify_tag_safe(src).len() as u64 <= budget);
    let conv = src["conversation"].as_array().unwrap();
    assert_eq!(conv.len(), 1, "everything but the newest message is dropped");
    let text = conv[0]["text"].as_str().unwrap();
    let marker = text.rfind("\n[\u{2026} omitted ").expect("a truncation marker");
    let n: u64 = text[marker..]
        .trim_start_matches("\n[\u{2026} omitted ")
        .trim_end_matches(" UTF-8 bytes \u{2026}]")
        .parse()
        .unwrap();
    assert!(text[..marker].bytes().all(|b| b == b'g'));
    assert_eq!(n, (GIANT - marker) as u64, "the omission count is exact");
    let meta = &ctx["source"]["references"][0];
    assert_eq!(meta["originalMessages"], MESSAGES + 1);
    assert_eq!(meta["omittedMessages"], MESSAGES);
    assert_eq!(meta["retainedMessages"], 1);
    let dropped: u64 = (0..MESSAGES).map(|i| (format!("{i} ").len() + chunk_len) as u64).sum();
    assert_eq!(meta["omittedBytes"].as_u64().unwrap(), dropped + n);
    // Generous: debug builds on a loaded 2-core machine; this only catches
    // quadratic behaviour, which would take hours.
    assert!(elapsed < Duration::from_secs(120), "{elapsed:?}");
}

/// Builds `[[[…leaf…]]]` with `depth` levels without recursion.
fn nested(depth: usize, leaf: Value) -> Value {
    let mut v = leaf;
    for _ in 0..depth {
        v = Value::Array(vec![v]);
    }
    v
}

fn nested_text(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// 10,000 levels of nesting anywhere in a snapshot, as JSON text or as a
/// value: a read failure where the shape is wrong, ignored where the data is
/// skipped, and never a stack overflow (the calls run on a thread with a
/// 2 MiB stack, the default for spawned threads).
#[test]
fn ten_thousand_levels_of_nesting_never_overflow_the_stack() {
    const DEPTH: usize = 10_000;
    let deep = nested_text(DEPTH);
    let query = MemoryQuery::new();
    let text_cases = [
        ("t-whole", deep.clone()),
        ("t-session", format!(r#"{{"session":{deep},"capturedThroughSeq":1,"events":[]}}"#)),
        ("t-cwd", format!(r#"{{"session":{{"id":"s","cwd":{deep}}},"capturedThroughSeq":1,"events":[]}}"#)),
        ("t-events", format!(r#"{{"session":{{"id":"s"}},"capturedThroughSeq":1,"events":{deep}}}"#)),
        (
            "t-text",
            format!(
                r#"{{"session":{{"id":"s"}},"capturedThroughSeq":1,"events":[{{"type":"user/message","data":{{"content":[{{"type":"text","text":{deep}}}],"source":{{"kind":"user"}}}}}}]}}"#
            ),
        ),
        (
            "t-source",
            format!(
                r#"{{"session":{{"id":"s"}},"capturedThroughSeq":1,"events":[{{"type":"user/message","data":{{"content":[],"source":{deep}}}}}]}}"#
            ),
        ),
    ];
    for (id, doc) in &text_cases {
        query.set_surface(*id, SurfaceData::from(doc.clone()));
    }
    // `json!` would serialize an interpolated value recursively, so the deep
    // value is put in place afterwards, at the JSON pointer given.
    let with_deep = |mut doc: Value, at: &str| {
        *doc.pointer_mut(at).unwrap() = nested(DEPTH, json!("leaf"));
        doc
    };
    let user_then_kept = |content: Value, source: Value| {
        json!({"session": {"id": "s"}, "capturedThroughSeq": 1, "events": [
            {"type": "user/message", "data": {"content": content, "source": source}},
            {"type": "user/message", "data": {"content": [{"type": "text", "text": "kept"}], "source": {"kind": "user"}}}]})
    };
    let value_cases = [
        ("v-whole", nested(DEPTH, Value::Null)),
        ("v-session", with_deep(json!({"session": null, "capturedThroughSeq": 1, "events": []}), "/session")),
        ("v-events", with_deep(json!({"session": {"id": "s"}, "capturedThroughSeq": 1, "events": null}), "/events")),
        (
            "v-text",
            with_deep(
                user_then_kept(json!([{"type": "text", "text": null}]), json!({"kind": "user"})),
                "/events/0/data/content/0/text",
            ),
        ),
        ("v-source", with_deep(user_then_kept(json!([]), json!(null)), "/events/0/data/source")),
        (
            "v-skipped-block",
            with_deep(
                user_then_kept(json!([{"type": "tool-call", "arguments": null}]), json!({"kind": "user"})),
                "/events/0/data/content/0/arguments",
            ),
        ),
        (
            "v-skipped-event",
            with_deep(
                json!({"session": {"id": "s"}, "capturedThroughSeq": 1, "events": [
                    {"type": "tool/result", "data": null},
                    {"type": "user/message", "data": {"content": [{"type": "text", "text": "kept"}],
                     "source": {"kind": "user"}}}]}),
                "/events/0/data",
            ),
        ),
    ];
    let ids: Vec<&str> = text_cases.iter().map(|c| c.0).chain(value_cases.iter().map(|c| c.0)).collect();
    for (id, v) in value_cases {
        query.set_surface(id, v); // moved: cloning or dropping them recurses
    }
    let resolver = Resolver::new(Arc::new(query), Config::default());
    let results = thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let out: Vec<(String, Result<Value, ErrorCode>)> = ids
                .iter()
                .map(|id| {
                    let r = block_on(resolver.prepare(
                        &target(),
                        &content(),
                        &refs(&[id]),
                        &PrepareOptions::default(),
                        None,
                    ));
                    (id.to_string(), r.map(|p| p.additional_context.unwrap().into_json()).map_err(|e| e.code()))
                })
                .collect();
            // The deep values are dropped recursively by serde_json itself;
            // keep that out of this small stack (it is the test's data, not
            // the library's work).
            std::mem::forget(resolver);
            out
        })
        .unwrap()
        .join()
        .expect("no stack overflow or panic");
    // A `text` that is not a string drops its block (docs/contract.md §3); every other
    // misplaced nesting is a malformed snapshot.
    let mut wrong = Vec::new();
    for (id, r) in results {
        let want_kept = match id.as_str() {
            "t-text" => Some(json!([])),
            "v-text" | "v-skipped-block" | "v-skipped-event" => Some(json!([{"role": "user", "text": "kept"}])),
            _ => None,
        };
        let ok = match (&want_kept, &r) {
            (Some(conv), Ok(ctx)) => &sources_of(ctx)[0]["conversation"] == conv,
            (None, Err(code)) => *code == ErrorCode::ReadFailed,
            _ => false,
        };
        if !ok {
            wrong.push(format!("{id}: {:?}", r.map(|ctx| sources_of(&ctx)[0]["conversation"].clone())));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The host answers with another session's snapshot: the prompt shows the
/// snapshot's own id (as the reference does), the metadata the asked id.
#[test]
fn a_snapshot_for_another_session_shows_its_own_id_in_the_prompt() {
    let query = MemoryQuery::new();
    query.set_surface("asked", snapshot("answered", &["hello"]));
    let resolver = Resolver::new(Arc::new(query), Config::default());
    let p = block_on(resolver.prepare(
        &target(),
        &content(),
        &[json!({"sessionId": "asked", "label": "L"})],
        &PrepareOptions::default(),
        None,
    ))
    .unwrap();
    let ctx = p.additional_context.unwrap().into_json();
    let src = &sources_of(&ctx)[0];
    assert_eq!(src["sessionId"], "answered");
    assert_eq!(src["label"], "L");
    assert_eq!(ctx["source"]["references"][0]["sessionId"], "asked");
}

/// Host calls that never return: cancellation ends list, title and surface
/// waits promptly, and the blocked host threads are released afterwards.
#[test]
fn hung_blocking_hosts_are_cancelled_in_every_operation() {
    let (resolver, gate) = blocking(Mode::Hang);
    type Call = Box<dyn Fn(&CancelToken) -> ErrorCode + Send>;
    let calls: Vec<(&str, Call)> = vec![
        (
            "prepare",
            Box::new({
                let r = resolver.clone();
                move |c| {
                    block_on(r.prepare(&target(), &content(), &refs(&["a", "b"]), &PrepareOptions::default(), Some(c)))
                        .unwrap_err()
                        .code()
                }
            }),
        ),
        (
            "candidates",
            Box::new({
                let r = resolver.clone();
                move |c| {
                    block_on(r.candidates(&target(), "", &CandidateOptions::default(), Some(c))).unwrap_err().code()
                }
            }),
        ),
        (
            "list_candidates",
            Box::new({
                let r = resolver.clone();
                move |c| {
                    block_on(r.candidates(
                        &target(),
                        "q",
                        &CandidateOptions::default().with_limit(Some(3)).without_mentions(),
                        Some(c),
                    ))
                    .unwrap_err()
                    .code()
                }
            }),
        ),
    ];
    for (name, call) in calls {
        let cancel = CancelToken::new();
        let (c, start) = (cancel.clone(), Instant::now());
        let handle = thread::spawn(move || (call(&c), start.elapsed()));
        while gate.waiting.load(Ordering::SeqCst) == 0 {
            thread::sleep(Duration::from_millis(5));
        }
        gate.waiting.store(0, Ordering::SeqCst);
        let cancelled_at = Instant::now();
        cancel.cancel();
        let (code, _) = handle.join().unwrap();
        assert_eq!(code, ErrorCode::Cancelled, "{name}");
        assert!(cancelled_at.elapsed() < Duration::from_secs(10), "{name}: {:?}", cancelled_at.elapsed());
    }

    // Titles hang but listing answers: only a cancel ends the search.
    struct TitlesHang(Arc<Gate>);
    impl BlockingSessionQuery for TitlesHang {
        fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
            Ok((0..100).map(|i| SessionHeader::new(format!("s{i}"), i as u64, None)).collect())
        }
        fn read_title(&self, _: &str) -> Result<Option<String>, HostError> {
            self.0.wait();
            Ok(None)
        }
        fn read_surface(&self, _: &str) -> Result<SurfaceData, HostError> {
            Err("unused".into())
        }
    }
    let titles = Resolver::new(Arc::new(Blocking::new(TitlesHang(gate.clone()))), Config::default());
    let cancel = CancelToken::new();
    let c = cancel.clone();
    let handle = thread::spawn(move || {
        block_on(titles.candidates(&target(), "s1", &CandidateOptions::default().without_mentions(), Some(&c)))
    });
    while gate.waiting.load(Ordering::SeqCst) == 0 {
        thread::sleep(Duration::from_millis(5));
    }
    cancel.cancel();
    assert_eq!(handle.join().unwrap().unwrap_err().code(), ErrorCode::Cancelled);
    gate.release();
}

/// An async host that lists 100,000 sessions (with titles that exist, are
/// missing or fail): candidates are exactly the ranked, filtered, cut list.
#[test]
fn listing_100_000_sessions_gives_correct_candidates() {
    const N: usize = 100_000;
    struct Many {
        titles_read: AtomicUsize,
        saw_target: AtomicBool,
    }
    fn cwd_of(i: usize) -> Option<String> {
        match i % 5 {
            0 => Some("/work".into()),
            1 | 2 => None,
            _ => Some(format!("/p{}", i % 11)),
        }
    }
    fn title_of(id: &str) -> Result<Option<String>, HostError> {
        let i: usize = id[1..].parse().unwrap_or(0);
        match i % 7 {
            0 => Err("title store down".into()),
            1 | 2 => Ok(None),
            _ => Ok(Some(format!("Topic {} ÄÖ", i % 1000))),
        }
    }
    impl SessionQuery for Many {
        fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
            let mut list: Vec<SessionHeader> =
                (0..N).map(|i| SessionHeader::new(format!("s{i}"), i as u64, cwd_of(i))).collect();
            list.insert(N / 2, SessionHeader::new("target", 0u64, Some("/work".into())));
            Box::pin(async move { Ok(list) })
        }
        fn read_title<'a>(&'a self, id: &'a str) -> QueryFuture<'a, Option<String>> {
            self.titles_read.fetch_add(1, Ordering::Relaxed);
            if id == "target" {
                self.saw_target.store(true, Ordering::Relaxed);
            }
            Box::pin(async move { title_of(id) })
        }
        fn read_surface<'a>(&'a self, _: &'a str) -> QueryFuture<'a, SurfaceData> {
            Box::pin(async { Err("unused".into()) })
        }
    }
    let host = Arc::new(Many { titles_read: AtomicUsize::new(0), saw_target: AtomicBool::new(false) });
    let resolver = Resolver::new(host.clone(), Config::default());
    let rank = |i: usize| match cwd_of(i).as_deref() {
        Some("/work") => 0,
        None => 1,
        _ => 2,
    };
    let label = |i: usize| title_of(&format!("s{i}")).ok().flatten().unwrap_or_else(|| format!("s{i}"));

    // Empty query: the first 50 after ranking; only their titles are read.
    let got = block_on(resolver.candidates(&target(), "", &CandidateOptions::default(), None)).unwrap();
    let mut want: Vec<usize> = (0..N).collect();
    want.sort_by_key(|&i| rank(i));
    want.truncate(50);
    let got_ids: Vec<String> = got.iter().map(|c| c.session_id.clone()).collect();
    let want_ids: Vec<String> = want.iter().map(|i| format!("s{i}")).collect();
    assert_eq!(got_ids, want_ids);
    for (c, &i) in got.iter().zip(&want) {
        assert_eq!(c.label, label(i));
        assert_eq!(c.cwd, cwd_of(i));
        assert_eq!(c.created_at.as_u64(), Some(i as u64));
        assert_eq!(
            c.mention.as_deref(),
            Some(dsh_session_reference::format_mention(&c.session_id, Some(&c.label)).as_str())
        );
    }
    assert_eq!(host.titles_read.load(Ordering::Relaxed), 50);

    // A query: every title is read once; matches by id, cwd or title,
    // case-insensitively (Unicode lower-casing), ranked, cut at the limit.
    host.titles_read.store(0, Ordering::Relaxed);
    let query = "topic 42 äö";
    let got = block_on(resolver.candidates(
        &target(),
        query,
        &CandidateOptions::default().with_limit(Some(1_000)).without_mentions(),
        None,
    ))
    .unwrap();
    let mut want: Vec<usize> = (0..N).filter(|&i| label(i).to_lowercase().contains(query)).collect();
    want.sort_by_key(|&i| rank(i));
    want.truncate(1_000);
    assert!(!want.is_empty());
    let got: Vec<(String, String)> = got.into_iter().map(|c| (c.session_id, c.label)).collect();
    let want: Vec<(String, String)> = want.iter().map(|&i| (format!("s{i}"), label(i))).collect();
    assert_eq!(got, want);
    assert_eq!(host.titles_read.load(Ordering::Relaxed), N, "every listed session but the target");
    assert!(!host.saw_target.load(Ordering::Relaxed), "the target is never a candidate");

    let got = block_on(resolver.candidates(
        &target(),
        "/P3",
        &CandidateOptions::default().with_limit(Some(u64::MAX >> 11)).without_mentions(),
        None,
    ))
    .unwrap();
    assert_eq!(got.len(), (0..N).filter(|&i| cwd_of(i).is_some_and(|c| c.contains("/p3"))).count());
}

/// Every file under `root`: its relative path, length, modification time
/// and bytes, plus every directory (walks without following links).
fn tree(root: &std::path::Path) -> Vec<(String, u64, Option<std::time::SystemTime>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if meta.is_dir() {
                stack.push(path.clone());
                out.push((rel, 0, None, Vec::new()));
            } else {
                out.push((rel, meta.len(), meta.modified().ok(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Listing, titles, surfaces, candidates and prepares over every fixture
/// root, damaged ones included, leave the root byte for byte and time for
/// time as it was: nothing is written, created, repaired or truncated.
#[test]
fn the_store_never_changes_its_root() {
    let fixtures = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/dsh-logs");
    let copy = tempfile::tempdir().unwrap();
    let mut roots = Vec::new();
    for (name, src) in [
        ("raw", fixtures.join("raw")),
        ("zstd", fixtures.join("zstd")),
        ("torn-raw", fixtures.join("damaged/torn-raw")),
        ("torn-zstd", fixtures.join("damaged/torn-zstd")),
        ("seq-gap", fixtures.join("damaged/seq-gap")),
        ("corrupt-zstd", fixtures.join("damaged/corrupt-zstd")),
        // Every format generation, older generations and lock files beside them.
        ("gen-raw", fixtures.join("../dsh-generations/raw")),
        ("gen-zstd", fixtures.join("../dsh-generations/zstd")),
        ("gen-upgraded", fixtures.join("../dsh-generations/upgraded-0.2")),
        ("gen-newer", fixtures.join("../dsh-generations/newer")),
    ] {
        let dst = copy.path().join(name);
        for (rel, _, _, bytes) in tree(&src) {
            let p = dst.join(&rel);
            if std::fs::symlink_metadata(src.join(&rel)).unwrap().is_dir() {
                std::fs::create_dir_all(&p).unwrap();
            } else {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, bytes).unwrap();
            }
        }
        roots.push(dst);
    }
    let before = tree(copy.path());
    for root in &roots {
        let store = dsh_session_reference::DshStore::open(root).unwrap();
        let ids: Vec<String> = store.list().unwrap().sessions.into_iter().map(|s| s.header.id).collect();
        assert!(!ids.is_empty(), "{}", root.display());
        for id in &ids {
            let _ = store.read_title(id);
            let _ = store.read_surface_json(id);
            let _ = store.inspect(id);
        }
        let resolver = Resolver::new(Arc::new(store), Config::new(None, None, Some(1_000)).unwrap());
        assert!(block_on(resolver.candidates(&target(), "", &CandidateOptions::default(), None)).is_ok());
        let _ = block_on(resolver.candidates(&target(), "a", &CandidateOptions::default(), None));
        for id in &ids {
            let _ = block_on(resolver.prepare(&target(), &content(), &refs(&[id]), &PrepareOptions::default(), None));
        }
    }
    assert!(before == tree(copy.path()), "the store changed its root");
}
