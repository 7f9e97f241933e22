//! Every `dsh-session-ref` command, its exit codes and its `--json` output,
//! checked against the DSH fixture roots and their `expected.json`.

mod common;

use std::path::{Path, PathBuf};

use common::{cmd, copy_tree, run, run_with};
use dsh_session_reference::format_mention;
use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/dsh-logs")
}

fn expected() -> Value {
    serde_json::from_slice(&std::fs::read(fixtures().join("expected.json")).unwrap()).unwrap()
}

fn raw_root() -> String {
    fixtures().join("raw").to_str().unwrap().to_owned()
}

fn ok_json(args: &[&str]) -> Value {
    let out = run(args);
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", out.stdout))
}

fn session<'a>(e: &'a Value, root: &str, id: &str) -> &'a Value {
    e["roots"][root]["sessions"].as_array().unwrap().iter().find(|s| s["sessionId"] == id).unwrap()
}

#[test]
fn candidates_json_matches_expected() {
    let e = expected();
    let root = raw_root();
    for case in e["roots"]["raw"]["candidates"].as_array().unwrap() {
        let query = case["query"].as_str().unwrap();
        let limit = case["candidateLimit"].as_u64().unwrap().to_string();
        let got = ok_json(&[
            "--root",
            &root,
            "candidates",
            "--target",
            "target-session",
            "--cwd",
            "/home/dev/alpha",
            "--query",
            query,
            "--limit",
            &limit,
            "--json",
        ]);
        assert_eq!(got, case["expected"], "query {query:?} limit {limit}");
    }
}

#[test]
fn candidates_take_the_target_cwd_from_its_header() {
    let got = ok_json(&["--root", &raw_root(), "--json", "candidates", "--target", ".."]);
    let list = got.as_array().unwrap();
    assert_eq!(list.len(), 7);
    assert!(list.iter().all(|c| c["sessionId"] != ".."));
    // `..` lives in /home/dev/beta: the other beta session ranks first.
    assert_eq!(list[0]["sessionId"], "subagent mixed ~1");
    assert_eq!(list[1]["sessionId"], "multi-turn");
}

#[test]
fn candidates_human_output() {
    let out = run(&["--root", &raw_root(), "candidates", "--target", "t", "--cwd", "/home/dev/alpha", "--limit", "2"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains(" 1. Create a durable goal for"), "{}", out.stdout);
    assert!(out.stdout.contains("@[Create a durable goal for](dsh-session:ImdvYWwtd3JhcHVwIg)"));
    assert!(!out.stdout.contains(" 3. "));
    let none = run(&["--root", &raw_root(), "candidates", "--target", "t", "--query", "无"]);
    assert!(none.stdout.contains("No candidates."));
}

#[test]
fn prepare_prints_the_exact_prompt_for_every_config() {
    let e = expected();
    let root = raw_root();
    for id in ["compaction-recovery", "权限/策略 \"context\"", ".."] {
        let s = session(&e, "raw", id);
        let message = format!("go {}", format_mention(id, None));
        for (name, flag) in
            [("default", None), ("maxReferenceBytes600", Some("600")), ("maxReferenceBytes300", Some("300"))]
        {
            let mut args = vec!["--root", root.as_str()];
            if let Some(n) = flag {
                args.extend(["--max-reference-bytes", n]);
            }
            args.extend(["prepare", "--target", "target-session", "--cwd", "/home/dev/alpha", "--message", &message]);
            let exp = &s["prepare"][name];
            let mut prompt_args = args.clone();
            prompt_args.push("--prompt");
            let out = run(&prompt_args);
            if let Some(code) = exp["error"].as_str() {
                assert_eq!(out.code, 1);
                assert!(out.stderr.contains(code), "{}", out.stderr);
                continue;
            }
            assert_eq!(out.code, 0, "{}", out.stderr);
            // The context text and a line end.
            assert_eq!(out.stdout, format!("{}\n", exp["prompt"].as_str().unwrap()), "{id} {name}");
            args.push("--json");
            let got = ok_json(&args);
            assert_eq!(got["content"], json!([{"type": "text", "text": format!("go @{id}")}]));
            assert_eq!(got["additionalContext"]["source"], exp["source"], "{id} {name}");
            assert_eq!(got["additionalContext"]["content"][0]["text"], exp["prompt"]);
            assert_eq!(got["additionalContext"]["role"], "user");
        }
    }
}

#[test]
fn prepare_human_output_and_stdin() {
    let message = format!(
        "compare {} and {}",
        format_mention("goal-wrapup", Some("the goal")),
        format_mention("multi-turn", None)
    );
    let out = run_with(
        cmd(),
        &["--root", &raw_root(), "--max-reference-bytes", "300", "prepare", "--target", "t", "--stdin"],
        Some(&message),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("compare @the goal and @multi-turn"), "{}", out.stdout);
    assert!(out.stdout.contains("the goal (goal-wrapup): 2 of 3 messages retained, 1 omitted"), "{}", out.stdout);
    assert!(out.stdout.contains("truncated"));
    let plain = run(&["--root", &raw_root(), "prepare", "--target", "t", "--message", "no mentions here"]);
    assert_eq!(plain.code, 0);
    assert!(plain.stdout.contains("No sessions referenced."));
    let prompt = run(&["--root", &raw_root(), "prepare", "--target", "t", "--message", "none", "--prompt"]);
    assert_eq!((prompt.code, prompt.stdout.as_str()), (0, ""));
}

#[test]
fn prepare_contract_errors_exit_1_with_the_code() {
    let root = raw_root();
    let m = |ids: &[&str]| ids.iter().map(|id| format_mention(id, None)).collect::<Vec<_>>().join(" ");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["prepare".into(), "--target".into(), "multi-turn".into(), "--message".into(), m(&["multi-turn"])],
            "SESSION_REFERENCE_SELF_REFERENCE",
        ),
        (
            vec![
                "prepare".into(),
                "--target".into(),
                "t".into(),
                "--message".into(),
                m(&["..", "multi-turn", "goal-wrapup", "agent-instructions"]),
            ],
            "SESSION_REFERENCE_TOO_MANY",
        ),
        (
            vec!["prepare".into(), "--target".into(), "t".into(), "--message".into(), m(&["missing"])],
            "SESSION_REFERENCE_READ_FAILED",
        ),
        (
            vec!["prepare".into(), "--target".into(), "t".into(), "--message".into(), "@[x](dsh-session:)".into()],
            "SESSION_REFERENCE_INVALID_REFERENCE",
        ),
        (
            vec![
                "--max-references".into(),
                "4".into(),
                "prepare".into(),
                "--target".into(),
                "t".into(),
                "--message".into(),
                "x".into(),
            ],
            "SESSION_REFERENCE_INVALID_CONFIG",
        ),
        (
            vec![
                "--max-reference-bytes".into(),
                "10".into(),
                "prepare".into(),
                "--target".into(),
                "t".into(),
                "--message".into(),
                m(&[".."]),
            ],
            "SESSION_REFERENCE_BUDGET_EXCEEDED",
        ),
        (
            // 0 is a usage error (exit 2); 2^53 passes the command line
            // and is refused by the contract.
            vec!["candidates".into(), "--target".into(), "t".into(), "--limit".into(), "9007199254740992".into()],
            "SESSION_REFERENCE_INVALID_REFERENCE",
        ),
    ];
    for (args, code) in cases {
        let mut full = vec!["--root", root.as_str()];
        full.extend(args.iter().map(String::as_str));
        let out = run(&full);
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.starts_with(&format!("error: {code}: ")), "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty());
    }
    // A damaged session: read failure naming it.
    let corrupt = fixtures().join("damaged/corrupt-zstd");
    let out = run(&[
        "--root",
        corrupt.to_str().unwrap(),
        "prepare",
        "--target",
        "t",
        "--message",
        &m(&["compaction-recovery"]),
    ]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("SESSION_REFERENCE_READ_FAILED") && out.stderr.contains("compaction-recovery"),
        "{}",
        out.stderr
    );
}

