//! Reading a whole 2xx answer: the verdict every provider's check comes to,
//! and the small serde readers the checks share.
//!
//! Only the fields a rule reads are parsed, borrowed where the JSON allows,
//! and arrays are folded element by element instead of collected.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::finish::is_declared;
use crate::usage::UsageFields;
use crate::{Code, Failure, Finish, FinishKind, Usage};
use seawall_internal::json::{Text, fold_seq};

/// What a whole 2xx body in a provider's answer shape amounts to
/// ([`check_answer`](super::check_answer)).
#[derive(Debug)]
#[non_exhaustive]
pub enum AnswerCheck {
    /// Valid JSON, but not this provider's answer shape (an embeddings or
    /// model-list body, another endpoint's answer).
    OtherShape,
    /// Not an answer yet: a background response still `queued` or
    /// `in_progress` is a handle to poll, delivered unchecked.
    Pending,
    /// An answer, with what it said of itself.
    Answer {
        /// The finish reason the answer declared.
        finish: Option<Finish>,
        /// The token usage the answer reported.
        usage: Option<Usage>,
    },
    /// The failure a "successful" body amounts to: empty, refused,
    /// filtered, cut or broken JSON (`protocol_violation`).
    Fail(Failure),
    /// A body with nothing of an answer in it but its bookkeeping (Gemini's
    /// `usageMetadata` alone): on a generation endpoint the empty answer
    /// it is (the failure), anywhere else another resource that carries
    /// the same field (a cached content counts its tokens too).
    Bare(Failure),
}

/// What an answer amounts to once its parts are read. Policy outcomes come
/// first: a filtered answer may carry partial text and is still filtered.
/// An answer cut at its token limit is delivered even when nothing made it
/// in: sending it again would be cut the same way. A failure keeps the
/// usage the answer reported: the provider bills a refused, filtered or
/// empty answer (a reasoning model's whole budget spent on thinking) as
/// any other, and the receipt's attempt says what it cost.
pub(super) fn verdict(
    policy: Option<Failure>,
    has_content: bool,
    finish: Option<(FinishKind, Text<'_>)>,
    usage: Option<Usage>,
) -> AnswerCheck {
    let fail = |failure: Failure| {
        AnswerCheck::Fail(match usage {
            Some(usage) => failure.with_usage(usage),
            None => failure,
        })
    };
    if let Some(failure) = policy {
        return fail(failure);
    }
    if !has_content
        && let Some(failure) =
            crate::finish::empty_answer(finish.as_ref().map(|(kind, reason)| (*kind, &*reason.0)))
    {
        return fail(failure);
    }
    // Every provider names the finish of a whole answer (OpenAI's
    // `finish_reason`; Anthropic's `stop_reason`, "always non-null" when
    // not streamed; Gemini's `finishReason`: "if empty, the model has not
    // stopped generating tokens"): an answer without one was cut short,
    // as a stream that ends without it.
    let Some((kind, reason)) = finish else {
        return fail(
            Failure::new(Code::Truncated)
                .with_message("the answer names no finish reason: it was cut short"),
        );
    };
    AnswerCheck::Answer {
        finish: Some(Finish::new(kind, &reason.0)),
        usage,
    }
}

pub(super) fn usage_of(fields: Option<UsageFields>) -> Option<Usage> {
    fields.as_ref().and_then(UsageFields::usage)
}

/// A finish reason as sent, with what `kind` reads it as; `""` and
/// `"null"` are none, as in a stream ([`is_declared`]).
pub(super) fn declared_finish<'a>(
    reason: Option<Text<'a>>,
    kind: fn(&str) -> FinishKind,
) -> Option<(FinishKind, Text<'a>)> {
    reason
        .filter(|reason| is_declared(&reason.0))
        .map(|reason| (kind(&reason.0), reason))
}

/// The failure a finish reason amounts to, with the reason as the
/// provider's code.
pub(super) fn finish_failure(kind: FinishKind, reason: &str) -> Option<Failure> {
    Some(kind.failure()?.with_provider_code(reason))
}

