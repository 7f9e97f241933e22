//! One Claude Code transcript read into its current model-visible
//! conversation (the rules are in the parent module's docs).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;

use std::collections::VecDeque;
use std::sync::Arc;

use serde::Deserialize;

use super::text::typed_text;
use crate::fs::as_of_now;
use crate::host::StreamedItems;
use crate::projection::Role;
use crate::retention::Elided;
use crate::sources::foreign::{each_line, each_line_at, iso_ms, title_from_text, LineStats};
use crate::sources::lenient::{lenient, Content, LBool, LStr};
use crate::sources::placed::{self, held, Hold, Keep, LineText, PlacedItems, Places, Said, Txt};

use super::chain::{Interner, Stamp, Stamps, Ts, NONE};
use super::project::{uuid_hash, Head, HeadFields, Winners};
use crate::sources::foreign::Transcript;

/// The text of a checkpoint whose summary line is missing.
pub const MISSING_SUMMARY: &str = "[The earlier conversation was compacted; its summary is not in the transcript.]";

#[derive(Deserialize, Default)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: LStr<'a>,
    #[serde(borrow, default)]
    model: LStr<'a>,
    #[serde(borrow, default)]
    content: Content<'a>,
}

#[derive(Deserialize, Default)]
struct Preserved<'a> {
    #[serde(rename = "anchorUuid", borrow, default)]
    anchor: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    uuids: Option<Vec<LStr<'a>>>,
    #[serde(rename = "headUuid", borrow, default)]
    head: LStr<'a>,
    #[serde(rename = "tailUuid", borrow, default)]
    tail: LStr<'a>,
}

#[derive(Deserialize, Default)]
struct CompactMeta<'a> {
    #[serde(rename = "preservedMessages", borrow, default, deserialize_with = "lenient")]
    messages: Option<Preserved<'a>>,
    #[serde(rename = "preservedSegment", borrow, default, deserialize_with = "lenient")]
    segment: Option<Preserved<'a>>,
}

#[derive(Deserialize, Default)]
struct Attachment<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(rename = "commandMode", borrow, default)]
    mode: LStr<'a>,
    #[serde(borrow, default)]
    prompt: Content<'a>,
}

/// The fields of a line a read uses; everything else is skipped.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    uuid: LStr<'a>,
    #[serde(rename = "parentUuid", default, deserialize_with = "present")]
    parent: Option<LStr<'a>>,
    #[serde(rename = "isSidechain", default)]
    sidechain: LBool,
    #[serde(rename = "isMeta", default)]
    meta: LBool,
    #[serde(rename = "isCompactSummary", default)]
    compact_summary: LBool,
    #[serde(rename = "isApiErrorMessage", default)]
    api_error: LBool,
    #[serde(borrow, default)]
    subtype: LStr<'a>,
    #[serde(borrow, default)]
    timestamp: LStr<'a>,
    #[serde(borrow, default)]
    cwd: LStr<'a>,
    #[serde(borrow, default)]
    version: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    message: Option<Message<'a>>,
    #[serde(rename = "compactMetadata", borrow, default, deserialize_with = "lenient")]
    compact: Option<CompactMeta<'a>>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    attachment: Option<Attachment<'a>>,
    #[serde(borrow, default)]
    summary: LStr<'a>,
    #[serde(rename = "leafUuid", borrow, default)]
    leaf: LStr<'a>,
    #[serde(rename = "customTitle", borrow, default)]
    custom_title: LStr<'a>,
    #[serde(rename = "aiTitle", borrow, default)]
    ai_title: LStr<'a>,
    #[serde(borrow, default)]
    operation: LStr<'a>,
    #[serde(borrow, default)]
    content: Content<'a>,
}

/// `parentUuid` present (even `null`) versus absent (a legacy file).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<LStr<'de>>, D::Error> {
    LStr::deserialize(d).map(Some)
}

/// How many bytes at the end of a transcript a title read looks at first.
pub const TAIL_BYTES: u64 = 64 << 10;

#[derive(Deserialize)]
struct TitleLine<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(rename = "customTitle", borrow, default)]
    custom_title: LStr<'a>,
}

/// The latest `custom-title` when one is among the complete lines of the
/// last [`TAIL_BYTES`] of the file (Claude Code re-appends titles near the
/// end). Being the last in the file, it is the title; `None` means the
/// whole file must be read to tell.
pub fn tail_custom_title(mut file: File, size: u64) -> io::Result<Option<String>> {
    use std::io::{Read, Seek, SeekFrom};
    let start = size.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut title = None;
    let mut first = start > 0;
    each_line(file.take(size - start), u64::MAX, |_, bytes| {
        // The first line of a window that starts mid-file may be partial.
        if std::mem::take(&mut first) {
            return true;
        }
        let Ok(line) = serde_json::from_slice::<TitleLine<'_>>(bytes) else { return false };
        if line.kind.get() == Some("custom-title") {
            if let Some(t) = line.custom_title.owned().filter(|t| !t.trim().is_empty()) {
                title = Some(t);
            }
        }
        true
    })?;
    Ok(title)
}

/// Which text of its line a text kept by where it is is ([`text_of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Extract {
    /// A user line's typed text.
    Typed,
    /// A compaction summary's full text.
    Summary,
    /// An assistant line's text blocks, joined.
    Answer,
    /// A `queued_command` attachment's prompt.
    Queued,
    /// A `queue-operation` line's prompt.
    Operation,
}

