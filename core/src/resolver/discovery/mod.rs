//! Discovery (docs/contract.md §7): the sessions a user can mention, with their latest
//! titles as labels, ranked by working directory (`host/rank.rs`) and filtered
//! by a search text.

use futures::StreamExt;

use super::{cancellable, Resolver};
use crate::cancel::CancelToken;
use crate::config::{Config, MAX_SAFE_INTEGER};
use crate::error::{Error, ErrorCode, Result};
use crate::host::{rank, Candidate, SessionHeader, Target};

mod background;
mod filtered;
mod listed;
mod persist;
mod search;
mod searched;
mod titles;

pub use persist::DiscoveryCachePart;
pub(crate) use titles::DiscoveryCache;

/// How many title reads run at once during a filtered candidate search.
const TITLE_CONCURRENCY: usize = 16;
/// A candidate without mention from a listed session and its latest
/// title (the label is the id when it has none).
/// With `sanitizeLabels` the label is cleaned; the later `dshCompat`
/// profiles add their fields for `target`.
pub(crate) fn candidate_from_header(
    s: &SessionHeader,
    title: Option<String>,
    config: &Config,
    target: &Target,
) -> Candidate {
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

/// Options of one discovery query ([`Resolver::candidates`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CandidateOptions {
    /// At most this many candidates (default: the configured candidate
    /// limit; an explicit limit must be a positive safe integer).
    pub limit: Option<u64>,
    /// Whether each candidate carries its mention (`@[label](dsh-session:…)`,
    /// the host-facing face, the default) or not (the reference's
    /// `listCandidates`).
    pub mentions: bool,
}

impl Default for CandidateOptions {
    fn default() -> Self {
        CandidateOptions { limit: None, mentions: true }
    }
}

impl CandidateOptions {
    /// These options with at most `limit` candidates (`None`: the configured limit).
    pub fn with_limit(mut self, limit: Option<u64>) -> Self {
        self.limit = limit;
        self
    }

    /// These options with candidates that carry no mention, as the
    /// reference's `listCandidates` gives them.
    pub fn without_mentions(mut self) -> Self {
        self.mentions = false;
        self
    }
}

