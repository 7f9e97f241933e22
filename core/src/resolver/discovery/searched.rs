//! What the resolver remembers of the last search ([`SearchMemo`]): the
//! sessions it picked from a shared listing and the index's
//! [`SearchSet`] made of them, kept while the source shares the same
//! listing, the search picks the same sessions and the index has not
//! changed since (its generation).

use std::sync::Arc;

use super::listed::Listed;
use crate::host::{SearchScope, SessionHeader, SharedListing, Target};
use crate::index::{Headers, SearchSet};

/// The sessions a search looks at: their positions in the listing, which
/// is shared (with the blocking pool too), so no header is copied.
#[derive(Clone)]
pub(super) struct Picked {
    pub(super) all: Arc<[SessionHeader]>,
    pub(super) at: Arc<[usize]>,
}

impl Picked {
    /// The picked sessions, in order.
    pub(super) fn refs(&self) -> Vec<&SessionHeader> {
        self.at.iter().map(|&i| &self.all[i]).collect()
    }

    /// The picked sessions, in order, without a list of them made.
    pub(super) fn headers(&self) -> Headers<'_> {
        Headers::at(&self.all, &self.at)
    }
}

/// The last search's picked sessions and, when every doc of theirs was
/// kept by the index, its [`SearchSet`] with the index's generation then.
pub(crate) struct SearchMemo {
    listing: SharedListing,
    target: Target,
    scope: SearchScope,
    picked: Picked,
    set: Option<(u64, Arc<SearchSet>)>,
}

impl SearchMemo {
    /// The sessions the last search (`memo`) picked, when this one is over
    /// the same shared listing with the same target and scope.
    pub(super) fn picked(
        memo: &Option<SearchMemo>,
        listed: &Listed,
        target: &Target,
        scope: SearchScope,
    ) -> Option<Picked> {
        let Listed::Shared(listing) = listed else { return None };
        let m = memo.as_ref()?;
        (m.listing.ptr_eq(listing) && m.target == *target && m.scope == scope).then(|| m.picked.clone())
    }

    /// The set the last search (`memo`) made of `picked` (the same
    /// positions), if the index is still at `generation`.
    pub(super) fn set(memo: &Option<SearchMemo>, picked: &Picked, generation: u64) -> Option<Arc<SearchSet>> {
        let m = memo.as_ref().filter(|m| Arc::ptr_eq(&m.picked.at, &picked.at))?;
        m.set.as_ref().filter(|(g, _)| *g == generation).map(|(_, set)| Arc::clone(set))
    }

    /// What to keep of a search over a shared listing (`None` over any
    /// other): what it picked and, if given, the set it made under the
    /// index's generation `generation`.
    pub(super) fn new(
        listed: &Listed,
        target: &Target,
        scope: SearchScope,
        picked: &Picked,
        set: Option<(u64, Arc<SearchSet>)>,
    ) -> Option<SearchMemo> {
        let Listed::Shared(listing) = listed else { return None };
        Some(SearchMemo { listing: listing.clone(), target: target.clone(), scope, picked: picked.clone(), set })
    }
}
