//! The continuation request: the original request with the delivered text
//! appended in the provider's own way.
//!
//! - OpenAI chat completions: the delivered text as a trailing `assistant`
//!   message ([`OpenAiStyle::AskToContinue`], optionally followed by a
//!   `user` turn asking to continue), or, for OpenAI-compatible servers
//!   that continue a final assistant message (vLLM, SGLang), the same
//!   message with `continue_final_message: true` and
//!   `add_generation_prompt: false` ([`OpenAiStyle::ContinueFinalMessage`]).
//! - Anthropic messages: an assistant *prefill* (right-stripped: the API
//!   rejects a final assistant turn ending in white space), or, for models
//!   that refuse prefill, the delivered text as an `assistant` turn
//!   followed by a `user` turn asking to continue it
//!   ([`AnthropicStyle::AskToContinue`]).
//! - Gemini: the delivered text as a trailing `model` turn, or, for
//!   models that refuse a request ending with one, that turn followed by
//!   a `user` turn asking to continue ([`GeminiStyle`]).
//! - OpenAI Responses API: the delivered text as a trailing `assistant`
//!   item of `input` (a string `input` becomes one user item first). A
//!   background response (`"background": true`) whose connection was cut
//!   needs none: the layer retrieves the rest of its stored stream
//!   (`GET /responses/{id}?stream=true&starting_after=N`) and builds a
//!   continuation here only when the provider will not give it, or when
//!   the provider failed the response in the stream (`response.failed`,
//!   an `error` event), whose stored stream holds that failure again.
//!
//! Models often repeat the tail of what they were given; the layer trims
//! that overlap when it splices the continuation in.

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AnthropicStyle {
    /// A trailing assistant turn the model continues (prefill). A model
    /// that refuses prefill with a 400 (Claude 4.6 and later) is asked in
    /// a user turn on the next continuation of the same answer. Once the
    /// request's own route answers that user turn, the service remembers
    /// the refusal for that model on that route: its later answers for
    /// them ask in a user turn from their first continuation.
    #[default]
    Prefill,
    /// The delivered text as an assistant turn, then a user turn asking
    /// to continue it ([`CONTINUE_PROMPT`]), for models that refuse
    /// prefill. The text is not quoted in the user turn: after an agent's
    /// tool results that turn would merge into theirs (the API joins
    /// consecutive user turns), and text right after a `tool_result` is
    /// what Anthropic's "Handling stop reasons" guide names as the common
    /// cause of an empty `end_turn` answer — read here as the answer
    /// having been whole.
    AskToContinue,
}

/// How to ask an OpenAI chat-completions model to continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiStyle {
    /// The delivered text as a trailing assistant message; with
    /// `user_turn`, a user turn after it asking to continue without
    /// repeating. OpenAI itself answers such a conversation with a new
    /// message that often repeats the tail: the layer trims the overlap.
    AskToContinue {
        /// Add the user turn asking to continue.
        user_turn: bool,
    },
    /// The delivered text as a final assistant message the server
    /// continues in place (`continue_final_message: true`,
    /// `add_generation_prompt: false`: vLLM, SGLang and other
    /// OpenAI-compatible servers). Only for routes that say so. The
    /// message goes right-stripped (chat templates commonly trim it), and
    /// what such a server sends is what follows it: only the whitespace
    /// the delivered text ended with, written anew, is trimmed, never text
    /// that looks like a repeat.
    ContinueFinalMessage,
}

/// How to ask a Gemini model to continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GeminiStyle {
    /// The delivered text as a trailing `model` turn. A model that refuses
    /// a request ending with one (newer Gemini models answer it with a
    /// 400, "Requests ending with a model turn are not supported") is
    /// asked in a user turn on the next continuation of the same answer.
    /// Once the request's own route answers that user turn, the service
    /// remembers the refusal for that model on that route: its later
    /// answers for them ask in a user turn from their first continuation.
    #[default]
    ModelTurn,
    /// The delivered text as a `model` turn, then a `user` turn asking to
    /// continue it ([`CONTINUE_PROMPT`]).
    AskToContinue,
}

impl Default for OpenAiStyle {
    fn default() -> Self {
        OpenAiStyle::AskToContinue { user_turn: false }
    }
}

/// The continuation styles, per wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Styles {
    /// Anthropic messages.
    pub anthropic: AnthropicStyle,
    /// OpenAI chat completions.
    pub openai: OpenAiStyle,
    /// Gemini.
    pub gemini: GeminiStyle,
}

