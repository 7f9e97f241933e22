//! A team's users (docs/teams.md, "Serving a team per user"): who they
//! are, the tokens they sign in with (the database keeps a SHA-256 of each,
//! never the token), the projects granted to each, and the record of who
//! read which session and when.

use ring::rand::SecureRandom;
use subtle::ConstantTimeEq;
use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

use crate::connect::{described, Database};
use crate::schema::{self, MigrateError, READ_VERSION};

/// The start of every token: `dsr-ID-SECRET`, `ID` the token's number in
/// the database (no secret: it says which hash to compare), `SECRET` 32
/// random bytes in hex. Letters, digits and `-` only, so that a token fits a
/// header, a cookie and a URL as it is.
const TOKEN_PREFIX: &str = "dsr-";

/// Bytes of randomness in a token.
const SECRET_BYTES: usize = 32;

/// A user's name: 1 to 64 letters, digits, `.`, `_`, `-` or `@`.
fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-@".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!("{name:?} is not a user name (1 to 64 letters, digits, '.', '_', '-' or '@')"))
    }
}

/// A token newly issued: shown once, when issued; the database keeps only
/// its hash.
#[derive(Clone, Debug)]
pub struct IssuedToken {
    /// The token's number (what `users revoke` takes).
    pub id: i64,
    /// The token itself.
    pub token: String,
}

/// Who a request's token says it comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Caller {
    /// The user.
    pub user: String,
    /// The number of the token used.
    pub token_id: i64,
}

/// One token of a user, as [`list`] tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenInfo {
    /// Its number.
    pub id: i64,
    /// When it was issued (RFC 3339, UTC).
    pub issued_at: String,
    /// When it was revoked, if it was.
    pub revoked_at: Option<String>,
}

/// A user, as [`list`] tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInfo {
    /// The name.
    pub name: String,
    /// The projects granted, in order.
    pub projects: Vec<String>,
    /// The tokens issued, oldest first.
    pub tokens: Vec<TokenInfo>,
}

/// One row of the audit record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    /// When (RFC 3339, UTC, microseconds).
    pub at: String,
    /// The user.
    pub user: String,
    /// The token used.
    pub token_id: Option<i64>,
    /// What was done: `read` (a page of a session), `reference` (a
    /// session's snapshot prepared for a message), `search` (a session among
    /// a search's results, with a snippet of its text).
    pub action: String,
    /// The session.
    pub session_id: String,
}

/// The SHA-256 of a token.
fn hash(token: &str) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, token.as_bytes()).as_ref().to_vec()
}

/// A fresh connection with the schema made or migrated (an administrator's
/// commands write; a newer schema is refused).
async fn admin(db: &Database) -> Result<Client, String> {
    let mut client = db.connect().await?;
    match schema::migrate(&mut client).await {
        Ok(_) => Ok(client),
        Err(MigrateError::Newer(v)) => Err(schema::newer_message(db.shown(), v)),
        Err(MigrateError::Db(e)) => Err(format!("making the schema in {} failed: {}", db.shown(), described(&e))),
    }
}

fn failed(db: &Database, what: &str, e: &tokio_postgres::Error) -> String {
    format!("{what} in the database {} failed: {}", db.shown(), described(e))
}

fn no_user(name: &str) -> String {
    format!("no user {name:?} (add one with dsh-session-ref users add NAME)")
}

/// Adds user `name` (no token, no project yet); an error when there is one.
pub async fn add_user(db: &Database, name: &str) -> Result<(), String> {
    check_name(name)?;
    let client = admin(db).await?;
    let added = client
        .execute("INSERT INTO dsr_users (name) VALUES ($1) ON CONFLICT DO NOTHING", &[&name])
        .await
        .map_err(|e| failed(db, "adding a user", &e))?;
    if added == 0 {
        return Err(format!("there is already a user {name:?}"));
    }
    Ok(())
}

/// Issues a new token to user `name` (the user's other tokens stay valid).
pub async fn issue_token(db: &Database, name: &str) -> Result<IssuedToken, String> {
    let mut client = admin(db).await?;
    let mut secret = [0u8; SECRET_BYTES];
    ring::rand::SystemRandom::new().fill(&mut secret).map_err(|_| "the system's random generator failed".to_owned())?;
    let secret: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    let fail = |e: tokio_postgres::Error| failed(db, "issuing a token", &e);
    let tx = client.transaction().await.map_err(fail)?;
    if tx.query_opt("SELECT 1 FROM dsr_users WHERE name = $1", &[&name]).await.map_err(fail)?.is_none() {
        return Err(no_user(name));
    }
    // The number is the row's; the hash covers it, so the row is written
    // first and its hash set in the same transaction.
    let id: i64 = tx
        .query_one("INSERT INTO dsr_tokens (user_name, hash) VALUES ($1, '') RETURNING id", &[&name])
        .await
        .map_err(fail)?
        .get(0);
    let token = format!("{TOKEN_PREFIX}{id}-{secret}");
    tx.execute("UPDATE dsr_tokens SET hash = $2 WHERE id = $1", &[&id, &hash(&token)]).await.map_err(fail)?;
    tx.commit().await.map_err(fail)?;
    Ok(IssuedToken { id, token })
}

