//! The cache files are private and distrusted: written
//! 0600 in a directory made 0700; a directory that is a symbolic link,
//! another user's or writable by others is refused; a file another user
//! could have written is ignored; a small file never decompresses into
//! much memory; under `redactSecrets` the titles file holds no credential;
//! a deleted session does not outlive a rewrite of the files.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use dsh_session_reference::fs::private_dir;
use dsh_session_reference::{
    block_on, CandidateOptions, Config, DiscoveryCachePart, DshStore, MemoryQuery, Resolver, SearchOptions,
    SessionHeader, Target,
};
use serde_json::json;

/// Counts the bytes held, and the most held since [`Peak::reset`].
struct Peak;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to `System` as it came; only counters change
// (the default `realloc` goes through `alloc` and `dealloc`).
unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(held, Ordering::Relaxed);
        // SAFETY: the caller's `layout`, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with this `layout` (above).
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Peak = Peak;

/// The most bytes held while `f` ran, above what was held before.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(before))
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn session(q: &MemoryQuery, id: &str, title: &str, text: &str) {
    q.add_session(SessionHeader::new(id, 1_700_000_000_000u64, Some("/work".into())));
    q.set_title(id, Some(title.into()));
    q.set_surface(
        id,
        json!({
            "session": {"id": id, "createdAt": 1_700_000_000_000u64, "cwd": "/work"},
            "capturedThroughSeq": 0,
            "events": [{"seq": 0, "type": "user/message", "data": {"role": "user",
                "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}}]
        }),
    );
}

fn target() -> Target {
    Target::new("me", Some("/work".into()))
}

fn search(r: &Resolver, query: &str) -> Vec<String> {
    let found = block_on(r.search(&target(), query, &SearchOptions::default(), None)).unwrap();
    found.into_iter().map(|f| f.candidate.session_id).collect()
}

fn candidates(r: &Resolver, query: &str) -> Vec<String> {
    let list = block_on(r.candidates(&target(), query, &CandidateOptions::default(), None)).unwrap();
    list.into_iter().map(|c| c.label).collect()
}

#[cfg(unix)]
#[test]
fn cache_directories_are_made_0700_and_files_written_0600() {
    let tmp = tempfile::tempdir().unwrap();
    // `$XDG_CACHE_HOME` missing, two levels of it: every directory made
    // is 0700 (the XDG base directory included); the one above is left.
    set_mode(tmp.path(), 0o755);
    let dir = tmp.path().join("xdg").join("cache").join("dsh-session-reference");
    private_dir(&dir).unwrap();
    for made in [dir.as_path(), dir.parent().unwrap(), dir.parent().unwrap().parent().unwrap()] {
        assert_eq!(mode(made), 0o700, "{}", made.display());
    }
    assert_eq!(mode(tmp.path()), 0o755, "an existing directory above is left as it is");
    // An existing directory of ours that others may read is made private.
    let open = tmp.path().join("open");
    std::fs::create_dir(&open).unwrap();
    set_mode(&open, 0o755);
    private_dir(&open).unwrap();
    assert_eq!(mode(&open), 0o700);

    let q = Arc::new(MemoryQuery::new());
    session(&q, "a", "Alpha", "alpha text");
    let r = Resolver::new(q.clone(), Config::default());
    assert_eq!(search(&r, "alpha"), ["a"]);
    candidates(&r, "alp");
    for part in [DiscoveryCachePart::Titles, DiscoveryCachePart::Index] {
        let path = dir.join(format!("{part:?}.bin"));
        r.save_discovery_cache(part, &path).unwrap();
        assert_eq!(mode(&path), 0o600, "{part:?}");
    }
    let store = DshStore::open(tmp.path()).unwrap();
    let listing = dir.join("listing.bin");
    store.save_listing_cache(&listing).unwrap();
    assert_eq!(mode(&listing), 0o600);
}

#[cfg(unix)]
#[test]
fn a_symlinked_or_shared_cache_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    // A link, even to a directory of ours (a sessions root, say).
    let real = tmp.path().join("root");
    std::fs::create_dir(&real).unwrap();
    set_mode(&real, 0o700);
    let link = tmp.path().join("dsh-session-reference");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let why = private_dir(&link).unwrap_err();
    assert!(why.contains("symbolic link"), "{why}");
    // Writable by the group or by others.
    for m in [0o770, 0o707, 0o777] {
        set_mode(&real, m);
        let why = private_dir(&real).unwrap_err();
        assert!(why.contains("writable by others"), "{m:o}: {why}");
        assert_eq!(mode(&real), m, "left as it was");
    }
    // Not a directory.
    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    assert!(private_dir(&file).unwrap_err().contains("not a directory"));
}

#[cfg(unix)]
#[test]
fn another_users_cache_directory_and_files_are_refused() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let me = std::fs::metadata(tmp.path()).unwrap().uid();
    if me != 0 {
        // Not root: no directory can be given away; the root directory is
        // another user's (root's), not writable by us.
        let why = private_dir(Path::new("/")).unwrap_err();
        assert!(why.contains("another user"), "{why}");
        return;
    }
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    set_mode(&theirs, 0o700);
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let why = private_dir(&theirs).unwrap_err();
    assert!(why.contains("another user") && why.contains("65534"), "{why}");

    // A titles file planted by another user (or that others may write) is
    // not used: its title does not become a label.
    let q = Arc::new(MemoryQuery::new());
    session(&q, "a", "Alpha", "alpha text");
    let r = Resolver::new(q.clone(), Config::default());
    candidates(&r, "alp");
    let path = tmp.path().join("titles.bin");
    r.save_discovery_cache(DiscoveryCachePart::Titles, &path).unwrap();
    let fresh = || Resolver::new(q.clone(), Config::default());
    assert!(fresh().load_discovery_cache(DiscoveryCachePart::Titles, &path));
    std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
    assert!(!fresh().load_discovery_cache(DiscoveryCachePart::Titles, &path));
    std::os::unix::fs::chown(&path, Some(me), None).unwrap();
    set_mode(&path, 0o622);
    assert!(!fresh().load_discovery_cache(DiscoveryCachePart::Titles, &path));
    set_mode(&path, 0o600);
    assert!(fresh().load_discovery_cache(DiscoveryCachePart::Titles, &path));
}

#[cfg(unix)]
#[test]
fn a_cache_file_that_is_a_symbolic_link_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let q = Arc::new(MemoryQuery::new());
    session(&q, "a", "Alpha", "alpha text");
    let r = Resolver::new(q.clone(), Config::default());
    candidates(&r, "alp");
    search(&r, "alpha");
    for part in [DiscoveryCachePart::Titles, DiscoveryCachePart::Index] {
        let real = tmp.path().join(format!("{part:?}.real"));
        r.save_discovery_cache(part, &real).unwrap();
        let link = tmp.path().join(format!("{part:?}.link"));
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let fresh = Resolver::new(q.clone(), Config::default());
        assert!(fresh.load_discovery_cache(part, &real));
        assert!(!fresh.load_discovery_cache(part, &link), "{part:?}");
    }
}

