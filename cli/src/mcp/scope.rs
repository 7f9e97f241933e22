//! Which sessions the MCP server offers (docs/mcp.md, "Scope"), drawn the
//! way DSH draws its session tools: by default the sessions of the project
//! the server was started in (a cwd that is the project directory or below
//! it; a session without a cwd is outside), `--scope all` for every
//! session, `--allow ID` for single sessions besides.
//!
//! The scope is enforced under the resolver, by [`ScopedQuery`]: a session
//! outside it is not in any listing, so no search, candidate list or
//! resource list can show it, and reading it fails exactly as reading an id
//! that does not exist (one message for both: no existence oracle).

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_session_reference::{
    Fingerprint, HostError, QueryFuture, SearchRequest, SearchResult, SessionHeader, SessionQuery, SharedListing,
    SurfaceAnswer, SurfaceData, SurfaceRead,
};

/// The sessions offered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scope {
    /// `None`: every session; else the project directory (absolute,
    /// normalized) and its canonical form when that differs.
    project: Option<Vec<PathBuf>>,
    /// Sessions offered whatever their cwd.
    allowed: HashSet<String>,
}

impl Scope {
    /// Every session of the sources.
    pub(crate) fn all() -> Scope {
        Scope { project: None, allowed: HashSet::new() }
    }

    /// The sessions of the project at `dir` (relative to the working
    /// directory when relative), and of no other; an error when `dir` is
    /// not a directory (refused: a scope that matched nothing would look like
    /// an empty project).
    pub(crate) fn project(dir: &Path) -> Result<Scope, String> {
        let absolute = if dir.is_absolute() {
            dir.to_owned()
        } else {
            std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?.join(dir)
        };
        if !absolute.is_dir() {
            return Err(format!("the project directory {} is not a directory", absolute.display()));
        }
        let mut dirs = vec![normalize(&absolute)];
        if let Ok(real) = absolute.canonicalize() {
            if real != dirs[0] {
                dirs.push(real);
            }
        }
        Ok(Scope { project: Some(dirs), allowed: HashSet::new() })
    }

    /// This scope, with `ids` offered whatever their cwd.
    pub(crate) fn allowing(mut self, ids: impl IntoIterator<Item = String>) -> Scope {
        self.allowed.extend(ids);
        self
    }

    /// Whether the session is offered.
    pub(crate) fn contains(&self, session: &SessionHeader) -> bool {
        let Some(dirs) = &self.project else { return true };
        if self.allowed.contains(&session.id) {
            return true;
        }
        let Some(cwd) = session.cwd.as_deref().map(Path::new).filter(|p| p.is_absolute()) else { return false };
        let cwd = normalize(cwd);
        dirs.iter().any(|dir| cwd.starts_with(dir))
    }

    /// What tells this scope's cache files from those of the whole
    /// sources (`None` for every session): a server keeps in its index only
    /// the sessions it offers, so servers of different scopes over the
    /// same sources keep files of their own rather than shrinking each
    /// other's.
    pub(crate) fn cache_view(&self) -> Option<String> {
        let dirs = self.project.as_ref()?;
        let mut allowed: Vec<&str> = self.allowed.iter().map(String::as_str).collect();
        allowed.sort_unstable();
        let dirs: Vec<String> = dirs.iter().map(|d| d.to_string_lossy().into_owned()).collect();
        Some(format!("project {} allowing {}", dirs.join(" "), allowed.join(" ")))
    }

    /// The working directory a session in this scope is ranked against
    /// (the project's, as given).
    pub(crate) fn cwd(&self) -> Option<String> {
        self.project.as_ref().map(|dirs| dirs[0].to_string_lossy().into_owned())
    }
}

/// The project `dir` is in: the nearest directory at or above it that
/// holds a `.git` directory or file (a repository's root, or a worktree's
/// or a submodule's, found as git finds it), else `dir` itself.
pub(crate) fn project_root(dir: &Path) -> PathBuf {
    dir.ancestors().find(|d| d.join(".git").exists()).unwrap_or(dir).to_owned()
}

/// `path` with `.` dropped and `..` taken lexically (never above the
/// root), so that `/project/../etc` is not "below" `/project`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if out.parent().is_some() {
                    out.pop();
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// What a read of a session outside the scope, or of no session at all,
/// fails with.
pub(crate) fn no_session(id: &str) -> HostError {
    HostError::new(format!("no session {id:?}"))
}

/// The last listing filtered: the source's listing it came from, the
/// filtered listing, and its ids.
type Filtered = (SharedListing, SharedListing, Arc<HashSet<String>>);

