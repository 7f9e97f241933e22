//! Per-source retention under the byte budget (docs/contract.md §4), in linear time.
//!
//! The serialized size of a source object is the size of its fixed fields
//! plus, per item, a constant envelope and the escaped length of its text.
//! Every length is computed once; dropping an item or truncating one text
//! changes the total by a known amount, so nothing is re-serialized.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::projection::{Item, ItemText, Role};

/// `{"role":"` … `","text":` … `}` around an item's role and text literal.
const ITEM_ENVELOPE: usize = r#"{"role":"","text":}"#.len();

/// The serialized size of one item: envelope + role + escaped text.
pub(crate) fn item_size(item: &Item<'_>, text_len: usize) -> usize {
    ITEM_ENVELOPE + item.role.as_str().len() + text_len
}

/// The head/tail truncation of `text` to `target` UTF-8 bytes (docs/contract.md §4):
/// the text itself when it fits; otherwise the longest head + tail found by
/// the contract's binary search, followed by
/// `"\n[… omitted N UTF-8 bytes …]"`; `""` when not even the marker fits.
/// Returns the new text and N.
pub fn truncate_head_tail(text: &str, target: usize) -> (Cow<'_, str>, usize) {
    let len = text.len();
    if len <= target {
        return (Cow::Borrowed(text), 0);
    }
    // For a budget r: (head end, tail start), both char boundaries.
    let cut = |r: usize| -> (usize, usize) {
        let mut head = r.div_ceil(2);
        while !text.is_char_boundary(head) {
            head -= 1;
        }
        let mut tail = len - r / 2;
        while !text.is_char_boundary(tail) {
            tail += 1;
        }
        (head, tail)
    };
    // The reference slices bytes, counts N on those byte slices, then decodes
    // each slice as `TextDecoder` does, which drops one leading U+FEFF (BOM)
    // per slice: such a BOM is neither kept nor counted as omitted.
    let pieces = |r: usize| -> (&str, &str, usize) {
        let (head, tail) = cut(r);
        let omitted = len - head - (len - tail);
        (strip_bom(&text[..head]), strip_bom(&text[tail..]), omitted)
    };
    let size = |r: usize| -> usize {
        let (head, tail, omitted) = pieces(r);
        head.len() + tail.len() + marker_len(omitted)
    };
    let (mut lo, mut hi) = (0usize, target);
    let mut best: Option<usize> = None;
    while lo <= hi {
        let mid = lo + (hi - lo) / 2;
        if size(mid) <= target {
            best = Some(mid);
            lo = mid + 1;
        } else if mid == 0 {
            break;
        } else {
            hi = mid - 1;
        }
    }
    match best {
        None => (Cow::Borrowed(""), len),
        Some(r) => {
            let (head, tail, omitted) = pieces(r);
            let mut out = String::with_capacity(target);
            out.push_str(head);
            out.push_str(tail);
            push_marker(&mut out, omitted);
            (Cow::Owned(out), omitted)
        }
    }
}

fn strip_bom(s: &str) -> &str {
    s.strip_prefix('\u{feff}').unwrap_or(s)
}

const MARKER_HEAD: &str = "\n[\u{2026} omitted ";
const MARKER_TAIL: &str = " UTF-8 bytes \u{2026}]";

fn marker_len(omitted: usize) -> usize {
    MARKER_HEAD.len() + decimal_digits(omitted) + MARKER_TAIL.len()
}

fn push_marker(out: &mut String, omitted: usize) {
    out.push_str(MARKER_HEAD);
    out.push_str(&omitted.to_string());
    out.push_str(MARKER_TAIL);
}

fn decimal_digits(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// What retention decided for one source.
#[derive(Debug)]
pub struct Retained<'a> {
    /// The retained items with their final texts, in order.
    pub items: Vec<Item<'a>>,
    /// Items dropped entirely.
    pub omitted_messages: usize,
    /// Bytes of dropped originals plus bytes cut from retained texts.
    pub omitted_bytes: u64,
}

