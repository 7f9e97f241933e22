//! The Cline CLI's sessions directory under the `cline` kind: the
//! fixture's listing, titles and snapshots pinned (compaction by the
//! sidecar, a legacy sidecar, a stale one, a rewind, a basic compaction,
//! injected and harness messages, reasoning, tool output, a damaged
//! element, a torn tail, a damaged file), `sessions.db` read only for a
//! session without a manifest and never written, fingerprints, and the
//! kind's roots and default location.

use std::path::{Path, PathBuf};

use dsh_session_reference::sources::cline::cli::CliSource;
use dsh_session_reference::sources::{open_sources, SourceKind, SourceSpec};
use dsh_session_reference::{block_on, BlockingSessionQuery, SessionQuery, SurfaceData};
use rusqlite::Connection;
use serde_json::json;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/foreign-logs/cline-cli")
}

/// `dst` made a copy of the directory tree `src`.
fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
}

/// The fixture's sessions directory copied, with its `sessions.db` built
/// from `sessions.sql` (closed, so nothing lies beside it).
fn sessions_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    copy_tree(&fixture().join("sessions"), &root);
    let conn = Connection::open(root.join("sessions.db")).unwrap();
    conn.execute_batch(&std::fs::read_to_string(fixture().join("sessions.sql")).unwrap()).unwrap();
    drop(conn);
    (dir, root)
}

/// Every file name in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    n.sort();
    n
}

fn conv(source: &CliSource, id: &str) -> serde_json::Value {
    match source.read_surface(id).unwrap() {
        SurfaceData::Conversation(c) => c.to_snapshot_json(),
        _ => panic!("{id}: not a conversation"),
    }
}

#[test]
fn cline_cli_fixture_lists_exactly() {
    let (_dir, root) = sessions_dir();
    let before = names(&root);
    let s = CliSource::open(&root).unwrap();
    let l = s.list().unwrap();
    assert!(l.rejected.is_empty(), "{:?}", l.rejected);
    let listed: Vec<(String, u64, Option<String>)> = l
        .sessions
        .iter()
        .map(|s| (s.header.id.clone(), s.header.created_at.as_u64().unwrap(), s.header.cwd.clone()))
        .collect();
    let cwd = |c: &str| Some(c.to_owned());
    assert_eq!(
        listed,
        vec![
            ("cline:1784094124598_rruoq".to_owned(), 1_784_094_124_609, cwd("/Users/example/dev/cline")),
            ("cline:1767900000000_broke".to_owned(), 1_767_900_000_000, cwd("/work/broken")),
            ("cline:1767700000000_basic".to_owned(), 1_767_700_000_000, cwd("/work/lexer")),
            ("cline:1767600000000_legcy".to_owned(), 1_767_600_000_000, cwd("/work/legacy")),
            // No manifest: its time and cwd from its row in sessions.db.
            ("cline:1767500000000_rewnd".to_owned(), 1_767_500_000_000, cwd("/work/rewound")),
            ("cline:1767400000000_compa".to_owned(), 1_767_400_000_000, cwd("/work/cli-app")),
        ]
    );
    // An empty messages file is no session yet; a subagent's file is not
    // one of its own.
    assert_eq!(l.without_conversation.len(), 1);
    assert!(l.without_conversation[0].ends_with("1767800000000_empty/1767800000000_empty.messages.json"));
    let skipped = s.skipped();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    // The database was read, not written: no file appeared beside it.
    assert_eq!(names(&root), before);
}

