//! The team database as a session source ([`DatabaseSource`]): the core's
//! [`SessionQuery`] over the pushed sessions, with search run inside
//! PostgreSQL so that no client downloads the corpus.

use std::collections::HashMap;
use std::sync::Arc;

use dsh_session_reference::{
    search_fold, Config, Conversation, ConversationItem, Fingerprint, HostError, MemoryQuery, QueryFuture, Resolver,
    Role, SearchOptions, SearchRequest, SearchResult, SearchTerms, SessionHeader, SessionQuery, SharedListing,
    SurfaceData,
};
use serde_json::Number;
use tokio_postgres::Client;

use crate::connect::Database;
use crate::schema::{self, MigrateError};

/// The pushed sessions of a team database, read as any other source's:
/// the same ids, `createdAt`, cwds, titles and projected conversations as
/// the machine that pushed them read (so every command gives the same bytes
/// over both). Search runs in the database; only the sessions it returns
/// are read.
pub struct DatabaseSource {
    db: Arc<Database>,
    /// The user it reads for ([`DatabaseSource::for_user`]); `None`: every
    /// session.
    user: Option<String>,
    /// The configuration of the resolver reading through this source: a
    /// search's results are labelled by it, as that resolver labels them.
    config: Config,
}

impl std::fmt::Debug for DatabaseSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseSource").field("db", &self.db).field("user", &self.user).finish_non_exhaustive()
    }
}

impl DatabaseSource {
    /// The sessions of `db`, for a resolver made with `config`.
    pub fn new(db: Arc<Database>, config: Config) -> DatabaseSource {
        DatabaseSource { db, user: None, config }
    }

    /// The sessions of `db` that `user` may read (docs/teams.md, "Serving a
    /// team per user"): those pushed as `user`, and those of the projects
    /// granted to `user`, as the database holds them at each call (a grant
    /// or its removal counts from the next call). Every other session is
    /// absent as one that does not exist is: not listed, not found by
    /// search, and read with the same error.
    pub fn for_user(db: Arc<Database>, config: Config, user: &str) -> DatabaseSource {
        DatabaseSource { db, user: Some(user.to_owned()), config }
    }

    /// The condition a row `s` of `dsr_sessions` meets when this source's
    /// user may read it, the user being parameter `$n` (`TRUE`, and no
    /// parameter, for a source of every session).
    fn readable(&self, n: usize) -> String {
        match self.user {
            None => "TRUE".to_owned(),
            Some(_) => format!(
                "(s.owner = ${n} OR s.project = ANY(ARRAY(SELECT g.project FROM dsr_grants g WHERE g.user_name = ${n})))"
            ),
        }
    }

