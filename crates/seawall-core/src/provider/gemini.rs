//! Gemini `generateContent` / `streamGenerateContent`: the error table,
//! finish reasons, what counts as content and where usage is.
//!
//! The unary check and the stream decoder (`seawall-stream`'s
//! `protocol/gemini.rs`) read a candidate's `content.parts[]` through the
//! one [`part_field`] table.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

use super::answer::{
    AnswerCheck, AnyAnswer, Candidacy, FromKey, Key, Outcome, Part, Presence, finish_failure,
    unreadable, usage_of, verdict,
};
use super::{Declared, Verdict};
use crate::hint::parse_proto_duration;
use crate::text::contains_ci;
use crate::usage::UsageFields;
use crate::{Class, Code, Failure, FinishKind};
use seawall_internal::json::{Text, from_bytes};

/// What a field of a part is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartField {
    /// `text`: part of the answer when it holds text.
    Text,
    /// `thought: true` makes the whole part a thought summary: the model
    /// working, not the answer.
    Thought,
    /// `thoughtSignature`, `partMetadata`, `videoMetadata`: about a part,
    /// never the answer itself.
    Metadata,
    /// Any other field — `functionCall`, `inlineData`, `fileData`,
    /// `executableCode`, `codeExecutionResult`, `functionResponse`, and
    /// kinds added later: part of the answer when it holds anything, so a
    /// new kind is never mistaken for an empty answer.
    Answer,
}

/// What the field `name` of a part is.
pub fn part_field(name: &str) -> PartField {
    match name {
        "text" => PartField::Text,
        "thought" => PartField::Thought,
        "thoughtSignature" | "partMetadata" | "videoMetadata" => PartField::Metadata,
        _ => PartField::Answer,
    }
}

/// What a `finishReason` means.
pub fn finish_kind(reason: &str) -> FinishKind {
    match reason {
        "STOP" => FinishKind::Complete,
        "MAX_TOKENS" => FinishKind::Truncated,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY"
        | "LANGUAGE" => FinishKind::Filtered,
        "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => FinishKind::Malformed,
        _ => FinishKind::Other,
    }
}

// The error table.

pub(super) fn error_rule(status: Option<u16>, d: &Declared<'_>) -> Option<Verdict> {
    use Class::*;
    let message = d.message.as_deref().unwrap_or("");
    if d.reason
        .as_deref()
        .is_some_and(|r| r.starts_with("API_KEY_"))
    {
        // A bad key comes back as 400 INVALID_ARGUMENT; ErrorInfo says what it is.
        return Some(Verdict::Fixed(Permanent, Code::Auth));
    }
    let verdict = match d.error_type.as_deref()? {
        "RESOURCE_EXHAUSTED" if d.per_day_quota => Verdict::Fixed(Permanent, Code::QuotaExhausted),
        "RESOURCE_EXHAUSTED" => Verdict::RateLimit,
        "UNAVAILABLE" => Verdict::Fixed(Transient, Code::Overloaded),
        "INTERNAL" => Verdict::Fixed(Transient, Code::ProviderUnavailable),
        "DEADLINE_EXCEEDED" => Verdict::Fixed(Transient, Code::Timeout),
        "INVALID_ARGUMENT"
            if contains_ci(message, "input token count") && contains_ci(message, "exceed") =>
        {
            Verdict::Fixed(Permanent, Code::ContextTooLong)
        }
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => {
            Verdict::Fixed(Permanent, Code::BadRequest)
        }
        "PERMISSION_DENIED" | "UNAUTHENTICATED" => Verdict::Fixed(Permanent, Code::Auth),
        "NOT_FOUND" => Verdict::Fixed(Permanent, Code::NotFound),
        _ if status.is_some() => return None,
        _ => Verdict::Fixed(Permanent, Code::Unknown),
    };
    Some(verdict)
}

#[derive(Deserialize)]
struct GeminiEnvelope<'a> {
    #[serde(borrow)]
    error: GeminiError<'a>,
}

#[derive(Deserialize)]
struct GeminiError<'a> {
    #[serde(default)]
    code: Option<i64>,
    #[serde(borrow, default)]
    message: Option<Text<'a>>,
    #[serde(borrow, default)]
    status: Option<Text<'a>>,
    #[serde(borrow, default)]
    details: Vec<GeminiDetail<'a>>,
}

#[derive(Deserialize)]
struct GeminiDetail<'a> {
    #[serde(borrow, default, rename = "@type")]
    ty: Option<Text<'a>>,
    #[serde(borrow, default, rename = "retryDelay")]
    retry_delay: Option<Text<'a>>,
    #[serde(borrow, default)]
    violations: Vec<GeminiViolation<'a>>,
    #[serde(borrow, default)]
    reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct GeminiViolation<'a> {
    #[serde(borrow, default, rename = "quotaId")]
    quota_id: Option<Text<'a>>,
}

