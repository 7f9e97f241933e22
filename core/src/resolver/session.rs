//! One session's whole projected conversation, as a reference would carry
//! it before any budget: what `dsh-session-ref show` prints. The same
//! projection as preparation (`prepare.rs`) and search, never a second one.

use serde_json::{Map, Number, Value};

use super::{cancellable, guarded, Resolver};
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::host::{with_projection, SurfaceData, SurfaceRead};
use crate::projection::Role;

/// One projected message: user text as typed, steering, a compaction
/// checkpoint, or completed assistant text (never tool output or
/// reasoning).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionMessage {
    /// Its position among the session's projected messages, from 0: the
    /// index a search result's `messageIndex` names.
    pub index: u64,
    /// Who said it.
    pub role: Role,
    /// The text, with credentials redacted when `redactSecrets` is on.
    pub text: String,
    /// Whether it is a compaction checkpoint (a summary of what came before).
    pub checkpoint: bool,
}

/// A session's whole projected conversation ([`Resolver::conversation`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SessionConversation {
    /// The session id.
    pub session_id: String,
    /// The session's latest title (or its id), as discovery labels it
    /// (sanitized and redacted under the hardened mode's label rules).
    pub label: String,
    /// The snapshot's cwd, if any.
    pub cwd: Option<String>,
    /// The last event the snapshot covers, if the source says.
    pub captured_through_seq: Option<Number>,
    /// Every projected message, oldest first.
    pub messages: Vec<SessionMessage>,
}

impl SessionConversation {
    /// `{"sessionId","label","cwd","capturedThroughSeq","messages":[{"index","role","text","checkpoint"}]}`
    /// (`cwd` and `capturedThroughSeq` are `null` when unknown).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("sessionId".into(), Value::from(self.session_id.as_str()));
        m.insert("label".into(), Value::from(self.label.as_str()));
        m.insert("cwd".into(), self.cwd.as_deref().map_or(Value::Null, Value::from));
        m.insert("capturedThroughSeq".into(), self.captured_through_seq.clone().map_or(Value::Null, Value::Number));
        let messages = self
            .messages
            .iter()
            .map(|msg| {
                let mut o = Map::new();
                o.insert("index".into(), Value::from(msg.index));
                o.insert("role".into(), Value::from(msg.role.as_str()));
                o.insert("text".into(), Value::from(msg.text.as_str()));
                o.insert("checkpoint".into(), Value::Bool(msg.checkpoint));
                Value::Object(o)
            })
            .collect();
        m.insert("messages".into(), Value::Array(messages));
        Value::Object(m)
    }
}

impl Resolver {
    /// The surface of `session_id` for projection, and its title (`None`
    /// when it has none or cannot be read): the title the read gave when
    /// the source learns it on the way (a file that holds both is read
    /// once), else [`title_now`](Self::title_now). A failed read is
    /// `SESSION_REFERENCE_READ_FAILED`.
    pub(crate) async fn surface_and_title(&self, session_id: &str) -> Result<(SurfaceData, Option<String>)> {
        let answer = guarded(|| self.query.read_surface_as(session_id, SurfaceRead::ForProjection)).await;
        let answer = answer.map_err(|e| Error::read_failed(session_id, e))?;
        let title = answer.title.clone();
        let surface = answer.into_data().map_err(|e| Error::read_failed(session_id, e))?;
        let title = match title {
            Some(title) => title,
            None => self.title_now(session_id).await,
        };
        Ok((surface, title))
    }

    /// The whole projected conversation of `session_id` (any session the
    /// host can read, the target's own included), with its label: one read
    /// of the surface, and of the title when that read did not give it and
    /// no title is cached under the session's current fingerprint. A failed read, or
    /// a snapshot that does not project, is `SESSION_REFERENCE_READ_FAILED`;
    /// a title that cannot be read leaves the id as the label. No budget
    /// applies: a host that shows it to a model must bound it itself.
    pub async fn conversation(&self, session_id: &str, cancel: Option<&CancelToken>) -> Result<SessionConversation> {
        let work = async {
            let (surface, title) = self.surface_and_title(session_id).await?;
            let redact = self.config.hardening().redact_secrets;
            // Projected on a blocking thread: a large session must not hold
            // a runtime worker (and cancellation stays prompt).
            let projected = tokio::task::spawn_blocking(move || project_messages(&surface, redact))
                .await
                .map_err(|_| "projecting the snapshot panicked".to_owned())
                .and_then(|r| r)
                .map_err(|e| Error::read_failed(session_id, e.into()))?;
            let (cwd, captured_through_seq, messages) = projected;
            let title = title.unwrap_or_else(|| session_id.to_owned());
            let label = self.config.hardening().label(title, session_id);
            Ok(SessionConversation { session_id: session_id.to_owned(), label, cwd, captured_through_seq, messages })
        };
        cancellable(cancel, work).await
    }
}

/// The projected messages of a surface, with its cwd and `capturedThroughSeq`.
type Projected = (Option<String>, Option<Number>, Vec<SessionMessage>);

fn project_messages(surface: &SurfaceData, redact: bool) -> std::result::Result<Projected, String> {
    with_projection(surface, |p| {
        let mut messages = Vec::with_capacity(p.items.len());
        for (i, item) in p.items.iter().enumerate() {
            let text = item.text.decode()?;
            let text = if redact { crate::harden::secrets::redact(&text).0.into_owned() } else { text.into_owned() };
            messages.push(SessionMessage { index: i as u64, role: item.role, text, checkpoint: item.checkpoint });
        }
        Ok((p.cwd.map(|c| c.into_owned()), p.captured_through_seq, messages))
    })
    .and_then(|r| r)
}
