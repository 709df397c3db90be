//! One tracing event per stream, with stable field names.

mod common;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::*;
use http_body_util::Full;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

type Events = Arc<Mutex<Vec<Vec<(String, String)>>>>;

/// Keeps the fields of every `seawall::stream` event.
struct Capture(Events);

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        if event.metadata().target() == "seawall::stream" {
            let mut fields = Vec::new();
            event.record(&mut Fields(&mut fields));
            self.0.lock().unwrap().push(fields);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn one_event_with_stable_fields_per_stream() {
    let events = Events::default();
    let _guard = tracing::subscriber::set_default(Capture(events.clone()));

    let stream = include_str!("fixtures/openai/length.sse");
    let response = call(
        seawall_stream::StreamGuardLayer::interactive(),
        CHAT,
        Full::new(Bytes::from_static(stream.as_bytes())),
    )
    .await
    .unwrap();
    drain(response).await;

    let events = events.lock().unwrap();
    assert_eq!(events.len(), 1, "exactly one event");
    let field = |name: &str| {
        events[0]
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("field {name} missing"))
    };
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
