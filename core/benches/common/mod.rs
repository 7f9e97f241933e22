//! What more than one benchmark binary needs (each includes it with
//! `mod common;`; a directory without `main.rs` is not a bench of its own).

use std::time::Duration;

/// CPU time (user + system) of the whole process so far.
pub fn cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
