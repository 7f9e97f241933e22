//! Kimi Code sessions: a read-only session source over Kimi Code's
//! sessions directory (`$KIMI_CODE_HOME/sessions`, else
//! `~/.kimi-code/sessions`), reading each session's main agent's event log,
//! `<work dir key>/<session id>/agents/main/wire.jsonl`, with the session's
//! `state.json` beside it.
//!
//! ```no_run
//! use dsh_session_reference::sources::kimi::KimiSource;
//! use dsh_session_reference::{Config, FileSource, Resolver};
//!
//! let source = KimiSource::open("/home/me/.kimi-code/sessions")?;
//! let resolver = Resolver::new(source.into_query(), Config::default());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The records follow `MoonshotAI/kimi-code` (MIT):
//! `packages/agent-core/src/agent/records/types.ts` (the wire records),
//! `agent/context/index.ts` (how they rebuild the model's context),
//! `agent/compaction/handoff.ts` (what a compaction keeps),
//! `session/store/session-store.ts` (`state.json`) and the session viewer's
//! `apps/vis/server/src/lib/context-projector.ts`, which replays a wire log
//! into the model's view the same way.
//!
//! # Sessions
//!
//! - **id**: `kimi:<session id>`, the session's directory name
//!   (`session_…`). A subagent's log (`agents/<id>/wire.jsonl` other than
//!   `main`) is not a session of its own. A zero-byte log (or one whose
//!   first line is not complete yet) is not a session yet; a log whose
//!   first line is not a `metadata` record is reported.
//! - **createdAt**: the `metadata` record's `created_at`, else the log's
//!   creation (or modification) time.
//! - **cwd**: `workDir` of the session's `state.json`.
//! - **title**: the title `state.json` keeps (`title`, `/title`'s or a
//!   generated one; else `customTitle`), else the first user message of the
//!   conversation (whitespace collapsed, at most 100 characters).
//! - **capturedThroughSeq**: the 0-based number of the last line read. A
//!   read sees the log as it was when it began, up to its last complete
//!   line.
//!
//! # The current conversation
//!
//! Records are replayed in order, as Kimi Code restores a session:
//!
//! - `context.append_message` adds its message; a `step.begin` loop event
//!   opens an assistant message that its step's `content.part` events fill;
//!   a `tool.result` adds a tool message;
//! - `context.undo` removes messages from the end until `count` real user
//!   prompts are gone (injected messages stay, a compaction summary stops
//!   it); `context.clear` empties the context;
//! - `context.apply_compaction` keeps the real user prompts that fit its
//!   token budget (the oldest and the newest, an oversized one cut at the
//!   same character Kimi Code cuts it), then its summary, as
//!   `handoff.ts` selects them; a record from before that rule keeps the
//!   messages after its `compactedCount`;
//!
//! then, of the messages: a user message whose origin is a real prompt (none,
//! `user`, or a skill or plugin command the user typed): its text parts; a
//! compaction summary: a checkpoint (its `summary`); an assistant message:
//! its text parts (never `think` parts or tool calls); never tool messages
//! or user messages of another origin (injections, `!` commands, hooks,
//! background tasks, cron jobs, retries, system triggers).
//!
//! A line that is not JSON is skipped wherever it is.
//!
//! # Safety
//!
//! As for every source: nothing is written or locked, no link below the
//! root is followed, a line longer than
//! [`MAX_LINE_BYTES`](crate::sources::foreign::MAX_LINE_BYTES) makes the
//! session unreadable.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::conversation::ConversationItem;
use crate::fs::{as_of_now, FileIdentity};
use crate::projection::Role;
use crate::sources::file_source::FileSource;
use crate::sources::files::{walk_with, FileSessions, Head, Rel, SessionFiles, Under, Walk};
use crate::sources::foreign::{each_line, title_from_text, Transcript};
use crate::sources::kind::{seen, Kind, Root};
use crate::sources::lenient::{lenient, LStr, Objects, LU64};

/// What every Kimi Code session id starts with.
pub const PREFIX: &str = "kimi:";

/// The log of a session's main agent, below its directory.
const MAIN_LOG: [&str; 3] = ["agents", "main", "wire.jsonl"];

