//! Bounded reads (docs/contract.md §12): pages of one session's projected
//! conversation under a byte budget, their cursors both ways, `around`
//! centring, the capture pin (a changed session fails a cursor), the cut of
//! a message longer than the budget, the framing and the hardened mode.

use std::sync::Arc;

mod common;

use dsh_session_reference::{
    block_on, encode_uri, CancelToken, Candidate, Config, ErrorCode, Hardening, MemoryQuery, Page, ReadOptions,
    Resolver, SessionHeader, Target, DEFAULT_READ_BYTES, PAGE_FOOTER, PAGE_HEADER,
};
use serde_json::{json, Value};

const ID: &str = "src";

/// A DSH surface whose projected messages are `texts` (alternating user and
/// assistant, the first `checkpoints` of them compaction checkpoints), with
/// a tool result between every two messages, which projection drops.
fn surface(texts: &[String], checkpoints: usize, seq: u64) -> Value {
    let mut events = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let content = json!([{"type": "text", "text": text}]);
        events.push(if i < checkpoints {
            json!({"seq": i, "type": "user/message",
                "data": {"content": content, "source": {"kind": "plugin", "plugin": "compact"}}})
        } else if i % 2 == 0 {
            json!({"seq": i, "type": "user/message", "data": {"content": content, "source": {"kind": "user"}}})
        } else {
            json!({"seq": i, "type": "assistant/message", "data": {"message": {"content": content}}})
        });
        events.push(json!({"seq": i, "type": "tool/result", "data": {"output": "<tool output never read>"}}));
    }
    json!({"session": {"id": ID, "createdAt": 1, "cwd": "/w"}, "capturedThroughSeq": seq, "events": events})
}

/// Messages of varied sizes, escapes and scripts.
fn texts(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match i % 5 {
            0 => format!("message {i}: short"),
            1 => format!("message {i}: {}", "word ".repeat(20 + i)),
            2 => format!("message {i}: <tag> \"quoted\" \\ {}", "界".repeat(30)),
            3 => format!("message {i}: line\nbreak\ttab \u{1} control"),
            _ => format!("message {i}: {}", "x".repeat(150)),
        })
        .collect()
}

fn resolver_over(query: Arc<MemoryQuery>, config: Config) -> Resolver {
    Resolver::new(query, config)
}

fn filled(texts: &[String]) -> (Arc<MemoryQuery>, Resolver) {
    let q = Arc::new(MemoryQuery::new());
    q.add_session(SessionHeader::new(ID, 1u64, Some("/w".into())));
    q.set_title(ID, Some("The <title>".into()));
    q.set_surface(ID, surface(texts, 1, 99));
    let r = resolver_over(Arc::clone(&q), Config::default());
    (q, r)
}

fn target() -> Target {
    Target::new("reader", Some("/w".into()))
}

fn read(r: &Resolver, options: &ReadOptions) -> Result<Page, ErrorCode> {
    block_on(r.read(&target(), ID, options, None)).map_err(|e| e.code())
}

fn indexes(page: &Page) -> Vec<u64> {
    page.messages.iter().map(|m| m.index).collect()
}

/// Checks what every page promises: within budget, consecutive indexes,
/// texts as projected (whole unless cut), the framing, and no `<` of the
/// source in the framed text.
fn check_page(page: &Page, all: &[String], budget: u64) {
    assert!(page.text.len() as u64 <= budget, "{} bytes over {budget}", page.text.len());
    assert!(page.text.starts_with(PAGE_HEADER) && page.text.ends_with(PAGE_FOOTER));
    assert_eq!(page.text.matches('<').count(), 2, "only the two tags: {}", page.text);
    let json: Value = serde_json::from_str(&page.text[PAGE_HEADER.len()..page.text.len() - PAGE_FOOTER.len()]).unwrap();
    assert_eq!(json["totalMessages"], all.len());
    assert_eq!(json["messages"].as_array().unwrap().len(), page.messages.len());
    assert_eq!(page.total_messages, all.len() as u64);
    for (k, m) in page.messages.iter().enumerate() {
        assert_eq!(m.index, page.messages[0].index + k as u64, "consecutive");
        assert_eq!(json["messages"][k]["index"], m.index);
        assert_eq!(json["messages"][k]["text"], m.text.as_str());
        if m.omitted_bytes == 0 {
            assert_eq!(m.text, all[m.index as usize]);
        }
    }
}

