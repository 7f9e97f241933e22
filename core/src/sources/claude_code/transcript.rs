//! One Claude Code transcript read into its current model-visible
//! conversation (the rules are in the parent module's docs).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;

use std::collections::VecDeque;
use std::sync::Arc;

use serde::Deserialize;

use super::text::typed_text;
use crate::conversation::ConversationItem;
use crate::fs::as_of_now;
use crate::projection::Role;
use crate::sources::foreign::{each_line, iso_ms, title_from_text, LineStats};
use crate::sources::lenient::{lenient, Content, LBool, LStr};

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

#[derive(Clone, Debug)]
enum Kind {
    /// A user line: its typed text (`None` when nothing typed is left),
    /// whether it is a compaction summary, and its full text (for a
    /// summary).
    User { typed: Option<String>, summary: Option<String> },
    /// An assistant line's text blocks, joined.
    Assistant { text: Option<String>, msg_id: Option<String> },
    /// A compact boundary and what it preserved.
    Boundary { preserved: Option<Kept> },
    /// A queued prompt attachment (a steering prompt).
    Queued { text: String },
    /// Any other chain line (system notes, progress, attachments).
    Other,
}

/// What a compact boundary preserved: an anchor and either the uuids
/// (`preservedMessages`) or a segment from head to tail (`preservedSegment`).
#[derive(Clone, Debug)]
struct Kept {
    anchor: String,
    uuids: Vec<String>,
    segment: Option<(String, String)>,
}

#[derive(Clone, Debug)]
struct Node {
    uuid: String,
    parent: Option<String>,
    sidechain: bool,
    timestamp: Option<String>,
    cwd: Option<String>,
    kind: Kind,
}

/// Prompts queued while the model worked, oldest first (`None`: one that
/// is not typed text). Taking the oldest, and taking the oldest with a
/// given text, each cost constant time (amortized), so a transcript of many
/// queued prompts is read in linear time (a scan of the queue for each
/// delivery was quadratic).
#[derive(Default)]
struct PromptQueue {
    /// Every prompt queued, in order; `None` once taken.
    slots: Vec<Option<Option<String>>>,
    /// The first slot that may still be queued.
    head: usize,
    /// The slots of each text's hash, oldest first (taken ones are skipped
    /// when met).
    by_hash: HashMap<u64, VecDeque<usize>>,
    hasher: std::collections::hash_map::RandomState,
}

