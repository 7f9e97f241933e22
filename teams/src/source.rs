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
use tokio_postgres::types::Type;
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
    /// How many sessions a search walks before it narrows by the indexes.
    walk_budget: usize,
    /// How many sessions a search reads at once to rank them.
    batch: usize,
    /// The last listing, under the stamp of the sessions it lists.
    last: std::sync::Mutex<Option<(Stamp, SharedListing)>>,
}

/// What tells whether a listing changed, as the database computes it
/// without reading a row (from the listings' indexes): how many sessions
/// are readable, and the sum of a 64-bit hash of each one's id and
/// revision (each push that replaces a session gives it a new revision; a
/// grant or its removal changes the sessions counted).
type Stamp = (i64, String);

impl std::fmt::Debug for DatabaseSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseSource").field("db", &self.db).field("user", &self.user).finish_non_exhaustive()
    }
}

impl DatabaseSource {
    /// The sessions of `db`, for a resolver made with `config`.
    pub fn new(db: Arc<Database>, config: Config) -> DatabaseSource {
        DatabaseSource { db, user: None, config, walk_budget: WALK, batch: BATCH, last: std::sync::Mutex::default() }
    }

    /// The sessions of `db` that `user` may read (docs/teams.md, "Serving a
    /// team per user"): those pushed as `user`, and those of the projects
    /// granted to `user`, as the database holds them at each call (a grant
    /// or its removal counts from the next call). Every other session is
    /// absent as one that does not exist is: not listed, not found by
    /// search, and read with the same error.
    pub fn for_user(db: Arc<Database>, config: Config, user: &str) -> DatabaseSource {
        DatabaseSource {
            db,
            user: Some(user.to_owned()),
            config,
            walk_budget: WALK,
            batch: BATCH,
            last: std::sync::Mutex::default(),
        }
    }

    /// This source, its searches walking at most `sessions` sessions in
    /// their answer's order (250 by default) before they narrow by the
    /// trigram indexes instead; 0: always by the indexes. The answers are the
    /// same either way; only their cost differs (a word most sessions hold is
    /// found fast by the walk, a rare one by the indexes).
    #[must_use]
    pub fn with_search_walk(mut self, sessions: usize) -> DatabaseSource {
        self.walk_budget = sessions;
        self
    }

