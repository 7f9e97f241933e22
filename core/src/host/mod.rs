//! The host interface: the session query a host implements (docs/contract.md §9), its
//! blocking adapter, and the values it exchanges with the library — every
//! word the trait speaks lives here, beside it: sessions and targets (this
//! file), surfaces (`surface.rs`), fingerprints (`fingerprint.rs`), and
//! the requests and answers of search and discovery (`search.rs`), and the
//! rule that ranks sessions by the target's cwd (`rank.rs`), which
//! discovery and the search index both apply.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Number, Value};

use crate::error::HostError;

mod fingerprint;
mod pinned;
pub(crate) mod rank;
mod search;
mod surface;

pub(crate) use fingerprint::no_fingerprints;
pub use fingerprint::Fingerprint;
pub use pinned::PinnedListing;
pub use search::{
    limit_from_json, scope_from_json, Candidate, IndexProgress, MatchField, SearchAnswer, SearchIndexStats,
    SearchOptions, SearchRequest, SearchResult, SearchScope,
};
pub(crate) use surface::with_projection;
pub use surface::{BudgetedSurface, SharedBytes, StreamedItems, SurfaceAnswer, SurfaceData, SurfaceItems, SurfaceRead};

/// A boxed future returned by [`SessionQuery`] methods.
pub type QueryFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, HostError>> + Send + 'a>>;

/// The listed session that `name` means: the session whose id is `name`;
/// else, for a name given without its source's prefix (a Claude Code or
/// Codex id as the agent shows it), the one session whose id is
/// `KIND:name`; else, as git takes a short hash, the one session whose id
/// (with or without its source's prefix) starts with `name`, when `name`
/// has at least four characters. `Ok(None)` when no
/// session is meant (the caller then reports `name` missing as it would
/// any id); an [`InvalidReference`](crate::error::ErrorCode::InvalidReference)
/// error naming every `KIND:name` when several sources hold that name, or
/// a few of the ids that start with `name` and how many do when several do.
///
/// ```
/// use dsh_session_reference::{listed_session_id, SessionHeader};
/// let listed = [SessionHeader::new("a1", 1, None), SessionHeader::new("codex:b2", 2, None),
///     SessionHeader::new("claude-code:c3", 3, None), SessionHeader::new("codex:c3", 4, None),
///     SessionHeader::new("codex:5c187f31-aaaa", 5, None), SessionHeader::new("5c18ffff", 6, None)];
/// assert_eq!(listed_session_id(&listed, "a1").unwrap().as_deref(), Some("a1"));
/// assert_eq!(listed_session_id(&listed, "b2").unwrap().as_deref(), Some("codex:b2"));
/// assert_eq!(listed_session_id(&listed, "zz").unwrap(), None);
/// let err = listed_session_id(&listed, "c3").unwrap_err();
/// assert!(err.message().contains("claude-code:c3") && err.message().contains("codex:c3"));
/// // The first characters of one id, with or without its prefix.
/// assert_eq!(listed_session_id(&listed, "5c187f").unwrap().as_deref(), Some("codex:5c187f31-aaaa"));
/// assert_eq!(listed_session_id(&listed, "codex:5c1").unwrap().as_deref(), Some("codex:5c187f31-aaaa"));
/// let err = listed_session_id(&listed, "5c18").unwrap_err();
/// assert!(err.message().contains("2 sessions") && err.message().contains("5c18ffff"));
/// ```
pub fn listed_session_id(sessions: &[SessionHeader], name: &str) -> crate::error::Result<Option<String>> {
    if sessions.iter().any(|s| s.id == name) {
        return Ok(Some(name.to_owned()));
    }
    /// The id without its source's prefix (`KIND:`); `None` without one.
    fn unprefixed(id: &str) -> Option<&str> {
        id.split_once(':').filter(|(kind, _)| !kind.is_empty()).map(|(_, rest)| rest)
    }
    let prefixed: Vec<&str> =
        sessions.iter().map(|s| s.id.as_str()).filter(|id| unprefixed(id) == Some(name)).collect();
    match prefixed.as_slice() {
        [] => {}
        [one] => return Ok(Some((*one).to_owned())),
        all => {
            return Err(crate::error::Error::new(
                crate::error::ErrorCode::InvalidReference,
                format!("session {name:?} is in several sources; give one of: {}", all.join(", ")),
            ))
        }
    }
    if name.chars().count() < SHORT_ID_AT_LEAST {
        return Ok(None);
    }
    let starting: Vec<&str> = sessions
        .iter()
        .map(|s| s.id.as_str())
        .filter(|id| id.starts_with(name) || unprefixed(id).is_some_and(|rest| rest.starts_with(name)))
        .collect();
    match starting.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some((*one).to_owned())),
        all => {
            const SHOWN: usize = 5;
            let mut named = all[..all.len().min(SHOWN)].join(", ");
            if all.len() > SHOWN {
                named.push_str(&format!(" and {} more", all.len() - SHOWN));
            }
            Err(crate::error::Error::new(
                crate::error::ErrorCode::InvalidReference,
                format!("{} sessions have an id that starts with {name:?}: {named}; give more of the id", all.len()),
            ))
        }
    }
}