/// A session query that offers only the sessions of a [`Scope`].
pub(crate) struct ScopedQuery {
    inner: Arc<dyn SessionQuery>,
    scope: Scope,
    /// Filtering 10,000 sessions on every call would cost more than the
    /// call: a listing that did not change (the same shared listing) is
    /// filtered once.
    last: Mutex<Option<Filtered>>,
}

impl ScopedQuery {
    /// `inner`, offering only what `scope` contains.
    pub(crate) fn new(inner: Arc<dyn SessionQuery>, scope: Scope) -> ScopedQuery {
        ScopedQuery { inner, scope, last: Mutex::new(None) }
    }

    fn filter(&self, sessions: &[SessionHeader]) -> Vec<SessionHeader> {
        sessions.iter().filter(|s| self.scope.contains(s)).cloned().collect()
    }

    /// The source's shared listing, filtered (once per listing).
    async fn shared_filtered(&self) -> Result<Option<(SharedListing, Arc<HashSet<String>>)>, HostError> {
        let Some(listed) = self.inner.shared_listing().await? else { return Ok(None) };
        if let Some((from, filtered, ids)) = &*self.last.lock().unwrap_or_else(|e| e.into_inner()) {
            if from.ptr_eq(&listed) {
                return Ok(Some((filtered.clone(), Arc::clone(ids))));
            }
        }
        let (sessions, fingerprints): (Vec<SessionHeader>, Vec<Option<Fingerprint>>) = listed
            .sessions()
            .iter()
            .zip(listed.fingerprints())
            .filter(|(s, _)| self.scope.contains(s))
            .map(|(s, f)| (s.clone(), f.clone()))
            .unzip();
        let ids: Arc<HashSet<String>> = Arc::new(sessions.iter().map(|s| s.id.clone()).collect());
        let filtered = SharedListing::new(sessions.into(), fingerprints.into())
            .ok_or_else(|| HostError::new("the listing and its fingerprints differ in length"))?;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((listed, filtered.clone(), Arc::clone(&ids)));
        Ok(Some((filtered, ids)))
    }

    /// Whether `id` is a session of the scope as listed now (every id is,
    /// to a scope of every session, until its read fails).
    /// A session's surface (for projection, or as the source gives it)
    /// when the scope offers it.
    /// (`read` is one of the inner query's surface reads of `session_id`,
    /// not yet started: futures run only when awaited.)
    async fn scoped_surface<T>(
        &self,
        session_id: &str,
        read: impl std::future::Future<Output = Result<T, HostError>>,
    ) -> Result<T, HostError> {
        if !self.offers(session_id).await? {
            return Err(no_session(session_id));
        }
        match read.await {
            Ok(surface) => Ok(surface),
            // A source says "no session" in words of its own, with its
            // root: one message for every id that is not there.
            Err(e) => match self.listed(session_id).await {
                Ok(false) => Err(no_session(session_id)),
                _ => Err(e),
            },
        }
    }

    async fn offers(&self, id: &str) -> Result<bool, HostError> {
        if self.scope.project.is_none() {
            return Ok(true);
        }
        self.listed(id).await
    }

    /// Whether `id` is a session of the scope as listed now.
    async fn listed(&self, id: &str) -> Result<bool, HostError> {
        if let Some((_, ids)) = self.shared_filtered().await? {
            return Ok(ids.contains(id));
        }
        Ok(self.inner.list_sessions().await?.iter().any(|s| s.id == id && self.scope.contains(s)))
    }
}

impl SessionQuery for ScopedQuery {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        Box::pin(async move {
            if self.scope.project.is_none() {
                return self.inner.list_sessions().await;
            }
            match self.shared_filtered().await? {
                Some((listed, _)) => Ok(listed.sessions().to_vec()),
                None => Ok(self.filter(&self.inner.list_sessions().await?)),
            }
        })
    }

    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        Box::pin(async move {
            match self.offers(session_id).await? {
                true => self.inner.read_title(session_id).await,
                false => Err(no_session(session_id)),
            }
        })
    }

    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        Box::pin(self.scoped_surface(session_id, self.inner.read_surface(session_id)))
    }

    fn read_surface_as<'a>(&'a self, session_id: &'a str, read: SurfaceRead) -> QueryFuture<'a, SurfaceAnswer> {
        Box::pin(self.scoped_surface(session_id, self.inner.read_surface_as(session_id, read)))
    }

    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        self.inner.fingerprints(session_ids)
    }

    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        Box::pin(async move {
            // Every session: the source's own listing, not a copy (a source
            // that lists afresh at each call, a team database, would be
            // copied at each).
            if self.scope.project.is_none() {
                return self.inner.shared_listing().await;
            }
            Ok(self.shared_filtered().await?.map(|(listed, _)| listed))
        })
    }

    fn search<'a>(&'a self, request: &'a SearchRequest) -> QueryFuture<'a, Option<Vec<SearchResult>>> {
        Box::pin(async move {
            let Some(results) = self.inner.search(request).await? else { return Ok(None) };
            let mut kept = Vec::with_capacity(results.len());
            for r in results {
                if self.offers(&r.candidate.session_id).await? {
                    kept.push(r);
                }
            }
            Ok(Some(kept))
        })
    }
}

