//! `dsh-session-ref`: cross-session references from the command line, over
//! a DeepSeek Harness sessions directory (the embedded DSH store) and, with
//! `--source`, Claude Code transcripts and Codex rollouts as well.
//!
//! Exit codes: 0 on success, 2 on usage errors, 1 on contract errors (the
//! contract error code (docs/contract.md §8.2) is printed to stderr as `error: CODE: message`).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use dsh_session_reference::harden::invisible::is_invisible;
use dsh_session_reference::harden::secrets::redact;
use dsh_session_reference::json::stringify;
use dsh_session_reference::projection::project_json;
mod cache;

use dsh_session_reference::sources::dsh::RejectionKind;
use dsh_session_reference::sources::{default_specs, open_sources, MultiQuery, SourceKind, SourceSpec};
use dsh_session_reference::{
    block_on, decode_uri, encode_uri, format_mention, parse_text_with, Candidate, Config, DiscoveryCachePart, DshStore,
    Error, ErrorCode, Hardening, Prepared, Resolver, SearchOptions, SearchResult, SearchScope, SessionQuery,
    SharedListing, SurfaceData, Target,
};
use dsh_session_reference::{
    BlockingSessionQuery, CompatConfig, DshCompat, Fingerprint, HostError, QueryFuture, SessionHeader,
};
use serde_json::{json, Map, Value};

use dsh_session_reference::sources::empty_root_note;

mod example;

/// Bring a bounded, read-only snapshot of other DeepSeek Harness sessions
/// into a new message.
#[derive(Parser, Debug)]
#[command(name = "dsh-session-ref", version, about, long_about = None)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Debug)]
struct Global {
    /// DSH sessions root [default: $DSH_HOME/sessions, else ~/.dsh/sessions]
    #[arg(long, global = true, value_name = "DIR", conflicts_with = "source")]
    root: Option<PathBuf>,
    /// A source to read, KIND=DIR with KIND dsh, claude-code or codex
    /// (repeatable, one per kind). Without --source and --root: every
    /// default location that exists (~/.dsh/sessions, ~/.claude/projects or
    /// $CLAUDE_CONFIG_DIR/projects, $CODEX_HOME or ~/.codex), named on stderr
    #[arg(long, global = true, value_name = "KIND=DIR", value_parser = parse_spec)]
    source: Vec<SourceSpec>,
    /// Per-source byte budget of a prepared snapshot [default: 65536]
    #[arg(long, global = true, value_name = "N")]
    max_reference_bytes: Option<u64>,
    /// Distinct references allowed per message, 1 to 3 [default: 3]
    #[arg(long, global = true, value_name = "N")]
    max_references: Option<u64>,
    /// Reproduce the output of this DSH release: 0.1.1, 0.1.5 or 0.1.7 [default: 0.1.1]
    #[arg(long, global = true, value_name = "VERSION")]
    dsh_compat: Option<String>,
    /// The model's context window in tokens, for the automatic budget of dshCompat 0.1.5 and 0.1.7
    #[arg(long, global = true, value_name = "TOKENS")]
    context_window: Option<u64>,
    /// Print machine-readable JSON (the shapes of docs/contract.md)
    #[arg(long, global = true)]
    json: bool,
    /// Hardened mode: --redact-secrets, --escape-invisible and --sanitize-labels together (docs/security.md)
    #[arg(long, global = true)]
    hardened: bool,
    /// Replace credentials in the snapshot and in labels by [redacted <kind>]
    #[arg(long, global = true)]
    redact_secrets: bool,
    /// Write invisible and bidirectional characters as \uXXXX escapes in the snapshot
    #[arg(long, global = true)]
    escape_invisible: bool,
    /// Drop hidden characters from labels and cut them to 100 characters
    #[arg(long, global = true)]
    sanitize_labels: bool,
    /// Keep what candidates --query and search learn (titles, indexed text)
    /// in $XDG_CACHE_HOME/dsh-session-reference/ to start warm next time
    #[arg(long, global = true, overrides_with = "no_cache")]
    cache: bool,
    /// Read every session afresh and write no cache file [the default]
    #[arg(long, global = true, overrides_with = "cache")]
    no_cache: bool,
}

