//! One search over a [`SearchSet`]: every session tested against the
//! query's filters, the prospects ranked by the best tier they can reach,
//! and verified on their text in that order only while they can still
//! enter the top `limit` (a session of the last tier, ordered by its
//! relevance, enters it only once every prospect was verified).

use std::cell::Cell;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::doc::Doc;
use super::fold::fold;
use super::hit::{Hit, Key, Prospect, ONE_MESSAGE, PHRASE, TITLE_WORDS};
use super::needle::Needle;
use super::pass::FilterPass;
use super::query::{Finders, Query};
use super::set::{union, Headers, SearchSet, Work};
use super::snippet::whole;
use super::stored::Unreadable;
use super::verify::{in_order, VERIFIERS};
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::host::{rank, MatchField, SessionHeader, Target};

/// What [`SearchSet::search`] found: the hits, and the sessions (by index) whose
/// stored filter or text it could not read; when there are any, the hits
/// may miss those sessions and must not be used. And what it touched.
pub(crate) struct Scored {
    pub(crate) hits: Vec<Hit>,
    pub(crate) unreadable: Vec<usize>,
    pub(crate) work: Work,
}

impl SearchSet {
    /// The search: the sessions of the set (`sessions`, the headers it
    /// was made of, in its order) that hold `query`, ranked for `target`
    /// and cut at `limit`, each with its best hit; only the prospects that
    /// can still enter the top `limit` are verified on their text. With
    /// `keep_filters` ([`DocCache::keeps_filters`](super::DocCache::keeps_filters))
    /// the stored filters read are kept in memory.
    pub(crate) fn search(
        &self,
        query: &Query,
        sessions: Headers<'_>,
        target: &Target,
        limit: usize,
        keep_filters: bool,
        cancel: Option<&CancelToken>,
    ) -> Result<Scored> {
        // The needles the filters are tested with: the words, then the phrase.
        // A query of one word is its own phrase: its filters are tested once.
        let needles: Vec<&Needle> = match &query.words[..] {
            [word] => vec![word],
            words => words.iter().chain([&query.phrase]).collect(),
        };
        let phrase_at = needles.len() - 1;
        let docs = &self.docs[..];
        let indexed = self.indexed();
        let mut work = Work::default();
        // Per word, the sessions holding it in their id, cwd or title
        // (ascending), which no filter covers.
        let in_fields: Vec<Vec<u32>> = query.words.iter().map(|w| self.fields.holding(w, indexed, &mut work)).collect();
        // The sessions that may hold every word: for each word the
        // vocabularies can tell of, those holding it in a field or left
        // open for it in their body; every session when none can tell.
        let rows = indexed.then(|| self.open_for(query, &in_fields)).flatten();
        let filters = FilterPass::over(docs, rows.as_deref(), &self.roster, &needles, keep_filters);
        let at_of = |row: usize| rows.as_ref().map_or(row, |r| r[row] as usize);
        let mut unreadable = Vec::new();
        // A session's prospect: every word in a field or maybe in its body
        // (the words in order, up to the first in neither), with the best
        // tier it can reach; `every_word` is whether each word is in one of
        // its fields.
        let prospect = |row: usize, every_word: bool| -> Result<Option<Prospect>, Unreadable> {
            let at = at_of(row);
            for (j, held) in in_fields.iter().enumerate() {
                if held.binary_search(&(at as u32)).is_err() && !filters.may(row, j)? {
                    return Ok(None);
                }
            }
            let (s, doc) = (sessions.get(at), &docs[at]);
            let (tier, settled) = match in_a_field(s, doc, query, every_word) {
                Some(found) => found,
                // (Its filter was readable for the words, so for the phrase.)
                None if filters.may(row, phrase_at).unwrap_or(true) => (PHRASE, None),
                None => (ONE_MESSAGE, None),
            };
            let key = Key {
                tier,
                relevance: 0.0,
                cwd_rank: rank::rank(s.cwd.as_deref(), target),
                created: created(s),
                order: at,
            };
            Ok(Some(Prospect { at, key, settled }))
        };
        // The sessions with every word in a field (the only ones a field
        // can settle, tiers 0 and 1 among them) are made up front, by tier;
        // the others can reach the phrase's tier or that of one message at
        // best, and are walked in the order of the rest of the key, as far
        // as the ranking asks.
        let every_word = rows_in_every(&in_fields, rows.as_deref());
        let mut fielded: [Vec<Prospect>; 4] = Default::default();
        for &row in &every_word {
            match prospect(row, true) {
                Ok(Some(p)) => fielded[usize::from(p.key.tier)].push(p),
                Ok(None) => {}
                Err(Unreadable) => unreadable.push(at_of(row)),
            }
        }
        fielded.iter_mut().for_each(|tier| tier.sort_by_key(|p| p.key));
        let [mut piece, title_words, phrase, mut one_message] = fielded;
        piece.extend(title_words);
        let walk = self.walk_order(sessions, rows.as_deref(), target);
        let finders = Finders::of(query);
        let mut hits: Vec<Hit> = Vec::new();
        let mut best: BinaryHeap<Key> = BinaryHeap::new();
        // Whether the ranking is full or the search cancelled (`take`
        // broke), and the prospects whose text could not be read.
        let (done, cancelled) = (Cell::new(false), Cell::new(false));
        let mut lost = Vec::new();
        let searching = Searching::start();
        let threads = searching.verifiers();
        let mut take = |p: &Prospect, verified: &mut dyn FnMut() -> Result<Option<Hit>, Unreadable>| {
            if best.len() >= limit && best.peek().is_some_and(|worst| *worst < p.key) {
                done.set(true);
                return ControlFlow::Break(());
            }
            if cancel.is_some_and(CancelToken::is_cancelled) {
                cancelled.set(true);
                done.set(true);
                return ControlFlow::Break(());
            }
            let hit = match (&p.settled, verified()) {
                (Some((field, snippet)), _) => {
                    Some(Hit { key: p.key, at: p.at, field: *field, snippet: snippet.clone(), message_index: None })
                }
                (None, Ok(hit)) => hit,
                (None, Err(Unreadable)) => {
                    lost.push(p.at);
                    None
                }
            };
            if let Some(hit) = hit {
                best.push(hit.key);
                if best.len() > limit {
                    best.pop();
                }
                hits.push(hit);
            }
            ControlFlow::Continue(())
        };
        // The prospects in the order of their keys, given to the
        // verification a piece at a time (pieces growing from about the
        // limit), until the ranking is full: the settled ones of the title
        // first.
        let mut size = limit.max(16) + 2 * VERIFIERS;
        let mut later: Vec<Prospect> = Vec::new();
        let mut walked = 0u64;
        let mut fielded_phrase = phrase.into_iter().peekable();
        let mut next = 0;
        loop {
            // The walk's next prospect that may hold the phrase (those that
            // may not kept for later), merged with the fielded ones.
            let mut walked_one = None;
            while walked_one.is_none() && next < walk.len() {
                let row = walk[next] as usize;
                next += 1;
                if every_word.binary_search(&row).is_ok() {
                    continue;
                }
                walked += 1;
                if walked % 256 == 0 && cancel.is_some_and(CancelToken::is_cancelled) {
                    return Err(Error::cancelled());
                }
                match prospect(row, false) {
                    Ok(Some(p)) if p.key.tier == PHRASE => walked_one = Some(p),
                    Ok(Some(p)) => later.push(p),
                    Ok(None) => {}
                    Err(Unreadable) => unreadable.push(at_of(row)),
                }
            }
            let ended = walked_one.is_none();
            while let Some(f) = fielded_phrase.next_if(|f| walked_one.as_ref().is_none_or(|w| f.key < w.key)) {
                piece.push(f);
            }
            piece.extend(walked_one);
            if piece.len() >= size || ended {
                if ended {
                    // Those that may hold every word in one message at
                    // best: the fielded ones and the walk's, merged.
                    piece.append(&mut one_message);
                    piece.append(&mut later);
                    let from = piece.partition_point(|p| p.key.tier < ONE_MESSAGE);
                    piece[from..].sort_by_key(|p| p.key);
                }
                in_order(&piece, sessions, docs, &finders, threads, &mut take);
                piece.clear();
                size = (size * 2).min(MOST_IN_A_PIECE);
                if done.get() || ended {
                    break;
                }
            }
        }
        work.sessions += walked + every_word.len() as u64;
        drop(searching);
        unreadable.append(&mut lost);
        if cancelled.get() {
            return Err(Error::cancelled());
        }
        hits.sort_by_key(|h| h.key);
        hits.truncate(limit);
        Ok(Scored { hits, unreadable, work })
    }

