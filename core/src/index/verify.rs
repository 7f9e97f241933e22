//! The verification of a search's prospects on their text, and the
//! threads that verify them ahead of the ranking, in order.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Condvar, Mutex};

use super::doc::Doc;
use super::fold::{fold, fold_into, original_offset};
use super::hit::{Hit, Key, Prospect};
use super::query::Finders;
use super::relevance::MatchCounts;
use super::snippet::{snippet, whole};
use super::stored::Unreadable;
use crate::host::{MatchField, SessionHeader};

#[cfg(test)]
mod order_tests;

/// At most this many threads verify one search's prospects.
pub(super) const VERIFIERS: usize = 4;

/// Calls `f` on the prospects in order, each with a function that gives
/// its verification, until `f` breaks.
///
/// With more than one thread (`threads`: the machine's cores, up to
/// [`VERIFIERS`]) and more than one prospect to verify, the threads (this
/// one among them) each take the next prospect not taken, at most two per
/// thread ahead of the one `f` is at, and `f` is given them in order: it
/// sees exactly what one thread verifying in order would give it, and
/// once it breaks at most that window was verified for nothing. A
/// verification this thread waits for longer than twice its own last one
/// took (a helper not given a core on a busy machine) it makes itself, so
/// a busy machine costs at most about the time of verifying alone. Else
/// this thread verifies them alone, when `f` asks.
pub(super) fn in_order(
    prospects: &[Prospect],
    sessions: &[&SessionHeader],
    docs: &[Arc<Doc>],
    finders: &Finders,
    threads: usize,
    mut f: impl FnMut(&Prospect, &mut dyn FnMut() -> Result<Option<Hit>, Unreadable>) -> ControlFlow<()>,
) {
    let verify_one = |p: &Prospect, stop: &AtomicBool| verify(finders, sessions[p.at], &docs[p.at], p, stop);
    let threads = threads.min(prospects.len());
    if threads < 2 {
        let never = AtomicBool::new(false);
        for p in prospects {
            if f(p, &mut || verify_one(p, &never)).is_break() {
                return;
            }
        }
        return;
    }
    type Slot = std::sync::OnceLock<Result<Option<Hit>, Unreadable>>;
    let window = 2 * threads;
    let slots: Vec<Slot> = prospects.iter().map(|_| Slot::new()).collect();
    // The next prospect not taken, the one `f` is at, and whether the
    // helpers are to end (`f` broke, or a verification panicked).
    let (next, given, stop) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicBool::new(false));
    let (lock, changed) = (Mutex::new(()), Condvar::new());
    let notify = || {
        let _held = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        changed.notify_all();
    };
    // A verification that panicked: its slot says unreadable (which wakes
    // whoever waits for it) and the panic goes on once every thread ends.
    let panicked: Mutex<Option<Box<dyn std::any::Any + Send>>> = Mutex::new(None);
    let run = |at: usize| {
        let verified =
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| verify_one(&prospects[at], &stop))) {
                Ok(verified) => verified,
                Err(panic) => {
                    stop.store(true, AtomicOrdering::Relaxed);
                    panicked.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(panic);
                    Err(Unreadable)
                }
            };
        drop(slots[at].set(verified));
        notify();
    };
    // Whether there is a prospect to take now: not all taken, and the next
    // within the window ahead of the one `f` is at.
    let open_now = || {
        let at = next.load(AtomicOrdering::Acquire);
        at < prospects.len() && at < given.load(AtomicOrdering::Acquire) + window && !stop.load(AtomicOrdering::Relaxed)
    };
    // Takes the next prospect to verify, if there is one now, and verifies
    // it.
    let take = || loop {
        if !open_now() {
            return false;
        }
        let at = next.load(AtomicOrdering::Acquire);
        if next.compare_exchange(at, at + 1, AtomicOrdering::AcqRel, AtomicOrdering::Relaxed).is_err() {
            continue;
        }
        if slots[at].get().is_none() {
            run(at);
            return true;
        }
    };
    std::thread::scope(|scope| {
        // (`stop` set and the helpers woken on the way out, also if `f`
        // panics.)
        struct Stop<'a>(&'a AtomicBool, &'a dyn Fn());
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, AtomicOrdering::Relaxed);
                (self.1)();
            }
        }
        let _stop = Stop(&stop, &notify);
        for _ in 1..threads {
            scope.spawn(|| {
                while !stop.load(AtomicOrdering::Relaxed) && next.load(AtomicOrdering::Acquire) < prospects.len() {
                    if !take() {
                        let held = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        if !open_now()
                            && !stop.load(AtomicOrdering::Relaxed)
                            && next.load(AtomicOrdering::Acquire) < prospects.len()
                        {
                            drop(changed.wait(held));
                        }
                    }
                }
            });
        }
        let mut own = std::time::Duration::from_micros(25);
        for (at, p) in prospects.iter().enumerate() {
            given.store(at, AtomicOrdering::Release);
            notify();
            let mut verified = || {
                while slots[at].get().is_none() {
                    // Not made yet: verify the next one here (this one,
                    // if nobody took it); else wait a while for the helper
                    // that has it, then make it here.
                    let t = std::time::Instant::now();
                    if take() {
                        own = t.elapsed();
                        continue;
                    }
                    let mut held = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    let until = std::time::Instant::now() + 2 * own;
                    while slots[at].get().is_none() && !open_now() {
                        let Some(left) = until.checked_duration_since(std::time::Instant::now()) else { break };
                        held = changed.wait_timeout(held, left).unwrap_or_else(std::sync::PoisonError::into_inner).0;
                    }
                    drop(held);
                    if slots[at].get().is_none() && !open_now() {
                        let never = AtomicBool::new(false);
                        drop(slots[at].set(verify_one(p, &never)));
                    }
                }
                match slots[at].get() {
                    Some(Ok(hit)) => Ok(hit.clone()),
                    _ => Err(Unreadable),
                }
            };
            if stop.load(AtomicOrdering::Relaxed) || f(p, &mut verified).is_break() {
                return;
            }
        }
    });
    if let Some(panic) = panicked.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
        std::panic::resume_unwind(panic);
    }
}

