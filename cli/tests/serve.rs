//! `dsh-session-ref serve` as a person starts it: the URL on its first
//! line, the cookie the URL sets, the API's answers byte for byte those of
//! `--json` for the same operation, the refusals at start, and an end on
//! SIGTERM that saves and exits cleanly.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};

use serde_json::{json, Value};

mod common;

/// The example sessions of the repository (a DSH root).
fn examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sessions")
}

/// A server started with `args`, and the URL it printed.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(args: &[&str]) -> Served {
        let mut c = common::std_cmd();
        c.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim_end().to_owned();
        assert!(url.starts_with("http://127.0.0.1:") && url.contains("/?token="), "{url:?}");
        Served { child, url }
    }

    /// `host:port` of the server.
    fn authority(&self) -> &str {
        let rest = self.url.strip_prefix("http://").unwrap();
        &rest[..rest.find('/').unwrap()]
    }

    fn token(&self) -> &str {
        self.url.split_once("?token=").unwrap().1
    }

    /// One HTTP/1.1 exchange: `head` (the request line and headers but
    /// Host, Content-Length and Connection) and `body`.
    fn exchange(&self, head: &str, body: &str) -> Reply {
        let mut stream = TcpStream::connect(self.authority()).unwrap();
        let request = format!(
            "{head}\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.authority(),
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        Reply::parse(&raw)
    }

    /// `POST path` with the bearer token and a JSON body.
    fn post(&self, path: &str, body: &Value) -> Reply {
        let head =
            format!("POST {path} HTTP/1.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json", self.token());
        self.exchange(&head, &body.to_string())
    }

    /// Ends the server with SIGTERM; its exit code and standard error.
    fn stop(mut self) -> (Option<i32>, String) {
        // SAFETY: signals the child this test started, by its id.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        (status.code(), err)
    }
}

/// An answer: status, headers (lower-case names), body.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn parse(raw: &[u8]) -> Reply {
        let text = String::from_utf8_lossy(raw);
        let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
        let mut lines = head.lines();
        let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
        let body = if chunked { dechunk(body) } else { body.to_owned() };
        Reply { status, headers, body }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// A chunked body's bytes.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

/// The command line's `--json` output for `args` over the examples, hardened
/// as the server is.
fn cli_json(args: &[&str]) -> String {
    let root = examples();
    let mut line = vec!["--no-cache", "--root", root.to_str().unwrap(), "--hardened", "--json"];
    line.extend_from_slice(args);
    let out = common::run(&line);
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    out.stdout.trim_end().to_owned()
}

