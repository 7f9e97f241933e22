//! Memory proportional to what is kept, not to the log.
//!
//! A counting allocator measures the peak of live heap bytes during one
//! call, over what was live before it; each case reads a generated log of
//! tens of MB and asserts that the peak stays under a small fraction of
//! it. Before the fixes each of these peaked at more than the whole log
//! (a title read of a Claude Code transcript held every text; a `prepare`
//! of a DSH log held every tool result; building a session's index entry
//! held its text joined, then again decompressed to train and recompress).
//! The cases run one after another (one test): the counter is the
//! process's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use dsh_session_reference::sources::claude_code::ClaudeCodeSource;
use dsh_session_reference::{
    block_on, Blocking, BlockingSessionQuery, Config, DiscoveryCachePart, DshStore, MemoryQuery, PrepareOptions,
    Resolver, SearchOptions, SessionHeader, SurfaceAnswer, SurfaceData, SurfaceRead, Target,
};
use serde_json::{json, Value};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting live bytes and their peak.
struct Counting;

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

// SAFETY: every call is passed on to `System` unchanged; the counters
// only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System.alloc`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System.alloc_zeroed`'s.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System.dealloc`'s.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract is `System.realloc`'s.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// `f`'s result and the peak of live heap bytes during it, over those
/// live when it began.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

const MB: usize = 1 << 20;

/// The generated logs (shared with the index's streamed-build test).
#[allow(dead_code)]
mod big_logs {
    include!("support/big_logs.rs");
}
use big_logs::{
    claude_rich_root, claude_root, codex_home_of, codex_rich_root, codex_root, dsh_messages_root, dsh_root, log_bytes,
    words, words_in,
};

/// Held by every test: the counter is the process's, so no test allocates
/// while another measures.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A title read of a 24 MB Claude Code transcript holds no text: the
/// chain's structure and the first prompt only.
fn claude_code_title_read() {
    let stem = "0000aaaa-0000-4000-8000-000000000001";
    let root = claude_root(stem, 1_200, 6_000, 14_000);
    let bytes = log_bytes(root.path());
    assert!(bytes > 20 * MB, "{bytes}");
    let source = ClaudeCodeSource::open(root.path()).unwrap().with_watching(false);
    let id = format!("claude-code:{stem}");
    BlockingSessionQuery::list_sessions(&source).unwrap();
    let (title, peak) = peak_of(|| BlockingSessionQuery::read_title(&source, &id).unwrap());
    assert_eq!(title.as_deref().map(|t| t.starts_with("question 0: ")), Some(true), "{title:?}");
    assert!(peak < bytes / 8, "a title read of {bytes} bytes peaked at {peak} bytes");
    // The conversation is still all there.
    let conversation = source.conversation(&id).unwrap();
    assert_eq!(conversation.items.len(), 2_400);
}

/// A title read of a 24 MB Codex rollout keeps the title's text only,
/// without replaying the history.
fn codex_title_read() {
    use dsh_session_reference::sources::codex::CodexSource;
    let id = "0199aaaa-0000-7000-8000-000000000001";
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions/2026/01/01");
    std::fs::create_dir_all(&dir).unwrap();
    let ts = "2026-01-01T00:00:00.000Z";
    let mut out = json!({"timestamp": ts, "type": "session_meta", "payload": {"id": id, "timestamp": ts, "cwd": "/w"}})
        .to_string()
        + "\n";
    for n in 0..1_200 {
        let (role, kind, text) = match n % 2 {
            0 => ("user", "input_text", format!("question {n}: {}", words(6_000, n))),
            _ => ("assistant", "output_text", format!("answer {n}: {}", words(14_000, n))),
        };
        let payload = json!({"type": "message", "role": role, "content": [{"type": kind, "text": text}]});
        out.push_str(&json!({"timestamp": ts, "type": "response_item", "payload": payload}).to_string());
        out.push('\n');
    }
    std::fs::write(dir.join(format!("rollout-2026-01-01T00-00-00-{id}.jsonl")), out).unwrap();
    let bytes = log_bytes(home.path());
    assert!(bytes > 10 * MB, "{bytes}");
    let source = CodexSource::open(home.path()).unwrap();
    let codex_id = format!("codex:{id}");
    BlockingSessionQuery::list_sessions(&source).unwrap();
    let (title, peak) = peak_of(|| BlockingSessionQuery::read_title(&source, &codex_id).unwrap());
    assert_eq!(title.as_deref().map(|t| t.starts_with("question 0: ")), Some(true), "{title:?}");
    assert!(peak < bytes / 8, "a title read of {bytes} bytes peaked at {peak} bytes");
    assert_eq!(source.conversation(&codex_id).unwrap().items.len(), 1_200);
}

/// `prepare` of a 24 MB DSH log of tool output (a prompt of 64 KiB) reads
/// it holding its messages, not its tool results.
fn dsh_prepare_of_tool_output() {
    let root = dsh_root(120, 300, 200_000);
    let bytes = log_bytes(root.path());
    assert!(bytes > 20 * MB, "{bytes}");
    let store = DshStore::open(root.path()).unwrap().with_watching(false);
    let whole = store.read_surface_json("big").unwrap();
    let visible = store.read_visible_surface_json("big").unwrap();
    assert!(whole.len() > 20 * MB && visible.len() < MB, "{} / {}", whole.len(), visible.len());
    drop((whole, visible));
    let (prompt, peak) = prompt_peak(store);
    assert!(prompt.contains("turn 119: "), "the newest prompt is kept");
    assert!(peak < bytes / 8, "prepare of a {bytes}-byte log peaked at {peak} bytes");
}

/// The prompt of referencing session "big" of `store` (default budget),
/// and the peak of the second such `prepare` (the first warms up).
fn prompt_peak(store: DshStore) -> (String, usize) {
    prompt_peak_of(Resolver::new(Arc::new(store), Config::default()), "big")
}

