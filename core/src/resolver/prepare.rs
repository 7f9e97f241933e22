//! Preparation (docs/contract.md §6): references normalized, every source read in
//! parallel, projected, retained under its byte budget and framed; then the
//! context message. `prepare_messages` applies it to a message list.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{cancellable, guarded, Resolver};
use crate::cancel::CancelToken;
use crate::config::index_from_json;
use crate::context::{ContextMessage, Prepared, PreparedMessage, ReferenceMetadata};
use crate::error::{Error, ErrorCode, Result};
use crate::harden::Hardening;
use crate::host::{BudgetedSurface, SurfaceAnswer, SurfaceData, SurfaceRead, Target};
use crate::prompt::{append_omissions, render_prompt, render_reference, render_source_elided, Excerpt, RenderedSource};
use crate::retention::Elided;
use crate::uri::{parse_text_with, ParsedReference};

/// With several references, snapshots at least this large are projected on
/// blocking threads, so that big sources are processed in parallel.
const PARALLEL_PROJECTION_BYTES: usize = 1 << 20;
/// A snapshot at least this large is always projected on a blocking thread,
/// so that cancellation stays prompt; below it the work takes a few
/// milliseconds at most, less than the thread hand-off and the cold caches
/// of another core would add to a single source.
const BLOCKING_PROJECTION_BYTES: usize = 4 << 20;

/// A normalized reference: a distinct session id, its label, and the part
/// of the session it carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The referenced session id.
    pub session_id: String,
    /// The label (the id when none was given).
    pub label: String,
    /// The reference's `range` or `around` (docs/contract.md §6.10); `None`:
    /// the whole session, byte for byte as the reference implementation.
    pub excerpt: Option<Excerpt>,
}

impl Reference {
    /// A reference to a whole session (`label`: the id when `None`).
    pub fn new(session_id: impl Into<String>, label: Option<String>) -> Self {
        let session_id = session_id.into();
        let label = label.unwrap_or_else(|| session_id.clone());
        Reference { session_id, label, excerpt: None }
    }

    /// This reference carrying only `excerpt` of its session.
    pub fn with_excerpt(mut self, excerpt: Option<Excerpt>) -> Self {
        self.excerpt = excerpt;
        self
    }
}

/// The excerpt a reference object asks for (docs/contract.md §6.10):
/// `"range": {"start": n, "end"?: n}` (end exclusive and greater than
/// start; absent: through the last message) or `"around": n`, indexes being
/// non-negative safe integers; `null` counts as absent. The error says why,
/// after "reference i ".
fn excerpt_of(obj: &Map<String, Value>) -> std::result::Result<Option<Excerpt>, String> {
    let present = |key: &str| obj.get(key).filter(|v| !v.is_null());
    let range = match present("range") {
        None => None,
        Some(Value::Object(r)) => {
            let bad = || "has a `range` that is not {\"start\": index, \"end\"?: index} with end > start".to_owned();
            let start = r.get("start").and_then(index_from_json).ok_or_else(bad)?;
            let end = match r.get("end") {
                None | Some(Value::Null) => None,
                Some(v) => Some(index_from_json(v).filter(|&e| e > start).ok_or_else(bad)?),
            };
            Some(Excerpt::Range { start, end })
        }
        Some(_) => return Err("has a `range` that is not an object".into()),
    };
    let around = match present("around") {
        None => None,
        Some(v) => Some(Excerpt::Around(
            index_from_json(v).ok_or("has an `around` that is not a message index (a non-negative integer)")?,
        )),
    };
    match (range, around) {
        (Some(_), Some(_)) => Err("has both `range` and `around`".into()),
        (range, around) => Ok(range.or(around)),
    }
}

/// Options of one preparation ([`Resolver::prepare`],
/// [`Resolver::prepare_planned`], [`Resolver::prepare_messages`]). The
/// default changes nothing: every byte is the reference's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PrepareOptions {
    /// The model's context window in tokens. Under a later `dshCompat`
    /// profile without a configured `maxReferenceBytes`, each source's
    /// budget is `max(65536, floor(context_window × 4 ×
    /// referenceContextFraction))` (65536 without it); under `"0.1.1"`, or
    /// with a fixed budget, it changes nothing.
    pub context_window: Option<u64>,
}

