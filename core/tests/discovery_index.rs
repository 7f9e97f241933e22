//! The discovery caches (title cache, search index) against a resolver that
//! caches nothing, across every kind of change between two queries, through
//! an in-memory query and through a file-backed source fingerprinted by
//! file metadata; and full-text search itself.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use dsh_session_reference::projection::Role;
use dsh_session_reference::search_index::{self, Found, Index, Session};
use dsh_session_reference::{
    block_on, format_mention, Blocking, BlockingSessionQuery, CancelToken, CandidateOptions, Config, Conversation,
    ConversationItem, DiscoveryCachePart, ErrorCode, Fingerprint, HostError, MatchField, MemoryQuery, QueryFuture,
    Resolver, SearchOptions, SearchRequest, SearchResult, SearchScope, SessionHeader, SessionQuery, SurfaceData,
    Target,
};
use serde_json::{json, Value};

/// Forwards to a query, counting title and surface reads, with or without
/// its fingerprints.
struct Counting<Q> {
    inner: Q,
    titles: AtomicUsize,
    surfaces: AtomicUsize,
    fingerprints: bool,
}

impl<Q> Counting<Q> {
    fn new(inner: Q, fingerprints: bool) -> Self {
        Counting { inner, titles: AtomicUsize::new(0), surfaces: AtomicUsize::new(0), fingerprints }
    }
    fn take(&self) -> (usize, usize) {
        (self.titles.swap(0, Ordering::SeqCst), self.surfaces.swap(0, Ordering::SeqCst))
    }
}

impl<Q: SessionQuery> SessionQuery for Counting<Q> {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        self.inner.list_sessions()
    }
    fn read_title<'a>(&'a self, id: &'a str) -> QueryFuture<'a, Option<String>> {
        self.titles.fetch_add(1, Ordering::SeqCst);
        self.inner.read_title(id)
    }
    fn read_surface<'a>(&'a self, id: &'a str) -> QueryFuture<'a, SurfaceData> {
        self.surfaces.fetch_add(1, Ordering::SeqCst);
        self.inner.read_surface(id)
    }
    fn fingerprints<'a>(&'a self, ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        if self.fingerprints {
            self.inner.fingerprints(ids)
        } else {
            Box::pin(async { Ok(None) })
        }
    }
}

fn conversation(id: &str, cwd: Option<&str>, texts: &[&str]) -> Conversation {
    Conversation {
        session_id: id.into(),
        cwd: cwd.map(Into::into),
        captured_through_seq: None,
        items: texts
            .iter()
            .enumerate()
            .map(|(i, t)| ConversationItem::new(if i % 2 == 0 { Role::User } else { Role::Assistant }, *t))
            .collect(),
    }
}

fn add(q: &MemoryQuery, id: &str, created: u64, cwd: Option<&str>, title: Option<&str>, texts: &[&str]) {
    q.add_session(SessionHeader::new(id, created, cwd.map(Into::into)));
    q.set_title(id, title.map(Into::into));
    q.set_surface(id, conversation(id, cwd, texts));
}

fn target() -> Target {
    Target::new("me", Some("/work/a".into()))
}

/// Candidates as JSON, for comparing two resolvers.
fn cands(r: &Resolver, filter: &str) -> Vec<Value> {
    block_on(r.candidates(&target(), filter, &CandidateOptions::default(), None))
        .unwrap()
        .iter()
        .map(|c| c.to_json())
        .collect()
}

fn found(r: &Resolver, query: &str) -> Vec<SearchResult> {
    block_on(r.search(&target(), query, &SearchOptions::default(), None)).unwrap()
}

fn ids(results: &[SearchResult]) -> Vec<&str> {
    results.iter().map(|r| r.candidate.session_id.as_str()).collect()
}

/// A cached and an uncached resolver over the same sessions.
struct Pair {
    mem: Arc<MemoryQuery>,
    cached: Arc<Counting<Arc<MemoryQuery>>>,
    r: Resolver,
    plain: Resolver,
}

impl Pair {
    fn new() -> Pair {
        let mem = Arc::new(MemoryQuery::new());
        let cached = Arc::new(Counting::new(Arc::clone(&mem), true));
        let r = Resolver::new(cached.clone(), Config::default());
        let plain = Resolver::new(Arc::new(Counting::new(Arc::clone(&mem), false)), Config::default());
        Pair { mem, cached, r, plain }
    }
    /// Both resolvers agree on candidates and search; returns the cached
    /// one's (title, surface) reads.
    fn check(&self, filter: &str, query: &str) -> (usize, usize) {
        self.cached.take();
        assert_eq!(cands(&self.r, filter), cands(&self.plain, filter), "candidates {filter:?}");
        let a: Vec<Value> = found(&self.r, query).iter().map(SearchResult::to_json).collect();
        let b: Vec<Value> = found(&self.plain, query).iter().map(SearchResult::to_json).collect();
        assert_eq!(a, b, "search {query:?}");
        self.cached.take()
    }
}

#[test]
fn memory_title_cache_reads_only_what_changed() {
    let p = Pair::new();
    for i in 0..20 {
        add(&p.mem, &format!("s{i}"), 1000 + i, Some("/work/a"), Some(&format!("Title {i}")), &[&format!("body {i}")]);
    }
    assert_eq!(p.check("title", "body"), (20, 20));
    assert_eq!(p.check("title", "body"), (0, 0), "nothing changed: nothing read");
    assert_eq!(p.r.search_index_stats().sessions, 20);
    p.mem.set_title("s3", Some("Renamed".into()));
    assert_eq!(p.check("renamed", "body"), (1, 1));
    assert_eq!(cands(&p.r, "renamed")[0]["sessionId"], "s3");
    p.mem.remove_session("s4");
    p.check("title", "body 4");
    assert!(cands(&p.r, "title 4").is_empty());
    assert_eq!(p.r.search_index_stats().sessions, 19, "a deleted session leaves the index");
    add(&p.mem, "s99", 5000, None, Some("Fresh"), &["新しい本文 PR1137"]);
    assert_eq!(p.check("fresh", "1137"), (1, 1));
    assert_eq!(ids(&found(&p.r, "1137")), ["s99"]);
    // A failing title read is not cached: it is read again next time.
    p.mem.fail_title("s5", "disk on fire");
    p.check("title", "body");
    assert_eq!(p.check("title", "body").0, 2, "once by candidates, once by search");
}