/// The prompt of referencing `id` (default budget) and the peak of
/// preparing it (the second time: the first lists the sources).
fn prompt_peak_of(resolver: Resolver, id: &str) -> (String, usize) {
    let target = Target::new("new-chat", None);
    let content = json!([{"type": "text", "text": "see"}]);
    let refs = [json!({"sessionId": id})];
    block_on(resolver.prepare(&target, &content, &refs, &PrepareOptions::default(), None)).unwrap();
    let (prepared, peak) =
        peak_of(|| block_on(resolver.prepare(&target, &content, &refs, &PrepareOptions::default(), None)).unwrap());
    (prepared.additional_context.unwrap().prompt, peak)
}

/// `prepare` of a 24 MB DSH log of conversation (long prompts, short tool
/// output; a prompt of 64 KiB) holds what the budget keeps, not every
/// message: the log is read keeping where the messages are, then the kept
/// ones are read again.
fn dsh_prepare_of_conversation() {
    let root = dsh_root(1_200, 20_000, 300);
    let bytes = log_bytes(root.path());
    assert!(bytes > 20 * MB, "{bytes}");
    let store = DshStore::open(root.path()).unwrap().with_watching(false);
    let visible = store.read_visible_surface_json("big").unwrap();
    assert!(visible.len() > 20 * MB, "{}", visible.len());
    drop(visible);
    let (prompt, peak) = prompt_peak(store);
    assert!(prompt.contains("turn 1199: "), "the newest prompt is kept");
    assert!(peak < bytes / 8, "prepare of a {bytes}-byte log of conversation peaked at {peak} bytes");
}

/// `prepare` of a 24 MB Claude Code transcript of conversation (a prompt
/// of 64 KiB) holds the chain and what the budget keeps, not every text:
/// a first pass keeps where the texts are, the kept ones are read again.
fn claude_code_prepare_of_conversation() {
    let stem = "0000aaaa-0000-4000-8000-000000000002";
    let root = claude_root(stem, 1_200, 6_000, 14_000);
    let bytes = log_bytes(root.path());
    assert!(bytes > 20 * MB, "{bytes}");
    let source = ClaudeCodeSource::open(root.path()).unwrap().with_watching(false);
    let resolver = Resolver::new(Arc::new(Blocking::new(source)), Config::default());
    let (prompt, peak) = prompt_peak_of(resolver, &format!("claude-code:{stem}"));
    assert!(prompt.contains("answer 2399: "), "the newest answer is kept");
    assert!(peak < bytes / 8, "prepare of a {bytes}-byte transcript peaked at {peak} bytes");
}

/// `prepare` of a 24 MB Codex rollout of conversation (a prompt of 64 KiB)
/// holds what the budget keeps, not the replayed history: the replay keeps
/// where the texts are, the kept ones are read again.
fn codex_prepare_of_conversation() {
    use dsh_session_reference::sources::codex::CodexSource;
    let id = "0199aaaa-0000-7000-8000-000000000004";
    let home = codex_root(id, 1_200, 6_000, 14_000);
    let bytes = log_bytes(home.path());
    assert!(bytes > 20 * MB, "{bytes}");
    let source = CodexSource::open(home.path()).unwrap();
    let resolver = Resolver::new(Arc::new(Blocking::new(source)), Config::default());
    let (prompt, peak) = prompt_peak_of(resolver, &format!("codex:{id}"));
    assert!(prompt.contains("answer 1199: "), "the newest answer is kept");
    assert!(peak < bytes / 8, "prepare of a {bytes}-byte rollout peaked at {peak} bytes");
}

/// A resolver over one session "big" of 24 MB of text (240 messages of
/// words), and the size of its surface.
fn big_session_resolver() -> (Resolver, usize) {
    let items: Vec<Value> = (0..240)
        .map(|n| {
            let role = if n % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "text": words_in(100_000, n, ' ')})
        })
        .collect();
    let surface = json!({"session": {"id": "big", "cwd": "/w"}, "capturedThroughSeq": 239, "conversation": items});
    let surface = serde_json::to_vec(&surface).unwrap();
    let bytes = surface.len();
    let query = MemoryQuery::new();
    query.add_session(SessionHeader::new("big", 1u64, Some("/w".into())));
    query.set_surface("big", SurfaceData::json(surface));
    (Resolver::new(Arc::new(query), Config::default()), bytes)
}

/// A search whose words a 24 MB session holds apart (no message holds the
/// phrase) verifies it on its text decompressed item by item: not the
/// whole text decompressed, and again lower-cased.
fn search_verification_of_a_big_session() {
    let (resolver, bytes) = big_session_resolver();
    let target = Target::new("new-chat", None);
    let search = || block_on(resolver.search(&target, "omega5 alpha7", &SearchOptions::default(), None)).unwrap();
    assert_eq!(search().len(), 1, "the first search indexes the session and finds it");
    let (results, peak) = peak_of(search);
    assert_eq!(results.len(), 1);
    assert!(peak < bytes / 8, "verifying a match in {bytes} bytes of text peaked at {peak} bytes");
}

/// Indexing one session of 24 MB of text (the first search) holds its
/// text once, as given, beside its compressed form: not joined again, nor
/// decompressed whole to train the dictionary or to recompress with it.
fn index_build_of_a_big_session() {
    let (resolver, bytes) = big_session_resolver();
    assert!(bytes > 20 * MB, "{bytes}");
    let target = Target::new("new-chat", None);
    // A query no filter lets through: what is measured is the build.
    let search = || block_on(resolver.search(&target, "qqxxzz", &SearchOptions::default(), None)).unwrap();
    let (results, peak) = peak_of(search);
    assert!(results.is_empty());
    assert_eq!(resolver.search_index_stats().sessions, 1, "the session is indexed");
    assert!(peak < bytes / 4, "indexing {bytes} bytes of text peaked at {peak} bytes");
}

