#![no_main]
//! Fuzz target `prepare`: see `dsh_session_reference_fuzz::checks::prepare`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| dsh_session_reference_fuzz::checks::prepare(data));
