//! A long-lived store keeps its listing between calls (and, on Linux,
//! watches its root): after every kind of change under the root, its
//! listing, its reads and a resolver's filtered candidates over it are
//! exactly those of a store opened afresh. Both with watching and without.

mod common;
use common::{copy_dir, example_root, Unshared};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_session_reference::{
    block_on, BlockingSessionQuery, CandidateOptions, Config, DshStore, Resolver, SearchOptions, Target,
};

/// The store's shared listing is its `list_sessions` with its
/// `fingerprints`, and a watched store with nothing changed shares the
/// same one again.
fn shared_listing_agrees(kept: &DshStore, what: &str) {
    let Ok(Some(shared)) = BlockingSessionQuery::shared_listing(kept) else {
        assert!(kept.list().is_err(), "a store shares its listing whenever it can list ({what})");
        return;
    };
    let listed = BlockingSessionQuery::list_sessions(kept).unwrap();
    assert_eq!(shared.sessions(), &listed[..], "shared listing after {what}");
    let ids: Vec<String> = listed.iter().map(|s| s.id.clone()).collect();
    let fps = BlockingSessionQuery::fingerprints(kept, &ids).unwrap().unwrap();
    assert_eq!(shared.fingerprints(), &fps[..], "shared fingerprints after {what}");
    let again = BlockingSessionQuery::shared_listing(kept).unwrap().unwrap();
    if kept.is_watching() {
        assert!(again.ptr_eq(&shared), "nothing changed: the same listing is shared ({what})");
    } else {
        assert_eq!(again.sessions(), shared.sessions());
    }
}

fn first_line(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap().lines().next().unwrap().to_owned()
}

fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new().append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

/// A new valid session `id` in `project` (cwd `cwd`), with a title.
fn create_session(root: &Path, project: &str, cwd: &str, id: &str, title: &str) -> PathBuf {
    let dir = root.join(project).join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("session.jsonl");
    let header = serde_json::json!({"type": "session", "version": 0, "id": id, "createdAt": 1_800_000_000_000u64,
        "cwd": cwd, "delegationDepth": 0});
    let title = serde_json::json!({"type": "session/title", "seq": 1, "time": 1, "data": {"title": title}});
    std::fs::write(&path, format!("{header}\n{title}\n")).unwrap();
    path
}

/// The session logs of the root, in path order.
fn logs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for project in std::fs::read_dir(root).unwrap() {
        let project = project.unwrap().path();
        if !project.is_dir() {
            continue;
        }
        for session in std::fs::read_dir(&project).unwrap() {
            let log = session.unwrap().path().join("session.jsonl");
            if log.is_file() {
                out.push(log);
            }
        }
    }
    out.sort();
    out
}

/// The kept store and resolver agree with fresh ones: listing (sessions and
/// rejections, or the same error), a title read of every listed session,
/// and filtered candidates.
fn agree(kept: &DshStore, resolver: &Resolver, root: &Path, what: &str) {
    let fresh = DshStore::open(root).unwrap().with_watching(false);
    let (a, b) = (kept.list(), fresh.list());
    match (&a, &b) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "listing after {what}"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "listing error after {what}"),
        _ => panic!("after {what}: kept {a:?}, fresh {b:?}"),
    }
    let target = Target::new("someone-else", Some("/home/dev/alpha".into()));
    let fresh_resolver = Resolver::new(Arc::new(fresh.clone()), Config::default());
    for filter in ["", "e", "renamed"] {
        let kept_c = block_on(resolver.candidates(&target, filter, &CandidateOptions::default(), None))
            .map_err(|e| e.to_string());
        let fresh_c = block_on(fresh_resolver.candidates(&target, filter, &CandidateOptions::default(), None))
            .map_err(|e| e.to_string());
        assert_eq!(kept_c, fresh_c, "candidates {filter:?} after {what}");
    }
    shared_listing_agrees(kept, what);
    // A source without a shared listing gets the same answers.
    let plain = Resolver::new(Arc::new(Unshared(kept.clone())), Config::default());
    for filter in ["", "e"] {
        let shared_c = block_on(resolver.candidates(&target, filter, &CandidateOptions::default(), None))
            .map_err(|e| e.to_string());
        let plain_c =
            block_on(plain.candidates(&target, filter, &CandidateOptions::default(), None)).map_err(|e| e.to_string());
        assert_eq!(shared_c, plain_c, "candidates {filter:?} without the shared listing after {what}");
    }
    let options = SearchOptions::default();
    let shared_s = block_on(resolver.search(&target, "e", &options, None)).map_err(|e| e.to_string());
    let plain_s = block_on(plain.search(&target, "e", &options, None)).map_err(|e| e.to_string());
    assert_eq!(shared_s, plain_s, "search without the shared listing after {what}");
    if let Ok(listing) = b {
        for s in listing.sessions {
            let id = &s.header.id;
            assert_eq!(kept.read_title(id), fresh.read_title(id), "title of {id} after {what}");
            assert_eq!(kept.read_surface_json(id), fresh.read_surface_json(id), "surface of {id} after {what}");
        }
    }
    assert!(kept.read_title("no-such-session").is_err());
}