#[test]
fn forward_pages_add_up_to_the_whole_conversation_in_order() {
    let all = texts(40);
    let (_, r) = filled(&all);
    for budget in [900u64, 1500, 4096, 100_000] {
        let mut seen = Vec::new();
        let mut page = read(&r, &ReadOptions::default().with_start(Some(0)).with_max_bytes(budget)).unwrap();
        assert_eq!(page.prev_cursor, None, "nothing before message 0");
        let mut pages = 1;
        loop {
            check_page(&page, &all, budget);
            assert!(!page.messages.is_empty());
            seen.extend(indexes(&page));
            let Some(next) = page.next_cursor.clone() else { break };
            page = read(&r, &ReadOptions::default().with_cursor(Some(next)).with_max_bytes(budget)).unwrap();
            pages += 1;
        }
        assert_eq!(seen, (0..40).collect::<Vec<u64>>(), "budget {budget}");
        assert_eq!(pages == 1, budget == 100_000, "budget {budget}: {pages} pages");
    }
}

#[test]
fn the_default_page_is_the_newest_and_prev_cursors_read_back_to_the_start() {
    let all = texts(40);
    let (_, r) = filled(&all);
    let budget = 1200;
    let mut page = read(&r, &ReadOptions::default().with_max_bytes(budget)).unwrap();
    assert_eq!(page.messages.last().unwrap().index, 39, "the newest message");
    assert_eq!(page.next_cursor, None);
    let mut seen = Vec::new();
    loop {
        check_page(&page, &all, budget);
        seen.splice(0..0, indexes(&page));
        let Some(prev) = page.prev_cursor.clone() else { break };
        page = read(&r, &ReadOptions::default().with_cursor(Some(prev)).with_max_bytes(budget)).unwrap();
    }
    assert_eq!(seen, (0..40).collect::<Vec<u64>>());
    assert_eq!(page.messages[0].index, 0);
}

#[test]
fn cursors_continue_right_after_and_right_before_a_page() {
    let all = texts(30);
    let (_, r) = filled(&all);
    let options = ReadOptions::default().with_start(Some(10)).with_max_bytes(1000);
    let page = read(&r, &options).unwrap();
    let (lo, hi) = (page.messages[0].index, page.messages.last().unwrap().index);
    let next = read(&r, &ReadOptions::default().with_cursor(page.next_cursor.clone()).with_max_bytes(1000)).unwrap();
    assert_eq!(next.messages[0].index, hi + 1);
    let prev = read(&r, &ReadOptions::default().with_cursor(page.prev_cursor.clone()).with_max_bytes(1000)).unwrap();
    assert_eq!(prev.messages.last().unwrap().index, lo - 1);
    // The same cursor reads the same page again while nothing changed.
    let again = read(&r, &ReadOptions::default().with_cursor(page.next_cursor.clone()).with_max_bytes(1000)).unwrap();
    assert_eq!(again, next);
}

