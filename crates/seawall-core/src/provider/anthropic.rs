//! Anthropic messages: the error table, stop reasons, what counts as
//! content and where usage is.
//!
//! The unary check reads `content[]` blocks and the stream decoder
//! (`seawall-stream`'s `protocol/anthropic.rs`) reads `content_block_start`
//! and `content_block_delta` events, both through [`block`] and
//! [`delta_adds_content`].

use std::borrow::Cow;

use serde::Deserialize;

use super::answer::{
    AnswerCheck, AnyAnswer, Part, Presence, declared_finish, finish_failure, unreadable, usage_of,
    verdict,
};
use super::{Declared, Verdict};
use crate::text::contains_ci;
use crate::usage::UsageFields;
use crate::{Class, Code, FinishKind};
use seawall_internal::json::{Text, from_bytes};

/// What a content block is, by its `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// `text`: part of the answer when it holds text.
    Text,
    /// `thinking`, `redacted_thinking`: the model working, not the answer;
    /// also the markers and state that are no output of the model's to
    /// show: `fallback` ("marks the point in `content` where one model's
    /// output gives way to the next", no deltas) and `compaction` (the
    /// conversation's summary).
    Thinking,
    /// Any other block — `tool_use`, `server_tool_use`,
    /// `web_search_tool_result`, and block types added later: part of the
    /// answer (an act the caller carries out or a result it shows), so a
    /// new kind is never mistaken for an empty answer.
    Answer,
}

/// What a content block of type `ty` is.
pub fn block(ty: &str) -> Block {
    match ty {
        "text" => Block::Text,
        "thinking" | "redacted_thinking" | "fallback" | "compaction" => Block::Thinking,
        _ => Block::Answer,
    }
}

/// Whether a `content_block_delta` of type `ty` adds to the answer: text
/// (when it holds any) and a tool's input do; thinking, signatures and
/// citations do not.
pub fn delta_adds_content(ty: &str) -> bool {
    matches!(ty, "text_delta" | "input_json_delta")
}

/// What a `stop_reason` means.
pub fn finish_kind(reason: &str) -> FinishKind {
    match reason {
        "end_turn" | "stop_sequence" | "tool_use" => FinishKind::Complete,
        // `pause_turn`: "A server-tool loop reached its iteration limit. Send
        // the assistant content back to continue" (handling-stop-reasons).
        // The message is whole, the task is not.
        // `compaction` (the context-management beta's
        // `pause_after_compaction`): the turn paused after summarising
        // the conversation, its content the summary, not an answer.
        "max_tokens" | "model_context_window_exceeded" | "pause_turn" | "compaction" => {
            FinishKind::Truncated
        }
        "refusal" => FinishKind::Refused,
        _ => FinishKind::Other,
    }
}

// The error table.

/// Anthropic's declared types decide whatever the status; any other type
/// is left to the status (or, in a stream, the status it echoes).
pub(super) fn error_rule(d: &Declared<'_>) -> Option<Verdict> {
    use Class::*;
    let message = d.message.as_deref().unwrap_or("");
    let verdict = match d.error_type.as_deref()? {
        // The tier's monthly spend cap is a 429 `rate_limit_error` with no
        // `retry-after`; only `details.error_code` tells it apart. Access
        // resumes next month: "Retrying, including the SDKs' automatic
        // retries, fails until access resumes" (docs/api/rate-limits).
        "rate_limit_error" | "invalid_request_error"
            if d.error_code.as_deref() == Some("enforced_spend_limit_reached")
                || is_account_wall(message) =>
        {
            Verdict::Fixed(Permanent, Code::QuotaExhausted)
        }
        "rate_limit_error" => Verdict::RateLimit,
        "overloaded_error" => Verdict::Fixed(Transient, Code::Overloaded),
        "api_error" => Verdict::Fixed(Transient, Code::ProviderUnavailable),
        "timeout_error" => Verdict::Fixed(Transient, Code::Timeout),
        "invalid_request_error" if says_context_too_long(message) => {
            Verdict::Fixed(Permanent, Code::ContextTooLong)
        }
        // The model's output tripped a filter (recited text, say): "Output
        // blocked by content filtering policy", a 400 before content or an
        // in-stream error after it. The request was fine; the answer was
        // withheld, as OpenAI's `content_filter` says.
        "invalid_request_error" if contains_ci(message, "content filtering policy") => {
            Verdict::Fixed(Policy, Code::ContentFiltered)
        }
        "invalid_request_error" => Verdict::Fixed(Permanent, Code::BadRequest),
        "request_too_large" => Verdict::Fixed(Permanent, Code::RequestTooLarge),
        "billing_error" => Verdict::Fixed(Permanent, Code::QuotaExhausted),
        "authentication_error" | "permission_error" => Verdict::Fixed(Permanent, Code::Auth),
        "not_found_error" => Verdict::Fixed(Permanent, Code::NotFound),
        // Not Anthropic's: the status decides, or, in a stream, the
        // status the error echoes.
        _ => return None,
    };
    Some(verdict)
}