#[test]
fn hardened_labels_are_filtered_as_made_and_follow_a_renamed_title() {
    // A filtered listing tests the label the hardened mode makes of each
    // title (sanitized, credentials redacted), kept with the cached title:
    // it must match what an uncached resolver makes, before and after the
    // title changes, and nothing is read again while nothing changes.
    let mem = Arc::new(MemoryQuery::new());
    let hardened = || Config::from_json(&json!({"sanitizeLabels": true, "redactSecrets": true})).unwrap();
    let cached = Arc::new(Counting::new(Arc::clone(&mem), true));
    let r = Resolver::new(cached.clone(), hardened());
    let plain = Resolver::new(Arc::new(Counting::new(Arc::clone(&mem), false)), hardened());
    let key = "AKIAIOSFODNN7EXAMPLE";
    add(&mem, "s0", 1000, None, Some("deploy\u{200b}ment\nnotes"), &["x"]);
    add(&mem, "s1", 1001, None, Some(&format!("key {key} rotation")), &["x"]);
    add(&mem, "s2", 1002, None, None, &["x"]);
    let agree = |filter: &str| {
        let got = cands(&r, filter);
        assert_eq!(got, cands(&plain, filter), "candidates {filter:?}");
        got.iter().map(|c| c["sessionId"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(agree("deployment notes"), ["s0"], "the label is tested, not the raw title");
    assert!(agree("IOSFODNN7").is_empty(), "a redacted credential is not found");
    assert_eq!(agree("rotation"), ["s1"]);
    assert_eq!(agree("s2"), ["s2"], "a session without a title is labelled by its id");
    cached.take();
    assert_eq!(agree("rotation"), ["s1"]);
    assert_eq!(cached.take().0, 0, "nothing changed: no title read");
    mem.set_title("s1", Some("quarterly\tplanning".into()));
    assert!(agree("rotation").is_empty(), "the old label is gone with the old title");
    assert_eq!(agree("quarterly planning"), ["s1"]);
    assert_eq!(cached.take().0, 1, "the renamed session's title read once");
    mem.set_title("s1", Some(format!("again {key}")));
    assert_eq!(agree("again"), ["s1"]);
    assert!(agree("quarterly").is_empty());
    assert!(agree("IOSFODNN7").is_empty());
}

#[test]
fn unfiltered_candidates_use_the_cache_too() {
    let p = Pair::new();
    for i in 0..5 {
        add(&p.mem, &format!("s{i}"), 1000 + i, None, Some("T"), &["x"]);
    }
    p.cached.take();
    assert_eq!(cands(&p.r, ""), cands(&p.plain, ""));
    assert_eq!(p.cached.take().0, 5);
    assert_eq!(cands(&p.r, ""), cands(&p.plain, ""));
    assert_eq!(p.cached.take().0, 0);
}

/// A session source over files: `<id>.log` in a directory, one JSON line
/// each: `{"title": …}` sets the title, `{"text": …}` adds a message,
/// `{"tool": …}` is tool output (never projected). Listed in name order
/// with `createdAt` from the file's first line; fingerprinted by metadata.
struct Files(PathBuf);

impl Files {
    fn path(&self, id: &str) -> PathBuf {
        self.0.join(format!("{id}.log"))
    }
    fn lines(&self, id: &str) -> Result<Vec<Value>, HostError> {
        let text = std::fs::read_to_string(self.path(id)).map_err(|e| HostError::new(e.to_string()))?;
        text.lines().map(|l| serde_json::from_str(l).map_err(|e| HostError::new(e.to_string()))).collect()
    }
}

impl BlockingSessionQuery for Files {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .map_err(|e| HostError::new(e.to_string()))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok()?.strip_suffix(".log").map(str::to_owned))
            .collect();
        names.sort();
        Ok(names.into_iter().map(|id| SessionHeader::new(id, 1u64, Some("/work/a".into()))).collect())
    }
    fn read_title(&self, id: &str) -> Result<Option<String>, HostError> {
        Ok(self.lines(id)?.iter().rev().find_map(|l| l["title"].as_str().map(str::to_owned)))
    }
    fn read_surface(&self, id: &str) -> Result<SurfaceData, HostError> {
        let texts: Vec<String> = self.lines(id)?.iter().filter_map(|l| l["text"].as_str().map(str::to_owned)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        Ok(conversation(id, Some("/work/a"), &refs).into())
    }
    fn fingerprints(&self, ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        Ok(Some(
            ids.iter().map(|id| std::fs::metadata(self.path(id)).ok().map(|m| Fingerprint::of_metadata(&m))).collect(),
        ))
    }
}

fn write(dir: &Path, id: &str, lines: &[Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join(format!("{id}.log")), text).unwrap();
}

fn append(dir: &Path, id: &str, line: Value) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(dir.join(format!("{id}.log"))).unwrap();
    writeln!(f, "{line}").unwrap();
}

#[test]
fn file_source_changes_between_two_queries() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "a",
        &[json!({"title": "alpha plan"}), json!({"text": "we chose zstd"}), json!({"tool": "secret tool output"})],
    );
    write(d, "b", &[json!({"title": "beta"}), json!({"text": "nothing here"})]);
    let files = Arc::new(Blocking::new(Files(d.to_owned())));
    let counting = Arc::new(Counting::new(Arc::clone(&files), true));
    let r = Resolver::new(counting.clone(), Config::default());
    let plain = Resolver::new(Arc::new(Counting::new(files, false)), Config::default());
    let same = |filter: &str, query: &str| {
        assert_eq!(cands(&r, filter), cands(&plain, filter));
        let a: Vec<Value> = found(&r, query).iter().map(SearchResult::to_json).collect();
        let b: Vec<Value> = found(&plain, query).iter().map(SearchResult::to_json).collect();
        assert_eq!(a, b);
        a
    };
    same("a", "zstd");
    counting.take();
    same("a", "zstd");
    assert_eq!(counting.take(), (0, 0));
    assert!(same("a", "secret tool").is_empty(), "tool output never matches");

    // Appended: new title and text.
    append(d, "a", json!({"title": "alpha final"}));
    append(d, "a", json!({"text": "then brotli"}));
    assert_eq!(cands(&r, "final")[0]["label"], "alpha final");
    assert_eq!(ids(&found(&r, "brotli")), ["a"]);
    same("alpha", "brotli");
    // Truncated to its first two lines.
    let f = std::fs::OpenOptions::new().write(true).open(d.join("a.log")).unwrap();
    let len = format!("{}\n{}\n", json!({"title": "alpha plan"}), json!({"text": "we chose zstd"})).len();
    f.set_len(len as u64).unwrap();
    drop(f);
    assert_eq!(cands(&r, "alpha")[0]["label"], "alpha plan");
    assert!(found(&r, "brotli").is_empty());
    same("alpha", "zstd");
    // Replaced by a new file (new inode) of the same size.
    let tmp = d.join("a.tmp");
    std::fs::write(&tmp, format!("{}\n{}\n", json!({"title": "omega plan"}), json!({"text": "we chose lz4d"})))
        .unwrap();
    std::fs::rename(&tmp, d.join("a.log")).unwrap();
    assert_eq!(cands(&r, "plan")[0]["label"], "omega plan");
    assert_eq!(ids(&found(&r, "lz4d")), ["a"]);
    same("plan", "zstd");
    // Deleted.
    std::fs::remove_file(d.join("b.log")).unwrap();
    assert!(cands(&r, "beta").is_empty());
    assert!(found(&r, "nothing").is_empty());
    // Newly created.
    write(d, "c", &[json!({"title": "gamma"}), json!({"text": "fresh words"})]);
    assert_eq!(cands(&r, "gamma")[0]["sessionId"], "c");
    assert_eq!(ids(&found(&r, "fresh")), ["c"]);
    same("", "words");
}