#[test]
fn show_prints_the_projected_conversation() {
    let got = ok_json(&["--root", &raw_root(), "show", "compaction-recovery", "--json"]);
    assert_eq!(got["sessionId"], "compaction-recovery");
    assert_eq!(got["cwd"], "/home/dev/alpha");
    assert_eq!(got["capturedThroughSeq"], 30);
    // The core's shape (`SessionConversation::to_json`), labeled with the
    // session's latest title as discovery labels it.
    let conv = got["messages"].as_array().unwrap();
    assert_eq!(conv.len(), 2);
    assert_eq!(conv[0]["checkpoint"], true);
    assert_eq!(conv[1], json!({"index": 1, "role": "assistant", "text": "COMPACTION RECOVERED", "checkpoint": false}));
    let keys: Vec<&String> = got.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["sessionId", "label", "cwd", "capturedThroughSeq", "messages"]);
    assert_eq!(got["label"], "Establish a durable compaction premise");
    let out = run(&["--root", &raw_root(), "show", "compaction-recovery"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains("[0 user (compaction checkpoint)]"), "{}", out.stdout);
    assert!(out.stdout.contains("[1 assistant]\nCOMPACTION RECOVERED"));
    let missing = run(&["--root", &raw_root(), "show", "nope"]);
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains("SESSION_REFERENCE_READ_FAILED"));
    // The torn zstd session shows like the intact one, closers counted.
    let torn = fixtures().join("damaged/torn-zstd");
    let got = ok_json(&["--root", torn.to_str().unwrap(), "--json", "show", "compaction-recovery"]);
    assert_eq!(got["capturedThroughSeq"], 30);
}

#[test]
fn uri_and_mention_commands() {
    let id = "权限/策略 \"context\"";
    let uri = run(&["uri", "encode", id]).stdout;
    assert_eq!(uri.trim_end(), dsh_session_reference::encode_uri(id));
    assert_eq!(ok_json(&["uri", "encode", id, "--json"]), json!(uri.trim_end()));
    assert_eq!(run(&["uri", "decode", uri.trim_end()]).stdout, format!("{id}\n"));
    assert_eq!(ok_json(&["--json", "uri", "decode", uri.trim_end()]), json!(id));
    let bad = run(&["uri", "decode", "dsh-session:ImEi="]);
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.starts_with("error: SESSION_REFERENCE_INVALID_REFERENCE: "));
    // `mention` names a session a source has: labelled with its title by
    // default, escaped as the contract says.
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/sessions");
    let examples = examples.to_str().unwrap();
    let title = "Create a durable goal for";
    assert_eq!(
        run(&["--root", examples, "mention", "goal-wrapup"]).stdout,
        format!("{}\n", format_mention("goal-wrapup", Some(title)))
    );
    assert_eq!(
        ok_json(&["--root", examples, "mention", "goal-wrapup", "--label", "L]\\1", "--json"]),
        json!(format_mention("goal-wrapup", Some("L]\\1")))
    );
    let missing = run(&["--root", examples, "mention", "a]b"]);
    assert_eq!(missing.code, 1, "an unknown id is an error");
}