fn every_kind_of_change(watching: bool) {
    every_kind_of_change_of(watching, false);
}

/// `early`: the store watches from its first listing on.
fn every_kind_of_change_of(watching: bool, early: bool) {
    let tmp = example_root();
    let root = tmp.path();
    let mut kept = DshStore::open(root).unwrap().with_watching(watching);
    if early {
        kept = kept.watching_from_first_listing();
    }
    let resolver = Resolver::new(Arc::new(kept.clone()), Config::default());
    agree(&kept, &resolver, root, "nothing");
    if watching && early && cfg!(target_os = "linux") && std::env::var_os("DSR_NO_WATCH").is_none() {
        assert!(kept.is_watching(), "watching from the first listing on");
    }
    agree(&kept, &resolver, root, "nothing, twice");
    if watching && cfg!(target_os = "linux") && std::env::var_os("DSR_NO_WATCH").is_none() {
        assert!(kept.is_watching(), "a store watches from its second listing on");
    } else {
        assert!(!kept.is_watching());
    }
    let all = logs(root);
    assert!(all.len() >= 4, "{all:?}");

    // An appended title.
    let title =
        serde_json::json!({"type": "session/title", "seq": 999_999, "time": 1, "data": {"title": "renamed one"}});
    append(&all[0], &format!("{title}\n"));
    agree(&kept, &resolver, root, "an appended title");

    // A log truncated to its header.
    let header = first_line(&all[1]);
    std::fs::write(&all[1], format!("{header}\n")).unwrap();
    agree(&kept, &resolver, root, "a truncated log");

    // A log replaced by rename (a new inode), with a different title.
    let tmp_log = all[2].with_file_name("session.jsonl.tmp");
    let renamed =
        serde_json::json!({"type": "session/title", "seq": 999_999, "time": 1, "data": {"title": "renamed two"}});
    std::fs::write(&tmp_log, format!("{}\n{renamed}\n", first_line(&all[2]))).unwrap();
    std::fs::rename(&tmp_log, &all[2]).unwrap();
    agree(&kept, &resolver, root, "a replaced log");

    // A log whose header breaks (rejected), then mended.
    let good = std::fs::read(&all[3]).unwrap();
    std::fs::write(&all[3], b"not json\n").unwrap();
    agree(&kept, &resolver, root, "a broken header");
    std::fs::write(&all[3], &good).unwrap();
    agree(&kept, &resolver, root, "a mended header");

    // A new session in an existing project, and one in a new project.
    create_session(root, "--home-dev-alpha--", "/home/dev/alpha", "fresh-one", "renamed three");
    agree(&kept, &resolver, root, "a new session");
    create_session(root, "--home-dev-gamma--", "/home/dev/gamma", "fresh-two", "renamed four");
    agree(&kept, &resolver, root, "a new project");

    // A session directory renamed (its path no longer matches its header).
    let moved = root.join("--home-dev-alpha--").join("fresh-moved");
    std::fs::rename(root.join("--home-dev-alpha--").join("fresh-one"), &moved).unwrap();
    agree(&kept, &resolver, root, "a renamed session directory");

    // A newer generation beside a log (it becomes the session's log).
    let v1 = all[0].with_file_name("session.v1.jsonl");
    let mut header: serde_json::Value = serde_json::from_str(&first_line(&all[0])).unwrap();
    header["version"] = 1.into();
    std::fs::write(&v1, format!("{header}\n")).unwrap();
    agree(&kept, &resolver, root, "a newer generation");
    std::fs::remove_file(&v1).unwrap();
    agree(&kept, &resolver, root, "the newer generation removed");

    // A session directory deleted, then one replaced by a directory of the
    // same name holding another log.
    std::fs::remove_dir_all(moved).unwrap();
    agree(&kept, &resolver, root, "a deleted session directory");
    let dir = all[1].parent().unwrap().to_path_buf();
    let keep = std::fs::read(&all[0]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("session.jsonl"), &keep).unwrap();
    agree(&kept, &resolver, root, "a session directory replaced");

    // A symbolic link in place of a session directory (reported, not followed).
    #[cfg(unix)]
    {
        let gamma = root.join("--home-dev-gamma--");
        std::fs::rename(gamma.join("fresh-two"), root.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), gamma.join("fresh-two")).unwrap();
        agree(&kept, &resolver, root, "a link in place of a session directory");
    }

    // A compressed log in a plain root: the root is refused, then fine again.
    let zst = all[3].with_file_name("session.v2.jsonl.zstd");
    std::fs::write(&zst, zstd::encode_all(&good[..], 3).unwrap()).unwrap();
    agree(&kept, &resolver, root, "a root that mixes encodings");
    std::fs::remove_file(&zst).unwrap();
    agree(&kept, &resolver, root, "the mixed root mended");

    // Many changes at once, then nothing.
    for (i, log) in logs(root).iter().enumerate() {
        let t = serde_json::json!({"type": "session/title", "seq": 1_000_000 + i, "time": 1, "data": {"title": format!("renamed {i}")}});
        append(log, &format!("{t}\n"));
    }
    agree(&kept, &resolver, root, "every log appended to");
    agree(&kept, &resolver, root, "nothing after that");
}