    /// This source, its searches reading at most `sessions` matching
    /// sessions at once (256 by default, at least 1) besides the best found
    /// so far, to rank them. The answers are the same whatever the number;
    /// only the memory a search holds and its rounds differ.
    #[must_use]
    pub fn with_search_batch(mut self, sessions: usize) -> DatabaseSource {
        self.batch = sessions.max(1);
        self
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
            Ok(v) if v < schema::READ_VERSION => Err(HostError::new(schema::older_message(self.db.shown(), v))),
            Ok(_) => Ok(client),
            Err(MigrateError::Newer(v)) => Err(HostError::new(schema::newer_message(self.db.shown(), v))),
            Err(MigrateError::Db(e)) => Err(HostError::new(self.db.call_failed(&client, "reading the schema", e))),
        }
    }

    /// The readable sessions, and each one's fingerprint: the last listing
    /// again when the database says its sessions are the same ones at the
    /// same revisions (their [`Stamp`]), else read afresh.
    async fn listing(&self) -> Result<SharedListing, HostError> {
        let client = self.client().await?;
        // A user's: their own sessions, and those of each project granted
        // them they do not own, each read from the index that keeps it (its
        // columns included there: no row is visited).
        let from = |columns: &str| match self.user {
            None => format!("SELECT {columns} FROM dsr_sessions s"),
            Some(_) => format!(
                "SELECT {columns} FROM dsr_sessions s WHERE s.owner = $1 UNION ALL \
                 SELECT {columns} FROM dsr_grants g JOIN dsr_sessions s ON s.project = g.project \
                 WHERE g.user_name = $1 AND s.owner IS DISTINCT FROM $1"
            ),
        };
        // (Taken before the listing: a push between the two makes the next
        // call list again.)
        let sql = format!(
            "SELECT count(*), coalesce(sum(hashtextextended(u.id, u.revision)), 0)::text FROM ({}) u",
            from("s.id, s.revision")
        );
        let row = client
            .query_one(sql.as_str(), &self.with_user(Vec::new()))
            .await
            .map_err(|e| HostError::new(self.db.call_failed(&client, "listing the sessions", e)))?;
        let stamp: Stamp = (row.get(0), row.get(1));
        if let Some((last, listed)) = &*self.last.lock().unwrap_or_else(|e| e.into_inner()) {
            if *last == stamp {
                return Ok(listed.clone());
            }
        }
        let sql = format!(
            "{} ORDER BY 6 DESC, 1",
            from("s.id, s.created_at, s.cwd, s.revision, s.fingerprint, s.created_at_ms")
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
        let listed = SharedListing::new(headers.into(), fingerprints.into())
            .ok_or_else(|| HostError::new("the listing and its fingerprints differ in length"))?;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((stamp, listed.clone()));
        Ok(listed)
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
        found.into_iter().next().ok_or_else(|| self.missing(session_id))
    }

    /// What a read of a session the source does not hold, or may not read,
    /// fails with: the same words either way.
    fn missing(&self, session_id: &str) -> HostError {
        HostError::new(format!("no session {session_id:?} in the database {}", self.db.shown()))
    }

    /// The title of `session_id`, read alone (a listing reads a page of
    /// them, and the conversations are not needed for it).
    async fn title(&self, session_id: &str) -> Result<Option<String>, HostError> {
        let client = self.client().await?;
        let sql = format!("SELECT s.title FROM dsr_sessions s WHERE s.id = $1 AND {}", self.readable(2));
        let row = client
            .query_opt(sql.as_str(), &self.with_user(vec![&session_id]))
            .await
            .map_err(|e| HostError::new(self.db.call_failed(&client, "reading a title", e)))?;
        match row {
            Some(row) => Ok(row.get(0)),
            None => Err(self.missing(session_id)),
        }
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
        let phrase = like_pattern(&terms.phrase);
        let patterns: Vec<String> = terms.words.iter().map(|w| like_pattern(w)).collect();
        let query = Query { target_id, target_cwd, phrase, patterns, limit, same_cwd };
        let single = terms.words.len() == 1 && terms.words[0] == terms.phrase;
        let ids = match self.walk(&client, &query, single).await {
            Ok(Some(ids)) => Ok(ids),
            Ok(None) => self.every_match(&client, &query).await,
            Err(e) => Err(e),
        }
        .map_err(|e| HostError::new(self.db.call_failed(&client, "searching", e)))?;
        // The ranking past the database's tiers, the snippets, fields and
        // message indexes: the core's own search over just these sessions,
        // in this order (its ranking is each session's own, so it ranks them
        // as it would among all). A batch at a time, with the best of those
        // before it (which come before it in this order, so ties still
        // break by it): the memory held is a batch's and a page's.
        let mut best: Vec<String> = Vec::new();
        let mut results = Vec::new();
        for batch in ids.chunks(self.batch) {
            let mut now = std::mem::take(&mut best);
            now.extend_from_slice(batch);
            results = self.rank(&client, &now, request).await?;
            best = now.into_iter().filter(|id| results.iter().any(|r| r.candidate.session_id == *id)).collect();
        }
        Ok(results)
    }

    /// The core's search of `request` over the sessions `ids`, in that order.
    async fn rank(
        &self,
        client: &Arc<Client>,
        ids: &[String],
        request: &SearchRequest,
    ) -> Result<Vec<SearchResult>, HostError> {
        let mut found = self
            .sessions(client, ids)
            .await
            .map_err(|e| HostError::new(self.db.call_failed(client, "reading the sessions found", e)))?;
        found.sort_by_key(|s| ids.iter().position(|id| *id == s.id));
        let memory = MemoryQuery::new();
        for s in found {
            let (h, title, conversation) = s.into_parts()?;
            memory.add_session(h.clone());
            memory.set_title(h.id.clone(), title);
            memory.set_surface(h.id, conversation);
        }
        let resolver = Resolver::new(Arc::new(Once(memory)), self.config);
        let options = SearchOptions { limit: Some(request.limit.max(1)), scope: request.scope };
        resolver.search(&request.target, &request.query, &options, None).await.map_err(|e| HostError::new(e.message()))
    }
}

/// The sessions a search found, read by the core's search once and then
/// dropped: without fingerprints, so that the core indexes each for this
/// one query only (no filter keys, its text compressed fast) rather than as
/// for a cache no later search sees.
struct Once(MemoryQuery);

impl SessionQuery for Once {
    fn list_sessions(&self) -> QueryFuture<'_, Vec<SessionHeader>> {
        self.0.list_sessions()
    }

    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        self.0.read_title(session_id)
    }

    fn read_surface<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, SurfaceData> {
        self.0.read_surface(session_id)
    }
}

