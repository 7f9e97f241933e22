//! The resolver: candidates, `prepare` and `prepare_messages` (SPEC §6–§7).

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use futures::FutureExt;
use serde_json::{Map, Number, Value};
use std::panic::AssertUnwindSafe;

use crate::cancel::CancelToken;
use crate::config::{Config, MAX_SAFE_INTEGER};
use crate::error::{Error, ErrorCode, HostError, Result};
use crate::projection::project_json;
use crate::prompt::{render_metadata, render_prompt, render_source, RenderedSource};
use crate::query::{QueryFuture, SessionHeader, SessionQuery, SurfaceData, Target};
use crate::uri::{format_mention, parse_text, ParsedReference};

/// How many title reads run at once during a filtered candidate search.
const TITLE_CONCURRENCY: usize = 16;
/// With several references, snapshots at least this large are projected on
/// blocking threads, so that big sources are processed in parallel.
const PARALLEL_PROJECTION_BYTES: usize = 1 << 20;
/// A snapshot at least this large is always projected on a blocking thread,
/// so that cancellation stays prompt; below it the work takes a few
/// milliseconds at most, less than the thread hand-off and the cold caches
/// of another core would add to a single source.
const BLOCKING_PROJECTION_BYTES: usize = 4 << 20;

/// A normalized reference: a distinct session id and its label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The referenced session id.
    pub session_id: String,
    /// The label (the id when none was given).
    pub label: String,
}

/// The result of [`Resolver::prepare`].
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    /// A copy of the caller's content.
    pub content: Value,
    /// The context message, when there were references.
    pub additional_context: Option<Value>,
}

impl Prepared {
    /// `{"content": …}` or `{"content": …, "additionalContext": …}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("content".into(), self.content.clone());
        if let Some(ctx) = &self.additional_context {
            m.insert("additionalContext".into(), ctx.clone());
        }
        Value::Object(m)
    }

    /// Like [`to_json`](Self::to_json), consuming `self` (no copies).
    pub fn into_json(self) -> Value {
        let mut m = Map::new();
        m.insert("content".into(), self.content);
        if let Some(ctx) = self.additional_context {
            m.insert("additionalContext".into(), ctx);
        }
        Value::Object(m)
    }
}

/// One discovery candidate (SPEC §7).
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The session id.
    pub session_id: String,
    /// The latest title, or the id.
    pub label: String,
    /// The session's cwd, if any.
    pub cwd: Option<String>,
    /// `createdAt` as the host listed it.
    pub created_at: Number,
    /// The mention text (only from [`Resolver::candidates`]).
    pub mention: Option<String>,
    /// `sameWorkspace` (the later `dshCompat` profiles only, see [`crate::compat`]).
    pub same_workspace: Option<bool>,
    /// `displayTitle` (the `"0.1.7"` profile only).
    pub display_title: Option<String>,
}

impl Candidate {
    /// The candidate with its canonical mention (`@[label](dsh-session:…)`)
    /// filled in, as [`Resolver::candidates`] gives it.
    pub fn with_mention(mut self) -> Self {
        self.mention = Some(format_mention(&self.session_id, Some(&self.label)));
        self
    }

    /// `{"sessionId","label","cwd"?,"createdAt","mention"?}`; under the later
    /// `dshCompat` profiles `{"sessionId","label","displayTitle"?,"cwd"?,"sameWorkspace","createdAt","mention"?}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("sessionId".into(), Value::from(self.session_id.clone()));
        m.insert("label".into(), Value::from(self.label.clone()));
        if let Some(title) = &self.display_title {
            m.insert("displayTitle".into(), Value::from(title.clone()));
        }
        if let Some(cwd) = &self.cwd {
            m.insert("cwd".into(), Value::from(cwd.clone()));
        }
        if let Some(same) = self.same_workspace {
            m.insert("sameWorkspace".into(), Value::Bool(same));
        }
        m.insert("createdAt".into(), Value::Number(self.created_at.clone()));
        if let Some(mention) = &self.mention {
            m.insert("mention".into(), Value::from(mention.clone()));
        }
        Value::Object(m)
    }
}

