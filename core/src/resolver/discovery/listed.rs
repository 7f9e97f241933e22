//! What one discovery query lists: the source's sessions and, when the
//! source gives them with the listing ([`SessionQuery::shared_listing`](crate::SessionQuery::shared_listing)),
//! their fingerprints. A source that keeps its listing shares it, so a
//! query with nothing changed copies no header; any other source is listed
//! and fingerprinted per query (fingerprints asked only for the sessions
//! a query needs).

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::host::Fingerprint;
use crate::host::{SessionHeader, SharedListing};
use crate::resolver::{guarded, Resolver};

/// The sessions a discovery query works on.
pub(crate) enum Listed {
    /// Listed by `list_sessions`, fingerprints to be asked for.
    Owned(Arc<[SessionHeader]>),
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

    /// Every listed session, shared (nothing copied).
    pub(crate) fn shared_sessions(&self) -> Arc<[SessionHeader]> {
        match self {
            Listed::Owned(s) => Arc::clone(s),
            Listed::Shared(l) => l.shared_sessions(),
        }
    }

    /// The positions of the sessions for which `keep` holds, in order.
    pub(crate) fn positions(&self, keep: impl Fn(&SessionHeader) -> bool) -> Vec<usize> {
        // Sized once: a growing list of 10,000 would pass glibc's mmap
        // threshold and fault in fresh pages on every query.
        let mut at = Vec::with_capacity(self.sessions().len());
        at.extend(self.sessions().iter().enumerate().filter(|(_, s)| keep(s)).map(|(i, _)| i));
        at
    }

    /// The sessions at `at`.
    pub(crate) fn at<'a>(&'a self, at: &[usize]) -> Vec<&'a SessionHeader> {
        let all = self.sessions();
        at.iter().map(|&i| &all[i]).collect()
    }

    /// The fingerprints of the sessions at `at` (same order): the listing's
    /// when it came with them (borrowed, nothing copied), else asked of the
    /// source for these sessions.
    pub(crate) async fn fingerprints_at<'a>(&'a self, resolver: &Resolver, at: &'a [usize]) -> Fingerprints<'a> {
        match self {
            Listed::Shared(l) => Fingerprints::Shared { all: l.fingerprints(), at },
            Listed::Owned(_) => Fingerprints::Owned(resolver.fingerprints(&self.at(at)).await),
        }
    }
}

/// The fingerprints of the sessions a query works on, by their position
/// among them.
pub(crate) enum Fingerprints<'a> {
    /// A shared listing's, for the sessions at `at` in it.
    Shared { all: &'a [Option<Fingerprint>], at: &'a [usize] },
    /// As the source answered.
    Owned(Vec<Option<Fingerprint>>),
    /// Those of another list's sessions at `at`.
    Of(&'a Fingerprints<'a>, &'a [usize]),
}

impl Fingerprints<'_> {
    /// The fingerprint of the `i`th session, if it has one.
    pub(crate) fn get(&self, i: usize) -> Option<&Fingerprint> {
        match self {
            Fingerprints::Shared { all, at } => at.get(i).and_then(|&j| all.get(j)).and_then(Option::as_ref),
            Fingerprints::Owned(fps) => fps.get(i).and_then(Option::as_ref),
            Fingerprints::Of(of, at) => at.get(i).and_then(|&j| of.get(j)),
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
        Ok(Listed::Owned(sessions.into()))
    }
}
