//! Texts a JSONL reader keeps by where they are, not by what they say: the
//! read under a budget and the streamed read that the Claude Code and Codex
//! readers share.
//!
//! A pass over the file classifies its lines into the conversation's items
//! as the whole read does, but keeps of each text only its line's offset,
//! length and checksum, which text of the line it is and its UTF-8 bytes
//! ([`TextAt`]). Then:
//!
//! - [`within`]: a read under a budget also holds, as it reads, the texts
//!   retention may still keep ([`Places::holding`]): the newest ones, going
//!   back from the newest as retention does until their lengths pass the
//!   budget, and the checkpoints'; older ones are let go as newer ones
//!   arrive. At the end the items retention certainly drops under the
//!   budget ([`certainly_dropped_by`]) are left out and counted, a size
//!   floor ([`text_floor`], a scan for credentials) measured only where
//!   retention's walk reaches, and of the texts of the others only those
//!   let go are read again, from the same open file: while the
//!   conversation is its texts in the order they were read (and none that
//!   retention reaches may hold a credential), none are, and the file is
//!   read once;
//! - [`PlacedItems`]: each pass over the items reads their lines again, one
//!   item at a time (the search index's first build).
//!
//! A line read again must be the line the first pass read (same length,
//! same checksum, a text of the same length): otherwise the file changed
//! under the read, and the reader reads it whole again rather than mix two
//! versions.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io;
use std::ops::ControlFlow;

use crate::conversation::ConversationItem;
use crate::error::HostError;
use crate::host::StreamedItems;
use crate::projection::{Item, Role};
use crate::retention::{certainly_dropped_by, text_floor, Elided, ItemFloor};
use crate::sources::file_source::line_checksum;

/// What a read keeps of the texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// None (a read for the title).
    Nothing,
    /// Every text.
    Texts,
    /// Where each text is (a read under a budget, a streamed read).
    Places,
}

/// Which text of its line a kept text is, as a reader names it: what it
/// needs to find the text again in the line's bytes.
pub(crate) trait LineText: Copy + Send + 'static {
    /// The text `self` names in `line` (`None` when the line does not hold
    /// it: not the line the first pass read).
    fn text_in(self, line: &[u8]) -> Option<String>;
}

/// A text kept by where it is: its line (offset, length and checksum, to
/// read it again and know it is the same line), which of its texts it is
/// (`what`), its UTF-8 bytes and its floor ([`text_floor`]; [`UNMEASURED`]
/// until a read under a budget needs it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TextAt<W> {
    offset: u64,
    checksum: u64,
    /// Lines are at most `MAX_LINE_BYTES` (64 MiB), so their lengths,
    /// their texts' and their floors fit 32 bits.
    len: u32,
    bytes: u32,
    floor: u32,
    what: W,
}

/// The floor of a text not measured yet.
const UNMEASURED: u32 = u32::MAX;

/// The floor of `text` as a [`TextAt`] keeps it (a floor that does not
/// fit is 0, still a floor).
fn measured(text: &str) -> u32 {
    u32::try_from(text_floor(text)).unwrap_or(0).min(UNMEASURED - 1)
}

/// How a read under a budget holds a text as it keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hold {
    /// Among the newest texts: held until newer ones certainly fill the
    /// budget.
    Newest,
    /// The newest text of a run whose texts are joined into one item
    /// (one Claude Code response), as [`Hold::Newest`] but, as the joined
    /// item's floor is 0, counted as nothing when older texts are let go.
    Joined,
    /// A checkpoint's (never dropped): held until [`Places::unpin`].
    Pinned,
    /// Not held (a text the conversation as read so far does not show).
    No,
}

/// What a read under a budget holds of the texts while it reads.
struct Holding {
    budget: u64,
    /// The newest texts, in the order they were kept (so by id), each
    /// with whether it counts when older ones are let go.
    newest: VecDeque<(u32, String, bool)>,
    /// The UTF-8 bytes of `newest`'s texts, and what they were after the
    /// last let-go.
    bytes: usize,
    after: usize,
    /// The texts of checkpoints.
    pinned: Vec<(u32, String)>,
}

