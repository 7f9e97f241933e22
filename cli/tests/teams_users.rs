//! A team database served to each of its users (`serve --users`), against
//! a real server each test starts itself (support/cluster.rs): a user
//! lists, searches, reads, references and mentions only the sessions they
//! own and those of the projects granted to them, through the API and MCP
//! over HTTP; any other session is answered exactly as one that does not
//! exist; a wrong, absent or revoked token is refused at the next request;
//! every read is recorded in the database, and no token is.

#[path = "../../teams/tests/support/cluster.rs"]
mod cluster;
mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};

use cluster::Cluster;
use common::{ok, repo, run, Out};
use serde_json::{json, Value};

/// `users ARGS` against the database at `url`.
fn users(url: &str, args: &[&str]) -> Out {
    let mut line = vec!["users", "--database", url];
    line.extend_from_slice(args);
    ok(&line)
}

/// A new token of `user`: (its number, the token).
fn token(url: &str, user: &str) -> (i64, String) {
    let issued: Value = serde_json::from_str(&users(url, &["--json", "token", user]).stdout).unwrap();
    (issued["tokenId"].as_i64().unwrap(), issued["token"].as_str().unwrap().to_owned())
}

/// `serve --users` over the database at `url`, and the address it prints.
struct Served {
    child: Child,
    authority: String,
}

impl Served {
    fn start(url: &str) -> Served {
        let source = format!("postgres={url}");
        let mut c = common::std_cmd();
        c.args(["--source", &source, "serve", "--users", "--scope", "all"]);
        c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let authority = line.trim_end().strip_prefix("http://").and_then(|r| r.strip_suffix('/'));
        let authority = authority.unwrap_or_else(|| panic!("the first line is the URL: {line:?}")).to_owned();
        Served { child, authority }
    }

    /// One request (HTTP/1.0: the answer ends with the connection):
    /// `head` is the request line and headers but Host and Content-Length.
    fn send(&self, head: &str, body: &str) -> (u16, String, String) {
        let mut stream = TcpStream::connect(&self.authority).unwrap();
        let request = format!("{head}\r\nHost: {}\r\nContent-Length: {}\r\n\r\n{body}", self.authority, body.len());
        stream.write_all(request.as_bytes()).unwrap();
        let mut raw = String::new();
        stream.read_to_string(&mut raw).unwrap();
        let (top, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
        let status = top.split(' ').nth(1).unwrap().parse().unwrap();
        (status, top.to_ascii_lowercase(), body.to_owned())
    }

    /// `POST path` with `token` (none: no Authorization) and a JSON body.
    fn post(&self, path: &str, token: Option<&str>, body: &Value) -> (u16, String) {
        let auth = token.map(|t| format!("\r\nAuthorization: Bearer {t}")).unwrap_or_default();
        let head = format!(
            "POST {path} HTTP/1.0{auth}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream"
        );
        let (status, _, body) = self.send(&head, &body.to_string());
        (status, body)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // SAFETY: signals the child this test started, by its id.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

/// An MCP client of `/mcp` over HTTP with one token: its session.
struct Mcp<'a> {
    served: &'a Served,
    token: String,
    session: String,
    next: u64,
}

impl<'a> Mcp<'a> {
    fn connect(served: &'a Served, token: &str) -> Mcp<'a> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let head = format!(
            "POST /mcp HTTP/1.0\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream"
        );
        let (status, top, body) = served.send(&head, &init.to_string());
        assert_eq!(status, 200, "{body}");
        let session = top.lines().find_map(|l| l.strip_prefix("mcp-session-id:")).expect("a session id").trim();
        let mut mcp = Mcp { served, token: token.to_owned(), session: session.to_owned(), next: 1 };
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(mcp.send(&done).0, 202);
        mcp.next = 1;
        mcp
    }

    fn send(&mut self, message: &Value) -> (u16, String) {
        let head = format!(
            "POST /mcp HTTP/1.0\r\nAuthorization: Bearer {}\r\nMcp-Session-Id: {}\r\nMcp-Protocol-Version: 2025-06-18\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream",
            self.token, self.session
        );
        let (status, _, body) = self.served.send(&head, &message.to_string());
        (status, body)
    }

    /// A tool's result (`structuredContent`, or the error's text), or the
    /// HTTP status when the request was refused.
    fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, u16> {
        self.next += 1;
        let call = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}});
        let (status, body) = self.send(&call);
        if status != 200 {
            return Err(status);
        }
        // An event stream (or one JSON answer): the answer to our id.
        let answer = body
            .lines()
            .filter_map(|l| l.strip_prefix("data:").map(str::trim).or(Some(l)))
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|m| m["id"] == json!(self.next))
            .unwrap_or_else(|| panic!("no answer in {body:?}"));
        let result = &answer["result"];
        if result["isError"] == json!(true) {
            return Ok(json!({"error": result["content"][0]["text"]}));
        }
        Ok(result["structuredContent"].clone())
    }
}

