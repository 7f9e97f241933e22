//! What every doc compressed with one dictionary holds, known once for
//! them all (the dictionary's [`Vocabulary`]), so that a query rules out
//! docs without testing their filters one by one:
//!
//! - the **uncommon trigrams** of every doc, one hashed bit each: a needle
//!   with an uncommon trigram none of them holds is in none of them (no
//!   match: nothing is tested, nothing decompressed);
//! - the **pairs**: 4-byte keys (no ASCII whitespace) whose two trigrams
//!   are both common, which the filters leave out, so that a word made of
//!   common trigrams passes every filter; and 4-byte keys of three digits
//!   or more (numbers, which a filter could only tell doc by doc: a rare
//!   number's query tested every doc's filter). Per pair, the docs holding
//!   it (by serial) while few do ([`rare_at`]), or only that many do. A
//!   needle with a pair no doc holds is in none; one with a rare pair is in
//!   at most the docs listed for it.
//!
//! Every doc built with the dictionary is registered before it is kept
//! (its serial is recorded in it), and nothing is ever taken out but on
//! the way to a file (the serials of docs not written): a doc's keys stay
//! covered, so the answers are supersets and every match is still
//! verified on its text. A doc with serial 0 (none) is never ruled out
//! here.

use super::keys::{hash, is_trigram, MixHasher};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::RwLock;

/// A pair's docs are listed while at most this many hold it: 4% of the
/// docs registered so far, and while fewer than 1,600 are, an eighth of
/// them up to 64 (at least 4).
///
/// A pair that becomes frequent is never listed again, so the 4% must not
/// be judged on a handful of the first docs registered: with a floor of 4,
/// a pair held by 5 of the first 100 (a chance cluster of a word held by
/// 1.5% of all docs) would be frequent for good, and at 2,000 sessions
/// every pair of a rare word could be (so that every session is verified
/// for a word 29 hold). An eighth of the docs is far above
/// what such a pair clusters to, yet keeps a small index's lists short (a
/// pair held by 7 of 48 docs is frequent). A pair truly held by more than
/// 4% of the docs still becomes frequent once enough are registered, so
/// what stays listed is the same rule, judged on enough docs.
pub(super) fn rare_at(registered: u32) -> usize {
    let registered = registered as usize;
    (registered / 25).max((registered / 8).min(RARE_FLOOR)).max(4)
}

/// 4% of 1,600 docs: from then on the 4% alone.
const RARE_FLOOR: usize = 64;

/// The smallest and largest size of the uncommon-trigram bits, and how
/// many bits per distinct uncommon trigram of the training sample.
pub(super) const SEEN_BITS: (usize, usize, usize) = (1 << 16, 1 << 22, 32);

/// A pair held by more docs than are listed.
const FREQUENT: u32 = u32::MAX;

/// The flag of a pair held by one doc, whose serial is the rest (serials
/// stay below it).
const ONE: u32 = 1 << 31;

/// See the module's documentation.
pub(crate) struct Vocabulary {
    pub(super) inner: RwLock<Inner>,
}

#[derive(Default)]
pub(super) struct Inner {
    /// One bit per hashed uncommon trigram (a power of two of them).
    pub(super) seen: Box<[u64]>,
    /// Per pair, who holds it: [`FREQUENT`] once more than [`rare_at`]
    /// docs do, [`ONE`] and the serial of the one doc that does, else the
    /// index of the list of their ascending serials in `lists`.
    pub(super) pairs: HashMap<u32, u32, BuildHasherDefault<MixHasher>>,
    pub(super) lists: Vec<Serials>,
    /// The places in `lists` freed (a pair that became frequent).
    pub(super) free: Vec<u32>,
    /// The serial of the next doc (serials start at 1).
    next: u32,
}

/// What a vocabulary says of a needle.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No doc registered holds it.
    Absent,
    /// At most the docs of these serials (ascending) hold it.
    Only(Vec<u32>),
    /// It cannot tell.
    Any,
}

impl Verdict {
    /// Whether the doc of `serial` may hold the needle (serial 0: a doc
    /// not registered, never ruled out).
    pub(crate) fn admits(&self, serial: u32) -> bool {
        match self {
            _ if serial == 0 => true,
            Verdict::Absent => false,
            Verdict::Only(serials) => serials.binary_search(&serial).is_ok(),
            Verdict::Any => true,
        }
    }
}

