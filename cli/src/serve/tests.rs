//! The server in this process, asked through its router (no socket): every
//! route's answers to bad input, and every refused request, which must
//! read nothing (the core counts the opens of a session's file).

use std::path::{Path, PathBuf};

use axum::body::{to_bytes, Body};
use axum::http::{Request, Response};
use clap::FromArgMatches;
use dsh_session_reference::fs::{count_opens, opens_counted};
use dsh_session_reference::runtime;
use serde_json::{json, Value};
use tower_service::Service;

use super::*;
use crate::args::{server_sources, Cli, Command};

const TOKEN: &str = "test-token-0123456789";
/// A token one character off (written apart from its header, so that the
/// repository's own text holds nothing the credential patterns take).
const WRONG_TOKEN: &str = "test-token-0123456788";
const HOST: &str = "127.0.0.1:4321";

/// Writes a DSH session `id` started in `cwd` with `messages` (user and
/// assistant in turn) under `root`; its file.
pub(crate) fn dsh_session(root: &Path, id: &str, cwd: Option<&Path>, created: u64, messages: &[&str]) -> PathBuf {
    let bucket = match cwd {
        None => "_no-cwd".to_owned(),
        Some(cwd) => format!("-{}--", cwd.to_str().unwrap().replace('/', "-")),
    };
    let dir = root.join(bucket).join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let mut header = json!({"type": "session", "version": 0, "id": id, "createdAt": created, "delegationDepth": 0});
    if let Some(cwd) = cwd {
        header["cwd"] = json!(cwd);
    }
    let mut lines = vec![header];
    for (seq, text) in messages.iter().enumerate() {
        let content = json!([{"type": "text", "text": text}]);
        lines.push(if seq % 2 == 0 {
            json!({"type": "user/message", "seq": seq, "time": seq, "surfaceOp": "append", "data": {
                "id": format!("u{seq}"), "role": "user", "content": content, "source": {"kind": "user"}}})
        } else {
            json!({"type": "assistant/message", "seq": seq, "time": seq, "surfaceOp": "append", "data": {
                "turn": seq, "step": 1, "message": {"id": format!("a{seq}"), "role": "assistant", "content": content,
                "source": {"kind": "model", "provider": "p", "model": "m"}}}})
        });
    }
    let file = dir.join("session.jsonl");
    std::fs::write(&file, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    file
}

/// A root with a project holding two sessions and one session elsewhere.
struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    /// The file of the session `inside`.
    inside: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    let many: Vec<String> =
        (0..30).map(|i| format!("message {i} about the zebracorn {}", "word ".repeat(40))).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let inside = dsh_session(&root, "inside", Some(&project), 1_800_000_000_000, &many);
    dsh_session(&root, "second", Some(&project), 1_800_000_001_000, &["a second zebracorn", "yes"]);
    dsh_session(&root, "outside", Some(&elsewhere), 1_800_000_002_000, &["outside zebracorn", "no"]);
    Fixture { _dir: dir, root, project, inside }
}

/// The router of `serve --project PROJECT` over the fixture.
fn router_of(f: &Fixture) -> Router {
    router_with(f, None)
}

/// [`router_of`] with `--cors-origin`.
fn router_with(f: &Fixture, cors: Option<&str>) -> Router {
    let line =
        ["x", "--no-cache", "--root", f.root.to_str().unwrap(), "serve", "--project", f.project.to_str().unwrap()];
    let cli = Cli::from_arg_matches(&crate::args::command().get_matches_from(line)).unwrap();
    let Command::Serve(args) = &cli.command else { unreachable!() };
    let sources = server_sources(&cli.global, f.root.clone()).unwrap();
    let server = open_server(&cli.global, args, sources).unwrap_or_else(|e| panic!("{}", e.0));
    let app = App::new(server, HOST.parse().unwrap(), TOKEN.into(), cors.map(str::to_owned));
    router(app, CancellationToken::new())
}

/// An answer: status, headers, body.
struct Answer {
    status: u16,
    headers: axum::http::HeaderMap,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// The error code of a JSON failure.
    fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or_default().to_owned()
    }
}

fn ask(router: &Router, request: Request<Body>) -> Answer {
    runtime().block_on(async {
        let response: Response<Body> = router.clone().call(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let body = to_bytes(body, usize::MAX).await.unwrap();
        Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: String::from_utf8(body.to_vec()).unwrap(),
        }
    })
}

/// A request to the API with the bearer token from this server's host.
fn api(path: &str) -> axum::http::request::Builder {
    Request::post(path)
        .header("host", HOST)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
}

fn post(router: &Router, path: &str, body: &str) -> Answer {
    ask(router, api(path).body(Body::from(body.to_owned())).unwrap())
}

