//! The command line as clap reads it: the global options, the commands,
//! and what they mean for the sources to open and the configuration.

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use dsh_session_reference::sources::{
    default_specs, defaults_or_every_location, kinds_sentence, no_default_location_message, SourceKind, SourceSpec,
};
use dsh_session_reference::{Config, Error, ErrorCode, Hardening};
use serde_json::{Map, Value};

use crate::print::{display, Out};

/// What the command is, in one line (`--help`, the manual page's NAME),
/// naming every kind the core reads.
fn about() -> String {
    format!(
        "Find, search, read and reference the sessions of your coding agents ({}: see --source) as bounded, \
         read-only snapshots",
        kinds_sentence()
    )
}

/// Examples shown under `--help`: the commands a person starts with.
const EXAMPLES: &str = "\
Examples:
  dsh-session-ref demo                        the main job on a bundled example
  dsh-session-ref candidates                  sessions of every agent found, this directory's first
  dsh-session-ref candidates --query goal     ... whose id, cwd or title holds \"goal\"
  dsh-session-ref search durable goal         sessions where both words were said
  dsh-session-ref read goal-wrapup            the newest messages of a session that fit 16 KB
  dsh-session-ref show goal-wrapup            a session's whole conversation, as a model sees it
  dsh-session-ref prepare --message 'see @[wrap-up](dsh-session:ImdvYWwtd3JhcHVwIg)' --prompt
                                              the context a message mentioning it would carry
  dsh-session-ref --source claude-code=~/.claude/projects candidates
                                              one agent's sessions only

Sources: without --source or --root, every default location that exists
(of the kinds --source lists). Exit codes: 0 success, 1 error (with its code
on stderr), 2 usage error.";

/// The help of one command: its own arguments and options; the global
/// options are listed once, under `dsh-session-ref --help`.
pub(crate) const COMMAND_HELP: &str = "\
{about-with-newline}
{usage-heading} {usage}

{all-args}{after-help}

Global options (--root, --source, --json, --hardened, --quiet, ...): see dsh-session-ref --help";

/// Bring a bounded, read-only snapshot of other DeepSeek Harness sessions
/// into a new message.
#[derive(Parser, Debug)]
#[command(name = "dsh-session-ref", version, about = about(), long_about = None, after_help = EXAMPLES)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

