//! Bounded reads (docs/contract.md §12): one page of another session's
//! projected conversation — a run of whole messages that fits a byte budget,
//! framed like a reference — selected from its start, around an index, from
//! a cursor, or the newest that fit. The same projection as preparation,
//! discovery and [`Resolver::conversation`], never a second one; the page's
//! selection and framing are `page.rs`; here are the options, the cursors
//! that pin a capture, and the typed result.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{Map, Number, Value};

use super::{cancellable, Resolver};
use crate::cache_file::checksum;
use crate::cancel::CancelToken;
use crate::config::{index_from_json, positive_safe_integer, MAX_SAFE_INTEGER};
use crate::error::{Error, ErrorCode, Result};
use crate::harden::{Hardening, REDACTED_SECRETS_KEY};
use crate::host::{with_projection, SurfaceData, Target};
use crate::page::{render_page, PageHead, PageMessage};
use crate::projection::{Item, Role};
use crate::retention::Grow;

/// The page budget when none is given: 16,384 UTF-8 bytes of framed text.
pub const DEFAULT_READ_BYTES: u64 = 16_384;

/// The conservative token estimate of a page budget in tokens: at most one
/// token per UTF-8 byte, so `max_tokens` tokens allow that many bytes
/// (docs/contract.md §12.3). Byte-level BPE tokenizers (GPT-4's and GPT-4o's,
/// DeepSeek's, Llama 3's, Qwen's) start from one token per byte and merges
/// only lower the count, so no text has more tokens than bytes; any
/// tighter ratio (4 bytes a token for English, 3 for CJK) is exceeded by
/// some text (a CJK character outside the vocabulary takes up to 3 tokens,
/// punctuation runs 1 a byte).
pub const BYTES_PER_TOKEN: u64 = 1;

/// Options of one [`Resolver::read`]. At most one of `start`, `around` and
/// `cursor`; with none, the page is the newest messages that fit. The page's
/// framed text fits both `max_bytes` and, when given, `max_tokens`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Read forward from this message index: the page is this message and
    /// the ones after it that fit.
    pub start: Option<u64>,
    /// Read around this message index (a search hit's `messageIndex`, say):
    /// the page is this message and the ones on both sides of it that fit,
    /// one before, one after, and so on.
    pub around: Option<u64>,
    /// Continue from a page's `next_cursor` (forward) or `prev_cursor`
    /// (backward). Opaque; it pins the state of the conversation it was made
    /// from, and a session that changed since fails with
    /// `SESSION_REFERENCE_SESSION_CHANGED`.
    pub cursor: Option<String>,
    /// The budget: UTF-8 bytes of the whole framed text (a positive safe
    /// integer; default [`DEFAULT_READ_BYTES`]).
    pub max_bytes: u64,
    /// A budget in tokens as well (a positive safe integer), estimated
    /// conservatively at [`BYTES_PER_TOKEN`]: the page fits `min(max_bytes,
    /// max_tokens)` bytes.
    pub max_tokens: Option<u64>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { start: None, around: None, cursor: None, max_bytes: DEFAULT_READ_BYTES, max_tokens: None }
    }
}

impl ReadOptions {
    /// These options reading forward from message `start`.
    pub fn with_start(mut self, start: Option<u64>) -> Self {
        self.start = start;
        self
    }

    /// These options reading around message `around`.
    pub fn with_around(mut self, around: Option<u64>) -> Self {
        self.around = around;
        self
    }

    /// These options continuing from `cursor`.
    pub fn with_cursor(mut self, cursor: Option<String>) -> Self {
        self.cursor = cursor;
        self
    }

