//! What the ladder's spans and events say (the operation's
//! `seawall.stop_reason`, a refusal's `seawall.cooled_by`, the level of a
//! give-up), in a test binary of its own: a subscriber set for one thread
//! shares tracing's global per-callsite cache with every other test
//! running at the same time.

mod common;

use std::time::Duration;

use common::{Step, Upstream};
use http::Request;
use seawall_core::{Code, Failure};
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use seawall_test::trace::Recorder;
use tower::{Layer, ServiceExt};

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
    let recorder = Recorder::new();
    let _guard = recorder.install();
    let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded)), Step::Ok]);
    ladder(&upstream)
        .oneshot(Request::new(String::from("hi")))
        .await
        .expect("the retry answers");
    assert_eq!(upstream.count(), 2);
    let operation = recorder.span("operation").fields;
    assert_eq!(operation.get("seawall.stop_reason"), Some("succeeded"));
    assert_eq!(operation.get("seawall.attempts"), Some("2"));
    assert_eq!(operation.get("error.type"), None);
}

/// An operation its caller dropped did not stop: no reason is recorded,
/// its `error.type` says `cancelled`.
#[tokio::test(start_paused = true)]
async fn a_cancelled_operation_records_no_stop_reason() {
    let recorder = Recorder::new();
    let _guard = recorder.install();
    let upstream = Upstream::new([Step::Hang]);
    // The caller's own timeout drops the operation with its attempt in
    // flight.
    let call = ladder(&upstream).oneshot(Request::new(String::from("hi")));
    tokio::time::timeout(Duration::from_secs(1), call)
        .await
        .expect_err("the upstream never answers");
    assert_eq!(upstream.count(), 1, "the attempt is in flight");
    let operation = recorder.span("operation").fields;
    assert_eq!(operation.get("error.type"), Some("cancelled"));
    assert_eq!(operation.get("seawall.stop_reason"), None);
}

/// A refusal names what cooled its route: a quota wall's is not a rate
/// limit's, though both are `route_cooling_down`.
#[tokio::test(start_paused = true)]
async fn a_refusal_records_what_cooled_its_route() {
    let recorder = Recorder::new();
    let _guard = recorder.install();
    let refusal = Failure::route_refusal(Some(Code::QuotaExhausted));
    let upstream = Upstream::new([Step::Fail(refusal)]);
    ladder(&upstream)
        .oneshot(Request::new(String::from("hi")))
        .await
        .expect_err("a quota wall is not waited out");
    let attempt = recorder.span("attempt").fields;
    assert_eq!(attempt.get("error.type"), Some("route_cooling_down"));
    assert_eq!(attempt.get("seawall.cooled_by"), Some("quota_exhausted"));
    let failed = recorder
        .events_of("seawall::retry")
        .into_iter()
        .find(|event| event.get("message") == Some("attempt failed"))
        .expect("the attempt's event");
    assert_eq!(failed.get("cooled_by"), Some("quota_exhausted"));
}

/// A give-up after retries is the last attempt's debug event with why the
/// ladder stopped, not a warning: the caller gets the failure to log.
#[tokio::test(start_paused = true)]
async fn a_give_up_after_retries_is_a_debug_event() {
    let recorder = Recorder::new();
    let _guard = recorder.install();
    let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded))]);
    ladder(&upstream)
        .oneshot(Request::new(String::from("hi")))
        .await
        .expect_err("every attempt fails");
    assert_eq!(upstream.count(), 3);
    let events: Vec<_> = recorder
        .events()
        .into_iter()
        .filter(|event| event.target == "seawall::retry")
        .collect();
    let give_up = events.last().expect("the last attempt's event");
    assert_eq!(give_up.level, tracing::Level::DEBUG);
    assert_eq!(give_up.fields.get("stop_reason"), Some("attempts"));
    assert_eq!(give_up.fields.get("code"), Some("overloaded"));
    assert_eq!(give_up.fields.get("attempt"), Some("3"));
    assert!(
        recorder.warnings_of("seawall::retry").is_empty(),
        "{events:?}"
    );
}