/// The surface read for projection projects exactly as the whole one,
/// item for item and error for error, on every fixture log (damaged ones
/// included), and leaves out what projection drops.
#[test]
fn the_visible_surface_projects_as_the_whole_one() {
    let _one = one_at_a_time();
    use dsh_session_reference::projection::project_json;
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let (mut compared, mut smaller) = (0, 0);
    for root in ["dsh-logs/raw", "dsh-logs/zstd", "dsh-logs/damaged", "dsh-generations/raw", "dsh-generations/zstd"] {
        let Ok(store) = DshStore::open(fixtures.join(root)) else { continue };
        let Ok(listing) = store.list() else { continue };
        for session in listing.sessions {
            let id = &session.header.id;
            let (whole, visible) = (store.read_surface_json(id), store.read_visible_surface_json(id));
            let (whole, visible) = match (whole, visible) {
                (Ok(w), Ok(v)) => (w, v),
                (Err(a), Err(b)) => {
                    assert_eq!(a, b, "{root} {id}");
                    continue;
                }
                (w, v) => panic!("{root} {id}: {:?} / {:?}", w.map(|_| ()), v.map(|_| ())),
            };
            assert_eq!(project_json(&whole), project_json(&visible), "{root} {id}");
            compared += 1;
            smaller += usize::from(visible.len() < whole.len());
        }
    }
    assert!(compared >= 20 && smaller >= 10, "{compared} sessions, {smaller} smaller");
    // A surface event projection drops, and ones it keeps or fails on.
    use dsh_session_reference::projection::may_project;
    assert!(!may_project(
        br#"{"type":"tool/result","seq":3,"data":{"message":{"content":[{"type":"text","text":"x"}]}}}"#
    ));
    assert!(!may_project(
        br#"{"type":"user/message","data":{"content":[{"type":"text","text":"x"}],"source":{"kind":"system-prompt"}}}"#
    ));
    assert!(!may_project(
        br#"{"type":"assistant/message","data":{"message":{"content":[{"type":"reasoning","text":"r"}]}}}"#
    ));
    assert!(may_project(
        br#"{"type":"user/message","data":{"content":[{"type":"text","text":"x"}],"source":{"kind":"user"}}}"#
    ));
    assert!(may_project(
        br#"{"type":"assistant/message","data":{"message":{"content":[{"type":"text","text":"a"}]}}}"#
    ));
    assert!(may_project(br#"{"type":"user/message","data":{"content":"not blocks"}}"#), "an error is kept");
    assert!(may_project(br#"{"data":{}}"#), "no type: an error");
}

#[test]
fn memory_follows_what_is_kept_not_the_log() {
    let _one = one_at_a_time();
    claude_code_title_read();
    codex_title_read();
    dsh_prepare_of_tool_output();
    dsh_prepare_of_conversation();
    claude_code_prepare_of_conversation();
    codex_prepare_of_conversation();
    index_build_of_a_big_session();
    search_verification_of_a_big_session();
}

/// The first indexing of a big session holds what the index keeps of it,
/// one item at a time, not its surface (so that `search` stays under
/// twice the compressed index).
#[test]
fn the_first_indexing_holds_one_item_at_a_time() {
    let _one = one_at_a_time();
    dsh_first_indexing_of_conversation();
    claude_code_first_indexing_of_conversation();
}

/// Saving the index writes each compressed text from where it is (held,
/// or read back from the file it was loaded from and checked), not
/// gathered into one buffer first (which would hold the index twice while
/// it is written). A session of about 12 MB of text
/// that compresses as little as prose does: its save holds under a
/// quarter of its index more (the write buffer and the directory), when
/// the index was built here and when it was loaded from the file and is
/// written again, byte for byte the same; and a search of the loaded
/// index reads the session's text from the file in chunks.
#[test]
fn saving_the_index_holds_no_second_copy() {
    let _one = one_at_a_time();
    let query = Arc::new(MemoryQuery::new());
    query.add_session(SessionHeader::new("noisy", 1u64, Some("/w".into())));
    let items: Vec<Value> = (0..120)
        .map(|n| json!({"role": if n % 2 == 0 { "user" } else { "assistant" }, "text": noise(100_000, n as u64)}))
        .collect();
    let surface = json!({"session": {"id": "noisy", "cwd": "/w"}, "capturedThroughSeq": 119, "conversation": items});
    query.set_surface("noisy", SurfaceData::json(serde_json::to_vec(&surface).unwrap()));
    let target = Target::new("new-chat", None);
    let search = |r: &Resolver| {
        assert!(block_on(r.search(&target, "qqxxzz", &SearchOptions::default(), None)).unwrap().is_empty());
    };
    let built = Resolver::new(query.clone(), Config::default());
    search(&built);
    let index = built.search_index_stats().index_bytes;
    assert!(index > 4 * MB, "the index holds {index} bytes only");
    let bound = index / 4 + 5 * MB / 4;
    let dir = tempfile::tempdir().unwrap();
    let (first, again) = (dir.path().join("first.bin"), dir.path().join("again.bin"));
    let (saved, peak) = peak_of(|| built.save_discovery_cache(DiscoveryCachePart::Index, &first));
    saved.unwrap();
    eprintln!("index {index} bytes: saving it held {peak} more");
    assert!(peak < bound, "saving an index of {index} bytes peaked at {peak} bytes");
    let loaded = Resolver::new(query, Config::default());
    assert!(loaded.load_discovery_cache(DiscoveryCachePart::Index, &first));
    search(&loaded);
    let (saved, peak) = peak_of(|| loaded.save_discovery_cache(DiscoveryCachePart::Index, &again));
    saved.unwrap();
    eprintln!("loaded from the file: saving it again held {peak} more");
    assert!(peak < bound, "saving again an index of {index} bytes peaked at {peak} bytes");
    assert!(std::fs::read(&first).unwrap() == std::fs::read(&again).unwrap(), "written again alike");
    // A search of the loaded index verifies the session on its text read
    // from the file in chunks (the word is in its last message only), not
    // read back whole (a warm search of a 1 GB DSH log held 88 MB for an
    // index of 81 MB).
    let last = noise(100_000, 119);
    let word = last.split_whitespace().rev().take(200).max_by_key(|w| w.len()).unwrap();
    let (results, peak) = peak_of(|| block_on(loaded.search(&target, word, &SearchOptions::default(), None)).unwrap());
    assert_eq!(results.len(), 1, "{word}");
    eprintln!("loaded from the file: verifying a match in its last message held {peak} more");
    assert!(peak < bound, "verifying a stored text of an index of {index} bytes peaked at {peak} bytes");
}

/// About `n` bytes of lower-case words that compress about 1.6x (letters
/// drawn by a fixed generator: a text an index cannot make small).
fn noise(n: usize, salt: u64) -> String {
    let mut x = salt.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = String::with_capacity(n + 16);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = 2 + (x % 9) as usize;
        for i in 0..len {
            out.push(char::from(b'a' + ((x >> (8 + 5 * i)) % 26) as u8));
        }
        out.push(' ');
    }
    out
}

/// What a DSH read holds of a log's structure is a few bytes a surface
/// event, not a hash-map node of about a hundred. A log
/// of 2,000 turns of short messages (36,000 events, 12,000 on the
/// surface): its title read (the fold it keeps: a slot of 8 bytes an
/// event on the surface), and its first indexing (that title read, the
/// read for where the visible lines are, then the index built from them
/// read again).
#[test]
fn the_structure_of_a_dsh_log_is_a_few_bytes_an_event() {
    let _one = one_at_a_time();
    let root = dsh_root(2_000, 16, 16);
    let open = || DshStore::open(root.path()).unwrap().with_watching(false);
    let events = open().inspect("big").unwrap().surface_seqs.len();
    assert_eq!(events, 12_000);
    let store = open();
    let (title, title_peak) = peak_of(|| store.read_title("big").unwrap());
    assert!(title.is_some());
    let (index_peak, index) = first_indexing_peak(Resolver::new(Arc::new(open()), Config::default()));
    eprintln!("{events} surface events: title read {title_peak}, first indexing {index_peak} (index {index})");
    assert!(title_peak < 24 * events + 64 * 1024, "a title read peaked at {title_peak} bytes for {events} events");
    // The constant: the key scratch (2.1 MiB) and the zstd contexts.
    assert!(
        index_peak < 2 * index + 32 * events + 11 * MB / 4,
        "the first indexing peaked at {index_peak} bytes for {events} events (index {index})"
    );
}

/// The peak of the first search of `id` (a query no filter lets through:
/// what is measured is indexing the session, training the dictionary on
/// it and compressing it again with it) and the bytes the index then holds
/// (its compressed text, filter and dictionary).
fn first_indexing_peak(resolver: Resolver) -> (usize, usize) {
    let target = Target::new("new-chat", None);
    let (results, peak) =
        peak_of(|| block_on(resolver.search(&target, "qqxxzz", &SearchOptions::default(), None)).unwrap());
    assert!(results.is_empty());
    let stats = resolver.search_index_stats();
    assert_eq!(stats.sessions, 1, "the session is indexed");
    (peak, stats.index_bytes)
}

/// Asserts that indexing a log of `bytes` peaked at `peak` under a small
/// multiple of what the index holds for it (`index`) plus a constant:
/// the zstd contexts (a streaming compressor of a big text, the
/// dictionary trainer), the key bitmaps and the structure of the log (a
/// few dozen bytes a message), none of which grows with the text. The
/// whole read's peak (`whole`: the log's visible surface held while it is
/// indexed) is over it.
fn indexing_bound(what: &str, bytes: usize, peak: usize, whole: usize, index: usize) {
    let bound = 3 * index + 12 * MB;
    eprintln!("{what}: {bytes} bytes, index {index}, streamed {peak}, whole {whole}, bound {bound}");
    assert!(peak < bound, "the first indexing of a {bytes}-byte {what} peaked at {peak} bytes (index {index})");
    assert!(whole > bound, "read whole, it peaked at {whole} bytes only (index {index}): the bound tells nothing");
}

/// The first search of a 24 MB DSH log of conversation indexes it one
/// message at a time (the log read once for where its messages are, then
/// again for their texts), not holding its visible surface.
fn dsh_first_indexing_of_conversation() {
    let root = dsh_root(500, 20_000, 300);
    let bytes = log_bytes(root.path());
    assert!(bytes > 20 * MB, "{bytes}");
    let store = DshStore::open(root.path()).unwrap().with_watching(false);
    let (peak, index) = first_indexing_peak(Resolver::new(Arc::new(store.clone()), Config::default()));
    let (whole, _) = first_indexing_peak(Resolver::new(Arc::new(Blocking::new(Whole(store))), Config::default()));
    indexing_bound("DSH log of conversation", bytes, peak, whole, index);
}

/// The same for a 24 MB Claude Code transcript: its chain and where its
/// texts are, then each text read again, not the conversation.
fn claude_code_first_indexing_of_conversation() {
    let stem = "0000aaaa-0000-4000-8000-000000000003";
    let root = claude_root(stem, 1_200, 6_000, 14_000);
    let bytes = log_bytes(root.path());
    assert!(bytes > 20 * MB, "{bytes}");
    let source = ClaudeCodeSource::open(root.path()).unwrap().with_watching(false);
    let streamed = Resolver::new(Arc::new(Blocking::new(source.clone())), Config::default());
    let (peak, index) = first_indexing_peak(streamed);
    let whole = Resolver::new(Arc::new(Blocking::new(Whole(source))), Config::default());
    let (whole, _) = first_indexing_peak(whole);
    indexing_bound("Claude Code transcript", bytes, peak, whole, index);
}

/// A source that offers the surface for projection only (and its
/// fingerprints): a resolver over it reads every session whole, as a
/// source that answers every read alike does.
struct Whole<Q>(Q);

impl<Q: BlockingSessionQuery> BlockingSessionQuery for Whole<Q> {
    fn fingerprints(
        &self,
        ids: &[String],
    ) -> Result<Option<Vec<Option<dsh_session_reference::Fingerprint>>>, dsh_session_reference::HostError> {
        BlockingSessionQuery::fingerprints(&self.0, ids)
    }
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, dsh_session_reference::HostError> {
        BlockingSessionQuery::list_sessions(&self.0)
    }
    fn read_title(&self, id: &str) -> Result<Option<String>, dsh_session_reference::HostError> {
        BlockingSessionQuery::read_title(&self.0, id)
    }
    fn read_surface(&self, id: &str) -> Result<SurfaceData, dsh_session_reference::HostError> {
        BlockingSessionQuery::read_surface(&self.0, id)
    }
    fn read_surface_as(&self, id: &str, _: SurfaceRead) -> Result<SurfaceAnswer, dsh_session_reference::HostError> {
        BlockingSessionQuery::read_surface_as(&self.0, id, SurfaceRead::ForProjection)
    }
}

/// The prompt and metadata of referencing `id` under `config`, or the
/// error's code and message.
fn prepared(resolver: &Resolver, id: &str) -> Result<(String, String), String> {
    let target = Target::new("new-chat", None);
    let content = json!([{"type": "text", "text": "see"}]);
    let refs = [json!({"sessionId": id})];
    match block_on(resolver.prepare(&target, &content, &refs, &PrepareOptions::default(), None)) {
        Ok(p) => {
            let c = p.additional_context.unwrap();
            Ok((c.prompt, format!("{:?}", c.source)))
        }
        Err(e) => Err(format!("{:?}: {}", e.code(), e.message())),
    }
}

/// The budgets a read within the budget is compared under: from tiny to
/// larger than the session.
const BUDGETS: [u64; 6] = [120, 600, 2_000, 9_000, 65_536, 1 << 22];

/// Asserts that `id` prepares under `budget` through `within` (a resolver
/// made with a config) as through `whole`, plain, hardened and with the
/// omissions section (`dshCompat` 0.1.7); returns how many were compared.
fn prepares_alike(
    within: impl Fn(Config) -> Resolver,
    whole: impl Fn(Config) -> Resolver,
    id: &str,
    budget: u64,
    place: &str,
) -> usize {
    use dsh_session_reference::Hardening;
    let modes = [("0.1.1", Hardening::default()), ("0.1.7", Hardening::default()), ("0.1.7", Hardening::ALL)];
    for (compat, hardening) in modes {
        let config = || {
            Config::from_json(&json!({"maxReferenceBytes": budget, "dshCompat": compat}))
                .unwrap()
                .with_hardening(hardening)
        };
        assert_eq!(prepared(&within(config()), id), prepared(&whole(config()), id), "{place} {id} {budget}");
    }
    modes.len()
}

/// A session read under its budget (the messages retention certainly
/// drops left out, counted) prepares byte for byte as the whole session,
/// prompt and metadata, errors too: every fixture log (damaged ones
/// included) and a generated conversation, under budgets from tiny to
/// larger than the session, plain and hardened, with and without the
/// omissions section; and the smaller budgets do leave messages out.
#[test]
fn a_read_within_the_budget_prepares_as_the_whole_one() {
    let _one = one_at_a_time();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let generated = dsh_root(60, 3_000, 500);
    let mut roots: Vec<std::path::PathBuf> =
        ["dsh-logs/raw", "dsh-logs/zstd", "dsh-logs/damaged", "dsh-generations/raw", "dsh-generations/zstd"]
            .iter()
            .map(|r| fixtures.join(r))
            .collect();
    roots.push(generated.path().to_owned());
    let (mut compared, mut elided) = (0, 0);
    for root in &roots {
        let Ok(store) = DshStore::open(root) else { continue };
        let store = store.with_watching(false);
        let Ok(listing) = store.list() else { continue };
        for session in listing.sessions {
            let id = &session.header.id;
            for budget in BUDGETS {
                compared += prepares_alike(
                    |c| Resolver::new(Arc::new(store.clone()), c),
                    |c| Resolver::new(Arc::new(Blocking::new(Whole(store.clone()))), c),
                    id,
                    budget,
                    &root.display().to_string(),
                );
                if let Ok((_, left_out)) = store.read_visible_surface_within(id, budget) {
                    elided += usize::from(left_out.messages > 0);
                }
            }
        }
    }
    assert!(compared >= 300 && elided >= 10, "{compared} compared, {elided} with messages left out");
}

/// [`prepares_alike`] of the session `id` of `source` (a reader of files
/// under `root`) under every one of [`BUDGETS`]; returns how many were
/// compared and under how many budgets its read within the budget left
/// messages out.
fn prepares_alike_under_every_budget<S>(source: &S, id: &str, root: &Path) -> (usize, usize)
where
    S: BlockingSessionQuery + Clone + 'static,
{
    let (mut compared, mut elided) = (0, 0);
    for budget in BUDGETS {
        compared += prepares_alike(
            |c| Resolver::new(Arc::new(Blocking::new(source.clone())), c),
            |c| Resolver::new(Arc::new(Blocking::new(Whole(source.clone()))), c),
            id,
            budget,
            &root.display().to_string(),
        );
        let read = BlockingSessionQuery::read_surface_as(source, id, SurfaceRead::Within(budget)).unwrap();
        elided += usize::from(read.elided.messages > 0);
    }
    (compared, elided)
}

/// The same for Claude Code transcripts: a read under the budget (a first
/// pass keeping where texts are, the kept ones read again) prepares byte
/// for byte as the whole read, on every fixture transcript and generated
/// ones, under six budgets, plain, hardened, with and without omissions.
#[test]
fn a_claude_code_read_within_the_budget_prepares_as_the_whole_one() {
    let _one = one_at_a_time();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let rich = claude_rich_root("rich", 90, 700);
    let plain = claude_root("plain", 40, 900, 1_500);
    let mut roots: Vec<std::path::PathBuf> = [
        "foreign-logs/claude-code",
        "on-disk/claude-code-queue",
        "on-disk/claude-code-titles/first",
        "on-disk/claude-code-empty",
    ]
    .iter()
    .map(|r| fixtures.join(r))
    .collect();
    roots.push(rich.path().to_owned());
    roots.push(plain.path().to_owned());
    let (mut compared, mut elided) = (0, 0);
    for root in &roots {
        let source = ClaudeCodeSource::open(root).unwrap().with_watching(false);
        for session in source.list().unwrap().sessions {
            let (c, e) = prepares_alike_under_every_budget(&source, &session.header.id, root);
            (compared, elided) = (compared + c, elided + e);
        }
    }
    assert!(compared >= 150 && elided >= 10, "{compared} compared, {elided} with messages left out");
}

/// The same for Codex rollouts: a read under the budget (a replay keeping
/// where texts are, the kept ones read again) prepares byte for byte as
/// the whole replay, on every fixture rollout and generated ones (a rich
/// rollout, a legacy flat one, a plain one), under six budgets, plain,
/// hardened, with and without omissions; and the items streamed one at a
/// time (the search index's read) are the whole replay's projected items.
#[test]
fn a_codex_read_within_the_budget_prepares_as_the_whole_one() {
    use dsh_session_reference::sources::codex::CodexSource;
    let _one = one_at_a_time();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let rich = codex_rich_root("0199aaaa-0000-7000-8000-000000000005", 90, 700);
    let plain = codex_root("0199aaaa-0000-7000-8000-000000000006", 40, 900, 1_500);
    let roots = [fixtures.join("foreign-logs/codex/daaain"), rich.path().to_owned(), plain.path().to_owned()];
    let (mut compared, mut elided, mut streamed) = (0, 0, 0);
    for root in &roots {
        let source = CodexSource::open(root).unwrap();
        let listing = source.list().unwrap();
        for session in listing.sessions {
            let id = &session.header.id;
            let (c, e) = prepares_alike_under_every_budget(&source, id, root);
            (compared, elided) = (compared + c, elided + e);
            streamed += streams_as_projected(&source, id, &source.conversation(id).unwrap(), 2);
        }
    }
    assert!(
        compared >= 100 && elided >= 10 && streamed >= 100,
        "{compared} compared, {elided} elided, {streamed} items"
    );
}

/// The Claude Code chain held as fixed-size records: a transcript of many short lines is read for its title, its `prepare`
/// and its first indexing in 80-180 bytes a line (uuids
/// interned once as 16 bytes, parents and cwds as numbers, timestamps as
/// integers, the items without a second copy for their timestamps).
#[test]
fn the_claude_code_chain_is_held_in_records() {
    let _one = one_at_a_time();
    let stem = "0000aaaa-0000-4000-8000-0000000000d1";
    // 60k lines: the vectors of a line each (2^16 long) are nearly full.
    let rounds = 30_000;
    let lines = 2 * rounds;
    let root = claude_root(stem, rounds, 10, 10);
    let source = ClaudeCodeSource::open(root.path()).unwrap().with_watching(false);
    BlockingSessionQuery::list_sessions(&source).unwrap();
    let id = format!("claude-code:{stem}");
    let (title, title_peak) = peak_of(|| BlockingSessionQuery::read_title(&source, &id).unwrap());
    assert!(title.is_some());
    let resolver = Resolver::new(Arc::new(Blocking::new(source.clone())), Config::default());
    let (prompt, prepare_peak) = prompt_peak_of(resolver, &id);
    assert!(prompt.contains(&format!("answer {}: ", lines - 1)), "the newest answer is kept");
    let streamed = Resolver::new(Arc::new(Blocking::new(source)), Config::default());
    let (index_peak, index) = first_indexing_peak(streamed);
    eprintln!(
        "{lines} lines: title read {title_peak} ({} a line), prepare {prepare_peak} ({} a line), \
         first indexing {index_peak} (index {index})",
        title_peak / lines,
        prepare_peak / lines
    );
    // Main before the records (120k lines): 259 and 366 bytes a line, and
    // 44 MB for an index of 0.66 MB; with them 80, 176 and 23 MB.
    assert!(title_peak < lines * 110, "a title read of {lines} lines peaked at {title_peak} bytes");
    assert!(prepare_peak < lines * 220, "prepare of {lines} lines peaked at {prepare_peak} bytes");
    let bound = 2 * index + lines * 240;
    assert!(index_peak < bound, "the first indexing of {lines} lines peaked at {index_peak} bytes (index {index})");
}

/// The chain's records read a transcript as it is written, where what the
/// strings were is what tells the lines apart: a parent named by a uuid in
/// upper case (a name of its own, not the lower-case one), a uuid that is
/// not a uuid, a parent written after its child, a re-appended line (the
/// first wins), a sidechain, a response over two lines, timestamps that
/// are not canonical (no milliseconds, an offset) among canonical ones with
/// steering prompts placed by them, a compaction preserving a message
/// named in upper case. The whole read, the read within the budget and the
/// streamed items agree.
#[test]
fn a_claude_code_chain_of_edge_cases_reads_as_written() {
    let _one = one_at_a_time();
    let stem = "0000aaaa-0000-4000-8000-0000000000e1";
    let uuid = |n: u32| format!("00000000-0000-4000-8000-{n:012x}");
    let upper = |n: u32| format!("00000000-0000-4000-8000-{n:012X}");
    let line = |kind: &str, id: &str, parent: Option<&str>, ts: &str, extra: Value| {
        let mut l = json!({"type": kind, "uuid": id, "parentUuid": parent, "isSidechain": false,
            "timestamp": ts, "cwd": "/w", "version": "2.1.5"});
        for (k, v) in extra.as_object().unwrap() {
            l[k] = v.clone();
        }
        l
    };
    let user = |text: &str| json!({"message": {"role": "user", "content": text}});
    let said = |id: &str, text: &str| {
        json!({"message": {"id": id, "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": text}]}})
    };
    let steer = |op: &str, ts: &str, text: &str| json!({"type": "queue-operation", "operation": op, "timestamp": ts, "content": text});
    let (a1, a1_upper) = (uuid(0xa1), upper(0xa1));
    let lines = vec![
        line("user", &uuid(1), None, "2026-01-01T00:00:01Z", user("first question")),
        // Lower and upper case: two lines, the second the parent of what follows.
        line("assistant", &a1, Some(&uuid(1)), "2026-01-01T00:00:01.500Z", said("m0", "an answer left behind")),
        line("assistant", &a1_upper, Some(&uuid(1)), "2026-01-01T00:00:02.000Z", said("m1", "first answer")),
        line("user", "u-two", Some(&a1_upper), "2026-01-01T00:00:03.000Z", user("second question")),
        steer("enqueue", "2026-01-01T00:00:03.500Z", "steer one"),
        steer("remove", "2026-01-01T00:00:03.600Z", "steer one"),
        line(
            "assistant",
            &uuid(0xb),
            Some("u-two"),
            "2026-01-01T00:00:04+00:00",
            said("m2", "second answer, part one"),
        ),
        // Re-appended with another text: the first copy wins.
        line("assistant", &uuid(0xb), Some("u-two"), "2026-01-01T00:00:04+00:00", said("m2", "a copy")),
        steer("enqueue", "2026-01-01T00:00:04.5Z", "steer two"),
        steer("remove", "2026-01-01T00:00:04.5Z", "steer two"),
        line(
            "assistant",
            &uuid(0xc),
            Some(&uuid(0xb)),
            "2026-01-01T00:00:05.000Z",
            said("m2", "second answer, part two"),
        ),
        line("user", &uuid(0x10), Some(&uuid(0xc)), "2026-01-01T00:00:05.500Z", {
            let mut side = user("a side question");
            side["isSidechain"] = json!(true);
            side
        }),
        // The child before its parent.
        line("user", &uuid(0xe), Some(&uuid(0xd)), "2026-01-01T00:00:07.000Z", user("third question")),
        line("assistant", &uuid(0xd), Some(&uuid(0xc)), "2026-01-01T00:00:06.000Z", said("m3", "bridge answer")),
        line("assistant", &uuid(0xf), Some(&uuid(0xe)), "2026-01-01T00:00:08.000Z", said("m4", "final answer")),
    ];
    let want = [
        "user: first question",
        "assistant: first answer",
        "user: second question",
        "user: steer one",
        "assistant: second answer, part one\nsecond answer, part two",
        "user: steer two",
        "assistant: bridge answer",
        "user: third question",
        "assistant: final answer",
    ];
    // The same chain compacted: the boundary preserves the upper-case
    // message (named twice: kept once) and the sidechain's (not kept) after
    // its anchor, the summary.
    let mut compacted = lines.clone();
    compacted.push(line(
        "system",
        &uuid(0x20),
        None,
        "2026-01-01T00:00:09.000Z",
        json!({"subtype": "compact_boundary", "compactMetadata": {"preservedMessages":
            {"anchorUuid": uuid(0x21), "uuids": [a1_upper, a1_upper, uuid(0x10)]}}}),
    ));
    compacted.push(line("user", &uuid(0x21), Some(&uuid(0x20)), "2026-01-01T00:00:10.000Z", {
        let mut summary = user("the summary");
        summary["isCompactSummary"] = json!(true);
        summary
    }));
    compacted.push(line("user", &uuid(0x22), Some(&uuid(0x21)), "2026-01-01T00:00:11.000Z", user("after")));
    let want_compacted = ["checkpoint user: the summary", "assistant: first answer", "user: after"];
    for (lines, want) in [(lines, &want[..]), (compacted, &want_compacted[..])] {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("-w")).unwrap();
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(root.path().join(format!("-w/{stem}.jsonl")), text).unwrap();
        let source = ClaudeCodeSource::open(root.path()).unwrap().with_watching(false);
        let id = format!("claude-code:{stem}");
        let whole = source.conversation(&id).unwrap();
        let got: Vec<String> = whole
            .items
            .iter()
            .map(|i| {
                format!("{}{:?}: {}", if i.checkpoint { "checkpoint " } else { "" }, i.role, i.text).to_lowercase()
            })
            .collect();
        assert_eq!(got, want, "the whole read");
        let (compared, _) = prepares_alike_under_every_budget(&source, &id, root.path());
        assert!(compared > 0);
        streams_as_projected(&source, &id, &whole, 1);
    }
}

