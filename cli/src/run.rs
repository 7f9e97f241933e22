//! The commands: what each does with its arguments, in this process or
//! (the same code) in the daemon for a caller.

use std::io::Read;

use dsh_session_reference::{
    block_on, decode_uri, encode_uri, format_mention, parse_text_with, Candidate, CandidateOptions, Error, ErrorCode,
    PrepareOptions, Prepared, ReadOptions, SearchOptions, SearchScope, Target,
};
use serde_json::{json, Value};

use crate::args::{chosen_sources, default_root, server_sources, Cli, Command, UriCommand};
use crate::ctx::{Ctx, Sources};
#[cfg(target_os = "linux")]
use crate::daemon;
use crate::failure::{read_failed, CliResult, Failure};
use crate::print::{
    context_text, display, display_text, note_ranking as print_ranking_note, print_candidates, print_conversation,
    print_data, print_page, print_prepared, print_search, print_text_or_json, Out,
};
use crate::{example, mcp, serve};

/// Runs the command `cli` in this process (or, in the daemon, for a caller).
pub(crate) fn run(cli: &Cli) -> CliResult {
    let g = &cli.global;
    let root = || g.root.clone().unwrap_or_else(default_root);
    let sources = || chosen_sources(g, root());
    match &cli.command {
        Command::Candidates { target, query, limit } => {
            let ctx = Ctx::open(g, sources()?, None, false)?;
            let target = ctx.target(target)?;
            let list = candidates(&ctx, &target, query, *limit)?;
            ctx.save_cache();
            print_candidates(&list, ctx.out);
            ctx.notes();
            if !ctx.out.is_json() && !g.quiet {
                print_ranking_note(&list, target.cwd.as_deref());
            }
            ctx.end();
        }
        Command::Search { target, query, limit, same_cwd } => {
            let ctx = Ctx::open(g, sources()?, None, true)?;
            let target = ctx.target(target)?;
            ctx.index_loaded();
            let scope = if *same_cwd { SearchScope::SameCwd } else { SearchScope::All };
            let options = SearchOptions { limit: *limit, scope };
            let progress = (!g.quiet).then(|| Progress::after_a_second("indexing what was said in every session (a first search over these sources; later ones start warm)"));
            let list = block_on(ctx.resolver.search(&target, &query.join(" "), &options, ctx.cancel.as_ref()));
            drop(progress);
            let list = list?;
            ctx.save_cache();
            print_search(&list, ctx.out);
            ctx.notes();
            ctx.end();
        }
        Command::Prepare { target, message, stdin, prompt, references, range, around } => {
            let text = match (message, stdin) {
                (Some(m), _) => m.clone(),
                (None, false) => String::new(),
                (None, true) => {
                    let mut s = String::new();
                    std::io::stdin()
                        .read_to_string(&mut s)
                        .map_err(|e| Failure(Error::new(ErrorCode::InvalidReference, format!("reading stdin: {e}"))))?;
                    // `echo … |` and a here-string end the text with a line
                    // end the person did not type into the message.
                    let kept = s.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t)).map(str::len);
                    s.truncate(kept.unwrap_or(s.len()));
                    s
                }
            };
            let ctx = Ctx::open(g, sources()?, None, false)?;
            let target = ctx.target(target)?;
            let named =
                |(id, v): &(String, Value)| -> CliResult<(String, Value)> { Ok((ctx.session_id(id)?, v.clone())) };
            let (range, around) = (
                range.iter().map(named).collect::<CliResult<Vec<_>>>()?,
                around.iter().map(named).collect::<CliResult<Vec<_>>>()?,
            );
            // A session added by --ref is labelled as a mention of it would
            // be (its title); reading the title also fails for an unknown id.
            let added = references
                .iter()
                .map(|r| ctx.on_session(r, |id| Ok((ctx.mention_label(id)?, id.to_owned()))))
                .collect::<CliResult<Vec<_>>>()?;
            let labels: Vec<Value> = added.iter().map(|(label, _)| Value::from(label.as_str())).collect();
            let excerpts: Vec<(&str, &str, &Value)> = range
                .iter()
                .map(|(id, v)| (id.as_str(), "range", v))
                .chain(around.iter().map(|(id, v)| (id.as_str(), "around", v)))
                .chain(added.iter().zip(&labels).map(|((_, id), label)| (id.as_str(), "label", label)))
                .collect();
            let prepared = prepare_with(&ctx, &target, &text, &excerpts)?;
            if *prompt {
                // The context text, ending with a line end (it has none of
                // its own); nothing at all when no session is referenced.
                if let Some(text) = context_text(&prepared) {
                    print_data(text, true);
                }
            } else if ctx.out.is_json() {
                println!("{}", ctx.out.json(&prepared.to_json()));
            } else {
                print_prepared(&prepared);
            }
        }
        Command::Show { id } => {
            let ctx = Ctx::open(g, sources()?, None, false)?;
            show(&ctx, id)?;
        }
        Command::Read { id, start, around, cursor, max_bytes, max_tokens, target, text } => {
            let ctx = Ctx::open(g, sources()?, None, false)?;
            let mut options = ReadOptions::default()
                .with_start(*start)
                .with_around(*around)
                .with_cursor(cursor.clone())
                .with_max_tokens(*max_tokens);
            if let Some(n) = max_bytes {
                options = options.with_max_bytes(*n);
            }
            let page = ctx.on_session(id, |id| {
                // Without --target the reader is a person, not a session: a
                // target id that differs from every id read (the id with a
                // NUL after it), so that no read is refused as a self reference.
                let target = Target::new(target.clone().unwrap_or_else(|| format!("{id}\0")), None);
                Ok(block_on(ctx.resolver.read(&target, id, &options, ctx.cancel.as_ref()))?)
            })?;
            if *text {
                print_data(&page.text, false);
            } else if ctx.out.is_json() {
                println!("{}", ctx.out.json(&page.to_json_with_text()));
            } else {
                print_page(&page);
            }
        }
        Command::Uri { command: UriCommand::Encode { id } } => {
            let uri = encode_uri(id);
            print_text_or_json(&uri, g.out());
        }
        Command::Uri { command: UriCommand::Decode { uri } } => {
            let id = decode_uri(uri)?;
            print_text_or_json(&id, g.out());
        }
        Command::Mention { id, label } => {
            let ctx = Ctx::open(g, sources()?, None, false)?;
            // The session must exist (its title is read even with --label).
            let (title, id) = ctx.on_session(id, |id| Ok((ctx.mention_label(id)?, id.to_owned())))?;
            let mention = format_mention(&id, Some(label.as_deref().unwrap_or(&title)));
            print_text_or_json(&mention, g.out());
        }
        Command::Completions { shell } => {
            // From the plain definition: the global options complete after
            // a command too (the help hides them there).
            use clap::CommandFactory;
            clap_complete::generate(*shell, &mut Cli::command(), "dsh-session-ref", &mut std::io::stdout());
        }
        Command::Man { dir } => {
            use clap::CommandFactory;
            let failed =
                |e: std::io::Error| Failure(Error::new(ErrorCode::ReadFailed, format!("writing the manual: {e}")));
            match dir {
                Some(dir) => clap_mangen::generate_to(Cli::command(), dir).map_err(failed)?,
                None => clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()).map_err(failed)?,
            }
        }
        Command::Demo if !g.source.is_empty() => {
            use clap::CommandFactory;
            let message = "demo reads its bundled example store, or a DSH root given with --root; it takes no --source";
            Cli::command().error(clap::error::ErrorKind::ArgumentConflict, message).exit();
        }
        Command::Mcp(args) => mcp::run(g, args, server_sources(g, root())?)?,
        Command::Serve(args) => serve::run(g, args, server_sources(g, root())?)?,
        Command::Push(args) => crate::push::run(g, args, sources()?)?,
        Command::Users(args) => crate::users::run(g, args)?,
        #[cfg(target_os = "linux")]
        Command::Daemon(args) => daemon::command(g, args)?,
        #[cfg(not(target_os = "linux"))]
        Command::Daemon(_) => {
            return Err(Failure(Error::new(ErrorCode::InvalidConfig, "the daemon runs on Linux only")));
        }
        Command::Demo => {
            // Without --root: the example store embedded in the binary.
            let bundled = match &g.root {
                Some(_) => None,
                None => Some(example::ExampleRoot::unpack().map_err(|e| read_failed(format!("bundled example: {e}")))?),
            };
            let root = g.root.clone().or_else(|| bundled.as_ref().map(|b| b.path().to_owned()));
            // The bundled store lives only for this command: nothing to cache.
            let ctx = Ctx::new(g, root.unwrap_or_default(), None, bundled.is_none())?;
            demo(&ctx, bundled.is_some())?;
        }
    }
    Ok(())
}

