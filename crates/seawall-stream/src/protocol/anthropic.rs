//! Anthropic messages events.

use seawall_core::usage::UsageFields;
use seawall_core::{FinishKind, Usage};
use serde::Deserialize;

use super::wire::{Text, parse};
use super::{Protocol, Reason, Signal, in_stream_error};

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, rename = "type")]
    ty: Text<'a>,
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    #[serde(borrow)]
    content_block: Option<Block<'a>>,
    /// `message_start`'s message, for its usage.
    message: Option<StartMessage>,
    /// `message_delta`'s cumulative usage.
    usage: Option<UsageFields>,
}

#[derive(Deserialize)]
struct StartMessage {
    usage: Option<UsageFields>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, rename = "type")]
    ty: Option<Text<'a>>,
    #[serde(borrow)]
    text: Option<Text<'a>>,
    #[serde(borrow)]
    stop_reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(borrow)]
    text: Option<Text<'a>>,
}

/// Anthropic reports input tokens in `message_start` and the output count
/// so far in each `message_delta`: the later report of each count wins.
fn merge_usage(fields: Option<&UsageFields>, usage: &mut Option<Usage>) {
    let Some(found) = fields.and_then(UsageFields::usage) else {
        return;
    };
    let mut merged = usage.unwrap_or_default();
    if fields.is_some_and(UsageFields::has_input) {
        merged.input_tokens = found.input_tokens;
    }
    if fields.is_some_and(UsageFields::has_output) {
        merged.output_tokens = found.output_tokens;
    }
    *usage = Some(merged);
}

pub(super) fn decode<'a>(data: &'a [u8], usage: &mut Option<Usage>) -> Signal<'a> {
    let Some(event) = parse::<Event<'_>>(data) else {
        return Signal::Other;
    };
    merge_usage(event.message.as_ref().and_then(|m| m.usage.as_ref()), usage);
    merge_usage(event.usage.as_ref(), usage);
    match &*event.ty.0 {
        "ping" => Signal::KeepAlive,
        "message_start" | "content_block_stop" => Signal::Progress,
        // A text block may start with text; a tool_use block's input
        // streams as `input_json_delta`, its start is progress.
        "content_block_start" => match event.content_block.and_then(|b| b.text?.non_empty()) {
            Some(text) => Signal::Content {
                text: Some(text),
                finish: None,
            },
            None => Signal::Progress,
        },
        "content_block_delta" => {
            let Some(delta) = event.delta else {
                return Signal::Other;
            };
            match delta.ty.as_ref().map(|t| &*t.0) {
                Some("text_delta") => match delta.text.and_then(Text::non_empty) {
                    Some(text) => Signal::Content {
                        text: Some(text),
                        finish: None,
                    },
                    None => Signal::Progress,
                },
                Some("input_json_delta") => Signal::Content {
                    text: None,
                    finish: None,
                },
                // thinking, signatures, citations: the model is working,
                // the caller has nothing to show yet.
                _ => Signal::Progress,
            }
        }
        "message_delta" => match event.delta.and_then(|d| d.stop_reason) {
            Some(Text(reason)) => Signal::Finish(Reason {
                kind: FinishKind::anthropic(&reason),
                reason,
            }),
            None => Signal::Progress,
        },
        "message_stop" => Signal::Done,
        "error" => Signal::Error(in_stream_error(Protocol::Anthropic, data)),
        _ => Signal::Other,
    }
}
