//! Claude Code transcripts and Codex rollouts that are hostile or merely
//! big: what a read makes is bounded by what it reads, its work (counted,
//! not timed) is linear in it, and a read goes straight to the
//! file its listing found.

use std::path::Path;

use dsh_session_reference::sources::claude_code::ClaudeCodeSource;
use dsh_session_reference::sources::codex::CodexSource;
use dsh_session_reference::{work, BlockingSessionQuery};

const STEM: &str = "0000aaaa-0000-4000-8000-000000000001";
const CODEX_ID: &str = "0199aaaa-0000-7000-8000-000000000001";

fn ts(i: usize) -> String {
    format!("2026-01-01T{:02}:{:02}:{:02}.{:03}Z", i / 3_600_000 % 24, i / 60_000 % 60, i / 1000 % 60, i % 1000)
}

/// A Claude Code chain line (`user` or `assistant`) as Claude Code writes it.
fn chain(kind: &str, uuid: &str, parent: Option<&str>, i: usize, msg_id: &str, text: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"{kind}","uuid":"{uuid}","parentUuid":{parent},"timestamp":"{}","cwd":"/w","message":{{"id":"{msg_id}","role":"{kind}","content":[{{"type":"text","text":{}}}]}}}}"#,
        ts(i),
        serde_json::to_string(text).unwrap()
    ) + "\n"
}

/// Writes `text` as the one transcript of a projects root.
fn claude_root(text: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("-w")).unwrap();
    std::fs::write(root.path().join(format!("-w/{STEM}.jsonl")), text).unwrap();
    root
}

fn claude_read(root: &Path) -> Vec<(String, String)> {
    let s = ClaudeCodeSource::open(root).unwrap().with_watching(false);
    let c = s.conversation(&format!("claude-code:{STEM}")).unwrap();
    c.items.into_iter().map(|i| (i.role.as_str().to_owned(), i.text)).collect()
}

/// A read of `text` as a transcript that `check`s what it gives.
fn claude_case(text: &str, check: impl Fn(Vec<(String, String)>) + 'static) -> Box<dyn Fn()> {
    let root = claude_root(text);
    Box::new(move || check(claude_read(root.path())))
}

/// Writes a rollout of `lines` (after its header) as the one session of a
/// Codex home.
fn codex_home(lines: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions/2026/01/01");
    std::fs::create_dir_all(&dir).unwrap();
    let meta = format!(
        r#"{{"timestamp":"{}","type":"session_meta","payload":{{"id":"{CODEX_ID}","timestamp":"{}","cwd":"/w"}}}}"#,
        ts(0),
        ts(0)
    );
    std::fs::write(dir.join(format!("rollout-2026-01-01T00-00-00-{CODEX_ID}.jsonl")), format!("{meta}\n{lines}"))
        .unwrap();
    home
}

fn codex_read(home: &Path) -> Vec<(String, String)> {
    let s = CodexSource::open(home).unwrap();
    let c = s.conversation(&format!("codex:{CODEX_ID}")).unwrap();
    c.items.into_iter().map(|i| (i.role.as_str().to_owned(), i.text)).collect()
}

fn codex_user(i: usize) -> String {
    format!(
        r#"{{"timestamp":"{}","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"u{i}"}}]}}}}"#,
        ts(i)
    ) + "\n"
}

/// The steps (`work::steps`: lines read, and the steps of the joins,
/// placements, roll-backs and look-ups that once were quadratic) `f` takes
/// on this thread.
fn steps(f: &dyn Fn()) -> u64 {
    let before = work::steps();
    f();
    work::steps() - before
}

/// Reading an input of size `2n` takes at most 2.5 times the steps of one
/// of size `n` (a quadratic read takes four times as many, and these sizes
/// took seconds before). Counted, not timed: a loaded machine cannot fail
/// it.
fn assert_linear(what: &str, n: usize, read_of: impl Fn(usize) -> Box<dyn Fn()>) {
    let (small, big) = (steps(&*read_of(n)), steps(&*read_of(2 * n)));
    assert!(small >= n as u64, "{what}: {small} steps counted for {n}: the work ran on another thread");
    assert!(2 * big <= 5 * small, "{what}: {n} took {small} steps, {} took {big}", 2 * n);
}

