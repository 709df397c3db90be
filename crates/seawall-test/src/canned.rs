//! Canned provider requests and answers: the smallest bodies each wire
//! format accepts, as the suites send and expect them.

/// An OpenAI chat completions request that asks for a stream.
pub const OPENAI_STREAM_REQUEST: &str =
    r#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
/// An OpenAI chat completions request for one answer.
pub const OPENAI_UNARY_REQUEST: &str =
    r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#;
/// An Anthropic messages request for one answer.
pub const ANTHROPIC_UNARY_REQUEST: &str =
    r#"{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}"#;
/// A Gemini generateContent request (streamed or not by its path).
pub const GEMINI_REQUEST: &str = r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#;

/// An OpenAI stream's first event: the assistant role, no content.
pub const OPENAI_ROLE_EVENT: &str = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
/// An OpenAI stream's finishing event: `finish_reason: stop`.
pub const OPENAI_STOP_EVENT: &str = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n";
/// An OpenAI stream's last line.
pub const OPENAI_DONE_EVENT: &str = "data: [DONE]\n\n";

/// An OpenAI stream event carrying `text` as content.
pub fn openai_delta_event(text: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
        serde_json::Value::from(text)
    )
}