impl Styles {
    /// These styles with `provider`'s own model turn (an Anthropic prefill,
    /// a Gemini `model` turn last) replaced by a user turn asking to
    /// continue; the same styles for any other provider.
    pub(crate) fn asking_in_a_user_turn(mut self, provider: Provider) -> Styles {
        match provider {
            Provider::Anthropic => self.anthropic = AnthropicStyle::AskToContinue,
            Provider::Gemini => self.gemini = GeminiStyle::AskToContinue,
            _ => {}
        }
        self
    }

    /// Whether `provider`'s continuation ends with the model's own turn,
    /// which some models refuse with a 400.
    pub(crate) fn ends_with_model_turn(&self, provider: Provider) -> bool {
        match provider {
            Provider::Anthropic => self.anthropic == AnthropicStyle::Prefill,
            Provider::Gemini => self.gemini == GeminiStyle::ModelTurn,
            _ => false,
        }
    }
}

/// The user turn that asks an OpenAI model to continue. A cut can fall
/// right after the last word, before the finish: a model then has nothing
/// to add, and is asked to say so by answering nothing (which the layer
/// reads as the answer's end) rather than with a remark that would be
/// spliced into it. Anthropic's and Gemini's user turns are this one.
pub const CONTINUE_PROMPT: &str = "Your previous message was cut off. Continue exactly where it \
     stops, without repeating any of it. If it was already complete, reply with nothing.";

