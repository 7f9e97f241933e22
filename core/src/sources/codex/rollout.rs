//! One Codex rollout replayed into its current model-visible conversation
//! (the rules are in the parent module's docs).

use std::fs::File;
use std::io;

use serde::Deserialize;

use crate::fs::as_of_now;
use crate::host::StreamedItems;
use crate::projection::Role;
use crate::retention::Elided;
use crate::sources::foreign::{each_line, each_line_at, iso_ms, title_from_text, LineStats};
use crate::sources::lenient::{lenient, Content, LStr, LU64};
use crate::sources::placed::{self, held, Hold, Keep, LineText, PlacedItems, Places, Said, Txt};

use crate::sources::foreign::Transcript;

/// How Codex's summary of a compacted history starts.
pub const SUMMARY_PREFIX: &str = "Another language model started to solve this problem";

/// The text of a checkpoint whose summary Codex stored encrypted.
pub const ENCRYPTED_CHECKPOINT: &str =
    "[The earlier conversation was compacted; its summary is encrypted and cannot be shown.]";

/// Fragments Codex injects as user messages, by opening and closing marker
/// (matched case-insensitively on the trimmed text).
const CONTEXTUAL: [(&str, &str); 9] = [
    ("# AGENTS.md instructions for ", "</INSTRUCTIONS>"),
    ("<environment_context>", "</environment_context>"),
    ("<skill>", "</skill>"),
    ("<user_shell_command>", "</user_shell_command>"),
    ("<turn_aborted>", "</turn_aborted>"),
    ("<subagent_notification>", "</subagent_notification>"),
    ("<additional_context>", "</additional_context>"),
    ("<user_instructions>", "</user_instructions>"),
    ("<skills_instructions>", "</skills_instructions>"),
];

/// Whether a user text part is a contextual fragment.
pub fn is_contextual(text: &str) -> bool {
    let t = text.trim();
    let starts = |m: &str| t.len() >= m.len() && t.as_bytes()[..m.len()].eq_ignore_ascii_case(m.as_bytes());
    let ends = |m: &str| t.len() >= m.len() && t.as_bytes()[t.len() - m.len()..].eq_ignore_ascii_case(m.as_bytes());
    CONTEXTUAL.iter().any(|(open, close)| starts(open) && ends(close))
}

/// A ResponseItem, or the payload of any record: the union of the fields
/// a replay reads, each lenient, so a record of another shape reads as
/// one with fewer fields.
#[derive(Deserialize, Default)]
struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    role: LStr<'a>,
    #[serde(borrow, default)]
    content: Content<'a>,
    #[serde(borrow, default)]
    id: LStr<'a>,
    #[serde(borrow, default)]
    timestamp: LStr<'a>,
    #[serde(borrow, default)]
    cwd: LStr<'a>,
    #[serde(borrow, default)]
    message: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    replacement_history: Option<Vec<Item<'a>>>,
    #[serde(default)]
    num_turns: LU64,
    #[serde(borrow, default)]
    thread_name: LStr<'a>,
    #[serde(borrow, default)]
    record_type: LStr<'a>,
    /// The record of an envelope line (`None` in a legacy bare item).
    #[serde(borrow, default, deserialize_with = "lenient")]
    payload: Option<Box<Item<'a>>>,
}

/// A line: the envelope `{timestamp, type, payload}`, or (legacy) a bare
/// item; both are read by [`Item`].
type Line<'a> = Item<'a>;

/// One model-visible item of the replayed history, its text as a `T`.
#[derive(Clone, Debug, PartialEq)]
enum Hist<T> {
    /// A user message: its text, or `None` when it is contextual.
    User(Option<T>),
    /// Assistant text.
    Assistant(T),
    /// A checkpoint, with its summary (`None`: encrypted).
    Checkpoint(Option<T>),
}

impl<T> Hist<T> {
    /// The same item, its text made by `f`.
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Hist<U> {
        match self {
            Hist::User(t) => Hist::User(t.map(f)),
            Hist::Assistant(t) => Hist::Assistant(f(t)),
            Hist::Checkpoint(t) => Hist::Checkpoint(t.map(f)),
        }
    }

    /// Its text, if it has one.
    fn text(&self) -> Option<&T> {
        match self {
            Hist::User(t) | Hist::Checkpoint(t) => t.as_ref(),
            Hist::Assistant(t) => Some(t),
        }
    }
}

