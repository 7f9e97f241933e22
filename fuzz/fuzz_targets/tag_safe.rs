#![no_main]
//! Fuzz target `tag_safe`: see `dsh_session_reference_fuzz::checks::tag_safe`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| dsh_session_reference_fuzz::checks::tag_safe(data));
