//! The latest title of a session: `data.title` of its last `session/title`
//! event.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

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

/// Deserializes any JSON value, keeping it only when it is a string.
pub(crate) struct StringOrOther(pub Option<String>);

impl<'de> Deserialize<'de> for StringOrOther {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StringOrOther;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StringOrOther(Some(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(StringOrOther(Some(v)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(StringOrOther(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(StringOrOther(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(StringOrOther(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(StringOrOther(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(StringOrOther(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(StringOrOther(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(StringOrOther(None))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(StringOrOther(None))
            }
        }
        d.deserialize_any(V)
    }
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