    /// These options with a budget of `max_bytes` bytes.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// These options with a budget of `max_tokens` tokens as well.
    pub fn with_max_tokens(mut self, max_tokens: Option<u64>) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Reads the options of a request object, as every JSON front and
    /// Python's keyword arguments give them: `"start"`, `"around"` (message
    /// indexes: non-negative safe integers), `"cursor"` (a string),
    /// `"maxBytes"` and `"maxTokens"` (positive safe integers); absent or
    /// `null` keys take their defaults, other keys are ignored. A value of
    /// the wrong kind is `SESSION_REFERENCE_INVALID_REFERENCE`; whether the
    /// options go together is checked by [`Resolver::read`].
    pub fn from_json(request: &Value) -> Result<ReadOptions> {
        let get = |key: &str| request.get(key).filter(|v| !v.is_null());
        let invalid =
            |key: &str, what: &str| Error::new(ErrorCode::InvalidReference, format!("`{key}` must be {what}"));
        let index = |key: &str| {
            get(key).map(|v| index_from_json(v).ok_or_else(|| invalid(key, "a message index (a non-negative integer)")))
        };
        let positive =
            |key: &str| get(key).map(|v| positive_safe_integer(v).ok_or_else(|| invalid(key, "a positive integer")));
        let cursor = match get("cursor") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(invalid("cursor", "a string")),
        };
        Ok(ReadOptions {
            start: index("start").transpose()?,
            around: index("around").transpose()?,
            cursor,
            max_bytes: positive("maxBytes").transpose()?.unwrap_or(DEFAULT_READ_BYTES),
            max_tokens: positive("maxTokens").transpose()?,
        })
    }

    /// The page's budget in bytes: `max_bytes`, or the byte estimate of
    /// `max_tokens` when that is smaller.
    pub fn budget(&self) -> u64 {
        let tokens = self.max_tokens.map_or(u64::MAX, |t| t.saturating_mul(BYTES_PER_TOKEN));
        self.max_bytes.min(tokens)
    }

    /// Checks the options for a read of `session_id`: what the page grows
    /// from, and its budget.
    fn plan(&self, session_id: &str) -> Result<Plan> {
        let invalid = |m: String| Error::new(ErrorCode::InvalidReference, m);
        let given = [self.start.is_some(), self.around.is_some(), self.cursor.is_some()];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err(invalid("give at most one of `start`, `around` and `cursor`".into()));
        }
        for (key, v) in [("maxBytes", Some(self.max_bytes)), ("maxTokens", self.max_tokens)] {
            if v.is_some_and(|v| v == 0 || v > MAX_SAFE_INTEGER) {
                return Err(invalid(format!("`{key}` must be a positive integer")));
            }
        }
        for (key, v) in [("start", self.start), ("around", self.around)] {
            if v.is_some_and(|v| v > MAX_SAFE_INTEGER) {
                return Err(invalid(format!("`{key}` must be a message index (a non-negative integer)")));
            }
        }
        let from = match (self.start, self.around, &self.cursor) {
            (Some(s), _, _) => Anchor::Start(s),
            (_, Some(a), _) => Anchor::Around(a),
            (_, _, Some(c)) => {
                let cursor = Cursor::decode(c).ok_or_else(|| invalid("the read cursor is malformed".into()))?;
                if cursor.session != session_hash(session_id) {
                    return Err(invalid(format!(
                        "the read cursor was made for another session than {}",
                        crate::json::js_string(session_id)
                    )));
                }
                Anchor::Cursor(cursor)
            }
            _ => Anchor::Newest,
        };
        Ok(Plan { from, budget: self.budget() })
    }
}

/// What a page grows from.
#[derive(Clone, Copy, Debug)]
enum Anchor {
    Newest,
    Start(u64),
    Around(u64),
    Cursor(Cursor),
}

#[derive(Clone, Copy, Debug)]
struct Plan {
    from: Anchor,
    budget: u64,
}

/// One page of a session's projected conversation ([`Resolver::read`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Page {
    /// The session id.
    pub session_id: String,
    /// The session's latest title (or its id), as discovery labels it
    /// (sanitized and redacted under the hardened mode's label rules).
    pub title: String,
    /// The snapshot's cwd, if any.
    pub cwd: Option<String>,
    /// The last event the snapshot covers, if the source says.
    pub captured_through_seq: Option<Number>,
    /// The number of projected messages in the whole session.
    pub total_messages: u64,
    /// The page's messages, oldest first: a run of consecutive indexes
    /// (empty when the selection lies past the last message).
    pub messages: Vec<PageMessage>,
    /// Continues forward after the page's last message; `None` at the end.
    pub next_cursor: Option<String>,
    /// Continues backward before the page's first message; `None` at the
    /// start.
    pub prev_cursor: Option<String>,
    /// Credentials redacted from the page's texts: `Some` exactly when
    /// `redactSecrets` is on.
    pub redacted_secrets: Option<u64>,
    /// The framed text for a model: the untrusted-background warning
    /// ([`PAGE_HEADER`](crate::page::PAGE_HEADER)), the page as one line of
    /// tag-safe JSON, and [`PAGE_FOOTER`](crate::page::PAGE_FOOTER); at most
    /// the budget in UTF-8 bytes.
    pub text: String,
}

