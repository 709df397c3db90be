//! An outer ladder over a layer that keeps its own receipt (a ladder that
//! may nest, a fallback): the receipt lists every attempt the layer below
//! made, in order, with its billed flag, never one record in their place.

mod common;

use std::time::Duration;

use common::{Step, Upstream};
use http::{Request, Response};
use seawall_core::recording::ReplayBody;
use seawall_core::{Attempt, BoxError, Code, Evidence, Failure, Receipt, RouteId, StopReason};
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{Layer, ServiceExt, service_fn};

fn billable() -> Request<String> {
    Request::post("https://api.example.com/v1/chat/completions")
        .body(String::from("{}"))
        .unwrap()
}

/// A transient failure the provider answered 2xx (a stream that broke
/// before content): billed.
fn billed_failure() -> Failure {
    let mut evidence = Evidence::default();
    evidence.status = Some(200);
    Failure::new(Code::Overloaded).with_evidence(evidence)
}

/// Two ladders that both retry, two attempts each: four calls, and the
/// receipt lists the four, billed as each was. Before, the outer ladder's
/// one record per inner operation left two.
#[tokio::test(start_paused = true)]
async fn a_nested_ladder_keeps_every_inner_attempt_in_the_receipt() {
    let upstream = Upstream::new([
        Step::Fail(billed_failure()),
        Step::Fail(Failure::new(Code::Overloaded)),
        Step::Fail(billed_failure()),
        Step::Ok,
    ]);
    let svc = common::nested_ladders(&upstream);
    let response = svc.oneshot(billable()).await.unwrap();
    assert_eq!(upstream.count(), 4);
    let receipt = response.extensions().get::<Receipt>().unwrap();
    let listed: Vec<_> = receipt
        .attempts
        .iter()
        .map(|a| (a.code, a.billed))
        .collect();
    assert_eq!(
        listed,
        [
            (Some(Code::Overloaded), true),
            (Some(Code::Overloaded), false),
            (Some(Code::Overloaded), true),
            (None, true),
        ]
    );
    assert_eq!(receipt.billed_attempts(), 3);
    assert_eq!(receipt.stop, Some(StopReason::Succeeded));
}

/// What a fallback below hands up: its primary failed, billed, after a
/// wait of its own; its fallback answered.
fn merged(code: Option<Code>) -> Receipt {
    let mut receipt = Receipt::default();
    receipt.push(
        Attempt::new(
            RouteId::new("primary"),
            Some(Code::Overloaded),
            Duration::ZERO,
        )
        .with_billed(true),
    );
    receipt.push(
        Attempt::new(RouteId::new("fallback"), code, Duration::from_secs(1)).with_billed(true),
    );
    receipt.fallback = true;
    receipt
}

/// A ladder above a layer that merged a receipt (a fallback) takes its
/// attempts in, in order, the first carrying the ladder's wait before it,
/// on a failure the ladder retries as on the answer that ends it.
#[tokio::test(start_paused = true)]
async fn a_ladder_above_a_fallback_keeps_its_merged_receipt() {
    let mut calls = 0;
    let below = service_fn(move |_: Request<ReplayBody<String>>| {
        calls += 1;
        let first = calls == 1;
        async move {
            if first {
                let failure = billed_failure().with_receipt(merged(Some(Code::Overloaded)));
                return Err(Box::new(failure) as BoxError);
            }
            let mut response = Response::new(String::from("ok"));
            response.extensions_mut().insert(merged(None));
            Ok(response)
        }
    });
    let policy = RetryPolicy::no_wait(2);
    let response = RetryBudgetLayer::new(policy, Budget::unlimited())
        .layer(below)
        .oneshot(billable())
        .await
        .unwrap();
    let receipt = response.extensions().get::<Receipt>().unwrap();
    let listed: Vec<_> = receipt
        .attempts
        .iter()
        .map(|a| (a.route.to_string(), a.code, a.billed))
        .collect();
    assert_eq!(
        listed,
        [
            ("primary".into(), Some(Code::Overloaded), true),
            ("fallback".into(), Some(Code::Overloaded), true),
            ("primary".into(), Some(Code::Overloaded), true),
            ("fallback".into(), None, true),
        ]
    );
    assert_eq!(receipt.attempts[1].delay, Duration::from_secs(1));
    assert!(receipt.fallback);
    assert_eq!(receipt.stop, Some(StopReason::Succeeded));
}