/// A zstd frame of `blocks` RLE blocks of 128 KiB of zeros each (4 bytes a
/// block: `blocks` × 32 KiB of file per GiB), recording its content size or
/// not: the smallest file that decompresses to the most.
fn zstd_bomb(blocks: usize, record_size: bool) -> Vec<u8> {
    const BLOCK: u32 = 128 << 10;
    let mut out = vec![0x28, 0xb5, 0x2f, 0xfd];
    if record_size {
        // Frame header: an 8-byte content size, then a window descriptor.
        out.push(0b1100_0000);
        out.push(7 << 3);
        out.extend_from_slice(&(blocks as u64 * u64::from(BLOCK)).to_le_bytes());
    } else {
        out.push(0);
        out.push(7 << 3); // a 128 KiB window
    }
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = (BLOCK << 3) | (1 << 1) | last; // an RLE block
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.push(0);
    }
    out
}

#[test]
fn a_zstd_bomb_is_ignored_like_a_corrupt_file_without_taking_its_size() {
    let tmp = tempfile::tempdir().unwrap();
    // 8,192 blocks: 32 KiB that decompress to 1 GiB.
    for record_size in [false, true] {
        let bomb = zstd_bomb(8192, record_size);
        assert!(bomb.len() <= 33 << 10, "{}", bomb.len());
        let path = tmp.path().join(format!("bomb-{record_size}.bin"));
        std::fs::write(&path, &bomb).unwrap();
        #[cfg(unix)]
        set_mode(&path, 0o600);
        // It is a valid frame: the decoder would give the whole GiB.
        if !record_size {
            let mut d = zstd::stream::Decoder::new(bomb.as_slice()).unwrap();
            let n = std::io::copy(&mut d, &mut std::io::sink()).unwrap();
            assert_eq!(n, 1 << 30);
        }
        let r = Resolver::new(Arc::new(MemoryQuery::new()), Config::default());
        let (used, peak) = peak_of(|| r.load_discovery_cache(DiscoveryCachePart::Titles, &path));
        assert!(!used);
        assert!(peak < 32 << 20, "{record_size}: {peak} bytes held at the peak");
        let store = DshStore::open(tmp.path()).unwrap();
        let (used, peak) = peak_of(|| store.load_listing_cache(&path));
        assert!(!used);
        assert!(peak < 32 << 20, "{record_size}: {peak} bytes held at the peak");
    }
}

