//! A parsed search text and the finders the verifying threads search it
//! with.

use super::fold::fold;
use super::needle::{Finder, Needle};

/// A parsed search text: lower-cased, whitespace runs collapsed.
pub(crate) struct Query {
    pub(super) phrase: Needle,
    pub(super) words: Vec<Needle>,
}

impl Query {
    /// The query of `text`; `None` when it holds no word (a blank query
    /// finds nothing).
    pub(crate) fn parse(text: &str) -> Option<Query> {
        let folded = fold(text);
        let mut words: Vec<Needle> = Vec::new();
        for w in folded.split_whitespace() {
            if !words.iter().any(|x| x.text == w) {
                words.push(Needle::new(w.to_owned()));
            }
        }
        if words.is_empty() {
            return None;
        }
        let phrase = Needle::new(folded.split_whitespace().collect::<Vec<_>>().join(" "));
        Some(Query { phrase, words })
    }
}

/// A query's phrase and words as the threads verifying its prospects
/// search for them.
pub(super) struct Finders {
    pub(super) phrase: Finder,
    pub(super) words: Vec<Finder>,
}

impl Finders {
    pub(super) fn of(query: &Query) -> Finders {
        Finders { phrase: query.phrase.finder(), words: query.words.iter().map(Needle::finder).collect() }
    }
}