#[test]
fn around_centres_on_the_index_as_far_as_the_ends_allow() {
    let all: Vec<String> = (0..21).map(|i| format!("m{i:02} {}", "y".repeat(60))).collect();
    let (_, r) = filled(&all);
    let one = PAGE_HEADER.len(); // the framing, then room for a few messages of about 100 bytes
    let page = read(&r, &ReadOptions::default().with_around(Some(10)).with_max_bytes(one as u64 + 700)).unwrap();
    let got = indexes(&page);
    assert!(got.contains(&10) && got.len() >= 3, "{got:?}");
    let (before, after) = (10 - got[0], got.last().unwrap() - 10);
    assert!(before == after || before == after + 1, "centred, the extra one before: {got:?}");
    // Near the start the page goes on after the index.
    let near = read(&r, &ReadOptions::default().with_around(Some(1)).with_max_bytes(one as u64 + 700)).unwrap();
    assert_eq!(near.messages[0].index, 0);
    assert_eq!(near.messages.len(), got.len(), "the same number of messages, shifted");
    assert!(near.prev_cursor.is_none() && near.next_cursor.is_some());
}

#[test]
fn a_message_longer_than_the_budget_is_cut_head_tail_with_the_exact_notice() {
    let long: String = (0..3000).map(|i| char::from(b'a' + (i % 26) as u8)).collect::<String>() + "界界界 end";
    let all = vec!["before".to_owned(), long.clone(), "after".to_owned()];
    let (_, r) = filled(&all);
    for (options, budget) in [
        (ReadOptions::default().with_around(Some(1)), 1000u64),
        (ReadOptions::default().with_start(Some(1)), 700),
        (ReadOptions::default().with_cursor(None), 800),
    ] {
        let options = options.with_max_bytes(budget);
        let page = read(&r, &options).unwrap();
        check_page(&page, &all, budget);
        let m = page.messages.iter().find(|m| m.index == 1).or(page.messages.last()).unwrap();
        if m.index != 1 {
            continue; // the newest page is "after" alone, which fits
        }
        assert_eq!(page.messages.len(), 1, "a cut message is alone on its page");
        let n = m.omitted_bytes as usize;
        assert!(n > 0);
        let notice = format!("\n[\u{2026} omitted {n} UTF-8 bytes \u{2026}]");
        let kept = m.text.strip_suffix(&notice).expect("the exact omission notice");
        assert_eq!(kept.len(), long.len() - n, "N counts every byte left out");
        let split = (0..=kept.len())
            .filter(|&h| kept.is_char_boundary(h))
            .any(|h| long.starts_with(&kept[..h]) && long.ends_with(&kept[h..]));
        assert!(split, "a head and a tail of the original: {kept}");
        assert!(page.text.len() as u64 <= budget && page.text.len() as u64 > budget - 40, "the cut fills the page");
    }
    // Too small for even the fixed part.
    let e = read(&r, &ReadOptions::default().with_max_bytes(200)).unwrap_err();
    assert_eq!(e, ErrorCode::BudgetExceeded);
}

#[test]
fn a_cursor_pins_the_conversation_and_a_changed_session_says_start_again() {
    let all = texts(12);
    let (q, r) = filled(&all);
    let page = read(&r, &ReadOptions::default().with_start(Some(0)).with_max_bytes(900)).unwrap();
    let next = page.next_cursor.clone().unwrap();
    // Events projection drops and a later capturedThroughSeq do not matter.
    let mut grown = surface(&all, 1, 150);
    grown["events"].as_array_mut().unwrap().push(json!({"seq": 150, "type": "tool/result", "data": {}}));
    q.set_surface(ID, grown);
    let same = read(&r, &ReadOptions::default().with_cursor(Some(next.clone())).with_max_bytes(900)).unwrap();
    assert_eq!(same.captured_through_seq, Some(150u64.into()), "the current capture");
    // A new message, an edited one, or a removed one: start again.
    let mut more = all.clone();
    more.push("a new message".into());
    let mut edited = all.clone();
    edited[3].push('!');
    for changed in [more, edited, all[..11].to_vec()] {
        q.set_surface(ID, surface(&changed, 1, 200));
        let e =
            block_on(r.read(&target(), ID, &ReadOptions::default().with_cursor(Some(next.clone())), None)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::SessionChanged, "{e}");
        assert!(e.message().contains("changed"), "{e}");
        // Without the cursor, reading works.
        read(&r, &ReadOptions::default()).unwrap();
    }
}

