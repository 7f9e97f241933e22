//! Configuration and its validation (docs/contract.md §8), with the
//! `dshCompat` profiles' settings and budget arithmetic (`compat.rs`).

use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};
use crate::harden::Hardening;

mod compat;

pub use compat::{CompatConfig, DshCompat, DEFAULT_REFERENCE_CONTEXT_FRACTION};

/// The largest integer a JavaScript number represents exactly (2^53 − 1).
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;
/// The hard maximum of distinct references per message, and the default.
pub const MAX_REFERENCES: u64 = 3;
/// The default number of candidates returned by discovery.
pub const DEFAULT_CANDIDATE_LIMIT: u64 = 50;
/// The default per-source byte budget.
pub const DEFAULT_MAX_REFERENCE_BYTES: u64 = 65_536;

/// Every key [`Config::from_json`] reads, in this order: the three
/// numbers, the hardened mode's preset and its three protections, the
/// `dshCompat` profile and its `referenceContextFraction`. A front that
/// takes the settings one by one (keyword arguments, a JavaScript object)
/// builds the config object from these names; Python's keyword arguments
/// are the same names in snake case, in this order.
pub const KEYS: [&str; 9] = [
    "maxReferences",
    "maxReferenceBytes",
    "candidateLimit",
    crate::harden::HARDENED_KEY,
    crate::harden::HARDENING_KEYS[0],
    crate::harden::HARDENING_KEYS[1],
    crate::harden::HARDENING_KEYS[2],
    "dshCompat",
    "referenceContextFraction",
];

/// Validated configuration of a [`Resolver`](crate::Resolver).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    max_references: u64,
    candidate_limit: u64,
    max_reference_bytes: u64,
    hardening: Hardening,
    compat: CompatConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_references: MAX_REFERENCES,
            candidate_limit: DEFAULT_CANDIDATE_LIMIT,
            max_reference_bytes: DEFAULT_MAX_REFERENCE_BYTES,
            hardening: Hardening::default(),
            compat: CompatConfig::default(),
        }
    }
}

fn invalid_config(key: &str, why: &str) -> Error {
    Error::new(ErrorCode::InvalidConfig, format!("config `{key}` {why}"))
}

/// Checks that a JSON value is a positive safe integer, as JavaScript's
/// `Number.isSafeInteger(x) && x > 0` would.
pub fn positive_safe_integer(value: &Value) -> Option<u64> {
    let n = value.as_number()?;
    if let Some(u) = n.as_u64() {
        return (u > 0 && u <= MAX_SAFE_INTEGER).then_some(u);
    }
    if n.is_i64() {
        return None; // negative
    }
    let f = n.as_f64()?;
    if f.fract() == 0.0 && f > 0.0 && f <= MAX_SAFE_INTEGER as f64 {
        Some(f as u64)
    } else {
        None
    }
}

/// Checks that a JSON value is a non-negative safe integer (an index: 0 to
/// 2^53 − 1, `2.0` counting as `2`), as `Number.isSafeInteger(x) && x >= 0`
/// would (`-0` counts as 0).
pub fn index_from_json(value: &Value) -> Option<u64> {
    let n = value.as_number()?;
    if let Some(u) = n.as_u64() {
        return (u <= MAX_SAFE_INTEGER).then_some(u);
    }
    if n.is_i64() {
        return None; // negative
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f >= 0.0 && f <= MAX_SAFE_INTEGER as f64).then_some(f as u64)
}

