//! OpenAI chat completions and every server that speaks its format:
//! the error table, finish reasons, what counts as content and where usage
//! is.
//!
//! The stream decoder (`seawall-stream`'s `protocol/openai.rs`) reads
//! `choices[].delta` with the same [`ANSWER_FIELDS`] and [`REFUSAL_FIELD`]
//! as the unary check reads `choices[].message`, and both count a field by
//! [`Presence`].

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

use super::answer::{
    AnswerCheck, Candidacy, FromKey, Key, Outcome, Presence, finish_failure, unreadable, usage_of,
    verdict,
};
use super::{Declared, Verdict};
use crate::text::contains_ci;
use crate::usage::UsageFields;
use crate::{Class, Code, Failure, FinishKind};
use seawall_internal::json::{Text, from_bytes};

/// The fields of a chat message (`choices[].message`) or a stream delta
/// (`choices[].delta`) that make it part of an answer when they hold
/// anything: text, tool calls, the legacy function call, audio.
pub const ANSWER_FIELDS: [&str; 4] = ["content", "tool_calls", "function_call", "audio"];

/// The field of a message or delta that holds a refusal: the model
/// declining — a policy outcome, never an answer.
pub const REFUSAL_FIELD: &str = "refusal";

/// What a `finish_reason` means. `max_output_tokens` is the Responses API's
/// incomplete reason, read here too for servers that mix the two.
pub fn finish_kind(reason: &str) -> FinishKind {
    match reason {
        "stop" | "tool_calls" | "function_call" => FinishKind::Complete,
        "length" | "max_output_tokens" => FinishKind::Truncated,
        "content_filter" => FinishKind::Filtered,
        _ => FinishKind::Other,
    }
}

// The error table.

pub(super) fn error_rule(status: Option<u16>, d: &Declared<'_>) -> Option<Verdict> {
    use Class::*;
    let ty = d.error_type.as_deref().unwrap_or("");
    let code = d.error_code.as_deref().unwrap_or("");
    let message = d.message.as_deref().unwrap_or("");
    let is = |name: &str| ty == name || code == name;
    if is("insufficient_quota") {
        return Some(Verdict::Fixed(Permanent, Code::QuotaExhausted));
    }
    // The message text is the last resort, read only where it can decide:
    // a context overflow is a 400 (or an in-stream error).
    let may_be_context = matches!(status, Some(400) | None);
    if is("context_length_exceeded")
        || (may_be_context && contains_ci(message, "maximum context length"))
    {
        return Some(Verdict::Fixed(Permanent, Code::ContextTooLong));
    }
    if is("content_filter") || is("content_policy_violation") {
        return Some(Verdict::Fixed(Policy, Code::ContentFiltered));
    }
    match status {
        Some(429) => {
            if contains_ci(message, "request too large") && contains_ci(message, "tokens per min") {
                Some(Verdict::Fixed(ModelFixable, Code::RequestTooLarge))
            } else {
                Some(Verdict::RateLimit)
            }
        }
        Some(400) => Some(Verdict::Fixed(Permanent, Code::BadRequest)),
        Some(_) => None,
        // An error inside a stream: only the declared type is there (the
        // Responses API declares a code alone).
        None => Some(match if ty.is_empty() { code } else { ty } {
            "server_error" | "internal_error" | "api_error" => {
                Verdict::Fixed(Transient, Code::ProviderUnavailable)
            }
            "overloaded_error" | "overloaded" => Verdict::Fixed(Transient, Code::Overloaded),
            "rate_limit_exceeded" | "rate_limit_error" | "requests" | "tokens" => {
                Verdict::RateLimit
            }
            "timeout" | "timeout_error" => Verdict::Fixed(Transient, Code::Timeout),
            "invalid_request_error" => Verdict::Fixed(Permanent, Code::BadRequest),
            _ if code == "rate_limit_exceeded" => Verdict::RateLimit,
            _ => Verdict::Fixed(Permanent, Code::Unknown),
        }),
    }
}

// Wire shapes: only the fields the rules read, borrowed where the JSON has
// no escapes (optional strings through `Text`: serde does not borrow
// through `Option<Cow<str>>`).

