//! `serve --users` (docs/teams.md, "Serving a team per user"): a team
//! database served to each of its users. Every request carries a user's
//! token, checked in the database by the guard at each request (so a
//! revoked token is refused at once); it is then answered by that user's
//! own server and routes: the sessions of the database the user may read
//! ([`DatabaseSource::for_user`]: a session out of their reach is absent as
//! a missing one is, in every route and tool), every session an answer
//! carries recorded under the user first.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::Router;
use dsh_session_reference::sources::SourceSpec;
use dsh_session_reference::{block_on, Error, ErrorCode, MemoryQuery};
use dsh_session_reference_teams::users::{self, Caller};
use dsh_session_reference_teams::{Database, DatabaseSource};
use tokio_util::sync::CancellationToken;

use super::auth::{Guard, Who};
use super::routes::ApiError;
use super::App;
use crate::args::{Global, ServeArgs, DATABASE_SOURCE};
use crate::failure::{read_failed, CliResult, Failure};
use crate::mcp::{Recorder, Server};
use crate::print::Out;

/// What a server per user is made from: the database, and the flags and
/// sources each user's server is opened with.
pub(super) struct Team {
    db: Arc<Database>,
    global: Global,
    args: ServeArgs,
    sources: (Vec<SourceSpec>, bool),
}

impl Team {
    /// The team of the database `--source postgres=URL` names, checked at
    /// once: reachable, with a schema that holds users.
    pub(super) fn open(global: &Global, args: &ServeArgs, sources: &(Vec<SourceSpec>, bool)) -> CliResult<Team> {
        let invalid = |m: String| Failure(Error::new(ErrorCode::InvalidConfig, m));
        let url = global.database()?.ok_or_else(|| {
            invalid(format!("serve --users serves a team database to its users: give --source {DATABASE_SOURCE}=URL"))
        })?;
        let db = Arc::new(Database::new(&url).map_err(|e| invalid(format!("--source {DATABASE_SOURCE}=URL: {e}")))?);
        block_on(users::check_serving(&db)).map_err(read_failed)?;
        Ok(Team { db, global: global.clone(), args: args.clone(), sources: sources.clone() })
    }

    /// The server of a request that names no user: it offers no session.
    /// (The guard lets no such request reach the API or MCP; it answers the
    /// page's files and the opening URL.)
    pub(super) fn anonymous(
        &self,
        global: &Global,
        args: &ServeArgs,
        sources: (Vec<SourceSpec>, bool),
    ) -> CliResult<Server> {
        crate::mcp::open_over(global, &args.sessions, sources, Some("no user"), |_, _| Arc::new(MemoryQuery::new()))
    }

    /// The server of `caller`: the sessions its user may read, the sessions
    /// its answers carry recorded under `caller`.
    fn server_of(&self, caller: &Caller) -> CliResult<Server> {
        let db = Arc::clone(&self.db);
        let user = caller.user.clone();
        let whom = format!("user {user}");
        let server = crate::mcp::open_over(
            &self.global,
            &self.args.sessions,
            self.sources.clone(),
            Some(&whom),
            |_, config| Arc::new(DatabaseSource::for_user(db, config, &user)),
        )?;
        let (db, caller) = (Arc::clone(&self.db), caller.clone());
        let recorder: Recorder = Arc::new(move |action, sessions| {
            let (db, caller) = (Arc::clone(&db), caller.clone());
            Box::pin(async move { users::record(&db, &caller, action, &sessions).await })
        });
        Ok(server.recording(recorder))
    }

    /// Every route behind the guard, which lets in the users' tokens; each
    /// request handed to the routes of the user its token names (made at
    /// its first request), one that names none to `anonymous`'s.
    pub(super) fn router(self, anonymous: Server, local: SocketAddr, stop: CancellationToken) -> Router {
        let out = Out::Json { escape_invisible: anonymous.hardening().escape_invisible };
        let guard = Guard::new(String::new(), local, self.args.cors_origin.clone()).with_users(Arc::clone(&self.db));
        let guard = Arc::new(guard);
        let nobody = super::routes(App { server: anonymous, out, guard: Arc::clone(&guard) }, stop.clone());
        let dispatch = Dispatch { team: self, out, guard: Arc::clone(&guard), stop, nobody, routers: Mutex::default() };
        Router::new()
            .fallback(dispatch_request)
            .with_state(Arc::new(dispatch))
            .layer(axum::middleware::from_fn_with_state(guard, super::auth::guard))
    }
}

/// The routes of each user's token, made at its first request.
struct Dispatch {
    team: Team,
    out: Out,
    guard: Arc<Guard>,
    stop: CancellationToken,
    /// The routes of a request that names no user.
    nobody: Router,
    routers: Mutex<HashMap<Caller, Router>>,
}

impl Dispatch {
    /// The routes of `caller`, made the first time.
    fn routes_of(&self, caller: &Caller) -> CliResult<Router> {
        if let Some(router) = self.routers.lock().unwrap_or_else(|e| e.into_inner()).get(caller) {
            return Ok(router.clone());
        }
        let server = self.team.server_of(caller)?;
        let app = App { server, out: self.out, guard: Arc::clone(&self.guard) };
        let router = super::routes(app, self.stop.clone());
        let mut routers = self.routers.lock().unwrap_or_else(|e| e.into_inner());
        Ok(routers.entry(caller.clone()).or_insert(router).clone())
    }
}

/// Hands `request` to the routes of the user the guard found, else to
/// those of nobody.
async fn dispatch_request(State(dispatch): State<Arc<Dispatch>>, request: Request) -> Response {
    let routes = match request.extensions().get::<Who>() {
        Some(Who::User(caller)) => dispatch.routes_of(caller),
        _ => Ok(dispatch.nobody.clone()),
    };
    let mut routes = match routes {
        Ok(routes) => routes,
        Err(Failure(e)) => return ApiError::from(e).into_response(),
    };
    match tower_service::Service::call(&mut routes, request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}
