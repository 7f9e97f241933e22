//! The index behind a filtered `candidates` query of a long-lived resolver
//! over a source that shares its listing: per listed session its latest
//! title, the fingerprint it was read under, and its id, cwd and label
//! lower-cased as the filter compares them; and the sessions holding each
//! pair and each triple of bytes of those three fields.
//!
//! - A query finds the sessions holding every pair or triple of the
//!   lower-cased search text (a one-byte text: all of them) and tests only
//!   those, by rank and then listing order, stopping at the limit: the
//!   same test, order and cut as a scan of every session (docs/contract.md §7).
//! - A listing made from the last one by changing some fingerprints
//!   ([`SharedListing::changed_since`]) updates those sessions only: a
//!   grown log costs its own title read and the pairs and triples its
//!   label gained or lost. The same sessions under other fingerprints are
//!   compared one by one; another list of sessions is matched to the
//!   entries by id (sessions created or deleted).
//! - An entry is exact as the title cache is (`titles.rs`): stored under
//!   the fingerprint taken before the read; a session without a
//!   fingerprint, or whose read failed, is unsettled and checked again by
//!   every query.

use std::collections::HashMap;
use std::sync::Arc;

use crate::harden::Hardening;
use crate::host::{rank, Fingerprint, SessionHeader, SharedListing, Target};

/// No position: an entry whose session is not in the synced listing.
const NONE: u32 = u32::MAX;

/// One session's entry.
struct Entry {
    /// The lower-cased id, cwd and label, one after the other.
    hay: Box<str>,
    /// Where the cwd and the label begin in `hay`.
    cuts: [u32; 2],
    /// The latest title read (kept as the hardened mode allows).
    title: Option<String>,
    /// The fingerprint it was read under.
    fp: Option<Fingerprint>,
    /// Whether `title` holds under `fp` (else checked by every query).
    settled: bool,
}

impl Entry {
    fn fields(&self) -> [&str; 3] {
        let [a, b] = self.cuts.map(|c| c as usize);
        [&self.hay[..a], &self.hay[a..b], &self.hay[b..]]
    }

    /// The pairs and triples of bytes of each field (none across two),
    /// sorted, each once.
    fn grams(&self) -> Vec<u32> {
        let mut grams = Vec::with_capacity(2 * self.hay.len());
        for field in self.fields() {
            grams.extend(field.as_bytes().windows(2).map(pair));
            grams.extend(field.as_bytes().windows(3).map(triple));
        }
        grams.sort_unstable();
        grams.dedup();
        grams
    }
}

fn pair(b: &[u8]) -> u32 {
    2 << 24 | u32::from(b[0]) << 8 | u32::from(b[1])
}

fn triple(b: &[u8]) -> u32 {
    3 << 24 | u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2])
}

/// The lower-cased id, cwd and label of a session with `title` (the label
/// is the id when it has none), as [`rank::Filter`] compares them.
fn hay(s: &SessionHeader, title: Option<&str>, hardening: Hardening) -> (Box<str>, [u32; 2]) {
    let label = hardening.label_ref(title.unwrap_or(&s.id), &s.id);
    let mut hay = s.id.to_lowercase();
    let a = hay.len();
    hay.push_str(&s.cwd.as_deref().unwrap_or_default().to_lowercase());
    let b = hay.len();
    hay.push_str(&label.to_lowercase());
    (hay.into_boxed_str(), [a, b].map(|c| u32::try_from(c).unwrap_or(u32::MAX)))
}

/// The work the index did (for tests: what one change costs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IndexWork {
    /// Sessions whose fingerprint was compared with their entry's.
    pub checked: u64,
    /// Entries made or remade (their pairs and triples updated).
    pub remade: u64,
    /// Listings matched to the entries by id (every session's id looked up).
    pub matched: u64,
}

/// A title read for the session at `position` of the listing `serial`,
/// under `fp`: `None` when the read failed.
pub(crate) struct Read {
    pub position: usize,
    pub fp: Option<Fingerprint>,
    pub title: Option<Option<String>>,
}

