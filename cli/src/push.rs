//! `dsh-session-ref push`: the chosen local sessions sent to a team
//! database through the teams crate (docs/teams.md), with a progress line
//! on a terminal and a summary at the end.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dsh_session_reference::sources::SourceSpec;
use dsh_session_reference::{block_on, Error, ErrorCode, Hardening};
use dsh_session_reference_teams::{push, Database, ProjectKeys, PushSession};
use serde_json::json;

use crate::args::{Global, PushArgs, DATABASE_SOURCE};
use crate::ctx::{Ctx, Lifetime};
use crate::failure::{CliResult, Failure};
use crate::print::display;

/// The environment variable naming the database when `--to` is not given.
pub(crate) const DATABASE_URL_VAR: &str = "DSR_DATABASE_URL";

/// The team database `given` names (the URL of the option `flag`), else
/// `DSR_DATABASE_URL`; an error when neither does, or it is no URL.
pub(crate) fn database(given: Option<&str>, flag: &str) -> CliResult<Database> {
    let invalid = |m: String| Failure(Error::new(ErrorCode::InvalidConfig, m));
    let url = match given {
        Some(url) => url.to_owned(),
        None => std::env::var(DATABASE_URL_VAR)
            .ok()
            .filter(|u| !u.is_empty())
            .ok_or_else(|| invalid(format!("no database: give {flag} URL or set {DATABASE_URL_VAR}")))?,
    };
    Database::new(&url).map_err(|e| invalid(format!("{flag}: {e}")))
}

/// Runs `push` over `specs`.
pub(crate) fn run(g: &Global, args: &PushArgs, specs: Vec<SourceSpec>) -> CliResult {
    let invalid = |m: String| Failure(Error::new(ErrorCode::InvalidConfig, m));
    if g.database()?.is_some() {
        return Err(invalid(format!(
            "push sends local sessions: --source {DATABASE_SOURCE}=URL is a place to read from; give the database \
             with --to URL"
        )));
    }
    let db = database(args.to.as_deref(), "--to")?;
    let redact = !args.no_redact;
    let hardening = Hardening { redact_secrets: redact, ..g.hardening() };
    let lifetime = Lifetime::OneShot { cache: false, needs_index: false };
    let ctx = Ctx::open_with(g, g.config_with(None, hardening)?, specs, lifetime, |q| q)?;
    let listed = ctx.listing()?;
    let project = match &args.project {
        Some(dir) => Some(std::path::absolute(dir).map_err(|e| invalid(format!("--project: {e}")))?),
        None => None,
    };
    let mut keys = ProjectKeys::default();
    let mut sessions = Vec::new();
    for (header, fingerprint) in listed.sessions().iter().zip(listed.fingerprints()) {
        if let Some(dir) = &project {
            if !header.cwd.as_deref().is_some_and(|cwd| Path::new(cwd).starts_with(dir)) {
                continue;
            }
        }
        if let Some(since) = args.since {
            if header.created_at.as_f64().is_none_or(|at| at < since as f64) {
                continue;
            }
        }
        sessions.push(PushSession {
            header: header.clone(),
            fingerprint: fingerprint.clone(),
            kind: ctx.source_of(&header.id).to_owned(),
            project: keys.of(header.cwd.as_deref()),
            owner: args.as_user.clone(),
        });
    }
    let started = Instant::now();
    let line = Progress::new(!g.quiet && std::io::stderr().is_terminal());
    let report = |done: usize, total: usize| line.show(done, total);
    let summary = block_on(push(&db, &ctx.resolver, sessions, &report));
    line.clear();
    ctx.notes();
    let summary = summary?;
    let seconds = started.elapsed().as_secs_f64();
    if ctx.out.is_json() {
        let failed: Vec<_> = summary.failed.iter().map(|(id, why)| json!({"sessionId": id, "why": why})).collect();
        let out = json!({
            "database": db.shown(),
            "pushed": summary.pushed,
            "unchanged": summary.unchanged,
            "failed": failed,
            "textBytes": summary.text_bytes,
            "redacted": redact,
        });
        println!("{}", ctx.out.json(&out));
    } else {
        for (id, why) in &summary.failed {
            eprintln!("warning: session {} not pushed: {}", display(id), display(why));
        }
        if !g.quiet {
            eprintln!(
                "pushed {} session{} ({} unchanged, {} failed; {:.1} MB of projected text{}) to {} in {:.1} s",
                summary.pushed,
                if summary.pushed == 1 { "" } else { "s" },
                summary.unchanged,
                summary.failed.len(),
                summary.text_bytes as f64 / 1e6,
                if redact { ", credentials redacted" } else { ", NOT redacted" },
                display(db.shown()),
                seconds
            );
        }
    }
    ctx.end();
    if !summary.failed.is_empty() {
        return Err(Failure(Error::new(
            ErrorCode::ReadFailed,
            format!("{} session(s) could not be pushed (named above); the others were", summary.failed.len()),
        )));
    }
    Ok(())
}

/// The progress line on a terminal: redrawn at most ten times a second.
struct Progress {
    on: bool,
    last: Mutex<Option<Instant>>,
}

impl Progress {
    fn new(on: bool) -> Self {
        Progress { on, last: Mutex::new(None) }
    }

    fn show(&self, done: usize, total: usize) {
        if !self.on {
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if done < total && last.is_some_and(|at| at.elapsed() < Duration::from_millis(100)) {
            return;
        }
        *last = Some(Instant::now());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\rpushing: {done}/{total} sessions");
        let _ = err.flush();
    }

    fn clear(&self) {
        if self.on && self.last.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}
