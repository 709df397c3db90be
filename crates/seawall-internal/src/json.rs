//! Borrowed JSON text and the UTF-8-once parse: what seawall-core's
//! provider tables and seawall-stream's decoders read JSON with.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, IgnoredAny, Visitor};

/// Reads JSON of shape `T`, or `None` when `data` is not UTF-8 or not JSON
/// of that shape.
///
/// The data is checked as UTF-8 once, whole, so serde_json need not check
/// each string again (measured faster than `from_slice` on typical chunks).
pub fn parse<'a, T: Deserialize<'a>>(data: &'a [u8]) -> Option<T> {
    serde_json::from_str(std::str::from_utf8(data).ok()?).ok()
}

/// Reads JSON of shape `T` with the result of `serde_json::from_slice`.
///
/// Data that is valid UTF-8 (nearly all) is checked once, whole, and read
/// as text, as [`parse`] does; any other data is read by `from_slice`, which
/// may still accept it (serde_json does not check the strings it skips).
pub fn from_bytes<'a, T: Deserialize<'a>>(data: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(data) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(data),
    }
}

/// A JSON string, borrowed from the input when it has no escapes.
///
/// (`Option<Cow<str>>` with `#[serde(borrow)]` would always allocate:
/// serde borrows through `Cow` only where it is not wrapped.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(TextVisitor(PhantomData))
    }
}

impl<'a> Text<'a> {
    /// The text, or `None` when it is empty.
    pub fn non_empty(self) -> Option<Cow<'a, str>> {
        (!self.0.is_empty()).then_some(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Field<'a> {
        #[serde(borrow, default)]
        text: Option<Text<'a>>,
    }

    #[test]
    fn text_borrows_unless_escaped() {
        let plain: Field<'_> = parse(br#"{"text":"plain"}"#).unwrap();
        assert!(matches!(plain.text, Some(Text(Cow::Borrowed("plain")))));
        let escaped: Field<'_> = parse(br#"{"text":"a\"b"}"#).unwrap();
        assert!(matches!(escaped.text, Some(Text(Cow::Owned(ref s))) if s == "a\"b"));
        assert_eq!(Text(Cow::Borrowed("")).non_empty(), None);
    }

    #[test]
    fn from_bytes_reads_what_from_slice_reads() {
        // An invalid byte in a skipped string: `parse` refuses it,
        // `from_bytes` reads it as `from_slice` does.
        let body = b"{\"other\":\"\xff\",\"text\":\"x\"}";
        assert!(parse::<Field<'_>>(body).is_none());
        let read: Field<'_> = from_bytes(body).unwrap();
        let sliced: Field<'_> = serde_json::from_slice(body).unwrap();
        assert_eq!(read.text, sliced.text);
        assert!(from_bytes::<Field<'_>>(b"{\"text\":").is_err());
    }
}

/// Present when the field is there and not `null`, whatever it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Present;

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| Present)
    }
}