impl Page {
    /// `{"sessionId","label","cwd"?,"totalMessages","capturedThroughSeq","messages":[{"index","role","text","checkpoint","omittedBytes"?}],"nextCursor"?,"prevCursor"?}`,
    /// and `"redactedSecrets"` under `redactSecrets`: the page for a
    /// program, in the words of a candidate (`label` is the
    /// [`title`](Self::title); `cwd` absent when the session has none). The
    /// framed text is [`text`](Self::text).
    pub fn to_json(&self) -> Value {
        self.json_with(PageMessage::to_json)
    }

    /// [`to_json`](Self::to_json) with the framed text as a last key,
    /// `"text"`: the result of `read` in the JSON fronts (C, Python, Node,
    /// the command line's `--json`).
    pub fn to_json_with_text(&self) -> Value {
        let mut v = self.to_json();
        if let Some(m) = v.as_object_mut() {
            m.insert("text".into(), Value::from(self.text.as_str()));
        }
        v
    }

    /// The page for a model that reads a parsed value (an MCP tool's
    /// structured content): [`to_json_with_text`](Self::to_json_with_text)
    /// whose messages carry no `text` (each text is in the framed `text`,
    /// once, under its untrusted-background header), and whose id, label
    /// and cwd are written by [`Hardening::text`]. So every string in it
    /// is either the frame or free of what the hardening removes.
    pub fn to_json_hardened(&self, hardening: &Hardening) -> Value {
        let mut v = self.json_with(|m| {
            let mut j = m.to_json();
            if let Some(o) = j.as_object_mut() {
                o.remove("text");
            }
            j
        });
        if let Some(m) = v.as_object_mut() {
            m.insert("sessionId".into(), hardening.text_value(&self.session_id));
            m.insert("label".into(), hardening.text_value(&self.title));
            if let Some(cwd) = &self.cwd {
                m.insert("cwd".into(), hardening.text_value(cwd));
            }
            m.insert("text".into(), Value::from(self.text.as_str()));
        }
        v
    }

    fn json_with(&self, message: impl Fn(&PageMessage) -> Value) -> Value {
        let mut m = Map::new();
        m.insert("sessionId".into(), Value::from(self.session_id.as_str()));
        m.insert("label".into(), Value::from(self.title.as_str()));
        if let Some(cwd) = &self.cwd {
            m.insert("cwd".into(), Value::from(cwd.as_str()));
        }
        m.insert("totalMessages".into(), Value::from(self.total_messages));
        m.insert("capturedThroughSeq".into(), self.captured_through_seq.clone().map_or(Value::Null, Value::Number));
        m.insert("messages".into(), Value::Array(self.messages.iter().map(message).collect()));
        if let Some(c) = &self.next_cursor {
            m.insert("nextCursor".into(), Value::from(c.as_str()));
        }
        if let Some(c) = &self.prev_cursor {
            m.insert("prevCursor".into(), Value::from(c.as_str()));
        }
        if let Some(n) = self.redacted_secrets {
            m.insert(REDACTED_SECRETS_KEY.into(), Value::from(n));
        }
        Value::Object(m)
    }
}

/// The version byte of the cursor format.
const CURSOR_VERSION: u8 = 1;
/// Version, direction, index (8), session (8), pin (16).
const CURSOR_BYTES: usize = 1 + 1 + 8 + 8 + 16;
/// Seeds of the checksums a cursor keeps (arbitrary, fixed: a cursor made
/// by one process is read by another).
const SESSION_SEED: u64 = 0x6473_722d_7265_6164; // "dsr-read"
const PIN_SEEDS: [u64; 2] = [0x7069_6e2d_6c61_6e65, 0x636f_6e76_6572_7361];

/// A position in one state of one session's conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cursor {
    /// Backward: the page ends at `index`; forward: it starts there.
    backward: bool,
    index: u64,
    /// [`session_hash`] of the session id.
    session: u64,
    /// [`pin`] of the conversation the cursor was made from.
    pin: [u8; 16],
}