impl Vocabulary {
    /// An empty one with `bits` bits for the uncommon trigrams (rounded to
    /// a power of two within [`SEEN_BITS`]).
    pub(super) fn new(bits: usize) -> Vocabulary {
        let bits = bits.clamp(SEEN_BITS.0, SEEN_BITS.1).next_power_of_two();
        let inner = Inner {
            seen: vec![0; bits / 64].into(),
            pairs: HashMap::default(),
            lists: Vec::new(),
            free: Vec::new(),
            next: 1,
        };
        Vocabulary { inner: RwLock::new(inner) }
    }

    /// Registers a doc's distinct filter keys (of which the uncommon
    /// trigrams count) and its distinct pairs: its serial (0 if serials
    /// ran out: then it is never ruled out).
    pub(super) fn register(&self, keys: &[u64], pairs: &[u32]) -> u32 {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let serial = inner.next;
        if serial >= ONE - 1 {
            return 0;
        }
        inner.next += 1;
        let mask = inner.seen.len() * 64 - 1;
        for &k in keys.iter().filter(|&&k| is_trigram(k)) {
            let bit = hash(k) as usize & mask;
            inner.seen[bit / 64] |= 1 << (bit % 64);
        }
        let limit = rare_at(serial);
        let Inner { pairs: table, lists, free, .. } = &mut *inner;
        for &p in pairs {
            let held = table.entry(p).or_insert(ONE | serial);
            match *held {
                FREQUENT => {}
                v if v & ONE != 0 => {
                    if v != ONE | serial {
                        let list = Serials::of(&[v & !ONE, serial]);
                        *held = match free.pop() {
                            Some(at) => {
                                lists[at as usize] = list;
                                at
                            }
                            None => {
                                lists.push(list);
                                lists.len() as u32 - 1
                            }
                        };
                    }
                }
                v => {
                    let list = &mut lists[v as usize];
                    list.push(serial);
                    if list.len() > limit {
                        *list = Serials::default();
                        free.push(v);
                        *held = FREQUENT;
                    }
                }
            }
        }
        serial
    }

    /// What it says of a needle with these uncommon trigram keys and
    /// pairs.
    pub(super) fn verdict(&self, trigrams: &[u64], pairs: &[u32]) -> Verdict {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let mask = inner.seen.len() * 64 - 1;
        for &k in trigrams {
            let bit = hash(k) as usize & mask;
            if inner.seen[bit / 64] & (1 << (bit % 64)) == 0 {
                return Verdict::Absent;
            }
        }
        let mut only: Option<Vec<u32>> = None;
        for p in pairs {
            let one;
            match inner.pairs.get(p).copied() {
                None => return Verdict::Absent,
                Some(FREQUENT) => {}
                Some(v) => {
                    let list: &[u32] = if v & ONE != 0 {
                        one = vec![v & !ONE];
                        &one
                    } else {
                        one = inner.lists[v as usize].to_vec();
                        &one
                    };
                    only = Some(match only {
                        None => list.to_vec(),
                        Some(held) => held.into_iter().filter(|s| list.binary_search(s).is_ok()).collect(),
                    });
                }
            }
        }
        match only {
            Some(serials) if serials.is_empty() => Verdict::Absent,
            Some(serials) => Verdict::Only(serials),
            None => Verdict::Any,
        }
    }

    /// About the bytes it holds, by what it holds (so the same after a
    /// round trip through a file): the bits, the table (a pair and its
    /// value, and the table's slack) and the lists.
    pub(super) fn bytes(&self) -> usize {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let listed = inner.lists.iter().filter(|l| !l.is_empty());
        inner.seen.len() * 8 + inner.pairs.len() * 12 + listed.map(Serials::bytes).sum::<usize>()
    }

    /// Appends it to an index file's directory, listing only the serials
    /// `live` keeps (the docs written with it; a pair left with none is
    /// left out: no doc written holds it). Pairs in ascending order.
    pub(super) fn encode(&self, out: &mut Vec<u8>, live: impl Fn(u32) -> bool) {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        out.extend_from_slice(&(inner.next as u64).to_le_bytes());
        out.extend_from_slice(&(inner.seen.len() as u64).to_le_bytes());
        for w in inner.seen.iter() {
            out.extend_from_slice(&w.to_le_bytes());
        }
        let mut pairs: Vec<(u32, Option<Vec<u32>>)> = inner
            .pairs
            .iter()
            .filter_map(|(&p, v)| {
                let list = match *v {
                    FREQUENT => return Some((p, None)),
                    x if x & ONE != 0 => vec![x & !ONE],
                    v => inner.lists[v as usize].to_vec(),
                };
                let kept: Vec<u32> = list.into_iter().filter(|&s| live(s)).collect();
                (!kept.is_empty()).then_some((p, Some(kept)))
            })
            .collect();
        pairs.sort_unstable_by_key(|(p, _)| *p);
        out.extend_from_slice(&(pairs.len() as u64).to_le_bytes());
        for (p, docs) in pairs {
            out.extend_from_slice(&p.to_le_bytes());
            match docs {
                None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
                Some(list) => {
                    out.extend_from_slice(&(list.len() as u32).to_le_bytes());
                    for s in list {
                        out.extend_from_slice(&s.to_le_bytes());
                    }
                }
            }
        }
    }

