//! The single-pass projection of snapshot bytes against a naive projection
//! written from SPEC §3 over a parsed `serde_json::Value`, on random
//! snapshots: keys in any order, repeated keys (the last one counts, as in
//! `JSON.parse`), escaped keys, unknown fields, odd block shapes, texts with
//! escapes and non-ASCII, and random corruptions of all of it.

mod common;

use common::Rng;

use dsh_session_reference::projection::{project_json, Role};
use serde_json::Value;

/// What a snapshot projects to: id, cwd, capturedThroughSeq and the items.
type Projected = (String, Option<String>, Option<String>, Vec<(Role, String, bool)>);

/// SPEC §3 over a value; `None` where the snapshot is malformed.
fn oracle(doc: &Value) -> Option<Projected> {
    let session = doc.get("session")?.as_object()?;
    let id = session.get("id")?.as_str()?.to_owned();
    let cwd = match session.get("cwd") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_str()?.to_owned()),
    };
    let seq = match doc.get("capturedThroughSeq")? {
        Value::Null => None,
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => Some(n.to_string()),
        _ => return None,
    };
    let text_of = |content: &Value| -> Option<Option<String>> {
        let texts: Vec<&str> = content
            .as_array()?
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        Some((!texts.is_empty()).then(|| texts.join("\n")))
    };
    let mut items = Vec::new();
    for event in doc.get("events")?.as_array()? {
        let event = event.as_object()?;
        let (role, text, checkpoint) = match event.get("type")?.as_str()? {
            "user/message" => {
                let data = event.get("data")?.as_object()?;
                let text = text_of(data.get("content")?)?;
                let field = |name: &str| -> Option<Option<String>> {
                    match data.get("source") {
                        None | Some(Value::Null) => Some(None),
                        Some(Value::Object(s)) => match s.get(name) {
                            None | Some(Value::Null) => Some(None),
                            Some(v) => Some(Some(v.as_str()?.to_owned())),
                        },
                        Some(_) => None,
                    }
                };
                let (kind, plugin) = (field("kind")?, field("plugin")?);
                let checkpoint = kind.as_deref() == Some("plugin") && plugin.as_deref() == Some("compact");
                if kind.as_deref() != Some("user") && !checkpoint {
                    continue;
                }
                (Role::User, text, checkpoint)
            }
            "assistant/message" => {
                let message = event.get("data")?.as_object()?.get("message")?.as_object()?;
                (Role::Assistant, text_of(message.get("content")?)?, false)
            }
            _ => continue,
        };
        if let Some(text) = text.filter(|t| !t.is_empty()) {
            items.push((role, text, checkpoint));
        }
    }
    Some((id, cwd, seq, items))
}

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

fn ours(bytes: &[u8]) -> Option<Projected> {
    let p = project_json(bytes).ok()?;
    let items = p.items.iter().map(|i| (i.role, i.text.decode().unwrap().into_owned(), i.checkpoint)).collect();
    let seq = p.captured_through_seq.map(|n| n.to_string());
    Some((p.session_id.into_owned(), p.cwd.map(|c| c.into_owned()), seq, items))
}

#[test]
fn projection_of_bytes_matches_a_naive_projection_of_the_parsed_value() {
    let mut g = Gen(Rng(0x5eed));
    let (mut projected, mut empty, mut malformed, mut corrupted) = (0, 0, 0, 0);
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
            assert!(ours(&doc).is_none() || String::from_utf8_lossy(&doc).contains("\\u"), "case {case}");
            continue;
        };
        let want = oracle(&value);
        assert_eq!(ours(&doc), want, "case {case}: {}", String::from_utf8_lossy(&doc));
        match want {
            Some(w) if !w.3.is_empty() => projected += 1,
            Some(_) => empty += 1,
            None => malformed += 1,
        }
    }
    // Enough of each outcome for the comparison to mean something.
    assert!(
        projected > 3_000 && empty > 1_000 && malformed > 3_000 && corrupted > 4_000,
        "the generator is off: {projected} projected, {empty} empty, {malformed} malformed"
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
    let (id, _, seq, items) = ours(doc).unwrap();
    assert_eq!((id.as_str(), seq.as_deref()), ("b", Some("2")));
    let texts: Vec<&str> = items.iter().map(|i| i.1.as_str()).collect();
    assert_eq!(texts, ["no", "z"]);
}