#[test]
fn bad_options_and_cursors_fail_before_any_read() {
    let q = Arc::new(MemoryQuery::new());
    q.fail_surface(ID, "must not be read");
    let r = resolver_over(Arc::clone(&q), Config::default());
    let foreign = {
        let (_, other) = filled(&texts(5));
        let p = block_on(other.read(&target(), ID, &ReadOptions::default().with_max_bytes(700), None)).unwrap();
        // A cursor of session `src` used for session `other`.
        p.prev_cursor.unwrap()
    };
    for options in [
        ReadOptions::default().with_start(Some(0)).with_around(Some(1)),
        ReadOptions::default().with_start(Some(0)).with_cursor(Some(foreign.clone())),
        ReadOptions::default().with_cursor(Some("not a cursor".into())),
        ReadOptions::default().with_cursor(Some(String::new())),
        ReadOptions::default().with_max_bytes(0),
        ReadOptions::default().with_max_tokens(Some(0)),
        ReadOptions::default().with_start(Some(1 << 53)),
    ] {
        let e = block_on(r.read(&target(), ID, &options, None)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidReference, "{options:?}: {e}");
    }
    let e = block_on(r.read(&target(), "other", &ReadOptions::default().with_cursor(Some(foreign)), None)).unwrap_err();
    assert!(e.message().contains("another session"), "{e}");
    // The target's own session: refused as prepare refuses it, before reading.
    let e = block_on(r.read(&Target::new(ID, None), ID, &ReadOptions::default(), None)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::SelfReference);
    // Then cancellation, then the read.
    let token = CancelToken::new();
    token.cancel();
    let e = block_on(r.read(&target(), ID, &ReadOptions::default(), Some(&token))).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Cancelled);
    let e = block_on(r.read(&target(), ID, &ReadOptions::default(), None)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ReadFailed);
    assert!(e.message().contains("must not be read"), "{e}");
}

#[test]
fn an_index_past_the_last_message_gives_an_empty_page_with_a_way_back() {
    let all = texts(6);
    let (_, r) = filled(&all);
    for options in [ReadOptions::default().with_start(Some(6)), ReadOptions::default().with_around(Some(1000))] {
        let page = read(&r, &options).unwrap();
        assert!(page.messages.is_empty());
        assert_eq!(page.total_messages, 6);
        assert_eq!(page.next_cursor, None);
        let back = read(&r, &ReadOptions::default().with_cursor(page.prev_cursor.clone())).unwrap();
        assert_eq!(indexes(&back), (0..6).collect::<Vec<u64>>(), "all six fit the default budget");
        assert!(page.text.ends_with(&format!("\"totalMessages\":6,\"messages\":[]}}{PAGE_FOOTER}")));
    }
    // An empty session: an empty page and no cursor.
    let (_, empty) = filled(&[]);
    let page = read(&empty, &ReadOptions::default()).unwrap();
    assert_eq!((page.messages.len(), page.next_cursor.as_ref(), page.prev_cursor.as_ref()), (0, None, None));
}

