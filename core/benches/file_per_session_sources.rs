//! The file-per-session readers (Copilot CLI, Gemini CLI, Cursor, Aider,
//! Pi, OpenHands, Qwen Code, Continue, Kimi Code, Grok Build): reading a 100 MB session of each into its projected
//! conversation (MB/s), and listing 10,000 sessions of each kind with a new
//! source each round (no state kept between listings). Each kind is one
//! row of [`KINDS`]: its generator, and how its source is opened.
//!
//! Run: `cargo bench -p dsh-session-reference --bench file_per_session_sources`
//! (`-- --quick` for 20 MB files and 2,000 sessions; `-- KIND…` for some
//! kinds only).
//!
//! Inputs are generated deterministically in a temporary directory, shaped
//! like the formats' real files: reasoning, tool calls and 3 KB tool
//! outputs around the visible text, text with `"quotes"` and `<tags>`.
//!
//! Beside each wall time, the process's CPU time (user + system, all
//! threads) of the best round: on a machine shared with other work the
//! wall time grows with the load, the CPU time much less.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::cpu_time;

use dsh_session_reference::fs::{open_regular, par_map, BoundedLines};
use dsh_session_reference::sources::aider::AiderSource;
use dsh_session_reference::sources::continue_cli::ContinueSource;
use dsh_session_reference::sources::copilot_cli::CopilotCliSource;
use dsh_session_reference::sources::cursor::CursorSource;
use dsh_session_reference::sources::files::{FileSessions, SessionFiles};
use dsh_session_reference::sources::gemini_cli::GeminiCliSource;
use dsh_session_reference::sources::grok::GrokSource;
use dsh_session_reference::sources::kimi::KimiSource;
use dsh_session_reference::sources::openhands::OpenHandsSource;
use dsh_session_reference::sources::pi::PiSource;
use dsh_session_reference::sources::qwen_code::QwenCodeSource;
use serde_json::json;

fn text(i: usize, n: usize) -> String {
    format!("turn {i}: reading the parser, <tags> and \"quotes\" in the output; ").chars().cycle().take(n).collect()
}

fn ts(i: usize) -> String {
    format!("2026-07-01T{:02}:{:02}:{:02}.000Z", (i / 3600) % 24, (i / 60) % 60, i % 60)
}

fn lines(target: usize, mut turn: impl FnMut(usize, &mut Vec<serde_json::Value>)) -> String {
    let mut out = String::with_capacity(target + (1 << 20));
    let mut i = 0;
    let mut batch = Vec::new();
    while out.len() < target {
        turn(i, &mut batch);
        for v in batch.drain(..) {
            out.push_str(&v.to_string());
            out.push('\n');
        }
        i += 1;
    }
    out
}

/// A Copilot CLI `events.jsonl` of about `target` bytes.
fn copilot(target: usize) -> String {
    let head = json!({"type": "session.start", "id": "e0", "timestamp": ts(0), "parentId": null, "data": {
        "sessionId": "s", "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.76",
        "startTime": ts(0), "context": {"cwd": "/work/app", "gitRoot": "/work/app", "branch": "main"}}});
    let body = lines(target, |i, out| {
        let ev = |kind: &str, n: usize, data: serde_json::Value| json!({"type": kind, "id": format!("e{i}.{n}"), "timestamp": ts(i), "parentId": format!("e{i}.{}", n.max(1) - 1), "data": data});
        out.push(ev(
            "user.message",
            1,
            json!({"content": text(i, 300),
            "transformedContent": format!("<current_datetime>{}</current_datetime>\n{}", ts(i), text(i, 300)),
            "attachments": [], "agentMode": "interactive", "delivery": "idle"}),
        ));
        out.push(ev("assistant.turn_start", 2, json!({"turnId": i.to_string()})));
        out.push(ev("assistant.reasoning", 3, json!({"reasoningId": format!("r{i}"), "content": text(i, 800)})));
        out.push(ev(
            "assistant.message",
            4,
            json!({"messageId": format!("m{i}a"), "content": "",
            "toolRequests": [{"toolCallId": format!("t{i}"), "name": "view", "arguments": {"path": "src/lib.rs"}}],
            "reasoningText": text(i, 400)}),
        ));
        out.push(ev("tool.execution_start", 5, json!({"toolCallId": format!("t{i}"), "toolName": "view"})));
        out.push(ev(
            "tool.execution_complete",
            6,
            json!({"toolCallId": format!("t{i}"), "success": true,
            "result": {"content": text(i, 3000)}}),
        ));
        out.push(ev("assistant.message", 7, json!({"messageId": format!("m{i}b"), "content": text(i, 400)})));
        if i % 500 == 499 {
            out.push(ev("session.compaction_start", 8, json!({"trigger": "threshold"})));
            out.push(ev("session.compaction_complete", 9, json!({"success": true, "summaryContent": text(i, 2000)})));
        }
    });
    format!("{head}\n{body}")
}

