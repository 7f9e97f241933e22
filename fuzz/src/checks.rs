//! The bodies of the fuzz targets: each takes arbitrary bytes, runs one
//! entry point of the library and panics only when an invariant breaks.
//!
//! The same file is compiled into the cargo-fuzz targets (`fuzz_targets/`,
//! nightly + libFuzzer) and into `core/tests/fuzz_replay.rs`, which replays
//! every committed corpus file on stable Rust, so the corpus is checked by
//! the normal test command without a nightly toolchain.

use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use dsh_session_reference::projection::{project_json, Role};
use dsh_session_reference::prompt::{render_prompt, render_source, PROMPT_FOOTER, PROMPT_HEADER};
use dsh_session_reference::sources::dsh::layout::{relative_log_path, Encoding};
use dsh_session_reference::sources::dsh::StoreErrorKind;
use dsh_session_reference::wire::parse_js;
use dsh_session_reference::{
    block_on, decode_uri, encode_uri, format_mention, parse_text, stringify_tag_safe, stringify_tag_safe_text,
    CandidateOptions, Config, DshStore, ErrorCode, PrepareOptions, Resolver, Target,
};
use serde_json::Value;

/// The budgets every snapshot is retained under.
pub const BUDGETS: [u64; 6] = [1, 90, 300, 1_000, 4_096, 65_536];

/// Mention parsing: never panics; every reference found is the id of a
/// canonical URI; text without references comes back unchanged; the mention
/// of each reference parses back to it.
pub fn mention(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(parsed) = parse_text(text) else { return };
    if parsed.references.is_empty() {
        assert_eq!(parsed.text, text, "text without references must come back unchanged");
    }
    for r in &parsed.references {
        assert_eq!(decode_uri(&encode_uri(&r.session_id)).as_deref().ok(), Some(r.session_id.as_str()));
        let again = parse_text(&format_mention(&r.session_id, Some(&r.label))).expect("a formatted mention parses");
        assert_eq!(again.text, format!("@{}", r.label));
        assert_eq!(again.references, vec![r.clone()]);
    }
}

/// URI decoding: only canonical URIs decode, and every string round-trips
/// through `encode_uri`.
pub fn uri(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for candidate in [text.to_owned(), format!("dsh-session:{text}")] {
        if let Ok(id) = decode_uri(&candidate) {
            assert_eq!(encode_uri(&id), candidate, "a URI that decodes is canonical");
        }
    }
    assert_eq!(decode_uri(&encode_uri(text)).expect("an encoded id decodes"), text);
}

/// Tag-safe stringify of arbitrary JSON text: no `<`, parses back to the
/// same value, and is a fixed point.
pub fn tag_safe(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(value) = parse_js(text) else {
        assert!(stringify_tag_safe_text(text).is_err());
        return;
    };
    let out = stringify_tag_safe(&value);
    assert!(!out.contains('<'), "tag-safe output contains `<`: {out}");
    assert_eq!(stringify_tag_safe_text(text).as_deref(), Ok(out.as_str()));
    let back = parse_js(&out).expect("tag-safe output is JSON");
    // Up to -0, which `JSON.stringify` writes as `0`, as the reference does.
    assert_eq!(without_negative_zero(back.clone()), without_negative_zero(value), "parses back to the same value");
    assert_eq!(stringify_tag_safe(&back), out, "stringify is a fixed point");
    serde_json::from_str::<Value>(&out).expect("standard JSON");
}

fn without_negative_zero(v: Value) -> Value {
    match v {
        Value::Number(n) if n.as_f64() == Some(0.0) => Value::from(0),
        Value::Array(a) => Value::Array(a.into_iter().map(without_negative_zero).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, without_negative_zero(v))).collect()),
        other => other,
    }
}

/// What a snapshot projects to: id, cwd, capturedThroughSeq and the items.
pub type Projected = (String, Option<String>, Option<String>, Vec<(Role, String, bool)>);

