//! Readers of session logs that other programs write to disk, each a
//! read-only session query over one root directory.
//!
//! - [`dsh`]: DeepSeek Harness session logs, format generations v0 to v4
//!   ([`DshStore`](dsh::DshStore)).
//! - [`aider`]: Aider chat histories ([`AiderSource`](aider::AiderSource)).
//! - [`claude_code`]: Claude Code transcripts ([`ClaudeCodeSource`](claude_code::ClaudeCodeSource)).
//! - [`codex`]: Codex CLI rollouts ([`CodexSource`](codex::CodexSource)).
//! - [`copilot_cli`]: GitHub Copilot CLI event logs
//!   ([`CopilotCliSource`](copilot_cli::CopilotCliSource)).
//! - [`cursor`]: Cursor agent transcripts ([`CursorSource`](cursor::CursorSource)).
//! - [`gemini_cli`]: Gemini CLI chats ([`GeminiCliSource`](gemini_cli::GeminiCliSource)).
//! - [`files`]: what the readers of one file per session share
//!   ([`FileSessions`](files::FileSessions)).
//! - [`opencode`]: OpenCode and Kilo SQLite databases ([`OpenCodeSource`](opencode::OpenCodeSource)).
//! - [`cline`]: Cline and Roo Code tasks ([`ClineSource`](cline::ClineSource)).
//! - [`pi`]: Pi sessions, also Oh-My-Pi's and Prime Agent's ([`PiSource`](pi::PiSource)).
//! - [`qwen_code`]: Qwen Code chats ([`QwenCodeSource`](qwen_code::QwenCodeSource)).
//! - [`continue_cli`]: Continue CLI sessions ([`ContinueSource`](continue_cli::ContinueSource)).
//! - [`kimi`]: Kimi Code sessions ([`KimiSource`](kimi::KimiSource)).
//! - [`grok`]: Grok Build sessions ([`GrokSource`](grok::GrokSource)).
//! - [`goose`]: Goose's SQLite database ([`GooseSource`](goose::GooseSource)).
//! - [`crush`]: Crush's SQLite databases ([`CrushSource`](crush::CrushSource)).
//! - [`zed`]: Zed's agent threads database ([`ZedSource`](zed::ZedSource)).
//! - [`hermes`]: Hermes Agent's SQLite state store ([`HermesSource`](hermes::HermesSource)).
//! - [`warp`]: Warp's agent conversations database ([`WarpSource`](warp::WarpSource)).
//! - [`sqlite`]: what the readers of one SQLite database share
//!   ([`SqliteSource`](sqlite::SqliteSource)).
//! - [`openhands`]: OpenHands conversations ([`OpenHandsSource`](openhands::OpenHandsSource)).
//! - [`multi`]: one view over several sources ([`MultiQuery`]).
//! - [`open`]: the table of every kind ([`SourceKind::ALL`]: each reader
//!   declares its own descriptor, its `KIND`), default locations and
//!   opening several sources by kind.
//!
//! Every source is a [`FileSource`]: a [`BlockingSessionQuery`] over a root
//! that reads files only through [`fs`], so that each inherits the same
//! guarantees (read-only, no symbolic link below the root followed, regular
//! files only, bounded lines, byte-ordered walks).

pub mod aider;
mod awaited;
pub mod claude_code;
pub mod cline;
pub mod codex;
pub mod continue_cli;
pub mod copilot_cli;
pub mod crush;
pub mod cursor;
pub mod dsh;
pub mod files;
pub mod foreign;
pub mod gemini_cli;
pub mod goose;
pub mod grok;
pub mod hermes;
pub mod kimi;
pub(crate) mod kind;

pub mod lenient;
pub mod multi;
pub mod open;
pub mod opencode;
pub mod openhands;
pub mod pi;
pub(crate) mod placed;
pub mod qwen_code;
pub mod sqlite;
pub mod warp;
pub(crate) mod watch;
pub mod zed;

use std::path::Path;
use std::sync::Arc;

use crate::error::HostError;
use crate::host::{Blocking, BlockingSessionQuery, SessionQuery};

pub use self::multi::{MultiQuery, SourceStatus};
pub use self::open::{
    default_specs, open_source, open_sources, open_sources_awaiting, report_json, specs_from_json, surface_json_bytes,
    SourceKind, SourceSpec,
};
/// File identity and safe opening (the crate's `fs` module, also reachable here).
#[doc(hidden)]
pub use crate::fs;
pub use crate::fs::FileIdentity;

pub use self::multi::SourceNotes;
pub use self::open::{
    defaults_or_every_location, empty_root_note, kinds_sentence, location_variables, no_default_location_message,
    ResolvedSpec,
};

/// The checksum a read keeps of a line it means to read again (with its
/// length), to know the line read again is the line it read first: a file
/// changed under the read is read whole again rather than mixing versions.
pub(crate) fn line_checksum(line: &[u8]) -> u64 {
    crate::cache_file::checksum(0x6473_6873_7475_6231, line)
}

/// The position in a listing of each of `ids` (same order): ids given in
/// listing order (as a resolver gives them, the target left out) are
/// matched by walking the listing along, without hashing; others are
/// looked up with `find`.
pub(crate) fn positions_in_order<'a>(
    len: usize,
    id_at: impl Fn(usize) -> &'a str + 'a,
    ids: &'a [String],
    find: impl Fn(&str) -> Option<usize> + 'a,
) -> impl Iterator<Item = Option<usize>> + 'a {
    let mut next = 0;
    ids.iter().map(move |id| {
        let from = next;
        if let Some(at) = (from..(from + 2).min(len)).find(|&at| id_at(at) == id.as_str()) {
            next = at + 1;
            return Some(at);
        }
        find(id)
    })
}

/// A small deterministic random source for the readers' tests: each call
/// `next(n)` gives a number in `0..n`.
#[cfg(test)]
pub(crate) fn test_random(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    }
}

/// Checks that `root` is a readable directory (a link to one is fine: the
/// root is the one link a source follows) and returns it.
pub(crate) fn open_root(root: &Path, format: &str) -> std::io::Result<std::path::PathBuf> {
    let fail = |e: std::io::Error, what: &str| {
        std::io::Error::new(e.kind(), format!("cannot {what} {format} root {}: {e}", root.display()))
    };
    let meta = std::fs::metadata(root).map_err(|e| fail(e, "open"))?;
    if !meta.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{format} root {} is not a directory", root.display()),
        ));
    }
    std::fs::read_dir(root).map_err(|e| fail(e, "read"))?;
    Ok(root.to_path_buf())
}

/// A session source backed by files under one root directory.
///
/// Its reads block (they are file reads); [`into_query`](Self::into_query)
/// wraps it in [`Blocking`], which runs each read on tokio's blocking pool so
/// reads of several sessions run in parallel.
pub trait FileSource: BlockingSessionQuery + Sized {
    /// A short name of the format, for messages (`"DSH"`).
    const FORMAT: &'static str;

    /// The root directory.
    fn root(&self) -> &Path;

    /// The identity of the file a read of `session_id` would read now: a
    /// cheap way for a caller to tell whether a session changed since it
    /// last read it.
    fn identity(&self, session_id: &str) -> Result<FileIdentity, HostError>;

    /// This source as a session query for a [`Resolver`](crate::Resolver).
    fn into_query(self) -> Arc<dyn SessionQuery> {
        Arc::new(Blocking::new(self))
    }
}