/// Revokes token `id`: refused from the next request on. `Ok(false)` when
/// it was revoked already; an error when there is no such token.
pub async fn revoke_token(db: &Database, id: i64) -> Result<bool, String> {
    let client = admin(db).await?;
    let fail = |e: tokio_postgres::Error| failed(db, "revoking a token", &e);
    let row = client
        .query_opt(
            "UPDATE dsr_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1
             RETURNING revoked_at = now()",
            &[&id],
        )
        .await
        .map_err(fail)?;
    match row {
        Some(r) => Ok(r.get(0)),
        None => Err(format!("no token {id}")),
    }
}

/// Revokes every token of user `name`; how many were valid.
pub async fn revoke_user(db: &Database, name: &str) -> Result<u64, String> {
    let client = admin(db).await?;
    let fail = |e: tokio_postgres::Error| failed(db, "revoking tokens", &e);
    if client.query_opt("SELECT 1 FROM dsr_users WHERE name = $1", &[&name]).await.map_err(fail)?.is_none() {
        return Err(no_user(name));
    }
    client
        .execute("UPDATE dsr_tokens SET revoked_at = now() WHERE user_name = $1 AND revoked_at IS NULL", &[&name])
        .await
        .map_err(fail)
}

/// Grants user `name` the sessions of project `project` (a project key as
/// a push records it: the repository's remote URL, else its path).
/// `Ok(false)` when it was granted already.
pub async fn grant(db: &Database, name: &str, project: &str) -> Result<bool, String> {
    let client = admin(db).await?;
    let fail = |e: tokio_postgres::Error| failed(db, "granting a project", &e);
    if client.query_opt("SELECT 1 FROM dsr_users WHERE name = $1", &[&name]).await.map_err(fail)?.is_none() {
        return Err(no_user(name));
    }
    let n = client
        .execute(
            "INSERT INTO dsr_grants (user_name, project) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&name, &project],
        )
        .await
        .map_err(fail)?;
    Ok(n == 1)
}

/// Takes project `project` back from user `name`. `Ok(false)` when it was
/// not granted.
pub async fn ungrant(db: &Database, name: &str, project: &str) -> Result<bool, String> {
    let client = admin(db).await?;
    let n = client
        .execute("DELETE FROM dsr_grants WHERE user_name = $1 AND project = $2", &[&name, &project])
        .await
        .map_err(|e| failed(db, "taking a project back", &e))?;
    Ok(n == 1)
}

/// Every user, by name, with their projects and tokens.
pub async fn list(db: &Database) -> Result<Vec<UserInfo>, String> {
    let client = admin(db).await?;
    let fail = |e: tokio_postgres::Error| failed(db, "listing the users", &e);
    let time = |column: &str| format!("to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')");
    let mut users: Vec<UserInfo> = client
        .query("SELECT name FROM dsr_users ORDER BY name", &[])
        .await
        .map_err(fail)?
        .into_iter()
        .map(|r| UserInfo { name: r.get(0), projects: Vec::new(), tokens: Vec::new() })
        .collect();
    let at = |users: &[UserInfo], name: &str| users.binary_search_by(|u| u.name.as_str().cmp(name)).ok();
    for r in client.query("SELECT user_name, project FROM dsr_grants ORDER BY project", &[]).await.map_err(fail)? {
        if let Some(i) = at(&users, r.get(0)) {
            users[i].projects.push(r.get(1));
        }
    }
    let sql =
        format!("SELECT user_name, id, {}, {} FROM dsr_tokens ORDER BY id", time("issued_at"), time("revoked_at"));
    for r in client.query(sql.as_str(), &[]).await.map_err(fail)? {
        if let Some(i) = at(&users, r.get(0)) {
            users[i].tokens.push(TokenInfo { id: r.get(1), issued_at: r.get(2), revoked_at: r.get(3) });
        }
    }
    Ok(users)
}

