//! The `dsh-session-ref` command line (see issue 6).
fn main() {}
