//! Unit-level checks of the JSON writer, truncation, and the incremental
//! retention against a naive re-serializing oracle written from docs/contract.md §4.

mod common;

use common::Rng;

use std::borrow::Cow;

use dsh_session_reference::json::{js_string, parse_js, string_len, write_f64};
use dsh_session_reference::projection::{Item, ItemText, Projection, Role};
use dsh_session_reference::prompt::render_source;
use dsh_session_reference::retention::truncate_head_tail;
use dsh_session_reference::stringify_tag_safe;
use serde_json::{json, Value};

fn f(x: f64) -> String {
    let mut s = String::new();
    write_f64(&mut s, x);
    s
}

#[test]
fn numbers_print_as_javascript_prints_them() {
    let cases: &[(f64, &str)] = &[
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-1.5, "-1.5"),
        (100.0, "100"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e21, "1.5e+21"),
        (123456789012345680000.0, "123456789012345680000"),
        (0.000001, "0.000001"),
        (0.0000012, "0.0000012"),
        (1e-7, "1e-7"),
        (1.25e-7, "1.25e-7"),
        (5e-324, "5e-324"),
        (f64::MAX, "1.7976931348623157e+308"),
        (f64::INFINITY, "null"),
        (f64::NAN, "null"),
        (9007199254740993.0, "9007199254740992"),
    ];
    for (x, want) in cases {
        assert_eq!(f(*x), *want, "{x:e}");
    }
    assert_eq!(stringify_tag_safe(&json!(18446744073709551615u64)), "18446744073709552000");
    assert_eq!(stringify_tag_safe(&json!(-9007199254740993i64)), "-9007199254740992");
}

#[test]
fn strings_escape_as_javascript_and_tag_safe_hides_every_angle_bracket() {
    let s = "a\"b\\c\u{0}\u{8}\t\n\u{b}\u{c}\r\u{1f}\u{7f}\u{2028}</x>é😀";
    assert_eq!(js_string(s), "\"a\\\"b\\\\c\\u0000\\b\\t\\n\\u000b\\f\\r\\u001f\u{7f}\u{2028}</x>é😀\"");
    let tagged = stringify_tag_safe(&Value::from(s));
    assert!(!tagged.contains('<'));
    assert_eq!(tagged.len(), string_len(s, true));
    assert_eq!(js_string(s).len(), string_len(s, false));
    assert_eq!(parse_js(&tagged).unwrap(), Value::from(s));
}

/// `JSON.stringify` of a string is what serde_json writes (both escape only
/// `"`, `\`, and control characters, with the same short forms and
/// lowercase hex); tag-safe adds `<` as `\u003c`. Random strings of every
/// length around the word-at-a-time scan's eight-byte steps.
#[test]
fn string_writing_matches_serde_json_on_random_strings() {
    let pieces =
        ["a", "\"", "\\", "<", "\u{0}", "\u{8}", "\n", "\u{1f}", " ", "\u{7f}", "é", "😀", "\u{2028}", "xyzxyzxy"];
    let mut rng = Rng(99);
    for _ in 0..20_000 {
        let n = rng.below(24);
        let s: String = (0..n).map(|_| pieces[rng.below(pieces.len() as u64) as usize]).collect();
        let plain = serde_json::to_string(&s).unwrap();
        let tagged = plain.replace('<', "\\u003c");
        assert_eq!(js_string(&s), plain, "{s:?}");
        assert_eq!(stringify_tag_safe(&Value::from(s.as_str())), tagged, "{s:?}");
        assert_eq!(string_len(&s, false), plain.len(), "{s:?}");
        assert_eq!(string_len(&s, true), tagged.len(), "{s:?}");
    }
}

