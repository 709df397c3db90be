//! The budgets' arithmetic as callers see it through the layer: what a
//! deposit is worth and for how long, what a gRPC ratio refills, and how a
//! budget prints.

mod common;

use std::time::Duration;

use common::{Step, Upstream};
use http::Request;
use seawall_core::recording::ReplayBody;
use seawall_core::{Code, Failure};
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{Layer, ServiceExt};

/// Runs `n` operations through a one-attempt ladder over `upstream`,
/// ignoring their outcomes.
async fn operations(budget: &Budget, upstream: &Upstream, n: usize) {
    let svc = RetryBudgetLayer::new(RetryPolicy::no_wait(1), budget.clone())
        .layer(upstream.service::<ReplayBody<String>>());
    for _ in 0..n {
        let _ = svc.clone().oneshot(Request::new(String::new())).await;
    }
}

/// Each operation's deposit lives in the slice of the second it was made
/// in and leaves the window with that slice: a deposit made halfway
/// through the window is still counted after an earlier one expired.
#[tokio::test(start_paused = true)]
async fn ratio_deposits_slide_out_one_slice_at_a_time() {
    let upstream = Upstream::new([Step::Ok]);
    let budget = Budget::ratio(1.0, 0, Duration::from_secs(10));
    operations(&budget, &upstream, 1).await;
    tokio::time::advance(Duration::from_millis(5500)).await;
    assert_eq!(budget.tokens(), 1.0, "the first deposit is still live");
    operations(&budget, &upstream, 2).await;
    assert_eq!(budget.tokens(), 3.0);
    tokio::time::advance(Duration::from_secs(5)).await;
    assert_eq!(budget.tokens(), 2.0, "only the first deposit expired");
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(budget.tokens(), 0.0);
}

/// One operation a second for many windows: the window always holds the
/// last ten seconds' deposits, never a slot's deposit from an earlier lap.
#[tokio::test(start_paused = true)]
async fn ratio_window_holds_exactly_the_last_ttl_of_deposits() {
    let upstream = Upstream::new([Step::Ok]);
    let budget = Budget::ratio(0.5, 0, Duration::from_secs(10));
    for second in 0..250u32 {
        operations(&budget, &upstream, 1).await;
        let live = f64::from((second + 1).min(10)) * 0.5;
        assert_eq!(budget.tokens(), live, "second {second}");
        tokio::time::advance(Duration::from_secs(1)).await;
    }
}

/// A ratio larger than the bucket fills it in one success; a fractional
/// one adds its thousandths. (A ratio that is not a finite number above
/// zero is refused when the budget is built: see the unit tests.)
#[tokio::test(start_paused = true)]
async fn a_grpc_ratio_refills_by_its_thousandths() {
    let budget = Budget::grpc(4, 1e9);
    let failing = Upstream::new([Step::Fail(Failure::new(Code::Overloaded))]);
    operations(&budget, &failing, 4).await;
    operations(&budget, &Upstream::new([Step::Ok]), 1).await;
    assert_eq!(budget.tokens(), 4.0);
    // A fractional one adds its thousandths.
    let budget = Budget::grpc(4, 0.25);
    operations(&budget, &failing, 2).await;
    operations(&budget, &Upstream::new([Step::Ok]), 3).await;
    assert_eq!(budget.tokens(), 2.75);
}

#[test]
fn debug_names_the_kind_and_its_tokens() {
    assert_eq!(
        format!("{:?}", Budget::grpc(10, 0.1)),
        r#"Budget { kind: "grpc", tokens: 10.0 }"#
    );
    assert_eq!(
        format!("{:?}", Budget::aws_standard()),
        r#"Budget { kind: "aws_standard", tokens: 500.0 }"#
    );
    assert_eq!(
        format!("{:?}", Budget::unlimited()),
        r#"Budget { kind: "unlimited", tokens: inf }"#
    );
    let ratio = Budget::ratio(1.0, 2, Duration::from_secs(5));
    assert_eq!(
        format!("{ratio:?}"),
        r#"Budget { kind: "ratio", tokens: 10.0 }"#
    );
}
