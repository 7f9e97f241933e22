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
//! untrusted-background warning ([`Resolver::prepare`], whole sessions or
//! [`Excerpt`]s), bounded pages of one session ([`Resolver::read`]), cancellation
//! ([`CancelToken`]) and all-or-nothing errors ([`Error`], [`ErrorCode`]).
//!
//! ```
//! use std::sync::Arc;
//! use dsh_session_reference::{block_on, Config, MemoryQuery, PrepareOptions, Resolver, SessionHeader, Target};
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
//! let content = json!([{"type": "text", "text": "as decided"}]);
//! let references = [json!({"sessionId": "design"})];
//! let prepared =
//!     block_on(resolver.prepare(&target, &content, &references, &PrepareOptions::default(), None)).unwrap();
//! let context = prepared.additional_context.unwrap();
//! assert!(context.prompt.contains(r#""text":"Use \u003ctabs>?""#));
//! ```

#![deny(unsafe_code)]

/// The repository README's Rust example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

// The layers of the core, lowest first. A module imports only from its own
// floor and the floors below it (`crate::` paths, and nothing through the
// crate root's re-exports); an `apart:` line names modules that never
// import each other, whatever their floors. `core/tests/layering.rs` checks
// every module's code against this list, and a new module must be given its
// floor here.
//
// layers:
//   json cancel runtime work     bytes: JSON readers and writers, cancellation, the runtime, the work count
//   error                        the error type and its codes
//   fs harden                    safe file access; the hardened mode's primitives
//   config                       configuration, the dshCompat profiles
//   projection                   the surface grammar -> projected items
//   conversation retention       pre-projected conversations; the byte budget
//   prompt page                  one source under its budget; the prompt envelope; a page of one session
//   context uri                  the typed results; URIs and mentions
//   host                         the host interface and every word it speaks
//   cache_file memory            cache-file framing; the in-memory session query
//   index                        the full-text index: the search engine
//   sources                      readers of session logs on disk
//   apart: index sources         engines: neither imports the other
//   resolver                     the service: preparation and discovery
//   store                        legacy aliases
// end layers

// The public API is the crate root's `pub use` below, `sources` (the
// readers of logs on disk) and `wire` (what the fronts share). The modules
// stay reachable for the project's tests, benches and fuzz targets, hidden
// from the documentation: their paths are not part of the API.
mod cache_file;
#[doc(hidden)]
pub mod cancel;
#[doc(hidden)]
pub mod config;
#[doc(hidden)]
pub mod context;
#[doc(hidden)]
pub mod conversation;
#[doc(hidden)]
pub mod error;
#[doc(hidden)]
pub mod fs;
#[doc(hidden)]
pub mod harden;
#[doc(hidden)]
pub mod host;
mod index;
/// The search index driven alone, without a resolver: for the project's
/// tests and benchmarks, not part of the API (the fronts search through
/// [`Resolver::search`]).
#[doc(hidden)]
pub use index::alone as search_index;
#[doc(hidden)]
pub mod json;
#[doc(hidden)]
pub mod memory;
#[doc(hidden)]
pub mod page;
#[doc(hidden)]
pub mod projection;
#[doc(hidden)]
pub mod prompt;
#[doc(hidden)]
pub mod resolver;
#[doc(hidden)]
pub mod retention;
#[doc(hidden)]
pub mod runtime;
pub mod sources;
#[doc(hidden)]
pub mod store;
#[doc(hidden)]
pub mod uri;
#[doc(hidden)]
pub mod work;

/// The host interface under its old name.
#[deprecated(since = "0.2.0", note = "renamed to `host`; every item is also re-exported at the crate root")]
pub mod query {
    pub use crate::host::*;
}

/// The compatibility profiles under their old module.
#[deprecated(
    since = "0.2.0",
    note = "split by job: the profiles are in `config` and at the crate root, the omissions section in `prompt`"
)]
pub mod compat {
    pub use crate::config::{CompatConfig, DshCompat, DEFAULT_REFERENCE_CONTEXT_FRACTION};
    pub use crate::prompt::{FullSnapshotNotice, OMISSIONS_HEADER};
}

