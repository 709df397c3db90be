//! The operation span's `seawall.stop_reason`, in a test binary of its
//! own: a subscriber set for one thread shares tracing's global
//! per-callsite cache with every other test running at the same time.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Step, Upstream};
use http::Request;
use seawall_core::{Code, Failure};
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{Layer, ServiceExt};

/// The fields of one span, by name, as recorded so far.
type Fields = Vec<(String, String)>;

/// Records every span's name and fields, at its start and as recorded.
#[derive(Default, Clone)]
struct Recorder(Arc<Mutex<Vec<(&'static str, Fields)>>>);

struct Visitor<'a>(&'a mut Fields);

impl tracing::field::Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl Recorder {
    /// The last value recorded in `field` of the span named `name`.
    fn field(&self, name: &str, field: &str) -> Option<String> {
        let spans = self.0.lock().unwrap();
        let (_, fields) = spans
            .iter()
            .find(|(span, _)| *span == name)
            .unwrap_or_else(|| panic!("no span {name}"));
        fields
            .iter()
            .rev()
            .find(|(n, _)| n == field)
            .map(|(_, v)| v.clone())
    }
}

impl tracing::Subscriber for Recorder {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut fields = Vec::new();
        span.record(&mut Visitor(&mut fields));
        let mut spans = self.0.lock().unwrap();
        spans.push((span.metadata().name(), fields));
        tracing::span::Id::from_u64(spans.len() as u64)
    }
    fn record(&self, id: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut spans = self.0.lock().unwrap();
        let (_, fields) = &mut spans[id.into_u64() as usize - 1];
        values.record(&mut Visitor(fields));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn ladder(
    upstream: &Upstream,
) -> impl tower::Service<Request<String>, Response = http::Response<String>, Error = tower::BoxError>
{
    RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited()).layer(upstream.service())
}

/// An operation that succeeded after a retry says why it stopped as a
/// failed one does: `succeeded`.
#[tokio::test(start_paused = true)]
async fn a_successful_operation_records_its_stop_reason() {
    let recorder = Recorder::default();
    let _guard = tracing::subscriber::set_default(recorder.clone());
    let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded)), Step::Ok]);
    ladder(&upstream)
        .oneshot(Request::new(String::from("hi")))
        .await
        .expect("the retry answers");
    assert_eq!(upstream.count(), 2);
    assert_eq!(
        recorder
            .field("operation", "seawall.stop_reason")
            .as_deref(),
        Some("succeeded")
    );
    assert_eq!(
        recorder.field("operation", "seawall.attempts").as_deref(),
        Some("2")
    );
    assert_eq!(recorder.field("operation", "error.type"), None);
}

/// An operation its caller dropped did not stop: no reason is recorded,
/// its `error.type` says `cancelled`.
#[tokio::test(start_paused = true)]
async fn a_cancelled_operation_records_no_stop_reason() {
    let recorder = Recorder::default();
    let _guard = tracing::subscriber::set_default(recorder.clone());
    let upstream = Upstream::new([Step::Hang]);
    // The caller's own timeout drops the operation with its attempt in
    // flight.
    let call = ladder(&upstream).oneshot(Request::new(String::from("hi")));
    tokio::time::timeout(Duration::from_secs(1), call)
        .await
        .expect_err("the upstream never answers");
    assert_eq!(upstream.count(), 1, "the attempt is in flight");
    assert_eq!(
        recorder.field("operation", "error.type").as_deref(),
        Some("cancelled")
    );
    assert_eq!(recorder.field("operation", "seawall.stop_reason"), None);
}
