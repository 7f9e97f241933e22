//! A team database as this crate reaches it: its URL, a few connections
//! kept (calls at once each take one of their own) and made again when
//! lost, TLS through rustls where the URL asks
//! for it, and every failure told in words a person can act on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, NoTls};

/// How long a connection may take before it counts as unreachable, unless
/// the URL says (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The statement timeout a connection gets unless the URL sets options of
/// its own: no call waits on the database for longer than this.
const STATEMENT_TIMEOUT_MS: u64 = 30_000;

/// The statement timeout of a push's writes on such a connection: a write
/// may merge the pending entries of a trigram index into it, which on a
/// large index takes longer than a reader should ever wait.
const WRITE_TIMEOUT_MS: u64 = 600_000;

/// How many connections a [`Database`] keeps: as many calls at once each
/// have one of their own (PostgreSQL runs a connection's statements one
/// after the other); more share the least used.
const KEPT: usize = 8;

/// A PostgreSQL database named by a URL (`postgres://user:pass@host:port/db`
/// or the `key=value` form `libpq` takes), with up to 8 connections kept
/// for its calls: a call takes one that no other call is using, the first
/// such, so calls one after another use one connection. A connection that
/// breaks is dropped, and the next call connects again.
pub struct Database {
    config: Config,
    /// The database as messages name it: no password.
    shown: String,
    clients: Mutex<Vec<Slot>>,
    /// Whether the statement timeout is this crate's (the URL set no
    /// options).
    own_timeout: bool,
}

/// A kept connection's place.
#[derive(Clone)]
enum Slot {
    Empty,
    /// A call is connecting for it.
    Connecting,
    Ready(Arc<Client>),
}

/// A slot taken for connecting: made empty again unless filled (a connect
/// that fails, or a call dropped while it connects, gives it back).
struct Reserved<'a> {
    db: &'a Database,
    at: usize,
    filled: bool,
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        if !self.filled {
            self.db.kept()[self.at] = Slot::Empty;
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("at", &self.shown).finish_non_exhaustive()
    }
}

impl Database {
    /// The database `url` names; an error (in words) when it is not a
    /// PostgreSQL URL. Nothing is connected yet.
    pub fn new(url: &str) -> Result<Database, String> {
        let mut config: Config = url.parse().map_err(|e| format!("not a PostgreSQL URL ({e})"))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let own_timeout = config.get_options().is_none();
        if own_timeout {
            config.options(format!("-c statement_timeout={STATEMENT_TIMEOUT_MS}"));
        }
        if config.get_application_name().is_none() {
            config.application_name("dsh-session-ref");
        }
        let shown = shown(&config);
        Ok(Database { config, shown, clients: Mutex::new(vec![Slot::Empty; KEPT]), own_timeout })
    }

    /// What a push's write transaction runs first: its longer statement
    /// timeout, unless the URL set the connection's options itself.
    pub(crate) fn write_setting(&self) -> Option<String> {
        self.own_timeout.then(|| format!("SET LOCAL statement_timeout = {WRITE_TIMEOUT_MS}"))
    }