    /// Reads what [`encode`](Self::encode) wrote; `None` if malformed
    /// (bits not a power of two within bounds, pairs or serials out of
    /// order, a serial not below the next one).
    pub(super) fn decode(input: &mut crate::cache_file::Input<'_>) -> Option<Vocabulary> {
        let next = u32::try_from(input.u64()?).ok().filter(|&n| n >= 1)?;
        let words = usize::try_from(input.u64()?).ok()?;
        if !(words * 64).is_power_of_two() || words * 64 < SEEN_BITS.0 || words * 64 > SEEN_BITS.1 {
            return None;
        }
        let mut seen = Vec::with_capacity(words);
        for _ in 0..words {
            seen.push(input.u64()?);
        }
        let n = usize::try_from(input.u64()?).ok()?;
        let mut pairs = HashMap::with_capacity_and_hasher(n.min(input.0.len() / 8), Default::default());
        let mut lists = Vec::new();
        let mut last = None;
        let u32_of = |input: &mut crate::cache_file::Input<'_>| -> Option<u32> {
            Some(u32::from_le_bytes(input.take(4)?.try_into().ok()?))
        };
        for _ in 0..n {
            let p = u32_of(input)?;
            if last.is_some_and(|l| l >= p) {
                return None;
            }
            last = Some(p);
            let len = u32_of(input)?;
            let held = if len == FREQUENT {
                FREQUENT
            } else {
                let mut list = Vec::with_capacity((len as usize).min(input.0.len() / 4));
                for _ in 0..len {
                    let s = u32_of(input)?;
                    if s == 0 || s >= next || list.last().is_some_and(|&l| l >= s) {
                        return None;
                    }
                    list.push(s);
                }
                match list[..] {
                    [] => return None,
                    [one] => ONE | one,
                    _ => {
                        lists.push(Serials::of(&list));
                        lists.len() as u32 - 1
                    }
                }
            };
            pairs.insert(p, held);
        }
        if next >= ONE {
            return None;
        }
        Some(Vocabulary { inner: RwLock::new(Inner { seen: seen.into(), pairs, lists, free: Vec::new(), next }) })
    }

    /// The serial the next doc gets.
    pub(super) fn next_serial(&self) -> u32 {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).next
    }
}

/// A pair's list of serials, ascending, held as the LEB128 of each one's
/// distance from the one before (the first from 0): a byte or two each
/// where a `u32` took four, and no capacity to spare (the lists of number
/// keys, some 30 a session, would otherwise take the index past half its
/// text at 2,000 sessions). Appended to one serial at a time, in order.
#[derive(Default)]
pub(super) struct Serials(Box<[u8]>);

impl Serials {
    /// The list of `serials` (ascending, distinct).
    fn of(serials: &[u32]) -> Serials {
        let mut out = Vec::with_capacity(serials.len() * 2);
        let mut last = 0;
        for &s in serials {
            leb128(&mut out, s - last);
            last = s;
        }
        Serials(out.into())
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let (mut at, mut last) = (0, 0u32);
        std::iter::from_fn(move || {
            let (mut gap, mut shift) = (0u32, 0);
            loop {
                let b = *self.0.get(at)?;
                at += 1;
                gap |= u32::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    break;
                }
            }
            last += gap;
            Some(last)
        })
    }

    pub(super) fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }

    /// How many serials it holds (each one's last byte is below 0x80).
    fn len(&self) -> usize {
        self.0.iter().filter(|&&b| b < 0x80).count()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Appends `serial` unless it is the last one already (a doc's pairs
    /// are registered together: no serial comes back after another).
    fn push(&mut self, serial: u32) {
        let last = self.iter().last().unwrap_or(0);
        if serial <= last && !self.is_empty() {
            return;
        }
        let mut out = Vec::with_capacity(self.0.len() + 5);
        out.extend_from_slice(&self.0);
        leb128(&mut out, serial - last);
        self.0 = out.into();
    }

    fn bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.0.len()
    }
}

