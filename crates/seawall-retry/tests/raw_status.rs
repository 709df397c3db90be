//! Without `ClassifyLayer` below, an error status is an answer: the ladder
//! delivers it (it cannot judge it) but it earns the retry budget nothing,
//! where a classified answer does.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::{Request, Response, StatusCode};
use seawall_core::recording::ReplayBody;
use seawall_core::{Code, Failure};
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{BoxError, Layer, ServiceExt};

/// Fails (retryably) on every even call, answers `status` on every odd one.
fn upstream(
    calls: Arc<AtomicUsize>,
    status: StatusCode,
) -> impl tower::Service<Request<ReplayBody<String>>, Response = Response<String>, Error = BoxError>
+ Clone {
    tower::service_fn(move |_: Request<ReplayBody<String>>| {
        let call = calls.fetch_add(1, Ordering::SeqCst);
        async move {
            if call.is_multiple_of(2) {
                return Err::<_, BoxError>(Failure::new(Code::Overloaded).into());
            }
            let mut response = Response::new(String::new());
            *response.status_mut() = status;
            Ok(response)
        }
    })
}

/// One operation against `status`: its delivered status, and the budget's
/// tokens after it.
async fn operation(budget: &Budget, status: StatusCode) -> (StatusCode, f64) {
    let calls = Arc::new(AtomicUsize::new(0));
    let ladder = RetryBudgetLayer::new(RetryPolicy::no_wait(3), budget.clone()).seed(1);
    let response = ladder
        .layer(upstream(Arc::clone(&calls), status))
        .oneshot(Request::new(String::from("{}")))
        .await
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "one retry, then the answer"
    );
    (response.status(), budget.tokens())
}

#[tokio::test(start_paused = true)]
async fn an_unclassified_error_status_is_delivered_but_not_credited() {
    let budget = Budget::grpc(10, 0.5);
    let start = budget.tokens();

    // The failure takes a token; the raw 503 after it gives none back.
    let (status, after_503) = operation(&budget, StatusCode::SERVICE_UNAVAILABLE).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "delivered");
    assert_eq!(after_503, start - 1.0);

    // A 200 after the same failure is credited its ratio.
    let (status, after_200) = operation(&budget, StatusCode::OK).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(after_200, after_503 - 1.0 + 0.5);
}