/// The bytes a read under a budget holds beyond what it held after it
/// last let texts go, at the least, before it lets go again; also at least
/// the budget (each let-go walks back over the texts the budget holds).
const MIN_HOLD_SLACK: usize = 1 << 16;

impl Holding {
    fn hold(&mut self, id: u32, text: String, hold: Hold) {
        match hold {
            Hold::No => {}
            Hold::Pinned => self.pinned.push((id, text)),
            Hold::Newest | Hold::Joined => {
                if hold == Hold::Joined {
                    // The text before it in the same run counts as nothing
                    // too (it is the run's first, or already so).
                    if let Some(last) = self.newest.back_mut() {
                        last.2 = false;
                    }
                }
                self.bytes += text.len();
                self.newest.push_back((id, text, hold == Hold::Newest));
                let slack = usize::try_from(self.budget).unwrap_or(usize::MAX).max(MIN_HOLD_SLACK);
                if self.bytes > self.after.saturating_add(slack) {
                    self.let_go();
                }
            }
        }
    }

    /// Lets go of the texts retention drops if the conversation is the
    /// newest texts in the order they were kept and none may hold a
    /// credential: going back from the newest as
    /// `retention::certainly_dropped_by` does (the newest is never dropped;
    /// checkpoints and the items' envelopes count nothing), each text at
    /// its UTF-8 length, the texts before the first that does not fit. A
    /// text's floor is at least its length unless it may hold a credential
    /// (its floor is then 0, so retention may keep more): measuring none
    /// here, the read scans no text for credentials but those retention's
    /// own walk reaches at the end, and a text let go that it keeps after
    /// all is read again.
    fn let_go(&mut self) {
        let mut total = 0u64;
        let mut cut = 0;
        for (k, (_, text, counts)) in self.newest.iter().enumerate().rev() {
            let bytes = if *counts { text.len() as u64 } else { 0 };
            let newest = k + 1 == self.newest.len();
            total = total.saturating_add(bytes).saturating_add(u64::from(!newest));
            crate::work::add(1);
            if !newest && total > self.budget {
                cut = k;
                break;
            }
        }
        for (_, text, _) in self.newest.drain(..cut) {
            self.bytes -= text.len();
        }
        self.after = self.bytes;
    }

    /// The text `id`, if it is held.
    fn get(&self, id: u32) -> Option<&str> {
        match self.newest.binary_search_by_key(&id, |e| e.0) {
            Ok(k) => Some(self.newest[k].1.as_str()),
            Err(_) => self.pinned.iter().find(|e| e.0 == id).map(|e| e.1.as_str()),
        }
    }

    /// Takes the text `id` out, if it is held.
    fn take(&mut self, id: u32) -> Option<String> {
        if let Ok(k) = self.newest.binary_search_by_key(&id, |e| e.0) {
            let text = std::mem::take(&mut self.newest[k].1);
            self.bytes -= text.len();
            return Some(text);
        }
        self.pinned.iter_mut().find(|e| e.0 == id).map(|e| std::mem::take(&mut e.1))
    }
}

/// A text as a read keeps it: the text itself, or (a read by places) where
/// it is and its hash. Texts compare equal when they are the same text (by
/// their keyed hash when one is not held).
#[derive(Clone, Debug)]
pub(crate) enum Txt {
    /// The text.
    Held(String),
    /// The text of the read's `texts[id]`; `hash` is [`text_hash`] of it.
    At { id: usize, hash: u64 },
    /// The texts of several lines (`texts[id]` each), joined with `"\n"`
    /// (the lines of one Claude Code response).
    Joined(Vec<usize>),
}

impl Default for Txt {
    fn default() -> Self {
        Txt::Held(String::new())
    }
}