/// Normalizes a reference list (SPEC §6 step 2): shape checks, the
/// self-reference check in order, de-duplication keeping the first
/// occurrence and its label, then the count limit.
pub fn normalize_references(target_id: &str, references: &[Value], max_references: u64) -> Result<Vec<Reference>> {
    let mut out: Vec<Reference> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for (i, r) in references.iter().enumerate() {
        let invalid = |why: &str| Error::new(ErrorCode::InvalidReference, format!("reference {i} {why}"));
        let obj = r.as_object().ok_or_else(|| invalid("is not an object"))?;
        let id = obj.get("sessionId").and_then(Value::as_str).ok_or_else(|| invalid("has no string `sessionId`"))?;
        let label = match obj.get("label") {
            None => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return Err(invalid("has a `label` that is not a string")),
        };
        if id == target_id {
            return Err(Error::new(ErrorCode::SelfReference, "a session cannot reference itself"));
        }
        if seen.insert(id) {
            out.push(Reference { session_id: id.to_owned(), label: label.unwrap_or(id).to_owned() });
        }
    }
    if out.len() as u64 > max_references {
        return Err(Error::new(
            ErrorCode::TooMany,
            format!("{} distinct references; at most {max_references} are allowed", out.len()),
        ));
    }
    Ok(out)
}

/// Why one source could not be rendered.
enum SourceFailure {
    /// The host read failed or returned a malformed snapshot.
    Read(Error),
    /// The source does not fit its budget.
    Budget(Error),
}

fn process_surface(data: &SurfaceData, id: &str, label: &str, budget: u64) -> Result<RenderedSource, SourceFailure> {
    // A value is written out and read like JSON text: one projection.
    let written;
    let bytes = match data {
        SurfaceData::Json(bytes) => (**bytes).as_ref(),
        SurfaceData::Value(v) => {
            written = crate::json::stringify(v);
            written.as_bytes()
        }
    };
    let projection = project_json(bytes).map_err(|e| SourceFailure::Read(Error::read_failed(id, e.into())))?;
    let rendered =
        render_source(projection, label, budget).map_err(|e| SourceFailure::Read(Error::read_failed(id, e.into())))?;
    rendered.ok_or_else(|| {
        SourceFailure::Budget(Error::new(
            ErrorCode::BudgetExceeded,
            format!("session {} does not fit in {budget} bytes", crate::json::js_string(id)),
        ))
    })
}

fn surface_len(data: &SurfaceData) -> usize {
    match data {
        SurfaceData::Json(b) => (**b).as_ref().len(),
        SurfaceData::Value(_) => 0,
    }
}

/// Calls a host method and awaits its future, turning a panic in either the
/// call or the future into a host error, so that a misbehaving host can
/// never unwind through the library.
async fn guarded<'a, T>(call: impl FnOnce() -> QueryFuture<'a, T>) -> std::result::Result<T, HostError> {
    let panicked = || HostError::new("the host's session query panicked");
    let fut = std::panic::catch_unwind(AssertUnwindSafe(call)).map_err(|_| panicked())?;
    AssertUnwindSafe(fut).catch_unwind().await.unwrap_or_else(|_| Err(panicked()))
}

/// Runs `work` unless `cancel` fires first; cancellation also wins over an
/// error that arrives after it.
async fn cancellable<T>(cancel: Option<&CancelToken>, work: impl Future<Output = Result<T>>) -> Result<T> {
    let Some(cancel) = cancel else { return work.await };
    if cancel.is_cancelled() {
        return Err(Error::cancelled());
    }
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Error::cancelled()),
        r = work => match r {
            Err(_) if cancel.is_cancelled() => Err(Error::cancelled()),
            other => other,
        },
    }
}

