//! What a person meets first at a shell: commands that need no
//! host options, readable defaults, and no silent empty answers.

use std::path::{Path, PathBuf};

mod common;

use common::{cmd, Out};
use dsh_session_reference::sources::dsh::layout::project_dir_name;
use serde_json::Value;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/sessions")
}

fn run_in(dir: &Path, args: &[&str]) -> Out {
    let o = cmd().current_dir(dir).args(args).output().unwrap();
    Out {
        code: o.status.code().unwrap(),
        stdout: String::from_utf8(o.stdout).unwrap(),
        stderr: String::from_utf8(o.stderr).unwrap(),
    }
}

fn ids(json: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    v.as_array().unwrap().iter().map(|c| c["sessionId"].as_str().unwrap().to_owned()).collect()
}

/// The example store copied under `tmp`, its `/home/dev/alpha` project
/// moved to a real directory `tmp/work/alpha` (headers and paths both, as
/// DSH writes them); returns the root and that directory.
fn moved_examples(tmp: &Path) -> (PathBuf, PathBuf) {
    let work = tmp.join("work").join("alpha");
    std::fs::create_dir_all(&work).unwrap();
    let cwd = work.to_str().unwrap().to_owned();
    let root = tmp.join("root");
    let from = examples().join("--home-dev-alpha--");
    let to = root.join(project_dir_name(Some(&cwd)));
    let no_cwd = root.join("_no-cwd").join("multi-turn");
    std::fs::create_dir_all(&no_cwd).unwrap();
    std::fs::copy(examples().join("_no-cwd/multi-turn/session.jsonl"), no_cwd.join("session.jsonl")).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        let dir = to.join(entry.file_name());
        std::fs::create_dir_all(&dir).unwrap();
        let log = std::fs::read_to_string(entry.path().join("session.jsonl")).unwrap();
        std::fs::write(dir.join("session.jsonl"), log.replace("/home/dev/alpha", &cwd)).unwrap();
    }
    (root, work)
}

