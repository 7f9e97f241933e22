//! Sessions shared through PostgreSQL, end to end through the command
//! line, against a real server each test starts itself (support/cluster.rs):
//! what a push sends and never sends, reads over `--source postgres=URL`
//! byte-equal to reads of the local files, and a push cut by the server's
//! crash, run again.

#[path = "../../teams/tests/support/cluster.rs"]
mod cluster;
mod common;

use std::path::{Path, PathBuf};

use cluster::Cluster;
use common::{cmd, copy_tree, ok, repo, run};

/// The example DSH sessions and the Claude Code fixtures, as local sources.
fn local_sources(tmp: &Path) -> Vec<String> {
    let dsh = tmp.join("dsh");
    copy_tree(&repo().join("examples/sessions"), &dsh);
    let claude = tmp.join("claude");
    copy_tree(&repo().join("tests/fixtures/foreign-logs/claude-code"), &claude);
    vec![format!("dsh={}", dsh.display()), format!("claude-code={}", claude.display())]
}

fn with_sources<'a>(sources: &'a [String], rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--no-cache"];
    for s in sources {
        args.push("--source");
        args.push(s);
    }
    args.extend_from_slice(rest);
    args
}

#[test]
fn the_database_reads_as_the_local_files_do() {
    let pg = Cluster::start();
    let url = pg.new_database("same");
    let tmp = tempfile::tempdir().unwrap();
    let local = local_sources(tmp.path());
    let remote = vec![format!("postgres={url}")];

    let pushed = ok(&with_sources(&local, &["push", "--to", &url, "--no-redact", "--json"]));
    let summary: serde_json::Value = serde_json::from_str(&pushed.stdout).unwrap();
    let listed: serde_json::Value =
        serde_json::from_str(&ok(&with_sources(&local, &["candidates", "--json", "--limit", "1000"])).stdout).unwrap();
    let n = listed.as_array().unwrap().len();
    assert!(n >= 8, "the sources list {n} sessions");
    assert_eq!(summary["pushed"], n, "{summary}");
    assert_eq!(pg.psql("same", "SELECT count(*) FROM dsr_sessions").trim(), n.to_string());

    // Every command over the database prints what it prints over the files.
    let ids: Vec<String> =
        listed.as_array().unwrap().iter().map(|c| c["sessionId"].as_str().unwrap().to_owned()).collect();
    let mut commands: Vec<Vec<String>> = vec![
        vec!["candidates".into(), "--json".into(), "--cwd".into(), "/home/dev/alpha".into()],
        vec!["candidates".into(), "--json".into(), "--query".into(), "alpha".into()],
        vec!["candidates".into()],
        vec!["search".into(), "--json".into(), "the".into()],
        vec!["search".into(), "--json".into(), "--cwd".into(), "/home/dev/alpha".into(), "reply".into(), "DONE".into()],
        vec!["search".into(), "--json".into(), "--limit".into(), "2".into(), "a".into()],
        vec![
            "search".into(),
            "--json".into(),
            "--same-cwd".into(),
            "--cwd".into(),
            "/home/dev/alpha".into(),
            "e".into(),
        ],
        vec!["search".into(), "--json".into(), "zzqqxxnothing".into()],
        vec!["search".into(), "compaction".into()],
        vec!["search".into(), "--json".into(), "100%_".into()],
    ];
    for id in &ids {
        commands.push(vec!["show".into(), "--json".into(), id.clone()]);
        commands.push(vec!["read".into(), "--json".into(), "--max-bytes".into(), "2000".into(), id.clone()]);
        commands.push(vec!["--hardened".into(), "show".into(), id.clone()]);
        // (--prompt: the context given to the model; --json adds a random message id.)
        let ask = |rest: &[&str]| rest.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        commands.push(ask(&["prepare", "--prompt", "--message", "look", "--ref", id]));
        let uri = ok(&["uri", "encode", id]).stdout.trim().to_owned();
        let mention = format!("see @[it]({uri})");
        commands.push(ask(&["--max-reference-bytes", "600", "prepare", "--prompt", "--message", &mention]));
    }
    for command in &commands {
        let rest: Vec<&str> = command.iter().map(String::as_str).collect();
        let here = run(&with_sources(&local, &rest));
        let there = run(&with_sources(&remote, &rest));
        assert_eq!(here.code, 0, "{command:?}: {}", here.stderr);
        assert_eq!(there.code, 0, "{command:?} over the database: {}", there.stderr);
        assert_eq!(there.stdout, here.stdout, "{command:?} differs over the database");
    }
    // A common word finds sessions, and search found them in the database.
    let found = ok(&with_sources(&remote, &["search", "--json", "the"]));
    assert!(found.stdout.contains("\"snippet\""), "{}", found.stdout);

    // Run again, nothing is sent; a changed session alone is.
    let again: serde_json::Value =
        serde_json::from_str(&ok(&with_sources(&local, &["push", "--to", &url, "--no-redact", "--json"])).stdout)
            .unwrap();
    assert_eq!((again["pushed"].as_u64(), again["unchanged"].as_u64()), (Some(0), Some(n as u64)), "{again}");
    let log = tmp.path().join("dsh/--home-dev-alpha--/goal-wrapup/session.jsonl");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push('\n');
    std::fs::write(&log, text).unwrap();
    let changed: serde_json::Value =
        serde_json::from_str(&ok(&with_sources(&local, &["push", "--to", &url, "--no-redact", "--json"])).stdout)
            .unwrap();
    assert_eq!(changed["pushed"], 1, "{changed}");

    // A database given with other sources, or no database at all: usage told.
    let mixed = run(&with_sources(&[local[0].clone(), remote[0].clone()], &["candidates"]));
    assert_eq!(mixed.code, 1);
    assert!(mixed.stderr.contains("read alone"), "{}", mixed.stderr);
    let nowhere = cmd().env_remove("DSR_DATABASE_URL").args(with_sources(&local, &["push"])).output().unwrap();
    assert_eq!(nowhere.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&nowhere.stderr).contains("DSR_DATABASE_URL"));
}