/// Applies the drop and truncate phases so that `fixed + items` fits in
/// `budget` bytes, where `fixed` is the serialized size of the source object
/// with an empty conversation. `Ok(None)` when the source cannot fit;
/// `Err` when a text that must be cut cannot be decoded.
pub fn retain<'a>(items: Vec<Item<'a>>, fixed: usize, budget: u64) -> Result<Option<Retained<'a>>, String> {
    retain_with(items, fixed, budget, false)
}

/// [`retain`], measuring texts as they are written with invisible characters
/// escaped when `escape_invisible` is on (`crate::json::invisible`).
pub fn retain_with<'a>(
    items: Vec<Item<'a>>,
    fixed: usize,
    budget: u64,
    escape_invisible: bool,
) -> Result<Option<Retained<'a>>, String> {
    let n = items.len();
    // One step an item, one a size measured, one a text cut.
    let mut tally = crate::work::Tally(n);
    // Serialized sizes, computed only for the items retention may keep.
    let mut sizes: Vec<Option<usize>> = vec![None; n];
    let mut size_of = |i: usize| -> u64 {
        *sizes[i].get_or_insert_with(|| {
            tally.0 += 1;
            item_size(&items[i], items[i].text.tag_safe_len_with(escape_invisible))
        }) as u64
    };

    // Drop phase. The reference drops the oldest item that is neither a
    // checkpoint nor the newest, until the object fits. The newest item is
    // never dropped, so the droppable items are fixed, and what survives is
    // the longest run of the newest droppable items that fits next to the
    // rest. Found from the newest end, it needs no size of a dropped item.
    let droppable = |i: usize| i + 1 < n && !items[i].checkpoint;
    let kept_fixed = (0..n).filter(|&i| !droppable(i));
    let mut total: u64 = fixed as u64;
    let mut count = 0u64;
    for i in kept_fixed {
        total += size_of(i);
        count += 1;
    }
    total += count.saturating_sub(1); // commas
    let mut first_kept = n; // every droppable item before this index is dropped
    for i in (0..n).rev().filter(|&i| droppable(i)) {
        let with = total + size_of(i) + u64::from(count > 0);
        if with > budget {
            break;
        }
        total = with;
        count += 1;
        first_kept = i;
    }
    let mut omitted_messages = 0usize;
    let mut omitted_bytes = 0u64;
    let mut retained: Vec<Item<'a>> = Vec::with_capacity(count as usize);
    let mut retained_sizes: Vec<usize> = Vec::with_capacity(count as usize);
    for (i, item) in items.into_iter().enumerate() {
        if i + 1 < n && !item.checkpoint && i < first_kept {
            omitted_messages += 1;
            omitted_bytes += item.text.byte_len() as u64;
        } else {
            // Every kept item's size was computed above.
            let size = sizes[i].unwrap_or_else(|| item_size(&item, item.text.tag_safe_len_with(escape_invisible)));
            retained_sizes.push(size - ITEM_ENVELOPE - item.role.as_str().len());
            retained.push(item);
        }
    }

    if total > budget {
        // Truncate phase: the item with the most bytes in its current text,
        // the first on ties; always cut from the original text, decoded
        // the first time the item is picked.
        let mut originals: Vec<Option<Cow<'a, str>>> = vec![None; retained.len()];
        let mut cut = vec![0usize; retained.len()];
        let mut heap: BinaryHeap<(usize, Reverse<usize>)> =
            retained.iter().enumerate().map(|(idx, i)| (i.text.byte_len(), Reverse(idx))).collect();
        while total > budget {
            tally.0 += 1;
            let Some((bytes, Reverse(idx))) = heap.pop() else { return Ok(None) };
            if bytes == 0 {
                return Ok(None);
            }
            let overflow = total - budget;
            let target = (bytes as u64).saturating_sub(overflow) as usize;
            if originals[idx].is_none() {
                originals[idx] = Some(retained[idx].text.decode()?);
            }
            let original = originals[idx].as_deref().unwrap_or_default();
            let (text, omitted) = truncate_head_tail(original, target);
            let item = &mut retained[idx];
            if item.text.byte_len() == text.len() && item.text.decode()? == text {
                return Ok(None);
            }
            let new_text = ItemText::decoded(Cow::Owned(text.into_owned()));
            let new_len = new_text.tag_safe_len_with(escape_invisible);
            total = total - retained_sizes[idx] as u64 + new_len as u64;
            retained_sizes[idx] = new_len;
            item.text = new_text;
            cut[idx] = omitted;
            heap.push((item.text.byte_len(), Reverse(idx)));
        }
        omitted_bytes += cut.iter().map(|c| *c as u64).sum::<u64>();
    }
    Ok(Some(Retained { items: retained, omitted_messages, omitted_bytes }))
}

