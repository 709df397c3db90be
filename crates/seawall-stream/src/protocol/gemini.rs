//! Gemini `streamGenerateContent?alt=sse` chunks, read by the provider's
//! own table ([`seawall_core::provider::gemini`]: the same part fields the
//! unary check reads).

use std::borrow::Cow;

use seawall_core::provider::Presence;
use seawall_core::provider::gemini::{PartField, finish_kind, part_field};
use seawall_core::usage::UsageFields;
use seawall_core::{FinishKind, Usage};
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::wire::{First, Present, Text, declared_reason, fold_seq, parse};
use super::{Reason, Signal, in_stream_error};
use seawall_core::provider::Provider;

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

/// One part read by the table: its text, whether it is a thought, and
/// whether any other answer field holds anything.
struct Part<'a> {
    text: Option<Text<'a>>,
    thought: bool,
    acts: bool,
}

impl<'de: 'a, 'a> Deserialize<'de> for Part<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PartVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for PartVisitor<'a> {
            type Value = Part<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a Gemini part")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part<'a>, A::Error> {
                let mut part = Part {
                    text: None,
                    thought: false,
                    acts: false,
                };
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match part_field(&key.0) {
                        PartField::Text => part.text = map.next_value()?,
                        PartField::Thought => {
                            part.thought = map.next_value::<Option<bool>>()?.unwrap_or(false);
                        }
                        PartField::Answer => part.acts |= map.next_value::<Presence>()?.0,
                        PartField::Metadata => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(part)
            }
        }
        deserializer.deserialize_map(PartVisitor(std::marker::PhantomData))
    }
}

/// The parts of one chunk folded into what the guard needs: whether any
/// is content, and their text joined.
#[derive(Default)]
struct Parts<'a> {
    content: bool,
    /// A part holds more than text (a function call, inline data).
    acts: bool,
    /// A thought with text: the model thinking.
    thinking: bool,
    text: Option<Cow<'a, str>>,
}

fn parts<'de: 'a, 'a, D: Deserializer<'de>>(deserializer: D) -> Result<Parts<'a>, D::Error> {
    fold_seq(
        deserializer,
        Parts::default(),
        |acc: &mut Parts<'a>, part: Part<'a>| {
            // A thought summary is the model working, not the answer.
            if part.thought {
                acc.thinking |= part.text.and_then(Text::non_empty).is_some();
                return;
            }
            acc.content |= part.acts;
            acc.acts |= part.acts;
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
        return Signal::Error(in_stream_error(Provider::Gemini, data));
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
    let finish = declared_reason(candidate.finish_reason).map(|Text(reason)| Reason {
        kind: finish_kind(&reason),
        reason,
    });
    match (parts.content, finish) {
        (true, finish) => Signal::Content {
            text: parts.text,
            finish,
            act: parts.acts,
        },
        (false, Some(reason)) => Signal::Finish(reason),
        (false, None) if parts.thinking => Signal::Thinking,
        (false, None) => Signal::Progress,
    }
}