impl PrepareOptions {
    /// These options with the model's context window (`None`: unknown).
    pub fn with_context_window(mut self, context_window: Option<u64>) -> Self {
        self.context_window = context_window;
        self
    }
}

/// Normalizes a reference list (docs/contract.md §6.2): shape checks, the
/// self-reference check in order, de-duplication keeping the first
/// occurrence and its label, then the count limit. A reference may carry an
/// excerpt (`range` or `around`, §6.10); naming a session again with another
/// excerpt than its first occurrence is `SESSION_REFERENCE_INVALID_REFERENCE`.
pub fn normalize_references(target_id: &str, references: &[Value], max_references: u64) -> Result<Vec<Reference>> {
    let mut out: Vec<Reference> = Vec::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, r) in references.iter().enumerate() {
        let invalid = |why: &str| Error::new(ErrorCode::InvalidReference, format!("reference {i} {why}"));
        let obj = r.as_object().ok_or_else(|| invalid("is not an object"))?;
        let id = obj.get("sessionId").and_then(Value::as_str).ok_or_else(|| invalid("has no string `sessionId`"))?;
        let label = match obj.get("label") {
            None => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return Err(invalid("has a `label` that is not a string")),
        };
        let excerpt = excerpt_of(obj).map_err(|why| invalid(&why))?;
        if id == target_id {
            return Err(Error::new(ErrorCode::SelfReference, "a session cannot reference itself"));
        }
        match seen.get(id) {
            Some(&first) if out[first].excerpt != excerpt => {
                return Err(invalid(&format!(
                    "names session {} again with another excerpt (`range`/`around`) than reference {first}",
                    crate::json::js_string(id)
                )))
            }
            Some(_) => {}
            None => {
                seen.insert(id, out.len());
                out.push(Reference { session_id: id.to_owned(), label: label.unwrap_or(id).to_owned(), excerpt });
            }
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

fn process_surface(
    data: &SurfaceData,
    id: &str,
    label: &str,
    budget: u64,
    hardening: Hardening,
    excerpt: Option<Excerpt>,
    elided: Elided,
) -> Result<RenderedSource, SourceFailure> {
    // A value is written out and read like JSON text: one projection. A
    // projected conversation needs none.
    let rendered = crate::host::with_projection(data, |projection| match excerpt {
        None => render_source_elided(projection, label, budget, hardening, elided),
        Some(_) => render_reference(projection, label, budget, hardening, excerpt),
    })
    .and_then(|r| r)
    .map_err(|e| SourceFailure::Read(Error::read_failed(id, e.into())))?;
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
        SurfaceData::Conversation(c) => c.text_len(),
    }
}

impl Resolver {
    /// Prepares one message (docs/contract.md §6): validates and de-duplicates
    /// `references` (JSON values `{"sessionId", "label"?}`), reads every
    /// source in parallel, retains each under the byte budget and returns a
    /// copy of `content` plus the context message. All or nothing.
    pub async fn prepare(
        &self,
        target: &Target,
        content: &Value,
        references: &[Value],
        options: &PrepareOptions,
        cancel: Option<&CancelToken>,
    ) -> Result<Prepared> {
        let refs = self.plan_references(target, references)?;
        self.prepare_planned(content.clone(), refs, options, cancel).await
    }

    /// The first step of [`prepare`](Self::prepare) alone: `references`
    /// normalized for `target` under the configured limit, which is what
    /// will be read. For a front that starts reads itself before the rest
    /// of the work (the Node addon), so references are validated once.
    /// With `sanitizeLabels`, each label is cleaned here, once, for the
    /// prompt and the metadata alike.
    pub fn plan_references(&self, target: &Target, references: &[Value]) -> Result<Vec<Reference>> {
        let mut refs = normalize_references(&target.id, references, self.config.max_references())?;
        let hardening = self.config.hardening();
        for r in &mut refs {
            r.label = hardening.label(std::mem::take(&mut r.label), &r.session_id);
        }
        Ok(refs)
    }

    /// The rest of [`prepare`](Self::prepare) for references that
    /// [`plan_references`](Self::plan_references) returned: reads, retention
    /// and framing, with `content` moved into the result.
    pub async fn prepare_planned(
        &self,
        content: Value,
        refs: Vec<Reference>,
        options: &PrepareOptions,
        cancel: Option<&CancelToken>,
    ) -> Result<Prepared> {
        if refs.is_empty() {
            return Ok(Prepared { content, additional_context: None });
        }
        let budget = self.config.compat().budget(self.config.max_reference_bytes(), options.context_window);
        let hardening = self.config.hardening();
        let several = refs.len() > 1;
        let work = async {
            // Read every source concurrently, failing fast on a read error
            // (a pending read must not delay the failure).
            let reads = refs.iter().map(|r| async move {
                // A whole session is read under its budget (the source may
                // leave out what retention certainly drops); an excerpt
                // needs every message's index.
                let read = match r.excerpt {
                    None => SurfaceRead::Within(budget),
                    Some(_) => SurfaceRead::ForProjection,
                };
                let read = guarded(|| self.query.read_surface_as(&r.session_id, read)).await;
                let BudgetedSurface { data, elided } =
                    read.and_then(SurfaceAnswer::into_budgeted).map_err(|e| Error::read_failed(&r.session_id, e))?;
                let (id, label, excerpt) = (r.session_id.clone(), r.label.clone(), r.excerpt);
                let size = surface_len(&data);
                let offload = size >= BLOCKING_PROJECTION_BYTES || (several && size >= PARALLEL_PROJECTION_BYTES);
                let outcome = if offload {
                    tokio::task::spawn_blocking(move || {
                        process_surface(&data, &id, &label, budget, hardening, excerpt, elided)
                    })
                    .await
                    .map_err(|_| Error::read_failed(&r.session_id, "processing the snapshot panicked".into()))?
                } else {
                    process_surface(&data, &id, &label, budget, hardening, excerpt, elided)
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
        let pairs: Vec<(&str, &str)> = refs.iter().map(|r| (r.session_id.as_str(), r.label.as_str())).collect();
        let mut prompt = render_prompt(&sources);
        let ids: Vec<&str> = pairs.iter().map(|(id, _)| *id).collect();
        let notice = |i: usize| self.notice.as_ref().and_then(|f| f(ids[i], sources[i].captured_through_seq.as_ref()));
        append_omissions(self.config.compat().profile(), &mut prompt, &ids, &sources, &notice);
        let mut source = ReferenceMetadata::new(&pairs, &sources);
        source.set_captured_format_version(self.config.compat().profile().captured_format_version());
        let context = ContextMessage { id: uuid::Uuid::new_v4().to_string(), prompt, source };
        Ok(Prepared { content, additional_context: Some(context) })
    }

    /// The pre-step rewrite (docs/contract.md §6): in every message whose
    /// `source.kind` is `"user"`, mentions in `text` blocks become `@label`;
    /// a message with references is followed by its context message.
    /// Other messages pass through unchanged; output order is input order.
    pub async fn prepare_messages(
        &self,
        target: &Target,
        messages: &[Value],
        options: &PrepareOptions,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<PreparedMessage>> {
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
                        let parsed = parse_text_with(text, self.config.hardening())?;
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
                Some((content, refs)) => self.prepare(target, content, refs, options, cancel).await.map(Some),
            }
        });
        let prepared = cancellable(cancel, futures::future::try_join_all(jobs)).await?;
        let mut out = Vec::with_capacity(messages.len() + prepared.iter().flatten().count());
        for (message, prepared) in messages.iter().zip(prepared) {
            match prepared {
                None => out.push(PreparedMessage::Message(message.clone())),
                Some(Prepared { content, additional_context }) => {
                    let mut copy = message.clone();
                    if let Some(obj) = copy.as_object_mut() {
                        obj.insert("content".into(), content);
                    }
                    out.push(PreparedMessage::Message(copy));
                    out.extend(additional_context.map(PreparedMessage::Context));
                }
            }
        }
        Ok(out)
    }
}