/// The `what` text of a line (`message`: its message, or an empty one).
fn text_of(line: &Line<'_>, message: &Message<'_>, what: Extract) -> Option<String> {
    match what {
        Extract::Typed => typed(&message.content),
        Extract::Summary => full_text(&message.content),
        Extract::Answer => join(message.content.texts(&["text"]).map(str::to_owned)),
        Extract::Queued => line.attachment.as_ref().and_then(|a| typed(&a.prompt)),
        Extract::Operation => typed(&line.content),
    }
}

impl LineText for Extract {
    fn text_in(self, line: &[u8]) -> Option<String> {
        let line = serde_json::from_slice::<Line<'_>>(line).ok()?;
        let empty = Message::default();
        text_of(&line, line.message.as_ref().unwrap_or(&empty), self)
    }
}

/// What a chain line says; its text and what a boundary preserved are
/// numbers in the read's lists ([`NONE`]: none), so a node is a fixed-size
/// record.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// A user line: its typed text, or for a compaction summary (`summary`)
    /// its full text (none when nothing is left).
    User { text: u32, summary: bool },
    /// An assistant line's text blocks, joined, and its `message.id`
    /// (interned).
    Assistant { text: u32, msg_id: u32 },
    /// A compact boundary and what it preserved.
    Boundary { preserved: u32 },
    /// A queued prompt attachment (a steering prompt).
    Queued { text: u32 },
    /// Any other chain line (system notes, progress, attachments).
    Other,
}

/// `t` kept in `list`, by its number there ([`NONE`]: no `t`). The lists
/// hold at most one entry a node, and nodes are numbered by `u32`.
fn put<T>(list: &mut Vec<T>, t: Option<T>) -> u32 {
    match t {
        Some(t) => {
            list.push(t);
            (list.len() - 1) as u32
        }
        None => NONE,
    }
}

/// What a compact boundary preserved: an anchor and either the uuids
/// (`preservedMessages`) or a segment from head to tail (`preservedSegment`).
#[derive(Clone, Debug)]
struct Kept {
    anchor: String,
    uuids: Vec<String>,
    segment: Option<(String, String)>,
}

/// One chain line: its uuid and parent (numbers of [`Names`]), and what
/// it says: a fixed-size record (strings are held once elsewhere; its
/// timestamp, kept only by a read of the texts, in a list beside).
#[derive(Clone, Copy, Debug)]
struct Node {
    uuid: u32,
    /// [`NONE`]: no parent.
    parent: u32,
    /// Its number in the read's cwds ([`NONE`]: none).
    cwd: u32,
    sidechain: bool,
    kind: Kind,
}

/// The uuids a transcript names (its lines', their parents'), each held
/// once, exactly ([`Interner`]), and known by its number, with the line
/// that has it, if any: a node holds numbers, not strings.
#[derive(Default)]
struct Names {
    ids: Interner,
    /// Name → its node ([`NONE`]: none).
    node: Vec<u32>,
}

impl Names {
    /// The number of the uuid `s` (`None`: `u32::MAX - 1` names already).
    fn intern(&mut self, s: &str) -> Option<u32> {
        let n = self.ids.intern(s)?;
        if n as usize == self.node.len() {
            self.node.push(NONE);
        }
        Some(n)
    }

    fn get(&self, s: &str) -> Option<u32> {
        self.ids.get(s)
    }

    /// The node named `name`.
    fn node(&self, name: u32) -> Option<usize> {
        self.node.get(name as usize).copied().filter(|&i| i != NONE).map(|i| i as usize)
    }

    /// The node of the uuid `s`.
    fn node_of(&self, s: &str) -> Option<usize> {
        self.get(s).and_then(|n| self.node(n))
    }
}

/// Prompts queued while the model worked, oldest first (`None`: one that
/// is not typed text). Taking the oldest, and taking the oldest with a
/// given text, each cost constant time (amortized), so a transcript of many
/// queued prompts is read in linear time (a scan of the queue for each
/// delivery was quadratic).
#[derive(Default)]
struct PromptQueue {
    /// Every prompt queued, in order; `None` once taken.
    slots: Vec<Option<Option<Txt>>>,
    /// The first slot that may still be queued.
    head: usize,
    /// The slots of each text's hash, oldest first (taken ones are skipped
    /// when met).
    by_hash: HashMap<u64, VecDeque<usize>>,
    hasher: std::collections::hash_map::RandomState,
}

impl PromptQueue {
    fn hash(&self, text: &Option<Txt>) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, text)
    }

    fn push(&mut self, text: Option<Txt>) {
        let h = self.hash(&text);
        self.by_hash.entry(h).or_default().push_back(self.slots.len());
        self.slots.push(Some(text));
    }

    /// Takes the oldest prompt still queued.
    fn pop_front(&mut self) -> Option<Option<Txt>> {
        while let Some(slot) = self.slots.get_mut(self.head) {
            self.head += 1;
            crate::work::add(1);
            if let Some(text) = slot.take() {
                return Some(text);
            }
        }
        None
    }

    /// Takes the oldest prompt still queued whose text is `text`, if any.
    fn remove(&mut self, text: &Option<Txt>) {
        let h = self.hash(text);
        let Some(bucket) = self.by_hash.get_mut(&h) else { return };
        // Taken ones are a prefix of the bucket (unless two texts share a
        // hash, when the search below passes over the other's).
        while bucket.front().is_some_and(|&i| self.slots[i].is_none()) {
            bucket.pop_front();
            crate::work::add(1);
        }
        let found = bucket.iter().position(|&i| self.slots[i].as_ref() == Some(text));
        crate::work::add(found.map_or(bucket.len(), |at| at + 1));
        if let Some(at) = found {
            let i = bucket.remove(at).expect("a position in the bucket");
            self.slots[i] = None;
        }
    }
}

