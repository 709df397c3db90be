//! The tracing event of a classified failure, in a test binary of its
//! own: a subscriber set for one thread shares tracing's global per-callsite
//! cache with every other test running at the same time, so beside them
//! the event could be skipped.

mod common;

use common::{found, response, through};
use seawall_classify::ClassifyLayer;
use seawall_core::Code;
use seawall_test::trace::Recorder;

const JSON: (&str, &str) = ("content-type", "application/json");
const SSE: (&str, &str) = ("content-type", "text/event-stream");

#[tokio::test]
async fn one_event_per_classified_failure_with_stable_fields() {
    let recorder = Recorder::new();
    let _guard = recorder.install();
    let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
    let error = through(
        &ClassifyLayer::anthropic(),
        response(429, &[JSON, ("retry-after", "7")], body),
    )
    .await
    .map(|_| ())
    .unwrap_err();
    assert_eq!(found(&error).code(), Code::RateLimited);
    // A delivered stream emits nothing.
    through(
        &ClassifyLayer::anthropic(),
        response(200, &[SSE], "event: ping\n\n"),
    )
    .await
    .unwrap();

    let events = recorder.events();
    assert_eq!(events.len(), 1, "{events:?}");
    let field = |name: &str| events[0].fields.value(name);
    assert_eq!(field("class"), "transient");
    assert_eq!(field("code"), "rate_limited");
    assert_eq!(field("status"), "429");
    assert_eq!(field("action"), "retry");
    assert_eq!(field("retry_after_ms"), "7000");
}