impl DatabaseSource {
    /// The first `limit` sessions of the answer, found by walking the
    /// readable sessions in the answer's order, a cwd class at a time
    /// (those in the target's cwd, those without one, the others; each
    /// newest first) and verifying each in turn, until the page is full: a
    /// word most sessions hold fills it after a few. `None` when that is not
    /// known after [`WALK`] sessions (the matches are sparse, so the trigram
    /// indexes narrow them faster: [`DatabaseSource::every_match`]).
    ///
    /// The walk verifies the phrase, so what it finds ranks in the first
    /// three tiers (the whole query in the title; every word in the title;
    /// the whole query in a message, the id or the cwd); those of the first
    /// two it may not all meet, so they are asked for apart (their titles
    /// hold every word: the trigram index) and put before it. The answer is
    /// exact when the page is full of sessions of those tiers, or when every
    /// readable session was walked and no session can rank in a later one
    /// (a query of one word, where a session holding the word holds the
    /// phrase).
    async fn walk(
        &self,
        client: &Client,
        q: &Query,
        single: bool,
    ) -> Result<Option<Vec<String>>, tokio_postgres::Error> {
        let want = usize::try_from(q.limit).unwrap_or(usize::MAX);
        let classes: &[&str] = if q.same_cwd {
            &["s.cwd = $2"]
        } else {
            &["s.cwd = $2", "s.cwd IS NULL", "s.cwd IS NOT NULL AND s.cwd IS DISTINCT FROM $2"]
        };
        // In the walk's order: each session found, and whether its title
        // holds the phrase.
        let mut found: Vec<(String, bool)> = Vec::new();
        let mut budget = self.walk_budget;
        let mut complete = true;
        for (n, class) in classes.iter().enumerate() {
            if found.len() >= want {
                break;
            }
            if n == 0 && q.target_cwd.is_none() {
                continue; // (no session is in no cwd)
            }
            if budget == 0 {
                complete = false;
                break;
            }
            let cap = i64::try_from(budget).unwrap_or(i64::MAX);
            let need = i64::try_from(want - found.len()).unwrap_or(i64::MAX);
            let sql = format!(
                "SELECT w.id, w.title_folded LIKE $3 FROM (SELECT s.id, s.title_folded, s.text_folded, \
                 s.created_at_ms FROM dsr_sessions s WHERE {class} AND s.id IS DISTINCT FROM $1 AND {} \
                 ORDER BY s.created_at_ms DESC, s.id LIMIT $5) w \
                 WHERE w.text_folded LIKE $3 ORDER BY w.created_at_ms DESC, w.id LIMIT $4",
                self.readable(6)
            );
            let params = self.with_user(vec![&q.target_id, &q.target_cwd, &q.phrase, &need, &cap]);
            // (Typed: a class that does not name the target's cwd leaves $2
            // unused.)
            let statement = client
                .prepare_typed(&sql, &self.types(&[Type::TEXT, Type::TEXT, Type::TEXT, Type::INT8, Type::INT8]))
                .await?;
            let rows = client.query(&statement, &params).await?;
            found.extend(rows.iter().map(|r| (r.get(0), r.get(1))));
            if found.len() >= want {
                break;
            }
            // Short of the page: how many sessions the class held, up to
            // what was left to walk.
            let sql = format!(
                "SELECT count(*) FROM (SELECT 1 FROM dsr_sessions s WHERE {class} AND s.id IS DISTINCT FROM $1 \
                 AND {} LIMIT $3) c",
                self.readable(4)
            );
            let params = self.with_user(vec![&q.target_id, &q.target_cwd, &cap]);
            let statement = client.prepare_typed(&sql, &self.types(&[Type::TEXT, Type::TEXT, Type::INT8])).await?;
            let walked: i64 = client.query_one(&statement, &params).await?.get(0);
            let walked = usize::try_from(walked).unwrap_or(usize::MAX);
            if walked >= budget {
                complete = false;
                break;
            }
            budget -= walked;
        }
        if found.len() < want {
            if !(complete && single) {
                return Ok(None);
            }
            // Every readable session walked: `found` is every match.
            let (first, second): (Vec<_>, Vec<_>) = found.into_iter().partition(|(_, top)| *top);
            return Ok(Some(first.into_iter().chain(second).map(|(id, _)| id).collect()));
        }
        // Those of the first two tiers: every session whose title holds
        // every word (the walk found those before its end only), in the
        // answer's order; then the walk's others, in its order.
        // $1 target id, $2 target cwd, $3 phrase pattern, $4 limit, $5.. the words' patterns.
        let mut sql = format!(
            "SELECT s.id FROM dsr_sessions s WHERE s.id IS DISTINCT FROM $1 AND {}",
            self.readable(5 + q.patterns.len())
        );
        for n in 0..q.patterns.len() {
            sql.push_str(&format!(" AND s.title_folded LIKE ${}", n + 5));
        }
        if q.same_cwd {
            sql.push_str(" AND s.cwd = $2");
        }
        sql.push_str(
            " ORDER BY CASE WHEN s.title_folded LIKE $3 THEN 0 ELSE 1 END, \
             CASE WHEN s.cwd IS NULL THEN 1 WHEN s.cwd = $2 THEN 0 ELSE 2 END, s.created_at_ms DESC, s.id LIMIT $4",
        );
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            vec![&q.target_id, &q.target_cwd, &q.phrase, &q.limit];
        for p in &q.patterns {
            params.push(p);
        }
        let rows = client.query(sql.as_str(), &self.with_user(params)).await?;
        let mut ids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        let titled: std::collections::HashSet<String> = ids.iter().cloned().collect();
        ids.extend(found.into_iter().map(|(id, _)| id).filter(|id| !titled.contains(id)));
        ids.truncate(want);
        Ok(Some(ids))
    }

