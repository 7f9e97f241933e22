//! Canonical `dsh-session:` URIs, `@[label](uri)` mentions and mention
//! parsing (docs/contract.md §2).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use crate::error::{Error, ErrorCode, Result};
use crate::json::js_string;

/// The URI scheme, with its colon.
pub const SESSION_REFERENCE_SCHEME: &str = "dsh-session:";

/// `dsh-session:` + unpadded base64url of the UTF-8 of `JSON.stringify(id)`.
pub fn encode_uri(session_id: &str) -> String {
    let json = js_string(session_id);
    let mut out = String::with_capacity(SESSION_REFERENCE_SCHEME.len() + json.len().div_ceil(3) * 4);
    out.push_str(SESSION_REFERENCE_SCHEME);
    URL_SAFE_NO_PAD.encode_string(json.as_bytes(), &mut out);
    out
}

fn is_b64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn invalid(uri: &str, why: &str) -> Error {
    let shown: String = uri.chars().take(80).collect();
    Error::new(ErrorCode::InvalidReference, format!("invalid session reference URI {shown:?}: {why}"))
}

/// Decodes a canonical session URI back to its id. Anything that is not
/// exactly what [`encode_uri`] produces for some id is
/// `SESSION_REFERENCE_INVALID_REFERENCE`.
pub fn decode_uri(uri: &str) -> Result<String> {
    let payload = uri
        .strip_prefix(SESSION_REFERENCE_SCHEME)
        .ok_or_else(|| invalid(uri, "it does not start with `dsh-session:`"))?;
    if payload.is_empty() {
        return Err(invalid(uri, "the payload is empty"));
    }
    if !payload.bytes().all(is_b64url) {
        return Err(invalid(uri, "the payload is not base64url"));
    }
    let bytes = URL_SAFE_NO_PAD.decode(payload).map_err(|_| invalid(uri, "the payload is not canonical base64url"))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| invalid(uri, "the payload is not UTF-8"))?;
    let id: String = serde_json::from_str(text).map_err(|_| invalid(uri, "the payload is not a JSON string"))?;
    if encode_uri(&id) != uri {
        return Err(invalid(uri, "the payload is not in canonical form"));
    }
    Ok(id)
}

/// The session id a person or a model names by `text`: a `dsh-session:`
/// URI ([`decode_uri`]), a whole mention `@[label](dsh-session:…)` (its
/// URI), or else the text itself as an id. Surrounding whitespace is
/// ignored for a URI or a mention, never for an id. A URI or a mention
/// that is not canonical is `SESSION_REFERENCE_INVALID_REFERENCE`, as
/// [`decode_uri`] says; whether the session exists is for the caller to ask.
///
/// ```
/// use dsh_session_reference::{encode_uri, format_mention, session_id_named};
/// let uri = encode_uri("goal-wrapup");
/// assert_eq!(session_id_named(&uri).unwrap(), "goal-wrapup");
/// assert_eq!(session_id_named(&format_mention("goal-wrapup", Some("Wrap-up"))).unwrap(), "goal-wrapup");
/// assert_eq!(session_id_named("goal-wrapup").unwrap(), "goal-wrapup");
/// assert!(session_id_named("dsh-session:not-canonical").is_err());
/// ```
pub fn session_id_named(text: &str) -> Result<String> {
    let trimmed = text.trim();
    if trimmed.starts_with(SESSION_REFERENCE_SCHEME) {
        return decode_uri(trimmed);
    }
    if trimmed.starts_with("@[") && trimmed.ends_with(')') {
        let parsed = parse_text(trimmed)?;
        if let [only] = parsed.references.as_slice() {
            // One whole mention rewrites to exactly `@label`.
            if parsed.text.strip_prefix('@') == Some(only.label.as_str()) {
                return Ok(only.session_id.clone());
            }
        }
        // `@[…](…)` that is not one whole mention: say what is wrong with
        // its URI, if that is what failed.
        if let Some(uri) = trimmed.rfind("](").map(|i| &trimmed[i + 2..trimmed.len() - 1]) {
            decode_uri(uri)?;
        }
        return Err(Error::new(
            ErrorCode::InvalidReference,
            format!("{:?} is not one mention @[label](dsh-session:…)", trimmed.chars().take(80).collect::<String>()),
        ));
    }
    Ok(text.to_owned())
}