/// Joins texts with `"\n"`, as the message builders do.
fn join(texts: impl Iterator<Item = String>) -> Option<String> {
    let v: Vec<String> = texts.collect();
    (!v.is_empty()).then(|| v.join("\n"))
}

/// The typed text of a user message's content.
fn typed(content: &Content<'_>) -> Option<String> {
    join(content.texts(&["text"]).filter_map(typed_text))
}

fn full_text(content: &Content<'_>) -> Option<String> {
    join(content.texts(&["text"]).map(str::to_owned)).filter(|t| !t.trim().is_empty())
}

/// What a transcript's title is made of: what a source keeps to title it
/// again, without reading it, while it is unchanged and only other files of
/// its project changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TitleParts {
    /// A title that depends on this file only: its latest `custom-title`,
    /// else its latest `ai-title`, else (a transcript of Claude Code 2.1 or
    /// later) its own summary of the newest message of its current path that
    /// has one, else its first typed prompt.
    Own(Option<String>),
    /// A transcript written before Claude Code 2.1 with neither: the
    /// project's summary of the newest message of its current path that has
    /// one (`path`: the hashes of the path's uuids, leaf first), else its
    /// first typed prompt (its `own` summary when the project's summaries
    /// are not known).
    Project {
        /// `uuid_hash` of each uuid of the current path, leaf first.
        path: Vec<u64>,
        /// The title its own summaries give.
        own: Option<String>,
        /// Its first typed prompt, as a title.
        first_prompt: Option<String>,
    },
}

impl TitleParts {
    /// The title, with the summaries of the transcript's project (where
    /// Claude Code wrote them, into other files).
    pub fn title(&self, project: Option<&Winners>) -> Option<String> {
        match self {
            TitleParts::Own(title) => title.clone(),
            TitleParts::Project { path, own, first_prompt } => {
                let summary = match project {
                    Some(w) => path.iter().find_map(|&h| w.get_hashed(h)).map(str::to_owned),
                    None => own.clone(),
                };
                summary.or_else(|| first_prompt.clone())
            }
        }
    }
}

/// Reads a whole transcript as it was when the read began, up to its last
/// complete line (a line a writer is in the middle of is not read). `project` gives the summary titles of its
/// project directory; it is called only when the title may come from them
/// (a transcript written before Claude Code 2.1 with no `custom-title` or
/// `ai-title`). Also gives what the title is made of.
///
/// With `texts` off (a read for the title alone) no text is kept: only the
/// structure of the chain (uuids, parents, boundaries), the title lines and
/// the first typed prompt as a title, so memory is bounded by the number of
/// lines, not by their texts; the conversation then has no items.
pub fn read(
    file: File,
    project: impl FnOnce() -> Option<Arc<Winners>>,
    texts: bool,
) -> io::Result<(Transcript, TitleParts)> {
    let keep = if texts { Keep::Texts } else { Keep::Nothing };
    let (First { transcript, said, .. }, parts) = first_pass(file, project, keep, Places::default())?;
    let items = said.into_iter().map(|s| s.into_item(held)).collect();
    Ok((Transcript { items, ..transcript }, parts))
}

/// Reads a transcript's conversation for a prompt of `budget` bytes, as
/// [`read`] reads it (as it was when the read began), holding what
/// retention may keep rather than every text: the read keeps the chain and
/// where each text is (its line's offset, length and checksum), and holds
/// the newest texts retention may still keep and the compaction summary's,
/// letting older ones go as newer ones arrive (`Places::holding`); the
/// items retention certainly drops under the budget
/// (`retention::certainly_dropped_by`) are left out and counted in the
/// [`Elided`]. Only a current path that is not the texts in file order (a
/// branch from an earlier message, a preserved segment spliced in, a
/// steering prompt placed back) may bring texts let go into the budget:
/// their lines alone are read again, from the same open file. `None` when
/// a line read again is not the line the first pass read (the file was
/// rewritten under the read): the caller reads it whole again rather than
/// mix two versions. The title is not read (`None`).
pub fn read_within(file: File, budget: u64) -> io::Result<Option<(Transcript, Elided)>> {
    let mut again = file.try_clone()?;
    let (First { transcript, said, mut texts }, _) = first_pass(file, || None, Keep::Places, Places::holding(budget))?;
    let Some((items, elided)) = placed::within(said, &mut texts, &mut again, budget)? else { return Ok(None) };
    Ok(Some((Transcript { items, ..transcript }, elided)))
}

/// Reads a transcript for its conversation items one at a time (as the
/// search index reads them): a first pass as [`read_within`]'s keeps the
/// chain and where each text is; each pass over the items then reads the
/// texts again, item by item, checked as [`read_within`] checks them (a
/// pass that finds a line changed is an error).
pub fn read_items(file: File) -> io::Result<impl StreamedItems> {
    let again = file.try_clone()?;
    let (First { said, texts, .. }, _) = first_pass(file, || None, Keep::Places, Places::default())?;
    PlacedItems::new(said, texts, again)
}