#[cfg(test)]
mod tests {
    use dsh_session_reference::{block_on, MemoryQuery};

    use super::*;

    fn header(id: &str, cwd: Option<&str>) -> SessionHeader {
        SessionHeader::new(id, 1u64, cwd.map(str::to_owned))
    }

    #[test]
    fn a_project_holds_its_directory_and_below_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("proj");
        std::fs::create_dir_all(project.join("sub")).unwrap();
        let scope = Scope::project(&project).unwrap();
        let p = project.to_str().unwrap();
        assert!(scope.contains(&header("a", Some(p))));
        assert!(scope.contains(&header("a", Some(&format!("{p}/")))));
        assert!(scope.contains(&header("a", Some(&format!("{p}/sub")))));
        assert!(scope.contains(&header("a", Some(&format!("{p}/./sub/../sub")))));
        assert!(!scope.contains(&header("a", Some(&format!("{p}-other")))), "a sibling with the same prefix");
        assert!(!scope.contains(&header("a", Some(&format!("{p}/../elsewhere")))));
        assert!(!scope.contains(&header("a", Some(tmp.path().to_str().unwrap()))), "the parent");
        assert!(!scope.contains(&header("a", None)), "no cwd is outside");
        assert!(!scope.contains(&header("a", Some("proj"))), "a relative cwd is outside");
        let allowed = scope.clone().allowing(["b".to_owned()]);
        assert!(allowed.contains(&header("b", None)) && !allowed.contains(&header("c", None)));
        assert!(Scope::all().contains(&header("a", None)));
        assert!(Scope::project(&project.join("missing")).is_err());
        // The canonical form counts too (a project reached through a link).
        #[cfg(unix)]
        {
            let link = tmp.path().join("link");
            std::os::unix::fs::symlink(&project, &link).unwrap();
            let through_link = Scope::project(&link).unwrap();
            assert!(through_link.contains(&header("a", Some(p))));
            assert!(through_link.contains(&header("a", Some(link.to_str().unwrap()))));
        }
    }

    #[test]
    fn the_project_is_the_repository_a_directory_is_in() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let deep = repo.join("src/deep");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(project_root(&deep), deep, "no repository: the directory itself");
        std::fs::create_dir(repo.join(".git")).unwrap();
        assert_eq!(project_root(&deep), repo);
        assert_eq!(project_root(&repo), repo);
        // A worktree or a submodule has a `.git` file: its own root.
        let sub = repo.join("src");
        std::fs::write(sub.join(".git"), "gitdir: ../.git/modules/src\n").unwrap();
        assert_eq!(project_root(&deep), sub);
    }

    #[test]
    fn outside_the_scope_reads_as_missing_and_lists_as_absent() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().to_str().unwrap().to_owned();
        let memory = MemoryQuery::new();
        memory.add_session(header("inside", Some(&p)));
        memory.add_session(header("outside", Some("/elsewhere")));
        memory.add_session(header("allowed", Some("/elsewhere")));
        for id in ["inside", "outside", "allowed"] {
            memory.set_surface(id, serde_json::json!({"session": {"id": id, "createdAt": 1}, "events": []}));
        }
        let scope = Scope::project(tmp.path()).unwrap().allowing(["allowed".to_owned()]);
        let scoped = ScopedQuery::new(Arc::new(memory), scope);
        let listed: Vec<String> = block_on(scoped.list_sessions()).unwrap().into_iter().map(|s| s.id).collect();
        assert_eq!(listed, ["inside", "allowed"]);
        assert!(block_on(scoped.read_surface("inside")).is_ok());
        assert!(block_on(scoped.read_surface("allowed")).is_ok());
        let outside = block_on(scoped.read_surface("outside")).err().unwrap();
        let missing = block_on(scoped.read_surface("missing")).err().unwrap();
        assert_eq!(outside.message(), no_session("outside").message());
        assert_eq!(missing.message(), no_session("missing").message());
        assert!(block_on(scoped.read_title("outside")).is_err());
        let everything = ScopedQuery::new(Arc::new(MemoryQuery::new()), Scope::all());
        let missing = block_on(everything.read_surface("missing")).err().unwrap();
        assert_eq!(missing.message(), no_session("missing").message(), "the source's own words are not shown");
    }
}
