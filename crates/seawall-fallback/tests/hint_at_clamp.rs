//! Without a route health registry, the fallback reads when a route is
//! back from its failure's hint. A hint at the clamp (`MAX_RETRY_HINT`, a
//! week) is "a week or more" — `Retry-After: 2592000` (30 days) reads as
//! 7 days — so it names no return: the route is never waited for in the
//! operation, however long `max_wait`. A shorter hint still is — on
//! tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue};
use seawall_core::hint::{MAX_RETRY_HINT, RetryHint};
use seawall_core::{Code, Failure, RouteId};
use seawall_fallback::{FallbackLayer, FallbackRoute};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

mod common;

use common::{request, scripted};

const DAY: Duration = Duration::from_secs(24 * 3600);

/// A 503 whose `Retry-After` header is `value`, read through the one
/// parser, clamp and all.
fn unavailable(value: &'static str) -> Failure {
    let mut headers = HeaderMap::new();
    headers.insert(http::header::RETRY_AFTER, HeaderValue::from_static(value));
    let hint = RetryHint::from_headers(&headers, SystemTime::now());
    let after = hint.after.expect("a hint");
    Failure::new(Code::ProviderUnavailable)
        .with_status(503)
        .with_retry_after(after)
}

/// The primary fails its first call with `primary_hint` and answers after;
/// route `b` fails every call with a 30-day hint. The layer would wait up
/// to 40 days.
async fn run(primary_hint: &'static str) -> (Result<(), Failure>, usize, usize, Duration) {
    let primary_calls = Arc::new(AtomicUsize::new(0));
    let b_calls = Arc::new(AtomicUsize::new(0));
    let primary = scripted(&primary_calls, move |n| {
        (n == 0).then(|| unavailable(primary_hint))
    });
    let b = scripted(&b_calls, |_| Some(unavailable("2592000")));
    let layer =
        FallbackLayer::chain([FallbackRoute::new(b).route(RouteId::new("b"))]).max_wait(40 * DAY);
    let start = Instant::now();
    let result = layer.layer(primary).oneshot(request(None)).await;
    let result = result
        .map(drop)
        .map_err(|error| Failure::find(&*error).expect("a seawall failure").clone());
    (
        result,
        primary_calls.load(Ordering::SeqCst),
        b_calls.load(Ordering::SeqCst),
        start.elapsed(),
    )
}

#[tokio::test(start_paused = true)]
async fn a_route_whose_hint_is_at_the_clamp_is_never_waited_for() {
    assert_eq!(unavailable("2592000").retry_after(), Some(MAX_RETRY_HINT));
    let (result, primary, b, elapsed) = run("2592000").await;
    assert_eq!((primary, b), (1, 1), "one call each, no wait for either");
    assert_eq!(elapsed, Duration::ZERO);
    let failure = result.expect_err("no route comes back within the operation");
    // The last route's own failure, its hint kept at the clamp for a
    // ladder above to stop on.
    assert_eq!(failure.code(), Code::ProviderUnavailable);
    assert_eq!(failure.retry_after(), Some(MAX_RETRY_HINT));
}

#[tokio::test(start_paused = true)]
async fn a_route_back_in_6_days_is_still_waited_for() {
    let (result, primary, b, elapsed) = run("518400").await;
    result.expect("the primary answers once back");
    assert_eq!((primary, b), (2, 1));
    assert_eq!(elapsed, 6 * DAY);
}
