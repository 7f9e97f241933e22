//! `dsh-session-ref`: cross-session references from the command line, over
//! a DeepSeek Harness sessions directory (the embedded DSH store) and, with
//! `--source`, Claude Code transcripts and Codex rollouts as well.
//!
//! Exit codes: 0 on success, 2 on usage errors, 1 on contract errors (the
//! contract error code (docs/contract.md §8.2) is printed to stderr as `error: CODE: message`).

use std::io::Read;
use std::process::ExitCode;

use clap::Parser;
use dsh_session_reference::wire::stringify;
use dsh_session_reference::{
    block_on, decode_uri, encode_uri, format_mention, parse_text_with, Candidate, CandidateOptions, Error, ErrorCode,
    PrepareOptions, Prepared, ReadOptions, Resolver, SearchOptions, SearchScope, Target,
};
use serde_json::{json, Value};

mod args;
mod cache;
mod ctx;
mod example;
mod mcp;
mod print;

use args::{chosen_sources, default_root, Cli, Command, UriCommand};
use ctx::{Ctx, Sources};
use print::{
    context_text, print_candidates, print_conversation, print_page, print_prepared, print_search, print_text_or_json,
};

/// A failure: a contract error (exit 1, contract code on stderr).
pub(crate) struct Failure(Error);

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure(e)
    }
}

pub(crate) type CliResult<T = ()> = Result<T, Failure>;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => e.exit(), // 0 for --help/--version, 2 for usage errors
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(e)) => {
            eprintln!("error: {}: {}", e.code(), e.message());
            ExitCode::from(1)
        }
    }
}

pub(crate) fn read_failed(message: impl Into<String>) -> Failure {
    Failure(Error::new(ErrorCode::ReadFailed, message))
}

fn run(cli: Cli) -> CliResult {
    let g = &cli.global;
    let root = || g.root.clone().unwrap_or_else(default_root);
    let sources = || chosen_sources(g, root());
    match &cli.command {
        Command::Candidates { target, query, limit } => {
            let ctx = Ctx::open(g, sources(), None, false)?;
            let target = ctx.target(target)?;
            let list = candidates(&ctx.resolver, &target, query, *limit)?;
            ctx.save_cache();
            print_candidates(&list, ctx.json);
            ctx.notes();
            // The process ends here: its memory goes with it faster than
            // the caches (thousands of sessions) are dropped one by one.
            std::mem::forget(ctx);
        }
        Command::Search { target, query, limit, same_cwd } => {
            let mut ctx = Ctx::open(g, sources(), None, true)?;
            let target = ctx.target(target)?;
            ctx.index_loaded();
            let scope = if *same_cwd { SearchScope::SameCwd } else { SearchScope::All };
            let options = SearchOptions { limit: *limit, scope };
            let list = block_on(ctx.resolver.search(&target, query, &options, None))?;
            ctx.save_cache();
            print_search(&list, ctx.json);
            ctx.notes();
            std::mem::forget(ctx);
        }
        Command::Prepare { target, message, stdin, prompt, range, around } => {
            let text = match (message, stdin) {
                (Some(m), _) => m.clone(),
                (None, _) => {
                    let mut s = String::new();
                    std::io::stdin()
                        .read_to_string(&mut s)
                        .map_err(|e| Failure(Error::new(ErrorCode::InvalidReference, format!("reading stdin: {e}"))))?;
                    s
                }
            };
            let ctx = Ctx::open(g, sources(), None, false)?;
            let target = ctx.target(target)?;
            let excerpts: Vec<(&str, &str, &Value)> = range
                .iter()
                .map(|(id, v)| (id.as_str(), "range", v))
                .chain(around.iter().map(|(id, v)| (id.as_str(), "around", v)))
                .collect();
            let prepared = prepare_with(&ctx, &target, &text, &excerpts)?;
            if *prompt {
                print!("{}", context_text(&prepared).unwrap_or_default());
            } else if ctx.json {
                println!("{}", stringify(&prepared.to_json()));
            } else {
                print_prepared(&prepared);
            }
        }
        Command::Show { id } => {
            let ctx = Ctx::open(g, sources(), None, false)?;
            show(&ctx, id)?;
        }
        Command::Read { id, start, around, cursor, max_bytes, max_tokens, target, text } => {
            let ctx = Ctx::open(g, sources(), None, false)?;
            let mut options = ReadOptions::default()
                .with_start(*start)
                .with_around(*around)
                .with_cursor(cursor.clone())
                .with_max_tokens(*max_tokens);
            if let Some(n) = max_bytes {
                options = options.with_max_bytes(*n);
            }
            // Without --target the reader is a person, not a session: a
            // target id that differs from every id read (the id with a NUL
            // after it), so that no read is refused as a self reference.
            let target = Target::new(target.clone().unwrap_or_else(|| format!("{id}\0")), None);
            let page = block_on(ctx.resolver.read(&target, id, &options, None))?;
            if *text {
                print!("{}", page.text);
            } else if ctx.json {
                println!("{}", stringify(&page.to_json_with_text()));
            } else {
                print_page(&page);
            }
        }
        Command::Uri { command: UriCommand::Encode { id } } => {
            let uri = encode_uri(id);
            print_text_or_json(&uri, g.json);
        }
        Command::Uri { command: UriCommand::Decode { uri } } => {
            let id = decode_uri(uri)?;
            print_text_or_json(&id, g.json);
        }
        Command::Mention { id, label } => {
            let mention = format_mention(id, label.as_deref());
            print_text_or_json(&mention, g.json);
        }
        Command::Mcp(args) => mcp::run(g, args, sources())?,
        Command::Demo => {
            // Without --root: the example store embedded in the binary.
            let bundled = match &g.root {
                Some(_) => None,
                None => Some(example::ExampleRoot::unpack().map_err(|e| read_failed(format!("bundled example: {e}")))?),
            };
            let root = g.root.clone().or_else(|| bundled.as_ref().map(|b| b.path().to_owned()));
            let ctx = Ctx::new(g, root.unwrap_or_default(), None)?;
            demo(&ctx, bundled.is_some())?;
        }
    }
    Ok(())
}

