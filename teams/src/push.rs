//! The push: what a reference may see of each chosen session, and nothing
//! else, written to the team database, one transaction per session.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use dsh_session_reference::{search_fold, Error, ErrorCode, Fingerprint, Hardening, Resolver, SessionHeader};
use tokio_postgres::Client;

use crate::connect::{described, Database};
use crate::schema::{self, MigrateError};
use crate::source::place_folded;

/// One session a push may send: its header as the local sources list it,
/// its fingerprint there, the name of its source's kind and its project
/// key ([`crate::project_key`]).
#[derive(Clone, Debug)]
pub struct PushSession {
    /// The header (id, `createdAt`, cwd) as listed.
    pub header: SessionHeader,
    /// Its fingerprint in the local source (`None`: it is always sent).
    pub fingerprint: Option<Fingerprint>,
    /// The kind of its source (`dsh`, `claude-code`, ...).
    pub kind: String,
    /// Its project key.
    pub project: String,
    /// The user it is pushed as (`push --as`): served to that user whatever
    /// the projects granted (docs/teams.md); `None`: to no one in
    /// particular, only through its project.
    pub owner: Option<String>,
}

/// What a push did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushSummary {
    /// Sessions sent (new or changed).
    pub pushed: usize,
    /// Sessions the database already held as they are.
    pub unchanged: usize,
    /// Sessions that could not be read or stored, each with why; the
    /// others were pushed.
    pub failed: Vec<(String, String)>,
    /// UTF-8 bytes of projected text sent.
    pub text_bytes: u64,
}

/// How many connections a push writes through side by side.
const CONNECTIONS: usize = 4;