/// The session's metadata file, in its directory.
const STATE: &str = "state.json";

/// The longest `state.json` read (a longer one is not read).
const MAX_STATE_BYTES: u64 = 4 << 20;

/// The user prompts a compaction keeps, in estimated tokens, and the part
/// of them kept for the oldest (`handoff.ts`).
const KEPT_TOKENS: u64 = 20_000;
const KEPT_HEAD_TOKENS: u64 = 2_000;

/// What an image, audio or video part counts for in Kimi Code's estimate.
const MEDIA_TOKENS: u64 = 2_000;

/// Kimi Code as a kind of source.
pub(crate) const KIND: Kind = Kind {
    name: "kimi",
    format: "Kimi Code",
    about: "Kimi Code sessions (its sessions directory)",
    prefix: PREFIX,
    location: "$KIMI_CODE_HOME/sessions, else ~/.kimi-code/sessions",
    default: Some(|env| env.var("KIMI_CODE_HOME").unwrap_or_else(|| env.home().join(".kimi-code")).join("sessions")),
    also: &[],
    env: &["KIMI_CODE_HOME", "HOME", "USERPROFILE"],
    root: Root::InHome("sessions"),
    layout: "work directory keys holding <session id>/agents/main/wire.jsonl (as ~/.kimi-code/sessions)",
    open: |root| Ok(KimiSource::open(root)?.into_query()),
    empty: empty_note,
};

/// Why a sessions root lists no session.
fn empty_note(kind: &Kind, root: &Path) -> String {
    let entries = seen(root);
    let logs: usize = (entries.iter().filter(|d| d.dir))
        .flat_map(|bucket| seen(&root.join(&bucket.name)).into_iter().map(move |s| (bucket.name.clone(), s)))
        .filter(|(bucket, s)| {
            s.dir && root.join(bucket).join(&s.name).join(MAIN_LOG.iter().collect::<PathBuf>()).is_file()
        })
        .count();
    match logs {
        0 => kind.expected(root, &entries),
        n => format!("{}: its {n} session logs are empty or unreadable", kind.no_session_in(root)),
    }
}

/// The Kimi Code layout of a sessions root.
#[derive(Clone, Copy, Debug, Default)]
pub struct Kimi;

/// A read-only session source over Kimi Code's sessions directory.
pub type KimiSource = FileSessions<Kimi>;

impl FileSessions<Kimi> {
    /// Opens Kimi Code's sessions directory (a directory; a link to one is
    /// fine).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        FileSessions::with_format(root, Kimi)
    }
}

/// Kimi Code's estimate of a text's tokens: four ASCII characters a token,
/// every other character one.
fn estimate(text: &str) -> u64 {
    let (ascii, other) =
        text.chars().fold((0u64, 0u64), |(a, o), c| if c.is_ascii() { (a + 1, o) } else { (a, o + 1) });
    ascii.div_ceil(4) + other
}

/// The longest beginning of `text` within `max` tokens.
fn head_within(text: &str, max: u64) -> &str {
    let (mut ascii, mut other, mut end) = (0u64, 0u64, 0usize);
    for (at, c) in text.char_indices() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
        if ascii.div_ceil(4) + other > max {
            break;
        }
        end = at + c.len_utf8();
    }
    &text[..end]
}

/// The longest end of `text` within `max` tokens.
fn tail_within(text: &str, max: u64) -> &str {
    let (mut ascii, mut other, mut start) = (0u64, 0u64, text.len());
    for (at, c) in text.char_indices().rev() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
        if ascii.div_ceil(4) + other > max {
            break;
        }
        start = at;
    }
    &text[start..]
}

/// One content part.
#[derive(Deserialize, Default)]
struct Part<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    text: LStr<'a>,
    #[serde(borrow, default)]
    think: LStr<'a>,
}

#[derive(Deserialize, Default)]
struct OriginJson<'a> {
    #[serde(borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    trigger: LStr<'a>,
}

