//! What one discovery query lists: the source's sessions and, when the
//! source gives them with the listing ([`SessionQuery::shared_listing`](crate::SessionQuery::shared_listing)),
//! their fingerprints. A source that keeps its listing shares it, so a
//! query with nothing changed copies no header; any other source is listed
//! and fingerprinted as before (fingerprints asked only for the sessions a
//! query needs).

use super::fingerprint::Fingerprint;
use crate::error::{Error, Result};
use crate::host::{SessionHeader, SharedListing};
use crate::resolver::{guarded, Resolver};

/// The sessions a discovery query works on.
pub(crate) enum Listed {
    /// Listed by `list_sessions`, fingerprints to be asked for.
    Owned(Vec<SessionHeader>),
    /// Shared by the source with every fingerprint.
    Shared(SharedListing),
}

impl Listed {
    /// Every listed session, in the source's order.
    pub(crate) fn sessions(&self) -> &[SessionHeader] {
        match self {
            Listed::Owned(s) => s,
            Listed::Shared(l) => l.sessions(),
        }
    }

    /// The positions of the sessions for which `keep` holds, in order.
    pub(crate) fn positions(&self, keep: impl Fn(&SessionHeader) -> bool) -> Vec<usize> {
        self.sessions().iter().enumerate().filter(|(_, s)| keep(s)).map(|(i, _)| i).collect()
    }

    /// The sessions at `at`.
    pub(crate) fn at<'a>(&'a self, at: &[usize]) -> Vec<&'a SessionHeader> {
        let all = self.sessions();
        at.iter().map(|&i| &all[i]).collect()
    }

    /// The fingerprints of the sessions at `at` (same order): the listing's
    /// when it came with them, else asked of the source for these sessions.
    pub(crate) async fn fingerprints_at(&self, resolver: &Resolver, at: &[usize]) -> Vec<Option<Fingerprint>> {
        match self {
            Listed::Shared(l) => at.iter().map(|&i| l.fingerprints()[i].clone()).collect(),
            Listed::Owned(_) => resolver.fingerprints(&self.at(at)).await,
        }
    }
}

impl Resolver {
    /// Lists the sessions for discovery: the source's shared listing when
    /// it gives one, else `list_sessions`. Either failing is the listing's
    /// failure.
    pub(crate) async fn listed(&self) -> Result<Listed> {
        if let Some(shared) = guarded(|| self.query.shared_listing()).await.map_err(Error::list_failed)? {
            return Ok(Listed::Shared(shared));
        }
        let sessions = guarded(|| self.query.list_sessions()).await.map_err(Error::list_failed)?;
        Ok(Listed::Owned(sessions))
    }
}