#[test]
fn the_framed_text_and_the_json_have_these_exact_bytes() {
    let all = vec!["summary <so far>".to_owned(), "Use \"tabs\"?".to_owned(), "Spaces.\u{2028}".to_owned()];
    let (_, r) = filled(&all);
    let page = read(&r, &ReadOptions::default()).unwrap();
    let body = "{\"sessionId\":\"src\",\"label\":\"The \\u003ctitle>\",\"cwd\":\"/w\",\"capturedThroughSeq\":99,\
        \"totalMessages\":3,\"messages\":[\
        {\"index\":0,\"role\":\"user\",\"text\":\"summary \\u003cso far>\",\"checkpoint\":true},\
        {\"index\":1,\"role\":\"assistant\",\"text\":\"Use \\\"tabs\\\"?\"},\
        {\"index\":2,\"role\":\"user\",\"text\":\"Spaces.\u{2028}\"}]}";
    assert_eq!(page.text, format!("{PAGE_HEADER}{body}{PAGE_FOOTER}"));
    assert_eq!(
        page.to_json(),
        json!({"sessionId": "src", "label": "The <title>", "cwd": "/w", "totalMessages": 3, "capturedThroughSeq": 99,
            "messages": [
            {"index": 0, "role": "user", "text": "summary <so far>", "checkpoint": true},
            {"index": 1, "role": "assistant", "text": "Use \"tabs\"?", "checkpoint": false},
            {"index": 2, "role": "user", "text": "Spaces.\u{2028}", "checkpoint": false}
        ]})
    );
    let keys: Vec<String> = page.to_json_with_text().as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["sessionId", "label", "cwd", "totalMessages", "capturedThroughSeq", "messages", "text"]);
    // For a model that reads a parsed value: the texts travel once, in the
    // frame; the label is tag-safe as the frame writes it.
    let hardened = page.to_json_hardened(&Hardening::ALL);
    assert_eq!(hardened["label"], "The \\u003ctitle>");
    assert_eq!(hardened["text"], page.text.as_str());
    assert_eq!(hardened["messages"][0], json!({"index": 0, "role": "user", "checkpoint": true}));
    let keys: Vec<String> = hardened.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["sessionId", "label", "cwd", "totalMessages", "capturedThroughSeq", "messages", "text"]);
    assert_eq!(page.to_json_hardened(&Hardening::default())["label"], "The <title>");
    assert!(PAGE_HEADER.contains("untrusted") && PAGE_HEADER.ends_with("<referenced-session-page>\n"));
    assert_eq!(DEFAULT_READ_BYTES, 16_384);
}

#[test]
fn a_token_budget_is_at_most_one_token_per_byte() {
    let all = texts(30);
    let (_, r) = filled(&all);
    let by_tokens = read(&r, &ReadOptions::default().with_max_tokens(Some(1500))).unwrap();
    let by_bytes = read(&r, &ReadOptions::default().with_max_bytes(1500)).unwrap();
    assert_eq!(by_tokens, by_bytes);
    assert!(by_tokens.text.len() <= 1500);
    // The smaller of the two budgets applies.
    let both = read(&r, &ReadOptions::default().with_max_bytes(1200).with_max_tokens(Some(5000))).unwrap();
    assert!(both.text.len() <= 1200);
}

#[test]
fn the_hardened_mode_applies_to_pages_and_the_plain_mode_changes_nothing() {
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let all = vec![format!("token {secret} here"), "bidi \u{202e}gnp.exe".to_owned(), "ok".to_owned()];
    let q = Arc::new(MemoryQuery::new());
    q.set_title(ID, Some(format!("title\u{202e} {secret}")));
    q.set_surface(ID, surface(&all, 0, 3));
    let plain = resolver_over(Arc::clone(&q), Config::default());
    let hardened = resolver_over(Arc::clone(&q), Config::from_json(&json!({"hardened": true})).unwrap());
    let p = read(&plain, &ReadOptions::default()).unwrap();
    assert!(p.text.contains(secret) && p.text.contains('\u{202e}'));
    assert_eq!(p.redacted_secrets, None);
    assert!(p.to_json().get("redactedSecrets").is_none());
    let h = read(&hardened, &ReadOptions::default()).unwrap();
    assert!(!h.text.contains(secret) && !h.text.contains('\u{202e}'), "{}", h.text);
    assert!(h.text.contains("\\u202e") && h.text.contains("[redacted"), "{}", h.text);
    assert!(h.messages[0].text.contains("[redacted") && !h.messages[0].text.contains(secret));
    assert_eq!(h.messages[1].text, all[1], "escaping is the framed text's; texts stay as they are");
    assert_eq!(h.redacted_secrets, Some(1));
    assert_eq!(h.to_json()["redactedSecrets"], 1);
    assert!(!h.title.contains('\u{202e}') && !h.title.contains(secret), "{}", h.title);
    // A cursor of one mode reads on in the other: the pin is of the source.
    let small = ReadOptions::default().with_start(Some(0)).with_max_bytes(h.text.len() as u64 - 10);
    let c = read(&hardened, &small).unwrap().next_cursor.unwrap();
    read(&plain, &ReadOptions::default().with_cursor(Some(c))).unwrap();
}

