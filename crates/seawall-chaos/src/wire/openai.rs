//! OpenAI chat completions.

use serde_json::{Value, json};

use super::{Ctx, Finish, REFUSAL_TEXT, format_delay, token_text};
use crate::fault::{StatusFault, StatusKind};

/// `created` of every response: fixed, so bodies are byte-for-byte reproducible.
const CREATED: u64 = 1_700_000_000;

pub(super) const STREAM_ERROR: &str = "data: {\"error\":{\"message\":\"The server had an error while processing your request. Sorry about that!\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n";

fn chunk(ctx: &Ctx, choice: &str) -> String {
    format!(
        "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"created\":{CREATED},\"model\":{},\"choices\":[{choice}]}}\n\n",
        ctx.id, ctx.model_json
    )
}

pub(super) fn role_chunk(ctx: &Ctx) -> String {
    chunk(
        ctx,
        r#"{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}"#,
    )
}

pub(super) fn token_chunk(ctx: &Ctx, i: u32) -> String {
    chunk(
        ctx,
        &format!(
            r#"{{"index":0,"delta":{{"content":"{}"}},"logprobs":null,"finish_reason":null}}"#,
            token_text(i)
        ),
    )
}

/// A tool-call delta: the call opens with its name and empty arguments.
pub(super) fn tool_call_chunk(ctx: &Ctx) -> String {
    chunk(
        ctx,
        r#"{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_chaos","type":"function","function":{"name":"lookup","arguments":""}}]},"logprobs":null,"finish_reason":null}"#,
    )
}

/// A refusal ends in `stop`: the model declined in `refusal`, nothing cut
/// it (`content_filter` is the service's filter, another story).
fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop | Finish::Refusal => "stop",
        Finish::Length => "length",
    }
}

fn usage(ctx: &Ctx, tokens: u32) -> String {
    format!(
        r#"{{"prompt_tokens":{},"completion_tokens":{tokens},"total_tokens":{}}}"#,
        ctx.prompt_tokens,
        u64::from(ctx.prompt_tokens) + u64::from(tokens)
    )
}

pub(super) fn finish_chunks(ctx: &Ctx, finish: Finish, tokens: u32) -> String {
    let mut out = String::new();
    if finish == Finish::Refusal {
        out += &chunk(
            ctx,
            &format!(
                r#"{{"index":0,"delta":{{"refusal":"{REFUSAL_TEXT}"}},"logprobs":null,"finish_reason":null}}"#
            ),
        );
    }
    out += &chunk(
        ctx,
        &format!(
            r#"{{"index":0,"delta":{{}},"logprobs":null,"finish_reason":"{}"}}"#,
            finish_reason(finish)
        ),
    );
    if ctx.include_usage {
        out += &format!(
            "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"created\":{CREATED},\"model\":{},\"choices\":[],\"usage\":{}}}\n\n",
            ctx.id,
            ctx.model_json,
            usage(ctx, tokens)
        );
    }
    out += "data: [DONE]\n\n";
    out
}

/// The answer around its text. A refusal with no text before it has
/// `"content": null`, as OpenAI sends it; the text between the parts is
/// then empty.
pub(super) fn unary_parts(ctx: &Ctx, finish: Finish, tokens: u32) -> (String, String) {
    let refused = finish == Finish::Refusal;
    let (open, close) = if refused && tokens == 0 {
        ("", "null")
    } else {
        ("\"", "\"")
    };
    let prefix = format!(
        r#"{{"id":"{}","object":"chat.completion","created":{CREATED},"model":{},"choices":[{{"index":0,"message":{{"role":"assistant","content":{open}"#,
        ctx.id, ctx.model_json
    );
    let refusal = if refused {
        format!("\"{REFUSAL_TEXT}\"")
    } else {
        "null".to_owned()
    };
    let suffix = format!(
        r#"{close},"refusal":{refusal}}},"logprobs":null,"finish_reason":"{}"}}],"usage":{}}}"#,
        finish_reason(finish),
        usage(ctx, tokens)
    );
    (prefix, suffix)
}

