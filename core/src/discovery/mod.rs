//! Discovery (docs/contract.md §7): the sessions a user can mention, with their latest
//! titles as labels, ranked by working directory (`rank.rs`) and filtered
//! by a search text.

use serde_json::{Map, Number, Value};

use crate::cancel::CancelToken;
use crate::config::{Config, MAX_SAFE_INTEGER};
use crate::error::{Error, ErrorCode, Result};
use crate::host::{SessionHeader, Target};
use crate::resolver::{cancellable, Resolver};
use crate::uri::format_mention;

mod fingerprint;
mod listed;
mod persist;
mod rank;
mod search;
mod text;
mod titles;

pub(crate) use fingerprint::no_fingerprints;
pub use fingerprint::Fingerprint;
pub use persist::DiscoveryCachePart;
pub(crate) use search::with_projection;
pub use search::{MatchField, SearchIndexStats, SearchOptions, SearchRequest, SearchResult, SearchScope};
pub(crate) use titles::DiscoveryCache;

/// How many title reads run at once during a filtered candidate search.
const TITLE_CONCURRENCY: usize = 16;
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
    /// The mention text: present from [`Resolver::candidates`], absent from
    /// [`Resolver::list_candidates`] (the reference's two faces).
    pub mention: Option<String>,
    /// `sameWorkspace` (the later `dshCompat` profiles only, see [`crate::compat`]).
    pub same_workspace: Option<bool>,
    /// `displayTitle` (the `"0.1.7"` profile only).
    pub display_title: Option<String>,
}

impl Candidate {
    /// A candidate without mention from a listed session and its latest
    /// title (the label is the id when it has none).
    /// With `sanitizeLabels` the label is cleaned; the later `dshCompat`
    /// profiles add their fields for `target`.
    fn from_header(s: &SessionHeader, title: Option<String>, config: &Config, target: &Target) -> Self {
        let label = config.hardening().label(title.unwrap_or_else(|| s.id.clone()), &s.id);
        let (same_workspace, display_title) =
            config.compat().candidate_fields(s.cwd.as_deref(), target.cwd.as_deref(), &label);
        Candidate {
            session_id: s.id.clone(),
            label,
            cwd: s.cwd.clone(),
            created_at: s.created_at.clone(),
            mention: None,
            same_workspace,
            display_title,
        }
    }

    /// The candidate with its canonical mention (`@[label](dsh-session:…)`)
    /// filled in, as [`Resolver::candidates`] gives it.
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
}

impl Resolver {
    /// Discovery (docs/contract.md §7): sessions other than the target, ranked by cwd,
    /// filtered case-insensitively by id, cwd or label when `filter` is not
    /// empty, cut at `limit` (default: the configured candidate limit; an
    /// explicit limit must be a positive safe integer). Candidates come
    /// without mentions, as the reference's `listCandidates` gives them.
    pub async fn list_candidates(
        &self,
        target: &Target,
        filter: &str,
        limit: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Candidate>> {
        let limit = usize::try_from(self.limit_or_default(limit, "candidate")?).unwrap_or(usize::MAX);
        cancellable(cancel, self.list_candidates_inner(target, filter, limit)).await
    }

    /// `limit`, or the configured candidate limit; an explicit limit must
    /// be a positive safe integer (`what` names it in the error).
    pub(crate) fn limit_or_default(&self, limit: Option<u64>, what: &str) -> Result<u64> {
        match limit {
            None => Ok(self.config.candidate_limit()),
            Some(l) if (1..=MAX_SAFE_INTEGER).contains(&l) => Ok(l),
            Some(_) => {
                Err(Error::new(ErrorCode::InvalidReference, format!("{what} limit must be a positive safe integer")))
            }
        }
    }

    /// The host-facing face of discovery: [`list_candidates`](Self::list_candidates),
    /// each candidate with its mention (`@[label](dsh-session:…)`).
    pub async fn candidates(
        &self,
        target: &Target,
        filter: &str,
        limit: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Candidate>> {
        let list = self.list_candidates(target, filter, limit, cancel).await?;
        Ok(list.into_iter().map(Candidate::with_mention).collect())
    }

    async fn list_candidates_inner(&self, target: &Target, filter: &str, limit: usize) -> Result<Vec<Candidate>> {
        let listed = self.listed().await?;
        self.discovery.retain_listed(listed.sessions());
        let others = listed.positions(|s| s.id != target.id);
        let all = listed.sessions();
        if filter.is_empty() {
            // Without a filter only the kept sessions' titles are read.
            let kept = rank::ranked_by(others, |&i| rank::rank(all[i].cwd.as_deref(), target), limit);
            let fps = listed.fingerprints_at(self, &kept).await;
            let sessions = listed.at(&kept);
            let titles = self.titles_under(&sessions, &fps, sessions.len()).await;
            return Ok(sessions
                .into_iter()
                .zip(titles)
                .map(|(s, t)| Candidate::from_header(s, t, &self.config, target))
                .collect());
        }
        let filter = rank::Filter::new(filter);
        let fps = listed.fingerprints_at(self, &others).await;
        let sessions = listed.at(&others);
        let hardening = self.config.hardening();
        let kept = self
            .titles_where(&sessions, &fps, TITLE_CONCURRENCY, |s, title| {
                let label = hardening.label_ref(title.unwrap_or(&s.id), &s.id);
                filter.matches(&s.id, s.cwd.as_deref(), &label)
            })
            .await;
        // Ranked and cut before the candidates are made (the rank is the
        // session's cwd's): thousands may match, the limit keeps a few.
        let kept = rank::ranked_by(kept, |(i, _)| rank::rank(sessions[*i].cwd.as_deref(), target), limit);
        Ok(kept.into_iter().map(|(i, t)| Candidate::from_header(sessions[i], t, &self.config, target)).collect())
    }
}
