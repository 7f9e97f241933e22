//! The JSON API (docs/serve.md, "API"): each route reads the request type
//! the core's `wire` gives every front and answers the JSON the command
//! line's `--json` prints for the same operation, written by the same
//! serializer; every failure is `{"code", "message"}` with a fitting status.

use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::header::{self, HeaderValue};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use dsh_session_reference::wire::{
    mention_to_json, CandidatesRequest, MentionRequest, PrepareRequest, ReadRequest, RequestError, SearchArgs,
};
use dsh_session_reference::{CandidateOptions, Error, ErrorCode, Target, MAX_SAFE_INTEGER};
use serde_json::{json, Value};

use super::App;

/// The largest request body read, in bytes (1 MiB).
pub(crate) const MAX_BODY_BYTES: usize = 1 << 20;

/// The code of a request the API cannot read (not JSON, or not of the
/// operation's shape).
const INVALID_REQUEST: &str = "INVALID_REQUEST";

/// A failure as the API answers it: `{"code", "message"}` with a status.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    /// A failure of `status` with `code` and `message`.
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into() }
    }

    fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, INVALID_REQUEST, message)
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let status = match e.code() {
            ErrorCode::InvalidConfig | ErrorCode::InvalidReference | ErrorCode::SelfReference | ErrorCode::TooMany => {
                StatusCode::BAD_REQUEST
            }
            // A session that is not there (or not offered) or cannot be read.
            ErrorCode::ReadFailed => StatusCode::NOT_FOUND,
            ErrorCode::BudgetExceeded => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::SessionChanged => StatusCode::CONFLICT,
            ErrorCode::Cancelled => StatusCode::SERVICE_UNAVAILABLE,
        };
        ApiError { status, code: e.code().as_str(), message: e.message().to_owned() }
    }
}