/// The keyed hash a text not held is compared by (keys drawn once per
/// process, so no log can be written to make two texts collide).
pub(crate) fn text_hash(text: &str) -> u64 {
    std::hash::BuildHasher::hash_one(keys(), text)
}

/// The keys of [`text_hash`].
fn keys() -> &'static std::collections::hash_map::RandomState {
    static KEYS: std::sync::LazyLock<std::collections::hash_map::RandomState> =
        std::sync::LazyLock::new(Default::default);
    &KEYS
}

impl Txt {
    /// What equal texts share.
    fn key(&self) -> u64 {
        match self {
            Txt::Held(s) => text_hash(s),
            Txt::At { hash, .. } => *hash,
            Txt::Joined(ids) => std::hash::BuildHasher::hash_one(keys(), ids),
        }
    }
}

impl PartialEq for Txt {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Txt::Held(a), Txt::Held(b)) => a == b,
            (Txt::Joined(a), Txt::Joined(b)) => a == b,
            _ => self.key() == other.key(),
        }
    }
}

impl Eq for Txt {}

impl std::hash::Hash for Txt {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.key());
    }
}

/// The string of a text a read of the texts holds (it holds every text).
pub(crate) fn held(t: Txt) -> String {
    debug_assert!(matches!(t, Txt::Held(_)), "a read of the texts holds every text");
    match t {
        Txt::Held(s) => s,
        _ => String::new(),
    }
}

/// The texts a first pass keeps by where they are, in the order it met
/// them (a text's id is its number here), and what a read under a budget
/// holds of them.
pub(crate) struct Places<W> {
    texts: Vec<TextAt<W>>,
    holding: Option<Holding>,
}

impl<W> Default for Places<W> {
    fn default() -> Self {
        Places { texts: Vec::new(), holding: None }
    }
}

impl<W: LineText> Places<W> {
    /// Places for a read under `budget`, which holds the texts retention
    /// may still keep as it reads ([`Hold`]).
    pub(crate) fn holding(budget: u64) -> Self {
        let holding = Holding { budget, newest: VecDeque::new(), bytes: 0, after: 0, pinned: Vec::new() };
        Places { texts: Vec::new(), holding: Some(holding) }
    }

    /// Keeps `text`, the `what` text of the line `line` read at `offset`
    /// (`checksum`: the line's, computed on first use and shared by the
    /// line's texts), held as `hold` says in a read under a budget, and
    /// gives it as kept.
    pub(crate) fn keep(
        &mut self,
        offset: u64,
        line: &[u8],
        checksum: &mut Option<u64>,
        text: String,
        what: W,
        hold: Hold,
    ) -> Txt {
        let id = self.texts.len();
        let checksum = *checksum.get_or_insert_with(|| line_checksum(line));
        let fit = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let hash = text_hash(&text);
        self.texts.push(TextAt {
            offset,
            checksum,
            len: fit(line.len()),
            bytes: fit(text.len()),
            floor: UNMEASURED,
            what,
        });
        if let Some(holding) = &mut self.holding {
            holding.hold(fit(id), text, hold);
        }
        Txt::At { id, hash }
    }

    /// Lets go of the checkpoints' texts held so far (a later compaction
    /// took them off the conversation).
    pub(crate) fn unpin(&mut self) {
        if let Some(holding) = &mut self.holding {
            holding.pinned.clear();
        }
    }

    /// UTF-8 bytes of a text.
    pub(crate) fn bytes(&self, t: &Txt) -> u64 {
        match t {
            Txt::Held(s) => s.len() as u64,
            Txt::At { id, .. } => u64::from(self.texts[*id].bytes),
            Txt::Joined(ids) => self.joined_bytes(ids.iter().copied()),
        }
    }

    /// UTF-8 bytes of the texts `ids` joined with `"\n"`.
    fn joined_bytes(&self, ids: impl ExactSizeIterator<Item = usize>) -> u64 {
        let n = ids.len();
        ids.map(|id| u64::from(self.texts[id].bytes)).sum::<u64>() + n.saturating_sub(1) as u64
    }

