//! Gemini `streamGenerateContent?alt=sse` chunks.

use std::borrow::Cow;

use seawall_core::usage::UsageFields;
use seawall_core::{FinishKind, Usage};
use serde::{Deserialize, Deserializer};

use super::wire::{First, Present, Text, fold_seq, parse};
use super::{Protocol, Reason, Signal, in_stream_error};

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    candidates: First<Candidate<'a>>,
    #[serde(borrow, rename = "promptFeedback")]
    prompt_feedback: Option<Feedback<'a>>,
    error: Option<Present>,
    #[serde(rename = "usageMetadata")]
    usage_metadata: Option<UsageFields>,
}

#[derive(Deserialize)]
struct Candidate<'a> {
    #[serde(borrow)]
    content: Option<Content<'a>>,
    #[serde(borrow, rename = "finishReason")]
    finish_reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct Feedback<'a> {
    #[serde(borrow, rename = "blockReason")]
    block_reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(borrow, default, deserialize_with = "parts")]
    parts: Parts<'a>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow)]
    text: Option<Text<'a>>,
    #[serde(default)]
    thought: bool,
    #[serde(rename = "functionCall")]
    function_call: Option<Present>,
    #[serde(rename = "inlineData")]
    inline_data: Option<Present>,
    #[serde(rename = "executableCode")]
    executable_code: Option<Present>,
}

/// The parts of one chunk folded into what the guard needs: whether any
/// is content, and their text joined.
#[derive(Default)]
struct Parts<'a> {
    content: bool,
    text: Option<Cow<'a, str>>,
}

fn parts<'de: 'a, 'a, D: Deserializer<'de>>(deserializer: D) -> Result<Parts<'a>, D::Error> {
    fold_seq(
        deserializer,
        Parts::default(),
        |acc: &mut Parts<'a>, part: Part<'a>| {
            let acts = part.function_call.is_some()
                || part.inline_data.is_some()
                || part.executable_code.is_some();
            acc.content |= acts;
            // Thought summaries are the model working, not the answer.
            if part.thought {
                return;
            }
            if let Some(text) = part.text.and_then(Text::non_empty) {
                acc.content = true;
                match &mut acc.text {
                    Some(joined) => joined.to_mut().push_str(&text),
                    None => acc.text = Some(text),
                }
            }
        },
    )
}

pub(super) fn decode<'a>(data: &'a [u8], usage: &mut Option<Usage>) -> Signal<'a> {
    let Some(chunk) = parse::<Chunk<'_>>(data) else {
        return Signal::Other;
    };
    // Cumulative: the last report is the stream's.
    if let Some(found) = chunk.usage_metadata.as_ref().and_then(UsageFields::usage) {
        *usage = Some(found);
    }
    if chunk.error.is_some() {
        return Signal::Error(in_stream_error(Protocol::Gemini, data));
    }
    if let Some(Text(reason)) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
        return Signal::Finish(Reason {
            kind: FinishKind::Filtered,
            reason,
        });
    }
    let Some(candidate) = chunk.candidates.0 else {
        return Signal::Progress;
    };
    let parts = candidate.content.map(|c| c.parts).unwrap_or_default();
    let finish = candidate.finish_reason.map(|Text(reason)| Reason {
        kind: FinishKind::gemini(&reason),
        reason,
    });
    match (parts.content, finish) {
        (true, finish) => Signal::Content {
            text: parts.text,
            finish,
        },
        (false, Some(reason)) => Signal::Finish(reason),
        (false, None) => Signal::Progress,
    }
}
