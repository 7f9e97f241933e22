//! One view over several session sources: their listings merged (newest
//! `createdAt` first), reads routed by session id, and every source's
//! outcome reported. A source that fails to list is reported, never fatal
//! to the others.
//!
//! Ids stay exactly as each source gives them. Sources of other agents give
//! ids with a prefix of their own (`claude-code:<uuid>`, `codex:<uuid>`),
//! which is how reads find them; DSH ids have none and go to the source
//! registered without a prefix, so every existing DSH mention keeps
//! resolving, and a view of one source lists exactly what that source lists.
//!
//! Sources may share a prefix: one kind read at several roots (an agent
//! that keeps its sessions in two layouts). Their sessions are listed
//! together; a read of one goes to the source that listed it, and an id
//! that two of them list is listed once, from the first, the other's
//! copy named in that source's note.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::error::HostError;
use crate::host::Fingerprint;
use crate::host::{QueryFuture, SessionHeader, SessionQuery, SharedListing, SurfaceAnswer, SurfaceData, SurfaceRead};

struct Entry {
    name: String,
    prefix: String,
    query: Arc<dyn SessionQuery>,
    notes: SourceNotes,
    /// Whether another source has the same prefix (so reads are routed by
    /// which of them listed the id).
    shares: bool,
}

/// How one source fared in the last listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceStatus {
    /// The source's name (a [`SourceKind`](super::SourceKind)'s name, or the host's own).
    pub name: String,
    /// The number of sessions it listed, or why it could not list.
    pub outcome: Result<usize, String>,
    /// What else there is to say: how its root was taken; when it listed
    /// no session, why (what its root was expected to hold and what it
    /// holds); and the files its listing skipped, each with why (the first
    /// three, then how many more).
    pub note: Option<String>,
    /// The sessions of this source whose title or text could not be read
    /// since the listing (`(session id, why)`, each once, in the order
    /// they failed): discovery lists them by id and search cannot look
    /// inside them.
    pub unreadable: Vec<(String, String)>,
}

/// What a view says of a source beside its outcome (see
/// [`SourceStatus::note`]).
#[derive(Clone, Default)]
pub struct SourceNotes {
    /// Said whatever the outcome (how the source's root was taken).
    pub opened: Option<String>,
    /// Asked when the source lists no session: why.
    pub if_empty: Option<Arc<dyn Fn() -> String + Send + Sync>>,
}

impl std::fmt::Debug for SourceNotes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceNotes").field("opened", &self.opened).finish_non_exhaustive()
    }
}

impl SourceNotes {
    /// The note of a listing of `listed` sessions (`None`: one that
    /// failed) that skipped `skipped`.
    fn note(&self, listed: Option<usize>, skipped: &[(PathBuf, String)]) -> Option<String> {
        let empty = match (listed, &self.if_empty) {
            (Some(0), Some(why)) => Some(why()),
            _ => None,
        };
        let parts: Vec<String> = [self.opened.clone(), empty, skipped_note(skipped)].into_iter().flatten().collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// How many skipped entries a note names (the rest are counted).
const SKIPPED_NAMED: usize = 3;

/// What a note says of the entries a listing skipped: the first
/// [`SKIPPED_NAMED`], each with why, then how many more (`None`: none).
fn skipped_note(skipped: &[(PathBuf, String)]) -> Option<String> {
    let (first, rest) = skipped.split_at(skipped.len().min(SKIPPED_NAMED));
    let named: Vec<String> = first.iter().map(|(path, why)| format!("{} ({why})", path.display())).collect();
    let mut note = format!("skipped {}", named.join(", "));
    match rest.len() {
        0 if named.is_empty() => return None,
        0 => {}
        n => note.push_str(&format!(" and {n} more")),
    }
    Some(note)
}

/// A [`SessionQuery`] over several sources.
#[derive(Default)]
pub struct MultiQuery {
    entries: Vec<Entry>,
    report: Mutex<Vec<SourceStatus>>,
    /// The last merged shared listing and what it was merged from.
    merged: Mutex<Option<Merged>>,
    /// Reads that failed since the last listing: `(source, id, why)`.
    failed: Mutex<Vec<(usize, String, String)>>,
    /// For the sessions of sources that share a prefix: the source that
    /// listed each id (first wins), as the last listing found them.
    owners: Mutex<HashMap<String, usize>>,
}

impl std::fmt::Debug for MultiQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<(&str, &str)> = self.entries.iter().map(|e| (e.name.as_str(), e.prefix.as_str())).collect();
        f.debug_struct("MultiQuery").field("sources", &names).finish_non_exhaustive()
    }
}

