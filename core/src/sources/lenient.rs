//! Lenient JSON field types for the transcripts of other agents: a field of
//! an unexpected type reads as absent instead of failing its whole line, so
//! one odd field (a `null` where a string was, a number where a list was)
//! never hides the rest of a record. Everything not asked for is skipped
//! without being built.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// Every visit of a boolean, a number or a null gives the visitor's
/// "absent" value.
macro_rules! scalars_are_none {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    };
}
pub(crate) use scalars_are_none;

/// Every non-string visit gives the visitor's "absent" value.
macro_rules! other_types_are_none {
    () => {
        scalars_are_none!();
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
}

/// Every visit but a list's gives the visitor's "absent" value.
macro_rules! other_types_are_none_but_lists {
    () => {
        scalars_are_none!();
        fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
}

/// A string field, or `None` for any other JSON type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LStr<'a>(pub Option<Cow<'a, str>>);

impl<'a> LStr<'a> {
    /// The string, if the field was one.
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// The string as an owned value.
    pub fn owned(&self) -> Option<String> {
        self.0.as_deref().map(str::to_owned)
    }
}

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = LStr<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Owned(v.to_owned()))))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Owned(v))))
    }
    other_types_are_none!();
}

impl<'de: 'a, 'a> Deserialize<'de> for LStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrVisitor)
    }
}

/// A boolean field: `true` only for JSON `true`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LBool(pub bool);

impl<'de> Deserialize<'de> for LBool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LBool;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<LBool, E> {
                Ok(LBool(v))
            }
            fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_unit<E: de::Error>(self) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_none<E: de::Error>(self) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LBool, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LBool, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LBool(false))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LBool, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LBool(false))
            }
        }
        d.deserialize_any(V)
    }
}

/// A non-negative integer field, or `None` for anything else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LU64(pub Option<u64>);