#[derive(Deserialize, Default)]
struct MessageJson<'a> {
    #[serde(borrow, default)]
    role: LStr<'a>,
    #[serde(borrow, default)]
    content: Objects<Part<'a>>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    origin: Option<OriginJson<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default)]
    uuid: LStr<'a>,
    #[serde(borrow, default)]
    step_uuid: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    part: Option<Part<'a>>,
}

/// One wire record (the union of the fields a replay reads, each lenient).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LStr<'a>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    message: Option<MessageJson<'a>>,
    #[serde(borrow, default, deserialize_with = "lenient")]
    event: Option<Event<'a>>,
    #[serde(borrow, default)]
    summary: LStr<'a>,
    #[serde(default)]
    compacted_count: LU64,
    #[serde(default)]
    kept_user_message_count: LU64,
    #[serde(default)]
    kept_head_user_message_count: LU64,
    #[serde(default)]
    count: LU64,
    #[serde(rename = "protocol_version", borrow, default)]
    protocol_version: LStr<'a>,
    #[serde(rename = "created_at", default)]
    created_at: LU64,
}

/// Where a message came from, as far as the conversation cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// Typed by the user (no origin, `user`, a skill or plugin command the
    /// user typed).
    Prompt,
    /// Context the harness injected (kept by an undo).
    Injection,
    /// A compaction's summary.
    Summary,
    /// Any other origin (`!` commands, hooks, background tasks, …).
    Other,
}

impl Origin {
    fn of(origin: Option<&OriginJson<'_>>) -> Origin {
        let Some(o) = origin else { return Origin::Prompt };
        match o.kind.get() {
            None | Some("user") => Origin::Prompt,
            Some("skill_activation" | "plugin_command") if o.trigger.get() == Some("user-slash") => Origin::Prompt,
            Some("injection") => Origin::Injection,
            Some("compaction_summary") => Origin::Summary,
            Some(_) => Origin::Other,
        }
    }
}

/// One message of the rebuilt context.
#[derive(Clone, Debug)]
struct Msg {
    role: MsgRole,
    origin: Origin,
    /// Its text parts, concatenated.
    text: String,
    /// Kimi Code's estimate of its tokens.
    tokens: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MsgRole {
    User,
    Assistant,
    Other,
}

impl Msg {
    fn of(m: &MessageJson<'_>) -> Msg {
        let role = match m.role.get() {
            Some("user") => MsgRole::User,
            Some("assistant") => MsgRole::Assistant,
            _ => MsgRole::Other,
        };
        let mut msg = Msg {
            role,
            origin: Origin::of(m.origin.as_ref()),
            text: String::new(),
            tokens: m.role.get().map_or(0, estimate),
        };
        for part in &m.content.0 {
            msg.add(part);
        }
        msg
    }

    fn add(&mut self, part: &Part<'_>) {
        match part.kind.get() {
            Some("text") => {
                let text = part.text.get().unwrap_or_default();
                self.tokens += estimate(text);
                self.text.push_str(text);
            }
            Some("think") => self.tokens += estimate(part.think.get().unwrap_or_default()),
            Some("image_url" | "audio_url" | "video_url") => self.tokens += MEDIA_TOKENS,
            _ => {}
        }
    }

    /// The same prompt holding only `text` (as a compaction cuts one).
    fn with_text(&self, text: &str) -> Msg {
        Msg { text: text.to_owned(), tokens: estimate("user") + estimate(text), ..self.clone() }
    }

    fn summary(text: &str) -> Msg {
        Msg { role: MsgRole::User, origin: Origin::Summary, text: text.to_owned(), tokens: 0 }
    }

