//! Who may ask the server (docs/serve.md, "Security model"): the `Host`
//! every request names (against DNS rebinding), the token every API and
//! MCP request carries (a bearer header, or the cookie the opening URL
//! sets), and the `Origin` of every request with a body (against
//! cross-site requests). Every check runs before a request is routed, so a
//! refused request reads nothing.

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use dsh_session_reference_teams::users::Caller;
use dsh_session_reference_teams::Database;

use super::routes::ApiError;

/// The cookie the opening URL sets, holding the token.
pub(crate) const COOKIE: &str = "dsr_token";

/// The token's length in bytes when the server makes it (written in hex).
const TOKEN_BYTES: usize = 32;

/// The shortest token a token file may hold.
pub(crate) const MIN_TOKEN_CHARS: usize = 16;

/// A new token: [`TOKEN_BYTES`] from the operating system's generator, in hex.
pub(crate) fn new_token() -> Result<String, String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| format!("the system's random generator: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The token a token file holds: its first line, trimmed; at least
/// [`MIN_TOKEN_CHARS`] letters, digits, `-`, `.`, `_` or `~` (so that it
/// fits a URL, a header and a cookie as it is).
pub(crate) fn token_from_file(text: &str) -> Result<String, String> {
    let token = text.lines().next().unwrap_or_default().trim();
    if token.len() < MIN_TOKEN_CHARS {
        return Err(format!("the token file's first line must hold a token of {MIN_TOKEN_CHARS} characters or more"));
    }
    if !token.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b)) {
        return Err("the token may hold only letters, digits, -, ., _ and ~".into());
    }
    Ok(token.to_owned())
}

/// Whether `a` and `b` are the same bytes, in a time that depends only on
/// their lengths (the token's length is no secret).
pub(crate) fn same_token(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// What the server lets in.
pub(crate) struct Guard {
    /// The token.
    token: String,
    /// `serve --users`: the team database whose users' tokens are let in
    /// (and then never `token`).
    users: Option<std::sync::Arc<Database>>,
    /// The `Host` values accepted (lower case).
    hosts: Vec<String>,
    /// The origin allowed besides the server's own (`--cors-origin`).
    cors: Option<String>,
}

/// Whom a request's token names: the holder of the server's token, or one
/// of a team database's users (`serve --users`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Who {
    /// The holder of the server's own token.
    Holder,
    /// A user, by one of their tokens.
    User(Caller),
}

/// How a request proved it holds the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Proof {
    /// `Authorization: Bearer TOKEN`.
    Bearer,
    /// The cookie set from the opening URL.
    Cookie,
}

impl Guard {
    /// The guard of a server listening on `port` at `listen`, with `token`.
    pub(crate) fn new(token: String, listen: std::net::SocketAddr, cors: Option<String>) -> Guard {
        let port = listen.port();
        let mut hosts = vec![listen.to_string()];
        for name in ["localhost", "127.0.0.1", "[::1]"] {
            hosts.push(format!("{name}:{port}"));
        }
        hosts.dedup();
        Guard { token, users: None, hosts, cors: cors.map(|c| c.trim_end_matches('/').to_owned()) }
    }

    /// This guard letting in the tokens of `db`'s users instead of its own.
    pub(crate) fn with_users(mut self, db: std::sync::Arc<Database>) -> Guard {
        self.users = Some(db);
        self
    }

