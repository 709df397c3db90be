//! A ladder under a layer that records the body itself (a fallback, a
//! resume) and made the operation's slots: "may be billed" is still each
//! of the ladder's attempts' own sending, not the upper recording's, and
//! not the ladder's read ahead.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::receipt;
use http::{Request, Response};
use http_body_util::BodyExt;
use seawall_core::facts::OperationSlots;
use seawall_core::recording::ReplayBody;
use seawall_core::{Code, Failure, RequestFacts};
use seawall_deadline::DeadlineLayer;
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{BoxError, ServiceBuilder, ServiceExt, service_fn};

const SEC: Duration = Duration::from_secs(1);

type Inner = ReplayBody<ReplayBody<String>>;

/// What `Fallback::call` does above its primary's ladder: a recording
/// filling the operation's slots, the facts in the request.
fn as_a_fallback_does(request: Request<String>) -> Request<ReplayBody<String>> {
    let slot = Arc::new(OperationSlots::default());
    let (mut parts, body) = request.into_parts();
    parts
        .extensions
        .insert(RequestFacts::from_parts(&parts).with_slots(slot.clone()));
    let body = ReplayBody::recorded(body, 1 << 20).fill_facts(slot);
    Request::from_parts(parts, body)
}

#[tokio::test(start_paused = true)]
async fn under_a_fallback_an_attempt_that_never_sent_its_body_is_not_billed() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let upstream = service_fn(move |request: Request<Inner>| {
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
    let ladder = RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited()).seed(4);
    let svc = ServiceBuilder::new()
        .layer(ladder)
        .layer(DeadlineLayer::per_attempt(20 * SEC))
        .service(upstream);
    let request = as_a_fallback_does(
        Request::post("https://api.openai.example/v1/chat/completions")
            .body(String::from(r#"{"model":"m","messages":[]}"#))
            .unwrap(),
    );
    let err = svc.oneshot(request).await.unwrap_err();
    let receipt = receipt(&err);
    assert_eq!(receipt.attempts.len(), 2);
    assert!(receipt.attempts[0].may_be_billed(), "{receipt:?}");
    assert!(!receipt.attempts[1].may_be_billed(), "{receipt:?}");
}

/// A subscriber that records every span: the ladder then reads the body
/// ahead to name its operation's span.
struct On;
impl tracing::Subscriber for On {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// With a subscriber recording spans, the ladder reads the body ahead
/// (through the fallback's handle): a first attempt stuck in its connect
/// never sent it.
#[tokio::test(start_paused = true)]
async fn under_a_fallback_a_read_ahead_is_no_sending() {
    let _guard = tracing::subscriber::set_default(On);
    let upstream = service_fn(move |_request: Request<Inner>| async move {
        std::future::pending::<()>().await;
        Ok::<Response<String>, BoxError>(Response::new(String::new()))
    });
    let ladder = RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited()).seed(4);
    let svc = ServiceBuilder::new()
        .layer(ladder)
        .layer(DeadlineLayer::per_attempt(20 * SEC))
        .service(upstream);
    let request = as_a_fallback_does(
        Request::post("https://api.openai.example/v1/chat/completions")
            .body(String::from(r#"{"model":"m","messages":[]}"#))
            .unwrap(),
    );
    let err = svc.oneshot(request).await.unwrap_err();
    let receipt = receipt(&err);
    assert!(!receipt.attempts[0].may_be_billed(), "{receipt:?}");
}