/// The request body could not be continued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The original body has no `messages` (or `contents`) array.
    #[error("the original request has no `{0}` array to continue")]
    NoConversation(&'static str),
    /// The provider's requests cannot be continued by this helper.
    #[error("continuation is not supported for the {0} wire format")]
    Unsupported(&'static str),
    /// The request's output budget (`max_tokens`, …) is spent by what was
    /// delivered: the original would have ended by now.
    #[error("the output budget is spent by the delivered text")]
    BudgetSpent,
    /// The request is one the layer never continues ([`never_resume`]'s
    /// reason: `n_choices`, `extended_thinking`, `structured_output`,
    /// `conversation`): a continuation would not be the rest of its answer.
    #[error("a request with {0} is never continued")]
    NeverResumed(&'static str),
}

/// The continuation request body: the original with the delivered text
/// appended in the provider's own way, the OpenAI style being the default
/// one. Every other field (model, stream, max tokens, tools) is kept as it
/// was.
pub fn continuation(
    provider: Provider,
    original: &Value,
    delivered: &str,
    anthropic: AnthropicStyle,
) -> Result<Value, ResumeError> {
    let styles = Styles {
        anthropic,
        ..Styles::default()
    };
    continuation_with(provider, original, delivered, &styles)
}

/// [`continuation`], with every style chosen.
pub fn continuation_with(
    provider: Provider,
    original: &Value,
    delivered: &str,
    styles: &Styles,
) -> Result<Value, ResumeError> {
    let mut body = original.clone();
    let mut extra = None;
    // Only whitespace delivered (a first delta "\n\n"): nothing visible
    // to continue. Asked in a user turn, the text goes in a turn before
    // the question, which Anthropic refuses with a 400 when it is
    // whitespace only ("text content blocks must contain non-whitespace
    // text": a final assistant turn alone may be). Left out, the question
    // would follow the user's own turn: merged into it by Anthropic (after
    // tool results, the empty `end_turn` the style avoids), two user turns
    // in a row that Gemini may refuse. The conversation goes as it was:
    // the answer starts over, and the layer trims the whitespace said
    // again.
    let nothing_visible = delivered.trim().is_empty();
    let mut as_it_was = false;
    let (key, turn) = match provider {
        Provider::OpenAi => {
            let mut turn = json!({"role": "assistant", "content": delivered});
            match styles.openai {
                OpenAiStyle::AskToContinue { user_turn } => {
                    if user_turn {
                        extra = Some(json!({"role": "user", "content": CONTINUE_PROMPT}));
                    }
                }
                OpenAiStyle::ContinueFinalMessage => {
                    // Chat templates commonly trim a message (Llama 3's
                    // `| trim`), and transformers then ends the prompt at
                    // the trimmed text ("The message has trailing spacing
                    // that was trimmed"), so the model writes that
                    // whitespace again; a template that keeps it does
                    // not. Sent right-stripped, the prompt ends the same
                    // under every template, and the layer trims only the
                    // whitespace said anew, as under an Anthropic prefill.
                    turn["content"] = Value::from(delivered.trim_end());
                    if let Some(object) = body.as_object_mut() {
                        object.insert("continue_final_message".into(), Value::Bool(true));
                        object.insert("add_generation_prompt".into(), Value::Bool(false));
                    }
                }
            }
            ("messages", turn)
        }
        Provider::Anthropic => match styles.anthropic {
            AnthropicStyle::Prefill => (
                "messages",
                json!({"role": "assistant", "content": delivered.trim_end()}),
            ),
            // The user turn follows the delivered text's own assistant
            // turn, as Gemini's does: the request still ends with a user
            // turn, and no text lands right after the tool results an
            // agent's last user turn holds.
            AnthropicStyle::AskToContinue => {
                as_it_was = nothing_visible;
                extra = Some(json!({"role": "user", "content": CONTINUE_PROMPT}));
                (
                    "messages",
                    json!({"role": "assistant", "content": delivered}),
                )
            }
        },
        Provider::Gemini => {
            // The user turn follows the delivered text's own model turn
            // rather than quoting it in a turn of its own: the Gemini API
            // may refuse two user turns in a row
            // ("Please ensure that multiturn requests alternate between
            // user and model"), and the question's turn is a user turn.
            if styles.gemini == GeminiStyle::AskToContinue {
                as_it_was = nothing_visible;
                extra = Some(json!({"role": "user", "parts": [{"text": CONTINUE_PROMPT}]}));
            }
            (
                "contents",
                json!({"role": "model", "parts": [{"text": delivered}]}),
            )
        }
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
    let turns = body
        .get_mut(key)
        .and_then(Value::as_array_mut)
        .ok_or(ResumeError::NoConversation(key))?;
    if !as_it_was {
        turns.push(turn);
        turns.extend(extra);
    }
    Ok(body)
}

/// Lowers the continuation's output budget (`max_tokens`,
/// `max_completion_tokens`, `max_output_tokens`, Gemini's
/// `maxOutputTokens`) by `spent`, the tokens the answer has at least used:
/// the caller's budget bounds the whole answer, not each piece of it.
/// False when nothing is left.
pub(crate) fn spend_budget(provider: Provider, body: &mut Value, spent: u64) -> bool {
    // Google's JSON APIs take the proto field names too
    // (`generation_config.max_output_tokens`).
    let keys: &[&str] = match provider {
        Provider::OpenAi => &["/max_completion_tokens", "/max_tokens"],
        Provider::Anthropic => &["/max_tokens"],
        Provider::OpenAiResponses => &["/max_output_tokens"],
        Provider::Gemini => &[
            "/generationConfig/maxOutputTokens",
            "/generationConfig/max_output_tokens",
            "/generation_config/maxOutputTokens",
            "/generation_config/max_output_tokens",
        ],
        Provider::Http => &[],
    };
    let mut left = true;
    for key in keys {
        if let Some(slot) = body.pointer_mut(key)
            && let Some(budget) = whole(provider, slot)
        {
            let rest = budget.saturating_sub(spent);
            left &= rest > 0;
            // A number, however the caller wrote it: every reader takes one.
            *slot = rest.into();
        }
    }
    left
}

/// A whole, non-negative number in a request member: an integer, one
/// written with a fraction (`1024.0`), or, for Gemini, either written as
/// a string (`"1024"`). Google reads request JSON under the proto3 JSON
/// mapping, where an integer field takes a number or a string holding it;
/// OpenAI refuses a string `n`, so no other provider's strings count.
fn whole(provider: Provider, value: &Value) -> Option<u64> {
    let of_float =
        |f: f64| (f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64).then_some(f as u64);
    match value {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().and_then(of_float)),
        Value::String(s) if provider == Provider::Gemini => s
            .parse::<u64>()
            .ok()
            .or_else(|| s.parse::<f64>().ok().and_then(of_float)),
        _ => None,
    }
}

/// Why a request must never be continued, whatever happens to its stream:
/// several choices (`n > 1`, `candidateCount > 1`: one body interleaves
/// them), Anthropic extended thinking (a prefill cannot carry the signed
/// thinking blocks the API requires before the text), or structured
/// output (a JSON schema or JSON mode: constrained decoding starts every
/// answer at the schema's start, so a continuation is a second object,
/// never the rest of the cut one).
pub fn never_resume(provider: Provider, original: &Value) -> Option<&'static str> {
    // A count written as a number with a fraction (`2.0`) counts too, and
    // Gemini's written as a string (`"2"`, see `whole`).
    let count = |v: Option<&Value>| {
        v.and_then(|v| v.as_f64().or_else(|| whole(provider, v).map(|n| n as f64)))
            .unwrap_or(1.0)
    };
    let config = google(original, "generationConfig", "generation_config");
    match provider {
        Provider::OpenAi if count(original.get("n")) > 1.0 => Some("n_choices"),
        Provider::Gemini
            if count(config.and_then(|c| google(c, "candidateCount", "candidate_count"))) > 1.0 =>
        {
            Some("n_choices")
        }
        Provider::Anthropic
            if original
                .get("thinking")
                .and_then(|t| t.get("type"))
                .and_then(Value::as_str)
                .is_some_and(|t| t != "disabled") =>
        {
            Some("extended_thinking")
        }
        // A stored conversation takes in every input and output item of a
        // response made in it: a continuation would write the question
        // again, and the cut answer, into it for good.
        Provider::OpenAiResponses if original.get("conversation").is_some_and(|c| !c.is_null()) => {
            Some("conversation")
        }
        _ if structured(provider, original) => Some("structured_output"),
        _ => None,
    }
}

/// Whether the request constrains its answer to JSON: OpenAI chat's
/// `response_format` (`json_schema`, `json_object`), the Responses API's
/// `text.format`, Anthropic's `output_config.format` (and the beta's
/// `output_format`), Gemini's `responseSchema`, `responseJsonSchema` or a
/// `responseMimeType` other than plain text.
fn structured(provider: Provider, original: &Value) -> bool {
    let json_type = |format: Option<&Value>| {
        format
            .and_then(|f| f.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|t| t != "text")
    };
    match provider {
        Provider::OpenAi => json_type(original.get("response_format")),
        Provider::OpenAiResponses => json_type(original.pointer("/text/format")),
        Provider::Anthropic => {
            original.pointer("/output_config/format").is_some()
                || original.get("output_format").is_some()
        }
        Provider::Gemini => {
            google(original, "generationConfig", "generation_config").is_some_and(|config| {
                google(config, "responseSchema", "response_schema").is_some()
                    || google(config, "responseJsonSchema", "response_json_schema").is_some()
                    || google(config, "responseMimeType", "response_mime_type")
                        .and_then(Value::as_str)
                        .is_some_and(|mime| mime != "text/plain")
            })
        }
        Provider::Http => false,
    }
}

/// A member of a Gemini request by its JSON name or its proto field name:
/// Google's JSON APIs accept both (`generationConfig` and
/// `generation_config`).
fn google<'a>(object: &'a Value, json_name: &str, proto_name: &str) -> Option<&'a Value> {
    object.get(json_name).or_else(|| object.get(proto_name))
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
    fn openai_styles_ask_or_continue_the_final_message() {
        let original = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let ask = Styles {
            openai: OpenAiStyle::AskToContinue { user_turn: true },
            ..Styles::default()
        };
        let next = continuation_with(Provider::OpenAi, &original, "w1", &ask).unwrap();
        assert_eq!(next["messages"][1]["role"], json!("assistant"));
        assert_eq!(
            next["messages"][2],
            json!({"role": "user", "content": CONTINUE_PROMPT})
        );
        let vllm = Styles {
            openai: OpenAiStyle::ContinueFinalMessage,
            ..Styles::default()
        };
        let next = continuation_with(Provider::OpenAi, &original, "w1 \n", &vllm).unwrap();
        assert_eq!(next["messages"].as_array().unwrap().len(), 2);
        assert_eq!(next["messages"][1]["content"], json!("w1"));
        assert_eq!(next["continue_final_message"], json!(true));
        assert_eq!(next["add_generation_prompt"], json!(false));
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
        assert_eq!(ask["messages"][1]["role"], json!("assistant"));
        assert_eq!(ask["messages"][1]["content"], json!("Hello "));
        assert_eq!(ask["messages"][2]["role"], json!("user"));
        assert_eq!(ask["messages"][2]["content"], json!(CONTINUE_PROMPT));
        assert_eq!(ask["messages"].as_array().unwrap().len(), 3);
    }

    /// A cut after whitespace only (a first delta `"\n\n"`) delivered
    /// nothing visible: asking to continue it would send a whitespace-only
    /// assistant (model) turn before the question, which Anthropic refuses
    /// with a 400 ("text content blocks must contain non-whitespace
    /// text"). The conversation goes as it was, without the question: the
    /// layer trims the whitespace said again.
    #[test]
    fn asking_to_continue_whitespace_sends_no_whitespace_turn() {
        let claude = json!({"model": "c", "messages": [{"role": "user", "content": "hi"}]});
        let ask = Styles::default().asking_in_a_user_turn(Provider::Anthropic);
        let next = continuation_with(Provider::Anthropic, &claude, "\n\n", &ask).unwrap();
        assert_eq!(next, claude);
        let gemini = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
        let ask = Styles::default().asking_in_a_user_turn(Provider::Gemini);
        let next = continuation_with(Provider::Gemini, &gemini, " \n", &ask).unwrap();
        assert_eq!(next, gemini);
        // Still a request with a conversation to take it.
        assert_eq!(
            continuation_with(Provider::Anthropic, &json!({"prompt": "x"}), "\n", &ask),
            Err(ResumeError::NoConversation("messages"))
        );
    }

    #[test]
    fn gemini_appends_a_model_turn_and_bad_bodies_are_errors() {
        let original = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
        let next =
            continuation(Provider::Gemini, &original, "Hel", AnthropicStyle::Prefill).unwrap();
        assert_eq!(next["contents"][1]["parts"][0]["text"], json!("Hel"));
        assert_eq!(next["contents"].as_array().unwrap().len(), 2);
        let ask = Styles {
            gemini: GeminiStyle::AskToContinue,
            ..Styles::default()
        };
        let next = continuation_with(Provider::Gemini, &original, "Hel", &ask).unwrap();
        assert_eq!(
            next["contents"][1],
            json!({"role": "model", "parts": [{"text": "Hel"}]})
        );
        assert_eq!(
            next["contents"][2],
            json!({"role": "user", "parts": [{"text": CONTINUE_PROMPT}]})
        );
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
    fn several_choices_and_thinking_are_never_resumed() {
        assert_eq!(
            never_resume(Provider::OpenAi, &json!({"n": 2})),
            Some("n_choices")
        );
        assert_eq!(never_resume(Provider::OpenAi, &json!({"n": 1})), None);
        assert_eq!(
            never_resume(Provider::OpenAi, &json!({"n": 2.0})),
            Some("n_choices")
        );
        assert_eq!(
            never_resume(
                Provider::Gemini,
                &json!({"generationConfig": {"candidateCount": 3}})
            ),
            Some("n_choices")
        );
        assert_eq!(
            never_resume(
                Provider::Gemini,
                &json!({"generation_config": {"candidate_count": 2}})
            ),
            Some("n_choices")
        );
        assert_eq!(
            never_resume(
                Provider::Anthropic,
                &json!({"thinking": {"type": "enabled", "budget_tokens": 1024}})
            ),
            Some("extended_thinking")
        );
        assert_eq!(never_resume(Provider::Anthropic, &json!({})), None);
        assert_eq!(
            never_resume(
                Provider::OpenAiResponses,
                &json!({"conversation": "conv_1", "input": "Q"})
            ),
            Some("conversation")
        );
        assert_eq!(
            never_resume(
                Provider::OpenAiResponses,
                &json!({"conversation": {"id": "conv_1"}, "input": "Q"})
            ),
            Some("conversation")
        );
        assert_eq!(
            never_resume(
                Provider::OpenAiResponses,
                &json!({"conversation": null, "input": "Q"})
            ),
            None
        );
    }

    #[test]
    fn structured_output_is_never_resumed() {
        let schema = json!({"type": "object"});
        for (provider, body) in [
            (
                Provider::OpenAi,
                json!({"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}}),
            ),
            (
                Provider::OpenAi,
                json!({"response_format": {"type": "json_object"}}),
            ),
            (
                Provider::OpenAiResponses,
                json!({"text": {"format": {"type": "json_schema", "name": "a", "schema": schema}}}),
            ),
            (
                Provider::Anthropic,
                json!({"output_config": {"format": {"type": "json_schema", "schema": schema}}}),
            ),
            (
                Provider::Anthropic,
                json!({"output_format": {"type": "json_schema", "schema": schema}}),
            ),
            (
                Provider::Gemini,
                json!({"generationConfig": {"responseMimeType": "application/json"}}),
            ),
            (
                Provider::Gemini,
                json!({"generationConfig": {"responseJsonSchema": schema}}),
            ),
            // Google's JSON APIs take the proto field names too.
            (
                Provider::Gemini,
                json!({"generation_config": {"response_mime_type": "application/json"}}),
            ),
            (
                Provider::Gemini,
                json!({"generation_config": {"response_schema": schema}}),
            ),
        ] {
            assert_eq!(
                never_resume(provider, &body),
                Some("structured_output"),
                "{body}"
            );
        }
        // Plain text, said explicitly, is resumed.
        for (provider, body) in [
            (
                Provider::OpenAi,
                json!({"response_format": {"type": "text"}}),
            ),
            (
                Provider::OpenAiResponses,
                json!({"text": {"format": {"type": "text"}, "verbosity": "low"}}),
            ),
            (
                Provider::Anthropic,
                json!({"output_config": {"effort": "high"}}),
            ),
            (
                Provider::Gemini,
                json!({"generationConfig": {"responseMimeType": "text/plain"}}),
            ),
        ] {
            assert_eq!(never_resume(provider, &body), None, "{body}");
        }
    }

    #[test]
    fn the_budget_left_is_asked_for_in_every_shape() {
        for (provider, mut body, key) in [
            (
                Provider::OpenAi,
                json!({"max_tokens": 10, "max_completion_tokens": 10}),
                "/max_tokens",
            ),
            (
                Provider::Anthropic,
                json!({"max_tokens": 10}),
                "/max_tokens",
            ),
            (
                Provider::OpenAiResponses,
                json!({"max_output_tokens": 10}),
                "/max_output_tokens",
            ),
            (
                Provider::Gemini,
                json!({"generationConfig": {"maxOutputTokens": 10}}),
                "/generationConfig/maxOutputTokens",
            ),
            (
                Provider::Gemini,
                json!({"generation_config": {"max_output_tokens": 10}}),
                "/generation_config/max_output_tokens",
            ),
            // A whole number written with a fraction is a budget too.
            (
                Provider::Anthropic,
                json!({"max_tokens": 10.0}),
                "/max_tokens",
            ),
        ] {
            assert!(spend_budget(provider, &mut body, 4));
            assert_eq!(body.pointer(key), Some(&json!(6)), "{body}");
            assert!(!spend_budget(provider, &mut body, 6));
        }
        // No budget asked for: none to spend.
        assert!(spend_budget(Provider::OpenAi, &mut json!({}), 1_000));
    }

    #[test]
    fn gemini_counts_written_as_strings_count() {
        // Google reads request JSON under the proto3 JSON mapping: an
        // integer field takes a string holding it as well as a number.
        assert_eq!(
            never_resume(
                Provider::Gemini,
                &json!({"generationConfig": {"candidateCount": "2"}})
            ),
            Some("n_choices")
        );
        assert_eq!(
            never_resume(
                Provider::Gemini,
                &json!({"generation_config": {"candidate_count": "3"}})
            ),
            Some("n_choices")
        );
        assert_eq!(
            never_resume(
                Provider::Gemini,
                &json!({"generationConfig": {"candidateCount": "1"}})
            ),
            None
        );
        // OpenAI refuses a string `n`: no count of several there.
        assert_eq!(never_resume(Provider::OpenAi, &json!({"n": "2"})), None);
    }

    #[test]
    fn gemini_budgets_written_as_strings_are_spent() {
        for (mut body, key) in [
            (
                json!({"generationConfig": {"maxOutputTokens": "10"}}),
                "/generationConfig/maxOutputTokens",
            ),
            (
                json!({"generation_config": {"max_output_tokens": "10"}}),
                "/generation_config/max_output_tokens",
            ),
        ] {
            assert!(spend_budget(Provider::Gemini, &mut body, 4));
            // Written back as a number.
            assert_eq!(body.pointer(key), Some(&json!(6)), "{body}");
            assert!(!spend_budget(Provider::Gemini, &mut body, 6));
        }
        // Spent already: nothing left to ask for.
        let mut body = json!({"generationConfig": {"maxOutputTokens": "1000"}});
        assert!(!spend_budget(Provider::Gemini, &mut body, 1_000));
        // Another provider's string is no budget it reads: left as it is.
        let mut body = json!({"max_tokens": "10"});
        assert!(spend_budget(Provider::OpenAi, &mut body, 4));
        assert_eq!(body["max_tokens"], json!("10"));
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