const ROUTES: [&str; 5] = ["/api/candidates", "/api/search", "/api/read", "/api/prepare", "/api/mention"];

/// A valid request of each route.
fn valid(path: &str) -> Value {
    let target = json!({"id": "web"});
    match path {
        "/api/candidates" => json!({"target": target, "query": "zebra"}),
        "/api/search" => json!({"target": target, "query": "zebracorn"}),
        "/api/read" => json!({"target": target, "sessionId": "inside"}),
        "/api/prepare" => json!({"target": target, "content": [{"type": "text", "text": "see"}],
            "references": [{"sessionId": "inside"}]}),
        "/api/mention" => json!({"sessionId": "inside"}),
        _ => unreachable!(),
    }
}

#[test]
fn a_refused_request_reads_nothing() {
    let f = fixture();
    let router = router_of(&f);
    count_opens(&f.inside);
    let refused: Vec<(&str, Request<Body>, u16, &str)> = ROUTES
        .iter()
        .flat_map(|&path| {
            let body = || Body::from(valid(path).to_string());
            let plain = || Request::post(path).header("content-type", "application/json");
            [
                ("no token", plain().header("host", HOST).body(body()).unwrap(), 401, "UNAUTHORIZED"),
                (
                    "wrong token",
                    plain()
                        .header("host", HOST)
                        .header("authorization", format!("Bearer {WRONG_TOKEN}"))
                        .body(body())
                        .unwrap(),
                    401,
                    "UNAUTHORIZED",
                ),
                (
                    "bad host",
                    plain()
                        .header("host", "evil.example:4321")
                        .header("authorization", format!("Bearer {TOKEN}"))
                        .body(body())
                        .unwrap(),
                    403,
                    "FORBIDDEN_HOST",
                ),
                (
                    "foreign origin",
                    api(path).header("origin", "http://evil.example").body(body()).unwrap(),
                    403,
                    "FORBIDDEN_ORIGIN",
                ),
                (
                    "cookie without origin",
                    plain().header("host", HOST).header("cookie", format!("dsr_token={TOKEN}")).body(body()).unwrap(),
                    403,
                    "FORBIDDEN_ORIGIN",
                ),
            ]
        })
        .collect();
    for (case, request, status, code) in refused {
        let path = request.uri().path().to_owned();
        let answer = ask(&router, request);
        assert_eq!((answer.status, answer.code().as_str()), (status, code), "{case} {path}: {}", answer.body);
        assert!(answer.headers.get("access-control-allow-origin").is_none());
    }
    let mcp = Request::post("/mcp").header("host", HOST).header("content-type", "application/json");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    assert_eq!(ask(&router, mcp.body(Body::from(init)).unwrap()).status, 401, "MCP without a token");
    assert_eq!(opens_counted(&f.inside), 0, "a refused request opened the session's file");
    // The same requests let in do read it (the count counts).
    for path in ROUTES {
        let answer = post(&router, path, &valid(path).to_string());
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
    }
    let cookie = Request::post("/api/read")
        .header("host", HOST)
        .header("content-type", "application/json")
        .header("cookie", format!("dsr_token={TOKEN}"))
        .header("origin", format!("http://{HOST}"));
    let answer = ask(&router, cookie.body(Body::from(valid("/api/read").to_string())).unwrap());
    assert_eq!(answer.status, 200, "the page's own request: {}", answer.body);
    assert!(opens_counted(&f.inside) > 0);
}