#[test]
fn candidates_and_search_need_no_target_and_rank_the_current_directory_first() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, work) = moved_examples(tmp.path());
    let root = root.to_str().unwrap();
    let listed = run_in(&work, &["--root", root, "--json", "candidates"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let from_work = ids(&listed.stdout);
    assert_eq!(from_work.len(), 4, "{from_work:?}");
    assert_eq!(from_work[3], "multi-turn", "the sessions of the current directory first");
    // Elsewhere, they rank after the one without a cwd.
    let elsewhere = ids(&run_in(tmp.path(), &["--root", root, "--json", "candidates"]).stdout);
    assert_eq!(elsewhere[0], "multi-turn");
    // `--cwd` says the same as standing there; `--target` keeps its meaning.
    let by_flag = run_in(tmp.path(), &["--root", root, "--json", "candidates", "--cwd", work.to_str().unwrap()]);
    assert_eq!(ids(&by_flag.stdout), from_work);
    let host = run_in(&work, &["--root", root, "--json", "candidates", "--target", &from_work[0]]);
    assert!(!ids(&host.stdout).contains(&from_work[0]), "the target is never offered");

    // Several words without quotes, each of which must occur.
    let words = run_in(&work, &["--root", root, "--json", "search", "durable", "goal"]);
    assert_eq!(words.code, 0, "{}", words.stderr);
    let quoted = run_in(&work, &["--root", root, "--json", "search", "durable goal"]);
    assert_eq!(words.stdout, quoted.stdout);
    assert!(!ids(&words.stdout).is_empty());
    let none = run_in(&work, &["--root", root, "search"]);
    assert_eq!(none.code, 2, "a search needs words: {}", none.stderr);
}

fn run_stdin(dir: &Path, args: &[&str], stdin: &str) -> Out {
    let o = cmd().current_dir(dir).args(args).write_stdin(stdin).output().unwrap();
    Out {
        code: o.status.code().unwrap(),
        stdout: String::from_utf8(o.stdout).unwrap(),
        stderr: String::from_utf8(o.stderr).unwrap(),
    }
}

#[test]
fn help_lists_global_options_once_and_shows_examples() {
    let here = std::env::temp_dir();
    let top = run_in(&here, &["--help"]);
    assert_eq!(top.code, 0);
    assert!(top.stdout.contains("Global options"), "{}", top.stdout);
    assert!(top.stdout.contains("--max-reference-bytes") && top.stdout.contains("--quiet"));
    assert!(top.stdout.contains("Examples:") && top.stdout.contains("dsh-session-ref search durable goal"));
    for command in
        [&["candidates"][..], &["search"], &["prepare"], &["read"], &["show"], &["uri", "encode"], &["mention"]]
    {
        let mut args = command.to_vec();
        args.push("--help");
        let help = run_in(&here, &args);
        assert_eq!(help.code, 0, "{command:?}");
        assert!(!help.stdout.contains("--max-reference-bytes"), "{command:?} repeats the global options");
        assert!(help.stdout.contains("see dsh-session-ref --help"), "{command:?}: {}", help.stdout);
    }
    // Hidden from a command's help, a global option is still taken after it.
    let after = run_in(&here, &["uri", "encode", "x", "--json"]);
    assert_eq!((after.code, after.stdout.as_str()), (0, "\"dsh-session:Ingi\"\n"));
}

#[test]
fn options_that_cannot_apply_are_usage_errors() {
    let here = std::env::temp_dir();
    let root = examples();
    let root = root.to_str().unwrap();
    for args in [
        &["--root", root, "candidates", "--limit", "0"][..],
        &["--root", root, "search", "goal", "--limit", "0"],
        &["--root", root, "candidates", "--limit", "-1"],
        &["demo", "--source", "dsh=/nonexistent"],
    ] {
        let out = run_in(&here, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty());
        assert!(out.stderr.starts_with("error: "), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn quiet_drops_the_notes_and_keeps_the_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("sessions");
    std::fs::create_dir(&empty).unwrap();
    let empty = empty.to_str().unwrap();
    let loud = run_in(tmp.path(), &["--root", empty, "candidates"]);
    assert_eq!(loud.code, 0);
    assert!(loud.stderr.contains("note: "), "an empty root says so: {}", loud.stderr);
    let quiet = run_in(tmp.path(), &["--root", empty, "candidates", "--quiet"]);
    assert_eq!((quiet.code, quiet.stderr.as_str()), (0, ""));
    assert_eq!(quiet.stdout, loud.stdout);
}

#[test]
fn stdin_messages_lose_the_trailing_line_end_and_prompts_end_with_one() {
    let here = std::env::temp_dir();
    let root = examples();
    let root = root.to_str().unwrap();
    let mention = "@[wrap-up](dsh-session:ImdvYWwtd3JhcHVwIg)";
    for (input, text) in [
        (format!("see {mention}\n"), format!("see {mention}")),
        (format!("see {mention}\r\n"), format!("see {mention}")),
        (format!("see {mention}\n\n"), format!("see {mention}\n")),
        (format!("see {mention}"), format!("see {mention}")),
    ] {
        let out = run_stdin(&here, &["--root", root, "--json", "prepare", "--stdin"], &input);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        let expected = run_in(&here, &["--root", root, "--json", "prepare", "--message", &text]);
        let expected: Value = serde_json::from_str(&expected.stdout).unwrap();
        // Equal but for the context message's fresh id.
        assert_eq!(v["content"], expected["content"], "{input:?}");
        assert_eq!(v["additionalContext"]["content"], expected["additionalContext"]["content"], "{input:?}");
        assert!(v["content"][0]["text"].as_str().unwrap().starts_with("see "));
    }
    let json = run_in(&here, &["--root", root, "--json", "prepare", "--message", &format!("see {mention}")]);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    let context = v["additionalContext"]["content"][0]["text"].as_str().unwrap();
    let prompt = run_in(&here, &["--root", root, "prepare", "--message", &format!("see {mention}"), "--prompt"]);
    assert_eq!(prompt.stdout, format!("{context}\n"));
    let none = run_in(&here, &["--root", root, "prepare", "--message", "no mention", "--prompt"]);
    assert_eq!((none.code, none.stdout.as_str()), (0, ""), "no context, no line");
}

#[test]
fn completions_and_manual_pages_come_from_the_command_line_definition() {
    let tmp = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = run_in(tmp.path(), &["completions", shell]);
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        for word in ["candidates", "search", "read", "source", "hardened"] {
            assert!(out.stdout.contains(word), "{shell} completion lacks {word}");
        }
    }
    let bash = run_in(tmp.path(), &["completions", "bash"]).stdout;
    let script = tmp.path().join("dsh-session-ref.bash");
    std::fs::write(&script, bash).unwrap();
    let parsed = std::process::Command::new("bash").arg("-n").arg(&script).status().unwrap();
    assert!(parsed.success(), "the bash completion does not parse");
    assert_eq!(run_in(tmp.path(), &["completions", "tcsh"]).code, 2);

    let page = run_in(tmp.path(), &["man"]);
    assert_eq!(page.code, 0);
    assert!(page.stdout.starts_with(".ie") || page.stdout.contains(".TH dsh-session-ref 1"), "{}", page.stdout);
    let dir = tmp.path().join("man");
    std::fs::create_dir(&dir).unwrap();
    let written = run_in(tmp.path(), &["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(written.code, 0, "{}", written.stderr);
    for command in ["", "-candidates", "-search", "-prepare", "-read", "-show", "-mention", "-uri-encode"] {
        let page = dir.join(format!("dsh-session-ref{command}.1"));
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        assert!(text.contains(".SH SYNOPSIS"), "{}", page.display());
    }
    let missing = run_in(tmp.path(), &["man", "--dir", tmp.path().join("nowhere/deeper").to_str().unwrap()]);
    assert_eq!(missing.code, 1, "a directory that cannot be written is an error: {}", missing.stderr);
    assert!(missing.stderr.starts_with("error: "));
}

fn foreign() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/foreign-logs")
}

#[test]
fn sessions_are_named_by_id_without_prefix_uri_or_mention() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = format!("claude-code={}", foreign().join("claude-code").display());
    let codex = format!("codex={}", foreign().join("codex/daaain").display());
    let both = ["--source", claude.as_str(), "--source", codex.as_str()];
    let with = |args: &[&str]| {
        let mut all = both.to_vec();
        all.extend_from_slice(args);
        run_in(tmp.path(), &all)
    };
    let by_id = with(&["--json", "show", "claude-code:sample_session"]);
    assert_eq!(by_id.code, 0, "{}", by_id.stderr);
    // The id as Claude Code shows it, a URI and a mention all name it.
    let uri = dsh_session_reference::encode_uri("claude-code:sample_session");
    let mention = format!("@[any label]({uri})");
    for name in ["sample_session", uri.as_str(), mention.as_str()] {
        let out = with(&["--json", "show", name]);
        assert_eq!((out.code, &out.stdout), (0, &by_id.stdout), "{name}: {}", out.stderr);
        let page = with(&["--json", "read", name]);
        assert_eq!(page.code, 0, "{name}: {}", page.stderr);
        let page: Value = serde_json::from_str(&page.stdout).unwrap();
        assert_eq!(page["sessionId"], "claude-code:sample_session");
    }
    // `mention` labels with the title and fails for a session no source has.
    let m = with(&["mention", "sample_session"]);
    assert_eq!(m.code, 0, "{}", m.stderr);
    assert_eq!(m.stdout, format!("@[Create a hello world function]({uri})\n"));
    let labelled = with(&["mention", "sample_session", "--label", "hello"]);
    assert_eq!(labelled.stdout, format!("@[hello]({uri})\n"));
    for missing in ["no-such-session", "claude-code:no-such-session"] {
        let out = with(&["mention", missing]);
        assert_eq!(out.code, 1, "{missing}");
        assert!(out.stderr.starts_with("error: SESSION_REFERENCE_READ_FAILED: "), "{}", out.stderr);
        assert!(out.stdout.is_empty());
    }
    let bad = with(&["show", "dsh-session:%%%"]);
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.starts_with("error: SESSION_REFERENCE_INVALID_REFERENCE: "), "{}", bad.stderr);

    // The same bare id in two sources: an error naming both.
    let twin = tmp.path().join("claude");
    std::fs::create_dir_all(twin.join("project")).unwrap();
    std::fs::copy(
        foreign().join("claude-code/simonw/sample_session.jsonl"),
        twin.join("project/44444444-4444-4444-8444-444444444444.jsonl"),
    )
    .unwrap();
    let twin = format!("claude-code={}", twin.display());
    let out =
        run_in(tmp.path(), &["--source", &twin, "--source", &codex, "show", "44444444-4444-4444-8444-444444444444"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains("claude-code:44444444-4444-4444-8444-444444444444")
            && out.stderr.contains("codex:44444444-4444-4444-8444-444444444444"),
        "{}",
        out.stderr
    );
}

/// A DSH root of one session copied under each of `ids`.
fn root_of_ids(tmp: &Path, ids: &[&str]) -> PathBuf {
    let root = tmp.join("ids");
    let log = std::fs::read_to_string(examples().join("_no-cwd/multi-turn/session.jsonl")).unwrap();
    for id in ids {
        let dir = root.join("_no-cwd").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("session.jsonl"),
            log.replacen("\"id\":\"multi-turn\"", &format!("\"id\":\"{id}\""), 1),
        )
        .unwrap();
    }
    root
}

/// An id's first characters name it wherever an id is taken, as git takes
/// a short hash (four or more); several ids starting with them are named
/// (a few, then how many), none is said as none.
#[test]
fn an_ids_first_characters_name_it() {
    let tmp = tempfile::tempdir().unwrap();
    let ids: Vec<String> = (0..8).map(|i| format!("5c18{i:x}f31-0000-4000-8000-00000000000{i}")).collect();
    let mut all: Vec<&str> = ids.iter().map(String::as_str).collect();
    all.push("a1b2c3d4-only");
    let root = root_of_ids(tmp.path(), &all);
    let root = root.to_str().unwrap();
    let with = |args: &[&str]| run_in(tmp.path(), &[&["--root", root][..], args].concat());
    let whole = with(&["--json", "show", &ids[3]]);
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    for short in ["5c183f31", "5c183", "5c183f31-0000"] {
        let out = with(&["--json", "show", short]);
        assert_eq!((out.code, &out.stdout), (0, &whole.stdout), "{short}: {}", out.stderr);
    }
    // `read`, `mention` and `prepare --ref` take it too.
    let page = with(&["--json", "read", "a1b2"]);
    assert_eq!(page.code, 0, "{}", page.stderr);
    assert_eq!(serde_json::from_str::<Value>(&page.stdout).unwrap()["sessionId"], "a1b2c3d4-only");
    let mention = with(&["mention", "a1b2c3"]);
    assert!(mention.stdout.contains(&dsh_session_reference::encode_uri("a1b2c3d4-only")), "{}", mention.stdout);
    let prepared = with(&["--json", "prepare", "--ref", "5c187"]);
    let v: Value = serde_json::from_str(&prepared.stdout).unwrap();
    assert_eq!(v["additionalContext"]["source"]["references"][0]["sessionId"], ids[7].as_str());
    // Several: a few named, then how many more.
    let several = with(&["show", "5c18"]);
    assert_eq!(several.code, 1);
    assert!(several.stderr.starts_with("error: SESSION_REFERENCE_INVALID_REFERENCE: 8 sessions"), "{}", several.stderr);
    assert!(several.stderr.contains(&ids[0]) && several.stderr.contains("and 3 more"), "{}", several.stderr);
    // None: said as a missing session, not as a malformed id, with what
    // the listing found: no id starting with those characters.
    let none = with(&["show", "ffff0000"]);
    assert_eq!(none.code, 1);
    assert!(none.stderr.contains("no session \"ffff0000\""), "{}", none.stderr);
    assert!(
        none.stderr.ends_with("; no listed session has an id that is or starts with \"ffff0000\"\n"),
        "{}",
        none.stderr
    );
    // Fewer than four characters are never taken as a short id.
    let short = with(&["show", "a1b"]);
    assert_eq!(short.code, 1);
    assert!(short.stderr.ends_with("; no listed session has the id \"a1b\"\n"), "{}", short.stderr);
}

/// `read` and `show` read a session by the id as given, and look for it in
/// a listing only when no source has that id: in a source that keeps a
/// file per session, a short id (with or without the source's prefix) and
/// an id without its prefix still name the session, several sessions
/// starting with the same characters are still named, and a missing
/// session or a root that cannot be listed is said as it was.
#[test]
fn read_and_show_take_an_id_as_given_and_else_as_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = foreign().join("gemini-cli/synthetic/tmp");
    let source = format!("gemini-cli={}", root.display());
    let with = |args: &[&str]| run_in(tmp.path(), &[&["--source", source.as_str()][..], args].concat());
    let whole = "gemini-cli:1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
    let shown = with(&["--json", "show", whole]);
    let page = with(&["--json", "read", whole]);
    assert_eq!((shown.code, page.code), (0, 0), "{}{}", shown.stderr, page.stderr);
    for name in ["gemini-cli:1a2b3c", "1a2b3c4d", "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"] {
        let out = with(&["--json", "show", name]);
        assert_eq!((out.code, &out.stdout), (0, &shown.stdout), "{name}: {}", out.stderr);
        let out = with(&["--json", "read", name]);
        assert_eq!((out.code, &out.stdout), (0, &page.stdout), "{name}: {}", out.stderr);
    }
    // The id found by the listing is the one read: it is the target's own.
    let own = with(&["read", "1a2b3c4d", "--target", whole]);
    assert_eq!(own.code, 1);
    assert!(own.stderr.starts_with("error: SESSION_REFERENCE_SELF_REFERENCE: "), "{}", own.stderr);
    for command in ["show", "read"] {
        let several = with(&[command, "gemini-cli:"]);
        assert_eq!(several.code, 1);
        assert!(
            several.stderr.starts_with(
                "error: SESSION_REFERENCE_INVALID_REFERENCE: 3 sessions have an id that starts with \"gemini-cli:\""
            ),
            "{}",
            several.stderr
        );
        let missing = with(&[command, "gemini-cli:1a2b3c4d-0000"]);
        assert_eq!((missing.code, missing.stdout.as_str()), (1, ""));
        let said = format!(
            "error: SESSION_REFERENCE_READ_FAILED: reading session \"gemini-cli:1a2b3c4d-0000\" failed: no Gemini CLI session \"1a2b3c4d-0000\" in {}; no listed session has an id that is or starts with \"gemini-cli:1a2b3c4d-0000\"\n",
            root.display()
        );
        assert_eq!(missing.stderr, said);
        let nowhere = tmp.path().join("nowhere");
        let unlisted = run_in(tmp.path(), &["--source", &format!("gemini-cli={}", nowhere.display()), command, whole]);
        assert_eq!((unlisted.code, unlisted.stdout.as_str()), (1, ""));
        assert!(
            unlisted.stderr.starts_with("error: SESSION_REFERENCE_READ_FAILED: listing sessions failed: gemini-cli: "),
            "{}",
            unlisted.stderr
        );
    }
}

