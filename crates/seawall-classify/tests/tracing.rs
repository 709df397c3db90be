//! The tracing event of a classified failure, in a test binary of its
//! own: a subscriber set for one thread shares tracing's global per-callsite
//! cache with every other test running at the same time, so beside them
//! the event could be skipped.

mod common;

use common::{found, response, through};
use seawall_classify::ClassifyLayer;
use seawall_core::Code;

const JSON: (&str, &str) = ("content-type", "application/json");
const SSE: (&str, &str) = ("content-type", "text/event-stream");

/// The fields of one event, by name.
type Fields = Vec<(String, String)>;

/// Records the fields of every event.
#[derive(Default, Clone)]
struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<Fields>>>);

impl tracing::Subscriber for Recorder {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Visitor(Fields);
        impl tracing::field::Visit for Visitor {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push((field.name().to_owned(), format!("{value:?}")));
            }
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                self.0.push((field.name().to_owned(), value.to_owned()));
            }
        }
        let mut fields = Visitor(Vec::new());
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn one_event_per_classified_failure_with_stable_fields() {
    let recorder = Recorder::default();
    let _guard = tracing::subscriber::set_default(recorder.clone());
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

    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(events.len(), 1, "{events:?}");
    let field = |name: &str| {
        events[0]
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no field {name}: {events:?}"))
    };
    assert_eq!(field("class"), "transient");
    assert_eq!(field("code"), "rate_limited");
    assert_eq!(field("status"), "429");
    assert_eq!(field("action"), "retry");
    assert_eq!(field("retry_after_ms"), "7000");
}