/// The example sessions with credentials written into a message, and the
/// texts a push must never send: tool output, reasoning, the credentials.
fn sessions_with_secrets(tmp: &Path) -> (String, Vec<String>) {
    let dsh = tmp.join("dsh");
    copy_tree(&repo().join("examples/sessions"), &dsh);
    let log = dsh.join("--home-dev-alpha--/agent-instructions/session.jsonl");
    let secrets = [
        "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXy".to_owned(),
        "AKIAIOSFODNN7EXAMPLQ".to_owned(),
        "sk-ant-api03-x8Yq2Lk9Wm3Np7Rt5Vb1Zc4Hd6Jf0Gs8Qa2We4Rt6Yu8Io0Pa".to_owned(),
    ];
    let text = std::fs::read_to_string(&log).unwrap();
    let with = text.replacen(
        "then reply DONE.",
        &format!("then reply DONE. token {} key {} api {}", secrets[0], secrets[1], secrets[2]),
        2,
    );
    assert_ne!(with, text);
    std::fs::write(&log, with).unwrap();
    // What the logs hold beside the conversation: every tool result's and
    // every reasoning text of 20 characters or more.
    let mut never: Vec<String> = secrets.to_vec();
    for entry in walk(&dsh) {
        for line in std::fs::read_to_string(entry).unwrap().lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            let kind = v["type"].as_str().unwrap_or("");
            if kind == "tool/result" || kind.starts_with("reasoning") {
                strings(&v["data"], &mut never);
            }
        }
    }
    (format!("dsh={}", dsh.display()), never)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            found.push(path);
        }
    }
    found
}

fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) if s.chars().count() >= 20 => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        serde_json::Value::Object(m) => m.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

#[test]
fn a_push_sends_no_tool_output_reasoning_or_credential() {
    let pg = Cluster::start();
    let url = pg.new_database("leaks");
    let tmp = tempfile::tempdir().unwrap();
    let (source, never) = sessions_with_secrets(tmp.path());
    // The credentials are in the conversation, and what the projection
    // itself shows of the rest (a tool result a message quotes) is not
    // looked for: the test is of what the push adds to the projection.
    let shown = ok(&["--no-cache", "--source", &source, "show", "--json", "agent-instructions"]);
    assert!(never[..3].iter().all(|s| shown.stdout.contains(s.as_str())), "{}", shown.stdout);
    let listed: serde_json::Value =
        serde_json::from_str(&ok(&["--no-cache", "--source", &source, "candidates", "--json"]).stdout).unwrap();
    let mut projected = String::new();
    for c in listed.as_array().unwrap() {
        let id = c["sessionId"].as_str().unwrap();
        projected.push_str(&ok(&["--no-cache", "--source", &source, "show", "--json", id]).stdout);
    }
    let (secrets, rest) = never.split_at(3);
    let mut never: Vec<String> = secrets.to_vec();
    never.extend(rest.iter().filter(|s| !projected.contains(s.as_str())).cloned());
    assert!(never.len() >= 6, "too few texts to look for: {never:?}");
    ok(&["--no-cache", "--source", &source, "push", "--to", &url]);
    let dump = pg.dump("leaks");
    assert!(dump.contains("dsr_messages") && dump.contains("[redacted"), "the dump holds the pushed rows");
    for text in &never {
        assert!(!dump.contains(text.as_str()), "the database holds {text:?}");
        // Nor a recognizable part of it (a cut copy).
        if text.chars().count() >= 40 {
            let head: String = text.chars().take(32).collect();
            assert!(!dump.contains(head.as_str()), "the database holds {head:?}");
        }
    }
}