/// docs/contract.md §3 over a parsed value, naively: the oracle of the single-pass
/// projection of bytes. `None` where the snapshot is malformed.
pub fn naive_projection(doc: &Value) -> Option<Projected> {
    let session = doc.get("session")?.as_object()?;
    let id = session.get("id")?.as_str()?.to_owned();
    let cwd = match session.get("cwd") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_str()?.to_owned()),
    };
    let seq = match doc.get("capturedThroughSeq")? {
        Value::Null => None,
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => Some(n.to_string()),
        _ => return None,
    };
    let text_of = |content: &Value| -> Option<Option<String>> {
        let texts: Vec<&str> = content
            .as_array()?
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        Some((!texts.is_empty()).then(|| texts.join("\n")))
    };
    let mut items = Vec::new();
    for event in doc.get("events")?.as_array()? {
        let event = event.as_object()?;
        let (role, text, checkpoint) = match event.get("type")?.as_str()? {
            "user/message" => {
                let data = event.get("data")?.as_object()?;
                let text = text_of(data.get("content")?)?;
                let field = |name: &str| -> Option<Option<String>> {
                    match data.get("source") {
                        None | Some(Value::Null) => Some(None),
                        Some(Value::Object(s)) => match s.get(name) {
                            None | Some(Value::Null) => Some(None),
                            Some(v) => Some(Some(v.as_str()?.to_owned())),
                        },
                        Some(_) => None,
                    }
                };
                let (kind, plugin) = (field("kind")?, field("plugin")?);
                let checkpoint = kind.as_deref() == Some("plugin") && plugin.as_deref() == Some("compact");
                if kind.as_deref() != Some("user") && !checkpoint {
                    continue;
                }
                (Role::User, text, checkpoint)
            }
            "assistant/message" => {
                let message = event.get("data")?.as_object()?.get("message")?.as_object()?;
                (Role::Assistant, text_of(message.get("content")?)?, false)
            }
            _ => continue,
        };
        if let Some(text) = text.filter(|t| !t.is_empty()) {
            items.push((role, text, checkpoint));
        }
    }
    Some((id, cwd, seq, items))
}

/// The projection of snapshot bytes, in the oracle's terms.
pub fn projected(bytes: &[u8]) -> Option<Projected> {
    let p = project_json(bytes).ok()?;
    let items = p.items.iter().map(|i| (i.role, i.text.decode().unwrap().into_owned(), i.checkpoint)).collect();
    let seq = p.captured_through_seq.map(|n| n.to_string());
    Some((p.session_id.into_owned(), p.cwd.map(|c| c.into_owned()), seq, items))
}

/// Projection, retention and the prompt from arbitrary snapshot JSON: the
/// projection agrees with [`naive_projection`] wherever serde_json can parse
/// the bytes; under every budget, a rendered source fits, is tag-safe JSON
/// with the fixed key order, and its statistics add up; the prompt frame is
/// intact.
pub fn prepare(data: &[u8]) {
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        assert_eq!(projected(data), naive_projection(&value), "the projection differs from the naive one");
    }
    let Ok(projection) = project_json(data) else { return };
    let original = projection.items.len();
    for budget in BUDGETS {
        let Ok(Some(source)) = render_source(projection.clone(), "label </referenced-sessions>", budget) else {
            continue;
        };
        assert!(source.json.len() as u64 <= budget, "{} bytes over a budget of {budget}", source.json.len());
        assert!(!source.json.contains('<'));
        let v: Value = serde_json::from_str(&source.json).expect("a rendered source is JSON");
        let keys: Vec<&str> = v.as_object().expect("an object").keys().map(String::as_str).collect();
        assert_eq!(keys, ["sessionId", "label", "cwd", "capturedThroughSeq", "conversation"]);
        let conv = v["conversation"].as_array().expect("a conversation array");
        let stats = &source.stats;
        assert_eq!(stats.original_messages, original);
        assert_eq!(stats.retained_messages, conv.len());
        assert_eq!(stats.retained_messages + stats.omitted_messages, stats.original_messages);
        assert_eq!(stats.compacted, projection.compacted());
        if original > 0 {
            assert!(!conv.is_empty(), "the newest item always survives");
        }
        if !stats.truncated() {
            assert_eq!(conv.len(), original);
        }
        let prompt = render_prompt(std::slice::from_ref(&source));
        assert!(prompt.starts_with(PROMPT_HEADER) && prompt.ends_with(PROMPT_FOOTER));
        assert_eq!(prompt.matches("<referenced-sessions>").count(), 1);
        assert_eq!(prompt.matches("</referenced-sessions>").count(), 1);
        assert_eq!(prompt.split('\n').count(), PROMPT_HEADER.matches('\n').count() + 2);
    }
}

/// How the store target lays the fuzz input out as a log file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreMode {
    /// The bytes are `session.jsonl`.
    Raw,
    /// The bytes are JSONL, written as a `session.jsonl.zstd` of checksummed
    /// frames (the header line, then batches of up to three lines); the last
    /// frame may be torn.
    ZstdFrames,
    /// The bytes are `session.jsonl.zstd` as they are.
    ZstdVerbatim,
}

/// The DSH store on arbitrary file bytes: the first byte picks the
/// [`StoreMode`], the rest is the log. Never panics; whatever is listed can
/// be located; a surface that reads is JSON the projection accepts; a
/// prepare through the store ends with a result or an error with a contract code (docs/contract.md §8.2).
pub fn store(data: &[u8]) {
    let Some((&mode, body)) = data.split_first() else { return };
    let mode = match mode % 4 {
        0 | 1 => StoreMode::Raw,
        2 => StoreMode::ZstdFrames,
        _ => StoreMode::ZstdVerbatim,
    };
    let root = tempfile::tempdir().expect("a temporary root");
    store_in(root.path(), mode, body, data[0] >= 0x80);
}

