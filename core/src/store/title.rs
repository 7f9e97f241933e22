//! The latest title of a session: `data.title` of its last `session/title`
//! event.

use serde::Deserialize;

use super::rows::StringOrOther;

/// The event type that carries a title.
pub const TITLE_EVENT: &str = "session/title";

/// Reads `data.title` of a `session/title` line. A title that is not a
/// string reads as no title; a line whose `data` is not an object is
/// malformed.
pub fn title_of(line: &[u8]) -> Result<Option<String>, String> {
    #[derive(Deserialize)]
    struct Line {
        data: Data,
    }
    #[derive(Deserialize)]
    struct Data {
        #[serde(default)]
        title: Option<StringOrOther>,
    }
    let parsed: Line = serde_json::from_slice(line).map_err(|e| format!("malformed `session/title` event: {e}"))?;
    Ok(parsed.data.title.and_then(|t| t.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles() {
        let line = br#"{"type":"session/title","seq":5,"data":{"title":"Hello \"x\"","messageSeqs":[4]}}"#;
        assert_eq!(title_of(line).unwrap().as_deref(), Some("Hello \"x\""));
        assert_eq!(title_of(br#"{"type":"session/title","seq":5,"data":{"title":7}}"#).unwrap(), None);
        assert_eq!(title_of(br#"{"type":"session/title","seq":5,"data":{}}"#).unwrap(), None);
        assert!(title_of(br#"{"type":"session/title","seq":5,"data":3}"#).is_err());
    }
}