/// A compaction boundary whose `preservedMessages.uuids` names one 1 MiB
/// message 4,000 times keeps it once: the conversation stays about the size
/// of the file, not 4 GB (which `prepare` took before).
#[test]
fn a_preserved_list_naming_one_message_4000_times_keeps_it_once() {
    let big = "x".repeat(1 << 20);
    let ids = vec!["\"U\""; 4000].join(",");
    let text = [
        chain("user", "U", None, 1, "", &big),
        format!(
            r#"{{"type":"system","subtype":"compact_boundary","uuid":"B","parentUuid":null,"timestamp":"{}","compactMetadata":{{"preservedMessages":{{"anchorUuid":"S","uuids":[{ids}]}}}}}}"#,
            ts(2)
        ) + "\n",
        chain("user", "S", Some("B"), 3, "", "summary").replace(r#""cwd""#, r#""isCompactSummary":true,"cwd""#),
        chain("assistant", "A", Some("S"), 4, "m1", "ok"),
    ]
    .concat();
    let root = claude_root(&text);
    let before = work::steps();
    let items = claude_read(root.path());
    let taken = work::steps() - before;
    let bytes: usize = items.iter().map(|(_, t)| t.len()).sum();
    assert!(bytes <= text.len(), "{bytes} bytes of items from a file of {}", text.len());
    let roles: Vec<&str> = items.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["user", "user", "assistant"]);
    assert_eq!((items[0].1.as_str(), items[1].1.len()), ("summary", 1 << 20));
    // Steps in the order of the bytes and names read (the text's scan
    // for tags and the list walked once), not of names times copies.
    assert!(taken <= 5 * text.len() as u64, "{taken} steps for a file of {}", text.len());
}

/// Many lines of one `message.id` (one response, one line per block) are
/// joined in linear time (each was looked for among the others before).
#[test]
fn lines_of_one_message_id_join_in_linear_time() {
    assert_linear("lines of one message id", 20_000, |n| {
        let mut text = chain("user", "u", None, 0, "", "hi");
        for i in 0..n {
            let parent = if i == 0 { "u".to_owned() } else { format!("a{}", i - 1) };
            text += &chain("assistant", &format!("a{i}"), Some(&parent), i + 1, "same", &format!("part {i}"));
        }
        claude_case(&text, |items| assert_eq!(items.len(), 2))
    });
}