fn dsh_surface(id: &str, cwd: &str) -> Value {
    json!({
        "session": {"id": id, "createdAt": 1, "cwd": cwd},
        "capturedThroughSeq": 3,
        "events": [
            {"seq": 0, "type": "user/message", "data": {"role": "user",
                "content": [{"type": "text", "text": "Please fix the Ünïcode bug"}], "source": {"kind": "user"}}},
            {"seq": 1, "type": "assistant/message", "data": {"message": {"role": "assistant",
                "content": [{"type": "reasoning", "text": "hidden reasoning wombat"},
                            {"type": "text", "text": "Done in PR1137."}]}}},
            {"seq": 2, "type": "tool/result", "data": {"content": [{"type": "text", "text": "tool said platypus"}]}},
            {"seq": 3, "type": "user/message", "data": {"role": "user",
                "content": [{"type": "text", "text": "checkpoint: 会话摘要在这里"}],
                "source": {"kind": "plugin", "plugin": "compact"}}}
        ]
    })
}

#[test]
fn search_reads_only_projected_text() {
    let q = MemoryQuery::new();
    q.add_session(SessionHeader::new("d1", 1u64, Some("/work/a".into())));
    q.set_surface("d1", dsh_surface("d1", "/work/a"));
    let r = Resolver::new(Arc::new(q), Config::default());
    assert!(found(&r, "wombat").is_empty(), "reasoning never matches");
    assert!(found(&r, "platypus").is_empty(), "tool output never matches");
    let hit = &found(&r, "1137")[0];
    assert_eq!((hit.field, hit.message_index), (MatchField::Message, Some(1)));
    assert_eq!(hit.snippet, "Done in PR1137.");
    let hit = &found(&r, "摘要")[0];
    assert_eq!(hit.message_index, Some(2), "checkpoints are searched; CJK substrings match");
    let hit = &found(&r, "ÜNÏCODE")[0];
    assert_eq!(hit.snippet, "Please fix the Ünïcode bug", "case-insensitive beyond ASCII");
    assert_eq!(hit.candidate.mention.as_deref(), Some(format_mention("d1", Some("d1")).as_str()));
    assert!(found(&r, "   ").is_empty(), "a blank query finds nothing");
}

#[test]
fn search_ranks_title_phrase_scattered_then_cwd_and_recency() {
    let q = MemoryQuery::new();
    add(&q, "scattered", 9000, Some("/work/a"), None, &["the cache is warm", "an index of titles"]);
    add(&q, "phrase-old", 1000, Some("/work/a"), None, &["intro", "we need a title index here"]);
    add(&q, "phrase-new", 2000, Some("/work/a"), None, &["a title index, finally"]);
    add(&q, "phrase-other-cwd", 8000, Some("/elsewhere"), None, &["title index"]);
    add(&q, "in-title", 10, Some("/elsewhere"), Some("The Title Index design"), &["unrelated"]);
    add(&q, "me", 1, Some("/work/a"), Some("title index"), &["title index"]);
    add(&q, "none", 1, Some("/work/a"), None, &["nothing to see"]);
    let r = Resolver::new(Arc::new(q), Config::default());
    let results = found(&r, "Title  index");
    assert_eq!(ids(&results), ["in-title", "phrase-new", "phrase-old", "phrase-other-cwd", "scattered"]);
    assert_eq!(results[0].field, MatchField::Title);
    assert_eq!(results[2].message_index, Some(1));
    assert_eq!(results[4].message_index, Some(1), "the message with most words, first of those");
    let limited =
        block_on(r.search(&target(), "title index", &SearchOptions { limit: Some(2), ..Default::default() }, None));
    assert_eq!(ids(&limited.unwrap()), ["in-title", "phrase-new"]);
    let scoped = SearchOptions { scope: SearchScope::SameCwd, ..Default::default() };
    let scoped = block_on(r.search(&target(), "title index", &scoped, None)).unwrap();
    assert_eq!(ids(&scoped), ["phrase-new", "phrase-old", "scattered"]);
    let bad = block_on(r.search(&target(), "x", &SearchOptions { limit: Some(0), ..Default::default() }, None));
    assert_eq!(bad.unwrap_err().code(), ErrorCode::InvalidReference);
}