/// A failure to read `name`, a session that no listed session is (by
/// [`listed_session_id`]'s rule, which gave `None`), told as such: a read
/// failure's message gains what the listing found, that no listed session
/// has that id or, for a name of four characters or more, an id that starts
/// with it. Other failures are returned as they are. The rule every front
/// applies when a session it looked up in the listing cannot be read.
///
/// ```
/// use dsh_session_reference::{unlisted_session, Error, ErrorCode, HostError};
/// let failed = Error::read_failed("5c18", HostError::new("no session \"5c18\" in /sessions"));
/// let told = unlisted_session("5c18", failed);
/// assert_eq!(told.code(), ErrorCode::ReadFailed);
/// assert!(told.message().ends_with("no listed session has an id that is or starts with \"5c18\""));
/// let told = unlisted_session("ab", Error::read_failed("ab", HostError::new("gone")));
/// assert!(told.message().ends_with("no listed session has the id \"ab\""));
/// ```
pub fn unlisted_session(name: &str, failure: crate::error::Error) -> crate::error::Error {
    if failure.code() != crate::error::ErrorCode::ReadFailed {
        return failure;
    }
    let name_js = crate::json::js_string(name);
    let found = if name.chars().count() < SHORT_ID_AT_LEAST {
        format!("no listed session has the id {name_js}")
    } else {
        format!("no listed session has an id that is or starts with {name_js}")
    };
    failure.with_note(&found)
}

/// The fewest characters of an id that [`listed_session_id`] takes as its
/// first characters (as git takes a short hash of at least four).
const SHORT_ID_AT_LEAST: usize = 4;

/// The session that is about to send a message (docs/contract.md §1).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Target {
    /// The target's session id. A target may never reference itself.
    pub id: String,
    /// The target's working directory; drives candidate ranking.
    pub cwd: Option<String>,
}

impl Target {
    /// A target with an id and an optional cwd.
    pub fn new(id: impl Into<String>, cwd: Option<String>) -> Self {
        Target { id: id.into(), cwd }
    }

    /// Reads `{"id": string, "cwd"?: string | null}`.
    pub fn from_json(value: &Value) -> Result<Target, String> {
        let obj = value.as_object().ok_or("target must be an object")?;
        let id = obj.get("id").and_then(Value::as_str).ok_or("target.id must be a string")?;
        let cwd = match obj.get("cwd") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err("target.cwd must be a string or null".into()),
        };
        Ok(Target { id: id.to_owned(), cwd })
    }
}

/// One entry of `listSessions()`: `{id, createdAt, cwd?, ...}`.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionHeader {
    /// The session id (any string).
    pub id: String,
    /// Creation time, epoch milliseconds, passed through to candidates as given.
    pub created_at: Number,
    /// The session's working directory, if it has one.
    pub cwd: Option<String>,
}

