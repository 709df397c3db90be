//! Errors as the servers that speak OpenAI's wire send them, read by
//! OpenAI's table: each body is in the shape its server's source or
//! documentation shows, with the wording quoted there; the token counts
//! and ids in them are illustrative.
//!
//! - Groq: "If flex capacity is unavailable, requests will fail quickly
//!   with status `498` and error `capacity_exceeded`. Add jittered backoff
//!   and retries to smooth spikes." (console.groq.com/docs/flex-processing);
//!   its message here is illustrative, the documentation names only the
//!   status and the code. Its 429 on tokens per day says "Please try
//!   again in 6m 11.52s." (as quoted whole in strdtime.com's article 447,
//!   "Groq AI Model Error 429 Rate Limit Exceeded").
//! - llama.cpp's server: `format_error_response` names
//!   `ERROR_TYPE_EXCEED_CONTEXT_SIZE` `exceed_context_size_error`, code 400,
//!   with `n_prompt_tokens` and `n_ctx` beside it; the message "request (%d
//!   tokens) exceeds the available context size (%d tokens), try
//!   increasing it" (`tools/server/server-context.cpp`).
//! - vLLM: its input processor's "The {prompt_type} prompt (length N) is
//!   longer than the maximum model length of M." and "… plus the number of
//!   requested output tokens (at least 1) is longer than the maximum model
//!   length of M." (`vllm/v1/engine/input_processor.py`), answered 400 as
//!   a `BadRequestError`; its older "This model's maximum context length
//!   is N tokens" is OpenAI's own wording.
//! - SGLang: "The input (N tokens) is longer than the model's context
//!   length (M tokens)." (`python/sglang/srt/managers/tokenizer_manager.py`),
//!   answered 400 as a `BadRequestError`.

use std::time::{Duration, SystemTime};

use seawall_core::hint::RetryHint;
use seawall_core::provider::{ErrorContext, Provider, QuotaWall, classify_error};
use seawall_core::{Action, Class, Code, Failure};

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_756_000_000)
}

/// What OpenAI's table reads from `body`, answered with `status` (`None`:
/// an error inside a stream).
fn read(status: Option<u16>, body: &str) -> Failure {
    let cx = ErrorContext {
        status,
        hint: RetryHint::default(),
        quota_wall: QuotaWall::default(),
        now: now(),
    };
    classify_error(Provider::OpenAi, body.as_bytes(), cx)
}

fn verdict(f: &Failure) -> (Class, Code, Action) {
    (f.class(), f.code(), f.action())
}

/// Groq's flex tier at capacity is a blip to wait out, as an overloaded
/// server is: read by its status, or by its code where no status is seen.
#[test]
fn groq_flex_capacity_is_overloaded_and_retried() {
    let overloaded = (Class::Transient, Code::Overloaded, Action::Retry);
    let body = r#"{"error":{"message":"Flex tier capacity exceeded. This model is at capacity, please try again later.","code":"capacity_exceeded"}}"#;
    assert_eq!(verdict(&read(Some(498), body)), overloaded);
    // The status alone: a body a proxy replaced, or none at all.
    assert_eq!(verdict(&read(Some(498), "")), overloaded);
    assert_eq!(verdict(&read(Some(498), "<html>498</html>")), overloaded);
    // The code alone: inside a stream, and echoed as a status there.
    assert_eq!(verdict(&read(None, body)), overloaded);
    let echoed = r#"{"error":{"message":"capacity","type":null,"code":498}}"#;
    assert_eq!(verdict(&read(None, echoed)), overloaded);
    // The provider's words are kept.
    let f = read(Some(498), body);
    assert_eq!(f.provider_code(), Some("capacity_exceeded"));
    assert_eq!(f.status(), Some(498));
}