impl MultiQuery {
    /// A view over no source yet.
    pub fn new() -> Self {
        MultiQuery::default()
    }

    /// Adds a source. `prefix` is what the ids of its sessions start with
    /// (`"claude-code:"`), or `""` for the source that takes every other id
    /// (DSH). A read goes to the first source whose non-empty prefix starts
    /// the id, else to the first source without a prefix; among sources of
    /// one prefix, to the one that listed the id.
    pub fn with_source(self, name: impl Into<String>, prefix: impl Into<String>, query: Arc<dyn SessionQuery>) -> Self {
        self.with_noted_source(name, prefix, query, SourceNotes::default())
    }

    /// [`with_source`](Self::with_source), with what its
    /// [`SourceStatus::note`] says.
    pub fn with_noted_source(
        mut self,
        name: impl Into<String>,
        prefix: impl Into<String>,
        query: Arc<dyn SessionQuery>,
        notes: SourceNotes,
    ) -> Self {
        let prefix = prefix.into();
        let shares = self.entries.iter().any(|e| e.prefix == prefix);
        for entry in self.entries.iter_mut().filter(|e| e.prefix == prefix) {
            entry.shares = true;
        }
        self.entries.push(Entry { name: name.into(), prefix, query, notes, shares });
        self
    }

    /// The names of the sources, in order.
    pub fn source_names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// How each source fared in the most recent `list_sessions` (empty
    /// before the first).
    pub fn last_report(&self) -> Vec<SourceStatus> {
        let mut report = self.report.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // The report has one status per source, in order.
        for (source, id, why) in self.failed.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            if let Some(status) = report.get_mut(*source) {
                status.unreadable.push((id.clone(), why.clone()));
            }
        }
        report
    }

    /// A new listing: the reads that failed before it are forgotten.
    fn listed(&self, report: Vec<SourceStatus>) {
        *self.report.lock().unwrap_or_else(|e| e.into_inner()) = report;
        self.failed.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// `read` of the source `session_id` routes to, its failure kept for
    /// the report.
    fn read_recorded<'a, T: Send + 'a>(
        &'a self,
        session_id: &'a str,
        read: impl FnOnce(&'a dyn SessionQuery) -> QueryFuture<'a, T> + Send + 'a,
    ) -> QueryFuture<'a, T> {
        Box::pin(async move {
            let entry = self.owner(session_id).await?;
            let answer = read(entry.query.as_ref()).await;
            if let Err(e) = &answer {
                self.record(entry, session_id, e);
            }
            answer
        })
    }

    /// Keeps a failed read of `id` from `entry` for the report (once per id).
    fn record(&self, entry: &Entry, id: &str, error: &HostError) {
        let source = self.entries.iter().position(|e| std::ptr::eq(e, entry)).unwrap_or(0);
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if !failed.iter().any(|(_, f, _)| f == id) {
            failed.push((source, id.to_owned(), error.message().to_owned()));
        }
    }

    /// The name of the source that holds session ids like `id` (the source
    /// whose prefix it has, else the one without a prefix), as every read
    /// of `id` is routed.
    pub fn source_of(&self, id: &str) -> Option<&str> {
        self.route(id).ok().map(|e| e.name.as_str())
    }

    fn route(&self, id: &str) -> Result<&Entry, HostError> {
        let first = self
            .entries
            .iter()
            .find(|e| !e.prefix.is_empty() && id.starts_with(&e.prefix))
            .or_else(|| self.entries.iter().find(|e| e.prefix.is_empty()))
            .ok_or_else(|| HostError::new(format!("no session {id:?} in these sources")))?;
        if !first.shares {
            return Ok(first);
        }
        let owner = self.owners.lock().unwrap_or_else(|e| e.into_inner()).get(id).copied();
        Ok(owner.map_or(first, |at| &self.entries[at]))
    }

    /// [`route`](Self::route), and for an id of sources that share a prefix
    /// that no listing has placed yet, the first of them that lists it
    /// (each listed until one does).
    async fn owner(&self, id: &str) -> Result<&Entry, HostError> {
        let first = self.route(id)?;
        if !first.shares || self.owners.lock().unwrap_or_else(|e| e.into_inner()).contains_key(id) {
            return Ok(first);
        }
        for (at, entry) in self.entries.iter().enumerate().filter(|(_, e)| e.prefix == first.prefix) {
            if entry.query.list_sessions().await.is_ok_and(|l| l.iter().any(|h| h.id == id)) {
                self.owners.lock().unwrap_or_else(|e| e.into_inner()).insert(id.to_owned(), at);
                return Ok(entry);
            }
        }
        Ok(first)
    }

    /// Of the listings (per source; `None`: it failed), the positions of
    /// sessions an earlier source of the same prefix listed too, per
    /// source: they are left out (their id reads from that one). Keeps
    /// which source listed each id of sources that share a prefix, for
    /// [`route`](Self::route).
    fn claim(&self, lists: &[Option<&[SessionHeader]>]) -> Vec<Vec<usize>> {
        let mut dropped = vec![Vec::new(); lists.len()];
        if !self.entries.iter().any(|e| e.shares) {
            return dropped;
        }
        let mut owners: HashMap<String, usize> = HashMap::new();
        for (at, (entry, list)) in self.entries.iter().zip(lists).enumerate() {
            let (true, Some(list)) = (entry.shares, list) else { continue };
            for (i, header) in list.iter().enumerate() {
                match owners.entry(header.id.clone()) {
                    std::collections::hash_map::Entry::Occupied(o) if *o.get() != at => dropped[at].push(i),
                    std::collections::hash_map::Entry::Occupied(_) => {}
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(at);
                    }
                }
            }
        }
        *self.owners.lock().unwrap_or_else(|e| e.into_inner()) = owners;
        dropped
    }
}

