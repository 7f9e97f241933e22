//! What the filters of one search's docs say of its needles: the stored
//! filters swept in file order through one reused buffer, the held ones
//! tested when asked.

use super::bloom::{filter_checksum, Bits, StoredBits};
use super::dict::Dictionary;
use super::doc::Doc;
use super::needle::Needle;
use super::stored::Unreadable;
use super::vocab::Verdict;
use std::sync::{Arc, OnceLock};

/// What a [`FilterPass`] needs to know of each doc before touching it:
/// whether it has a body, and its dictionary and serial in that
/// dictionary's vocabulary, packed (a few bytes a doc), so that a needle
/// the vocabularies rule out is ruled out for every doc in one pass over
/// this list, without reading a doc. Made once for a list of docs and kept
/// with it.
pub(super) struct Roster {
    /// The dictionaries of the docs, each once.
    dicts: Vec<Arc<Dictionary>>,
    /// Per doc: the place of its dictionary in `dicts` ([`NO_BODY`],
    /// [`NO_VOCABULARY`]) and its serial.
    of: Vec<(u32, u32)>,
    /// Whether some doc is [`NO_VOCABULARY`] (never ruled out).
    uncovered: bool,
    /// Whether some doc's filter was left in a cache file (a search reads
    /// the filters not yet kept in one pass); else no doc is looked at for
    /// it.
    stored: bool,
    /// The docs by dictionary and serial, made when first asked for
    /// ([`Self::body`]).
    serials: OnceLock<Serials>,
}

/// The docs of a [`Roster`] by what a vocabulary lists: per dictionary,
/// `(serial, position)` sorted; and the positions never ruled out.
struct Serials {
    of_dict: Vec<Vec<(u32, u32)>>,
    uncovered: Vec<u32>,
}

/// A doc without body: no needle is in it.
const NO_BODY: u32 = u32::MAX;

/// A doc with a body its vocabulary does not cover (no dictionary, or
/// serial 0): never ruled out by a vocabulary.
const NO_VOCABULARY: u32 = u32::MAX - 1;

impl Roster {
    /// The roster of `docs`, in order.
    pub(super) fn new(docs: &[Arc<Doc>]) -> Roster {
        let mut dicts: Vec<Arc<Dictionary>> = Vec::new();
        let of = docs
            .iter()
            .map(|d| match &d.dict {
                _ if d.lengths.is_empty() => (NO_BODY, 0),
                Some(dict) if d.serial != 0 => {
                    let slot = dicts.iter().position(|x| Arc::ptr_eq(x, dict)).unwrap_or_else(|| {
                        dicts.push(Arc::clone(dict));
                        dicts.len() - 1
                    });
                    (slot as u32, d.serial)
                }
                _ => (NO_VOCABULARY, 0),
            })
            .collect::<Vec<_>>();
        let uncovered = of.iter().any(|&(at, _)| at == NO_VOCABULARY);
        let stored = docs.iter().any(|d| matches!(d.bloom.bits, Bits::Stored(_)));
        Roster { dicts, of, uncovered, stored, serials: OnceLock::new() }
    }

    fn serials(&self) -> &Serials {
        self.serials.get_or_init(|| {
            let mut of_dict = vec![Vec::new(); self.dicts.len()];
            let mut uncovered = Vec::new();
            for (i, &(at, serial)) in self.of.iter().enumerate() {
                match at {
                    NO_BODY => {}
                    NO_VOCABULARY => uncovered.push(i as u32),
                    slot => of_dict[slot as usize].push((serial, i as u32)),
                }
            }
            of_dict.iter_mut().for_each(|l| l.sort_unstable());
            Serials { of_dict, uncovered }
        })
    }