#[test]
fn every_route_answers_bad_input_with_a_clear_error() {
    let f = fixture();
    let router = router_of(&f);
    for path in ROUTES {
        for (body, code) in
            [("{", "INVALID_REQUEST"), ("[1]", "INVALID_REQUEST"), ("", "INVALID_REQUEST"), ("null", "INVALID_REQUEST")]
        {
            let answer = post(&router, path, body);
            assert_eq!((answer.status, answer.code().as_str()), (400, code), "{path} {body:?}: {}", answer.body);
            assert!(!answer.json()["message"].as_str().unwrap().is_empty());
        }
        // Not JSON by its type, and too big: refused before it is read.
        let text = Request::post(path)
            .header("host", HOST)
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "text/plain")
            .body(Body::from(valid(path).to_string()));
        let answer = ask(&router, text.unwrap());
        assert_eq!((answer.status, answer.code().as_str()), (415, "UNSUPPORTED_MEDIA_TYPE"), "{path}");
        let big = format!("{{\"pad\": \"{}\"}}", "x".repeat(routes::MAX_BODY_BYTES));
        let answer = post(&router, path, &big);
        assert_eq!((answer.status, answer.code().as_str()), (413, "PAYLOAD_TOO_LARGE"), "{path}");
        let stream = futures_of(big.clone());
        let answer = ask(&router, api(path).body(stream).unwrap());
        assert_eq!((answer.status, answer.code().as_str()), (413, "PAYLOAD_TOO_LARGE"), "{path}, with no length");
        let get = Request::get(path).header("host", HOST).header("authorization", format!("Bearer {TOKEN}"));
        let answer = ask(&router, get.body(Body::empty()).unwrap());
        assert_eq!((answer.status, answer.code().as_str()), (405, "METHOD_NOT_ALLOWED"), "{path}");
        assert_eq!(answer.headers["allow"], "POST");
    }
    let target = json!({"id": "web"});
    let wrong_types = [
        ("/api/candidates", json!({"target": target, "query": 3}), "INVALID_REQUEST"),
        ("/api/candidates", json!({"target": target, "limit": "3"}), "SESSION_REFERENCE_INVALID_REFERENCE"),
        ("/api/candidates", json!({"query": "x"}), "INVALID_REQUEST"),
        (
            "/api/search",
            json!({"target": target, "query": "x", "scope": "near"}),
            "SESSION_REFERENCE_INVALID_REFERENCE",
        ),
        ("/api/search", json!({"target": {"id": 1}, "query": "x"}), "INVALID_REQUEST"),
        ("/api/read", json!({"target": target, "sessionId": 1}), "INVALID_REQUEST"),
        (
            "/api/read",
            json!({"target": target, "sessionId": "inside", "start": -1}),
            "SESSION_REFERENCE_INVALID_REFERENCE",
        ),
        ("/api/prepare", json!({"target": target, "content": "x", "references": {}}), "INVALID_REQUEST"),
        (
            "/api/prepare",
            json!({"target": target, "content": "x", "references": [{"sessionId": 5}]}),
            "SESSION_REFERENCE_INVALID_REFERENCE",
        ),
        ("/api/mention", json!({"sessionId": ["inside"]}), "INVALID_REQUEST"),
        ("/api/mention", json!({"sessionId": "inside", "label": 1}), "INVALID_REQUEST"),
    ];
    for (path, body, code) in wrong_types {
        let answer = post(&router, path, &body.to_string());
        assert_eq!((answer.status, answer.code().as_str()), (400, code), "{path} {body}: {}", answer.body);
    }
    // No route, and the info route's method.
    let answer = post(&router, "/api/nothing", "{}");
    assert_eq!((answer.status, answer.code().as_str()), (404, "NOT_FOUND"));
    let answer = post(&router, "/api/info", "{}");
    assert_eq!((answer.status, answer.headers["allow"].to_str().unwrap()), (405, "GET"));
}

/// `body` as a stream of unknown length.
fn futures_of(body: String) -> Body {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        body.into_bytes().chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
    Body::from_stream(futures::stream::iter(chunks))
}

