//! Text crossing the boundary: borrowed input (pointer + length) and
//! library-owned output strings freed by `dsr_string_free`.

use std::ffi::c_char;
use std::mem::size_of;

use serde_json::Value;

use crate::error::{guard_value, Failure};

/// Bytes of the length header in front of every returned string.
const HEADER: usize = size_of::<usize>();

/// Borrows `len` bytes at `ptr`; NULL is misuse (also with `len == 0`).
///
/// # Safety
/// `ptr` is NULL or valid for `len` bytes for the lifetime `'a`.
pub(crate) unsafe fn bytes_arg<'a>(
    func: &str,
    name: &str,
    ptr: *const c_char,
    len: usize,
) -> Result<&'a [u8], Failure> {
    if ptr.is_null() {
        return Err(Failure::misuse(format!("{func}: `{name}` is NULL")));
    }
    if len > isize::MAX as usize {
        return Err(Failure::misuse(format!("{func}: `{name}_len` is too large")));
    }
    // SAFETY: non-NULL and valid for `len` bytes per the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// Borrows UTF-8 text at `ptr`/`len`; NULL or invalid UTF-8 is misuse.
///
/// # Safety
/// As [`bytes_arg`].
pub(crate) unsafe fn str_arg<'a>(func: &str, name: &str, ptr: *const c_char, len: usize) -> Result<&'a str, Failure> {
    // SAFETY: forwarded contract.
    let bytes = unsafe { bytes_arg(func, name, ptr, len) }?;
    std::str::from_utf8(bytes)
        .map_err(|e| Failure::misuse(format!("{func}: `{name}` is not valid UTF-8 (byte {})", e.valid_up_to())))
}

/// Parses UTF-8 JSON text at `ptr`/`len` with JavaScript `JSON.parse`
/// semantics; NULL, invalid UTF-8 or text that is not JSON is misuse.
///
/// # Safety
/// As [`bytes_arg`].
pub(crate) unsafe fn json_arg(func: &str, name: &str, ptr: *const c_char, len: usize) -> Result<Value, Failure> {
    // SAFETY: forwarded contract.
    let text = unsafe { str_arg(func, name, ptr, len) }?;
    dsh_session_reference::wire::parse_js(text)
        .map_err(|e| Failure::misuse(format!("{func}: `{name}` is not JSON: {e}")))
}

/// Checks that a required out-pointer is not NULL.
pub(crate) fn out_arg<T>(func: &str, name: &str, ptr: *mut T) -> Result<(), Failure> {
    if ptr.is_null() {
        Err(Failure::misuse(format!("{func}: `{name}` is NULL")))
    } else {
        Ok(())
    }
}

/// Copies `bytes` into a new library-owned, NUL-terminated string.
fn alloc_string(bytes: &[u8]) -> *mut c_char {
    let mut v = Vec::with_capacity(HEADER + bytes.len() + 1);
    v.extend_from_slice(&bytes.len().to_ne_bytes());
    v.extend_from_slice(bytes);
    v.push(0);
    let base = Box::into_raw(v.into_boxed_slice()).cast::<u8>();
    // SAFETY: the allocation is HEADER + len + 1 bytes long.
    unsafe { base.add(HEADER).cast::<c_char>() }
}

/// Clears a string out-parameter pair (so no output is partial on failure).
///
/// # Safety
/// `out` is NULL or valid for a pointer write; `out_len` is NULL or valid for a `size_t` write.
pub(crate) unsafe fn clear_out(out: *mut *mut c_char, out_len: *mut usize) {
    if !out.is_null() {
        // SAFETY: valid per the contract.
        unsafe { out.write(std::ptr::null_mut()) };
    }
    if !out_len.is_null() {
        // SAFETY: valid per the contract.
        unsafe { out_len.write(0) };
    }
}

/// Hands `text` to the caller through `*out` (and its byte length through
/// `*out_len` when not NULL).
///
/// # Safety
/// `out` is valid for a pointer write; `out_len` is NULL or valid for a `size_t` write.
pub(crate) unsafe fn set_out(out: *mut *mut c_char, out_len: *mut usize, text: &[u8]) {
    // SAFETY: valid per the contract.
    unsafe {
        out.write(alloc_string(text));
        if !out_len.is_null() {
            out_len.write(text.len());
        }
    }
}

/// Frees a string returned by this library (every `char **out` result).
/// NULL is ignored. Never pass a pointer from anywhere else, and never free
/// such a string with `free()`.
///
/// # Safety
/// `string` is NULL or a string returned by this library that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn dsr_string_free(string: *mut c_char) {
    guard_value((), || {
        if string.is_null() {
            return;
        }
        // SAFETY: `string` was produced by `alloc_string`: HEADER bytes before
        // it hold the length, and the boxed slice spans HEADER + len + 1 bytes.
        unsafe {
            let base = string.cast::<u8>().sub(HEADER);
            let len = base.cast::<usize>().read_unaligned();
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(base, HEADER + len + 1)));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_with_nul_bytes() {
        let s = alloc_string(b"a\0b");
        // SAFETY: `alloc_string` returned 3 bytes plus a NUL; freed once, last.
        unsafe {
            assert_eq!(std::slice::from_raw_parts(s.cast::<u8>(), 4), b"a\0b\0");
            dsr_string_free(s);
        }
    }
}