#[test]
fn with_redact_secrets_the_titles_file_holds_no_credential() {
    let tmp = tempfile::tempdir().unwrap();
    let key = "AKIAZ7QWERTY12345678";
    let q = Arc::new(MemoryQuery::new());
    session(&q, "leaky", &format!("deploy with {key}"), "deploying");
    let hardened = || Resolver::new(q.clone(), Config::from_json(&json!({"hardened": true})).unwrap());
    let r = hardened();
    assert_eq!(candidates(&r, "deploy"), ["deploy with [redacted aws-access-key-id]"]);
    let path = tmp.path().join("titles.bin");
    r.save_discovery_cache(DiscoveryCachePart::Titles, &path).unwrap();
    let packed = std::fs::read(&path).unwrap();
    let payload = zstd::stream::decode_all(packed.as_slice()).unwrap();
    let held = String::from_utf8_lossy(&payload);
    assert!(!held.contains(key) && !held.contains("QWERTY12345678"), "{held:?}");
    assert!(held.contains("deploy with [redacted aws-access-key-id]"), "{held:?}");
    // Warm, the label is the same.
    let warm = hardened();
    assert!(warm.load_discovery_cache(DiscoveryCachePart::Titles, &path));
    assert_eq!(candidates(&warm, "deploy"), ["deploy with [redacted aws-access-key-id]"]);
    // Without the mode the title is kept as it is (and the hardened file is
    // not used).
    let plain = Resolver::new(q.clone(), Config::default());
    assert!(!plain.load_discovery_cache(DiscoveryCachePart::Titles, &path));
    assert_eq!(candidates(&plain, "deploy"), [format!("deploy with {key}")]);
}

#[test]
fn a_deleted_session_does_not_survive_a_rewrite_of_the_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (titles, index) = (tmp.path().join("titles.bin"), tmp.path().join("index.bin"));
    let q = Arc::new(MemoryQuery::new());
    session(&q, "gone-session", "Doomed title", "the launch code is swordfish");
    session(&q, "kept", "Kept title", "ordinary words");
    let r = Resolver::new(q.clone(), Config::default());
    assert_eq!(search(&r, "swordfish"), ["gone-session"]);
    candidates(&r, "title");
    r.save_discovery_cache(DiscoveryCachePart::Titles, &titles).unwrap();
    r.save_discovery_cache(DiscoveryCachePart::Index, &index).unwrap();
    assert!(std::fs::read(&index).unwrap().windows(12).any(|w| w == b"gone-session"));

    // One session deleted, another created: the cache does not outgrow the
    // listing, yet the next process's files leave the deleted one out.
    q.remove_session("gone-session");
    session(&q, "new", "New title", "fresh words");
    let next = Resolver::new(q.clone(), Config::default());
    assert!(next.load_discovery_cache(DiscoveryCachePart::Titles, &titles));
    assert!(next.load_discovery_cache(DiscoveryCachePart::Index, &index));
    assert!(search(&next, "swordfish").is_empty());
    assert_eq!(search(&next, "fresh"), ["new"]);
    candidates(&next, "title");
    next.save_discovery_cache(DiscoveryCachePart::Titles, &titles).unwrap();
    next.save_discovery_cache(DiscoveryCachePart::Index, &index).unwrap();
    for path in [&titles, &index] {
        let bytes = std::fs::read(path).unwrap();
        let bytes = if path == &titles { zstd::stream::decode_all(bytes.as_slice()).unwrap() } else { bytes };
        assert!(!bytes.windows(12).any(|w| w == b"gone-session"), "{}", path.display());
        assert!(!bytes.windows(12).any(|w| w == b"Doomed title"), "{}", path.display());
    }
    let third = Resolver::new(q.clone(), Config::default());
    assert!(third.load_discovery_cache(DiscoveryCachePart::Index, &index));
    assert_eq!(third.search_index_stats().sessions, 2);
}
