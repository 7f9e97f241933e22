// What the tests of SQLite sources share (included by each test crate
// that reads a database while another connection writes it).

use std::collections::BTreeSet;
use std::path::Path;

/// The names of the entries of `dir`.
pub fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

/// `names` as a set.
pub fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

/// What a read gives must be a prefix of the turns the writer commits
/// (`q<n>` then `a<n>`), whole turns only (never a question without its
/// answer), and never fewer than `at_least` items (a read before it).
/// Returns how many items it has.
pub fn check_consistent(c: &dsh_session_reference::Conversation, at_least: usize) -> usize {
    assert_eq!(c.items.len() % 2, 0, "a torn turn: {:?}", c.items.last());
    for (n, pair) in c.items.chunks(2).enumerate() {
        assert_eq!(
            (pair[0].text.as_str(), pair[1].text.as_str()),
            (format!("q{n}").as_str(), format!("a{n}").as_str())
        );
    }
    assert!(c.items.len() >= at_least, "went back from {at_least} to {}", c.items.len());
    c.items.len()
}
