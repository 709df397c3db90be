//! Resuming an interrupted stream instead of restarting it.
//!
//! When a stream fails after content reached the caller, seawall never
//! replays it: the caller already showed the text. The failure carries an
//! [`Interrupted`] record with the delivered text. This module builds the
//! continuation request from the original request and that text, so the
//! user sees one answer, continued, and the provider bills the rest once.
//!
//! - OpenAI chat completions: the delivered text as a trailing `assistant`
//!   message.
//! - Anthropic messages: an assistant *prefill* (right-stripped: the API
//!   rejects a final assistant turn ending in white space), or, for models
//!   that refuse prefill, a `user` message asking to continue from the
//!   delivered text.
//! - Gemini: the delivered text as a trailing `model` turn.
//! - OpenAI Responses API: the delivered text as a trailing `assistant`
//!   item of `input` (a string `input` becomes one user item first).
//!
//! And a rule of thumb: below a few delivered tokens a restart is cheaper
//! and cleaner than a continuation ([`plan`]).
//!
//! ```
//! use seawall::resume::{continuation, AnthropicStyle};
//! use seawall::core::provider::Provider;
//! use serde_json::json;
//!
//! let original = json!({"model": "m", "max_tokens": 512, "stream": true,
//!     "messages": [{"role": "user", "content": "Count to ten."}]});
//! let next = continuation(Provider::Anthropic, &original, "one two three ", AnthropicStyle::Prefill).unwrap();
//! assert_eq!(next["messages"][1], json!({"role": "assistant", "content": "one two three"}));
//! ```

use seawall_core::Interrupted;
use seawall_core::provider::Provider;
use serde_json::{Value, json};

/// What to do with an interrupted stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// So little was delivered that starting over is cleaner (the caller
    /// discards the fragment).
    Restart,
    /// Continue from the delivered text.
    Resume,
}

/// The rule of thumb: `Restart` below `min_content_events` delivered
/// content events (or when the text was not reconstructed), `Resume` from
/// there on.
pub fn plan(interrupted: &Interrupted, min_content_events: u64) -> Decision {
    match &interrupted.delivered_text {
        Some(text)
            if !text.trim().is_empty() && interrupted.content_events >= min_content_events =>
        {
            Decision::Resume
        }
        _ => Decision::Restart,
    }
}

/// How to ask an Anthropic model to continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnthropicStyle {
    /// A trailing assistant turn the model continues (prefill).
    Prefill,
    /// A user turn quoting the delivered text, for models that refuse prefill.
    AskToContinue,
}

/// The request body could not be continued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeError {
    /// The original body has no `messages` (or `contents`) array.
    #[error("the original request has no `{0}` array to continue")]
    NoConversation(&'static str),
    /// The provider's requests cannot be continued by this helper.
    #[error("continuation is not supported for the {0} wire format")]
    Unsupported(&'static str),
}

/// The continuation request body: the original with the delivered text
/// appended in the provider's own way. Every other field (model, stream,
/// max tokens, tools) is kept as it was.
pub fn continuation(
    provider: Provider,
    original: &Value,
    delivered: &str,
    anthropic: AnthropicStyle,
) -> Result<Value, ResumeError> {
    let mut body = original.clone();
    let (key, turn) = match provider {
        Provider::OpenAi => (
            "messages",
            json!({"role": "assistant", "content": delivered}),
        ),
        Provider::Anthropic => match anthropic {
            AnthropicStyle::Prefill => (
                "messages",
                json!({"role": "assistant", "content": delivered.trim_end()}),
            ),
            AnthropicStyle::AskToContinue => (
                "messages",
                json!({"role": "user", "content": format!(
                    "Your previous answer was cut off. It ended with the text below. \
                     Continue exactly where it stops, without repeating any of it.\n\n{delivered}"
                )}),
            ),
        },
        Provider::Gemini => (
            "contents",
            json!({"role": "model", "parts": [{"text": delivered}]}),
        ),
        Provider::OpenAiResponses => {
            // `input` may be a plain string: the same conversation as one
            // user message, so it becomes that to take a second turn.
            if let Some(text) = body.get("input").and_then(Value::as_str) {
                let text = text.to_owned();
                body["input"] = json!([{"role": "user", "content": text}]);
            }
            ("input", json!({"role": "assistant", "content": delivered}))
        }
        Provider::Http => return Err(ResumeError::Unsupported("http")),
    };
    body.get_mut(key)
        .and_then(Value::as_array_mut)
        .ok_or(ResumeError::NoConversation(key))?
        .push(turn);
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_appends_an_assistant_item_to_input() {
        let original = json!({"model": "gpt-x", "stream": true, "input": "Count."});
        let next = continuation(
            Provider::OpenAiResponses,
            &original,
            "w1 w2",
            AnthropicStyle::Prefill,
        )
        .unwrap();
        assert_eq!(
            next["input"],
            json!([{"role": "user", "content": "Count."}, {"role": "assistant", "content": "w1 w2"}])
        );
    }

    #[test]
    fn openai_appends_an_assistant_message() {
        let original = json!({"model": "gpt-x", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
        let next = continuation(
            Provider::OpenAi,
            &original,
            "Hello the",
            AnthropicStyle::Prefill,
        )
        .unwrap();
        assert_eq!(next["messages"].as_array().unwrap().len(), 2);
        assert_eq!(
            next["messages"][1],
            json!({"role": "assistant", "content": "Hello the"})
        );
        assert_eq!(next["stream"], json!(true));
        assert_eq!(next["model"], json!("gpt-x"));
    }

    #[test]
    fn anthropic_prefill_is_right_stripped_and_the_fallback_asks() {
        let original = json!({"model": "c", "messages": [{"role": "user", "content": "hi"}]});
        let prefill = continuation(
            Provider::Anthropic,
            &original,
            "Hello  \n",
            AnthropicStyle::Prefill,
        )
        .unwrap();
        assert_eq!(prefill["messages"][1]["content"], json!("Hello"));
        let ask = continuation(
            Provider::Anthropic,
            &original,
            "Hello ",
            AnthropicStyle::AskToContinue,
        )
        .unwrap();
        assert_eq!(ask["messages"][1]["role"], json!("user"));
        assert!(
            ask["messages"][1]["content"]
                .as_str()
                .unwrap()
                .ends_with("Hello ")
        );
    }

    #[test]
    fn gemini_appends_a_model_turn_and_bad_bodies_are_errors() {
        let original = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
        let next =
            continuation(Provider::Gemini, &original, "Hel", AnthropicStyle::Prefill).unwrap();
        assert_eq!(next["contents"][1]["parts"][0]["text"], json!("Hel"));
        assert_eq!(
            continuation(
                Provider::OpenAi,
                &json!({"prompt": "x"}),
                "a",
                AnthropicStyle::Prefill
            ),
            Err(ResumeError::NoConversation("messages"))
        );
    }

    #[test]
    fn plan_restarts_small_fragments() {
        let mut interrupted = Interrupted::default();
        interrupted.delivered_text = Some("w1 w2".into());
        interrupted.content_events = 2;
        assert_eq!(plan(&interrupted, 20), Decision::Restart);
        interrupted.content_events = 400;
        assert_eq!(plan(&interrupted, 20), Decision::Resume);
        interrupted.delivered_text = None;
        assert_eq!(plan(&interrupted, 20), Decision::Restart);
    }
}