/// See the module docs.
#[derive(Default)]
pub(crate) struct FilterIndex {
    /// The listing synced to (`serial`, its sessions).
    serial: u64,
    sessions: Option<Arc<[SessionHeader]>>,
    entries: Vec<Option<Entry>>,
    /// The entry of each id.
    entry_of: HashMap<Box<str>, u32>,
    /// Entries no longer used, for new sessions.
    free: Vec<u32>,
    /// The entry of each position of the synced listing.
    at: Vec<u32>,
    /// The position of each entry ([`NONE`] when not listed).
    position: Vec<u32>,
    /// The entries holding each pair or triple, in entry order.
    grams: HashMap<u32, Vec<u32>>,
    /// Entries not settled.
    unsettled: Vec<u32>,
    pub(crate) work: IndexWork,
}

impl FilterIndex {
    /// Forgets everything.
    pub(crate) fn clear(&mut self) {
        let work = self.work;
        *self = FilterIndex { work, ..FilterIndex::default() };
    }

    /// The serial of the listing synced to.
    pub(crate) fn serial(&self) -> u64 {
        self.serial
    }

    /// Syncs with `listing`: entries for new sessions, none for sessions no
    /// longer listed, and every session whose fingerprint may differ from
    /// its entry's checked; `cached` gives a title cached under a
    /// fingerprint. Returns the positions whose title must be read (their
    /// entries unsettled until [`apply`](Self::apply)).
    pub(crate) fn sync(
        &mut self,
        listing: &SharedListing,
        hardening: Hardening,
        cached: impl Fn(&str, &Fingerprint) -> Option<Option<String>>,
    ) -> Vec<usize> {
        let sessions = listing.sessions();
        let check: Vec<usize> = if listing.serial() == self.serial && self.sessions.is_some() {
            Vec::new()
        } else if let Some(changed) = listing.changed_since(self.serial).filter(|_| self.sessions.is_some()) {
            changed.to_vec()
        } else if self.sessions.as_ref().is_some_and(|s| Arc::ptr_eq(s, &listing.shared_sessions())) {
            (0..sessions.len()).collect()
        } else {
            self.match_ids(listing.shared_sessions(), hardening);
            (0..sessions.len()).collect()
        };
        self.serial = listing.serial();
        let mut check = check;
        // Entries settled since they were unsettled (their reads applied)
        // are not checked again.
        let unsettled = std::mem::take(&mut self.unsettled);
        let still = |e: &u32| self.entries[*e as usize].as_ref().is_some_and(|entry| !entry.settled);
        check.extend(
            unsettled
                .iter()
                .filter(|e| still(e))
                .map(|&e| self.position[e as usize])
                .filter(|&p| p != NONE)
                .map(|p| p as usize),
        );
        check.sort_unstable();
        check.dedup();
        let fps = listing.fingerprints();
        let mut read = Vec::new();
        for p in check {
            self.work.checked += 1;
            let e = self.at[p];
            let fp = fps[p].as_ref();
            let entry = self.entries[e as usize].as_ref().expect("a listed session's entry");
            if entry.settled && fp.is_some() && entry.fp.as_ref() == fp {
                continue;
            }
            match fp.and_then(|fp| cached(&sessions[p].id, fp).map(|title| (fp, title))) {
                Some((fp, title)) => self.set(e, &sessions[p], Some(fp.clone()), title, true, hardening),
                None => {
                    read.push(p);
                    self.unsettle(e);
                }
            }
        }
        read
    }

    /// Stores the titles read for positions of the listing `serial`: false
    /// (nothing stored) when the index was synced to another listing since.
    pub(crate) fn apply(&mut self, serial: u64, reads: Vec<Read>, hardening: Hardening) -> bool {
        if serial != self.serial {
            return false;
        }
        let Some(sessions) = self.sessions.clone() else { return false };
        for read in reads {
            let e = self.at[read.position];
            let settled = read.fp.is_some() && read.title.is_some();
            self.set(e, &sessions[read.position], read.fp, read.title.flatten(), settled, hardening);
            if !settled {
                self.unsettle(e);
            }
        }
        true
    }

