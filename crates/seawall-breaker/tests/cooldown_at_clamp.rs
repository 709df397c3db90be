//! A route cooled by a hint at the clamp (`MAX_RETRY_HINT`, a week: every
//! longer hint is cut to it when parsed, so a 30-day `Retry-After` reads
//! as 7 days) names no return for as long as it cools: the handle and
//! every refusal meanwhile say the clamp itself, not the time left, and a
//! gated `poll_ready` does not wait it out. The cooldown still ends after
//! the clamp — on tokio's paused clock.

// Each test binary compiles the shared module on its own and uses only
// part of it.
#[allow(dead_code)]
mod common;

use std::time::Duration;

use common::{Plan, Provider, request, route};
use seawall_breaker::{Breaker, BreakerHandle, BreakerLayer, Trip};
use seawall_core::hint::MAX_RETRY_HINT;
use seawall_core::{Code, Failure};
use tower::{Layer, Service, ServiceExt};

const SEC: Duration = Duration::from_secs(1);

fn rate_limited(after: Duration) -> Failure {
    Failure::new(Code::RateLimited)
        .with_status(429)
        .with_retry_after(after)
}

fn gated() -> BreakerLayer {
    // Never tripped here: only the cooldown refuses.
    BreakerLayer::new()
        .trip(Trip::Consecutive { failures: 100 })
        .gate_readiness(true)
}

/// A gated service whose one call was rate-limited for `after`, a second
/// later: its handle, its provider and the service.
async fn cooled_for(after: Duration) -> (BreakerHandle, Provider, Breaker<Provider>) {
    let layer = gated();
    let handle = layer.handle();
    let provider = Provider::new();
    let mut service = layer.layer(provider.clone());
    service.ready().await.unwrap();
    service
        .call(request(Plan::Fail(rate_limited(after))))
        .await
        .unwrap_err();

    tokio::time::advance(SEC).await;
    (handle, provider, service)
}

#[tokio::test(start_paused = true)]
async fn a_cooldown_at_the_clamp_is_refused_at_once_with_the_clamp() {
    let (handle, provider, mut service) = cooled_for(MAX_RETRY_HINT).await;
    assert_eq!(
        handle.cooldown(&route()),
        Some((Code::RateLimited, Some(MAX_RETRY_HINT))),
        "a week or more, not 7 d - 1 s"
    );
    // Ready at once: nothing to wait out.
    tokio::time::timeout(Duration::from_millis(1), service.ready())
        .await
        .expect("ready at once")
        .unwrap();
    let refused = service.call(request(Plan::Ok)).await.unwrap_err();
    let refused = Failure::downcast(refused.into_box()).expect("a refusal");
    assert_eq!(refused.code(), Code::RouteCoolingDown);
    assert_eq!(refused.cooled_by(), Some(Code::RateLimited));
    assert_eq!(refused.retry_after(), Some(MAX_RETRY_HINT));
    assert_eq!(provider.calls(), 1);

    // The cooldown still ends then: the route is called again.
    tokio::time::advance(MAX_RETRY_HINT).await;
    assert_eq!(handle.cooldown(&route()), None);
    service.ready().await.unwrap();
    service.call(request(Plan::Ok)).await.unwrap();
    assert_eq!(provider.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_shorter_cooldown_still_says_its_time_left_and_is_waited_for() {
    let (handle, provider, mut service) = cooled_for(60 * SEC).await;
    assert_eq!(
        handle.cooldown(&route()),
        Some((Code::RateLimited, Some(59 * SEC)))
    );
    assert!(
        tokio::time::timeout(SEC, service.ready()).await.is_err(),
        "the gate waits a rate limit out"
    );
    let mut service = tokio::time::timeout(60 * SEC, async move {
        service.ready().await.unwrap();
        service
    })
    .await
    .expect("ready once the cooldown ends");
    service.call(request(Plan::Ok)).await.unwrap();
    assert_eq!(provider.calls(), 2);
}