impl SessionHeader {
    /// A header from its parts.
    pub fn new(id: impl Into<String>, created_at: impl Into<Number>, cwd: Option<String>) -> Self {
        SessionHeader { id: id.into(), created_at: created_at.into(), cwd }
    }

    /// Reads a header object; extra keys are ignored. A missing or non-string
    /// `id`, a non-numeric `createdAt`, or a `cwd` that is neither a string
    /// nor null is an error (a read failure of the listing).
    pub fn from_json(value: &Value) -> Result<SessionHeader, String> {
        let obj = value.as_object().ok_or("a session header must be an object")?;
        let id = obj.get("id").and_then(Value::as_str).ok_or("session header `id` must be a string")?;
        let created_at = match obj.get("createdAt") {
            Some(Value::Number(n)) => n.clone(),
            _ => return Err(format!("session header `createdAt` of {id:?} must be a number")),
        };
        let cwd = match obj.get("cwd") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(format!("session header `cwd` of {id:?} must be a string")),
        };
        Ok(SessionHeader { id: id.to_owned(), created_at, cwd })
    }

    /// Reads the array returned by `listSessions()`.
    pub fn list_from_json(value: &Value) -> Result<Vec<SessionHeader>, String> {
        value.as_array().ok_or("listSessions must return an array")?.iter().map(SessionHeader::from_json).collect()
    }

    /// Reads the array returned by `listSessions()` as JSON text (UTF-8),
    /// parsed as `JSON.parse` parses it ([`crate::json::parse_js`]: numbers
    /// are doubles, nesting is limited to [`crate::json::MAX_PARSE_DEPTH`]).
    /// Every front that receives the listing as text reads it here.
    pub fn list_from_json_text(text: &[u8]) -> Result<Vec<SessionHeader>, String> {
        let text = std::str::from_utf8(text).map_err(|e| format!("the session list is not UTF-8: {e}"))?;
        let value = crate::json::parse_js(text).map_err(|e| format!("the session list is not JSON: {e}"))?;
        SessionHeader::list_from_json(&value)
    }

    /// `{"id","createdAt","cwd"?}`: the header as a host lists it.
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("id".into(), Value::from(self.id.as_str()));
        m.insert("createdAt".into(), Value::Number(self.created_at.clone()));
        if let Some(cwd) = &self.cwd {
            m.insert("cwd".into(), Value::from(cwd.as_str()));
        }
        Value::Object(m)
    }
}

/// A listing shared rather than copied, with each listed session's
/// [`Fingerprint`] as of that listing (same order, same length): what a
/// source that keeps its listing in memory gives
/// [`SessionQuery::shared_listing`], so that a query with nothing changed
/// copies nothing (an `@` menu queries on every keystroke).
#[derive(Clone, Debug, Default)]
pub struct SharedListing {
    sessions: Arc<[SessionHeader]>,
    fingerprints: Arc<[Option<Fingerprint>]>,
    /// This listing's serial: distinct for every listing made in the
    /// process (0: the empty default).
    serial: u64,
    /// When made from another listing by changing fingerprints only: that
    /// listing's serial and the positions whose fingerprint may differ
    /// (the sessions are the other's, shared).
    changed_from: Option<(u64, Arc<[usize]>)>,
}

