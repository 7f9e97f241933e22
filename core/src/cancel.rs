//! The cancel token: cheap to clone, cancellable from any thread, observed by
//! every long call of the [`Resolver`](crate::Resolver).

use tokio_util::sync::CancellationToken;

/// A cancellation signal shared between a caller and the operations it
/// started. Cloning is cheap; all clones observe the same state. Once
/// cancelled, a token stays cancelled.
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    inner: CancellationToken,
}

impl CancelToken {
    /// A fresh token that is not cancelled.
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// Cancels every operation observing this token. Safe from any thread,
    /// idempotent.
    pub fn cancel(&self) {
        self.inner.cancel();
    }

    /// Whether [`cancel`](Self::cancel) has been called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }

    /// A new token that is cancelled whenever this one is (and may also be
    /// cancelled on its own without affecting this one). Fronts use it to
    /// join a caller's token with their own cancellation source.
    pub fn child(&self) -> CancelToken {
        CancelToken { inner: self.inner.child_token() }
    }

    /// Completes when the token is cancelled.
    pub async fn cancelled(&self) {
        self.inner.cancelled().await
    }
}
