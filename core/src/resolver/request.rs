//! The operations' requests as the JSON fronts receive them: the C ABI
//! takes one JSON object per call and the Node wrapper sends one, and each
//! is read here in one call ([`PrepareRequest::from_json`] and its
//! siblings). Python builds the same options from keyword arguments with
//! the same readers ([`context_window_from_json`], [`limit_from_json`],
//! [`scope_from_json`], [`ReadOptions::from_json`]), so every front accepts
//! and refuses the same values with the same words.
//!
//! A request of the wrong shape (no `target`, `references` not an array) is
//! a [`RequestError::Shape`]: the fronts report it as their own misuse of
//! the API. A well-shaped request with a value the contract refuses (a
//! limit that is not a positive safe integer, an unknown scope) is a
//! [`RequestError::Contract`] carrying the contract error
//! (`SESSION_REFERENCE_INVALID_REFERENCE`).

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;

use super::{CandidateOptions, PrepareOptions, ReadOptions};
use crate::config::positive_safe_integer;
use crate::error::Error;
pub use crate::host::{limit_from_json, scope_from_json};
use crate::host::{SearchOptions, Target};

/// Why a request could not be read.
#[derive(Debug)]
pub enum RequestError {
    /// The request is not of the operation's shape (a misuse of the API).
    Shape(String),
    /// A value the contract refuses, with its contract error.
    Contract(Error),
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Shape(m) => f.write_str(m),
            RequestError::Contract(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RequestError {}

/// `contextWindow` as a request or keyword argument gives it: absent or
/// `null` is `None`; otherwise it must be a positive safe integer (the
/// model's context window in tokens).
pub fn context_window_from_json(value: Option<&Value>) -> Result<Option<u64>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => positive_safe_integer(v)
            .map(Some)
            .ok_or_else(|| "`contextWindow` must be a positive safe integer".to_owned()),
    }
}

fn target<'de, D: Deserializer<'de>>(d: D) -> Result<Target, D::Error> {
    Target::from_json(&Value::deserialize(d)?).map_err(D::Error::custom)
}

fn query<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s),
        _ => Err(D::Error::custom("`query` must be a string")),
    }
}

fn array<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
    match Value::deserialize(d)? {
        Value::Array(items) => Ok(items),
        _ => Err(D::Error::custom("must be an array")),
    }
}

/// Reads the optional fields of a request object (without copying the rest).
fn optional(value: &Value) -> Result<Optional, RequestError> {
    if !value.is_object() {
        return Err(RequestError::Shape("the request must be an object".into()));
    }
    Optional::deserialize(value).map_err(|e| RequestError::Shape(format!("bad request: {e}")))
}

/// Reads `value` as `T`, moving its parts (a message's content is not copied).
fn read<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, RequestError> {
    serde_json::from_value(value).map_err(|e| RequestError::Shape(format!("bad request: {e}")))
}

/// The fields of a request that the contract validates after its shape.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Optional {
    #[serde(default)]
    limit: Option<Value>,
    #[serde(default)]
    scope: Option<Value>,
    #[serde(default)]
    context_window: Option<Value>,
}

impl Optional {
    fn prepare_options(&self) -> Result<PrepareOptions, RequestError> {
        let window = context_window_from_json(self.context_window.as_ref()).map_err(RequestError::Shape)?;
        Ok(PrepareOptions::default().with_context_window(window))
    }
}

/// `{"target": {"id", "cwd"?}, "content": any, "references": [{"sessionId", "label"?}, …], "contextWindow"?: integer}`.
#[derive(Clone, Debug, PartialEq)]
pub struct PrepareRequest {
    /// The session about to send the message.
    pub target: Target,
    /// The message content, copied into the result.
    pub content: Value,
    /// The references, as [`Resolver::prepare`](super::Resolver::prepare) takes them.
    pub references: Vec<Value>,
    /// The options (`contextWindow`).
    pub options: PrepareOptions,
}

#[derive(Deserialize)]
struct PrepareWire {
    #[serde(deserialize_with = "target")]
    target: Target,
    content: Value,
    #[serde(deserialize_with = "array")]
    references: Vec<Value>,
}

impl PrepareRequest {
    /// Reads a prepare request.
    pub fn from_json(value: Value) -> Result<PrepareRequest, RequestError> {
        let options = optional(&value)?.prepare_options()?;
        let wire: PrepareWire = read(value)?;
        Ok(PrepareRequest { target: wire.target, content: wire.content, references: wire.references, options })
    }
}

/// `{"target": {"id", "cwd"?}, "messages": [message, …], "contextWindow"?: integer}`.
#[derive(Clone, Debug, PartialEq)]
pub struct PrepareMessagesRequest {
    /// The session about to send the messages.
    pub target: Target,
    /// The messages, as [`Resolver::prepare_messages`](super::Resolver::prepare_messages) takes them.
    pub messages: Vec<Value>,
    /// The options (`contextWindow`).
    pub options: PrepareOptions,
}

#[derive(Deserialize)]
struct MessagesWire {
    #[serde(deserialize_with = "target")]
    target: Target,
    #[serde(deserialize_with = "array")]
    messages: Vec<Value>,
}

