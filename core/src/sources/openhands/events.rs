//! One conversation's event files replayed into its current model-visible
//! conversation (the rules are in the parent module's docs).

use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;

use serde::Deserialize;

use super::{EVENTS_DIR, MAX_FILE_BYTES};
use crate::conversation::ConversationItem;
use crate::fs::{entry_kind, par_map, sorted_entries, DirUnder, EntryKind};
use crate::projection::Role;
use crate::sources::foreign::{title_from_text, LineStats};
use crate::sources::lenient::{lenient, Content, LStr, LU64};

/// The `parent_id` that starts a new root.
const ROOT_PARENT_ID: &str = "__root__";

/// The index of an event file's name, `event-<index>-<event id>.json`
/// (five digits or more; the event id of 8 or more hex digits and dashes),
/// or `event-<index>.json` as early versions of the SDK named them.
fn index_of(name: &OsStr) -> Option<u64> {
    let rest = name.to_str()?.strip_prefix("event-")?.strip_suffix(".json")?;
    let (digits, id) = match rest.split_once('-') {
        Some((digits, id)) => (digits, Some(id)),
        None => (rest, None),
    };
    let id_ok = id.is_none_or(|id| id.len() >= 8 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'));
    (digits.len() >= 5 && digits.bytes().all(|b| b.is_ascii_digit()) && id_ok).then(|| digits.parse().ok())?
}

/// The events directory of conversation `dir` when it is a real directory
/// (`None` when it is missing; an error for a link or another entry).
fn events_dir(root: &Path, dir: &OsStr) -> io::Result<Option<std::path::PathBuf>> {
    let conversation = root.join(dir);
    let path = conversation.join(EVENTS_DIR);
    for p in [&conversation, &path] {
        match entry_kind(p)? {
            EntryKind::Dir => {}
            EntryKind::Missing => return Ok(None),
            EntryKind::Link => return Err(io::Error::other(format!("{}: {}", p.display(), crate::fs::LINK_REASON))),
            _ => return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{} is not a directory", p.display()))),
        }
    }
    Ok(Some(path))
}

/// The event files of conversation `dir` from index 0 up to the first
/// missing index, as OpenHands reads them, and how many files that take an
/// event's name were passed over (links, entries that are not files, a
/// second file of one index).
fn event_files(root: &Path, dir: &OsStr) -> io::Result<(Vec<OsString>, u64)> {
    let Some(path) = events_dir(root, dir)? else { return Ok((Vec::new(), 0)) };
    let mut found: Vec<(u64, OsString)> = Vec::new();
    let mut passed = 0;
    for entry in sorted_entries(&path)? {
        let Some(index) = index_of(&entry.name) else { continue };
        match entry.kind(&path) {
            Ok(EntryKind::File) => found.push((index, entry.name)),
            _ => passed += 1,
        }
    }
    // Byte order is index order up to 99,999 events; past it, by number.
    found.sort_by_key(|(index, _)| *index);
    let mut files = Vec::with_capacity(found.len());
    for (index, name) in found {
        match (files.len() as u64).cmp(&index) {
            std::cmp::Ordering::Equal => files.push(name),
            // A second file of the index just taken.
            std::cmp::Ordering::Greater => passed += 1,
            std::cmp::Ordering::Less => break,
        }
    }
    Ok((files, passed))
}

/// Whether conversation `dir` holds its first event file.
pub(super) fn has_first(root: &Path, dir: &OsStr) -> bool {
    let Ok(Some(path)) = events_dir(root, dir) else { return false };
    let Ok(entries) = std::fs::read_dir(path) else { return false };
    entries.filter_map(Result::ok).any(|e| index_of(&e.file_name()) == Some(0))
}

#[derive(Deserialize, Default)]
struct Message<'a> {
    #[serde(borrow, default)]
    role: LStr<'a>,
    #[serde(borrow, default)]
    content: Content<'a>,
}

/// An event's fields that are read, each leniently; the rest (tool output,
/// reasoning, the system prompt) is skipped unbuilt.
#[derive(Deserialize, Default)]
struct EventJson<'a> {
    #[serde(borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    id: LStr<'a>,
    #[serde(borrow, default)]
    parent_id: LStr<'a>,
    #[serde(borrow, default)]
    source: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    llm_message: Option<Message<'a>>,
    #[serde(borrow, default)]
    summary: LStr<'a>,
    #[serde(default)]
    summary_offset: LU64,
    #[serde(borrow, default, deserialize_with = "lenient")]
    forgotten_event_ids: Option<Vec<LStr<'a>>>,
}