    /// The sessions (ascending) that may hold every word of `query` whose
    /// holders can be told without passing over every session: those
    /// holding it in a field (`in_fields`, per word) or whose body the
    /// vocabularies leave open for it ([`Roster::body`](super::pass::Roster::body)).
    /// `None` when the vocabularies can tell of no word.
    fn open_for(&self, query: &Query, in_fields: &[Vec<u32>]) -> Option<Vec<u32>> {
        let mut open: Option<Vec<u32>> = None;
        for (word, fields) in query.words.iter().zip(in_fields) {
            let Some(body) = self.roster.body(word) else { continue };
            let holders = union(vec![body, fields.clone()]);
            open = Some(match open {
                None => holders,
                Some(was) => was.into_iter().filter(|at| holders.binary_search(at).is_ok()).collect(),
            });
        }
        open
    }
}

/// The most prospects given to the verification at once: the walk stops
/// this soon after the ranking is full.
const MOST_IN_A_PIECE: usize = 4096;

/// A session's `createdAt` as the ranking compares it.
fn created(s: &SessionHeader) -> f64 {
    s.created_at.as_f64().unwrap_or(0.0)
}

/// The rows (ascending) whose session holds every word in a field: the
/// sessions in each of `in_fields` (positions, ascending, one list per
/// word), as rows of `rows` (every session when `None`; positions
/// ascending, holding every field holder).
fn rows_in_every(in_fields: &[Vec<u32>], rows: Option<&[u32]>) -> Vec<usize> {
    let Some((first, others)) = in_fields.split_first() else { return Vec::new() };
    first
        .iter()
        .filter(|at| others.iter().all(|held| held.binary_search(at).is_ok()))
        .filter_map(|&at| match rows {
            Some(rows) => rows.binary_search(&at).ok(),
            None => Some(at as usize),
        })
        .collect()
}