#[test]
fn search_snippets_are_cut_around_the_hit() {
    let q = MemoryQuery::new();
    let long = format!("{} needle {}", "word ".repeat(100), "tail ".repeat(100));
    add(&q, "s", 1, None, None, &[&long]);
    let r = Resolver::new(Arc::new(q), Config::default());
    let s = &found(&r, "NEEDLE")[0].snippet;
    assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
    assert!(s.contains("word needle tail"), "{s}");
    assert!(s.chars().count() < 160, "{s}");
}

/// `sessions` given to a memory query (for a resolver) and to the index
/// alone.
fn both(sessions: &[Session]) -> (Resolver, Index) {
    let q = MemoryQuery::new();
    for s in sessions {
        add_session(&q, s);
    }
    (Resolver::new(Arc::new(q), Config::default()), Index::build(sessions.to_vec()))
}

/// `s` given to a memory query, as [`add`] gives a session.
fn add_session(q: &MemoryQuery, s: &Session) {
    let texts: Vec<&str> = s.texts.iter().map(String::as_str).collect();
    let h = &s.header;
    add(q, &h.id, h.created_at.as_u64().unwrap(), h.cwd.as_deref(), s.title.as_deref(), &texts);
}

fn session(id: &str, created: u64, cwd: Option<&str>, title: Option<&str>, texts: &[&str]) -> Session {
    Session {
        header: SessionHeader::new(id, created, cwd.map(Into::into)),
        title: title.map(Into::into),
        texts: texts.iter().map(|t| (*t).to_owned()).collect(),
    }
}

/// The index alone's answer to `query` (the default limit, the target of
/// these tests).
fn found_alone(index: &Index, query: &str) -> Vec<Found> {
    index.search(&target(), query, 50).unwrap()
}

/// A resolver's results as the index alone gives them.
fn as_found(results: &[SearchResult]) -> Vec<Found> {
    let found = results.iter().map(|r| Found {
        id: r.candidate.session_id.clone(),
        field: r.field,
        snippet: r.snippet.clone(),
        message_index: r.message_index,
    });
    found.collect()
}

/// The index ranks and cuts without a resolver: tiers, then the target's
/// cwd, then newer; the snippet around the hit; as the resolver answers.
#[test]
fn the_index_alone_ranks_and_snippets_as_the_resolver() {
    let long = format!("{} needle {}", "word ".repeat(100), "tail ".repeat(100));
    let sessions = [
        session("scattered", 9000, Some("/work/a"), None, &["the cache is warm", "an index of titles"]),
        session("phrase-old", 1000, Some("/work/a"), None, &["intro", "we need a title index here"]),
        session("phrase-new", 2000, Some("/work/a"), None, &["a title index, finally"]),
        session("phrase-other-cwd", 8000, Some("/elsewhere"), None, &["title index"]),
        session("in-title", 10, Some("/elsewhere"), Some("The Title Index design"), &["unrelated"]),
        session("none", 1, Some("/work/a"), None, &["nothing to see"]),
        session("long", 1, None, None, &[&long]),
        session("id-title-index-7", 1, Some("/x"), None, &["no words here"]),
        session("in-cwd", 1, Some("/srv/title index"), None, &["no words here"]),
    ];
    let (r, index) = both(&sessions);
    let ids = |f: &[Found]| f.iter().map(|f| f.id.clone()).collect::<Vec<_>>();
    let results = found_alone(&index, "Title  index");
    assert_eq!(
        ids(&results),
        ["in-title", "phrase-new", "phrase-old", "phrase-other-cwd", "in-cwd", "scattered", "id-title-index-7"]
    );
    assert_eq!((results[0].field, results[0].snippet.as_str()), (MatchField::Title, "The Title Index design"));
    assert_eq!((results[2].field, results[2].message_index), (MatchField::Message, Some(1)));
    assert_eq!((results[4].field, results[4].snippet.as_str()), (MatchField::Cwd, "/srv/title index"));
    assert_eq!(results[5].message_index, Some(1), "the message with most words, first of those");
    assert_eq!((results[6].field, results[6].message_index), (MatchField::Id, None), "words apart in the id");
    assert_eq!(ids(&index.search(&target(), "title index", 2).unwrap()), ["in-title", "phrase-new"]);
    let needle = &found_alone(&index, "NEEDLE")[0].snippet;
    assert!(needle.starts_with('…') && needle.ends_with('…') && needle.contains("word needle tail"), "{needle}");
    for query in ["Title  index", "needle", "index", "work", "nothing", "absent", "   "] {
        assert_eq!(found_alone(&index, query), as_found(&found(&r, query)), "{query:?}");
    }
    assert!(found_alone(&index, "absent").is_empty() && found_alone(&index, " ").is_empty());
}

/// The index alone over sessions enough to train its dictionary answers
/// every query as the resolver does over the same sessions.
#[test]
fn the_index_alone_answers_a_large_corpus_as_the_resolver() {
    let (r, index) = both(&large_sessions());
    let (count, text, bytes, _) = index.stats();
    assert_eq!(count, 48);
    assert!(bytes < text, "compressed: {bytes} of {text}");
    let hits = found_alone(&index, "search index");
    assert_eq!(hits.iter().take(2).map(|h| h.id.as_str()).collect::<Vec<_>>(), ["s07", "s03"]);
    for query in ["search index", "search index works", "index works", "发布", "the", "session 4", "zzzqqq"] {
        // (Twice: the second search reads the filters it kept.)
        for _ in 0..2 {
            assert_eq!(found_alone(&index, query), as_found(&found(&r, query)), "{query:?}");
        }
    }
    let stats = r.search_index_stats();
    assert_eq!((stats.sessions, stats.text_bytes), (count, text));
    assert_eq!(search_index::Index::build(Vec::new()).search(&target(), "x", 5).unwrap(), []);
}

/// A host with its own search.
struct OwnSearch(MemoryQuery);