/// The serial of the next listing made.
static NEXT_SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl SharedListing {
    /// A listing and its fingerprints; `None` when their lengths differ.
    pub fn new(sessions: Arc<[SessionHeader]>, fingerprints: Arc<[Option<Fingerprint>]>) -> Option<SharedListing> {
        (sessions.len() == fingerprints.len()).then(|| SharedListing {
            sessions,
            fingerprints,
            serial: NEXT_SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            changed_from: None,
        })
    }

    /// This listing with the fingerprints at `changed` (positions) replaced
    /// by `fingerprints`, sharing its sessions: a later listing in which
    /// only those sessions changed (grew or were rewritten in place), which
    /// remembers it, so that a consumer that kept what it made of this
    /// listing updates those sessions only ([`changed_since`](Self::changed_since)).
    /// The fingerprints are changed in place when no other clone of this
    /// listing holds them. `None` when a position is out of range or the
    /// lengths differ.
    pub fn with_changed(
        mut self,
        changed: Vec<usize>,
        fingerprints: Vec<Option<Fingerprint>>,
    ) -> Option<SharedListing> {
        if changed.len() != fingerprints.len() || changed.iter().any(|&i| i >= self.sessions.len()) {
            return None;
        }
        let from = self.serial;
        let mut all = match Arc::get_mut(&mut self.fingerprints) {
            Some(_) => self.fingerprints,
            None => self.fingerprints.iter().cloned().collect(),
        };
        let held = Arc::get_mut(&mut all).expect("held by this listing alone");
        for (&i, fp) in changed.iter().zip(fingerprints) {
            held[i] = fp;
        }
        let mut next = SharedListing::new(self.sessions, all)?;
        next.changed_from = Some((from, changed.into()));
        Some(next)
    }

    /// This listing's serial: distinct for every listing made in this
    /// process (clones share it).
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// When this listing was made from the one whose serial is `serial` by
    /// [`with_changed`](Self::with_changed): the positions whose
    /// fingerprint may differ from that one's (its sessions are the same,
    /// shared). `None` otherwise.
    pub fn changed_since(&self, serial: u64) -> Option<&[usize]> {
        self.changed_from.as_ref().filter(|(from, _)| *from == serial).map(|(_, at)| &at[..])
    }

    /// The sessions, in the host's listing order.
    pub fn sessions(&self) -> &[SessionHeader] {
        &self.sessions
    }

    /// The sessions, shared.
    pub(crate) fn shared_sessions(&self) -> Arc<[SessionHeader]> {
        Arc::clone(&self.sessions)
    }

    /// The fingerprint of each session, in the same order.
    pub fn fingerprints(&self) -> &[Option<Fingerprint>] {
        &self.fingerprints
    }

    /// Whether both share their sessions and fingerprints (the same listing,
    /// not only an equal one).
    pub fn ptr_eq(&self, other: &SharedListing) -> bool {
        Arc::ptr_eq(&self.sessions, &other.sessions) && Arc::ptr_eq(&self.fingerprints, &other.fingerprints)
    }
}

