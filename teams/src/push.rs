//! The push: what a reference may see of each chosen session, and nothing
//! else, written to the team database, one transaction per session.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use dsh_session_reference::{search_fold, Error, ErrorCode, Fingerprint, Hardening, Resolver, SessionHeader};
use tokio_postgres::{Client, Statement};

use crate::connect::{described, Database};
use crate::schema::{self, MigrateError};
use crate::source::{place_folded, text_folded};

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

/// Sessions written in one transaction: a batch costs a few round trips
/// (its rows travel as arrays), where one session at a time cost as many.
const BATCH: usize = 50;

/// Pushes `sessions` to `db`: the schema made or migrated first (an error
/// for a newer one), then every session the database does not hold with
/// the same fingerprint and redaction, read through `resolver` (whose
/// configuration says whether credentials are redacted: the projected
/// conversation and the title as that resolver shows them), written in
/// batches, each batch in one transaction (every session of it replaced
/// whole, or none). Idempotent: run again, it sends nothing; cut anywhere,
/// what it committed is whole and the next run sends the rest. A session
/// the database refuses is left out alone: its batch is written again one
/// session at a time. `progress(done, total)` is called as sessions are
/// done. An error (`READ_FAILED`) when the database cannot be reached or
/// fails; a session that cannot be read is reported in the summary.
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
    // In the order of their ids: every push locks the rows of a batch in the
    // same order, so two pushing the same sessions at once wait for each
    // other rather than deadlock.
    todo.sort_by(|a, b| a.header.id.cmp(&b.header.id));
    let done = AtomicUsize::new(summary.unchanged);
    progress(summary.unchanged, total);
    let batches: Vec<&[PushSession]> = todo.chunks(BATCH).collect();
    let next = AtomicUsize::new(0);
    let shared = Mutex::new(summary);
    let mut clients = vec![client];
    for _ in 1..CONNECTIONS.min(batches.len()) {
        clients.push(db.connect().await.map_err(failed)?);
    }
    let lost = |why: String| {
        failed(format!(
            "pushing to {} failed: {why} (what was pushed before stays; run the push again to send the rest)",
            db.shown()
        ))
    };
    let setting = db.write_setting();
    let workers = clients.into_iter().map(|mut client| {
        let (batches, next, done, shared, setting) = (&batches, &next, &done, &shared, &setting);
        async move {
            let statements = Statements::prepare(&client).await.map_err(|e| lost(described(&e)))?;
            loop {
                let at = next.fetch_add(1, Ordering::Relaxed);
                let Some(batch) = batches.get(at) else { return Ok::<(), Error>(()) };
                let mut rows = Vec::with_capacity(batch.len());
                for s in batch.iter() {
                    match read(resolver, s, redact).await {
                        Ok(row) => rows.push(row),
                        Err(why) => {
                            shared.lock().unwrap_or_else(|e| e.into_inner()).failed.push((s.header.id.clone(), why))
                        }
                    }
                }
                let mut written = Vec::with_capacity(rows.len());
                match write(&mut client, &statements, &rows, setting.as_deref()).await {
                    Ok(()) => written.extend(rows.iter()),
                    Err(Failed::Database(why)) => return Err(lost(why)),
                    // The database refused a row of the batch: each session
                    // alone, so that only those it refuses are left out.
                    Err(Failed::Session(_)) => {
                        for row in &rows {
                            match write(&mut client, &statements, std::slice::from_ref(row), setting.as_deref()).await {
                                Ok(()) => written.push(row),
                                Err(Failed::Session(why)) => {
                                    shared.lock().unwrap_or_else(|e| e.into_inner()).failed.push((row.id.clone(), why))
                                }
                                Err(Failed::Database(why)) => return Err(lost(why)),
                            }
                        }
                    }
                }
                {
                    let mut sum = shared.lock().unwrap_or_else(|e| e.into_inner());
                    sum.pushed += written.len();
                    sum.text_bytes += written.iter().map(|r| r.bytes).sum::<u64>();
                }
                progress(done.fetch_add(batch.len(), Ordering::Relaxed) + batch.len(), total);
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

/// Why one session, or a batch, was not pushed.
enum Failed {
    /// The database refused it (the push goes on).
    Session(String),
    /// The database failed (the push stops).
    Database(String),
}

/// One session's row and messages, as they are stored.
struct Row {
    id: String,
    kind: String,
    project: String,
    cwd: Option<String>,
    title: Option<String>,
    created_at: String,
    created_at_ms: f64,
    conversation_cwd: Option<String>,
    captured: Option<String>,
    fingerprint: Option<Vec<u8>>,
    title_folded: String,
    place: String,
    /// What search runs on ([`text_folded`]).
    text_folded: String,
    owner: Option<String>,
    redacted: bool,
    /// Each message's index, role, whether it is a checkpoint and text.
    messages: Vec<(i32, &'static str, bool, String)>,
    /// Bytes of projected text.
    bytes: u64,
}

/// Reads one session through `resolver`: what a reference may see of it,
/// as it is stored; why not, when it cannot be read.
async fn read(resolver: &Resolver, s: &PushSession, redact: bool) -> Result<Row, String> {
    let id = &s.header.id;
    let conversation = resolver.conversation(id, None).await.map_err(|e| e.message().to_owned())?;
    let title = resolver.session_query().read_title(id).await.map_err(|e| e.message().to_owned())?;
    let title = title.map(|t| Hardening { redact_secrets: redact, ..Hardening::default() }.title_to_keep(t));
    let mut messages = Vec::with_capacity(conversation.messages.len());
    let mut folded = Vec::with_capacity(conversation.messages.len());
    let mut bytes = 0u64;
    for m in conversation.messages {
        let idx = i32::try_from(m.index).map_err(|_| "too many messages".to_owned())?;
        bytes += m.text.len() as u64;
        folded.push(search_fold(&m.text));
        messages.push((idx, m.role.as_str(), m.checkpoint, m.text));
    }
    let title_folded = title.as_deref().map(search_fold).unwrap_or_default();
    let place = place_folded(id, s.header.cwd.as_deref());
    Ok(Row {
        id: id.clone(),
        kind: s.kind.clone(),
        project: s.project.clone(),
        cwd: s.header.cwd.clone(),
        text_folded: text_folded(&title_folded, &place, folded.iter().map(String::as_str)),
        title_folded,
        title,
        created_at: s.header.created_at.to_string(),
        created_at_ms: s.header.created_at.as_f64().unwrap_or(0.0),
        conversation_cwd: conversation.cwd,
        captured: conversation.captured_through_seq.as_ref().map(|n| n.to_string()),
        fingerprint: s.fingerprint.as_ref().map(|f| f.as_bytes().to_vec()),
        place,
        owner: s.owner.clone(),
        redacted: redact,
        messages,
        bytes,
    })
}

/// The statements a push writes with, prepared once on each connection.
struct Statements {
    sessions: Statement,
    delete: Statement,
    messages: Statement,
}

impl Statements {
    async fn prepare(client: &Client) -> Result<Statements, tokio_postgres::Error> {
        Ok(Statements {
            sessions: client
                .prepare(
                    "INSERT INTO dsr_sessions (id, source_kind, project, cwd, title, created_at, created_at_ms,
                         conversation_cwd, captured_through_seq, fingerprint, redacted, title_folded, place_folded,
                         owner, text_folded)
                     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                         $7::float8[], $8::text[], $9::text[], $10::bytea[], $11::bool[], $12::text[], $13::text[],
                         $14::text[], $15::text[])
                     ON CONFLICT (id) DO UPDATE SET source_kind = EXCLUDED.source_kind, project = EXCLUDED.project,
                         cwd = EXCLUDED.cwd, title = EXCLUDED.title, created_at = EXCLUDED.created_at,
                         created_at_ms = EXCLUDED.created_at_ms, conversation_cwd = EXCLUDED.conversation_cwd,
                         captured_through_seq = EXCLUDED.captured_through_seq, fingerprint = EXCLUDED.fingerprint,
                         redacted = EXCLUDED.redacted, title_folded = EXCLUDED.title_folded,
                         place_folded = EXCLUDED.place_folded, owner = EXCLUDED.owner,
                         text_folded = EXCLUDED.text_folded,
                         revision = dsr_sessions.revision + 1, pushed_at = now()",
                )
                .await?,
            delete: client.prepare("DELETE FROM dsr_messages WHERE session_id = ANY($1::text[])").await?,
            messages: client
                .prepare(
                    "INSERT INTO dsr_messages (session_id, idx, role, checkpoint, text)
                     SELECT * FROM unnest($1::text[], $2::int4[], $3::text[], $4::bool[], $5::text[])",
                )
                .await?,
        })
    }
}

/// Replaces the sessions of `rows` in one transaction (`setting` run
/// first): their rows upserted, their messages deleted and inserted, the
/// three statements sent at once.
async fn write(
    client: &mut Client,
    statements: &Statements,
    rows: &[Row],
    setting: Option<&str>,
) -> Result<(), Failed> {
    if rows.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let column = |f: fn(&Row) -> Option<&str>| rows.iter().map(f).collect::<Vec<_>>();
    let (kinds, projects) = (column(|r| Some(&r.kind)), column(|r| Some(&r.project)));
    let (cwds, titles, created) =
        (column(|r| r.cwd.as_deref()), column(|r| r.title.as_deref()), column(|r| Some(&r.created_at)));
    let created_ms: Vec<f64> = rows.iter().map(|r| r.created_at_ms).collect();
    let (conversation_cwds, captured) = (column(|r| r.conversation_cwd.as_deref()), column(|r| r.captured.as_deref()));
    let fingerprints: Vec<Option<&[u8]>> = rows.iter().map(|r| r.fingerprint.as_deref()).collect();
    let redacted: Vec<bool> = rows.iter().map(|r| r.redacted).collect();
    let (titles_folded, places) = (column(|r| Some(&r.title_folded)), column(|r| Some(&r.place)));
    let owners = column(|r| r.owner.as_deref());
    let texts_folded = column(|r| Some(&r.text_folded));
    let n: usize = rows.iter().map(|r| r.messages.len()).sum();
    let (mut m_ids, mut m_idx, mut m_roles, mut m_checkpoints, mut m_texts) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for r in rows {
        for (idx, role, checkpoint, text) in &r.messages {
            m_ids.push(r.id.as_str());
            m_idx.push(*idx);
            m_roles.push(*role);
            m_checkpoints.push(*checkpoint);
            m_texts.push(text.as_str());
        }
    }
    let stored = |e: tokio_postgres::Error| {
        let lost = e.as_db_error().is_none_or(|d| matches!(&d.code().code()[..2], "08" | "57" | "53" | "58"));
        if !lost && !e.is_closed() {
            // The database refused a row (a text it cannot hold): the
            // others go on.
            Failed::Session(format!("the database refused it: {}", described(&e)))
        } else {
            Failed::Database(described(&e))
        }
    };
    let tx = client.transaction().await.map_err(stored)?;
    if let Some(setting) = setting {
        tx.batch_execute(setting).await.map_err(stored)?;
    }
    // Sent together: the server runs them in order, and one refused fails
    // those after it and the transaction, which is then rolled back whole.
    type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);
    let session_params: [Param<'_>; 15] = [
        &ids,
        &kinds,
        &projects,
        &cwds,
        &titles,
        &created,
        &created_ms,
        &conversation_cwds,
        &captured,
        &fingerprints,
        &redacted,
        &titles_folded,
        &places,
        &owners,
        &texts_folded,
    ];
    let delete_params: [Param<'_>; 1] = [&ids];
    let message_params: [Param<'_>; 5] = [&m_ids, &m_idx, &m_roles, &m_checkpoints, &m_texts];
    futures::try_join!(
        tx.execute(&statements.sessions, &session_params),
        tx.execute(&statements.delete, &delete_params),
        tx.execute(&statements.messages, &message_params),
    )
    .map_err(stored)?;
    tx.commit().await.map_err(stored)?;
    Ok(())
}