impl Global {
    /// The hardened mode's protections the flags ask for.
    fn hardening(&self) -> Hardening {
        Hardening {
            redact_secrets: self.hardened || self.redact_secrets,
            escape_invisible: self.hardened || self.escape_invisible,
            sanitize_labels: self.hardened || self.sanitize_labels,
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List sessions the target could reference, best first, with mentions
    Candidates {
        #[command(flatten)]
        target: TargetArgs,
        /// Keep sessions whose id, cwd or title contains this (case-insensitive)
        #[arg(long, default_value = "")]
        query: String,
        /// At most this many candidates [default: 50]
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
    },
    /// Search what was said in sessions (messages, titles, ids, cwds), best first, with snippets
    Search {
        #[command(flatten)]
        target: TargetArgs,
        /// The text to find (case-insensitive; every word must occur)
        query: String,
        /// At most this many results [default: 50]
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
        /// Only sessions in the target's cwd
        #[arg(long)]
        same_cwd: bool,
    },
    /// Rewrite the mentions in a message and prepare the referenced context
    Prepare {
        #[command(flatten)]
        target: TargetArgs,
        /// The message text, with @[label](dsh-session:...) mentions
        #[arg(long, value_name = "TEXT", conflicts_with = "stdin", required_unless_present = "stdin")]
        message: Option<String>,
        /// Read the message text from standard input
        #[arg(long)]
        stdin: bool,
        /// Print only the context text given to the model
        #[arg(long, conflicts_with = "json")]
        prompt: bool,
    },
    /// Show the projected conversation of one session, as the model sees it
    Show {
        /// The session id
        id: String,
    },
    /// Encode or decode dsh-session: URIs
    Uri {
        #[command(subcommand)]
        command: UriCommand,
    },
    /// Print the mention text of a session
    Mention {
        /// The session id
        id: String,
        /// The label shown in the mention [default: the id]
        #[arg(long)]
        label: Option<String>,
    },
    /// Run the main job end to end on the example root embedded in the binary (or --root)
    Demo,
}

#[derive(Subcommand, Debug)]
enum UriCommand {
    /// Print the canonical URI of a session id
    Encode {
        /// The session id
        id: String,
    },
    /// Print the session id a URI names
    Decode {
        /// A dsh-session: URI
        uri: String,
    },
}

#[derive(Args, Debug)]
struct TargetArgs {
    /// The session that is about to send the message
    #[arg(long, value_name = "ID")]
    target: String,
    /// The target's cwd [default: from its header when it is in the root]
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
}

/// A failure: a contract error (exit 1, contract code on stderr).
struct Failure(Error);

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure(e)
    }
}

type CliResult<T = ()> = Result<T, Failure>;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => e.exit(), // 0 for --help/--version, 2 for usage errors
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(e)) => {
            eprintln!("error: {}: {}", e.code(), e.message());
            ExitCode::from(1)
        }
    }
}

fn default_root() -> PathBuf {
    if let Some(home) = std::env::var_os("DSH_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(home).join("sessions");
    }
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE")).unwrap_or_default();
    PathBuf::from(home).join(".dsh").join("sessions")
}

fn parse_spec(spec: &str) -> Result<SourceSpec, String> {
    SourceSpec::parse(spec)
}

/// The sources to open: `--source`s as given; else `--root` (DSH only);
/// else every default location that exists, named on stderr unless it is
/// the DSH root alone (which reads exactly as before). With no default
/// location at all, the DSH default, whose absence is then the error.
fn chosen_sources(global: &Global, dsh_root: PathBuf) -> Vec<SourceSpec> {
    if !global.source.is_empty() {
        return global.source.clone();
    }
    if global.root.is_some() {
        return vec![SourceSpec::new(SourceKind::Dsh, dsh_root)];
    }
    let found = default_specs();
    if found.is_empty() || (found.len() == 1 && found[0].kind == SourceKind::Dsh) {
        return vec![SourceSpec::new(SourceKind::Dsh, dsh_root)];
    }
    let named: Vec<String> =
        found.iter().map(|s| format!("{}={}", s.kind.name(), display(&s.root.to_string_lossy()))).collect();
    eprintln!("note: sources: {}", named.join(", "));
    found
}

fn read_failed(message: impl Into<String>) -> Failure {
    Failure(Error::new(ErrorCode::ReadFailed, message))
}

