//! A route set refusing a call because every member is cooling down called
//! no one: under a retry ladder its refusal is no upstream attempt — the
//! receipt counts no call and the retry budget gives no token for it, so
//! a burst refused through one cooldown leaves the budget whole for the
//! real retries after (tokio's paused clock).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use seawall::core::recording::ReplayBody;
use seawall::core::{BoxError, Code, Failure, RouteId};
use seawall::fallback::{Member, RouteSetLayer};
use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{Layer, ServiceExt};

type Req = http::Request<ReplayBody<Full<Bytes>>>;

const LEFT: Duration = Duration::from_secs(90);

fn request() -> http::Request<Full<Bytes>> {
    http::Request::post("https://api.example.com/v1/chat/completions")
        .body(Full::new(Bytes::from_static(br#"{"model":"m"}"#)))
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_route_sets_refusal_is_no_call_and_spends_no_budget_token() {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let provider = tower::service_fn(move |_: Req| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, BoxError>(http::Response::new(Full::new(Bytes::from_static(b"ok")))) }
    });
    // Both members rate-limited for 90 s, as the breaker would say it:
    // past the ladder's longest wait, so the set refuses at once.
    let set = RouteSetLayer::new([Member::new("a"), Member::new("b")])
        .unwrap()
        .seed(2)
        .health(|_: &RouteId| || Some((Code::RateLimited, Some(LEFT))));
    let budget = Budget::grpc(2, 0.1);
    let tokens = budget.tokens();
    let service = RetryBudgetLayer::new(RetryPolicy::interactive(), budget.clone())
        .layer(set.layer(provider));
    for n in 0..3 {
        let error = service
            .clone()
            .oneshot(request())
            .await
            .expect_err("every member is cooling down");
        let failure = Failure::find(&*error).expect("a seawall failure");
        let receipt = failure.receipt().expect("the ladder's receipt");
        assert_eq!(receipt.calls(), 0, "call {n}: nothing reached a member");
        assert_eq!(budget.tokens(), tokens, "call {n}: no token spent");
        // The caller still learns why and for how long: the cause is
        // what cooled the member back first.
        assert_eq!(failure.code(), Code::RouteCoolingDown);
        assert_eq!(failure.cooled_by(), Some(Code::RateLimited));
        assert!(failure.retry_after().is_some_and(|left| left <= LEFT));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}
