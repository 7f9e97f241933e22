//! # dsh-session-reference
//!
//! Bring a bounded, read-only, tamper-proof snapshot of another conversation
//! into a new message — byte-identical to the DeepSeek Harness reference.
//!
//! The host implements [`SessionQuery`] (list sessions, read a title, read a
//! surface snapshot); the [`Resolver`] does everything else: canonical
//! `dsh-session:` URIs and `@[label](uri)` mentions ([`encode_uri`],
//! [`format_mention`], [`parse_text`]), discovery ([`Resolver::candidates`]),
//! projection, exact per-source byte budgets, tag-safe JSON framing under an
//! untrusted-background warning ([`Resolver::prepare`]), cancellation
//! ([`CancelToken`]) and all-or-nothing errors ([`Error`], [`ErrorCode`]).
//!
//! ```
//! use std::sync::Arc;
//! use dsh_session_reference::{Config, MemoryQuery, Resolver, SessionHeader, Target};
//! use serde_json::json;
//!
//! let query = MemoryQuery::new();
//! query.add_session(SessionHeader::new("design", 1_700_000_000_000u64, Some("/work".into())));
//! query.set_surface("design", json!({
//!     "session": {"id": "design", "createdAt": 1_700_000_000_000u64, "cwd": "/work"},
//!     "capturedThroughSeq": 1,
//!     "events": [
//!         {"seq": 0, "type": "user/message", "data": {"role": "user",
//!             "content": [{"type": "text", "text": "Use <tabs>?"}], "source": {"kind": "user"}}},
//!         {"seq": 1, "type": "assistant/message", "data": {"message": {"role": "assistant",
//!             "content": [{"type": "text", "text": "Spaces."}]}}}
//!     ]
//! }));
//! let resolver = Resolver::new(Arc::new(query), Config::default());
//! let target = Target::new("new-chat", Some("/work".into()));
//! let prepared = resolver
//!     .prepare_blocking(&target, &json!([{"type": "text", "text": "as decided"}]),
//!                       &[json!({"sessionId": "design"})], None)
//!     .unwrap();
//! let context = prepared.additional_context.unwrap();
//! assert!(context.prompt.contains(r#""text":"Use \u003ctabs>?""#));
//! ```

#![deny(unsafe_code)]

/// The repository README's Rust example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

pub(crate) mod cache_file;
pub mod cancel;
pub mod compat;
pub mod config;
pub mod context;
pub mod conversation;
pub mod discovery;
pub mod error;
pub mod harden;
pub mod host;
pub mod json;
pub mod memory;
pub mod projection;
pub mod prompt;
pub mod resolver;
/// Retention under the byte budget. Public only for the tests and fuzz
/// targets; not part of the API.
#[doc(hidden)]
pub mod retention;
pub mod runtime;
pub mod sources;
pub mod store;
pub mod uri;

/// The host interface under its old name.
#[deprecated(since = "0.2.0", note = "renamed to `host`; every item is also re-exported at the crate root")]
pub mod query {
    pub use crate::host::*;
}

pub use cancel::CancelToken;
pub use compat::{CompatConfig, DshCompat};
pub use config::{
    candidate_limit_from_json, Config, DEFAULT_CANDIDATE_LIMIT, DEFAULT_MAX_REFERENCE_BYTES, MAX_REFERENCES,
    MAX_SAFE_INTEGER,
};
pub use context::{ContextMessage, Prepared, PreparedMessage, ReferenceMetadata, ReferenceStats};
pub use conversation::{Conversation, ConversationItem};
pub use discovery::{
    Candidate, DiscoveryCachePart, Fingerprint, MatchField, SearchIndexStats, SearchOptions, SearchRequest,
    SearchResult, SearchScope,
};
pub use error::{Error, ErrorCode, HostError, Result};
pub use harden::Hardening;
pub use host::{
    Blocking, BlockingSessionQuery, QueryFuture, SessionHeader, SessionQuery, SharedBytes, SharedListing, SurfaceData,
    Target,
};
pub use json::{stringify_tag_safe, stringify_tag_safe_text};
pub use memory::MemoryQuery;
pub use resolver::{normalize_references, Reference, Resolver};
pub use runtime::{block_on, runtime};
pub use sources::dsh::DshStore;
pub use sources::FileSource;
pub use uri::{
    decode_uri, encode_uri, format_mention, parse_text, parse_text_with, ParsedReference, ParsedText,
    SESSION_REFERENCE_SCHEME,
};