/// Items a source left out of a snapshot because retention drops them
/// under the budget whatever else it is given
/// ([`certainly_dropped`]): they count as dropped (in the omitted
/// messages and bytes, and the projected ones) as if they had been there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Elided {
    /// Items left out.
    pub messages: usize,
    /// UTF-8 bytes of their texts.
    pub bytes: u64,
}

/// What [`certainly_dropped`] needs of one projected item: whether
/// retention never drops it on its own (a checkpoint; or an event whose
/// projection fails the snapshot, which must stay to fail it), a lower
/// bound of its serialized size under any hardening, and its text's UTF-8
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemFloor {
    /// Never left out.
    pub fixed: bool,
    /// At most its serialized size as retention measures it, whatever the
    /// hardening (redaction may shorten a text that may hold a credential
    /// to nothing; escaping invisible characters only lengthens one).
    pub floor: u64,
    /// UTF-8 bytes of its text.
    pub bytes: u64,
}

impl ItemFloor {
    /// The floor of a projected item.
    pub fn of(item: &Item<'_>) -> ItemFloor {
        let text = match (item.text.json_literal(), item.text.as_decoded()) {
            (Some(lit), _) if !crate::harden::secrets::may_hold_secret(lit) => item.text.tag_safe_len(),
            (_, Some(text)) => text_floor(text) as usize,
            _ => 0,
        };
        ItemFloor { fixed: item.checkpoint, floor: item_size(item, text) as u64, bytes: item.text.byte_len() as u64 }
    }

    /// The floor of an item of `role` whose text is not held: `text_floor`
    /// ([`text_floor`] of its text, or anything below it) and its text's
    /// UTF-8 `bytes`; a checkpoint is never left out.
    pub fn parts(role: Role, checkpoint: bool, text_floor: u64, bytes: u64) -> ItemFloor {
        let floor = (ITEM_ENVELOPE + role.as_str().len()) as u64 + text_floor;
        ItemFloor { fixed: checkpoint, floor, bytes }
    }

    /// An event that must stay whatever its size (its projection fails).
    pub fn fixed() -> ItemFloor {
        ItemFloor { fixed: true, floor: 0, bytes: 0 }
    }
}

/// At most the serialized length retention measures of a decoded text,
/// whatever the hardening: its tag-safe JSON literal's length, or 0 when
/// redaction may shorten it (it may hold a credential).
pub fn text_floor(text: &str) -> u64 {
    match crate::harden::secrets::may_hold_secret(text.as_bytes()) {
        true => 0,
        false => crate::json::string_len(text, true) as u64,
    }
}

/// Which items (of a projection's items in order, given by their floors)
/// retention drops under `budget` whatever the source object's fixed part
/// and the hardening: going back from the newest droppable item as the
/// drop phase does, with every size at its floor and the fixed part at 0,
/// the first that does not fit, and every droppable item before it, is
/// dropped by [`retain_with`] too (its sizes are at least these). A snapshot
/// without the items marked retains exactly as the whole one (the same
/// items kept, cut and redacted) once they are counted as [`Elided`]. The
/// first droppable item that does not fit is kept in the snapshot, so
/// retention still stops there.
pub fn certainly_dropped(items: &[ItemFloor], budget: u64) -> Vec<bool> {
    let fixed: Vec<bool> = items.iter().map(|i| i.fixed).collect();
    certainly_dropped_by(&fixed, |i| items[i].floor, budget)
}