    /// Whom `candidate` names, when it is a token let in (the users' tokens
    /// are checked in the database at each request: one revoked is refused
    /// at once).
    pub(crate) async fn who(&self, candidate: &str) -> Result<Option<Who>, ApiError> {
        let Some(db) = &self.users else { return Ok(self.is_token(candidate).then_some(Who::Holder)) };
        match dsh_session_reference_teams::users::authenticate(db, candidate).await {
            Ok(caller) => Ok(caller.map(Who::User)),
            Err(why) => Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "SESSION_REFERENCE_READ_FAILED", why)),
        }
    }

    /// How, and as whom, `headers` prove a token, if they do.
    pub(crate) async fn prove(&self, headers: &HeaderMap) -> Result<Option<(Proof, Who)>, ApiError> {
        for (proof, token) in presented(headers) {
            if let Some(who) = self.who(token).await? {
                return Ok(Some((proof, who)));
            }
        }
        Ok(None)
    }

    /// Whether `host` is a name of this server.
    fn host_allowed(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.hosts.contains(&host)
    }

    /// Whether `origin` is this server's own or the one `--cors-origin` allows.
    fn origin_allowed(&self, origin: &str) -> bool {
        let own = origin.strip_prefix("http://").is_some_and(|host| self.host_allowed(host));
        own || self.cors.as_deref() == Some(origin)
    }

    /// Whether `candidate` is the token.
    pub(crate) fn is_token(&self, candidate: &str) -> bool {
        same_token(candidate.as_bytes(), self.token.as_bytes())
    }

    /// How `headers` prove the server's own token, if they do.
    #[cfg(test)]
    pub(crate) fn proof(&self, headers: &HeaderMap) -> Option<Proof> {
        presented(headers).find(|(_, t)| self.is_token(t)).map(|(proof, _)| proof)
    }
}

/// The tokens `headers` present, bearer headers first, then cookies.
fn presented(headers: &HeaderMap) -> impl Iterator<Item = (Proof, &str)> {
    let bearer = headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(|t| (Proof::Bearer, t.trim()));
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().strip_prefix(COOKIE)?.strip_prefix('='))
        .map(|t| (Proof::Cookie, t));
    bearer.chain(cookie)
}

/// Whether `path` is the API's or MCP's (the token is required).
fn protected(path: &str) -> bool {
    path == "/api" || path.starts_with("/api/") || path == "/mcp" || path.starts_with("/mcp/")
}

/// Whether a request of `method` carries a body the server acts on.
fn has_body(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The checks of every request, then the headers of every answer.
pub(crate) async fn guard(State(guard): State<std::sync::Arc<Guard>>, mut request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    if !guard.host_allowed(host) {
        let message = "the Host header does not name this server (open the URL the server printed)";
        return secured(ApiError::new(StatusCode::FORBIDDEN, "FORBIDDEN_HOST", message).into_response(), None);
    }
    let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()).map(str::to_owned);
    let cors = origin.as_deref().filter(|o| guard.cors.as_deref() == Some(*o)).map(str::to_owned);
    let path = request.uri().path();
    if request.method() == Method::OPTIONS && cors.is_some() {
        // A preflight of the allowed origin: it carries no token.
        return secured(StatusCode::NO_CONTENT.into_response(), cors.as_deref());
    }
    if protected(path) {
        let proved = match guard.prove(headers).await {
            Ok(proved) => proved,
            Err(e) => return secured(e.into_response(), None),
        };
        let Some((proof, who)) = proved else {
            let message = "a token is required: Authorization: Bearer TOKEN, or open the URL the server printed";
            return secured(ApiError::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message).into_response(), None);
        };
        if has_body(request.method()) {
            let refused = match (&origin, proof) {
                (Some(o), _) => !guard.origin_allowed(o),
                // A cookie goes with any request the browser makes: only
                // one that says it comes from this server's page is let in.
                (None, Proof::Cookie) => true,
                (None, Proof::Bearer) => false,
            };
            if refused {
                let message = "the request's Origin is not this server's page";
                return secured(
                    ApiError::new(StatusCode::FORBIDDEN, "FORBIDDEN_ORIGIN", message).into_response(),
                    None,
                );
            }
        }
        request.extensions_mut().insert(who);
    }
    let response = next.run(request).await;
    secured(response, cors.as_deref())
}

