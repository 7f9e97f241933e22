//! Fuzz targets for `dsh-session-reference`; the bodies live in [`checks`].

pub mod checks;
