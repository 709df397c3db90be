//! Gemini `generateContent`, `streamGenerateContent?alt=sse`, and
//! `streamGenerateContent` without `alt=sse`: the same chunks as elements of
//! one JSON array written over time.

use serde_json::{Value, json};

use super::{Ctx, Finish, format_delay, token_text};
use crate::fault::{StatusFault, StatusKind};

pub(super) const STREAM_ERROR: &str = "data: {\"error\":{\"code\":500,\"message\":\"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting\",\"status\":\"INTERNAL\"}}\r\n\r\n";

fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "STOP",
        Finish::Length => "MAX_TOKENS",
        Finish::Refusal => "SAFETY",
    }
}

fn usage(ctx: &Ctx, tokens: u32) -> String {
    format!(
        r#""usageMetadata":{{"promptTokenCount":{},"candidatesTokenCount":{tokens},"totalTokenCount":{}}}"#,
        ctx.prompt_tokens,
        u64::from(ctx.prompt_tokens) + u64::from(tokens)
    )
}

fn frame(ctx: &Ctx, candidate: &str, usage: Option<String>) -> String {
    let usage = usage.map(|u| format!(",{u}")).unwrap_or_default();
    format!(
        "data: {{\"candidates\":[{candidate}]{usage},\"modelVersion\":{},\"responseId\":\"{}\"}}\r\n\r\n",
        ctx.model_json, ctx.id
    )
}

fn text_candidate(text: &str, finish: Option<Finish>) -> String {
    let finish = finish
        .map(|f| format!(",\"finishReason\":\"{}\"", finish_reason(f)))
        .unwrap_or_default();
    format!(r#"{{"content":{{"parts":[{{"text":"{text}"}}],"role":"model"}}{finish},"index":0}}"#)
}

/// A frame whose part is a `functionCall`.
pub(super) fn tool_call_frame(ctx: &Ctx) -> String {
    frame(
        ctx,
        r#"{"content":{"parts":[{"functionCall":{"name":"lookup","args":{"q":"w"}}}],"role":"model"},"index":0}"#,
        None,
    )
}

pub(super) fn role_frame(ctx: &Ctx) -> String {
    frame(ctx, &text_candidate("", None), None)
}

/// Token `i`, the `count`th this answer sends; when the finish marker
/// rides on it, the frame also carries the usage: the tokens this answer
/// generated (a continuation's start after 1).
pub(super) fn token_frame(ctx: &Ctx, i: u32, count: u32, finish: Option<Finish>) -> String {
    frame(
        ctx,
        &text_candidate(&token_text(i), finish),
        finish.map(|_| usage(ctx, count)),
    )
}

pub(super) fn finish_frame(ctx: &Ctx, finish: Finish, tokens: u32) -> String {
    let candidate = if finish == Finish::Refusal {
        r#"{"finishReason":"SAFETY","index":0,"safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]}"#.to_owned()
    } else {
        text_candidate("", Some(finish))
    };
    frame(ctx, &candidate, Some(usage(ctx, tokens)))
}

pub(super) fn unary_parts(ctx: &Ctx, finish: Finish, tokens: u32) -> (String, String) {
    let prefix = r#"{"candidates":[{"content":{"parts":[{"text":""#.to_owned();
    let suffix = format!(
        r#""}}],"role":"model"}},"finishReason":"{}","index":0}}],{},"modelVersion":{},"responseId":"{}"}}"#,
        finish_reason(finish),
        usage(ctx, tokens),
        ctx.model_json,
        ctx.id
    );
    (prefix, suffix)
}

/// Where a JSON-array stream stands: whether its `[` went out, and how
/// many elements followed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ArrayWriter {
    opened: bool,
    elements: u32,
}

impl ArrayWriter {
    /// The bytes of the JSON-array stream for `sse`, one frame of the SSE
    /// stream (`data: {…}\r\n\r\n`, possibly cut short by a fault; a
    /// comment is a keep-alive and becomes blank space), and the closing
    /// `]` when `close`. Elements are separated the way Gemini does it:
    /// `[{…}\r\n,{…}\r\n]`.
    pub(crate) fn piece(&mut self, sse: &[u8], close: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(sse.len() + 4);
        if !self.opened {
            self.opened = true;
            out.push(b'[');
        }
        match sse.strip_prefix(b"data: ") {
            Some(data) => {
                if self.elements > 0 {
                    out.extend_from_slice(b"\r\n,");
                }
                self.elements += 1;
                out.extend_from_slice(data.strip_suffix(b"\r\n\r\n").unwrap_or(data));
            }
            None if sse.is_empty() => {}
            None => out.extend_from_slice(b"\r\n"),
        }
        if close {
            out.extend_from_slice(b"\r\n]");
        }
        out
    }
}

fn status_name(code: u16) -> &'static str {
    match code {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        c if c >= 500 => "INTERNAL",
        _ => "FAILED_PRECONDITION",
    }
}

fn quota_failure(model: &str, quota_id: &str, metric: &str, value: &str) -> Value {
    json!({
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{
            "quotaMetric": metric,
            "quotaId": quota_id,
            "quotaDimensions": {"location": "global", "model": model},
            "quotaValue": value,
        }]
    })
}

pub(super) fn error_body(model: &str, fault: &StatusFault) -> Value {
    let mut details = Vec::new();
    let message = match fault.kind {
        Some(StatusKind::InsufficientQuota) => {
            details.push(quota_failure(
                model,
                "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                "50",
            ));
            "You exceeded your current quota, please check your plan and billing details. For more \
             information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
                .to_owned()
        }
        Some(StatusKind::TooLargeTpm) => {
            details.push(quota_failure(
                model,
                "GenerateContentInputTokensPerModelPerMinute-FreeTier",
                "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
                "250000",
            ));
            "You exceeded your current quota, please check your plan and billing details.".to_owned()
        }
        Some(StatusKind::ContextLength) => {
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
                .to_owned()
        }
        Some(StatusKind::Refusal) => "The request was blocked due to SAFETY.".to_owned(),
        Some(StatusKind::BadArgs) => {
            "Invalid JSON payload received. Unknown name \"contentz\": Cannot find field.".to_owned()
        }
        Some(StatusKind::Overloaded) => "The model is overloaded. Please try again later.".to_owned(),
        Some(StatusKind::Auth) => "API key not valid. Please pass a valid API key.".to_owned(),
        Some(StatusKind::NotFound) => format!(
            "models/{model} is not found for API version v1beta, or is not supported for generateContent."
        ),
        None => match fault.code {
            429 => {
                details.push(quota_failure(
                    model,
                    "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                    "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                    "10",
                ));
                "You exceeded your current quota, please check your plan and billing details.".to_owned()
            }
            503 => "The model is overloaded. Please try again later.".to_owned(),
            500 => "An internal error has occurred. Please retry or report in \
                    https://developers.generativeai.google/guide/troubleshooting"
                .to_owned(),
            504 => "Deadline expired before operation could complete.".to_owned(),
            code => format!("The request failed with status {code}."),
        },
    };
    if let Some(ms) = fault.retry_delay_ms() {
        details.push(json!({
            "@type": "type.googleapis.com/google.rpc.RetryInfo",
            "retryDelay": format_delay(ms),
        }));
    }
    let mut error =
        json!({"code": fault.code, "message": message, "status": status_name(fault.code)});
    if !details.is_empty() {
        error["details"] = Value::Array(details);
    }
    json!({ "error": error })
}

pub(super) fn rejection_body(status: u16, message: &str) -> Value {
    json!({"error": {"code": status, "message": message, "status": status_name(status)}})
}