/// Asserts that the items `source` streams for `id` one at a time (the
/// search index's read), in each of `passes` passes, are the projected
/// items of its whole read `whole`; gives how many there are.
fn streams_as_projected<S: BlockingSessionQuery>(
    source: &S,
    id: &str,
    whole: &dsh_session_reference::Conversation,
    passes: usize,
) -> usize {
    use dsh_session_reference::SurfaceItems;
    let want: Vec<_> = whole
        .projection()
        .items
        .iter()
        .map(|i| (i.role, i.text.decode().unwrap().into_owned(), i.checkpoint))
        .collect();
    let Ok(SurfaceItems::Streamed(mut items)) =
        BlockingSessionQuery::read_surface_as(source, id, SurfaceRead::Items).map(|a| a.surface)
    else {
        panic!("{id}: not streamed");
    };
    for _pass in 0..passes {
        let mut got = Vec::new();
        let flow = items
            .each_item(&mut |i| {
                got.push((i.role, i.text.decode().unwrap().into_owned(), i.checkpoint));
                std::ops::ControlFlow::Continue(())
            })
            .unwrap();
        assert!(flow.is_continue());
        assert_eq!(got, want, "{id}");
    }
    want.len()
}

/// A compaction of a generated DSH log: after the turn, the turns from and to.
type Replace = (usize, usize, usize);