/// A line on stderr, when it is a terminal, for work that turns out to take
/// more than a second (a first index build over thousands of sessions);
/// cleared when the work ends. Nothing at all for quick work or when stderr
/// is a file or a pipe.
struct Progress {
    done: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    fn after_a_second(what: &'static str) -> Progress {
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() {
            return Progress { done: None, thread: None };
        }
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                use std::sync::mpsc::RecvTimeoutError;
                // DSR_PROGRESS_AFTER_MS: the delay, for the tests.
                let after = std::env::var("DSR_PROGRESS_AFTER_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
                if let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(std::time::Duration::from_millis(after)) {
                    eprint!("{what}…");
                    // Wait for the end, then erase the line.
                    let _ = wait.recv();
                    eprint!("\r\x1b[2K");
                }
            })
            .ok();
        Progress { done: Some(done), thread }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn candidates(ctx: &Ctx, target: &Target, query: &str, limit: Option<u64>) -> CliResult<Vec<Candidate>> {
    let options = CandidateOptions::default().with_limit(limit);
    Ok(block_on(ctx.resolver.candidates(target, query, &options, ctx.cancel.as_ref()))?)
}

/// Parses the mentions of `text` and prepares `[{"type":"text","text": rewritten}]`.
fn prepare(ctx: &Ctx, target: &Target, text: &str) -> CliResult<Prepared> {
    prepare_with(ctx, target, text, &[])
}

/// [`prepare`] with excerpts `(id, "range" | "around", value)` and added
/// references `(id, "label", label)`: the first excerpt of a mentioned
/// session goes on each of its mentions; any other is a reference of its
/// own, after the mentions (so that a second excerpt of one session is
/// refused by the core, never dropped). An added reference to a session
/// already referenced adds nothing.
fn prepare_with(ctx: &Ctx, target: &Target, text: &str, excerpts: &[(&str, &str, &Value)]) -> CliResult<Prepared> {
    let parsed = parse_text_with(text, ctx.resolver.config().hardening())?;
    let mut references: Vec<Value> = parsed.references.iter().map(|r| r.to_json()).collect();
    let mentioned = references.len();
    let mut placed: Vec<&str> = Vec::new();
    for (id, key, value) in excerpts {
        if *key == "label" {
            if !references.iter().any(|r| r["sessionId"] == *id) {
                references.push(json!({"sessionId": id, "label": value}));
            }
            continue;
        }
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
    Ok(block_on(ctx.resolver.prepare(target, &content, &references, &options, ctx.cancel.as_ref()))?)
}

/// The whole projected conversation (the core's
/// [`dsh_session_reference::Resolver::conversation`]) of the session `name`
/// means ([`Ctx::on_session`]), as text or its JSON.
fn show(ctx: &Ctx, name: &str) -> CliResult {
    let conversation = ctx.on_session(name, |id| Ok(block_on(ctx.resolver.conversation(id, ctx.cancel.as_ref()))?))?;
    if ctx.out.is_json() {
        println!("{}", ctx.out.json(&conversation.to_json()));
    } else {
        print_conversation(&conversation);
    }
    Ok(())
}

fn demo(ctx: &Ctx, bundled: bool) -> CliResult {
    let target = Target::new("demo-new-session", Some("/home/dev/alpha".to_owned()));
    let list = candidates(ctx, &target, "", None)?;
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
    if ctx.out.is_json() {
        let out = json!({
            "target": {"id": target.id, "cwd": target.cwd},
            "candidates": list.iter().map(Candidate::to_json).collect::<Vec<_>>(),
            "message": message,
            "prepared": prepared.to_json(),
        });
        println!("{}", ctx.out.json(&out));
        return Ok(());
    }
    if bundled {
        println!("== Sessions root: the bundled example store (examples/sessions/) ==\n");
    } else if let Sources::Dsh(store) = &ctx.sources {
        println!("== Sessions root: {} ==\n", display(&store.root().to_string_lossy()));
    }
    println!("== Candidates for a new session in /home/dev/alpha ==\n");
    print_candidates(&list, Out::Human);
    println!("\n== The user's message ==\n\n{}\n", display_text(&message));
    println!("== Prepared ==\n");
    print_prepared(&prepared);
    println!("\n== Context given to the model ==\n");
    println!("{}", display_text(context_text(&prepared).unwrap_or_default()));
    Ok(())
}
