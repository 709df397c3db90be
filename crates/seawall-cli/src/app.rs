//! The application's request: one prompt, in each provider's wire format.
//!
//! `seawall replay` and the root loopback suites send the same request to a
//! chaos server; `seawall chat` shares the provider paths and bodies.

use bytes::Bytes;
use http_body_util::Full;
use seawall::core::provider::Provider;
use seawall_chaos::{FAULT_HEADER, REQUEST_ID_HEADER};
use serde_json::{Value, json};

/// What the application asks.
pub const PROMPT: &str = "Tell me the story of the seawall.";

/// The model the application asks for: `gpt-x` (chat completions and the
/// Responses API), `claude-x` or `gemini-x`.
pub const fn model(provider: Provider) -> &'static str {
    match provider {
        Provider::Anthropic => "claude-x",
        Provider::Gemini => "gemini-x",
        _ => "gpt-x",
    }
}

/// The path of `provider`'s generation endpoint for `model`, after the
/// base URL: `/v1/responses` for the Responses API; anything but it,
/// Anthropic and Gemini is OpenAI's chat completions.
pub fn path(provider: Provider, model: &str, stream: bool) -> String {
    match provider {
        Provider::OpenAiResponses => "/v1/responses".to_owned(),
        Provider::Anthropic => "/v1/messages".to_owned(),
        Provider::Gemini => format!(
            "/v1beta/models/{model}:{}",
            if stream {
                "streamGenerateContent?alt=sse"
            } else {
                "generateContent"
            }
        ),
        _ => "/v1/chat/completions".to_owned(),
    }
}

/// One user message, `prompt`, to `model` in `provider`'s request body.
/// The Responses API takes the prompt as its `input` string (no token limit
/// is set, so no `max_output_tokens`); anything but it, Anthropic and Gemini
/// is OpenAI's chat completions.
pub fn body(provider: Provider, model: &str, prompt: &str, stream: bool) -> Value {
    match provider {
        Provider::OpenAiResponses => json!({
            "model": model, "input": prompt, "stream": stream,
        }),
        Provider::Anthropic => json!({
            "model": model, "max_tokens": 1024, "stream": stream,
            "messages": [{"role": "user", "content": prompt}],
        }),
        Provider::Gemini => json!({
            "contents": [{"role": "user", "parts": [{"text": prompt}]}],
        }),
        // A stream asks for its usage, so the receipt shows billed tokens.
        _ if stream => json!({
            "model": model, "stream": true, "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": prompt}],
        }),
        _ => json!({
            "model": model, "stream": false,
            "messages": [{"role": "user", "content": prompt}],
        }),
    }
}

/// The conversation the application sends: [`PROMPT`] to [`model`].
pub fn conversation(provider: Provider, stream: bool) -> Value {
    body(provider, model(provider), PROMPT, stream)
}

/// The application's request carrying `body` to the chaos server at
/// `base`: tagged `id` in the journal, with `fault` (header syntax) on
/// every attempt no script overrides.
pub fn request(
    base: &str,
    provider: Provider,
    stream: bool,
    id: &str,
    fault: Option<&str>,
    body: &Value,
) -> http::Request<Full<Bytes>> {
    let uri = format!("{base}{}", path(provider, model(provider), stream));
    let mut builder = http::Request::post(uri)
        .header("content-type", "application/json")
        .header(REQUEST_ID_HEADER, id);
    if let Some(fault) = fault {
        builder = builder.header(FAULT_HEADER, fault);
    }
    builder
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a valid request")
}
