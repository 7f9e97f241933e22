// Generators of big session logs, shared by the memory tests
// (`core/tests/memory_bounds.rs`) and the index's streamed-build test
// (`core/src/resolver/discovery/search/streamed_tests.rs`), each of which
// `include!`s this file in a module of its own.

use std::path::Path;

use serde_json::{json, Value};

/// About `n` bytes of words, different for each `salt`, on lines.
pub fn words(n: usize, salt: usize) -> String {
    words_in(n, salt, '\n')
}

/// [`words`], with `every13` after every 13th word.
pub fn words_in(n: usize, salt: usize, every13: char) -> String {
    const BASE: [&str; 12] =
        ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "sigma", "omega", "rho"];
    let mut out = String::with_capacity(n + 16);
    let mut i = salt;
    while out.len() < n {
        out.push_str(BASE[(i * 7 + salt) % BASE.len()]);
        out.push_str(&(i % 997).to_string());
        out.push(if i % 13 == 0 { every13 } else { ' ' });
        i += 1;
    }
    out
}

pub fn set_texts(content: &mut Value, text: &str) {
    for block in content.as_array_mut().into_iter().flatten() {
        if block["type"] == "text" {
            block["text"] = json!(text);
        }
    }
}

/// A DSH v4 log of `turns` turns, each the fixture's tool-call turn with
/// a user prompt of `prompt` bytes and a tool result of `tool` bytes;
/// returns its sessions root.
pub fn dsh_root(turns: usize, prompt: usize, tool: usize) -> tempfile::TempDir {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/dsh-generations/raw/--home-dev-gen--/tool-call-turn/session.v4.jsonl");
    let lines: Vec<Value> =
        std::fs::read_to_string(fixture).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (mut header, pre, turn) = (lines[0].clone(), &lines[1..4], &lines[4..]);
    header["id"] = json!("big");
    let mut out = String::new();
    for line in std::iter::once(&header).chain(pre) {
        out.push_str(&line.to_string());
        out.push('\n');
    }
    let period = turn.len() as u64;
    for n in 0..turns {
        let shift = n as u64 * period;
        let prompt_text = format!("turn {n}: {}", words(prompt, n));
        for template in turn {
            let mut ev = template.clone();
            ev["seq"] = json!(ev["seq"].as_u64().unwrap() + shift);
            if let Some(seqs) = ev.get_mut("sourceEventSeqs").and_then(Value::as_array_mut) {
                for s in seqs {
                    *s = json!(s.as_u64().unwrap() + shift);
                }
            }
            let kind = ev["type"].as_str().unwrap().to_owned();
            let data = &mut ev["data"];
            if let Some(seqs) = data.get_mut("messageSeqs").and_then(Value::as_array_mut) {
                for s in seqs {
                    *s = json!(s.as_u64().unwrap() + shift);
                }
            }
            if data.get("turn").is_some() {
                data["turn"] = json!(n + 1);
            }
            if let Some(id) = data["message"]["id"].as_str().map(str::to_owned) {
                data["message"]["id"] = json!(format!("{id}-{n}"));
            }
            if let Some(inserted) = data.get_mut("inserted").and_then(Value::as_array_mut) {
                for ins in inserted {
                    ins["id"] = json!(format!("{}-{n}", ins["id"].as_str().unwrap()));
                    set_texts(&mut ins["content"], &prompt_text);
                }
            }
            if kind == "user/message" && data["source"]["kind"] == "user" {
                data["id"] = json!(format!("{}-{n}", data["id"].as_str().unwrap()));
                set_texts(&mut data["content"], &prompt_text);
            }
            if kind == "tool/result" {
                set_texts(&mut data["message"]["content"], &words(tool, n + 1));
            }
            out.push_str(&ev.to_string());
            out.push('\n');
        }
    }
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("--home-dev-gen--/big");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("session.v4.jsonl"), out).unwrap();
    root
}

/// A Claude Code transcript of `rounds` prompts of `prompt` bytes, each
/// answered in `answer` bytes; returns its projects root.
pub fn claude_root(stem: &str, rounds: usize, prompt: usize, answer: usize) -> tempfile::TempDir {
    let mut out = String::new();
    let mut parent: Option<String> = None;
    for n in 0..2 * rounds {
        let uuid = format!("00000000-0000-4000-8000-{n:012}");
        let (kind, message) = match n % 2 {
            0 => ("user", json!({"role": "user", "content": format!("question {n}: {}", words(prompt, n))})),
            _ => (
                "assistant",
                json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
                       "content": [{"type": "text", "text": format!("answer {n}: {}", words(answer, n))}]}),
            ),
        };
        let line = json!({"parentUuid": parent, "isSidechain": false, "type": kind, "message": message,
            "uuid": uuid, "cwd": "/w", "version": "2.1.5",
            "timestamp": format!("2026-01-01T00:{:02}:{:02}.000Z", n / 60 % 60, n % 60)});
        out.push_str(&line.to_string());
        out.push('\n');
        parent = Some(uuid);
    }
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("-w")).unwrap();
    std::fs::write(root.path().join(format!("-w/{stem}.jsonl")), out).unwrap();
    root
}

