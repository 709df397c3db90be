//! When every route is cooling down, the layer waits only for a route that
//! can still take the request: never for the primary once the request
//! moved for an opt-in trigger (it answered that request already), never
//! for a route whose own answer condemned the request — on tokio's paused
//! clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use seawall_core::{Code, Failure, RouteId};
use seawall_fallback::{FallbackLayer, FallbackRoute};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

mod common;

use common::{Registry, SEC, request, scripted};

const PRIMARY: &str = "primary.example";
const LARGE: &str = "large";

fn too_long() -> Failure {
    Failure::new(Code::ContextTooLong).with_status(400)
}

/// The reviewed case: the oversized request moved to "large" (sticky
/// `context_too_long`); "large" cools for 20 s after a 429, while the
/// primary cools for 2 s from other traffic. The primary cannot take the
/// request (it said so): the layer waits for "large", not for it.
#[tokio::test(start_paused = true)]
async fn after_a_trigger_the_primary_is_not_waited_for() {
    let registry = Registry::default();
    let primary_calls = Arc::new(AtomicUsize::new(0));
    let large_calls = Arc::new(AtomicUsize::new(0));
    let primary = scripted(&primary_calls, |_| Some(too_long()));
    let cooling = registry.clone();
    let large = scripted(&large_calls, move |n| {
        (n == 0).then(|| {
            cooling.cool(PRIMARY, Code::RateLimited, 2 * SEC);
            cooling.cool(LARGE, Code::RateLimited, 20 * SEC);
            Failure::new(Code::RateLimited)
                .with_status(429)
                .with_retry_after(20 * SEC)
        })
    });
    let layer = FallbackLayer::chain([FallbackRoute::new(large)
        .route(RouteId::new(LARGE))
        .only_on(Code::ContextTooLong)])
    .health(registry.health());
    let start = Instant::now();
    let result = layer.layer(primary).oneshot(request(None)).await;
    assert_eq!(
        primary_calls.load(Ordering::SeqCst),
        1,
        "the primary answered this request already"
    );
    assert_eq!(large_calls.load(Ordering::SeqCst), 2, "large is waited for");
    assert!(result.is_ok(), "large answers once back: {result:?}");
    assert_eq!(start.elapsed(), 20 * SEC);
}

/// The same, with a deadline that "large" comes back too late for: the
/// layer fails at once with its refusal (`route_cooling_down` after
/// `rate_limited`) and the time until it is back, rather than sending the request to the primary again.
#[tokio::test(start_paused = true)]
async fn after_a_trigger_a_late_route_fails_at_once_without_the_primary() {
    let registry = Registry::default();
    let primary_calls = Arc::new(AtomicUsize::new(0));
    let large_calls = Arc::new(AtomicUsize::new(0));
    let primary = scripted(&primary_calls, |_| Some(too_long()));
    let cooling = registry.clone();
    let large = scripted(&large_calls, move |_| {
        cooling.cool(PRIMARY, Code::RateLimited, 2 * SEC);
        cooling.cool(LARGE, Code::RateLimited, 20 * SEC);
        Some(
            Failure::new(Code::RateLimited)
                .with_status(429)
                .with_retry_after(20 * SEC),
        )
    });
    let layer = FallbackLayer::chain([FallbackRoute::new(large)
        .route(RouteId::new(LARGE))
        .only_on(Code::ContextTooLong)])
    .health(registry.health());
    let start = Instant::now();
    let result = layer.layer(primary).oneshot(request(Some(10 * SEC))).await;
    assert_eq!(primary_calls.load(Ordering::SeqCst), 1);
    assert_eq!(large_calls.load(Ordering::SeqCst), 1);
    assert_eq!(start.elapsed(), Duration::ZERO, "no wait");
    let error = result.expect_err("large is back too late");
    let failure = Failure::find(&*error).expect("a seawall failure");
    // seawall's refusal of the route, naming what cooled it.
    assert_eq!(failure.code(), Code::RouteCoolingDown);
    assert_eq!(failure.cooled_by(), Some(Code::RateLimited));
    assert_eq!(failure.route(), Some(&RouteId::new(LARGE)));
    assert_eq!(failure.retry_after(), Some(20 * SEC));
}

/// A route whose own answer condemned the request (`context_too_long`, no
/// route opted in) leaves nowhere to wait for: the primary, cooling after
/// its rate limit, would be the same request elsewhere.
#[tokio::test(start_paused = true)]
async fn a_request_scoped_answer_is_not_waited_out_elsewhere() {
    let registry = Registry::default();
    let primary_calls = Arc::new(AtomicUsize::new(0));
    let other_calls = Arc::new(AtomicUsize::new(0));
    let cooling = registry.clone();
    let primary = scripted(&primary_calls, move |_| {
        cooling.cool(PRIMARY, Code::RateLimited, 2 * SEC);
        Some(
            Failure::new(Code::RateLimited)
                .with_status(429)
                .with_retry_after(2 * SEC),
        )
    });
    let cooling = registry.clone();
    let other = scripted(&other_calls, move |_| {
        // Cooling from other traffic: every route is cooling down.
        cooling.cool("other", Code::RateLimited, 5 * SEC);
        Some(too_long())
    });
    let layer = FallbackLayer::chain([FallbackRoute::new(other).route(RouteId::new("other"))])
        .health(registry.health());
    let start = Instant::now();
    let result = layer.layer(primary).oneshot(request(None)).await;
    assert_eq!(primary_calls.load(Ordering::SeqCst), 1);
    assert_eq!(other_calls.load(Ordering::SeqCst), 1);
    assert_eq!(start.elapsed(), Duration::ZERO, "no wait");
    let error = result.expect_err("the request is too long");
    let failure = Failure::find(&*error).expect("a seawall failure");
    assert_eq!(failure.code(), Code::ContextTooLong);
}