impl From<RequestError> for ApiError {
    fn from(e: RequestError) -> ApiError {
        match e {
            RequestError::Shape(m) => ApiError::invalid(m),
            RequestError::Contract(e) => e.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = dsh_session_reference::wire::stringify(&json!({"code": self.code, "message": self.message}));
        (self.status, [(header::CONTENT_TYPE, HeaderValue::from_static(JSON))], body).into_response()
    }
}

const JSON: &str = "application/json";

/// The target of a request that names none: no session (a person at the
/// page), in the project's directory.
fn no_target(app: &App) -> Target {
    Target::new("\0web", app.server.cwd().map(str::to_owned))
}

/// `value` as the answer of an operation, written as `--json` writes it.
fn answer(app: &App, value: &Value) -> Response {
    ([(header::CONTENT_TYPE, HeaderValue::from_static(JSON))], app.out.json(value)).into_response()
}

/// The body of `request` as JSON: `application/json`, at most
/// [`MAX_BODY_BYTES`], parsed.
async fn body_json(request: Request) -> Result<Value, ApiError> {
    let (parts, body) = request.into_parts();
    json_content_type(&parts.headers)?;
    let declared = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let too_large = || {
        let message = format!("the request body is larger than {MAX_BODY_BYTES} bytes");
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE", message)
    };
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let bytes = to_bytes(body, MAX_BODY_BYTES).await.map_err(|_| too_large())?;
    let text = std::str::from_utf8(&bytes).map_err(|_| ApiError::invalid("the request body is not UTF-8"))?;
    serde_json::from_str(text).map_err(|e| ApiError::invalid(format!("the request body is not JSON: {e}")))
}

/// Refuses a body that does not say it is JSON.
fn json_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let given = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let essence = given.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case(JSON) {
        return Ok(());
    }
    let message = format!("the request body must be {JSON} (Content-Type: {given:?})");
    Err(ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE", message))
}

/// Runs `op` on the request's JSON; its answer, or its failure.
async fn run<F>(app: App, request: Request, op: impl FnOnce(App, Value) -> F) -> Response
where
    F: std::future::Future<Output = Result<Value, ApiError>>,
{
    let value = match body_json(request).await {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let result = op(app.clone(), value).await;
    app.server.save_soon();
    match result {
        Ok(v) => answer(&app, &v),
        Err(e) => e.into_response(),
    }
}

/// `POST /api/candidates`: a [`CandidatesRequest`] (with mentions); the
/// candidates, best first.
pub(crate) async fn candidates(State(app): State<App>, request: Request) -> Response {
    run(app, request, |app, value| async move {
        let r = CandidatesRequest::from_json(value, true)?;
        let list = app.server.resolver().candidates(&r.target, &r.query, &r.options, None).await?;
        Ok(Value::Array(list.iter().map(|c| c.to_json()).collect()))
    })
    .await
}

/// `POST /api/search`: [`SearchArgs`]; the results, best first. With
/// `"partial": true`, answered at once while the sessions are being
/// indexed ([`Resolver::search_available`](dsh_session_reference::Resolver::search_available)):
/// `{"results", "complete", "indexed", "total"}`.
pub(crate) async fn search(State(app): State<App>, request: Request) -> Response {
    run(app, request, |app, value| async move {
        let partial = match value.get("partial") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(ApiError::invalid("`partial` must be a boolean")),
        };
        let r = SearchArgs::from_json(value)?;
        app.server.index_loaded().await;
        let resolver = app.server.resolver();
        if partial {
            let answer = resolver.search_available(&r.target, &r.query, &r.options, None).await?;
            app.server
                .record("search", answer.results.iter().map(|c| c.candidate.session_id.clone()).collect())
                .await?;
            return Ok(answer.to_json());
        }
        let list = resolver.search(&r.target, &r.query, &r.options, None).await?;
        app.server.record("search", list.iter().map(|c| c.candidate.session_id.clone()).collect()).await?;
        Ok(Value::Array(list.iter().map(|c| c.to_json()).collect()))
    })
    .await
}

/// `POST /api/read`: a [`ReadRequest`] (the session named by id, URI or
/// mention); one page, with its framed text.
pub(crate) async fn read(State(app): State<App>, request: Request) -> Response {
    run(app, request, |app, value| async move {
        let r = ReadRequest::from_json(value)?;
        let resolver = app.server.resolver();
        let id = resolver.session_id(&r.session_id).await?;
        let page = resolver.read(&r.target, &id, &r.options, None).await?;
        app.server.record("read", vec![id]).await?;
        Ok(page.to_json_with_text())
    })
    .await
}

/// `POST /api/prepare`: a [`PrepareRequest`]; the prepared message.
pub(crate) async fn prepare(State(app): State<App>, request: Request) -> Response {
    run(app, request, |app, value| async move {
        let r = PrepareRequest::from_json(value)?;
        let prepared = app.server.resolver().prepare(&r.target, &r.content, &r.references, &r.options, None).await?;
        let carried = prepared.additional_context.iter().flat_map(|c| &c.source.references);
        app.server.record("reference", carried.map(|s| s.session_id.clone()).collect()).await?;
        Ok(prepared.into_json())
    })
    .await
}

/// `POST /api/mention`: a [`MentionRequest`]; `{"mention", "uri"}` (the
/// session must exist: its title is read even when a label is given).
pub(crate) async fn mention(State(app): State<App>, request: Request) -> Response {
    run(app, request, |app, value| async move {
        let r = MentionRequest::from_json(value)?;
        let resolver = app.server.resolver();
        let id = resolver.session_id(&r.session_id).await?;
        let title = resolver.label(&no_target(&app), &id).await?;
        Ok(mention_to_json(&id, r.label.as_deref().unwrap_or(&title)))
    })
    .await
}

/// `GET /api/info`: what a page shows before it asks: the version, the
/// kinds of session the server reads, how many sessions it offers, the
/// directory it ranks by and whether its answers are hardened.
pub(crate) async fn info(State(app): State<App>) -> Response {
    let options = CandidateOptions::default().with_limit(Some(MAX_SAFE_INTEGER)).without_mentions();
    let target = no_target(&app);
    let sessions = match app.server.resolver().candidates(&target, "", &options, None).await {
        Ok(list) => list.len(),
        Err(e) => return ApiError::from(e).into_response(),
    };
    let hardening = app.server.hardening();
    let kinds: Vec<&str> = app.server.ctx().specs().iter().map(|s| s.kind.name()).collect();
    let value = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "kinds": kinds,
        "sessions": sessions,
        "cwd": app.server.cwd(),
        "hardened": hardening.redact_secrets && hardening.escape_invisible && hardening.sanitize_labels,
    });
    answer(&app, &value)
}

/// An `/api/` path that is no route.
pub(crate) async fn no_route(request: Request) -> Response {
    let message = format!("no API route {}", request.uri().path());
    ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", message).into_response()
}

/// A route asked with a method it does not take.
pub(crate) async fn wrong_method(request: Request) -> Response {
    let allow = if request.uri().path() == "/api/info" { "GET" } else { "POST" };
    let message = format!("{} takes {allow}, not {}", request.uri().path(), request.method());
    let mut response = ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED", message).into_response();
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}
