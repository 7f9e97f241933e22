//! The schema the tool owns (docs/teams.md): its versioned migrations,
//! applied by a push, and the check every reader makes first.

use tokio_postgres::Client;

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i32 = 4;

/// The first version this build reads and serves: each session's search
/// text and its trigram index, where search runs (older versions are
/// migrated by a push or a `users` command, never by a reader).
pub(crate) const READ_VERSION: i32 = 4;

/// The migrations, in order: `MIGRATIONS[n]` takes a database from version
/// `n` to `n + 1`. A migration is never changed once released; a change
/// is a new one.
const MIGRATIONS: &[&str] = &[
    // 1: the sessions and their projected messages, and the trigram indexes
    // search runs on (over the folded texts, compared exactly).
    "CREATE EXTENSION IF NOT EXISTS pg_trgm;
     CREATE TABLE dsr_sessions (
         id text PRIMARY KEY,
         source_kind text NOT NULL,
         project text NOT NULL,
         cwd text,
         title text,
         created_at text NOT NULL,
         created_at_ms double precision NOT NULL,
         conversation_cwd text,
         captured_through_seq text,
         fingerprint bytea,
         redacted boolean NOT NULL,
         revision bigint NOT NULL DEFAULT 1,
         pushed_at timestamptz NOT NULL DEFAULT now(),
         title_folded text NOT NULL,
         place_folded text NOT NULL
     );
     CREATE INDEX dsr_sessions_listing ON dsr_sessions (created_at_ms DESC, id);
     CREATE INDEX dsr_sessions_project ON dsr_sessions (project, created_at_ms DESC, id);
     CREATE INDEX dsr_sessions_title_trgm ON dsr_sessions USING gin (title_folded gin_trgm_ops);
     CREATE INDEX dsr_sessions_place_trgm ON dsr_sessions USING gin (place_folded gin_trgm_ops);
     CREATE TABLE dsr_messages (
         session_id text NOT NULL REFERENCES dsr_sessions (id) ON DELETE CASCADE,
         idx integer NOT NULL,
         role text NOT NULL,
         checkpoint boolean NOT NULL,
         text text NOT NULL,
         folded text NOT NULL,
         PRIMARY KEY (session_id, idx)
     );
     CREATE INDEX dsr_messages_folded_trgm ON dsr_messages USING gin (folded gin_trgm_ops);",
    // 2: the user a session was pushed as, the team's users, their tokens
    // (a SHA-256 of each, never the token), the projects each may read, and
    // the record of who read what.
    "ALTER TABLE dsr_sessions ADD COLUMN owner text;
     CREATE INDEX dsr_sessions_owner ON dsr_sessions (owner, created_at_ms DESC, id);
     CREATE TABLE dsr_users (
         name text PRIMARY KEY,
         added_at timestamptz NOT NULL DEFAULT now()
     );
     CREATE TABLE dsr_tokens (
         id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
         user_name text NOT NULL REFERENCES dsr_users (name) ON DELETE CASCADE,
         hash bytea NOT NULL,
         issued_at timestamptz NOT NULL DEFAULT now(),
         revoked_at timestamptz
     );
     CREATE INDEX dsr_tokens_user ON dsr_tokens (user_name);
     CREATE TABLE dsr_grants (
         user_name text NOT NULL REFERENCES dsr_users (name) ON DELETE CASCADE,
         project text NOT NULL,
         granted_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (user_name, project)
     );
     CREATE TABLE dsr_audit (
         at timestamptz NOT NULL DEFAULT now(),
         user_name text NOT NULL,
         token_id bigint,
         action text NOT NULL,
         session_id text NOT NULL
     );
     CREATE INDEX dsr_audit_user ON dsr_audit (user_name, at);
     CREATE INDEX dsr_audit_session ON dsr_audit (session_id, at);",
    // 3: the sessions of each cwd, newest first: the order in which a search
    // walks those of its target's cwd.
    "CREATE INDEX dsr_sessions_cwd ON dsr_sessions (cwd, created_at_ms DESC, id);",
    // 4: search over one text per session (its folded title, id and cwd,
    // and its folded messages, one per line: no word or phrase holds a line
    // end, so each is found in one of them exactly) with one trigram index,
    // in place of an index of every message: each word is one condition on
    // one index, and the index is smaller and cheaper to write.
    "ALTER TABLE dsr_sessions ADD COLUMN text_folded text;
     UPDATE dsr_sessions s SET text_folded = concat_ws(E'\\n', s.title_folded, s.place_folded,
         (SELECT string_agg(m.folded, E'\\n' ORDER BY m.idx) FROM dsr_messages m WHERE m.session_id = s.id));
     ALTER TABLE dsr_sessions ALTER COLUMN text_folded SET NOT NULL;
     DROP INDEX dsr_messages_folded_trgm;
     DROP INDEX dsr_sessions_place_trgm;
     ALTER TABLE dsr_messages DROP COLUMN folded;
     CREATE INDEX dsr_sessions_text_trgm ON dsr_sessions USING gin (text_folded gin_trgm_ops);
     -- The listings' indexes hold every column a listing reads, so a
     -- listing reads them alone.
     DROP INDEX dsr_sessions_listing;
     DROP INDEX dsr_sessions_project;
     DROP INDEX dsr_sessions_owner;
     CREATE INDEX dsr_sessions_listing ON dsr_sessions (created_at_ms DESC, id)
         INCLUDE (created_at, cwd, revision, fingerprint);
     CREATE INDEX dsr_sessions_project ON dsr_sessions (project, created_at_ms DESC, id)
         INCLUDE (created_at, cwd, revision, fingerprint, owner);
     CREATE INDEX dsr_sessions_owner ON dsr_sessions (owner, created_at_ms DESC, id)
         INCLUDE (created_at, cwd, revision, fingerprint);",
];