impl Cli {
    /// The command line as given, parsed; exits with clap's message and
    /// exit code (0 for `--help` and `--version`, 2 for a usage error).
    pub(crate) fn parse_or_exit() -> Cli {
        let matches = command().get_matches();
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// The clap command: every command's help lists its own options and
/// points to the global ones, which the top-level help lists once.
pub(crate) fn command() -> clap::Command {
    fn own_options_only(cmd: &mut clap::Command, globals: &[clap::Arg]) {
        for sub in cmd.get_subcommands_mut() {
            let mut own = std::mem::take(sub).help_template(COMMAND_HELP);
            // Each command gets the global options now, hidden from its
            // help (clap copies a global option only where it is missing).
            for arg in globals {
                own = own.arg(arg.clone().hide(true));
            }
            *sub = own;
            own_options_only(sub, globals);
        }
    }
    let mut cmd = Cli::command();
    let globals: Vec<clap::Arg> = cmd.get_arguments().filter(|a| a.is_global_set()).cloned().collect();
    own_options_only(&mut cmd, &globals);
    cmd
}

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Global options (before or after the command)")]
pub(crate) struct Global {
    /// Say nothing on stderr but warnings and errors (no `note:` lines)
    #[arg(long, short, global = true)]
    pub(crate) quiet: bool,
    /// DSH sessions root [default: $DSH_HOME/sessions, else ~/.dsh/sessions]
    #[arg(long, global = true, value_name = "DIR", conflicts_with = "source")]
    pub(crate) root: Option<PathBuf>,
    /// A source to read, KIND=DIR (repeatable, one per kind), or a team
    /// database, postgres=URL; the kinds and their default locations come
    /// from the core (`source_help`).
    #[arg(long, global = true, value_name = "KIND=DIR", value_parser = parse_spec, help = source_help())]
    pub(crate) source: Vec<SourceArg>,
    /// Per-source byte budget of a prepared snapshot [default: 65536]
    #[arg(long, global = true, value_name = "N")]
    pub(crate) max_reference_bytes: Option<u64>,
    /// Distinct references allowed per message, 1 to 3 [default: 3]
    #[arg(long, global = true, value_name = "N")]
    pub(crate) max_references: Option<u64>,
    /// Reproduce the output of this DSH release: 0.1.1, 0.1.5 or 0.1.7 [default: 0.1.1]
    #[arg(long, global = true, value_name = "VERSION")]
    pub(crate) dsh_compat: Option<String>,
    /// The model's context window in tokens, for the automatic budget of dshCompat 0.1.5 and 0.1.7
    #[arg(long, global = true, value_name = "TOKENS")]
    pub(crate) context_window: Option<u64>,
    /// Print machine-readable JSON (the shapes of docs/contract.md)
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Hardened mode: --redact-secrets, --escape-invisible and --sanitize-labels together (docs/security.md)
    #[arg(long, global = true)]
    pub(crate) hardened: bool,
    /// Replace credentials in the snapshot and in labels by [redacted <kind>]
    #[arg(long, global = true)]
    pub(crate) redact_secrets: bool,
    /// Write invisible and bidirectional characters as \uXXXX escapes in the snapshot
    #[arg(long, global = true)]
    pub(crate) escape_invisible: bool,
    /// Drop hidden characters from labels and cut them to 100 characters
    #[arg(long, global = true)]
    pub(crate) sanitize_labels: bool,
    /// Keep what candidates --query and search learn (titles, indexed text)
    /// in $XDG_CACHE_HOME/dsh-session-reference/ (private to you) to start
    /// warm next time [the default]
    #[arg(long, global = true, overrides_with = "no_cache")]
    pub(crate) cache: bool,
    /// Read every session afresh and read or write no cache file
    #[arg(long, global = true, overrides_with = "cache")]
    pub(crate) no_cache: bool,
    /// Answer in this process: ask no daemon and start none (as does
    /// DSR_NO_DAEMON=1; see dsh-session-ref daemon --help)
    #[arg(long, global = true)]
    pub(crate) no_daemon: bool,
}

impl Global {
    /// How the result is printed: `--json` (with invisible characters
    /// escaped under `--escape-invisible`), else for a person.
    pub(crate) fn out(&self) -> Out {
        match self.json {
            false => Out::Human,
            true => Out::Json { escape_invisible: self.hardening().escape_invisible },
        }
    }

    /// Whether the command keeps its cache files: unless `--no-cache`
    /// (the last of `--cache` / `--no-cache` wins).
    pub(crate) fn caching(&self) -> bool {
        !self.no_cache
    }

    /// The hardened mode's protections the flags ask for.
    pub(crate) fn hardening(&self) -> Hardening {
        Hardening {
            redact_secrets: self.hardened || self.redact_secrets,
            escape_invisible: self.hardened || self.escape_invisible,
            sanitize_labels: self.hardened || self.sanitize_labels,
        }
    }

    /// The configuration the flags ask for, read as every front reads one
    /// ([`Config::from_json`], the same keys and the same checks).
    pub(crate) fn config(&self, candidate_limit: Option<u64>) -> dsh_session_reference::Result<Config> {
        self.config_with(candidate_limit, self.hardening())
    }

    /// [`config`](Self::config) with the protections of `hardening`.
    pub(crate) fn config_with(
        &self,
        candidate_limit: Option<u64>,
        hardening: Hardening,
    ) -> dsh_session_reference::Result<Config> {
        let mut m = Map::new();
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(v) = value {
                m.insert(key.to_owned(), v);
            }
        };
        put("maxReferences", self.max_references.map(Value::from));
        put("maxReferenceBytes", self.max_reference_bytes.map(Value::from));
        put("candidateLimit", candidate_limit.map(Value::from));
        let [redact, escape, sanitize] = dsh_session_reference::wire::HARDENING_KEYS;
        put(redact, Some(Value::Bool(hardening.redact_secrets)));
        put(escape, Some(Value::Bool(hardening.escape_invisible)));
        put(sanitize, Some(Value::Bool(hardening.sanitize_labels)));
        put("dshCompat", self.dsh_compat.clone().map(Value::from));
        Config::from_json(&Value::Object(m))
    }
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// List sessions the target could reference, best first, with mentions
    Candidates {
        #[command(flatten)]
        target: TargetArgs,
        /// Keep sessions whose id, cwd or title contains this (case-insensitive)
        #[arg(long, default_value = "")]
        query: String,
        /// At most this many candidates [default: 50]
        #[arg(long, value_name = "N", value_parser = parse_limit)]
        limit: Option<u64>,
    },
    /// Search what was said in sessions (messages, titles, ids, cwds), best first, with snippets
    Search {
        #[command(flatten)]
        target: TargetArgs,
        /// The words to find (case-insensitive; every word must occur; no
        /// quotes needed)
        #[arg(required = true, num_args = 1.., value_name = "WORDS")]
        query: Vec<String>,
        /// At most this many results [default: 50]
        #[arg(long, value_name = "N", value_parser = parse_limit)]
        limit: Option<u64>,
        /// Only sessions in the target's cwd
        #[arg(long)]
        same_cwd: bool,
    },
    /// Rewrite the mentions in a message and prepare the referenced context
    Prepare {
        #[command(flatten)]
        target: TargetArgs,
        /// The message text, with @[label](dsh-session:...) mentions (none with
        /// --ref alone: then only the referenced sessions' context is prepared)
        #[arg(long, value_name = "TEXT", conflicts_with = "stdin", required_unless_present_any = ["stdin", "references"])]
        message: Option<String>,
        /// Read the message text from standard input (one trailing line end is dropped)
        #[arg(long)]
        stdin: bool,
        /// Print only the context text given to the model
        #[arg(long, conflicts_with = "json")]
        prompt: bool,
        /// Reference this session too (an id, a dsh-session: URI or a mention;
        /// repeatable), after those the message mentions
        #[arg(long = "ref", value_name = "ID")]
        references: Vec<String>,
        /// Carry only messages START..END (END exclusive; also START.., ..END
        /// and START..=LAST) of the mentioned session ID (repeatable; a session
        /// not mentioned is added)
        #[arg(long, value_name = "ID=START..END", value_parser = parse_range)]
        range: Vec<(String, Value)>,
        /// Carry message N of session ID and the messages around it that fit
        /// (repeatable; a session not mentioned is added)
        #[arg(long, value_name = "ID=N", value_parser = parse_around)]
        around: Vec<(String, Value)>,
    },
    /// Read one page of a session's projected conversation, within a byte budget
    Read {
        /// The session (an id, with or without its source's prefix, a dsh-session: URI or a mention)
        id: String,
        /// Read forward from this message index
        #[arg(long, value_name = "N", conflicts_with_all = ["around", "cursor"])]
        start: Option<u64>,
        /// Read this message index and the messages around it
        #[arg(long, value_name = "N", conflicts_with = "cursor")]
        around: Option<u64>,
        /// Continue from a page's next or previous cursor
        #[arg(long, value_name = "CURSOR")]
        cursor: Option<String>,
        /// The page's budget in UTF-8 bytes of its framed text [default: 16384]
        #[arg(long, value_name = "N")]
        max_bytes: Option<u64>,
        /// A budget in tokens as well (counted as at most one token per byte)
        #[arg(long, value_name = "N")]
        max_tokens: Option<u64>,
        /// The session reading (it cannot read itself) [default: none]
        #[arg(long, value_name = "ID")]
        target: Option<String>,
        /// Print only the framed text given to a model
        #[arg(long, conflicts_with = "json")]
        text: bool,
    },
    /// Show the projected conversation of one session, as the model sees it
    Show {
        /// The session (an id, with or without its source's prefix, a dsh-session: URI or a mention)
        id: String,
    },
    /// Encode or decode dsh-session: URIs
    Uri {
        #[command(subcommand)]
        command: UriCommand,
    },
    /// Print the mention text of a session, to paste into a message
    Mention {
        /// The session (an id, with or without its source's prefix, or a dsh-session: URI)
        id: String,
        /// The label shown in the mention [default: the session's title, else its id]
        #[arg(long)]
        label: Option<String>,
    },
    /// Run the main job end to end on the example root embedded in the binary (or --root)
    Demo,
    /// Print a shell completion script (e.g. `dsh-session-ref completions bash > ~/.local/share/bash-completion/completions/dsh-session-ref`)
    Completions {
        /// The shell
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff; e.g. `dsh-session-ref man | man -l -`),
    /// or write it and one page per command into a directory
    Man {
        /// Write dsh-session-ref.1 and dsh-session-ref-COMMAND.1 here
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Send what a reference may see of each session (its projected
    /// conversation, title, cwd and project; credentials redacted) to a
    /// team's PostgreSQL database (docs/teams.md)
    #[command(after_long_help = PUSH_EXAMPLES)]
    Push(PushArgs),
    /// Serve the sessions to MCP clients (Claude Code, Codex, Gemini CLI,
    /// Cursor, DSH) on standard input and output (docs/mcp.md)
    #[command(after_long_help = MCP_EXAMPLES)]
    Mcp(McpArgs),
    /// Serve the sessions over HTTP on this machine: the picker and reader
    /// page, the JSON API and MCP over streamable HTTP (docs/serve.md)
    #[command(after_long_help = SERVE_EXAMPLES)]
    Serve(ServeArgs),
    /// Manage who reads a team database through `serve --users`: users,
    /// their tokens, the projects granted to each, and the record of who
    /// read what (docs/teams.md)
    #[command(after_long_help = USERS_EXAMPLES)]
    Users(UsersArgs),
    /// The one process that answers your commands warm, started by the first
    /// command that needs it: start, stop or ask about it (Linux; the same
    /// output either way)
    #[command(after_long_help = DAEMON_EXAMPLES)]
    Daemon(DaemonArgs),
}

/// Examples under `push --help`.
const PUSH_EXAMPLES: &str = "\
Examples:
  export DSR_DATABASE_URL='postgres://me@db.example.invalid/team?sslmode=require'
  dsh-session-ref push                          every session of every default source
  dsh-session-ref push --project . --since 2026-11-01
  dsh-session-ref --source postgres=$DSR_DATABASE_URL search durable goal

Only the projected conversation (what a reference carries: never tool output,
reasoning or the raw log), the title, cwd, project, createdAt, source kind and
fingerprint are sent, credentials redacted unless --no-redact. A session the
database holds unchanged is not sent again; each is replaced in one transaction.";

/// `push`.
#[derive(Args, Debug, Clone)]
pub(crate) struct PushArgs {
    /// The database, a PostgreSQL URL [default: $DSR_DATABASE_URL]
    #[arg(long, value_name = "URL")]
    pub(crate) to: Option<String>,
    /// Only sessions whose cwd is this directory or below it
    #[arg(long, value_name = "DIR")]
    pub(crate) project: Option<PathBuf>,
    /// Only sessions created on or after this day (YYYY-MM-DD, UTC)
    #[arg(long, value_name = "DATE", value_parser = parse_day)]
    pub(crate) since: Option<i64>,
    /// Send the text as it is, credentials included (the default redacts them)
    #[arg(long)]
    pub(crate) no_redact: bool,
    /// Push the sessions as this user's own: `serve --users` offers them to
    /// that user whatever the projects granted [default: to no user in
    /// particular, only through their project]
    #[arg(long = "as", value_name = "USER")]
    pub(crate) as_user: Option<String>,
}

/// Examples under `users --help`.
const USERS_EXAMPLES: &str = "\
Examples:
  export DSR_DATABASE_URL='postgres://admin@db.example.invalid/sessions?sslmode=require'
  dsh-session-ref users add ana
  dsh-session-ref users projects                 the project keys the database holds
  dsh-session-ref users grant ana https://git.example.invalid/team/app.git
  dsh-session-ref users token ana                prints a new token, once
  dsh-session-ref users revoke 3                 token 3 is refused from the next request on
  dsh-session-ref users audit --user ana

The database keeps a SHA-256 of each token, never the token.";

/// `users`.
#[derive(Args, Debug, Clone)]
pub(crate) struct UsersArgs {
    /// The team database, a PostgreSQL URL [default: $DSR_DATABASE_URL]
    #[arg(long, value_name = "URL")]
    pub(crate) database: Option<String>,
    #[command(subcommand)]
    pub(crate) command: UsersCommand,
}

#[derive(Subcommand, Debug, Clone)]
pub(crate) enum UsersCommand {
    /// Add a user (no token and no project yet)
    Add {
        /// The user's name (letters, digits, '.', '_', '-', '@')
        name: String,
    },
    /// Issue a new token to a user and print it (shown once: the database
    /// keeps only its hash)
    Token {
        /// The user
        name: String,
    },
    /// Revoke a token, or every token of a user: refused from the next
    /// request on
    Revoke {
        /// The token's number (`users list` shows them)
        #[arg(required_unless_present = "user", conflicts_with = "user")]
        id: Option<i64>,
        /// Every token of this user
        #[arg(long, value_name = "USER")]
        user: Option<String>,
    },
    /// Let a user read the sessions of a project
    Grant {
        /// The user
        name: String,
        /// The project's key as a push records it (`users projects` lists them)
        project: String,
    },
    /// Take a project back from a user
    Ungrant {
        /// The user
        name: String,
        /// The project's key
        project: String,
    },
    /// List the users, their projects and their tokens
    List,
    /// List the projects the database holds, with their number of sessions
    Projects,
    /// Show who read which session and when, newest first
    Audit {
        /// Only this user's reads
        #[arg(long, value_name = "USER")]
        user: Option<String>,
        /// At most this many rows [default: 50]
        #[arg(long, value_name = "N", value_parser = parse_limit)]
        limit: Option<u64>,
    },
}

/// `YYYY-MM-DD` as epoch milliseconds at its start (UTC).
pub(crate) fn parse_day(s: &str) -> Result<i64, String> {
    let bad = || format!("{s:?} is not a day written YYYY-MM-DD");
    let mut parts = s.splitn(3, '-');
    let mut next = |len: usize| {
        let p = parts.next().filter(|p| p.len() == len && p.bytes().all(|b| b.is_ascii_digit())).ok_or_else(bad)?;
        p.parse::<i64>().map_err(|_| bad())
    };
    let (y, m, d) = (next(4)?, next(2)?, next(2)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(bad());
    }
    // Days from 1970-01-01 to y-m-d (the proleptic Gregorian calendar).
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Ok((era * 146_097 + doe - 719_468) * 86_400_000)
}

/// Examples under `daemon --help`.
const DAEMON_EXAMPLES: &str = "\
Examples:
  dsh-session-ref search goal        answered in its own process; starts the daemon
  dsh-session-ref search goal        ... now answered by the daemon (the same output)
  dsh-session-ref daemon status      its pid, what it keeps, how many commands it answered
  dsh-session-ref daemon stop
  dsh-session-ref daemon start       start it by hand (ends after 60 idle minutes)

A command that reads sessions (candidates, search, prepare, read, show,
mention) goes to the daemon when it is yours, the same build, and started
with the same environment (HOME, XDG_CACHE_HOME, DSH_HOME, ...); otherwise
it runs in its own process. When none runs, the command answers in its own
process and starts one in the background for the commands after it; that
daemon ends after 30 minutes without a command. None is started with
--no-daemon, DSR_NO_DAEMON=1 (which also keeps commands from a running
one) or CI set. Every change to the logs made before a command began is in
its answer (docs/store-and-cli.md).";

/// `daemon`.
#[derive(Args, Debug, Clone)]
pub(crate) struct DaemonArgs {
    #[command(subcommand)]
    pub(crate) command: DaemonCommand,
}

#[derive(Subcommand, Debug, Clone)]
pub(crate) enum DaemonCommand {
    /// Start the daemon in the background (nothing happens when one runs)
    Start {
        /// End after this many minutes without a command (0: never)
        #[arg(long, value_name = "MINUTES", default_value_t = 60)]
        idle_timeout: u64,
    },
    /// Stop the daemon (it saves its cache files first)
    Stop,
    /// Say whether the daemon runs, and what it keeps
    Status,
    /// Run the daemon in the foreground (for a service manager)
    Run {
        /// End after this many minutes without a command (0: never)
        #[arg(long, value_name = "MINUTES", default_value_t = 0)]
        idle_timeout: u64,
        /// The descriptor of the daemon's lock, taken for it by the process
        /// that started it (so that no other can start meanwhile)
        #[arg(long, value_name = "FD", hide = true)]
        lock_fd: Option<i32>,
        /// Started by a command that found no daemon (said in its status)
        #[arg(long, hide = true)]
        first_use: bool,
    },
}

/// Examples under `mcp --help`.
const MCP_EXAMPLES: &str = "\
Examples:
  # The sessions of this project (its directory and below), every default source
  dsh-session-ref mcp

  # Register it with Claude Code (or see docs/mcp.md for Codex, Gemini CLI, Cursor, DSH)
  claude mcp add sessions -- dsh-session-ref mcp

  # Every session of two sources, plus one session of another project
  dsh-session-ref --source dsh=$HOME/.dsh/sessions --source codex=$HOME/.codex mcp --scope all
  dsh-session-ref mcp --allow 2f6c0e9a-demo

Nothing but MCP messages is written to standard output; notes go to standard error.
The server ends when its standard input closes.";

/// Examples under `serve --help`.
const SERVE_EXAMPLES: &str = "\
Examples:
  # Serve this repository's sessions; open the URL printed (token included)
  dsh-session-ref serve --open

  # A fixed port and token, for an MCP client's configuration
  dsh-session-ref serve --listen 127.0.0.1:8765 --token-file ~/.config/dsr-token --scope all

The first line on standard output is the URL to open; notes go to standard error.
The server ends on Ctrl-C (SIGINT) or SIGTERM.";

/// How `serve` listens, and which sessions it offers.
#[derive(Args, Debug, Clone)]
pub(crate) struct ServeArgs {
    /// The address to listen on, IP:PORT (port 0 picks a free one); an
    /// address other than loopback needs --token-file or --users
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:0")]
    pub(crate) listen: std::net::SocketAddr,
    /// Open the page in a browser once listening
    #[arg(long)]
    pub(crate) open: bool,
    /// Read the token from this file (its first line) instead of making a
    /// new one at each start
    #[arg(long, value_name = "FILE")]
    pub(crate) token_file: Option<PathBuf>,
    /// Let pages of this origin (e.g. http://localhost:5173) call the API
    /// with the token (CORS); none by default
    #[arg(long, value_name = "ORIGIN")]
    pub(crate) cors_origin: Option<String>,
    /// Serve a team database (--source postgres=URL) to its users: each
    /// request carries a user's token (`dsh-session-ref users token`) and
    /// sees only that user's sessions and projects; every read is recorded
    /// in the database (docs/teams.md)
    #[arg(long, conflicts_with = "token_file")]
    pub(crate) users: bool,
    #[command(flatten)]
    pub(crate) sessions: McpArgs,
}

/// Which sessions the MCP server offers, and how.
#[derive(Args, Debug, Clone)]
pub(crate) struct McpArgs {
    /// `project`: sessions whose cwd is the project directory or below it;
    /// `all`: every session of the sources
    #[arg(long, value_name = "SCOPE", default_value = "project", value_parser = ["project", "all"])]
    pub(crate) scope: String,
    /// The project directory of `--scope project` [default: the repository
    /// the working directory is in, else the working directory]
    #[arg(long, value_name = "DIR")]
    pub(crate) project: Option<PathBuf>,
    /// Offer this session as well, whatever its cwd (repeatable)
    #[arg(long, value_name = "ID")]
    pub(crate) allow: Vec<String>,
    /// The session the client runs in: never offered, and it cannot read
    /// itself (a request's `_meta` "dsh-session-reference/callerSessionId" says the same)
    #[arg(long, value_name = "ID")]
    pub(crate) caller: Option<String>,
    /// Leave the text as it is: no redaction, invisible characters and
    /// labels as written (the hardened mode is on by default over MCP;
    /// --redact-secrets and the like still apply)
    #[arg(long)]
    pub(crate) no_harden: bool,
}

#[derive(Subcommand, Debug)]
pub(crate) enum UriCommand {
    /// Print the canonical URI of a session id
    Encode {
        /// The session id
        id: String,
    },
    /// Print the session id a URI names
    Decode {
        /// A dsh-session: URI
        uri: String,
    },
}

/// The session a command acts for. A person at a shell has none: then it is
/// a new session in the current directory.
#[derive(Args, Debug)]
pub(crate) struct TargetArgs {
    /// For hosts: the session about to send the message (never offered,
    /// never referenced) [default: a new session in the current directory]
    #[arg(long, value_name = "ID")]
    pub(crate) target: Option<String>,
    /// The working directory that ranks sessions (same directory first)
    /// [default: the target's own when listed, else the current directory]
    #[arg(long, value_name = "DIR")]
    pub(crate) cwd: Option<String>,
}

pub(crate) fn default_root() -> PathBuf {
    if let Some(home) = std::env::var_os("DSH_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(home).join("sessions");
    }
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE")).unwrap_or_default();
    PathBuf::from(home).join(".dsh").join("sessions")
}

/// A `--limit`: a whole number of at least 1.
pub(crate) fn parse_limit(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("a limit of 0 would list nothing; give 1 or more".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a whole number of 1 or more")),
    }
}

/// A `--source`: a kind of the core's read from a directory, or a team
/// database (`postgres=URL`, docs/teams.md). A database is no kind of the
/// core's: the core reads files and holds no network client, and the
/// database is read through the teams crate's source.
#[derive(Clone, Debug)]
pub(crate) enum SourceArg {
    /// `KIND=DIR`.
    Disk(SourceSpec),
    /// `postgres=URL` (or `postgresql=URL`).
    Database(String),
}

/// The name a team database is given as a source (`--source postgres=URL`).
pub(crate) const DATABASE_SOURCE: &str = "postgres";

pub(crate) fn parse_spec(spec: &str) -> Result<SourceArg, String> {
    match spec.split_once('=') {
        Some((DATABASE_SOURCE | "postgresql", url)) if !url.is_empty() => Ok(SourceArg::Database(url.to_owned())),
        _ => SourceSpec::parse(spec).map(SourceArg::Disk),
    }
}

impl Global {
    /// The team database of `--source postgres=URL`, if one is given; an
    /// error when it is given with other sources, or twice (a view reads
    /// one database alone: its ids are the ids the pushing machines' sources
    /// gave, prefixes and all).
    pub(crate) fn database(&self) -> dsh_session_reference::Result<Option<String>> {
        let urls: Vec<&String> = self
            .source
            .iter()
            .filter_map(|s| match s {
                SourceArg::Database(url) => Some(url),
                SourceArg::Disk(_) => None,
            })
            .collect();
        match urls.as_slice() {
            [] => Ok(None),
            [url] if self.source.len() == 1 => Ok(Some((*url).clone())),
            _ => Err(Error::new(
                ErrorCode::InvalidConfig,
                format!("--source {DATABASE_SOURCE}=URL is read alone: give it once, without other sources"),
            )),
        }
    }

    /// The `--source KIND=DIR`s.
    fn disk_sources(&self) -> Vec<SourceSpec> {
        self.source
            .iter()
            .filter_map(|s| match s {
                SourceArg::Disk(spec) => Some(spec.clone()),
                SourceArg::Database(_) => None,
            })
            .collect()
    }
}

/// The help of `--source`: every kind the core reads, with its default
/// location, from `SourceKind::ALL` (so the help never misses a kind).
pub(crate) fn source_help() -> String {
    format!(
        "A source to read, KIND=DIR (repeatable, one per kind), KIND one of: {}. Or a team database, \
         {DATABASE_SOURCE}=URL, read alone (docs/teams.md). Without --source and --root: every default location that \
         exists, named on stderr",
        SourceKind::help_text()
    )
}

/// `ID=START..END`, `ID=START..`, `ID=..END` or `ID=START..=LAST` as the
/// session id and the reference's `range` (`{"start", "end"?}`, end
/// exclusive). The id is everything before the last `=`.
pub(crate) fn parse_range(spec: &str) -> Result<(String, Value), String> {
    let (id, range) = spec.rsplit_once('=').ok_or("expected ID=START..END")?;
    let (id, inclusive, range) = match id.strip_suffix("..") {
        // `ID=START..=LAST` splits at the `=` of `..=`.
        Some(head) => {
            let (id, start) = head.rsplit_once('=').ok_or("expected ID=START..=LAST")?;
            (id, true, format!("{start}..{range}"))
        }
        None => (id, false, range.to_owned()),
    };
    let (start, end) = range.split_once("..").ok_or("expected a range START..END")?;
    let number = |s: &str| s.parse::<u64>().map_err(|_| format!("{s:?} is not a message index"));
    let start = if start.is_empty() { 0 } else { number(start)? };
    let mut m = Map::new();
    m.insert("start".into(), Value::from(start));
    if !end.is_empty() {
        let end = number(end)?;
        m.insert("end".into(), Value::from(if inclusive { end.saturating_add(1) } else { end }));
    } else if inclusive {
        return Err("expected ID=START..=LAST".into());
    }
    Ok((id.to_owned(), Value::Object(m)))
}

/// `ID=N` as the session id and the reference's `around`.
pub(crate) fn parse_around(spec: &str) -> Result<(String, Value), String> {
    let (id, n) = spec.rsplit_once('=').ok_or("expected ID=N")?;
    let n = n.parse::<u64>().map_err(|_| format!("{n:?} is not a message index"))?;
    Ok((id.to_owned(), Value::from(n)))
}

/// The sources to open: `--source`s as given; else `--root` (DSH only);
/// else every default location that exists, named on stderr unless it is
/// the DSH root alone (which reads as `--root` would). With no default
/// location at all, an error naming every place looked at.
pub(crate) fn chosen_sources(global: &Global, dsh_root: PathBuf) -> dsh_session_reference::Result<Vec<SourceSpec>> {
    if !global.source.is_empty() {
        return Ok(global.disk_sources());
    }
    if global.root.is_some() {
        return Ok(vec![SourceSpec::new(SourceKind::Dsh, dsh_root)]);
    }
    let found = default_specs();
    if found.is_empty() {
        return Err(Error::new(ErrorCode::ReadFailed, no_default_location_message()));
    }
    if found.len() == 1 && found[0].kind == SourceKind::Dsh {
        return Ok(vec![SourceSpec::new(SourceKind::Dsh, dsh_root)]);
    }
    let named: Vec<String> =
        found.iter().map(|s| format!("{}={}", s.kind.name(), display(&s.root.to_string_lossy()))).collect();
    if !global.quiet {
        eprintln!("note: sources: {}", named.join(", "));
    }
    Ok(found)
}

/// The sources of a server: [`chosen_sources`], except that with no
/// default location at all it is every kind at its default location, each
/// opened once its root exists (`true`): a server started before the first
/// session of any agent starts, and finds the sessions as they come.
pub(crate) fn server_sources(
    global: &Global,
    dsh_root: PathBuf,
) -> dsh_session_reference::Result<(Vec<SourceSpec>, bool)> {
    if global.source.is_empty() && global.root.is_none() && default_specs().is_empty() {
        return Ok((defaults_or_every_location(Vec::new(), SourceKind::default_locations), true));
    }
    Ok((chosen_sources(global, dsh_root)?, false))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn days_are_read_as_their_first_millisecond() {
        assert_eq!(parse_day("1970-01-01"), Ok(0));
        assert_eq!(parse_day("2026-12-07"), Ok(1_796_601_600_000));
        assert_eq!(parse_day("2000-03-01"), Ok(951_868_800_000));
        for bad in ["2026-1-07", "2026-13-01", "yesterday", "2026-12-07T00:00"] {
            assert!(parse_day(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_database_source_is_read_alone() {
        assert!(matches!(parse_spec("postgres=postgres://h/db"), Ok(SourceArg::Database(u)) if u == "postgres://h/db"));
        assert!(matches!(parse_spec("dsh=/tmp/x"), Ok(SourceArg::Disk(_))));
        assert!(parse_spec("postgres=").is_err());
    }

    #[test]
    fn ranges_and_arounds_read_every_form() {
        let ok = |spec: &str| parse_range(spec).unwrap();
        assert_eq!(ok("a=12..30"), ("a".to_owned(), json!({"start": 12, "end": 30})));
        assert_eq!(ok("a=12.."), ("a".to_owned(), json!({"start": 12})));
        assert_eq!(ok("a=..30"), ("a".to_owned(), json!({"start": 0, "end": 30})));
        assert_eq!(ok("a=12..=30"), ("a".to_owned(), json!({"start": 12, "end": 31})));
        assert_eq!(ok("a=..=0"), ("a".to_owned(), json!({"start": 0, "end": 1})));
        assert_eq!(ok("k=v=1..2"), ("k=v".to_owned(), json!({"start": 1, "end": 2})), "the id may hold '='");
        for bad in ["a", "a=1", "a=x..2", "a=1..y", "a=1..=", "a=-1..2"] {
            assert!(parse_range(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_around("a=b=7").unwrap(), ("a=b".to_owned(), json!(7)));
        assert!(parse_around("a=").is_err() && parse_around("a").is_err());
    }
}
