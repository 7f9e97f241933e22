//! The relevance score a search ranks its matches by: BM25 over the
//! sessions' text, with the title weighted above the messages and the
//! whole query (its phrase) counted as one more, rarer term, and the
//! messages that hold every word of it as a lighter one.
//!
//! Everything the score needs is counted on the matching sessions alone,
//! exactly, so that any host that finds the same matches (a database
//! searching where its sessions are) ranks them the same from the same
//! counts ([`MatchCounts`], [`Relevance`]): a word's term frequency in a
//! session is how often it occurs in the folded text (as a substring, as
//! search matches, occurrences not overlapping), counted in the title
//! [`TITLE_WEIGHT`] times, in the id and cwd once, in the messages once;
//! its rarity is the share of the matching sessions' messages that hold
//! it; a session's length is its messages' bytes and its folded title's,
//! normalised by the matching sessions' mean. The index stores nothing for
//! it: the counts are made while a match is verified on its text.

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;
/// How many times an occurrence in the title counts.
pub const TITLE_WEIGHT: f64 = 5.0;
/// The weight of the messages holding every word, as a share of the
/// phrase's: enough that words said together outrank the same words said
/// apart, little enough that a session holding them apart, and more often,
/// is not buried under ones that hold them once together (the known-item
/// benchmark's two bag-of-words kinds pull in opposite directions here).
const TOGETHER: f64 = 0.1;

/// What one matching session holds of a query's words
/// ([`SearchTerms::words`](crate::SearchTerms::words), in their order) and
/// phrase, counted on folded text ([`search_fold`](crate::search_fold))
/// as non-overlapping substrings, and how long it is: what
/// [`Relevance`] scores it by.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MatchCounts {
    /// Per word: occurrences in the folded title.
    pub title: Vec<u64>,
    /// Per word: occurrences in the folded id and in the folded cwd.
    pub place: Vec<u64>,
    /// Per word: occurrences in the folded messages.
    pub messages: Vec<u64>,
    /// Per word: how many messages hold it.
    pub holding: Vec<u64>,
    /// The phrase's occurrences in the title, in the id and cwd, and in
    /// the messages (counted only for a query of more than one word).
    pub phrase: [u64; 3],
    /// Whether the title holds every word (0 or 1), and how many messages
    /// do (counted only for a query of more than one word).
    pub together: [u64; 2],
    /// How many messages have text.
    pub items: u64,
    /// The messages' text bytes (as projected, not folded) plus the folded
    /// title's bytes.
    pub len: u64,
}

/// The weights a search scores its matches with, made from the counts of
/// every matching session ([`Relevance::new`]): each word's inverse
/// frequency among the matches' messages, the phrase's, and the matches'
/// mean length.
#[derive(Clone, Debug, PartialEq)]
pub struct Relevance {
    words: Vec<f64>,
    /// The phrase's weight: the sum of its words' (it is rarer than any of
    /// them); 0 for a query of one word, which is its own phrase. The
    /// words together in one message weigh [`TOGETHER`] of it.
    phrase: f64,
    mean_len: f64,
}

impl Relevance {
    /// The weights for a query of `words` words whose matching sessions
    /// hold `matches`.
    pub fn new<'a>(words: usize, matches: impl IntoIterator<Item = &'a MatchCounts>) -> Relevance {
        let (mut sessions, mut len, mut items) = (0u64, 0u64, 0u64);
        let mut holding = vec![0u64; words];
        for m in matches {
            sessions += 1;
            len += m.len;
            items += m.items;
            for (h, n) in holding.iter_mut().zip(&m.holding) {
                *h += n;
            }
        }
        let words: Vec<f64> = holding.iter().map(|&h| idf(h, items)).collect();
        let phrase = if words.len() > 1 { words.iter().sum() } else { 0.0 };
        let mean_len = (len as f64 / sessions.max(1) as f64).max(1.0);
        Relevance { words, phrase, mean_len }
    }

    /// The score of a session holding `m`: higher ranks first.
    pub fn score(&self, m: &MatchCounts) -> f64 {
        let norm = K1 * (1.0 - B + B * m.len as f64 / self.mean_len);
        let part = |w: f64, tf: f64| if tf > 0.0 { w * tf * (K1 + 1.0) / (tf + norm) } else { 0.0 };
        let tf = |title: u64, place: u64, messages: u64| TITLE_WEIGHT * title as f64 + (place + messages) as f64;
        let mut score = 0.0;
        for (j, &w) in self.words.iter().enumerate() {
            let at = |v: &[u64]| v.get(j).copied().unwrap_or(0);
            score += part(w, tf(at(&m.title), at(&m.place), at(&m.messages)));
        }
        let [title, place, messages] = m.phrase;
        let [title_all, messages_all] = m.together;
        score
            + part(self.phrase, tf(title, place, messages))
            + part(TOGETHER * self.phrase, tf(title_all, 0, messages_all))
    }
}

/// BM25's inverse document frequency (never negative) of a word held by
/// `df` of `n` messages.
fn idf(df: u64, n: u64) -> f64 {
    let (df, n) = (df.min(n) as f64, n as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(messages: [u64; 2], holding: [u64; 2], phrase: u64, len: u64) -> MatchCounts {
        MatchCounts {
            title: vec![0, 0],
            place: vec![0, 0],
            messages: messages.to_vec(),
            holding: holding.to_vec(),
            phrase: [0, 0, phrase],
            together: [0, 0],
            items: 100,
            len,
        }
    }

    #[test]
    fn rarer_words_more_occurrences_and_shorter_sessions_score_higher() {
        // Ten sessions of 100 messages: the first word in 10 of them, the
        // second in 900.
        let all = vec![counts([1, 90], [1, 90], 0, 500); 10];
        let w = Relevance::new(2, &all);
        assert!(w.words[0] > w.words[1] && w.words[1] >= 0.0);
        assert_eq!(w.phrase, w.words[0] + w.words[1]);
        assert_eq!(w.mean_len, 500.0);
        let one = w.score(&counts([1, 1], [1, 1], 0, 500));
        assert!(w.score(&counts([3, 1], [1, 1], 0, 500)) > one, "more occurrences");
        assert!(w.score(&counts([1, 1], [1, 1], 0, 100)) > one, "a shorter session");
        assert!(w.score(&counts([1, 1], [1, 1], 1, 500)) > one, "the phrase");
        let together = MatchCounts { together: [0, 1], ..counts([1, 1], [1, 1], 0, 500) };
        assert!(w.score(&together) > one, "the words in one message");
        assert!(w.score(&counts([1, 0], [1, 0], 0, 500)) > w.score(&counts([0, 1], [0, 1], 0, 500)), "the rarer word");
        let mut titled = counts([0, 1], [0, 1], 0, 500);
        titled.title[0] = 1;
        assert!(w.score(&titled) > w.score(&counts([1, 1], [1, 1], 0, 500)), "the title");
        assert_eq!(Relevance::new(1, &[counts([1, 0], [1, 0], 0, 1)]).phrase, 0.0, "one word is its own phrase");
        assert_eq!(Relevance::new(2, []).mean_len, 1.0, "no match");
    }
}