impl Resolver {
    /// Discovery (docs/contract.md §7): sessions other than the target, ranked by cwd,
    /// filtered case-insensitively by id, cwd or label when `filter` is not
    /// empty, cut at the limit, each with its mention unless the options
    /// say otherwise.
    pub async fn candidates(
        &self,
        target: &Target,
        filter: &str,
        options: &CandidateOptions,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Candidate>> {
        let limit = usize::try_from(self.limit_or_default(options.limit, "candidate")?).unwrap_or(usize::MAX);
        let list = cancellable(cancel, self.list_candidates_inner(target, filter, limit)).await?;
        Ok(if options.mentions { list.into_iter().map(Candidate::with_mention).collect() } else { list })
    }

    /// The session id `name` names (a session id, a `dsh-session:` URI or
    /// one whole mention: [`session_id_named`](crate::uri::session_id_named))
    /// among the sessions listed now: an id given without its source's
    /// prefix is the one listed session it ends (an error names each when
    /// several do, [`listed_session_id`](crate::host::listed_session_id));
    /// an id no session has is returned as given, for the read that follows
    /// to report missing. The rule a front applies to every id it is given.
    pub async fn session_id(&self, name: &str) -> Result<String> {
        let (id, _) = self.listed_session_id(name).await?;
        Ok(id)
    }

    /// [`session_id`](Self::session_id), and whether the listing holds it:
    /// `false` when no listed session is the id returned, whose failed read
    /// the front then reports through
    /// [`unlisted_session`](crate::host::unlisted_session).
    pub async fn listed_session_id(&self, name: &str) -> Result<(String, bool)> {
        let id = crate::uri::session_id_named(name)?;
        let listed = self.listed().await?;
        Ok(match crate::host::listed_session_id(listed.sessions(), &id)? {
            Some(found) => (found, true),
            None => (id, false),
        })
    }

    /// The label of session `id` as discovery gives it: its latest title
    /// (from the title cache while its fingerprint holds, else read and
    /// cached; nothing is listed), or its id when it has none, written by
    /// the hardened mode's label rules. `SESSION_REFERENCE_SELF_REFERENCE`
    /// for the target's own id; `SESSION_REFERENCE_READ_FAILED` when the
    /// source fails to read its title (as a source without the session
    /// does).
    pub async fn label(&self, target: &Target, id: &str) -> Result<String> {
        if id == target.id {
            return Err(Error::new(ErrorCode::SelfReference, "a session cannot reference itself"));
        }
        let title = self.title_of(id).await?;
        Ok(self.config.hardening().label(title.filter(|t| !t.is_empty()).unwrap_or_else(|| id.to_owned()), id))
    }

    /// What the index behind filtered queries did so far: sessions whose
    /// fingerprint it compared, entries it made or remade, listings it
    /// matched to its entries by id (for tests and benchmarks: what one
    /// change costs).
    #[doc(hidden)]
    pub fn discovery_filter_work(&self) -> (u64, u64, u64) {
        let work = titles::lock(&self.discovery.filter).work;
        (work.checked, work.remade, work.matched)
    }

    /// What the built-in search touched so far: sessions whose id, cwd
    /// and title it tested, and sessions it looked at past those fields
    /// (their docs' filters or vocabularies asked). For tests and
    /// benchmarks: what a warm search costs.
    #[doc(hidden)]
    pub fn discovery_search_work(&self) -> (u64, u64) {
        let work = self.discovery.search_work();
        (work.fields, work.sessions)
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

    async fn list_candidates_inner(&self, target: &Target, filter: &str, limit: usize) -> Result<Vec<Candidate>> {
        let listed = self.listed().await?;
        self.discovery.retain_listed(&listed);
        if let (false, listed::Listed::Shared(shared)) = (filter.is_empty(), &listed) {
            if let Some(found) = self.indexed_candidates(shared, &rank::Filter::new(filter), target, limit).await {
                return Ok(found);
            }
        }
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
                .map(|(s, t)| candidate_from_header(s, t, &self.config, target))
                .collect());
        }
        let filter = rank::Filter::new(filter);
        let fps = listed.fingerprints_at(self, &others).await;
        let sessions = listed.at(&others);
        let kept = self
            .titles_where(&sessions, &fps, TITLE_CONCURRENCY, |t| {
                let s = t.session();
                filter.matches(&s.id, s.cwd.as_deref(), t.label())
            })
            .await;
        // Ranked and cut before the candidates are made (the rank is the
        // session's cwd's): thousands may match, the limit keeps a few.
        let kept = rank::ranked_by(kept, |(i, _)| rank::rank(sessions[*i].cwd.as_deref(), target), limit);
        Ok(kept.into_iter().map(|(i, t)| candidate_from_header(sessions[i], t, &self.config, target)).collect())
    }

    /// A filtered query answered from the index over titles, ids and cwds
    /// (`filtered.rs`), synced with `shared` first (the titles of the
    /// sessions that changed read and cached). `None` when a concurrent
    /// query synced it with another listing meanwhile: the caller scans.
    async fn indexed_candidates(
        &self,
        shared: &crate::host::SharedListing,
        filter: &rank::Filter,
        target: &Target,
        limit: usize,
    ) -> Option<Vec<Candidate>> {
        let hardening = self.config.hardening();
        let (serial, to_read) = {
            let titles = self.discovery.titles();
            let mut index = titles::lock(&self.discovery.filter);
            let to_read = index.sync(shared, hardening, |id, fp| DiscoveryCache::cached_title(&titles, id, fp));
            (index.serial(), to_read)
        };
        let (sessions, fps) = (shared.sessions(), shared.fingerprints());
        let jobs = to_read.into_iter().map(|position| {
            let fp = fps[position].clone();
            async move {
                let title = self.read_title_cached(&sessions[position].id, fp.clone()).await;
                filtered::Read { position, fp, title }
            }
        });
        let reads: Vec<filtered::Read> =
            futures::stream::iter(jobs).buffered(TITLE_CONCURRENCY).collect::<Vec<_>>().await;
        let mut index = titles::lock(&self.discovery.filter);
        if !index.apply(serial, reads, hardening) {
            return None;
        }
        let kept = index.query(filter.needle(), target, limit);
        Some(kept.into_iter().map(|(p, t)| candidate_from_header(&sessions[p], t, &self.config, target)).collect())
    }
}