    /// The text `id` read again from `file` into `buf`: `None` when its
    /// line is not the line the first pass read there (length, checksum,
    /// its text's length).
    fn again(&self, file: &mut File, id: usize, buf: &mut Vec<u8>) -> io::Result<Option<String>> {
        use std::io::{Read, Seek, SeekFrom};
        let at = &self.texts[id];
        buf.clear();
        buf.resize(at.len as usize, 0);
        file.seek(SeekFrom::Start(at.offset))?;
        match file.read_exact(buf) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            r => r?,
        }
        crate::work::line_read(buf.len());
        if line_checksum(buf) != at.checksum {
            return Ok(None);
        }
        Ok(at.what.text_in(buf).filter(|t| t.len() as u64 == u64::from(at.bytes)))
    }

    /// The floor of the text `id`, measured on first use from the text held
    /// or read again (kept in `again`) from `file`: `None` when its line is
    /// not the line the first pass read.
    fn floor(
        &mut self,
        id: u32,
        file: &mut File,
        again: &mut HashMap<u32, String>,
        buf: &mut Vec<u8>,
    ) -> io::Result<Option<u64>> {
        let k = id as usize;
        if self.texts[k].floor != UNMEASURED {
            return Ok(Some(u64::from(self.texts[k].floor)));
        }
        let floor = match self.holding.as_ref().and_then(|h| h.get(id)) {
            Some(text) => measured(text),
            None => match again.entry(id) {
                std::collections::hash_map::Entry::Occupied(held) => measured(held.get()),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    let Some(text) = self.again(file, k, buf)? else { return Ok(None) };
                    measured(slot.insert(text))
                }
            },
        };
        self.texts[k].floor = floor;
        Ok(Some(u64::from(floor)))
    }
}

/// One item of the conversation, its text as the read keeps it.
#[derive(Debug)]
pub(crate) struct Said {
    pub role: Role,
    pub checkpoint: bool,
    pub text: Txt,
}

impl Said {
    /// A plain message.
    pub(crate) fn new(role: Role, text: Txt) -> Said {
        Said { role, checkpoint: false, text }
    }

    /// A compaction checkpoint (user role).
    pub(crate) fn checkpoint(text: Txt) -> Said {
        Said { role: Role::User, checkpoint: true, text }
    }

    /// The item, its text made by `text`.
    pub(crate) fn into_item(self, text: impl FnOnce(Txt) -> String) -> ConversationItem {
        ConversationItem { role: self.role, text: text(self.text), checkpoint: self.checkpoint }
    }
}

/// How an item's text is kept in [`Slots`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// `held[text]`.
    Held,
    /// The text `text` of the [`Places`].
    At,
    /// The texts of the places `parts[ends[text - 1]..ends[text]]`, joined
    /// with `"\n"`.
    Joined,
}

/// One item as the later passes keep it (8 bytes).
#[derive(Clone, Copy, Debug)]
struct Slot {
    text: u32,
    role: Role,
    checkpoint: bool,
    form: Form,
}

/// The items of a first pass as the passes after it keep them: a fixed
/// record an item (its role and where its text is), where each [`Said`]
/// took 40 bytes with its hash; the texts it holds and the lists of joined
/// texts each in one list.
struct Slots {
    items: Vec<Slot>,
    held: Vec<String>,
    parts: Vec<u32>,
    ends: Vec<u32>,
}

/// A number that fits 32 bits, else an error (over 4 billion texts).
fn num(n: usize) -> io::Result<u32> {
    u32::try_from(n).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "more than 4 billion texts in one log"))
}