    /// The positions (with their titles) of the sessions other than the
    /// target whose lower-cased id, cwd or label contains `needle` (lower-
    /// cased, not empty), by rank then position, at most `limit`.
    pub(crate) fn query(&self, needle: &str, target: &Target, limit: usize) -> Vec<(usize, Option<String>)> {
        let Some(sessions) = self.sessions.as_deref() else { return Vec::new() };
        let n = sessions.len();
        let bytes = needle.as_bytes();
        // The positions that may match, as a bit set (`None`: all).
        let marked: Option<Vec<u64>> = (bytes.len() >= 2).then(|| {
            let mut keys: Vec<u32> =
                if bytes.len() == 2 { vec![pair(bytes)] } else { bytes.windows(3).map(triple).collect() };
            keys.sort_unstable();
            keys.dedup();
            let mut lists: Vec<&[u32]> = Vec::with_capacity(keys.len());
            for k in keys {
                match self.grams.get(&k) {
                    Some(list) => lists.push(list),
                    None => return vec![0; n.div_ceil(64)],
                }
            }
            lists.sort_unstable_by_key(|l| l.len());
            let mut found: Vec<u32> = lists[0].to_vec();
            // The three shortest lists narrow enough; the test is exact.
            for list in lists.iter().skip(1).take(2) {
                found = intersect(&found, list);
            }
            let mut bits = vec![0u64; n.div_ceil(64)];
            for e in found {
                let p = self.position[e as usize];
                if p != NONE {
                    bits[p as usize / 64] |= 1 << (p % 64);
                }
            }
            bits
        });
        let finder = memchr::memmem::Finder::new(bytes);
        let mut kept = Vec::new();
        let tiers: &[u8] = if target.cwd.is_some() { &[0, 1, 2] } else { &[1, 2] };
        for &tier in tiers {
            let matching = |p: usize| {
                let s = &sessions[p];
                if rank::rank(s.cwd.as_deref(), target) != tier || s.id == target.id {
                    return None;
                }
                let entry = self.entries[self.at[p] as usize].as_ref().expect("a listed session's entry");
                entry.fields().iter().any(|f| finder.find(f.as_bytes()).is_some()).then(|| (p, entry.title.clone()))
            };
            match &marked {
                Some(bits) => {
                    for (w, &word) in bits.iter().enumerate() {
                        let mut word = word;
                        while word != 0 && kept.len() < limit {
                            kept.extend(matching(w * 64 + word.trailing_zeros() as usize));
                            word &= word - 1;
                        }
                    }
                }
                None => {
                    for p in 0..n {
                        if kept.len() >= limit {
                            break;
                        }
                        kept.extend(matching(p));
                    }
                }
            }
            if kept.len() >= limit {
                break;
            }
        }
        kept.truncate(limit);
        kept
    }

    /// Matches the entries to `sessions` by id: new entries (unsettled)
    /// for new sessions, entries of sessions no longer listed dropped, an
    /// entry remade when its session's cwd changed.
    fn match_ids(&mut self, sessions: Arc<[SessionHeader]>, hardening: Hardening) {
        self.work.matched += 1;
        self.position.iter_mut().for_each(|p| *p = NONE);
        self.at.clear();
        self.at.reserve(sessions.len());
        for (p, s) in sessions.iter().enumerate() {
            let e = match self.entry_of.get(s.id.as_str()) {
                Some(&e) if self.position[e as usize] == NONE => {
                    let entry = self.entries[e as usize].as_ref().expect("an id's entry");
                    let cwd = s.cwd.as_deref().unwrap_or_default();
                    if entry.fields()[1] != cwd.to_lowercase() {
                        let (title, fp, settled) = (entry.title.clone(), entry.fp.clone(), entry.settled);
                        self.set(e, s, fp, title, settled, hardening);
                    }
                    e
                }
                // A second session of the same id (not of a source's
                // listing, which lists an id once): an entry of its own.
                Some(_) | None => {
                    let e = self.new_entry();
                    if !self.entry_of.contains_key(s.id.as_str()) {
                        self.entry_of.insert(s.id.as_str().into(), e);
                    }
                    // Made when its title is known, in this query (its
                    // position is checked): no pairs or triples until then.
                    let hay = Box::<str>::default();
                    self.entries[e as usize] = Some(Entry { hay, cuts: [0, 0], title: None, fp: None, settled: false });
                    e
                }
            };
            self.position[e as usize] = p as u32;
            self.at.push(e);
        }
        let gone: Vec<u32> = (0..self.entries.len())
            .filter(|&e| self.position[e] == NONE && self.entries[e].is_some())
            .map(|e| e as u32)
            .collect();
        if gone.len() > 64 && gone.len() > sessions.len() / 8 {
            // Many gone: the lists made again from the entries left, in
            // one pass, rather than each taken out of each list.
            for &e in &gone {
                self.entries[e as usize] = None;
                self.free.push(e);
            }
            self.grams.clear();
            for (e, entry) in self.entries.iter().enumerate() {
                for g in entry.as_ref().map(Entry::grams).unwrap_or_default() {
                    self.grams.entry(g).or_default().push(e as u32);
                }
            }
        } else {
            for e in gone {
                self.drop_entry(e);
            }
        }
        self.entry_of.retain(|_, e| self.position[*e as usize] != NONE);
        self.unsettled.retain(|&e| self.position[e as usize] != NONE);
        self.sessions = Some(sessions);
    }