/// What the first pass of a read gives: the transcript without its items,
/// the items with their texts as kept, and where the texts kept by where
/// they are are.
struct First {
    transcript: Transcript,
    said: Vec<Said>,
    texts: Places<Extract>,
}

/// Reads every complete line of the transcript as it was when the read
/// began, keeping of the texts what `keep` says, the texts kept by where
/// they are in `texts`.
fn first_pass(
    file: File,
    project: impl FnOnce() -> Option<Arc<Winners>>,
    keep: Keep,
    mut texts: Places<Extract>,
) -> io::Result<(First, TitleParts)> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut names = Names::default();
    let mut msg_ids = Interner::default();
    let mut stamps = Stamps::default();
    // Each node's timestamp (a read of the texts only: steering prompts
    // are placed by them), its text, what its boundary preserved.
    let mut node_stamps: Vec<Stamp> = Vec::new();
    let mut txts: Vec<Txt> = Vec::new();
    let mut kepts: Vec<Kept> = Vec::new();
    let (mut custom, mut ai) = (None::<String>, None::<String>);
    let mut summaries: HashMap<String, String> = HashMap::new();
    let mut head = Head::default();
    let mut steering: Vec<(String, Txt)> = Vec::new();
    // Prompts queued while the model worked, oldest first (`None`: one that
    // is not typed text, such as a task notification).
    let mut queued = PromptQueue::default();
    let (mut created_at, mut first_cwd) = (None, None);
    // The cwds of the lines, each held once while lines repeat it.
    let mut cwds: Vec<Box<str>> = Vec::new();
    let mut last_uuid = NONE;
    // The message id of the newest assistant text (its response's texts
    // are joined into one item).
    let mut last_answer = NONE;
    // Without texts: the first typed prompt of the main chain, as a title.
    let mut first_prompt_title: Option<String> = None;
    let stats: LineStats = each_line_at(as_of_now(file)?, u64::MAX, |n, offset, bytes| {
        let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes) else {
            head.feed(n, None);
            return false;
        };
        let kind = line.kind.get().unwrap_or_default();
        head.feed(
            n,
            Some(HeadFields {
                timestamp: line.timestamp.get(),
                cwd: line.cwd.get(),
                version: line.version.get(),
                message: matches!(kind, "user" | "assistant") && line.uuid.get().is_some() && !line.sidechain.0,
            }),
        );
        if created_at.is_none() {
            created_at = line.timestamp.get().and_then(iso_ms);
        }
        if first_cwd.is_none() {
            first_cwd = line.cwd.owned().filter(|c| !c.is_empty());
        }
        // The `what` text of this line as the read keeps it.
        let mut checksum = None;
        let mut text = |message: &Message<'_>, what: Extract, hold: Hold| -> Option<Txt> {
            let t = text_of(&line, message, what)?;
            match keep {
                Keep::Places => {
                    if hold == Hold::Pinned {
                        // A later compaction's summary starts the path.
                        texts.unpin();
                    }
                    Some(texts.keep(offset, bytes, &mut checksum, t, what, hold))
                }
                _ => Some(Txt::Held(t)),
            }
        };
        // How a read under a budget holds a text of a chain line: one of
        // a side chain is not on the current path.
        let newest = if line.sidechain.0 { Hold::No } else { Hold::Newest };
        let empty = Message::default();
        match kind {
            "custom-title" => custom = line.custom_title.owned().filter(|t| !t.trim().is_empty()).or(custom.take()),
            "ai-title" => ai = line.ai_title.owned().filter(|t| !t.trim().is_empty()).or(ai.take()),
            "summary" => {
                let text = line.summary.owned().filter(|t| !t.trim().is_empty());
                if let (Some(text), Some(leaf)) = (text, line.leaf.owned()) {
                    // The later line wins.
                    summaries.insert(leaf, text);
                }
            }
            // Steering prompts are items, never titles.
            "queue-operation" if keep == Keep::Nothing => {}
            "queue-operation" => match line.operation.get() {
                Some("enqueue") => queued.push(text(&empty, Extract::Operation, Hold::Newest)),
                // Taken up as the next prompt (its own user line follows)
                // or pulled back into the prompt box: no message of its own.
                Some("dequeue") => drop(queued.pop_front()),
                // Delivered to the model mid-turn. Since 2.1.205 the line
                // carries the text; before, it is the oldest queued prompt's.
                Some("remove") => {
                    let t = match &line.content {
                        Content::None => queued.pop_front().flatten(),
                        _ => {
                            let t = text(&empty, Extract::Operation, Hold::Newest);
                            queued.remove(&t);
                            t
                        }
                    };
                    if let (Some(t), Some(ts)) = (t, line.timestamp.owned()) {
                        steering.push((ts, t));
                    }
                }
                _ => {}
            },
            "user" | "assistant" | "system" | "attachment" | "progress" => {
                let Some(uuid) = line.uuid.get() else { return true };
                if names.node_of(uuid).is_some() {
                    // Re-appended copies are identical: the first wins.
                    return true;
                }
                // (A name that cannot be numbered, past 4 billion, makes
                // the line unreadable: counted, not silently lost.)
                let parent = match &line.parent {
                    Some(p) => match p.get().map(|p| names.intern(p)) {
                        Some(None) => return false,
                        p => p.flatten().unwrap_or(NONE),
                    },
                    // No `parentUuid` at all: a legacy file, in file order.
                    None => last_uuid,
                };
                let message = line.message.as_ref().unwrap_or(&empty);
                let node_kind = match kind {
                    "user" if line.meta.0 => Kind::Other,
                    "user" if keep == Keep::Nothing => {
                        if first_prompt_title.is_none() && !line.sidechain.0 && !line.compact_summary.0 {
                            first_prompt_title = typed(&message.content).and_then(|t| title_from_text(&t));
                        }
                        Kind::User { text: NONE, summary: false }
                    }
                    "user" if line.compact_summary.0 => {
                        let hold = if line.sidechain.0 { Hold::No } else { Hold::Pinned };
                        Kind::User { text: put(&mut txts, text(message, Extract::Summary, hold)), summary: true }
                    }
                    "user" => {
                        // The first child of a compact boundary is its
                        // summary, a checkpoint.
                        let after_boundary = (parent != NONE)
                            .then(|| names.node(parent))
                            .flatten()
                            .is_some_and(|i| matches!(nodes[i].kind, Kind::Boundary { .. }));
                        let hold = if after_boundary && newest == Hold::Newest { Hold::Pinned } else { newest };
                        Kind::User { text: put(&mut txts, text(message, Extract::Typed, hold)), summary: false }
                    }
                    "assistant" if line.api_error.0 || message.model.get() == Some("<synthetic>") => Kind::Other,
                    "assistant" if keep == Keep::Nothing => Kind::Assistant { text: NONE, msg_id: NONE },
                    "assistant" => {
                        let msg_id = match message.id.get().map(|id| msg_ids.intern(id)) {
                            Some(None) => return false,
                            id => id.flatten().unwrap_or(NONE),
                        };
                        let hold = match newest {
                            Hold::Newest if msg_id != NONE && msg_id == last_answer => Hold::Joined,
                            hold => hold,
                        };
                        let text = put(&mut txts, text(message, Extract::Answer, hold));
                        if text != NONE && newest == Hold::Newest {
                            last_answer = msg_id;
                        }
                        Kind::Assistant { text, msg_id }
                    }
                    "system" if line.subtype.get() == Some("compact_boundary") => {
                        Kind::Boundary { preserved: put(&mut kepts, kept(line.compact.as_ref())) }
                    }
                    "attachment" => match &line.attachment {
                        Some(a)
                            if a.kind.get() == Some("queued_command") && a.mode.get() != Some("task-notification") =>
                        {
                            // A queued prompt may be the leaf: kept as one, without its text
                            // when the read is for the title.
                            match keep {
                                Keep::Nothing => typed(&a.prompt).map(|_| Txt::default()),
                                _ => text(message, Extract::Queued, newest),
                            }
                            .map_or(Kind::Other, |text| Kind::Queued { text: put(&mut txts, Some(text)) })
                        }
                        _ => Kind::Other,
                    },
                    _ => Kind::Other,
                };
                let Some(uuid) = names.intern(uuid) else { return false };
                // Fewer nodes than names: a node's number fits.
                names.node[uuid as usize] = nodes.len() as u32;
                last_uuid = uuid;
                let cwd = match line.cwd.get().filter(|c| !c.is_empty()) {
                    None => NONE,
                    Some(c) if cwds.last().is_some_and(|last| **last == *c) => (cwds.len() - 1) as u32,
                    Some(c) => {
                        cwds.push(c.into());
                        (cwds.len() - 1) as u32
                    }
                };
                if keep != Keep::Nothing {
                    node_stamps.push(stamps.stamp(line.timestamp.get()));
                }
                nodes.push(Node { uuid, parent, cwd, sidechain: line.sidechain.0, kind: node_kind });
            }
            _ => {}
        }
        true
    })?;
    let path = current_path(&nodes, &names, &kepts);
    // Before `classify` moves the texts out of the nodes.
    let first_prompt_text = match keep {
        Keep::Texts => nodes.iter().find_map(|n| match n.kind {
            Kind::User { text, summary: false } if !n.sidechain && text != NONE => match &txts[text as usize] {
                Txt::Held(t) => title_from_text(t),
                _ => None,
            },
            _ => None,
        }),
        _ => None,
    };
    let first_prompt = || match keep {
        Keep::Nothing => first_prompt_title.clone(),
        _ => first_prompt_text.clone(),
    };
    // A summary titles the session whose message is its leaf: the summary
    // of the leaf, else of the newest message of the path that has one.
    let own = {
        let summary_of: HashMap<u32, &String> =
            summaries.iter().filter_map(|(leaf, text)| Some((names.get(leaf)?, text))).collect();
        path.iter().rev().find_map(|&i| summary_of.get(&nodes[i].uuid)).map(|t| (*t).clone())
    };
    let parts = match custom.or(ai) {
        Some(title) => TitleParts::Own(Some(title)),
        None if head.writes_summaries() => TitleParts::Project {
            path: path.iter().rev().map(|&i| uuid_hash(&names.ids.string(nodes[i].uuid))).collect(),
            own,
            first_prompt: first_prompt(),
        },
        None => TitleParts::Own(own.or_else(first_prompt)),
    };
    let title = match (&parts, keep) {
        (_, Keep::Places) => None,
        (TitleParts::Project { .. }, _) => parts.title(project().as_deref()),
        (TitleParts::Own(title), _) => title.clone(),
    };
    let cwd = path.iter().rev().find_map(|&i| cwds.get(nodes[i].cwd as usize).map(|c| c.to_string())).or(first_cwd);
    let responses = msg_ids.len();
    // The names are not needed to classify: not held while it runs.
    drop((names, msg_ids, summaries, cwds, kepts));
    let said = match keep {
        Keep::Nothing => Vec::new(),
        _ => {
            let stamped = Stamped { of_node: &node_stamps, stamps: &stamps };
            classify(&nodes, &mut txts, &path, steering, stamped, responses)
        }
    };
    drop((nodes, txts, node_stamps));
    let transcript = Transcript { items: Vec::new(), title, cwd, created_at, stats };
    Ok((First { transcript, said, texts }, parts))
}

