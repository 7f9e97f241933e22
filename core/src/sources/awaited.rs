//! A source whose root does not exist yet, in a process that lives on (a
//! server started on a machine where an agent has not written its first
//! session): it lists no session until its root appears, and is opened the
//! first time a listing finds the root there; from then on it is that
//! source. Looking costs one `stat` per listing until then.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::open::{empty_root_note, open_resolved, SourceKind, SourceSpec};
use crate::error::HostError;
use crate::host::{
    BudgetedSurface, Fingerprint, QueryFuture, SearchRequest, SearchResult, SessionHeader, SessionQuery, SharedListing,
    SurfaceData, SurfaceItems,
};

/// A source opened once its root exists.
pub(crate) struct Awaited {
    spec: SourceSpec,
    opened: OnceLock<Arc<dyn SessionQuery>>,
    /// The listing while the root is missing (one, so that a view over
    /// several sources sees it unchanged).
    empty: SharedListing,
}

impl Awaited {
    /// The source of `spec`, opened once its root exists.
    pub(crate) fn new(spec: SourceSpec) -> Awaited {
        Awaited { spec, opened: OnceLock::new(), empty: SharedListing::default() }
    }

    /// The source, when its root exists (opened then, the first time); an
    /// error when the root is there but cannot be opened (tried again on
    /// the next call).
    fn source(&self) -> Result<Option<&Arc<dyn SessionQuery>>, HostError> {
        if let Some(opened) = self.opened.get() {
            return Ok(Some(opened));
        }
        if !self.spec.kind.root_exists(&self.spec.root) {
            return Ok(None);
        }
        let resolved = self.spec.resolve().map_err(HostError::new)?;
        let query = open_resolved(&resolved.spec).map_err(|e| HostError::new(e.to_string()))?;
        Ok(Some(self.opened.get_or_init(|| query)))
    }

    /// What reading a session fails with while the root is missing.
    fn missing(&self, session_id: &str) -> HostError {
        HostError::new(format!("no session {session_id:?}: {} does not exist yet", self.spec.root.display()))
    }
}

/// Why a source awaited lists no session: its root is not there yet, or
/// (once it is) what it holds.
pub(crate) fn awaited_note(kind: SourceKind, root: &Path) -> String {
    if kind.root_exists(root) {
        return empty_root_note(kind, root);
    }
    format!("{} does not exist yet: its sessions are listed once it does", root.display())
}

impl SessionQuery for Awaited {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        Box::pin(async move {
            match self.source()? {
                Some(source) => source.list_sessions().await,
                None => Ok(Vec::new()),
            }
        })
    }

    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        Box::pin(async move {
            match self.source()? {
                Some(source) => source.read_title(session_id).await,
                None => Err(self.missing(session_id)),
            }
        })
    }

    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        Box::pin(async move {
            match self.source()? {
                Some(source) => source.read_surface(session_id).await,
                None => Err(self.missing(session_id)),
            }
        })
    }

    fn read_surface_for_projection<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        Box::pin(async move {
            match self.source()? {
                Some(source) => source.read_surface_for_projection(session_id).await,
                None => Err(self.missing(session_id)),
            }
        })
    }

    fn read_surface_within<'a>(&'a self, session_id: &'a str, budget: u64) -> QueryFuture<'a, BudgetedSurface> {
        Box::pin(async move {
            match self.source()? {
                Some(source) => source.read_surface_within(session_id, budget).await,
                None => Err(self.missing(session_id)),
            }
        })
    }

    fn read_surface_items<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceItems> {
        Box::pin(async move {
            match self.source()? {
                Some(source) => source.read_surface_items(session_id).await,
                None => Err(self.missing(session_id)),
            }
        })
    }

    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        Box::pin(async move {
            match self.source()? {
                Some(source) => source.fingerprints(session_ids).await,
                None => Ok(None),
            }
        })
    }

    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        Box::pin(async move {
            match self.source()? {
                Some(source) => source.shared_listing().await,
                None => Ok(Some(self.empty.clone())),
            }
        })
    }

    fn search<'a>(&'a self, request: &'a SearchRequest) -> QueryFuture<'a, Option<Vec<SearchResult>>> {
        Box::pin(async move {
            match self.source()? {
                Some(source) => source.search(request).await,
                None => Ok(None),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block_on;

    #[test]
    fn a_missing_root_lists_nothing_until_it_appears_and_then_is_the_source() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join("projects");
        let awaited = Awaited::new(SourceSpec::new(SourceKind::ClaudeCode, root.clone()));
        assert!(block_on(awaited.list_sessions()).unwrap().is_empty());
        let empty = block_on(awaited.shared_listing()).unwrap().unwrap();
        assert!(empty.sessions().is_empty());
        assert!(block_on(awaited.shared_listing()).unwrap().unwrap().ptr_eq(&empty), "the same empty listing");
        let missing = block_on(awaited.read_surface("claude-code:x")).err().unwrap();
        assert!(missing.message().contains("does not exist yet"), "{}", missing.message());
        assert!(awaited_note(SourceKind::ClaudeCode, &root).contains("does not exist yet"));

        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/foreign-logs/claude-code/daaain/minimal_showcase");
        let id = "55550000-0000-4000-8000-000000000001";
        std::fs::create_dir_all(root.join("-workspace")).unwrap();
        assert!(block_on(awaited.list_sessions()).unwrap().is_empty(), "a root with no session yet");
        assert!(!awaited_note(SourceKind::ClaudeCode, &root).contains("does not exist yet"));
        std::fs::copy(fixture.join(format!("{id}.jsonl")), root.join("-workspace").join(format!("{id}.jsonl")))
            .unwrap();
        let listed: Vec<String> = block_on(awaited.list_sessions()).unwrap().into_iter().map(|s| s.id).collect();
        assert_eq!(listed, [format!("claude-code:{id}")]);
        assert!(block_on(awaited.read_surface(&listed[0])).is_ok());
    }
}
