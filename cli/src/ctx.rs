//! The sources a command reads, the resolver over them, its cache files,
//! and the target it acts for.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use dsh_session_reference::sources::{
    empty_root_note, open_sources, open_sources_awaiting, MultiQuery, SourceKind, SourceSpec,
};
use dsh_session_reference::{
    block_on, listed_session_id, session_id_named, unlisted_session, Config, DiscoveryCachePart, DshStore, Error,
    ErrorCode, HostError, PinnedListing, Resolver, SessionQuery, Target,
};

use dsh_session_reference_teams::{Database, DatabaseSource};

use crate::args::{Global, TargetArgs, DATABASE_SOURCE};
use crate::cache;
use crate::daemon::pool::{command_cancel, keeping, kept, Keep};
use crate::failure::{read_failed, CliResult, Failure};
use crate::print::{display, note_failed_reads, note_rejected, Out};

/// The id of the target when a person, not a host, runs a command: a new
/// session, which no listed session can be (an id holds no NUL).
pub(crate) const NEW_SESSION: &str = "\0new-session";

/// The current directory as a session's cwd (`None` when it cannot be
/// read or is not UTF-8: then no session ranks as the same directory).
fn current_dir() -> Option<String> {
    std::env::current_dir().ok().and_then(|d| d.into_os_string().into_string().ok())
}

/// What the resolver reads: the DSH store alone (its cache files and
/// rejections its own), or a view over several sources.
pub(crate) enum Sources {
    /// A DSH root: the store (its cache files and rejections).
    Dsh(DshStore),
    /// Several sources (their report).
    Multi(Arc<MultiQuery>),
    /// A team database (`--source postgres=URL`), read alone.
    Database(Arc<Database>),
}

/// How long the context lives, and what that changes.
pub(crate) enum Lifetime {
    /// One command: caching unless `--no-cache`; the index file only when
    /// the command searches (and then the titles file is left alone).
    OneShot { cache: bool, needs_index: bool },
    /// A server (the MCP server): its sources watched where they can be,
    /// and with `cache` both the titles and the search index loaded from
    /// their files (the index on its own thread) and saved by
    /// [`Ctx::save_cache`]; with `awaiting`, a source whose root does not
    /// exist yet is opened once it does (a server started before any).
    /// With a `view` (the part of the sources the server offers, when not
    /// all of them) its cache files are its own ([`cache::Files`]).
    LongLived { cache: bool, awaiting: bool, view: Option<String> },
}

/// What one command acts through: the sources and the resolver over them
/// ([`Shared`]: a command's own, or one the daemon keeps between commands),
/// and how this command prints.
pub(crate) struct Ctx {
    shared: Arc<Shared>,
    /// How the result is printed.
    pub(crate) out: Out,
    /// `--quiet`: no `note:` lines.
    quiet: bool,
    /// `--context-window`.
    pub(crate) context_window: Option<u64>,
    /// Cancels the command (in the daemon: when its caller goes away).
    pub(crate) cancel: Option<dsh_session_reference::CancelToken>,
}

impl std::ops::Deref for Ctx {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// The sources, the resolver over them and their cache files: one
/// command's, or kept by the daemon for every command over the same
/// sources with the same configuration ([`kept`]).
pub(crate) struct Shared {
    pub(crate) sources: Sources,
    /// The query the resolver reads through: the sources, with the one
    /// listing the command makes pinned for its discovery query.
    pinned: Arc<PinnedListing>,
    pub(crate) resolver: Resolver,
    /// The cache files (unless `--no-cache`).
    cache: Option<cache::Files>,
    /// Whether the titles file is left alone (`search`: each indexed
    /// session's title is in the index, under the same fingerprint, so a
    /// warm search reads no title; it would write back only the few it read).
    skip_titles: bool,
    /// The search index being loaded from its cache file on its own
    /// thread, while the command lists the root (see [`Ctx::index_loaded`]).
    loading: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    /// How a DSH root given alone was taken, when not as given.
    root_note: Option<String>,
    /// Held while the cache files are written (a server saves from its
    /// tasks and at its end).
    saving: std::sync::Mutex<()>,
    /// Kept by the daemon: its cache files are saved by the daemon between
    /// commands ([`Shared::save_files`]), not at the end of each.
    kept: bool,
    /// The sources as given, and whether those whose root does not exist
    /// yet are opened once it does (for [`Shared::places_note`]).
    specs: Vec<SourceSpec>,
    awaiting: bool,
    /// Whether the daemon started indexing its sessions ([`Shared::index_ahead`]).
    indexing_ahead: std::sync::atomic::AtomicBool,
}

impl Ctx {
    /// The context over one DSH root, caching as the flags say unless
    /// `cache` is false (a root that lives only for this command).
    pub(crate) fn new(global: &Global, root: PathBuf, candidate_limit: Option<u64>, cache: bool) -> CliResult<Ctx> {
        let lifetime = Lifetime::OneShot { cache: cache && global.caching(), needs_index: false };
        let specs = vec![SourceSpec::new(SourceKind::Dsh, root)];
        Ctx::open_with(global, global.config(candidate_limit)?, specs, lifetime, |q| q)
    }