#[test]
fn cline_cli_fixture_projects_exactly() {
    let (_dir, root) = sessions_dir();
    let s = CliSource::open(&root).unwrap();
    // The sidecar's hash matches the first four messages: its summary and
    // kept answer, then the rest; typed text without the CLI's wrappers
    // and mode notice; no reasoning, tool calls, tool output, attachment
    // or injected reminder.
    assert_eq!(
        conv(&s, "cline:1767400000000_compa"),
        json!({
            "session": {"id": "cline:1767400000000_compa", "cwd": "/work/cli-app"},
            "capturedThroughSeq": 7,
            "conversation": [
                {"role": "user", "text": "Context summary:\n\nThe user asked for a --verbose flag; the parser is in args.rs.", "checkpoint": true},
                {"role": "assistant", "text": "The flag is parsed in `args.rs`; adding it there."},
                {"role": "user", "text": "Also print the config path"},
                {"role": "assistant", "text": "Done: `--verbose` prints the config path."},
                {"role": "assistant", "text": "All set."},
            ],
        })
    );
    assert_eq!(s.read_title("cline:1767400000000_compa").unwrap().as_deref(), Some("Verbose flag for the CLI"));
    assert!(s.read("1767400000000_compa").unwrap().compacted);

    // Rewound: the sidecar was written for a longer history, so the whole
    // (shorter) history is sent. A number among the messages is skipped,
    // the torn last message dropped; resumption notices, the plan
    // approval prompt and an error shown to the user are the harness's.
    assert_eq!(
        conv(&s, "cline:1767500000000_rewnd"),
        json!({
            "session": {"id": "cline:1767500000000_rewnd", "cwd": "/work/rewound"},
            "capturedThroughSeq": 6,
            "conversation": [
                {"role": "user", "text": "/review look at parser.rs"},
                {"role": "assistant", "text": "Reviewing parser.rs."},
                {"role": "assistant", "text": "The review found two issues."},
            ],
        })
    );
    let rewound = s.read("1767500000000_rewnd").unwrap();
    assert_eq!((rewound.stats.lines, rewound.stats.skipped, rewound.compacted), (7, 1, false));
    assert_eq!(s.read_title("cline:1767500000000_rewnd").unwrap().as_deref(), Some("/review look at parser.rs"));

    // A sidecar without a hash, matched by its last message's id; no own
    // title: the first prompt typed.
    assert_eq!(
        conv(&s, "cline:1767600000000_legcy")["conversation"],
        json!([
            {"role": "user", "text": "Context summary:\n\nThe first exchange, summarized.", "checkpoint": true},
            {"role": "user", "text": "second prompt"},
            {"role": "assistant", "text": "second answer"},
        ])
    );
    assert_eq!(s.read_title("cline:1767600000000_legcy").unwrap().as_deref(), Some("first prompt"));

    // A basic compaction folded into the turn: the notice is a checkpoint
    // between the typed texts; a sidecar whose hash does not match is not
    // applied.
    assert_eq!(
        conv(&s, "cline:1767700000000_basic")["conversation"],
        json!([
            {"role": "user", "text": "Refactor the lexer"},
            {"role": "user", "text": "Earlier context was compacted. Summary of your actions after the request above:\nFiles read:\n/work/lexer/src/lex.rs", "checkpoint": true},
            {"role": "user", "text": "and keep the tests green"},
            {"role": "assistant", "text": "The lexer is refactored; tests pass."},
        ])
    );
    assert_eq!(s.read_title("cline:1767700000000_basic").unwrap().as_deref(), Some("Lexer refactor"));

    // A damaged file: its read says why; the others still read.
    let err = s.read_title("cline:1767900000000_broke").unwrap_err().message().to_owned();
    assert!(err.contains("1767900000000_broke.messages.json") && err.contains("not JSON of a messages file"), "{err}");
    assert!(s.read_title("cline:../1767400000000_compa").is_err());
    assert!(s.read_title("cline:1767000000000_none").is_err());
}

#[test]
fn cline_cli_published_sample_reads() {
    let (_dir, root) = sessions_dir();
    let s = CliSource::open(&root).unwrap();
    let id = "cline:1784094124598_rruoq";
    assert_eq!(
        s.read_title(id).unwrap().as_deref(),
        Some("can you update @apps/examples/desktop-app/webview/components/agent-sidebar.tsx so that the filter ic…")
    );
    let c = conv(&s, id);
    let items = c["conversation"].as_array().unwrap();
    // Five prompts typed, fourteen assistant texts (the two messages that
    // are only a tool call give none); no tool input, output or file.
    let typed: Vec<&str> = items.iter().filter(|i| i["role"] == "user").map(|i| i["text"].as_str().unwrap()).collect();
    assert_eq!(typed.len(), 5, "{typed:?}");
    assert_eq!(typed[0], "can you update @apps/examples/desktop-app/webview/components/agent-sidebar.tsx so that the filter icon comes after the Sessions text button");
    assert_eq!((typed[1], typed[4]), ("can you make the filter icon smaller?", "hello"));
    assert_eq!(items.len(), 19);
    assert_eq!(items.last().unwrap()["text"], "Hello! How can I assist you today?");
    assert!(items.iter().all(|i| !i["text"].as_str().unwrap().contains("useCallback")), "{items:?}");
    assert_eq!(c["capturedThroughSeq"], 31);
}