/// `@[label](uri)`, with every `\` and `]` of the label preceded by `\`.
/// The label defaults to the id.
pub fn format_mention(session_id: &str, label: Option<&str>) -> String {
    let label = label.unwrap_or(session_id);
    let mut out = String::with_capacity(label.len() + session_id.len() * 2 + 20);
    out.push_str("@[");
    for c in label.chars() {
        if c == '\\' || c == ']' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push_str("](");
    out.push_str(&encode_uri(session_id));
    out.push(')');
    out
}

/// One reference found by [`parse_text`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedReference {
    /// The decoded session id.
    pub session_id: String,
    /// The label shown in the rewritten text.
    pub label: String,
}

impl ParsedReference {
    /// `{"sessionId", "label"}`: the reference as [`Resolver::prepare`](crate::Resolver::prepare) takes it.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("sessionId".into(), self.session_id.clone().into());
        m.insert("label".into(), self.label.clone().into());
        serde_json::Value::Object(m)
    }
}

/// The result of [`parse_text`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedText {
    /// The text with each mention replaced by `@` + its label.
    pub text: String,
    /// The references in order of appearance, duplicates kept.
    pub references: Vec<ParsedReference>,
}

impl ParsedText {
    /// `{"text", "references": [{"sessionId", "label"}, ...]}`, the shape of
    /// the reference's `parseSessionReferenceText`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("text".into(), self.text.clone().into());
        m.insert("references".into(), self.references.iter().map(ParsedReference::to_json).collect());
        serde_json::Value::Object(m)
    }
}

/// JavaScript's `\s`.
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// JavaScript's line terminators, which its `.` does not match.
fn is_js_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// Tries `@[LABEL](dsh-session:…)` at the start of `s`. Returns the raw
/// label, the URI and the length matched.
fn match_explicit(s: &str) -> Option<(&str, &str, usize)> {
    let rest = s.strip_prefix("@[")?;
    let mut chars = rest.char_indices();
    let label_end = loop {
        let (i, c) = chars.next()?;
        match c {
            ']' => break i,
            '\\' => {
                let (_, n) = chars.next()?;
                if is_js_line_terminator(n) {
                    return None;
                }
            }
            _ => {}
        }
    };
    let after = &rest[label_end + 1..];
    let uri_area = after.strip_prefix('(')?;
    let payload = uri_area.strip_prefix(SESSION_REFERENCE_SCHEME)?;
    let run = payload.find(|c: char| c == ')' || is_js_space(c)).unwrap_or(payload.len());
    if !payload[run..].starts_with(')') {
        return None;
    }
    let uri_len = SESSION_REFERENCE_SCHEME.len() + run;
    let total = 2 + label_end + 1 + 1 + uri_len + 1;
    Some((&rest[..label_end], &uri_area[..uri_len], total))
}

/// Tries a bare `dsh-session:` + base64url run at the start of `s`.
fn match_bare(s: &str) -> Option<usize> {
    let payload = s.strip_prefix(SESSION_REFERENCE_SCHEME)?;
    let run = payload.bytes().take_while(|b| is_b64url(*b)).count();
    (run > 0).then_some(SESSION_REFERENCE_SCHEME.len() + run)
}

fn unescape_label(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Finds every mention and bare URI in `text`, left to right, and replaces
/// each with `@` + its label. A recognised token whose URI does not decode
/// fails the whole call with `SESSION_REFERENCE_INVALID_REFERENCE`.
pub fn parse_text(text: &str) -> Result<ParsedText> {
    parse_text_with(text, crate::harden::Hardening::default())
}

/// [`parse_text`], with each label (the rewritten `@label` and the
/// reference's label) written as `hardening` asks
/// ([`Hardening::label`](crate::harden::Hardening::label)).
pub fn parse_text_with(text: &str, hardening: crate::harden::Hardening) -> Result<ParsedText> {
    let mut out = String::with_capacity(text.len());
    let mut references = Vec::new();
    let mut copied = 0;
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < bytes.len() {
        // Only `@` and `d` can start a token; skip quickly to the next one.
        match bytes[i..].iter().position(|&b| b == b'@' || b == b'd') {
            Some(off) => i += off,
            None => break,
        }
        let rest = &text[i..];
        let found = if bytes[i] == b'@' {
            match_explicit(rest).map(|(raw, uri, len)| (Some(unescape_label(raw)), uri, len))
        } else {
            match_bare(rest).map(|len| (None, &rest[..len], len))
        };
        match found {
            Some((label, uri, len)) => {
                let session_id = decode_uri(uri)?;
                let label = hardening.label(label.unwrap_or_else(|| session_id.clone()), &session_id);
                out.push_str(&text[copied..i]);
                out.push('@');
                out.push_str(&label);
                references.push(ParsedReference { session_id, label });
                i += len;
                copied = i;
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    Ok(ParsedText { text: out, references })
}
