//! A caller's attempt bound above a stack with a ladder and an attempt
//! bound of its own: the inner bound counts each attempt afresh, not in
//! the `Progress` the outer bound put in the request (which the ladder
//! copies into every attempt).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::{Request, Response};
use seawall_core::recording::ReplayBody;
use seawall_core::{Failure, Progress};
use seawall_deadline::DeadlineLayer;
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{BoxError, ServiceBuilder, ServiceExt, service_fn};

/// A caller's attempt bound above a stack (its ladder, its own attempt
/// bound): each attempt's count is its own.
#[tokio::test(start_paused = true)]
async fn a_second_silent_attempt_reads_no_bytes_of_the_first() {
    let calls = Arc::new(AtomicUsize::new(0));
    let upstream = service_fn(move |req: Request<ReplayBody<String>>| {
        let call = calls.fetch_add(1, Ordering::SeqCst);
        let progress = Progress::of_request(&req).expect("progress");
        async move {
            if call == 0 {
                progress.add_bytes(17);
            }
            std::future::pending::<()>().await;
            Ok::<Response<String>, BoxError>(Response::new(String::new()))
        }
    });
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::per_attempt(Duration::from_secs(100)))
        .layer(RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited()).seed(4))
        .layer(DeadlineLayer::per_attempt(Duration::from_secs(5)))
        .service(upstream);
    let request = Request::post("https://api.openai.example/v1/chat/completions")
        .body(String::from(r#"{"model":"m","messages":[]}"#))
        .unwrap();
    let err = svc.oneshot(request).await.unwrap_err();
    let failure = Failure::find(&*err).unwrap();
    assert_eq!(
        failure.evidence().bytes,
        0,
        "the second attempt sent nothing"
    );
    assert!(failure.is_zero_byte_timeout());
}

/// The caller's bound, above the ladder, cuts first: it reads the bytes
/// of the attempt in flight, as the layers below counted them.
#[tokio::test(start_paused = true)]
async fn the_outer_bound_reads_the_attempt_in_flight() {
    let upstream = service_fn(move |req: Request<ReplayBody<String>>| {
        let progress = Progress::of_request(&req).expect("progress");
        async move {
            progress.add_bytes(17);
            std::future::pending::<()>().await;
            Ok::<Response<String>, BoxError>(Response::new(String::new()))
        }
    });
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::per_attempt(Duration::from_secs(5)))
        .layer(RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited()).seed(4))
        .layer(DeadlineLayer::per_attempt(Duration::from_secs(100)))
        .service(upstream);
    let request = Request::post("https://api.openai.example/v1/chat/completions")
        .body(String::from(r#"{"model":"m","messages":[]}"#))
        .unwrap();
    let err = svc.oneshot(request).await.unwrap_err();
    let failure = Failure::find(&*err).unwrap();
    assert_eq!(failure.evidence().bytes, 17);
    assert!(!failure.is_zero_byte_timeout());
}
