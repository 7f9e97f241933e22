//! Cancel tokens for C callers.

use dsh_session_reference::CancelToken;

use crate::error::guard_value;

/// A cancellation signal. Create with `dsr_cancel_new`, pass to any number
/// of calls (on any threads), cancel from any thread with
/// `dsr_cancel_cancel`; free with `dsr_cancel_free` once no call uses it.
/// Once cancelled it stays cancelled.
pub struct dsr_cancel {
    pub(crate) token: CancelToken,
}

/// A new token that is not cancelled. Free it with `dsr_cancel_free`.
/// Returns NULL only if the library failed internally.
#[no_mangle]
pub extern "C" fn dsr_cancel_new() -> *mut dsr_cancel {
    guard_value(std::ptr::null_mut(), || Box::into_raw(Box::new(dsr_cancel { token: CancelToken::new() })))
}

/// Cancels every call observing `cancel`: they return
/// `DSR_CANCELLED` promptly, even while a host callback is still blocked
/// (that callback's thread is abandoned; its result is discarded).
/// Thread-safe and idempotent. NULL is ignored.
///
/// # Safety
/// `cancel` is NULL or a live token from `dsr_cancel_new`.
#[no_mangle]
pub unsafe extern "C" fn dsr_cancel_cancel(cancel: *const dsr_cancel) {
    guard_value((), || {
        // SAFETY: NULL or live per the contract.
        if let Some(c) = unsafe { cancel.as_ref() } {
            c.token.cancel();
        }
    })
}

/// Whether `dsr_cancel_cancel` was called on `cancel` (false for NULL).
///
/// # Safety
/// `cancel` is NULL or a live token from `dsr_cancel_new`.
#[no_mangle]
pub unsafe extern "C" fn dsr_cancel_is_cancelled(cancel: *const dsr_cancel) -> bool {
    guard_value(false, || {
        // SAFETY: NULL or live per the contract.
        unsafe { cancel.as_ref() }.is_some_and(|c| c.token.is_cancelled())
    })
}

/// Frees a token. NULL is ignored. No call may be using it any more.
///
/// # Safety
/// `cancel` is NULL or a token from `dsr_cancel_new` that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn dsr_cancel_free(cancel: *mut dsr_cancel) {
    guard_value((), || {
        if !cancel.is_null() {
            // SAFETY: created by `Box::into_raw` in `dsr_cancel_new`, freed once.
            drop(unsafe { Box::from_raw(cancel) });
        }
    })
}
