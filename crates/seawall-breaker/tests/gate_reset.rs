//! A gated `poll_ready` sees an operator's reset within
//! `ISOLATED_RECHECK` (1 s), on tokio's paused clock: its gate's wait is
//! capped there, so a route reset mid-break is not left out of a
//! balancer's rotation (or a ladder's retry held) until the break's end.
//!
//! The waiting `ready()` runs in a task of its own, polled again only when
//! something wakes it, as a balancer's or a ladder's would be: a reset
//! wakes nothing, so only the gate's own timer can.

// Each test binary compiles the shared module on its own and uses only
// part of it.
#[allow(dead_code)]
mod common;

use std::time::Duration;

use common::{Plan, Provider, request, route};
use seawall_breaker::{BreakDuration, Breaker, BreakerHandle, BreakerLayer, BreakerState, Trip};
use seawall_core::{Code, Failure};
use tokio::task::JoinHandle;
use tower::{Layer, Service, ServiceExt};

/// A break far longer than the recheck: a reset seen only at its end would
/// be a minute late.
fn gated() -> BreakerLayer {
    BreakerLayer::new()
        .trip(Trip::Consecutive { failures: 1 })
        .break_duration(BreakDuration {
            base: Duration::from_secs(60),
            max: Duration::from_secs(300),
            jitter: 0.0,
        })
        .gate_readiness(true)
}

/// A gated service whose one call failed with `failure`, its handle, and
/// its readiness waiting in a task of its own.
async fn refusing_and_waiting(failure: Failure) -> (BreakerHandle, JoinHandle<Breaker<Provider>>) {
    let layer = gated();
    let handle = layer.handle();
    let mut service = layer.layer(Provider::new());
    service.ready().await.unwrap();
    service
        .call(request(Plan::Fail(failure)))
        .await
        .unwrap_err();
    let waiting = tokio::spawn(async move {
        service.ready().await.unwrap();
        service
    });
    // Some way into the break, not at a recheck's edge: the task has
    // polled, found the route refusing, and sleeps on its gate.
    tokio::time::sleep(Duration::from_millis(2300)).await;
    assert!(!waiting.is_finished(), "not ready while the route refuses");
    (handle, waiting)
}

/// Within a second of the reset, plus a margin for the timer's tick.
const SEEN_WITHIN: Duration = Duration::from_millis(1100);

/// Resets the route, then expects the waiting service ready within
/// [`SEEN_WITHIN`] (`late` says what it would have waited for otherwise)
/// and taking a call.
async fn reset_and_call(
    handle: &BreakerHandle,
    waiting: JoinHandle<Breaker<Provider>>,
    late: &str,
) {
    handle.reset(&route());
    let mut service = tokio::time::timeout(SEEN_WITHIN, waiting)
        .await
        .expect(late)
        .unwrap();
    service
        .call(request(Plan::Ok))
        .await
        .expect("the reset route takes the call");
}

#[tokio::test(start_paused = true)]
async fn a_reset_of_an_open_route_is_seen_within_a_second() {
    let (handle, waiting) = refusing_and_waiting(Failure::new(Code::Overloaded)).await;
    assert_eq!(handle.state(&route()), BreakerState::Open);
    reset_and_call(
        &handle,
        waiting,
        "ready within a second of the reset, not at the break's end",
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_reset_of_a_cooling_route_is_seen_within_a_second() {
    let rate_limited = Failure::new(Code::RateLimited).with_retry_after(Duration::from_secs(60));
    let (handle, waiting) = refusing_and_waiting(rate_limited).await;
    assert!(handle.cooldown(&route()).is_some(), "cooling");
    reset_and_call(
        &handle,
        waiting,
        "ready within a second of the reset, not at the hint's end",
    )
    .await;
}

/// The cap only makes the gate look again: a route still open at a recheck
/// keeps the service waiting, to the break's end.
#[tokio::test(start_paused = true)]
async fn without_a_reset_the_gate_still_waits_out_the_break() {
    let started = tokio::time::Instant::now();
    let (_, waiting) = refusing_and_waiting(Failure::new(Code::Overloaded)).await;
    tokio::time::timeout(Duration::from_secs(120), waiting)
        .await
        .expect("ready at the probe time")
        .unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(60));
}
