//! An error no layer classified (no seawall `Failure` in it) ends the
//! ladder as it is, and carries the receipt of the attempts made before
//! it: they were made, and billed, all the same.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::{Request, Response};
use seawall_core::recording::ReplayBody;
use seawall_core::{Code, Failure, Receipt, StopReason};
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{BoxError, Layer, ServiceExt};

/// A 200 that failed (billed), then an error of the client's own.
fn upstream(
    calls: Arc<AtomicUsize>,
) -> impl tower::Service<Request<ReplayBody<String>>, Response = Response<String>, Error = BoxError>
+ Clone {
    tower::service_fn(move |_: Request<ReplayBody<String>>| {
        let call = calls.fetch_add(1, Ordering::SeqCst);
        async move {
            let error: BoxError = match call {
                0 => Box::new(Failure::new(Code::EmptyResponse).with_status(200)),
                _ => Box::new(std::io::Error::other("the client's own error")),
            };
            Err::<Response<String>, BoxError>(error)
        }
    })
}

#[tokio::test(start_paused = true)]
async fn an_unclassified_error_comes_back_with_the_receipt() {
    let calls = Arc::new(AtomicUsize::new(0));
    let ladder = RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited());
    let request = Request::post("https://api.openai.example/v1/chat/completions")
        .body(String::from(r#"{"model":"m"}"#))
        .unwrap();
    let err = ladder
        .layer(upstream(calls.clone()))
        .oneshot(request)
        .await
        .unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "not retried");
    // The error as it was, the source of the receipt's text (which says
    // the attempts, not the error's text again).
    assert_eq!(
        err.to_string(),
        "failed after 2 attempts (stop: not_retryable)"
    );
    assert!(Failure::find(&*err).is_none());
    let source = std::error::Error::source(&*err).expect("the error");
    assert!(source.is::<std::io::Error>());
    assert_eq!(source.to_string(), "the client's own error");
    let receipt = Receipt::of_error(&*err).expect("the receipt").clone();
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    assert_eq!(codes, [Some(Code::EmptyResponse), Some(Code::Unknown)]);
    assert_eq!(receipt.billed_attempts(), 1);
    assert_eq!(receipt.stop, Some(StopReason::NotRetryable));
    let (bare, detached) = Receipt::detach(err);
    assert!(bare.is::<std::io::Error>());
    assert_eq!(detached, Some(receipt));
}
