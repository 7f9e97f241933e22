//! # dsh-session-reference-node
//!
//! The native half of the `dsh-session-reference` npm package (napi-rs 3).
//! It only adapts Node to the core crate: JavaScript host functions become a
//! [`SessionQuery`](dsh_session_reference::SessionQuery) (see [`host`]), the
//! resolver's async work runs on the library's own tokio runtime and settles a
//! deferred Promise (see [`resolver`]), and values cross as JSON text, which
//! V8 produces and parses faster than a property-by-property walk.
//!
//! The public JavaScript API is the thin wrapper `wrapper.js` next to the
//! generated `index.js`: it adds `AbortSignal` support, the
//! `SessionReferenceError` class and the reference's function names. Every
//! native failure that the wrapper turns into a `SessionReferenceError`
//! carries one of the contract's stable codes (docs/contract.md §8.2); misuse of the native API itself
//! (arguments that are not what the wrapper sends) uses
//! [`INVALID_ARGUMENT`], which the wrapper reports as a `TypeError`.

#![deny(clippy::all)]

pub mod bench;
pub mod host;
pub mod resolver;
pub mod sources;
pub mod store;

use dsh_session_reference as core;
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// The code of a native failure caused by misuse of the native API itself
/// (not a contract case, docs/contract.md §8.3): the wrapper turns it into a `TypeError`.
pub const INVALID_ARGUMENT: &str = "ERR_INVALID_ARG_TYPE";

/// The URI scheme of session references, with its colon: `dsh-session:`.
#[napi(js_name = "SESSION_REFERENCE_SCHEME")]
pub const SESSION_REFERENCE_SCHEME: &str = core::SESSION_REFERENCE_SCHEME;

/// The hard maximum (and default) number of distinct references per message.
#[napi(js_name = "MAX_REFERENCES")]
pub const MAX_REFERENCES: u32 = core::MAX_REFERENCES as u32;

/// The default number of discovery candidates.
#[napi(js_name = "DEFAULT_CANDIDATE_LIMIT")]
pub const DEFAULT_CANDIDATE_LIMIT: u32 = core::DEFAULT_CANDIDATE_LIMIT as u32;

/// The default per-source byte budget of a rendered snapshot.
#[napi(js_name = "DEFAULT_MAX_REFERENCE_BYTES")]
pub const DEFAULT_MAX_REFERENCE_BYTES: u32 = core::DEFAULT_MAX_REFERENCE_BYTES as u32;

/// The metadata key, in each `source.references` entry, that counts the
/// credentials redacted from that source (present only with `redactSecrets`).
#[napi(js_name = "REDACTED_SECRETS_KEY")]
pub const REDACTED_SECRETS_KEY: &str = core::wire::REDACTED_SECRETS_KEY;

/// A library error as a napi error whose JavaScript `code` is the stable
/// contract code (docs/contract.md §8.2; e.g. `SESSION_REFERENCE_INVALID_REFERENCE`).
pub fn to_napi_error(err: core::Error) -> Error<&'static str> {
    Error::new(err.code().as_str(), err.message())
}

/// `dsh-session:` + the unpadded base64url of the id's JSON string literal.
#[napi(js_name = "encodeSessionReferenceUri")]
pub fn encode_session_reference_uri(session_id: String) -> String {
    core::encode_uri(&session_id)
}

/// Decodes a canonical session URI back to its id; anything else throws
/// `SESSION_REFERENCE_INVALID_REFERENCE`.
#[napi(js_name = "decodeSessionReferenceUri")]
pub fn decode_session_reference_uri(uri: String) -> Result<String, &'static str> {
    core::decode_uri(&uri).map_err(to_napi_error)
}

/// `@[label](uri)`, with every `\` and `]` of the label escaped; the label
/// defaults to the id.
#[napi(js_name = "formatSessionReferenceMention")]
pub fn format_session_reference_mention(session_id: String, label: Option<String>) -> String {
    core::format_mention(&session_id, label.as_deref())
}

/// One reference found in a text: the decoded id and the label that
/// replaced the mention.
#[napi(object)]
pub struct ParsedSessionReference {
    /// The referenced session id.
    pub session_id: String,
    /// The mention's label (the id for a bare URI).
    pub label: String,
}

/// The result of `parseSessionReferenceText`.
#[napi(object)]
pub struct ParsedSessionReferenceText {
    /// The text with every mention replaced by `@` + its label.
    pub text: String,
    /// The references in order of appearance, duplicates kept.
    pub references: Vec<ParsedSessionReference>,
}

/// Replaces every `@[label](dsh-session:…)` mention and bare `dsh-session:`
/// URI by `@` + its label; a recognised token that does not decode throws
/// `SESSION_REFERENCE_INVALID_REFERENCE`.
#[napi(js_name = "parseSessionReferenceText")]
pub fn parse_session_reference_text(text: String) -> Result<ParsedSessionReferenceText, &'static str> {
    let parsed = core::parse_text(&text).map_err(to_napi_error)?;
    Ok(ParsedSessionReferenceText {
        text: parsed.text,
        references: parsed
            .references
            .into_iter()
            .map(|r| ParsedSessionReference { session_id: r.session_id, label: r.label })
            .collect(),
    })
}

/// Tag-safe JSON of a JSON text (as `JSON.stringify` produced it): the same
/// text as `JSON.stringify` of its value, with every `<` written as
/// `\u003c`. Text that is not JSON throws with code `ERR_INVALID_ARG_TYPE`.
#[napi(js_name = "stringifyTagSafeJsonText")]
pub fn stringify_tag_safe_json_text(json: String) -> Result<String, &'static str> {
    core::stringify_tag_safe_text(&json).map_err(|e| Error::new(INVALID_ARGUMENT, e))
}

/// A pre-projected surface snapshot of a host's own message list, for
/// `readSurface`. `request` is the JSON text of `{format: "openai" |
/// "anthropic", sessionId, cwd?, capturedThroughSeq?, messages}`; returns
/// to the JSON text of `{session, capturedThroughSeq, conversation}`.
/// Messages of the wrong shape throw with code `ERR_INVALID_ARG_TYPE`.
#[napi(js_name = "conversationSnapshotJson")]
pub fn conversation_snapshot_json(request: String) -> Result<String, &'static str> {
    let request = core::wire::parse_js(&request).map_err(|e| Error::new(INVALID_ARGUMENT, e))?;
    let snapshot = core::wire::snapshot_from_request(&request).map_err(|e| Error::new(INVALID_ARGUMENT, e))?;
    Ok(core::wire::stringify(&snapshot))
}