impl SearchSet {
    /// The rows of a search over `rows` (positions ascending; every
    /// session when `None`) in the order of the ranking's key past the
    /// tier: cwd rank for `target`, newer `createdAt`, listing order. The
    /// order by `createdAt` is made once per set; a few rows are sorted
    /// alone.
    fn walk_order(&self, sessions: Headers<'_>, rows: Option<&[u32]>, target: &Target) -> Vec<u32> {
        let key = |at: usize| {
            let s = sessions.get(at);
            (rank::rank(s.cwd.as_deref(), target), created(s), at)
        };
        let by_key =
            |a: &(u8, f64, usize), b: &(u8, f64, usize)| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2));
        if let Some(rows) = rows.filter(|r| r.len() * 8 < sessions.len()) {
            let mut keyed: Vec<((u8, f64, usize), u32)> =
                rows.iter().enumerate().map(|(row, &at)| (key(at as usize), row as u32)).collect();
            keyed.sort_unstable_by(|a, b| by_key(&a.0, &b.0));
            return keyed.into_iter().map(|(_, row)| row).collect();
        }
        let newest = self.newest.get_or_init(|| {
            let mut all: Vec<u32> = (0..sessions.len() as u32).collect();
            all.sort_by(|&a, &b| created(sessions.get(b as usize)).total_cmp(&created(sessions.get(a as usize))));
            all.into()
        });
        // The row of each position (`u32::MAX`: not searched).
        let row_of: Option<Vec<u32>> = rows.map(|rows| {
            let mut of = vec![u32::MAX; sessions.len()];
            rows.iter().enumerate().for_each(|(row, &at)| of[at as usize] = row as u32);
            of
        });
        let mut ranked: [Vec<u32>; 3] = Default::default();
        for &at in newest.iter() {
            let row = row_of.as_ref().map_or(at, |of| of[at as usize]);
            if row != u32::MAX {
                let s = sessions.get(at as usize);
                ranked[usize::from(rank::rank(s.cwd.as_deref(), target).min(2))].push(row);
            }
        }
        ranked.concat()
    }
}

