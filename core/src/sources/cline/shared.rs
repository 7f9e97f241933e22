//! What both of Cline's layouts share: the ids' prefix, the bound of a
//! read, and how a session's fingerprint is made of its files.

use crate::fs::Stamp;
use crate::host::Fingerprint;

/// What every Cline session id starts with.
pub const PREFIX: &str = "cline:";

/// The largest history read, in bytes (it is parsed whole).
pub const MAX_HISTORY_BYTES: u64 = 1 << 30;

/// The fingerprint of a session read from the file `main` and the files
/// `extra` (each possibly absent): their identities.
pub(super) fn files_fingerprint(main: Stamp, extra: impl IntoIterator<Item = Option<Stamp>>) -> Fingerprint {
    let mut bytes = Fingerprint::from(main.id).as_bytes().to_vec();
    for stamp in extra {
        match stamp {
            Some(s) => bytes.extend_from_slice(Fingerprint::from(s.id).as_bytes()),
            None => bytes.push(0),
        }
    }
    Fingerprint::from_bytes(bytes)
}