/// Pushes `sessions` to `db`: the schema made or migrated first (an error
/// for a newer one), then every session the database does not hold with
/// the same fingerprint and redaction, read through `resolver` (whose
/// configuration says whether credentials are redacted: the projected
/// conversation and the title as that resolver shows them), each replaced
/// whole in one transaction. Idempotent: run again, it sends nothing; cut
/// anywhere, what it committed is whole and the next run sends the rest.
/// `progress(done, total)` is called as sessions are done. An error
/// (`READ_FAILED`) when the database cannot be reached or fails; a
/// session that cannot be read is reported in the summary.
pub async fn push(
    db: &Database,
    resolver: &Resolver,
    sessions: Vec<PushSession>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<PushSummary, Error> {
    let failed = |what: String| Error::new(ErrorCode::ReadFailed, what);
    let mut client = db.connect().await.map_err(failed)?;
    match schema::migrate(&mut client).await {
        Ok(_) => {}
        Err(MigrateError::Newer(v)) => return Err(failed(schema::newer_message(db.shown(), v))),
        Err(MigrateError::Db(e)) => {
            return Err(failed(format!("making the schema in {} failed: {}", db.shown(), described(&e))))
        }
    }
    let redact = resolver.config().hardening().redact_secrets;
    let ids: Vec<String> = sessions.iter().map(|s| s.header.id.clone()).collect();
    let rows = client
        .query("SELECT id, fingerprint, redacted, owner FROM dsr_sessions WHERE id = ANY($1)", &[&ids])
        .await
        .map_err(|e| failed(format!("reading {} failed: {}", db.shown(), described(&e))))?;
    // Per id: its fingerprint, whether it was redacted, its owner.
    type Held = (Option<Vec<u8>>, bool, Option<String>);
    let held: HashMap<String, Held> = rows.into_iter().map(|r| (r.get(0), (r.get(1), r.get(2), r.get(3)))).collect();
    let total = sessions.len();
    let mut summary = PushSummary::default();
    let mut todo = Vec::new();
    for s in sessions {
        let same = held.get(&s.header.id).is_some_and(|(fp, was_redacted, owner)| {
            *was_redacted == redact
                && *owner == s.owner
                && s.fingerprint.as_ref().is_some_and(|mine| fp.as_deref() == Some(mine.as_bytes()))
        });
        if same {
            summary.unchanged += 1;
        } else {
            todo.push(s);
        }
    }
    let done = AtomicUsize::new(summary.unchanged);
    progress(summary.unchanged, total);
    let next = AtomicUsize::new(0);
    let shared = Mutex::new(summary);
    let mut clients = vec![client];
    for _ in 1..CONNECTIONS.min(todo.len()) {
        clients.push(db.connect().await.map_err(failed)?);
    }
    let workers = clients.into_iter().map(|mut client| {
        let (todo, next, done, shared) = (&todo, &next, &done, &shared);
        async move {
            loop {
                let at = next.fetch_add(1, Ordering::Relaxed);
                let Some(s) = todo.get(at) else { return Ok::<(), Error>(()) };
                match one(&mut client, resolver, s, redact).await {
                    Ok(bytes) => {
                        let mut sum = shared.lock().unwrap_or_else(|e| e.into_inner());
                        sum.pushed += 1;
                        sum.text_bytes += bytes;
                    }
                    Err(Failed::Session(why)) => {
                        shared.lock().unwrap_or_else(|e| e.into_inner()).failed.push((s.header.id.clone(), why));
                    }
                    Err(Failed::Database(why)) => {
                        return Err(failed(format!(
                            "pushing to {} failed: {why} (what was pushed before stays; run the push again to send \
                             the rest)",
                            db.shown()
                        )))
                    }
                }
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            }
        }
    });
    for result in futures::future::join_all(workers).await {
        result?;
    }
    let mut summary = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    summary.failed.sort();
    Ok(summary)
}

/// Why one session was not pushed.
enum Failed {
    /// It could not be read or stored (the push goes on).
    Session(String),
    /// The database failed (the push stops).
    Database(String),
}

/// Reads one session through `resolver` and replaces it in one
/// transaction; the bytes of projected text sent.
async fn one(client: &mut Client, resolver: &Resolver, s: &PushSession, redact: bool) -> Result<u64, Failed> {
    let id = &s.header.id;
    let conversation = resolver.conversation(id, None).await.map_err(|e| Failed::Session(e.message().to_owned()))?;
    let title = resolver.session_query().read_title(id).await.map_err(|e| Failed::Session(e.message().to_owned()))?;
    let title = title.map(|t| Hardening { redact_secrets: redact, ..Hardening::default() }.title_to_keep(t));
    let mut idx = Vec::with_capacity(conversation.messages.len());
    let (mut roles, mut checkpoints, mut texts, mut folded) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut bytes = 0u64;
    for m in &conversation.messages {
        idx.push(i32::try_from(m.index).map_err(|_| Failed::Session("too many messages".into()))?);
        roles.push(m.role.as_str());
        checkpoints.push(m.checkpoint);
        folded.push(search_fold(&m.text));
        texts.push(m.text.as_str());
        bytes += m.text.len() as u64;
    }
    let created_at = s.header.created_at.to_string();
    let created_at_ms = s.header.created_at.as_f64().unwrap_or(0.0);
    let captured = conversation.captured_through_seq.as_ref().map(|n| n.to_string());
    let title_folded = title.as_deref().map(search_fold).unwrap_or_default();
    let place = place_folded(id, s.header.cwd.as_deref());
    let fingerprint = s.fingerprint.as_ref().map(|f| f.as_bytes().to_vec());
    let stored = |e: tokio_postgres::Error| {
        let lost = e.as_db_error().is_none_or(|d| matches!(&d.code().code()[..2], "08" | "57" | "53" | "58"));
        if !lost && !e.is_closed() {
            // The database refused this session's rows (a text it cannot
            // hold): the others go on.
            Failed::Session(format!("the database refused it: {}", described(&e)))
        } else {
            Failed::Database(described(&e))
        }
    };
    let tx = client.transaction().await.map_err(stored)?;
    tx.execute(
        "INSERT INTO dsr_sessions (id, source_kind, project, cwd, title, created_at, created_at_ms, conversation_cwd,
             captured_through_seq, fingerprint, redacted, title_folded, place_folded, owner)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
         ON CONFLICT (id) DO UPDATE SET source_kind = $2, project = $3, cwd = $4, title = $5, created_at = $6,
             created_at_ms = $7, conversation_cwd = $8, captured_through_seq = $9, fingerprint = $10,
             redacted = $11, title_folded = $12, place_folded = $13, owner = $14,
             revision = dsr_sessions.revision + 1, pushed_at = now()",
        &[
            id,
            &s.kind,
            &s.project,
            &s.header.cwd,
            &title,
            &created_at,
            &created_at_ms,
            &conversation.cwd,
            &captured,
            &fingerprint,
            &redact,
            &title_folded,
            &place,
            &s.owner,
        ],
    )
    .await
    .map_err(stored)?;
    tx.execute("DELETE FROM dsr_messages WHERE session_id = $1", &[id]).await.map_err(stored)?;
    tx.execute(
        "INSERT INTO dsr_messages (session_id, idx, role, checkpoint, text, folded)
         SELECT $1, * FROM unnest($2::int4[], $3::text[], $4::bool[], $5::text[], $6::text[])",
        &[id, &idx, &roles, &checkpoints, &texts, &folded],
    )
    .await
    .map_err(stored)?;
    tx.commit().await.map_err(stored)?;
    Ok(bytes)
}
