//! The title cache of a long-lived resolver: per session, the latest title
//! read and the [`Fingerprint`] the session had before it was read. A query
//! asks the source for every session's fingerprint first, then reads only
//! the titles whose fingerprint changed (or that have none).
//!
//! Why it is exact: an entry is stored under the fingerprint taken *before*
//! its read, so a session that changes while it is being read keeps an old
//! fingerprint in the cache and is read again by the next query; a session
//! without a fingerprint is never cached; a failed read is never cached;
//! entries of sessions no longer listed are dropped.
//!
//! With each title the cache keeps the label a filtered listing tests
//! (the hardened mode's label of it, made the first time it is tested):
//! a filtered `candidates` tests every session, and making 10,000 labels
//! (sanitized, credentials redacted) on every query cost more than the
//! rest of the query. A label is a function of the title, the session id
//! and the resolver's configuration alone, so it is as exact as the title.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use futures::stream::{self, StreamExt};

use super::listed::{Fingerprints, Listed};
use super::persist::DiscoveryCachePart;
use crate::harden::Hardening;
use crate::host::SessionHeader;
use crate::host::{no_fingerprints, Fingerprint};
use crate::resolver::{guarded, Resolver};

/// A cached title: the fingerprint its session had before it was read, and
/// the title (`None`: it has none).
pub(super) struct Held {
    fp: Fingerprint,
    title: Option<String>,
    /// The label made of it ([`Titled::label`]), once asked for.
    label: Label,
}

impl Held {
    fn new(fp: Fingerprint, title: Option<String>) -> Held {
        Held { fp, title, label: Label::default() }
    }
}

/// A label made once: `None` when it is the text it was made of unchanged
/// (most are: nothing is copied).
type Label = OnceLock<Option<Box<str>>>;

/// A session with its latest title, as a filter tests it.
pub(crate) struct Titled<'a> {
    session: &'a SessionHeader,
    title: Option<&'a str>,
    label: &'a Label,
    hardening: Hardening,
}

impl<'a> Titled<'a> {
    /// The session.
    pub(crate) fn session(&self) -> &'a SessionHeader {
        self.session
    }

    /// The label discovery gives it: its title (else its id) as the
    /// hardened mode writes labels ([`Hardening::label_ref`]), made once
    /// per cached title.
    pub(crate) fn label(&self) -> &'a str {
        let text = self.title.unwrap_or(&self.session.id);
        let made = self.label.get_or_init(|| {
            let label = self.hardening.label_ref(text, &self.session.id);
            (*label != *text).then(|| label.into())
        });
        made.as_deref().unwrap_or(text)
    }
}

