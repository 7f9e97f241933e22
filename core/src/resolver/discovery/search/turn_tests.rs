//! Searches that outnumber the cores score in turns: never more at once
//! than the process has cores, whatever how many are asked at once, and
//! each gets its exact answer.

use super::*;
use crate::conversation::{Conversation, ConversationItem};
use crate::host::SessionQuery;
use crate::memory::MemoryQuery;
use crate::projection::Role;

/// 300 sessions of about 40 KB each; every third one says `needle` in
/// its last message (so each search verifies many texts to their end).
fn query() -> Arc<MemoryQuery> {
    let q = MemoryQuery::new();
    let filler = "words that fill a message about the plan and the build ".repeat(40);
    for i in 0..300u64 {
        let id = format!("s{i:03}");
        q.add_session(SessionHeader::new(&id, i, Some("/p".into())));
        let mut items: Vec<ConversationItem> = (0..18)
            .map(|n| ConversationItem::new(if n % 2 == 0 { Role::User } else { Role::Assistant }, filler.clone()))
            .collect();
        let last = if i % 3 == 0 { format!("{filler} needle {i}") } else { filler.clone() };
        items.push(ConversationItem::new(Role::Assistant, last));
        let conversation =
            Conversation { session_id: id.clone(), cwd: Some("/p".into()), captured_through_seq: None, items };
        q.set_surface(&id, conversation);
    }
    Arc::new(q)
}

#[test]
fn concurrent_searches_score_at_most_one_per_core_at_once_and_answer_exactly() {
    let resolver = Resolver::new(query() as Arc<dyn SessionQuery>, crate::config::Config::default());
    let target = Target::new("me", Some("/p".into()));
    let options = SearchOptions { limit: Some(1000), ..Default::default() };
    // The first search indexes every session; the ones after it only score.
    let first = crate::runtime::block_on(resolver.search(&target, "needle", &options, None)).expect("searched");
    assert_eq!(first.len(), 100);
    let asked = 4 * crate::runtime::cores() + 4;
    let answers = crate::runtime::block_on(futures::future::join_all(
        (0..asked).map(|_| resolver.search(&target, "needle", &options, None)),
    ));
    for answer in answers {
        let ids: Vec<String> = answer.expect("searched").into_iter().map(|r| r.candidate.session_id).collect();
        let first: Vec<String> = first.iter().map(|r| r.candidate.session_id.clone()).collect();
        assert_eq!(ids, first);
    }
    let most = crate::index::MOST_SEARCHING.load(std::sync::atomic::Ordering::Relaxed);
    assert!(most >= 1, "no search was counted");
    assert!(most <= crate::runtime::cores(), "{most} searches scored at once on {} cores", crate::runtime::cores());
}