/// A Gemini CLI chat `.jsonl` of about `target` bytes.
fn gemini(target: usize) -> String {
    let head = json!({"sessionId": "s", "projectHash": "h", "startTime": ts(0), "lastUpdated": ts(0), "kind": "main"});
    let body = lines(target, |i, out| {
        out.push(
            json!({"id": format!("u{i}"), "timestamp": ts(i), "type": "user", "content": [{"text": text(i, 300)}]}),
        );
        let call = json!({"id": format!("t{i}"), "name": "read_file", "args": {"path": "src/lib.rs"}, "status": "success",
            "timestamp": ts(i), "result": [{"functionResponse": {"id": format!("t{i}"), "name": "read_file",
            "response": {"output": text(i, 3000)}}}]});
        out.push(json!({"id": format!("g{i}"), "timestamp": ts(i), "type": "gemini", "content": "",
            "thoughts": [{"subject": "plan", "description": text(i, 800), "timestamp": ts(i)}], "toolCalls": [call]}));
        out.push(
            json!({"id": format!("g{i}"), "timestamp": ts(i), "type": "gemini", "content": [{"text": text(i, 400)}],
            "thoughts": [], "toolCalls": [call], "tokens": {"input": 1, "output": 1, "cached": 0, "total": 2}}),
        );
        out.push(json!({"$set": {"lastUpdated": ts(i)}}));
    });
    format!("{head}\n{body}")
}

/// A Cursor agent transcript of about `target` bytes.
fn cursor(target: usize) -> String {
    lines(target, |i, out| {
        out.push(json!({"role": "user", "message": {"content": [{"type": "text", "text":
            format!("<user_info>\nOS: linux\n</user_info>\n<user_query>\n{}\n</user_query>", text(i, 300))}]}}));
        out.push(json!({"role": "assistant", "message": {"content": [{"type": "text", "text": text(i, 400)},
            {"type": "tool_use", "name": "read_file", "input": {"path": "src/lib.rs"}}]}}));
        out.push(json!({"role": "tool", "message": {"content": [{"type": "tool_result", "content": text(i, 3000)}]}}));
        out.push(json!({"role": "assistant", "message": {"content": [{"type": "text", "text": text(i, 400)}]}}));
    })
}

/// An Aider history of about `target` bytes in `runs` runs.
fn aider(target: usize, runs: usize) -> String {
    let mut out = String::with_capacity(target + 4096);
    let per_run = target / runs.max(1);
    for r in 0..runs {
        out.push_str(&format!("\n# aider chat started at 2026-07-{:02} 10:{:02}:00\n\n", 1 + r % 28, r % 60));
        out.push_str("> Aider v0.86.1  \n> Main model: gpt-5 with diff edit format  \n\n");
        let start = out.len();
        let mut i = 0;
        while out.len() - start < per_run {
            out.push_str(&format!("#### {}  \n#### {}  \n\n", text(i, 150), text(i + 1, 150)));
            out.push_str(&format!("{}\n\nsrc/lib.rs\n```rust\n{}\n```\n\n", text(i, 400), text(i, 600)));
            for _ in 0..20 {
                out.push_str(&format!("> {}  \n", text(i, 150)));
            }
            out.push('\n');
            i += 1;
        }
    }
    out
}