/// Whether `message` says the prompt does not fit Claude's context: "prompt
/// is too long: 210000 tokens > 200000 maximum"; with room for the prompt
/// but not its output budget: "input length and `max_tokens` exceed
/// context limit: 190000 + 20000 > 200000". Claude says it the same way
/// wherever it is served (Amazon Bedrock's `ValidationException` too).
pub(super) fn says_context_too_long(message: &str) -> bool {
    contains_ci(message, "prompt is too long") || contains_ci(message, "exceed context limit")
}

/// Whether `message` says the account, not the request, is walled off: a
/// spend limit the organization set ("You have reached your specified API
/// usage limits", a 400 per docs/api/errors), the tier's monthly cap ("You
/// have reached your API usage limits") or no credit left ("Your credit
/// balance is too low"). Any route on another account can answer, so these
/// are `quota_exhausted` (route-scoped), never `bad_request`.
fn is_account_wall(message: &str) -> bool {
    const PHRASES: &[&str] = &["api usage limits", "credit balance is too low"];
    PHRASES.iter().any(|phrase| contains_ci(message, phrase))
}

#[derive(Deserialize)]
struct AnthropicEnvelope<'a> {
    #[serde(borrow)]
    error: AnthropicError<'a>,
}

#[derive(Deserialize)]
struct AnthropicError<'a> {
    #[serde(borrow, rename = "type")]
    ty: Cow<'a, str>,
    #[serde(borrow, default)]
    message: Option<Text<'a>>,
    #[serde(borrow, default)]
    details: Option<AnthropicDetails<'a>>,
}

/// `error.details`: `error_code` names what the type alone does not (the
/// SDKs' `EnforcedSpendLimitReachedError` is read from it).
#[derive(Deserialize)]
struct AnthropicDetails<'a> {
    #[serde(borrow, default)]
    error_code: Option<Text<'a>>,
}

pub(super) fn parse_error(body: &[u8]) -> Option<Declared<'_>> {
    let envelope: AnthropicEnvelope<'_> = from_bytes(body).ok()?;
    let error = envelope.error;
    Some(Declared {
        error_type: Some(error.ty),
        error_code: error.details.and_then(|d| d.error_code).map(|t| t.0),
        message: error.message.map(|t| t.0),
        ..Declared::default()
    })
}

// The unary answer: `{"type":"message","content":[…],"stop_reason","usage"}`.

// Read member by member ([`later_wins!`](crate::later_wins)): a member
// named twice is the later one, as the SDKs read it.
crate::later_wins! {
    struct Message<'a> {
        ty: Option<Text<'a>> = "type",
        content: AnyAnswer<ContentBlock<'a>> = "content",
        stop_reason: Option<Text<'a>> = "stop_reason",
        usage: Option<UsageFields> = "usage",
    }
}

crate::later_wins! {
    struct ContentBlock<'a> {
        ty: Text<'a> = "type" required,
        text: Presence = "text",
    }
}

impl Part for ContentBlock<'_> {
    fn is_answer(&self) -> bool {
        match block(&self.ty.0) {
            Block::Text => self.text.0,
            Block::Thinking => false,
            Block::Answer => true,
        }
    }
}

/// Checks a messages answer.
pub(super) fn check_answer(body: &[u8]) -> AnswerCheck {
    let message = match from_bytes::<Message<'_>>(body) {
        Ok(message) => message,
        Err(error) => return unreadable(error),
    };
    if message.ty.as_ref().is_none_or(|ty| ty.0 != "message") {
        return AnswerCheck::OtherShape;
    }
    let finish = declared_finish(message.stop_reason, finish_kind);
    // Bedrock's `"amazon-bedrock-guardrailAction": "INTERVENED"` is not
    // read: a guardrail that only masked a detail (PII anonymised)
    // intervened too, and its answer is the model's.
    let policy = finish
        .as_ref()
        .and_then(|(kind, reason)| finish_failure(*kind, &reason.0));
    verdict(policy, message.content.0, finish, usage_of(message.usage))
}
