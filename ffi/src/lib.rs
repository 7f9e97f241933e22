//! # dsh-session-reference-ffi
//!
//! The C ABI of [`dsh_session_reference`](https://example.invalid/dsh-session-reference):
//! a shared and a static library named `dsh_session_reference` and the header
//! `include/dsh_session_reference.h` (generated from this crate by the
//! cbindgen CLI; see `ffi/cbindgen.toml`).
//!
//! Conventions (see `include/README.md` for a complete host):
//! - every symbol starts with `dsr_`; handles (`dsr_resolver`, `dsr_cancel`,
//!   `dsr_error`) are opaque, made by `*_new` and released by `*_free`;
//! - every fallible call returns a `dsr_status` (`DSR_OK` = 0) and takes an
//!   optional `dsr_error **err` out-parameter (no thread-local last error);
//! - input text crosses as pointer + length of UTF-8 (NULL is misuse),
//!   output text as a library-owned string freed with `dsr_string_free`, plus
//!   its length (session ids may contain NUL);
//! - a host implements its session query as a `dsr_host` vtable whose
//!   callbacks write into a library-owned `dsr_sink`;
//! - every export catches Rust panics (`DSR_INTERNAL`).
#![allow(non_camel_case_types)]

pub mod cancel;
pub mod error;
pub mod host;
pub mod resolver;
pub mod strings;
pub mod text;

use std::ffi::c_char;

pub use cancel::*;
pub use error::*;
pub use host::*;
pub use resolver::*;
pub use strings::dsr_string_free;
pub use text::*;

/// Major version of the library this header belongs to.
pub const DSR_VERSION_MAJOR: u32 = 0;
/// Minor version of the library this header belongs to.
pub const DSR_VERSION_MINOR: u32 = 1;
/// Patch version of the library this header belongs to.
pub const DSR_VERSION_PATCH: u32 = 0;

/// The version of the linked library, e.g. `"0.1.0"` (static storage; compare
/// with `DSR_VERSION_STRING` to detect a header/library mismatch).
#[no_mangle]
pub extern "C" fn dsr_version() -> *const c_char {
    error::guard_value(std::ptr::null(), || concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_macros_follow_the_package_version() {
        // The header's `DSR_VERSION_STRING` comes from `ffi/cbindgen.toml`.
        const DSR_VERSION_STRING: &str = "0.1.0";
        assert_eq!(DSR_VERSION_STRING, env!("CARGO_PKG_VERSION"));
        assert_eq!(DSR_VERSION_MAJOR.to_string(), env!("CARGO_PKG_VERSION_MAJOR"));
        assert_eq!(DSR_VERSION_MINOR.to_string(), env!("CARGO_PKG_VERSION_MINOR"));
        assert_eq!(DSR_VERSION_PATCH.to_string(), env!("CARGO_PKG_VERSION_PATCH"));
        // SAFETY: `dsr_version` returns a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(dsr_version()) };
        assert_eq!(v.to_str().unwrap(), DSR_VERSION_STRING);
        let toml = include_str!("../cbindgen.toml");
        assert!(toml.contains(&format!("#define DSR_VERSION_STRING \"{DSR_VERSION_STRING}\"")));
    }
}