    /// The types of `params` with this source's user's last, when it has one.
    fn types(&self, params: &[Type]) -> Vec<Type> {
        let mut types = params.to_vec();
        if self.user.is_some() {
            types.push(Type::TEXT);
        }
        types
    }

    /// The sessions holding the first `limit` of the answer, from every
    /// session that matches: each word's trigram indexes narrow them, `LIKE`
    /// verifies them, and the ranking orders them as far as the database
    /// can tell tiers (the whole query in the title, every word in the
    /// title, the whole query anywhere else). When fewer than `limit` are in
    /// those tiers, every other match follows: whether a session holds every
    /// word in one message, and how relevant one holding them apart is,
    /// only its messages tell, so the core's search over them orders them.
    async fn every_match(&self, client: &Client, q: &Query) -> Result<Vec<String>, tokio_postgres::Error> {
        // $1 target id, $2 target cwd, $3 phrase pattern, $4.. the words' patterns.
        let mut sql = String::new();
        let words: Vec<usize> = (4..4 + q.patterns.len()).collect();
        let title_words: Vec<String> = words.iter().map(|n| format!("s.title_folded LIKE ${n}")).collect();
        // (The search text holds the title: a phrase there ranks first
        // already, so one found in the rest is in the id, the cwd or a
        // message.)
        sql.push_str(&format!(
            "SELECT s.id, CASE WHEN s.title_folded LIKE $3 THEN 0 WHEN {} THEN 1 \
             WHEN s.text_folded LIKE $3 THEN 2 ELSE 3 END AS tier \
             FROM dsr_sessions s WHERE s.id IS DISTINCT FROM $1 AND {}",
            title_words.join(" AND "),
            self.readable(4 + q.patterns.len())
        ));
        if q.same_cwd {
            sql.push_str(" AND s.cwd = $2");
        }
        for n in &words {
            sql.push_str(&format!(" AND s.text_folded LIKE ${n}"));
        }
        sql.push_str(" ORDER BY tier, CASE WHEN s.cwd IS NULL THEN 1 WHEN s.cwd = $2 THEN 0 ELSE 2 END, s.created_at_ms DESC, s.id");
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&q.target_id, &q.target_cwd, &q.phrase];
        for p in &q.patterns {
            params.push(p);
        }
        let rows = client.query(sql.as_str(), &self.with_user(params)).await?;
        let want = usize::try_from(q.limit).unwrap_or(usize::MAX);
        let tiered = rows.iter().filter(|r| r.get::<_, i32>(1) < 3).count();
        let keep = if tiered >= want { want } else { rows.len() };
        Ok(rows.iter().take(keep).map(|r| r.get(0)).collect())
    }
}

/// How many sessions a search walks in its answer's order, verifying each,
/// before it narrows by the trigram indexes instead
/// ([`DatabaseSource::with_search_walk`]).
pub(crate) const WALK: usize = 250;

/// How many matching sessions a search reads at once to rank them
/// ([`DatabaseSource::with_search_batch`]).
pub(crate) const BATCH: usize = 256;

/// A search as the database runs it: the target's id and cwd (`None` where
/// no stored session could hold them), the `LIKE` patterns of the phrase
/// and of each word, how many sessions it returns, and whether only those
/// in the target's cwd count.
struct Query {
    target_id: Option<String>,
    target_cwd: Option<String>,
    phrase: String,
    patterns: Vec<String>,
    limit: i64,
    same_cwd: bool,
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
        Box::pin(async move { Ok(self.listing().await?.sessions().to_vec()) })
    }

    fn read_title<'a>(&'a self, session_id: &'a str) -> QueryFuture<'a, Option<String>> {
        Box::pin(async move { self.title(session_id).await })
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
        Box::pin(async move { Ok(Some(self.listing().await?)) })
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

/// The text a session's row is searched by: its folded title, its
/// [`place_folded`] and each of its messages folded, one after another on
/// lines of their own (no word holds a line end, and no phrase does, so each
/// is found in this text exactly when it is in one of them). What schema
/// version 4's migration makes of the rows an older push wrote.
pub(crate) fn text_folded<'a>(title_folded: &str, place: &str, messages: impl Iterator<Item = &'a str>) -> String {
    let mut text = String::with_capacity(title_folded.len() + place.len() + 1);
    text.push_str(title_folded);
    text.push('\n');
    text.push_str(place);
    for m in messages {
        text.push('\n');
        text.push_str(m);
    }
    text
}