impl PromptQueue {
    fn hash(&self, text: &Option<String>) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, text)
    }

    fn push(&mut self, text: Option<String>) {
        let h = self.hash(&text);
        self.by_hash.entry(h).or_default().push_back(self.slots.len());
        self.slots.push(Some(text));
    }

    /// Takes the oldest prompt still queued.
    fn pop_front(&mut self) -> Option<Option<String>> {
        while let Some(slot) = self.slots.get_mut(self.head) {
            self.head += 1;
            if let Some(text) = slot.take() {
                return Some(text);
            }
        }
        None
    }

    /// Takes the oldest prompt still queued whose text is `text`, if any.
    fn remove(&mut self, text: &Option<String>) {
        let h = self.hash(text);
        let Some(bucket) = self.by_hash.get_mut(&h) else { return };
        // Taken ones are a prefix of the bucket (unless two texts share a
        // hash, when the search below passes over the other's).
        while bucket.front().is_some_and(|&i| self.slots[i].is_none()) {
            bucket.pop_front();
        }
        if let Some(at) = bucket.iter().position(|&i| self.slots[i].as_ref() == Some(text)) {
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
    let mut nodes: Vec<Node> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let (mut custom, mut ai) = (None::<String>, None::<String>);
    let mut summaries: HashMap<String, String> = HashMap::new();
    let mut head = Head::default();
    let mut steering: Vec<(String, String)> = Vec::new();
    // Prompts queued while the model worked, oldest first (`None`: one that
    // is not typed text, such as a task notification).
    let mut queued = PromptQueue::default();
    let (mut created_at, mut first_cwd) = (None, None);
    let mut last_uuid: Option<String> = None;
    // Without texts: the first typed prompt of the main chain, as a title.
    let mut first_prompt_title: Option<String> = None;
    let stats: LineStats = each_line(as_of_now(file)?, u64::MAX, |n, bytes| {
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
            "queue-operation" if !texts => {}
            "queue-operation" => match line.operation.get() {
                Some("enqueue") => queued.push(typed(&line.content)),
                // Taken up as the next prompt (its own user line follows)
                // or pulled back into the prompt box: no message of its own.
                Some("dequeue") => drop(queued.pop_front()),
                // Delivered to the model mid-turn. Since 2.1.205 the line
                // carries the text; before, it is the oldest queued prompt's.
                Some("remove") => {
                    let text = match &line.content {
                        Content::None => queued.pop_front().flatten(),
                        content => {
                            let text = typed(content);
                            queued.remove(&text);
                            text
                        }
                    };
                    if let (Some(text), Some(ts)) = (text, line.timestamp.owned()) {
                        steering.push((ts, text));
                    }
                }
                _ => {}
            },
            "user" | "assistant" | "system" | "attachment" | "progress" => {
                let Some(uuid) = line.uuid.owned() else { return true };
                if index.contains_key(&uuid) {
                    // Re-appended copies are identical: the first wins.
                    return true;
                }
                let parent = match &line.parent {
                    Some(p) => p.owned(),
                    // No `parentUuid` at all: a legacy file, in file order.
                    None => last_uuid.clone(),
                };
                let message = line.message.unwrap_or_default();
                let kind = match kind {
                    "user" if line.meta.0 => Kind::Other,
                    "user" if !texts => {
                        if first_prompt_title.is_none() && !line.sidechain.0 && !line.compact_summary.0 {
                            first_prompt_title = typed(&message.content).and_then(|t| title_from_text(&t));
                        }
                        Kind::User { typed: None, summary: None }
                    }
                    "user" => {
                        let summary = line.compact_summary.0.then(|| full_text(&message.content)).flatten();
                        Kind::User {
                            typed: if line.compact_summary.0 { None } else { typed(&message.content) },
                            summary,
                        }
                    }
                    "assistant" if line.api_error.0 || message.model.get() == Some("<synthetic>") => Kind::Other,
                    "assistant" if !texts => Kind::Assistant { text: None, msg_id: None },
                    "assistant" => Kind::Assistant {
                        text: join(message.content.texts(&["text"]).map(str::to_owned)),
                        msg_id: message.id.owned(),
                    },
                    "system" if line.subtype.get() == Some("compact_boundary") => {
                        Kind::Boundary { preserved: kept(line.compact.as_ref()) }
                    }
                    "attachment" => match &line.attachment {
                        Some(a)
                            if a.kind.get() == Some("queued_command") && a.mode.get() != Some("task-notification") =>
                        {
                            // A queued prompt may be the leaf: kept as one, without its text
                            // when the read is for the title.
                            let text = |t: String| if texts { t } else { String::new() };
                            typed(&a.prompt).map_or(Kind::Other, |t| Kind::Queued { text: text(t) })
                        }
                        _ => Kind::Other,
                    },
                    _ => Kind::Other,
                };
                index.insert(uuid.clone(), nodes.len());
                last_uuid = Some(uuid.clone());
                nodes.push(Node {
                    uuid,
                    parent,
                    sidechain: line.sidechain.0,
                    timestamp: line.timestamp.owned(),
                    cwd: line.cwd.owned().filter(|c| !c.is_empty()),
                    kind,
                });
            }
            _ => {}
        }
        true
    })?;
    let path = current_path(&nodes, &index);
    // Before `classify` moves the texts out of the nodes.
    let first_prompt_text = match texts {
        true => nodes.iter().find_map(|n| match &n.kind {
            Kind::User { typed: Some(t), .. } if !n.sidechain => title_from_text(t),
            _ => None,
        }),
        false => None,
    };
    let items = if texts { classify(&mut nodes, &path, steering) } else { Vec::new() };
    let first_prompt = || match texts {
        true => first_prompt_text.clone(),
        false => first_prompt_title.clone(),
    };
    // A summary titles the session whose message is its leaf: the summary
    // of the leaf, else of the newest message of the path that has one.
    let own = path.iter().rev().find_map(|&i| summaries.get(&nodes[i].uuid)).cloned();
    let parts = match custom.or(ai) {
        Some(title) => TitleParts::Own(Some(title)),
        None if head.writes_summaries() => TitleParts::Project {
            path: path.iter().rev().map(|&i| uuid_hash(&nodes[i].uuid)).collect(),
            own,
            first_prompt: first_prompt(),
        },
        None => TitleParts::Own(own.or_else(first_prompt)),
    };
    let title = match &parts {
        TitleParts::Project { .. } => parts.title(project().as_deref()),
        TitleParts::Own(title) => title.clone(),
    };
    let cwd = path.iter().rev().find_map(|&i| nodes[i].cwd.clone()).or(first_cwd);
    Ok((Transcript { items, title, cwd, created_at, stats }, parts))
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

/// The uuids of a preserved segment, head to tail, walked back from the
/// tail by parent links (empty when the walk does not reach the head).
fn segment_uuids(head: &str, tail: &str, nodes: &[Node], index: &HashMap<String, usize>) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = Some(tail.to_owned());
    let mut seen = HashSet::new();
    while let Some(u) = at {
        if !seen.insert(u.clone()) {
            break;
        }
        let parent = index.get(&u).and_then(|&i| nodes[i].parent.clone());
        let is_head = u == head;
        out.push(u);
        if is_head {
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
fn current_path(nodes: &[Node], index: &HashMap<String, usize>) -> Vec<usize> {
    let leaf = nodes.iter().rposition(|n| {
        !n.sidechain && matches!(n.kind, Kind::User { .. } | Kind::Assistant { .. } | Kind::Queued { .. })
    });
    let Some(leaf) = leaf else { return Vec::new() };
    let mut path = Vec::new();
    let mut seen = HashSet::new();
    let mut at = Some(leaf);
    while let Some(i) = at {
        if !seen.insert(i) {
            break;
        }
        path.push(i);
        at = nodes[i].parent.as_deref().and_then(|p| index.get(p).copied());
    }
    path.reverse();
    let Some(Kind::Boundary { preserved: Some(k) }) = path.first().map(|&i| &nodes[i].kind) else { return path };
    let Some(a) = path.iter().position(|&i| nodes[i].uuid == k.anchor) else { return path };
    let uuids = match &k.segment {
        Some((head, tail)) => segment_uuids(head, tail, nodes, index),
        None => k.uuids.clone(),
    };
    // Each preserved message once, where it is first named: a list that
    // names one message many times must not copy it as many times.
    let mut kept_set: HashSet<usize> = HashSet::new();
    let kept: Vec<usize> = uuids
        .iter()
        .filter_map(|u| index.get(u).copied())
        .filter(|&i| !nodes[i].sidechain && kept_set.insert(i))
        .collect();
    let mut spliced: Vec<usize> = path[..=a].to_vec();
    spliced.extend(&kept);
    spliced.extend(path[a + 1..].iter().filter(|i| !kept_set.contains(i)));
    spliced
}

/// The items of the path, with same-`message.id` assistant texts joined
/// and steering prompts put where they were typed. Texts are moved out of
/// the nodes, not copied (a text named twice by the path is copied for all
/// but its last use), so a conversation's texts are held once.
fn classify(nodes: &mut [Node], path: &[usize], steering: Vec<(String, String)>) -> Vec<ConversationItem> {
    // Text lines of one API response, by message id, in file order, each
    // text once (found by hash: a response of many lines stays linear).
    let mut by_msg: HashMap<String, Vec<usize>> = HashMap::new();
    {
        let mut msg_texts: HashSet<(&str, &str)> = HashSet::new();
        let mut groups: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, n) in nodes.iter().enumerate().filter(|(_, n)| !n.sidechain) {
            if let Kind::Assistant { text: Some(t), msg_id: Some(id) } = &n.kind {
                if msg_texts.insert((id.as_str(), t.as_str())) {
                    groups.entry(id.as_str()).or_default().push(i);
                }
            }
        }
        by_msg.extend(groups.into_iter().map(|(id, members)| (id.to_owned(), members)));
    }
    // How many more times the path names each node: its text is moved out
    // at the last.
    let mut uses = vec![0u32; nodes.len()];
    for &i in path {
        uses[i] += 1;
    }
    let mut items: Vec<(Option<usize>, ConversationItem)> = Vec::new();
    let mut done_msgs: HashSet<String> = HashSet::new();
    let mut queued: HashSet<String> = HashSet::new();
    let mut prev_boundary = false;
    for &i in path {
        uses[i] -= 1;
        let last_use = uses[i] == 0;
        if nodes[i].sidechain {
            continue;
        }
        let after_boundary = std::mem::replace(&mut prev_boundary, matches!(nodes[i].kind, Kind::Boundary { .. }));
        let ts = nodes[i].timestamp.as_ref().map(|_| i);
        let take = |s: &mut String| if last_use { std::mem::take(s) } else { s.clone() };
        match &mut nodes[i].kind {
            Kind::User { summary: Some(s), .. } => items.push((ts, ConversationItem::checkpoint(take(s)))),
            Kind::User { typed, .. } if after_boundary => {
                // The boundary's first child is the summary, flagged or not.
                let text = typed.as_mut().map_or_else(|| MISSING_SUMMARY.to_owned(), take);
                items.push((ts, ConversationItem::checkpoint(text)));
            }
            Kind::User { typed: Some(t), .. } => items.push((ts, ConversationItem::new(Role::User, take(t)))),
            Kind::Queued { text } => {
                queued.insert(text.clone());
                items.push((ts, ConversationItem::new(Role::User, take(text))));
            }
            Kind::Assistant { text, msg_id } => {
                let joined = match msg_id {
                    Some(id) if done_msgs.contains(id.as_str()) => continue,
                    Some(id) => {
                        done_msgs.insert(id.clone());
                        // Every text of the response is used here only.
                        by_msg.remove(id.as_str()).map(|members| join_texts(nodes, &members))
                    }
                    None => text.as_mut().map(take),
                };
                if let Some(t) = joined {
                    items.push((ts, ConversationItem::new(Role::Assistant, t)));
                }
            }
            _ => {}
        }
    }
    let stamp = |i: Option<usize>| i.and_then(|i| nodes[i].timestamp.as_deref());
    let items: Vec<(Option<&str>, ConversationItem)> = items.into_iter().map(|(ts, it)| (stamp(ts), it)).collect();
    // Steering prompts outside the tree: after the last item typed before
    // them; none before the current view starts.
    let first_ts = path.iter().find_map(|&i| nodes[i].timestamp.as_deref());
    let typed_users: HashSet<&str> =
        items.iter().filter(|(_, it)| it.role == Role::User).map(|(_, it)| it.text.as_str()).collect();
    let mut steering: Vec<(String, String)> = steering
        .into_iter()
        .filter(|(_, text)| !queued.contains(text) && !typed_users.contains(text.as_str()))
        .filter(|(ts, _)| first_ts.is_some_and(|f| ts.as_str() >= f))
        .collect();
    place_steering(items, &mut steering)
}

/// The texts of the assistant nodes `members` (one API response), joined
/// with newlines, moved out of the nodes.
fn join_texts(nodes: &mut [Node], members: &[usize]) -> String {
    let mut texts = members.iter().map(|&j| match &mut nodes[j].kind {
        Kind::Assistant { text: Some(t), .. } => std::mem::take(t),
        _ => String::new(),
    });
    match members.len() {
        1 => texts.next().unwrap_or_default(),
        _ => texts.collect::<Vec<String>>().join("\n"),
    }
}

/// The items with the steering prompts (`(timestamp, text)`, in file order)
/// placed as if each were inserted in turn after the last item (placed
/// prompts included) timestamped no later than it, in linear time
/// (inserting them one by one was quadratic): a prompt goes after the last
/// item of the conversation timestamped no later than it, and prompts that
/// go after the same item follow in timestamp order, then file order.
fn place_steering(
    items: Vec<(Option<&str>, ConversationItem)>,
    steering: &mut [(String, String)],
) -> Vec<ConversationItem> {
    // The earliest timestamp from each item on: a prompt goes before item
    // `k`, where `k` is how many of these are no later than it (they never
    // decrease).
    let mut from_on: Vec<Option<&str>> = vec![None; items.len()];
    let mut min: Option<&str> = None;
    for (k, (ts, _)) in items.iter().enumerate().rev() {
        if let Some(t) = *ts {
            min = Some(min.map_or(t, |m| m.min(t)));
        }
        from_on[k] = min;
    }
    let before = |ts: &str| from_on.partition_point(|m| m.is_some_and(|m| m <= ts));
    steering.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::with_capacity(items.len() + steering.len());
    let mut prompts = steering.iter_mut().peekable();
    let prompt = |(_, text): &mut (String, String)| ConversationItem::new(Role::User, std::mem::take(text));
    for (k, (_, item)) in items.into_iter().enumerate() {
        while let Some(p) = prompts.next_if(|(ts, _)| before(ts) <= k) {
            out.push(prompt(p));
        }
        out.push(item);
    }
    out.extend(prompts.map(prompt));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut next = crate::sources::test_random(0x9e37_79b9_7f4a_7c15);
        for round in 0..500 {
            let (mut queue, mut list) = (PromptQueue::default(), VecDeque::new());
            for step in 0..40 {
                let text = (next(5) > 0).then(|| format!("p{}", next(4)));
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
        let mut next = crate::sources::test_random(0x2545_f491_4f6c_dd1d);
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
            let got = place_steering(items, &mut steering.clone());
            assert_eq!(got, want, "round {round}");
        }
    }
}