pub fn log_bytes(root: &Path) -> usize {
    fn walk(p: &Path) -> usize {
        std::fs::read_dir(p)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                match e.file_type().unwrap().is_dir() {
                    true => walk(&e.path()),
                    false => e.metadata().unwrap().len() as usize,
                }
            })
            .sum()
    }
    walk(root)
}

/// A Claude Code transcript of what the read under a budget must get
/// right: responses split over several lines (one repeated), a compaction
/// with its summary and preserved messages, prompts queued and delivered
/// mid-turn, a sidechain, a credential, empty texts, and `rounds` rounds
/// of conversation of about `size` bytes each.
pub fn claude_rich_root(stem: &str, rounds: usize, size: usize) -> tempfile::TempDir {
    let mut lines: Vec<Value> = Vec::new();
    let mut parent: Option<String> = None;
    let ts = |n: usize| format!("2026-01-01T{:02}:{:02}:{:02}.000Z", n / 3600 % 24, n / 60 % 60, n % 60);
    let push = |lines: &mut Vec<Value>, parent: &mut Option<String>, kind: &str, extra: Value| -> String {
        let n = lines.len();
        let uuid = format!("00000000-0000-4000-8000-{n:012}");
        let mut line = json!({"parentUuid": parent.clone(), "isSidechain": false, "type": kind,
            "uuid": uuid, "cwd": format!("/w/{}", n / 50), "version": "2.1.5", "timestamp": ts(n)});
        for (k, v) in extra.as_object().unwrap() {
            line[k] = v.clone();
        }
        lines.push(line);
        *parent = Some(uuid.clone());
        uuid
    };
    let mut preserved = Vec::new();
    for r in 0..rounds {
        let text = format!("question {r}: {}", words(size, r));
        let u = push(&mut lines, &mut parent, "user", json!({"message": {"role": "user", "content": text}}));
        if r % 7 == 3 {
            preserved.push(u);
        }
        let id = format!("msg_{r}");
        for part in 0..(1 + r % 3) {
            let t = match (r % 5, part) {
                (0, 1) => String::new(),
                (4, 0) => format!("the key is AKIAIOSFODNN7EXAMPLE and {}", words(size / 4, r)),
                _ => format!("answer {r}.{part}: {}", words(size, r + part)),
            };
            let message = json!({"id": id, "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": t}, {"type": "tool_use", "id": "t", "name": "x", "input": {}}]});
            let line = push(&mut lines, &mut parent, "assistant", json!({"message": message}));
            if part == 0 && r % 4 == 1 {
                // Re-appended: the first copy wins.
                let again = lines.last().unwrap().clone();
                lines.push(again);
                let _ = line;
            }
        }
        if r % 6 == 2 {
            let q = format!("steer {r}: {}", words(size / 2, r + 9));
            lines.push(
                json!({"type": "queue-operation", "operation": "enqueue", "timestamp": ts(lines.len()), "content": q}),
            );
            lines.push(
                json!({"type": "queue-operation", "operation": "remove", "timestamp": ts(lines.len()), "content": q}),
            );
        }
        if r % 9 == 4 {
            let q = format!("queued {r}: {}", words(size / 3, r + 5));
            push(
                &mut lines,
                &mut parent,
                "attachment",
                json!({"attachment": {"type": "queued_command", "prompt": q, "commandMode": "prompt"}}),
            );
        }
        if r % 8 == 5 {
            let side = json!({"message": {"role": "user", "content": "a side question"}, "isSidechain": true});
            let mut p2 = parent.clone();
            push(&mut lines, &mut p2, "user", side);
        }
        if r == rounds / 2 {
            let anchor = parent.clone().unwrap();
            let boundary = json!({"subtype": "compact_boundary", "parentUuid": null,
                "compactMetadata": {"preservedMessages": {"anchorUuid": anchor, "uuids": preserved.clone()}}});
            let mut none = None;
            push(&mut lines, &mut none, "system", boundary);
            parent = none;
            let summary = format!("summary: {}", words(size * 2, 77));
            push(
                &mut lines,
                &mut parent,
                "user",
                json!({"isCompactSummary": true, "message": {"role": "user", "content": summary}}),
            );
        }
    }
    let mut out = String::new();
    for line in lines {
        out.push_str(&line.to_string());
        out.push('\n');
    }
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("-w")).unwrap();
    std::fs::write(root.path().join(format!("-w/{stem}.jsonl")), out).unwrap();
    root
}

