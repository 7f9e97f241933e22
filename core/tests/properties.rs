//! Property tests (the guarantees of SECURITY.md): over arbitrary Unicode, arbitrary surfaces and
//! arbitrary budgets, every prepared context keeps its frame, its budgets and
//! its statistics; URIs and mentions round-trip; no text makes the parsers
//! panic.
//!
//! Case counts are kept small so the file runs in a few seconds in debug;
//! `PROPTEST_CASES=5000 cargo test --test properties` searches harder.

use std::sync::Arc;

use dsh_session_reference::json::parse_js;
use dsh_session_reference::prompt::{PROMPT_FOOTER, PROMPT_HEADER};
use dsh_session_reference::retention::truncate_head_tail;
use dsh_session_reference::{
    block_on, decode_uri, encode_uri, format_mention, parse_text, stringify_tag_safe, Config, ErrorCode, MemoryQuery,
    PrepareOptions, Resolver, SurfaceData, Target,
};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use serde_json::{json, Map, Value};

const BOM: &str = "\u{feff}";
const MARKER_HEAD: &str = "\n[\u{2026} omitted ";
const MARKER_TAIL: &str = " UTF-8 bytes \u{2026}]";

/// Pieces that stress framing, escaping and UTF-8 boundaries.
const PIECES: &[&str] = &[
    "<",
    ">",
    "</referenced-sessions>",
    "<referenced-sessions>",
    "\n</referenced-sessions>\n",
    "\u{2028}",
    "\u{2029}",
    "\u{feff}",
    "\u{feff}\u{feff}",
    "😀",
    "\u{10ffff}",
    "\u{1f}",
    "\0",
    "\u{7f}",
    "\"",
    "\\",
    "\\u003c",
    "é",
    "界",
    "\r\n",
    "\t",
    " ",
    "@[",
    "](",
    "dsh-session:",
    "\n[\u{2026} omitted 3 UTF-8 bytes \u{2026}]",
];

/// Arbitrary Unicode, biased towards the pieces above.
fn text(max_pieces: usize) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => proptest::sample::select(PIECES).prop_map(str::to_owned),
        2 => "[a-z ]{1,12}",
        1 => any::<char>().prop_map(String::from),
        1 => proptest::char::range('\0', '\u{1f}').prop_map(String::from),
    ];
    proptest::collection::vec(piece, 0..=max_pieces).prop_map(|v| v.concat())
}