fn rate_limit_message(model: &str, fault: &StatusFault) -> String {
    let delay = format_delay(fault.retry_delay_ms().unwrap_or(1_574));
    format!(
        "Rate limit reached for {model} in organization org-chaos on requests per min (RPM): \
         Limit 500, Used 500, Requested 1. Please try again in {delay}. \
         Visit https://platform.openai.com/account/rate-limits to learn more."
    )
}

pub(super) fn error_body(model: &str, fault: &StatusFault) -> Value {
    // (message, type, param, code)
    let (message, kind, param, code): (String, &str, Option<&str>, Option<&str>) = match (fault.kind, fault.code) {
        (Some(StatusKind::InsufficientQuota), _) => (
            "You exceeded your current quota, please check your plan and billing details. For more \
             information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
                .to_owned(),
            "insufficient_quota",
            None,
            Some("insufficient_quota"),
        ),
        (Some(StatusKind::ContextLength), _) => (
            "This model's maximum context length is 128000 tokens. However, your messages resulted in \
             130000 tokens. Please reduce the length of the messages."
                .to_owned(),
            "invalid_request_error",
            Some("messages"),
            Some("context_length_exceeded"),
        ),
        (Some(StatusKind::TooLargeTpm), _) => (
            format!(
                "Request too large for {model} in organization org-chaos on tokens per min (TPM): \
                 Limit 30000, Requested 50000. The input or output tokens must be reduced in order to \
                 run successfully. Visit https://platform.openai.com/account/rate-limits to learn more."
            ),
            "tokens",
            None,
            Some("rate_limit_exceeded"),
        ),
        (Some(StatusKind::Refusal), _) => (
            "Your request was rejected as a result of our safety system.".to_owned(),
            "invalid_request_error",
            None,
            Some("content_policy_violation"),
        ),
        (Some(StatusKind::BadArgs), _) => (
            "Invalid value for 'messages': expected an array of message objects.".to_owned(),
            "invalid_request_error",
            Some("messages"),
            None,
        ),
        (Some(StatusKind::Overloaded), _) | (None, 503) => (
            "The engine is currently overloaded, please try again later.".to_owned(),
            "server_error",
            None,
            None,
        ),
        (Some(StatusKind::Auth), _) | (None, 401) => (
            "Incorrect API key provided: sk-chaos****. You can find your API key at \
             https://platform.openai.com/account/api-keys."
                .to_owned(),
            "invalid_request_error",
            None,
            Some("invalid_api_key"),
        ),
        (Some(StatusKind::NotFound), _) | (None, 404) => (
            format!("The model `{model}` does not exist or you do not have access to it."),
            "invalid_request_error",
            None,
            Some("model_not_found"),
        ),
        (None, 429) => (rate_limit_message(model, fault), "requests", None, Some("rate_limit_exceeded")),
        (None, 403) => (
            "You are not allowed to sample from this model.".to_owned(),
            "invalid_request_error",
            None,
            None,
        ),
        (None, 400) => (
            "Invalid request: chaos injected a bad request.".to_owned(),
            "invalid_request_error",
            None,
            None,
        ),
        (None, 500) => (
            "The server had an error while processing your request. Sorry about that!".to_owned(),
            "server_error",
            None,
            None,
        ),
        (None, code) if code >= 500 => (
            format!("Bad gateway or upstream error ({code})."),
            "server_error",
            None,
            None,
        ),
        (None, code) => (
            format!("The request failed with status {code}."),
            "invalid_request_error",
            None,
            None,
        ),
    };
    json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}

pub(super) fn rejection_body(status: u16, code: &str, message: &str) -> Value {
    let kind = if status >= 500 {
        "server_error"
    } else {
        "invalid_request_error"
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}
