//! Compatibility profiles: which DSH release's session-reference output the
//! resolver reproduces (config key `dshCompat`).
//!
//! | profile | matches | differences from `"0.1.1"` |
//! |---|---|---|
//! | `"0.1.1"` (default) | `@deepseek-ai/dsh-session-reference` 0.1.1-rc.2 | none: byte-identical to the conformance vectors |
//! | `"0.1.5"` | 0.1.5-rc.2 (session format v3) | `capturedFormatVersion: 3` in each reference's metadata; the `## Reference omissions` section after the prompt when a source was truncated; `referenceContextFraction`; the automatic budget; candidates with `sameWorkspace` |
//! | `"0.1.7"` | 0.1.7-rc.1 and later (format v4) | as `"0.1.5"`, with `capturedFormatVersion: 4` and candidates with `displayTitle` |
//!
//! Not reproduced (documented deviations): labels from DSH's projection
//! cache (this library labels candidates with the latest title, as 0.1.1),
//! 0.1.5's id label for seeded sessions, and the saved-transcript notices of
//! a DSH spill store.
//!
//! The automatic budget: when a profile other than `"0.1.1"` is selected and
//! `maxReferenceBytes` is not configured, each source's budget is
//! `max(65536, floor(contextWindow × 4 × referenceContextFraction))` for the
//! model context window the host passes with the preparation, and 65536
//! when it passes none (as DSH does when it cannot resolve the model).

use serde_json::{Map, Value};

use super::DEFAULT_MAX_REFERENCE_BYTES;
use crate::error::{Error, ErrorCode, Result};

/// The default `referenceContextFraction`.
pub const DEFAULT_REFERENCE_CONTEXT_FRACTION: f64 = 0.2;

/// Which DSH release's output to reproduce.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DshCompat {
    /// DSH 0.1.1 (the default; the conformance vectors).
    #[default]
    V0_1_1,
    /// DSH 0.1.5 (session format v3).
    V0_1_5,
    /// DSH 0.1.7 and later (session format v4).
    V0_1_7,
}

impl DshCompat {
    /// The profile named `name` (`"0.1.1"`, `"0.1.5"` or `"0.1.7"`).
    pub fn from_name(name: &str) -> Option<DshCompat> {
        match name {
            "0.1.1" => Some(DshCompat::V0_1_1),
            "0.1.5" => Some(DshCompat::V0_1_5),
            "0.1.7" => Some(DshCompat::V0_1_7),
            _ => None,
        }
    }

    /// The profile's name.
    pub fn name(self) -> &'static str {
        match self {
            DshCompat::V0_1_1 => "0.1.1",
            DshCompat::V0_1_5 => "0.1.5",
            DshCompat::V0_1_7 => "0.1.7",
        }
    }

    /// `capturedFormatVersion` of each reference's metadata (`None`: no key).
    pub fn captured_format_version(self) -> Option<u64> {
        match self {
            DshCompat::V0_1_1 => None,
            DshCompat::V0_1_5 => Some(3),
            DshCompat::V0_1_7 => Some(4),
        }
    }

    /// Whether the prompt gets the omissions section and the budget may be
    /// automatic.
    pub fn is_later(self) -> bool {
        self != DshCompat::V0_1_1
    }
}

/// The profile part of a configuration: the profile, the fraction and
/// whether `maxReferenceBytes` was configured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CompatConfig {
    profile: DshCompat,
    /// `referenceContextFraction`, `None` for the default.
    fraction: Option<f64>,
    /// `maxReferenceBytes` was given.
    fixed_budget: bool,
}

impl Eq for CompatConfig {}

fn invalid(key: &str, why: &str) -> Error {
    Error::new(ErrorCode::InvalidConfig, format!("config `{key}` {why}"))
}

impl CompatConfig {
    /// Reads `dshCompat` and, for the later profiles, `referenceContextFraction`
    /// from a config object (absent or `null` keys take their defaults;
    /// under `"0.1.1"` the fraction is an unknown key and ignored, as that
    /// release ignores it).
    pub fn from_json(map: &Map<String, Value>) -> Result<CompatConfig> {
        let profile = match map.get("dshCompat") {
            None | Some(Value::Null) => DshCompat::default(),
            Some(Value::String(s)) => DshCompat::from_name(s)
                .ok_or_else(|| invalid("dshCompat", "must be \"0.1.1\", \"0.1.5\" or \"0.1.7\""))?,
            Some(_) => return Err(invalid("dshCompat", "must be \"0.1.1\", \"0.1.5\" or \"0.1.7\"")),
        };
        let fraction = match (profile.is_later(), map.get("referenceContextFraction")) {
            (false, _) | (true, None | Some(Value::Null)) => None,
            (true, Some(v)) => match v.as_f64() {
                Some(f) if (0.0..=1.0).contains(&f) => Some(f),
                _ => return Err(invalid("referenceContextFraction", "must be between zero and one")),
            },
        };
        let fixed_budget = !matches!(map.get("maxReferenceBytes"), None | Some(Value::Null));
        Ok(CompatConfig { profile, fraction, fixed_budget })
    }

    /// A profile with the defaults of its other settings.
    pub fn with_profile(profile: DshCompat, fraction: Option<f64>, fixed_budget: bool) -> Result<CompatConfig> {
        if fraction.is_some_and(|f| !(0.0..=1.0).contains(&f)) {
            return Err(invalid("referenceContextFraction", "must be between zero and one"));
        }
        Ok(CompatConfig { profile, fraction: fraction.filter(|_| profile.is_later()), fixed_budget })
    }

    /// The profile.
    pub fn profile(&self) -> DshCompat {
        self.profile
    }

    /// `referenceContextFraction` in effect.
    pub fn reference_context_fraction(&self) -> f64 {
        self.fraction.unwrap_or(DEFAULT_REFERENCE_CONTEXT_FRACTION)
    }

    /// The per-source budget: `configured` when the profile is `"0.1.1"` or
    /// `maxReferenceBytes` was configured; otherwise the automatic budget
    /// for the model's `context_window` (tokens), 65536 without one.
    pub fn budget(&self, configured: u64, context_window: Option<u64>) -> u64 {
        if !self.profile.is_later() || self.fixed_budget {
            return configured;
        }
        match context_window {
            // f64 keeps every product below 2^53 exact; floor as Math.floor.
            Some(window) => DEFAULT_MAX_REFERENCE_BYTES
                .max((window as f64 * 4.0 * self.reference_context_fraction()).floor().min(u64::MAX as f64) as u64),
            None => DEFAULT_MAX_REFERENCE_BYTES,
        }
    }

    /// The candidate fields of the profile for a session with `cwd`, for a
    /// target with `target_cwd`, labeled `label`: `sameWorkspace` (`"0.1.5"`
    /// and `"0.1.7"`: the cwd is defined and equals the target's) and
    /// `displayTitle` (`"0.1.7"`: the label; DSH's subagent projection
    /// label is not available to this library).
    pub fn candidate_fields(
        &self,
        cwd: Option<&str>,
        target_cwd: Option<&str>,
        label: &str,
    ) -> (Option<bool>, Option<String>) {
        match self.profile {
            DshCompat::V0_1_1 => (None, None),
            DshCompat::V0_1_5 => (Some(cwd.is_some() && cwd == target_cwd), None),
            DshCompat::V0_1_7 => (Some(cwd.is_some() && cwd == target_cwd), Some(label.to_owned())),
        }
    }
}
