//! One tracing event per stream, with stable field names.

mod common;

use bytes::Bytes;
use common::*;
use http_body_util::Full;
use seawall_test::trace::Recorder;

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn one_event_with_stable_fields_per_stream() {
    let recorder = Recorder::new();
    let _guard = recorder.install();

    let stream = include_str!("fixtures/openai/length.sse");
    let response = call(
        seawall_stream::StreamGuardLayer::interactive(),
        CHAT,
        Full::new(Bytes::from_static(stream.as_bytes())),
    )
    .await
    .unwrap();
    drain(response).await;

    let events = recorder.events_of("seawall::stream");
    assert_eq!(events.len(), 1, "exactly one event");
    let field = |name: &str| events[0].value(name);
    assert_eq!(field("protocol"), "openai");
    assert_eq!(field("outcome"), "finished");
    assert_eq!(field("finish_reason"), "length");
    assert_eq!(field("finish_kind"), "truncated");
    assert_eq!(field("content_events"), "1");
    assert_eq!(field("closed_by"), "them");
    assert_eq!(field("status"), "200");
    for name in [
        "events",
        "keepalives",
        "bytes",
        "chunks",
        "ttfb_ms",
        "ttfc_ms",
        "elapsed_ms",
    ] {
        field(name);
    }
}