impl SessionQuery for OwnSearch {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        Box::pin(async { Err(HostError::new("the built-in index must not list")) })
    }
    fn read_title<'a>(&'a self, id: &'a str) -> QueryFuture<'a, Option<String>> {
        self.0.read_title(id)
    }
    fn read_surface<'a>(&'a self, id: &'a str) -> QueryFuture<'a, SurfaceData> {
        self.0.read_surface(id)
    }
    fn search<'a>(&'a self, request: &'a SearchRequest) -> QueryFuture<'a, Option<Vec<SearchResult>>> {
        let answer = json!([
            {"sessionId": "me", "createdAt": 1, "snippet": "self"},
            {"sessionId": "pg-1", "label": "From Postgres", "createdAt": 5, "snippet": request.query, "messageIndex": 3},
            {"sessionId": "pg-2", "createdAt": 4, "cwd": "/x", "field": "title"}
        ]);
        Box::pin(async move { SearchResult::list_from_json(&answer).map(Some).map_err(HostError::new) })
    }
}

#[test]
fn a_host_search_replaces_the_built_in_index() {
    let r = Resolver::new(Arc::new(OwnSearch(MemoryQuery::new())), Config::default());
    let results = found(&r, "anything");
    assert_eq!(ids(&results), ["pg-1", "pg-2"], "the target is dropped");
    assert_eq!(
        results[0].to_json(),
        json!({"sessionId": "pg-1", "label": "From Postgres", "createdAt": 5,
        "mention": format_mention("pg-1", Some("From Postgres")), "snippet": "anything", "field": "message", "messageIndex": 3})
    );
    let one =
        block_on(r.search(&target(), "q", &SearchOptions { limit: Some(1), ..Default::default() }, None)).unwrap();
    assert_eq!(ids(&one), ["pg-1"]);
}

/// A surface read that never completes.
struct Hangs(MemoryQuery);

impl SessionQuery for Hangs {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        self.0.list_sessions()
    }
    fn read_title<'a>(&'a self, id: &'a str) -> QueryFuture<'a, Option<String>> {
        self.0.read_title(id)
    }
    fn read_surface<'a>(&'a self, _id: &'a str) -> QueryFuture<'a, SurfaceData> {
        Box::pin(futures::future::pending())
    }
}

#[test]
fn search_cancellation_is_prompt() {
    let q = MemoryQuery::new();
    add(&q, "s", 1, None, None, &["x"]);
    let r = Resolver::new(Arc::new(Hangs(q)), Config::default());
    let cancel = CancelToken::new();
    let c2 = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        c2.cancel();
    });
    let started = std::time::Instant::now();
    let err = block_on(r.search(&target(), "x", &SearchOptions::default(), Some(&cancel))).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Cancelled);
    // (against a search that would hang: generous for a loaded machine)
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    let err = block_on(r.search(&target(), "x", &SearchOptions::default(), Some(&cancel))).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Cancelled, "an already cancelled token");
}

#[test]
fn a_session_whose_surface_fails_is_found_by_title_and_never_cached() {
    let p = Pair::new();
    add(&p.mem, "s", 1, None, Some("Broken one"), &["x"]);
    p.mem.fail_surface("s", "unreadable");
    assert_eq!(ids(&found(&p.r, "broken")), ["s"]);
    p.cached.take();
    found(&p.r, "broken");
    assert_eq!(p.cached.take().1, 1, "read again");
    assert_eq!(p.r.search_index_stats().sessions, 0);
}

#[test]
fn the_on_disk_cache_starts_warm_and_is_ignored_when_it_does_not_match() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("discovery.cache");
    let index = dir.path().join("discovery.index");
    let p = Pair::new();
    for i in 0..10 {
        add(&p.mem, &format!("s{i}"), 1000 + i, Some("/work/a"), Some(&format!("Title {i}")), &[&format!("body {i}")]);
    }
    p.check("title", "body");
    p.r.save_discovery_cache(DiscoveryCachePart::Titles, &path).unwrap();
    p.r.save_discovery_cache(DiscoveryCachePart::Index, &index).unwrap();
    let mut leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    leftovers.sort();
    assert_eq!(leftovers, ["discovery.cache", "discovery.index"], "no temporary file is left behind");
    // Each part is refused in the other's place.
    let r = Resolver::new(p.cached.clone(), Config::default());
    assert!(!r.load_discovery_cache(DiscoveryCachePart::Index, &path));
    assert!(!r.load_discovery_cache(DiscoveryCachePart::Titles, &index));

    // A fresh resolver over the same query starts warm: nothing is read.
    let warm = || {
        let r = Resolver::new(p.cached.clone(), Config::default());
        let titles = r.load_discovery_cache(DiscoveryCachePart::Titles, &path);
        assert!(r.load_discovery_cache(DiscoveryCachePart::Index, &index));
        (titles, r)
    };
    let (used, r) = warm();
    assert!(used);
    assert!(!r.discovery_cache_changed(DiscoveryCachePart::Titles));
    p.cached.take();
    assert_eq!(cands(&r, "title"), cands(&p.plain, "title"));
    assert_eq!(ids(&found(&r, "body 7")), ["s7"]);
    assert_eq!(p.cached.take(), (0, 0));
    for part in [DiscoveryCachePart::Titles, DiscoveryCachePart::Index] {
        assert!(!r.discovery_cache_changed(part), "everything came from the files");
    }
    // Only titles: a filtered listing needs nothing else, and the index is
    // not marked changed.
    let r = Resolver::new(p.cached.clone(), Config::default());
    assert!(r.load_discovery_cache(DiscoveryCachePart::Titles, &path));
    assert_eq!(cands(&r, "title"), cands(&p.plain, "title"));
    assert_eq!(p.cached.take(), (0, 0));
    assert!(!r.discovery_cache_changed(DiscoveryCachePart::Index));
    // A session changed since the file was written is read again.
    p.mem.set_title("s2", Some("Changed".into()));
    let (_, r) = warm();
    assert_eq!(cands(&r, "changed")[0]["sessionId"], "s2");
    assert!(r.discovery_cache_changed(DiscoveryCachePart::Titles));

    let good = std::fs::read(&path).unwrap();
    let rejected = |bytes: &[u8], what: &str| {
        std::fs::write(&path, bytes).unwrap();
        let (used, r) = warm();
        assert!(!used, "{what} is ignored");
        p.cached.take();
        assert_eq!(cands(&r, "title"), cands(&p.plain, "title"), "{what}: still the right answer");
        assert!(p.cached.take().0 > 0, "{what}: read again");
    };
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    rejected(&flipped, "a corrupted file");
    rejected(&good[..good.len() / 2], "a file written halfway");
    rejected(b"", "an empty file");
    rejected(b"not a cache at all", "a foreign file");
    // 6: filters without the keys of digits (format 7).
    for version in [1u32, 2, 6, 99] {
        let mut other = b"DSRDISC\0".to_vec();
        other.extend_from_slice(&version.to_le_bytes());
        rejected(&zstd::bulk::compress(&other, 1).unwrap(), "a file of another format version");
    }
    std::fs::remove_file(&path).unwrap();
    let (used, _) = warm();
    assert!(!used, "a missing file");
}

