//! A hint at the clamp (`MAX_RETRY_HINT`, a week) is "a week or more":
//! every longer hint is cut to it when parsed, so `Retry-After: 2592000`
//! (30 days) reads as 7 days. The ladder never sleeps on it, whatever its
//! `max_retry_after`; a shorter hint under that bound is still waited
//! out — on tokio's paused clock.

mod common;

use std::time::{Duration, SystemTime};

use common::{Step, Upstream, failure, openai, receipt};
use http::{HeaderMap, HeaderValue, Request};
use seawall_core::hint::{MAX_RETRY_HINT, RetryHint};
use seawall_core::recording::ReplayBody;
use seawall_core::{Action, Failure, Receipt, StopReason};
use seawall_internal::random::MAX_SPREAD;
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

const DAY: Duration = Duration::from_secs(24 * 3600);

/// A policy that would sleep any hint up to 40 days.
fn patient() -> RetryPolicy {
    RetryPolicy::batch().max_retry_after(40 * DAY)
}

fn request() -> Request<String> {
    Request::post("https://api.openai.example/v1/chat/completions")
        .body(String::from(r#"{"model":"m"}"#))
        .unwrap()
}

/// A 503 whose `Retry-After` header is `value`, read as the classifier's
/// callers read it: through the one parser, clamp and all.
fn unavailable(value: &'static str) -> Failure {
    let mut headers = HeaderMap::new();
    headers.insert(http::header::RETRY_AFTER, HeaderValue::from_static(value));
    let hint = RetryHint::from_headers(&headers, SystemTime::now());
    openai(503, hint.after, "")
}

#[tokio::test(start_paused = true)]
async fn a_30_day_retry_after_is_never_slept_on() {
    let wall = unavailable("2592000");
    assert_eq!(
        wall.retry_after(),
        Some(MAX_RETRY_HINT),
        "clamped when parsed"
    );
    assert_eq!(wall.action(), Action::Retry);
    let upstream = Upstream::new([Step::Fail(wall), Step::Ok]);
    let svc = RetryBudgetLayer::new(patient(), Budget::unlimited())
        .seed(4)
        .layer(upstream.service::<ReplayBody<String>>());
    let start = Instant::now();
    let err = svc.oneshot(request()).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::ZERO, "no sleep at all");
    assert_eq!(upstream.count(), 1, "one call to the route");
    assert_eq!(receipt(&err).stop, Some(StopReason::HintTooLong));
    assert_eq!(
        receipt(&err).stop.map(StopReason::as_str),
        Some("hint_too_long")
    );
    // The failure goes back with its hint, for the caller to schedule.
    assert_eq!(failure(&err).retry_after(), Some(MAX_RETRY_HINT));
}

#[tokio::test(start_paused = true)]
async fn a_6_day_retry_after_under_the_bound_is_waited_out() {
    let busy = unavailable("518400");
    assert_eq!(busy.retry_after(), Some(6 * DAY));
    let upstream = Upstream::new([Step::Fail(busy), Step::Ok]);
    let svc = RetryBudgetLayer::new(patient(), Budget::unlimited())
        .seed(4)
        .layer(upstream.service::<ReplayBody<String>>());
    let response = svc.oneshot(request()).await.unwrap();
    let calls = upstream.calls();
    assert_eq!(calls.len(), 2);
    let waited = calls[1].at - calls[0].at;
    // The hint, not shortened; the backoff (30 s at most) never lengthens
    // a longer hint, only the spread that keeps operations apart does.
    assert!(
        (6 * DAY..=6 * DAY + MAX_SPREAD).contains(&waited),
        "{waited:?}"
    );
    let receipt = response.extensions().get::<Receipt>().unwrap();
    assert_eq!(receipt.stop, Some(StopReason::Succeeded));
}