/// The host-implemented session query (docs/contract.md §9). The library calls it from
/// its own tasks, possibly concurrently (reads of distinct sources run in
/// parallel), and never reads any other state.
///
/// Futures that never complete are fine: cancellation drops them.
/// Hosts whose calls block should implement [`BlockingSessionQuery`] and wrap
/// it in [`Blocking`].
pub trait SessionQuery: Send + Sync {
    /// All sessions, in the host's listing order (DSH: newest first). Candidate
    /// ranking is stable, so this order breaks ties.
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>>;
    /// The latest title of a session, or `None` when it has none.
    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>>;
    /// The current surface snapshot of a session.
    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData>;
    /// The surface of a session as `read` asks for it: what the library
    /// calls for every read (prepare, pages, conversations, search), with
    /// the title when the read learns it on the way. A source that can
    /// read less than the whole snapshot for some reads answers them here
    /// (see [`SurfaceRead`] for what each may leave out, and how it must
    /// still project); the default answers every read with
    /// [`read_surface`](Self::read_surface)'s snapshot.
    fn read_surface_as<'a>(&'a self, session_id: &'a str, read: SurfaceRead) -> QueryFuture<'a, SurfaceAnswer> {
        let _ = read;
        let whole = self.read_surface(session_id);
        Box::pin(async move { whole.await.map(SurfaceAnswer::whole) })
    }
    /// Optional change detection: the current [`Fingerprint`] of each
    /// session in `session_ids` (same order, same length; `None` for one the
    /// source cannot fingerprint), or `None` (the default) when the source
    /// has none. Discovery caches titles and indexed texts under it; without
    /// it every query reads every session it needs. A fingerprint
    /// must change whenever the session's title or surface may have.
    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        let _ = session_ids;
        Box::pin(async { Ok(None) })
    }
    /// Optional, for sources that keep their listing: the listing and every
    /// listed session's fingerprint in one answer, shared rather than
    /// copied, or `None` (the default) to have discovery call
    /// [`list_sessions`](Self::list_sessions) and
    /// [`fingerprints`](Self::fingerprints). Its sessions must be what
    /// `list_sessions` would answer now, and its fingerprints what
    /// `fingerprints` would answer for them now (discovery reads titles and
    /// texts only after this call, and caches them under these).
    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        Box::pin(async { Ok(None) })
    }
    /// Optional, for sources that read files or rows of their own: what
    /// the last listing skipped and why (`(path, why)`: a file that is not
    /// of the format, a damaged or unreadable one, one that holds no
    /// conversation yet), for the note a view over several sources gives
    /// ([`SourceStatus::note`](crate::sources::SourceStatus::note)). The
    /// default: nothing skipped. Answered from memory, without reading.
    fn skipped(&self) -> Vec<(std::path::PathBuf, String)> {
        Vec::new()
    }
    /// Optional search implemented by the host (its own full-text index, a
    /// search engine it runs): results for `request`, best first, or `None`
    /// (the default) to let the resolver use its built-in index. The
    /// resolver drops the target's own session, cuts the list at the limit
    /// and computes every mention.
    fn search<'a>(&'a self, request: &'a SearchRequest) -> QueryFuture<'a, Option<Vec<SearchResult>>> {
        let _ = request;
        Box::pin(async { Ok(None) })
    }
}

impl<Q: SessionQuery + ?Sized> SessionQuery for Arc<Q> {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        (**self).list_sessions()
    }
    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        (**self).read_title(session_id)
    }
    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        (**self).read_surface(session_id)
    }
    fn read_surface_as<'a>(&'a self, session_id: &'a str, read: SurfaceRead) -> QueryFuture<'a, SurfaceAnswer> {
        (**self).read_surface_as(session_id, read)
    }
    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        (**self).fingerprints(session_ids)
    }
    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        (**self).shared_listing()
    }
    fn search<'a>(&'a self, request: &'a SearchRequest) -> QueryFuture<'a, Option<Vec<SearchResult>>> {
        (**self).search(request)
    }
    fn skipped(&self) -> Vec<(std::path::PathBuf, String)> {
        (**self).skipped()
    }
}

/// The shared listing of a blocking source that keeps fingerprints: its
/// listing and every listed session's fingerprint, in one answer (what the
/// built-in file and database sources answer
/// [`BlockingSessionQuery::shared_listing`] with).
pub(crate) fn listing_with_fingerprints(
    query: &(impl BlockingSessionQuery + ?Sized),
) -> Result<Option<SharedListing>, HostError> {
    let sessions = query.list_sessions()?;
    let ids: Vec<String> = sessions.iter().map(|s| s.id.clone()).collect();
    let fps = query.fingerprints(&ids)?.unwrap_or_else(|| no_fingerprints(ids.len()));
    Ok(SharedListing::new(sessions.into(), fps.into()))
}

