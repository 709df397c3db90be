//! What the loopback suites that talk to seawall-chaos in every wire format
//! share: the path each provider answers on and a one-question streamed
//! request in each provider's shape.

use seawall_chaos::{ChaosHandle, ChaosServer};
use seawall_core::provider::Provider;
use serde_json::{Value, json};

/// The path `provider` answers a streamed request on.
pub(crate) fn path(provider: Provider) -> &'static str {
    match provider {
        Provider::Anthropic => "/v1/messages",
        Provider::Gemini => "/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
        Provider::OpenAiResponses => "/v1/responses",
        _ => "/v1/chat/completions",
    }
}

/// One streamed question in `provider`'s request shape.
pub(crate) fn conversation(provider: Provider) -> Value {
    match provider {
        Provider::Anthropic => json!({"model": "claude-x", "max_tokens": 1024, "stream": true,
            "messages": [{"role": "user", "content": "Count."}]}),
        Provider::Gemini => json!({"contents": [{"role": "user", "parts": [{"text": "Count."}]}]}),
        Provider::OpenAiResponses => json!({"model": "gpt-x", "stream": true, "input": "Count."}),
        _ => json!({"model": "gpt-x", "stream": true,
            "messages": [{"role": "user", "content": "Count."}]}),
    }
}

/// A fault server on a free loopback port.
pub(crate) async fn chaos() -> ChaosHandle {
    ChaosServer::builder().start().await.unwrap()
}