/// The tier and settled hit of a session whose title holds the phrase or
/// every word, or whose id or cwd holds the phrase (in that order); `None`
/// when none does. `every_word` is whether each of the query's words is
/// in one of those fields ([`Fields::holding`](super::set::Fields::holding),
/// exact on the same folded text): a phrase in a field has every word in
/// it, so without them no field is looked at (nor its id and cwd folded).
fn in_a_field(
    s: &SessionHeader,
    doc: &Doc,
    query: &Query,
    every_word: bool,
) -> Option<(u8, Option<(MatchField, String)>)> {
    if !every_word {
        return None;
    }
    let title = doc.title_folded();
    let in_title = || Some((MatchField::Title, whole(doc.title.as_deref().unwrap_or(""))));
    if query.phrase.is_in(title) {
        return Some((0, in_title()));
    }
    if query.words.iter().all(|w| w.is_in(title)) {
        return Some((TITLE_WORDS, in_title()));
    }
    if query.phrase.is_in(&fold(&s.id)) {
        return Some((PHRASE, Some((MatchField::Id, s.id.clone()))));
    }
    let cwd = s.cwd.as_deref().map(fold);
    if query.phrase.is_in(cwd.as_deref().unwrap_or("")) {
        return Some((PHRASE, Some((MatchField::Cwd, s.cwd.clone().unwrap_or_default()))));
    }
    None
}

/// The searches of this process verifying their prospects now.
static SEARCHING: AtomicUsize = AtomicUsize::new(0);

/// The most searches of this process that were verifying at once.
#[cfg(test)]
pub(crate) static MOST_SEARCHING: AtomicUsize = AtomicUsize::new(0);

/// One search counted in [`SEARCHING`] while it lives.
struct Searching;

impl Searching {
    fn start() -> Searching {
        let _now = SEARCHING.fetch_add(1, Ordering::Relaxed) + 1;
        #[cfg(test)]
        MOST_SEARCHING.fetch_max(_now, Ordering::Relaxed);
        Searching
    }

    /// The threads this search verifies on: the machine's cores shared
    /// among the searches under way (at least one, at most
    /// [`VERIFIERS`]). A thread verifies ahead of the ranking, and what it
    /// verified past the last result is lost: worth it while cores would
    /// otherwise idle, not while other searches (a server's concurrent
    /// requests) keep every core busy.
    fn verifiers(&self) -> usize {
        shared_verifiers(crate::runtime::cores(), SEARCHING.load(Ordering::Relaxed))
    }
}

/// The verifying threads of one of `searching` searches on `cores` cores.
fn shared_verifiers(cores: usize, searching: usize) -> usize {
    (cores / searching.max(1)).clamp(1, VERIFIERS)
}

impl Drop for Searching {
    fn drop(&mut self) {
        SEARCHING.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::shared_verifiers;

    #[test]
    fn concurrent_searches_share_the_cores_and_each_keeps_one_thread() {
        assert_eq!(shared_verifiers(2, 1), 2);
        assert_eq!(shared_verifiers(2, 2), 1);
        assert_eq!(shared_verifiers(2, 16), 1);
        assert_eq!(shared_verifiers(8, 1), super::VERIFIERS);
        assert_eq!(shared_verifiers(8, 4), 2);
        assert_eq!(shared_verifiers(1, 0), 1);
    }
}