/// `prepare --ref ID` without a message prepares the referenced context
/// alone, and says so instead of printing an empty message.
#[test]
fn prepare_without_a_message_says_it_has_none() {
    let out =
        run_in(&std::env::temp_dir(), &["--root", examples().to_str().unwrap(), "prepare", "--ref", "goal-wrapup"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("Message: (none: only the context of the referenced sessions)\n\n"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("Referenced sessions:\n  - Create a durable goal for (goal-wrapup)"), "{}", out.stdout);
    let help = run_in(&std::env::temp_dir(), &["prepare", "--help"]);
    assert!(help.stdout.contains("none with --ref alone"), "{}", help.stdout);
}

/// A search hit in a session's title prints the title once (the title
/// line), not again as its snippet.
#[test]
fn a_title_hit_prints_the_title_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = examples();
    let out = run_in(tmp.path(), &["--root", root.to_str().unwrap(), "search", "durable", "goal"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let said = out.stdout.lines().filter(|l| !l.trim_start().starts_with("@[")).collect::<Vec<_>>().join("\n");
    assert_eq!(said.matches("Create a durable goal for").count(), 1, "besides its mention: {}", out.stdout);
    assert!(out.stdout.contains("    in the title\n"), "{}", out.stdout);
    // Its JSON still gives the field and the snippet.
    let json = run_in(tmp.path(), &["--root", root.to_str().unwrap(), "--json", "search", "durable", "goal"]);
    let hit = &serde_json::from_str::<Value>(&json.stdout).unwrap()[0];
    assert_eq!(hit["field"], "title", "{hit}");
}

#[test]
fn prepare_references_sessions_by_flag() {
    let here = std::env::temp_dir();
    let root = examples();
    let root = root.to_str().unwrap();
    let refs = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["--root", root, "--json", "prepare"];
        all.extend_from_slice(args);
        let out = run_in(&here, &all);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        v["additionalContext"]["source"]["references"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["sessionId"].as_str().unwrap().to_owned())
            .collect()
    };
    // No message needed; ids, URIs and mentions; after the mentions; once.
    assert_eq!(refs(&["--ref", "goal-wrapup"]), ["goal-wrapup"]);
    let uri = dsh_session_reference::encode_uri("multi-turn");
    assert_eq!(refs(&["--ref", "goal-wrapup", "--ref", &uri]), ["goal-wrapup", "multi-turn"]);
    let mention = "@[w](dsh-session:ImdvYWwtd3JhcHVwIg)";
    assert_eq!(refs(&["--message", &format!("see {mention}"), "--ref", "multi-turn"]), ["goal-wrapup", "multi-turn"]);
    assert_eq!(refs(&["--message", &format!("see {mention}"), "--ref", "goal-wrapup"]), ["goal-wrapup"]);
    // With a range, as for a mentioned session.
    let out =
        run_in(&here, &["--root", root, "--json", "prepare", "--ref", "goal-wrapup", "--range", "goal-wrapup=1..2"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let reference = &v["additionalContext"]["source"]["references"][0];
    assert_eq!(reference["retainedMessages"], 1, "{reference}");
    // Labelled with the session's title, as `mention` labels it.
    let out = run_in(&here, &["--root", root, "--json", "prepare", "--ref", "goal-wrapup"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["additionalContext"]["source"]["references"][0]["label"], "Create a durable goal for");
    let none = run_in(&here, &["--root", root, "prepare"]);
    assert_eq!(none.code, 2, "a message, --stdin or --ref is needed");
    let missing = run_in(&here, &["--root", root, "prepare", "--ref", "nope"]);
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.starts_with("error: SESSION_REFERENCE_READ_FAILED: "), "{}", missing.stderr);
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    // `dsh-session-ref … | head` once head has exited: the pipe's reading
    // end is closed before the command writes anything.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let root = examples();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dsh-session-ref"))
        .args(["--root", root.to_str().unwrap(), "candidates"])
        .env("DSR_NO_DAEMON", "1")
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
    const SIGPIPE: i32 = 13;
    assert_eq!(out.status.signal(), Some(SIGPIPE), "ended by SIGPIPE, as a Unix command is: {:?}", out.status);
}

#[test]
fn sessions_that_cannot_be_read_are_named_on_every_listing_and_search() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("sessions");
    let copy = |from: &Path, to: &Path| {
        for entry in walk(from) {
            let rel = entry.strip_prefix(from).unwrap();
            std::fs::create_dir_all(to.join(rel).parent().unwrap()).unwrap();
            std::fs::copy(&entry, to.join(rel)).unwrap();
        }
    };
    copy(&examples(), &root);
    // A seq gap: the log cannot be read, so its session is listed by id
    // and search cannot look inside it.
    let log = root.join("--home-dev-alpha--/goal-wrapup/session.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let kept: Vec<&str> = text.lines().enumerate().filter(|(i, _)| *i != 4).map(|(_, l)| l).collect();
    std::fs::write(&log, kept.join("\n") + "\n").unwrap();
    // A log whose header does not match its path: not listed at all.
    let moved = root.join("--home-dev-alpha--/agent-instructions/session.jsonl");
    let text = std::fs::read_to_string(&moved).unwrap().replacen("/home/dev/alpha", "/elsewhere", 1);
    std::fs::write(&moved, text).unwrap();
    let root = root.to_str().unwrap();
    for args in [&["candidates"][..], &["candidates", "--query", "a"], &["search", "goal"]] {
        let mut all = vec!["--root", root];
        all.extend_from_slice(args);
        let out = run_in(tmp.path(), &all);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr
                .contains("note: 1 session could not be read (listed by id, not searched):\nnote:   goal-wrapup: "),
            "{args:?}: {}",
            out.stderr
        );
        assert!(out.stderr.contains("seq gap"), "{args:?}: the reason is given: {}", out.stderr);
        assert!(out.stderr.contains("note: 1 log was not listed:\nnote:   "), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("agent-instructions/session.jsonl: the log's path does not match its header"));
        let quiet = run_in(tmp.path(), &[&all[..], &["--quiet"]].concat());
        assert_eq!(quiet.stderr, "", "{args:?}");
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn with_no_history_anywhere_every_place_looked_at_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let out = cmd().current_dir(tmp.path()).env("HOME", &home).args(["candidates"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let home = home.to_str().unwrap();
    for place in [format!("{home}/.dsh/sessions"), format!("{home}/.claude/projects"), format!("{home}/.codex")] {
        assert!(stderr.contains(&place), "{place} is not named: {stderr}");
    }
    assert!(stderr.starts_with("error: SESSION_REFERENCE_READ_FAILED: no session history found"), "{stderr}");
}

#[test]
fn listings_read_as_a_person_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("sessions");
    for entry in walk(&examples()) {
        let rel = entry.strip_prefix(examples()).unwrap();
        std::fs::create_dir_all(root.join(rel).parent().unwrap()).unwrap();
        std::fs::copy(&entry, root.join(rel)).unwrap();
    }
    // A second session with the same title as goal-wrapup.
    let twin = root.join("--home-dev-alpha--/goal-wrapup-2");
    std::fs::create_dir_all(&twin).unwrap();
    let log = std::fs::read_to_string(root.join("--home-dev-alpha--/goal-wrapup/session.jsonl")).unwrap();
    let log = log.replacen("\"id\":\"goal-wrapup\"", "\"id\":\"goal-wrapup-2\"", 1);
    std::fs::write(twin.join("session.jsonl"), log).unwrap();
    let root = root.to_str().unwrap();
    let utc = |args: &[&str]| {
        let o = cmd().current_dir(tmp.path()).env("TZ", "UTC").args(args).output().unwrap();
        (String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap())
    };
    let (listed, notes) = utc(&["--root", root, "candidates"]);
    // Dates a person reads (epoch milliseconds stay in --json).
    assert!(listed.contains("id: multi-turn   cwd: (none)   created: 2025-10-09 11:53\n"), "{listed}");
    let (json, _) = utc(&["--root", root, "--json", "candidates"]);
    assert!(json.contains("\"createdAt\":1760010800000"), "{json}");
    // Two sessions titled alike are told apart on their title line.
    let twins: Vec<&str> = listed.lines().filter(|l| l.contains("Create a durable goal for")).collect();
    let titles: Vec<&&str> = twins.iter().filter(|l| l.trim_start().chars().next().unwrap().is_ascii_digit()).collect();
    assert_eq!(titles.len(), 2, "{listed}");
    assert_ne!(titles[0], titles[1], "{listed}");
    assert!(
        titles[0].contains("[2025-10-09 15:53, goal-wrapup") && titles[1].contains("[2025-10-09 15:53, goal-wrapup"),
        "{titles:?}"
    );
    let unique = listed.lines().find(|l| l.contains("Reply with exactly the word:") && l.contains(". ")).unwrap();
    assert!(!unique.contains('['), "a unique title has nothing added: {unique}");
    // Why a session without a cwd comes first, when none is from here.
    assert!(notes.contains("note: no session here was started in "), "{notes}");
    let (_, here) = utc(&["--root", root, "candidates", "--cwd", "/home/dev/alpha"]);
    assert!(!here.contains("no session here"), "{here}");
    // search's `message N` is show's `[N role]`.
    let (found, _) = utc(&["--root", root, "search", "COMPACTION", "RECOVERED"]);
    let n: u64 = found.split("message ").nth(1).unwrap().split(':').next().unwrap().parse().unwrap();
    let (shown, _) = utc(&["--root", root, "show", "compaction-recovery"]);
    assert!(shown.contains(&format!("\n[{n} assistant]\nCOMPACTION RECOVERED")), "{n}: {shown}");
}

/// The `$ command` / output pairs of the transcript block after `marker`
/// in `doc`.
fn transcript(doc: &str, marker: &str) -> Vec<(String, String)> {
    let start = doc.find(marker).unwrap_or_else(|| panic!("no {marker}"));
    let block = &doc[start..];
    let body = &block[block.find("```console\n").unwrap() + "```console\n".len()..];
    let body = &body[..body.find("\n```").unwrap() + 1];
    let mut pairs: Vec<(String, String)> = Vec::new();
    for line in body.split_inclusive('\n') {
        match line.strip_prefix("$ ") {
            Some(command) => pairs.push((command.trim_end().to_owned(), String::new())),
            None => pairs.last_mut().expect("output before any command").1.push_str(line),
        }
    }
    pairs
}

#[test]
fn the_first_session_transcript_is_what_the_command_prints() {
    let doc =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/store-and-cli.md")).unwrap();
    let pairs = transcript(&doc, "<!-- transcript:first-session -->");
    assert!(pairs.len() >= 5, "{pairs:?}");
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("laptop");
    let place = |from: PathBuf, to: PathBuf| {
        for file in walk(&from) {
            if file.file_name() == Some(std::ffi::OsStr::new("README.md")) {
                continue;
            }
            let dest = to.join(file.strip_prefix(&from).unwrap());
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            std::fs::copy(&file, dest).unwrap();
        }
    };
    place(examples(), home.join(".dsh/sessions"));
    place(foreign().join("claude-code"), home.join(".claude/projects"));
    place(foreign().join("codex/daaain/sessions"), home.join(".codex/sessions"));
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_dsh-session-ref"));
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let home_text = home.to_str().unwrap();
    for (command, expected) in pairs {
        assert!(command.starts_with("dsh-session-ref "), "{command}");
        assert!(!command.contains("--source") && !command.contains("--root"), "no option but the words: {command}");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{command} 2>&1"))
            .current_dir(&home)
            .env("HOME", &home)
            .env("TZ", "UTC")
            .env("PATH", &path)
            .env("XDG_CACHE_HOME", tmp.path().join("cache"))
            .env("DSR_NO_DAEMON", "1")
            .env_remove("DSH_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("COPILOT_HOME")
            .env_remove("GEMINI_CLI_HOME")
            .output()
            .unwrap();
        assert!(out.status.success(), "{command}: {out:?}");
        let got = String::from_utf8(out.stdout).unwrap().replace(home_text, "~");
        assert_eq!(got, expected, "{command}");
    }
}

#[test]
fn the_cache_is_on_for_every_kind_of_source_and_never_for_the_bundled_demo() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let run = |args: &[&str]| {
        let o = cmd().current_dir(tmp.path()).env("XDG_CACHE_HOME", &cache).args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let claude = format!("claude-code={}", foreign().join("claude-code").display());
    let codex = format!("codex={}", foreign().join("codex/daaain").display());
    let search = ["--source", claude.as_str(), "--source", codex.as_str(), "--json", "search", "synthetic"];
    let cands = ["--source", claude.as_str(), "--source", codex.as_str(), "--json", "candidates", "--query", "e"];
    let fresh_search = run(&[&search[..], &["--no-cache"]].concat());
    let fresh_cands = run(&[&cands[..], &["--no-cache"]].concat());
    let dir = cache.join("dsh-session-reference");
    assert!(!dir.exists());
    assert_eq!(run(&search), fresh_search, "cold");
    assert_eq!(run(&cands), fresh_cands, "cold");
    let mut kinds: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().split('-').next().unwrap().to_owned())
        .collect();
    kinds.sort();
    assert_eq!(kinds, ["index", "titles"], "several sources keep titles and an index (no DSH listing)");
    assert_eq!(run(&search), fresh_search, "warm");
    assert_eq!(run(&cands), fresh_cands, "warm");
    // The same sources in another order are the same set.
    let swapped = ["--source", codex.as_str(), "--source", claude.as_str(), "--json", "search", "synthetic"];
    assert_eq!(run(&swapped), fresh_search);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
    // The demo's bundled store lives for one command: nothing is kept.
    std::fs::remove_dir_all(&dir).unwrap();
    run(&["demo"]);
    assert!(!dir.exists() || std::fs::read_dir(&dir).unwrap().count() == 0, "demo cached its bundled store");
}

#[test]
fn a_slow_first_search_says_so_on_a_terminal_and_nowhere_else() {
    let bin = env!("CARGO_BIN_EXE_dsh-session-ref");
    let root = examples();
    let command = format!("{bin} --root {} search goal --no-cache", root.display());
    // `script` gives the command a terminal; the delay is 0 so that any
    // search is "slow".
    let Ok(out) = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("DSR_PROGRESS_AFTER_MS", "0")
        .env("DSR_NO_DAEMON", "1")
        .output()
    else {
        panic!("util-linux `script` is needed for this test");
    };
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("indexing what was said in every session"), "{shown}");
    assert!(shown.contains("\r\x1b[2K"), "the line is erased when the search ends: {shown:?}");
    assert!(shown.contains("goal-wrapup"), "{shown}");
    // Not on a pipe, however slow.
    let piped = cmd()
        .env("DSR_PROGRESS_AFTER_MS", "0")
        .args(["--root", root.to_str().unwrap(), "search", "goal"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&piped.stderr).contains("indexing"));
}