/// The counts and best passage of a prospect, from its text decompressed
/// item by item (one item held at a time, never the whole text; it stops
/// when `stop` is set: then the answer is no answer and is not used);
/// `None` when the filter let through a session that does not match;
/// [`Unreadable`] when its stored text cannot be read. The messages are
/// searched for the whole query only when the filter let it through. The
/// hit's score is left to the ranking, which knows every match's counts.
fn verify(
    query: &Finders,
    s: &SessionHeader,
    doc: &Doc,
    p: &Prospect,
    stop: &AtomicBool,
) -> Result<Option<Hit>, Unreadable> {
    let mut scan = Scan::new(query, p.phrase);
    doc.each_item_text(|item| if stop.load(AtomicOrdering::Relaxed) { None } else { scan.item(item) })?;
    Ok(scan.finish(s, doc, p.key, p.at))
}

/// How a passage (a message) ranks as a snippet: whether it holds the
/// phrase, how many distinct words, how many occurrences in all. The first
/// of the best is shown. It needs no weight, so every host that counts the
/// same finds the same passage.
type PassageRank = (bool, usize, u64);

/// [`verify`]'s pass over the items, in order.
struct Scan<'q> {
    query: &'q Finders,
    /// The current item lower-cased (one buffer, reused).
    folded: String,
    /// Items seen.
    next: usize,
    /// Whether the messages may hold the phrase (of more than one word).
    phrase_may: bool,
    /// What the messages hold (the fields' counts are added at the end).
    counts: MatchCounts,
    /// The best passage: its rank, index and snippet.
    best: Option<(PassageRank, usize, String)>,
}

impl<'q> Scan<'q> {
    fn new(query: &'q Finders, phrase_may: bool) -> Self {
        let n = query.words.len();
        let counts = MatchCounts {
            title: vec![0; n],
            place: vec![0; n],
            messages: vec![0; n],
            holding: vec![0; n],
            ..MatchCounts::default()
        };
        Scan { query, folded: String::new(), next: 0, phrase_may, counts, best: None }
    }

    /// One item: its occurrences counted, and kept as the best passage if
    /// it ranks above every one before it.
    fn item(&mut self, text: &str) -> Option<()> {
        let i = self.next;
        self.next += 1;
        if text.is_empty() {
            return Some(());
        }
        let c = &mut self.counts;
        c.items += 1;
        c.len += text.len() as u64;
        self.folded.clear();
        fold_into(text, &mut self.folded);
        let f = self.folded.as_str();
        let q = self.query;
        let (mut first, mut distinct, mut all) = (usize::MAX, 0, 0);
        for (w, word) in q.words.iter().enumerate() {
            if let Some(pos) = word.find(f) {
                first = first.min(pos);
                let n = word.count(f) as u64;
                c.messages[w] += n;
                c.holding[w] += 1;
                distinct += 1;
                all += n;
            }
        }
        if first == usize::MAX {
            return Some(());
        }
        let phrase = if self.phrase_may { q.phrase.find(f) } else { None };
        c.phrase[2] += phrase.map_or(0, |_| q.phrase.count(f) as u64);
        c.together[1] += u64::from(distinct == q.words.len() && distinct > 1);
        let rank = (phrase.is_some(), distinct, all);
        if self.best.as_ref().is_none_or(|(b, _, _)| rank > *b) {
            let at = phrase.unwrap_or(first);
            self.best = Some((rank, i, snippet(text, original_offset(text, at))));
        }
        Some(())
    }

    /// The hit the items gave, if the session matches (every word in a
    /// message, the title, the id or the cwd), with its counts, and its
    /// best passage (the title when it holds the whole query, else the
    /// best message, else the title, the id or the cwd that holds a word).
    fn finish(mut self, s: &SessionHeader, doc: &Doc, key: Key, at: usize) -> Option<Hit> {
        let q = self.query;
        let title = doc.title_folded();
        let (id, cwd) = (fold(&s.id), s.cwd.as_deref().map(fold).unwrap_or_default());
        let c = &mut self.counts;
        for (j, w) in q.words.iter().enumerate() {
            c.title[j] = w.count(title) as u64;
            c.place[j] = (w.count(&id) + w.count(&cwd)) as u64;
            if c.title[j] + c.place[j] + c.messages[j] == 0 {
                return None;
            }
        }
        if q.words.len() > 1 {
            c.together[0] = u64::from(c.title.iter().all(|&n| n > 0));
            c.phrase[0] = q.phrase.count(title) as u64;
            c.phrase[1] = (q.phrase.count(&id) + q.phrase.count(&cwd)) as u64;
        }
        c.len += title.len() as u64;
        let (field, snippet, message_index) = match self.best {
            _ if q.phrase.is_in(title) => (MatchField::Title, whole(doc.title.as_deref().unwrap_or("")), None),
            Some((_, i, snippet)) => (MatchField::Message, snippet, Some(i as u64)),
            None if q.words.iter().any(|w| w.is_in(title)) => {
                (MatchField::Title, whole(doc.title.as_deref().unwrap_or("")), None)
            }
            None if q.words.iter().any(|w| w.is_in(&id)) => (MatchField::Id, s.id.clone(), None),
            None => (MatchField::Cwd, s.cwd.clone().unwrap_or_default(), None),
        };
        Some(Hit { key, at, field, snippet, message_index, counts: self.counts })
    }
}
