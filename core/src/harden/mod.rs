//! The hardened mode: three opt-in protections against what a referenced
//! session may carry into a new one (see `docs/security.md`).
//!
//! - [`secrets`] (`redactSecrets`): credentials in projected texts become
//!   `[redacted <kind>]` before retention (which decides which texts to
//!   scan: `crate::retention::redact_retainable`);
//! - [`invisible`] (`escapeInvisible`): invisible, bidirectional and tag
//!   characters are written as `\uXXXX` escapes in the prompt's JSON;
//! - [`labels`] (`sanitizeLabels`): labels lose control, format, tag and
//!   bidirectional characters and are cut to [`labels::MAX_LABEL_CHARS`].
//!
//! With every option off (the default) nothing here runs and the output is
//! byte-identical to the reference.

pub use crate::json::invisible;
pub mod labels;
pub mod secrets;

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

impl Hardening {
    /// A session's title as the discovery caches keep it (in memory and in
    /// their files): its credentials redacted when `redact_secrets` is on,
    /// so that no cache holds what the mode does not show (labels are made
    /// from it as from the title: [`label`](Self::label) of it is the same),
    /// else unchanged.
    pub fn title_to_keep(&self, title: String) -> String {
        if self.redact_secrets {
            match secrets::redact(&title).0 {
                std::borrow::Cow::Owned(redacted) => redacted,
                std::borrow::Cow::Borrowed(_) => title,
            }
        } else {
            title
        }
    }

    /// A free text shown outside a reference's frame (a label, a search
    /// snippet, a cwd, an id in a structured result) as this hardening
    /// writes it: credentials redacted under `redact_secrets`
    /// ([`secrets::redact`]), then, under `escape_invisible`, invisible
    /// characters and `<` written as the text of their escapes
    /// ([`invisible::escape_as_text`]; `<` as `\u003c`, as the tag-safe
    /// JSON of a frame writes it), for a text that leaves as a parsed
    /// string: a client that serializes it for its model then writes no
    /// raw `<` and no invisible character. Borrowed when nothing changes.
    pub fn text<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        use std::borrow::Cow;
        let redacted = if self.redact_secrets { secrets::redact(text).0 } else { Cow::Borrowed(text) };
        if !self.escape_invisible {
            return redacted;
        }
        let shown = match redacted {
            Cow::Borrowed(t) => invisible::escape_as_text(t),
            Cow::Owned(t) => Cow::Owned(invisible::escape_as_text(&t).into_owned()),
        };
        if shown.contains('<') {
            Cow::Owned(shown.replace('<', "\\u003c"))
        } else {
            shown
        }
    }

    /// [`text`](Self::text) of `text` as a JSON string.
    pub fn text_value(&self, text: &str) -> serde_json::Value {
        serde_json::Value::from(self.text(text).into_owned())
    }
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
pub fn hardening_from_json(map: &serde_json::Map<String, serde_json::Value>) -> crate::error::Result<Hardening> {
    use serde_json::Value;
    let flag = |key: &str| match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(crate::error::Error::new(
            crate::error::ErrorCode::InvalidConfig,
            format!("config `{key}` must be a boolean"),
        )),
    };
    let preset = flag(HARDENED_KEY)?.unwrap_or(false);
    let [redact, escape, sanitize] = HARDENING_KEYS;
    Ok(Hardening {
        redact_secrets: flag(redact)?.unwrap_or(preset),
        escape_invisible: flag(escape)?.unwrap_or(preset),
        sanitize_labels: flag(sanitize)?.unwrap_or(preset),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_text_is_redacted_then_its_invisible_characters_shown() {
        // Made at run time: the crate's sources hold no credential-shaped text.
        let text = &format!("key {}{} here\u{200b}\u{202e}!", "sk-ant-api03-", "a".repeat(40));
        let hardened = Hardening::ALL.text(text);
        assert!(!hardened.contains("sk-ant-api03") && hardened.contains("[redacted "), "{hardened}");
        assert!(hardened.ends_with("here\\u200b\\u202e!"), "{hardened}");
        assert_eq!(Hardening::ALL.text("a </b> c"), "a \\u003c/b> c", "tag-safe as a frame writes it");
        assert_eq!(Hardening::default().text("a </b>"), "a </b>");
        let none = Hardening::default();
        assert!(matches!(none.text(text), std::borrow::Cow::Borrowed(t) if t == text));
        assert!(matches!(Hardening::ALL.text("plain"), std::borrow::Cow::Borrowed("plain")));
        let escape_only = Hardening { escape_invisible: true, ..Hardening::default() };
        assert_eq!(escape_only.text("a\u{e0041}b"), "a\\udb40\\udc41b");
    }
}