fn classify(item: &Item<'_>) -> Option<Hist<String>> {
    match item.kind.get()? {
        "message" => match item.role.get()? {
            "user" => {
                let parts: Vec<&str> = item.content.texts(&["input_text", "text"]).collect();
                if parts.iter().any(|p| is_contextual(p)) {
                    return Some(Hist::User(None));
                }
                let text = parts.join("\n");
                if text.trim_start().starts_with(SUMMARY_PREFIX) {
                    return Some(Hist::Checkpoint(Some(text)));
                }
                Some(Hist::User(Some(text)))
            }
            "assistant" => {
                let text: Vec<&str> = item.content.texts(&["output_text", "text"]).collect();
                Some(Hist::Assistant(text.join("\n")))
            }
            _ => None,
        },
        "compaction" | "compaction_summary" | "context_compaction" => Some(Hist::Checkpoint(None)),
        _ => None,
    }
}

/// Which text of its line a text kept by where it is is: the text
/// [`classify`] gives of the line's item (its payload, the line itself in
/// a legacy flat rollout, or an item of its replacement history), or a
/// compaction's `message`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TextOf {
    Payload,
    Bare,
    Replaced(u32),
    Compacted,
}

impl LineText for TextOf {
    fn text_in(self, line: &[u8]) -> Option<String> {
        let line = serde_json::from_slice::<Line<'_>>(line).ok()?;
        let of = |item: &Item<'_>| classify(item).and_then(|h| h.text().cloned());
        match self {
            TextOf::Payload => of(line.payload.as_deref()?),
            TextOf::Bare => of(&line),
            TextOf::Replaced(k) => of(line.payload?.replacement_history?.get(k as usize)?),
            TextOf::Compacted => line.payload?.message.owned(),
        }
    }
}

/// The header of a rollout: its first line's id, creation time and cwd.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// The session id.
    pub id: Option<String>,
    /// Its creation time (ms).
    pub created_at: Option<u64>,
    /// Its cwd at creation.
    pub cwd: Option<String>,
}

fn head_of(line: &Line<'_>) -> Option<Head> {
    match (line.payload.as_deref(), line.kind.get()) {
        (Some(p), Some("session_meta")) => Some(Head {
            id: p.id.owned(),
            created_at: p.timestamp.get().or(line.timestamp.get()).and_then(iso_ms),
            cwd: p.cwd.owned().filter(|c| !c.is_empty()),
        }),
        // Legacy: `{id, timestamp, instructions?, git?}` first.
        (None, None) if line.id.get().is_some() => {
            Some(Head { id: line.id.owned(), created_at: line.timestamp.get().and_then(iso_ms), cwd: None })
        }
        _ => None,
    }
}

/// The header from the first line (`None` when it is not one).
pub fn read_head(file: File) -> io::Result<Option<Head>> {
    let mut head = None;
    let read = each_line(file, 1, |_, bytes| {
        let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes) else { return false };
        head = head_of(&line);
        true
    });
    match read {
        // A first line too long to read: no header (the file name gives
        // the id), and reading the session reports the line.
        Err(e) if e.kind() != io::ErrorKind::InvalidData => Err(e),
        _ => Ok(head),
    }
}

/// The replayed history, with where each user turn starts, so that a
/// rollback and a compaction cost what they drop or keep, not the whole
/// history (each recomputing it made a rollout of many rollbacks
/// quadratic).
#[derive(Default)]
struct History {
    items: Vec<Hist<Txt>>,
    /// The index of each real user message (`Hist::User(Some(_))`).
    turns: Vec<usize>,
    /// `items[..users]` are all real user messages (what a compaction
    /// without a replacement history keeps).
    users: usize,
}

impl History {
    fn push(&mut self, h: Hist<Txt>) {
        crate::work::add(1);
        if matches!(h, Hist::User(Some(_))) {
            self.turns.push(self.items.len());
        }
        self.items.push(h);
    }

    /// The history becomes `list`.
    fn replace(&mut self, list: Vec<Hist<Txt>>) {
        *self = History::default();
        for h in list {
            self.push(h);
        }
    }

    /// Compaction without a replacement history: the real user messages so
    /// far, then the checkpoint.
    fn compact(&mut self, checkpoint: Hist<Txt>) {
        let tail = self.items.split_off(self.users);
        crate::work::add(tail.len());
        self.turns.truncate(self.users);
        for h in tail.into_iter().filter(|h| matches!(h, Hist::User(Some(_)))) {
            self.push(h);
        }
        self.users = self.items.len();
        self.push(checkpoint);
    }

    /// Drops the newest `n` user turns.
    fn roll_back(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        let n = usize::try_from(n).unwrap_or(usize::MAX).min(self.turns.len());
        let Some(&cut) = self.turns.get(self.turns.len() - n) else { return };
        crate::work::add(n + self.items.len() - cut);
        self.items.truncate(cut);
        self.turns.truncate(self.turns.len() - n);
        self.users = self.users.min(cut);
    }
}

