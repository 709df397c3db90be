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

/// Runs a chat completion through `outer` attempt bound → ladder of two
/// attempts → `inner` attempt bound → an upstream that counts the bytes
/// `bytes(call)` says for each call and then never answers; the failure
/// the caller meets.
async fn cut(outer: u64, inner: u64, bytes: fn(usize) -> u64) -> Failure {
    let calls = Arc::new(AtomicUsize::new(0));
    let upstream = service_fn(move |req: Request<ReplayBody<String>>| {
        let call = calls.fetch_add(1, Ordering::SeqCst);
        let progress = Progress::of_request(&req).expect("progress");
        async move {
            progress.add_bytes(bytes(call));
            std::future::pending::<()>().await;
            Ok::<Response<String>, BoxError>(Response::new(String::new()))
        }
    });
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::per_attempt(Duration::from_secs(outer)))
        .layer(RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited()).seed(4))
        .layer(DeadlineLayer::per_attempt(Duration::from_secs(inner)))
        .service(upstream);
    let request = Request::post("https://api.openai.example/v1/chat/completions")
        .body(String::from(r#"{"model":"m","messages":[]}"#))
        .unwrap();
    let err = svc.oneshot(request).await.unwrap_err();
    Failure::find(&*err).unwrap().clone()
}

/// The stack's own bound cuts each attempt: the second, silent, reads no
/// byte of the first.
#[tokio::test(start_paused = true)]
async fn a_second_silent_attempt_reads_no_bytes_of_the_first() {
    let failure = cut(100, 5, |call| if call == 0 { 17 } else { 0 }).await;
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
    let failure = cut(5, 100, |_| 17).await;
    assert_eq!(failure.evidence().bytes, 17);
    assert!(!failure.is_zero_byte_timeout());
}