    /// The docs (by position, ascending) whose body the vocabularies leave
    /// `needle` open for: those a vocabulary lists as holders, and those
    /// no vocabulary covers; `None` when a vocabulary cannot tell (every
    /// doc of it stays open). Looked up, not scanned: made of the docs'
    /// serials ([`Serials`]) the first time it is asked.
    pub(super) fn body(&self, needle: &Needle) -> Option<Vec<u32>> {
        let serials = self.serials();
        let mut open = serials.uncovered.clone();
        for (slot, dict) in self.dicts.iter().enumerate() {
            let docs = &serials.of_dict[slot];
            needle.with_verdict(dict, |v| match v {
                Verdict::Absent => Some(()),
                Verdict::Only(listed) => {
                    for &serial in listed {
                        let from = docs.partition_point(|&(s, _)| s < serial);
                        open.extend(docs[from..].iter().take_while(|&&(s, _)| s == serial).map(|&(_, i)| i));
                    }
                    Some(())
                }
                Verdict::Any => None,
            })?;
        }
        open.sort_unstable();
        open.dedup();
        Some(open)
    }

    /// Whether the docs' vocabularies say that no doc's body holds
    /// `needle` (no filter read, no doc touched): every doc is without
    /// body or registered in a vocabulary that rules it out. With
    /// `indexed`, the docs a vocabulary lists are looked up ([`Self::body`]),
    /// not passed over.
    pub(super) fn rules_out(&self, needle: &Needle, indexed: bool) -> bool {
        if self.uncovered {
            return false;
        }
        if indexed {
            if let Some(open) = self.body(needle) {
                return open.is_empty();
            }
        }
        // Whether some vocabulary lists holders (their docs are checked
        // below); `None` if one cannot tell.
        let mut listed = Some(false);
        for dict in &self.dicts {
            listed = listed.and_then(|l| {
                needle.with_verdict(dict, |v| match v {
                    Verdict::Absent => Some(l),
                    Verdict::Only(_) => Some(true),
                    Verdict::Any => None,
                })
            });
        }
        match listed {
            None => false,
            Some(false) => true,
            Some(true) => self.of.iter().all(|&(at, serial)| {
                at == NO_BODY || needle.with_verdict(&self.dicts[at as usize], |v| !v.admits(serial))
            }),
        }
    }
}

/// What the filters of one search's docs say of its needles. A filter in
/// memory is tested when asked. The stored ones (docs loaded from a cache
/// file) are read up front, in file order, in reads of about [`PASS_READ`]
/// bytes through one reused buffer, each checked against its checksum and
/// tested against every needle: a process that loads the index and
/// searches once reads them at the speed of a copy and never holds them
/// all. With `keep`, the bytes read are kept in memory for later searches.
pub(super) struct FilterPass<'a> {
    pub(super) docs: &'a [Arc<Doc>],
    /// The positions of the docs it is over (all when `None`), ascending:
    /// the verdicts' rows.
    rows: Option<&'a [u32]>,
    pub(super) needles: &'a [&'a Needle],
    /// Per row and needle: [`UNTESTED`] (a filter in memory: test it when
    /// asked), [`MAY`], [`NOT`] or [`UNREADABLE`].
    pub(super) verdicts: Vec<u8>,
}

pub(super) const UNTESTED: u8 = 0;

pub(super) const MAY: u8 = 1;

pub(super) const NOT: u8 = 2;

pub(super) const UNREADABLE: u8 = 3;

/// About how many bytes of stored filters one read of a [`FilterPass`]
/// takes in (more when one filter is bigger).
pub(super) const PASS_READ: usize = if cfg!(test) { 16 << 10 } else { 1 << 20 };

/// The gap between two wanted filters up to which one read spans both.
pub(super) const PASS_GAP: u64 = 64 << 10;