/// What a boundary's metadata preserves: `preservedMessages` when it
/// lists uuids, else `preservedSegment`.
fn kept(meta: Option<&CompactMeta<'_>>) -> Option<Kept> {
    let meta = meta?;
    if let Some(m) = &meta.messages {
        let uuids: Vec<String> = m.uuids.iter().flatten().filter_map(LStr::owned).collect();
        if let (Some(anchor), false) = (m.anchor.owned(), uuids.is_empty()) {
            return Some(Kept { anchor, uuids, segment: None });
        }
    }
    let s = meta.segment.as_ref()?;
    Some(Kept { anchor: s.anchor.owned()?, uuids: Vec::new(), segment: Some((s.head.owned()?, s.tail.owned()?)) })
}

/// The names of a preserved segment, head to tail, walked back from the
/// tail by parent links (empty when the walk does not reach the head).
fn segment_names(head: &str, tail: &str, nodes: &[Node], names: &Names) -> Vec<u32> {
    // A tail no line names has no node: nothing of it would be kept.
    let Some(tail) = names.get(tail) else { return Vec::new() };
    let head = names.get(head);
    let mut out = Vec::new();
    let mut at = Some(tail);
    let mut seen = HashSet::new();
    while let Some(u) = at {
        if !seen.insert(u) {
            break;
        }
        let parent = names.node(u).map(|i| nodes[i].parent).filter(|&p| p != NONE);
        out.push(u);
        if Some(u) == head {
            out.reverse();
            return out;
        }
        at = parent;
    }
    Vec::new()
}