/// Prompts delivered while the model worked are placed in linear time
/// (each was inserted into the conversation in turn before), and a
/// delivery looks its prompt up in the queue in constant time.
#[test]
fn steering_prompts_are_placed_in_linear_time() {
    assert_linear("steering prompts", 10_000, |n| {
        let mut text = String::new();
        for i in 0..n {
            let parent = (i > 0).then(|| format!("u{}", i - 1));
            text += &chain("user", &format!("u{i}"), parent.as_deref(), 2 * i * 1000, "", &format!("q{i}"));
        }
        let queue = |op: &str, at: usize, content: String| {
            format!(r#"{{"type":"queue-operation","operation":"{op}","timestamp":"{}","content":"{content}"}}"#, ts(at))
                + "\n"
        };
        text.extend((0..n).map(|i| queue("enqueue", 1, format!("never delivered {i}"))));
        text.extend((0..n).map(|i| queue("remove", 2 * i * 1000 + 1000, format!("steer {i}"))));
        claude_case(&text, move |items| {
            assert_eq!(items.len(), 2 * n);
            assert_eq!((items[1].1.as_str(), items[2 * n - 1].1.as_str()), ("steer 0", &*format!("steer {}", n - 1)));
        })
    });
}

/// Unclosed `<system-reminder>` tags in a prompt are read in linear time
/// (each searched the rest of the text for its closing tag before: 0.9 MB
/// took 105 s in `prepare`).
#[test]
fn unclosed_reminder_tags_are_read_in_linear_time() {
    assert_linear("unclosed reminder tags", 10_000, |n| {
        let text = chain("user", "u", None, 0, "", &"<system-reminder> ".repeat(n));
        claude_case(&text, |items| assert_eq!(items.len(), 1))
    });
}

/// Codex rollbacks cost what they drop (each listed every user turn of the
/// history before: 43 MB took 18 s), and compactions without a replacement
/// history what they keep.
#[test]
fn codex_rollbacks_and_compactions_take_linear_time() {
    assert_linear("rollbacks", 20_000, |n| {
        let rollback = r#"{"type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":1}}"#;
        let round = |i: usize| format!("{}{}{rollback}\n", codex_user(2 * i), codex_user(2 * i + 1));
        let lines: String = (0..n).map(round).collect();
        let home = codex_home(&lines);
        Box::new(move || assert_eq!(codex_read(home.path()).len(), n))
    });
    assert_linear("compactions", 10_000, |n| {
        let mut lines: String = (0..n).map(codex_user).collect();
        for _ in 0..n {
            lines += r#"{"type":"compacted","payload":{"message":"summary"}}"#;
            lines += "\n";
        }
        let home = codex_home(&lines);
        Box::new(move || assert_eq!(codex_read(home.path()).len(), n + 1))
    });
}

/// A read goes to the transcript its listing found: a transcript of the
/// same name in a project directory made since (before the listed one in
/// byte order) is not the one read.
#[test]
fn a_read_goes_to_the_transcript_its_listing_found() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("-z")).unwrap();
    std::fs::write(root.path().join(format!("-z/{STEM}.jsonl")), chain("user", "u", None, 0, "", "listed")).unwrap();
    let s = ClaudeCodeSource::open(root.path()).unwrap().with_watching(false);
    assert_eq!(s.list_sessions().unwrap().len(), 1);
    std::fs::create_dir(root.path().join("-a")).unwrap();
    std::fs::write(root.path().join(format!("-a/{STEM}.jsonl")), chain("user", "u", None, 0, "", "made since"))
        .unwrap();
    let id = format!("claude-code:{STEM}");
    assert_eq!(s.read_title(&id).unwrap().as_deref(), Some("listed"));
    assert_eq!(s.conversation(&id).unwrap().items[0].text, "listed");
    // Once the listed one is gone, the read looks for it.
    std::fs::remove_file(root.path().join(format!("-z/{STEM}.jsonl"))).unwrap();
    assert_eq!(s.conversation(&id).unwrap().items[0].text, "made since");
}

/// Title reads of 800 sessions in 200 project directories take at most
/// twice the steps they take in one (each looked in every project directory
/// before: 8,000 sessions in 400 took 254 s in `candidates --query`).
#[test]
fn title_reads_do_not_grow_with_project_directories() {
    // A root of `dirs` project directories with `per` sessions in each,
    // and one round of title reads over it (after a listing, by a new
    // source).
    let root_of = |dirs: usize, per: usize| -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let mut k = 0;
        for d in 0..dirs {
            let dir = root.path().join(format!("-p{d:04}"));
            std::fs::create_dir(&dir).unwrap();
            for _ in 0..per {
                k += 1;
                let text = chain("user", "u", None, k, "", &format!("prompt {k}"));
                std::fs::write(dir.join(format!("{k:08x}-0000-4000-8000-000000000000.jsonl")), text).unwrap();
            }
        }
        root
    };
    let round = |root: &Path| -> u64 {
        let s = ClaudeCodeSource::open(root).unwrap().with_watching(false);
        let listed = s.list_sessions().unwrap();
        assert_eq!(listed.len(), 800);
        steps(&|| {
            for h in &listed {
                assert!(s.read_title(&h.id).unwrap().is_some());
            }
        })
    };
    let (one, many) = (round(root_of(1, 800).path()), round(root_of(200, 4).path()));
    assert!(one >= 800, "{one} steps for 800 title reads: the work ran on another thread");
    assert!(many <= 2 * one, "1 directory: {one} steps; 200: {many}");
}
