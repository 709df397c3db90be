//! The shared budget under load, and nested ladders.

mod common;

use std::time::Duration;

use common::{Step, Upstream, failure, receipt};
use http::Request;
use seawall_core::recording::ReplayBody;
use seawall_core::{Action, Code, Failure, StopReason};
use seawall_retry::{Backoff, Budget, Jitter, RetryBudgetLayer, RetryPolicy};
use tower::{Layer, ServiceBuilder, ServiceExt};

#[tokio::test(start_paused = true)]
async fn a_thousand_failing_operations_spend_at_most_the_grpc_budget() {
    let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded))]);
    let budget = Budget::grpc(10, 0.1);
    let svc = RetryBudgetLayer::new(RetryPolicy::no_wait(3), budget.clone())
        .seed(1)
        .layer(upstream.service::<ReplayBody<String>>());
    let tasks: Vec<_> = (0..1000)
        .map(|_| tokio::spawn(svc.clone().oneshot(Request::new(String::from("{}")))))
        .collect();
    let mut stopped_by_budget = 0;
    for task in tasks {
        let err = task.await.unwrap().unwrap_err();
        if receipt(&err).stop == Some(StopReason::Budget) {
            stopped_by_budget += 1;
            // Not `retry`: a caller obeying it would spend what the
            // budget refused.
            assert_eq!(failure(&err).action(), Action::Failover);
        }
    }
    // 10 tokens, retries only while more than 5 remain: 4 retries at most.
    let retries = upstream.count() - 1000;
    assert!(retries <= 4, "{retries} retries");
    assert!(retries >= 1, "the budget allows some retries");
    assert!(stopped_by_budget >= 990);
    assert_eq!(budget.tokens(), 0.0);
}

#[tokio::test(start_paused = true)]
async fn an_empty_aws_bucket_returns_the_failure_at_once() {
    let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded))]);
    let budget = Budget::aws_standard();
    let svc = RetryBudgetLayer::new(RetryPolicy::no_wait(2), budget.clone())
        .layer(upstream.service::<ReplayBody<String>>());
    // 500 tokens at 5 per retry: 100 retries, then none.
    for _ in 0..150 {
        let err = svc
            .clone()
            .oneshot(Request::new(String::new()))
            .await
            .unwrap_err();
        assert_eq!(failure(&err).code(), Code::Overloaded);
    }
    assert_eq!(upstream.count(), 150 + 100);
    assert_eq!(budget.tokens(), 0.0);
}

#[tokio::test(start_paused = true)]
async fn a_ratio_budget_allows_its_fraction_of_retries() {
    let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded))]);
    let budget = Budget::ratio(0.6, 0, std::time::Duration::from_secs(10));
    let svc = RetryBudgetLayer::new(RetryPolicy::no_wait(2), budget)
        .layer(upstream.service::<ReplayBody<String>>());
    for _ in 0..100 {
        svc.clone()
            .oneshot(Request::new(String::new()))
            .await
            .unwrap_err();
    }
    // Each operation deposits 0.6 before it fails; 60 retries, give or
    // take the one a deposit arrives too late for.
    let retries = upstream.count() - 100;
    assert!((59..=60).contains(&retries), "{retries} retries");
}

#[tokio::test(start_paused = true)]
async fn a_retry_dropped_before_it_is_sent_gives_back_what_it_withdrew() {
    // A caller that gives up during the backoff (a closed tab, an outer
    // deadline) never sends the retry it was granted: charging for it
    // would drain the budget without any load on the provider, and the
    // next caller's real retry would be refused.
    for (budget, full) in [
        (Budget::aws_standard(), 500.0),
        (Budget::ratio(0.0, 1, Duration::from_secs(10)), 10.0),
    ] {
        let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded))]);
        let policy = RetryPolicy::no_wait(2).backoff(
            Backoff::exponential(Duration::from_secs(1), Duration::from_secs(1))
                .with_jitter(Jitter::None),
        );
        let svc = RetryBudgetLayer::new(policy, budget.clone())
            .layer(upstream.service::<ReplayBody<String>>());
        for _ in 0..200 {
            let call = svc.clone().oneshot(Request::new(String::new()));
            // Dropped while it sleeps the backoff before its retry.
            let gave_up = tokio::time::timeout(Duration::from_millis(500), call).await;
            assert!(
                gave_up.is_err(),
                "{budget:?} refused a retry: the dropped ones were charged"
            );
        }
        assert_eq!(upstream.count(), 200, "{budget:?}: no retry was sent");
        assert_eq!(budget.tokens(), full, "{budget:?}");
        // And the budget still grants a retry that is made.
        svc.oneshot(Request::new(String::new())).await.unwrap_err();
        assert_eq!(upstream.count(), 202, "{budget:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_inner_ladder_under_an_outer_one_does_not_multiply_attempts() {
    let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded))]);
    let svc = ServiceBuilder::new()
        .layer(RetryBudgetLayer::new(
            RetryPolicy::no_wait(3),
            Budget::unlimited(),
        ))
        .layer(RetryBudgetLayer::new(
            RetryPolicy::no_wait(3),
            Budget::unlimited(),
        ))
        .service(upstream.service::<ReplayBody<ReplayBody<String>>>());
    let err = svc
        .oneshot(Request::new(String::from("{}")))
        .await
        .unwrap_err();
    assert_eq!(upstream.count(), 3, "max_attempts in total, not 3 × 3");
    assert_eq!(receipt(&err).attempts.len(), 3);
    assert_eq!(receipt(&err).stop, Some(StopReason::Attempts));
}