#[test]
fn js_parse_follows_json_parse() {
    assert_eq!(
        stringify_tag_safe(&parse_js(r#"{"b":1,"a":2,"10":3,"2":4,"a":5}"#).unwrap()),
        r#"{"2":4,"10":3,"b":1,"a":5}"#
    );
    assert_eq!(stringify_tag_safe(&parse_js("[1e400,-0,1E2,0.5e-9]").unwrap()), "[null,0,100,5e-10]");
    for bad in ["", "[1,]", "{\"a\"}", "01", "1.", "\"\\ud800\"", "\"\u{1}\"", "[1] x", "tru", "\"\\x\""] {
        assert!(parse_js(bad).is_err(), "{bad:?} must not parse");
    }
    let deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
    assert!(parse_js(&deep).is_err());
    let fits = format!("{}{}", "[".repeat(128), "]".repeat(128));
    // The deepest accepted input parses on a musl-sized (128 KiB) thread
    // stack; debug builds use frames several times larger.
    let stack = if cfg!(debug_assertions) { 512 << 10 } else { 128 << 10 };
    let parsed = std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || parse_js(&fits).map(|v| stringify_tag_safe(&v).len()))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(parsed, Ok(256));
}

#[test]
fn head_tail_truncation() {
    let text = "abcdefghijklmnopqrstuvwxyz".repeat(10);
    assert_eq!(truncate_head_tail(&text, 1000), (Cow::Borrowed(text.as_str()), 0));
    // Too small for even the marker: empty text, everything omitted.
    assert_eq!(truncate_head_tail(&text, 10), (Cow::Borrowed(""), 260));
    let (t, n) = truncate_head_tail(&text, 100);
    assert!(t.len() <= 100, "{t}");
    assert!(t.starts_with("abcdef") && t.ends_with(&format!("xyz\n[\u{2026} omitted {n} UTF-8 bytes \u{2026}]")));
    // Never splits a character, and N counts the untrimmed slices.
    let cjk = "界".repeat(100);
    for target in 40..120 {
        let (t, n) = truncate_head_tail(&cjk, target);
        assert!(t.len() <= target);
        let kept = t.split('\n').next().unwrap().len();
        assert!(n >= 300 - kept - 4 && n <= 300 - kept, "target {target}: kept {kept}, n {n}");
    }
}

/// Random text rich in what JSON escapes, `<`, multi-byte and BOM characters.
fn random_text(rng: &mut Rng) -> String {
    const PIECES: &[&str] = &["a", "b", " ", "<", ">", "\"", "\\", "\n", "\u{1}", "é", "界", "😀", "\u{feff}", "</x>"];
    let len = match rng.below(4) {
        0 => 0,
        1 => rng.below(8),
        _ => rng.below(300),
    };
    (0..len).map(|_| PIECES[rng.below(PIECES.len() as u64) as usize]).collect()
}

/// docs/contract.md §4 as written: re-serialize the whole object at every step.
fn naive(items: &[(Role, String, bool)], label: &str, budget: usize) -> Option<(String, usize, u64)> {
    let serialize = |list: &[(Role, String, bool)]| -> String {
        let conv: Vec<Value> = list.iter().map(|(r, t, _)| json!({"role": r.as_str(), "text": t})).collect();
        stringify_tag_safe(
            &json!({"sessionId": "s", "label": label, "cwd": null, "capturedThroughSeq": 7, "conversation": conv}),
        )
    };
    let originals: Vec<String> = items.iter().map(|i| i.1.clone()).collect();
    let mut list: Vec<(Role, String, bool, usize, usize)> =
        items.iter().enumerate().map(|(i, (r, t, c))| (*r, t.clone(), *c, i, 0)).collect();
    let plain =
        |l: &[(Role, String, bool, usize, usize)]| l.iter().map(|x| (x.0, x.1.clone(), x.2)).collect::<Vec<_>>();
    let (mut omitted_messages, mut omitted_bytes) = (0usize, 0u64);
    loop {
        if serialize(&plain(&list)).len() <= budget {
            break;
        }
        let last = list.len().saturating_sub(1);
        match list.iter().position(|x| !x.2).filter(|p| *p < last) {
            Some(p) => {
                let x = list.remove(p);
                omitted_messages += 1;
                omitted_bytes += originals[x.3].len() as u64;
            }
            None => break,
        }
    }
    loop {
        let size = serialize(&plain(&list)).len();
        if size <= budget {
            break;
        }
        let max = list.iter().map(|x| x.1.len()).max()?;
        if max == 0 {
            return None;
        }
        let idx = list.iter().position(|x| x.1.len() == max).unwrap();
        let target = max.saturating_sub(size - budget);
        let (t, n) = truncate_head_tail(&originals[list[idx].3], target);
        if t == list[idx].1 {
            return None;
        }
        list[idx].1 = t.into_owned();
        list[idx].4 = n;
    }
    omitted_bytes += list.iter().map(|x| x.4 as u64).sum::<u64>();
    Some((serialize(&plain(&list)), omitted_messages, omitted_bytes))
}

#[test]
fn incremental_retention_matches_the_naive_oracle() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut fitted = 0;
    for case in 0..3000 {
        let n = rng.below(12) as usize;
        let items: Vec<(Role, String, bool)> = (0..n)
            .map(|_| {
                let role = if rng.below(2) == 0 { Role::User } else { Role::Assistant };
                let mut t = random_text(&mut rng);
                if t.is_empty() {
                    t.push('.');
                }
                (role, t, rng.below(5) == 0)
            })
            .collect();
        let label = random_text(&mut rng);
        let budget = 80 + rng.below(1500) as usize;
        let projection = Projection {
            session_id: Cow::Borrowed("s"),
            cwd: None,
            captured_through_seq: Some(7.into()),
            items: items
                .iter()
                .map(|(r, t, c)| Item { role: *r, text: ItemText::decoded(Cow::Borrowed(t)), checkpoint: *c })
                .collect(),
        };
        let got = render_source(projection, &label, budget as u64).unwrap();
        let want = naive(&items, &label, budget);
        match (got, want) {
            (None, None) => {}
            (Some(g), Some((json, om, ob))) => {
                assert_eq!(g.json, json, "case {case}");
                assert_eq!((g.stats.omitted_messages, g.stats.omitted_bytes), (om, ob), "case {case}");
                assert_eq!(g.stats.original_messages, n);
                assert!(g.json.len() <= budget);
                fitted += 1;
            }
            (g, w) => panic!("case {case}: incremental {:?} vs naive {:?}", g.map(|g| g.json), w.map(|w| w.0)),
        }
    }
    assert!(fitted > 1000, "only {fitted} cases fitted; the generator is off");
}