/// What an event does to the view the model is given.
enum Does {
    /// Put in the view; the text it shows, if any (a tool call, its
    /// result or the system prompt show none).
    Sends(Option<ConversationItem>),
    /// A condensation: what it forgets, and its summary with where it goes.
    Condenses { forgotten: Vec<String>, summary: Option<(String, u64)> },
    /// A state-sync artifact, never the branch's leaf.
    Artifact,
    /// Nothing (bookkeeping the view skips).
    Nothing,
}

/// An event's parent in the tree.
enum Parent {
    /// A root.
    None,
    /// The event of this id.
    Id(String),
    /// The event before it (a legacy event, written before the tree).
    Previous,
}

struct Event {
    id: String,
    parent: Parent,
    does: Does,
}

/// The event a file holds (`None` when it is not an event's JSON).
fn event(bytes: &[u8], index: usize) -> Option<Event> {
    let e: EventJson<'_> = serde_json::from_slice(bytes).ok()?;
    let id = e.id.owned().filter(|s| !s.is_empty())?;
    let parent = match e.parent_id.get() {
        Some(ROOT_PARENT_ID) => Parent::None,
        Some(p) => Parent::Id(p.to_owned()),
        None if index == 0 => Parent::None,
        None => Parent::Previous,
    };
    let text = |m: &Message<'_>| m.content.texts(&["text"]).collect::<Vec<_>>().join("\n");
    let does = match e.kind.get().unwrap_or_default() {
        "MessageEvent" => {
            let said = e.llm_message.as_ref().and_then(|m| match (e.source.get(), m.role.get()) {
                (Some("user"), Some("user")) => Some(ConversationItem::new(Role::User, text(m))),
                (Some("agent"), Some("assistant")) => Some(ConversationItem::new(Role::Assistant, text(m))),
                _ => None,
            });
            Does::Sends(said.filter(|i| !i.text.trim().is_empty()))
        }
        "SystemPromptEvent" | "ActionEvent" | "ObservationEvent" | "UserRejectObservation" | "AgentErrorEvent" => {
            Does::Sends(None)
        }
        "CondensationSummaryEvent" => Does::Sends(e.summary.owned().map(ConversationItem::checkpoint)),
        "Condensation" => Does::Condenses {
            forgotten: e.forgotten_event_ids.unwrap_or_default().iter().filter_map(LStr::owned).collect(),
            summary: e.summary.owned().zip(e.summary_offset.0),
        },
        "ConversationStateUpdateEvent" | "ConversationErrorEvent" => Does::Artifact,
        _ => Does::Nothing,
    };
    Some(Event { id, parent, does })
}

/// What a read of a conversation's events gives.
pub(super) struct Read {
    pub(super) items: Vec<ConversationItem>,
    pub(super) title: Option<String>,
    pub(super) stats: LineStats,
}

/// The current branch, root first: the path from the leaf up the parents.
/// `events` holds each file's event (`None`: not read).
fn branch<'e>(events: &'e [Option<Event>], leaf: Option<&str>, head_is_empty: bool) -> Vec<&'e Event> {
    let mut by_id: HashMap<&str, usize> = HashMap::with_capacity(events.len());
    for (i, e) in events.iter().enumerate() {
        if let Some(e) = e {
            by_id.entry(e.id.as_str()).or_insert(i);
        }
    }
    // The leaf base_state.json names, else (or when it is not among the
    // events read) the last event that is not a state-sync artifact.
    let last_real = || events.iter().rposition(|e| e.as_ref().is_some_and(|e| !matches!(e.does, Does::Artifact)));
    let start = match leaf {
        Some(id) => by_id.get(id).copied().or_else(last_real),
        None if head_is_empty => None,
        None => last_real(),
    };
    let mut path = Vec::new();
    let mut at = start;
    // A cycle cannot make the walk longer than the log.
    while let Some(i) = at.filter(|_| path.len() < events.len()) {
        let Some(e) = &events[i] else { break };
        path.push(e);
        at = match &e.parent {
            Parent::None => None,
            Parent::Id(p) => by_id.get(p.as_str()).copied(),
            Parent::Previous => i.checked_sub(1),
        };
    }
    path.reverse();
    path
}

/// No node: the end of the view's list.
const NIL: usize = usize::MAX;

/// One entry of the view: an event sent, or a condensation's summary.
struct Node<'e> {
    id: Cow<'e, str>,
    item: Option<&'e ConversationItem>,
    summary: Option<ConversationItem>,
    prev: usize,
    next: usize,
    /// The node added before it under the same id (`NIL`: none).
    same: usize,
}

