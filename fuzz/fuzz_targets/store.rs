#![no_main]
//! Fuzz target `store`: see `dsh_session_reference_fuzz::checks::store`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| dsh_session_reference_fuzz::checks::store(data));
