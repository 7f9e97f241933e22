//! The hardened mode: three opt-in protections against what a referenced
//! session may carry into a new one (see `docs/security.md`).
//!
//! - [`secrets`] (`redactSecrets`): credentials in projected texts become
//!   `[redacted <kind>]` before retention;
//! - [`invisible`] (`escapeInvisible`): invisible, bidirectional and tag
//!   characters are written as `\uXXXX` escapes in the prompt's JSON;
//! - [`labels`] (`sanitizeLabels`): labels lose control, format, tag and
//!   bidirectional characters and are cut to [`labels::MAX_LABEL_CHARS`].
//!
//! With every option off (the default) nothing here runs and the output is
//! byte-identical to the reference.

pub mod invisible;
pub mod labels;
pub mod secrets;

use crate::projection::{Item, ItemText};

/// The metadata key, in each entry of `source.references`, that counts the
/// secrets redacted from that source's projected texts. Present only when
/// `redactSecrets` is on.
pub const REDACTED_SECRETS_KEY: &str = "redactedSecrets";

/// Which protections of the hardened mode are on. The default has all off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Hardening {
    /// `redactSecrets`: replace credentials in projected texts.
    pub redact_secrets: bool,
    /// `escapeInvisible`: escape invisible characters in the prompt's JSON.
    pub escape_invisible: bool,
    /// `sanitizeLabels`: clean and shorten labels.
    pub sanitize_labels: bool,
}

impl Hardening {
    /// Every protection on: the `hardened` preset.
    pub const ALL: Hardening = Hardening { redact_secrets: true, escape_invisible: true, sanitize_labels: true };

    /// Whether any protection is on.
    pub fn any(&self) -> bool {
        self.redact_secrets || self.escape_invisible || self.sanitize_labels
    }

    /// The label as it is written under this hardening: sanitized when
    /// `sanitize_labels` is on ([`labels::sanitize_label_with`]), its
    /// credentials redacted when `redact_secrets` is on (a title is often
    /// the first words of the session's first message), else unchanged.
    pub fn label(&self, label: String, session_id: &str) -> String {
        match (self.sanitize_labels, self.redact_secrets) {
            (false, false) => label,
            _ => self.label_ref(&label, session_id).into_owned(),
        }
    }

    /// [`label`](Self::label) of a borrowed label: borrowed back when
    /// nothing is on (no copy for a filter that tests every session).
    pub fn label_ref<'a>(&self, label: &'a str, session_id: &str) -> std::borrow::Cow<'a, str> {
        match (self.sanitize_labels, self.redact_secrets) {
            (true, redact) => std::borrow::Cow::Owned(labels::sanitize_label_with(label, session_id, redact)),
            (false, true) => secrets::redact(label).0,
            (false, false) => std::borrow::Cow::Borrowed(label),
        }
    }
}

/// Appends `s` as a tag-safe JSON string literal, with invisible characters
/// escaped when `escape_invisible` is on.
pub fn write_string(out: &mut String, s: &str, escape_invisible: bool) {
    if escape_invisible {
        invisible::write_string(out, s);
    } else {
        crate::json::write_string(out, s, true);
    }
}

/// Redacts the credentials of one item's text in place; returns how many
/// were replaced. A literal that certainly holds none is not decoded; a text
/// that cannot be decoded (a lone surrogate) is left as it is: retention
/// fails the source if it keeps it, and drops it otherwise.
fn redact_item(item: &mut Item<'_>) -> u32 {
    if item.text.json_literal().is_some_and(|lit| !secrets::may_hold_secret(lit)) {
        return 0;
    }
    let Ok(text) = item.text.decode() else { return 0 };
    let (redacted, n) = secrets::redact(&text);
    if n > 0 {
        let owned = redacted.into_owned();
        item.text = ItemText::decoded(owned.into());
    }
    n as u32
}

/// What [`redact_retainable`] replaced, per item.
#[derive(Debug)]
pub struct Redactions {
    /// Credentials replaced in each item's text (0 for texts not scanned).
    counts: Vec<u32>,
    /// Whether retention may drop the item (neither a checkpoint nor the newest).
    droppable: Vec<bool>,
}

impl Redactions {
    /// The credentials replaced in the texts retention kept, given how many
    /// items it dropped: retention drops the oldest droppable items
    /// (`docs/contract.md` §4), so those are the ones left out.
    pub fn retained(&self, omitted_messages: usize) -> u64 {
        let mut dropped = 0;
        let mut total = 0u64;
        for (&n, &droppable) in self.counts.iter().zip(&self.droppable) {
            if droppable && dropped < omitted_messages {
                dropped += 1;
            } else {
                total += u64::from(n);
            }
        }
        total
    }
}

/// Redacts, before retention, the credentials of every text that retention
/// may keep under `budget`: every checkpoint and the newest item (never
/// dropped), and the other items from the newest back to the first whose
/// redacted size takes the total over the budget. Retention measures no
/// other text (it keeps a run of the newest items and stops at the first
/// that does not fit, its total being at least the sum counted here), so
/// the budget applies to redacted texts, and older texts, which the budget
/// drops unread, are never decoded: on a large session this is most of
/// them. `fixed` is the size of the source object without its items.
pub fn redact_retainable(items: &mut [Item<'_>], fixed: usize, budget: u64, escape_invisible: bool) -> Redactions {
    let n = items.len();
    let droppable: Vec<bool> = items.iter().enumerate().map(|(i, item)| i + 1 < n && !item.checkpoint).collect();
    let mut counts = vec![0u32; n];
    let mut total = fixed as u64;
    for i in (0..n).rev() {
        let within = total <= budget;
        if within || !droppable[i] {
            counts[i] = redact_item(&mut items[i]);
        }
        if within {
            let len = items[i].text.tag_safe_len_with(escape_invisible);
            total += crate::retention::item_size(&items[i], len) as u64 + 1;
        }
    }
    Redactions { counts, droppable }
}

/// The wire key of the preset that turns every protection on.
pub const HARDENED_KEY: &str = "hardened";

/// The wire keys of the three protections, in [`Hardening`] field order.
pub const HARDENING_KEYS: [&str; 3] = ["redactSecrets", "escapeInvisible", "sanitizeLabels"];

/// Reads the hardened mode's keys of a config object: `hardened` sets the
/// default of the three (`false` when absent), and each of `redactSecrets`,
/// `escapeInvisible`, `sanitizeLabels` given explicitly wins over it. Absent
/// and `null` keys take their defaults; any value but a boolean is
/// `SESSION_REFERENCE_INVALID_CONFIG`.
pub fn hardening_from_json(map: &serde_json::Map<String, serde_json::Value>) -> crate::Result<Hardening> {
    use serde_json::Value;
    let flag = |key: &str| match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(crate::Error::new(crate::ErrorCode::InvalidConfig, format!("config `{key}` must be a boolean"))),
    };
    let preset = flag(HARDENED_KEY)?.unwrap_or(false);
    let [redact, escape, sanitize] = HARDENING_KEYS;
    Ok(Hardening {
        redact_secrets: flag(redact)?.unwrap_or(preset),
        escape_invisible: flag(escape)?.unwrap_or(preset),
        sanitize_labels: flag(sanitize)?.unwrap_or(preset),
    })
}