#[test]
fn a_session_outside_the_scope_is_answered_as_a_missing_one() {
    let f = fixture();
    let router = router_of(&f);
    let target = json!({"id": "web"});
    let ask_about = |path: &str, id: &str| {
        let body = match path {
            "/api/read" => json!({"target": target, "sessionId": id}),
            "/api/prepare" => json!({"target": target, "content": "x", "references": [{"sessionId": id}]}),
            _ => json!({"sessionId": id}),
        };
        let answer = post(&router, path, &body.to_string());
        (answer.status, answer.code(), answer.json()["message"].as_str().unwrap().replace(id, "ID"))
    };
    for path in ["/api/read", "/api/prepare", "/api/mention"] {
        let missing = ask_about(path, "missing");
        assert_eq!((missing.0, missing.1.as_str()), (404, "SESSION_REFERENCE_READ_FAILED"), "{path}: {missing:?}");
        assert_eq!(ask_about(path, "outside"), missing, "{path}");
    }
    // Neither is listed or found.
    let listed = post(&router, "/api/candidates", &json!({"target": target, "limit": 100}).to_string()).json();
    let ids: Vec<&str> = listed.as_array().unwrap().iter().map(|c| c["sessionId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["second", "inside"]);
    let found = post(&router, "/api/search", &json!({"target": target, "query": "zebracorn"}).to_string()).json();
    assert!(found.as_array().unwrap().iter().all(|r| r["sessionId"] != "outside"), "{found}");
    assert!(!found.as_array().unwrap().is_empty());
}

#[test]
fn a_bad_or_foreign_cursor_is_a_clear_error() {
    let f = fixture();
    let router = router_of(&f);
    let target = json!({"id": "web"});
    let read = |body: Value| post(&router, "/api/read", &body.to_string());
    let first = read(json!({"target": target, "sessionId": "inside", "maxBytes": 2000}));
    assert_eq!(first.status, 200, "{}", first.body);
    let page = first.json();
    let prev = page["prevCursor"].as_str().expect("an older page").to_owned();
    let older = read(json!({"target": target, "sessionId": "inside", "cursor": prev, "maxBytes": 2000}));
    assert_eq!(older.status, 200, "{}", older.body);
    let first_index = |p: &Value| p["messages"][0]["index"].as_u64().unwrap();
    assert!(first_index(&older.json()) < first_index(&page));
    for (cursor, id) in [("not-a-cursor", "inside"), (prev.as_str(), "second")] {
        let answer = read(json!({"target": target, "sessionId": id, "cursor": cursor}));
        assert_eq!(answer.status, 400, "{cursor} on {id}: {}", answer.body);
        assert_eq!(answer.code(), "SESSION_REFERENCE_INVALID_REFERENCE", "{}", answer.body);
    }
}

#[test]
fn the_page_needs_the_cookie_the_opening_url_sets() {
    let f = fixture();
    let router = router_of(&f);
    let get = |uri: &str, cookie: Option<&str>| {
        let mut r = Request::get(uri).header("host", HOST);
        if let Some(c) = cookie {
            r = r.header("cookie", c);
        }
        ask(&router, r.body(Body::empty()).unwrap())
    };
    let none = get("/", None);
    assert_eq!(none.status, 401);
    assert!(none.body.contains("Open the URL"), "{}", none.body);
    assert_eq!(get(&format!("/?token={WRONG_TOKEN}"), None).status, 401);
    let opened = get(&format!("/?token={TOKEN}"), None);
    assert_eq!((opened.status, opened.headers["location"].to_str().unwrap()), (303, "/"));
    let cookie = opened.headers["set-cookie"].to_str().unwrap();
    assert_eq!(cookie, format!("dsr_token={TOKEN}; HttpOnly; SameSite=Strict; Path=/"));
    let page = get("/", Some(&format!("dsr_token={TOKEN}")));
    assert_eq!(page.status, 200);
    assert!(page.headers["content-type"].to_str().unwrap().starts_with("text/html"));
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'") && !csp.contains("unsafe-inline")
    );
    assert_eq!(page.headers["x-content-type-options"], "nosniff");
    assert_eq!(page.headers["referrer-policy"], "no-referrer");
    assert!(page.headers.get("access-control-allow-origin").is_none());
    assert_eq!(get("/", Some("dsr_token=wrong")).status, 401);
    assert_eq!(get("/no-such-file", None).status, 404);
    let info = ask(
        &router,
        Request::get("/api/info")
            .header("host", HOST)
            .header("cookie", format!("dsr_token={TOKEN}"))
            .body(Body::empty())
            .unwrap(),
    );
    assert_eq!(info.status, 200, "{}", info.body);
    let info = info.json();
    assert_eq!((info["sessions"].as_u64(), info["hardened"].as_bool()), (Some(2), Some(true)));
    assert_eq!(info["kinds"], json!(["dsh"]));
}

#[test]
fn cors_headers_go_only_to_the_origin_allowed() {
    let f = fixture();
    let dev = "http://dev.example:5173";
    let router = router_with(&f, Some(dev));
    let preflight = Request::options("/api/search").header("host", HOST).header("origin", dev);
    let answer = ask(&router, preflight.body(Body::empty()).unwrap());
    assert_eq!((answer.status, answer.headers["access-control-allow-origin"].to_str().unwrap()), (204, dev));
    assert!(answer.headers["access-control-allow-headers"].to_str().unwrap().contains("authorization"));
    let from_dev = api("/api/search").header("origin", dev).body(Body::from(valid("/api/search").to_string()));
    let answer = ask(&router, from_dev.unwrap());
    assert_eq!((answer.status, answer.headers["access-control-allow-origin"].to_str().unwrap()), (200, dev));
    // Another origin: no CORS headers, and refused.
    let other = api("/api/search").header("origin", "http://other.example").body(Body::from("{}"));
    let answer = ask(&router, other.unwrap());
    assert_eq!((answer.status, answer.code().as_str()), (403, "FORBIDDEN_ORIGIN"));
    assert!(answer.headers.get("access-control-allow-origin").is_none());
    let preflight = Request::options("/api/search").header("host", HOST).header("origin", "http://other.example");
    let answer = ask(&router, preflight.body(Body::empty()).unwrap());
    assert!(answer.headers.get("access-control-allow-origin").is_none(), "{}", answer.status);
    // Without the token, the allowed origin is refused all the same.
    let no_token = Request::post("/api/search").header("host", HOST).header("origin", dev);
    let answer = ask(&router, no_token.header("content-type", "application/json").body(Body::from("{}")).unwrap());
    assert_eq!(answer.status, 401);
}