/// Every project key the database holds, with its number of sessions, by key.
pub async fn projects(db: &Database) -> Result<Vec<(String, i64)>, String> {
    let client = admin(db).await?;
    let rows = client
        .query("SELECT project, count(*) FROM dsr_sessions GROUP BY project ORDER BY project", &[])
        .await
        .map_err(|e| failed(db, "listing the projects", &e))?;
    Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// The newest `limit` rows of the audit record, newest first; of user
/// `user` only when given.
pub async fn audit(db: &Database, user: Option<&str>, limit: i64) -> Result<Vec<AuditEntry>, String> {
    let client = admin(db).await?;
    let rows = client
        .query(
            "SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), user_name, token_id, action,
                    session_id
             FROM dsr_audit WHERE $1::text IS NULL OR user_name = $1 ORDER BY at DESC, session_id LIMIT $2",
            &[&user, &limit],
        )
        .await
        .map_err(|e| failed(db, "reading the audit record", &e))?;
    Ok(rows
        .into_iter()
        .map(|r| AuditEntry {
            at: r.get(0),
            user: r.get(1),
            token_id: r.get(2),
            action: r.get(3),
            session_id: r.get(4),
        })
        .collect())
}

/// A connection to a database whose schema serves users (read only: a
/// server never migrates).
async fn serving(db: &Database) -> Result<std::sync::Arc<Client>, String> {
    let client = db.client().await?;
    match schema::check(&client).await {
        Ok(v) if v >= READ_VERSION => Ok(client),
        Ok(v) => Err(schema::older_message(db.shown(), v)),
        Err(MigrateError::Newer(v)) => Err(schema::newer_message(db.shown(), v)),
        Err(MigrateError::Db(e)) => Err(db.call_failed(&client, "reading the schema", e)),
    }
}

/// Whether `db` can be served per user: reachable, with a schema that holds
/// users and the search text this build reads (version 4 or later, and not
/// newer than this build knows).
pub async fn check_serving(db: &Database) -> Result<(), String> {
    serving(db).await.map(drop)
}

/// Who `token` is: its user, when it is a token the database issued and
/// has not revoked, its hash compared in constant time; `Ok(None)` for
/// any other token. An error only when the database cannot say.
pub async fn authenticate(db: &Database, token: &str) -> Result<Option<Caller>, String> {
    let Some(id) = token
        .strip_prefix(TOKEN_PREFIX)
        .and_then(|rest| rest.split_once('-'))
        .and_then(|(id, _)| id.parse::<i64>().ok())
    else {
        return Ok(None);
    };
    let client = db.client().await?;
    let row = client
        .query_opt("SELECT user_name, hash, revoked_at IS NULL FROM dsr_tokens WHERE id = $1", &[&id])
        .await
        .map_err(|e| told(db, &client, "checking a token", e))?;
    let Some(row) = row else { return Ok(None) };
    let stored: Vec<u8> = row.get(1);
    let same: bool = hash(token).ct_eq(&stored).into();
    let valid: bool = row.get(2);
    Ok((same && valid).then(|| Caller { user: row.get(0), token_id: id }))
}

/// Records that `caller` did `action` on each of `session_ids`, in one
/// statement (nothing recorded when it fails).
pub async fn record(db: &Database, caller: &Caller, action: &str, session_ids: &[String]) -> Result<(), String> {
    if session_ids.is_empty() {
        return Ok(());
    }
    let client = db.client().await?;
    client
        .execute(
            "INSERT INTO dsr_audit (user_name, token_id, action, session_id) SELECT $1, $2, $3, unnest($4::text[])",
            &[&caller.user, &caller.token_id, &action, &session_ids],
        )
        .await
        .map_err(|e| told(db, &client, "recording a read", e))?;
    Ok(())
}

/// A failed call on the serving connection, in words; a schema without
/// the users' tables said as such.
fn told(db: &Database, client: &std::sync::Arc<Client>, what: &str, e: tokio_postgres::Error) -> String {
    let missing = e
        .as_db_error()
        .is_some_and(|d| *d.code() == SqlState::UNDEFINED_TABLE || *d.code() == SqlState::UNDEFINED_COLUMN);
    if missing {
        return schema::older_message(db.shown(), 1);
    }
    db.call_failed(client, what, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_and_plain() {
        for ok in ["ana", "bo.b", "c_d-e", "dev@example.invalid", &"x".repeat(64)] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a/b", "é", &"x".repeat(65), "a\0"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(hash("t").len(), 32);
        assert_ne!(hash("t"), hash("u"));
    }
}