impl PrepareMessagesRequest {
    /// Reads a prepare-messages request.
    pub fn from_json(value: Value) -> Result<PrepareMessagesRequest, RequestError> {
        let options = optional(&value)?.prepare_options()?;
        let wire: MessagesWire = read(value)?;
        Ok(PrepareMessagesRequest { target: wire.target, messages: wire.messages, options })
    }
}

#[derive(Deserialize)]
struct DiscoveryWire {
    #[serde(deserialize_with = "target")]
    target: Target,
    #[serde(default, deserialize_with = "query")]
    query: String,
}

/// `{"target": {"id", "cwd"?}, "query"?: string, "limit"?: integer}` (the
/// query defaults to `""`, the limit to the configured one).
#[derive(Clone, Debug, PartialEq)]
pub struct CandidatesRequest {
    /// The session about to send a message.
    pub target: Target,
    /// The filter (case-insensitive, on id, cwd and title).
    pub query: String,
    /// The options (`limit`; mentions as the caller asks).
    pub options: CandidateOptions,
}

impl CandidatesRequest {
    /// Reads a candidates request; `mentions` says which face of discovery
    /// the caller is (`candidates` with mentions, `listCandidates` without).
    pub fn from_json(value: Value, mentions: bool) -> Result<CandidatesRequest, RequestError> {
        let optional = optional(&value)?;
        let wire: DiscoveryWire = read(value)?;
        let limit = limit_from_json(optional.limit.as_ref()).map_err(RequestError::Contract)?;
        let options = CandidateOptions::default().with_limit(limit);
        let options = if mentions { options } else { options.without_mentions() };
        Ok(CandidatesRequest { target: wire.target, query: wire.query, options })
    }
}

/// `{"target": {"id", "cwd"?}, "query": string, "limit"?: integer, "scope"?: "all" | "cwd"}`.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchArgs {
    /// The session searching.
    pub target: Target,
    /// The search text.
    pub query: String,
    /// The options (`limit`, `scope`).
    pub options: SearchOptions,
}

impl SearchArgs {
    /// Reads a search request.
    pub fn from_json(value: Value) -> Result<SearchArgs, RequestError> {
        let optional = optional(&value)?;
        let wire: DiscoveryWire = read(value)?;
        let limit = limit_from_json(optional.limit.as_ref()).map_err(RequestError::Contract)?;
        let scope = scope_from_json(optional.scope.as_ref()).map_err(RequestError::Contract)?;
        Ok(SearchArgs { target: wire.target, query: wire.query, options: SearchOptions { limit, scope } })
    }
}

/// `{"target": {"id", "cwd"?}, "sessionId": string, "start"?: integer,
/// "around"?: integer, "cursor"?: string, "maxBytes"?: integer, "maxTokens"?: integer}`
/// (absent or `null` options take their defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct ReadRequest {
    /// The session reading (it cannot read itself).
    pub target: Target,
    /// The session to read a page of.
    pub session_id: String,
    /// The options, read by [`ReadOptions::from_json`].
    pub options: ReadOptions,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadWire {
    #[serde(deserialize_with = "target")]
    target: Target,
    session_id: String,
}

impl ReadRequest {
    /// Reads a read request: a missing target or a `sessionId` that is not
    /// a string is a [`RequestError::Shape`]; an option of the wrong kind a
    /// [`RequestError::Contract`] (`SESSION_REFERENCE_INVALID_REFERENCE`).
    pub fn from_json(value: Value) -> Result<ReadRequest, RequestError> {
        if !value.is_object() {
            return Err(RequestError::Shape("the request must be an object".into()));
        }
        let options = ReadOptions::from_json(&value).map_err(RequestError::Contract)?;
        let wire: ReadWire = read(value)?;
        Ok(ReadRequest { target: wire.target, session_id: wire.session_id, options })
    }
}

/// `{"sessionId": string, "label"?: string}`: the session a mention names
/// (an id, with or without its source's prefix, a `dsh-session:` URI or a
/// mention) and the label it shows (absent or `null`: the session's title,
/// else its id, as [`Resolver::label`](super::Resolver::label) gives it).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MentionRequest {
    /// The session, as named.
    pub session_id: String,
    /// The label shown.
    #[serde(default)]
    pub label: Option<String>,
}

impl MentionRequest {
    /// Reads a mention request.
    pub fn from_json(value: Value) -> Result<MentionRequest, RequestError> {
        if !value.is_object() {
            return Err(RequestError::Shape("the request must be an object".into()));
        }
        read(value)
    }
}

