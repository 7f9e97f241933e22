//! The header line of a log (line 1, or the first zstd frame), per
//! generation.
//!
//! | generation | keys (writer order) |
//! |---|---|
//! | v0, v1 | `type:"session"`, `version`, `id`, `createdAt`, `cwd?`, `parentSession?`, `seedLength?`, `origin?`, `delegationDepth`, `agentPreset?` |
//! | v2, v3 | as v0 without `seedLength`, with a required boolean `isSeeded` after `parentSession` |
//! | v4 | exactly: required `type`, `version`, `id`, `createdAt`, `isSeeded`, `delegationDepth`; optional `cwd`, `parentSession`, `origin` (`"subagent"`), `agentPreset`. Any other key is invalid; `sandboxMode` and `approvalPolicy` are refused as retired |
//!
//! The header's `version` must equal the file's generation. A version above
//! the newest this reader implements is "unsupported", not invalid.

use std::path::Path;

use serde_json::{Map, Value};

use super::frames::{LineRead, LineReader, ZstdScratch, HEADER_CHUNK};
use super::generation::{unsupported_message, Generation, NEWEST_GENERATION};
use super::layout::Encoding;
use crate::config::MAX_SAFE_INTEGER;

/// The longest header line accepted, in bytes.
pub const MAX_HEADER_BYTES: usize = 1 << 20;
/// Read size for header-only reads of plain logs.
const HEADER_READ_CHUNK: usize = 4 << 10;

/// v4's required header keys.
const V4_REQUIRED: [&str; 6] = ["type", "version", "id", "createdAt", "isSeeded", "delegationDepth"];
/// v4's optional header keys.
const V4_OPTIONAL: [&str; 4] = ["cwd", "parentSession", "origin", "agentPreset"];
/// Header keys DSH retired before v4 and refuses in a v4 file.
const V4_RETIRED: [&str; 2] = ["sandboxMode", "approvalPolicy"];

/// A validated header line.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The session id.
    pub id: String,
    /// `createdAt`, epoch milliseconds.
    pub created_at: u64,
    /// The cwd, if any.
    pub cwd: Option<String>,
    /// The generation (the header's `version`, equal to the file's).
    pub generation: Generation,
    /// The header line without `type`, key order kept.
    pub json: Map<String, Value>,
}

/// Why a header was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// The header is missing, malformed or breaks its generation's rules.
    Invalid(String),
    /// The header is of a newer generation than this reader implements.
    Unsupported(String),
}

impl HeaderError {
    /// The reason, in words.
    pub fn message(&self) -> &str {
        match self {
            HeaderError::Invalid(m) | HeaderError::Unsupported(m) => m,
        }
    }
}

impl From<String> for HeaderError {
    fn from(m: String) -> Self {
        HeaderError::Invalid(m)
    }
}

impl From<&str> for HeaderError {
    fn from(m: &str) -> Self {
        HeaderError::Invalid(m.to_owned())
    }
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "(missing)".to_owned(), Value::to_string)
}

/// Parses and validates the header line of a file of generation
/// `file_generation`.
pub fn parse_header(line: &[u8], file_generation: Generation) -> Result<Header, HeaderError> {
    let mut json: Map<String, Value> =
        serde_json::from_slice(line).map_err(|e| format!("the header line is not a JSON object: {e}"))?;
    if json.get("type").and_then(Value::as_str) != Some("session") {
        return Err("the first line is not a session header (`type` is not \"session\")".into());
    }
    let version = match json.get("version").and_then(Value::as_u64) {
        Some(v) if v > NEWEST_GENERATION => return Err(HeaderError::Unsupported(unsupported_message(v))),
        Some(v) => v,
        None => return Err(format!("invalid header version {}", show(json.get("version"))).into()),
    };
    if version != file_generation.number() {
        return Err(format!(
            "the header version {version} does not match the file's generation {file_generation} (the file name)"
        )
        .into());
    }
    let generation = file_generation;
    let id = match json.get("id") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err("the header has no string `id`".into()),
    };
    let created_at = match json.get("createdAt").and_then(Value::as_u64) {
        Some(n) if n <= MAX_SAFE_INTEGER => n,
        _ => return Err("the header's `createdAt` is not a non-negative safe integer".into()),
    };
    let cwd = match json.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => return Err("the header's `cwd` is not a non-empty string".into()),
    };
    if generation.has_is_seeded() {
        if !matches!(json.get("isSeeded"), Some(Value::Bool(_))) {
            return Err(format!("a {generation} header needs a boolean `isSeeded`").into());
        }
        if json.contains_key("seedLength") {
            return Err(format!("a {generation} header has no `seedLength` (it has `isSeeded`)").into());
        }
    }
    if generation.has_exact_header_keys() {
        check_v4_keys(&json)?;
    }
    json.shift_remove("type");
    Ok(Header { id, created_at, cwd, generation, json })
}

/// v4's exact key set and value rules.
fn check_v4_keys(json: &Map<String, Value>) -> Result<(), HeaderError> {
    for key in json.keys() {
        if V4_RETIRED.contains(&key.as_str()) {
            return Err(format!("a v4 header has the retired key `{key}`").into());
        }
        if !V4_REQUIRED.contains(&key.as_str()) && !V4_OPTIONAL.contains(&key.as_str()) {
            return Err(format!("a v4 header has the unknown key `{key}`").into());
        }
    }
    if json.get("delegationDepth").and_then(Value::as_u64).is_none_or(|n| n > MAX_SAFE_INTEGER) {
        return Err("a v4 header needs a non-negative integer `delegationDepth`".into());
    }
    if json.get("cwd").is_some_and(Value::is_null) {
        return Err("a v4 header's `cwd` is a string when present".into());
    }
    for key in ["parentSession", "agentPreset"] {
        if json.get(key).is_some_and(|v| !v.is_string()) {
            return Err(format!("a v4 header's `{key}` is not a string").into());
        }
    }
    if json.get("origin").is_some_and(|v| v != "subagent") {
        return Err("a v4 header's `origin` is not \"subagent\"".into());
    }
    Ok(())
}

