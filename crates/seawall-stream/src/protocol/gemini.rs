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

use super::choices::{Choices, bit, notable};
use super::wire::{Present, Text, declared_reason, fold_seq, parse};
use super::{Reason, Signal, in_stream_error};
use seawall_core::provider::{Provider, QuotaWall};

// Read member by member ([`later_wins!`](seawall_core::later_wins)): a
// member named twice is the later one, as the SDKs read it.
seawall_core::later_wins! {
    struct Chunk<'a> {
        candidates: Folded<'a> = "candidates",
        prompt_feedback: Option<Feedback<'a>> = "promptFeedback",
        error: Option<Present> = "error",
        usage_metadata: Option<UsageFields> = "usageMetadata",
    }
}

seawall_core::later_wins! {
    struct Candidate<'a> {
        content: Option<Content<'a>> = "content",
        finish_reason: Option<Text<'a>> = "finishReason",
        /// Left out for the first (the API omits default values).
        index: Option<serde_json::Number> = "index",
    }
}

/// The candidates of one chunk folded into what the guard needs: which
/// were seen and finished, the chunk's most telling finish, and their
/// parts — any candidate's content is content; the text is the first
/// candidate's, what the SDK's `text` reads.
#[derive(Default)]
struct Candidates<'a> {
    seen: u64,
    finished: u64,
    finish: Option<Reason<'a>>,
    parts: Parts<'a>,
}

/// A chunk's `candidates`, folded ([`Candidates`]); none when there are
/// none (`null`, `[]`, left out).
#[derive(Default)]
struct Folded<'a>(Option<Candidates<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for Folded<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        candidates(deserializer).map(Folded)
    }
}

fn candidates<'de: 'a, 'a, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Candidates<'a>>, D::Error> {
    fold_seq(
        deserializer,
        None,
        |acc: &mut Option<Candidates<'a>>, candidate: Candidate<'a>| {
            let acc = acc.get_or_insert_with(Candidates::default);
            let index = candidate.index.as_ref().map_or(Some(0), candidate_index);
            let bit = index.and_then(bit).unwrap_or(0);
            acc.seen |= bit;
            let finish = declared_reason(candidate.finish_reason).map(|Text(reason)| Reason {
                kind: finish_kind(&reason),
                reason,
            });
            if let Some(finish) = finish {
                acc.finished |= bit;
                // The first notable one tells the most, as across chunks.
                if acc
                    .finish
                    .as_ref()
                    .is_none_or(|kept| !notable(kept.kind) && notable(finish.kind))
                {
                    acc.finish = Some(finish);
                }
            }
            let parts = candidate.content.map(|c| c.parts).unwrap_or_default();
            acc.parts.content |= parts.content;
            acc.parts.acts |= parts.acts;
            acc.parts.thinking |= parts.thinking;
            if index == Some(0) && acc.parts.text.is_none() {
                acc.parts.text = parts.text;
            }
        },
    )
}

/// A candidate's `index`, an `int32`: Google's JSON readers (the proto3
/// JSON mapping) take an integral float for one (`0.0`, `-0`, `1e0`), so
/// the SDKs read such a candidate as that number; read as none, `0.0`
/// would lose the first candidate's text and share a bit with every
/// other unreadable index. Anything else (`0.5`, negative) names no
/// candidate.
fn candidate_index(index: &serde_json::Number) -> Option<u64> {
    index.as_u64().or_else(|| {
        let float = index.as_f64()?;
        // `-0.0 >= 0.0`: the first candidate too. One past `u64` would
        // saturate in the cast into a number it is not.
        (float >= 0.0 && float.fract() == 0.0 && float < u64::MAX as f64).then_some(float as u64)
    })
}

seawall_core::later_wins! {
    struct Feedback<'a> {
        block_reason: Option<Text<'a>> = "blockReason",
    }
}

seawall_core::later_wins! {
    struct Content<'a> {
        parts: Parts<'a> = "parts",
    }
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

impl<'de: 'a, 'a> Deserialize<'de> for Parts<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parts(deserializer)
    }
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

pub(super) fn decode<'a>(
    data: &'a [u8],
    usage: &mut Option<Usage>,
    choices: &mut Choices,
    quota_wall: QuotaWall,
) -> Signal<'a> {
    let Some(chunk) = parse::<Chunk<'_>>(data) else {
        return Signal::Other;
    };
    // Cumulative: the last report is the stream's.
    if let Some(found) = chunk.usage_metadata.as_ref().and_then(UsageFields::usage) {
        *usage = Some(found);
    }
    if chunk.error.is_some() {
        return Signal::Error(Box::new(in_stream_error(
            Provider::Gemini,
            data,
            quota_wall,
        )));
    }
    // A chunk without candidates that reports usage or prompt feedback is
    // progress; one that says nothing (`{}`) is a keep-alive: read as
    // progress, it moved the idle bound after content on for ever, and
    // counted as the provider generating.
    let says_something = chunk.usage_metadata.is_some() || chunk.prompt_feedback.is_some();
    if let Some(Text(reason)) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
        return Signal::Finish(Reason {
            kind: FinishKind::Filtered,
            reason,
        });
    }
    let Some(candidates) = chunk.candidates.0 else {
        return if says_something {
            Signal::Progress
        } else {
            Signal::KeepAlive
        };
    };
    let Candidates {
        seen,
        finished,
        finish,
        parts,
    } = candidates;
    // One candidate's finish is the message's only once every candidate
    // seen has finished.
    let finish = choices.settle(seen, finished, finish);
    match (parts.content, finish) {
        (true, finish) => Signal::Content {
            // Content with no text of the first candidate's and no act is
            // another candidate's text: text, not a call.
            text: match parts.text {
                None if !parts.acts => Some(Cow::Borrowed("")),
                text => text,
            },
            finish,
            act: parts.acts,
        },
        (false, Some(reason)) => Signal::Finish(reason),
        (false, None) if parts.thinking => Signal::Thinking,
        (false, None) => Signal::Progress,
    }
}
