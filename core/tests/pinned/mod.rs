//! What the tests of file-per-session sources share: the foreign-logs
//! fixtures, a conversation as `(is_user, text, checkpoint)` triples, and a
//! source's whole listing checked against pinned sessions.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use dsh_session_reference::sources::files::{FileSessions, SessionFiles};
use dsh_session_reference::{BlockingSessionQuery, ConversationItem, SurfaceData};

pub const U: bool = true;
pub const A: bool = false;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/foreign-logs")
}

/// `(is_user, text, checkpoint)` of each item.
pub fn items(list: &[ConversationItem]) -> Vec<(bool, String, bool)> {
    list.iter().map(|i| (i.role.as_str() == "user", i.text.clone(), i.checkpoint)).collect()
}

pub fn m(user: bool, text: &str) -> (bool, String, bool) {
    (user, text.to_owned(), false)
}

pub fn cp(text: &str) -> (bool, String, bool) {
    (U, text.to_owned(), true)
}

/// One pinned session: id, createdAt, listed cwd, read cwd, title,
/// capturedThroughSeq, items.
pub struct Pinned<'a> {
    pub id: &'a str,
    pub created_at: u64,
    pub listed_cwd: Option<&'a str>,
    pub cwd: Option<&'a str>,
    pub title: Option<&'a str>,
    pub seq: u64,
    pub items: Vec<(bool, String, bool)>,
}

/// The listing of `source` is exactly `want` (in order, nothing rejected),
/// and each session reads as pinned.
pub fn check<F: SessionFiles>(source: &FileSessions<F>, want: &[Pinned<'_>]) {
    let listing = source.list().unwrap();
    assert!(listing.rejected.is_empty(), "{:?}", listing.rejected);
    let listed: Vec<(String, u64, Option<String>)> = listing
        .sessions
        .iter()
        .map(|s| (s.header.id.clone(), s.header.created_at.as_u64().unwrap(), s.header.cwd.clone()))
        .collect();
    let ids: Vec<&str> = listed.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(ids, want.iter().map(|p| p.id).collect::<Vec<_>>(), "listing order");
    for (p, (id, created, cwd)) in want.iter().zip(&listed) {
        assert_eq!((*created, cwd.as_deref()), (p.created_at, p.listed_cwd), "{id}");
        assert_eq!(source.read_title(id).unwrap().as_deref(), p.title, "{id}");
        let SurfaceData::Conversation(c) = source.read_surface(id).unwrap() else { panic!("{id}: not a conversation") };
        assert_eq!(c.session_id, p.id);
        assert_eq!(c.cwd.as_deref(), p.cwd, "{id}");
        assert_eq!(c.captured_through_seq.as_ref().and_then(|n| n.as_u64()), Some(p.seq), "{id}");
        assert_eq!(items(&c.items), p.items, "{id}");
    }
}

pub fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A file's creation time (ms) where the system keeps one, else its
/// modification time: the `createdAt` of a transcript that records none.
pub fn born_ms(path: &Path) -> u64 {
    let meta = std::fs::metadata(path).unwrap();
    let t = meta.created().or_else(|_| meta.modified()).unwrap();
    t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}
