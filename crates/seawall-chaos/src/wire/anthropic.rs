//! Anthropic messages.

use serde_json::{Value, json};

use super::{Ctx, Finish, format_delay, token_text};
use crate::fault::{StatusFault, StatusKind};

pub(super) const PING: &str = "event: ping\ndata: {\"type\":\"ping\"}\n\n";

pub(super) const STREAM_ERROR: &str = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";

const BLOCK_START: &str = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";

const BLOCK_STOP: &str =
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n";

/// A `tool_use` block opens and its input starts streaming, after `sent`
/// text tokens of this stream. The SDKs' accumulators (anthropic-sdk-python's
/// `accumulate_event`) append a block per `content_block_start` and index
/// deltas and stops by position, so, as the API does: the text block (index
/// 0) is closed only when this stream opened it, and the tool block takes
/// the next index — 0 when no text was sent (`tokens=0`, or a resumed
/// continuation that sent nothing before the call).
pub(super) fn tool_call(sent: u32) -> String {
    let (stop, index) = if sent > 0 { (BLOCK_STOP, 1) } else { ("", 0) };
    format!(
        "{stop}event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{index},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"toolu_chaos\",\"name\":\"lookup\",\"input\":{{}}}}}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{{\\\"q\\\": \"}}}}\n\n"
    )
}

pub(super) fn message_start(ctx: &Ctx) -> String {
    format!(
        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"{}\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":{},\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{{\"input_tokens\":{},\"output_tokens\":1}}}}}}\n\n",
        ctx.id, ctx.model_json, ctx.prompt_tokens
    )
}

/// Token `i`, after `sent` earlier tokens of this stream. The first one the
/// stream carries opens the text block (and a ping follows it, as the API
/// does): token 1 of a fresh answer, or `w{K+1}` of one resumed after a prefill.
pub(super) fn token_delta(i: u32, sent: u32) -> String {
    let delta = format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{}\"}}}}\n\n",
        token_text(i)
    );
    if sent == 0 {
        format!("{BLOCK_START}{PING}{delta}")
    } else {
        delta
    }
}

fn stop_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "end_turn",
        Finish::Length => "max_tokens",
        Finish::Refusal => "refusal",
    }
}

pub(super) fn finish_events(finish: Finish, tokens: u32) -> String {
    let block_stop = if tokens > 0 { BLOCK_STOP } else { "" };
    format!(
        "{block_stop}event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{}\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{tokens}}}}}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n",
        stop_reason(finish)
    )
}

pub(super) fn unary_parts(ctx: &Ctx, finish: Finish, tokens: u32) -> (String, String) {
    let prefix = format!(
        r#"{{"id":"{}","type":"message","role":"assistant","model":{},"content":[{{"type":"text","text":""#,
        ctx.id, ctx.model_json
    );
    let suffix = format!(
        r#""}}],"stop_reason":"{}","stop_sequence":null,"usage":{{"input_tokens":{},"output_tokens":{tokens}}}}}"#,
        stop_reason(finish),
        ctx.prompt_tokens
    );
    (prefix, suffix)
}

fn error_type(status: u16) -> &'static str {
    seawall_internal::anthropic_errors::type_of_status(status)
}

fn envelope(kind: &str, message: &str, request_id: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id})
}

pub(super) fn error_body(model: &str, request_id: &str, fault: &StatusFault) -> Value {
    let (kind, message): (&str, String) = match fault.kind {
        Some(StatusKind::InsufficientQuota) => (
            "billing_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing \
             to upgrade or purchase credits."
                .to_owned(),
        ),
        Some(StatusKind::ContextLength) => (
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum".to_owned(),
        ),
        Some(StatusKind::TooLargeTpm) => (
            "rate_limit_error",
            "This request would exceed your organization's rate limit of 30,000 input tokens per \
             minute. For details, refer to: https://docs.claude.com/en/api/rate-limits."
                .to_owned(),
        ),
        Some(StatusKind::Refusal) => (
            "invalid_request_error",
            "Output blocked by content filtering policy".to_owned(),
        ),
        Some(StatusKind::BadArgs) => ("invalid_request_error", "messages: Field required".to_owned()),
        Some(StatusKind::Overloaded) => ("overloaded_error", "Overloaded".to_owned()),
        Some(StatusKind::Auth) => ("authentication_error", "invalid x-api-key".to_owned()),
        Some(StatusKind::NotFound) => ("not_found_error", format!("model: {model}")),
        None => {
            let kind = error_type(fault.code);
            let message = match kind {
                "rate_limit_error" => {
                    let wait = fault
                        .retry_delay_ms()
                        .map(|ms| format!(" Please try again in {}.", format_delay(ms)))
                        .unwrap_or_default();
                    format!(
                        "This request would exceed the rate limit for your organization of 50 requests \
                         per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.{wait}"
                    )
                }
                "overloaded_error" => "Overloaded".to_owned(),
                "api_error" => "Internal server error".to_owned(),
                "timeout_error" => "Request timed out".to_owned(),
                "authentication_error" => "invalid x-api-key".to_owned(),
                "billing_error" => "Your credit balance is too low to access the Anthropic API.".to_owned(),
                "permission_error" => "Your API key does not have permission to use the specified resource.".to_owned(),
                "not_found_error" => format!("model: {model}"),
                "request_too_large" => "Request exceeds the maximum allowed number of bytes.".to_owned(),
                _ => format!("The request failed with status {}.", fault.code),
            };
            (kind, message)
        }
    };
    envelope(kind, &message, request_id)
}

pub(super) fn rejection_body(status: u16, message: &str, request_id: &str) -> Value {
    envelope(error_type(status), message, request_id)
}