    fn new_entry(&mut self) -> u32 {
        if let Some(e) = self.free.pop() {
            return e;
        }
        self.entries.push(None);
        self.position.push(NONE);
        u32::try_from(self.entries.len() - 1).expect("fewer than 2^32 sessions")
    }

    /// Drops entry `e` from every list.
    fn drop_entry(&mut self, e: u32) {
        if let Some(entry) = self.entries[e as usize].take() {
            for g in entry.grams() {
                self.unlist(g, e);
            }
            self.free.push(e);
        }
    }

    fn unlist(&mut self, g: u32, e: u32) {
        if let Some(list) = self.grams.get_mut(&g) {
            if let Ok(i) = list.binary_search(&e) {
                list.remove(i);
            }
            if list.is_empty() {
                self.grams.remove(&g);
            }
        }
    }

    fn unsettle(&mut self, e: u32) {
        if let Some(entry) = self.entries[e as usize].as_mut() {
            entry.settled = false;
        }
        self.unsettled.push(e);
    }

    /// (Re)makes entry `e` for session `s` with `title` read under `fp`;
    /// only the pairs and triples it gained or lost are updated.
    fn set(
        &mut self,
        e: u32,
        s: &SessionHeader,
        fp: Option<Fingerprint>,
        title: Option<String>,
        settled: bool,
        hardening: Hardening,
    ) {
        self.work.remade += 1;
        let (hay, cuts) = hay(s, title.as_deref(), hardening);
        let old = self.entries[e as usize].take();
        let entry = Entry { hay, cuts, title, fp, settled };
        if old.as_ref().is_none_or(|old| old.hay != entry.hay || old.cuts != entry.cuts) {
            let (was, now) = (old.map(|o| o.grams()).unwrap_or_default(), entry.grams());
            let (mut i, mut j) = (0, 0);
            while i < was.len() || j < now.len() {
                match (was.get(i), now.get(j)) {
                    (Some(a), Some(b)) if a == b => (i, j) = (i + 1, j + 1),
                    (Some(&a), b) if b.is_none_or(|&b| a < b) => {
                        self.unlist(a, e);
                        i += 1;
                    }
                    (_, Some(&b)) => {
                        let list = self.grams.entry(b).or_default();
                        // Entries are made in order: most land at the end
                        // (no search through a long list).
                        if list.last().is_none_or(|&last| last < e) {
                            list.push(e);
                        } else if let Err(at) = list.binary_search(&e) {
                            list.insert(at, e);
                        }
                        j += 1;
                    }
                    (_, None) => unreachable!("one side is left"),
                }
            }
        }
        self.entries[e as usize] = Some(entry);
    }
}

/// The entries in both sorted lists.
fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut out = Vec::with_capacity(small.len());
    let mut rest = large;
    for &x in small {
        match rest.binary_search(&x) {
            Ok(i) => {
                out.push(x);
                rest = &rest[i + 1..];
            }
            Err(i) => rest = &rest[i..],
        }
    }
    out
}
