//! What reads sessions from somewhere other than a host's own code: the
//! view over several sources (`multi.rs`).

pub mod multi;

pub use multi::{MultiQuery, SourceStatus};