#[test]
fn the_api_answers_what_json_prints_and_the_url_opens_the_page() {
    let root = examples();
    let served = Served::start(&["--no-cache", "--root", root.to_str().unwrap(), "serve", "--scope", "all"]);
    let target = json!({"id": "web", "cwd": "/home/dev/alpha"});
    let answer = |path: &str, body: Value| {
        let reply = served.post(path, &body);
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
        assert_eq!(reply.header("content-type"), Some("application/json"));
        reply.body
    };
    let cli_target = ["--target", "web", "--cwd", "/home/dev/alpha"];
    assert_eq!(
        answer("/api/candidates", json!({"target": target, "query": "", "limit": 10})),
        cli_json(&[&["candidates", "--limit", "10"], &cli_target[..]].concat())
    );
    assert_eq!(
        answer("/api/search", json!({"target": target, "query": "task"})),
        cli_json(&[&["search", "task"], &cli_target[..]].concat())
    );
    assert_eq!(
        answer("/api/read", json!({"target": {"id": "web"}, "sessionId": "goal-wrapup", "maxBytes": 3000})),
        cli_json(&["read", "goal-wrapup", "--target", "web", "--max-bytes", "3000"])
    );
    let mention: Value = serde_json::from_str(&answer("/api/mention", json!({"sessionId": "multi-turn"}))).unwrap();
    let printed: Value = serde_json::from_str(&cli_json(&["mention", "multi-turn"])).unwrap();
    assert_eq!(mention["mention"], printed);
    assert_eq!(mention["uri"], serde_json::from_str::<Value>(&cli_json(&["uri", "encode", "multi-turn"])).unwrap());
    // The command line parses the text's mentions into references and
    // rewrites them; the API takes both as a host gives them (the core's
    // `parse_text`). The context message's id is new each time.
    let text = format!("see @[x]({})", mention["uri"].as_str().unwrap());
    let content = json!([{"type": "text", "text": "see @x"}]);
    let without_id = |json: &str| {
        let mut v: Value = serde_json::from_str(json).unwrap();
        let id = v["additionalContext"].as_object_mut().unwrap().remove("id");
        assert!(id.is_some_and(|id| id.is_string()), "{json}");
        v
    };
    let prepared = answer(
        "/api/prepare",
        json!({"target": target, "content": content, "references": [{"sessionId": "multi-turn", "label": "x"}]}),
    );
    let printed = cli_json(&[&["prepare", "--message", &text], &cli_target[..]].concat());
    assert_eq!(without_id(&prepared), without_id(&printed));

    // The URL sets the cookie and sends the browser to the page.
    let path = served.url.strip_prefix(&format!("http://{}", served.authority())).unwrap().to_owned();
    let opened = served.exchange(&format!("GET {path} HTTP/1.1"), "");
    assert_eq!((opened.status, opened.header("location")), (303, Some("/")));
    let cookie = opened.header("set-cookie").unwrap().split(';').next().unwrap().to_owned();
    let page = served.exchange(&format!("GET / HTTP/1.1\r\nCookie: {cookie}"), "");
    assert_eq!(page.status, 200);
    assert!(page.header("content-security-policy").is_some_and(|c| c.contains("default-src 'self'")));
    // A bad request does not end the server.
    let bad = served.exchange("POST /api/search HTTP/1.1\r\nContent-Type: application/json", "{");
    assert_eq!(bad.status, 401);
    let garbage = {
        let mut s = TcpStream::connect(served.authority()).unwrap();
        s.write_all(b"\x00\x01 not http\r\n\r\n").unwrap();
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        raw
    };
    assert!(garbage.is_empty() || garbage.starts_with(b"HTTP/1.1 4"), "{}", String::from_utf8_lossy(&garbage));
    assert_eq!(served.post("/api/candidates", &json!({"target": target})).status, 200, "still serving");
    let (code, err) = served.stop();
    assert_eq!(code, Some(0), "SIGTERM ends it cleanly: {err}");
}

#[test]
fn a_token_file_gives_the_token_and_the_network_needs_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = examples();
    let root = root.to_str().unwrap();
    let refused = common::run(&["--no-cache", "--root", root, "serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(refused.code, 1);
    assert!(refused.stderr.contains("--token-file"), "{}", refused.stderr);
    assert!(refused.stdout.is_empty());
    let file = dir.path().join("token");
    std::fs::write(&file, "short\n").unwrap();
    let weak = common::run(&["--no-cache", "--root", root, "serve", "--token-file", file.to_str().unwrap()]);
    assert_eq!(weak.code, 1);
    assert!(weak.stderr.contains("SESSION_REFERENCE_INVALID_CONFIG"), "{}", weak.stderr);
    std::fs::write(&file, "a-token-from-a-file-42\n").unwrap();
    let served = Served::start(&["--no-cache", "--root", root, "serve", "--token-file", file.to_str().unwrap()]);
    assert_eq!(served.token(), "a-token-from-a-file-42");
    let info = served.exchange("GET /api/info HTTP/1.1\r\nAuthorization: Bearer a-token-from-a-file-42", "");
    assert_eq!(info.status, 200, "{}", info.body);
    let wrong = served.exchange("GET /api/info HTTP/1.1\r\nAuthorization: Bearer a-token-from-a-file-43", "");
    assert_eq!(wrong.status, 401);
    assert_eq!(served.stop().0, Some(0));
}
