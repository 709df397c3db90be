//! A breaker cooling a route after a hint at the clamp (`MAX_RETRY_HINT`,
//! a week: `Retry-After: 2592000`, a 30-day wall, reads as 7 days) names
//! no return for as long as it cools it: its refusals carry the clamp
//! itself, not the time left, so a ladder above never sleeps on them and
//! a fallback never waits for the route. A shorter hint's cooldown is
//! still waited out — on tokio's paused clock.

mod common;

use std::time::{Duration, SystemTime};

use common::scripted::{Provider, request};
use http::{HeaderMap, HeaderValue};
use seawall::breaker::{BreakerLayer, Trip};
use seawall::core::hint::{MAX_RETRY_HINT, RetryHint};
use seawall::core::recording::ReplayBody;
use seawall::core::{Code, Failure, RouteId, StopReason};
use seawall::fallback::{FallbackLayer, FallbackRoute};
use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

const SEC: Duration = Duration::from_secs(1);
const DAY: Duration = Duration::from_secs(24 * 3600);

/// A 429 whose `Retry-After` header is `value`, read through the one
/// parser, clamp and all.
fn rate_limited(value: &'static str) -> Failure {
    let mut headers = HeaderMap::new();
    headers.insert(http::header::RETRY_AFTER, HeaderValue::from_static(value));
    let hint = RetryHint::from_headers(&headers, SystemTime::now());
    Failure::new(Code::RateLimited)
        .with_status(429)
        .with_retry_after(hint.after.expect("a hint"))
}

/// The provider here plays its script, then answers.
fn provider(script: impl IntoIterator<Item = Option<Failure>>) -> Provider {
    Provider::new(script, None)
}

fn breaker() -> BreakerLayer {
    // Never tripped here: only the cooldown refuses.
    BreakerLayer::new().trip(Trip::Consecutive { failures: 100 })
}

/// A ladder that would sleep any hint up to 40 days, over `breaker` over
/// `provider`.
async fn operation(breaker: &BreakerLayer, provider: &Provider) -> Result<(), Failure> {
    RetryBudgetLayer::new(
        RetryPolicy::batch().max_retry_after(40 * DAY),
        Budget::unlimited(),
    )
    .seed(4)
    .layer(breaker.layer(provider.service()))
    .oneshot(request())
    .await
    .map(drop)
    .map_err(|error| Failure::find(&*error).expect("a seawall failure").clone())
}

fn stop(failure: &Failure) -> Option<StopReason> {
    failure.receipt().and_then(|receipt| receipt.stop)
}

#[tokio::test(start_paused = true)]
async fn a_cooldown_from_a_30_day_hint_is_never_waited_out_by_a_ladder() {
    let provider = provider([Some(rate_limited("2592000")), None, None]);
    let breaker = breaker();

    let first = operation(&breaker, &provider).await.expect_err("the wall");
    assert_eq!(stop(&first), Some(StopReason::HintTooLong));
    assert_eq!(provider.calls().len(), 1);

    let route = RouteId::new("prim.example");
    tokio::time::advance(SEC).await;
    // The registry a fallback reads says "a week or more", not 7 d − 1 s.
    assert_eq!(
        breaker.handle().cooldown(&route),
        Some((Code::RateLimited, Some(MAX_RETRY_HINT)))
    );

    let start = Instant::now();
    let second = operation(&breaker, &provider)
        .await
        .expect_err("refused, not waited out");
    assert_eq!(start.elapsed(), Duration::ZERO, "no sleep at all");
    assert_eq!(provider.calls().len(), 1, "the route is not called again");
    assert_eq!(second.code(), Code::RouteCoolingDown);
    assert_eq!(second.cooled_by(), Some(Code::RateLimited));
    assert_eq!(second.retry_after(), Some(MAX_RETRY_HINT));
    assert_eq!(stop(&second), Some(StopReason::HintTooLong));

    // The cooldown still ends when the clamp does: the route is called.
    tokio::time::advance(7 * DAY).await;
    assert_eq!(breaker.handle().cooldown(&route), None);
    operation(&breaker, &provider)
        .await
        .expect("the route answers once its cooldown is over");
    assert_eq!(provider.calls().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_cooldown_from_a_60_second_hint_is_still_waited_out() {
    let provider = provider([Some(rate_limited("60")), None, None]);
    let breaker = breaker();
    // Another request's 429, with no ladder: the route cools down.
    let error = breaker
        .layer(provider.service())
        .oneshot(request().map(ReplayBody::once))
        .await
        .map_err(tower::BoxError::from)
        .expect_err("rate limited");
    assert_eq!(Failure::find(&*error).unwrap().code(), Code::RateLimited);
    let cooled_at = Instant::now();

    tokio::time::advance(SEC).await;
    assert_eq!(
        breaker.handle().cooldown(&RouteId::new("prim.example")),
        Some((Code::RateLimited, Some(59 * SEC)))
    );
    operation(&breaker, &provider)
        .await
        .expect("the refusal is waited out");
    let calls = provider.calls();
    assert_eq!(calls.len(), 2);
    assert!(
        calls[1] >= cooled_at + 60 * SEC,
        "{:?}",
        calls[1] - cooled_at
    );
}

/// A fallback that would wait 40 days for a route, over a primary its
/// breaker cooled after a 30-day hint (the breaker's handle as the route
/// health registry, as `Stack::build_with_fallback` wires it), and another
/// route its own breaker cooled so: neither is waited for.
#[tokio::test(start_paused = true)]
async fn a_fallback_does_not_wait_for_a_route_cooled_at_the_clamp() {
    let primary = provider([Some(rate_limited("2592000")), None]);
    let other = provider([Some(rate_limited("2592000")), None]);
    let breaker = breaker();
    let handle = breaker.handle();
    // The other route behind the same breakers, which cool it too.
    let layer = FallbackLayer::chain([
        FallbackRoute::new(breaker.layer(other.service())).route(RouteId::new("other"))
    ])
    .max_wait(40 * DAY)
    .health_or(move |route: &RouteId| handle.cooldown(route));
    let fallback = layer.layer(breaker.layer(primary.service()));

    let start = Instant::now();
    let first = fallback.clone().oneshot(request()).await;
    assert!(first.is_err(), "both routes fail");
    assert_eq!(start.elapsed(), Duration::ZERO, "no wait for either");
    assert_eq!((primary.calls().len(), other.calls().len()), (1, 1));
    let routes = breaker.handle().routes();
    assert_eq!(routes.len(), 2, "{routes:?}");

    tokio::time::advance(SEC).await;
    let start = Instant::now();
    let second = fallback.oneshot(request()).await;
    assert!(second.is_err(), "no route comes back within the operation");
    assert_eq!(start.elapsed(), Duration::ZERO, "no wait for the primary");
    assert_eq!(
        (primary.calls().len(), other.calls().len()),
        (1, 1),
        "neither route is called again"
    );
}