/// The bytes of lines taken from session files (`work::line_bytes`) while
/// `f` runs on this thread.
fn lines_read<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = dsh_session_reference::work::line_bytes();
    let out = f();
    (out, dsh_session_reference::work::line_bytes() - before)
}

/// A read under the budget goes over a DSH log once: a log that only
/// appends, or whose replacements leave what the budget keeps alone, is
/// read once, every line of it (its bytes counted exactly), under every
/// budget, and prepares as the whole read; only a replacement that takes
/// the newest messages off the surface, bringing older ones back into the
/// budget, makes the read take those again, and no more of them than the
/// budget holds.
#[test]
fn a_dsh_read_within_the_budget_reads_the_log_once() {
    let _one = one_at_a_time();
    // 1,200 turns of 2 KB messages (5 MB), then the same with a compaction
    // of the oldest turns halfway, then with one of the newest at the end.
    let cases: [(&[Replace], bool); 3] = [(&[], false), (&[(600, 0, 300)], false), (&[(1_199, 1_100, 1_199)], true)];
    for (replaces, again) in cases {
        let root = dsh_messages_root(1_200, 2_000, replaces);
        let bytes = log_bytes(root.path()) as u64;
        let store = DshStore::open(root.path()).unwrap().with_watching(false);
        // A whole read takes every line once (and the header again, to
        // find the log).
        let (whole, once) = lines_read(|| store.read_surface_json("big").unwrap());
        assert!(once >= bytes && once < bytes + 1_000, "{once} of {bytes}");
        assert!(whole.len() as u64 > bytes / 2);
        for budget in BUDGETS {
            let (within, read) = lines_read(|| {
                BlockingSessionQuery::read_surface_as(&store, "big", SurfaceRead::Within(budget)).unwrap()
            });
            let place = format!("{replaces:?}, budget {budget}: {read} of {once}");
            if !again {
                assert_eq!(read, once, "{place}: the log is read once");
            } else {
                // The lines the compaction of the newest 100 turns brings
                // back into the budget (2.2 KB a message, about 2 KB of
                // it counted) are read again, in batches that double (so
                // at most twice what is needed), and no others.
                assert!(read <= once + 4 * budget.min(bytes) + 9_000, "{place}");
                assert!(budget > 65_536 || read > once, "{place}: lines let go are read again");
            }
            assert!(within.elided.messages > 0 || budget > bytes / 2, "{place}");
            prepares_alike(
                |c| Resolver::new(Arc::new(store.clone()), c),
                |c| Resolver::new(Arc::new(Blocking::new(Whole(store.clone()))), c),
                "big",
                budget,
                &place,
            );
        }
    }
}