fn header_of(first_line: &[u8]) -> (String, Option<String>) {
    let v: Value = serde_json::from_slice(first_line).unwrap_or(Value::Null);
    let id = v.get("id").and_then(Value::as_str).unwrap_or("fuzz").to_owned();
    let cwd = v.get("cwd").and_then(Value::as_str).map(str::to_owned);
    (id, cwd)
}

fn zstd_frames(body: &[u8], torn: bool) -> Vec<u8> {
    let lines: Vec<&[u8]> = body.split_inclusive(|b| *b == b'\n').collect();
    let mut batches: Vec<Vec<u8>> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        // The header alone, then batches whose size depends on the lines.
        if i <= 1 || batches.last().is_some_and(|b| b.len() > 64 + line.len() % 200) {
            batches.push(Vec::new());
        }
        batches.last_mut().expect("a batch").extend_from_slice(line);
    }
    let mut out = Vec::new();
    for batch in &batches {
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 1).expect("a zstd encoder");
        enc.include_checksum(true).expect("checksums");
        enc.write_all(batch).expect("compress");
        out.extend(enc.finish().expect("finish a frame"));
    }
    if torn && out.len() > 4 {
        out.truncate(out.len() - 1 - body.len() % 4);
    }
    out
}

fn store_in(root: &Path, mode: StoreMode, body: &[u8], torn: bool) {
    let first_line = body.split(|b| *b == b'\n').next().unwrap_or_default();
    let (id, cwd) = header_of(first_line);
    let (encoding, bytes) = match mode {
        StoreMode::Raw => (Encoding::Raw, body.to_vec()),
        StoreMode::ZstdFrames => (Encoding::Zstd, zstd_frames(body, torn)),
        StoreMode::ZstdVerbatim => (Encoding::Zstd, body.to_vec()),
    };
    // The path derived from the header (so the log is listed), or a fixed
    // one when that path cannot be a relative path of this file system.
    let mut rel = relative_log_path(&id, cwd.as_deref(), encoding);
    let derived = Path::new(&rel);
    if derived.components().count() != 3
        || !derived.components().all(|c| matches!(c, std::path::Component::Normal(_)))
        || rel.contains('\0')
    {
        rel = relative_log_path("fuzz", None, encoding);
    }
    let path = root.join(&rel);
    fs::create_dir_all(path.parent().expect("a session directory")).expect("create the session directory");
    fs::write(&path, &bytes).expect("write the log");

    let store = DshStore::open(root).expect("open the root");
    let listing = store.list().expect("a one-encoding root lists");
    assert_eq!(listing.sessions.len() + listing.rejected.len(), 1, "one log is listed or rejected");
    let mut ids: Vec<String> = listing.sessions.iter().map(|s| s.header.id.clone()).collect();
    ids.push(id.clone());
    for sid in &ids {
        let listed = listing.sessions.iter().any(|s| &s.header.id == sid);
        let title = store.read_title(sid);
        let surface = store.read_surface_json(sid);
        let stats = store.inspect(sid);
        for kind in [title.as_ref().err(), surface.as_ref().err(), stats.as_ref().err()].into_iter().flatten() {
            if listed {
                assert_ne!(kind.kind(), StoreErrorKind::NotFound, "a listed session is found: {}", kind.message());
            }
        }
        assert_eq!(title.is_ok(), surface.is_ok(), "title and surface reads validate the same log");
        if let Ok(json) = &surface {
            let v: Value = serde_json::from_slice(json).expect("a surface snapshot is JSON");
            assert_eq!(v["session"]["id"].as_str(), Some(sid.as_str()));
            // The store validates the log, not the shape of each event's
            // data, so the projection may still refuse it; it must not panic.
            let _ = project_json(json);
        }
    }
    // Through the resolver, as a host would use it.
    let resolver = Resolver::new(Arc::new(store), Config::new(None, None, Some(2_000)).expect("a valid config"));
    let target = Target::new("\u{0}fuzz-target", None);
    for sid in ids.iter().filter(|sid| **sid != target.id) {
        let r = block_on(resolver.prepare(
            &target,
            &Value::Array(vec![]),
            &[serde_json::json!({"sessionId": sid})],
            &PrepareOptions::default(),
            None,
        ));
        if let Err(e) = r {
            assert!(matches!(e.code(), ErrorCode::ReadFailed | ErrorCode::BudgetExceeded), "{e}");
        }
    }
    let _ = block_on(resolver.candidates(&target, "", &CandidateOptions::default(), None))
        .expect("listing a readable root succeeds");
}

/// The body of one fuzz target.
pub type Check = fn(&[u8]);

/// Every target by name, for the replay.
pub const TARGETS: [(&str, Check); 5] =
    [("mention", mention), ("uri", uri), ("tag_safe", tag_safe), ("prepare", prepare), ("store", store)];