impl Cursor {
    /// Unpadded base64url of the version, the direction, the index, the
    /// session and the pin (46 characters).
    fn encode(&self) -> String {
        let mut bytes = Vec::with_capacity(CURSOR_BYTES);
        bytes.push(CURSOR_VERSION);
        bytes.push(u8::from(self.backward));
        bytes.extend_from_slice(&self.index.to_le_bytes());
        bytes.extend_from_slice(&self.session.to_le_bytes());
        bytes.extend_from_slice(&self.pin);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The cursor `encode` wrote, and nothing else.
    fn decode(text: &str) -> Option<Cursor> {
        let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
        if bytes.len() != CURSOR_BYTES || bytes[0] != CURSOR_VERSION || bytes[1] > 1 {
            return None;
        }
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
        let cursor =
            Cursor { backward: bytes[1] == 1, index: word(2), session: word(10), pin: bytes[18..].try_into().ok()? };
        (cursor.encode() == text).then_some(cursor)
    }
}

fn session_hash(session_id: &str) -> u64 {
    checksum(SESSION_SEED, session_id.as_bytes())
}

/// The capture pin: two checksums, with different seeds, over every
/// projected message's role, checkpoint flag and text (before redaction), in
/// order, and their count. It changes whenever the conversation does;
/// events that projection drops (tool output, reasoning, a title) and
/// `capturedThroughSeq` do not enter it. It detects change, not tampering.
fn pin(items: &[Item<'_>]) -> [u8; 16] {
    let mut lanes = PIN_SEEDS;
    for item in items {
        let tag = match item.role {
            Role::User => 1u64,
            Role::Assistant => 2,
        } | (u64::from(item.checkpoint) << 2);
        let decoded = item.text.decode();
        // A text that cannot be decoded (a lone surrogate) is pinned by its literal.
        let bytes = match &decoded {
            Ok(text) => text.as_bytes(),
            Err(_) => item.text.json_literal().unwrap_or_default(),
        };
        for (k, lane) in lanes.iter_mut().enumerate() {
            *lane = checksum(lane.rotate_left(7 * k as u32 + 1) ^ tag, bytes);
        }
    }
    let count = (items.len() as u64).to_le_bytes();
    let mut out = [0u8; 16];
    for (k, lane) in lanes.iter().enumerate() {
        out[8 * k..8 * k + 8].copy_from_slice(&checksum(*lane, &count).to_le_bytes());
    }
    out
}

/// The page of `surface` the plan asks for: one projection, the pin
/// checked, the page rendered, its cursors made.
fn page_of(surface: &SurfaceData, session_id: &str, title: String, plan: Plan, hardening: Hardening) -> Result<Page> {
    let read_failed = |e: String| Error::read_failed(session_id, e.into());
    with_projection(surface, |p| {
        let n = p.items.len();
        let pinned = pin(&p.items);
        let index = |i: u64| usize::try_from(i).ok().filter(|&i| i < n);
        let at = match plan.from {
            Anchor::Newest => n.checked_sub(1).map(|i| (i, Grow::Backward)),
            Anchor::Start(s) => index(s).map(|s| (s, Grow::Forward)),
            Anchor::Around(a) => index(a).map(|a| (a, Grow::Around)),
            Anchor::Cursor(c) => {
                if c.pin != pinned {
                    return Err(Error::new(
                        ErrorCode::SessionChanged,
                        format!(
                            "session {} changed since the cursor was made; read it again without a cursor",
                            crate::json::js_string(session_id)
                        ),
                    ));
                }
                index(c.index).map(|i| (i, if c.backward { Grow::Backward } else { Grow::Forward }))
            }
        };
        let head = PageHead {
            session_id,
            label: &title,
            cwd: p.cwd.as_deref(),
            captured_through_seq: p.captured_through_seq.as_ref(),
            total_messages: n,
        };
        let rendered =
            render_page(p.items, &head, at, plan.budget, hardening).map_err(read_failed)?.ok_or_else(|| {
                Error::new(
                    ErrorCode::BudgetExceeded,
                    format!(
                        "a page of session {} does not fit in {} bytes",
                        crate::json::js_string(session_id),
                        plan.budget
                    ),
                )
            })?;
        let session = session_hash(session_id);
        let cursor =
            |backward: bool, index: usize| Cursor { backward, index: index as u64, session, pin: pinned }.encode();
        let (next_cursor, prev_cursor) = match rendered.run {
            Some((lo, hi)) => ((hi + 1 < n).then(|| cursor(false, hi + 1)), lo.checked_sub(1).map(|i| cursor(true, i))),
            None => (None, n.checked_sub(1).map(|i| cursor(true, i))),
        };
        Ok(Page {
            session_id: session_id.to_owned(),
            cwd: p.cwd.map(|c| c.into_owned()),
            captured_through_seq: p.captured_through_seq.clone(),
            total_messages: n as u64,
            messages: rendered.messages,
            next_cursor,
            prev_cursor,
            redacted_secrets: rendered.redacted_secrets,
            text: rendered.text,
            title,
        })
    })
    .map_err(read_failed)?
}

impl Resolver {
    /// One page of another session's projected conversation
    /// (docs/contract.md §12): the messages a reference would carry (user
    /// text, steering, compaction checkpoints, completed assistant text;
    /// never tool output or reasoning), as a run of whole messages whose
    /// framed text fits the budget, selected by `options` (from `start`,
    /// `around` an index, from a cursor, or the newest that fit). One read
    /// of the surface, and of the title when that read did not give it and
    /// no title is cached under the session's current fingerprint.
    ///
    /// Errors, in this order: options that do not go together, or a
    /// malformed cursor or one made for another session,
    /// `SESSION_REFERENCE_INVALID_REFERENCE`; reading the target's own
    /// session, `SESSION_REFERENCE_SELF_REFERENCE`; cancellation; a failed
    /// read or a malformed snapshot, `SESSION_REFERENCE_READ_FAILED`; a
    /// cursor whose session changed since, `SESSION_REFERENCE_SESSION_CHANGED`;
    /// a budget that not even the page's fixed part fits,
    /// `SESSION_REFERENCE_BUDGET_EXCEEDED`.
    pub async fn read(
        &self,
        target: &Target,
        session_id: &str,
        options: &ReadOptions,
        cancel: Option<&CancelToken>,
    ) -> Result<Page> {
        let plan = options.plan(session_id)?;
        if target.id == session_id {
            return Err(Error::new(ErrorCode::SelfReference, "a session cannot read itself"));
        }
        let hardening = self.config.hardening();
        let work = async {
            let (surface, title) = self.surface_and_title(session_id).await?;
            let title = title.unwrap_or_else(|| session_id.to_owned());
            let title = hardening.label(title, session_id);
            let id = session_id.to_owned();
            // On a blocking thread: a large session must not hold a runtime
            // worker (and cancellation stays prompt).
            tokio::task::spawn_blocking(move || page_of(&surface, &id, title, plan, hardening))
                .await
                .map_err(|_| Error::read_failed(session_id, "projecting the snapshot panicked".into()))?
        };
        cancellable(cancel, work).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_only_as_written() {
        let c = Cursor { backward: true, index: 41, session: session_hash("s"), pin: [7; 16] };
        let text = c.encode();
        assert_eq!(text.len(), 46);
        assert_eq!(Cursor::decode(&text), Some(c));
        let mut dirty = text.clone();
        dirty.pop();
        dirty.push('B'); // the last character's unused bits must be zero
        for bad in ["", "x", &text[1..], &format!("{text}A"), &format!("{text}=="), "AQ", &dirty] {
            assert_eq!(Cursor::decode(bad), None, "{bad}");
        }
        let mut bytes = URL_SAFE_NO_PAD.decode(&text).unwrap();
        bytes[0] = 2;
        assert_eq!(Cursor::decode(&URL_SAFE_NO_PAD.encode(&bytes)), None, "unknown version");
        bytes[0] = 1;
        bytes[1] = 2;
        assert_eq!(Cursor::decode(&URL_SAFE_NO_PAD.encode(&bytes)), None, "unknown direction");
    }

    #[test]
    fn options_are_read_from_json_with_contract_errors() {
        let o = ReadOptions::from_json(&serde_json::json!({"start": 3, "maxBytes": 500.0, "cursor": null})).unwrap();
        assert_eq!(o, ReadOptions::default().with_start(Some(3)).with_max_bytes(500));
        let o = ReadOptions::from_json(&serde_json::json!({"maxTokens": 100})).unwrap();
        assert_eq!(o.budget(), 100);
        assert_eq!(ReadOptions::default().budget(), DEFAULT_READ_BYTES);
        for bad in [
            serde_json::json!({"start": -1}),
            serde_json::json!({"around": 1.5}),
            serde_json::json!({"start": "3"}),
            serde_json::json!({"maxBytes": 0}),
            serde_json::json!({"maxTokens": 9007199254740992u64}),
            serde_json::json!({"cursor": 5}),
        ] {
            let e = ReadOptions::from_json(&bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidReference, "{bad}");
        }
        let both = ReadOptions::default().with_start(Some(1)).with_around(Some(2));
        assert_eq!(both.plan("s").unwrap_err().code(), ErrorCode::InvalidReference);
        let zero = ReadOptions::default().with_max_bytes(0);
        assert_eq!(zero.plan("s").unwrap_err().code(), ErrorCode::InvalidReference);
        let foreign = Cursor { backward: false, index: 0, session: session_hash("other"), pin: [0; 16] }.encode();
        let e = ReadOptions::default().with_cursor(Some(foreign)).plan("s").unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidReference);
        assert!(e.message().contains("another session"), "{e}");
    }
}