/// [`certainly_dropped`] of items given by whether each is `fixed` and by
/// its `floor`, which is asked for only where the drop phase looks: every
/// item never dropped, then the others from the newest back to the first
/// that does not fit (so a reader may measure only those).
pub fn certainly_dropped_by(fixed: &[bool], mut floor: impl FnMut(usize) -> u64, budget: u64) -> Vec<bool> {
    let n = fixed.len();
    let droppable = |i: usize| i + 1 < n && !fixed[i];
    let mut total = 0u64;
    let mut count = 0u64;
    for i in (0..n).filter(|&i| !droppable(i)) {
        total = total.saturating_add(floor(i));
        count += 1;
    }
    total = total.saturating_add(count.saturating_sub(1));
    let mut out = vec![false; n];
    let cut = (0..n).rev().filter(|&i| droppable(i)).find(|&i| {
        total = total.saturating_add(floor(i).saturating_add(u64::from(count > 0)));
        count += 1;
        total > budget
    });
    if let Some(j) = cut {
        for (i, out) in out.iter_mut().enumerate().take(j) {
            *out = droppable(i);
        }
    }
    out
}

/// [`certainly_dropped`] with what it leaves out counted: which items
/// (of `items`, by their floors) a read under `budget` may leave out, and
/// the [`Elided`] that says so (their count and their texts' bytes). The
/// one place a read within the budget decides what not to read again.
pub fn certainly_elided(items: &[ItemFloor], budget: u64) -> (Vec<bool>, Elided) {
    let dropped = certainly_dropped(items, budget);
    let elided = Elided::counted(&dropped, |i| items[i].bytes);
    (dropped, elided)
}

impl Elided {
    /// The items marked in `dropped`, counted with the UTF-8 bytes of each
    /// one's text (`bytes(i)`).
    pub fn counted(dropped: &[bool], bytes: impl Fn(usize) -> u64) -> Elided {
        let mut elided = Elided::default();
        for (i, _) in dropped.iter().enumerate().filter(|(_, d)| **d) {
            elided.messages += 1;
            elided.bytes += bytes(i);
        }
        elided
    }
}

/// Redacts the credentials of one item's text in place; returns how many
/// were replaced. A literal that certainly holds none is not decoded; a text
/// that cannot be decoded (a lone surrogate) is left as it is: retention
/// fails the source if it keeps it, and drops it otherwise.
pub fn redact_item(item: &mut Item<'_>) -> u32 {
    if item.text.json_literal().is_some_and(|lit| !crate::harden::secrets::may_hold_secret(lit)) {
        return 0;
    }
    let Ok(text) = item.text.decode() else { return 0 };
    let (redacted, n) = crate::harden::secrets::redact(&text);
    if n > 0 {
        let owned = redacted.into_owned();
        item.text = ItemText::decoded(owned.into());
    }
    n as u32
}

/// Which way a [`window`] grows from its anchor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grow {
    /// The anchor and the items after it (a page read forward).
    Forward,
    /// The anchor and the items before it (a page read backward, or the
    /// newest messages).
    Backward,
    /// The anchor and the items on both sides of it, one before, then one
    /// after, and so on; when one side is exhausted or its next item does
    /// not fit, the other side goes on alone.
    Around,
}