pub(super) fn parse_error(body: &[u8]) -> Option<Declared<'_>> {
    // The non-SSE streaming endpoint wraps errors in an array. Asked by the
    // first byte: serde reads a struct from an array too (its fields in
    // order), so `[{"error":…}]` would "parse" as an envelope of nothing.
    let envelope: GeminiEnvelope<'_> = if body.trim_ascii_start().starts_with(b"[") {
        from_bytes::<Vec<GeminiEnvelope<'_>>>(body)
            .ok()?
            .into_iter()
            .next()?
    } else {
        from_bytes(body).ok()?
    };
    let e = envelope.error;
    let mut declared = Declared {
        error_type: e.status.map(|t| t.0),
        error_code: e.code.map(|c| Cow::Owned(c.to_string())),
        message: e.message.map(|t| t.0),
        ..Declared::default()
    };
    for detail in e.details {
        let ty = detail.ty.as_ref().map_or("", |t| &*t.0);
        if ty.ends_with("google.rpc.RetryInfo") {
            declared.body_hint = detail
                .retry_delay
                .as_ref()
                .and_then(|t| parse_proto_duration(&t.0));
        }
        if ty.ends_with("google.rpc.ErrorInfo") {
            declared.reason = detail.reason.map(|t| t.0);
        }
        if ty.ends_with("google.rpc.QuotaFailure") {
            declared.per_day_quota |= detail
                .violations
                .iter()
                .filter_map(|v| v.quota_id.as_ref())
                .any(|id| contains_ci(&id.0, "perday"));
        }
    }
    // A per-day quota's RetryInfo speaks of the per-minute window: waiting
    // that long only meets the daily wall again, so it is no hint at all.
    if declared.per_day_quota {
        declared.body_hint = None;
    }
    Some(declared)
}

// The unary answer:
// `{"candidates":[{"content":{"parts":[…]},"finishReason"}],"promptFeedback","usageMetadata"}`.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response<'a> {
    #[serde(borrow)]
    candidates: Option<Outcome<'a, Candidate<'a>>>,
    #[serde(borrow)]
    prompt_feedback: Option<PromptFeedback<'a>>,
    usage_metadata: Option<UsageFields>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback<'a> {
    #[serde(borrow, default)]
    block_reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(default)]
    content: Option<Content>,
    #[serde(borrow, default)]
    finish_reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: AnyAnswer<AnswerPart>,
}

/// Whether one part is part of the answer, by [`part_field`].
struct AnswerPart(bool);

impl Part for AnswerPart {
    fn is_answer(&self) -> bool {
        self.0
    }
}

impl FromKey for PartField {
    fn from_key(key: &str) -> Self {
        part_field(key)
    }
}

impl<'de> Deserialize<'de> for AnswerPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PartVisitor;
        impl<'de> Visitor<'de> for PartVisitor {
            type Value = AnswerPart;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a Gemini part")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnswerPart, A::Error> {
                let (mut answer, mut thought) = (false, false);
                while let Some(Key(field)) = map.next_key::<Key<PartField>>()? {
                    match field {
                        PartField::Text | PartField::Answer => {
                            answer |= map.next_value::<Presence>()?.0;
                        }
                        PartField::Thought => {
                            thought = map.next_value::<Option<bool>>()?.unwrap_or(false);
                        }
                        PartField::Metadata => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(AnswerPart(answer && !thought))
            }
        }
        deserializer.deserialize_map(PartVisitor)
    }
}

impl<'a> Candidacy<'a> for Candidate<'a> {
    fn policy(&self) -> Option<Failure> {
        let reason = self.finish_reason.as_ref()?;
        finish_failure(finish_kind(&reason.0), &reason.0)
    }

    fn has_content(&self) -> bool {
        self.content.as_ref().is_some_and(|content| content.parts.0)
    }

    fn finish(self) -> Option<(FinishKind, Text<'a>)> {
        self.finish_reason
            .map(|reason| (finish_kind(&reason.0), reason))
    }
}

/// Checks a `generateContent` answer.
pub(super) fn check_answer(body: &[u8]) -> AnswerCheck {
    let response = match from_bytes::<Response<'_>>(body) {
        Ok(response) => response,
        Err(error) => return unreadable(error),
    };
    if response.candidates.is_none()
        && response.prompt_feedback.is_none()
        && response.usage_metadata.is_none()
    {
        return AnswerCheck::OtherShape;
    }
    let candidates = response.candidates.unwrap_or_default();
    let blocked = response
        .prompt_feedback
        .and_then(|feedback| feedback.block_reason)
        .map(|reason| Failure::new(Code::ContentFiltered).with_provider_code(&*reason.0));
    let policy = blocked.or(candidates.policy);
    verdict(
        policy,
        candidates.has_content,
        candidates.finish,
        usage_of(response.usage_metadata),
    )
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::super::{ErrorContext, Provider, classify_error};
    use crate::Code;

    /// The non-SSE streaming endpoint wraps its error in an array: read
    /// the same as the plain object.
    #[test]
    fn an_error_in_an_array_reads_as_the_object() {
        let object = br#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}"#;
        let mut array = b"[".to_vec();
        array.extend_from_slice(object);
        array.extend_from_slice(b"]");
        let cx = || ErrorContext::in_stream(SystemTime::UNIX_EPOCH);
        let plain = classify_error(Provider::Gemini, object, cx());
        let wrapped = classify_error(Provider::Gemini, &array, cx());
        assert_eq!(plain.code(), Code::RateLimited);
        assert_eq!(wrapped.code(), plain.code());
        assert_eq!(wrapped.provider_type(), Some("RESOURCE_EXHAUSTED"));
        assert_eq!(wrapped.retry_after(), plain.retry_after());
    }
}
