//! How a command fails: a contract error, said on stderr with its code
//! (exit 1).

use dsh_session_reference::{Error, ErrorCode};

/// A failure: a contract error (exit 1, contract code on stderr).
pub(crate) struct Failure(pub(crate) Error);

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure(e)
    }
}

pub(crate) type CliResult<T = ()> = Result<T, Failure>;

pub(crate) fn read_failed(message: impl Into<String>) -> Failure {
    Failure(Error::new(ErrorCode::ReadFailed, message))
}