fn leb128(out: &mut Vec<u8>, mut n: u32) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

#[cfg(test)]
mod tests {
    use super::super::keys::SPACED;
    use super::*;

    #[test]
    fn a_vocabulary_rules_out_only_what_no_registered_doc_holds() {
        let v = Vocabulary::new(0);
        let a = v.register(&[1, 2, SPACED | 7], &[10, 11]);
        let b = v.register(&[2, 3], &[11, 12]);
        assert_eq!((a, b), (1, 2));
        assert_eq!(v.verdict(&[2], &[]), Verdict::Any);
        assert_eq!(v.verdict(&[4], &[]), Verdict::Absent, "a trigram no doc holds");
        assert_eq!(v.verdict(&[], &[13]), Verdict::Absent, "a pair no doc holds");
        assert_eq!(v.verdict(&[1], &[10]), Verdict::Only(vec![1]));
        assert_eq!(v.verdict(&[], &[11]), Verdict::Only(vec![1, 2]));
        assert_eq!(v.verdict(&[], &[10, 12]), Verdict::Absent, "no doc holds both");
        assert!(Verdict::Absent.admits(0) && !Verdict::Absent.admits(1));
        // Past the limit a pair's docs are no longer listed.
        for _ in 0..rare_at(3) + 1 {
            v.register(&[], &[12]);
        }
        assert_eq!(v.verdict(&[], &[12]), Verdict::Any);
        assert_eq!(v.verdict(&[], &[10, 12]), Verdict::Only(vec![1]));
    }

    /// A pair held by a cluster of the first docs (9 of the first 100,
    /// then by none of the next 1,900: 0.45% of all) stays listed; one held
    /// by a steady 10% does not.
    #[test]
    fn a_pair_is_not_judged_frequent_on_the_first_few_docs() {
        let v = Vocabulary::new(0);
        for i in 0..2000u32 {
            let mut pairs = Vec::new();
            if i < 100 && i % 12 == 0 {
                pairs.push(7);
            }
            if i % 10 == 0 {
                pairs.push(9);
            }
            v.register(&[], &pairs);
        }
        let Verdict::Only(held) = v.verdict(&[], &[7]) else { panic!("the clustered pair is listed") };
        assert_eq!(held, (0..100u32).filter(|i| i % 12 == 0).map(|i| i + 1).collect::<Vec<_>>());
        assert_eq!(v.verdict(&[], &[9]), Verdict::Any, "held by 10%: frequent");
    }

    #[test]
    fn a_list_of_serials_holds_each_in_a_byte_or_two_and_reads_back() {
        let serials = [1u32, 2, 130, 131, 20_000, 20_001, ONE - 2];
        let mut list = Serials::of(&serials[..2]);
        for &s in &serials[2..] {
            list.push(s);
            list.push(s);
        }
        assert_eq!(list.to_vec(), serials);
        assert_eq!(list.len(), serials.len());
        assert!(list.0.len() < 4 * serials.len(), "{}", list.0.len());
        assert_eq!(Serials::of(&[]).to_vec(), Vec::<u32>::new());
        let mut one = Serials::default();
        one.push(7);
        assert_eq!((one.to_vec(), one.len()), (vec![7], 1));
    }

    #[test]
    fn a_vocabulary_round_trips_keeping_the_live_serials() {
        let v = Vocabulary::new(0);
        for i in 0..100u32 {
            v.register(&[u64::from(i % 7)], &[0, 1000 + i]);
        }
        let mut out = Vec::new();
        v.encode(&mut out, |s| s % 2 == 0);
        let back = Vocabulary::decode(&mut crate::cache_file::Input(&out)).expect("well-formed");
        assert_eq!(back.next_serial(), v.next_serial());
        assert_eq!(back.verdict(&[3], &[]), Verdict::Any);
        assert_eq!(back.verdict(&[], &[1002]), Verdict::Absent, "serial 3 was not written");
        assert_eq!(back.verdict(&[], &[1001]), Verdict::Only(vec![2]));
        assert_eq!(back.verdict(&[], &[0]), Verdict::Any, "held by more than the limit");
        for cut in [0, 8, 16, out.len() / 2, out.len() - 1] {
            assert!(Vocabulary::decode(&mut crate::cache_file::Input(&out[..cut])).is_none(), "{cut}");
        }
    }
}