#[test]
fn cline_cli_fingerprints_follow_the_files_a_read_uses() {
    let (_dir, root) = sessions_dir();
    let s = CliSource::open(&root).unwrap();
    let ids = ["cline:1767400000000_compa".to_owned(), "cline:1767500000000_rewnd".to_owned()];
    let first = s.fingerprints(&ids).unwrap().unwrap();
    assert!(first.iter().all(Option::is_some));
    assert_eq!(s.fingerprints(&ids).unwrap().unwrap(), first);
    // The sidecar of one changes: only its fingerprint does.
    std::fs::remove_file(root.join("1767400000000_compa/1767400000000_compa.compaction.json")).unwrap();
    let after = s.fingerprints(&ids).unwrap().unwrap();
    assert_ne!(after[0], first[0]);
    assert_eq!(after[1], first[1]);
    // Without its sidecar the whole history is sent.
    assert_eq!(conv(&s, "cline:1767400000000_compa")["conversation"][0]["text"], "Add a --verbose flag to the CLI");
    // The session without a manifest follows sessions.db.
    let conn = Connection::open(root.join("sessions.db")).unwrap();
    conn.execute("UPDATE sessions SET cwd = '/work/moved' WHERE session_id = '1767500000000_rewnd'", []).unwrap();
    drop(conn);
    let moved = s.fingerprints(&ids).unwrap().unwrap();
    assert_ne!(moved[1], after[1]);
    assert_eq!(conv(&s, "cline:1767500000000_rewnd")["session"]["cwd"], "/work/moved");
}