/// A Claude Code transcript and a Codex rollout under the budget are read
/// once: the newest texts retention may keep are held as the file is read
/// and older ones let go, so a conversation that is its texts in file
/// order takes every line once (its bytes counted exactly), under every
/// budget. One that is not (a compaction that keeps earlier prompts or
/// splices preserved messages back, a rollback, steering prompts placed
/// back, a side chain) takes again only lines of the texts it keeps, about
/// the budget's worth, and prepares as the whole read.
#[test]
fn a_foreign_read_within_the_budget_reads_the_file_once() {
    use dsh_session_reference::sources::codex::CodexSource;
    let _one = one_at_a_time();
    let stem = "0000aaaa-0000-4000-8000-0000000000e1";
    let claude = claude_root(stem, 600, 3_000, 6_000);
    let codex_id = "0199aaaa-0000-7000-8000-0000000000e2";
    let codex = codex_root(codex_id, 600, 3_000, 6_000);
    let claude_source = ClaudeCodeSource::open(claude.path()).unwrap().with_watching(false);
    reads_once(&claude_source, &format!("claude-code:{stem}"), log_bytes(claude.path()) as u64);
    let codex_source = CodexSource::open(codex.path()).unwrap();
    reads_once(&codex_source, &format!("codex:{codex_id}"), log_bytes(codex.path()) as u64);
    // Rich logs of over the least a read holds before it lets texts go
    // (1 MiB), so that it does.
    let rich = claude_rich_root("rich", 2_000, 700);
    let source = ClaudeCodeSource::open(rich.path()).unwrap().with_watching(false);
    for session in source.list().unwrap().sessions {
        reads_again_only_what_it_keeps(&source, &session.header.id, rich.path());
    }
    let rich = codex_rich_root("0199aaaa-0000-7000-8000-0000000000e3", 2_000, 700);
    let source = CodexSource::open(rich.path()).unwrap();
    for session in source.list().unwrap().sessions {
        reads_again_only_what_it_keeps(&source, &session.header.id, rich.path());
    }
    // A rollback of the newest 300 turns, and a compaction that keeps every
    // prompt, after 600: the texts they bring back were let go, and only
    // those the budget keeps are read again.
    let ts = "2026-01-01T00:00:00.000Z";
    let ends = [
        json!({"type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": 300}}),
        json!({"type": "compacted", "payload": {"message": "the summary"}}),
    ];
    for (k, end) in ends.into_iter().enumerate() {
        let id = format!("0199aaaa-0000-7000-8000-0000000000f{k}");
        let mut lines = vec![json!({"timestamp": ts, "type": "session_meta", "payload": {"id": id, "timestamp": ts}})];
        for n in 0..600 {
            for (role, part, text) in [("user", "input_text", 3_000), ("assistant", "output_text", 6_000)] {
                let item = json!({"type": "message", "role": role,
                    "content": [{"type": part, "text": format!("{role} {n}: {}", words(text, 2 * n))}]});
                lines.push(json!({"timestamp": ts, "type": "response_item", "payload": item}));
            }
        }
        lines.push(end);
        let home = codex_home_of(&id, &lines);
        let source = CodexSource::open(home.path()).unwrap();
        let again = reads_again_only_what_it_keeps(&source, &format!("codex:{id}"), home.path());
        assert!(again > 0, "{id}: texts let go are read again");
    }
}