/// The current path: from the newest non-sidechain user or assistant line
/// back along `parentUuid` (stopping at a root, a dangling parent or a
/// cycle), in conversation order, with the preserved messages of its
/// compact boundary spliced in after the boundary's anchor.
fn current_path(nodes: &[Node], names: &Names, kepts: &[Kept]) -> Vec<usize> {
    let leaf = nodes.iter().rposition(|n| {
        !n.sidechain && matches!(n.kind, Kind::User { .. } | Kind::Assistant { .. } | Kind::Queued { .. })
    });
    let Some(leaf) = leaf else { return Vec::new() };
    let mut path = Vec::new();
    let mut seen = vec![false; nodes.len()];
    let mut at = Some(leaf);
    while let Some(i) = at {
        if std::mem::replace(&mut seen[i], true) {
            break;
        }
        path.push(i);
        at = Some(nodes[i].parent).filter(|&p| p != NONE).and_then(|p| names.node(p));
    }
    drop(seen);
    path.reverse();
    let Some(k) = path.first().and_then(|&i| match nodes[i].kind {
        Kind::Boundary { preserved } => kepts.get(preserved as usize),
        _ => None,
    }) else {
        return path;
    };
    let anchor = names.get(&k.anchor);
    let Some(a) = path.iter().position(|&i| Some(nodes[i].uuid) == anchor) else { return path };
    let preserved: Vec<usize> = match &k.segment {
        Some((head, tail)) => {
            segment_names(head, tail, nodes, names).into_iter().filter_map(|n| names.node(n)).collect()
        }
        None => k.uuids.iter().filter_map(|u| names.node_of(u)).collect(),
    };
    // Each preserved message once, where it is first named: a list that
    // names one message many times must not copy it as many times.
    let mut kept_set: HashSet<usize> = HashSet::new();
    let named = preserved.len();
    let kept: Vec<usize> = preserved.into_iter().filter(|&i| !nodes[i].sidechain && kept_set.insert(i)).collect();
    let mut spliced: Vec<usize> = path[..=a].to_vec();
    spliced.extend(&kept);
    spliced.extend(path[a + 1..].iter().filter(|i| !kept_set.contains(i)));
    crate::work::add(path.len() + named + spliced.len());
    spliced
}

/// The timestamps of a read's nodes.
#[derive(Clone, Copy)]
struct Stamped<'a> {
    /// Each node's.
    of_node: &'a [Stamp],
    /// What the non-canonical ones are.
    stamps: &'a Stamps,
}

impl Stamped<'_> {
    fn of(&self, node: usize) -> Option<Ts<'_>> {
        self.of_node.get(node).and_then(|&s| self.stamps.get(s))
    }
}