    /// A real user prompt (what an undo counts and a compaction keeps).
    fn is_prompt(&self) -> bool {
        self.role == MsgRole::User && self.origin == Origin::Prompt
    }
}

/// The newest prompts within `budget`, the oldest kept cut to what is left
/// (keeping its beginning): the rule of compaction records without a head.
fn recent_within(prompts: &[Msg], budget: u64) -> Vec<Msg> {
    let mut kept = Vec::new();
    let mut left = budget;
    for m in prompts.iter().rev() {
        if left == 0 {
            break;
        }
        if m.tokens <= left {
            kept.push(m.clone());
            left -= m.tokens;
        } else {
            kept.push(m.with_text(head_within(&m.text, left)));
            break;
        }
    }
    kept.reverse();
    kept
}

/// The prompts a compaction keeps: all when they fit, else the oldest
/// within the head budget and the newest within the rest (`handoff.ts`'s
/// `selectCompactionUserMessages`).
fn kept_prompts(prompts: &[Msg]) -> Vec<Msg> {
    if prompts.iter().map(|m| m.tokens).sum::<u64>() <= KEPT_TOKENS {
        return prompts.to_vec();
    }
    let mut tail = Vec::new();
    let mut left = KEPT_TOKENS - KEPT_HEAD_TOKENS;
    let mut head_end = prompts.len();
    let mut cut_prefix = None;
    for (i, m) in prompts.iter().enumerate().rev() {
        if left == 0 {
            break;
        }
        head_end = i;
        if m.tokens <= left {
            tail.push(m.clone());
            left -= m.tokens;
            continue;
        }
        let kept = tail_within(&m.text, left);
        tail.push(m.with_text(kept));
        let prefix = &m.text[..m.text.len() - kept.len()];
        if !prefix.is_empty() {
            cut_prefix = Some(m.with_text(prefix));
        }
        break;
    }
    tail.reverse();
    let mut head = Vec::new();
    let mut left = KEPT_HEAD_TOKENS;
    for m in prompts[..head_end].iter().chain(cut_prefix.as_ref()) {
        if left == 0 {
            break;
        }
        if m.tokens <= left {
            head.push(m.clone());
            left -= m.tokens;
            continue;
        }
        head.push(m.with_text(head_within(&m.text, left)));
        break;
    }
    head.extend(tail);
    head
}

/// The model's context, replayed record by record.
#[derive(Default)]
struct Context {
    messages: Vec<Msg>,
    /// The assistant message each open step fills.
    steps: HashMap<String, usize>,
}

impl Context {
    fn apply(&mut self, r: &Record<'_>) {
        match r.kind.get() {
            Some("context.append_message") => {
                if let Some(m) = &r.message {
                    self.messages.push(Msg::of(m));
                }
            }
            Some("context.append_loop_event") => {
                let Some(ev) = &r.event else { return };
                match ev.kind.get() {
                    Some("step.begin") => {
                        let m =
                            Msg { role: MsgRole::Assistant, origin: Origin::Prompt, text: String::new(), tokens: 0 };
                        if let Some(uuid) = ev.uuid.owned() {
                            self.steps.insert(uuid, self.messages.len());
                        }
                        self.messages.push(m);
                    }
                    Some("content.part") => {
                        let open = ev.step_uuid.get().and_then(|u| self.steps.get(u)).copied();
                        if let (Some(i), Some(part)) = (open, &ev.part) {
                            self.messages[i].add(part);
                        }
                    }
                    Some("step.end") => {
                        if let Some(u) = ev.uuid.get() {
                            self.steps.remove(u);
                        }
                    }
                    Some("tool.result") => self.messages.push(Msg {
                        role: MsgRole::Other,
                        origin: Origin::Other,
                        text: String::new(),
                        tokens: 0,
                    }),
                    _ => {}
                }
            }
            Some("context.clear") => *self = Context::default(),
            Some("context.undo") => self.undo(r.count.0.unwrap_or(0)),
            Some("context.apply_compaction") => self.compact(r),
            _ => {}
        }
    }

    fn undo(&mut self, count: u64) {
        let mut cutoff = self.messages.len();
        let mut prompts = 0;
        for (i, m) in self.messages.iter().enumerate().rev() {
            match m.origin {
                Origin::Injection => continue,
                Origin::Summary => break,
                _ => {}
            }
            cutoff = i;
            if m.is_prompt() {
                prompts += 1;
                if prompts >= count {
                    break;
                }
            }
        }
        let mut at = 0;
        self.messages.retain(|m| {
            at += 1;
            at <= cutoff || m.origin == Origin::Injection
        });
        self.steps.clear();
    }

