//! The relevance score a search ranks its matches by: BM25 over the
//! sessions' text, with the title weighted above the messages and the
//! whole query (its phrase) counted as one more, rarer term.
//!
//! A word's term frequency in a session is how often it occurs in the
//! lower-cased text (as a substring, as search matches), counted in the
//! title [`TITLE_WEIGHT`] times, in the id and cwd once, in the messages
//! once; its document frequency is the number of searched sessions whose
//! filters let it through (an upper bound, exact but for the filters'
//! false positives, known without reading a text). Nothing is stored for
//! it beyond what the index keeps to find matches: the frequencies are
//! counted while a match is verified on its text.

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;
/// How many times an occurrence in the title counts.
pub(super) const TITLE_WEIGHT: f64 = 5.0;

/// What a search knows of its words before it reads a text: each word's
/// inverse document frequency, the phrase's (a query of more than one
/// word), and the sessions' mean length.
#[derive(Clone, Debug)]
pub(super) struct Weights {
    pub(super) words: Vec<f64>,
    /// The phrase's weight: the sum of its words' (it is rarer than any of
    /// them); 0 for a query of one word, which is its own phrase.
    pub(super) phrase: f64,
    /// The mean length of the searched sessions (title and text bytes).
    pub(super) mean_len: f64,
}

impl Weights {
    /// The weights of words held by `df` of `n` sessions, of mean length
    /// `mean_len`.
    pub(super) fn new(df: &[usize], n: usize, mean_len: f64) -> Weights {
        let words: Vec<f64> = df.iter().map(|&d| idf(d, n)).collect();
        let phrase = if words.len() > 1 { words.iter().sum() } else { 0.0 };
        Weights { words, phrase, mean_len: mean_len.max(1.0) }
    }

    /// The score of a session of `len` bytes (title and text) in which
    /// the words occur `tf` times (weighted) and the phrase `phrase_tf`.
    pub(super) fn score(&self, tf: &[f64], phrase_tf: f64, len: usize) -> f64 {
        let norm = K1 * (1.0 - B + B * len as f64 / self.mean_len);
        let part = |w: f64, tf: f64| if tf > 0.0 { w * tf * (K1 + 1.0) / (tf + norm) } else { 0.0 };
        let words: f64 = self.words.iter().zip(tf).map(|(&w, &tf)| part(w, tf)).sum();
        words + part(self.phrase, phrase_tf)
    }

    /// The score of one passage (a message, or the title) holding the words
    /// `tf` times and the phrase `phrase_tf` times: what picks the snippet.
    /// Saturated per word, not normalised by length (a passage is short).
    pub(super) fn passage(&self, tf: &[usize], phrase_tf: usize) -> f64 {
        let part = |w: f64, tf: usize| w * tf as f64 / (tf as f64 + K1);
        let words: f64 = self.words.iter().zip(tf).map(|(&w, &tf)| part(w, tf)).sum();
        words + part(self.phrase, phrase_tf)
    }
}

/// BM25's inverse document frequency (never negative) of a word held by
/// `df` of `n` sessions.
fn idf(df: usize, n: usize) -> f64 {
    let (df, n) = (df.min(n) as f64, n as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rarer_words_more_occurrences_and_shorter_sessions_score_higher() {
        let w = Weights::new(&[10, 1000], 1000, 500.0);
        assert!(w.words[0] > w.words[1] && w.words[1] >= 0.0);
        assert_eq!(w.phrase, w.words[0] + w.words[1]);
        let one = w.score(&[1.0, 1.0], 0.0, 500);
        assert!(w.score(&[3.0, 1.0], 0.0, 500) > one, "more occurrences");
        assert!(w.score(&[1.0, 1.0], 0.0, 100) > one, "a shorter session");
        assert!(w.score(&[1.0, 1.0], 1.0, 500) > one, "the phrase");
        assert!(w.score(&[1.0, 0.0], 0.0, 500) > w.score(&[0.0, 1.0], 0.0, 500), "the rarer word");
        assert_eq!(Weights::new(&[5], 10, 1.0).phrase, 0.0, "one word is its own phrase");
        assert!(w.passage(&[1, 1], 1) > w.passage(&[2, 2], 0));
    }
}
