//! Anthropic messages events.

use seawall_core::FinishKind;
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

pub(super) fn decode(data: &[u8]) -> Signal<'_> {
    let Some(event) = parse::<Event<'_>>(data) else {
        return Signal::Other;
    };
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