    fn compact(&mut self, r: &Record<'_>) {
        self.steps.clear();
        let summary = Msg::summary(r.summary.get().unwrap_or_default());
        let compacted = usize::try_from(r.compacted_count.0.unwrap_or(0)).unwrap_or(usize::MAX);
        if r.kept_user_message_count.0.is_none() && compacted < self.messages.len() {
            // A record from before the kept-prompt rule: the summary, then
            // what came after the compacted messages.
            let rest = self.messages.split_off(compacted);
            self.messages = std::iter::once(summary).chain(rest).collect();
            return;
        }
        let prompts: Vec<Msg> = self.messages.iter().filter(|m| m.is_prompt()).cloned().collect();
        let mut kept = if r.kept_head_user_message_count.0.is_none() {
            recent_within(&prompts, KEPT_TOKENS)
        } else {
            kept_prompts(&prompts)
        };
        kept.push(summary);
        self.messages = kept;
    }

    /// The conversation the context shows.
    fn items(&self) -> Vec<ConversationItem> {
        let mut out = Vec::new();
        for m in &self.messages {
            let item = match (m.role, m.origin) {
                (MsgRole::User, Origin::Summary) => ConversationItem::checkpoint(m.text.clone()),
                (MsgRole::User, Origin::Prompt) => ConversationItem::new(Role::User, m.text.clone()),
                (MsgRole::Assistant, _) => ConversationItem::new(Role::Assistant, m.text.clone()),
                _ => continue,
            };
            if !item.text.trim().is_empty() {
                out.push(item);
            }
        }
        out
    }
}

/// What `state.json` says of a session.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct State<'a> {
    #[serde(borrow, default)]
    title: LStr<'a>,
    #[serde(borrow, default)]
    custom_title: LStr<'a>,
    #[serde(default)]
    is_custom_title: Option<serde_json::Value>,
    #[serde(borrow, default)]
    work_dir: LStr<'a>,
}

/// The session's title and working directory from its `state.json` (none
/// when it is missing, too big or not JSON).
fn state(root: &Under<'_>, rel: &[OsString]) -> (Option<String>, Option<String>) {
    let (Some(bucket), Some(session)) = (rel.first(), rel.get(1)) else { return (None, None) };
    let Some(buf) = root.companion(&[bucket, session, OsStr::new(STATE)], MAX_STATE_BYTES) else {
        return (None, None);
    };
    let Ok(s) = serde_json::from_slice::<State<'_>>(&buf) else { return (None, None) };
    // As Kimi Code's `titleFromState`: `title` when `isCustomTitle` says
    // whether it was set or generated, else `customTitle`, else `title`.
    let marked = s.is_custom_title.as_ref().is_some_and(serde_json::Value::is_boolean);
    let title = match (marked, s.title.get(), s.custom_title.get()) {
        (true, Some(title), _) => Some(title),
        (_, _, Some(custom)) => Some(custom),
        (_, title, None) => title,
    };
    let title = title.map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
    (title, s.work_dir.get().filter(|d| !d.is_empty()).map(str::to_owned))
}

/// The bytes a listing reads of a log to find its first line (a metadata
/// record is well under them).
const FIRST_BYTES: usize = 1024;

fn not_a_log() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "not a Kimi Code wire log: its first line is not a metadata record")
}

fn is_metadata(r: &Record<'_>) -> bool {
    r.kind.get() == Some("metadata") && r.protocol_version.get().is_some()
}

/// The log's creation time from its first line, a file open at its start:
/// `Ok(None)` when that line is not complete yet. The metadata record is
/// short: the file's first bytes are read once, and only a first line
/// longer than those is read with the line reader (from the start again).
fn read_head(mut file: File) -> io::Result<Option<Option<u64>>> {
    use std::io::{Read, Seek};
    let mut first = [0u8; FIRST_BYTES];
    let n = loop {
        match file.read(&mut first) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            read => break read?,
        }
    };
    if let Some(end) = memchr::memchr(b'\n', &first[..n]) {
        let line = &first[..end];
        // As `each_line` reads a line: one that is not an object is skipped.
        let is_object = line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        let head = serde_json::from_slice::<Record<'_>>(line).ok().filter(|r| is_object && is_metadata(r));
        return head.map(|r| Some(r.created_at.0)).ok_or_else(not_a_log);
    }
    file.rewind()?;
    let mut head = None;
    let stats = each_line(as_of_now(file)?, 1, |_, bytes| {
        head = serde_json::from_slice::<Record<'_>>(bytes).ok().filter(is_metadata).map(|r| r.created_at.0);
        head.is_some()
    })?;
    match (stats.lines, head) {
        (0, _) => Ok(None),
        (_, Some(created)) => Ok(Some(created)),
        (_, None) => Err(not_a_log()),
    }
}

