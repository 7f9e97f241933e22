//! The team database as a session source ([`DatabaseSource`]): the core's
//! [`SessionQuery`] over the pushed sessions, with search run inside
//! PostgreSQL so that no client downloads the corpus.

use std::collections::HashMap;
use std::sync::Arc;

use dsh_session_reference::{
    search_fold, Config, Conversation, ConversationItem, Fingerprint, HostError, MatchCounts, MemoryQuery, QueryFuture,
    Relevance, Resolver, Role, SearchOptions, SearchRequest, SearchResult, SearchTerms, SessionHeader, SessionQuery,
    SharedListing, SurfaceData,
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
        let limit = usize::try_from(request.limit).unwrap_or(usize::MAX);
        let same_cwd = request.scope == dsh_session_reference::SearchScope::SameCwd;
        if same_cwd && request.target.cwd.is_none() {
            return Ok(Vec::new());
        }
        // Every matching session with what the relevance score counts
        // (docs/discovery.md), in the order that breaks its ties: no cut
        // before the ranking. $1 target id, $2 target cwd, then per word its
        // pattern and itself, then the phrase (for more than one word).
        let n = terms.words.len();
        let patterns: Vec<String> = terms.words.iter().map(|w| like_pattern(w)).collect();
        let pattern = |j: usize| 3 + 2 * j;
        let word = |j: usize| 4 + 2 * j;
        let (phrase_at, user_at) = if n > 1 { (3 + 2 * n, 4 + 2 * n) } else { (0, 3 + 2 * n) };
        let count = |field: &str, p: usize| {
            format!(
                "((char_length({field}) - char_length(replace({field}, ${p}::text, ''))) / char_length(${p}::text))"
            )
        };
        // (The phrase is counted only for a query of more than one word.)
        let phrase = |field: &str| if n > 1 { count(field, phrase_at) } else { "0".to_owned() };
        let mut sql = String::from("SELECT s.id, a.items, a.len + octet_length(s.title_folded)");
        let mut sums = String::from(
            "count(*) FILTER (WHERE m.text <> '') AS items, coalesce(sum(octet_length(m.text)), 0) AS len",
        );
        for j in 0..n {
            sql.push_str(&format!(", {}, {}", count("s.title_folded", word(j)), count("s.place_folded", word(j))));
            sql.push_str(&format!(", a.w{j}, a.h{j}"));
            sums.push_str(&format!(
                ", coalesce(sum({}), 0) AS w{j}, count(*) FILTER (WHERE m.folded LIKE ${}) AS h{j}",
                count("m.folded", word(j)),
                pattern(j)
            ));
        }
        let title_all: Vec<String> = (0..n).map(|j| format!("s.title_folded LIKE ${}", pattern(j))).collect();
        let title_all = if n > 1 { format!("({})::int", title_all.join(" AND ")) } else { "0".to_owned() };
        sql.push_str(&format!(", {}, {}, a.p, {title_all}, a.t", phrase("s.title_folded"), phrase("s.place_folded")));
        sums.push_str(&format!(", coalesce(sum({}), 0) AS p", phrase("m.folded")));
        // (The messages holding every word, likewise.)
        let every: Vec<String> = (0..n).map(|j| format!("m.folded LIKE ${}", pattern(j))).collect();
        let together = if n > 1 { format!("count(*) FILTER (WHERE {})", every.join(" AND ")) } else { "0".to_owned() };
        sums.push_str(&format!(", {together} AS t"));
        sql.push_str(&format!(
            " FROM dsr_sessions s CROSS JOIN LATERAL (SELECT {sums} FROM dsr_messages m WHERE m.session_id = s.id) a \
             WHERE s.id IS DISTINCT FROM $1 AND {}",
            self.readable(user_at)
        ));
        if same_cwd {
            sql.push_str(" AND s.cwd = $2");
        }
        for j in 0..n {
            let p = pattern(j);
            sql.push_str(&format!(
                " AND (s.title_folded LIKE ${p} OR s.place_folded LIKE ${p} OR s.id IN \
                 (SELECT m.session_id FROM dsr_messages m WHERE m.folded LIKE ${p}))"
            ));
        }
        sql.push_str(
            " ORDER BY CASE WHEN s.cwd IS NULL THEN 1 WHEN s.cwd = $2 THEN 0 ELSE 2 END, s.created_at_ms DESC, s.id",
        );
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&target_id, &target_cwd];
        for (p, w) in patterns.iter().zip(&terms.words) {
            params.push(p);
            params.push(w);
        }
        if n > 1 {
            params.push(&terms.phrase);
        }
        let params = self.with_user(params);
        let rows = client
            .query(sql.as_str(), &params)
            .await
            .map_err(|e| HostError::new(self.db.call_failed(&client, "searching", e)))?;
        let number = |row: &tokio_postgres::Row, i: usize| -> u64 {
            // (Counts, `bigint` or `integer` as PostgreSQL types them.)
            row.try_get::<_, i64>(i).or_else(|_| row.try_get::<_, i32>(i).map(i64::from)).unwrap_or(0).max(0) as u64
        };
        let matches: Vec<(String, MatchCounts)> = rows
            .iter()
            .map(|row| {
                let mut c = MatchCounts { items: number(row, 1), len: number(row, 2), ..MatchCounts::default() };
                for j in 0..n {
                    let at = 3 + 4 * j;
                    c.title.push(number(row, at));
                    c.place.push(number(row, at + 1));
                    c.messages.push(number(row, at + 2));
                    c.holding.push(number(row, at + 3));
                }
                let at = 3 + 4 * n;
                c.phrase = [number(row, at), number(row, at + 1), number(row, at + 2)];
                c.together = [number(row, at + 3), number(row, at + 4)];
                (row.get(0), c)
            })
            .collect();
        let relevance = Relevance::new(n, matches.iter().map(|(_, c)| c));
        let mut ranked: Vec<(f64, &str)> = matches.iter().map(|(id, c)| (relevance.score(c), id.as_str())).collect();
        // (Stable: equal scores keep the ties' order.)
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        ranked.truncate(limit);
        let ids: Vec<String> = ranked.iter().map(|(_, id)| (*id).to_owned()).collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // The snippets, fields and message indexes: the core's own search
        // over just these sessions (each one's passage is its own), given
        // in the order ranked among all the matches.
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
        let mut results = resolver
            .search(&request.target, &request.query, &options, None)
            .await
            .map_err(|e| HostError::new(e.message()))?;
        results.sort_by_key(|r| ids.iter().position(|id| *id == r.candidate.session_id));
        Ok(results)
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
