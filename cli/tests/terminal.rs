//! What reaches a terminal: every line written
//! for a person escapes control and invisible characters — message texts
//! of `show` and `read`, the message of `prepare`, candidates, search,
//! `error:` lines, notes and warnings — while `--json` stays exact (under
//! `--escape-invisible` with invisible characters as `\uXXXX` escapes,
//! which parse back to the same text); and the `--cache` directory is
//! private and refused when it cannot be trusted.

mod common;

use std::path::Path;

use common::{cmd, run, run_with, Out};
use serde_json::{json, Value};

/// What must never reach a terminal raw: control characters but line feeds
/// and tabs (ESC starts CSI and OSC, U+009B is the 8-bit CSI), and
/// bidirectional, zero-width, tag characters and variation selectors.
fn drives_or_hides(s: &str) -> Option<char> {
    s.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c as u32, 0x200B..=0x200F | 0x202A..=0x202E | 0x2066..=0x2069 | 0xFEFF | 0xFE00..=0xFE0F
                | 0x2800 | 0xE0000..=0xE007F)
    })
}

fn assert_clean(out: &Out, what: &str) {
    for (name, s) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if let Some(c) = drives_or_hides(s) {
            panic!("{what}: {name} holds U+{:04X} raw: {s:?}", c as u32);
        }
    }
}

/// A hostile text: OSC (set the title), CSI (colour, clear the screen), the
/// 8-bit CSI, a bidirectional override, a zero-width space, a variation
/// selector and the braille blank.
const HOSTILE: &str = "pwn\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m\u{202e}txt\u{200b}\u{fe0f}\u{2800}end";

/// A DSH root with one session whose messages and title are hostile.
fn hostile_root() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("_no-cwd").join("evil");
    std::fs::create_dir_all(&dir).unwrap();
    let header = json!({"type": "session", "version": 0, "id": "evil", "createdAt": 1, "delegationDepth": 0});
    let user = json!({"seq": 0, "time": 1, "type": "user/message", "surfaceOp": "append",
        "data": {"role": "user", "content": [{"type": "text", "text": format!("first {HOSTILE}")}], "source": {"kind": "user"}}});
    let assistant = json!({"seq": 1, "time": 2, "type": "assistant/message", "surfaceOp": "append",
        "data": {"message": {"role": "assistant", "content": [{"type": "text", "text": format!("reply {HOSTILE}")}]}}});
    let title = json!({"seq": 2, "time": 3, "type": "session/title", "data": {"title": format!("title {HOSTILE}"), "messageSeqs": [0]}});
    std::fs::write(dir.join("session.jsonl"), format!("{header}\n{user}\n{assistant}\n{title}\n")).unwrap();
    tmp
}

#[test]
fn every_human_output_escapes_what_could_drive_the_terminal() {
    let tmp = hostile_root();
    let root = tmp.path().to_str().unwrap();
    let mention = run(&["--root", root, "mention", "evil", "--label", HOSTILE]).stdout;
    // Through a pipe the mention is exact (a program reads it).
    assert!(mention.contains("pwn\u{1b}") && mention.contains('\u{9b}'), "{mention:?}");
    let message = format!("see {} {HOSTILE}", mention.trim_end());
    for hardened in [false, true] {
        let flag: &[&str] = if hardened { &["--hardened"] } else { &[] };
        for args in [
            vec!["show", "evil"],
            vec!["read", "evil"],
            vec!["candidates", "--target", "t"],
            vec!["candidates", "--target", "t", "--query", "pwn"],
            vec!["search", "--target", "t", "pwn"],
            vec!["prepare", "--target", "t", "--message", &message],
        ] {
            let out = run(&[&["--root", root][..], flag, &args].concat());
            assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
            assert_clean(&out, &format!("{args:?} hardened={hardened}"));
            assert!(out.stdout.contains("pwn") || out.stdout.contains("No "), "{args:?}: {}", out.stdout);
        }
    }
    // The texts are there, escaped so that they can be seen.
    let shown = run(&["--root", root, "show", "evil"]).stdout;
    assert!(
        shown.contains(r"pwn\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m\u{202e}txt\u{200b}\u{fe0f}\u{2800}end"),
        "{shown}"
    );
}