/// A Pi session (version 3) of about `target` bytes, its id `id`.
fn pi(target: usize, id: &str) -> String {
    let head = json!({"type": "session", "version": 3, "id": id, "timestamp": ts(0), "cwd": "/work/app"});
    let mut parent = String::new();
    let body = lines(target, |i, out| {
        let mut entry = |n: usize, v: serde_json::Value| {
            let mut v = v;
            let id = format!("{i:x}.{n}");
            v["id"] = id.clone().into();
            v["parentId"] = if parent.is_empty() { serde_json::Value::Null } else { parent.clone().into() };
            v["timestamp"] = ts(i).into();
            parent = id;
            out.push(v);
        };
        entry(0, json!({"type": "message", "message": {"role": "user", "content": text(i, 300), "timestamp": 1}}));
        entry(
            1,
            json!({"type": "message", "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": text(i, 800)},
            {"type": "toolCall", "id": format!("t{i}"), "name": "read", "arguments": {"path": "src/lib.rs"}}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4", "stopReason": "toolUse"}}),
        );
        entry(
            2,
            json!({"type": "message", "message": {"role": "toolResult", "toolCallId": format!("t{i}"),
            "toolName": "read", "content": [{"type": "text", "text": text(i, 3000)}], "isError": false}}),
        );
        entry(
            3,
            json!({"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": text(i, 400)}],
            "stopReason": "stop"}}),
        );
        if i % 500 == 499 {
            entry(
                4,
                json!({"type": "compaction", "summary": text(i, 2000), "firstKeptEntryId": format!("{i:x}.0"), "tokensBefore": 1}),
            );
        }
    });
    format!("{head}\n{body}")
}

/// An OpenHands conversation of about `target` bytes in directory `dir`
/// under `root`: its base_state.json and one file per event (a system
/// prompt, then per turn a user message, a tool call with its thought, its
/// 3 KB observation and an answer; a condensation every 500 turns).
fn openhands(root: &Path, dir: &str, target: usize) -> PathBuf {
    let conversation = root.join(dir);
    let events = conversation.join("events");
    std::fs::create_dir_all(&events).unwrap();
    let (mut n, bytes, mut parent) = (0usize, std::cell::Cell::new(0usize), None::<String>);
    let mut put = |v: serde_json::Value| -> String {
        let id = format!("00000000-0000-4000-8000-{n:012x}");
        let mut v = v;
        v["id"] = id.clone().into();
        v["timestamp"] = "2026-07-01T10:00:00.000000".into();
        if let Some(p) = &parent {
            v["parent_id"] = p.clone().into();
        }
        let text = v.to_string();
        bytes.set(bytes.get() + text.len());
        std::fs::write(events.join(format!("event-{n:05}-{id}.json")), text).unwrap();
        n += 1;
        parent = Some(id.clone());
        id
    };
    put(json!({"source": "agent", "system_prompt": {"type": "text", "text": text(0, 6000)},
        "tools": [{"name": "terminal", "description": text(0, 500)}], "kind": "SystemPromptEvent"}));
    let mut i = 0;
    let mut last = String::new();
    while bytes.get() < target {
        let user = put(
            json!({"source": "user", "llm_message": {"role": "user", "content": [{"type": "text", "text": text(i, 300)}]},
            "activated_skills": [], "extended_content": [], "kind": "MessageEvent"}),
        );
        let call = format!("call_{i}");
        let action = put(json!({"source": "agent", "thought": [{"type": "text", "text": text(i, 400)}],
            "reasoning_content": text(i, 800), "action": {"command": "cat src/lib.rs", "kind": "TerminalAction"},
            "tool_name": "terminal", "tool_call_id": call, "tool_call": {"id": call, "name": "terminal",
            "arguments": "{\"command\": \"cat src/lib.rs\"}", "origin": "completion"},
            "llm_response_id": format!("r{i}"), "security_risk": "LOW", "kind": "ActionEvent"}));
        put(json!({"source": "environment", "tool_name": "terminal", "tool_call_id": call,
            "observation": {"content": [{"type": "text", "text": text(i, 3000)}], "exit_code": 0, "kind": "TerminalObservation"},
            "action_id": action, "kind": "ObservationEvent"}));
        last = put(
            json!({"source": "agent", "llm_message": {"role": "assistant", "content": [{"type": "text", "text": text(i, 400)}]},
            "llm_response_id": format!("a{i}"), "kind": "MessageEvent"}),
        );
        if i % 500 == 499 {
            last = put(json!({"source": "environment", "forgotten_event_ids": [user], "summary": text(i, 2000),
                "summary_offset": 1, "llm_response_id": format!("c{i}"), "kind": "Condensation"}));
        }
        i += 1;
    }
    let state = json!({"id": dir, "agent": {"llm": {"model": "claude-sonnet-4"}, "tools": [{"name": "terminal"}], "kind": "Agent"},
        "workspace": {"working_dir": "/work/app", "kind": "LocalWorkspace"}, "persistence_dir": "/p",
        "max_iterations": 500, "stuck_detection": true, "execution_status": "finished",
        "leaf_event_id": last, "head_is_empty": false,
        "stats": {"usage_to_metrics": {"agent": {"token_usages": (0..20).map(|k| json!({"prompt_tokens": k})).collect::<Vec<_>>()}}}});
    let path = conversation.join("base_state.json");
    std::fs::write(&path, state.to_string()).unwrap();
    events
}

