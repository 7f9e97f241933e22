//! The words of search and discovery that the host interface speaks: what
//! a search asks ([`SearchRequest`], [`SearchOptions`], [`SearchScope`]),
//! what it and discovery answer ([`Candidate`], [`SearchResult`],
//! [`MatchField`]) and what the built-in index holds ([`SearchIndexStats`]).

use serde_json::{Map, Number, Value};

use super::{SessionHeader, Target};
use crate::error::{Error, ErrorCode, Result};
use crate::harden::Hardening;
use crate::uri::format_mention;

/// One discovery candidate (docs/contract.md §7).
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The session id.
    pub session_id: String,
    /// The latest title, or the id.
    pub label: String,
    /// The session's cwd, if any.
    pub cwd: Option<String>,
    /// `createdAt` as the host listed it.
    pub created_at: Number,
    /// The mention text: present unless the discovery query asked for none
    /// ([`CandidateOptions::mentions`](crate::CandidateOptions::mentions):
    /// the reference's two faces, `candidates` and `listCandidates`).
    pub mention: Option<String>,
    /// `sameWorkspace` (the later `dshCompat` profiles only, see [`CompatConfig`](crate::config::CompatConfig)).
    pub same_workspace: Option<bool>,
    /// `displayTitle` (the `"0.1.7"` profile only).
    pub display_title: Option<String>,
}

impl Candidate {
    /// The candidate with its canonical mention (`@[label](dsh-session:…)`)
    /// filled in, as [`Resolver::candidates`](crate::Resolver::candidates) gives it.
    pub fn with_mention(mut self) -> Self {
        self.mention = Some(format_mention(&self.session_id, Some(&self.label)));
        self
    }

    /// `{"sessionId","label","cwd"?,"createdAt","mention"?}`; under the later
    /// `dshCompat` profiles `{"sessionId","label","displayTitle"?,"cwd"?,"sameWorkspace","createdAt","mention"?}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("sessionId".into(), Value::from(self.session_id.clone()));
        m.insert("label".into(), Value::from(self.label.clone()));
        if let Some(title) = &self.display_title {
            m.insert("displayTitle".into(), Value::from(title.clone()));
        }
        if let Some(cwd) = &self.cwd {
            m.insert("cwd".into(), Value::from(cwd.clone()));
        }
        if let Some(same) = self.same_workspace {
            m.insert("sameWorkspace".into(), Value::Bool(same));
        }
        m.insert("createdAt".into(), Value::Number(self.created_at.clone()));
        if let Some(mention) = &self.mention {
            m.insert("mention".into(), Value::from(mention.clone()));
        }
        Value::Object(m)
    }
    /// [`to_json`](Self::to_json) for a text that leaves its session as a
    /// parsed value (an MCP tool's structured content, a web answer): the
    /// id, label and cwd written by [`Hardening::text`] (under the hardened
    /// mode: no credential, raw `<` or invisible character), and the
    /// mention made from that label (its URI still names the exact id, so
    /// a session whose id had to be escaped is read by its mention). With
    /// every protection off it is [`to_json`](Self::to_json).
    pub fn to_json_hardened(&self, hardening: &Hardening) -> Value {
        let mut v = self.to_json();
        if let Value::Object(m) = &mut v {
            let label = hardening.text(&self.label);
            m.insert("sessionId".into(), hardening.text_value(&self.session_id));
            if self.mention.is_some() {
                m.insert("mention".into(), Value::from(format_mention(&self.session_id, Some(&label))));
            }
            m.insert("label".into(), Value::from(label.into_owned()));
            if let Some(title) = &self.display_title {
                m.insert("displayTitle".into(), hardening.text_value(title));
            }
            if let Some(cwd) = &self.cwd {
                m.insert("cwd".into(), hardening.text_value(cwd));
            }
        }
        v
    }
}