/// The version table, made by the first push.
const VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS dsr_schema (version integer NOT NULL)";

/// The key of the advisory lock migrations hold: two first pushes at once
/// migrate one after the other.
const MIGRATION_LOCK: i64 = 0x6473_725f_7363_6865; // "dsr_sche"

/// Brings the schema to [`SCHEMA_VERSION`] in one transaction (nothing
/// done when it is there); an error when the database holds a newer
/// schema than this build knows.
pub(crate) async fn migrate(client: &mut Client) -> Result<i32, MigrateError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
    tx.batch_execute(VERSION_TABLE).await?;
    let found: Option<i32> = tx.query_opt("SELECT max(version) FROM dsr_schema", &[]).await?.and_then(|r| r.get(0));
    let found = found.unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(MigrateError::Newer(found));
    }
    for sql in MIGRATIONS.iter().skip(usize::try_from(found).unwrap_or(0)) {
        tx.batch_execute(sql).await?;
    }
    if found < SCHEMA_VERSION {
        tx.execute("DELETE FROM dsr_schema", &[]).await?;
        tx.execute("INSERT INTO dsr_schema (version) VALUES ($1)", &[&SCHEMA_VERSION]).await?;
    }
    tx.commit().await?;
    Ok(SCHEMA_VERSION)
}

/// What a reader checks before its first query: the schema's version, not
/// newer than this build knows (every version reads as the first did, its
/// sessions' columns unchanged). `Ok(0)`: no schema yet (nothing pushed).
pub(crate) async fn check(client: &Client) -> Result<i32, MigrateError> {
    let exists: Option<String> = client.query_one("SELECT to_regclass('dsr_schema')::text", &[]).await?.get(0);
    if exists.is_none() {
        return Ok(0);
    }
    let found: Option<i32> = client.query_one("SELECT max(version) FROM dsr_schema", &[]).await?.get(0);
    match found.unwrap_or(0) {
        v if v > SCHEMA_VERSION => Err(MigrateError::Newer(v)),
        v => Ok(v),
    }
}

/// Why the schema could not be made or read.
#[derive(Debug)]
pub(crate) enum MigrateError {
    /// The database holds this newer version.
    Newer(i32),
    /// The database failed.
    Db(tokio_postgres::Error),
}

impl From<tokio_postgres::Error> for MigrateError {
    fn from(e: tokio_postgres::Error) -> Self {
        MigrateError::Db(e)
    }
}

/// The words of a schema too old for reading or serving.
pub(crate) fn older_message(shown: &str, found: i32) -> String {
    format!(
        "the database {shown} holds schema version {found}; reading or serving it needs version {READ_VERSION}: \
         run dsh-session-ref push (or users add) against it with this build, which migrates it"
    )
}

/// The words of a schema from the future.
pub(crate) fn newer_message(shown: &str, found: i32) -> String {
    format!(
        "the database {shown} holds schema version {found}, newer than this dsh-session-ref knows ({SCHEMA_VERSION}): \
         upgrade dsh-session-ref"
    )
}