/// Discovery's types under their old module.
#[deprecated(since = "0.2.0", note = "the types are in `host` (the words of the host interface) and at the crate root")]
pub mod discovery {
    pub use crate::host::{
        Candidate, Fingerprint, MatchField, SearchIndexStats, SearchOptions, SearchRequest, SearchResult, SearchScope,
    };
    pub use crate::resolver::DiscoveryCachePart;
}

/// What the project's own fronts (the C ABI, Python, Node, the command
/// line) need beyond the API at the crate root: the requests they read in
/// one call, the config keys, and the JSON helpers that keep their bytes
/// identical to the core's. Outside users may use it; it changes with the
/// fronts.
pub mod wire {
    pub use crate::config::{positive_safe_integer, KEYS as CONFIG_KEYS};
    pub use crate::context::messages_into_json;
    pub use crate::conversation::snapshot_from_request;
    pub use crate::fs::private_dir;
    pub use crate::harden::{HARDENED_KEY, HARDENING_KEYS, REDACTED_SECRETS_KEY};
    pub use crate::json::invisible::{is_invisible, stringify as stringify_escaping_invisible};
    pub use crate::json::{parse_js, string_len, stringify, MAX_PARSE_DEPTH};
    pub use crate::resolver::request::{
        context_window_from_json, limit_from_json, mention_to_json, scope_from_json, CandidatesRequest, MentionRequest,
        PrepareMessagesRequest, PrepareRequest, ReadRequest, RequestError, SearchArgs,
    };
}

pub use cancel::CancelToken;
pub use config::{
    candidate_limit_from_json, CompatConfig, Config, DshCompat, DEFAULT_CANDIDATE_LIMIT, DEFAULT_MAX_REFERENCE_BYTES,
    DEFAULT_REFERENCE_CONTEXT_FRACTION, MAX_REFERENCES, MAX_SAFE_INTEGER,
};
pub use context::{ContextMessage, Prepared, PreparedMessage, ReferenceMetadata, ReferenceStats};
pub use conversation::{
    from_anthropic_messages, from_openai_messages, snapshot_from_messages, Conversation, ConversationItem,
    MessageFormat,
};
pub use error::{Error, ErrorCode, HostError, Result};
pub use harden::Hardening;
pub use host::unlisted_session;
pub use host::{
    listed_session_id, Blocking, BlockingSessionQuery, BudgetedSurface, Candidate, Fingerprint, IndexProgress,
    MatchField, PinnedListing, QueryFuture, SearchAnswer, SearchIndexStats, SearchOptions, SearchRequest, SearchResult,
    SearchScope, SessionHeader, SessionQuery, SharedBytes, SharedListing, StreamedItems, SurfaceAnswer, SurfaceData,
    SurfaceItems, SurfaceRead, Target,
};
pub use index::{search_fold, SearchTerms};
pub use json::{stringify_tag_safe, stringify_tag_safe_text};
pub use memory::MemoryQuery;
pub use page::{PageMessage, PAGE_FOOTER, PAGE_HEADER};
pub use projection::Role;
pub use prompt::{Excerpt, ExcerptSpan, FullSnapshotNotice, OMISSIONS_HEADER, PROMPT_FOOTER, PROMPT_HEADER};
pub use resolver::{
    normalize_references, CandidateOptions, DiscoveryCachePart, Page, PrepareOptions, ReadOptions, Reference, Resolver,
    SessionConversation, SessionMessage, BYTES_PER_TOKEN, DEFAULT_READ_BYTES,
};
pub use runtime::{block_on, runtime};
pub use sources::dsh::DshStore;
pub use sources::FileSource;
pub use uri::{
    decode_uri, encode_uri, format_mention, parse_text, parse_text_with, session_id_named, ParsedReference, ParsedText,
    SESSION_REFERENCE_SCHEME,
};
