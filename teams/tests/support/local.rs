//! The local side of the team tests: a resolver over a DSH root, and what a
//! push takes of its sessions (each its cwd as its project, always sent).

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use dsh_session_reference::{block_on, Config, DshStore, Resolver, SessionQuery};
use dsh_session_reference_teams::PushSession;

/// A resolver over the DSH sessions of `root`, and what a push takes of them.
pub fn local(root: &Path) -> (Resolver, Vec<PushSession>) {
    let resolver = Resolver::new(Arc::new(DshStore::open(root).unwrap()), Config::default());
    let listed = block_on(resolver.session_query().list_sessions()).unwrap();
    let sessions = listed
        .into_iter()
        .map(|header| PushSession {
            project: header.cwd.clone().unwrap_or_default(),
            header,
            fingerprint: None,
            kind: "dsh".into(),
            owner: None,
        })
        .collect();
    (resolver, sessions)
}