    /// The context over `specs`; when caching (the default), the search
    /// index is loaded only when `needs_index`, and then the titles file is
    /// neither read nor written.
    pub(crate) fn open(
        global: &Global,
        specs: Vec<SourceSpec>,
        candidate_limit: Option<u64>,
        needs_index: bool,
    ) -> CliResult<Ctx> {
        let lifetime = Lifetime::OneShot { cache: global.caching(), needs_index };
        Ctx::open_with(global, global.config(candidate_limit)?, specs, lifetime, |q| q)
    }

    /// The context over `specs` with `config`, for a command or a server
    /// ([`Lifetime`]), the resolver reading through `scoped(sources)`. In
    /// the daemon a command's context is the one it keeps for these sources
    /// and this configuration ([`kept`]), made long-lived the
    /// first time.
    pub(crate) fn open_with(
        global: &Global,
        config: Config,
        specs: Vec<SourceSpec>,
        lifetime: Lifetime,
        scoped: impl FnOnce(Arc<dyn SessionQuery>) -> Arc<dyn SessionQuery>,
    ) -> CliResult<Ctx> {
        let (out, quiet, context_window) = (global.out(), global.quiet, global.context_window);
        let database = global.database()?;
        let shared = match lifetime {
            // A database is read afresh by each command: it keeps no cache
            // file, and the daemon keeps no context for it.
            _ if database.is_some() => Arc::new(Shared::open_database(config, database.as_deref(), lifetime, scoped)?),
            Lifetime::OneShot { cache, .. } if keeping() => {
                let shared = kept(&specs, &config, cache, || {
                    Shared::open(
                        config,
                        specs.clone(),
                        Lifetime::LongLived { cache, awaiting: false, view: None },
                        scoped,
                        true,
                    )
                })?;
                // The daemon indexes the sessions of a context it keeps
                // from its first command on, in the background; a search
                // waits for what is left (its answer stays exact).
                Shared::index_ahead(&shared);
                // This command lists afresh, and reports what its own reads found.
                shared.pinned.reset();
                shared
            }
            lifetime => Arc::new(Shared::open(config, specs, lifetime, scoped, false)?),
        };
        let cancel = command_cancel();
        Ok(Ctx { shared, out, quiet, context_window, cancel })
    }

    /// Ends a command: a context of its own is left for the process's end
    /// to take (its memory goes with the process faster than thousands of
    /// cached sessions are dropped one by one); one the daemon keeps stays.
    pub(crate) fn end(self) {
        if !self.kept {
            std::mem::forget(self);
        }
    }

    /// Writes the cache files that changed, when caching (a failure only
    /// warns); in the daemon, the daemon does it between commands.
    pub(crate) fn save_cache(&self) {
        if !self.kept {
            self.save_files();
        }
    }

