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
        let terms = SearchTerms::parse(text)?;
        Some(Query { phrase: Needle::new(terms.phrase), words: terms.words.into_iter().map(Needle::new).collect() })
    }
}

/// A search text as search compares it: its distinct words and its
/// phrase (the words in order, one space between them), each folded by
/// [`search_fold`]. A session matches when each word is in its title, id,
/// cwd or one of its projected messages (a substring of the folded text);
/// the phrase ranks it. For a host that searches where its sessions are
/// (a database), with the very rule of the built-in index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchTerms {
    /// The distinct words, folded, in the order first given.
    pub words: Vec<String>,
    /// The words in order, folded, joined by one space.
    pub phrase: String,
}

impl SearchTerms {
    /// The terms of `text`; `None` when it holds no word (a blank search
    /// finds nothing).
    ///
    /// ```
    /// use dsh_session_reference::SearchTerms;
    /// let terms = SearchTerms::parse("  Durable   GOAL durable ").unwrap();
    /// assert_eq!(terms.words, ["durable", "goal"]);
    /// assert_eq!(terms.phrase, "durable goal durable");
    /// assert!(SearchTerms::parse(" \t ").is_none());
    /// ```
    pub fn parse(text: &str) -> Option<SearchTerms> {
        let folded = fold(text);
        let mut words: Vec<String> = Vec::new();
        for w in folded.split_whitespace() {
            if !words.iter().any(|x| x == w) {
                words.push(w.to_owned());
            }
        }
        if words.is_empty() {
            return None;
        }
        let phrase = folded.split_whitespace().collect::<Vec<_>>().join(" ");
        Some(SearchTerms { words, phrase })
    }
}

/// The case mapping every comparison of search uses (each character's
/// Unicode default lower-case mapping): the text a host that searches
/// where its sessions are keeps beside each message, title, id and cwd to
/// find [`SearchTerms`] in it exactly as the built-in index does.
///
/// ```
/// assert_eq!(dsh_session_reference::search_fold("Straße ΣΑΣ"), "straße σασ");
/// ```
pub fn search_fold(text: &str) -> String {
    fold(text).into_owned()
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
