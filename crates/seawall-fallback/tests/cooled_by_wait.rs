//! Without a route health registry, the fallback reads when a route is
//! back from its failure. A local refusal (`route_cooling_down`, from a
//! breaker or a route set whose members all cool) says what cooled the
//! route in `cooled_by`: a quota wall behind it is never waited for, and
//! a rate limit behind it is waited for as the rate limit itself would be
//! — on tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use seawall_core::{Class, Code, Failure, RouteId};
use seawall_fallback::{FallbackLayer, FallbackRoute};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

mod common;

use common::{SEC, request, scripted};

/// A local refusal of a route cooling after `cause`, as the breaker
/// builds it.
fn refusal(cause: Code, left: Duration) -> Failure {
    let class = if cause == Code::RateLimited {
        Class::Transient
    } else {
        Class::Permanent
    };
    Failure::with_class(class, Code::RouteCoolingDown)
        .with_cooled_by(cause)
        .with_retry_after(left)
}

#[tokio::test(start_paused = true)]
async fn a_refusal_behind_a_quota_wall_is_not_waited_for() {
    let primary_calls = Arc::new(AtomicUsize::new(0));
    let b_calls = Arc::new(AtomicUsize::new(0));
    let primary = scripted(&primary_calls, |_| {
        Some(refusal(Code::QuotaExhausted, 30 * SEC))
    });
    let b = scripted(&b_calls, |n| {
        (n == 0).then(|| {
            Failure::new(Code::RateLimited)
                .with_status(429)
                .with_retry_after(50 * SEC)
        })
    });
    let layer = FallbackLayer::chain([FallbackRoute::new(b).route(RouteId::new("b"))]);
    let start = Instant::now();
    let result = layer.layer(primary).oneshot(request(None)).await;
    assert_eq!(
        primary_calls.load(Ordering::SeqCst),
        1,
        "the wall is there when its time ends"
    );
    assert_eq!(b_calls.load(Ordering::SeqCst), 2, "b is waited for");
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(start.elapsed(), 50 * SEC);
}

#[tokio::test(start_paused = true)]
async fn a_refusal_behind_a_rate_limit_back_too_late_fails_with_the_rate_limit() {
    let primary_calls = Arc::new(AtomicUsize::new(0));
    let b_calls = Arc::new(AtomicUsize::new(0));
    let primary = scripted(&primary_calls, |_| {
        Some(refusal(Code::RateLimited, 30 * SEC))
    });
    let b = scripted(&b_calls, |_| Some(refusal(Code::RateLimited, 40 * SEC)));
    let layer = FallbackLayer::chain([FallbackRoute::new(b).route(RouteId::new("b"))]);
    let error = layer
        .layer(primary)
        .oneshot(request(Some(10 * SEC)))
        .await
        .expect_err("every route is back too late");
    let failure = Failure::find(&*error).expect("a seawall failure");
    // As the docs say: seawall's refusal of that route, naming its
    // `rate_limited`, its time left.
    assert_eq!(failure.code(), Code::RouteCoolingDown);
    assert_eq!(failure.cooled_by(), Some(Code::RateLimited));
    assert_eq!(failure.retry_after(), Some(30 * SEC));
    assert_eq!(
        (
            primary_calls.load(Ordering::SeqCst),
            b_calls.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
}