/// A Qwen Code chat (`projects/<slug>/chats/<id>.jsonl`) of about `target`
/// bytes: a chain of records by `parentUuid`, Gemini-shaped parts.
fn qwen(target: usize, id: &str) -> String {
    let mut parent = serde_json::Value::Null;
    lines(target, |i, out| {
        let mut record = |n: usize, kind: &str, message: serde_json::Value| {
            let uuid = format!("{i:x}.{n}");
            out.push(json!({"uuid": uuid, "parentUuid": parent, "sessionId": id, "timestamp": ts(i), "type": kind,
                "cwd": "/work/app", "version": "0.9.0", "gitBranch": "main", "message": message}));
            parent = uuid.into();
        };
        record(0, "user", json!({"role": "user", "parts": [{"text": text(i, 300)}]}));
        record(
            1,
            "assistant",
            json!({"role": "model", "parts": [{"text": text(i, 800), "thought": true},
            {"functionCall": {"id": format!("t{i}"), "name": "read_file", "args": {"file_path": "src/lib.rs"}}}]}),
        );
        record(
            2,
            "tool_result",
            json!({"role": "user", "parts": [{"functionResponse": {"id": format!("t{i}"), "name": "read_file",
            "response": {"output": text(i, 3000)}}}]}),
        );
        record(3, "assistant", json!({"role": "model", "parts": [{"text": text(i, 400)}]}));
    })
}

/// A Continue CLI session file (one JSON document) of about `target` bytes.
fn continue_session(target: usize, id: &str) -> String {
    let mut history = vec![json!({"message": {"role": "system", "content": text(0, 2000)}, "contextItems": []})];
    let (mut bytes, mut i) = (0, 0);
    while bytes < target {
        let turn = [
            json!({"message": {"role": "user", "content": text(i, 300)}, "contextItems": [], "editorState": text(i, 300)}),
            json!({"message": {"role": "assistant", "content": text(i, 400), "toolCalls": [{"id": format!("t{i}"),
                "type": "function", "function": {"name": "read_file", "arguments": "{\"filepath\":\"src/lib.rs\"}"}}]},
                "contextItems": [], "toolCallStates": [{"toolCallId": format!("t{i}"), "status": "done",
                "output": [{"name": "lib.rs", "description": "lib.rs", "content": text(i, 3000)}]}]}),
            json!({"message": {"role": "tool", "content": text(i, 3000)}, "contextItems": [], "toolCallId": format!("t{i}")}),
            json!({"message": {"role": "assistant", "content": text(i, 400)}, "contextItems": []}),
        ];
        bytes += turn.iter().map(|t| t.to_string().len()).sum::<usize>();
        history.extend(turn);
        i += 1;
    }
    json!({"sessionId": id, "title": format!("Session {id}"), "workspaceDirectory": "/work/app", "history": history})
        .to_string()
}

/// A Kimi Code `wire.jsonl` of about `target` bytes: per turn a user
/// message, a step with thinking, text and a tool call, its result, and a
/// step with the answer.
fn kimi(target: usize) -> String {
    let head = json!({"type": "metadata", "protocol_version": "1.5", "created_at": 1_785_578_400_000u64});
    let body = lines(target, |i, out| {
        let t = 1_785_578_400_000u64 + i as u64;
        let ev = |event: serde_json::Value| json!({"type": "context.append_loop_event", "event": event, "time": t});
        let (s1, s2) = (format!("s{i}a"), format!("s{i}b"));
        out.push(json!({"type": "context.append_message", "message": {"role": "user", "content": [{"type": "text",
            "text": text(i, 300)}], "toolCalls": [], "origin": {"kind": "user"}}, "time": t}));
        out.push(ev(json!({"type": "step.begin", "uuid": s1, "turnId": format!("t{i}")})));
        out.push(ev(json!({"type": "content.part", "stepUuid": s1, "part": {"type": "think", "think": text(i, 800)}})));
        out.push(ev(json!({"type": "content.part", "stepUuid": s1, "part": {"type": "text", "text": text(i, 200)}})));
        out.push(ev(
            json!({"type": "tool.call", "toolCallId": format!("c{i}"), "name": "ReadFile", "args": {"path": "src/lib.rs"}, "stepUuid": s1}),
        ));
        out.push(ev(json!({"type": "step.end", "uuid": s1, "usage": {"inputOther": 100, "output": 20}})));
        out.push(ev(
            json!({"type": "tool.result", "toolCallId": format!("c{i}"), "result": {"output": text(i, 3000), "isError": false}}),
        ));
        out.push(ev(json!({"type": "step.begin", "uuid": s2, "turnId": format!("t{i}")})));
        out.push(ev(json!({"type": "content.part", "stepUuid": s2, "part": {"type": "text", "text": text(i, 400)}})));
        out.push(ev(json!({"type": "step.end", "uuid": s2, "usage": {"inputOther": 100, "output": 20}})));
    });
    format!("{head}\n{body}")
}