#[test]
fn a_watched_store_agrees_with_a_fresh_one_after_every_kind_of_change() {
    every_kind_of_change(true);
}

#[test]
fn an_unwatched_store_agrees_with_a_fresh_one_after_every_kind_of_change() {
    every_kind_of_change(false);
}

#[test]
fn a_store_watched_from_its_first_listing_agrees_with_a_fresh_one_after_every_kind_of_change() {
    every_kind_of_change_of(true, true);
}

/// `watching_from_first_listing` gives way to `with_watching(false)`.
#[test]
fn a_store_watched_from_its_first_listing_can_still_be_unwatched() {
    every_kind_of_change_of(false, true);
}

#[test]
fn a_removed_or_replaced_root_is_noticed() {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("root");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sessions"), &root);
    let link = parent.path().join("link");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&root, &link).unwrap();
    #[cfg(not(unix))]
    return;
    let kept = DshStore::open(&link).unwrap();
    let before = kept.list().unwrap();
    kept.list().unwrap();
    // The link now names another root with one session.
    let other = parent.path().join("other");
    create_session(&other, "--x--", "/x", "only-one", "t");
    std::fs::remove_file(&link).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&other, &link).unwrap();
    let after = kept.list().unwrap();
    assert_ne!(before, after);
    assert_eq!(after, DshStore::open(&link).unwrap().list().unwrap());
    // The root removed: listing fails, as a fresh walk would.
    std::fs::remove_dir_all(&other).unwrap();
    assert!(kept.list().is_err());
}