/// Says in `report` which sessions [`MultiQuery::claim`] left out of each
/// source (`dropped`, positions in `lists`), and counts them out of its
/// number listed.
fn note_dropped(report: &mut [SourceStatus], lists: &[Option<&[SessionHeader]>], dropped: &[Vec<usize>]) {
    for ((status, list), dropped) in report.iter_mut().zip(lists).zip(dropped) {
        let (Some(list), false) = (list, dropped.is_empty()) else { continue };
        if let Ok(n) = &mut status.outcome {
            *n -= dropped.len();
        }
        let ids: Vec<&str> = dropped.iter().take(SKIPPED_NAMED).map(|&i| list[i].id.as_str()).collect();
        let more = match dropped.len().saturating_sub(SKIPPED_NAMED) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let said = format!("listed by an earlier {} source too, and read there: {}{more}", status.name, ids.join(", "));
        status.note = Some(match status.note.take() {
            Some(note) => format!("{note}; {said}"),
            None => said,
        });
    }
}

/// Whether position `i` of a listing is among `dropped` (sorted).
fn is_kept(dropped: &[usize], i: usize) -> bool {
    dropped.binary_search(&i).is_err()
}

/// A merged shared listing and what it was merged from.
struct Merged {
    /// The serial of each source's listing (`None` for a source that
    /// failed to list).
    from: Vec<Option<u64>>,
    listing: SharedListing,
    /// For each of those listings, where each of its sessions is in the
    /// merged one.
    place: Vec<Vec<u32>>,
}

/// The place in a merged listing of a session left out of it (listed by an
/// earlier source of its prefix).
const LEFT_OUT: u32 = u32::MAX;

/// `createdAt` as a number to order by (newest first).
fn created(h: &SessionHeader) -> f64 {
    h.created_at.as_f64().unwrap_or(0.0)
}

/// The listings merged newest first (stable: equal times keep source
/// order, then each source's order), or why none could be made: the
/// per-source report, and an error when every source failed.
fn merge<T>(
    entries: &[Entry],
    lists: Vec<Result<T, HostError>>,
    len: impl Fn(&T) -> usize,
) -> (Vec<SourceStatus>, Result<Vec<Option<T>>, HostError>) {
    let mut report = Vec::with_capacity(lists.len());
    let mut failures = Vec::new();
    let mut kept = Vec::with_capacity(lists.len());
    for (entry, list) in entries.iter().zip(lists) {
        match list {
            Ok(list) => {
                let n = len(&list);
                let note = entry.notes.note(Some(n), &entry.query.skipped());
                report.push(SourceStatus { name: entry.name.clone(), outcome: Ok(n), note, unreadable: Vec::new() });
                kept.push(Some(list));
            }
            Err(e) => {
                failures.push(format!("{}: {}", entry.name, e.message()));
                let note = entry.notes.note(None, &[]);
                report.push(SourceStatus {
                    name: entry.name.clone(),
                    outcome: Err(e.message().to_owned()),
                    note,
                    unreadable: Vec::new(),
                });
                kept.push(None);
            }
        }
    }
    if kept.iter().all(Option::is_none) && !failures.is_empty() {
        return (report, Err(HostError::new(failures.join("; "))));
    }
    (report, Ok(kept))
}