impl Slots {
    fn new(said: Vec<Said>) -> io::Result<Slots> {
        let mut slots =
            Slots { items: Vec::with_capacity(said.len()), held: Vec::new(), parts: Vec::new(), ends: Vec::new() };
        for s in said {
            let (form, text) = match s.text {
                Txt::Held(t) => {
                    slots.held.push(t);
                    (Form::Held, num(slots.held.len() - 1)?)
                }
                Txt::At { id, .. } => (Form::At, num(id)?),
                Txt::Joined(ids) => {
                    for id in ids {
                        slots.parts.push(num(id)?);
                    }
                    slots.ends.push(num(slots.parts.len())?);
                    (Form::Joined, num(slots.ends.len() - 1)?)
                }
            };
            slots.items.push(Slot { text, role: s.role, checkpoint: s.checkpoint, form });
        }
        Ok(slots)
    }

    /// The places an item's text is read from (none for a held one).
    fn ids<'a>(&'a self, slot: &'a Slot) -> &'a [u32] {
        match slot.form {
            Form::Held => &[],
            Form::At => std::slice::from_ref(&slot.text),
            Form::Joined => {
                let k = slot.text as usize;
                let start = if k == 0 { 0 } else { self.ends[k - 1] as usize };
                &self.parts[start..self.ends[k] as usize]
            }
        }
    }

    /// UTF-8 bytes of an item's text.
    fn bytes<W: LineText>(&self, slot: &Slot, places: &Places<W>) -> u64 {
        match slot.form {
            Form::Held => self.held[slot.text as usize].len() as u64,
            Form::At => u64::from(places.texts[slot.text as usize].bytes),
            Form::Joined => places.joined_bytes(self.ids(slot).iter().map(|&id| id as usize)),
        }
    }

    /// An item's text, its places' texts given by `part`.
    fn text<'p>(&self, slot: &Slot, part: &dyn Fn(u32) -> &'p str) -> String {
        match slot.form {
            Form::Held => self.held[slot.text as usize].clone(),
            Form::At => part(slot.text).to_owned(),
            Form::Joined => self.ids(slot).iter().map(|&id| part(id)).collect::<Vec<_>>().join("\n"),
        }
    }
}

/// The conversation of a first pass (`said`, its texts at `places`) for a
/// prompt of `budget` bytes: without the items retention certainly drops
/// under it (counted in the [`Elided`]; only items with a text are
/// retained, so only they count). An item's floor (`retention::text_floor`
/// of its text; a joined text's is 0, as its parts joined might hold a
/// credential none holds) is measured only where retention's walk reaches,
/// from the text held or, if it was let go, read again; the texts of the
/// items kept are those held, the others read again from `file` in file
/// order. `None` when a line read again is not the line the first pass
/// read.
pub(crate) fn within<W: LineText>(
    said: Vec<Said>,
    places: &mut Places<W>,
    file: &mut File,
    budget: u64,
) -> io::Result<Option<(Vec<ConversationItem>, Elided)>> {
    let slots = Slots::new(said)?;
    let shown: Vec<usize> = (0..slots.items.len()).filter(|&k| slots.bytes(&slots.items[k], places) > 0).collect();
    let fixed: Vec<bool> = shown.iter().map(|&k| slots.items[k].checkpoint).collect();
    // The texts let go that the walk needs (it keeps each one it reaches).
    let mut got: HashMap<u32, String> = HashMap::new();
    let mut buf = Vec::new();
    let mut failed: Option<io::Result<()>> = None;
    let dropped = certainly_dropped_by(
        &fixed,
        |i| {
            let s = &slots.items[shown[i]];
            let text_floor = match s.form {
                Form::Held => text_floor(&slots.held[s.text as usize]),
                Form::Joined => 0,
                Form::At if failed.is_some() => 0,
                Form::At => match places.floor(s.text, file, &mut got, &mut buf) {
                    Ok(Some(floor)) => floor,
                    Ok(None) => {
                        failed = Some(Ok(()));
                        0
                    }
                    Err(e) => {
                        failed = Some(Err(e));
                        0
                    }
                },
            };
            ItemFloor::parts(s.role, s.checkpoint, text_floor, 0).floor
        },
        budget,
    );
    match failed {
        Some(Ok(())) => return Ok(None),
        Some(Err(e)) => return Err(e),
        None => {}
    }
    drop(fixed);
    let elided = Elided::counted(&dropped, |i| slots.bytes(&slots.items[shown[i]], places));
    let mut left_out = vec![false; slots.items.len()];
    for (&k, _) in shown.iter().zip(&dropped).filter(|(_, d)| **d) {
        left_out[k] = true;
    }
    drop((shown, dropped));
    let mut wanted: Vec<u32> = Vec::new();
    for (s, _) in slots.items.iter().zip(&left_out).filter(|(_, out)| !**out) {
        wanted.extend(slots.ids(s));
    }
    wanted.sort_by_key(|&id| places.texts[id as usize].offset);
    wanted.dedup();
    for id in wanted {
        if got.contains_key(&id) {
            continue;
        }
        let text = match places.holding.as_mut().and_then(|h| h.take(id)) {
            Some(text) => text,
            None => match places.again(file, id as usize, &mut buf)? {
                Some(text) => text,
                None => return Ok(None),
            },
        };
        got.insert(id, text);
    }
    // Nothing else held is needed.
    places.holding = None;
    let part = |id: u32| got.get(&id).map_or("", String::as_str);
    let items = slots
        .items
        .iter()
        .zip(left_out)
        .filter(|(_, out)| !out)
        .map(|(s, _)| ConversationItem { role: s.role, text: slots.text(s, &part), checkpoint: s.checkpoint })
        .collect();
    Ok(Some((items, elided)))
}