#[test]
fn error_lines_and_notes_escape_paths_and_ids() {
    let tmp = tempfile::tempdir().unwrap();
    // A root chosen by someone else's naming: an escape in a directory name.
    let evil = tmp.path().join("logs\u{1b}]0;owned\u{7}\u{9b}2J");
    std::fs::create_dir_all(&evil).unwrap();
    let root = evil.to_str().unwrap();
    let empty = run(&["--root", root, "candidates", "--target", "t"]);
    assert_eq!(empty.code, 0, "{}", empty.stderr);
    assert!(empty.stderr.contains("note: ") && empty.stderr.contains(r"logs\u{1b}]0;owned"), "{:?}", empty.stderr);
    assert_clean(&empty, "note");
    for args in [
        vec!["show", "id\u{1b}[31m\u{9b}x"],
        vec!["read", "id\u{1b}[31m\u{9b}x"],
        vec!["uri", "decode", "dsh-session:%1B%5B2J"],
    ] {
        let out = run(&[&["--root", root][..], &args].concat());
        assert_eq!(out.code, 1, "{args:?}");
        assert!(out.stderr.starts_with("error: SESSION_REFERENCE_"), "{args:?}: {}", out.stderr);
        assert_clean(&out, &format!("{args:?}"));
    }
    let missing = tmp.path().join("gone\u{1b}[2J");
    let out = run(&["--root", missing.to_str().unwrap(), "candidates", "--target", "t"]);
    assert_clean(&out, "a missing root");
}

#[test]
fn json_stays_exact_and_escapes_invisible_characters_only_when_hardened() {
    let tmp = hostile_root();
    let root = tmp.path().to_str().unwrap();
    let plain = run(&["--root", root, "--json", "show", "evil"]);
    let value: Value = serde_json::from_str(&plain.stdout).unwrap();
    assert_eq!(value["messages"][1]["text"], format!("reply {HOSTILE}"), "exact");
    // JSON.stringify escapes C0; the rest is raw, as the reference writes it.
    assert!(plain.stdout.contains('\u{202e}') && plain.stdout.contains('\u{9b}'));
    for args in [vec!["show", "evil"], vec!["search", "--target", "t", "pwn"], vec!["read", "evil"]] {
        let hard = run(&[&["--root", root, "--json", "--hardened"][..], &args].concat());
        assert_eq!(hard.code, 0, "{args:?}: {}", hard.stderr);
        assert_clean(&hard, &format!("{args:?} --json --hardened"));
        let escaped = run(&[&["--root", root, "--json", "--escape-invisible"][..], &args].concat());
        let exact = run(&[&["--root", root, "--json"][..], &args].concat());
        // The same value once parsed (a page's framed text is the
        // core's, escaped under the option; its messages are not).
        let (mut a, mut b): (Value, Value) =
            (serde_json::from_str(&escaped.stdout).unwrap(), serde_json::from_str(&exact.stdout).unwrap());
        if args[0] == "read" {
            (a, b) = (a["messages"].take(), b["messages"].take());
        }
        assert_eq!(a, b, "{args:?}");
        assert!(escaped.stdout.contains(r"\u202e") && !escaped.stdout.contains('\u{202e}'), "{args:?}");
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
#[test]
fn the_cache_directory_is_private_and_refused_when_it_cannot_be_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = hostile_root();
    let root = tmp.path().to_str().unwrap();
    let search = ["--root", root, "--cache", "search", "--target", "t", "pwn"];
    let candidates = ["--root", root, "--cache", "candidates", "--target", "t", "--query", "pwn"];
    let with_cache = |home: &Path, args: &[&str]| {
        let mut c = cmd();
        c.env("XDG_CACHE_HOME", home);
        run_with(c, args, None)
    };

    // Made private: the directory 0700, each file 0600.
    let home = tempfile::tempdir().unwrap();
    for args in [&search[..], &candidates[..]] {
        let out = with_cache(home.path(), args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    }
    let dir = home.path().join("dsh-session-reference");
    assert_eq!(mode(&dir), 0o700);
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 3, "{files:?}");
    for f in &files {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }
    // A directory of an older version (0755) is made private.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(with_cache(home.path(), &search).code, 0);
    assert_eq!(mode(&dir), 0o700);

    // A symbolic link (into a sessions root, say): refused, nothing written there.
    let linked = tempfile::tempdir().unwrap();
    let target = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(target.path(), linked.path().join("dsh-session-reference")).unwrap();
    let out = with_cache(linked.path(), &search);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("warning: not caching:") && out.stderr.contains("symbolic link"), "{}", out.stderr);
    assert!(out.stdout.contains("pwn"), "the answer comes without the cache");
    assert_eq!(std::fs::read_dir(target.path()).unwrap().count(), 0, "nothing written through the link");

    // Writable by others: refused, left as it is.
    let shared = tempfile::tempdir().unwrap();
    let open = shared.path().join("dsh-session-reference");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = with_cache(shared.path(), &candidates);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("writable by others"), "{}", out.stderr);
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);
    assert_eq!(mode(&open), 0o777);
}