/// Which sessions a search looks at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SearchScope {
    /// Every listed session but the target.
    #[default]
    All,
    /// Only sessions whose cwd equals the target's (none when the target
    /// has no cwd).
    SameCwd,
}

impl SearchScope {
    /// `"all"` or `"cwd"`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "all" => Some(SearchScope::All),
            "cwd" => Some(SearchScope::SameCwd),
            _ => None,
        }
    }

    /// The wire spelling: `"all"` or `"cwd"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchScope::All => "all",
            SearchScope::SameCwd => "cwd",
        }
    }
}

/// Options of [`Resolver::search`](crate::Resolver::search).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchOptions {
    /// At most this many results (default: the configured candidate limit;
    /// an explicit limit must be a positive safe integer).
    pub limit: Option<u64>,
    /// Which sessions are searched.
    pub scope: SearchScope,
}

impl SearchOptions {
    /// Reads `{"limit"?: integer|null, "scope"?: "all"|"cwd"|null}` from a
    /// request object (other keys are ignored), as the C ABI, Python and
    /// Node take them.
    pub fn from_json(request: &Value) -> Result<SearchOptions> {
        Ok(SearchOptions {
            limit: limit_from_json(request.get("limit"))?,
            scope: scope_from_json(request.get("scope"))?,
        })
    }
}

/// An explicit candidate or search limit as a request gives it: absent or
/// `null` takes the configured one; anything but a positive safe integer is
/// `SESSION_REFERENCE_INVALID_REFERENCE`.
pub fn limit_from_json(value: Option<&Value>) -> Result<Option<u64>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => crate::config::candidate_limit_from_json(v).map(Some),
    }
}

/// A search scope as a request gives it: absent or `null` is `"all"`;
/// anything but `"all"` or `"cwd"` is `SESSION_REFERENCE_INVALID_REFERENCE`.
pub fn scope_from_json(value: Option<&Value>) -> Result<SearchScope> {
    let invalid = || Error::new(ErrorCode::InvalidReference, "search scope must be \"all\" or \"cwd\"");
    match value {
        None | Some(Value::Null) => Ok(SearchScope::All),
        Some(Value::String(s)) => SearchScope::from_name(s).ok_or_else(invalid),
        Some(_) => Err(invalid()),
    }
}

/// Where a result's best hit is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchField {
    /// The session's latest title.
    Title,
    /// A projected message (see [`SearchResult::message_index`]).
    Message,
    /// The session id.
    Id,
    /// The session's cwd.
    Cwd,
}

impl MatchField {
    /// `"title"`, `"message"`, `"id"` or `"cwd"`.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchField::Title => "title",
            MatchField::Message => "message",
            MatchField::Id => "id",
            MatchField::Cwd => "cwd",
        }
    }

    /// The field named by [`as_str`](Self::as_str).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "title" => Some(MatchField::Title),
            "message" => Some(MatchField::Message),
            "id" => Some(MatchField::Id),
            "cwd" => Some(MatchField::Cwd),
            _ => None,
        }
    }
}

/// One session found by [`Resolver::search`](crate::Resolver::search).
#[derive(Clone, Debug, PartialEq)]
pub struct SearchResult {
    /// The session as discovery lists it, with its mention.
    pub candidate: Candidate,
    /// A short text around the best hit (whitespace runs collapsed to one
    /// space, `…` where it was cut).
    pub snippet: String,
    /// Where the best hit is.
    pub field: MatchField,
    /// For a hit in a message: its index among the session's projected
    /// items (the order a reference carries them).
    pub message_index: Option<u64>,
}

impl SearchResult {
    /// The candidate's JSON (`sessionId`, `label`, `cwd`?, `createdAt`,
    /// `mention`) plus `"snippet"`, `"field"` and `"messageIndex"` (a
    /// number or `null`).
    pub fn to_json(&self) -> Value {
        let mut v = self.candidate.to_json();
        if let Value::Object(m) = &mut v {
            m.insert("snippet".into(), Value::from(self.snippet.as_str()));
            m.insert("field".into(), Value::from(self.field.as_str()));
            m.insert("messageIndex".into(), self.message_index.map_or(Value::Null, Value::from));
        }
        v
    }