/// Replays a whole rollout as it was when the read began, up to its last
/// complete line (a line a writer is in the middle of is not read). Its
/// title is the latest `thread_name_updated` name, else the first real user
/// message, else the first assistant text (the source looks up
/// `session_index.jsonl` first).
///
/// With `texts` off (a read for the title alone) the history is not
/// replayed and no text is kept but the title's: the conversation is then
/// empty, and memory stays bounded by one line, not the rollout.
pub fn read(file: File, texts: bool) -> io::Result<Transcript> {
    let keep = if texts { Keep::Texts } else { Keep::Nothing };
    let Replayed { transcript, said, .. } = replay(file, keep, Places::default())?;
    let items = said.into_iter().map(|s| s.into_item(held)).collect();
    Ok(Transcript { items, ..transcript })
}

/// Replays a rollout's conversation for a prompt of `budget` bytes, as
/// [`read`] replays it (as it was when the read began), holding what
/// retention may keep rather than every text: the replay keeps where each
/// text is (its line's offset, length and checksum) and holds the newest
/// texts retention may still keep and the checkpoints', letting older ones
/// go as newer ones arrive (`Places::holding`); the items retention
/// certainly drops under the budget are left out and counted in the
/// [`Elided`]. Only a rollback or a compaction that brings texts let go
/// back into the budget makes it read their lines again, from the same
/// open file. `None` when a line read again is not the line the replay
/// read (the rollout was rewritten under the read): the caller reads it
/// whole again. The title is not read (`None`).
pub fn read_within(file: File, budget: u64) -> io::Result<Option<(Transcript, Elided)>> {
    let mut again = file.try_clone()?;
    let Replayed { transcript, said, mut texts } = replay(file, Keep::Places, Places::holding(budget))?;
    let Some((items, elided)) = placed::within(said, &mut texts, &mut again, budget)? else { return Ok(None) };
    Ok(Some((Transcript { items, ..transcript }, elided)))
}

/// Reads a rollout for its conversation items one at a time (as the search
/// index reads them): a replay as [`read_within`]'s keeps where each text
/// is; each pass over the items then reads the texts again, item by item,
/// checked as [`read_within`] checks them (a pass that finds a line
/// changed is an error).
pub fn read_items(file: File) -> io::Result<impl StreamedItems> {
    let again = file.try_clone()?;
    let Replayed { said, texts, .. } = replay(file, Keep::Places, Places::default())?;
    PlacedItems::new(said, texts, again)
}

/// What a replay gives: the transcript without its items, the items with
/// their texts as kept, and where the texts kept by where they are are.
struct Replayed {
    transcript: Transcript,
    said: Vec<Said>,
    texts: Places<TextOf>,
}

