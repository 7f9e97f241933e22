//! Placeholder until the ffi front lands.