/// A Grok Build `chat_history.jsonl` of about `target` bytes (chat
/// completion messages: the user's query wrapped in Grok's tags).
fn grok(target: usize) -> String {
    let head = json!({"role": "system", "content": text(0, 2000)});
    let body = lines(target, |i, out| {
        out.push(json!({"role": "user", "content": format!(
            "<user_info>\nWorkspace Path: /work/app\n</user_info>\n\n<user_query>\n{}\n</user_query>", text(i, 300))}));
        out.push(json!({"role": "assistant", "content": "", "reasoning_content": text(i, 800), "tool_calls": [{"id": format!("c{i}"),
            "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"src/lib.rs\"}"}}]}));
        out.push(json!({"role": "tool", "content": text(i, 3000), "tool_call_id": format!("c{i}")}));
        out.push(json!({"role": "assistant", "content": text(i, 400)}));
    });
    format!("{head}\n{body}")
}

/// The floor of any reader of the file, best of `rounds`: its lines read
/// with the sources' own line reader (nothing parsed), and every line
/// parsed by serde_json into `IgnoredAny` (builds nothing).
fn floors(path: &Path, rounds: usize) -> (Duration, Duration) {
    let pass = |parse: bool| {
        let (file, _) = open_regular(path).unwrap();
        let mut lines = BoundedLines::new(file, 64 << 20);
        let mut n = 0u64;
        while let Some(line) = lines.next_line().unwrap() {
            n += if parse { u64::from(serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok()) } else { 1 };
        }
        std::hint::black_box(n);
    };
    let (mut scan, mut skip) = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        let t = Instant::now();
        pass(false);
        scan = scan.min(t.elapsed());
        let t = Instant::now();
        pass(true);
        skip = skip.min(t.elapsed());
    }
    (scan, skip)
}

/// The floor of any reader of a file that is one JSON document (Continue),
/// best of `rounds`: the file read whole, and parsed whole by serde_json
/// into `IgnoredAny` (builds nothing).
fn document_floors(path: &Path, rounds: usize) -> (Duration, Duration) {
    let (mut scan, mut skip) = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        let t = Instant::now();
        std::hint::black_box(std::fs::read(path).unwrap());
        scan = scan.min(t.elapsed());
        let t = Instant::now();
        let bytes = std::fs::read(path).unwrap();
        std::hint::black_box(serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok());
        skip = skip.min(t.elapsed());
    }
    (scan, skip)
}

/// The floor of any reader of a directory of small files (OpenHands'
/// events), best of `rounds`: each file opened, read whole in one read
/// and closed, nothing parsed; on one thread, then on the
/// threads a reader's `par_map` uses. On Linux each file is opened as the
/// readers open it, by its name relative to the directory opened once
/// (`openat2`, no link followed, not leaving the directory); elsewhere by
/// its path. The files, and (wall, CPU) of each.
fn file_floors(dir: &Path, rounds: usize) -> (usize, Duration, Duration, Duration, Duration) {
    use std::io::Read;
    let names: Vec<std::ffi::OsString> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    #[cfg(target_os = "linux")]
    let under = {
        use rustix::fs::{openat2, Mode, OFlags, ResolveFlags, CWD};
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        openat2(CWD, dir, flags, Mode::empty(), ResolveFlags::empty()).unwrap()
    };
    let open = |name: &std::ffi::OsString| -> std::fs::File {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::{openat2, Mode, OFlags, ResolveFlags};
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
            let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH;
            std::fs::File::from(openat2(&under, name.as_os_str(), flags, Mode::empty(), how).unwrap())
        }
        #[cfg(not(target_os = "linux"))]
        std::fs::File::open(dir.join(name)).unwrap()
    };
    let read = |name: &std::ffi::OsString, buf: &mut Vec<u8>| {
        let mut file = open(name);
        // One read into a buffer larger than any event file (the reader's
        // first read asks for its buffer's room), which comes back short:
        // the end of the file, no size asked for.
        buf.resize(1 << 20, 0);
        let n = file.read(buf).unwrap();
        assert!(n < buf.len());
        n
    };
    let (mut one, mut one_cpu, mut threads, mut threads_cpu) =
        (Duration::MAX, Duration::MAX, Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        let mut buf = Vec::new();
        let (n, wall, cpu) = timed(|| names.iter().map(|f| read(f, &mut buf)).sum::<usize>());
        std::hint::black_box(n);
        (one, one_cpu) = (one.min(wall), one_cpu.min(cpu));
        let (n, wall, cpu) = timed(|| par_map(&names, |f, buf: &mut Vec<u8>| read(f, buf)).iter().sum::<usize>());
        std::hint::black_box(n);
        (threads, threads_cpu) = (threads.min(wall), threads_cpu.min(cpu));
    }
    (names.len(), one, one_cpu, threads, threads_cpu)
}