/// A session query whose operations block the calling thread (C callbacks,
/// plain Python callables, file readers). Wrap it in [`Blocking`] to use it
/// with a [`Resolver`](crate::Resolver).
pub trait BlockingSessionQuery: Send + Sync + 'static {
    /// All sessions, in the host's listing order (the tie-breaker of ranking).
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError>;
    /// The latest title of a session, or `None`.
    fn read_title(&self, session_id: &str) -> Result<Option<String>, HostError>;
    /// The current surface snapshot of a session.
    fn read_surface(&self, session_id: &str) -> Result<SurfaceData, HostError>;
    /// The surface as `read` asks for it, as [`SessionQuery::read_surface_as`]
    /// (default: [`read_surface`](Self::read_surface)'s snapshot for every read).
    fn read_surface_as(&self, session_id: &str, read: SurfaceRead) -> Result<SurfaceAnswer, HostError> {
        let _ = read;
        self.read_surface(session_id).map(SurfaceAnswer::whole)
    }
    /// Optional change detection, as [`SessionQuery::fingerprints`]
    /// (default: `None`, no fingerprints). Called once per discovery query
    /// for all the sessions it needs.
    fn fingerprints(&self, session_ids: &[String]) -> Result<Option<Vec<Option<Fingerprint>>>, HostError> {
        let _ = session_ids;
        Ok(None)
    }
    /// Optional shared listing with fingerprints, as
    /// [`SessionQuery::shared_listing`] (default: `None`).
    fn shared_listing(&self) -> Result<Option<SharedListing>, HostError> {
        Ok(None)
    }
    /// Optional, as [`SessionQuery::skipped`] (default: nothing skipped).
    fn skipped(&self) -> Vec<(std::path::PathBuf, String)> {
        Vec::new()
    }
    /// Optional host search, as [`SessionQuery::search`] (default: `None`,
    /// the built-in index).
    fn search(&self, request: &SearchRequest) -> Result<Option<Vec<SearchResult>>, HostError> {
        let _ = request;
        Ok(None)
    }
}

/// Adapts a [`BlockingSessionQuery`] into a [`SessionQuery`]: every call runs
/// on tokio's blocking thread pool, so reads run in parallel and a read that
/// never returns does not stop cancellation (its thread is abandoned).
/// Must be used inside a tokio runtime (the blocking facade of the
/// resolver provides one).
pub struct Blocking<Q>(pub Arc<Q>);

impl<Q> Blocking<Q> {
    /// Wraps a blocking query.
    pub fn new(query: Q) -> Self {
        Blocking(Arc::new(query))
    }
}

fn on_blocking_pool<Q, T, F>(query: &Arc<Q>, f: F) -> QueryFuture<'static, T>
where
    Q: Send + Sync + 'static,
    T: Send + 'static,
    F: FnOnce(&Q) -> Result<T, HostError> + Send + 'static,
{
    let query = Arc::clone(query);
    let task = tokio::task::spawn_blocking(move || f(&query));
    Box::pin(async move {
        match task.await {
            Ok(result) => result,
            Err(e) if e.is_panic() => Err(HostError::new("the host's session query panicked")),
            Err(_) => Err(HostError::new("the host's session query was aborted")),
        }
    })
}

impl<Q: BlockingSessionQuery> SessionQuery for Blocking<Q> {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        on_blocking_pool(&self.0, |q| q.list_sessions())
    }
    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        let id = session_id.to_owned();
        on_blocking_pool(&self.0, move |q| q.read_title(&id))
    }
    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        let id = session_id.to_owned();
        on_blocking_pool(&self.0, move |q| q.read_surface(&id))
    }
    fn read_surface_as<'a>(&'a self, session_id: &'a str, read: SurfaceRead) -> QueryFuture<'a, SurfaceAnswer> {
        let id = session_id.to_owned();
        on_blocking_pool(&self.0, move |q| q.read_surface_as(&id, read))
    }
    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        let ids = session_ids.to_vec();
        on_blocking_pool(&self.0, move |q| q.fingerprints(&ids))
    }
    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        on_blocking_pool(&self.0, |q| q.shared_listing())
    }
    fn search<'a>(&'a self, request: &'a SearchRequest) -> QueryFuture<'a, Option<Vec<SearchResult>>> {
        let request = request.clone();
        on_blocking_pool(&self.0, move |q| q.search(&request))
    }
    fn skipped(&self) -> Vec<(std::path::PathBuf, String)> {
        self.0.skipped()
    }
}