#[test]
fn with_redact_secrets_search_neither_finds_nor_shows_a_credential() {
    let key = "AKIAIOSFODNN7EXAMPLE";
    let q = Arc::new(MemoryQuery::new());
    add(
        &q,
        "leaky",
        5,
        Some("/work/a"),
        Some(&format!("deploy with {key}")),
        &[&format!("the key is {key} ok"), "fine"],
    );
    let plain = Resolver::new(q.clone(), Config::default());
    let hardened = Resolver::new(q.clone(), Config::from_json(&json!({"redactSecrets": true})).unwrap());
    // Without the option the credential is text like any other.
    let hit = found(&plain, key);
    assert_eq!(ids(&hit), ["leaky"]);
    assert!(hit[0].snippet.contains(key));
    // With it, it was redacted before indexing: not found by its value, and
    // no snippet or label shows it, while the rest of the text is found.
    assert!(found(&hardened, key).is_empty());
    assert!(found(&hardened, "IOSFODNN7").is_empty());
    for query in ["the key is", "deploy with", "redacted"] {
        let hits = found(&hardened, query);
        assert_eq!(ids(&hits), ["leaky"], "{query}");
        let shown = format!("{} {}", hits[0].snippet, hits[0].candidate.label);
        assert!(!shown.contains(key), "{query}: {shown}");
    }
    // An on-disk cache indexed without redaction is never used with it, nor
    // the other way round.
    let dir = tempfile::tempdir().unwrap();
    let (open, redacted) = (dir.path().join("plain.bin"), dir.path().join("redacted.bin"));
    let index = DiscoveryCachePart::Index;
    plain.save_discovery_cache(index, &open).unwrap();
    hardened.save_discovery_cache(index, &redacted).unwrap();
    let fresh_hardened = Resolver::new(q.clone(), Config::from_json(&json!({"redactSecrets": true})).unwrap());
    assert!(!fresh_hardened.load_discovery_cache(index, &open));
    assert!(fresh_hardened.load_discovery_cache(index, &redacted));
    assert!(found(&fresh_hardened, key).is_empty());
    assert!(!Resolver::new(q.clone(), Config::default()).load_discovery_cache(index, &redacted));
}