/// One event of a surface, as the test generates it.
#[derive(Clone, Debug)]
enum Ev {
    /// A direct user message (or steering): projected.
    User(Vec<Block>),
    /// Assistant text: projected.
    Assistant(Vec<Block>),
    /// A compaction checkpoint: projected and kept by retention.
    Checkpoint(Vec<Block>),
    /// A user message from another source (a plugin, an earlier snapshot,
    /// injected context): excluded.
    ExcludedUser(Vec<Block>, &'static str),
    /// A tool result or any other event: excluded.
    Other(&'static str, String),
}

#[derive(Clone, Debug)]
enum Block {
    Text(String),
    Reasoning(String),
    Image,
    ToolCall(String),
}

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![
        6 => text(24).prop_map(Block::Text),
        1 => text(6).prop_map(Block::Reasoning),
        1 => Just(Block::Image),
        1 => text(6).prop_map(Block::ToolCall),
    ]
}

fn blocks() -> impl Strategy<Value = Vec<Block>> {
    proptest::collection::vec(block(), 0..4)
}

fn event() -> impl Strategy<Value = Ev> {
    prop_oneof![
        4 => blocks().prop_map(Ev::User),
        4 => blocks().prop_map(Ev::Assistant),
        1 => blocks().prop_map(Ev::Checkpoint),
        1 => (blocks(), proptest::sample::select(vec!["plugin-other", "session-reference", "injected"]))
            .prop_map(|(b, k)| Ev::ExcludedUser(b, k)),
        1 => (proptest::sample::select(vec!["tool/result", "turn/start", "session/title"]), text(6))
            .prop_map(|(t, s)| Ev::Other(t, s)),
    ]
}

fn content_json(blocks: &[Block]) -> Value {
    Value::Array(
        blocks
            .iter()
            .map(|b| match b {
                Block::Text(t) => json!({"type": "text", "text": t}),
                Block::Reasoning(t) => json!({"type": "reasoning", "text": t}),
                Block::Image => json!({"type": "image", "mediaType": "image/png", "data": "AAAA"}),
                Block::ToolCall(t) => json!({"type": "tool-call", "id": "c1", "name": "sh", "arguments": {"cmd": t}}),
            })
            .collect(),
    )
}

fn joined_text(blocks: &[Block]) -> String {
    let texts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

fn event_json(seq: usize, ev: &Ev) -> Value {
    let user = |blocks: &[Block], source: Value| {
        json!({"seq": seq, "time": 1, "type": "user/message", "surfaceOp": "append",
               "data": {"id": format!("m{seq}"), "role": "user", "content": content_json(blocks), "source": source}})
    };
    match ev {
        Ev::User(b) => user(b, json!({"kind": "user"})),
        Ev::Checkpoint(b) => user(b, json!({"kind": "plugin", "plugin": "compact"})),
        Ev::ExcludedUser(b, "plugin-other") => user(b, json!({"kind": "plugin", "plugin": "goal"})),
        Ev::ExcludedUser(b, kind) => user(b, json!({"kind": kind})),
        Ev::Assistant(b) => json!({"seq": seq, "time": 1, "type": "assistant/message", "surfaceOp": "append",
            "data": {"turn": 1, "step": 1, "message": {"id": format!("a{seq}"), "role": "assistant",
                     "content": content_json(b)}}}),
        Ev::Other(t, s) => json!({"seq": seq, "time": 1, "type": t, "data": {"text": s, "title": s,
            "content": [{"type": "text", "text": s}]}}),
    }
}

/// docs/contract.md §3, written out plainly: `(role, text, checkpoint)` per projected item.
fn oracle_projection(events: &[Ev]) -> Vec<(&'static str, String, bool)> {
    events
        .iter()
        .filter_map(|ev| {
            let (role, blocks, checkpoint) = match ev {
                Ev::User(b) => ("user", b, false),
                Ev::Checkpoint(b) => ("user", b, true),
                Ev::Assistant(b) => ("assistant", b, false),
                Ev::ExcludedUser(..) | Ev::Other(..) => return None,
            };
            let t = joined_text(blocks);
            (!t.is_empty()).then_some((role, t, checkpoint))
        })
        .collect()
}

#[derive(Clone, Debug)]
struct Source {
    id: String,
    label: Option<String>,
    cwd: Option<String>,
    seq: Option<u64>,
    events: Vec<Ev>,
    as_bytes: bool,
}

fn source(index: usize) -> impl Strategy<Value = Source> {
    (
        text(6),
        proptest::option::of(text(6)),
        proptest::option::of(text(4)),
        proptest::option::of(0u64..1_000_000),
        proptest::collection::vec(event(), 0..12),
        any::<bool>(),
    )
        // The index prefix keeps ids distinct and different from the target.
        .prop_map(move |(id, label, cwd, seq, events, as_bytes)| Source {
            id: format!("{index}{id}"),
            label,
            cwd,
            seq,
            events,
            as_bytes,
        })
}

fn sources() -> impl Strategy<Value = Vec<Source>> {
    (1usize..=3).prop_flat_map(|n| (0..n).map(source).collect::<Vec<_>>())
}

fn budget() -> impl Strategy<Value = u64> {
    prop_oneof![3 => 1u64..400, 4 => 400u64..3000, 1 => Just(65_536u64)]
}

fn snapshot(s: &Source) -> Value {
    let mut session = Map::new();
    session.insert("id".into(), Value::from(s.id.clone()));
    session.insert("createdAt".into(), Value::from(1_700_000_000_000u64));
    if let Some(cwd) = &s.cwd {
        session.insert("cwd".into(), Value::from(cwd.clone()));
    }
    let events: Vec<Value> = s.events.iter().enumerate().map(|(i, e)| event_json(i, e)).collect();
    json!({"session": session, "capturedThroughSeq": s.seq, "events": events})
}

/// The source object with only the items retention may never drop
/// (checkpoints and the newest item), each with an empty text: the smallest
/// object retention can reach.
fn minimal_size(s: &Source, label: &str, items: &[(&str, String, bool)]) -> usize {
    let last = items.len().saturating_sub(1);
    let conv: Vec<Value> = items
        .iter()
        .enumerate()
        .filter(|(i, it)| it.2 || *i == last)
        .map(|(_, it)| json!({"role": it.0, "text": ""}))
        .collect();
    stringify_tag_safe(&json!({"sessionId": s.id, "label": label, "cwd": s.cwd, "capturedThroughSeq": s.seq,
                               "conversation": conv}))
    .len()
}

/// Checks that `kept` is `original` or a head/tail truncation of it, and
/// returns the bytes it omits (0 for the original itself). Slices that
/// start with U+FEFF lose it without counting it (README, compatibility
/// notes), so a head or tail may be three bytes shorter than its slice.
fn omitted_by(original: &str, kept: &str) -> Result<u64, String> {
    if kept == original {
        return Ok(0);
    }
    if kept.is_empty() {
        return Ok(original.len() as u64);
    }
    let body = kept.strip_suffix(MARKER_TAIL).ok_or_else(|| format!("no omission marker in {kept:?}"))?;
    let at = body.rfind(MARKER_HEAD).ok_or_else(|| format!("no omission marker in {kept:?}"))?;
    let digits = &body[at + MARKER_HEAD.len()..];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || (digits.len() > 1 && digits.starts_with('0'))
    {
        return Err(format!("bad omission count {digits:?}"));
    }
    let n: usize = digits.parse().map_err(|e| format!("{e}"))?;
    let kept = &body[..at];
    let (o, k) = (original.as_bytes(), kept.as_bytes());
    let lcp = |a: &[u8]| a.iter().zip(k).take_while(|(x, y)| x == y).count();
    let lcp_plain = lcp(o);
    let lcp_bom = if original.starts_with(BOM) { lcp(&o[3..]) } else { 0 };
    let lcs = o.iter().rev().zip(k.iter().rev()).take_while(|(x, y)| x == y).count();
    for s in (0..=k.len()).filter(|s| kept.is_char_boundary(*s)) {
        let t = k.len() - s;
        if t > lcs {
            continue;
        }
        let mut heads = vec![];
        if s <= lcp_plain {
            heads.push(s);
        }
        if original.starts_with(BOM) && s <= lcp_bom {
            heads.push(s + 3);
        }
        let mut tails = vec![t];
        if o.len() >= t + 3 && original[..o.len() - t].ends_with(BOM) {
            tails.push(t + 3);
        }
        for h in &heads {
            for tl in &tails {
                if h + tl + n == o.len() {
                    return Ok(n as u64);
                }
            }
        }
    }
    Err(format!("{kept:?} + N={n} is not a head/tail cut of {original:?}"))
}

/// `default` cases, or `$PROPTEST_CASES` when set.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn prepare_and_check(srcs: &[Source], budget: u64) -> Result<(), TestCaseError> {
    let query = MemoryQuery::new();
    for s in srcs {
        let snap = snapshot(s);
        if s.as_bytes {
            query.set_surface(s.id.clone(), SurfaceData::from(serde_json::to_vec(&snap).unwrap()));
        } else {
            query.set_surface(s.id.clone(), snap);
        }
    }
    let resolver = Resolver::new(Arc::new(query), Config::new(None, None, Some(budget)).unwrap());
    let refs: Vec<Value> = srcs
        .iter()
        .map(|s| match &s.label {
            Some(l) => json!({"sessionId": s.id, "label": l}),
            None => json!({"sessionId": s.id}),
        })
        .collect();
    let content = json!([{"type": "text", "text": "see above"}]);
    let result =
        block_on(resolver.prepare(&Target::new("target", None), &content, &refs, &PrepareOptions::default(), None));
    let projections: Vec<_> = srcs.iter().map(|s| oracle_projection(&s.events)).collect();
    let labels: Vec<&str> = srcs.iter().map(|s| s.label.as_deref().unwrap_or(&s.id)).collect();
    let too_big: Vec<bool> = srcs
        .iter()
        .zip(&projections)
        .zip(&labels)
        .map(|((s, items), label)| minimal_size(s, label, items) as u64 > budget)
        .collect();

    let prepared = match result {
        Err(e) => {
            prop_assert_eq!(e.code(), ErrorCode::BudgetExceeded, "{}", e);
            prop_assert!(too_big.iter().any(|b| *b), "budget error although every source can fit: {}", e);
            return Ok(());
        }
        Ok(p) => p,
    };
    prop_assert!(!too_big.iter().any(|b| *b), "a source that cannot fit was rendered");
    prop_assert_eq!(&prepared.content, &content);
    let ctx = prepared.additional_context.expect("references give a context message").into_json();
    let prompt = ctx["content"][0]["text"].as_str().expect("the prompt is a string");

    // The frame: fixed header, one line of data, the closing tag last.
    prop_assert!(prompt.starts_with(PROMPT_HEADER) && prompt.ends_with(PROMPT_FOOTER));
    let lines: Vec<&str> = prompt.split('\n').collect();
    prop_assert_eq!(lines.len(), PROMPT_HEADER.matches('\n').count() + 2);
    prop_assert_eq!(lines[lines.len() - 3], "<referenced-sessions>");
    prop_assert_eq!(lines[lines.len() - 1], "</referenced-sessions>");
    prop_assert_eq!(prompt.matches("<referenced-sessions>").count(), 1);
    prop_assert_eq!(prompt.matches("</referenced-sessions>").count(), 1);
    let data = &prompt[PROMPT_HEADER.len()..prompt.len() - PROMPT_FOOTER.len()];
    prop_assert!(!data.contains('<') && !data.contains('\n') && !data.contains('\r'));
    let array: Value = serde_json::from_str(data).map_err(|e| TestCaseError::fail(format!("not JSON: {e}")))?;
    prop_assert_eq!(&stringify_tag_safe(&array), data, "the data is tag-safe JSON.stringify output");
    let array = array.as_array().expect("an array of sources");
    prop_assert_eq!(array.len(), srcs.len());

    let metas = ctx["source"]["references"].as_array().expect("metadata references");
    prop_assert_eq!(metas.len(), srcs.len());
    for (i, (((s, items), obj), meta)) in srcs.iter().zip(&projections).zip(array).zip(metas).enumerate() {
        prop_assert!(stringify_tag_safe(obj).len() as u64 <= budget, "source {} is over budget", i);
        let keys: Vec<&str> = obj.as_object().unwrap().keys().map(String::as_str).collect();
        prop_assert_eq!(keys, vec!["sessionId", "label", "cwd", "capturedThroughSeq", "conversation"]);
        prop_assert_eq!(obj["sessionId"].as_str(), Some(s.id.as_str()));
        prop_assert_eq!(obj["label"].as_str(), Some(labels[i]));
        prop_assert_eq!(&obj["cwd"], &json!(s.cwd));
        prop_assert_eq!(&obj["capturedThroughSeq"], &json!(s.seq));

        // Which items survived: every checkpoint and the newest item; the
        // dropped ones are the oldest of the rest.
        let conv = obj["conversation"].as_array().unwrap();
        let dropped = meta["omittedMessages"].as_u64().unwrap() as usize;
        let last = items.len().saturating_sub(1);
        let droppable: Vec<usize> = (0..items.len()).filter(|&j| !items[j].2 && j != last).collect();
        prop_assert!(dropped <= droppable.len());
        let survivors: Vec<usize> = (0..items.len()).filter(|j| !droppable[..dropped].contains(j)).collect();
        prop_assert_eq!(conv.len(), survivors.len(), "retained items");
        if !items.is_empty() {
            prop_assert_eq!(survivors.last(), Some(&last), "the newest item survives");
            prop_assert!(items.iter().enumerate().all(|(j, it)| !it.2 || survivors.contains(&j)), "checkpoints");
        }
        let mut omitted_bytes: u64 = droppable[..dropped].iter().map(|&j| items[j].1.len() as u64).sum();
        for (item, &j) in conv.iter().zip(&survivors) {
            prop_assert_eq!(item["role"].as_str(), Some(items[j].0));
            let kept = item["text"].as_str().unwrap();
            omitted_bytes += omitted_by(&items[j].1, kept).map_err(TestCaseError::fail)?;
        }

        // Statistics add up.
        prop_assert_eq!(meta["sessionId"].as_str(), Some(s.id.as_str()));
        prop_assert_eq!(meta["label"].as_str(), Some(labels[i]));
        prop_assert_eq!(meta["inputIndex"].as_u64(), Some(i as u64));
        prop_assert_eq!(&meta["capturedThroughSeq"], &json!(s.seq));
        prop_assert_eq!(meta["compacted"].as_bool(), Some(items.iter().any(|it| it.2)));
        let original = meta["originalMessages"].as_u64().unwrap();
        let retained = meta["retainedMessages"].as_u64().unwrap();
        prop_assert_eq!(original, items.len() as u64);
        prop_assert_eq!(retained, conv.len() as u64);
        prop_assert_eq!(retained + dropped as u64, original);
        prop_assert_eq!(meta["omittedBytes"].as_u64(), Some(omitted_bytes));
        let truncated = dropped > 0 || omitted_bytes > 0;
        prop_assert_eq!(meta["truncated"].as_bool(), Some(truncated));
        if !truncated {
            let texts: Vec<&str> = conv.iter().map(|c| c["text"].as_str().unwrap()).collect();
            let originals: Vec<&str> = items.iter().map(|it| it.1.as_str()).collect();
            prop_assert_eq!(texts, originals);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(96), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_prepared_context_keeps_its_frame_budget_and_statistics(srcs in sources(), budget in budget()) {
        prepare_and_check(&srcs, budget)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(256), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn head_tail_truncation_fits_and_counts_exactly(t in text(40), target in 0usize..200) {
        let (cut, omitted) = truncate_head_tail(&t, target);
        prop_assert!(cut.len() <= target, "{} bytes for a target of {}", cut.len(), target);
        prop_assert_eq!(omitted_by(&t, &cut).map_err(TestCaseError::fail)?, omitted as u64);
        if t.len() <= target {
            prop_assert_eq!(&*cut, t.as_str());
        }
    }

    #[test]
    fn uris_round_trip(id in prop_oneof![text(12), any::<String>()]) {
        let uri = encode_uri(&id);
        prop_assert!(uri.starts_with("dsh-session:"));
        prop_assert!(uri["dsh-session:".len()..].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        prop_assert_eq!(decode_uri(&uri).map_err(|e| TestCaseError::fail(e.to_string()))?, id);
    }

    #[test]
    fn mentions_parse_back_to_their_id_and_label(
        id in text(8),
        label in proptest::option::of(text(8)),
        before in "[^@]{0,12}",
        after in "[^@]{0,12}",
    ) {
        let mention = format_mention(&id, label.as_deref());
        let want_label = label.clone().unwrap_or_else(|| id.clone());
        let parsed = parse_text(&mention).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&parsed.text, &format!("@{want_label}"));
        prop_assert_eq!(parsed.references.len(), 1);
        prop_assert_eq!(&parsed.references[0].session_id, &id);
        prop_assert_eq!(&parsed.references[0].label, &want_label);

        // Inside ordinary text that holds no token of its own.
        let quiet = |s: &str| parse_text(s).is_ok_and(|p| p.references.is_empty());
        if quiet(&before) && quiet(&after) {
            let parsed = parse_text(&format!("{before} {mention} {after}"))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(parsed.text, format!("{before} @{want_label} {after}"));
            prop_assert_eq!(parsed.references.len(), 1);
            prop_assert_eq!(&parsed.references[0].session_id, &id);
        }
    }

    #[test]
    fn parsers_never_panic(s in mention_soup()) {
        if let Ok(p) = parse_text(&s) {
            // Every reference found is a canonical URI's id.
            for r in &p.references {
                prop_assert_eq!(decode_uri(&encode_uri(&r.session_id)).ok(), Some(r.session_id.clone()));
            }
        }
        if let Ok(id) = decode_uri(&s) {
            prop_assert_eq!(encode_uri(&id), s.clone(), "only canonical URIs decode");
        }
        let bare = format!("dsh-session:{}", s.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
        if let Ok(id) = decode_uri(&bare) {
            prop_assert_eq!(encode_uri(&id), bare);
        }
        if let Ok(v) = parse_js(&s) {
            // A fixed point after one round (`-0` becomes `0`, as in JavaScript).
            let out = stringify_tag_safe(&v);
            prop_assert!(!out.contains('<'));
            prop_assert_eq!(parse_js(&out).map(|v| stringify_tag_safe(&v)).ok(), Some(out));
        }
    }

    #[test]
    fn tag_safe_json_has_no_angle_bracket_and_parses_back(v in json_value()) {
        let out = stringify_tag_safe(&v);
        prop_assert!(!out.contains('<'));
        // Any JSON parser reads it (serde_json without `float_roundtrip`
        // may be one ulp off on doubles, so exactness is checked with
        // `parse_js`, which parses numbers as `JSON.parse` does).
        serde_json::from_str::<Value>(&out).map_err(|e| TestCaseError::fail(format!("{e}: {out}")))?;
        prop_assert_eq!(parse_js(&out).map_err(TestCaseError::fail)?, v);
    }
}

/// Text made of the tokens the mention and JSON grammars care about.
fn mention_soup() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => proptest::sample::select(vec![
            "@[", "]", "](", "(", ")", "\\", "\\]", "dsh-session:", "dsh-session:", " ", "\n", "\u{2028}",
            "\u{feff}", "=", "{", "}", "[", "\"", ":", ",", "\\u", "d800", "1e400", "-0", "null",
        ]).prop_map(str::to_owned),
        3 => "[A-Za-z0-9_-]{1,8}",
        1 => any::<char>().prop_map(String::from),
        1 => text(3),
    ];
    prop_oneof![
        4 => proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat()),
        1 => text(12).prop_map(|id| format_mention(&id, None)).prop_map(|m| m[..m.len() / 2].to_owned()),
        1 => text(8).prop_map(|id| encode_uri(&id) + "A"),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-(1i64 << 53)..=(1i64 << 53)).prop_map(Value::from),
        (-1e6f64..1e6).prop_filter("non-integral", |f| f.fract() != 0.0).prop_map(Value::from),
        text(8).prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((text(3), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}