    /// [`to_json`](Self::to_json) for a text that leaves its session as a
    /// parsed value: the candidate's [`Candidate::to_json_hardened`] and
    /// the snippet written by [`Hardening::text`].
    pub fn to_json_hardened(&self, hardening: &Hardening) -> Value {
        let mut v = self.candidate.to_json_hardened(hardening);
        if let Value::Object(m) = &mut v {
            m.insert("snippet".into(), hardening.text_value(&self.snippet));
            m.insert("field".into(), Value::from(self.field.as_str()));
            m.insert("messageIndex".into(), self.message_index.map_or(Value::Null, Value::from));
        }
        v
    }

    /// Reads a result a host's own search returned: `{"sessionId": string,
    /// "label"?: string, "cwd"?: string|null, "createdAt": number,
    /// "snippet"?: string, "field"?: "title"|"message"|"id"|"cwd",
    /// "messageIndex"?: integer|null}`. The label defaults to the id, the
    /// snippet to `""`, the field to `"message"`; the mention is always
    /// computed by the library.
    pub fn from_json(value: &Value) -> std::result::Result<SearchResult, String> {
        let obj = value.as_object().ok_or("a search result must be an object")?;
        let header = SessionHeader::from_json(&Value::Object(rename_session_id(obj)?))?;
        let label = match obj.get("label") {
            None | Some(Value::Null) => header.id.clone(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(format!("search result `label` of {:?} must be a string", header.id)),
        };
        let snippet = match obj.get("snippet") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(format!("search result `snippet` of {:?} must be a string", header.id)),
        };
        let field = match obj.get("field") {
            None | Some(Value::Null) => MatchField::Message,
            Some(Value::String(s)) => {
                MatchField::from_name(s).ok_or_else(|| format!("unknown search result field {s:?}"))?
            }
            Some(_) => return Err(format!("search result `field` of {:?} must be a string", header.id)),
        };
        let message_index = match obj.get("messageIndex") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
            Some(_) => return Err(format!("search result `messageIndex` of {:?} must be an integer", header.id)),
        };
        let candidate = Candidate {
            session_id: header.id,
            label,
            cwd: header.cwd,
            created_at: header.created_at,
            mention: None,
            same_workspace: None,
            display_title: None,
        };
        Ok(SearchResult { candidate: candidate.with_mention(), snippet, field, message_index })
    }

    /// Reads the array a host's own search returned.
    pub fn list_from_json(value: &Value) -> std::result::Result<Vec<SearchResult>, String> {
        value.as_array().ok_or("a host's search must return an array")?.iter().map(SearchResult::from_json).collect()
    }
}

fn rename_session_id(obj: &Map<String, Value>) -> std::result::Result<Map<String, Value>, String> {
    let mut m = Map::new();
    m.insert("id".into(), obj.get("sessionId").cloned().ok_or("a search result needs a string `sessionId`")?);
    m.insert("createdAt".into(), obj.get("createdAt").cloned().unwrap_or(Value::Null));
    m.insert("cwd".into(), obj.get("cwd").cloned().unwrap_or(Value::Null));
    Ok(m)
}

/// A search as the library hands it to a host that implements search
/// itself ([`SessionQuery::search`](crate::SessionQuery::search)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchRequest {
    /// The session searching; its own session must not be returned.
    pub target: Target,
    /// The search text as the user typed it (not trimmed, not lower-cased).
    pub query: String,
    /// At most this many results are used.
    pub limit: u64,
    /// Which sessions to search.
    pub scope: SearchScope,
}