/// What the resolver reads: the DSH store alone (exactly as before any
/// other source existed), or a view over several sources.
enum Sources {
    /// A DSH root: the store, and the query the resolver reads it through.
    Dsh(DshStore, Arc<OneListing>),
    Multi(Arc<MultiQuery>),
}

/// The store as the resolver of one command sees it: the listing the
/// command made to find the target's cwd is the one the resolver's query
/// uses (the command began before both), so a command lists the root once,
/// and the fingerprints are the identities that listing saw, handed over
/// with it as the store's shared listing (a title read
/// after it is cached under an identity no newer than its content, so a
/// later run reads it again if it changed). Reads go to the store.
struct OneListing {
    store: DshStore,
    listed: std::sync::Mutex<Option<SharedListing>>,
}

impl OneListing {
    fn new(store: &DshStore) -> Arc<OneListing> {
        Arc::new(OneListing { store: store.clone(), listed: std::sync::Mutex::new(None) })
    }

    /// Lists the sessions now; the resolver's next listing is this one.
    fn list_now(&self) -> Result<SharedListing, HostError> {
        let listed = BlockingSessionQuery::shared_listing(&self.store)?
            .ok_or_else(|| HostError::new("the DSH store gave no listing"))?;
        *self.listed.lock().unwrap_or_else(|e| e.into_inner()) = Some(listed.clone());
        Ok(listed)
    }

    /// The listing [`list_now`](Self::list_now) made, once.
    fn take(&self) -> Option<SharedListing> {
        self.listed.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl SessionQuery for OneListing {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        match self.take() {
            Some(listed) => Box::pin(async move { Ok(listed.sessions().to_vec()) }),
            None => SessionQuery::list_sessions(&self.store),
        }
    }
    /// The command's one listing, with the identities it saw.
    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        match self.take() {
            Some(listed) => Box::pin(async move { Ok(Some(listed)) }),
            None => SessionQuery::shared_listing(&self.store),
        }
    }
    fn read_title<'a>(&'a self, id: &'a str) -> QueryFuture<'a, Option<String>> {
        SessionQuery::read_title(&self.store, id)
    }
    fn read_surface<'a>(&'a self, id: &'a str) -> QueryFuture<'a, SurfaceData> {
        SessionQuery::read_surface(&self.store, id)
    }
    fn fingerprints<'a>(&'a self, ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        SessionQuery::fingerprints(&self.store, ids)
    }
}

/// The sources, the resolver over them, and the output mode.
struct Ctx {
    sources: Sources,
    resolver: Resolver,
    json: bool,
    /// `--context-window`.
    context_window: Option<u64>,
    /// The cache files (`--cache`, DSH store only).
    cache: Option<cache::Files>,
    /// Whether the titles file is left alone (`search`: each indexed
    /// session's title is in the index, under the same fingerprint, so a
    /// warm search reads no title; it would write back only the few it read).
    skip_titles: bool,
    /// The search index being loaded from its cache file on its own
    /// thread, while the command lists the root (see [`Ctx::index_loaded`]).
    loading: Option<std::thread::JoinHandle<()>>,
    /// How a DSH root given alone was taken, when not as given.
    root_note: Option<String>,
}

impl Ctx {
    fn new(global: &Global, root: PathBuf, candidate_limit: Option<u64>) -> CliResult<Ctx> {
        Ctx::open(global, vec![SourceSpec::new(SourceKind::Dsh, root)], candidate_limit, false)
    }