/// `response` with the headers every answer carries, and CORS's for `cors`.
fn secured(mut response: Response, cors: Option<&str>) -> Response {
    let headers = response.headers_mut();
    let set = |headers: &mut HeaderMap, name: HeaderName, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::REFERRER_POLICY, "no-referrer");
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    set(headers, header::CONTENT_SECURITY_POLICY, CSP);
    if !headers.contains_key(header::CACHE_CONTROL) {
        set(headers, header::CACHE_CONTROL, "no-store");
    }
    if let Some(origin) = cors.and_then(|o| HeaderValue::from_str(o).ok()) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        set(
            headers,
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            "authorization, content-type, mcp-protocol-version, mcp-session-id",
        );
        set(headers, header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, DELETE");
        set(headers, header::ACCESS_CONTROL_EXPOSE_HEADERS, "mcp-session-id");
        set(headers, header::VARY, "origin");
    }
    response
}

/// The page's Content-Security-Policy: its own files only, no inline
/// script, no framing.
pub(crate) const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; base-uri 'none'; form-action 'self'; object-src 'none'; frame-ancestors 'none'";

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        h
    }

    #[test]
    fn the_token_is_proved_by_a_bearer_header_or_the_cookie() {
        // (the token apart from its `name=`, so that the repository's own
        // text holds nothing the credential patterns take)
        const T: &str = "t0ken-0123456789abcdef";
        let guard = Guard::new(T.into(), "127.0.0.1:8000".parse().unwrap(), None);
        assert_eq!(
            guard.proof(&headers(&[(header::AUTHORIZATION, "Bearer t0ken-0123456789abcdef")])),
            Some(Proof::Bearer)
        );
        assert_eq!(
            guard.proof(&headers(&[(header::COOKIE, format!("a=b; dsr_token={T}").as_str())])),
            Some(Proof::Cookie)
        );
        for wrong in [
            (header::AUTHORIZATION, "Bearer t0ken-0123456789abcdeF"),
            (header::AUTHORIZATION, "Basic t0ken-0123456789abcdef"),
            (header::AUTHORIZATION, "Bearer "),
            (header::COOKIE, "dsr_token=t0ken"),
            (header::COOKIE, format!("xdsr_token={T}").leak() as &str),
        ] {
            assert_eq!(guard.proof(&headers(std::slice::from_ref(&wrong))), None, "{wrong:?}");
        }
        assert!(same_token(b"abc", b"abc") && !same_token(b"abc", b"abd") && !same_token(b"abc", b"ab"));
    }

    #[test]
    fn hosts_and_origins_are_this_servers_names() {
        let guard = Guard::new("x".repeat(20), "127.0.0.1:8000".parse().unwrap(), Some("http://dev:5173/".into()));
        for ok in ["127.0.0.1:8000", "localhost:8000", "LOCALHOST:8000", "[::1]:8000"] {
            assert!(guard.host_allowed(ok), "{ok}");
        }
        for bad in ["", "127.0.0.1", "localhost:8001", "evil.example:8000", "127.0.0.1:8000.evil"] {
            assert!(!guard.host_allowed(bad), "{bad}");
        }
        assert!(guard.origin_allowed("http://localhost:8000") && guard.origin_allowed("http://dev:5173"));
        assert!(!guard.origin_allowed("https://localhost:8000") && !guard.origin_allowed("http://evil:8000"));
        assert!(!guard.origin_allowed("null"));
    }

    #[test]
    fn a_token_file_holds_a_long_visible_token() {
        assert_eq!(token_from_file("  abcdefghijklmnop \nrest").unwrap(), "abcdefghijklmnop");
        assert!(token_from_file("short").is_err() && token_from_file("").is_err());
        assert!(token_from_file("abcdefgh;ijklmnopq").is_err() && token_from_file("abcdefgh ijklmnopq").is_err());
        let made = new_token().unwrap();
        assert_eq!(made.len(), 2 * TOKEN_BYTES);
        assert_ne!(made, new_token().unwrap());
    }
}