impl SearchRequest {
    /// `{"target":{"id","cwd"},"query","limit","scope"}`.
    pub fn to_json(&self) -> Value {
        let mut target = Map::new();
        target.insert("id".into(), Value::from(self.target.id.as_str()));
        target.insert("cwd".into(), self.target.cwd.as_deref().map_or(Value::Null, Value::from));
        let mut m = Map::new();
        m.insert("target".into(), Value::Object(target));
        m.insert("query".into(), Value::from(self.query.as_str()));
        m.insert("limit".into(), Value::from(self.limit));
        m.insert("scope".into(), Value::from(self.scope.as_str()));
        Value::Object(m)
    }
}

/// What the built-in index of a resolver holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchIndexStats {
    /// Sessions whose body is indexed (those with a fingerprint).
    pub sessions: usize,
    /// Bytes of projected text they cover.
    pub text_bytes: usize,
    /// Bytes the index holds for them (compressed text, filters, titles,
    /// ids, fingerprints, and its compression dictionary once). The
    /// compressed text of a session loaded from a cache file stays in the
    /// file, read when a search verifies it; it is counted here all the
    /// same, so the figure is the index's size whether it was built or
    /// loaded (its memory is then that much less).
    pub index_bytes: usize,
    /// Of `index_bytes`, the filters (the rest is mostly the compressed
    /// text).
    pub filter_bytes: usize,
    /// Titles in the title cache.
    pub titles: usize,
}

/// How far a resolver's built-in index is over the sessions it was asked
/// to cover: `indexed` of `total` held under their current fingerprint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexProgress {
    /// Sessions indexed (their text searchable).
    pub indexed: u64,
    /// Sessions to index.
    pub total: u64,
}

impl IndexProgress {
    /// Whether every session is indexed.
    pub fn complete(&self) -> bool {
        self.indexed >= self.total
    }
}

/// What [`Resolver::search_available`](crate::Resolver::search_available)
/// answers: the results and whether they are complete. An incomplete
/// answer searched the text of the `indexed` sessions and only the title,
/// id and cwd of the others (`total` in all); a later search sees more.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchAnswer {
    /// The results, best first (as [`Resolver::search`](crate::Resolver::search) ranks them).
    pub results: Vec<SearchResult>,
    /// The sessions searched, and how many of them by their text.
    pub progress: IndexProgress,
}

impl SearchAnswer {
    /// Whether every session searched was searched by its text (the
    /// answer is then exactly [`Resolver::search`](crate::Resolver::search)'s).
    pub fn complete(&self) -> bool {
        self.progress.complete()
    }

    /// `{"results": [...], "complete": bool, "indexed": n, "total": n}`,
    /// each result as [`SearchResult::to_json`] writes it.
    pub fn to_json(&self) -> Value {
        self.with_results(self.results.iter().map(SearchResult::to_json).collect())
    }

    /// [`to_json`](Self::to_json) with each result as
    /// [`SearchResult::to_json_hardened`] writes it.
    pub fn to_json_hardened(&self, hardening: &Hardening) -> Value {
        self.with_results(self.results.iter().map(|r| r.to_json_hardened(hardening)).collect())
    }

    fn with_results(&self, results: Vec<Value>) -> Value {
        let mut m = Map::new();
        m.insert("results".into(), Value::Array(results));
        m.insert("complete".into(), Value::Bool(self.complete()));
        m.insert("indexed".into(), Value::from(self.progress.indexed));
        m.insert("total".into(), Value::from(self.progress.total));
        Value::Object(m)
    }

    /// The one line a front shows beside an incomplete answer (`None` for
    /// a complete one): how many sessions were searched by their text, and
    /// that a later search sees more.
    pub fn note(&self) -> Option<String> {
        (!self.complete()).then(|| self.progress.note())
    }
}

impl IndexProgress {
    /// `Indexing: 1234 of 10000 sessions searchable by their text so far
    /// (the others by title, id and cwd); search again for more.`
    pub fn note(&self) -> String {
        format!(
            "Indexing: {} of {} sessions searchable by their text so far (the others by title, id and cwd); \
             search again for more.",
            self.indexed, self.total
        )
    }
}