#[test]
fn a_page_is_read_from_events_or_a_projected_conversation_alike() {
    use dsh_session_reference::{Conversation, ConversationItem, Role, SurfaceData};
    let all = texts(8);
    let (_, events) = filled(&all);
    let q = Arc::new(MemoryQuery::new());
    q.set_title(ID, Some("The <title>".into()));
    let items = all
        .iter()
        .enumerate()
        .map(|(i, t)| match i {
            0 => ConversationItem::checkpoint(t.as_str()),
            _ if i % 2 == 0 => ConversationItem::new(Role::User, t.as_str()),
            _ => ConversationItem::new(Role::Assistant, t.as_str()),
        })
        .collect();
    let conversation =
        Conversation { session_id: ID.into(), cwd: Some("/w".into()), captured_through_seq: Some(99u64.into()), items };
    q.set_surface(ID, SurfaceData::from(conversation));
    let projected = resolver_over(q, Config::default());
    let options = ReadOptions::default().with_around(Some(4)).with_max_bytes(1000);
    let a = read(&events, &options).unwrap();
    let b = read(&projected, &options).unwrap();
    assert_eq!(a, b);
    // So are their cursors: the pin is of the projected messages.
    read(&projected, &ReadOptions::default().with_cursor(a.next_cursor)).unwrap();
}

#[test]
fn random_sessions_and_budgets_page_within_budget_both_ways() {
    let mut rng = common::Rng(0x5eed_1234_abcd_0001);
    let cuts = std::cell::Cell::new(0u32);
    let pieces = ["a", "word ", "<", "\"", "\\", "\n", "\u{1}", "界", "😀", "\u{202e}", "\u{feff}", "x"];
    for round in 0..60 {
        let n = rng.below(30) as usize;
        let texts: Vec<String> = (0..n)
            .map(|_| {
                let long = rng.below(8) == 0;
                let len = 1 + rng.below(if long { 900 } else { 60 });
                (0..len).map(|_| pieces[rng.below(pieces.len() as u64) as usize]).collect()
            })
            .collect();
        let hardened = round % 3 == 0;
        let config = if hardened { json!({"hardened": true}) } else { json!(null) };
        let q = Arc::new(MemoryQuery::new());
        q.set_title(ID, Some("t".into()));
        q.set_surface(ID, surface(&texts, (round % 4) as usize, 1));
        let r = resolver_over(q, Config::from_json(&config).unwrap());
        let budget = 520 + rng.below(1500);
        let options = |o: ReadOptions| o.with_max_bytes(budget);
        let check = |page: &Page| {
            assert!(page.text.len() as u64 <= budget, "round {round}: {} > {budget}", page.text.len());
            assert_eq!(page.text.matches('<').count(), 2, "round {round}");
            if hardened {
                assert!(!page.text.contains('\u{202e}'), "round {round}");
            }
            cuts.set(cuts.get() + page.messages.iter().filter(|m| m.omitted_bytes > 0).count() as u32);
            for m in &page.messages {
                if m.omitted_bytes == 0 && !hardened {
                    assert_eq!(m.text, texts[m.index as usize], "round {round}");
                }
            }
        };
        // Forward from 0, backward from the newest: each visits every message once, in order.
        let mut forward = Vec::new();
        let mut page = read(&r, &options(ReadOptions::default().with_start(Some(0)))).unwrap();
        loop {
            check(&page);
            forward.extend(indexes(&page));
            let Some(c) = page.next_cursor.clone() else { break };
            page = read(&r, &options(ReadOptions::default().with_cursor(Some(c)))).unwrap();
        }
        let mut backward = Vec::new();
        let mut page = read(&r, &options(ReadOptions::default())).unwrap();
        loop {
            check(&page);
            backward.splice(0..0, indexes(&page));
            let Some(c) = page.prev_cursor.clone() else { break };
            page = read(&r, &options(ReadOptions::default().with_cursor(Some(c)))).unwrap();
        }
        let all: Vec<u64> = (0..n as u64).collect();
        assert_eq!((forward.clone(), backward), (all.clone(), all), "round {round}");
        if n > 0 {
            let at = rng.below(n as u64);
            let page = read(&r, &options(ReadOptions::default().with_around(Some(at)))).unwrap();
            check(&page);
            assert!(indexes(&page).contains(&at), "round {round}");
        }
    }
    assert!(cuts.get() > 10, "the rounds cut long messages too ({} cuts)", cuts.get());
}