fn candidates(resolver: &Resolver, target: &Target, query: &str, limit: Option<u64>) -> CliResult<Vec<Candidate>> {
    Ok(block_on(resolver.candidates(target, query, &CandidateOptions::default().with_limit(limit), None))?)
}

/// Parses the mentions of `text` and prepares `[{"type":"text","text": rewritten}]`.
fn prepare(ctx: &Ctx, target: &Target, text: &str) -> CliResult<Prepared> {
    prepare_with(ctx, target, text, &[])
}

/// [`prepare`] with excerpts `(id, "range" | "around", value)`: the first
/// excerpt of a mentioned session goes on each of its mentions; any other
/// is a reference of its own, after the mentions (so that a second excerpt
/// of one session is refused by the core, never dropped).
fn prepare_with(ctx: &Ctx, target: &Target, text: &str, excerpts: &[(&str, &str, &Value)]) -> CliResult<Prepared> {
    let parsed = parse_text_with(text, ctx.resolver.config().hardening())?;
    let mut references: Vec<Value> = parsed.references.iter().map(|r| r.to_json()).collect();
    let mentioned = references.len();
    let mut placed: Vec<&str> = Vec::new();
    for (id, key, value) in excerpts {
        let first = !placed.contains(id);
        let mut found = false;
        for r in references[..mentioned].iter_mut().filter(|r| r["sessionId"] == *id) {
            found = true;
            if first {
                r[*key] = (*value).clone();
            }
        }
        if !found || !first {
            references.push(json!({"sessionId": id, (*key): value}));
        }
        placed.push(id);
    }
    let content = json!([{"type": "text", "text": parsed.text}]);
    let options = PrepareOptions::default().with_context_window(ctx.context_window);
    Ok(block_on(ctx.resolver.prepare(target, &content, &references, &options, None))?)
}

/// One session's whole projected conversation (the core's
/// [`Resolver::conversation`]), as text or its JSON.
fn show(ctx: &Ctx, id: &str) -> CliResult {
    let conversation = block_on(ctx.resolver.conversation(id, None))?;
    if ctx.json {
        println!("{}", stringify(&conversation.to_json()));
    } else {
        print_conversation(&conversation);
    }
    Ok(())
}

fn demo(ctx: &Ctx, bundled: bool) -> CliResult {
    let target = Target::new("demo-new-session", Some("/home/dev/alpha".to_owned()));
    let list = candidates(&ctx.resolver, &target, "", None)?;
    let picked: Vec<&Candidate> = list.iter().take(2).collect();
    if picked.len() < 2 {
        return Err(read_failed("the demo root needs at least two sessions"));
    }
    let message = format!(
        "Compare what we settled in {} with the outcome of {}, and list what is still open.",
        picked[0].mention.as_deref().unwrap_or_default(),
        picked[1].mention.as_deref().unwrap_or_default()
    );
    let prepared = prepare(ctx, &target, &message)?;
    if ctx.json {
        let out = json!({
            "target": {"id": target.id, "cwd": target.cwd},
            "candidates": list.iter().map(Candidate::to_json).collect::<Vec<_>>(),
            "message": message,
            "prepared": prepared.to_json(),
        });
        println!("{}", stringify(&out));
        return Ok(());
    }
    if bundled {
        println!("== Sessions root: the bundled example store (examples/sessions/) ==\n");
    } else if let Sources::Dsh(store) = &ctx.sources {
        println!("== Sessions root: {} ==\n", store.root().display());
    }
    println!("== Candidates for a new session in /home/dev/alpha ==\n");
    print_candidates(&list, false);
    println!("\n== The user's message ==\n\n{message}\n");
    println!("== Prepared ==\n");
    print_prepared(&prepared);
    println!("\n== Context given to the model ==\n");
    println!("{}", context_text(&prepared).unwrap_or_default());
    Ok(())
}