/// The run `lo..=hi` of whole items around `anchor` (of `n`) that grows as
/// `grow` says, one item at a time, while the sizes of its items plus one
/// separator byte between two of them fit in `room`: growth on a side stops
/// at the first item that does not fit, so the run is contiguous and always
/// holds the anchor. `None` when the anchor alone does not fit (its text
/// must then be cut: [`cut_to_fit`]). `size(i)` is asked once per item
/// looked at, in the order they are looked at (at most two beyond the run),
/// so it may prepare an item (redact it) before measuring it.
pub fn window(
    n: usize,
    anchor: usize,
    grow: Grow,
    room: u64,
    mut size: impl FnMut(usize) -> u64,
) -> Option<(usize, usize)> {
    debug_assert!(anchor < n);
    let mut total = size(anchor);
    if total > room {
        return None;
    }
    let (mut lo, mut hi) = (anchor, anchor);
    let (mut before, mut after) = match grow {
        Grow::Forward => (false, true),
        Grow::Backward => (true, false),
        Grow::Around => (true, true),
    };
    let mut before_next = true;
    while before || after {
        let take_before = if before && after { before_next } else { before };
        let next = if take_before { lo.checked_sub(1) } else { Some(hi + 1).filter(|&i| i < n) };
        let grown = next.and_then(|i| {
            let with = total + size(i) + 1;
            (with <= room).then_some((i, with))
        });
        match grown {
            Some((i, with)) => {
                total = with;
                if take_before {
                    lo = i;
                } else {
                    hi = i;
                }
                before_next = !take_before;
            }
            None if take_before => before = false,
            None => after = false,
        }
    }
    Some((lo, hi))
}

/// Cuts the text of one item head/tail (§4.4) so that the item fits in
/// `room` bytes, where the item is written as `envelope` bytes (everything
/// but its text's tag-safe literal, which must include at least what a
/// source object's item has: `{"role":"…","text":}`) plus that literal: the
/// truncate phase of [`retain_with`] on this one item, so the cut is the
/// one a reference makes. Returns the item with its cut text and the bytes
/// omitted (`N` of the omission notice); `None` when not even an empty
/// text fits; `Err` when the text cannot be decoded.
pub fn cut_to_fit<'a>(
    item: Item<'a>,
    envelope: usize,
    room: u64,
    escape_invisible: bool,
) -> Result<Option<(Item<'a>, u64)>, String> {
    // `retain_with` measures the item as `item_size`; the rest of the
    // envelope is counted as the fixed part of the object.
    let fixed = envelope.saturating_sub(item_size(&item, 0));
    Ok(retain_with(vec![item], fixed, room, escape_invisible)?
        .and_then(|r| Some((r.items.into_iter().next()?, r.omitted_bytes))))
}

/// What [`redact_retainable`] replaced, per item.
#[derive(Debug)]
pub struct Redactions {
    /// Credentials replaced in each item's text (0 for texts not scanned).
    counts: Vec<u32>,
    /// Whether retention may drop the item (neither a checkpoint nor the newest).
    droppable: Vec<bool>,
}

impl Redactions {
    /// The credentials replaced in the texts retention kept, given how many
    /// items it dropped: retention drops the oldest droppable items
    /// (`docs/contract.md` §4), so those are the ones left out.
    pub fn retained(&self, omitted_messages: usize) -> u64 {
        let mut dropped = 0;
        let mut total = 0u64;
        for (&n, &droppable) in self.counts.iter().zip(&self.droppable) {
            if droppable && dropped < omitted_messages {
                dropped += 1;
            } else {
                total += u64::from(n);
            }
        }
        total
    }
}

/// Redacts, before retention, the credentials of every text that retention
/// may keep under `budget`: every checkpoint and the newest item (never
/// dropped), and the other items from the newest back to the first whose
/// redacted size takes the total over the budget. Retention measures no
/// other text (it keeps a run of the newest items and stops at the first
/// that does not fit, its total being at least the sum counted here), so
/// the budget applies to redacted texts, and older texts, which the budget
/// drops unread, are never decoded: on a large session this is most of
/// them. `fixed` is the size of the source object without its items.
pub fn redact_retainable(items: &mut [Item<'_>], fixed: usize, budget: u64, escape_invisible: bool) -> Redactions {
    let n = items.len();
    let droppable: Vec<bool> = items.iter().enumerate().map(|(i, item)| i + 1 < n && !item.checkpoint).collect();
    let mut counts = vec![0u32; n];
    let mut total = fixed as u64;
    for i in (0..n).rev() {
        let within = total <= budget;
        if within || !droppable[i] {
            counts[i] = redact_item(&mut items[i]);
        }
        if within {
            let len = items[i].text.tag_safe_len_with(escape_invisible);
            total += item_size(&items[i], len) as u64 + 1;
        }
    }
    Redactions { counts, droppable }
}