#[test]
fn a_front_names_a_session_and_labels_it_through_the_core() {
    let query = MemoryQuery::new();
    for id in ["claude-code:abc", "codex:abc", "codex:xyz", "plain"] {
        query.add_session(SessionHeader::new(id, 1u64, None));
    }
    query.set_title("codex:xyz", Some("Plan <b>\u{202e}x".into()));
    query.fail_title("gone", "no such session");
    let resolver = Resolver::new(Arc::new(query), Config::default().with_hardening(Hardening::ALL));
    let named = |n: &str| block_on(resolver.session_id(n));
    assert_eq!(named("xyz").unwrap(), "codex:xyz", "an id without its prefix, when one source has it");
    assert_eq!(named("codex:xyz").unwrap(), "codex:xyz");
    assert_eq!(named(&encode_uri("codex:xyz")).unwrap(), "codex:xyz");
    assert_eq!(named("nope").unwrap(), "nope", "left for the read to report missing");
    let both = named("abc").unwrap_err();
    assert!(both.message().contains("claude-code:abc") && both.message().contains("codex:abc"), "{both:?}");
    assert!(named("dsh-session:bad").is_err());
    let target = Target::new("plain", None);
    // The hardened label rules: the bidi control gone; `<` stays in a
    // label (the frame escapes it), and `Hardening::text` writes it for a
    // parsed value.
    let label = block_on(resolver.label(&target, "codex:xyz")).unwrap();
    assert_eq!(label, "Plan <b>x");
    assert_eq!(Hardening::ALL.text(&label), "Plan \\u003cb>x");
    assert_eq!(block_on(resolver.label(&target, "claude-code:abc")).unwrap(), "claude-code:abc", "no title: the id");
    assert_eq!(block_on(resolver.label(&target, "plain")).unwrap_err().code(), ErrorCode::SelfReference);
    assert_eq!(block_on(resolver.label(&target, "gone")).unwrap_err().code(), ErrorCode::ReadFailed);
    // The candidate for a parsed value: no raw `<` or invisible character,
    // and its mention still names the exact id.
    let c = Candidate {
        session_id: "s<1>".into(),
        label: "A <b>".into(),
        cwd: Some("/w/<x>\u{200b}".into()),
        created_at: 1.into(),
        mention: None,
        same_workspace: None,
        display_title: None,
    }
    .with_mention();
    let v = c.to_json_hardened(&Hardening::ALL);
    assert_eq!(v["sessionId"], "s\\u003c1>");
    assert_eq!(v["label"], "A \\u003cb>");
    assert_eq!(v["cwd"], "/w/\\u003cx>\\u200b");
    let mention = v["mention"].as_str().unwrap();
    assert!(!mention.contains('<'), "{mention}");
    assert_eq!(dsh_session_reference::session_id_named(mention).unwrap(), "s<1>");
    assert_eq!(c.to_json_hardened(&Hardening::default()), c.to_json(), "with every protection off: as it is");
}