/// The items of the path, with same-`message.id` assistant texts joined
/// and steering prompts put where they were typed. Texts (`txts`, by the
/// numbers the nodes hold) are moved out, not copied (a text named twice
/// by the path is copied for all but its last use), so a conversation's
/// texts are held once.
fn classify(
    nodes: &[Node],
    txts: &mut [Txt],
    path: &[usize],
    steering: Vec<(String, Txt)>,
    stamped: Stamped<'_>,
    responses: usize,
) -> Vec<Said> {
    // The lines of each API response (`responses`: how many message ids),
    // in file order, as a list through the nodes: its first line, and each
    // line's next (its texts found by hash when it is used: a response of
    // many lines stays linear).
    let (mut first, mut last) = (vec![NONE; responses], vec![NONE; responses]);
    let mut next = vec![NONE; nodes.len()];
    for (i, n) in nodes.iter().enumerate().filter(|(_, n)| !n.sidechain) {
        if let Kind::Assistant { text, msg_id } = n.kind {
            if text == NONE || msg_id == NONE {
                continue;
            }
            let id = msg_id as usize;
            match last[id] {
                NONE => first[id] = i as u32,
                l => next[l as usize] = i as u32,
            }
            last[id] = i as u32;
        }
    }
    drop(last);
    // How many more times the path names each node: its text is moved out
    // at the last.
    let mut uses = vec![0u32; nodes.len()];
    for &i in path {
        uses[i] += 1;
    }
    // Each item's node, for its timestamp: only when steering prompts are
    // to be placed among them.
    let placing = !steering.is_empty();
    let mut items: Vec<Said> = Vec::new();
    let mut item_nodes: Vec<u32> = Vec::new();
    let mut done_msgs = vec![false; responses];
    let mut queued: HashSet<Txt> = HashSet::new();
    let mut prev_boundary = false;
    for &i in path {
        uses[i] -= 1;
        let last_use = uses[i] == 0;
        if nodes[i].sidechain {
            continue;
        }
        let after_boundary = std::mem::replace(&mut prev_boundary, matches!(nodes[i].kind, Kind::Boundary { .. }));
        let mut take = |t: u32| {
            let s = &mut txts[t as usize];
            if last_use {
                std::mem::take(s)
            } else {
                s.clone()
            }
        };
        let said = match nodes[i].kind {
            Kind::User { text, summary: true } if text != NONE => Said::checkpoint(take(text)),
            Kind::User { text, .. } if after_boundary => {
                // The boundary's first child is the summary, flagged or not.
                let text = if text == NONE { Txt::Held(MISSING_SUMMARY.to_owned()) } else { take(text) };
                Said::checkpoint(text)
            }
            Kind::User { text, summary: false } if text != NONE => Said::new(Role::User, take(text)),
            Kind::Queued { text } => {
                let text = take(text);
                queued.insert(text.clone());
                Said::new(Role::User, text)
            }
            Kind::Assistant { text, msg_id } => {
                let joined = match msg_id {
                    NONE => (text != NONE).then(|| take(text)),
                    id if done_msgs[id as usize] => continue,
                    id => {
                        done_msgs[id as usize] = true;
                        // Every text of the response is used here only:
                        // each distinct text once, in file order.
                        let members = response_members(nodes, txts, &next, first[id as usize]);
                        (!members.is_empty()).then(|| join_texts(nodes, txts, &members))
                    }
                };
                match joined {
                    Some(t) => Said::new(Role::Assistant, t),
                    None => continue,
                }
            }
            _ => continue,
        };
        items.push(said);
        if placing {
            item_nodes.push(i as u32);
        }
    }
    drop((first, next, uses, done_msgs));
    if !placing {
        return items;
    }
    // Steering prompts outside the tree: after the last item typed before
    // them; none before the current view starts.
    let first_ts = path.iter().find_map(|&i| stamped.of(i));
    let typed_users: HashSet<&Txt> = items.iter().filter(|it| it.role == Role::User).map(|it| &it.text).collect();
    let mut steering: Vec<(String, Txt)> = steering
        .into_iter()
        .filter(|(_, text)| !queued.contains(text) && !typed_users.contains(text))
        .filter(|(ts, _)| first_ts.is_some_and(|f| Ts::of(ts) >= f))
        .collect();
    drop(typed_users);
    let mut steering: Vec<(Ts<'_>, Txt)> =
        steering.iter_mut().map(|(ts, text)| (Ts::of(ts), std::mem::take(text))).collect();
    let stamp = |k: usize| stamped.of(item_nodes[k] as usize);
    place_steering(items, stamp, &mut steering, |text| Said::new(Role::User, text))
}

/// The nodes of one response from its first (`at`), through `next`, each
/// with a text not met before in it.
fn response_members(nodes: &[Node], txts: &[Txt], next: &[u32], mut at: u32) -> Vec<usize> {
    let mut seen: HashSet<&Txt> = HashSet::new();
    let mut members = Vec::new();
    while at != NONE {
        let j = at as usize;
        crate::work::add(1);
        if let Kind::Assistant { text, .. } = nodes[j].kind {
            if text != NONE && seen.insert(&txts[text as usize]) {
                members.push(j);
            }
        }
        at = next[j];
    }
    members
}

/// The texts of the assistant nodes `members` (one API response), joined
/// with newlines, moved out of `txts` (texts not held: the list of them,
/// joined when read).
fn join_texts(nodes: &[Node], txts: &mut [Txt], members: &[usize]) -> Txt {
    let mut texts = members.iter().map(|&j| match nodes[j].kind {
        Kind::Assistant { text, .. } if text != NONE => std::mem::take(&mut txts[text as usize]),
        _ => Txt::default(),
    });
    if members.len() == 1 {
        return texts.next().unwrap_or_default();
    }
    let texts: Vec<Txt> = texts.collect();
    if texts.iter().all(|t| matches!(t, Txt::Held(_))) {
        let held: Vec<String> = texts.into_iter().map(held).collect();
        return Txt::Held(held.join("\n"));
    }
    Txt::Joined(texts.iter().filter_map(|t| if let Txt::At { id, .. } = t { Some(*id) } else { None }).collect())
}

/// The items with the steering prompts (`(timestamp, text)`, in file order)
/// placed as if each were inserted in turn after the last item (placed
/// prompts included) timestamped no later than it, in linear time
/// (inserting them one by one was quadratic): a prompt goes after the last
/// item of the conversation timestamped no later than it, and prompts that
/// go after the same item follow in timestamp order, then file order.
/// `stamp(k)`: the timestamp of item `k`.
fn place_steering<K: Ord + Copy, T, S: Default>(
    items: Vec<T>,
    stamp: impl Fn(usize) -> Option<K>,
    steering: &mut [(K, S)],
    prompt: impl Fn(S) -> T,
) -> Vec<T> {
    // The earliest timestamp from each item on: a prompt goes before item
    // `k`, where `k` is how many of these are no later than it (they never
    // decrease).
    let mut from_on: Vec<Option<K>> = vec![None; items.len()];
    let mut min: Option<K> = None;
    for k in (0..items.len()).rev() {
        if let Some(t) = stamp(k) {
            min = Some(min.map_or(t, |m| m.min(t)));
        }
        from_on[k] = min;
    }
    let before = |ts: &K| from_on.partition_point(|m| m.is_some_and(|m| m <= *ts));
    steering.sort_by_key(|a| a.0);
    let mut out = Vec::with_capacity(items.len() + steering.len());
    let mut prompts = steering.iter_mut().peekable();
    let take = |(_, text): &mut (K, S)| prompt(std::mem::take(text));
    for (k, item) in items.into_iter().enumerate() {
        while let Some(p) = prompts.next_if(|(ts, _)| before(ts) <= k) {
            out.push(take(p));
        }
        out.push(item);
    }
    out.extend(prompts.map(take));
    crate::work::add(from_on.len() + out.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::ConversationItem;

    /// The placing of steering prompts as it was (each inserted in turn
    /// after the last item, placed ones included, timestamped no later).
    fn one_by_one(items: &[(Option<&str>, ConversationItem)], steering: &[(String, String)]) -> Vec<ConversationItem> {
        let mut out: Vec<(Option<String>, ConversationItem)> =
            items.iter().map(|(ts, it)| (ts.map(str::to_owned), it.clone())).collect();
        for (ts, text) in steering {
            let at = out.iter().rposition(|(t, _)| t.as_deref().is_some_and(|t| t <= ts.as_str())).map_or(0, |p| p + 1);
            out.insert(at, (Some(ts.clone()), ConversationItem::new(Role::User, text.clone())));
        }
        out.into_iter().map(|(_, it)| it).collect()
    }

    /// The indexed queue takes the same prompts as a scan of a list did.
    #[test]
    fn the_prompt_queue_takes_what_a_scan_took() {
        let mut next = crate::sources::file_source::test_random(0x9e37_79b9_7f4a_7c15);
        for round in 0..500 {
            let (mut queue, mut list) = (PromptQueue::default(), VecDeque::new());
            for step in 0..40 {
                let text = (next(5) > 0).then(|| Txt::Held(format!("p{}", next(4))));
                match next(3) {
                    0 => {
                        queue.push(text.clone());
                        list.push_back(text);
                    }
                    1 => assert_eq!(queue.pop_front(), list.pop_front(), "round {round}, step {step}"),
                    _ => {
                        queue.remove(&text);
                        if let Some(at) = list.iter().position(|q| *q == text) {
                            list.remove(at);
                        }
                    }
                }
            }
            let rest: Vec<_> = std::iter::from_fn(|| queue.pop_front()).collect();
            assert_eq!(rest, Vec::from(list), "round {round}");
        }
    }

    /// Placing them in one merge gives the same conversation, timestamps
    /// out of order, missing and tied included.
    #[test]
    fn steering_placed_in_one_merge_as_one_by_one() {
        let stamps = ["1", "2", "3", "4", "5"];
        let mut next = crate::sources::file_source::test_random(0x2545_f491_4f6c_dd1d);
        for round in 0..2000 {
            let items: Vec<(Option<&str>, ConversationItem)> = (0..next(6))
                .map(|i| {
                    let ts = (next(4) > 0).then(|| stamps[next(5)]);
                    (ts, ConversationItem::new(Role::Assistant, format!("item {i}")))
                })
                .collect();
            let steering: Vec<(String, String)> =
                (0..next(5)).map(|i| (stamps[next(5)].to_owned(), format!("prompt {i}"))).collect();
            let want = one_by_one(&items, &steering);
            let mut keyed: Vec<(&str, String)> = steering.iter().map(|(ts, t)| (ts.as_str(), t.clone())).collect();
            let stamp = |k: usize| items[k].0;
            let plain: Vec<ConversationItem> = items.iter().map(|(_, it)| it.clone()).collect();
            let got = place_steering(plain, stamp, &mut keyed, |t| ConversationItem::new(Role::User, t));
            assert_eq!(got, want, "round {round}");
        }
    }
}