impl<'de> Deserialize<'de> for LU64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LU64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<LU64, E> {
                Ok(LU64(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<LU64, E> {
                Ok(LU64(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<LU64, E> {
                Ok(LU64(None))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LU64, E> {
                Ok(LU64(u64::try_from(v).ok()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LU64, E> {
                Ok(LU64(Some(v)))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<LU64, E> {
                Ok(LU64(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<LU64, E> {
                Ok(LU64(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<LU64, E> {
                Ok(LU64(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LU64, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LU64, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LU64(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LU64, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LU64(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// One content block (`{"type": …, "text": …}`); other fields are skipped,
/// and a block that is not an object has neither.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block<'a> {
    /// `type`.
    pub kind: LStr<'a>,
    /// `text`.
    pub text: LStr<'a>,
}

/// Message content: a string, a list of blocks, or absent (any other type).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Content<'a> {
    /// Absent, `null`, or of another type.
    #[default]
    None,
    /// A plain string.
    Str(Cow<'a, str>),
    /// A list of blocks.
    Blocks(Vec<Block<'a>>),
}

impl Content<'_> {
    /// The texts of blocks whose type is one of `kinds`, or the string.
    pub fn texts<'s>(&'s self, kinds: &'s [&str]) -> impl Iterator<Item = &'s str> + 's {
        let (s, blocks): (Option<&str>, &[Block<'_>]) = match self {
            Content::None => (None, &[]),
            Content::Str(s) => (Some(s), &[]),
            Content::Blocks(b) => (None, b),
        };
        s.into_iter().chain(
            blocks.iter().filter(|b| b.kind.get().is_some_and(|k| kinds.contains(&k))).filter_map(|b| b.text.get()),
        )
    }
}

struct BlockVisitor;

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = Block<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Self::Value, E> {
        Ok(Block::default())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Block::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut block = Block::default();
        while let Some(key) = map.next_key::<LStr<'de>>()? {
            match key.get() {
                Some("type") => block.kind = map.next_value()?,
                Some("text") => block.text = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(block)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Block::default())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Block::default())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Block::default())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Block::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Block::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Block::default())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Block<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BlockVisitor)
    }
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Content::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Content::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Content::Str(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut blocks = Vec::new();
        while let Some(b) = seq.next_element::<Block<'de>>()? {
            blocks.push(b);
        }
        Ok(Content::Blocks(blocks))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Content::None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Content::None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Content::None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Content::None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Content::None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Content::None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Content::None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ContentVisitor)
    }
}

/// For `#[serde(deserialize_with = "lenient")]`: an object or array read as
/// `T`, anything else as `None` (so an odd type never fails the line).
pub fn lenient<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    struct V<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            T::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Some)
        }
        fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(self)
        }
    }
    d.deserialize_any(V(std::marker::PhantomData))
}

/// A list of objects each read as `T`: an element that is not an object is
/// skipped, and a value that is not a list reads as an empty one (so one odd
/// element never hides the others).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Objects<T>(pub Vec<T>);

impl<T> Default for Objects<T> {
    fn default() -> Self {
        Objects(Vec::new())
    }
}

/// One element of [`Objects`]: `T` when it is an object.
struct Object<T>(Option<T>);

impl<T> Default for Object<T> {
    fn default() -> Self {
        Object(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Object(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Object(None))
            }
            fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Self::Value, E> {
                Ok(Object(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Object(None))
            }
            scalars_are_none!();
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Objects<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let list = List::<Object<T>>::deserialize(d)?.0.unwrap_or_default();
        Ok(Objects(list.into_iter().filter_map(|o| o.0).collect()))
    }
}

/// A list of `T` (each element read as `T`, which takes any JSON value),
/// or `None` for a value that is not a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct List<T>(pub Option<Vec<T>>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = List<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(t) = seq.next_element::<T>()? {
                    out.push(t);
                }
                Ok(List(Some(out)))
            }
            other_types_are_none_but_lists!();
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The name of the one field a [`Field`] reads.
pub trait FieldName {
    /// The field's key.
    const NAME: &'static str;
}

/// The field `K::NAME` of an object read as `T` (given twice, its last, as
/// a JSON object read whole would have it), every other field skipped;
/// `T::default()` for an object without it or a value that is not an
/// object. `T` must take any JSON value.
pub struct Field<K, T>(pub T, std::marker::PhantomData<K>);

impl<K, T: Default> Default for Field<K, T> {
    fn default() -> Self {
        Field(T::default(), std::marker::PhantomData)
    }
}

impl<'de, K: FieldName, T: Deserialize<'de> + Default> Deserialize<'de> for Field<K, T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<K, T>(std::marker::PhantomData<(K, T)>);
        impl<'de, K: FieldName, T: Deserialize<'de> + Default> Visitor<'de> for V<K, T> {
            type Value = Field<K, T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Field::default();
                while let Some(key) = map.next_key::<LStr<'de>>()? {
                    if key.get() == Some(K::NAME) {
                        out.0 = map.next_value()?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(out)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Field::default())
            }
            fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Self::Value, E> {
                Ok(Field::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Field::default())
            }
            scalars_are_none!();
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct T<'a> {
        #[serde(borrow, default)]
        s: LStr<'a>,
        #[serde(default)]
        b: LBool,
        #[serde(default)]
        n: LU64,
        #[serde(borrow, default)]
        c: Content<'a>,
    }

    #[test]
    fn wrong_types_read_as_absent() {
        let t: T<'_> = serde_json::from_str(r#"{"s":5,"b":"x","n":[1],"c":{"a":1}}"#).unwrap();
        assert_eq!((t.s.get(), t.b.0, t.n.0, t.c), (None, false, None, Content::None));
        let t: T<'_> = serde_json::from_str(
            r#"{"s":"x","b":true,"n":7,"c":[{"type":"text","text":"a"},3,{"type":"image"},{"type":"text","text":null}]}"#,
        )
        .unwrap();
        assert_eq!((t.s.get(), t.b.0, t.n.0), (Some("x"), true, Some(7)));
        assert_eq!(t.c.texts(&["text"]).collect::<Vec<_>>(), vec!["a"]);
    }

    #[test]
    fn lists_are_lists_or_none() {
        let l: List<Block<'_>> = serde_json::from_str(r#"[{"type":"text","text":"a"},5,"x"]"#).unwrap();
        assert_eq!(l.0.unwrap().iter().map(|b| b.text.get()).collect::<Vec<_>>(), vec![Some("a"), None, None]);
        for other in ["{}", "3", "null", "\"x\""] {
            assert_eq!(serde_json::from_str::<List<Block<'_>>>(other).unwrap().0, None, "{other}");
        }
    }

    #[test]
    fn objects_skip_what_is_not_one() {
        let o: Objects<T<'_>> = serde_json::from_str(r#"[{"s":"a"},5,"x",[1],null,{"s":"b"}]"#).unwrap();
        assert_eq!(o.0.iter().map(|t| t.s.get()).collect::<Vec<_>>(), vec![Some("a"), Some("b")]);
        for other in ["{}", "3", "null", "\"x\""] {
            assert!(serde_json::from_str::<Objects<T<'_>>>(other).unwrap().0.is_empty(), "{other}");
        }
    }
}