/// `f`'s wall and CPU time.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration, Duration) {
    let (t, c) = (Instant::now(), cpu_time());
    let v = f();
    (v, t.elapsed(), cpu_time() - c)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_owned()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Best of `rounds` reads of `id`: (wall time, CPU time, items).
fn read_best<F: SessionFiles>(source: &FileSessions<F>, id: &str, rounds: usize) -> (Duration, Duration, usize) {
    let (mut best, mut best_cpu) = (Duration::MAX, Duration::MAX);
    let mut items = 0;
    for _ in 0..rounds {
        let (n, wall, cpu) = timed(|| source.conversation(id).unwrap().items.len());
        items = n;
        best = best.min(wall);
        best_cpu = best_cpu.min(cpu);
    }
    (best, best_cpu, items)
}

/// First and best of `rounds` listings, each by a newly opened source, and
/// the least CPU time one took.
fn list_best<F: SessionFiles>(
    open: impl Fn() -> FileSessions<F>,
    want: usize,
    rounds: usize,
) -> (Duration, Duration, Duration) {
    let mut first = None;
    let (mut best, mut best_cpu) = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        let source = open();
        let (listed, took, cpu) = timed(|| source.list().unwrap());
        assert_eq!(listed.sessions.len(), want, "{:?}", listed.rejected.first());
        first.get_or_insert(took);
        best = best.min(took);
        best_cpu = best_cpu.min(cpu);
    }
    (first.unwrap(), best, best_cpu)
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The bytes of a file, or of the files of a directory.
fn size_of(path: &Path) -> u64 {
    let meta = std::fs::metadata(path).unwrap();
    if meta.is_file() {
        return meta.len();
    }
    std::fs::read_dir(path).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum()
}

/// One kind of the benchmark.
struct Bench {
    name: &'static str,
    /// Writes session `n` of about `bytes` bytes under `root`: what it
    /// wrote (a file, or a directory of files, whose bytes count) and the
    /// session's id.
    write: fn(root: &Path, n: usize, bytes: usize) -> (PathBuf, String),
    /// Sessions per written file (a listing writes `sessions / per_file`).
    per_file: usize,
    /// Best of `rounds` reads of `id` under `root` (wall, CPU, items).
    read: fn(root: &Path, id: &str, rounds: usize) -> (Duration, Duration, usize),
    /// First and best of `rounds` listings of `want` sessions under `root`,
    /// each by a new source, and the least CPU time.
    list: fn(root: &Path, want: usize, rounds: usize) -> (Duration, Duration, Duration),
}