/// The session-reference service: reads through a host's [`SessionQuery`]
/// and prepares bounded, tag-safe snapshots. Cheap to clone and shareable
/// between threads; every method may run concurrently.
///
/// The `async` methods need a tokio runtime with the time and blocking
/// pools (any multi-threaded runtime, or [`crate::runtime()`]); the
/// `*_blocking` twins run on the library's own runtime and must not be called
/// from inside a tokio runtime.
#[derive(Clone)]
pub struct Resolver {
    query: Arc<dyn SessionQuery>,
    config: Config,
    /// The host's own `fullSnapshot` notices ([`crate::compat`]).
    pub(crate) notice: Option<crate::compat::FullSnapshotNotice>,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Resolver {
    /// A resolver over `query` with a validated configuration.
    pub fn new(query: Arc<dyn SessionQuery>, config: Config) -> Self {
        Resolver { query, config, notice: None }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The session query this resolver reads through.
    pub fn query(&self) -> &Arc<dyn SessionQuery> {
        &self.query
    }

    /// Prepares one message (SPEC §6): validates and de-duplicates
    /// `references` (JSON values `{"sessionId", "label"?}`), reads every
    /// source in parallel, retains each under the byte budget and returns a
    /// copy of `content` plus the context message. All or nothing.
    pub async fn prepare(
        &self,
        target: &Target,
        content: &Value,
        references: &[Value],
        cancel: Option<&CancelToken>,
    ) -> Result<Prepared> {
        let refs = normalize_references(&target.id, references, self.config.max_references())?;
        self.prepare_normalized(content.clone(), refs, None, cancel).await
    }

    /// [`prepare`](Self::prepare) for a model with `context_window` tokens
    /// (the automatic budget of the later `dshCompat` profiles, see
    /// [`crate::compat`]).
    pub(crate) async fn prepare_normalized(
        &self,
        content: Value,
        refs: Vec<Reference>,
        context_window: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Prepared> {
        if refs.is_empty() {
            return Ok(Prepared { content, additional_context: None });
        }
        let budget = self.config.compat().budget(self.config.max_reference_bytes(), context_window);
        let several = refs.len() > 1;
        let work = async {
            // Read every source concurrently, failing fast on a read error
            // (a pending read must not delay the failure).
            let reads = refs.iter().map(|r| async move {
                let data = guarded(|| self.query.read_surface(&r.session_id))
                    .await
                    .map_err(|e| Error::read_failed(&r.session_id, e))?;
                let (id, label) = (r.session_id.clone(), r.label.clone());
                let size = surface_len(&data);
                let offload = size >= BLOCKING_PROJECTION_BYTES || (several && size >= PARALLEL_PROJECTION_BYTES);
                let outcome = if offload {
                    tokio::task::spawn_blocking(move || process_surface(&data, &id, &label, budget))
                        .await
                        .map_err(|_| Error::read_failed(&r.session_id, "processing the snapshot panicked".into()))?
                } else {
                    process_surface(&data, &id, &label, budget)
                };
                match outcome {
                    Ok(rendered) => Ok(Ok(rendered)),
                    Err(SourceFailure::Read(e)) => Err(e),
                    Err(SourceFailure::Budget(e)) => Ok(Err(e)),
                }
            });
            let outcomes = futures::future::try_join_all(reads).await?;
            outcomes.into_iter().collect::<Result<Vec<RenderedSource>>>()
        };
        let sources = cancellable(cancel, work).await?;
        let mut prompt = render_prompt(&sources);
        let pairs: Vec<(&str, &str)> = refs.iter().map(|r| (r.session_id.as_str(), r.label.as_str())).collect();
        let ids: Vec<&str> = pairs.iter().map(|(id, _)| *id).collect();
        let notice = |i: usize| self.notice.as_ref().and_then(|f| f(ids[i], sources[i].captured_through_seq.as_ref()));
        self.config.compat().append_omissions(&mut prompt, &ids, &sources, &notice);
        let mut metadata = render_metadata(&pairs, &sources);
        self.config.compat().decorate_metadata(&mut metadata);
        let mut ctx = Map::new();
        ctx.insert("source".into(), metadata);
        let mut block = Map::new();
        block.insert("type".into(), Value::from("text"));
        block.insert("text".into(), Value::from(prompt));
        ctx.insert("content".into(), Value::Array(vec![Value::Object(block)]));
        ctx.insert("role".into(), Value::from("user"));
        ctx.insert("id".into(), Value::from(uuid::Uuid::new_v4().to_string()));
        Ok(Prepared { content, additional_context: Some(Value::Object(ctx)) })
    }

    /// The pre-step rewrite (SPEC §6): in every message whose
    /// `source.kind` is `"user"`, mentions in `text` blocks become `@label`;
    /// a message with references is followed by its context message.
    /// Other messages pass through unchanged; output order is input order.
    pub async fn prepare_messages(
        &self,
        target: &Target,
        messages: &[Value],
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Value>> {
        // Parse everything first: a malformed mention fails before any read.
        let mut plans: Vec<Option<(Value, Vec<Value>)>> = Vec::with_capacity(messages.len());
        for message in messages {
            let is_user = message.get("source").and_then(|s| s.get("kind")).and_then(Value::as_str) == Some("user");
            let content = message.get("content").and_then(Value::as_array);
            let (true, Some(blocks)) = (is_user, content) else {
                plans.push(None);
                continue;
            };
            let mut refs = Vec::new();
            let mut rewritten = Vec::with_capacity(blocks.len());
            for block in blocks {
                match (block.get("type").and_then(Value::as_str), block.get("text").and_then(Value::as_str)) {
                    (Some("text"), Some(text)) => {
                        let parsed = parse_text(text)?;
                        let mut b = block.clone();
                        if let Some(obj) = b.as_object_mut() {
                            obj.insert("text".into(), Value::from(parsed.text));
                        }
                        rewritten.push(b);
                        refs.extend(parsed.references.iter().map(ParsedReference::to_json));
                    }
                    _ => rewritten.push(block.clone()),
                }
            }
            plans.push((!refs.is_empty()).then_some((Value::Array(rewritten), refs)));
        }
        let jobs = plans.iter().map(|plan| async move {
            match plan {
                None => Ok(None),
                Some((content, refs)) => self.prepare(target, content, refs, cancel).await.map(Some),
            }
        });
        let prepared = cancellable(cancel, futures::future::try_join_all(jobs)).await?;
        let mut out = Vec::with_capacity(messages.len() + prepared.iter().flatten().count());
        for (message, prepared) in messages.iter().zip(prepared) {
            match prepared {
                None => out.push(message.clone()),
                Some(Prepared { content, additional_context }) => {
                    let mut copy = message.clone();
                    if let Some(obj) = copy.as_object_mut() {
                        obj.insert("content".into(), content);
                    }
                    out.push(copy);
                    out.extend(additional_context);
                }
            }
        }
        Ok(out)
    }

    /// Discovery (SPEC §7): sessions other than the target, ranked by cwd,
    /// filtered case-insensitively by id, cwd or label when `query` is not
    /// empty, cut at `limit` (default: the configured candidate limit).
    pub async fn list_candidates(
        &self,
        target: &Target,
        query: &str,
        limit: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Candidate>> {
        let limit = match limit {
            None => self.config.candidate_limit(),
            Some(l) if (1..=MAX_SAFE_INTEGER).contains(&l) => l,
            Some(_) => {
                return Err(Error::new(ErrorCode::InvalidReference, "candidate limit must be a positive safe integer"))
            }
        };
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        cancellable(cancel, self.list_candidates_inner(target, query, limit)).await
    }

    async fn list_candidates_inner(&self, target: &Target, query: &str, limit: usize) -> Result<Vec<Candidate>> {
        let sessions = guarded(|| self.query.list_sessions()).await.map_err(Error::list_failed)?;
        let rank = |s: &SessionHeader| match (&s.cwd, &target.cwd) {
            (Some(c), Some(t)) if c == t => 0u8,
            (None, _) => 1,
            _ => 2,
        };
        let mut sessions: Vec<SessionHeader> = sessions.into_iter().filter(|s| s.id != target.id).collect();
        let label_of = |s: &SessionHeader, title: Option<String>| title.unwrap_or_else(|| s.id.clone());
        let compat = self.config.compat();
        let make = |s: SessionHeader, label: String| {
            let (same_workspace, display_title) =
                compat.candidate_fields(s.cwd.as_deref(), target.cwd.as_deref(), &label);
            Candidate {
                session_id: s.id,
                label,
                cwd: s.cwd,
                created_at: s.created_at,
                mention: None,
                same_workspace,
                display_title,
            }
        };
        if query.is_empty() {
            sessions.sort_by_key(|s| rank(s)); // stable: ties keep list order
            sessions.truncate(limit);
            let titles = futures::future::join_all(self.titles(&sessions)).await;
            return Ok(sessions
                .into_iter()
                .zip(titles)
                .map(|(s, t)| {
                    let l = label_of(&s, t);
                    make(s, l)
                })
                .collect());
        }
        let needle = query.to_lowercase();
        let titles: Vec<Option<String>> =
            stream::iter(self.titles(&sessions)).buffered(TITLE_CONCURRENCY).map(Ok::<_, Error>).try_collect().await?;
        let mut matched: Vec<(u8, Candidate)> = sessions
            .into_iter()
            .zip(titles)
            .filter_map(|(s, t)| {
                let label = label_of(&s, t);
                let hit = s.id.to_lowercase().contains(&needle)
                    || s.cwd.as_deref().is_some_and(|c| c.to_lowercase().contains(&needle))
                    || label.to_lowercase().contains(&needle);
                hit.then(|| (rank(&s), make(s, label)))
            })
            .collect();
        matched.sort_by_key(|(r, _)| *r);
        Ok(matched.into_iter().take(limit).map(|(_, c)| c).collect())
    }

    /// One title read per session. Each future owns its id: futures that
    /// borrow from a closure argument would make the whole call `!Send`
    /// (rust-lang/rust#64552), and callers spawn it on a runtime.
    fn titles(&self, sessions: &[SessionHeader]) -> Vec<impl Future<Output = Option<String>> + Send + '_> {
        sessions
            .iter()
            .map(|s| {
                let id = s.id.clone();
                async move { self.title(&id).await }
            })
            .collect()
    }

    /// A title read; a failure counts as "no title" (one failing title
    /// never fails the listing).
    async fn title(&self, id: &str) -> Option<String> {
        guarded(|| self.query.read_title(id)).await.ok().flatten()
    }

    /// The host-facing face of discovery: [`list_candidates`](Self::list_candidates)
    /// with the configured limit, each candidate with its mention.
    pub async fn candidates(
        &self,
        target: &Target,
        query: &str,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Candidate>> {
        let list = self.list_candidates(target, query, None, cancel).await?;
        Ok(list.into_iter().map(Candidate::with_mention).collect())
    }

    /// [`prepare`](Self::prepare) on the library's runtime, blocking the caller.
    pub fn prepare_blocking(
        &self,
        target: &Target,
        content: &Value,
        references: &[Value],
        cancel: Option<&CancelToken>,
    ) -> Result<Prepared> {
        crate::runtime::block_on(self.prepare(target, content, references, cancel))
    }

    /// [`prepare_messages`](Self::prepare_messages) on the library's runtime, blocking the caller.
    pub fn prepare_messages_blocking(
        &self,
        target: &Target,
        messages: &[Value],
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Value>> {
        crate::runtime::block_on(self.prepare_messages(target, messages, cancel))
    }

    /// [`list_candidates`](Self::list_candidates) on the library's runtime, blocking the caller.
    pub fn list_candidates_blocking(
        &self,
        target: &Target,
        query: &str,
        limit: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Candidate>> {
        crate::runtime::block_on(self.list_candidates(target, query, limit, cancel))
    }

    /// [`candidates`](Self::candidates) on the library's runtime, blocking the caller.
    pub fn candidates_blocking(
        &self,
        target: &Target,
        query: &str,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Candidate>> {
        crate::runtime::block_on(self.candidates(target, query, cancel))
    }
}
