//! A provider's "do not repeat" (`x-should-retry: false` on a 503) holds
//! for an opted-in trigger too: the request is not sent to another route
//! for a transient failure the provider said not to repeat. A
//! request-scoped trigger still moves it.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use common::{Boxed, request, scripted};
use seawall_core::hint::RetryHint;
use seawall_core::provider::{ErrorContext, Provider, QuotaWall, classify_error};
use seawall_core::{Code, Failure, RouteId};
use seawall_fallback::{FallbackLayer, FallbackRoute};
use tower::{Layer, ServiceExt};

/// A 503 as the classifier reads it, with `x-should-retry: false`.
fn unavailable_do_not_repeat() -> Failure {
    let mut headers = http::HeaderMap::new();
    headers.insert("x-should-retry", http::HeaderValue::from_static("false"));
    let now = SystemTime::now();
    let cx = ErrorContext {
        status: Some(503),
        hint: RetryHint::from_headers(&headers, now),
        quota_wall: QuotaWall::default(),
        now,
    };
    classify_error(Provider::Http, b"", cx)
}

fn route(service: Boxed, name: &str, trigger: Code) -> FallbackRoute<Boxed> {
    FallbackRoute::new(service)
        .route(RouteId::new(name))
        .only_on(trigger)
}

#[tokio::test]
async fn an_opted_in_trigger_does_not_take_a_failure_the_provider_said_not_to_repeat() {
    let primary_calls = Arc::new(AtomicUsize::new(0));
    let primary = scripted(&primary_calls, |_| Some(unavailable_do_not_repeat()));
    let calls = Arc::new(AtomicUsize::new(0));
    let spare = FallbackRoute::new(scripted(&calls, |_| None))
        .route(RouteId::new("spare"))
        .on(Code::ProviderUnavailable);
    let error = FallbackLayer::chain([spare])
        .layer(primary)
        .oneshot(request(None))
        .await
        .expect_err("the primary's failure, not repeated elsewhere");
    let failure = Failure::find(&*error).expect("a seawall failure");
    assert_eq!(failure.code(), Code::ProviderUnavailable);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the spare was never called"
    );
}

#[tokio::test]
async fn a_route_moved_to_for_a_trigger_passes_on_no_failure_it_was_told_not_to_repeat() {
    // The primary's plain 503 moves the request to the first route for its
    // trigger; that route's 503 says not to repeat: the second is not
    // called.
    let primary_calls = Arc::new(AtomicUsize::new(0));
    let primary = scripted(&primary_calls, |_| {
        Some(Failure::new(Code::ProviderUnavailable).with_status(503))
    });
    let (first, second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let chain = [
        route(
            scripted(&first, |_| Some(unavailable_do_not_repeat())),
            "first",
            Code::ProviderUnavailable,
        ),
        route(
            scripted(&second, |_| None),
            "second",
            Code::ProviderUnavailable,
        ),
    ];
    let result = FallbackLayer::chain(chain)
        .layer(primary)
        .oneshot(request(None))
        .await;
    assert!(result.is_err());
    assert_eq!(first.load(Ordering::SeqCst), 1);
    assert_eq!(
        second.load(Ordering::SeqCst),
        0,
        "not repeated on the second"
    );
}

#[tokio::test]
async fn a_request_scoped_trigger_still_moves() {
    let primary_calls = Arc::new(AtomicUsize::new(0));
    let primary = scripted(&primary_calls, |_| Some(Failure::new(Code::ContextTooLong)));
    let calls = Arc::new(AtomicUsize::new(0));
    let large = route(scripted(&calls, |_| None), "large", Code::ContextTooLong);
    FallbackLayer::chain([large])
        .layer(primary)
        .oneshot(request(None))
        .await
        .expect("the large-context route answers");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
