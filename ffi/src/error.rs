//! Status codes, the `dsr_error` object, misuse reporting and the panic guard.

use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use dsh_session_reference::{Error, ErrorCode};

/// The status every fallible `dsr_` function returns: `DSR_OK` (0) or one of
/// the `DSR_*` error statuses below.
pub type dsr_status = i32;

/// Success.
pub const DSR_OK: dsr_status = 0;
/// `SESSION_REFERENCE_INVALID_CONFIG`: a configuration value is invalid.
pub const DSR_INVALID_CONFIG: dsr_status = 1;
/// `SESSION_REFERENCE_INVALID_REFERENCE`: a reference, URI, mention or candidate limit is malformed.
pub const DSR_INVALID_REFERENCE: dsr_status = 2;
/// `SESSION_REFERENCE_SELF_REFERENCE`: the target references itself.
pub const DSR_SELF_REFERENCE: dsr_status = 3;
/// `SESSION_REFERENCE_TOO_MANY`: more distinct references than `maxReferences`.
pub const DSR_TOO_MANY: dsr_status = 4;
/// `SESSION_REFERENCE_READ_FAILED`: the host's session query failed or returned malformed data.
pub const DSR_READ_FAILED: dsr_status = 5;
/// `SESSION_REFERENCE_BUDGET_EXCEEDED`: a source cannot fit in `maxReferenceBytes`.
pub const DSR_BUDGET_EXCEEDED: dsr_status = 6;
/// `SESSION_REFERENCE_CANCELLED`: the operation was cancelled through a `dsr_cancel`.
pub const DSR_CANCELLED: dsr_status = 7;
/// `SESSION_REFERENCE_SESSION_CHANGED`: a read cursor was made from another
/// state of its session's conversation (the session changed since): read
/// again without the cursor.
pub const DSR_SESSION_CHANGED: dsr_status = 10;
/// `SESSION_REFERENCE_MISUSE`: the C API itself was misused (a NULL pointer
/// where a value is required, invalid UTF-8, text that is not JSON, a request
/// of the wrong shape, a host vtable of the wrong size, a call from inside a
/// host callback). Never used for the contract's own errors.
pub const DSR_MISUSE: dsr_status = 8;
/// `SESSION_REFERENCE_INTERNAL`: a bug inside the library (a Rust panic was
/// caught at the boundary). The call had no effect on its outputs.
pub const DSR_INTERNAL: dsr_status = 9;

/// An error reported by a `dsr_` function: a status, its stable string code
/// (e.g. `"SESSION_REFERENCE_READ_FAILED"`) and a message for people.
/// Owned by the caller; free it with `dsr_error_free`.
pub struct dsr_error {
    status: dsr_status,
    code: &'static CStr,
    message: CString,
}

fn status_of(code: ErrorCode) -> dsr_status {
    match code {
        ErrorCode::InvalidConfig => DSR_INVALID_CONFIG,
        ErrorCode::InvalidReference => DSR_INVALID_REFERENCE,
        ErrorCode::SelfReference => DSR_SELF_REFERENCE,
        ErrorCode::TooMany => DSR_TOO_MANY,
        ErrorCode::ReadFailed => DSR_READ_FAILED,
        ErrorCode::BudgetExceeded => DSR_BUDGET_EXCEEDED,
        ErrorCode::Cancelled => DSR_CANCELLED,
        ErrorCode::SessionChanged => DSR_SESSION_CHANGED,
    }
}

/// The stable code of a status as a static C string, or `None` for an unknown status.
pub(crate) fn code_cstr(status: dsr_status) -> Option<&'static CStr> {
    Some(match status {
        DSR_OK => c"SESSION_REFERENCE_OK",
        DSR_INVALID_CONFIG => c"SESSION_REFERENCE_INVALID_CONFIG",
        DSR_INVALID_REFERENCE => c"SESSION_REFERENCE_INVALID_REFERENCE",
        DSR_SELF_REFERENCE => c"SESSION_REFERENCE_SELF_REFERENCE",
        DSR_TOO_MANY => c"SESSION_REFERENCE_TOO_MANY",
        DSR_READ_FAILED => c"SESSION_REFERENCE_READ_FAILED",
        DSR_BUDGET_EXCEEDED => c"SESSION_REFERENCE_BUDGET_EXCEEDED",
        DSR_CANCELLED => c"SESSION_REFERENCE_CANCELLED",
        DSR_MISUSE => c"SESSION_REFERENCE_MISUSE",
        DSR_INTERNAL => c"SESSION_REFERENCE_INTERNAL",
        DSR_SESSION_CHANGED => c"SESSION_REFERENCE_SESSION_CHANGED",
        _ => return None,
    })
}

/// A failure on its way to the caller.
#[derive(Debug)]
pub(crate) struct Failure {
    status: dsr_status,
    message: String,
}

impl Failure {
    /// API misuse (`DSR_MISUSE`).
    pub(crate) fn misuse(message: impl Into<String>) -> Self {
        Failure { status: DSR_MISUSE, message: message.into() }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure { status: status_of(e.code()), message: e.message().to_owned() }
    }
}

/// A C string from arbitrary text: interior NUL bytes (a host reason or a
/// session id may contain them) are shown as U+FFFD.
pub(crate) fn c_string_lossy(text: &str) -> CString {
    CString::new(text.replace('\0', "\u{FFFD}")).unwrap_or_default()
}

