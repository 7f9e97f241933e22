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
//! Every source is a [`FileSource`]: a [`BlockingSessionQuery`](crate::host::BlockingSessionQuery) over a root
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
pub(crate) mod file_source;
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

pub use self::file_source::FileSource;