/// A body that does not parse: cut or broken JSON is a failure (nothing
/// reached the caller yet, so it may be retried); valid JSON of another
/// shape is another shape.
pub(super) fn unreadable(error: serde_json::Error) -> AnswerCheck {
    match error.classify() {
        serde_json::error::Category::Eof | serde_json::error::Category::Syntax => {
            AnswerCheck::Fail(
                Failure::new(Code::ProtocolViolation)
                    .with_message(&format!("the 2xx answer is not valid JSON: {error}")),
            )
        }
        serde_json::error::Category::Data | serde_json::error::Category::Io => {
            AnswerCheck::OtherShape
        }
    }
}

/// One choice (OpenAI) or candidate (Gemini) of an answer, as the verdict
/// reads it.
pub(super) trait Candidacy<'a> {
    /// The policy failure this one amounts to (a refusal, a filter).
    fn policy(&self) -> Option<Failure>;
    /// Whether it holds any part of an answer.
    fn has_content(&self) -> bool;
    /// Its finish reason.
    fn finish(self) -> Option<(FinishKind, Text<'a>)>;
}

/// What the choices or candidates of an answer add up to, read one by one
/// instead of collected into a `Vec`: the first policy failure, whether any
/// holds content, and the answer's finish reason — the first one's, unless
/// another's says its text is not whole (a cut at the token limit, an
/// abort): one choice's `stop` does not hide another's cut, as in a
/// stream.
pub(super) struct Outcome<'a, T> {
    pub(super) policy: Option<Failure>,
    pub(super) has_content: bool,
    pub(super) finish: Option<(FinishKind, Text<'a>)>,
    /// A choice or candidate came without a finish: the answer was cut.
    unfinished: bool,
    item: PhantomData<T>,
}

impl<T> Default for Outcome<'_, T> {
    fn default() -> Self {
        Outcome {
            policy: None,
            has_content: false,
            finish: None,
            unfinished: false,
            item: PhantomData,
        }
    }
}

impl<'a, T: Candidacy<'a>> Outcome<'a, T> {
    /// Adds one choice or candidate: the first policy failure wins, any
    /// content counts, and the first finish that does not complete the
    /// task is the answer's (a missing one included), else the first
    /// one's.
    pub(super) fn fold(&mut self, item: T, first: bool) {
        if self.policy.is_none() {
            self.policy = item.policy();
        }
        self.has_content |= item.has_content();
        let finish = item.finish();
        let whole = |finish: &Option<(FinishKind, Text<'a>)>| {
            finish
                .as_ref()
                .is_none_or(|(kind, _)| kind.completes_task())
        };
        // One without a finish is cut, whatever the others say (as one
        // answer without its finish is): the answer then has none.
        self.unfinished |= finish.is_none();
        if self.unfinished {
            self.finish = None;
        } else if first || (whole(&self.finish) && !whole(&finish)) {
            self.finish = finish;
        }
    }
}

impl<'de: 'a, 'a, T: Candidacy<'a> + Deserialize<'de>> Deserialize<'de> for Outcome<'a, T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut first = true;
        fold_seq(
            deserializer,
            Outcome::default(),
            |outcome: &mut Outcome<'a, T>, item: T| outcome.fold(item, std::mem::take(&mut first)),
        )
    }
}

/// Whether an array element is part of an answer.
pub(super) trait Part {
    fn is_answer(&self) -> bool;
}

/// Whether any element of an array is part of an answer, read without
/// collecting the array.
pub(super) struct AnyAnswer<T>(pub(super) bool, PhantomData<T>);

impl<T> Default for AnyAnswer<T> {
    fn default() -> Self {
        AnyAnswer(false, PhantomData)
    }
}

impl<'de, T: Part + Deserialize<'de>> Deserialize<'de> for AnyAnswer<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        fold_seq(
            deserializer,
            AnyAnswer::default(),
            |any: &mut Self, item: T| {
                any.0 |= item.is_answer();
            },
        )
    }
}

/// Whether a JSON value holds anything — the one rule of "is this field
/// part of an answer" for the unary checks and the stream decoders alike:
/// `null`, `""`, `[]` and arrays of those hold nothing; any other string,
/// number, boolean or object holds something. (A role chunk with
/// `"tool_calls": []` is no tool call.) Reads the value without copying it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Presence(pub bool);

impl<'de> Deserialize<'de> for Presence {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PresenceVisitor)
    }
}