    /// The context over `specs`; with `--cache`, the search index is
    /// loaded only when `needs_index`, and then the titles file is neither
    /// read nor written.
    fn open(
        global: &Global,
        specs: Vec<SourceSpec>,
        candidate_limit: Option<u64>,
        needs_index: bool,
    ) -> CliResult<Ctx> {
        let config = Config::new(global.max_references, candidate_limit, global.max_reference_bytes)?
            .with_hardening(global.hardening());
        let config = match &global.dsh_compat {
            None => config,
            Some(name) => {
                let profile = DshCompat::from_name(name).ok_or_else(|| {
                    Failure(Error::new(ErrorCode::InvalidConfig, "--dsh-compat must be 0.1.1, 0.1.5 or 0.1.7"))
                })?;
                config.with_compat(CompatConfig::with_profile(profile, None, global.max_reference_bytes.is_some())?)
            }
        };
        let (json, context_window) = (global.json, global.context_window);
        if let [only] = specs.as_slice() {
            if only.kind == SourceKind::Dsh {
                let resolved = only.resolve().map_err(read_failed)?;
                let (only, root_note) = (&resolved.spec, resolved.note);
                // One command lists a few times at most: watching the root
                // would cost more than it saves.
                let store = DshStore::open(&only.root).map_err(|e| read_failed(e.to_string()))?.with_watching(false);
                let query = OneListing::new(&store);
                let resolver = Resolver::new(query.clone(), config);
                let sources = Sources::Dsh(store.clone(), query);
                if !global.cache {
                    let skip_titles = needs_index;
                    return Ok(Ctx {
                        sources,
                        resolver,
                        json,
                        context_window,
                        cache: None,
                        skip_titles,
                        loading: None,
                        root_note,
                    });
                }
                // The store fingerprints its logs, so the cache's entries
                // count only for logs that did not change; its listing
                // cache is used only for directories and logs whose stamps
                // did not change. The search index is read only by search.
                let mut loading = None;
                let cache = match cache::Files::for_root(&only.root) {
                    Ok(files) => {
                        if needs_index {
                            // The index file is read on its own thread while
                            // the store lists the root (the two share nothing);
                            // the search waits for it.
                            let (resolver, path) = (resolver.clone(), files.index.clone());
                            let load = move || {
                                resolver.load_discovery_cache(DiscoveryCachePart::Index, &path);
                            };
                            match std::thread::Builder::new().name("index-load".into()).spawn(load.clone()) {
                                Ok(handle) => loading = Some(handle),
                                Err(_) => load(),
                            }
                        } else {
                            resolver.load_discovery_cache(DiscoveryCachePart::Titles, &files.titles);
                        }
                        store.load_listing_cache(&files.listing);
                        Some(files)
                    }
                    Err(why) => {
                        eprintln!("warning: not caching: {why}");
                        None
                    }
                };
                let skip_titles = needs_index;
                return Ok(Ctx { sources, resolver, json, context_window, cache, skip_titles, loading, root_note });
            }
        }
        if global.cache {
            eprintln!("note: --cache applies to a DSH root alone; reading every session afresh");
        }
        let multi = Arc::new(open_sources(&specs).map_err(|e| Failure(Error::new(ErrorCode::InvalidConfig, e)))?);
        let resolver = Resolver::new(multi.clone(), config);
        Ok(Ctx {
            sources: Sources::Multi(multi),
            resolver,
            json,
            context_window,
            cache: None,
            skip_titles: needs_index,
            loading: None,
            root_note: None,
        })
    }

    /// Waits for the search index to be loaded from its cache file, if it
    /// is being loaded (a load that panicked leaves the index as it was:
    /// empty, or partly filled and then every session is checked again).
    fn index_loaded(&mut self) {
        if let Some(handle) = self.loading.take() {
            drop(handle.join());
        }
    }

    /// Writes the cache files that changed, when caching (a failure only warns).
    fn save_cache(&self) {
        let (Some(files), Sources::Dsh(store, _)) = (&self.cache, &self.sources) else { return };
        if let Some(Err(e)) = files.listing.parent().map(std::fs::create_dir_all) {
            eprintln!("warning: could not write the cache {}: {e}", files.listing.display());
            return;
        }
        let mut saved = Vec::new();
        if store.listing_cache_changed() || !files.listing.exists() {
            saved.push((&files.listing, store.save_listing_cache(&files.listing)));
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
                eprintln!("warning: could not write the cache {}: {e}", path.display());
            }
        }
    }

    /// The target, its cwd from `--cwd`, else from its header when listed.
    fn target(&self, args: &TargetArgs) -> CliResult<Target> {
        if args.cwd.is_some() {
            return Ok(Target::new(args.target.clone(), args.cwd.clone()));
        }
        let failed = |e: HostError| read_failed(format!("listing sessions failed: {}", e.message()));
        let cwd = match &self.sources {
            Sources::Dsh(_, query) => {
                let listed = query.list_now().map_err(failed)?;
                listed.sessions().iter().find(|h| h.id == args.target).and_then(|h| h.cwd.clone())
            }
            Sources::Multi(multi) => {
                let headers = block_on(multi.list_sessions()).map_err(failed)?;
                headers.into_iter().find(|h| h.id == args.target).and_then(|h| h.cwd)
            }
        };
        Ok(Target::new(args.target.clone(), cwd))
    }

    /// Tells, on stderr, what the sources left out and why: sessions a
    /// newer DSH wrote, sources that could not be listed, a root taken for
    /// the one it meant, and a root that holds no session of its kind.
    fn notes(&self) {
        match &self.sources {
            Sources::Dsh(store, _) => {
                note_unsupported(store);
                let mut err = std::io::stderr().lock();
                if let Some(note) = &self.root_note {
                    let _ = writeln!(err, "note: {}", display(note));
                }
                if store.last_listed() == Some(0) {
                    let _ = writeln!(err, "note: {}", display(&empty_root_note(SourceKind::Dsh, store.root())));
                }
            }
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
    }
}