/// The positions of `lists`' sessions merged newest first (stable, as
/// [`merge`] says): (list, position in it).
fn merged_order(lists: &[&[SessionHeader]]) -> Vec<(usize, usize)> {
    let mut all: Vec<(usize, usize)> =
        lists.iter().enumerate().flat_map(|(l, list)| (0..list.len()).map(move |i| (l, i))).collect();
    all.sort_by(|&(la, ia), &(lb, ib)| created(&lists[lb][ib]).total_cmp(&created(&lists[la][ia])));
    all
}

impl SessionQuery for MultiQuery {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        Box::pin(async move {
            let lists = futures::future::join_all(self.entries.iter().map(|e| e.query.list_sessions())).await;
            let (mut report, merged) = merge(&self.entries, lists, Vec::len);
            let dropped = match &merged {
                Ok(kept) => {
                    let lists: Vec<Option<&[SessionHeader]>> = kept.iter().map(|l| l.as_deref()).collect();
                    let dropped = self.claim(&lists);
                    note_dropped(&mut report, &lists, &dropped);
                    dropped
                }
                Err(_) => Vec::new(),
            };
            self.listed(report);
            let merged = merged?;
            let mut merged: Vec<Vec<SessionHeader>> = (merged.into_iter().zip(&dropped))
                .filter_map(|(list, dropped)| {
                    let mut list = list?;
                    if !dropped.is_empty() {
                        let mut at = 0;
                        list.retain(|_| {
                            at += 1;
                            is_kept(dropped, at - 1)
                        });
                    }
                    Some(list)
                })
                .collect();
            if merged.len() == 1 {
                return Ok(merged.pop().unwrap_or_default());
            }
            let views: Vec<&[SessionHeader]> = merged.iter().map(Vec::as_slice).collect();
            Ok(merged_order(&views).into_iter().map(|(l, i)| views[l][i].clone()).collect())
        })
    }

    /// The sources' shared listings merged as [`list_sessions`](Self::list_sessions)
    /// merges listings, when every source gives one (else `None`, and
    /// discovery lists and fingerprints as with any source). A session
    /// whose reads go to another source (an id with that source's prefix)
    /// gets no fingerprint, so it is read afresh. While no source's listing
    /// changed, the merged one is shared again.
    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        Box::pin(async move {
            let lists = futures::future::join_all(self.entries.iter().map(|e| e.query.shared_listing())).await;
            if lists.iter().any(|l| matches!(l, Ok(None))) {
                return Ok(None);
            }
            let lists: Vec<Result<SharedListing, HostError>> =
                lists.into_iter().map(|l| l.map(Option::unwrap_or_default)).collect();
            let (mut report, kept) = merge(&self.entries, lists, |l| l.sessions().len());
            let dropped = match &kept {
                Ok(kept) => {
                    let lists: Vec<Option<&[SessionHeader]>> =
                        kept.iter().map(|l| l.as_ref().map(SharedListing::sessions)).collect();
                    let dropped = self.claim(&lists);
                    note_dropped(&mut report, &lists, &dropped);
                    dropped
                }
                Err(_) => Vec::new(),
            };
            self.listed(report);
            let kept = kept?;
            let mut last = self.merged.lock().unwrap_or_else(|e| e.into_inner());
            let serials: Vec<Option<u64>> = kept.iter().map(|l| l.as_ref().map(SharedListing::serial)).collect();
            if let Some(merged) = last.as_ref().filter(|m| m.from == serials) {
                return Ok(Some(merged.listing.clone()));
            }
            let sources: Vec<(usize, &SharedListing)> =
                kept.iter().enumerate().filter_map(|(e, l)| l.as_ref().map(|l| (e, l))).collect();
            let routed_here =
                |l: usize, id: &str| self.route(id).is_ok_and(|entry| std::ptr::eq(entry, &self.entries[sources[l].0]));
            // Only fingerprints changed in the sources that changed: the
            // merged listing changes those sessions' only, in place (made
            // afresh while sessions are left out as listed twice).
            let whole = dropped.iter().all(Vec::is_empty);
            if let Some(merged) = last.take_if(|m| whole && m.from.len() == serials.len()) {
                let mut changed: Vec<(usize, Option<Fingerprint>)> = Vec::new();
                let same = merged.from.iter().zip(&kept).zip(&merged.place).enumerate().all(
                    |(e, ((from, now), place))| match (from, now) {
                        (None, None) => true,
                        (Some(from), Some(now)) if *from == now.serial() => true,
                        (Some(from), Some(now)) => now.changed_since(*from).is_some_and(|at| {
                            let l = sources.iter().position(|(s, _)| *s == e).unwrap_or(0);
                            changed.extend(at.iter().filter(|&&i| place[i] != LEFT_OUT).map(|&i| {
                                let fp = now.fingerprints()[i].clone();
                                (place[i] as usize, fp.filter(|_| routed_here(l, &now.sessions()[i].id)))
                            }));
                            true
                        }),
                        _ => false,
                    },
                );
                if same {
                    changed.sort_unstable_by_key(|(at, _)| *at);
                    let (at, fps) = changed.into_iter().unzip();
                    if let Some(listing) = merged.listing.with_changed(at, fps) {
                        *last = Some(Merged { from: serials, listing: listing.clone(), place: merged.place });
                        return Ok(Some(listing));
                    }
                }
            }
            let views: Vec<&[SessionHeader]> = sources.iter().map(|(_, l)| l.sessions()).collect();
            let mut order = merged_order(&views);
            if !whole {
                order.retain(|&(l, i)| is_kept(&dropped[sources[l].0], i));
            }
            let headers: Arc<[SessionHeader]> = order.iter().map(|&(l, i)| views[l][i].clone()).collect();
            let fps: Arc<[Option<Fingerprint>]> = order
                .iter()
                .map(|&(l, i)| {
                    let fp = &sources[l].1.fingerprints()[i];
                    fp.clone().filter(|_| routed_here(l, &views[l][i].id))
                })
                .collect();
            let mut place: Vec<Vec<u32>> =
                kept.iter().map(|l| vec![LEFT_OUT; l.as_ref().map_or(0, |l| l.sessions().len())]).collect();
            for (at, &(l, i)) in order.iter().enumerate() {
                place[sources[l].0][i] = at as u32;
            }
            let merged = SharedListing::new(headers, fps).expect("one fingerprint per session");
            *last = Some(Merged { from: serials, listing: merged.clone(), place });
            Ok(Some(merged))
        })
    }

    // Routed inside the future, so that creating it needs no runtime.
    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        self.read_recorded(session_id, |query| query.read_title(session_id))
    }

    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        self.read_recorded(session_id, |query| query.read_surface(session_id))
    }

    fn read_surface_as<'a>(&'a self, session_id: &'a str, read: SurfaceRead) -> QueryFuture<'a, SurfaceAnswer> {
        self.read_recorded(session_id, move |query| query.read_surface_as(session_id, read))
    }

    /// Each id's fingerprint from the source its reads go to, asked once per
    /// source for all of its ids; a source that has none (or fails to
    /// answer) leaves its sessions without one, so they are read afresh.
    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        Box::pin(async move {
            let mut by_source: Vec<(Vec<usize>, Vec<String>)> = vec![(Vec::new(), Vec::new()); self.entries.len()];
            for (at, id) in session_ids.iter().enumerate() {
                let Ok(entry) = self.route(id) else { continue };
                let source = self.entries.iter().position(|e| std::ptr::eq(e, entry)).unwrap_or(0);
                by_source[source].0.push(at);
                by_source[source].1.push(id.clone());
            }
            let asked = by_source.iter().zip(&self.entries).map(|((_, ids), e)| async move {
                if ids.is_empty() {
                    return None;
                }
                e.query.fingerprints(ids).await.ok().flatten()
            });
            let answers = futures::future::join_all(asked).await;
            let mut out: Vec<Option<Fingerprint>> = crate::host::no_fingerprints(session_ids.len());
            for ((positions, _), answer) in by_source.iter().zip(answers) {
                let Some(prints) = answer else { continue };
                for (&at, print) in positions.iter().zip(prints) {
                    out[at] = print;
                }
            }
            Ok(Some(out))
        })
    }
}