/// `n` bytes of words drawn with a skew from 5,000 random ones
/// (deterministic), so that sessions share their vocabulary as real ones
/// do and the index trains its compression dictionary.
fn prose(seed: u64, n: usize) -> String {
    let x = std::cell::Cell::new(0x9e37_79b9_7f4a_7c15_u64);
    let next = || {
        let mut v = x.get();
        v ^= v << 13;
        v ^= v >> 7;
        v ^= v << 17;
        x.set(v);
        v as usize
    };
    let words: Vec<String> = (0..5000)
        .map(|_| {
            (0..3 + next() % 7)
                .map(|_| char::from(b"etaoinshrdlucmfwypvbgkqjxz"[next() % 26 * (next() % 26) / 26]))
                .collect()
        })
        .collect();
    // The same words for every text, each text its own draw of them.
    x.set(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
    let mut out = String::new();
    while out.len() < n {
        out.push_str(&words[next() % 5000 * (next() % 5000) / 5000]);
        out.push(if next() % 9 == 0 { '\n' } else { ' ' });
    }
    out
}

/// 48 sessions of 10 messages (2.4 MB of text, enough for the index to
/// train its dictionary), with a few known texts among them.
fn large(p: &Pair) {
    for s in large_sessions() {
        add_session(&p.mem, &s);
    }
}

/// The sessions of [`large`].
fn large_sessions() -> Vec<Session> {
    let mut sessions = Vec::new();
    for i in 0..48u64 {
        let mut texts: Vec<String> = (0..10).map(|j| prose(i * 10 + j, 5000)).collect();
        match i {
            // A phrase split across two messages: its words, apart.
            3 => {
                texts[4].push_str(" the search");
                texts[5].insert_str(0, "Index works ");
            }
            7 => texts[2].push_str(" the Search Index works, also 发布版本 here"),
            11 => texts[9].push_str(" ÉCOLE naïve, PR1137"),
            _ => {}
        }
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let cwd = if i % 3 == 0 { "/work/a" } else { "/work/b" };
        sessions.push(session(&format!("s{i:02}"), 1000 + i, Some(cwd), Some(&format!("Session {i}")), &texts));
    }
    sessions
}

#[test]
fn a_large_index_answers_exactly_as_an_uncached_search_and_survives_the_cache_file() {
    let p = Pair::new();
    large(&p);
    let queries = ["search index", "search index works", "index works", "发布", "école", "1137", "the", "session 4"];
    for q in queries {
        p.check("", q);
    }
    // The phrase split across messages is found as words apart, after the
    // session holding it whole.
    let hits = found(&p.r, "search index");
    assert_eq!(ids(&hits)[..2], ["s07", "s03"]);
    assert_eq!((hits[1].field, hits[1].message_index), (MatchField::Message, Some(4)));
    let stats = p.r.search_index_stats();
    assert_eq!(stats.sessions, 48);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("discovery.cache");
    let titles = dir.path().join("titles.cache");
    p.r.save_discovery_cache(DiscoveryCachePart::Index, &path).unwrap();
    p.r.save_discovery_cache(DiscoveryCachePart::Titles, &titles).unwrap();
    let r = Resolver::new(p.cached.clone(), Config::default());
    assert!(r.load_discovery_cache(DiscoveryCachePart::Index, &path));
    assert!(r.load_discovery_cache(DiscoveryCachePart::Titles, &titles));
    assert_eq!(r.search_index_stats(), stats, "the dictionary came back with the texts");
    p.cached.take();
    for q in queries {
        let a: Vec<Value> = found(&r, q).iter().map(SearchResult::to_json).collect();
        let b: Vec<Value> = found(&p.plain, q).iter().map(SearchResult::to_json).collect();
        assert_eq!(a, b, "{q:?} from the file");
    }
    assert_eq!(p.cached.take(), (0, 0), "nothing read again");
    // A session changed since is built with the loaded dictionary.
    p.mem.set_surface("s05", conversation("s05", Some("/work/b"), &["a new text about the search index"]));
    let fresh = found(&r, "new text about");
    assert_eq!(ids(&fresh), ["s05"]);
    assert_eq!(fresh[0].snippet, "a new text about the search index");

    // Files of the formats before (1: no dictionaries, trigrams across
    // whitespace; 2: both parts in one file; 3: the index in one zstd
    // frame, decoded whole) are ignored as a whole, and everything is read
    // and indexed again; so is this file's layout under their numbers, and
    // their zstd framing.
    let good = std::fs::read(&path).unwrap();
    for version in [1u32, 2, 3] {
        let mut older = good.clone();
        older[8..12].copy_from_slice(&version.to_le_bytes());
        let mut framed = Vec::new();
        let mut encoder = zstd::stream::Encoder::new(&mut framed, 1).unwrap();
        encoder.include_checksum(true).unwrap();
        std::io::Write::write_all(&mut encoder, &older).unwrap();
        encoder.finish().unwrap();
        for file in [older, framed] {
            std::fs::write(&path, &file).unwrap();
            let r = Resolver::new(p.cached.clone(), Config::default());
            assert!(!r.load_discovery_cache(DiscoveryCachePart::Index, &path), "a format-{version} file");
            p.cached.take();
            let a: Vec<Value> = found(&r, "search index").iter().map(SearchResult::to_json).collect();
            let b: Vec<Value> = found(&p.plain, "search index").iter().map(SearchResult::to_json).collect();
            assert_eq!(a, b);
            assert_eq!(p.cached.take().1, 48, "rebuilt from the sessions");
        }
    }
    std::fs::write(&path, &good).unwrap();
    assert!(Resolver::new(p.cached.clone(), Config::default()).load_discovery_cache(DiscoveryCachePart::Index, &path));
}

/// Where an index file's directory and its stored region (every filter,
/// then every text) start: after the header (magic, format, library
/// version, part, `redactSecrets`) and the lengths and checksum (three
/// numbers).
fn index_layout(file: &[u8]) -> (usize, usize) {
    let head = 8 + 4 + 8 + env!("CARGO_PKG_VERSION").len() + 2;
    let directory = u64::from_le_bytes(file[head..head + 8].try_into().unwrap()) as usize;
    (head + 24, head + 24 + directory)
}

/// Writes `bytes` to `path` as the cache does: to a temporary file renamed
/// over it (a process holding the old file keeps the old one).
fn replace(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn the_index_file_is_read_in_place_and_a_damaged_text_is_never_a_wrong_answer() {
    let p = Pair::new();
    large(&p);
    p.check("", "the");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.bin");
    p.r.save_discovery_cache(DiscoveryCachePart::Index, &path).unwrap();
    let good = std::fs::read(&path).unwrap();
    let (directory, texts) = index_layout(&good);
    assert!(directory < texts && texts < good.len());
    assert!(good.len() - texts > 2 * (texts - directory), "the filters and texts are most of the file");
    // Every session verified on its text ("the" rules out none; the limit
    // is above their number), so a damaged text cannot go unnoticed.
    let queries = ["the", "search index", "1137", "发布", "session 4"];
    let every = SearchOptions { limit: Some(100), ..Default::default() };
    let same = |r: &Resolver, what: &str| {
        for q in queries {
            let a: Vec<Value> =
                block_on(r.search(&target(), q, &every, None)).unwrap().iter().map(SearchResult::to_json).collect();
            let b: Vec<Value> = block_on(p.plain.search(&target(), q, &every, None))
                .unwrap()
                .iter()
                .map(SearchResult::to_json)
                .collect();
            assert_eq!(a, b, "{what}: {q:?}");
        }
    };
    let load = |bytes: &[u8]| {
        replace(&path, bytes);
        let r = Resolver::new(p.cached.clone(), Config::default());
        let used = r.load_discovery_cache(DiscoveryCachePart::Index, &path);
        p.cached.take();
        (used, r)
    };
    let surfaces = || p.cached.take().1;

    let (used, r) = load(&good);
    assert!(used);
    same(&r, "intact");
    assert_eq!(surfaces(), 0, "every text read from the file");

    // A byte flipped in the directory (its start, middle, end): the file
    // is ignored, every session indexed again.
    for at in [directory + 3, (directory + texts) / 2, texts - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x20;
        let (used, r) = load(&bad);
        assert!(!used, "directory byte {at}");
        same(&r, "a damaged directory");
        assert_eq!(surfaces(), 48);
    }

    // A byte flipped in the first stored filter, or in the last stored
    // text (the file's last byte): the file is used, that one session is
    // indexed again from its source, the answers are the same; the index
    // changed, and saved again it is whole.
    for (at, what) in [(texts + 10, "a damaged filter"), (good.len() - 1, "a damaged text")] {
        let mut bad = good.clone();
        bad[at] ^= 0x20;
        let (used, r) = load(&bad);
        assert!(used, "{what}: the directory is intact");
        same(&r, what);
        assert_eq!(surfaces(), 1, "{what}: only the damaged session");
        assert!(r.discovery_cache_changed(DiscoveryCachePart::Index));
        r.save_discovery_cache(DiscoveryCachePart::Index, &path).unwrap();
        let r = Resolver::new(p.cached.clone(), Config::default());
        assert!(r.load_discovery_cache(DiscoveryCachePart::Index, &path));
        p.cached.take();
        same(&r, "saved after the repair");
        assert_eq!(surfaces(), 0);
    }

    // Truncated inside the stored texts: ignored as a whole.
    let (used, r) = load(&good[..texts + 100]);
    assert!(!used, "a truncated file");
    same(&r, "a truncated file");
    assert_eq!(surfaces(), 48);

    // Truncated after it was loaded: the sessions whose filters or texts
    // it lost are indexed from their sessions again.
    let (used, r) = load(&good);
    assert!(used);
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len((texts + 100) as u64).unwrap();
    same(&r, "truncated under a loaded index");
    assert!(surfaces() >= 47, "every text past the cut");

    // Replaced on disk after it was loaded (another process saved, or
    // wrote garbage): the loaded resolver keeps reading the file it opened.
    let (used, r) = load(&good);
    assert!(used);
    replace(&path, b"not an index at all");
    same(&r, "replaced after loading");
    assert_eq!(surfaces(), 0, "read from the old file");
    // Saved after loading, while its texts are still in the old file: they
    // are written back, and a new resolver reads them from the new file.
    r.save_discovery_cache(DiscoveryCachePart::Index, &path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), good.len() as u64);
    let r = Resolver::new(p.cached.clone(), Config::default());
    assert!(r.load_discovery_cache(DiscoveryCachePart::Index, &path));
    p.cached.take();
    same(&r, "saved after loading");
    assert_eq!(surfaces(), 0);
}

/// `MemoryQuery` shares its listing with every version until a change, and
/// that listing is always its `list_sessions` with its `fingerprints`.
#[test]
fn the_memory_query_shares_its_listing_until_it_changes() {
    let q = MemoryQuery::new();
    let agree = |q: &MemoryQuery, what: &str| {
        let shared = block_on(q.shared_listing()).unwrap().unwrap();
        let listed = block_on(q.list_sessions()).unwrap();
        let ids: Vec<String> = listed.iter().map(|s| s.id.clone()).collect();
        let fps = block_on(q.fingerprints(&ids)).unwrap().unwrap();
        assert_eq!(shared.sessions(), &listed[..], "{what}");
        assert_eq!(shared.fingerprints(), &fps[..], "{what}");
        shared
    };
    q.add_session(SessionHeader::new("a", 1u64, None));
    q.add_session(SessionHeader::new("b", 2u64, Some("/w".into())));
    let first = agree(&q, "two sessions");
    assert!(agree(&q, "unchanged").ptr_eq(&first), "nothing changed: the same listing");
    q.set_title("a", Some("renamed".into()));
    let retitled = agree(&q, "a title set");
    assert!(!retitled.ptr_eq(&first));
    assert_ne!(retitled.fingerprints()[0], first.fingerprints()[0], "a's version moved");
    assert_eq!(retitled.fingerprints()[1], first.fingerprints()[1], "b's did not");
    q.remove_session("b");
    assert_eq!(agree(&q, "b removed").sessions().len(), 1);
    q.fail_listing("down");
    assert!(block_on(q.shared_listing()).is_err(), "a failing listing fails shared too");
}

/// Searches over a source that shares its listing reuse what the last one
/// made of the same sessions (their docs and packed fields) while nothing
/// changed; every change between two searches (a title, a body, a new
/// session, a cleared cache, another target or scope) still shows in the
/// next answer, which is always the answer of a resolver that caches
/// nothing.
#[test]
fn repeated_searches_over_a_shared_listing_see_every_change() {
    let mem = Arc::new(MemoryQuery::new());
    let r = Resolver::new(mem.clone(), Config::default());
    let plain = Resolver::new(Arc::new(Counting::new(Arc::clone(&mem), false)), Config::default());
    add(&mem, "s1", 1, Some("/work/a"), Some("Parser work"), &["the lexer is slow", "fix it"]);
    add(&mem, "s2", 2, Some("/work/zeta"), None, &["cache keys"]);
    add(&mem, "me", 3, Some("/work/a"), Some("zeta"), &["zeta here"]);
    let search = |r: &Resolver, t: &Target, q: &str, scope: SearchScope| -> Vec<Value> {
        let opts = SearchOptions { scope, ..SearchOptions::default() };
        block_on(r.search(t, q, &opts, None)).unwrap().iter().map(SearchResult::to_json).collect()
    };
    let same_for = |t: &Target, q: &str, scope: SearchScope| -> usize {
        let a = search(&r, t, q, scope);
        assert_eq!(a, search(&plain, t, q, scope), "{q:?} for {t:?} ({scope:?})");
        a.len()
    };
    let same = |q: &str| same_for(&target(), q, SearchScope::All);
    for q in ["zeta", "lexer", "parser", "s2", "ork/ze", "nowhere", "模型"] {
        same(q);
        same(q);
    }
    assert_eq!(same("zeta"), 1, "s2 by its cwd; never the target");
    assert_eq!(same("S2"), 1, "by its id");
    mem.set_title("s1", Some("Zeta too".into()));
    assert_eq!(same("zeta"), 2, "a new title");
    mem.set_surface("s2", conversation("s2", Some("/work/zeta"), &["nothing"]));
    assert_eq!(same("cache"), 0, "a body changed");
    add(&mem, "zeta-3", 4, None, None, &["plain"]);
    assert_eq!(same("zeta"), 3, "a new session, by its id");
    r.clear_discovery_cache();
    assert_eq!(same("zeta"), 3, "after the cache was cleared");
    let other = Target::new("s1", Some("/work/zeta".into()));
    assert_eq!(same_for(&other, "zeta", SearchScope::All), 3, "another target: the first target now");
    assert_eq!(same_for(&other, "zeta", SearchScope::SameCwd), 1, "another scope");
    assert_eq!(same("zeta"), 3);
}
