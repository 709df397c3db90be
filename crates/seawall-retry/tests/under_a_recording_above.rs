//! A ladder under a layer that records the body itself (a fallback, a
//! resume) and made the operation's slots: "may be billed" is still each
//! of the ladder's attempts' own sending, not the upper recording's, and
//! not the ladder's read ahead.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::receipt;
use http::{Request, Response};
use http_body_util::BodyExt;
use seawall_core::facts::OperationSlots;
use seawall_core::recording::ReplayBody;
use seawall_core::{Code, Failure, Receipt};
use seawall_deadline::DeadlineLayer;
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use seawall_test::trace::Recorder;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt, service_fn};

type Inner = ReplayBody<ReplayBody<String>>;

/// A chat completion recorded as a fallback records it above its
/// primary's ladder (the operation's slots made there), sent through a
/// ladder of two attempts, each bounded at 20 s, to `upstream`; the
/// receipt of the failure.
async fn under_a_fallback<S>(upstream: S) -> Receipt
where
    S: Service<Request<Inner>, Response = Response<String>, Error = BoxError>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    let request = Request::post("https://api.openai.example/v1/chat/completions")
        .body(String::from(r#"{"model":"m","messages":[]}"#))
        .unwrap();
    let (mut parts, body) = request.into_parts();
    let slots = Some(OperationSlots::default());
    let body = ReplayBody::recorded_for(&mut parts, body, 1 << 20, slots);
    let svc = ServiceBuilder::new()
        .layer(RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited()).seed(4))
        .layer(DeadlineLayer::per_attempt(Duration::from_secs(20)))
        .service(upstream);
    let err = svc
        .oneshot(Request::from_parts(parts, body))
        .await
        .unwrap_err();
    receipt(&err).clone()
}

#[tokio::test(start_paused = true)]
async fn under_a_fallback_an_attempt_that_never_sent_its_body_is_not_billed() {
    let calls = Arc::new(AtomicUsize::new(0));
    let receipt = under_a_fallback(service_fn(move |request: Request<Inner>| {
        let call = calls.fetch_add(1, Ordering::SeqCst);
        async move {
            if call == 0 {
                request.into_body().collect().await?;
                return Err(
                    Box::new(Failure::new(Code::Transport).with_message("connection reset"))
                        as BoxError,
                );
            }
            // Connecting for ever: the body is never polled.
            std::future::pending::<()>().await;
            unreachable!("the bound cuts the attempt")
        }
    }))
    .await;
    assert_eq!(receipt.attempts.len(), 2);
    assert!(receipt.attempts[0].may_be_billed(), "{receipt:?}");
    assert!(!receipt.attempts[1].may_be_billed(), "{receipt:?}");
}

/// With a subscriber recording spans, the ladder reads the body ahead
/// (through the fallback's handle) to name its operation's span: a first
/// attempt stuck in its connect never sent it.
#[tokio::test(start_paused = true)]
async fn under_a_fallback_a_read_ahead_is_no_sending() {
    let recorder = Recorder::new();
    let _guard = recorder.install();
    let receipt = under_a_fallback(service_fn(|_: Request<Inner>| async {
        std::future::pending::<()>().await;
        Ok::<Response<String>, BoxError>(Response::new(String::new()))
    }))
    .await;
    assert!(!receipt.attempts[0].may_be_billed(), "{receipt:?}");
    assert_eq!(
        recorder
            .span("operation")
            .fields
            .get("gen_ai.request.model"),
        Some("m")
    );
}
