//! What a person meets first at a shell (issue 27): commands that need no
//! host options, readable defaults, and no silent empty answers.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use dsh_session_reference::sources::dsh::layout::project_dir_name;
use serde_json::Value;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/sessions")
}

fn cmd() -> Command {
    let mut c = Command::cargo_bin("dsh-session-ref").unwrap();
    for var in ["DSH_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CACHE_HOME"] {
        c.env_remove(var);
    }
    c
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
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