/// The view as a list linked both ways, so that a condensation costs what
/// it forgets and where it puts its summary, never the whole view: forgetting
/// an entry unlinks it through the map of ids, and the summary's place is
/// walked to from the nearer end.
struct ViewList<'e> {
    nodes: Vec<Node<'e>>,
    /// The last node of each id still in the view.
    by_id: HashMap<Cow<'e, str>, usize>,
    head: usize,
    tail: usize,
    len: usize,
}

impl<'e> ViewList<'e> {
    fn new() -> Self {
        ViewList { nodes: Vec::new(), by_id: HashMap::new(), head: NIL, tail: NIL, len: 0 }
    }

    /// Adds an entry before `next` (`NIL`: at the end).
    fn insert(&mut self, node: Node<'e>, next: usize) {
        let at = self.nodes.len();
        let prev = if next == NIL { self.tail } else { self.nodes[next].prev };
        let same = self.by_id.insert(node.id.clone(), at).unwrap_or(NIL);
        self.nodes.push(Node { prev, next, same, ..node });
        match prev {
            NIL => self.head = at,
            p => self.nodes[p].next = at,
        }
        match next {
            NIL => self.tail = at,
            n => self.nodes[n].prev = at,
        }
        self.len += 1;
    }

    /// Removes every entry of id `id`.
    fn forget(&mut self, id: &str, steps: &mut usize) {
        let Some(mut at) = self.by_id.remove(id) else { return };
        while at != NIL {
            *steps += 1;
            let Node { prev, next, same, .. } = self.nodes[at];
            match prev {
                NIL => self.head = next,
                p => self.nodes[p].next = next,
            }
            match next {
                NIL => self.tail = prev,
                n => self.nodes[n].prev = prev,
            }
            self.len -= 1;
            at = same;
        }
    }

    /// The node at position `offset` (`NIL` past the end), walked to from
    /// the nearer end.
    fn at(&self, offset: usize, steps: &mut usize) -> usize {
        if offset >= self.len {
            return NIL;
        }
        if offset <= self.len / 2 {
            let mut at = self.head;
            for _ in 0..offset {
                *steps += 1;
                at = self.nodes[at].next;
            }
            at
        } else {
            let mut at = self.tail;
            for _ in offset + 1..self.len {
                *steps += 1;
                at = self.nodes[at].prev;
            }
            at
        }
    }
}

/// The view OpenHands gives the model along `path`, as the items it shows.
/// Its steps are the events, the ids forgotten and the entries walked to
/// place summaries.
fn view(path: &[&Event]) -> Vec<ConversationItem> {
    let mut list = ViewList::new();
    let mut steps = crate::work::Tally(path.len());
    for e in path {
        match &e.does {
            Does::Sends(item) => {
                let node = Node {
                    id: Cow::Borrowed(&e.id),
                    item: item.as_ref(),
                    summary: None,
                    prev: NIL,
                    next: NIL,
                    same: NIL,
                };
                list.insert(node, NIL);
            }
            Does::Condenses { forgotten, summary } => {
                for id in forgotten {
                    list.forget(id, &mut steps.0);
                }
                if let Some((summary, offset)) = summary {
                    let at = list.at(usize::try_from(*offset).unwrap_or(usize::MAX), &mut steps.0);
                    let summary = (!summary.trim().is_empty()).then(|| ConversationItem::checkpoint(summary.clone()));
                    let id = Cow::Owned(format!("{}-summary", e.id));
                    list.insert(Node { id, item: None, summary, prev: NIL, next: NIL, same: NIL }, at);
                }
            }
            Does::Artifact | Does::Nothing => {}
        }
    }
    let mut items = Vec::with_capacity(list.len);
    let mut at = list.head;
    while at != NIL {
        let node = &mut list.nodes[at];
        items.extend(node.summary.take().or_else(|| node.item.cloned()));
        at = node.next;
    }
    steps.0 += items.len();
    items
}