/// A conversation's items, each read when it is given: the items of a
/// first pass and where their texts are, with the file open to read them
/// again.
pub(crate) struct PlacedItems<W> {
    slots: Slots,
    places: Places<W>,
    file: File,
}

impl<W: LineText> PlacedItems<W> {
    /// The items `said` of a first pass, their texts at `places` in `file`
    /// (the places held for as long as the items are read: without the
    /// slack their vector grew with).
    pub(crate) fn new(said: Vec<Said>, mut places: Places<W>, file: File) -> io::Result<Self> {
        places.texts.shrink_to_fit();
        Ok(PlacedItems { slots: Slots::new(said)?, places, file })
    }

    /// Calls `f` with each item, in order, its text read again (checked as
    /// [`within`] checks it), until `f` returns `None`; `None` then, or
    /// when a line read again is not the line the first pass read.
    pub(crate) fn each_conversation_item(
        &mut self,
        mut f: impl FnMut(&ConversationItem) -> Option<()>,
    ) -> io::Result<Option<()>> {
        let mut buf = Vec::new();
        let mut got: HashMap<u32, String> = HashMap::new();
        for s in &self.slots.items {
            got.clear();
            for &id in self.slots.ids(s) {
                match self.places.again(&mut self.file, id as usize, &mut buf)? {
                    Some(text) => got.insert(id, text),
                    None => return Ok(None),
                };
            }
            let text = self.slots.text(s, &|id| got.get(&id).map_or("", String::as_str));
            if f(&ConversationItem { role: s.role, text, checkpoint: s.checkpoint }).is_none() {
                return Ok(None);
            }
        }
        Ok(Some(()))
    }
}

/// Each pass reads the texts again; a line that is not the line the first
/// pass read is an error (the caller then reads the log whole).
impl<W: LineText> StreamedItems for PlacedItems<W> {
    fn each_item(&mut self, f: &mut dyn FnMut(&Item<'_>) -> ControlFlow<()>) -> Result<ControlFlow<()>, HostError> {
        let mut flow = ControlFlow::Continue(());
        let read = self.each_conversation_item(|item| match item.projected() {
            Some(item) => {
                flow = f(&item);
                flow.is_continue().then_some(())
            }
            None => Some(()),
        });
        match read.map_err(|e| HostError::new(e.to_string()))? {
            Some(()) => Ok(ControlFlow::Continue(())),
            None if flow.is_break() => Ok(ControlFlow::Break(())),
            None => Err(HostError::new("the log changed while it was read")),
        }
    }
}
