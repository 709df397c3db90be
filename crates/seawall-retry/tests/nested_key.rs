//! An inner ladder that stands down under an outer one sends no
//! idempotency key of its own, and says so: the key belongs on the
//! outermost ladder.
//!
//! A test binary of its own: the warning is said once per process, and
//! tracing caches whether a callsite is wanted process-wide.

mod common;

use common::{Step, Upstream};
use http::{HeaderName, Request};
use seawall_core::recording::ReplayBody;
use seawall_core::{Code, Failure};
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use seawall_test::trace::Recorder;
use tower::{ServiceBuilder, ServiceExt};

#[tokio::test(start_paused = true)]
async fn a_nested_ladder_says_its_key_is_not_sent() {
    let recorder = Recorder::new();
    let _guard = recorder.install();
    let key = HeaderName::from_static("idempotency-key");
    let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded)), Step::Ok]);
    let service = ServiceBuilder::new()
        .layer(RetryBudgetLayer::new(
            RetryPolicy::no_wait(2),
            Budget::unlimited(),
        ))
        .layer(RetryBudgetLayer::new(
            RetryPolicy::no_wait(2).idempotency_key(key.clone()),
            Budget::unlimited(),
        ))
        .service(upstream.service::<ReplayBody<ReplayBody<String>>>());
    service
        .oneshot(Request::new(String::from("{}")))
        .await
        .unwrap();

    let calls = upstream.calls();
    assert_eq!(calls.len(), 2, "the outer ladder retried");
    assert!(calls.iter().all(|call| !call.headers.contains_key(&key)));
    let warned: Vec<_> = recorder
        .events_of("seawall::retry")
        .into_iter()
        .filter(|fields| fields.get("header") == Some(key.as_str()))
        .collect();
    assert_eq!(warned.len(), 1, "said once, naming the header");
}
