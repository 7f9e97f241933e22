#![no_main]
//! Fuzz target `mention`: see `dsh_session_reference_fuzz::checks::mention`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| dsh_session_reference_fuzz::checks::mention(data));
