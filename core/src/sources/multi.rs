//! One view over several session sources: their listings merged (newest
//! `createdAt` first), reads routed by session id, and every source's
//! outcome reported. A source that fails to list is reported, never fatal
//! to the others.
//!
//! Ids stay exactly as each source gives them. Sources of other agents give
//! ids with a prefix of their own (`claude-code:<uuid>`, `codex:<uuid>`),
//! which is how reads find them; DSH ids have none and go to the source
//! registered without a prefix, so every existing DSH mention keeps
//! resolving, and a view of one source lists exactly what that source lists.

use std::sync::{Arc, Mutex};

use crate::discovery::Fingerprint;
use crate::error::HostError;
use crate::host::{QueryFuture, SessionHeader, SessionQuery, SurfaceData};

struct Entry {
    name: String,
    prefix: String,
    query: Arc<dyn SessionQuery>,
}

/// How one source fared in the last listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceStatus {
    /// The source's name (`dsh`, `claude-code`, `codex`, or the host's own).
    pub name: String,
    /// The number of sessions it listed, or why it could not list.
    pub outcome: Result<usize, String>,
}

/// A [`SessionQuery`] over several sources.
#[derive(Default)]
pub struct MultiQuery {
    entries: Vec<Entry>,
    report: Mutex<Vec<SourceStatus>>,
}

impl std::fmt::Debug for MultiQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<(&str, &str)> = self.entries.iter().map(|e| (e.name.as_str(), e.prefix.as_str())).collect();
        f.debug_struct("MultiQuery").field("sources", &names).finish_non_exhaustive()
    }
}

impl MultiQuery {
    /// A view over no source yet.
    pub fn new() -> Self {
        MultiQuery::default()
    }

    /// Adds a source. `prefix` is what the ids of its sessions start with
    /// (`"claude-code:"`), or `""` for the source that takes every other id
    /// (DSH). A read goes to the first source whose non-empty prefix starts
    /// the id, else to the first source without a prefix.
    pub fn with_source(
        mut self,
        name: impl Into<String>,
        prefix: impl Into<String>,
        query: Arc<dyn SessionQuery>,
    ) -> Self {
        self.entries.push(Entry { name: name.into(), prefix: prefix.into(), query });
        self
    }

    /// The names of the sources, in order.
    pub fn source_names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// How each source fared in the most recent `list_sessions` (empty
    /// before the first).
    pub fn last_report(&self) -> Vec<SourceStatus> {
        self.report.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn route(&self, id: &str) -> Result<&Entry, HostError> {
        self.entries
            .iter()
            .find(|e| !e.prefix.is_empty() && id.starts_with(&e.prefix))
            .or_else(|| self.entries.iter().find(|e| e.prefix.is_empty()))
            .ok_or_else(|| HostError::new(format!("no source holds session ids like {id:?}")))
    }
}

/// `createdAt` as a number to order by (newest first).
fn created(h: &SessionHeader) -> f64 {
    h.created_at.as_f64().unwrap_or(0.0)
}

impl SessionQuery for MultiQuery {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        Box::pin(async move {
            let lists = futures::future::join_all(self.entries.iter().map(|e| e.query.list_sessions())).await;
            let mut report = Vec::with_capacity(lists.len());
            let mut merged = Vec::new();
            let mut failures = Vec::new();
            for (entry, list) in self.entries.iter().zip(lists) {
                match list {
                    Ok(list) => {
                        report.push(SourceStatus { name: entry.name.clone(), outcome: Ok(list.len()) });
                        merged.push(list);
                    }
                    Err(e) => {
                        failures.push(format!("{}: {}", entry.name, e.message()));
                        report.push(SourceStatus { name: entry.name.clone(), outcome: Err(e.message().to_owned()) });
                    }
                }
            }
            *self.report.lock().unwrap_or_else(|e| e.into_inner()) = report;
            if merged.is_empty() && !failures.is_empty() {
                return Err(HostError::new(failures.join("; ")));
            }
            if merged.len() == 1 {
                return Ok(merged.pop().unwrap_or_default());
            }
            let mut all: Vec<SessionHeader> = merged.into_iter().flatten().collect();
            // Stable: equal times keep source order, then each source's order.
            all.sort_by(|a, b| created(b).total_cmp(&created(a)));
            Ok(all)
        })
    }

    // Routed inside the future, so that creating it needs no runtime.
    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        Box::pin(async move { self.route(session_id)?.query.read_title(session_id).await })
    }

    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        Box::pin(async move { self.route(session_id)?.query.read_surface(session_id).await })
    }

    /// Each id's fingerprint from the source its reads go to, asked once per
    /// source for all of its ids; a source that has none (or fails to
    /// answer) leaves its sessions without one, so they are read afresh.
    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        Box::pin(async move {
            let mut by_source: Vec<(Vec<usize>, Vec<String>)> = vec![(Vec::new(), Vec::new()); self.entries.len()];
            for (at, id) in session_ids.iter().enumerate() {
                let Ok(entry) = self.route(id) else { continue };
                let source = self.entries.iter().position(|e| std::ptr::eq(e, entry)).unwrap_or(0);
                by_source[source].0.push(at);
                by_source[source].1.push(id.clone());
            }
            let asked = by_source.iter().zip(&self.entries).map(|((_, ids), e)| async move {
                if ids.is_empty() {
                    return None;
                }
                e.query.fingerprints(ids).await.ok().flatten()
            });
            let answers = futures::future::join_all(asked).await;
            let mut out: Vec<Option<Fingerprint>> = crate::discovery::no_fingerprints(session_ids.len());
            for ((positions, _), answer) in by_source.iter().zip(answers) {
                let Some(prints) = answer else { continue };
                for (&at, print) in positions.iter().zip(prints) {
                    out[at] = print;
                }
            }
            Ok(Some(out))
        })
    }
}
