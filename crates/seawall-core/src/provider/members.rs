//! Provider objects read member by member, the later of a member named
//! twice winning: what Python's `json`, JavaScript's `JSON.parse` and
//! `serde_json::Value` do, so what the providers' SDKs read. serde's
//! derive refuses such an object ("duplicate field"), and an answer the
//! SDK reads whole was another shape (unary) or an event skipped
//! (stream). The unary checks here and `seawall-stream`'s decoders read
//! their objects with [`later_wins!`](crate::later_wins).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, Visitor};

/// Reads an object key as its position in a list of names (`None`: a
/// name not in it), without allocating, escaped keys included.
#[derive(Debug, Clone, Copy)]
pub struct KeyIn(pub &'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeyIn {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for KeyIn {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|name| *name == v))
    }
}

/// Declares a struct read from a JSON object member by member: each field
/// is read from the member named by its literal, as its own type reads it;
/// a field left out keeps its `Default`, or fails the object when marked
/// `required` (as serde's derive fails a missing field that is no
/// `Option`); any other member is skipped unread; a member named twice is
/// the later one. A value that is no object fails, as serde's derive
/// fails a value of another type.
///
/// ```
/// seawall_core::later_wins! {
///     struct Choice<'a> {
///         finish_reason: Option<std::borrow::Cow<'a, str>> = "finish_reason",
///         index: u64 = "index" required,
///     }
/// }
/// let choice: Choice<'_> =
///     serde_json::from_str(r#"{"index":0,"finish_reason":null,"finish_reason":"stop"}"#)
///         .unwrap();
/// assert_eq!(choice.finish_reason.as_deref(), Some("stop"));
/// assert!(serde_json::from_str::<Choice<'_>>(r#"{"finish_reason":"stop"}"#).is_err());
/// ```
#[macro_export]
macro_rules! later_wins {
    (@take $map:ident, $field:ident, $key:literal) => {
        ::core::option::Option::unwrap_or_default($field)
    };
    (@take $map:ident, $field:ident, $key:literal, required) => {
        match $field {
            ::core::option::Option::Some(value) => value,
            ::core::option::Option::None => {
                return ::core::result::Result::Err(
                    <_ as ::serde::de::Error>::missing_field($key),
                );
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident $(<$lt:lifetime>)? {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident : $ty:ty = $key:literal $($required:ident)?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name $(<$lt>)? {
            $( $(#[$fmeta])* $fvis $field: $ty, )*
        }

        impl<'de $(: $lt, $lt)?> ::serde::Deserialize<'de> for $name $(<$lt>)? {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                struct MembersVisitor $(<$lt>)? (::core::marker::PhantomData<$(&$lt)? ()>);
                impl<'de $(: $lt, $lt)?> ::serde::de::Visitor<'de> for MembersVisitor $(<$lt>)? {
                    type Value = $name $(<$lt>)?;
                    fn expecting(
                        &self,
                        f: &mut ::core::fmt::Formatter<'_>,
                    ) -> ::core::fmt::Result {
                        f.write_str(::core::concat!("an object: ", ::core::stringify!($name)))
                    }
                    #[allow(unused_mut, unused_assignments, unused_variables)]
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> ::core::result::Result<Self::Value, A::Error> {
                        const NAMES: &[&str] = &[$($key),*];
                        $( let mut $field: ::core::option::Option<$ty> = ::core::option::Option::None; )*
                        while let ::core::option::Option::Some(found) = map
                            .next_key_seed($crate::provider::members::KeyIn(NAMES))?
                        {
                            let mut at = 0usize;
                            $(
                                if found == ::core::option::Option::Some(at) {
                                    $field = ::core::option::Option::Some(map.next_value::<$ty>()?);
                                    continue;
                                }
                                at += 1;
                            )*
                            map.next_value::<::serde::de::IgnoredAny>()?;
                        }
                        ::core::result::Result::Ok($name {
                            $( $field: $crate::later_wins!(@take map, $field, $key $(, $required)?), )*
                        })
                    }
                }
                deserializer.deserialize_map(MembersVisitor(::core::marker::PhantomData))
            }
        }
    };
}
