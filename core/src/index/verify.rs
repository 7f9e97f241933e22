//! The verification of a search's prospects on their text, and the
//! threads that verify them ahead of the ranking, in order.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Condvar, Mutex};

use super::doc::Doc;
use super::fold::{fold, fold_into, original_offset};
use super::hit::{relevance, Hit, Key, Prospect, APART, ONE_MESSAGE, PHRASE};
use super::needle::Finder;
use super::query::Finders;
use super::set::Headers;
use super::snippet::{snippet, whole};
use super::stored::Unreadable;
use crate::host::{MatchField, SessionHeader};

#[cfg(test)]
mod order_tests;

/// At most this many threads verify one search's prospects.
pub(super) const VERIFIERS: usize = 4;

/// Calls `f` on the prospects in order, each with a function that gives
/// its verification (`Ok(None)` for a settled one, which needs none),
/// until `f` breaks.
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
    sessions: Headers<'_>,
    docs: &[Arc<Doc>],
    finders: &Finders,
    threads: usize,
    mut f: impl FnMut(&Prospect, &mut dyn FnMut() -> Result<Option<Hit>, Unreadable>) -> ControlFlow<()>,
) {
    let verify_one = |p: &Prospect, stop: &AtomicBool| match p.settled {
        Some(_) => Ok(None),
        None => verify(finders, sessions.get(p.at), &docs[p.at], p.key, p.at, stop),
    };
    let open = prospects.iter().filter(|p| p.settled.is_none()).count();
    let threads = threads.min(open);
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
    let open_at = |at: usize| {
        at < prospects.len() && at < given.load(AtomicOrdering::Acquire) + window && !stop.load(AtomicOrdering::Relaxed)
    };
    let open_now = || open_at(next.load(AtomicOrdering::Acquire));
    // Takes the next prospect to verify, if there is one now, and verifies
    // it (settled ones are passed over). The one taken is the one found
    // open: another thread may take the last between a look and a take.
    let take = || loop {
        let at = next.load(AtomicOrdering::Acquire);
        if !open_at(at) {
            return false;
        }
        if next.compare_exchange(at, at + 1, AtomicOrdering::AcqRel, AtomicOrdering::Relaxed).is_err() {
            continue;
        }
        if prospects[at].settled.is_none() && slots[at].get().is_none() {
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
                if p.settled.is_some() {
                    return Ok(None);
                }
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

/// The exact tier and best hit of a prospect, from its text decompressed
/// item by item (one item held at a time, never the whole text; it stops at
/// the first message holding the phrase, or when `stop` is set: then the
/// answer is no answer and is not used); `None` when the filter let
/// through a session that does not match; [`Unreadable`] when its stored
/// text cannot be read.
fn verify(
    query: &Finders,
    s: &SessionHeader,
    doc: &Doc,
    key: Key,
    at: usize,
    stop: &AtomicBool,
) -> Result<Option<Hit>, Unreadable> {
    // A prospect that can reach no better than every word in one message
    // is one whose filter has no phrase: no item is searched for it.
    let mut scan = Scan::new(query, key.tier <= PHRASE);
    doc.each_item_text(|item| if stop.load(AtomicOrdering::Relaxed) { None } else { scan.item(item) })?;
    Ok(scan.finish(s, doc, key, at))
}

/// Bytes after its start that a passage holding words spans: about what
/// a snippet shows after the place it is made around.
const PASSAGE: usize = 100;

/// Where, in the folded text `f`, the passage holding the most distinct
/// `words` begins: the occurrence of one of them from which the next
/// [`PASSAGE`] bytes hold the most (the first of those), so that a snippet
/// shows the words together rather than around the first one's first
/// occurrence. Linear in the occurrences (sorted once).
fn best_passage(f: &str, words: &[Finder]) -> usize {
    let mut at: Vec<(usize, usize)> = Vec::new();
    for (w, word) in words.iter().enumerate() {
        at.extend(word.positions(f).map(|p| (p, w)));
    }
    at.sort_unstable();
    let mut held = vec![0u32; words.len()];
    let (mut distinct, mut end) = (0, 0);
    let mut best = (0, at.first().map_or(0, |a| a.0));
    for start in 0..at.len() {
        while end < at.len() && at[end].0 < at[start].0 + PASSAGE {
            distinct += usize::from(held[at[end].1] == 0);
            held[at[end].1] += 1;
            end += 1;
        }
        if distinct > best.0 {
            best = (distinct, at[start].0);
        }
        held[at[start].1] -= 1;
        distinct -= usize::from(held[at[start].1] == 0);
    }
    best.1
}

/// [`verify`]'s pass over the items, in order.
struct Scan<'q> {
    query: &'q Finders,
    /// Whether an item may hold the phrase (else it is not looked for).
    seek_phrase: bool,
    /// The current item lower-cased (one buffer, reused).
    folded: String,
    /// Items seen.
    next: usize,
    /// The first message holding the phrase, and its snippet.
    phrase: Option<(usize, String)>,
    /// How many times the messages hold each word (0: none holds it).
    counts: Vec<u32>,
    /// The message with the most distinct words (the first of those): how
    /// many, which, and its snippet around the first of them.
    best: Option<(usize, usize, String)>,
}

impl<'q> Scan<'q> {
    fn new(query: &'q Finders, seek_phrase: bool) -> Self {
        Scan {
            query,
            seek_phrase,
            folded: String::new(),
            next: 0,
            phrase: None,
            counts: vec![0; query.words.len()],
            best: None,
        }
    }

    /// One item; `None` once the phrase is found (nothing after it counts).
    fn item(&mut self, text: &str) -> Option<()> {
        let i = self.next;
        self.next += 1;
        self.folded.clear();
        fold_into(text, &mut self.folded);
        let f = self.folded.as_str();
        if let Some(pos) = self.seek_phrase.then(|| self.query.phrase.find(f)).flatten() {
            self.phrase = Some((i, snippet(text, original_offset(text, pos))));
            return None;
        }
        let (mut count, mut first) = (0, usize::MAX);
        for (w, word) in self.query.words.iter().enumerate() {
            if let Some((pos, n)) = word.first_and_count(f) {
                self.counts[w] += n;
                count += 1;
                first = first.min(pos);
            }
        }
        if count > 0 && self.best.as_ref().is_none_or(|(c, _, _)| count > *c) {
            let at = if count > 1 { best_passage(f, &self.query.words) } else { first };
            self.best = Some((count, i, snippet(text, original_offset(text, at))));
        }
        Some(())
    }

    /// The hit the items gave, if the session matches.
    fn finish(self, s: &SessionHeader, doc: &Doc, key: Key, at: usize) -> Option<Hit> {
        if let Some((i, snippet)) = self.phrase {
            // A message holding the phrase holds every word of it.
            let key = Key { tier: PHRASE, ..key };
            return Some(Hit { key, at, field: MatchField::Message, snippet, message_index: Some(i as u64) });
        }
        let title = doc.title_folded();
        let (id, cwd) = (fold(&s.id), s.cwd.as_deref().map(fold).unwrap_or_default());
        let in_fields = |w: &Finder| w.is_in(title) || w.is_in(&id) || w.is_in(&cwd);
        let words = &self.query.words;
        if !words.iter().zip(&self.counts).all(|(w, n)| *n > 0 || in_fields(w)) {
            return None;
        }
        let key = match self.best {
            Some((count, ..)) if count == words.len() => Key { tier: ONE_MESSAGE, ..key },
            _ => Key { tier: APART, relevance: relevance(&self.counts, doc.text_bytes()), ..key },
        };
        let (field, snippet, message_index) = match self.best {
            Some((_, i, snippet)) => (MatchField::Message, snippet, Some(i as u64)),
            None if words.iter().any(|w| w.is_in(title)) => {
                (MatchField::Title, whole(doc.title.as_deref().unwrap_or("")), None)
            }
            None if words.iter().any(|w| w.is_in(&id)) => (MatchField::Id, s.id.clone(), None),
            None => (MatchField::Cwd, s.cwd.clone().unwrap_or_default(), None),
        };
        Some(Hit { key, at, field, snippet, message_index })
    }
}