    /// `params` with this source's user last, when it has one.
    fn with_user<'a>(
        &'a self,
        mut params: Vec<&'a (dyn tokio_postgres::types::ToSql + Sync)>,
    ) -> Vec<&'a (dyn tokio_postgres::types::ToSql + Sync)> {
        if let Some(user) = &self.user {
            params.push(user);
        }
        params
    }

    /// A connection checked for a schema this build reads; an error when
    /// the database holds a newer one, or none yet.
    async fn client(&self) -> Result<Arc<Client>, HostError> {
        let client = self.db.client().await.map_err(HostError::new)?;
        match schema::check(&client).await {
            Ok(0) => Err(HostError::new(format!(
                "the database {} holds no pushed session yet (run dsh-session-ref push --to URL first)",
                self.db.shown()
            ))),
            Ok(v) if self.user.is_some() && v < schema::USERS_VERSION => {
                Err(HostError::new(schema::older_message(self.db.shown(), v)))
            }
            Ok(_) => Ok(client),
            Err(MigrateError::Newer(v)) => Err(HostError::new(schema::newer_message(self.db.shown(), v))),
            Err(MigrateError::Db(e)) => Err(HostError::new(self.db.call_failed(&client, "reading the schema", e))),
        }
    }

    async fn listing(&self) -> Result<(Vec<SessionHeader>, Vec<Option<Fingerprint>>), HostError> {
        let client = self.client().await?;
        let sql = format!(
            "SELECT s.id, s.created_at, s.cwd, s.revision, s.fingerprint FROM dsr_sessions s WHERE {} \
             ORDER BY s.created_at_ms DESC, s.id",
            self.readable(1)
        );
        let rows = client
            .query(sql.as_str(), &self.with_user(Vec::new()))
            .await
            .map_err(|e| HostError::new(self.db.call_failed(&client, "listing the sessions", e)))?;
        let mut headers = Vec::with_capacity(rows.len());
        let mut fingerprints = Vec::with_capacity(rows.len());
        for row in rows {
            headers.push(header(row.get(0), row.get(1), row.get(2))?);
            fingerprints.push(Some(revision_fingerprint(row.get(3), row.get(4))));
        }
        Ok((headers, fingerprints))
    }

    /// The conversations and titles of those of `ids` the source may read,
    /// in two queries.
    async fn sessions(&self, client: &Client, ids: &[String]) -> Result<Vec<Pushed>, tokio_postgres::Error> {
        let sql = format!(
            "SELECT s.id, s.created_at, s.cwd, s.title, s.conversation_cwd, s.captured_through_seq \
             FROM dsr_sessions s WHERE s.id = ANY($1) AND {}",
            self.readable(2)
        );
        let rows = client.query(sql.as_str(), &self.with_user(vec![&ids])).await?;
        let mut found: Vec<Pushed> = Vec::with_capacity(rows.len());
        for row in rows {
            found.push(Pushed {
                id: row.get(0),
                created_at: row.get(1),
                cwd: row.get(2),
                title: row.get(3),
                conversation_cwd: row.get(4),
                captured_through_seq: row.get(5),
                items: Vec::new(),
            });
        }
        let readable: Vec<&str> = found.iter().map(|s| s.id.as_str()).collect();
        let rows = client
            .query(
                "SELECT session_id, role, checkpoint, text FROM dsr_messages WHERE session_id = ANY($1)
                 ORDER BY session_id, idx",
                &[&readable],
            )
            .await?;
        let at: HashMap<String, usize> = found.iter().enumerate().map(|(i, s)| (s.id.clone(), i)).collect();
        for row in rows {
            let id: &str = row.get(0);
            if let Some(session) = at.get(id).map(|&i| &mut found[i]) {
                let role = if row.get::<_, &str>(1) == Role::Assistant.as_str() { Role::Assistant } else { Role::User };
                session.items.push(ConversationItem { role, text: row.get(3), checkpoint: row.get(2) });
            }
        }
        Ok(found)
    }

    async fn one(&self, session_id: &str) -> Result<Pushed, HostError> {
        let client = self.client().await?;
        let ids = [session_id.to_owned()];
        let found = self
            .sessions(&client, &ids)
            .await
            .map_err(|e| HostError::new(self.db.call_failed(&client, "reading a session", e)))?;
        found
            .into_iter()
            .next()
            .ok_or_else(|| HostError::new(format!("no session {session_id:?} in the database {}", self.db.shown())))
    }

    async fn search_in_db(&self, request: &SearchRequest) -> Result<Vec<SearchResult>, HostError> {
        let Some(terms) = SearchTerms::parse(&request.query) else { return Ok(Vec::new()) };
        // PostgreSQL's text holds no NUL: no stored text holds a word with
        // one, and a target id or cwd with one is no stored session's.
        if terms.phrase.contains('\0') {
            return Ok(Vec::new());
        }
        let storable = |t: Option<&str>| t.filter(|t| !t.contains('\0')).map(str::to_owned);
        let (target_id, target_cwd) = (storable(Some(&request.target.id)), storable(request.target.cwd.as_deref()));
        let client = self.client().await?;
        let limit = i64::try_from(request.limit).unwrap_or(i64::MAX);
        let same_cwd = request.scope == dsh_session_reference::SearchScope::SameCwd;
        if same_cwd && request.target.cwd.is_none() {
            return Ok(Vec::new());
        }
        // $1 target id, $2 target cwd, $3 phrase pattern, $4 limit, $5.. the words' patterns.
        let patterns: Vec<String> = terms.words.iter().map(|w| like_pattern(w)).collect();
        let mut sql = format!(
            "SELECT s.id FROM dsr_sessions s WHERE s.id IS DISTINCT FROM $1 AND {}",
            self.readable(5 + patterns.len())
        );
        if same_cwd {
            sql.push_str(" AND s.cwd = $2");
        }
        for n in 0..patterns.len() {
            let p = n + 5;
            sql.push_str(&format!(
                " AND (s.title_folded LIKE ${p} OR s.place_folded LIKE ${p} OR s.id IN \
                 (SELECT m.session_id FROM dsr_messages m WHERE m.folded LIKE ${p}))"
            ));
        }
        sql.push_str(
            " ORDER BY CASE WHEN s.title_folded LIKE $3 THEN 0 \
               WHEN s.place_folded LIKE $3 OR EXISTS (SELECT 1 FROM dsr_messages m \
                    WHERE m.session_id = s.id AND m.folded LIKE $3) THEN 1 ELSE 2 END, \
             CASE WHEN s.cwd IS NULL THEN 1 WHEN s.cwd = $2 THEN 0 ELSE 2 END, \
             s.created_at_ms DESC, s.id LIMIT $4",
        );
        let phrase = like_pattern(&terms.phrase);
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            vec![&target_id, &target_cwd, &phrase, &limit];
        for p in &patterns {
            params.push(p);
        }
        let params = self.with_user(params);
        let rows = client
            .query(sql.as_str(), &params)
            .await
            .map_err(|e| HostError::new(self.db.call_failed(&client, "searching", e)))?;
        let ids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // The snippets, fields and message indexes: the core's own search
        // over just these sessions, in this order (its ranking is each
        // session's own, so it ranks them as it would among all).
        let mut found = self
            .sessions(&client, &ids)
            .await
            .map_err(|e| HostError::new(self.db.call_failed(&client, "reading the sessions found", e)))?;
        found.sort_by_key(|s| ids.iter().position(|id| *id == s.id));
        let memory = MemoryQuery::new();
        for s in found {
            let (h, title, conversation) = s.into_parts()?;
            memory.add_session(h.clone());
            memory.set_title(h.id.clone(), title);
            memory.set_surface(h.id, conversation);
        }
        let resolver = Resolver::new(Arc::new(memory), self.config);
        let options = SearchOptions { limit: Some(request.limit.max(1)), scope: request.scope };
        resolver.search(&request.target, &request.query, &options, None).await.map_err(|e| HostError::new(e.message()))
    }
}

