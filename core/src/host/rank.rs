//! Where candidates are ranked and filtered (docs/contract.md §7): rank 0 for a session
//! in the target's cwd, 1 for one without a cwd, 2 for any other; a stable
//! sort, so the host's listing order breaks ties; the filter is a
//! case-insensitive substring of the id, the cwd or the label.

use super::Target;

/// The rank of a session with `cwd` for `target`.
pub(crate) fn rank(cwd: Option<&str>, target: &Target) -> u8 {
    match (cwd, target.cwd.as_deref()) {
        (Some(c), Some(t)) if c == t => 0,
        (None, _) => 1,
        _ => 2,
    }
}

/// `items` sorted by rank (stable: the listing order breaks ties) and cut
/// at `limit`; `rank_of` gives an item's [`rank`].
pub(crate) fn ranked_by<T>(mut items: Vec<T>, rank_of: impl Fn(&T) -> u8, limit: usize) -> Vec<T> {
    items.sort_by_key(|item| rank_of(item));
    items.truncate(limit);
    items
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

    /// The text, lower-cased.
    pub(crate) fn needle(&self) -> &str {
        &self.needle
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
            return within_ascii(hay.as_bytes(), self.needle.as_bytes());
        }
        hay.to_lowercase().contains(&self.needle)
    }
}

/// Whether `hay` contains the lower-case ASCII `needle`, ignoring ASCII
/// case: candidates for its first byte are found with `memchr2` (both
/// cases), the rest compared in place.
fn within_ascii(hay: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else { return true };
    if hay.len() < needle.len() {
        return false;
    }
    let last_start = hay.len() - needle.len();
    let candidates = memchr::memchr2_iter(first, first.to_ascii_uppercase(), &hay[..=last_start]);
    candidates.into_iter().any(|at| hay[at + 1..at + needle.len()].eq_ignore_ascii_case(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ascii_fast_path_agrees_with_lower_casing() {
        let hays = ["", "a", "Alpha", "ALPHA beta", "xxka", "kA", "k", "the Kangaroo", "ak", "7-ka-7"];
        let needles = ["", "a", "ka", "K", "alpha", "Alpha beta", "x", "-ka-", "zz"];
        for hay in hays {
            for needle in needles {
                let filter = Filter::new(needle);
                let expected = hay.to_lowercase().contains(&needle.to_lowercase());
                assert_eq!(filter.within(hay), expected, "{hay:?} / {needle:?}");
            }
        }
    }
}
