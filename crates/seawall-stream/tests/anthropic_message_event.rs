//! A compatible server that names every event of an Anthropic stream
//! `message` (the data as Anthropic writes it), read through the guard as
//! anthropic-python reads it since 0.92.0: by the data's `type`.

mod common;

use common::*;
use seawall_core::FinishKind;

/// Anthropic's own stream, each event named `message`.
const NAMED_MESSAGE: &str = concat!(
    "event: message\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\",\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n",
    "event: message\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: message\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n",
    "event: message\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
    "event: message\ndata: {\"type\":\"message_stop\"}\n\n",
);

/// The answer the SDK shows is content with its finish: delivered whole
/// and complete, never judged empty (and asked for again) or cut.
#[tokio::test]
async fn a_stream_of_events_named_message_is_an_answer() {
    let d = match run(MESSAGES, NAMED_MESSAGE).await {
        Outcome::Delivered(d) => d,
        Outcome::Failed(failure) => panic!("judged failed: {failure}"),
    };
    assert!(d.error.is_none(), "{:?}", d.error);
    assert_eq!(d.bytes, NAMED_MESSAGE.as_bytes());
    assert_eq!(d.report.content_events, 1);
    assert_eq!(d.report.finish_kind(), Some(FinishKind::Complete));
    assert!(d.report.completed_task());
}