/// A `LIKE` pattern finding `text` anywhere (its `%`, `_` and `\` escaped).
fn like_pattern(text: &str) -> String {
    let mut p = String::with_capacity(text.len() + 2);
    p.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

/// A session as pushed.
struct Pushed {
    id: String,
    created_at: String,
    cwd: Option<String>,
    title: Option<String>,
    conversation_cwd: Option<String>,
    captured_through_seq: Option<String>,
    items: Vec<ConversationItem>,
}

impl Pushed {
    fn into_parts(self) -> Result<(SessionHeader, Option<String>, Conversation), HostError> {
        let h = header(self.id, self.created_at, self.cwd)?;
        let captured_through_seq = match self.captured_through_seq {
            Some(n) => Some(number(&n).map_err(HostError::new)?),
            None => None,
        };
        let conversation = Conversation {
            session_id: h.id.clone(),
            cwd: self.conversation_cwd,
            captured_through_seq,
            items: self.items,
        };
        Ok((h, self.title, conversation))
    }
}

fn number(text: &str) -> Result<Number, String> {
    serde_json::from_str::<Number>(text).map_err(|_| format!("the database holds {text:?} where a number belongs"))
}

fn header(id: String, created_at: String, cwd: Option<String>) -> Result<SessionHeader, HostError> {
    let created_at = number(&created_at).map_err(HostError::new)?;
    Ok(SessionHeader { id, created_at, cwd })
}

/// A session's fingerprint as the database knows it: its revision (one
/// more at each push that changed it) and the pushing machine's own.
fn revision_fingerprint(revision: i64, pushed: Option<Vec<u8>>) -> Fingerprint {
    let mut bytes = revision.to_le_bytes().to_vec();
    bytes.extend(pushed.unwrap_or_default());
    Fingerprint::from_bytes(bytes)
}

impl SessionQuery for DatabaseSource {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        Box::pin(async move { Ok(self.listing().await?.0) })
    }

    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        Box::pin(async move { Ok(self.one(session_id).await?.title) })
    }

    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        Box::pin(async move {
            let (_, _, conversation) = self.one(session_id).await?.into_parts()?;
            Ok(SurfaceData::from(conversation))
        })
    }

    fn fingerprints<'a>(&'a self, session_ids: &'a [String]) -> QueryFuture<'a, Option<Vec<Option<Fingerprint>>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let sql = format!(
                "SELECT s.id, s.revision, s.fingerprint FROM dsr_sessions s WHERE s.id = ANY($1) AND {}",
                self.readable(2)
            );
            let rows = client
                .query(sql.as_str(), &self.with_user(vec![&session_ids]))
                .await
                .map_err(|e| HostError::new(self.db.call_failed(&client, "reading fingerprints", e)))?;
            let mut known: HashMap<String, Fingerprint> = HashMap::with_capacity(rows.len());
            for row in rows {
                known.insert(row.get(0), revision_fingerprint(row.get(1), row.get(2)));
            }
            Ok(Some(session_ids.iter().map(|id| known.get(id).cloned()).collect()))
        })
    }

    fn shared_listing(&self) -> QueryFuture<'_, Option<SharedListing>> {
        Box::pin(async move {
            let (headers, fingerprints) = self.listing().await?;
            Ok(SharedListing::new(headers.into(), fingerprints.into()))
        })
    }

    fn search<'a>(&'a self, request: &'a SearchRequest) -> QueryFuture<'a, Option<Vec<SearchResult>>> {
        Box::pin(async move { self.search_in_db(request).await.map(Some) })
    }
}

/// The folded id and cwd a session's row keeps for search (one line each:
/// no word holds a line end, and no phrase does).
pub(crate) fn place_folded(id: &str, cwd: Option<&str>) -> String {
    let mut s = search_fold(id);
    s.push('\n');
    s.push_str(&search_fold(cwd.unwrap_or("")));
    s
}
