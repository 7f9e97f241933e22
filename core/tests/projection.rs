//! The single-pass projection of snapshot bytes against a naive projection
//! written from docs/contract.md §3 over a parsed `serde_json::Value`, on random
//! snapshots: keys in any order, repeated keys (the last one counts, as in
//! `JSON.parse`), escaped keys, unknown fields, odd block shapes, texts with
//! escapes and non-ASCII, and random corruptions of all of it. The naive
//! projection lives with the fuzz checks (`fuzz/src/checks.rs`), whose
//! `prepare` target makes the same comparison on fuzzed bytes.

mod common;

#[path = "../../fuzz/src/checks.rs"]
#[allow(dead_code)]
mod checks;

use checks::{naive_projection, projected};
use common::Rng;

use serde_json::Value;

/// Random snapshot text, built by hand so that keys can repeat.
struct Gen(Rng);

impl Gen {
    fn pick<'a>(&mut self, options: &[&'a str]) -> &'a str {
        options[self.0.below(options.len() as u64) as usize]
    }

    fn chance(&mut self, in_100: u64) -> bool {
        self.0.below(100) < in_100
    }

    fn key(&mut self, name: &str) -> String {
        match (name, self.0.below(10)) {
            ("type", 0) => r#""\u0074ype""#.into(),
            ("text", 0) => r#""te\u0078t""#.into(),
            _ => format!("\"{name}\""),
        }
    }

    fn text(&mut self) -> String {
        let pieces = [
            "plain",
            "",
            " ",
            "<b>",
            r#"\"q\""#,
            r"\\",
            r"\n",
            r"\u003c",
            r"\u00e9",
            "é",
            "😀",
            r"\ud83d\ude00",
            r"\/",
            r"\u0000",
            "\u{2028}",
            "\u{feff}",
        ];
        let n = self.0.below(5);
        let body: String = (0..n).map(|_| self.pick(&pieces)).collect();
        format!("\"{body}\"")
    }

    /// An object from fields, shuffled, with an occasional repeated or
    /// unknown field.
    fn object(&mut self, mut fields: Vec<(String, String)>) -> String {
        if self.chance(10) && !fields.is_empty() {
            let k = self.0.below(fields.len() as u64) as usize;
            let again = (fields[k].0.clone(), self.value_like(&fields[k].1.clone()));
            fields.push(again);
        }
        if self.chance(20) {
            fields.push(("\"extra\"".into(), r#"{"deep":[1,2,{"x":null}],"s":"\u003c"}"#.into()));
        }
        for i in (1..fields.len()).rev() {
            if self.chance(30) {
                let j = self.0.below(i as u64 + 1) as usize;
                fields.swap(i, j);
            }
        }
        let body: Vec<String> = fields.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
        format!("{{{}}}", body.join(","))
    }

    /// Another value in the place of `v` (for a repeated key).
    fn value_like(&mut self, v: &str) -> String {
        match self.0.below(4) {
            0 => self.text(),
            1 => "null".into(),
            2 => format!("\"{}\"", self.pick(&["user/message", "assistant/message", "tool/result", "user", "text"])),
            _ => v.to_owned(),
        }
    }

    fn content(&mut self) -> String {
        let n = self.0.below(4);
        let blocks: Vec<String> = (0..n)
            .map(|_| match self.0.below(8) {
                0 => "null".into(),
                1 => r#""text""#.into(),
                2 => {
                    let (k, t) = (self.key("type"), self.key("text"));
                    let ty = self.pick(&[r#""reasoning""#, r#""tool-call""#, "1"]);
                    let text = self.text();
                    self.object(vec![(k, ty.into()), (t, text)])
                }
                3 => {
                    let k = self.key("type");
                    self.object(vec![(k, r#""text""#.into()), ("\"text\"".into(), "42".into())])
                }
                _ => {
                    let (k, t) = (self.key("type"), self.key("text"));
                    let text = self.text();
                    self.object(vec![(k, r#""text""#.into()), (t, text)])
                }
            })
            .collect();
        format!("[{}]", blocks.join(","))
    }

    fn event(&mut self) -> String {
        let ty = self.pick(&["user/message", "assistant/message", "tool/result", "session/title"]);
        let data = match ty {
            "user/message" => {
                let kind = self.pick(&[r#""user""#, r#""plugin""#, r#""model""#, "null"]);
                let plugin = self.pick(&[r#""compact""#, r#""other""#, "null"]);
                let source = match self.0.below(6) {
                    0 => "null".into(),
                    1 => self.object(vec![("\"kind\"".into(), kind.into())]),
                    _ => self.object(vec![("\"kind\"".into(), kind.into()), ("\"plugin\"".into(), plugin.into())]),
                };
                let content = self.content();
                let mut fields = vec![("\"content\"".into(), content), ("\"role\"".into(), r#""user""#.into())];
                if !self.chance(10) {
                    fields.push(("\"source\"".into(), source));
                }
                self.object(fields)
            }
            "assistant/message" => {
                let content = self.content();
                let message = self.object(vec![("\"content\"".into(), content), ("\"id\"".into(), r#""m""#.into())]);
                self.object(vec![("\"message\"".into(), message), ("\"turn\"".into(), "3".into())])
            }
            _ => r#"{"message":{"content":[{"type":"text","text":"skipped"}]},"isError":false}"#.into(),
        };
        let k = self.key("type");
        let fields = vec![(k, format!("\"{ty}\"")), ("\"data\"".into(), data), ("\"seq\"".into(), "7".into())];
        self.object(fields)
    }

    fn snapshot(&mut self) -> String {
        let n = self.0.below(6);
        let events: Vec<String> = (0..n).map(|_| self.event()).collect();
        let cwd = self.pick(&[r#""/w""#, "null", r#""C:\\w""#]);
        let session = self.object(vec![("\"id\"".into(), r#""s\u00e9""#.into()), ("\"cwd\"".into(), cwd.into())]);
        let seq = self.pick(&["3", "null", "4.0", "1e2", "-0"]);
        self.object(vec![
            ("\"session\"".into(), session),
            ("\"capturedThroughSeq\"".into(), seq.into()),
            ("\"events\"".into(), format!("[{}]", events.join(","))),
        ])
    }
}

#[test]
fn projection_of_bytes_matches_a_naive_projection_of_the_parsed_value() {
    let mut g = Gen(Rng(0x5eed));
    let (mut nonempty, mut empty, mut malformed, mut corrupted) = (0, 0, 0, 0);
    for case in 0..20_000 {
        let mut doc = g.snapshot().into_bytes();
        if case % 4 == 3 {
            // Corrupt one byte: the two must still agree on validity.
            let at = g.0.below(doc.len() as u64) as usize;
            doc[at] = *b"\"\\{}[],:0 x\x01\xff".get(g.0.below(13) as usize).unwrap();
            corrupted += 1;
        }
        // A lone surrogate escape cannot be decoded; skip those documents.
        let Ok(value) = serde_json::from_slice::<Value>(&doc) else {
            assert!(projected(&doc).is_none() || String::from_utf8_lossy(&doc).contains("\\u"), "case {case}");
            continue;
        };
        let want = naive_projection(&value);
        assert_eq!(projected(&doc), want, "case {case}: {}", String::from_utf8_lossy(&doc));
        match want {
            Some(w) if !w.3.is_empty() => nonempty += 1,
            Some(_) => empty += 1,
            None => malformed += 1,
        }
    }
    // Enough of each outcome for the comparison to mean something.
    assert!(
        nonempty > 3_000 && empty > 1_000 && malformed > 3_000 && corrupted > 4_000,
        "the generator is off: {nonempty} projected, {empty} empty, {malformed} malformed"
    );
}

#[test]
fn a_repeated_key_counts_with_its_last_value() {
    let doc = br#"{"session":{"id":"a","id":"b"},"capturedThroughSeq":1,"events":[
        {"type":"tool/result","data":{"content":[{"type":"text","text":"no"}],"source":{"kind":"user"}},"type":"user/message"},
        {"type":"user/message","data":{"content":[{"type":"text","text":"x"}],"source":{"kind":"user"}},
         "data":{"content":[{"type":"text","text":"y","text":"z"}],"source":{"kind":"user"}}},
        {"type":"user/message","data":{"content":[{"type":"text","text":"w"}],"source":{"kind":"user"}},"type":"tool/result"}
    ],"capturedThroughSeq":2}"#;
    let (id, _, seq, items) = projected(doc).unwrap();
    assert_eq!((id.as_str(), seq.as_deref()), ("b", Some("2")));
    let texts: Vec<&str> = items.iter().map(|i| i.1.as_str()).collect();
    assert_eq!(texts, ["no", "z"]);
}
