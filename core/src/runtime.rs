//! The library's one tokio runtime, used by the blocking facade and by every
//! language front to run work off its caller's thread.
//!
//! It is per process: a child created by `fork()` (whose copy of the
//! parent's runtime has no threads) gets a fresh one on its first call, so a
//! Python, C or Node host that forks keeps working in the child.

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::runtime::{Builder, Runtime};

/// The shared multi-threaded runtime of the current process (created on
/// first use; 2 to 8 workers by the machine's parallelism, threads named
/// `dsh-session-reference`). After a `fork()`, the child's first call
/// builds a new one; the parent's copy, which has no threads in the child,
/// is leaked rather than dropped (dropping it would wait for them).
pub fn runtime() -> Arc<Runtime> {
    static RT: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = RT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, rt)) = slot.as_ref() {
        if *owner == pid {
            return Arc::clone(rt);
        }
        if let Some((_, inherited)) = slot.take() {
            std::mem::forget(inherited);
        }
    }
    let rt = Arc::new(
        Builder::new_multi_thread()
            .worker_threads(cores().clamp(2, 8))
            .max_blocking_threads(512)
            .thread_name("dsh-session-reference")
            .enable_all()
            .build()
            .expect("the dsh-session-reference runtime could not start"),
    );
    *slot = Some((pid, Arc::clone(&rt)));
    rt
}

/// Runs `future` to completion on the library's runtime, blocking the
/// calling thread. Must not be called from inside a tokio runtime.
pub fn block_on<F: Future>(future: F) -> F::Output {
    runtime().block_on(future)
}

/// The cores this process may run on (at least one), asked once: the
/// standard library reads the cgroup's quota each time it is asked.
pub(crate) fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}
