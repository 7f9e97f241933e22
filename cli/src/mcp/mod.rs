//! `dsh-session-ref mcp`: the sessions served to MCP clients on standard
//! input and output (docs/mcp.md), on the official Rust SDK (`rmcp`).
//!
//! One process serves both protocol eras: a client that opens with
//! `initialize` (2025-06-18, 2025-11-25) gets the handshake, one that sends
//! `server/discover` or a request with its version in `_meta` (2026-07-28)
//! is served statelessly; `rmcp` picks the lifecycle from the first
//! message. The resolver, its title and search indexes and the sources'
//! listings live as long as the process, the sources watched where they
//! can be, and (with a DSH root alone) the cache files are loaded at the
//! start and saved as they change. Every session is indexed in the
//! background from the start; a search before that ends answers at once
//! from what is indexed, and says so.

use std::sync::Arc;

use dsh_session_reference::sources::SourceSpec;
use dsh_session_reference::{runtime, Config, Error, ErrorCode, Hardening, SessionQuery};
use rmcp::ServiceExt;

use crate::args::{Global, McpArgs};
use crate::ctx::{Ctx, Lifetime};
use crate::failure::{CliResult, Failure};

mod scope;
mod server;
mod tools;
mod transport;

use scope::{Scope, ScopedQuery};
pub(crate) use server::{Recorder, Server};

/// Serves until standard input closes, over `specs`, `awaiting` the roots
/// that do not exist yet ([`crate::args::server_sources`]).
pub(crate) fn run(global: &Global, args: &McpArgs, sources: (Vec<SourceSpec>, bool)) -> CliResult {
    let server = open(global, args, sources)?;
    let ctx = server.ctx();
    let served = runtime().block_on(async move {
        // Indexing starts with the process: a search before it ends
        // answers from what is indexed, marked incomplete.
        server.index_in_background();
        let (transport, writer) = transport::stdio();
        let result = match server.serve(transport).await {
            Ok(running) => running.waiting().await.map(|_| ()).map_err(|e| e.to_string()),
            // A client that went away before it said anything.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => Ok(()),
            Err(e) => Err(e.to_string()),
        };
        // Every answer queued is written before the process ends.
        drop(writer.await);
        ctx.save_cache();
        result
    });
    served.map_err(|e| crate::failure::read_failed(format!("serving MCP: {e}")))
}

/// The server a long-lived front answers through (`mcp` on standard input
/// and output, `serve` over HTTP): the sources of `specs` in the scope
/// `args` draws, hardened unless `--no-harden`, with the caller and the
/// project's directory it ranks by.
pub(crate) fn open(global: &Global, args: &McpArgs, sources: (Vec<SourceSpec>, bool)) -> CliResult<Server> {
    open_over(global, args, sources, None, |query, _| query)
}

/// [`open`], the sources read through `over(sources, configuration)`
/// under the scope (`serve --users`: the sessions of the database one user
/// may read), for `whom` when the sessions offered depend on who asks (a
/// name of its own cache files).
pub(crate) fn open_over(
    global: &Global,
    args: &McpArgs,
    (specs, awaiting): (Vec<SourceSpec>, bool),
    whom: Option<&str>,
    over: impl FnOnce(Arc<dyn SessionQuery>, Config) -> Arc<dyn SessionQuery>,
) -> CliResult<Server> {
    let invalid = |m: String| Failure(Error::new(ErrorCode::InvalidConfig, m));
    // Over MCP the text leaves its session for a model: hardened unless asked not to.
    let hardening = if args.no_harden { global.hardening() } else { Hardening::ALL };
    let config = global.config_with(None, hardening)?;
    let working = std::env::current_dir().map_err(|e| invalid(format!("the working directory: {e}")))?;
    let scope = match (args.scope.as_str(), &args.project) {
        ("all", _) => Scope::all(),
        (_, Some(project)) => Scope::project(project).map_err(invalid)?,
        // Started anywhere in a repository: the repository's sessions.
        (_, None) => Scope::project(&scope::project_root(&working)).map_err(invalid)?,
    }
    .allowing(args.allow.iter().cloned());
    let cwd = scope.cwd().or_else(|| Some(working.to_string_lossy().into_owned()));
    let cache = !global.no_cache;
    // The sessions offered, when not every session of the sources: the
    // server's cache files are its own.
    let view = match (scope.cache_view(), whom) {
        (None, None) => None,
        (scope, whom) => Some(format!("{} for {}", scope.as_deref().unwrap_or("all"), whom.unwrap_or("anyone"))),
    };
    let lifetime = Lifetime::LongLived { cache, awaiting, view };
    let ctx = Ctx::open_with(global, config, specs, lifetime, |query| {
        Arc::new(ScopedQuery::new(over(query, config), scope))
    })?;
    let loading = ctx.take_loading();
    let caller = args.caller.clone().or_else(|| server::caller_from_env(|v| std::env::var(v).ok()));
    Ok(Server::new(ctx, loading, hardening, caller, cwd))
}
