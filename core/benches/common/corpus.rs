//! The generated DSH sessions of the discovery and known-item benchmarks:
//! a deterministic generator of realistic logs (user and assistant text
//! drawn from one Zipf-skewed vocabulary, reasoning, big tool outputs,
//! titles now and then). Included by path (`#[path]`) by the benchmarks
//! that use it.

// Each benchmark that includes this uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::json;

/// A deterministic generator (xorshift).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const LETTERS: &[u8; 26] = b"etaoinshrdlcumwfgypbvkjxqz";
const CJK: [&str; 8] = ["发布", "版本", "会话", "摘要", "缓存", "索引", "配置", "测试"];

/// A vocabulary of 5,000 words; text draws from it with a Zipf-like skew,
/// plus identifiers (`PR1137`, `src/x_y.rs`) and some CJK.
pub struct Words(pub Vec<String>);
impl Words {
    pub fn new(rng: &mut Rng) -> Words {
        Words(
            (0..5000)
                .map(|_| {
                    // Letters drawn with an English-like skew (the first of
                    // LETTERS most often), 2 to 10 of them.
                    let len = 2 + rng.below(5) + rng.below(5);
                    (0..len).map(|_| LETTERS[(rng.below(26) * rng.below(26)) / 26] as char).collect::<String>()
                })
                .collect(),
        )
    }
    pub fn text(&self, rng: &mut Rng, bytes: usize) -> String {
        let mut s = String::with_capacity(bytes + 16);
        while s.len() < bytes {
            let r = rng.below(1000);
            match r {
                0..=9 => s.push_str(&format!("PR{}", rng.below(5000))),
                10..=14 => s.push_str(&format!("src/{}_{}.rs", self.0[rng.below(200)], self.0[rng.below(200)])),
                15..=19 => s.push_str(CJK[rng.below(CJK.len())]),
                _ => {
                    // Zipf-like: small indices much more often.
                    let i = (rng.below(5000) * rng.below(5000)) / 5000;
                    s.push_str(&self.0[i]);
                }
            }
            s.push(if rng.below(12) == 0 { '.' } else { ' ' });
            if rng.below(40) == 0 {
                s.push('\n');
            }
        }
        s
    }
}

pub fn line(v: serde_json::Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

/// One turn's events from `seq`: user text, assistant reasoning + text +
/// tool call, a big tool result, the end; a title now and then.
pub fn turn(words: &Words, rng: &mut Rng, seq: &mut u64, turn: u64, marker: bool, out: &mut String) {
    let s = *seq;
    let (n_user, n_text, n_tool) = (200 + rng.below(400), 300 + rng.below(900), 2000 + rng.below(6000));
    let mut user = words.text(rng, n_user);
    if marker && turn == 1 {
        user.push_str(" alphamarker");
    }
    let events = [
        json!({"type": "turn/start", "seq": s, "time": s, "data": {"turn": turn}}),
        json!({"type": "user/message", "seq": s + 1, "time": s, "data": {"id": format!("u{turn}"), "role": "user",
            "content": [{"type": "text", "text": user}], "source": {"kind": "user"}}, "surfaceOp": "append"}),
        json!({"type": "assistant/message", "seq": s + 2, "time": s, "data": {"turn": turn, "step": 1,
            "message": {"id": format!("a{turn}"), "role": "assistant", "content": [
                {"type": "reasoning", "text": words.text(rng, 600)},
                {"type": "text", "text": words.text(rng, n_text)},
                {"type": "tool-call", "id": format!("c{turn}"), "name": "read", "arguments": {"path": "src/lib.rs"}}],
            "source": {"kind": "model", "provider": "p", "model": "m"}}}, "surfaceOp": "append"}),
        json!({"type": "tool/result", "seq": s + 3, "time": s, "data": {"turn": turn, "step": 1, "message": {
            "id": format!("t{turn}"), "role": "user", "content": [{"type": "tool-result", "toolCallId": format!("c{turn}"),
            "content": [{"type": "text", "text": words.text(rng, n_tool)}], "isError": false}],
            "source": {"kind": "tool", "callId": format!("c{turn}")}}}, "surfaceOp": "append"}),
        json!({"type": "turn/end", "seq": s + 4, "time": s, "data": {"turn": turn, "reason": "completed"}}),
    ];
    *seq += 5;
    for e in events {
        out.push_str(&line(e));
    }
    if turn % 7 == 1 {
        let title: String = words.text(rng, 30).trim().to_owned();
        out.push_str(&line(json!({"type": "session/title", "seq": *seq, "time": *seq, "data": {"title": title}})));
        *seq += 1;
    }
}

pub struct Log {
    pub path: PathBuf,
    pub seq: u64,
    pub turns: u64,
}

pub fn write_root(root: &Path, n: usize, kb: usize) -> (Vec<Log>, usize) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let words = Words::new(&mut rng);
    write_sessions(root, 0..n, kb, &words, &mut rng)
}

/// Writes the sessions numbered `range` (see [`write_root`]).
pub fn write_sessions(
    root: &Path,
    range: std::ops::Range<usize>,
    kb: usize,
    words: &Words,
    rng: &mut Rng,
) -> (Vec<Log>, usize) {
    let mut logs = Vec::with_capacity(range.len());
    let mut total = 0;
    for i in range {
        let id = format!("session-{i:05}");
        let cwd = format!("/work/p{}", i % 20);
        let dir = root.join(format!("--work-p{}--", i % 20)).join(&id);
        std::fs::create_dir_all(&dir).unwrap();
        let mut text =
            line(json!({"type": "session", "version": 0, "id": id, "createdAt": 1_700_000_000_000u64 + i as u64,
            "cwd": cwd, "delegationDepth": 0}));
        let (mut seq, mut t) = (0u64, 0u64);
        while text.len() < kb * 1024 {
            t += 1;
            turn(words, rng, &mut seq, t, i % 2 == 0, &mut text);
        }
        total += text.len();
        let path = dir.join("session.jsonl");
        std::fs::write(&path, &text).unwrap();
        logs.push(Log { path, seq, turns: t });
    }
    (logs, total)
}