impl<'a> FilterPass<'a> {
    /// The verdicts of the stored filters of `docs` (whose roster is
    /// `roster`) on `needles`.
    #[cfg(test)]
    pub(super) fn new(docs: &'a [Arc<Doc>], roster: &Roster, needles: &'a [&'a Needle], keep: bool) -> FilterPass<'a> {
        Self::over(docs, None, roster, needles, keep)
    }

    /// The verdicts of the stored filters of the docs at `rows` (all of
    /// `docs` when `None`; positions ascending) on `needles`, whose roster is
    /// `roster`: the pass costs the rows, not the docs.
    pub(super) fn over(
        docs: &'a [Arc<Doc>],
        rows: Option<&'a [u32]>,
        roster: &Roster,
        needles: &'a [&'a Needle],
        keep: bool,
    ) -> FilterPass<'a> {
        let n = needles.len();
        let count = rows.map_or(docs.len(), <[u32]>::len);
        let doc_at = |row: usize| rows.map_or(row, |r| r[row] as usize);
        let mut verdicts = vec![UNTESTED; count * n];
        // What the docs' vocabularies rule out first, from the roster (no
        // doc touched): a stored filter is read only for a doc they leave
        // a needle open for. A doc without body holds nothing.
        for row in 0..count {
            if roster.of[doc_at(row)].0 == NO_BODY {
                verdicts[row * n..(row + 1) * n].fill(NOT);
            }
        }
        for (j, needle) in needles.iter().enumerate() {
            for (slot, dict) in roster.dicts.iter().enumerate() {
                needle.with_verdict(dict, |verdict| {
                    if *verdict == Verdict::Any {
                        return;
                    }
                    for row in 0..count {
                        let (at, serial) = roster.of[doc_at(row)];
                        if at == slot as u32 && !verdict.admits(serial) {
                            verdicts[row * n + j] = NOT;
                        }
                    }
                });
            }
        }
        // The stored filters not in memory, by file and then by offset.
        let mut stored: Vec<(usize, &StoredBits)> = (0..if roster.stored { count } else { 0 })
            .map(|row| (row, &docs[doc_at(row)]))
            .filter(|(i, d)| verdicts[i * n..(i + 1) * n].contains(&UNTESTED) && !d.lengths.is_empty())
            .filter_map(|(i, d)| match &d.bloom.bits {
                Bits::Stored(b) if b.kept.get().is_none() => Some((i, &**b)),
                _ => None,
            })
            .collect();
        stored.sort_unstable_by_key(|(_, b)| (Arc::as_ptr(&b.at.texts), b.at.offset));
        let mut buf = Vec::new();
        let mut rest = stored.as_slice();
        while let Some(((_, first), _)) = rest.split_first() {
            // One read: filters of the same file, each starting within
            // `PASS_GAP` of where the last ended, up to about `PASS_READ`.
            let start = first.at.offset;
            let mut end = start.saturating_add(first.at.len as u64);
            let mut take = 1;
            for (_, b) in &rest[1..] {
                let b_end = b.at.offset.saturating_add(b.at.len as u64);
                if !Arc::ptr_eq(&b.at.texts, &first.at.texts)
                    || b.at.offset < end
                    || b.at.offset - end > PASS_GAP
                    || b_end - start > PASS_READ as u64
                {
                    break;
                }
                end = b_end;
                take += 1;
            }
            let (run, later) = rest.split_at(take);
            rest = later;
            let read =
                usize::try_from(end - start).ok().and_then(|len| first.at.texts.read_into(start, len, &mut buf).ok());
            for &(i, b) in run {
                let at = (b.at.offset - start) as usize;
                let bits = read.and(buf.get(at..at + b.at.len)).filter(|bits| filter_checksum(bits) == b.at.checksum);
                let row = &mut verdicts[i * n..(i + 1) * n];
                let Some(bits) = bits else {
                    row.iter_mut().filter(|v| **v == UNTESTED).for_each(|v| *v = UNREADABLE);
                    continue;
                };
                for (v, needle) in row.iter_mut().zip(needles).filter(|(v, _)| **v == UNTESTED) {
                    *v = if docs[doc_at(i)].may_contain_in(bits, needle) { MAY } else { NOT };
                }
                if keep {
                    drop(b.kept.set(bits.into()));
                }
            }
        }
        FilterPass { docs, rows, needles, verdicts }
    }

    /// Whether the doc of row `row` (its position among the docs, when the
    /// pass is over all of them) may hold needle `needle` (an index into
    /// the needles the pass was made with); [`Unreadable`] when its stored
    /// filter could not be read back or did not match its checksum.
    pub(super) fn may(&self, row: usize, needle: usize) -> Result<bool, Unreadable> {
        match self.verdicts[row * self.needles.len() + needle] {
            MAY => Ok(true),
            NOT => Ok(false),
            UNREADABLE => Err(Unreadable),
            _ => {
                let doc = &self.docs[self.rows.map_or(row, |r| r[row] as usize)];
                if doc.lengths.is_empty() {
                    return Ok(false);
                }
                Ok(doc.may_contain_in(&doc.bloom.bits()?, self.needles[needle]))
            }
        }
    }
}
