//! Sessions shared through PostgreSQL (docs/teams.md): the push that sends
//! what a reference may see of each session to a team database, the
//! schema the tool owns there, the database read back as a session
//! source of the core ([`DatabaseSource`], a
//! [`SessionQuery`](dsh_session_reference::SessionQuery)), of every session
//! or of those one user may read, and the team's [`users`].
//!
//! The core stays free of network clients (it is embedded by C, Python and
//! Node); this crate is where the PostgreSQL client lives, and the command
//! line is its one front.

mod connect;
mod project;
mod push;
mod schema;
mod source;
pub mod users;

pub use connect::Database;
pub use project::{project_key, ProjectKeys};
pub use push::{push, PushSession, PushSummary};
pub use schema::SCHEMA_VERSION;
pub use source::DatabaseSource;