/// OpenAI's `code` is a string, a number or null depending on the
/// server; either way it reads as [`Text`]. A hand-written visitor keeps a
/// string borrowed; serde's untagged enums buffer the value first and cost
/// more than the rest of the parse.
struct StrOrNum<'a>(Text<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for StrOrNum<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visitor<'a> {
            type Value = StrOrNum<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(StrOrNum(Text(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StrOrNum(Text(Cow::Owned(v.to_owned()))))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(StrOrNum(Text(Cow::Owned(v.to_string()))))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(StrOrNum(Text(Cow::Owned(v.to_string()))))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(StrOrNum(Text(Cow::Owned(v.to_string()))))
            }
        }
        deserializer.deserialize_any(Visitor(std::marker::PhantomData))
    }
}

impl<'a> StrOrNum<'a> {
    fn into_cow(self) -> Cow<'a, str> {
        self.0.0
    }
}

#[derive(Deserialize)]
struct OpenAiEnvelope<'a> {
    #[serde(borrow)]
    error: OpenAiError<'a>,
}

#[derive(Deserialize)]
struct OpenAiError<'a> {
    #[serde(borrow, default)]
    message: Option<Text<'a>>,
    #[serde(borrow, default, rename = "type")]
    ty: Option<Text<'a>>,
    #[serde(borrow, default)]
    code: Option<StrOrNum<'a>>,
}

pub(super) fn parse_error(body: &[u8]) -> Option<Declared<'_>> {
    let envelope: OpenAiEnvelope<'_> = from_bytes(body).ok()?;
    let e = envelope.error;
    Some(Declared {
        error_type: e.ty.map(|t| t.0),
        error_code: e.code.map(StrOrNum::into_cow),
        message: e.message.map(|t| t.0),
        ..Declared::default()
    })
}

// The unary answer: `{"choices":[{"message":{…},"finish_reason"}],"usage"}`
// (and legacy completions: `choices[].text`).

#[derive(Deserialize)]
struct ChatCompletion<'a> {
    #[serde(borrow)]
    choices: Option<Outcome<'a, Choice<'a>>>,
    #[serde(default)]
    usage: Option<UsageFields>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    finish_reason: Option<Text<'a>>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
    #[serde(default)]
    text: Presence,
}

/// A message read by the table: whether any answer field holds anything,
/// and the refusal.
struct Message<'a> {
    answer: bool,
    refusal: Option<Text<'a>>,
}

/// A message field, by the table.
enum MessageField {
    Answer,
    Refusal,
    Other,
}

impl FromKey for MessageField {
    fn from_key(key: &str) -> Self {
        if ANSWER_FIELDS.contains(&key) {
            MessageField::Answer
        } else if key == REFUSAL_FIELD {
            MessageField::Refusal
        } else {
            MessageField::Other
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Message<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MessageVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for MessageVisitor<'a> {
            type Value = Message<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a chat message")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message<'a>, A::Error> {
                let mut message = Message {
                    answer: false,
                    refusal: None,
                };
                while let Some(Key(field)) = map.next_key::<Key<MessageField>>()? {
                    match field {
                        MessageField::Answer => message.answer |= map.next_value::<Presence>()?.0,
                        MessageField::Refusal => {
                            message.refusal = map.next_value::<Option<Text<'a>>>()?;
                        }
                        MessageField::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(message)
            }
        }
        deserializer.deserialize_map(MessageVisitor(std::marker::PhantomData))
    }
}

impl<'a> Candidacy<'a> for Choice<'a> {
    fn policy(&self) -> Option<Failure> {
        let refusal = self.message.as_ref().and_then(|m| m.refusal.as_ref());
        if let Some(refusal) = refusal.filter(|r| !r.0.is_empty()) {
            return Some(Failure::new(Code::Refused).with_message(&refusal.0));
        }
        let reason = self.finish_reason.as_ref()?;
        finish_failure(finish_kind(&reason.0), &reason.0)
    }

    fn has_content(&self) -> bool {
        self.text.0 || self.message.as_ref().is_some_and(|m| m.answer)
    }

    fn finish(self) -> Option<(FinishKind, Text<'a>)> {
        self.finish_reason
            .map(|reason| (finish_kind(&reason.0), reason))
    }
}

/// Checks a chat completion (or legacy completion) answer.
pub(super) fn check_answer(body: &[u8]) -> AnswerCheck {
    let (choices, usage) = match from_bytes(body) {
        Ok(ChatCompletion {
            choices: Some(choices),
            usage,
        }) => (choices, usage),
        Ok(ChatCompletion { choices: None, .. }) => return AnswerCheck::OtherShape,
        Err(error) => return unreadable(error),
    };
    verdict(
        choices.policy,
        choices.has_content,
        choices.finish,
        usage_of(usage),
    )
}
