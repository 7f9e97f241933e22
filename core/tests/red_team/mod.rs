//! The red-team sessions of `tests/red-team/sessions.json`, as an in-memory
//! host and as the DSH sessions root `tests/red-team/root/`, and the
//! scenario the hardened-mode tests run over them.
//!
//! This module uses only the API that predates the hardened mode, so that
//! the output with every option off can be compared with the output of the
//! code before it (`tests/red-team/off.json`, see `core/tests/harden.rs`).
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use dsh_session_reference::{
    block_on, format_mention, Config, DshStore, MemoryQuery, PrepareOptions, Resolver, SessionHeader, SessionQuery,
    Target,
};
use serde_json::{json, Value};

/// `tests/red-team/` at the workspace root.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/red-team")
}

/// The parsed `sessions.json`.
pub fn spec() -> Value {
    let path = dir().join("sessions.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The sessions of the spec.
pub fn sessions(spec: &Value) -> &[Value] {
    spec["sessions"].as_array().unwrap()
}

/// The session's `createdAt`: a fixed time per position.
fn created_at(index: usize) -> u64 {
    1_760_100_000_000 + index as u64 * 60_000
}

/// The target of every scenario message.
pub const TARGET: &str = "new-chat";
/// The target's cwd.
pub const TARGET_CWD: &str = "/home/dev/red";

/// The DSH log of one session, as JSON lines: header, then per message a
/// turn with the message event, the title after the first message.
fn log_lines(index: usize, s: &Value) -> Vec<Value> {
    let at = created_at(index);
    let mut lines = vec![json!({"type": "session", "version": 0, "id": s["id"], "createdAt": at,
        "cwd": s["cwd"], "delegationDepth": 0})];
    let mut seq = 0u64;
    let mut turn = 0u64;
    let mut ev = |lines: &mut Vec<Value>, kind: &str, data: Value, op: bool| {
        let mut e = json!({"type": kind, "seq": seq, "time": at + seq, "data": data});
        if op {
            e["surfaceOp"] = json!("append");
        }
        lines.push(e);
        seq += 1;
        seq - 1
    };
    for (i, m) in s["messages"].as_array().unwrap().iter().enumerate() {
        let (role, text) = (m[0].as_str().unwrap(), &m[1]);
        let content = json!([{"type": "text", "text": text}]);
        if role == "user" {
            turn += 1;
            ev(&mut lines, "turn/start", json!({"turn": turn}), false);
            let user = json!({"content": content, "source": {"kind": "user"}, "role": "user", "id": format!("u{i}")});
            let at = ev(&mut lines, "user/message", user, true);
            if i == 0 {
                let title = json!({"title": s["title"], "messageSeqs": [at], "source": {"kind": "fallback"}});
                ev(&mut lines, "session/title", title, false);
            }
        } else {
            let message = json!({"turn": turn, "step": 1, "message": {"role": "assistant", "content": content,
                "source": {"kind": "model"}, "id": format!("a{i}")}});
            ev(&mut lines, "assistant/message", message, true);
            ev(&mut lines, "turn/end", json!({"turn": turn, "reason": {"kind": "completed"}}), false);
        }
    }
    if s["messages"].as_array().unwrap().last().unwrap()[0] == "user" {
        ev(&mut lines, "turn/end", json!({"turn": turn, "reason": {"kind": "completed"}}), false);
    }
    lines
}

/// The DSH log of one session ([`log_lines`]), with every non-ASCII
/// character written `\uXXXX`, so that the checked-in logs show every
/// invisible character.
pub fn log_of(index: usize, s: &Value) -> String {
    let mut out = String::new();
    for line in log_lines(index, s) {
        for c in serde_json::to_string(&line).unwrap().chars() {
            if c.is_ascii() {
                out.push(c);
            } else {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
        out.push('\n');
    }
    out
}

/// The spec as an in-memory host: the same sessions, titles and surfaces.
pub fn memory_host(spec: &Value) -> MemoryQuery {
    let query = MemoryQuery::new();
    for (index, s) in sessions(spec).iter().enumerate() {
        let id = s["id"].as_str().unwrap();
        let cwd = s["cwd"].as_str().map(str::to_owned);
        query.add_session(SessionHeader::new(id, created_at(index), cwd));
        query.set_title(id, s["title"].as_str().map(str::to_owned));
        // The surface DSH folds from the log: the events marked `append`.
        let lines = log_lines(index, s);
        let last = lines.last().unwrap()["seq"].clone();
        let events: Vec<Value> = lines
            .into_iter()
            .filter(|e| e.get("surfaceOp").is_some())
            .map(|e| json!({"seq": e["seq"], "type": e["type"], "data": e["data"]}))
            .collect();
        query.set_surface(
            id,
            json!({"session": {"id": id, "createdAt": created_at(index), "cwd": s["cwd"]},
                "capturedThroughSeq": last, "events": events}),
        );
    }
    query
}

/// The checked-in DSH root.
pub fn dsh_host() -> DshStore {
    DshStore::open(dir().join("root")).unwrap()
}

/// The user message that mentions `ids` with their titles as labels (as a
/// host would write it from the candidates of the plain mode).
pub fn message(spec: &Value, ids: &[&str]) -> Value {
    let mentions: Vec<String> = ids
        .iter()
        .map(|id| {
            let s = sessions(spec).iter().find(|s| s["id"] == *id).unwrap();
            format_mention(id, s["title"].as_str())
        })
        .collect();
    json!({"role": "user", "source": {"kind": "user"},
        "content": [{"type": "text", "text": format!("Compare {} and answer.", mentions.join(" with "))}]})
}

/// The messages the scenario prepares: one per session, and one that
/// references three at once.
pub fn messages(spec: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = sessions(spec).iter().map(|s| message(spec, &[s["id"].as_str().unwrap()])).collect();
    out.push(message(spec, &["lookalike-tags", "zero-width", "secrets-json"]));
    out
}

/// The budgets the scenario runs under: the default, and one that forces
/// drops and cuts.
pub const BUDGETS: [u64; 2] = [65_536, 700];

/// Runs the scenario over `host` with `config` (a config JSON object whose
/// `maxReferenceBytes` is set per budget): for every message and budget,
/// `{"text": rewritten text, "prompt", "source": metadata}` or `{"error": code}`.
pub fn run(host: Arc<dyn SessionQuery>, config: &Value, spec: &Value) -> Value {
    let target = Target::new(TARGET, Some(TARGET_CWD.into()));
    let mut out = Vec::new();
    for budget in BUDGETS {
        let mut config = config.clone();
        config["maxReferenceBytes"] = json!(budget);
        let resolver = Resolver::new(host.clone(), Config::from_json(&config).unwrap());
        for m in messages(spec) {
            out.push(match block_on(resolver.prepare_messages(&target, &[m], &PrepareOptions::default(), None)) {
                Ok(prepared) => {
                    let prepared: Vec<Value> = prepared.into_iter().map(Value::from).collect();
                    let ctx = &prepared[1];
                    json!({"budget": budget, "text": prepared[0]["content"][0]["text"],
                        "prompt": ctx["content"][0]["text"], "source": ctx["source"]})
                }
                Err(e) => json!({"budget": budget, "error": e.code().as_str()}),
            });
        }
    }
    Value::Array(out)
}