/// Every kind, one row each.
const KINDS: &[Bench] = &[
    Bench {
        name: "copilot-cli",
        write: |root, n, bytes| {
            let path = root.join(format!("{n:08x}-0000-4000-8000-000000000000/events.jsonl"));
            write(&path, &copilot(bytes));
            (path, format!("copilot-cli:{n:08x}-0000-4000-8000-000000000000"))
        },
        per_file: 1,
        read: |root, id, rounds| read_best(&CopilotCliSource::open(root).unwrap(), id, rounds),
        list: |root, want, rounds| list_best(|| CopilotCliSource::open(root).unwrap(), want, rounds),
    },
    Bench {
        name: "gemini-cli",
        write: |root, n, bytes| {
            let text = gemini(bytes).replacen("\"sessionId\":\"s\"", &format!("\"sessionId\":\"{n:08x}\""), 1);
            let path = root.join(format!("p{}/chats/session-2026-07-01T00-00-{n:08x}.jsonl", n % 100));
            write(&path, &text);
            write(&root.join(format!("p{}/.project_root", n % 100)), &format!("/work/p{}\n", n % 100));
            (path, format!("gemini-cli:{n:08x}"))
        },
        per_file: 1,
        read: |root, id, rounds| {
            let source = GeminiCliSource::open(root).unwrap();
            source.list().unwrap();
            read_best(&source, id, rounds)
        },
        list: |root, want, rounds| list_best(|| GeminiCliSource::open(root).unwrap(), want, rounds),
    },
    Bench {
        name: "cursor",
        write: |root, n, bytes| {
            let path = root.join(format!("-work-p{}/agent-transcripts/{n:08x}.jsonl", n % 100));
            write(&path, &cursor(bytes));
            (path, format!("cursor:{n:08x}"))
        },
        per_file: 1,
        read: |root, id, rounds| read_best(&CursorSource::open(root).unwrap(), id, rounds),
        list: |root, want, rounds| list_best(|| CursorSource::open(root).unwrap(), want, rounds),
    },
    // A 100 MB history is one run (the reader goes through the whole file
    // either way); a listing's histories hold 5 runs each, in repositories
    // two levels down.
    Bench {
        name: "aider",
        write: |root, n, bytes| {
            let path = root.join(format!("org{}/repo{n}/.aider.chat.history.md", n % 20));
            let big = bytes > 1 << 20;
            write(&path, &aider(bytes, if big { 1 } else { 5 }));
            // The id of the big one's run, from a listing of the root it is alone in.
            let id = big.then(|| AiderSource::open(root).unwrap().list().unwrap().sessions[0].header.id.clone());
            (path, id.unwrap_or_default())
        },
        per_file: 5,
        read: |root, id, rounds| read_best(&AiderSource::open(root).unwrap(), id, rounds),
        list: |root, want, rounds| list_best(|| AiderSource::open(root).unwrap(), want, rounds),
    },
    Bench {
        name: "pi",
        write: |root, n, bytes| {
            let id = format!("{n:08x}-0000-4000-8000-000000000000");
            let path = root.join(format!("--work-p{}--/2026-07-01T10-00-00-000Z_{id}.jsonl", n % 100));
            write(&path, &pi(bytes, &id));
            (path, format!("pi:{id}"))
        },
        per_file: 1,
        read: |root, id, rounds| read_best(&PiSource::open(root).unwrap(), id, rounds),
        list: |root, want, rounds| list_best(|| PiSource::open(root).unwrap(), want, rounds),
    },
    Bench {
        name: "openhands",
        write: |root, n, bytes| {
            let dir = format!("{n:08x}000040008000000000000000");
            (openhands(root, &dir, bytes), format!("openhands:{dir}"))
        },
        per_file: 1,
        read: |root, id, rounds| read_best(&OpenHandsSource::open(root).unwrap(), id, rounds),
        list: |root, want, rounds| list_best(|| OpenHandsSource::open(root).unwrap(), want, rounds),
    },
    Bench {
        name: "qwen-code",
        write: |root, n, bytes| {
            let id = format!("{n:08x}-0000-4000-8000-000000000000");
            let path = root.join(format!("-work-p{}/chats/{id}.jsonl", n % 100));
            write(&path, &qwen(bytes, &id));
            (path, format!("qwen-code:{id}"))
        },
        per_file: 1,
        read: |root, id, rounds| read_best(&QwenCodeSource::open(root).unwrap(), id, rounds),
        list: |root, want, rounds| list_best(|| QwenCodeSource::open(root).unwrap(), want, rounds),
    },
    Bench {
        name: "continue",
        write: |root, n, bytes| {
            let id = format!("{n:08x}-0000-4000-8000-000000000000");
            let path = root.join(format!("{id}.json"));
            write(&path, &continue_session(bytes, &id));
            (path, format!("continue:{id}"))
        },
        per_file: 1,
        read: |root, id, rounds| read_best(&ContinueSource::open(root).unwrap(), id, rounds),
        list: |root, want, rounds| list_best(|| ContinueSource::open(root).unwrap(), want, rounds),
    },
    Bench {
        name: "kimi",
        write: |root, n, bytes| {
            let session = root.join(format!("wd_work-p{}_1a2b3c/session_{n:08x}-0000-4000-8000-000000000000", n % 100));
            let path = session.join("agents/main/wire.jsonl");
            write(&path, &kimi(bytes));
            let state = json!({"createdAt": ts(n), "updatedAt": ts(n), "workDir": format!("/work/p{}", n % 100),
                "title": format!("Session {n}"), "isCustomTitle": false, "agents": {"main": {"type": "main"}}});
            write(&session.join("state.json"), &state.to_string());
            (path, format!("kimi:session_{n:08x}-0000-4000-8000-000000000000"))
        },
        per_file: 1,
        read: |root, id, rounds| read_best(&KimiSource::open(root).unwrap(), id, rounds),
        list: |root, want, rounds| list_best(|| KimiSource::open(root).unwrap(), want, rounds),
    },
    Bench {
        name: "grok",
        write: |root, n, bytes| {
            let id = format!("019f6000-0000-7000-8000-{n:012x}");
            let session = root.join(format!("%2Fwork%2Fp{}/{id}", n % 100));
            let path = session.join("chat_history.jsonl");
            write(&path, &grok(bytes));
            let summary = json!({"info": {"id": id, "cwd": format!("/work/p{}", n % 100)}, "session_summary": format!("Session {n}"),
                "created_at": "2026-07-01T09:00:00Z", "updated_at": "2026-07-01T09:10:00Z", "num_messages": 4});
            write(&session.join("summary.json"), &summary.to_string());
            (path, format!("grok:{id}"))
        },
        per_file: 1,
        read: |root, id, rounds| read_best(&GrokSource::open(root).unwrap(), id, rounds),
        list: |root, want, rounds| list_best(|| GrokSource::open(root).unwrap(), want, rounds),
    },
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let quick = std::env::args().any(|a| a == "--quick");
    let (size, sessions, rounds) = if quick { (20 << 20, 2_000, 3) } else { (100 << 20, 10_000, 5) };
    let kinds: Vec<&Bench> = KINDS.iter().filter(|k| args.is_empty() || args.iter().any(|a| a == k.name)).collect();
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();

    println!("load average at the start: {}", load());
    println!("format          MB   line scan  skip-parse        read     MB/s   /skip   items   read cpu");
    for kind in &kinds {
        let root = t.join("big").join(kind.name);
        let (path, id) = (kind.write)(&root, 0, size);
        let (best, cpu, items) = (kind.read)(&root, &id, rounds);
        let mb = size_of(&path) as f64 / 1e6;
        // The floors of a line-based file (of a JSON document: read whole, parsed whole).
        let (scan, skip) = if path.is_file() && kind.name == "continue" {
            document_floors(&path, rounds)
        } else if path.is_file() && kind.name != "aider" {
            floors(&path, rounds)
        } else {
            Default::default()
        };
        let floor = |d: Duration| if d.is_zero() { "         -".to_owned() } else { format!("{:9.1}ms", ms(d)) };
        let ratio = if skip.is_zero() { "      -".to_owned() } else { format!("{:6.2}x", ms(best) / ms(skip)) };
        println!(
            "{:<12} {mb:6.1} {} {} {:9.1}ms {:8.0} {ratio} {items:7} {:8.1}ms",
            kind.name,
            floor(scan),
            floor(skip),
            ms(best),
            mb / best.as_secs_f64(),
            ms(cpu)
        );
        if path.is_dir() {
            let (files, one, one_cpu, threads, threads_cpu) = file_floors(&path, rounds);
            println!(
                "  floor of its {files} files: open, read, close: {:.1} ms (cpu {:.1} ms); on the reader's \
                 threads {:.1} ms (cpu {:.1} ms)",
                ms(one),
                ms(one_cpu),
                ms(threads),
                ms(threads_cpu)
            );
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    // Listings: `sessions` of each kind, each a short real-shaped session.
    println!("load average: {}", load());
    println!(
        "\nlisting {sessions} sessions of each kind, a new source each round (first / best of {rounds}; least CPU):"
    );
    for kind in &kinds {
        let root = t.join("l").join(kind.name);
        for n in 0..sessions / kind.per_file {
            (kind.write)(&root, n, 8_000);
        }
        let (first, best, cpu) = (kind.list)(&root, sessions, rounds);
        println!("  {}: {:.1} / {:.1} ms; cpu {:.1} ms", kind.name, ms(first), ms(best), ms(cpu));
        std::fs::remove_dir_all(&root).unwrap();
    }
    println!("load average at the end: {}", load());
}