/// Reads and validates the header of a log (line 1 or the first frame).
pub fn read_header(reader: &mut LineReader, generation: Generation) -> Result<Header, HeaderError> {
    let mut buf = Vec::with_capacity(512);
    match reader.next_line(&mut buf, MAX_HEADER_BYTES) {
        Ok(LineRead::Line(_)) => {}
        Ok(LineRead::End { torn_bytes: 0 }) => {
            return Err("the log has no header (it is empty, or its first frame is incomplete)".into())
        }
        Ok(LineRead::End { .. }) => return Err("the header line is incomplete (no newline)".into()),
        Err(e) => return Err(format!("the header cannot be read: {e}").into()),
    }
    std::str::from_utf8(&buf).map_err(|_| "the header line is not UTF-8".to_owned())?;
    parse_header(&buf, generation)
}

/// Reads and validates the header of the log at `path`, reading as little
/// as it can: plain logs in small chunks, zstd logs with small buffers and
/// a decoder and buffers from `scratch` (created there if empty, and left
/// there for the next log: creating one costs more than reading a header).
pub fn read_log_header(
    path: &Path,
    encoding: Encoding,
    generation: Generation,
    scratch: &mut Option<ZstdScratch>,
) -> Result<Header, HeaderError> {
    read_log_header_at(path, encoding, generation, scratch).and_then(|(_, header)| header)
}

/// [`read_log_header`], with the stamp the log had when it was opened
/// (before its header was read); the outer error is a log that could not
/// be opened.
pub(crate) fn read_log_header_at(
    path: &Path,
    encoding: Encoding,
    generation: Generation,
    scratch: &mut Option<ZstdScratch>,
) -> Result<(crate::fs::Stamp, Result<Header, HeaderError>), HeaderError> {
    let opened = crate::fs::open_stamped(path).and_then(|(file, stamp)| {
        let identity = stamp.id;
        let reader = match encoding {
            Encoding::Raw => LineReader::raw_with_capacity(file, HEADER_READ_CHUNK),
            Encoding::Zstd => {
                let reused = match scratch.take() {
                    Some(reused) => reused,
                    None => ZstdScratch::new()?,
                };
                LineReader::zstd_with(file, identity.size, reused, HEADER_CHUNK)
            }
        };
        Ok((stamp, reader))
    });
    let (identity, mut reader) = opened.map_err(|e| format!("cannot open: {e}"))?;
    let header = read_header(&mut reader, generation);
    if let Some(reused) = reader.into_scratch() {
        *scratch = Some(reused);
    }
    Ok((identity, header))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str, generation: u64) -> Result<Header, HeaderError> {
        parse_header(line.as_bytes(), Generation::new(generation).unwrap())
    }

    #[test]
    fn per_generation_keys() {
        let v0 = r#"{"type":"session","version":0,"id":"a","createdAt":1,"seedLength":2,"delegationDepth":0}"#;
        assert_eq!(parse(v0, 0).unwrap().json["seedLength"], 2);
        let v2 = r#"{"type":"session","version":2,"id":"a","createdAt":1,"isSeeded":false,"delegationDepth":0}"#;
        assert_eq!(parse(v2, 2).unwrap().generation.number(), 2);
        let no_flag = r#"{"type":"session","version":3,"id":"a","createdAt":1,"delegationDepth":0}"#;
        assert!(parse(no_flag, 3).unwrap_err().message().contains("isSeeded"));
        let seed = r#"{"type":"session","version":2,"id":"a","createdAt":1,"isSeeded":true,"seedLength":3}"#;
        assert!(parse(seed, 2).unwrap_err().message().contains("seedLength"));
        let v4 =
            r#"{"type":"session","version":4,"id":"a","createdAt":1,"cwd":"/w","isSeeded":false,"delegationDepth":0}"#;
        let h = parse(v4, 4).unwrap();
        assert_eq!(
            h.json.keys().collect::<Vec<_>>(),
            ["version", "id", "createdAt", "cwd", "isSeeded", "delegationDepth"]
        );
        let extra =
            r#"{"type":"session","version":4,"id":"a","createdAt":1,"isSeeded":false,"delegationDepth":0,"x":1}"#;
        assert!(parse(extra, 4).unwrap_err().message().contains("unknown key `x`"));
        let retired = r#"{"type":"session","version":4,"id":"a","createdAt":1,"isSeeded":false,"delegationDepth":0,"sandboxMode":"x"}"#;
        assert!(parse(retired, 4).unwrap_err().message().contains("retired"));
        let no_depth = r#"{"type":"session","version":4,"id":"a","createdAt":1,"isSeeded":false}"#;
        assert!(parse(no_depth, 4).unwrap_err().message().contains("delegationDepth"));
    }

    #[test]
    fn version_must_match_and_newer_is_unsupported() {
        let v3 = r#"{"type":"session","version":3,"id":"a","createdAt":1,"isSeeded":false,"delegationDepth":0}"#;
        assert!(parse(v3, 4).unwrap_err().message().contains("does not match"));
        let v9 = r#"{"type":"session","version":9,"id":"a","createdAt":1}"#;
        assert!(matches!(parse(v9, 4), Err(HeaderError::Unsupported(m)) if m.contains("newer DSH")));
        let bad = r#"{"type":"session","version":-1,"id":"a","createdAt":1}"#;
        assert!(matches!(parse(bad, 0), Err(HeaderError::Invalid(_))));
    }
}
