#![no_main]
//! Fuzz target `uri`: see `dsh_session_reference_fuzz::checks::uri`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| dsh_session_reference_fuzz::checks::uri(data));