/// A Codex home holding one rollout (`sessions/2026/01/01/…-{id}.jsonl`)
/// of `lines`; returns the home.
pub fn codex_home_of(id: &str, lines: &[Value]) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions/2026/01/01");
    std::fs::create_dir_all(&dir).unwrap();
    let mut out = String::new();
    for line in lines {
        out.push_str(&line.to_string());
        out.push('\n');
    }
    std::fs::write(dir.join(format!("rollout-2026-01-01T00-00-00-{id}.jsonl")), out).unwrap();
    home
}

/// A Codex envelope line.
fn codex_line(n: usize, kind: &str, payload: Value) -> Value {
    let ts = format!("2026-01-01T{:02}:{:02}:{:02}.000Z", n / 3600 % 24, n / 60 % 60, n % 60);
    json!({"timestamp": ts, "type": kind, "payload": payload})
}

/// A Codex message item of `role` with one text part of type `part` each.
fn codex_message(role: &str, part: &str, texts: &[&str]) -> Value {
    let content: Vec<Value> = texts.iter().map(|t| json!({"type": part, "text": t})).collect();
    json!({"type": "message", "role": role, "content": content})
}

/// A Codex rollout of `rounds` prompts of `prompt` bytes, each answered in
/// `answer` bytes; returns its home.
pub fn codex_root(id: &str, rounds: usize, prompt: usize, answer: usize) -> tempfile::TempDir {
    let ts = "2026-01-01T00:00:00.000Z";
    let mut lines = vec![json!({"timestamp": ts, "type": "session_meta", "payload": {"id": id, "timestamp": ts, "cwd": "/w"}})];
    for n in 0..rounds {
        let q = format!("question {n}: {}", words(prompt, n));
        let a = format!("answer {n}: {}", words(answer, n + 1));
        lines.push(codex_line(n, "response_item", codex_message("user", "input_text", &[&q])));
        lines.push(codex_line(n, "response_item", codex_message("assistant", "output_text", &[&a])));
    }
    codex_home_of(id, &lines)
}

/// A Codex home of what a read under a budget must get right: in one
/// rollout, contextual fragments, user messages of several parts, empty
/// texts, a credential, compactions with a replacement history (a summary,
/// an encrypted one) and without (a checkpoint message), rollbacks, a
/// rename, torn lines, tool calls and reasoning, and `rounds` rounds of
/// about `size` bytes each; beside it a legacy flat rollout of bare items.
pub fn codex_rich_root(id: &str, rounds: usize, size: usize) -> tempfile::TempDir {
    let ts = "2026-01-01T00:00:00.000Z";
    let mut lines = vec![json!({"timestamp": ts, "type": "session_meta", "payload": {"id": id, "timestamp": ts, "cwd": "/w"}})];
    let summary_prefix = "Another language model started to solve this problem and produced a summary:";
    for r in 0..rounds {
        let q = format!("question {r}: {}", words(size, r));
        let user = match r % 6 {
            0 => codex_message("user", "input_text", &[&q, &format!("and {}", words(size / 3, r + 3))]),
            1 => codex_message("user", "input_text", &["<environment_context>\n<cwd>/w</cwd>\n</environment_context>"]),
            2 => codex_message("user", "input_text", &[""]),
            _ => codex_message("user", "input_text", &[&q]),
        };
        lines.push(codex_line(r, "response_item", user));
        if r % 6 == 1 {
            lines.push(codex_line(r, "response_item", codex_message("user", "input_text", &[&q])));
        }
        lines.push(codex_line(r, "response_item", json!({"type": "reasoning", "summary": [], "encrypted_content": "x"})));
        lines.push(codex_line(r, "response_item", json!({"type": "function_call", "name": "shell", "arguments": "{}"})));
        let answer = match r % 5 {
            0 => vec![String::new()],
            4 => vec![format!("the key is AKIAIOSFODNN7EXAMPLE and {}", words(size / 4, r))],
            2 => vec![format!("answer {r}.0: {}", words(size, r + 1)), format!("answer {r}.1: {}", words(size / 2, r))],
            _ => vec![format!("answer {r}: {}", words(size, r + 1))],
        };
        let answer: Vec<&str> = answer.iter().map(String::as_str).collect();
        lines.push(codex_line(r, "response_item", codex_message("assistant", "output_text", &answer)));
        if r % 7 == 3 {
            lines.push(codex_line(r, "event_msg", json!({"type": "thread_rolled_back", "num_turns": 1 + r % 2})));
        }
        if r % 11 == 5 {
            let kept = format!("kept {r}: {}", words(size / 2, r + 7));
            let summary = format!("{summary_prefix} {}", words(size, r + 11));
            let mut history = vec![
                codex_message("user", "input_text", &[&kept]),
                codex_message("developer", "input_text", &["permissions"]),
                codex_message("user", "input_text", &[&summary]),
            ];
            if r % 2 == 0 {
                history.push(json!({"type": "compaction", "encrypted_content": "opaque"}));
            }
            lines.push(codex_line(r, "compacted", json!({"message": "", "replacement_history": history})));
        }
        if r % 13 == 7 {
            let message = format!("What happened so far ({r}): {}", words(size / 2, r + 13));
            lines.push(codex_line(r, "compacted", json!({"message": message})));
        }
        if r % 17 == 9 {
            lines.push(codex_line(r, "event_msg", json!({"type": "thread_name_updated", "thread_name": format!("name {r}")})));
        }
        if r % 10 == 6 {
            lines.push(json!("not an object"));
            lines.push(codex_line(r, "turn_context", json!({"cwd": format!("/w/{r}")})));
        }
    }
    let home = codex_home_of(id, &lines);
    // A legacy flat rollout: a header line, then bare items and state records.
    let legacy = "0199bbbb-0000-7000-8000-000000000002";
    let mut out = json!({"id": legacy, "timestamp": ts}).to_string() + "\n";
    for r in 0..rounds / 2 {
        let q = format!("legacy question {r}: {}", words(size, r + 5));
        let a = format!("legacy answer {r}: {}", words(size, r + 6));
        for item in [codex_message("user", "input_text", &[&q]), json!({"record_type": "state"}), codex_message("assistant", "output_text", &[&a])] {
            out.push_str(&item.to_string());
            out.push('\n');
        }
    }
    std::fs::write(home.path().join(format!("sessions/rollout-{legacy}.jsonl")), out).unwrap();
    home
}