fn run(cli: Cli) -> CliResult {
    let g = &cli.global;
    let root = || g.root.clone().unwrap_or_else(default_root);
    let sources = || chosen_sources(g, root());
    match &cli.command {
        Command::Candidates { target, query, limit } => {
            let ctx = Ctx::open(g, sources(), None, false)?;
            let target = ctx.target(target)?;
            let list = candidates(&ctx.resolver, &target, query, *limit)?;
            ctx.save_cache();
            print_candidates(&list, ctx.json);
            ctx.notes();
            // The process ends here: its memory goes with it faster than
            // the caches (thousands of sessions) are dropped one by one.
            std::mem::forget(ctx);
        }
        Command::Search { target, query, limit, same_cwd } => {
            let mut ctx = Ctx::open(g, sources(), None, true)?;
            let target = ctx.target(target)?;
            ctx.index_loaded();
            let scope = if *same_cwd { SearchScope::SameCwd } else { SearchScope::All };
            let options = SearchOptions { limit: *limit, scope };
            let list = ctx.resolver.search_blocking(&target, query, &options, None)?;
            ctx.save_cache();
            print_search(&list, ctx.json);
            ctx.notes();
            std::mem::forget(ctx);
        }
        Command::Prepare { target, message, stdin, prompt } => {
            let text = match (message, stdin) {
                (Some(m), _) => m.clone(),
                (None, _) => {
                    let mut s = String::new();
                    std::io::stdin()
                        .read_to_string(&mut s)
                        .map_err(|e| Failure(Error::new(ErrorCode::InvalidReference, format!("reading stdin: {e}"))))?;
                    s
                }
            };
            let ctx = Ctx::open(g, sources(), None, false)?;
            let target = ctx.target(target)?;
            let prepared = prepare(&ctx, &target, &text)?;
            if *prompt {
                print!("{}", context_text(&prepared).unwrap_or_default());
            } else if ctx.json {
                println!("{}", stringify(&prepared.to_json()));
            } else {
                print_prepared(&prepared);
            }
        }
        Command::Show { id } => {
            let ctx = Ctx::open(g, sources(), None, false)?;
            show(&ctx, id)?;
        }
        Command::Uri { command: UriCommand::Encode { id } } => {
            let uri = encode_uri(id);
            print_text_or_json(&uri, g.json);
        }
        Command::Uri { command: UriCommand::Decode { uri } } => {
            let id = decode_uri(uri)?;
            print_text_or_json(&id, g.json);
        }
        Command::Mention { id, label } => {
            let mention = format_mention(id, label.as_deref());
            print_text_or_json(&mention, g.json);
        }
        Command::Demo => {
            // Without --root: the example store embedded in the binary.
            let bundled = match &g.root {
                Some(_) => None,
                None => Some(example::ExampleRoot::unpack().map_err(|e| read_failed(format!("bundled example: {e}")))?),
            };
            let root = g.root.clone().or_else(|| bundled.as_ref().map(|b| b.path().to_owned()));
            let ctx = Ctx::new(g, root.unwrap_or_default(), None)?;
            demo(&ctx, bundled.is_some())?;
        }
    }
    Ok(())
}

fn candidates(resolver: &Resolver, target: &Target, query: &str, limit: Option<u64>) -> CliResult<Vec<Candidate>> {
    Ok(resolver.candidates_blocking(target, query, limit, None)?)
}

