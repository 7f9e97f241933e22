//! Readers of session logs that other programs write to disk, each a
//! read-only session query over one root directory.
//!
//! - [`dsh`]: DeepSeek Harness session logs, format generations v0 to v4
//!   ([`DshStore`](dsh::DshStore)).
//! - [`multi`]: one view over several sources ([`MultiQuery`]).
//!
//! Every source is a [`FileSource`]: a [`BlockingSessionQuery`] over a root
//! that reads files only through [`fs`], so that each inherits the same
//! guarantees (read-only, no symbolic link below the root followed, regular
//! files only, bounded lines, byte-ordered walks).

pub mod dsh;
pub mod fs;
pub mod multi;

use std::path::Path;
use std::sync::Arc;

use crate::error::HostError;
use crate::host::{Blocking, BlockingSessionQuery, SessionQuery};

pub use self::fs::FileIdentity;
pub use self::multi::{MultiQuery, SourceStatus};

/// A session source backed by files under one root directory.
///
/// Its reads block (they are file reads); [`into_query`](Self::into_query)
/// wraps it in [`Blocking`], which runs each read on tokio's blocking pool so
/// reads of several sessions run in parallel.
pub trait FileSource: BlockingSessionQuery + Sized {
    /// A short name of the format, for messages (`"DSH"`).
    const FORMAT: &'static str;

    /// The root directory.
    fn root(&self) -> &Path;

    /// The identity of the file a read of `session_id` would read now: a
    /// cheap way for a caller to tell whether a session changed since it
    /// last read it.
    fn identity(&self, session_id: &str) -> Result<FileIdentity, HostError>;

    /// This source as a session query for a [`Resolver`](crate::Resolver).
    fn into_query(self) -> Arc<dyn SessionQuery> {
        Arc::new(Blocking::new(self))
    }
}