/// Reads conversation `dir`'s events: its current conversation, title and
/// counts, from the leaf `base_state.json` names.
pub(super) fn read(root: &Path, dir: &OsStr, leaf: Option<&str>, head_is_empty: bool) -> io::Result<Read> {
    let (files, passed) = event_files(root, dir)?;
    let opened = DirUnder::open(root, &[dir, OsStr::new(EVENTS_DIR)]);
    // A file each: opening them is most of a read's time, which threads
    // overlap.
    let numbered: Vec<(usize, &OsString)> = files.iter().enumerate().collect();
    // One buffer per thread, reused from file to file.
    let events: Vec<Option<Event>> = par_map(&numbered, |(index, name), buf: &mut Vec<u8>| {
        let read = opened.read_file_into(name, MAX_FILE_BYTES, buf);
        read.ok().and_then(|()| event(buf, *index))
    });
    crate::work::add(files.len());
    let skipped = passed + events.iter().filter(|e| e.is_none()).count() as u64;
    let path = branch(&events, leaf, head_is_empty);
    let title = path.iter().find_map(|e| match &e.does {
        Does::Sends(Some(item)) if item.role == Role::User && !item.checkpoint => title_from_text(&item.text),
        _ => None,
    });
    let items = view(&path);
    Ok(Read { items, title, stats: LineStats { lines: files.len() as u64, skipped } })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sends(id: &str, text: Option<&str>) -> Event {
        let does = Does::Sends(text.map(|t| ConversationItem::new(Role::User, t.to_owned())));
        Event { id: id.to_owned(), parent: Parent::Previous, does }
    }

    fn condenses(id: &str, forgotten: &[&str], summary: Option<(&str, u64)>) -> Event {
        let forgotten = forgotten.iter().map(|f| (*f).to_owned()).collect();
        let summary = summary.map(|(s, at)| (s.to_owned(), at));
        Event { id: id.to_owned(), parent: Parent::Previous, does: Does::Condenses { forgotten, summary } }
    }

    fn texts(events: &[Event]) -> Vec<String> {
        view(&events.iter().collect::<Vec<_>>()).into_iter().map(|i| i.text).collect()
    }

    #[test]
    fn condensations_forget_and_place_their_summaries() {
        let events = [
            sends("sys", None),
            sends("a", Some("a")),
            sends("b", Some("b")),
            sends("c", Some("c")),
            // Forgets b (and an id not in the view); the summary after sys and a.
            condenses("k1", &["b", "zz"], Some(("S1", 2))),
            sends("d", Some("d")),
            // Forgets the first summary and a; the new one first.
            condenses("k2", &["k1-summary", "a"], Some(("S2", 0))),
            // Past the end: last.
            condenses("k3", &[], Some(("S3", 99))),
            // The middle, walked from the end.
            condenses("k4", &["sys"], Some(("S4", 3))),
        ];
        assert_eq!(texts(&events), ["S2", "c", "d", "S4", "S3"]);
        // Two entries of one id are both forgotten.
        let events =
            [sends("a", Some("a1")), sends("a", Some("a2")), sends("b", Some("b")), condenses("k", &["a"], None)];
        assert_eq!(texts(&events), ["b"]);
    }

    /// A condensation costs what it forgets and the walk to its summary's
    /// place, not the whole view: many condensations over a long
    /// conversation take steps in proportion to its events (removing each
    /// from the view's list took steps in proportion to events times
    /// condensations).
    #[test]
    fn condensations_are_applied_in_linear_time() {
        let steps_for = |n: usize| {
            let mut events = Vec::new();
            for i in 0..n {
                events.push(sends(&format!("e{i}"), Some("x")));
                if i % 4 == 3 {
                    let forgotten =
                        [format!("e{}", i - 2), format!("e{}", i - 1), format!("k{}-summary", i.wrapping_sub(4))];
                    let forgotten: Vec<&str> = forgotten.iter().map(String::as_str).collect();
                    events.push(condenses(&format!("k{i}"), &forgotten, Some(("s", 1))));
                }
            }
            let path: Vec<&Event> = events.iter().collect();
            let before = crate::work::steps();
            let items = view(&path);
            assert_eq!(items.len(), n / 2 + 1, "half the events forgotten, one summary (each forgets the one before)");
            (crate::work::steps() - before, events.len())
        };
        let (small, events) = steps_for(20_000);
        let (big, _) = steps_for(40_000);
        assert!(small <= 3 * events as u64, "{small} steps for {events} events");
        assert!(2 * big <= 5 * small, "20,000 events took {small} steps, 40,000 took {big}");
    }

    #[test]
    fn event_file_names() {
        let i = |n: &str| index_of(OsStr::new(n));
        assert_eq!(i("event-00000-0f8fad5b-d9cb-469f-a165-70867728950e.json"), Some(0));
        assert_eq!(i("event-00042-0f8fad5bd9cb.json"), Some(42));
        assert_eq!(i("event-123456-abcdef01.json"), Some(123_456));
        assert_eq!(i("event-00007.json"), Some(7));
        for bad in
            ["event-0001-abcdef01.json", "event-00001-xyz.json", "event-00001-abc.json", "x.json", ".eventlog.lock"]
        {
            assert_eq!(i(bad), None, "{bad}");
        }
    }
}