#[tokio::test(start_paused = true)]
async fn allow_nested_lets_both_ladders_retry() {
    let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded))]);
    let svc = common::nested_ladders(&upstream);
    let err = svc
        .oneshot(Request::new(String::from("{}")))
        .await
        .unwrap_err();
    assert_eq!(upstream.count(), 4);
    // Every call the inner ladder made is in the outer one's receipt.
    assert_eq!(receipt(&err).attempts.len(), 4);
    assert_eq!(receipt(&err).billed_attempts(), 0);
    assert_eq!(receipt(&err).stop, Some(StopReason::Attempts));
}

/// A pushback saying not to retry is no retry, but it is a failure the
/// gRPC bucket counts (gRFC A6): the server's loudest call for less load
/// throttles the other calls' retries. A failure no retry follows by its
/// own kind is not counted.
#[tokio::test(start_paused = true)]
async fn a_pushback_saying_no_still_drains_the_grpc_bucket() {
    let told_no = Failure::new(Code::ProviderUnavailable).with_action(Action::Surface);
    let upstream = Upstream::new([Step::Fail(told_no)]);
    let budget = Budget::grpc(4, 0.1);
    let svc = RetryBudgetLayer::new(RetryPolicy::no_wait(3), budget.clone())
        .layer(upstream.service::<ReplayBody<String>>());
    for _ in 0..2 {
        let err = svc
            .clone()
            .oneshot(Request::new(String::new()))
            .await
            .unwrap_err();
        assert_eq!(receipt(&err).stop, Some(StopReason::NotRetryable));
    }
    assert_eq!(upstream.count(), 2, "never retried");
    assert_eq!(budget.tokens(), 2.0);

    // Not retried by its own kind, no server's word: not charged. A
    // refusal made no call; an interrupted stream is no retry to refuse.
    for code in [Code::CircuitOpen, Code::StreamInterrupted] {
        let upstream = Upstream::new([Step::Fail(Failure::new(code))]);
        let budget = Budget::grpc(4, 0.1);
        let svc = RetryBudgetLayer::new(RetryPolicy::no_wait(3), budget.clone())
            .layer(upstream.service::<ReplayBody<String>>());
        svc.oneshot(Request::new(String::new())).await.unwrap_err();
        assert_eq!(budget.tokens(), 4.0, "{code}");
    }
}

/// A gRPC retry counts the attempts before it in
/// `grpc-previous-rpc-attempts` (gRFC A6); the first attempt and any
/// request that is not gRPC carry no such header.
#[tokio::test(start_paused = true)]
async fn a_grpc_retry_says_how_many_attempts_came_before() {
    let previous = |content_type: &'static str| async move {
        let upstream = Upstream::new([
            Step::Fail(Failure::new(Code::ProviderUnavailable)),
            Step::Fail(Failure::new(Code::ProviderUnavailable)),
            Step::Ok,
        ]);
        let svc = RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited())
            .layer(upstream.service::<ReplayBody<String>>());
        let request = Request::builder()
            .header("content-type", content_type)
            .body(String::new())
            .unwrap();
        svc.oneshot(request)
            .await
            .expect("the third attempt answers");
        upstream
            .calls()
            .iter()
            .map(|call| {
                call.headers
                    .get("grpc-previous-rpc-attempts")
                    .map(|v| v.to_str().unwrap().to_owned())
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        previous("application/grpc+proto").await,
        [None, Some("1".to_owned()), Some("2".to_owned())]
    );
    assert_eq!(previous("application/json").await, [None, None, None]);
}