/// One log's conversation.
fn read(file: File) -> io::Result<Transcript> {
    let mut context = Context::default();
    let mut created_at = None;
    let mut metadata = false;
    let stats = each_line(as_of_now(file)?, u64::MAX, |n, bytes| {
        let Ok(r) = serde_json::from_slice::<Record<'_>>(bytes) else { return false };
        if n == 0 {
            metadata = is_metadata(&r);
            created_at = r.created_at.0;
        }
        context.apply(&r);
        true
    })?;
    if !metadata {
        return Err(not_a_log());
    }
    let items = context.items();
    let title = items.iter().find(|i| i.role == Role::User && !i.checkpoint).and_then(|i| title_from_text(&i.text));
    Ok(Transcript { items, title, cwd: None, created_at: created_at.filter(|_| metadata), stats })
}

impl SessionFiles for Kimi {
    const FORMAT: &'static str = "Kimi Code";
    const PREFIX: &'static str = PREFIX;

    /// The session directories below the work directory keys, each with
    /// its main agent's log at its fixed place (opened there, so a listing
    /// reads no directory inside a session's; one without the log is not a
    /// session).
    fn walk(&self, root: &Path, out: &mut Vec<Rel>, rejected: &mut Vec<(PathBuf, String)>) {
        let descend = |rel: &[OsString], _: &OsStr| rel.is_empty();
        let take =
            |rel: &[OsString], name: &OsStr| rel.len() == 1 && name.to_str().is_some_and(|n| n.starts_with("session_"));
        let mut sessions = Vec::new();
        let walk = Walk { descend: &descend, take: &|_, _| false, take_dir: &take };
        walk_with(root, 1, &walk, &mut sessions, rejected);
        out.extend(sessions.into_iter().map(|mut rel| {
            rel.extend(MAIN_LOG.map(OsString::from));
            rel
        }));
    }

    fn heads(&self, root: &Under<'_>, rel: &[OsString], file: File, identity: &FileIdentity) -> io::Result<Vec<Head>> {
        if identity.size == 0 {
            return Ok(Vec::new());
        }
        let Some(created_at) = read_head(file)? else { return Ok(Vec::new()) };
        let Some(bare) = rel.get(1).and_then(|s| s.to_str()) else { return Ok(Vec::new()) };
        let (_, cwd) = state(root, rel);
        Ok(vec![Head { bare: bare.to_owned(), created_at, cwd }])
    }

    fn read(&self, root: &Path, rel: &[OsString], file: File, _bare: &str) -> io::Result<Transcript> {
        let mut read = read(file)?;
        let (title, cwd) = state(&Under::opened(root), rel);
        read.title = title.or(read.title);
        read.cwd = cwd;
        Ok(read)
    }

    /// A session's `state.json` holds its title and working directory.
    fn companions(&self, rel: &[OsString]) -> Vec<Rel> {
        rel.get(..2).map(|r| vec![vec![r[0].clone(), r[1].clone(), OsString::from(STATE)]]).unwrap_or_default()
    }

    const NAMES_SESSIONS: bool = true;

    /// A session's directory is named by its id.
    fn named_for(&self, rel: &[OsString], bare: &str) -> bool {
        rel.get(1).and_then(|n| n.to_str()) == Some(bare)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_and_cuts_as_kimi_code() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("abcde"), 2);
        assert_eq!(estimate("日本"), 2);
        assert_eq!(head_within("abcdefgh日本", 2), "abcdefgh");
        assert_eq!(head_within("abcdefgh日本", 3), "abcdefgh日");
        assert_eq!(tail_within("日本abcd", 2), "本abcd");
        assert_eq!(tail_within("abc", 0), "");
    }
}
