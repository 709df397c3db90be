//! What the hand-built suites (`mock.rs`, `record_route.rs`) script a
//! provider's OpenAI chat stream with: its content chunks, the guard's
//! cut after content, and the streamed response. Included by `#[path]`
//! in those suites (and in `responses_place.rs` and `translated_cap.rs`,
//! for its `stream`) only, so the other suites that include `common`
//! compile none of it.

use bytes::Bytes;
use seawall_core::{BoxError, Code, Failure, Interrupted};
use seawall_test::body::Script;

/// One chat completion chunk whose delta is `text`.
pub(crate) fn chunk(text: &str) -> Bytes {
    Bytes::from(format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
    ))
}

/// A cut after two content events, as the guard reports it: `delivered`
/// its record of the stream's text.
pub(crate) fn cut(delivered: &str) -> Box<Failure> {
    let mut interrupted = Interrupted::default();
    interrupted.delivered_text = Some(delivered.to_owned());
    interrupted.content_events = 2;
    interrupted.cause = Some(Code::Transport);
    Box::new(Failure::new(Code::StreamInterrupted).with_interrupted(interrupted))
}

/// A streamed response whose body yields `items`, in order.
pub(crate) fn stream(items: Vec<Result<Bytes, Box<Failure>>>) -> http::Response<Script> {
    http::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Script::items(
            items
                .into_iter()
                .map(|item| item.map_err(|failure| failure as BoxError)),
        ))
        .unwrap()
}