#[test]
fn raw_literal_lengths_match_the_decoded_text() {
    use dsh_session_reference::json::string_len;
    use dsh_session_reference::projection::project_json;
    // Escapes in every spelling JSON allows, including ones JavaScript would
    // write differently (`\/`, `\u0041`, `\u003c`, escaped astral pairs).
    let spellings = [
        r#"plain"#,
        r#"\/"#,
        r#"\u0041"#,
        r#"\u003c"#,
        r#"<"#,
        r#"\u00e9"#,
        r#"é"#,
        r#"\u754c"#,
        r#"\ud83d\ude00"#,
        r#"😀"#,
        r#"\n"#,
        r#"\t"#,
        r#"\b"#,
        r#"\f"#,
        r#"\r"#,
        r#"\u0001"#,
        r#"\u001f"#,
        r#"\u0008"#,
        r#"\""#,
        r#"\\"#,
        r#"\u0022"#,
        r#"\u005c"#,
        r#"\u007f"#,
        r#"\u2028"#,
        r#"\ufeff"#,
        r#"\u0000"#,
    ];
    let mut rng = Rng(42);
    for _ in 0..2000 {
        let n = rng.below(12);
        let lit: String = (0..n).map(|_| spellings[rng.below(spellings.len() as u64) as usize]).collect();
        let doc = format!(
            r#"{{"session":{{"id":"s"}},"capturedThroughSeq":null,"events":[{{"type":"user/message","data":{{"content":[{{"type":"text","text":"{lit}"}}],"source":{{"kind":"user"}}}}}}]}}"#
        );
        let p = project_json(doc.as_bytes()).unwrap();
        if lit.is_empty() {
            assert!(p.items.is_empty());
            continue;
        }
        let text = &p.items[0].text;
        let decoded = text.decode().unwrap();
        assert_eq!(decoded, serde_json::from_str::<String>(&format!("\"{lit}\"")).unwrap());
        assert_eq!(text.byte_len(), decoded.len(), "{lit}");
        assert_eq!(text.tag_safe_len(), string_len(&decoded, true), "{lit}");
        let mut out = String::new();
        text.write_tag_safe(&mut out).unwrap();
        assert_eq!(out, stringify_tag_safe(&Value::from(decoded.as_ref())), "{lit}");
    }
}

/// Content and headers that fronts read as JSON text go through serde_json;
/// with `float_roundtrip` a double survives to the last digit, as in JS.
#[test]
fn doubles_in_json_text_survive_exactly() {
    for text in ["970597.5809926379", "0.1", "1.7976931348623157e308", "5e-324", "123456789.12345679"] {
        let v: Value = serde_json::from_str(text).unwrap();
        let js = stringify_tag_safe(&parse_js(text).unwrap());
        assert_eq!(stringify_tag_safe(&v), js, "{text}");
    }
}