/// What the caches keep per session, and how they prune.
#[derive(Default)]
pub(crate) struct DiscoveryCache {
    titles: Mutex<HashMap<String, Held>>,
    pub(crate) docs: crate::index::DocCache,
    /// The index behind filtered queries over a shared listing (`filtered.rs`).
    pub(super) filter: Mutex<super::filtered::FilterIndex>,
    /// The sessions the last discovery query listed.
    last_listed: Mutex<Option<std::sync::Arc<[SessionHeader]>>>,
    /// What the last search picked and made of its docs (`searched.rs`).
    search_memo: Mutex<Option<super::searched::SearchMemo>>,
    /// Whether titles were read into or dropped from the cache since it
    /// was created, loaded or saved.
    titles_changed: std::sync::atomic::AtomicBool,
    /// The same of the search index.
    index_changed: std::sync::atomic::AtomicBool,
    /// The indexing runs (`background.rs`).
    pub(crate) indexing: super::background::Indexing,
    /// What the searches touched so far (for tests: what a warm search
    /// costs).
    search_work: Mutex<crate::index::SearchWork>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl DiscoveryCache {
    /// Drops the entries of sessions not in `listed` (deleted sessions),
    /// when there can be any: a cache no larger than the listing holds only
    /// listed ids or is bounded by it, and entries are only ever looked up
    /// for listed ids under their current fingerprint. The listing is kept
    /// for [`prune_unlisted`](Self::prune_unlisted).
    pub(crate) fn retain_listed(&self, listed: &Listed) {
        *lock(&self.last_listed) = Some(listed.shared_sessions());
        let listed = listed.sessions();
        if lock(&self.titles).len() <= listed.len() && self.docs.len() <= listed.len() {
            return;
        }
        self.retain_ids(listed);
        self.mark_changed();
    }

    /// Drops the entries of every session the last listing did not hold
    /// (none before any listing): what is written to a cache file holds
    /// nothing of a deleted session, even when the cache did not outgrow
    /// the listing (a session deleted, another created).
    pub(crate) fn prune_unlisted(&self) {
        let Some(listed) = lock(&self.last_listed).clone() else { return };
        self.retain_ids(&listed);
    }

    /// Adds what one search touched to the count.
    pub(super) fn count_search_work(&self, work: crate::index::SearchWork) {
        let mut sum = lock(&self.search_work);
        sum.fields += work.fields;
        sum.sessions += work.sessions;
    }

    /// What the searches touched so far.
    pub(super) fn search_work(&self) -> crate::index::SearchWork {
        *lock(&self.search_work)
    }

    /// The last search's [`SearchMemo`](super::searched::SearchMemo).
    pub(super) fn search_memo(&self) -> std::sync::MutexGuard<'_, Option<super::searched::SearchMemo>> {
        lock(&self.search_memo)
    }

    fn retain_ids(&self, listed: &[SessionHeader]) {
        // What the last search made holds docs that may be dropped here.
        *self.search_memo() = None;
        let ids: std::collections::HashSet<&str> = listed.iter().map(|s| s.id.as_str()).collect();
        lock(&self.titles).retain(|id, _| ids.contains(id.as_str()));
        self.docs.retain(|id| ids.contains(id));
        self.indexing.retain(|id| ids.contains(id));
    }

    /// Appends every title entry (see `persist.rs`).
    pub(crate) fn encode_titles(&self, out: &mut Vec<u8>) {
        use crate::cache_file::{put, put_opt};
        let titles = lock(&self.titles);
        out.extend_from_slice(&(titles.len() as u64).to_le_bytes());
        for (id, held) in titles.iter() {
            put(out, id.as_bytes());
            put(out, held.fp.as_bytes());
            put_opt(out, held.title.as_deref().map(str::as_bytes));
        }
    }

    /// Reads what [`encode_titles`](Self::encode_titles) wrote, all or
    /// nothing: whether it was used.
    pub(crate) fn decode_titles(&self, input: &mut crate::cache_file::Input<'_>) -> bool {
        let titles = (|| {
            let n = input.u64()?;
            // An entry takes at least 17 bytes: room for what the input can hold.
            let mut titles = Vec::with_capacity(usize::try_from(n).unwrap_or(usize::MAX).min(input.0.len() / 17));
            for _ in 0..n {
                titles.push((input.string()?, input.fingerprint()?, input.opt_string()?));
            }
            Some(titles)
        })();
        let Some(titles) = titles.filter(|_| input.0.is_empty()) else { return false };
        let mut held = lock(&self.titles);
        held.reserve(titles.len());
        for (id, fp, title) in titles {
            held.insert(id, Held::new(fp, title));
        }
        true
    }

    /// Whether `part` changed since it was created, loaded or saved.
    pub(crate) fn changed(&self, part: DiscoveryCachePart) -> &std::sync::atomic::AtomicBool {
        match part {
            DiscoveryCachePart::Titles => &self.titles_changed,
            DiscoveryCachePart::Index => &self.index_changed,
        }
    }

    /// Forgets everything (the next query reads every session again).
    pub(crate) fn clear(&self) {
        lock(&self.titles).clear();
        lock(&self.filter).clear();
        *self.search_memo() = None;
        self.docs.clear();
        self.mark_changed();
    }