#[test]
fn cline_kind_reads_either_layout_and_roots_one_level_off() {
    let (dir, root) = sessions_dir();
    // The sessions directory, its data directory and the Cline home.
    let data = dir.path().join("home/.cline/data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::rename(&root, data.join("sessions")).unwrap();
    for given in [data.join("sessions"), data.clone(), data.parent().unwrap().to_path_buf()] {
        let resolved = SourceSpec::new(SourceKind::Cline, &given).resolve().unwrap();
        assert_eq!(resolved.spec.root, data.join("sessions"), "{given:?}");
        assert_eq!(resolved.note.is_some(), given != data.join("sessions"));
        let multi = open_sources(&[resolved.spec]).unwrap();
        let ids: Vec<String> = block_on(multi.list_sessions()).unwrap().into_iter().map(|h| h.id).collect();
        assert_eq!(ids.len(), 6, "{ids:?}");
    }
    // The VS Code layout still reads as the kind's other root.
    let vs_code =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/foreign-logs/cline/saoudrizwan.claude-dev");
    let multi = open_sources(&[SourceSpec::new(SourceKind::Cline, vs_code)]).unwrap();
    let ids: Vec<String> = block_on(multi.list_sessions()).unwrap().into_iter().map(|h| h.id).collect();
    assert_eq!(ids, ["cline:1767200000000", "cline:1767000000000"]);
    // The default: VS Code's storage when it exists, else the CLI's.
    let home = dir.path().join("home");
    let env = |name: &str| match name {
        "HOME" => Some(home.clone().into_os_string()),
        _ => None,
    };
    assert_eq!(SourceKind::Cline.default_location_with(&env), data.join("sessions"));
    let custom = dir.path().join("custom");
    std::fs::create_dir_all(&custom).unwrap();
    let env2 = |name: &str| match name {
        "HOME" => Some(home.clone().into_os_string()),
        "CLINE_SESSION_DATA_DIR" => Some(custom.clone().into_os_string()),
        _ => None,
    };
    assert_eq!(SourceKind::Cline.default_location_with(&env2), custom);
    let storage = home.join(".config/Code/User/globalStorage/saoudrizwan.claude-dev");
    std::fs::create_dir_all(&storage).unwrap();
    if cfg!(target_os = "linux") {
        assert_eq!(SourceKind::Cline.default_location_with(&env), storage);
        let both = SourceKind::Cline.default_locations_with(&env);
        assert_eq!(both, [storage.clone(), data.join("sessions")], "every default location, VS Code's first");
    }
}

/// Both layouts of the kind at once (its two default locations, as the
/// fronts open them with no `--source`): every session of each listed under
/// `cline:`, each read from the root that holds it, fingerprints from there;
/// an id both hold listed once, read from the first, the other's copy named
/// in its note; the same root twice, or another kind twice, still refused.
#[test]
fn cline_kind_reads_both_layouts_as_one_source() {
    let (dir, cli_root) = sessions_dir();
    let vs_code = dir.path().join("saoudrizwan.claude-dev");
    copy_tree(&fixture().join("../cline/saoudrizwan.claude-dev"), &vs_code);
    let specs = [SourceSpec::new(SourceKind::Cline, &vs_code), SourceSpec::new(SourceKind::Cline, &cli_root)];
    let expected = [
        "cline:1784094124598_rruoq",
        "cline:1767900000000_broke",
        "cline:1767700000000_basic",
        "cline:1767600000000_legcy",
        "cline:1767500000000_rewnd",
        "cline:1767400000000_compa",
        "cline:1767200000000",
        "cline:1767000000000",
    ];
    // Reads before any listing find their root too.
    let multi = open_sources(&specs).unwrap();
    let title = block_on(multi.read_title("cline:1767400000000_compa")).unwrap();
    assert!(title.is_some_and(|t| !t.is_empty()));
    assert!(block_on(multi.read_surface("cline:1767000000000")).is_ok());
    let listed: Vec<String> = block_on(multi.list_sessions()).unwrap().into_iter().map(|h| h.id).collect();
    assert_eq!(listed, expected);
    let report = multi.last_report();
    let counts: Vec<(&str, Result<usize, String>)> =
        report.iter().map(|s| (s.name.as_str(), s.outcome.clone())).collect();
    assert_eq!(counts, [("cline", Ok(2)), ("cline", Ok(6))]);
    let alone = CliSource::open(&cli_root).unwrap();
    for id in expected {
        let read = block_on(multi.read_surface(id));
        if id.ends_with("_broke") {
            assert!(read.is_err(), "{id}: its damaged file is reported");
            continue;
        }
        assert!(read.is_ok(), "{id}: {:?}", read.err());
        if id.contains('_') {
            assert_eq!(block_on(multi.read_title(id)).unwrap(), alone.read_title(id).unwrap(), "{id}");
        }
    }
    let ids: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
    let prints = block_on(multi.fingerprints(&ids)).unwrap().unwrap();
    assert!(prints.iter().all(Option::is_some), "each root fingerprints its own: {prints:?}");
    let shared = block_on(multi.shared_listing()).unwrap().unwrap();
    let shared_ids: Vec<&str> = shared.sessions().iter().map(|h| h.id.as_str()).collect();
    assert_eq!(shared_ids, expected);
    assert!(shared.fingerprints().iter().all(Option::is_some));

    // A session of the CLI's with a VS Code task's id: listed once, from
    // the VS Code storage (the first root), the copy named.
    let twin = cli_root.join("1767000000000");
    std::fs::create_dir(&twin).unwrap();
    std::fs::copy(
        cli_root.join("1767600000000_legcy/1767600000000_legcy.messages.json"),
        twin.join("1767000000000.messages.json"),
    )
    .unwrap();
    let from_vs_code = block_on(multi.read_surface("cline:1767000000000")).ok().map(|s| format!("{s:?}"));
    for listing in [
        block_on(multi.list_sessions()).unwrap().into_iter().map(|h| h.id).collect::<Vec<_>>(),
        block_on(multi.shared_listing()).unwrap().unwrap().sessions().iter().map(|h| h.id.clone()).collect(),
    ] {
        assert_eq!(listing, expected, "listed once");
        let report = multi.last_report();
        assert_eq!(report[1].outcome, Ok(6));
        let note = report[1].note.clone().unwrap_or_default();
        assert!(note.contains("listed by an earlier cline source too, and read there: cline:1767000000000"), "{note}");
        assert_eq!(block_on(multi.read_surface("cline:1767000000000")).ok().map(|s| format!("{s:?}")), from_vs_code);
    }

    assert!(open_sources(&[specs[0].clone(), specs[0].clone()]).unwrap_err().contains("two cline sources"));
    let codex = [SourceSpec::new(SourceKind::Codex, "/a"), SourceSpec::new(SourceKind::Codex, "/b")];
    assert!(open_sources(&codex).unwrap_err().contains("two codex sources"));
}