/// A DSH v4 log of `turns` turns of a prompt and an answer of `text`
/// bytes each and nothing else; after the turn `after` of each
/// `(after, from, to)` of `replaces`, a compaction checkpoint replaces the
/// run of the surface from the prompt of turn `from` to the answer of turn
/// `to` (which must still be on the surface). Returns its sessions root;
/// the session is "big".
pub fn dsh_messages_root(turns: usize, text: usize, replaces: &[(usize, usize, usize)]) -> tempfile::TempDir {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/dsh-generations/raw/--home-dev-gen--/tool-call-turn/session.v4.jsonl");
    let first = std::fs::read_to_string(fixture).unwrap();
    let mut header: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    header["id"] = json!("big");
    let mut out = header.to_string();
    out.push('\n');
    let mut seq = 0u64;
    let mut push = |out: &mut String, kind: &str, data: Value, op: Option<Value>, sources: Option<Value>| -> u64 {
        let mut ev = json!({"type": kind, "seq": seq, "time": 1_780_000_000_000u64 + seq, "data": data});
        if let Some(sources) = sources {
            ev["sourceEventSeqs"] = sources;
        }
        if let Some(op) = op {
            ev["surfaceOp"] = op;
        }
        out.push_str(&ev.to_string());
        out.push('\n');
        seq += 1;
        seq - 1
    };
    let (mut prompts, mut answers) = (Vec::new(), Vec::new());
    for n in 0..turns {
        let (turn, step) = (json!({"turn": n + 1}), json!({"turn": n + 1, "step": 1}));
        push(&mut out, "turn/start", turn.clone(), None, None);
        push(&mut out, "step/start", step.clone(), None, None);
        let prompt = json!({"content": [{"type": "text", "text": format!("question {n}: {}", words(text, n))}],
            "source": {"kind": "user"}, "role": "user", "id": format!("u{n}")});
        prompts.push(push(&mut out, "user/message", prompt, Some(json!("append")), None));
        let mut answer = step.clone();
        answer["message"] = json!({"role": "assistant", "id": format!("a{n}"),
            "content": [{"type": "text", "text": format!("answer {n}: {}", words(text, n + 1))}],
            "source": {"kind": "model", "provider": "p", "model": "m"}});
        answers.push(push(&mut out, "assistant/message", answer, Some(json!("append")), None));
        push(&mut out, "step/end", step, None, None);
        let mut end = turn;
        end["reason"] = json!({"kind": "completed"});
        push(&mut out, "turn/end", end, None, None);
        for &(_, from, to) in replaces.iter().filter(|r| r.0 == n) {
            let (start, end) = (prompts[from], answers[to]);
            let summary = json!({"content": [{"type": "text", "text": format!("summary of turns {from} to {to}")}],
                "source": {"kind": "compact-checkpoint", "compactionId": format!("c{n}")},
                "role": "user", "id": format!("c{n}")});
            let op = json!({"op": "replace", "startSeq": start, "endSeq": end});
            push(&mut out, "user/message", summary, Some(op), Some(json!([start, end])));
        }
    }
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("--home-dev-gen--/big");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("session.v4.jsonl"), out).unwrap();
    root
}