/// `n` sessions made from the examples, each with an id of its own.
fn many_sessions(dir: &Path, n: usize) {
    let examples = repo().join("examples/sessions/--home-dev-alpha--");
    let mut logs = Vec::new();
    for entry in std::fs::read_dir(&examples).unwrap().flatten() {
        logs.push((
            entry.file_name().into_string().unwrap(),
            std::fs::read_to_string(entry.path().join("session.jsonl")).unwrap(),
        ));
    }
    logs.sort();
    for i in 0..n {
        let (name, text) = &logs[i % logs.len()];
        let id = format!("{name}-{i:04}");
        let text = text.replacen(&format!("\"id\":\"{name}\""), &format!("\"id\":\"{id}\""), 1);
        let text = text.replacen("\"createdAt\":17600", &format!("\"createdAt\":17{i:04}"), 1);
        let at = dir.join("--home-dev-alpha--").join(&id);
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(at.join("session.jsonl"), text).unwrap();
    }
}

#[test]
fn a_push_cut_by_the_servers_crash_is_finished_by_the_next() {
    let pg = Cluster::start();
    let url = pg.new_database("crash");
    let tmp = tempfile::tempdir().unwrap();
    let dsh = tmp.path().join("dsh");
    let n = 600;
    many_sessions(&dsh, n);
    let source = format!("dsh={}", dsh.display());
    // The push in the background; the server killed once some sessions are in.
    let mut push = std::process::Command::new(assert_cmd::cargo::cargo_bin("dsh-session-ref"))
        .args(["--no-cache", "--source", &source, "push", "--to", &url, "--no-redact"])
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .env("XDG_RUNTIME_DIR", tmp.path().join("run"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let mut killed_at = None;
    while started.elapsed() < std::time::Duration::from_secs(120) {
        // (Before the push made the schema, the query fails: none yet.)
        let count =
            pg.try_psql("crash", "SELECT count(*) FROM dsr_sessions").map_or(0, |c| c.trim().parse().unwrap_or(0));
        if count > 0 {
            pg.kill();
            killed_at = Some(count);
            break;
        }
        if push.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = push.wait().unwrap();
    let killed_at = killed_at.expect("the push was seen writing");
    assert!(killed_at < n, "the push ended before the server was killed");
    assert!(!status.success(), "a push whose server died must fail");
    pg.start_server();
    let before: usize = pg.psql("crash", "SELECT count(*) FROM dsr_sessions").trim().parse().unwrap();
    assert!(before < n, "the crash left {before} sessions");
    // The rows that survived are whole: every session's messages, or none of it.
    let again = ok(&["--no-cache", "--source", &source, "push", "--to", &url, "--no-redact", "--json"]);
    let summary: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(summary["pushed"].as_u64().unwrap() + summary["unchanged"].as_u64().unwrap(), n as u64, "{summary}");
    assert_eq!(pg.psql("crash", "SELECT count(*), count(DISTINCT id) FROM dsr_sessions").trim(), format!("{n}|{n}"));
    // Every session reads back byte-equal to the local read.
    let remote = format!("postgres={url}");
    let local_all = ok(&["--no-cache", "--source", &source, "candidates", "--json", "--limit", "5000"]);
    let remote_all = ok(&["--no-cache", "--source", &remote, "candidates", "--json", "--limit", "5000"]);
    assert_eq!(remote_all.stdout, local_all.stdout);
    let messages_local: usize = (0..n)
        .filter(|i| i % 37 == 0)
        .map(|i| {
            let name = ["agent-instructions", "compaction-recovery", "goal-wrapup"][i % 3];
            let id = format!("{name}-{i:04}");
            let here = ok(&["--no-cache", "--source", &source, "show", "--json", &id]);
            let there = ok(&["--no-cache", "--source", &remote, "show", "--json", &id]);
            assert_eq!(there.stdout, here.stdout, "{id}");
            here.stdout.matches("\"index\"").count()
        })
        .sum();
    assert!(messages_local > 0);
    // Each session's messages are there once, numbered from 0 without a gap.
    let gaps = pg.psql(
        "crash",
        "SELECT count(*) FROM (SELECT session_id, count(*) AS n, max(idx) AS top FROM dsr_messages GROUP BY \
         session_id) m WHERE n <> top + 1",
    );
    assert_eq!(gaps.trim(), "0");
}
