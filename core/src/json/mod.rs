//! Every reader and writer of JSON bytes in the core, one module per job:
//!
//! - `write`: JSON as JavaScript's `JSON.stringify` writes it, and the
//!   tag-safe variant of docs/contract.md §5 (re-exported here);
//! - `parse_js`: JSON text parsed as `JSON.parse` parses it (re-exported);
//! - `read`: the validating single-pass reader of snapshot bytes, which
//!   returns the fields projection needs as spans and skips the rest;
//! - `literal`: the transcoder from a JSON string literal of the input to the
//!   tag-safe form of its text;
//! - `bytes`: the byte classifiers and escape tables they share, and the
//!   core's only `unsafe` code;
//! - `invisible`: the escapes of invisible, bidirectional and tag
//!   characters that the hardened mode's `escapeInvisible` writes.

pub(crate) mod bytes;
pub mod invisible;
pub(crate) mod literal;
mod parse_js;
pub(crate) mod read;
mod write;

pub use parse_js::{parse_js, MAX_PARSE_DEPTH};
pub(crate) use write::write_string_body;
pub use write::{
    js_string, string_len, stringify, stringify_tag_safe, stringify_tag_safe_text, write_f64, write_number,
    write_string, write_value,
};

/// Appends `s` as a tag-safe JSON string literal, with invisible characters
/// escaped as `\uXXXX` when `escape_invisible` is on (the hardened mode's
/// `escapeInvisible`; see [`invisible`]).
pub fn write_text(out: &mut String, s: &str, escape_invisible: bool) {
    if escape_invisible {
        invisible::write_string(out, s);
    } else {
        write_string(out, s, true);
    }
}