/// Under every budget, a read of `id` takes each line of its file
/// (`bytes`) once (and its first again, to find it), no more than a whole
/// read takes, and no line again.
fn reads_once<S: BlockingSessionQuery>(source: &S, id: &str, bytes: u64) {
    assert!(bytes > 5 * MB as u64, "{bytes}");
    let (_, whole) = lines_read(|| source.read_surface(id).unwrap());
    for budget in BUDGETS {
        let (within, read) = lines_read(|| source.read_surface_as(id, SurfaceRead::Within(budget)).unwrap());
        let place = format!("{id} {budget}: {read} of {bytes}, a whole read {whole}");
        assert!(read >= bytes && read < bytes + 1_000 && read <= whole, "{place}: the file is read once");
        assert!(within.elided.messages > 1_000 || budget > bytes / 8, "{id} {budget}");
    }
}

/// Under every budget, a read of `id` (in a file under `root`) takes each
/// line once and again only lines of texts it keeps (of at most a few KB
/// each, and about the budget's worth), and prepares as the whole read;
/// returns the most bytes of lines a read took again.
fn reads_again_only_what_it_keeps<S>(source: &S, id: &str, root: &Path) -> u64
where
    S: BlockingSessionQuery + Clone + 'static,
{
    let (_, once) = lines_read(|| source.read_surface(id).unwrap());
    let mut most = 0;
    for budget in BUDGETS {
        let (_, read) = lines_read(|| source.read_surface_as(id, SurfaceRead::Within(budget)).unwrap());
        let place = format!("{id} {budget}: {read} of {once}");
        assert!(read + 20_000 >= once && read <= once + 2 * budget.min(once) + 20_000, "{place}");
        most = most.max(read.saturating_sub(once));
    }
    prepares_alike_under_every_budget(source, id, root);
    most
}
