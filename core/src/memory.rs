//! An in-memory [`SessionQuery`]: fill it with headers, titles and
//! snapshots. Handy for tests and for hosts that already hold sessions.
//! Every change of a session bumps its version, which is its
//! [`Fingerprint`], so the discovery caches of a resolver stay exact.

use std::collections::HashMap;
use std::sync::RwLock;

use crate::error::HostError;
use crate::host::Fingerprint;
use crate::host::{QueryFuture, SessionHeader, SessionQuery, SharedListing, SurfaceData};

#[derive(Default)]
struct Inner {
    sessions: Vec<SessionHeader>,
    listing_failure: Option<HostError>,
    titles: HashMap<String, Result<Option<String>, HostError>>,
    surfaces: HashMap<String, Result<SurfaceData, HostError>>,
    /// The version of each session changed at least once; the clock they
    /// are drawn from only grows, so no two states share a version.
    versions: HashMap<String, u64>,
    clock: u64,
    /// The listing with every version, shared until the next change.
    shared: Option<SharedListing>,
    /// The last shared listing and the sessions changed since, while the
    /// listing itself (its sessions, their order) did not change: the next
    /// one is made from it ([`SharedListing::with_changed`]).
    stale: Option<(SharedListing, Vec<String>)>,
}

impl Inner {
    /// A change of the listing itself (a session added, replaced or
    /// removed).
    fn touch(&mut self, id: &str) {
        self.clock += 1;
        self.versions.insert(id.to_owned(), self.clock);
        self.shared = None;
        self.stale = None;
    }

    /// A change of one session's title or surface only.
    fn touch_content(&mut self, id: &str) {
        let stale = match (self.shared.take(), self.stale.take()) {
            (Some(shared), _) => Some((shared, vec![id.to_owned()])),
            (None, Some((shared, mut ids))) => {
                ids.push(id.to_owned());
                Some((shared, ids))
            }
            (None, None) => None,
        };
        self.touch(id);
        self.stale = stale;
    }

    fn version(&self, id: &str) -> Fingerprint {
        Fingerprint::from_u64(self.versions.get(id).copied().unwrap_or(0))
    }
}

/// A session query over values held in memory. Listing returns sessions in
/// insertion order; a title never set reads as "no title"; a surface never
/// set fails to read.
#[derive(Default)]
pub struct MemoryQuery {
    inner: RwLock<Inner>,
}

impl MemoryQuery {
    /// An empty query.
    pub fn new() -> Self {
        MemoryQuery::default()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends a session to the listing (replacing one with the same id in place).
    pub fn add_session(&self, header: SessionHeader) {
        let mut inner = self.write();
        inner.touch(&header.id);
        match inner.sessions.iter_mut().find(|s| s.id == header.id) {
            Some(existing) => *existing = header,
            None => inner.sessions.push(header),
        }
    }

    /// Sets the latest title of a session (`None`: no title).
    pub fn set_title(&self, id: impl Into<String>, title: Option<String>) {
        let id = id.into();
        let mut inner = self.write();
        inner.touch_content(&id);
        inner.titles.insert(id, Ok(title));
    }

    /// Makes title reads of a session fail with `reason`.
    pub fn fail_title(&self, id: impl Into<String>, reason: impl Into<HostError>) {
        let id = id.into();
        let mut inner = self.write();
        inner.touch_content(&id);
        inner.titles.insert(id, Err(reason.into()));
    }

    /// Sets the surface snapshot of a session.
    pub fn set_surface(&self, id: impl Into<String>, surface: impl Into<SurfaceData>) {
        let id = id.into();
        let mut inner = self.write();
        inner.touch_content(&id);
        inner.surfaces.insert(id, Ok(surface.into()));
    }

    /// Removes a session: from the listing, with its title and surface.
    pub fn remove_session(&self, id: &str) {
        let mut inner = self.write();
        inner.touch(id);
        inner.sessions.retain(|s| s.id != id);
        inner.titles.remove(id);
        inner.surfaces.remove(id);
    }

    /// The current version of a session (0 before its first change): its
    /// fingerprint.
    pub fn version(&self, id: &str) -> u64 {
        self.read().versions.get(id).copied().unwrap_or(0)
    }

    /// Makes listing fail with `reason` (until [`clear_listing_failure`](Self::clear_listing_failure)).
    pub fn fail_listing(&self, reason: impl Into<HostError>) {
        self.write().listing_failure = Some(reason.into());
    }

    /// Lists the sessions again after [`fail_listing`](Self::fail_listing).
    pub fn clear_listing_failure(&self) {
        self.write().listing_failure = None;
    }

    /// Makes surface reads of a session fail with `reason`.
    pub fn fail_surface(&self, id: impl Into<String>, reason: impl Into<HostError>) {
        let id = id.into();
        let mut inner = self.write();
        inner.touch(&id);
        inner.surfaces.insert(id, Err(reason.into()));
    }
}

impl SessionQuery for MemoryQuery {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        let inner = self.read();
        let listed = match &inner.listing_failure {
            Some(e) => Err(e.clone()),
            None => Ok(inner.sessions.clone()),
        };
        Box::pin(async move { listed })
    }

    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        let title = self.read().titles.get(session_id).cloned().unwrap_or(Ok(None));
        Box::pin(async move { title })
    }

    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        let surface = self
            .read()
            .surfaces
            .get(session_id)
            .cloned()
            .unwrap_or_else(|| Err(HostError::new(format!("no session {session_id:?}"))));
        Box::pin(async move { surface })
    }

    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        let inner = self.read();
        let fps = session_ids.iter().map(|id| Some(inner.version(id))).collect();
        Box::pin(async move { Ok(Some(fps)) })
    }

    /// The listing with every session's version, made once per change.
    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        let listed = {
            let mut inner = self.write();
            match (&inner.listing_failure, &inner.shared) {
                (Some(e), _) => Err(e.clone()),
                (None, Some(shared)) => Ok(shared.clone()),
                (None, None) if inner.stale.is_some() => {
                    let (last, ids) = inner.stale.take().expect("checked");
                    let ids: std::collections::HashSet<String> = ids.into_iter().collect();
                    let at: Vec<usize> =
                        (0..inner.sessions.len()).filter(|&i| ids.contains(&inner.sessions[i].id)).collect();
                    let fps = at.iter().map(|&i| Some(inner.version(&inner.sessions[i].id))).collect();
                    let shared = last.with_changed(at, fps).expect("positions of the same listing");
                    inner.shared = Some(shared.clone());
                    Ok(shared)
                }
                (None, None) => {
                    let fps: std::sync::Arc<[Option<Fingerprint>]> =
                        inner.sessions.iter().map(|s| Some(inner.version(&s.id))).collect();
                    let shared =
                        SharedListing::new(inner.sessions.as_slice().into(), fps).expect("one fingerprint per session");
                    inner.shared = Some(shared.clone());
                    Ok(shared)
                }
            }
        };
        Box::pin(async move { listed.map(Some) })
    }
}