    /// The database as messages name it (user, host, port and name; never
    /// the password).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// A kept connection no other call is using, else a new one kept in a
    /// free place, else the least used kept one (a call never opens more
    /// than [`KEPT`] at once, however many run together).
    pub(crate) async fn client(&self) -> Result<Arc<Client>, String> {
        let reserved = {
            let mut kept = self.kept();
            for slot in kept.iter_mut() {
                if matches!(slot, Slot::Ready(c) if c.is_closed()) {
                    *slot = Slot::Empty;
                }
            }
            let ready = || {
                kept.iter().filter_map(|s| match s {
                    Slot::Ready(c) => Some(c),
                    _ => None,
                })
            };
            if let Some(idle) = ready().find(|c| Arc::strong_count(c) == 1) {
                return Ok(Arc::clone(idle));
            }
            match kept.iter().position(|s| matches!(s, Slot::Empty)) {
                Some(at) => {
                    kept[at] = Slot::Connecting;
                    Some(Reserved { db: self, at, filled: false })
                }
                None => match ready().min_by_key(|c| Arc::strong_count(c)) {
                    Some(least) => return Ok(Arc::clone(least)),
                    // (Every place is being connected: one of its own.)
                    None => None,
                },
            }
        };
        let client = Arc::new(self.connect().await?);
        if let Some(mut reserved) = reserved {
            self.kept()[reserved.at] = Slot::Ready(Arc::clone(&client));
            reserved.filled = true;
        }
        Ok(client)
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets `client` when it is kept and failed in a way that leaves it
    /// unusable, so the next call connects again.
    pub(crate) fn failed(&self, client: &Arc<Client>, e: &tokio_postgres::Error) {
        if client.is_closed() || e.is_closed() || e.as_db_error().is_none() {
            for slot in self.kept().iter_mut() {
                if matches!(slot, Slot::Ready(kept) if Arc::ptr_eq(kept, client)) {
                    *slot = Slot::Empty;
                }
            }
        }
    }

    /// A new connection of its own (a push runs a few side by side), its
    /// driving task on the library's runtime.
    pub(crate) async fn connect(&self) -> Result<Client, String> {
        let config = self.config.clone();
        let shown = self.shown.clone();
        let tls = wants_tls(&config);
        let rt = dsh_session_reference::runtime();
        let connecting = rt.spawn(async move {
            let (client, connection) = if tls {
                let connector = tls_connector()?;
                let (client, connection) = config.connect(connector).await.map_err(|e| refused(&shown, &e))?;
                (client, tokio::spawn(async move { drop(connection.await) }))
            } else {
                let (client, connection) = config.connect(NoTls).await.map_err(|e| refused(&shown, &e))?;
                (client, tokio::spawn(async move { drop(connection.await) }))
            };
            drop(connection);
            Ok(client)
        });
        connecting.await.map_err(|_| format!("connecting to {} was interrupted", self.shown))?
    }

    /// What a failed call says: the database's own words and code, or how
    /// the connection was lost; the kept connection is dropped when it is
    /// no longer usable.
    pub(crate) fn call_failed(&self, client: &Arc<Client>, what: &str, e: tokio_postgres::Error) -> String {
        self.failed(client, &e);
        format!("{what} in the database {} failed: {}", self.shown, described(&e))
    }
}

/// Whether the URL asks for TLS (`sslmode=prefer`, the default, or
/// `require`): then rustls is offered, and `prefer` falls back to a plain
/// connection where the server has no TLS. A Unix socket never uses it.
fn wants_tls(config: &Config) -> bool {
    config.get_ssl_mode() != SslMode::Disable && config.get_hosts().iter().any(|h| matches!(h, Host::Tcp(_)))
}

/// rustls with the system's root certificates.
fn tls_connector() -> Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        drop(roots.add(cert));
    }
    // ring (no C toolchain to build, unlike aws-lc-rs); it lacks only the
    // post-quantum key exchanges, which PostgreSQL servers do not require.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS could not be set up: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// `user@host:port/dbname` of a configuration.
fn shown(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().map(|u| format!("{u}@")).unwrap_or_default();
    let db = config.get_dbname().unwrap_or("");
    format!("{user}{host}:{port}/{db}")
}

/// Why a connection could not be made, in words.
fn refused(shown: &str, e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        if *code == SqlState::INVALID_PASSWORD || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION {
            return format!(
                "the database {shown} refused the credentials ({}): check the user and password of the URL",
                db.message()
            );
        }
        return format!("the database {shown} refused the connection: {} ({})", db.message(), code.code());
    }
    format!("cannot reach the database {shown}: {}", described(e))
}

/// An error's words with its causes, and the database's code.
pub(crate) fn described(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        if *code == SqlState::QUERY_CANCELED {
            return format!("the database cancelled the statement ({}; a statement timeout?)", db.message());
        }
        if *code == SqlState::ADMIN_SHUTDOWN || *code == SqlState::CRASH_SHUTDOWN {
            return format!("the connection was ended by the server ({}); the next call connects again", db.message());
        }
        return format!("{} ({})", db.message(), code.code());
    }
    if e.is_closed() {
        return "the connection was lost; the next call connects again".to_owned();
    }
    let mut words = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        words.push_str(": ");
        words.push_str(&c.to_string());
        cause = c.source();
    }
    words
}