    /// Marks the search index changed.
    pub(crate) fn mark_index_changed(&self) {
        self.index_changed.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Marks both parts changed.
    pub(crate) fn mark_changed(&self) {
        self.titles_changed.store(true, std::sync::atomic::Ordering::Relaxed);
        self.index_changed.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub(super) fn store_title(&self, id: &str, fp: Option<Fingerprint>, title: Option<Option<String>>) {
        self.titles_changed.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut titles = lock(&self.titles);
        match (fp, title) {
            (Some(fp), Some(title)) => {
                titles.insert(id.to_owned(), Held::new(fp, title));
            }
            _ => {
                titles.remove(id);
            }
        }
    }

    /// The title of `id` cached under `fp` in `titles` (held locked).
    pub(super) fn cached_title(titles: &HashMap<String, Held>, id: &str, fp: &Fingerprint) -> Option<Option<String>> {
        titles.get(id).filter(|held| held.fp == *fp).map(|held| held.title.clone())
    }

    /// The title cache, locked.
    pub(super) fn titles(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        lock(&self.titles)
    }

    /// Whether the title of `id` is cached under `fp` (after a read: the
    /// read succeeded).
    pub(crate) fn holds_title(&self, id: &str, fp: &Fingerprint) -> bool {
        lock(&self.titles).get(id).is_some_and(|held| held.fp == *fp)
    }

    /// The title of `id` cached under `fp`, if any (`Some(None)`: cached
    /// as having none).
    pub(crate) fn title_under(&self, id: &str, fp: &Fingerprint) -> Option<Option<String>> {
        Self::cached_title(&lock(&self.titles), id, fp)
    }

    /// Number of cached titles (for tests and statistics).
    pub(crate) fn title_count(&self) -> usize {
        lock(&self.titles).len()
    }
}

impl Resolver {
    /// The latest title of one session, without listing: the cached one
    /// while the session's fingerprint holds, else read (and cached under
    /// the fingerprint taken before the read). A failed read is the
    /// session's `SESSION_REFERENCE_READ_FAILED` (no such session, or one
    /// that cannot be read).
    pub(crate) async fn title_of(&self, id: &str) -> crate::error::Result<Option<String>> {
        let ids = [id.to_owned()];
        let fp = match guarded(|| self.query.fingerprints(&ids)).await {
            Ok(Some(mut fps)) if fps.len() == 1 => fps.pop().flatten(),
            _ => None,
        };
        if let Some(fp) = &fp {
            if let Some(held) = lock(&self.discovery.titles).get(id) {
                if held.fp == *fp {
                    return Ok(held.title.clone());
                }
            }
        }
        let read = guarded(|| self.query.read_title(id)).await.map_err(|e| crate::error::Error::read_failed(id, e))?;
        let title = read.map(|t| self.config.hardening().title_to_keep(t));
        self.discovery.store_title(id, fp, Some(title.clone()));
        Ok(title)
    }

    /// The fingerprint of every session in `sessions` (same order), as the
    /// source gives them; all `None` when it gives none, fails, or answers
    /// with a list of the wrong length.
    pub(crate) async fn fingerprints(&self, sessions: &[&SessionHeader]) -> Vec<Option<Fingerprint>> {
        let ids: Vec<String> = sessions.iter().map(|s| s.id.clone()).collect();
        match guarded(|| self.query.fingerprints(&ids)).await {
            Ok(Some(fps)) if fps.len() == ids.len() => fps,
            _ => no_fingerprints(ids.len()),
        }
    }

    /// The latest title of `session_id`, as a page or a conversation labels
    /// it: the one cached under its current fingerprint, else read (`None`
    /// when it has none or cannot be read).
    pub(crate) async fn title_now(&self, session_id: &str) -> Option<String> {
        let ids = [session_id.to_owned()];
        if let Ok(Some(fps)) = guarded(|| self.query.fingerprints(&ids)).await {
            if let Some(title) =
                fps.first().and_then(Option::as_ref).and_then(|fp| self.discovery.title_under(session_id, fp))
            {
                return title;
            }
        }
        guarded(|| self.query.read_title(session_id)).await.ok().flatten()
    }

    /// The latest titles of `sessions` (same order), whose fingerprints
    /// are `fps`: cached ones whose fingerprint is unchanged (taken under
    /// one lock), the others read (at most `concurrency` at once) and
    /// cached under the fingerprint taken before the read. A failed read
    /// counts as "no title" and is not cached.
    pub(crate) async fn titles_under(
        &self,
        sessions: &[&SessionHeader],
        fps: &Fingerprints<'_>,
        concurrency: usize,
    ) -> Vec<Option<String>> {
        let mut titles: Vec<Option<String>> = vec![None; sessions.len()];
        for (i, title) in self.titles_where(sessions, fps, concurrency, |_| true).await {
            titles[i] = title;
        }
        titles
    }

    /// Reads the latest title of `id` and caches it under `fp` (taken
    /// before the read): kept and given as the hardened mode allows (a
    /// cached title is given the same); `None` when the read failed
    /// (nothing cached).
    pub(super) async fn read_title_cached(&self, id: &str, fp: Option<Fingerprint>) -> Option<Option<String>> {
        let read = guarded(|| self.query.read_title(id)).await.ok();
        let hardening = self.config.hardening();
        let read = read.map(|title| title.map(|t| hardening.title_to_keep(t)));
        self.discovery.store_title(id, fp, read.clone());
        read
    }

    /// The index and latest title of each of `sessions` for which `keep`
    /// (given the session with its title and label, [`Titled`]) holds, in
    /// order: cached titles whose fingerprint is unchanged are tested under
    /// one lock without being copied (a filtered listing tests every
    /// session, and keeps few), their labels made once and kept with them;
    /// the others read first (at most `concurrency` at once) and cached
    /// under the fingerprint taken before the read. A failed read counts as
    /// "no title" and is not cached.
    pub(crate) async fn titles_where(
        &self,
        sessions: &[&SessionHeader],
        fps: &Fingerprints<'_>,
        concurrency: usize,
        keep: impl Fn(&Titled<'_>) -> bool,
    ) -> Vec<(usize, Option<String>)> {
        let cache = &self.discovery;
        let hardening = self.config.hardening();
        let mut kept: Vec<(usize, Option<String>)> = Vec::new();
        let mut missing: Vec<usize> = Vec::new();
        {
            let cached = lock(&cache.titles);
            for (i, s) in sessions.iter().enumerate() {
                match cached.get(&s.id) {
                    Some(held) if Some(&held.fp) == fps.get(i) => {
                        if keep(&Titled { session: s, title: held.title.as_deref(), label: &held.label, hardening }) {
                            kept.push((i, held.title.clone()));
                        }
                    }
                    _ => missing.push(i),
                }
            }
        }
        if missing.is_empty() {
            return kept;
        }
        let jobs: Vec<_> = missing
            .into_iter()
            .map(|i| {
                let id = sessions[i].id.clone();
                let fp = fps.get(i).cloned();
                async move { (i, self.read_title_cached(&id, fp).await.flatten()) }
            })
            .collect();
        let read: Vec<(usize, Option<String>)> = stream::iter(jobs).buffered(concurrency.max(1)).collect().await;
        // (Labels of titles just read are made here; the next query makes
        // and keeps them with the cached titles.)
        kept.extend(read.into_iter().filter(|(i, title)| {
            keep(&Titled { session: sessions[*i], title: title.as_deref(), label: &Label::new(), hardening })
        }));
        kept.sort_unstable_by_key(|(i, _)| *i);
        kept
    }
}
