//! The library's own tokio runtime, used by the blocking facade and by the
//! language fronts to run work off their callers' threads.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Runtime};

/// The shared multi-threaded runtime (created on first use; its threads are
/// named `dsh-session-reference`).
pub fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        Builder::new_multi_thread()
            .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8))
            .max_blocking_threads(512)
            .thread_name("dsh-session-reference")
            .enable_all()
            .build()
            .expect("the dsh-session-reference runtime could not start")
    })
}

/// Runs `future` to completion on the library's runtime, blocking the
/// calling thread. Must not be called from inside a tokio runtime.
pub fn block_on<F: Future>(future: F) -> F::Output {
    runtime().block_on(future)
}