/// A prompt past the context window, as llama.cpp, vLLM and SGLang word
/// it, is `context_too_long` (the fallback for a longer window fires),
/// not a plain `bad_request`.
#[test]
fn compatible_servers_context_overflows_are_context_too_long() {
    let too_long = (Class::Permanent, Code::ContextTooLong, Action::Surface);
    for (server, body) in [
        (
            "llama.cpp",
            r#"{"error":{"code":400,"message":"request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9412,"n_ctx":8192}}"#,
        ),
        // The type decides whatever the wording (other builds say "request
        // (N tokens) exceeds context size (M tokens)" or "input (N tokens)
        // is larger than the max context size (M tokens). skipping").
        (
            "llama.cpp, other wording",
            r#"{"error":{"code":400,"message":"input (9412 tokens) is larger than the max context size (8192 tokens). skipping","type":"exceed_context_size_error","n_prompt_tokens":9412,"n_ctx":8192}}"#,
        ),
        // The wording decides where a proxy rewrote the type.
        (
            "llama.cpp behind a proxy",
            r#"{"error":{"message":"request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"invalid_request_error","param":null,"code":null}}"#,
        ),
        (
            "vLLM",
            r#"{"error":{"message":"The decoder prompt (length 9412) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}}"#,
        ),
        (
            "vLLM, no room to answer",
            r#"{"object":"error","message":"The decoder prompt (length 8192) plus the number of requested output tokens (at least 1) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens (prompt + requested output tokens).","type":"BadRequestError","param":null,"code":400}"#,
        ),
        (
            "vLLM, older",
            r#"{"object":"error","message":"This model's maximum context length is 8192 tokens. However, you requested 9412 tokens (9156 in the messages, 256 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
        ),
        (
            "SGLang",
            r#"{"object":"error","message":"The input (9412 tokens) is longer than the model's context length (8192 tokens).","type":"BadRequestError","param":null,"code":400}"#,
        ),
    ] {
        assert_eq!(verdict(&read(Some(400), body)), too_long, "{server}");
        // Inside a stream, with no status of its own.
        assert_eq!(verdict(&read(None, body)), too_long, "{server} in a stream");
    }
}

/// Only the servers' overflow wording counts: a 400 that merely speaks of
/// the context, or of a length, is the request's other fault.
#[test]
fn a_message_that_mentions_the_context_is_not_an_overflow() {
    let bad_request = (Class::Permanent, Code::BadRequest, Action::Surface);
    for message in [
        "Invalid value for 'context': expected a string.",
        "context window parameter is not supported by this model",
        "the available context size could not be read",
        "'max_tokens' must be at least 1, got 0.",
        "The prompt is longer than allowed for a tool description",
        "messages: the model's context length setting is invalid",
    ] {
        let body = format!(
            r#"{{"error":{{"message":"{message}","type":"invalid_request_error","param":null,"code":null}}}}"#
        );
        assert_eq!(verdict(&read(Some(400), &body)), bad_request, "{message}");
    }
}

/// Groq's rate-limit message spaces the parts of its wait ("Please try
/// again in 6m 11.52s."): the whole wait is read, so a wait past the quota
/// wall is a wall with its reset, not a minute's rate limit. Groq sends
/// `retry-after` with its own 429s; the message decides where nothing
/// else says (a proxy that drops the header, an error inside a stream).
#[test]
fn groq_spaced_waits_are_read_whole() {
    let body = |wait: &str| {
        format!(
            r#"{{"error":{{"message":"Rate limit reached for model `openai/gpt-oss-20b` in organization org_01 service tier `on_demand` on tokens per day (TPD): Limit 200000, Used 199336, Requested 1524. Please try again in {wait}. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing","type":"tokens","code":"rate_limit_exceeded"}}}}"#
        )
    };
    let f = read(Some(429), &body("6m 11.52s"));
    let wait = Duration::from_secs_f64(6.0 * 60.0 + 11.52);
    assert_eq!(
        (f.class(), f.code(), f.reset_at()),
        (Class::Permanent, Code::QuotaExhausted, Some(now() + wait))
    );
    // Past the 60 s wall only when read whole: "1m" alone is 60 s.
    let f = read(Some(429), &body("1m 5.5s"));
    assert_eq!(
        (f.code(), f.retry_after()),
        (Code::QuotaExhausted, Some(Duration::from_millis(65_500)))
    );
    assert_eq!(f.reset_at(), Some(now() + Duration::from_millis(65_500)));
}