/// Stores `failure` into `*err` when `err` is not NULL; returns its status.
///
/// # Safety
/// `err` is NULL or valid for one pointer write.
pub(crate) unsafe fn report(err: *mut *mut dsr_error, failure: Failure) -> dsr_status {
    let status = failure.status;
    if !err.is_null() {
        let code = code_cstr(status).unwrap_or(c"SESSION_REFERENCE_INTERNAL");
        let boxed = Box::new(dsr_error { status, code, message: c_string_lossy(&failure.message) });
        // SAFETY: the caller passed a valid out-pointer.
        unsafe { err.write(Box::into_raw(boxed)) };
    }
    status
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    format!("internal error (a bug in dsh-session-reference): {what}")
}

/// The panic guard of every fallible export: clears `*err`, runs `body`, and
/// turns an error or a caught panic into a status plus an error object.
///
/// # Safety
/// `err` is NULL or valid for pointer writes.
pub(crate) unsafe fn guard(err: *mut *mut dsr_error, body: impl FnOnce() -> Result<(), Failure>) -> dsr_status {
    if !err.is_null() {
        // SAFETY: the caller passed a valid out-pointer.
        unsafe { err.write(std::ptr::null_mut()) };
    }
    let outcome = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => Err(Failure { status: DSR_INTERNAL, message: panic_message(&*payload) }),
    };
    match outcome {
        Ok(()) => DSR_OK,
        // SAFETY: as above.
        Err(failure) => unsafe { report(err, failure) },
    }
}

/// The panic guard of exports that return a value instead of a status:
/// a caught panic yields `fallback`.
pub(crate) fn guard_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// The status of an error (`DSR_MISUSE` when `error` is NULL).
///
/// # Safety
/// `error` is NULL or a live error returned by this library.
#[no_mangle]
pub unsafe extern "C" fn dsr_error_status(error: *const dsr_error) -> dsr_status {
    guard_value(DSR_INTERNAL, || {
        // SAFETY: NULL or a live error, per the contract.
        match unsafe { error.as_ref() } {
            Some(e) => e.status,
            None => DSR_MISUSE,
        }
    })
}

/// The stable string code of an error, e.g. `"SESSION_REFERENCE_READ_FAILED"`
/// or `"SESSION_REFERENCE_MISUSE"`. Static storage: valid forever, never
/// freed. NULL when `error` is NULL.
///
/// # Safety
/// `error` is NULL or a live error returned by this library.
#[no_mangle]
pub unsafe extern "C" fn dsr_error_code(error: *const dsr_error) -> *const c_char {
    guard_value(std::ptr::null(), || {
        // SAFETY: NULL or a live error, per the contract.
        match unsafe { error.as_ref() } {
            Some(e) => e.code.as_ptr(),
            None => std::ptr::null(),
        }
    })
}

/// The error's message for people (UTF-8, NUL-terminated; a NUL inside a
/// host's reason appears as U+FFFD). Owned by the error: valid until
/// `dsr_error_free`. NULL when `error` is NULL.
///
/// # Safety
/// `error` is NULL or a live error returned by this library.
#[no_mangle]
pub unsafe extern "C" fn dsr_error_message(error: *const dsr_error) -> *const c_char {
    guard_value(std::ptr::null(), || {
        // SAFETY: NULL or a live error, per the contract.
        match unsafe { error.as_ref() } {
            Some(e) => e.message.as_ptr(),
            None => std::ptr::null(),
        }
    })
}

/// Frees an error. NULL is ignored.
///
/// # Safety
/// `error` is NULL or an error returned by this library that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn dsr_error_free(error: *mut dsr_error) {
    guard_value((), || {
        if !error.is_null() {
            // SAFETY: created by `Box::into_raw` in `report`, freed once.
            drop(unsafe { Box::from_raw(error) });
        }
    })
}

/// The stable string code of a status (`"SESSION_REFERENCE_OK"` for `DSR_OK`),
/// or NULL for a value that is not a status. Static storage, never freed.
#[no_mangle]
pub extern "C" fn dsr_status_code(status: dsr_status) -> *const c_char {
    guard_value(std::ptr::null(), || code_cstr(status).map_or(std::ptr::null(), CStr::as_ptr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_code_has_the_same_spelling() {
        for code in ErrorCode::ALL {
            let status = status_of(code);
            assert_eq!(code_cstr(status).unwrap().to_str().unwrap(), code.as_str());
        }
        assert_eq!(code_cstr(DSR_MISUSE).unwrap().to_str().unwrap(), "SESSION_REFERENCE_MISUSE");
        assert_eq!(code_cstr(DSR_INTERNAL).unwrap().to_str().unwrap(), "SESSION_REFERENCE_INTERNAL");
    }

    #[test]
    fn a_panic_becomes_an_internal_error() {
        let mut err: *mut dsr_error = std::ptr::null_mut();
        // SAFETY: `err` is a live, null-initialised out-pointer.
        let status = unsafe { guard(&mut err, || panic!("boom")) };
        assert_eq!(status, DSR_INTERNAL);
        // SAFETY: `guard` stored an error in `err`; it is freed once, last.
        unsafe {
            assert_eq!(dsr_error_status(err), DSR_INTERNAL);
            let msg = CStr::from_ptr(dsr_error_message(err)).to_str().unwrap();
            assert!(msg.contains("boom"), "{msg}");
            dsr_error_free(err);
        }
    }
}
