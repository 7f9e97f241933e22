//! `dsh-session-ref serve`: the sessions over HTTP on this machine
//! (docs/serve.md): the picker and reader page at `/`, the JSON API under
//! `/api/` and MCP over streamable HTTP at `/mcp`, on the project's tokio
//! runtime with `axum` (routing on hyper).
//!
//! Everything answers through one [`Server`], the MCP server's handler: the
//! same sources, scope, cache files and hardening as `mcp`, and the MCP
//! endpoint is that handler behind `rmcp`'s streamable HTTP transport (one
//! handler value per MCP session, every one sharing the resolver). The
//! first line on standard output is the URL to open, its token included.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use dsh_session_reference::sources::SourceSpec;
use dsh_session_reference::{runtime, Error, ErrorCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::args::{Global, ServeArgs};
use crate::failure::{CliResult, Failure};
use crate::mcp::Server;
use crate::print::Out;

mod auth;
mod page;
mod routes;
#[cfg(test)]
mod tests;
mod users;

use auth::{Guard, COOKIE};

/// What every route answers with.
#[derive(Clone)]
pub(crate) struct App {
    server: Server,
    /// How answers are written: `--json`'s writer, escaping invisible
    /// characters when the answers are hardened.
    out: Out,
    guard: Arc<Guard>,
}

impl App {
    /// What a server listening at `local` answers with.
    fn new(server: Server, local: SocketAddr, token: String, cors: Option<String>) -> App {
        let out = Out::Json { escape_invisible: server.hardening().escape_invisible };
        App { server, out, guard: Arc::new(Guard::new(token, local, cors)) }
    }
}

/// Serves until SIGINT or SIGTERM, over `sources` ([`crate::args::server_sources`]).
pub(crate) fn run(global: &Global, args: &ServeArgs, sources: (Vec<SourceSpec>, bool)) -> CliResult {
    let invalid = |m: String| Failure(Error::new(ErrorCode::InvalidConfig, m));
    // `--users`: no token of the server's own; each user's, checked in the database.
    let team = if args.users { Some(users::Team::open(global, args, &sources)?) } else { None };
    let token = match &args.token_file {
        _ if team.is_some() => String::new(),
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| invalid(format!("reading the token file {}: {e}", file.display())))?;
            auth::token_from_file(&text).map_err(|m| invalid(format!("{}: {m}", file.display())))?
        }
        None if !args.listen.ip().is_loopback() => {
            return Err(invalid(format!(
                "listening on {} (not this machine's loopback) needs --token-file: a token made at each start \
                 would be all that stands between the network and your sessions",
                args.listen
            )));
        }
        None => auth::new_token().map_err(invalid)?,
    };
    let server = match &team {
        Some(team) => team.anonymous(global, args, sources)?,
        None => open_server(global, args, sources)?,
    };
    let ctx = server.ctx();
    let served = runtime().block_on(async move {
        // Indexing starts with the process ([`Server::index_in_background`]).
        server.index_in_background();
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|e| format!("listening on {}: {e}", args.listen))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        let stop = CancellationToken::new();
        let (url, router) = match team {
            // Each user opens it with `?token=` and their own token.
            Some(team) => (format!("http://{}/", shown(local)), team.router(server, local, stop.clone())),
            None => (
                format!("http://{}/?token={token}", shown(local)),
                router(App::new(server, local, token, args.cors_origin.clone()), stop.clone()),
            ),
        };
        announce(&url);
        if args.open {
            open_browser(&url);
        }
        let shutdown = async move {
            stopped().await;
            stop.cancel();
        };
        axum::serve(listener, router).with_graceful_shutdown(shutdown).await.map_err(|e| e.to_string())
    });
    ctx.save_cache();
    served.map_err(|e| crate::failure::read_failed(format!("serving HTTP: {e}")))
}

/// The server `mcp` would be for the same flags.
fn open_server(global: &Global, args: &ServeArgs, sources: (Vec<SourceSpec>, bool)) -> CliResult<Server> {
    crate::mcp::open(global, &args.sessions, sources)
}

/// The address as a URL names it: an unspecified one (every interface) as
/// this machine's loopback.
fn shown(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::from(([127, 0, 0, 1], addr.port())),
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port()))
        }
        _ => addr,
    }
}

/// Writes the URL as the first line of standard output, at once.
fn announce(url: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{url}");
    let _ = out.flush();
}

/// Opens `url` in the desktop's browser, saying on stderr when it cannot.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let started = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match started {
        // Reaped on its own thread: the opener returns at once.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(e) => eprintln!("note: could not open a browser ({opener}: {e}); open the URL above"),
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn stopped() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => drop(interrupt.await),
        }
    }
    #[cfg(not(unix))]
    drop(interrupt.await);
}

/// Every route, behind the guard.
fn router(app: App, stop: CancellationToken) -> Router {
    let guard = Arc::clone(&app.guard);
    routes(app, stop).layer(axum::middleware::from_fn_with_state(guard, auth::guard))
}

/// Every route, answering with `app` (the guard not yet in front).
fn routes(app: App, stop: CancellationToken) -> Router {
    let handler = app.server.clone();
    // Host, origin and token are the guard's; the body limit is the API's.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(routes::MAX_BODY_BYTES)
        .with_cancellation_token(stop);
    let mcp = StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(LocalSessionManager::default()), config);
    let api = |route: axum::routing::MethodRouter<App>| route.fallback(routes::wrong_method);
    Router::new()
        .route("/api/candidates", api(post(routes::candidates)))
        .route("/api/search", api(post(routes::search)))
        .route("/api/read", api(post(routes::read)))
        .route("/api/prepare", api(post(routes::prepare)))
        .route("/api/mention", api(post(routes::mention)))
        .route("/api/info", api(get(routes::info)))
        .route("/api", axum::routing::any(routes::no_route))
        .route("/api/{*rest}", axum::routing::any(routes::no_route))
        .route_service("/mcp", mcp)
        .route("/", get(root))
        .fallback(asset)
        .with_state(app)
}

/// `GET /`: with `?token=` the token is checked and set as a cookie, then
/// the browser is sent to `/`; else the page, for a browser with the cookie.
async fn root(State(app): State<App>, request: Request) -> Response {
    let query = request.uri().query().unwrap_or_default();
    if let Some(token) = query.split('&').find_map(|pair| pair.strip_prefix("token=")) {
        match app.guard.who(token).await {
            Ok(Some(_)) => {}
            Ok(None) => return unauthorized(),
            Err(e) => return e.into_response(),
        }
        let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
        let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, HeaderValue::from_static("/"))]).into_response();
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
        return response;
    }
    match app.guard.prove(request.headers()).await {
        Ok(Some((auth::Proof::Cookie, _))) => {}
        Ok(_) => return unauthorized(),
        Err(e) => return e.into_response(),
    }
    asset(request).await
}

/// The page's 401: where the token comes from.
fn unauthorized() -> Response {
    let text = "Not signed in. Open the URL `dsh-session-ref serve` printed when it started \
                (it holds the token; it sets a cookie and brings you here).\n";
    (StatusCode::UNAUTHORIZED, [(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"))], text)
        .into_response()
}

/// A file of the page, by its path.
async fn asset(request: Request) -> Response {
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, HeaderValue::from_static("GET"))]).into_response();
    }
    match page::asset(request.uri().path()) {
        Some(found) => {
            ([(header::CONTENT_TYPE, HeaderValue::from_static(found.content_type))], found.bytes).into_response()
        }
        None => (StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
}