/// The ids of a list of candidates or results (`sessionId`s), in a set.
fn ids(list: &Value) -> BTreeSet<String> {
    list.as_array().unwrap().iter().map(|c| c["sessionId"].as_str().unwrap().to_owned()).collect()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

/// The team: the example sessions pushed (those of /home/dev/beta as
/// bob's), users ana (granted /home/dev/alpha) and bob (no project).
fn team(pg: &Cluster, name: &str) -> String {
    let url = pg.new_database(name);
    let root = repo().join("examples/sessions");
    let root = root.to_str().unwrap();
    ok(&["--no-cache", "--root", root, "push", "--to", &url]);
    ok(&["--no-cache", "--root", root, "push", "--to", &url, "--project", "/home/dev/beta", "--as", "bob"]);
    users(&url, &["add", "ana"]);
    users(&url, &["add", "bob"]);
    users(&url, &["grant", "ana", "/home/dev/alpha"]);
    url
}

const ALPHA: [&str; 3] = ["agent-instructions", "compaction-recovery", "goal-wrapup"];
const BETA: &str = "subagent mixed ~1";
const NO_CWD: &str = "multi-turn";
const MISSING: &str = "no-such-session";

#[test]
fn a_user_sees_only_their_sessions_and_projects_and_the_rest_reads_as_missing() {
    let pg = Cluster::start();
    let url = team(&pg, "scoped");
    let (_, ana) = token(&url, "ana");
    let (_, bob) = token(&url, "bob");
    let served = Served::start(&url);
    let target = json!({"id": "web"});
    let api = |path: &str, token: &str, body: Value| served.post(path, Some(token), &body);
    let listed = |token: &str| {
        let (status, body) = api("/api/candidates", token, json!({"target": target, "limit": 100}));
        assert_eq!(status, 200, "{body}");
        ids(&serde_json::from_str(&body).unwrap())
    };
    assert_eq!(listed(&ana), set(&ALPHA), "ana: the project granted");
    assert_eq!(listed(&bob), set(&[BETA]), "bob: his own sessions");

    // Search: a word of every session finds only the user's.
    let everywhere: Value =
        serde_json::from_str(&ok(&["--source", &format!("postgres={url}"), "search", "--json", "e"]).stdout).unwrap();
    assert!(ids(&everywhere).len() >= 5, "{everywhere}");
    let (status, found) = api("/api/search", &ana, json!({"target": target, "query": "e", "limit": 100}));
    assert_eq!(status, 200, "{found}");
    assert_eq!(ids(&serde_json::from_str(&found).unwrap()), set(&ALPHA));

    // Each route answers a session out of reach as it answers one that does
    // not exist: the same status, code and words (the id aside).
    let same_as_missing = |token: &str, outside: &str, path: &str, body: &dyn Fn(&str) -> Value| {
        let (s1, b1) = api(path, token, body(outside));
        let (s2, b2) = api(path, token, body(MISSING));
        assert_eq!(s1, s2, "{path}: {b1} / {b2}");
        assert_ne!(s1, 200, "{path}: {b1}");
        assert_eq!(b1.replace(outside, "ID"), b2.replace(MISSING, "ID"), "{path}");
    };
    let read = |id: &str| json!({"target": target, "sessionId": id});
    let prepare = |id: &str| json!({"target": target, "content": [{"type": "text", "text": "see"}], "references": [{"sessionId": id}]});
    let mention = |id: &str| json!({"sessionId": id});
    for (token, outside) in [(&ana, NO_CWD), (&ana, BETA), (&bob, "goal-wrapup"), (&bob, NO_CWD)] {
        same_as_missing(token, outside, "/api/read", &read);
        same_as_missing(token, outside, "/api/prepare", &prepare);
        same_as_missing(token, outside, "/api/mention", &mention);
    }
    let (status, page) = api("/api/read", &ana, read("goal-wrapup"));
    assert_eq!(status, 200, "{page}");
    let (status, prepared) = api("/api/prepare", &ana, prepare("compaction-recovery"));
    assert_eq!(status, 200, "{prepared}");
    let (status, _) = api("/api/mention", &ana, mention("agent-instructions"));
    assert_eq!(status, 200);

    // The same over MCP.
    let mut mcp = Mcp::connect(&served, &ana);
    let sessions = mcp.call("list_sessions", json!({"limit": 100})).unwrap();
    assert_eq!(ids(&sessions["sessions"]), set(&ALPHA));
    let results = mcp.call("search_sessions", json!({"query": "e", "limit": 50})).unwrap();
    assert_eq!(ids(&results["results"]), set(&ALPHA));
    for tool in ["read_session", "reference_session"] {
        let outside = mcp.call(tool, json!({"id": NO_CWD})).unwrap();
        let missing = mcp.call(tool, json!({"id": MISSING})).unwrap();
        let words =
            |v: &Value, id: &str| v["error"].as_str().unwrap_or_else(|| panic!("{tool}: {v}")).replace(id, "ID");
        assert_eq!(words(&outside, NO_CWD), words(&missing, MISSING), "{tool}");
    }
    assert_eq!(mcp.call("read_session", json!({"id": "goal-wrapup"})).unwrap()["sessionId"], "goal-wrapup");

    // A grant counts from the next request, and so does taking it back.
    users(&url, &["grant", "bob", "/home/dev/alpha"]);
    let mut both = set(&ALPHA);
    both.insert(BETA.to_owned());
    assert_eq!(listed(&bob), both);
    users(&url, &["ungrant", "bob", "/home/dev/alpha"]);
    assert_eq!(listed(&bob), set(&[BETA]));

    // Who read what: ana's reads, searches and references, nothing of what
    // she was refused, nothing for bob's refused reads.
    let rows = pg.psql("scoped", "SELECT user_name || ' ' || action || ' ' || session_id FROM dsr_audit ORDER BY at");
    let rows: BTreeSet<&str> = rows.lines().collect();
    for expected in [
        "ana read goal-wrapup",
        "ana reference compaction-recovery",
        "ana search agent-instructions",
        "ana search goal-wrapup",
    ] {
        assert!(rows.contains(expected), "{expected} not in {rows:?}");
    }
    assert!(rows.iter().all(|r| !r.ends_with(NO_CWD) && !r.ends_with(MISSING) && !r.starts_with("bob")), "{rows:?}");
    let audit: Value = serde_json::from_str(&users(&url, &["--json", "audit", "--user", "ana"]).stdout).unwrap();
    assert!(audit.as_array().unwrap().iter().any(|r| r["action"] == "read" && r["sessionId"] == "goal-wrapup"));
}

#[test]
fn a_wrong_absent_or_revoked_token_is_refused_at_the_next_request() {
    let pg = Cluster::start();
    let url = team(&pg, "tokens");
    let (first, ana) = token(&url, "ana");
    let (_, again) = token(&url, "ana");
    let served = Served::start(&url);
    let body = json!({"target": {"id": "web"}});
    assert_eq!(served.post("/api/candidates", Some(&ana), &body).0, 200);
    let mut mcp = Mcp::connect(&served, &ana);
    assert!(mcp.call("list_sessions", json!({})).is_ok());

    // Absent, a stranger's, one of the right shape with a wrong secret.
    let number = ana.split('-').nth(1).unwrap();
    let forged = format!("dsr-{number}-{}", "0".repeat(64));
    for token in [None, Some("not-a-token-of-this-team"), Some(forged.as_str())] {
        let (status, refused) = served.post("/api/candidates", token, &body);
        assert_eq!(status, 401, "{token:?}: {refused}");
        assert!(refused.contains("UNAUTHORIZED"), "{refused}");
    }
    // The database holds no token, only a hash of each.
    let dump = pg.dump("tokens");
    assert!(!dump.contains(&ana[ana.len() - 64..]) && !dump.contains(&again[again.len() - 64..]));

    // Revoked: refused from the next request on, through the API and an
    // MCP session opened before; the user's other token still works.
    users(&url, &["revoke", &first.to_string()]);
    assert_eq!(served.post("/api/candidates", Some(&ana), &body).0, 401);
    assert_eq!(mcp.call("list_sessions", json!({})), Err(401));
    assert_eq!(served.post("/api/candidates", Some(&again), &body).0, 200);
    users(&url, &["revoke", "--user", "ana"]);
    assert_eq!(served.post("/api/candidates", Some(&again), &body).0, 401);
    let list: Value = serde_json::from_str(&users(&url, &["--json", "list"]).stdout).unwrap();
    let ana_tokens = &list.as_array().unwrap().iter().find(|u| u["user"] == "ana").unwrap()["tokens"];
    assert!(ana_tokens.as_array().unwrap().iter().all(|t| t["revokedAt"].is_string()), "{list}");
}

#[test]
fn serving_per_user_needs_a_database_with_users() {
    let pg = Cluster::start();
    let url = pg.new_database("bare");
    let source = format!("postgres={url}");
    let refused = run(&["--source", &source, "serve", "--users"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("reading or serving it needs version 4"), "{}", refused.stderr);
    let local = run(&["--root", repo().join("examples/sessions").to_str().unwrap(), "serve", "--users"]);
    assert_eq!(local.code, 1);
    assert!(local.stderr.contains("--source postgres=URL"), "{}", local.stderr);
    let unknown = run(&["users", "--database", &url, "token", "nobody"]);
    assert_eq!(unknown.code, 1);
    assert!(unknown.stderr.contains("no user \"nobody\""), "{}", unknown.stderr);
}

/// The step-by-step set-up of docs/teams.md: its `<!-- run -->` blocks, in
/// order, in one shell, from the repository's root, against a database of
/// their own; what they print is what the text says.
#[test]
fn the_per_user_set_up_of_the_docs_runs() {
    let pg = Cluster::start();
    let url = pg.new_database("docs");
    let text = std::fs::read_to_string(repo().join("docs/teams.md")).unwrap();
    let blocks: Vec<&str> = text
        .split("<!-- run -->\n```sh\n")
        .skip(1)
        .map(|rest| &rest[..rest.find("\n```").expect("a closed block")])
        .collect();
    assert!(blocks.len() >= 6, "docs/teams.md has {} runnable blocks", blocks.len());
    // The server the blocks start in the background ends with the shell.
    let script = format!("set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n{}\n", blocks.join("\n"));
    let bin = assert_cmd::cargo::cargo_bin("dsh-session-ref");
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(repo())
        .env("PATH", path)
        .env("DSR_DATABASE_URL", &url)
        .env("XDG_CACHE_HOME", common::cache_dir())
        .env("DSR_NO_DAEMON", "1")
        .env_remove("DSH_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the blocks failed:\n{stdout}\n{stderr}");
    let lists: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect();
    let lists: Vec<&Value> = lists.iter().filter(|v| v.is_array()).collect();
    assert_eq!(ids(lists[0]), set(&ALPHA), "ana's listing: {stdout}");
    assert_eq!(ids(lists[1]), set(&[BETA]), "bob's listing: {stdout}");
    assert!(stdout.contains("goal-wrapup") && stdout.contains("SESSION_REFERENCE_READ_FAILED"), "{stdout}");
    assert!(stdout.contains("ana\tread\tgoal-wrapup"), "the record: {stdout}");
    assert_eq!(stdout.lines().last(), Some("401"), "{stdout}");
}
