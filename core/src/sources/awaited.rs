//! A source whose root does not exist yet, in a process that lives on (a
//! server started on a machine where an agent has not written its first
//! session): it lists no session until its root appears, and is opened the
//! first time a listing finds the root there; from then on it is that
//! source. Looking costs one `stat` per listing until then.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::error::HostError;
use crate::host::{
    Fingerprint, QueryFuture, SearchRequest, SearchResult, SessionHeader, SessionQuery, SharedListing, SurfaceAnswer,
    SurfaceData, SurfaceRead,
};

/// Whether a root exists now.
type Exists = Box<dyn Fn() -> bool + Send + Sync>;
/// Opens the source of a root that exists.
type Open = Box<dyn Fn() -> Result<Arc<dyn SessionQuery>, String> + Send + Sync>;

/// A source opened once its root exists.
pub(crate) struct Awaited {
    /// The root, for messages.
    root: PathBuf,
    exists: Exists,
    open: Open,
    opened: OnceLock<Arc<dyn SessionQuery>>,
    /// The listing while the root is missing (one, so that a view over
    /// several sources sees it unchanged).
    empty: SharedListing,
}

impl Awaited {
    /// The source at `root`, opened by `open` once `exists` says the root
    /// is there.
    pub(crate) fn new(
        root: PathBuf,
        exists: impl Fn() -> bool + Send + Sync + 'static,
        open: impl Fn() -> Result<Arc<dyn SessionQuery>, String> + Send + Sync + 'static,
    ) -> Awaited {
        Awaited {
            root,
            exists: Box::new(exists),
            open: Box::new(open),
            opened: OnceLock::new(),
            empty: SharedListing::default(),
        }
    }

    /// The source, when its root exists (opened then, the first time); an
    /// error when the root is there but cannot be opened (tried again on
    /// the next call).
    fn source(&self) -> Result<Option<&Arc<dyn SessionQuery>>, HostError> {
        if let Some(opened) = self.opened.get() {
            return Ok(Some(opened));
        }
        if !(self.exists)() {
            return Ok(None);
        }
        let query = (self.open)().map_err(HostError::new)?;
        Ok(Some(self.opened.get_or_init(|| query)))
    }

    /// `read` of the source, or while the root is missing the error of a
    /// session that is not there.
    fn read<'a, T: Send + 'a>(
        &'a self,
        session_id: &'a str,
        read: impl FnOnce(&'a dyn SessionQuery) -> QueryFuture<'a, T> + Send + 'a,
    ) -> QueryFuture<'a, T> {
        Box::pin(async move {
            match self.source()? {
                Some(source) => read(source.as_ref()).await,
                None => Err(HostError::new(format!(
                    "no session {session_id:?}: {} does not exist yet",
                    self.root.display()
                ))),
            }
        })
    }
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
        self.read(session_id, |source| source.read_title(session_id))
    }

    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        self.read(session_id, |source| source.read_surface(session_id))
    }

    fn read_surface_as<'a>(&'a self, session_id: &'a str, read: SurfaceRead) -> QueryFuture<'a, SurfaceAnswer> {
        self.read(session_id, move |source| source.read_surface_as(session_id, read))
    }

    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        Box::pin(async move {
            match self.source()? {
                Some(source) => source.fingerprints(session_ids).await,
                None => Ok(None),
            }
        })
    }

    fn skipped(&self) -> Vec<(std::path::PathBuf, String)> {
        self.opened.get().map(|source| source.skipped()).unwrap_or_default()
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
