//! [`BreakerLayer::ungated`]: services over the same breakers as a gated
//! layer's, whose `poll_ready` is the inner service's. On tokio's paused
//! clock.

// Each test binary compiles the shared module on its own and uses only
// part of it.
#[allow(dead_code)]
mod common;

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use common::{Plan, Provider, request, route};
use seawall_breaker::{BreakDuration, BreakerLayer, BreakerState, Trip};
use seawall_core::{Code, Failure};
use tower::{Layer, Service, ServiceExt};

fn gated() -> BreakerLayer {
    BreakerLayer::new()
        .trip(Trip::Consecutive { failures: 1 })
        .break_duration(BreakDuration {
            base: Duration::from_secs(30),
            max: Duration::from_secs(30),
            jitter: 0.0,
        })
        .gate_readiness(true)
}

fn poll_once<F: Future + Unpin>(future: &mut F) -> Option<F::Output> {
    match Pin::new(future).poll(&mut Context::from_waker(std::task::Waker::noop())) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

/// Whether `service`, having called the open route, is ready at once.
fn ready_now(service: &mut seawall_breaker::Breaker<Provider>) -> bool {
    let mut ready = Box::pin(async { service.ready().await.map(|_| ()) });
    poll_once(&mut ready).is_some()
}

#[tokio::test(start_paused = true)]
async fn an_ungated_layer_shares_the_breakers_but_not_the_gate() {
    let layer = gated();
    let handle = layer.handle();
    let mut gated = layer.layer(Provider::new());
    let mut ungated = layer.ungated().layer(Provider::new());
    assert!(format!("{:?}", layer.ungated()).contains("gate_readiness: false"));

    // The ungated service's failure opens the route for both.
    ungated.ready().await.unwrap();
    ungated
        .call(request(Plan::Fail(Failure::new(Code::Overloaded))))
        .await
        .unwrap_err();
    assert_eq!(handle.state(&route()), BreakerState::Open);
    assert!(
        ready_now(&mut ungated),
        "ungated: the inner service's readiness"
    );
    let refused = ungated.call(request(Plan::Ok)).await.unwrap_err();
    assert!(refused.as_open().is_some(), "still refused: {refused}");

    gated.ready().await.unwrap();
    gated.call(request(Plan::Ok)).await.unwrap_err();
    assert!(!ready_now(&mut gated), "gated: waits for the break");

    // Gating again is a builder call: a fresh set of breakers, gated.
    let mut regated = layer.ungated().gate_readiness(true).layer(Provider::new());
    regated.ready().await.unwrap();
    regated
        .call(request(Plan::Fail(Failure::new(Code::Overloaded))))
        .await
        .unwrap_err();
    assert!(!ready_now(&mut regated), "gated again");
}