/// Replays every complete line of the rollout as it was when the read
/// began, keeping of the texts what `keep` says (the title only when it
/// keeps the texts or nothing), the texts kept by where they are in
/// `texts`.
fn replay(file: File, keep: Keep, mut texts: Places<TextOf>) -> io::Result<Replayed> {
    let mut out = Transcript::default();
    let mut thread_name = None;
    let mut history = History::default();
    let mut head_seen = false;
    let mut last_turn_cwd = None;
    let replays = keep != Keep::Nothing;
    let titled = keep != Keep::Places;
    let (mut first_user, mut first_assistant) = (None::<String>, None::<String>);
    let mut note_first = |h: &Hist<String>| match h {
        Hist::User(Some(t)) if titled && first_user.is_none() => first_user = title_from_text(t),
        Hist::Assistant(t) if titled && first_assistant.is_none() => first_assistant = title_from_text(t),
        _ => {}
    };
    let stats: LineStats = each_line_at(as_of_now(file)?, u64::MAX, |_, offset, bytes| {
        let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes) else { return false };
        if !head_seen {
            if let Some(h) = head_of(&line) {
                head_seen = true;
                out.created_at = h.created_at;
                out.cwd = h.cwd;
                return true;
            }
        }
        // A text of this line as the replay keeps it.
        let mut checksum = None;
        let mut kept = |texts: &mut Places<TextOf>, h: Hist<String>, what: TextOf| {
            // A checkpoint is never dropped while it is in the history.
            let hold = if matches!(h, Hist::Checkpoint(_)) { Hold::Pinned } else { Hold::Newest };
            h.map(|t| match keep {
                Keep::Places => texts.keep(offset, bytes, &mut checksum, t, what, hold),
                _ => Txt::Held(t),
            })
        };
        match (line.payload.as_deref(), line.kind.get()) {
            (Some(p), Some("response_item")) => {
                if let Some(h) = classify(p) {
                    note_first(&h);
                    if replays {
                        history.push(kept(&mut texts, h, TextOf::Payload));
                    }
                }
            }
            (Some(_), Some("compacted")) if !replays => {}
            (Some(p), Some("compacted")) => {
                // The checkpoints before it leave the history.
                texts.unpin();
                match &p.replacement_history {
                    Some(list) => {
                        let mut replaced = Vec::new();
                        for (k, item) in list.iter().enumerate() {
                            if let Some(h) = classify(item) {
                                let k = u32::try_from(k).unwrap_or(u32::MAX);
                                replaced.push(kept(&mut texts, h, TextOf::Replaced(k)));
                            }
                        }
                        history.replace(replaced);
                    }
                    None => {
                        let message = p.message.owned().filter(|m| !m.trim().is_empty());
                        history.compact(kept(&mut texts, Hist::Checkpoint(message), TextOf::Compacted));
                    }
                }
            }
            (Some(p), Some("event_msg")) => match p.kind.get() {
                Some("thread_rolled_back") if replays => history.roll_back(p.num_turns.0.unwrap_or(0)),
                Some("thread_name_updated") => {
                    if let Some(name) = p.thread_name.owned().filter(|t| !t.trim().is_empty()) {
                        thread_name = Some(name);
                    }
                }
                _ => {}
            },
            (Some(p), Some("turn_context")) => {
                if let Some(cwd) = p.cwd.owned().filter(|c| !c.is_empty()) {
                    last_turn_cwd = Some(cwd);
                }
            }
            // Legacy flat rollouts: bare ResponseItems and state records.
            (None, Some(_)) if line.record_type.get().is_none() => {
                if let Some(h) = classify(&line) {
                    note_first(&h);
                    if replays {
                        history.push(kept(&mut texts, h, TextOf::Bare));
                    }
                }
            }
            _ => {}
        }
        true
    })?;
    out.stats = stats;
    if last_turn_cwd.is_some() {
        out.cwd = last_turn_cwd;
    }
    out.title = if titled { thread_name.or(first_user).or(first_assistant) } else { None };
    let said = history
        .items
        .into_iter()
        .filter_map(|h| match h {
            Hist::User(Some(t)) if texts.bytes(&t) > 0 => Some(Said::new(Role::User, t)),
            Hist::User(_) => None,
            Hist::Assistant(t) if texts.bytes(&t) == 0 => None,
            Hist::Assistant(t) => Some(Said::new(Role::Assistant, t)),
            Hist::Checkpoint(t) => Some(Said::checkpoint(t.unwrap_or_else(|| Txt::Held(ENCRYPTED_CHECKPOINT.into())))),
        })
        .collect();
    Ok(Replayed { transcript: out, said, texts })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A history that keeps its turns' starts replays as one that looked
    /// for them at each rollback and filtered it whole at each compaction.
    #[test]
    fn history_replays_as_the_whole_scans_did() {
        let mut next = crate::sources::file_source::test_random(0x2545_f491_4f6c_dd1d);
        for round in 0..500 {
            let (mut history, mut plain) = (History::default(), Vec::<Hist<Txt>>::new());
            for step in 0..60 {
                match next(8) {
                    0..=2 => {
                        let h = Hist::User(Some(Txt::Held(format!("u{step}"))));
                        history.push(h.clone());
                        plain.push(h);
                    }
                    3 => {
                        history.push(Hist::User(None));
                        plain.push(Hist::User(None));
                    }
                    4 => {
                        let h = Hist::Assistant(Txt::Held(format!("a{step}")));
                        history.push(h.clone());
                        plain.push(h);
                    }
                    5 => {
                        let n = next(4);
                        history.roll_back(n as u64);
                        let starts: Vec<usize> =
                            (0..plain.len()).filter(|&i| matches!(plain[i], Hist::User(Some(_)))).collect();
                        let n = n.min(starts.len());
                        if n > 0 {
                            plain.truncate(starts[starts.len() - n]);
                        }
                    }
                    6 => {
                        let c = Hist::Checkpoint(Some(Txt::Held(format!("c{step}"))));
                        history.compact(c.clone());
                        plain.retain(|h| matches!(h, Hist::User(Some(_))));
                        plain.push(c);
                    }
                    _ => {
                        let list = vec![
                            Hist::User(Some(Txt::Held(format!("r{step}")))),
                            Hist::Assistant(Txt::Held("x".into())),
                        ];
                        history.replace(list.clone());
                        plain = list;
                    }
                }
                assert_eq!(history.items, plain, "round {round}, step {step}");
            }
        }
    }

    #[test]
    fn contextual_fragments() {
        assert!(is_contextual("<environment_context>\n<cwd>/w</cwd>\n</environment_context>"));
        assert!(is_contextual("# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>"));
        assert!(is_contextual("  <TURN_ABORTED>x</turn_aborted>\n"));
        assert!(!is_contextual("<environment_context> is a tag I want explained"));
        assert!(!is_contextual("fix the build"));
    }
}