struct PresenceVisitor;

impl<'de> Visitor<'de> for PresenceVisitor {
    type Value = Presence;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Presence, E> {
        Ok(Presence(true))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Presence, E> {
        Ok(Presence(true))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Presence, E> {
        Ok(Presence(true))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Presence, E> {
        Ok(Presence(true))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Presence, E> {
        Ok(Presence(!v.is_empty()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Presence, E> {
        Ok(Presence(false))
    }
    fn visit_none<E: de::Error>(self) -> Result<Presence, E> {
        Ok(Presence(false))
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Presence, D::Error> {
        Presence::deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Presence, A::Error> {
        let mut any = false;
        while let Some(Presence(item)) = seq.next_element()? {
            any |= item;
        }
        Ok(Presence(any))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Presence, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Presence(true))
    }
}

/// An object's members, read one key at a time by [`ObjectOr`]: a key
/// named twice is read twice (the reader says which wins), never an error
/// that would make the body around it unreadable.
pub(super) trait Members<'de>: Default {
    /// The keys the reader tells apart.
    type Key: FromKey;
    /// Reads the value of `key` from `map`.
    fn member<A: MapAccess<'de>>(&mut self, key: Self::Key, map: &mut A) -> Result<(), A::Error>;
}

/// A JSON value read as an object of `T`'s members when it is one, else as
/// the [`Presence`] it has, in one pass. serde's `#[serde(untagged)]` does
/// the same by copying the whole value first (an 8 MiB array of `{}`
/// became some 300 MiB of copies); this reads it where it lies.
pub(super) enum ObjectOr<T> {
    Object(T),
    Value(Presence),
}

impl<'de, T: Members<'de>> Deserialize<'de> for ObjectOr<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectOrVisitor<T>(PhantomData<T>);
        impl<'de, T: Members<'de>> Visitor<'de> for ObjectOrVisitor<T> {
            type Value = ObjectOr<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ObjectOr<T>, A::Error> {
                let mut members = T::default();
                while let Some(Key(key)) = map.next_key::<Key<T::Key>>()? {
                    members.member(key, &mut map)?;
                }
                Ok(ObjectOr::Object(members))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ObjectOr<T>, E> {
                PresenceVisitor.visit_bool(v).map(ObjectOr::Value)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ObjectOr<T>, E> {
                PresenceVisitor.visit_i64(v).map(ObjectOr::Value)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ObjectOr<T>, E> {
                PresenceVisitor.visit_u64(v).map(ObjectOr::Value)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ObjectOr<T>, E> {
                PresenceVisitor.visit_f64(v).map(ObjectOr::Value)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ObjectOr<T>, E> {
                PresenceVisitor.visit_str(v).map(ObjectOr::Value)
            }
            fn visit_unit<E: de::Error>(self) -> Result<ObjectOr<T>, E> {
                PresenceVisitor.visit_unit().map(ObjectOr::Value)
            }
            fn visit_none<E: de::Error>(self) -> Result<ObjectOr<T>, E> {
                PresenceVisitor.visit_none().map(ObjectOr::Value)
            }
            fn visit_some<D: Deserializer<'de>>(
                self,
                deserializer: D,
            ) -> Result<ObjectOr<T>, D::Error> {
                ObjectOr::deserialize(deserializer)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<ObjectOr<T>, A::Error> {
                PresenceVisitor.visit_seq(seq).map(ObjectOr::Value)
            }
        }
        deserializer.deserialize_any(ObjectOrVisitor(PhantomData))
    }
}

/// Reads a JSON object's keys with `key` (a `&str` → `K` mapper that never
/// fails), without allocating for plain keys.
pub(super) struct Key<K>(pub(super) K);

/// A key type read by [`Key`].
pub(super) trait FromKey: Sized {
    fn from_key(key: &str) -> Self;
}

impl<'de, K: FromKey> Deserialize<'de> for Key<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor<K>(PhantomData<K>);
        impl<K: FromKey> Visitor<'_> for KeyVisitor<K> {
            type Value = Key<K>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<K>, E> {
                Ok(Key(K::from_key(v)))
            }
        }
        deserializer.deserialize_identifier(KeyVisitor(PhantomData))
    }
}
