//! The contexts a process keeps between commands (the daemon's): set up
//! by [`keep_contexts`], and then every command's context is the kept one
//! for its sources and configuration; and the cancellation of the command
//! a thread runs for a caller.

use std::any::Any;
use std::sync::Arc;

use dsh_session_reference::sources::SourceSpec;
use dsh_session_reference::Config;

use crate::failure::CliResult;

/// What a kept context does when the pool lets it go or the daemon saves:
/// writes its cache files if they changed.
pub(crate) trait Keep: Any + Send + Sync {
    /// Saves the context's cache files that changed.
    fn save_files(&self);
}

/// How many sets of sources are kept (the least recently used goes when
/// another comes).
const KEPT_AT_MOST: usize = 8;

/// The contexts kept, by sources and configuration; set only in a process
/// that keeps them.
static KEPT: std::sync::OnceLock<std::sync::Mutex<Vec<Kept>>> = std::sync::OnceLock::new();

struct Kept {
    key: String,
    specs: Vec<SourceSpec>,
    cache: bool,
    /// The context, as what it is (handed back) and as what the pool
    /// asks of it.
    shared: Arc<dyn Any + Send + Sync>,
    keep: Arc<dyn Keep>,
    used: std::time::Instant,
}

thread_local! {
    /// The running command's cancellation (in the daemon, while it answers).
    static CANCEL: std::cell::RefCell<Option<dsh_session_reference::CancelToken>> = const { std::cell::RefCell::new(None) };
}

/// From now on this process keeps its commands' contexts between commands.
pub(crate) fn keep_contexts() {
    let _ = KEPT.set(std::sync::Mutex::new(Vec::new()));
}

/// Whether this process keeps its commands' contexts.
pub(crate) fn keeping() -> bool {
    KEPT.get().is_some()
}

/// The cancellation of the command this thread runs for a caller, if any.
pub(crate) fn command_cancel() -> Option<dsh_session_reference::CancelToken> {
    CANCEL.with(|c| c.borrow().clone())
}

/// Sets (or, with `None`, clears) the cancellation of the command this
/// thread runs.
pub(crate) fn set_command_cancel(cancel: Option<dsh_session_reference::CancelToken>) {
    CANCEL.with(|c| *c.borrow_mut() = cancel);
}

/// The context kept for `specs`, `config` and `cache`, opened by `open` the
/// first time. The roots are kept as given (so that every message names
/// them as the command line would), and told apart by what they mean as
/// well: a relative root given in another directory is another context,
/// and one given in the same directory means the same there each time.
pub(crate) fn kept<T: Keep>(
    specs: &[SourceSpec],
    config: &Config,
    cache: bool,
    open: impl FnOnce() -> CliResult<T>,
) -> CliResult<Arc<T>> {
    let absolute: Vec<SourceSpec> = specs
        .iter()
        .map(|s| SourceSpec::new(s.kind, std::path::absolute(&s.root).unwrap_or_else(|_| s.root.clone())))
        .collect();
    let key = format!("{specs:?}|{absolute:?}|{config:?}|{cache}");
    let all = KEPT.get().expect("kept contexts exist only where keep_contexts was called");
    let mut all = all.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = all.iter_mut().find(|k| k.key == key) {
        // (one type of context is kept: another under the same key is a miss)
        if let Ok(shared) = Arc::downcast::<T>(Arc::clone(&found.shared)) {
            found.used = std::time::Instant::now();
            return Ok(shared);
        }
    }
    let shared = Arc::new(open()?);
    all.retain(|k| k.key != key);
    if all.len() >= KEPT_AT_MOST {
        let oldest = (0..all.len()).min_by_key(|&i| all[i].used).unwrap_or(0);
        let gone = all.remove(oldest);
        gone.keep.save_files();
    }
    let keep: Arc<dyn Keep> = Arc::clone(&shared) as Arc<dyn Keep>;
    let any: Arc<dyn Any + Send + Sync> = Arc::clone(&shared) as Arc<dyn Any + Send + Sync>;
    all.push(Kept { key, specs: absolute, cache, shared: any, keep, used: std::time::Instant::now() });
    Ok(shared)
}

/// The sources (roots made absolute) and caching of every kept context.
pub(crate) fn kept_sources() -> Vec<(Vec<SourceSpec>, bool)> {
    KEPT.get()
        .map(|all| all.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|k| (k.specs.clone(), k.cache)).collect())
        .unwrap_or_default()
}

/// Saves the cache files of every kept context that changed.
pub(crate) fn save_kept() {
    if let Some(all) = KEPT.get() {
        for kept in all.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            kept.keep.save_files();
        }
    }
}