#[test]
fn demo_runs_end_to_end() {
    let out = run(&["demo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("== Candidates for a new session in /home/dev/alpha =="));
    assert!(out.stdout.contains("<referenced-sessions>\n[{\"sessionId\":\"goal-wrapup\""), "{}", out.stdout);
    let got = ok_json(&["demo", "--json"]);
    assert_eq!(got["candidates"].as_array().unwrap().len(), 5);
    let refs = got["prepared"]["additionalContext"]["source"]["references"].as_array().unwrap();
    assert_eq!(refs.len(), 2);
    assert_eq!(refs[0]["sessionId"], "goal-wrapup");
    assert_eq!(refs[1]["sessionId"], "agent-instructions");
    assert!(got["prepared"]["content"][0]["text"].as_str().unwrap().contains("@Create a durable goal for"));
}

#[test]
fn demo_uses_the_embedded_store_from_anywhere_and_cleans_up() {
    // From an unrelated directory, with a private TMPDIR: the store embedded
    // in the binary gives the same result as the source tree's copy, and the
    // unpacked copy is gone afterwards.
    let elsewhere = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut c = cmd();
    c.current_dir(elsewhere.path()).env("TMPDIR", tmp.path());
    let out = run_with(c, &["demo", "--json"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/sessions");
    let mut from_source = ok_json(&["demo", "--json", "--root", source.to_str().unwrap()]);
    let mut embedded: Value = serde_json::from_str(&out.stdout).unwrap();
    for v in [&mut from_source, &mut embedded] {
        // The context message's id is random.
        assert!(v["prepared"]["additionalContext"].as_object_mut().unwrap().remove("id").is_some());
    }
    assert_eq!(embedded, from_source);
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "the unpacked example store was left behind");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["frobnicate"],
        &["search"],
        &["candidates", "--target", "t", "--limit", "many"],
        &["prepare", "--target", "t"],
        &["prepare", "--target", "t", "--message", "x", "--stdin"],
        &["uri"],
        &["uri", "encode"],
        &["show"],
        &["--max-reference-bytes", "-3", "demo"],
    ] {
        let out = run(args);
        assert_eq!(out.code, 2, "{args:?}");
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn help_on_every_command() {
    for args in [
        &["--help"][..],
        &["candidates", "--help"],
        &["prepare", "--help"],
        &["show", "--help"],
        &["uri", "--help"],
        &["uri", "encode", "--help"],
        &["uri", "decode", "--help"],
        &["mention", "--help"],
        &["demo", "--help"],
        &["help", "prepare"],
    ] {
        let out = run(args);
        assert_eq!(out.code, 0, "{args:?}");
        assert!(out.stdout.contains("Usage: dsh-session-ref"), "{args:?}: {}", out.stdout);
    }
    let help = run(&["--help"]).stdout;
    for word in ["candidates", "prepare", "show", "uri", "mention", "demo", "--root", "--json", "--max-reference-bytes"]
    {
        assert!(help.contains(word), "{word}");
    }
}

#[test]
fn root_defaults_to_dsh_home_then_home() {
    let tmp = tempfile::tempdir().unwrap();
    let copy_into = |root: PathBuf| {
        let dir = root.join("_no-cwd/multi-turn");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(fixtures().join("raw/_no-cwd/multi-turn/session.jsonl"), dir.join("session.jsonl")).unwrap();
    };
    copy_into(tmp.path().join("dsh-home/sessions"));
    copy_into(tmp.path().join("home/.dsh/sessions"));
    let mut c = cmd();
    c.env("DSH_HOME", tmp.path().join("dsh-home"));
    let out = run_with(c, &["candidates", "--target", "t", "--json"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(serde_json::from_str::<Value>(&out.stdout).unwrap()[0]["sessionId"], "multi-turn");
    let mut c = cmd();
    c.env("HOME", tmp.path().join("home"));
    let out = run_with(c, &["show", "multi-turn", "--json"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut c = cmd();
    c.env("HOME", tmp.path().join("nowhere"));
    let out = run_with(c, &["candidates", "--target", "t"], None);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("SESSION_REFERENCE_READ_FAILED") && out.stderr.contains("nowhere"), "{}", out.stderr);
}

/// The red-team DSH root of the hardened mode (tests/red-team/).
fn red_team() -> (String, Value) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/red-team");
    let spec = serde_json::from_str(&std::fs::read_to_string(dir.join("sessions.json")).unwrap()).unwrap();
    (dir.join("root").to_str().unwrap().to_owned(), spec)
}

/// Tag characters, bidirectional controls, zero-width characters.
fn hidden(s: &str) -> bool {
    s.chars().any(|c| {
        matches!(c as u32, 0xE0000..=0xE007F | 0x061C | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060 | 0x2066..=0x2069 | 0xFEFF)
    })
}

#[test]
fn hardened_prepare_redacts_escapes_and_sanitizes() {
    let (root, spec) = red_team();
    let secrets: Vec<&str> = spec["secrets"].as_array().unwrap().iter().map(|s| s["value"].as_str().unwrap()).collect();
    for s in spec["sessions"].as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        let mention = run(&["--root", &root, "mention", id, "--label", s["title"].as_str().unwrap()]).stdout;
        let message = format!("Compare {} please", mention.trim_end());
        let base = ["--root", &root, "--json", "prepare", "--target", "new-chat", "--message", &message];
        let plain = ok_json(&base);
        let hard = ok_json(&[&["--hardened"][..], &base[..]].concat());
        let prompt = hard["additionalContext"]["content"][0]["text"].as_str().unwrap();
        let text = hard["content"][0]["text"].as_str().unwrap();
        assert!(!hidden(prompt) && !hidden(text) && !text.contains('\n'), "{id}: {text:?}");
        assert!(secrets.iter().all(|k| !prompt.contains(k)), "{id}");
        let meta = &hard["additionalContext"]["source"]["references"][0];
        let expected: u64 = s["secretsByKind"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
        assert_eq!(meta["redactedSecrets"].as_u64(), Some(expected), "{id}");
        assert!(plain["additionalContext"]["source"]["references"][0].get("redactedSecrets").is_none());
        // One flag alone turns on only its protection.
        let escape = ok_json(&[&["--escape-invisible"][..], &base[..]].concat());
        let escaped = escape["additionalContext"]["content"][0]["text"].as_str().unwrap();
        assert!(!hidden(escaped), "{id}");
        assert_eq!(escape["content"], plain["content"], "{id}: the user text is untouched");
    }
    let plain = ok_json(&["--root", &root, "--json", "show", "secrets-prose"]).to_string();
    let hard = ok_json(&["--root", &root, "--json", "--redact-secrets", "show", "secrets-prose"]).to_string();
    assert!(plain.contains("AKIA") && !hard.contains("AKIA") && hard.contains("[redacted aws-access-key-id]"));
    let help = run(&["--help"]).stdout;
    assert!(help.contains("--hardened") && help.contains("--redact-secrets"), "{help}");
}

fn generations(root: &str) -> String {
    fixtures().join("../dsh-generations").join(root).to_str().unwrap().to_owned()
}

#[test]
fn candidates_read_every_generation_and_name_a_newer_one() {
    // A root after DSH 0.2 opened two sessions (v4 beside v3): each session once.
    let root = generations("upgraded-0.2");
    let list = ok_json(&["--root", &root, "--json", "candidates", "--target", "t", "--cwd", "/home/dev/gen"]);
    let labels: Vec<&str> = list.as_array().unwrap().iter().map(|c| c["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["Run it under DSH 0.2", "Use Agent Teams list_agents to", "Rename agentPreset code to ptc"]);
    // A root with a session from a newer DSH: it says so, and lists the rest.
    let root = generations("newer");
    let out = run(&["--root", &root, "--json", "candidates", "--target", "t"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|c| c["sessionId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["tool-call-turn", "gen-v0"]);
    assert!(out.stderr.contains("from-a-newer-dsh/session.v5.jsonl"), "{}", out.stderr);
    assert!(out.stderr.contains("unsupported: written by a newer DSH"), "{}", out.stderr);
    // Nothing to say about a root without one.
    let out = run(&["--root", &generations("raw"), "candidates", "--target", "t"]);
    assert_eq!(out.code, 0);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    // `show` and `prepare` read a v4 log.
    let out = run(&["--root", &generations("zstd"), "show", "compaction-output-reserve"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("PROACTIVE COMPACTION COMPLETE"), "{}", out.stdout);
}

#[test]
fn dsh_compat_selects_a_later_release_format() {
    let root = generations("zstd");
    let base = ["--root", root.as_str(), "--json"];
    let prepare = |extra: &[&str]| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        args.extend_from_slice(&["prepare", "--target", "t", "--message", "see @[x](dsh-session:Imdlbi12NC1vcGVuIg)"]);
        ok_json(&args)
    };
    let later = prepare(&["--dsh-compat", "0.1.7", "--context-window", "100000"]);
    assert_eq!(later["additionalContext"]["source"]["references"][0]["capturedFormatVersion"], 4);
    let plain = prepare(&[]);
    assert!(plain["additionalContext"]["source"]["references"][0].get("capturedFormatVersion").is_none());
    let out = run(&["--root", &root, "--dsh-compat", "0.2", "candidates", "--target", "t"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("SESSION_REFERENCE_INVALID_CONFIG"), "{}", out.stderr);
    let list = ok_json(&["--root", &root, "--json", "--dsh-compat", "0.1.5", "candidates", "--target", "t"]);
    assert_eq!(list[0]["sameWorkspace"], false);
}

fn foreign() -> PathBuf {
    fixtures().join("../foreign-logs")
}

#[test]
fn sources_of_every_kind_list_and_show() {
    let claude = format!("claude-code={}", foreign().join("claude-code").display());
    let codex = format!("codex={}", foreign().join("codex/daaain").display());
    let dsh = format!("dsh={}", raw_root());
    let all = ["--source", &claude, "--source", &codex, "--source", &dsh];
    let list = ok_json(&[&all[..], &["candidates", "--target", "t", "--limit", "100", "--json"]].concat());
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|c| c["sessionId"].as_str().unwrap()).collect();
    assert!(ids.contains(&"claude-code:dag_compact_after_rewind") && ids.contains(&"multi-turn"), "{ids:?}");
    assert!(ids.contains(&"codex:11111111-1111-4111-8111-111111111111"), "{ids:?}");
    let shown = ok_json(&[&all[..], &["show", "claude-code:dag_compact_after_rewind", "--json"]].concat());
    assert_eq!(shown["cwd"], "/tmp");
    assert_eq!(shown["capturedThroughSeq"], 11);
    assert_eq!(shown["messages"][2]["role"], "assistant");
    assert_eq!(shown["messages"][2]["text"], "Final answer");
    let shown = ok_json(&[&all[..], &["show", "codex:11111111-1111-4111-8111-111111111111", "--json"]].concat());
    assert_eq!(shown["messages"][1]["text"], "The synthetic files are alpha.txt and beta.txt.");
    // DSH ids read exactly as with --root.
    let via_sources = run(&[&all[..], &["show", "multi-turn"]].concat());
    let via_root = run(&["--root", &raw_root(), "show", "multi-turn"]);
    assert_eq!((via_sources.code, &via_sources.stdout), (0, &via_root.stdout));
    // A missing source is a note on stderr; the others still list.
    let out =
        run(&["--source", "claude-code=/nonexistent/projects", "--source", &codex, "candidates", "--target", "t"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("note: source claude-code not listed") && out.stdout.contains("codex:"),
        "{}",
        out.stderr
    );
    // A prepare across sources.
    let message = format!(
        "compare {} and {}",
        format_mention("claude-code:system_reminder", None),
        format_mention("codex:11111111-1111-4111-8111-111111111111", None)
    );
    let out = run(&[&all[..], &["prepare", "--target", "t", "--message", &message, "--prompt"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("# Project notes") && !out.stdout.contains("cwd changed"), "{}", out.stdout);
    let out = run(&["--source", "gemini=/x", "show", "a"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("unknown source kind"), "{}", out.stderr);
    let out = run(&["--source", &codex, "--source", &codex, "show", "a"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("two codex sources"), "{}", out.stderr);
}

#[test]
fn default_locations_that_exist_are_used_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let dir = home.join(".dsh/sessions/_no-cwd/multi-turn");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixtures().join("raw/_no-cwd/multi-turn/session.jsonl"), dir.join("session.jsonl")).unwrap();
    // DSH alone: exactly today's output, nothing on stderr.
    let mut c = cmd();
    c.env("HOME", &home);
    let alone = run_with(c, &["show", "multi-turn"], None);
    assert_eq!((alone.code, alone.stderr.as_str()), (0, ""));
    let project = home.join(".claude/projects/-tmp");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::copy(foreign().join("claude-code/daaain/system_reminder.jsonl"), project.join("system_reminder.jsonl"))
        .unwrap();
    let codex = tmp.path().join("codex-home");
    std::fs::create_dir_all(codex.join("sessions")).unwrap();
    std::fs::copy(
        foreign().join("codex/daaain/sessions/rollout-44444444-4444-4444-8444-444444444444.jsonl"),
        codex.join("sessions/rollout-44444444-4444-4444-8444-444444444444.jsonl"),
    )
    .unwrap();
    let mut c = cmd();
    c.env("HOME", &home).env("CODEX_HOME", &codex);
    let out = run_with(c, &["candidates", "--target", "t", "--json"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let want = format!(
        "note: sources: dsh={}, claude-code={}, codex={}\n",
        home.join(".dsh/sessions").display(),
        home.join(".claude/projects").display(),
        codex.display()
    );
    assert_eq!(out.stderr, want);
    let ids: Vec<String> = serde_json::from_str::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["sessionId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, vec!["codex:44444444-4444-4444-8444-444444444444", "multi-turn", "claude-code:system_reminder"]);
    let mut c = cmd();
    c.env("HOME", &home).env("CODEX_HOME", &codex);
    let shown = run_with(c, &["show", "multi-turn"], None);
    assert_eq!(shown.stdout, alone.stdout);
}

#[test]
fn search_finds_what_was_said_with_snippets() {
    let root = raw_root();
    let got = ok_json(&["--root", &root, "--json", "search", "--target", "t", "--cwd", "/home/dev/alpha", "recovered"]);
    assert_eq!(
        got,
        json!([{"sessionId": "compaction-recovery", "label": "Establish a durable compaction premise",
            "cwd": "/home/dev/alpha", "createdAt": 1760000000000u64,
            "mention": format_mention("compaction-recovery", Some("Establish a durable compaction premise")),
            "snippet": "COMPACTION RECOVERED", "field": "message", "messageIndex": 1}])
    );
    // A title phrase ranks first; an identifier fragment matches inside a word.
    let got = ok_json(&["--root", &root, "--json", "search", "--target", "t", "HEADLESS_OK"]);
    assert_eq!(got[0]["sessionId"], "advanced-toolchain");
    assert!(got[0]["snippet"].as_str().unwrap().contains("ADVANCED_HEADLESS_OK"));
    let cjk = ok_json(&["--root", &root, "--json", "search", "--target", "t", "策略"]);
    assert_eq!(cjk[0]["field"], "id");
    let scoped = ok_json(&[
        "--root",
        &root,
        "--json",
        "search",
        "--target",
        "t",
        "--cwd",
        "/elsewhere",
        "--same-cwd",
        "recovered",
    ]);
    assert_eq!(scoped, json!([]));
    let out = run(&["--root", &root, "search", "--target", "t", "--cwd", "/home/dev/alpha", "recovered"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(" 1. Establish a durable compaction premise\n    message 1: COMPACTION RECOVERED\n"),
        "{}",
        out.stdout
    );
    let none = run(&["--root", &root, "search", "--target", "t", "zzzz-nothing"]);
    assert!(none.stdout.contains("No matches."));
    let bad = run(&["--root", &root, "search", "--target", "t", "x", "--limit", "0"]);
    assert_eq!(bad.code, 2, "a usage error: {}", bad.stderr);
    let bad = run(&["--root", &root, "search", "--target", "t", "x", "--limit", "9007199254740992"]);
    assert_eq!(bad.code, 1, "{}", bad.stderr);
}

/// Runs the command with `args` and the cache under `cache_home`: it must
/// succeed and write nothing to stderr; its stdout.
fn run_cached(cache_home: &Path, args: &[&str]) -> String {
    let mut c = cmd();
    c.env("XDG_CACHE_HOME", cache_home);
    let out = run_with(c, args, None);
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    assert_eq!(out.stderr, "", "{args:?}");
    out.stdout
}

#[test]
fn the_cache_is_the_default_and_never_changes_an_answer() {
    let root = raw_root();
    let cache_home = tempfile::tempdir().unwrap();
    let run_in = |args: &[&str]| run_cached(cache_home.path(), args);
    let search = ["--root", root.as_str(), "--json", "search", "--target", "t", "--cwd", "/home/dev/alpha", "goal"];
    let cands = ["--root", root.as_str(), "--json", "candidates", "--target", "t", "--query", "a"];
    let uncached = |args: &[&str]| run_in(&[args, &["--no-cache"]].concat());
    let expected_search = uncached(&search);
    let expected_cands = uncached(&cands);
    let dir = cache_home.path().join("dsh-session-reference");
    assert!(!dir.exists(), "no cache file with --no-cache");
    // The default: caching (`--cache` says so explicitly).
    fn with<'a>(args: &[&'a str]) -> Vec<&'a str> {
        args.to_vec()
    }
    assert_eq!(run_in(&[&cands[..], &["--no-cache", "--cache"]].concat()), expected_cands);
    assert!(dir.exists(), "--cache (last) caches");
    std::fs::remove_dir_all(&dir).unwrap();
    let names = |dir: &Path| -> (Vec<PathBuf>, Vec<String>) {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        let names = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().split('-').next().unwrap().to_owned())
            .collect();
        (files, names)
    };
    // `search` keeps the listing and the index (the index holds each
    // session's title); `candidates --query` the listing and the titles.
    assert_eq!(run_in(&with(&search)), expected_search);
    assert_eq!(names(&dir).1, ["index", "listing"], "search writes no titles file");
    assert_eq!(run_in(&with(&cands)), expected_cands);
    let (files, three) = names(&dir);
    assert_eq!(three, ["index", "listing", "titles"], "three cache files per root: {files:?}");
    let titles = std::fs::read(&files[2]).unwrap();
    assert_eq!(run_in(&with(&search)), expected_search, "warm");
    assert_eq!(std::fs::read(&files[2]).unwrap(), titles, "search leaves the titles file alone");
    assert_eq!(run_in(&with(&cands)), expected_cands, "warm");
    // Each file half-written, then corrupted: ignored, the answer is the
    // same, and it is written again.
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        std::fs::write(file, &bytes[..bytes.len() / 2]).unwrap();
        assert_eq!(run_in(&with(&search)), expected_search, "a half-written {file:?} is ignored");
        assert_eq!(run_in(&with(&cands)), expected_cands, "a half-written {file:?} is ignored");
        std::fs::write(file, b"garbage").unwrap();
        assert_eq!(run_in(&with(&cands)), expected_cands, "a corrupted {file:?} is ignored");
        assert_eq!(run_in(&with(&search)), expected_search, "a corrupted {file:?} is ignored");
        assert!(std::fs::read(file).unwrap() != b"garbage", "and rewritten");
    }
    // Another root's listing file in this root's place is ignored.
    let other = fixtures().join("zstd").to_str().unwrap().to_owned();
    let other_run = ["--root", other.as_str(), "candidates", "--target", "t"];
    run_in(&other_run);
    let mut all: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    all.retain(|f| !files.contains(f) && f.to_string_lossy().contains("listing-"));
    std::fs::copy(&all[0], &files[1]).unwrap();
    assert_eq!(run_in(&with(&cands)), expected_cands, "another root's listing is ignored");
    let before: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert_eq!(run_in(&[&search[..], &["--cache", "--no-cache"]].concat()), expected_search);
    let after: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert_eq!(after, before, "--no-cache (last) writes nothing");
}

/// A cache base directory that does not exist yet (`$XDG_CACHE_HOME`) is
/// made 0700 with the cache directory in it, as the XDG specification asks.
#[cfg(unix)]
#[test]
fn a_missing_xdg_cache_home_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let root = raw_root();
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("xdg-cache");
    run_cached(&base, &["--root", root.as_str(), "candidates", "--target", "t", "--query", "a"]);
    for dir in [base.clone(), base.join("dsh-session-reference")] {
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
    }
}

/// A hardened run and a plain one over the same root keep a titles and an
/// index file each: neither replaces the other's, so alternating between a
/// hardened server and the plain command line stays warm.
#[test]
fn hardened_and_plain_runs_keep_cache_files_of_their_own() {
    let root = raw_root();
    let cache_home = tempfile::tempdir().unwrap();
    let run_in = |args: &[&str]| run_cached(cache_home.path(), args);
    let dir = cache_home.path().join("dsh-session-reference");
    let files = || -> Vec<(String, Vec<u8>)> {
        let mut all: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().rsplit_once('-').unwrap().0.to_owned(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect();
        all.sort();
        all
    };
    let search = ["--root", root.as_str(), "--json", "search", "--target", "t", "goal"];
    let cands = ["--root", root.as_str(), "--json", "candidates", "--target", "t", "--query", "a"];
    fn hardened<'a>(args: &[&'a str]) -> Vec<&'a str> {
        std::iter::once("--hardened").chain(args.iter().copied()).collect()
    }
    let plain_search = run_in(&search);
    let plain_cands = run_in(&cands);
    let hardened_search = run_in(&hardened(&search));
    let hardened_cands = run_in(&hardened(&cands));
    let after_both = files();
    let names: Vec<&str> = after_both.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["index", "index-redacted", "listing", "titles", "titles-redacted"]);
    // Each setting, run again, answers as before from its own files and
    // leaves every file as it was.
    assert_eq!(run_in(&search), plain_search);
    assert_eq!(run_in(&cands), plain_cands);
    assert_eq!(run_in(&hardened(&search)), hardened_search);
    assert_eq!(run_in(&hardened(&cands)), hardened_cands);
    assert_eq!(files(), after_both, "no run rewrote another setting's file");
}

/// MCP servers of different scopes over one root keep index files of their
/// own: a server scoped to one project holds only that project's sessions,
/// and saving them over the file of a server that offers every session
/// would leave that one to index everything again at its next start.
#[test]
fn servers_of_different_scopes_keep_index_files_of_their_own() {
    let root = raw_root();
    let cache_home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let serve = |scope: &[&str]| -> Value {
        let requests = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "search_sessions", "arguments": {"query": "goal"}}}),
        ];
        let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
        let mut c = cmd();
        c.env("XDG_CACHE_HOME", cache_home.path());
        let args: Vec<&str> = ["--root", root.as_str(), "mcp"].iter().chain(scope).copied().collect();
        let out = run_with(c, &args, Some(&input));
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        let answers: Vec<Value> = out.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let answer = answers.iter().find(|a| a["id"] == 2).unwrap_or_else(|| panic!("{}", out.stdout));
        answer["result"]["structuredContent"].clone()
    };
    let index_files = || -> std::collections::BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(cache_home.path().join("dsh-session-reference"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("index-"))
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
            .collect()
    };
    let all = serve(&["--scope", "all"]);
    assert!(!all["results"].as_array().unwrap().is_empty(), "{all}");
    let after_all = index_files();
    assert_eq!(after_all.len(), 1, "{:?}", after_all.keys());
    // A project without sessions, and one session allowed besides.
    let one = all["results"][0]["sessionId"].as_str().unwrap().to_owned();
    let scoped = serve(&["--project", project.path().to_str().unwrap(), "--allow", &one]);
    let found: Vec<&Value> = scoped["results"].as_array().unwrap().iter().map(|r| &r["sessionId"]).collect();
    assert_eq!(found, [&json!(one)], "{scoped}");
    let after_scoped = index_files();
    assert_eq!(after_scoped.len(), 2, "the scoped server keeps a file of its own: {:?}", after_scoped.keys());
    for (name, bytes) in &after_all {
        assert_eq!(after_scoped.get(name), Some(bytes), "the scoped server left {name} as it was");
    }
    assert_eq!(serve(&["--scope", "all"]), all);
    assert_eq!(index_files(), after_scoped, "the whole index, read again, is written again the same or not at all");
}

/// Copies the directory tree `from` into `to`.
#[test]
fn roots_given_one_level_off_are_taken_and_said_and_an_empty_root_says_what_it_holds() {
    let tmp = tempfile::tempdir().unwrap();
    // `--source codex=~/.codex/sessions`: the home is read, and said so.
    let home = tmp.path().join("codex-home");
    copy_tree(&foreign().join("codex/daaain/sessions"), &home.join("sessions"));
    let spec = format!("codex={}", home.join("sessions").display());
    let out = run(&["--source", &spec, "candidates", "--target", "t", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed = serde_json::from_str::<Value>(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 4, "{}", out.stdout);
    let note = format!(
        "note: source codex: {} is the sessions/ directory of a Codex home: reading {}\n",
        home.join("sessions").display(),
        home.display()
    );
    assert_eq!(out.stderr, note);
    // `--source claude-code=~/.claude`: its projects/.
    let config = tmp.path().join("claude");
    copy_tree(&foreign().join("claude-code/simonw"), &config.join("projects/-project"));
    std::fs::write(config.join("settings.json"), "{}").unwrap();
    let spec = format!("claude-code={}", config.display());
    let out = run(&["--source", &spec, "candidates", "--target", "t"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("claude-code:sample_session"), "{}", out.stdout);
    assert!(out.stderr.contains("is a Claude Code configuration directory: reading"), "{}", out.stderr);
    // A codex root that is no Codex home: "No candidates." and why.
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let spec = format!("codex={}", elsewhere.display());
    let out = run(&["--source", &spec, "candidates", "--target", "t"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "No candidates.\n"));
    let note = format!(
        "note: source codex: no Codex session in {}: expected a Codex home, holding sessions/ or \
         archived_sessions/ (as ~/.codex); it is empty\n",
        elsewhere.display()
    );
    assert_eq!(out.stderr, note);
    // A DSH root alone: `--root ~/.dsh` reads its sessions/; an empty root
    // says so; a project directory is refused with what to give instead.
    let dsh = tmp.path().join("dsh-home");
    copy_tree(&fixtures().join("raw"), &dsh.join("sessions"));
    let via_home = run(&["--root", dsh.to_str().unwrap(), "candidates", "--target", "t", "--json"]);
    let direct = run(&["--root", &raw_root(), "candidates", "--target", "t", "--json"]);
    assert_eq!((via_home.code, &via_home.stdout), (0, &direct.stdout));
    assert_eq!(direct.stderr, "");
    let note = format!("note: {} is a DSH home: reading {}\n", dsh.display(), dsh.join("sessions").display());
    assert_eq!(via_home.stderr, note);
    let out = run(&["--root", elsewhere.to_str().unwrap(), "candidates", "--target", "t"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "No candidates.\n"));
    assert!(out.stderr.starts_with(&format!("note: no DSH session in {}: expected", elsewhere.display())));
    let project = dsh.join("sessions/_no-cwd");
    let out = run(&["--root", project.to_str().unwrap(), "candidates", "--target", "t"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("is one project's directory") && out.stderr.contains("SESSION_REFERENCE_READ_FAILED"));
}

#[test]
fn read_pages_a_session_within_its_budget() {
    let root = raw_root();
    // The core's shape (`Page::to_json` and the framed text), newest first.
    let got = ok_json(&["--root", &root, "read", "multi-turn", "--json"]);
    let keys: Vec<&String> = got.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["sessionId", "label", "totalMessages", "capturedThroughSeq", "messages", "text"]);
    assert_eq!((got["totalMessages"].clone(), got["messages"].as_array().unwrap().len()), (json!(4), 4));
    assert_eq!(got["messages"][3], json!({"index": 3, "role": "assistant", "text": "TWO", "checkpoint": false}));
    let text = got["text"].as_str().unwrap();
    assert!(text.starts_with(dsh_session_reference::PAGE_HEADER) && text.ends_with(dsh_session_reference::PAGE_FOOTER));
    // Small pages forward, through the cursors, add up to the conversation.
    let mut seen = Vec::new();
    let mut page = ok_json(&["--root", &root, "read", "multi-turn", "--start", "0", "--max-bytes", "600", "--json"]);
    loop {
        assert!(page["text"].as_str().unwrap().len() <= 600);
        seen.extend(page["messages"].as_array().unwrap().iter().map(|m| m["index"].as_u64().unwrap()));
        let Some(next) = page["nextCursor"].as_str().map(str::to_owned) else { break };
        page = ok_json(&["--root", &root, "read", "multi-turn", "--cursor", &next, "--max-bytes", "600", "--json"]);
    }
    assert_eq!(seen, [0, 1, 2, 3]);
    // Around an index, for a person, and the framed text alone.
    let out = run(&["--root", &root, "read", "multi-turn", "--around", "2", "--max-bytes", "600"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("Session multi-turn (") && out.stdout.contains("messages 1-2 of 4"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("\n[2 user]\nReply with exactly the word: TWO. No tools.\n"), "{}", out.stdout);
    assert!(out.stdout.contains("Earlier: --cursor ") && out.stdout.contains("Later: --cursor "), "{}", out.stdout);
    let framed = run(&["--root", &root, "read", "multi-turn", "--text"]);
    assert_eq!(framed.stdout, text);
    // Errors: usage (2), then the contract's (1).
    assert_eq!(run(&["--root", &root, "read", "multi-turn", "--start", "1", "--around", "2"]).code, 2);
    for (args, code) in [
        (vec!["read", "multi-turn", "--cursor", "nope"], "SESSION_REFERENCE_INVALID_REFERENCE"),
        (vec!["read", "multi-turn", "--target", "multi-turn"], "SESSION_REFERENCE_SELF_REFERENCE"),
        (vec!["read", "multi-turn", "--max-bytes", "300"], "SESSION_REFERENCE_BUDGET_EXCEEDED"),
        (vec!["read", "nope"], "SESSION_REFERENCE_READ_FAILED"),
    ] {
        let out = run(&[&["--root", root.as_str()][..], &args].concat());
        assert_eq!(out.code, 1, "{args:?}");
        assert!(out.stderr.starts_with(&format!("error: {code}: ")), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn read_escapes_control_characters_for_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("_no-cwd").join("esc");
    std::fs::create_dir_all(&dir).unwrap();
    let header = json!({"type": "session", "version": 0, "id": "esc", "createdAt": 1, "delegationDepth": 0});
    let event = json!({"seq": 0, "time": 1, "type": "user/message", "surfaceOp": "append",
        "data": {"role": "user", "content": [{"type": "text", "text": "a\u{1b}[31mred\nnext\u{202e}"}], "source": {"kind": "user"}}});
    std::fs::write(dir.join("session.jsonl"), format!("{header}\n{event}\n")).unwrap();
    let out = run(&["--root", tmp.path().to_str().unwrap(), "read", "esc"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("a\\u{1b}[31mred\nnext\\u{202e}\n"), "{:?}", out.stdout);
    assert!(!out.stdout.contains('\u{1b}'));
}

#[test]
fn prepare_ranges_carry_part_of_a_session() {
    let root = raw_root();
    let message = format!("see {}", format_mention("multi-turn", None));
    let prepared = ok_json(&[
        "--root",
        &root,
        "prepare",
        "--target",
        "t",
        "--message",
        &message,
        "--range",
        "multi-turn=1..3",
        "--json",
    ]);
    let meta = &prepared["additionalContext"]["source"]["references"][0];
    assert_eq!(meta["range"], json!({"start": 1, "end": 3}));
    assert_eq!(meta["originalMessages"], 2);
    let prompt = prepared["additionalContext"]["content"][0]["text"].as_str().unwrap();
    assert!(prompt.contains(r#""range":{"start":1,"end":3},"conversation":[{"role":"assistant","text":"ONE"},"#));
    // Without --range, the reference's bytes; an inclusive range and a session not mentioned.
    let whole = ok_json(&["--root", &root, "prepare", "--target", "t", "--message", &message, "--json"]);
    assert!(whole["additionalContext"]["source"]["references"][0].get("range").is_none());
    let out = run(&[
        "--root",
        &root,
        "prepare",
        "--target",
        "t",
        "--message",
        &message,
        "--around",
        "multi-turn=3",
        "--range",
        "goal-wrapup=..=0",
        "--prompt",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains(r#""around":3,"conversation":["#), "{}", out.stdout);
    assert!(out.stdout.contains(r#""sessionId":"goal-wrapup","label":"goal-wrapup","cwd":"/home/dev/alpha","capturedThroughSeq":54,"range":{"start":0,"end":1}"#));
    // A malformed range is a usage error; two excerpts of one session the contract's.
    assert_eq!(run(&["--root", &root, "prepare", "--target", "t", "--message", "x", "--range", "a=oops"]).code, 2);
    let twice = run(&[
        "--root",
        &root,
        "prepare",
        "--target",
        "t",
        "--message",
        &message,
        "--range",
        "multi-turn=0..1",
        "--range",
        "multi-turn=1..2",
    ]);
    assert_eq!(twice.code, 1);
    assert!(twice.stderr.contains("SESSION_REFERENCE_INVALID_REFERENCE"), "{}", twice.stderr);
}

/// Every kind the core reads is accepted by `--source` and named, with its
/// default location, in the help, and by its format in the help's first
/// line (all from `SourceKind::ALL`).
#[test]
fn every_source_kind_is_accepted_and_in_the_help() {
    use dsh_session_reference::sources::SourceKind;
    let help = run(&["--help"]).stdout;
    let about = help.lines().next().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for kind in SourceKind::ALL {
        assert!(help.contains(&format!("{} ({})", kind.name(), kind.default_location_text())), "{kind:?}:\n{help}");
        assert!(about.contains(kind.format()), "{} not in the help's first line: {about}", kind.format());
        let root = tmp.path().join(kind.name());
        std::fs::create_dir_all(&root).unwrap();
        let spec = format!("{}={}", kind.name(), root.display());
        let out = run(&["candidates", "--source", &spec, "--json"]);
        assert!(!out.stderr.contains("unknown source kind"), "{spec}: {}", out.stderr);
        assert!(out.stderr.contains(kind.name()), "{spec}: the note names the source: {}", out.stderr);
    }
    let out = run(&["candidates", "--source", "nope=/x"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains(&SourceKind::names()), "{}", out.stderr);
}

/// The MCP server's title and `list_sessions` description, what a model
/// and a client's user read of it, name every kind the core reads.
#[test]
fn the_mcp_server_names_every_kind() {
    use dsh_session_reference::sources::{kinds_sentence, SourceKind};
    let root = tempfile::tempdir().unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let out = run_with(cmd(), &["--root", root.path().to_str().unwrap(), "mcp"], Some(&input));
    let answers: Vec<Value> = out.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let answer = |id: u64| answers.iter().find(|a| a["id"] == id).unwrap_or_else(|| panic!("{}", out.stdout));
    let title = answer(1)["result"]["serverInfo"]["title"].as_str().unwrap().to_owned();
    let tools = answer(2)["result"]["tools"].as_array().unwrap();
    let list = tools.iter().find(|t| t["name"] == "list_sessions").unwrap();
    let description = list["description"].as_str().unwrap();
    for kind in SourceKind::ALL {
        assert!(title.contains(kind.format()), "{} not in the title {title}", kind.format());
        assert!(description.contains(kind.format()), "{} not in {description}", kind.format());
    }
    assert!(title.contains(&kinds_sentence()) && description.contains(&kinds_sentence()));
}

/// `candidates`, `search`, `show` and `prepare` across the file-per-session
/// kinds at once (Copilot CLI, Gemini CLI, Cursor, Aider), beside Codex.
#[test]
fn the_new_kinds_list_search_show_and_prepare_together() {
    let spec = |kind: &str, dir: &str| format!("{kind}={}", foreign().join(dir).display());
    let specs = [
        spec("copilot-cli", "copilot-cli/synthetic/session-state"),
        spec("gemini-cli", "gemini-cli/synthetic/tmp"),
        spec("cursor", "cursor/synthetic/projects"),
        spec("aider", "aider/synthetic"),
        spec("codex", "codex/daaain"),
    ];
    let all: Vec<&str> = specs.iter().flat_map(|s| ["--source", s.as_str()]).collect();
    let listed = run(&[&all[..], &["candidates", "--target", "t", "--limit", "100", "--json"]].concat());
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    // A file a listing skipped is named in its source's note, with why.
    let empty = foreign().join("copilot-cli/synthetic/session-state/empty-session/events.jsonl");
    let said = format!("note: source copilot-cli: skipped {} (it holds no conversation yet)\n", empty.display());
    assert!(listed.stderr.contains(&said), "{}", listed.stderr);
    let list: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|c| c["sessionId"].as_str().unwrap()).collect();
    for want in ["copilot-cli:rewind-session", "gemini-cli:bbbb2222-0000-4000-8000-000000000002", "cursor:cccc3333"] {
        assert!(ids.contains(&want), "{want} not in {ids:?}");
    }
    assert!(ids.iter().any(|id| id.starts_with("aider:") && id.ends_with("proj#1")), "{ids:?}");
    assert!(ids.iter().any(|id| id.starts_with("codex:")), "{ids:?}");
    // One word said in a session of each new kind.
    for (query, id) in [
        ("Right answer", "copilot-cli:rewind-session"),
        ("faster keep", "gemini-cli:1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"),
        ("router handlers", "cursor:cccc3333"),
        ("existing imports", "proj#1"),
    ] {
        let found = ok_json(&[&all[..], &["search", query, "--json"]].concat());
        let hits: Vec<&str> = found.as_array().unwrap().iter().filter_map(|r| r["sessionId"].as_str()).collect();
        assert!(hits.iter().any(|h| h.ends_with(id)), "{query}: {hits:?}");
    }
    let shown = ok_json(&[&all[..], &["show", "copilot-cli:rewind-session", "--json"]].concat());
    assert_eq!(shown["messages"][3]["text"], "Right answer");
    let shown = ok_json(&[&all[..], &["show", "cursor:cccc3333", "--json"]].concat());
    assert_eq!(shown["messages"][1]["text"], "The router maps paths to handlers.\nIt has no routes yet.");
    let message = format!(
        "compare {} and {}",
        format_mention("gemini-cli:bbbb2222-0000-4000-8000-000000000002", None),
        format_mention("copilot-cli:legacy-0001", None)
    );
    let out = run(&[&all[..], &["prepare", "--target", "t", "--message", &message, "--prompt"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("Hi from 0.38") && out.stdout.contains("There are three."), "{}", out.stdout);
}
