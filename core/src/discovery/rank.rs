//! Where candidates are ranked and filtered (docs/contract.md §7): rank 0 for a session
//! in the target's cwd, 1 for one without a cwd, 2 for any other; a stable
//! sort, so the host's listing order breaks ties; the filter is a
//! case-insensitive substring of the id, the cwd or the label.

use crate::host::{SessionHeader, Target};

/// The rank of a session with `cwd` for `target`.
pub(crate) fn rank(cwd: Option<&str>, target: &Target) -> u8 {
    match (cwd, target.cwd.as_deref()) {
        (Some(c), Some(t)) if c == t => 0,
        (None, _) => 1,
        _ => 2,
    }
}

/// `items` sorted by rank (stable) and cut at `limit`.
pub(crate) fn ranked_by<T>(
    mut items: Vec<T>,
    cwd: impl Fn(&T) -> Option<&str>,
    target: &Target,
    limit: usize,
) -> Vec<T> {
    items.sort_by_key(|item| rank(cwd(item), target));
    items.truncate(limit);
    items
}

/// Listed sessions sorted by rank (stable) and cut at `limit`.
pub(crate) fn ranked(sessions: Vec<SessionHeader>, target: &Target, limit: usize) -> Vec<SessionHeader> {
    ranked_by(sessions, |s| s.cwd.as_deref(), target, limit)
}

/// A non-empty search text, lower-cased once.
pub(crate) struct Filter {
    needle: String,
}

impl Filter {
    /// The filter for `text` (lower-cased with the Unicode default mapping,
    /// as JavaScript's `toLocaleLowerCase()` in `en-US`; never trimmed).
    pub(crate) fn new(text: &str) -> Self {
        Filter { needle: text.to_lowercase() }
    }

    /// Whether the lower-cased id, cwd or label contains the text.
    pub(crate) fn matches(&self, id: &str, cwd: Option<&str>, label: &str) -> bool {
        self.within(id) || cwd.is_some_and(|c| self.within(c)) || self.within(label)
    }

    /// Whether `hay` lower-cased contains the text. For ASCII text and
    /// needle, lower-casing is ASCII lower-casing, compared in place (a
    /// filtered listing tests every session: no allocation per field).
    fn within(&self, hay: &str) -> bool {
        if hay.is_ascii() && self.needle.is_ascii() {
            let n = self.needle.as_bytes();
            return n.is_empty() || hay.as_bytes().windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
        }
        hay.to_lowercase().contains(&self.needle)
    }
}
