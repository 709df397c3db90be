//! OpenAI chat completions chunks.

use seawall_core::FinishKind;
use serde::Deserialize;

use super::wire::{First, Present, Text, parse};
use super::{Protocol, Reason, Signal, in_stream_error};

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: First<Choice<'a>>,
    error: Option<Present>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    #[serde(borrow)]
    finish_reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow)]
    content: Option<Text<'a>>,
    #[serde(borrow)]
    refusal: Option<Text<'a>>,
    tool_calls: Option<Present>,
    function_call: Option<Present>,
}

pub(super) fn decode<'a>(data: &'a [u8], refused: &mut bool) -> Signal<'a> {
    if data == b"[DONE]" {
        return Signal::Done;
    }
    let Some(chunk) = parse::<Chunk<'_>>(data) else {
        return Signal::Other;
    };
    if chunk.error.is_some() {
        return Signal::Error(in_stream_error(Protocol::OpenAi, data));
    }
    // A chunk without choices is the usage-only final chunk (or another
    // bookkeeping chunk): progress, not content.
    let Some(choice) = chunk.choices.0 else {
        return Signal::Progress;
    };
    let (text, content) = match choice.delta {
        Some(delta) => {
            // A refusal delta is the model declining, not an answer: it
            // marks the stream refused and moves it on, like Anthropic's and
            // Gemini's refusals, so a refusal before any content fails as
            // policy while the response is still held back.
            *refused |= delta.refusal.and_then(Text::non_empty).is_some();
            let text = delta.content.and_then(Text::non_empty);
            let acts = delta.tool_calls.is_some() || delta.function_call.is_some();
            let content = text.is_some() || acts;
            (text, content)
        }
        None => (None, false),
    };
    let finish = choice.finish_reason.map(|Text(reason)| {
        let kind = match FinishKind::openai(&reason) {
            // A refusal message ends in `stop` or `content_filter`: either
            // way the model declined, as the unary `message.refusal` says.
            FinishKind::Complete | FinishKind::Filtered if *refused => FinishKind::Refused,
            kind => kind,
        };
        Reason { kind, reason }
    });
    match (content, finish) {
        (true, finish) => Signal::Content { text, finish },
        (false, Some(reason)) => Signal::Finish(reason),
        (false, None) => Signal::Progress,
    }
}