    /// Tells, on stderr, what the sources left out and why: sessions a
    /// newer DSH wrote, sources that could not be listed, a root taken for
    /// the one it meant, and a root that holds no session of its kind.
    pub(crate) fn notes(&self) {
        if self.quiet {
            return;
        }
        self.shared.notes();
    }
}

impl Shared {
    /// The context over the team database at `url` (`--source
    /// postgres=URL`): its sessions read through the teams crate's source,
    /// no cache file (the database is the shared copy).
    fn open_database(
        config: Config,
        url: Option<&str>,
        lifetime: Lifetime,
        scoped: impl FnOnce(Arc<dyn SessionQuery>) -> Arc<dyn SessionQuery>,
    ) -> CliResult<Shared> {
        let url = url.unwrap_or_default();
        let db = Arc::new(Database::new(url).map_err(|e| {
            Failure(Error::new(ErrorCode::InvalidConfig, format!("--source {DATABASE_SOURCE}=URL: {e}")))
        })?);
        let query: Arc<dyn SessionQuery> = Arc::new(DatabaseSource::new(Arc::clone(&db), config));
        let pinned = Arc::new(PinnedListing::new(scoped(query)));
        let resolver = Resolver::new(Arc::clone(&pinned) as Arc<dyn SessionQuery>, config);
        let awaiting = matches!(lifetime, Lifetime::LongLived { awaiting: true, .. });
        Ok(Shared {
            sources: Sources::Database(db),
            pinned,
            resolver,
            cache: None,
            skip_titles: false,
            loading: std::sync::Mutex::new(None),
            root_note: None,
            saving: std::sync::Mutex::new(()),
            kept: false,
            specs: Vec::new(),
            awaiting,
            indexing_ahead: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The sessions listed now, with their fingerprints (one listing).
    pub(crate) fn listing(&self) -> CliResult<dsh_session_reference::SharedListing> {
        let failed = |e: HostError| read_failed(format!("listing sessions failed: {}", e.message()));
        block_on(self.pinned.list_now()).map_err(failed)
    }

    /// Whether its sessions are a team database's, which searches them
    /// itself (the built-in index is never asked).
    pub(crate) fn searches_in_database(&self) -> bool {
        matches!(self.sources, Sources::Database(_))
    }

    /// The name of the source session `id` is read from (a kind's name, or
    /// `postgres` for a team database).
    pub(crate) fn source_of(&self, id: &str) -> &str {
        match &self.sources {
            Sources::Dsh(_) => SourceKind::Dsh.name(),
            Sources::Multi(multi) => multi.source_of(id).unwrap_or("unknown"),
            Sources::Database(_) => DATABASE_SOURCE,
        }
    }

    /// The sources of `specs` and the resolver over them with `config`,
    /// for a command or a server ([`Lifetime`]), the resolver reading
    /// through `scoped(sources)`; `kept` by the daemon or not.
    fn open(
        config: Config,
        specs: Vec<SourceSpec>,
        lifetime: Lifetime,
        scoped: impl FnOnce(Arc<dyn SessionQuery>) -> Arc<dyn SessionQuery>,
        kept: bool,
    ) -> CliResult<Shared> {
        let (cache, needs_index, long_lived, awaiting, view) = match lifetime {
            Lifetime::OneShot { cache, needs_index } => (cache, needs_index, false, false, None),
            Lifetime::LongLived { cache, awaiting, view } => (cache, true, true, awaiting, view),
        };
        let mut root_note = None;
        let (sources, query): (Sources, Arc<dyn SessionQuery>) = match specs.as_slice() {
            [only] if only.kind == SourceKind::Dsh => {
                let resolved = only.resolve().map_err(read_failed)?;
                root_note = resolved.note;
                let only = &resolved.spec;
                // One command lists a few times at most: watching the root
                // would cost more than it saves; a server lists on every call,
                // and from its first on (the title reads of its first query
                // then find each log in that listing).
                let store =
                    DshStore::open(&only.root).map_err(|e| read_failed(e.to_string()))?.with_watching(long_lived);
                let store = if long_lived { store.watching_from_first_listing() } else { store };
                (Sources::Dsh(store.clone()), Arc::new(store))
            }
            _ => {
                let open = if awaiting { open_sources_awaiting } else { open_sources };
                let multi = Arc::new(open(&specs).map_err(|e| Failure(Error::new(ErrorCode::InvalidConfig, e)))?);
                (Sources::Multi(Arc::clone(&multi)), multi)
            }
        };
        let pinned = Arc::new(PinnedListing::new(scoped(query)));
        let resolver = Resolver::new(Arc::clone(&pinned) as Arc<dyn SessionQuery>, config);
        let mut ctx = Shared {
            sources,
            pinned,
            resolver,
            cache: None,
            skip_titles: needs_index && !long_lived,
            loading: std::sync::Mutex::new(None),
            root_note,
            saving: std::sync::Mutex::new(()),
            kept,
            specs: specs.clone(),
            awaiting,
            indexing_ahead: std::sync::atomic::AtomicBool::new(false),
        };
        if cache {
            // Every source fingerprints its sessions, so the cache's
            // entries count only for sessions that did not change; the DSH
            // store's listing cache is used only for directories and logs
            // whose stamps did not change. The search index is read only
            // by search (and by a server).
            let files = match &ctx.sources {
                Sources::Dsh(store) => cache::Files::for_root(store.root(), view.as_deref(), &ctx.resolver),
                Sources::Multi(_) | Sources::Database(_) => {
                    cache::Files::for_sources(&specs, view.as_deref(), &ctx.resolver)
                }
            };
            match files {
                Ok(files) => {
                    if long_lived {
                        ctx.resolver.load_discovery_cache(DiscoveryCachePart::Titles, &files.titles);
                    }
                    if needs_index {
                        // The index file is read on its own thread while the
                        // store lists the root (the two share nothing); the
                        // search waits for it.
                        let (resolver, path) = (ctx.resolver.clone(), files.index.clone());
                        let load = move || {
                            resolver.load_discovery_cache(DiscoveryCachePart::Index, &path);
                        };
                        match std::thread::Builder::new().name("index-load".into()).spawn(load.clone()) {
                            Ok(handle) => ctx.loading = std::sync::Mutex::new(Some(handle)),
                            Err(_) => load(),
                        }
                    } else if !long_lived {
                        ctx.resolver.load_discovery_cache(DiscoveryCachePart::Titles, &files.titles);
                    }
                    if let Sources::Dsh(store) = &ctx.sources {
                        store.load_listing_cache(&files.listing);
                    }
                    ctx.cache = Some(files);
                }
                Err(why) => eprintln!("warning: not caching: {}", display(&why)),
            }
        }
        Ok(ctx)
    }

    /// Waits for the search index to be loaded from its cache file, if it
    /// is being loaded (a load that panicked leaves the index as it was:
    /// empty, or partly filled and then every session is checked again).
    pub(crate) fn index_loaded(&self) {
        // Joined under the lock: a second caller waits for the same load.
        let mut loading = self.loading.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(handle) = loading.take() {
            drop(handle.join());
        }
    }

    /// Starts, once per context, indexing every session on the runtime
    /// (after the cache file's load: from what it holds), so that the
    /// daemon's searches find them indexed.
    fn index_ahead(shared: &Arc<Shared>) {
        if shared.indexing_ahead.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let shared = Arc::clone(shared);
        drop(dsh_session_reference::runtime().spawn(async move {
            let resolver = shared.resolver.clone();
            drop(tokio::task::spawn_blocking(move || shared.index_loaded()).await);
            // A listing that fails is the next command's to report.
            let _ = resolver.index_sessions(None).await;
        }));
    }

    /// The search index's load from its cache file, if it is being loaded,
    /// for a caller that waits for it itself.
    pub(crate) fn take_loading(&self) -> Option<std::thread::JoinHandle<()>> {
        self.loading.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Writes the cache files that changed, when caching (a failure only warns).
    pub(crate) fn save_files(&self) {
        // The directory was made private when the files were chosen.
        let Some(files) = &self.cache else { return };
        let _one_at_a_time = self.saving.lock().unwrap_or_else(|e| e.into_inner());
        let mut saved = Vec::new();
        // A store that watches its root answers from its last listing and
        // keeps no walk to write: the file written before it began to
        // watch (after a server's first listing) is kept.
        if let Sources::Dsh(store) = &self.sources {
            if (store.listing_cache_changed() || !files.listing.exists()) && !store.is_watching() {
                saved.push((&files.listing, store.save_listing_cache(&files.listing)));
            }
        }
        for (part, path) in [(DiscoveryCachePart::Titles, &files.titles), (DiscoveryCachePart::Index, &files.index)] {
            if part == DiscoveryCachePart::Titles && self.skip_titles {
                continue;
            }
            if self.resolver.discovery_cache_changed(part) {
                saved.push((path, self.resolver.save_discovery_cache(part, path)));
            }
        }
        for (path, result) in saved {
            if let Err(e) = result {
                eprintln!(
                    "warning: could not write the cache {}: {}",
                    display(&path.to_string_lossy()),
                    display(&e.to_string())
                );
            }
        }
    }

    /// The target: `--target` with its cwd from `--cwd`, else from its
    /// header when listed (that listing is the one the command's discovery
    /// query uses); without `--target`, a new session (an id no session
    /// has) in `--cwd` or the current directory.
    pub(crate) fn target(&self, args: &TargetArgs) -> CliResult<Target> {
        let Some(id) = &args.target else {
            let cwd = args.cwd.clone().or_else(current_dir);
            return Ok(Target::new(NEW_SESSION, cwd));
        };
        if args.cwd.is_some() {
            return Ok(Target::new(id.clone(), args.cwd.clone()));
        }
        let failed = |e: HostError| read_failed(format!("listing sessions failed: {}", e.message()));
        let listed = block_on(self.pinned.list_now()).map_err(failed)?;
        let cwd = listed.sessions().iter().find(|h| &h.id == id).and_then(|h| h.cwd.clone());
        Ok(Target::new(id.clone(), cwd))
    }

    /// The session id that `name` (an id, a `dsh-session:` URI or a
    /// mention) means among the listed sessions, by the core's rule
    /// ([`listed_session_id`]): an id given without its source's prefix, or
    /// its first characters (four or more, as git takes a short hash), is
    /// found when one session has it (an error names them when several
    /// do); an id no source lists is returned as given, for the command to
    /// report missing.
    pub(crate) fn session_id(&self, name: &str) -> CliResult<String> {
        self.listed_id(session_id_named(name)?)
    }

    /// What `act` gives for the session `name` means, as
    /// [`session_id`](Self::session_id) finds it, with no listing when
    /// `act` succeeds on the id as named: listing a source that keeps a
    /// file per session opens every file, which a read of a whole id does
    /// not need. Only when that fails are the sessions listed, and `act` is
    /// done again on the id the listing finds (a short id, or one without
    /// its source's prefix); when the listing finds that same id, the first
    /// failure is the answer. So every answer is the one resolving first
    /// gives (an ambiguous short id, a listing that fails, a missing
    /// session), save that a session read by its whole id is read even
    /// where listing the sources would have failed. `act` must have no
    /// effect until it succeeds.
    pub(crate) fn on_session<T>(&self, name: &str, act: impl Fn(&str) -> CliResult<T>) -> CliResult<T> {
        let id = session_id_named(name)?;
        let missed = match act(&id) {
            Ok(done) => return Ok(done),
            Err(Failure(e)) if e.code() == ErrorCode::Cancelled => return Err(Failure(e)),
            Err(missed) => missed,
        };
        match self.listed(&id)? {
            None => Err(Failure(unlisted_session(&id, missed.0))),
            Some(listed) if listed == id => Err(missed),
            Some(listed) => act(&listed),
        }
    }

    /// The session id `id` means among the sessions listed now
    /// ([`listed_session_id`]), else `id`.
    fn listed_id(&self, id: String) -> CliResult<String> {
        Ok(self.listed(&id)?.unwrap_or(id))
    }

    /// The listed session `id` means ([`listed_session_id`]); `None` when
    /// no listed session is meant.
    fn listed(&self, id: &str) -> CliResult<Option<String>> {
        let failed = |e: HostError| read_failed(format!("listing sessions failed: {}", e.message()));
        let listed = block_on(self.pinned.list_now()).map_err(failed)?;
        Ok(listed_session_id(listed.sessions(), id)?)
    }

    /// The label a mention of session `id` shows, as the core gives it
    /// ([`Resolver::label`]); an error when no source has the session.
    pub(crate) fn mention_label(&self, id: &str) -> CliResult<String> {
        Ok(block_on(self.resolver.label(&Target::new(NEW_SESSION, None), id))?)
    }

    /// The sources as given.
    pub(crate) fn specs(&self) -> &[SourceSpec] {
        &self.specs
    }

    /// What a server's empty listing says: every place it looks at, each
    /// that does not exist marked (not there yet, when it is opened once it
    /// is; else missing).
    pub(crate) fn places_note(&self) -> String {
        if let Sources::Database(db) = &self.sources {
            return format!(
                "no session listed. The place looked at: the database {}. A session pushed there is listed on the next \
                 call.",
                db.shown()
            );
        }
        let places: Vec<String> = self
            .specs
            .iter()
            .map(|s| {
                let place = format!("{} at {}", s.kind.name(), s.root.display());
                match (s.kind.root_exists(&s.root), self.awaiting) {
                    (true, _) => place,
                    (false, true) => format!("{place} (not there yet)"),
                    (false, false) => format!("{place} (missing)"),
                }
            })
            .collect();
        format!(
            "no session listed. The places looked at: {}. A session written there is listed on the next call.",
            places.join(", ")
        )
    }

    /// [`Ctx::notes`], said whatever `--quiet`.
    fn notes(&self) {
        match &self.sources {
            Sources::Dsh(store) => {
                note_rejected(store);
                let mut err = std::io::stderr().lock();
                if let Some(note) = &self.root_note {
                    let _ = writeln!(err, "note: {}", display(note));
                }
                if store.last_listed() == Some(0) {
                    let _ = writeln!(err, "note: {}", display(&empty_root_note(SourceKind::Dsh, store.root())));
                }
            }
            Sources::Database(_) => {}
            Sources::Multi(multi) => {
                let mut err = std::io::stderr().lock();
                for status in multi.last_report() {
                    if let Err(why) = &status.outcome {
                        let _ = writeln!(err, "note: source {} not listed: {}", status.name, display(why));
                    }
                    if let Some(note) = &status.note {
                        let _ = writeln!(err, "note: source {}: {}", status.name, display(note));
                    }
                }
            }
        }
        note_failed_reads(&self.pinned.failed_reads());
    }
}

impl Keep for Shared {
    fn save_files(&self) {
        Shared::save_files(self);
    }
}