impl Config {
    /// A configuration from explicit values; `None` takes the default.
    /// Errors with `SESSION_REFERENCE_INVALID_CONFIG` like [`Config::from_json`].
    pub fn new(
        max_references: Option<u64>,
        candidate_limit: Option<u64>,
        max_reference_bytes: Option<u64>,
    ) -> Result<Config> {
        let check = |key: &str, v: Option<u64>, default: u64, max: u64| -> Result<u64> {
            match v {
                None => Ok(default),
                Some(v) if v >= 1 && v <= max => Ok(v),
                Some(_) if max == MAX_REFERENCES => Err(invalid_config(key, "must be an integer from 1 to 3")),
                Some(_) => Err(invalid_config(key, "must be a positive safe integer")),
            }
        };
        Ok(Config {
            max_references: check("maxReferences", max_references, MAX_REFERENCES, MAX_REFERENCES)?,
            candidate_limit: check("candidateLimit", candidate_limit, DEFAULT_CANDIDATE_LIMIT, MAX_SAFE_INTEGER)?,
            max_reference_bytes: check(
                "maxReferenceBytes",
                max_reference_bytes,
                DEFAULT_MAX_REFERENCE_BYTES,
                MAX_SAFE_INTEGER,
            )?,
            hardening: Hardening::default(),
            compat: CompatConfig::with_profile(DshCompat::default(), None, max_reference_bytes.is_some())?,
        })
    }

    /// A configuration from a JSON object with the wire keys `maxReferences`,
    /// `candidateLimit` and `maxReferenceBytes`, and the hardened mode's
    /// booleans (see [`Config::with_hardening`]). Absent or `null` keys take
    /// their defaults, unknown keys are ignored; any other value (strings,
    /// booleans, fractions, out-of-range numbers for the numbers; anything but
    /// `true`/`false` for the booleans) is `SESSION_REFERENCE_INVALID_CONFIG`.
    /// `null` itself is the default config.
    pub fn from_json(config: &Value) -> Result<Config> {
        let map = match config {
            Value::Null => return Ok(Config::default()),
            Value::Object(map) => map,
            _ => return Err(Error::new(ErrorCode::InvalidConfig, "config must be an object")),
        };
        let get = |key: &str| -> Result<Option<u64>> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => positive_safe_integer(v)
                    .map(Some)
                    .ok_or_else(|| invalid_config(key, "must be a positive safe integer")),
            }
        };
        let config = Config::new(get("maxReferences")?, get("candidateLimit")?, get("maxReferenceBytes")?)?;
        Ok(config.with_compat(CompatConfig::from_json(map)?).with_hardening(crate::harden::hardening_from_json(map)?))
    }

    /// The configuration with the hardened mode's protections set as given
    /// (wire keys `redactSecrets`, `escapeInvisible`, `sanitizeLabels`, and
    /// `hardened`, which turns all three on; an explicit `false` for one of
    /// them wins over `hardened: true`). See `docs/security.md`.
    pub fn with_hardening(mut self, hardening: Hardening) -> Config {
        self.hardening = hardening;
        self
    }

    /// The hardened mode's protections (all off by default).
    pub fn hardening(&self) -> Hardening {
        self.hardening
    }

    /// This configuration with the `dshCompat` profile settings `compat`.
    pub fn with_compat(mut self, compat: CompatConfig) -> Config {
        self.compat = compat;
        self
    }

    /// The `dshCompat` profile settings ([`CompatConfig`]).
    pub fn compat(&self) -> &CompatConfig {
        &self.compat
    }

    /// Distinct references allowed per message (1–3).
    pub fn max_references(&self) -> u64 {
        self.max_references
    }

    /// Candidates returned by [`Resolver::candidates`](crate::Resolver::candidates).
    pub fn candidate_limit(&self) -> u64 {
        self.candidate_limit
    }

    /// The per-source byte budget of a serialized source object.
    pub fn max_reference_bytes(&self) -> u64 {
        self.max_reference_bytes
    }
}

/// Validates an explicit candidate limit given as JSON (docs/contract.md §7): a positive
/// safe integer, else `SESSION_REFERENCE_INVALID_REFERENCE`.
pub fn candidate_limit_from_json(limit: &Value) -> Result<u64> {
    positive_safe_integer(limit)
        .ok_or_else(|| Error::new(ErrorCode::InvalidReference, "candidate limit must be a positive safe integer"))
}