/// `{"mention", "uri"}`: the mention of session `session_id` showing
/// `label` ([`format_mention`](crate::format_mention)) and its canonical
/// URI ([`encode_uri`](crate::encode_uri)), the answer to a
/// [`MentionRequest`].
pub fn mention_to_json(session_id: &str, label: &str) -> Value {
    serde_json::json!({
        "mention": crate::uri::format_mention(session_id, Some(label)),
        "uri": crate::uri::encode_uri(session_id),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::ErrorCode;
    use crate::host::SearchScope;

    #[test]
    fn a_prepare_request_reads_every_field_and_refuses_bad_shapes() {
        let r = PrepareRequest::from_json(json!({
            "target": {"id": "t", "cwd": "/w"}, "content": [1], "references": [{"sessionId": "a"}], "contextWindow": 1000
        }))
        .unwrap();
        assert_eq!(r.target, Target::new("t", Some("/w".into())));
        assert_eq!(r.content, json!([1]));
        assert_eq!(r.references, vec![json!({"sessionId": "a"})]);
        assert_eq!(r.options.context_window, Some(1000));
        let r = PrepareRequest::from_json(json!({"target": {"id": "t"}, "content": null, "references": []})).unwrap();
        assert_eq!(r.options, PrepareOptions::default());
        for bad in [
            json!([]),
            json!({"content": 1, "references": []}),
            json!({"target": {"id": 1}, "content": 1, "references": []}),
            json!({"target": {"id": "t"}, "references": []}),
            json!({"target": {"id": "t"}, "content": 1, "references": {}}),
            json!({"target": {"id": "t"}, "content": 1, "references": [], "contextWindow": 0}),
            json!({"target": {"id": "t"}, "content": 1, "references": [], "contextWindow": "8k"}),
        ] {
            assert!(matches!(PrepareRequest::from_json(bad.clone()), Err(RequestError::Shape(_))), "{bad}");
        }
    }

    #[test]
    fn a_read_request_reads_its_options_and_refuses_bad_ones() {
        let r = ReadRequest::from_json(json!({
            "target": {"id": "t"}, "sessionId": "s", "around": 4, "maxBytes": 2000, "maxTokens": null
        }))
        .unwrap();
        assert_eq!((r.target.id.as_str(), r.session_id.as_str()), ("t", "s"));
        assert_eq!(r.options, ReadOptions::default().with_around(Some(4)).with_max_bytes(2000));
        for bad in [json!([]), json!({"sessionId": "s"}), json!({"target": {"id": "t"}, "sessionId": 1})] {
            assert!(matches!(ReadRequest::from_json(bad.clone()), Err(RequestError::Shape(_))), "{bad}");
        }
        let e = ReadRequest::from_json(json!({"target": {"id": "t"}, "sessionId": "s", "start": -2})).unwrap_err();
        assert!(matches!(e, RequestError::Contract(ref e) if e.code() == ErrorCode::InvalidReference), "{e}");
    }

    #[test]
    fn discovery_requests_take_defaults_and_give_contract_errors_for_bad_limits() {
        let r = CandidatesRequest::from_json(json!({"target": {"id": "t"}}), true).unwrap();
        assert_eq!((r.query.as_str(), r.options.limit, r.options.mentions), ("", None, true));
        let r = CandidatesRequest::from_json(json!({"target": {"id": "t"}, "query": "x", "limit": 2}), false).unwrap();
        assert_eq!((r.query.as_str(), r.options.limit, r.options.mentions), ("x", Some(2), false));
        for bad in [json!(0), json!(-1), json!(1.5), json!("3")] {
            let e = CandidatesRequest::from_json(json!({"target": {"id": "t"}, "limit": bad}), true).unwrap_err();
            assert!(matches!(e, RequestError::Contract(ref e) if e.code() == ErrorCode::InvalidReference), "{e}");
        }
        assert!(matches!(
            CandidatesRequest::from_json(json!({"target": {"id": "t"}, "query": 3}), true),
            Err(RequestError::Shape(_))
        ));
        let s = SearchArgs::from_json(json!({"target": {"id": "t"}, "query": "q", "scope": "cwd"})).unwrap();
        assert_eq!(s.options, SearchOptions { limit: None, scope: SearchScope::SameCwd });
        let e = SearchArgs::from_json(json!({"target": {"id": "t"}, "query": "q", "scope": "near"})).unwrap_err();
        assert!(matches!(e, RequestError::Contract(ref e) if e.code() == ErrorCode::InvalidReference));
    }

    #[test]
    fn a_mention_request_reads_its_id_and_optional_label() {
        let r = MentionRequest::from_json(json!({"sessionId": "s", "label": null})).unwrap();
        assert_eq!((r.session_id.as_str(), r.label), ("s", None));
        let r = MentionRequest::from_json(json!({"sessionId": "s", "label": "L"})).unwrap();
        assert_eq!(r.label.as_deref(), Some("L"));
        for bad in [
            json!([]),
            json!({}),
            json!({"sessionId": 1}),
            json!({"sessionId": "s", "label": 2}),
            json!({"sessionId": "s", "x": 1}),
        ] {
            assert!(matches!(MentionRequest::from_json(bad.clone()), Err(RequestError::Shape(_))), "{bad}");
        }
        let answer = mention_to_json("a b", "T");
        let uri = crate::uri::encode_uri("a b");
        assert_eq!(answer, json!({"mention": format!("@[T]({uri})"), "uri": uri}));
        assert_eq!(crate::uri::decode_uri(answer["uri"].as_str().unwrap()).unwrap(), "a b");
    }
}
