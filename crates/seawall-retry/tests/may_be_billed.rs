//! An attempt cut before its answer came, after its request reached the
//! provider whole, may have been billed: a unary generation runs on when
//! its client goes away, and the provider bills it. The receipt counts
//! such attempts apart from the billed ones; an attempt whose request
//! never went out whole, or that was answered with an error, is neither.

mod common;

use std::time::Duration;

use common::{Step, Upstream, openai, receipt};
use http::{Request, Response};
use http_body_util::BodyExt;
use seawall_core::recording::ReplayBody;
use seawall_core::{Code, Failure};
use seawall_deadline::DeadlineLayer;
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{BoxError, Layer, ServiceBuilder, ServiceExt, service_fn};

const SEC: Duration = Duration::from_secs(1);

fn ladder() -> RetryBudgetLayer {
    RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited()).seed(4)
}

fn chat() -> Request<String> {
    Request::post("https://api.openai.example/v1/chat/completions")
        .body(String::from(r#"{"model":"m","messages":[]}"#))
        .unwrap()
}

/// `Stack::interactive()`'s trigger: a unary answer that takes longer
/// than the per-attempt bound. Each attempt's request reached the
/// provider whole and was cut with no answer head: two generations ran,
/// neither certain to be billed, both possibly.
#[tokio::test(start_paused = true)]
async fn a_whole_request_cut_before_its_answer_may_be_billed() {
    let upstream = Upstream::new([Step::Hang]);
    let svc = ServiceBuilder::new()
        .layer(ladder())
        .layer(DeadlineLayer::per_attempt(20 * SEC))
        .service(upstream.service());
    let err = svc.oneshot(chat()).await.unwrap_err();
    assert_eq!(upstream.count(), 2);
    let receipt = receipt(&err);
    assert_eq!(receipt.attempts.len(), 2);
    assert_eq!(receipt.billed_attempts(), 0, "no answer said it was");
    assert_eq!(receipt.may_be_billed_attempts(), 2);
    assert_eq!(receipt.billed_without_usage(), 0);
    assert!(receipt.attempts.iter().all(|a| a.may_be_billed()));
}

/// A request the provider does not bill (a `GET` of a stored answer) cut
/// the same way costs nothing.
#[tokio::test(start_paused = true)]
async fn a_request_not_billed_cut_before_its_answer_is_not() {
    let upstream = Upstream::new([Step::Hang]);
    let svc = ServiceBuilder::new()
        .layer(ladder())
        .layer(DeadlineLayer::per_attempt(20 * SEC))
        .service(upstream.service());
    let request = Request::get("https://api.openai.example/v1/responses/resp_1")
        .body(String::new())
        .unwrap();
    let err = svc.oneshot(request).await.unwrap_err();
    assert_eq!(upstream.count(), 2);
    assert_eq!(receipt(&err).may_be_billed_attempts(), 0);
}

/// A connection refused before the body was read: the provider never saw
/// the request.
#[tokio::test(start_paused = true)]
async fn a_request_refused_before_its_body_was_sent_is_not() {
    let upstream = service_fn(|_: Request<ReplayBody<String>>| async {
        Err::<Response<String>, BoxError>(Box::new(
            Failure::new(Code::Transport).with_message("connection refused"),
        ))
    });
    let err = ladder().layer(upstream).oneshot(chat()).await.unwrap_err();
    let receipt = receipt(&err);
    assert_eq!(receipt.attempts.len(), 2);
    assert_eq!(receipt.may_be_billed_attempts(), 0);
    assert_eq!(receipt.billed_attempts(), 0);
}

/// A 503 is an answer: the provider said it generated nothing.
#[tokio::test(start_paused = true)]
async fn an_error_answer_is_not() {
    let unavailable = openai(503, None, r#"{"error":{"message":"busy"}}"#);
    let upstream = Upstream::new([Step::Fail(unavailable)]);
    let svc = ladder().layer(upstream.service::<ReplayBody<String>>());
    let err = svc.oneshot(chat()).await.unwrap_err();
    assert_eq!(upstream.count(), 2, "the whole body was read each time");
    let receipt = receipt(&err);
    assert_eq!(receipt.attempts.len(), 2);
    assert_eq!(receipt.may_be_billed_attempts(), 0);
    assert_eq!(receipt.billed_attempts(), 0);
}

/// seawall's own refusal of a route calls no one, whatever the body's
/// recording says: here the layer that refuses read the body first, so
/// the operation's body counts as sent.
#[tokio::test(start_paused = true)]
async fn a_refusal_of_seawalls_is_not() {
    let upstream = service_fn(|request: Request<ReplayBody<String>>| async move {
        request.into_body().collect().await?;
        Err::<Response<String>, BoxError>(Box::new(Failure::route_refusal(None)))
    });
    let err = ladder().layer(upstream).oneshot(chat()).await.unwrap_err();
    let receipt = receipt(&err);
    assert!(!receipt.attempts.is_empty());
    assert!(
        receipt
            .attempts
            .iter()
            .all(|a| a.code == Some(Code::CircuitOpen))
    );
    assert_eq!(receipt.may_be_billed_attempts(), 0);
    assert_eq!(receipt.billed_attempts(), 0);
}

/// The body's fact is each attempt's own: the first attempt's request
/// went out whole and its connection reset (it may have been billed); the
/// second never had its body read (a connect that never finished) and its
/// bound cut it. Only the first counts.
#[tokio::test(start_paused = true)]
async fn an_attempt_that_never_sent_its_body_is_not_though_one_before_did() {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let upstream = service_fn(move |request: Request<ReplayBody<String>>| {
        let call = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            if call == 0 {
                request.into_body().collect().await?;
                return Err::<Response<String>, BoxError>(Box::new(
                    Failure::new(Code::Transport).with_message("connection reset"),
                ));
            }
            // Connecting for ever: the body is never polled.
            std::future::pending::<()>().await;
            unreachable!("the bound cuts the attempt")
        }
    });
    let svc = ServiceBuilder::new()
        .layer(ladder())
        .layer(DeadlineLayer::per_attempt(20 * SEC))
        .service(upstream);
    let err = svc.oneshot(chat()).await.unwrap_err();
    let receipt = receipt(&err);
    assert_eq!(receipt.attempts.len(), 2);
    assert!(receipt.attempts[0].may_be_billed(), "{receipt:?}");
    assert!(!receipt.attempts[1].may_be_billed(), "{receipt:?}");
    assert_eq!(receipt.may_be_billed_attempts(), 1);
}