/// Parses the mentions of `text` and prepares `[{"type":"text","text": rewritten}]`.
fn prepare(ctx: &Ctx, target: &Target, text: &str) -> CliResult<Prepared> {
    let parsed = parse_text_with(text, ctx.resolver.config().hardening())?;
    let references: Vec<Value> =
        parsed.references.iter().map(|r| json!({"sessionId": r.session_id, "label": r.label})).collect();
    let content = json!([{"type": "text", "text": parsed.text}]);
    Ok(ctx.resolver.prepare_for_context_window_blocking(target, &content, &references, ctx.context_window, None)?)
}

fn context_text(prepared: &Prepared) -> Option<&str> {
    prepared.additional_context.as_ref().map(|c| c.prompt.as_str())
}

/// `s` for a terminal (ids, cwds and labels may hold anything): control, format, bidirectional and other invisible
/// characters written as Rust escapes, so that they can be seen.
fn display(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() || is_invisible(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn print_text_or_json(text: &str, as_json: bool) {
    if as_json {
        println!("{}", stringify(&Value::from(text)));
    } else {
        println!("{text}");
    }
}

/// Tells, on stderr, about sessions the store left out because a DSH newer
/// than this reader wrote them (the other sessions were listed as usual).
fn note_unsupported(store: &DshStore) {
    let Some(rejected) = store.last_rejected() else { return };
    let mut err = std::io::stderr().lock();
    for r in rejected.iter().filter(|r| r.kind == RejectionKind::Unsupported) {
        let _ = writeln!(err, "note: not listed: {}: {}", display(&r.path.to_string_lossy()), r.reason);
    }
}

fn print_candidates(list: &[Candidate], as_json: bool) {
    if as_json {
        let array = Value::Array(list.iter().map(Candidate::to_json).collect());
        println!("{}", stringify(&array));
        return;
    }
    if list.is_empty() {
        println!("No candidates.");
    }
    let mut out = std::io::stdout().lock();
    for (i, c) in list.iter().enumerate() {
        let cwd = c.cwd.as_deref().map_or_else(|| "(none)".to_owned(), display);
        let _ = writeln!(out, "{:>2}. {}", i + 1, display(&c.label));
        let _ = writeln!(out, "    id: {}   cwd: {}   createdAt: {}", display(&c.session_id), cwd, c.created_at);
        let _ = writeln!(out, "    {}", display(c.mention.as_deref().unwrap_or_default()));
    }
}

fn print_search(list: &[SearchResult], as_json: bool) {
    if as_json {
        let array = Value::Array(list.iter().map(SearchResult::to_json).collect());
        println!("{}", stringify(&array));
        return;
    }
    if list.is_empty() {
        println!("No matches.");
    }
    let mut out = std::io::stdout().lock();
    for (i, r) in list.iter().enumerate() {
        let c = &r.candidate;
        let cwd = c.cwd.as_deref().map_or_else(|| "(none)".to_owned(), display);
        let at = match r.message_index {
            Some(m) => format!("message {m}"),
            None => r.field.as_str().to_owned(),
        };
        let _ = writeln!(out, "{:>2}. {}", i + 1, display(&c.label));
        let _ = writeln!(out, "    {}: {}", at, display(&r.snippet));
        let _ = writeln!(out, "    id: {}   cwd: {}   createdAt: {}", display(&c.session_id), cwd, c.created_at);
        let _ = writeln!(out, "    {}", display(c.mention.as_deref().unwrap_or_default()));
    }
}

fn print_prepared(prepared: &Prepared) {
    let mut out = std::io::stdout().lock();
    let text = prepared.content[0]["text"].as_str().unwrap_or_default();
    let _ = writeln!(out, "Message:\n{text}\n");
    let Some(ctx) = &prepared.additional_context else {
        let _ = writeln!(out, "No sessions referenced.");
        return;
    };
    let _ = writeln!(out, "Referenced sessions:");
    for r in &ctx.source.references {
        let _ = writeln!(
            out,
            "  - {} ({}): {} of {} messages retained, {} omitted ({} bytes omitted){}",
            display(&r.label),
            display(&r.session_id),
            r.stats.retained_messages,
            r.stats.original_messages,
            r.stats.omitted_messages,
            r.stats.omitted_bytes,
            if r.stats.truncated() { ", truncated" } else { ", complete" },
        );
    }
    let prompt = context_text(prepared).unwrap_or_default();
    let _ = writeln!(out, "\nContext ({} bytes) follows the message; print it with --prompt.", prompt.len());
}

fn show(ctx: &Ctx, id: &str) -> CliResult {
    let surface = match &ctx.sources {
        Sources::Dsh(store, _) => {
            SurfaceData::json(store.read_surface_json(id).map_err(|e| Failure(Error::read_failed(id, e.into())))?)
        }
        Sources::Multi(multi) => block_on(multi.read_surface(id)).map_err(|e| Failure(Error::read_failed(id, e)))?,
    };
    let value_bytes;
    let owned_conversation;
    let projection = match &surface {
        SurfaceData::Json(bytes) => project_json((**bytes).as_ref()).map_err(read_failed)?,
        SurfaceData::Value(v) => {
            value_bytes = serde_json::to_vec(&**v).map_err(|e| read_failed(e.to_string()))?;
            project_json(&value_bytes).map_err(read_failed)?
        }
        SurfaceData::Conversation(c) => {
            owned_conversation = c.clone();
            owned_conversation.projection()
        }
    };
    let mut conversation = Vec::with_capacity(projection.items.len());
    for item in &projection.items {
        let mut text = item.text.decode().map_err(read_failed)?.into_owned();
        if ctx.resolver.config().hardening().redact_secrets {
            text = redact(&text).0.into_owned();
        }
        conversation.push((item.role.as_str(), text, item.checkpoint));
    }
    if ctx.json {
        let mut m = Map::new();
        m.insert("sessionId".into(), Value::from(id));
        m.insert("label".into(), Value::from(id));
        m.insert("cwd".into(), projection.cwd.as_deref().map_or(Value::Null, Value::from));
        m.insert(
            "capturedThroughSeq".into(),
            projection.captured_through_seq.clone().map_or(Value::Null, Value::Number),
        );
        let items = conversation.iter().map(|(role, text, _)| json!({"role": role, "text": text})).collect();
        m.insert("conversation".into(), Value::Array(items));
        println!("{}", stringify(&Value::Object(m)));
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    let cwd = projection.cwd.as_deref().map_or_else(|| "(none)".to_owned(), display);
    let seq = projection.captured_through_seq.as_ref().map_or_else(|| "null".to_owned(), ToString::to_string);
    let _ = writeln!(out, "Session {}   cwd: {}   capturedThroughSeq: {}", display(id), cwd, seq);
    if conversation.is_empty() {
        let _ = writeln!(out, "(no projected messages)");
    }
    for (role, text, checkpoint) in &conversation {
        let marker = if *checkpoint { " (compaction checkpoint)" } else { "" };
        let _ = writeln!(out, "\n[{role}{marker}]\n{text}");
    }
    Ok(())
}

fn demo(ctx: &Ctx, bundled: bool) -> CliResult {
    let target = Target::new("demo-new-session", Some("/home/dev/alpha".to_owned()));
    let list = ctx.resolver.candidates_blocking(&target, "", None, None)?;
    let picked: Vec<&Candidate> = list.iter().take(2).collect();
    if picked.len() < 2 {
        return Err(read_failed("the demo root needs at least two sessions"));
    }
    let message = format!(
        "Compare what we settled in {} with the outcome of {}, and list what is still open.",
        picked[0].mention.as_deref().unwrap_or_default(),
        picked[1].mention.as_deref().unwrap_or_default()
    );
    let prepared = prepare(ctx, &target, &message)?;
    if ctx.json {
        let out = json!({
            "target": {"id": target.id, "cwd": target.cwd},
            "candidates": list.iter().map(Candidate::to_json).collect::<Vec<_>>(),
            "message": message,
            "prepared": prepared.to_json(),
        });
        println!("{}", stringify(&out));
        return Ok(());
    }
    if bundled {
        println!("== Sessions root: the bundled example store (examples/sessions/) ==\n");
    } else if let Sources::Dsh(store, _) = &ctx.sources {
        println!("== Sessions root: {} ==\n", store.root().display());
    }
    println!("== Candidates for a new session in /home/dev/alpha ==\n");
    print_candidates(&list, false);
    println!("\n== The user's message ==\n\n{message}\n");
    println!("== Prepared ==\n");
    print_prepared(&prepared);
    println!("\n== Context given to the model ==\n");
    println!("{}", context_text(&prepared).unwrap_or_default());
    Ok(())
}
