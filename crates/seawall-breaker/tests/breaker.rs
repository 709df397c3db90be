//! The breaker's behaviour through its tower interface, on tokio's paused
//! clock.

mod common;

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use common::{Plan, Provider, ROUTE, request, route, send};
use http_body_util::BodyExt;
use seawall_breaker::{BreakDuration, BreakerHandle, BreakerLayer, BreakerState, Trip};
use seawall_core::{BoxError, Code, Failure, RouteId};
use seawall_test::body::Script;
use tower::{Layer, Service, ServiceExt};

fn exact_break(base: u64) -> BreakDuration {
    BreakDuration {
        base: Duration::from_secs(base),
        max: Duration::from_secs(60),
        jitter: 0.0,
    }
}

type Svc = seawall_breaker::Breaker<Provider>;

fn build(layer: BreakerLayer) -> (Svc, BreakerHandle, Provider) {
    let provider = Provider::new();
    let handle = layer.handle();
    (layer.layer(provider.clone()), handle, provider)
}

/// The breaker's refusal of a call, as the layers above see it.
async fn refusal(service: &Svc) -> Failure {
    let error = service
        .clone()
        .oneshot(request(Plan::Ok))
        .await
        .unwrap_err();
    assert!(error.as_open().is_some(), "refused, not called: {error}");
    Failure::downcast(error.into_box()).expect("a circuit_open failure")
}

fn ratio_layer() -> BreakerLayer {
    BreakerLayer::new()
        .trip(Trip::FailureRatio {
            ratio: 0.5,
            window: Duration::from_secs(10),
            buckets: 10,
            min_calls: 10,
        })
        .break_duration(exact_break(5))
}

#[tokio::test(start_paused = true)]
async fn opens_on_the_ratio_only_past_the_minimum_throughput() {
    let (service, handle, provider) = build(ratio_layer());
    for _ in 0..9 {
        assert_eq!(
            send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await,
            Some(Code::Overloaded)
        );
    }
    // Nine failures out of nine, but below the minimum of ten calls.
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    assert_eq!(
        send(&service, Plan::Fail(Failure::new(Code::Transport))).await,
        Some(Code::Transport)
    );
    assert_eq!(handle.state(&route()), BreakerState::Open);

    // Open: refused at once, without calling the provider.
    let calls = provider.calls();
    let refused = refusal(&service).await;
    assert_eq!(provider.calls(), calls);
    assert_eq!(refused.code(), Code::CircuitOpen);
    assert_eq!(refused.action(), seawall_core::Action::Failover);
    assert_eq!(refused.route(), Some(&route()));
    assert_eq!(refused.retry_after(), Some(Duration::from_secs(5)));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(
        refusal(&service).await.retry_after(),
        Some(Duration::from_secs(3))
    );
}

#[tokio::test(start_paused = true)]
async fn below_the_ratio_or_outside_the_window_it_stays_closed() {
    let (service, handle, _) = build(ratio_layer());
    // 4 failures out of 10: below half.
    for i in 0..10 {
        let plan = if i < 4 {
            Plan::Fail(Failure::new(Code::Overloaded))
        } else {
            Plan::Ok
        };
        send(&service, plan).await;
    }
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    // The window slides: those calls are forgotten after 10 s, so 6
    // failures now are 6 of 6 — below the minimum throughput.
    tokio::time::advance(Duration::from_secs(11)).await;
    for _ in 0..6 {
        send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await;
    }
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    // Within the window: 4 successes and 6 failures of 10 trip it.
    for _ in 0..3 {
        send(&service, Plan::Ok).await;
    }
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await;
    assert_eq!(handle.state(&route()), BreakerState::Open);
}

fn consecutive(failures: u32) -> BreakerLayer {
    BreakerLayer::new()
        .trip(Trip::Consecutive { failures })
        .break_duration(exact_break(5))
}

#[tokio::test(start_paused = true)]
async fn consecutive_failures_trip_and_a_success_resets_the_run() {
    let (service, handle, _) = build(consecutive(3));
    send(&service, Plan::Fail(Failure::new(Code::Timeout))).await;
    send(&service, Plan::Fail(Failure::new(Code::Timeout))).await;
    send(&service, Plan::Ok).await;
    send(&service, Plan::Fail(Failure::new(Code::Timeout))).await;
    send(&service, Plan::Fail(Failure::new(Code::Timeout))).await;
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    send(&service, Plan::Fail(Failure::new(Code::FirstByteTimeout))).await;
    assert_eq!(handle.state(&route()), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn half_open_admits_exactly_the_trials_then_closes_after_the_successes() {
    let (service, handle, provider) = build(consecutive(1).half_open_trials(3).close_after(3));
    send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await;
    assert_eq!(handle.state(&route()), BreakerState::Open);
    tokio::time::advance(Duration::from_secs(5)).await;

    let calls = provider.calls();
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut future = Box::pin(service.clone().oneshot(request(Plan::Hold)));
        assert!(
            futures_poll(&mut future).is_none(),
            "a trial waits for the provider"
        );
        held.push(future);
    }
    assert_eq!(handle.state(&route()), BreakerState::HalfOpen);
    // A route set's health probe says so before it chooses the route: a
    // call there would be refused (it spent an attempt to learn it).
    let probe = handle.probe(&route());
    let (code, again) = probe.blocked().expect("blocked while every trial is out");
    assert_eq!(code, Code::CircuitOpen);
    assert!(
        again.is_some_and(|again| again <= Duration::from_secs(1)),
        "{again:?}"
    );
    // The fourth and fifth are refused while three trials are out.
    for _ in 0..2 {
        let refused = refusal(&service).await;
        assert_eq!(refused.code(), Code::CircuitOpen);
        assert_eq!(refused.retry_after(), None);
    }
    assert_eq!(provider.calls(), calls + 3);

    provider.release(3);
    for future in held {
        future.await.unwrap().into_body().collect().await.unwrap();
    }
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    assert_eq!(probe.blocked(), None);
    assert_eq!(send(&service, Plan::Ok).await, None);
}

/// Polls a future once.
fn futures_poll<F: Future + Unpin>(future: &mut F) -> Option<F::Output> {
    let waker = std::task::Waker::noop();
    match Pin::new(future).poll(&mut Context::from_waker(waker)) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

/// A trial is judged by its answer, not held to the end of its body: a
/// streamed trial closes the breaker when its answer comes, and the calls
/// that follow are admitted while it still streams — a reasoning stream
/// of minutes would otherwise keep the route refused long after it came
/// back. (Changed on purpose: a trial's outcome used to wait for its
/// body's end.)
#[tokio::test(start_paused = true)]
async fn a_streaming_trial_is_judged_by_its_answer() {
    let (service, handle, _) = build(consecutive(1).half_open_trials(1).close_after(1));
    send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await;
    tokio::time::advance(Duration::from_secs(5)).await;
    let trial = service
        .clone()
        .oneshot(request(Plan::DropsMidStream))
        .await
        .unwrap();
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    assert_eq!(send(&service, Plan::Ok).await, None, "admitted meanwhile");
    // Its body then breaks: the trial was judged already.
    trial.into_body().collect().await.unwrap_err();
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    // A call of the closed spell still counts how its body ends.
    send(&service, Plan::DropsMidStream).await;
    assert_eq!(handle.state(&route()), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn a_failed_trial_reopens_with_a_longer_break() {
    let (service, handle, _) = build(consecutive(1).half_open_trials(2).close_after(2));
    send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await;
    assert_eq!(
        refusal(&service).await.retry_after(),
        Some(Duration::from_secs(5))
    );
    tokio::time::advance(Duration::from_secs(5)).await;
    // The first trial succeeds, the second fails: any failure re-opens.
    assert_eq!(send(&service, Plan::Ok).await, None);
    assert_eq!(handle.state(&route()), BreakerState::HalfOpen);
    send(
        &service,
        Plan::Fail(Failure::new(Code::ProviderUnavailable)),
    )
    .await;
    assert_eq!(handle.state(&route()), BreakerState::Open);
    assert_eq!(
        refusal(&service).await.retry_after(),
        Some(Duration::from_secs(10))
    );
    tokio::time::advance(Duration::from_secs(10)).await;
    send(&service, Plan::Fail(Failure::new(Code::Transport))).await;
    assert_eq!(
        refusal(&service).await.retry_after(),
        Some(Duration::from_secs(20))
    );
    // After it closes, the next trip starts from the base break again.
    tokio::time::advance(Duration::from_secs(20)).await;
    send(&service, Plan::Ok).await;
    send(&service, Plan::Ok).await;
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    send(&service, Plan::Fail(Failure::new(Code::Transport))).await;
    assert_eq!(
        refusal(&service).await.retry_after(),
        Some(Duration::from_secs(5))
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_trial_gives_its_place_back_and_records_nothing() {
    let (service, handle, provider) = build(consecutive(1).half_open_trials(1).close_after(1));
    send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await;
    tokio::time::advance(Duration::from_secs(5)).await;
    let mut trial = Box::pin(service.clone().oneshot(request(Plan::Hold)));
    assert!(futures_poll(&mut trial).is_none());
    assert_eq!(refusal(&service).await.code(), Code::CircuitOpen);
    drop(trial);
    assert_eq!(handle.state(&route()), BreakerState::HalfOpen);
    let calls = provider.calls();
    assert_eq!(send(&service, Plan::Ok).await, None);
    assert_eq!(provider.calls(), calls + 1);
    assert_eq!(handle.state(&route()), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn only_route_health_failures_count() {
    let (service, handle, provider) = build(consecutive(5));
    for _ in 0..1000 {
        assert_eq!(
            send(&service, Plan::Fail(Failure::new(Code::ContextTooLong))).await,
            Some(Code::ContextTooLong)
        );
    }
    for code in [
        Code::Cancelled,
        Code::DeadlineExceeded,
        Code::BadRequest,
        Code::Refused,
        Code::BadArguments,
        Code::RateLimited,
        Code::CircuitOpen,
    ] {
        for _ in 0..20 {
            send(&service, Plan::Fail(Failure::new(code))).await;
        }
    }
    // 1000 cancellations by dropping the call before it finished.
    for _ in 0..1000 {
        let mut future = Box::pin(service.clone().oneshot(request(Plan::Hold)));
        assert!(futures_poll(&mut future).is_none());
    }
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    assert_eq!(provider.calls(), 1000 + 7 * 20 + 1000);

    let (ratio, handle, _) = build(ratio_layer());
    for _ in 0..1000 {
        send(&ratio, Plan::Fail(Failure::new(Code::ContextTooLong))).await;
        send(&ratio, Plan::Fail(Failure::new(Code::Cancelled))).await;
    }
    assert_eq!(handle.state(&route()), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn rate_limits_count_when_asked() {
    let (service, handle, _) = build(consecutive(3).count_rate_limited(true));
    for _ in 0..3 {
        send(&service, Plan::Fail(Failure::new(Code::RateLimited))).await;
    }
    assert_eq!(handle.state(&route()), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn streams_dropped_mid_way_trip_it_at_the_body_end() {
    let (service, handle, _) = build(consecutive(3));
    for _ in 0..2 {
        assert_eq!(
            send(&service, Plan::DropsMidStream).await,
            Some(Code::StreamInterrupted)
        );
    }
    // Headers of the third arrived well; the outcome waits for the body.
    let response = service
        .clone()
        .oneshot(request(Plan::DropsMidStream))
        .await
        .unwrap();
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    let error = response.into_body().collect().await.unwrap_err();
    assert_eq!(
        Failure::find(&*error).unwrap().code(),
        Code::StreamInterrupted
    );
    assert_eq!(handle.state(&route()), BreakerState::Open);

    // Finished streams are successes.
    let (service, handle, _) = build(consecutive(2));
    for _ in 0..10 {
        send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await;
        assert_eq!(send(&service, Plan::Streams).await, None);
    }
    assert_eq!(handle.state(&route()), BreakerState::Closed);
}

/// A route that closes every stream cleanly before its finish marker
/// (no `[DONE]`, no `message_stop`) is as broken as one that resets them.
#[tokio::test(start_paused = true)]
async fn streams_ended_early_by_the_provider_trip_it() {
    let (service, handle, provider) = build(consecutive(3));
    for _ in 0..3 {
        assert_eq!(send(&service, Plan::EndsEarly).await, Some(Code::Truncated));
    }
    assert_eq!(handle.state(&route()), BreakerState::Open);
    let calls = provider.calls();
    assert_eq!(refusal(&service).await.code(), Code::CircuitOpen);
    assert_eq!(provider.calls(), calls);
}

#[tokio::test(start_paused = true)]
async fn routes_are_separate_and_can_be_derived_by_a_function() {
    let layer = consecutive(1).route_with(|head| {
        let model = head
            .headers
            .get("x-model")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none");
        RouteId::new(format!("{}/{model}", head.default_route()))
    });
    let (service, handle, _) = build(layer);
    let mut broken = request(Plan::Fail(Failure::new(Code::Overloaded)));
    broken
        .headers_mut()
        .insert("x-model", "big".parse().unwrap());
    service.clone().oneshot(broken).await.unwrap_err();
    assert_eq!(
        handle.state(&RouteId::new("api.example.com/big")),
        BreakerState::Open
    );
    let mut other = request(Plan::Ok);
    other
        .headers_mut()
        .insert("x-model", "small".parse().unwrap());
    service.clone().oneshot(other).await.unwrap();
    // An explicit RouteId in the extensions is the default route.
    let (service, handle, _) = build(consecutive(1));
    let mut pinned = request(Plan::Fail(Failure::new(Code::Overloaded)));
    pinned.extensions_mut().insert(RouteId::new("primary"));
    service.clone().oneshot(pinned).await.unwrap_err();
    assert_eq!(handle.state(&RouteId::new("primary")), BreakerState::Open);
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    assert_eq!(send(&service, Plan::Ok).await, None);
}

#[tokio::test(start_paused = true)]
async fn the_handle_isolates_resets_and_transitions_are_reported() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let layer = consecutive(1).on_transition(move |t| {
        record
            .lock()
            .unwrap()
            .push(format!("{} {}->{}", t.route, t.from, t.to));
    });
    let (service, handle, provider) = build(layer);
    handle.isolate(&route());
    assert_eq!(handle.state(&route()), BreakerState::Isolated);
    let refused = refusal(&service).await;
    assert_eq!(
        (refused.code(), refused.retry_after()),
        (Code::CircuitOpen, None)
    );
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert_eq!(refusal(&service).await.code(), Code::CircuitOpen);
    assert_eq!(provider.calls(), 0);
    handle.reset(&route());
    assert_eq!(
        send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await,
        Some(Code::Overloaded)
    );
    tokio::time::advance(Duration::from_secs(5)).await;
    send(&service, Plan::Ok).await;
    assert_eq!(handle.routes(), vec![(route(), BreakerState::HalfOpen)]);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "api.example.com closed->isolated",
            "api.example.com isolated->closed",
            "api.example.com closed->open",
            "api.example.com open->half_open",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn readiness_gating_waits_for_the_probe_time() {
    let (mut service, _, _) = build(consecutive(1).gate_readiness(true));
    service.ready().await.unwrap();
    service
        .call(request(Plan::Fail(Failure::new(Code::Overloaded))))
        .await
        .unwrap_err();
    let mut ready = Box::pin(async { service.ready().await.map(|_| ()) });
    assert!(futures_poll(&mut ready).is_none(), "not ready while open");
    tokio::time::advance(Duration::from_secs(4)).await;
    assert!(futures_poll(&mut ready).is_none());
    tokio::time::advance(Duration::from_secs(1)).await;
    tokio::time::timeout(Duration::from_millis(1), ready)
        .await
        .expect("ready at the probe time")
        .unwrap();

    // Without gating, readiness is the inner service's.
    let (mut plain, _, _) = build(consecutive(1));
    plain.ready().await.unwrap();
    plain
        .call(request(Plan::Fail(Failure::new(Code::Overloaded))))
        .await
        .unwrap_err();
    let mut ready = Box::pin(async { plain.ready().await.map(|_| ()) });
    assert!(futures_poll(&mut ready).is_some());
}

/// Once ready, a gated service stays ready until it is called (tower's
/// `poll_ready` contract), though another clone's failure opened the route
/// meanwhile: the call is then refused, and only the next readiness waits.
#[tokio::test(start_paused = true)]
async fn a_gated_service_once_ready_stays_ready_until_called() {
    let (mut service, _, _) = build(consecutive(1).gate_readiness(true));
    service.ready().await.unwrap();
    service
        .call(request(Plan::Ok))
        .await
        .expect("the route's first call");
    service.ready().await.unwrap();
    let mut other = service.clone();
    other.ready().await.unwrap();
    other
        .call(request(Plan::Fail(Failure::new(Code::Overloaded))))
        .await
        .unwrap_err();
    let mut ready = Box::pin(async { service.ready().await.map(|_| ()) });
    assert!(
        futures_poll(&mut ready).is_some(),
        "still ready: no call since it said so"
    );
    let refused = service.call(request(Plan::Ok)).await.unwrap_err();
    assert!(refused.as_open().is_some(), "refused: {refused:?}");
    let mut ready = Box::pin(async { service.ready().await.map(|_| ()) });
    assert!(futures_poll(&mut ready).is_none(), "called: gated again");
}

/// A route cooling down after a rate limit refuses every call until its
/// hint is over: with gating, the service is not ready until then. After a
/// quota wall the cooldown is as permanent as the wall: ready, and the
/// call is refused at once rather than waited for.
#[tokio::test(start_paused = true)]
async fn readiness_gating_waits_out_a_rate_limits_cooldown() {
    let (mut service, _, _) = build(consecutive(5).gate_readiness(true));
    service.ready().await.unwrap();
    service
        .call(request(Plan::Fail(
            Failure::new(Code::RateLimited).with_retry_after(Duration::from_secs(30)),
        )))
        .await
        .unwrap_err();
    let mut ready = Box::pin(async { service.ready().await.map(|_| ()) });
    assert!(
        futures_poll(&mut ready).is_none(),
        "not ready while cooling"
    );
    tokio::time::advance(Duration::from_secs(20)).await;
    assert!(futures_poll(&mut ready).is_none());
    tokio::time::advance(Duration::from_secs(11)).await;
    tokio::time::timeout(Duration::from_millis(1), ready)
        .await
        .expect("ready once the cooldown is over")
        .unwrap();

    let (mut walled, _, _) = build(consecutive(5).gate_readiness(true));
    walled.ready().await.unwrap();
    walled
        .call(request(Plan::Fail(Failure::new(Code::QuotaExhausted))))
        .await
        .unwrap_err();
    let mut ready = Box::pin(async { walled.ready().await.map(|_| ()) });
    assert!(
        futures_poll(&mut ready).is_some(),
        "a wall is not waited for"
    );
}

/// Half-open with its one trial out, every call is refused: with gating,
/// the service is not ready until the trial's slot is free again.
#[tokio::test(start_paused = true)]
async fn readiness_gating_waits_for_a_trial_slot() {
    let layer = consecutive(1)
        .half_open_trials(1)
        .close_after(1)
        .gate_readiness(true);
    let (mut service, _, _) = build(layer);
    service.ready().await.unwrap();
    service
        .call(request(Plan::Fail(Failure::new(Code::Overloaded))))
        .await
        .unwrap_err();
    tokio::time::advance(Duration::from_secs(5)).await;
    service.ready().await.unwrap();
    let mut trial = Box::pin(service.call(request(Plan::Hold)));
    assert!(futures_poll(&mut trial).is_none(), "the trial is out");
    let mut ready = Box::pin(async { service.ready().await.map(|_| ()) });
    assert!(futures_poll(&mut ready).is_none(), "no trial slot left");
    drop(ready);
    drop(trial);
    tokio::time::advance(Duration::from_millis(200)).await;
    tokio::time::timeout(Duration::from_millis(1), service.ready())
        .await
        .expect("ready once the slot is free")
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_route_limit_bounds_memory() {
    let (service, handle, _) = build(consecutive(1).max_routes(4));
    for i in 0..100 {
        let request = http::Request::get(format!("https://host{i}.example/v1"))
            .body(Plan::Fail(Failure::new(Code::Overloaded)))
            .unwrap();
        service.clone().oneshot(request).await.unwrap_err();
    }
    assert_eq!(handle.routes().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn absurd_settings_are_clamped_not_panics() {
    let layer = BreakerLayer::new()
        .trip(Trip::FailureRatio {
            // The one setting refused instead (tests/policy.rs): a ratio
            // outside (0, 1] has no clamp that means what was asked.
            ratio: 1.0,
            window: Duration::ZERO,
            buckets: 0,
            min_calls: 0,
        })
        .half_open_trials(0)
        .close_after(100_000)
        .break_duration(BreakDuration {
            base: Duration::MAX,
            max: Duration::MAX,
            jitter: -3.0,
        });
    let (service, handle, _) = build(layer);
    send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await;
    assert_eq!(handle.state(&route()), BreakerState::Open);
    assert!(refusal(&service).await.retry_after().unwrap() > Duration::from_secs(3600));
}

/// Counts calls in flight at the provider and the most seen at once.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    max: AtomicUsize,
    calls: AtomicUsize,
}

struct InFlight(Arc<Gauge>);

/// A provider that takes a few scheduler turns to answer, counting its
/// calls in `gauge`.
fn yielding(
    gauge: &Arc<Gauge>,
) -> impl Service<http::Request<Plan>, Response = http::Response<Script>, Error = BoxError, Future: Send>
+ Clone
+ Send
+ 'static {
    let gauge = Arc::clone(gauge);
    tower::service_fn(move |request: http::Request<Plan>| {
        let in_flight = InFlight::enter(&gauge);
        async move {
            let _in_flight = in_flight;
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            match request.into_body() {
                Plan::Fail(failure) => Err(failure.into()),
                _ => Ok(http::Response::new(Script::default())),
            }
        }
    })
}

impl InFlight {
    fn enter(gauge: &Arc<Gauge>) -> Self {
        gauge.calls.fetch_add(1, Ordering::SeqCst);
        let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
        gauge.max.fetch_max(now, Ordering::SeqCst);
        InFlight(Arc::clone(gauge))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_tasks_never_get_more_trials_than_allowed() {
    const TRIALS: usize = 4;
    const TASKS: usize = 16;
    const CALLS: usize = 400;
    let closings = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&closings);
    let layer = BreakerLayer::new()
        .trip(Trip::Consecutive { failures: 1 })
        .half_open_trials(TRIALS as u32)
        .close_after(200)
        .break_duration(BreakDuration {
            base: Duration::ZERO,
            max: Duration::ZERO,
            jitter: 0.0,
        })
        .on_transition(move |t| {
            if t.to == BreakerState::Closed {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
    let handle = layer.handle();
    let gauge = Arc::new(Gauge::default());
    let provider = yielding(&gauge);
    let service = layer.layer(provider);

    // One failure opens it; with a zero break the next call starts a
    // half-open period, and neutral outcomes keep it in that period.
    send_plain(&service, Plan::Fail(Failure::new(Code::Overloaded))).await;
    let before = gauge.calls.load(Ordering::SeqCst);
    let refused = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let service = service.clone();
        let refused = Arc::clone(&refused);
        tasks.push(tokio::spawn(async move {
            for call in 0..CALLS {
                let future = service
                    .clone()
                    .oneshot(request(Plan::Fail(Failure::new(Code::ContextTooLong))));
                // Every third call is abandoned after its first poll.
                let result = if (task + call) % 3 == 0 {
                    match tokio::time::timeout(Duration::ZERO, future).await {
                        Ok(result) => result,
                        Err(_) => continue,
                    }
                } else {
                    future.await
                };
                if let Err(error) = result
                    && error.as_open().is_some()
                {
                    refused.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let reached = gauge.calls.load(Ordering::SeqCst) - before;
    assert_eq!(reached + refused.load(Ordering::SeqCst), TASKS * CALLS);
    assert!(
        gauge.max.load(Ordering::SeqCst) <= TRIALS,
        "at most {TRIALS} trials at once"
    );
    assert!(
        refused.load(Ordering::SeqCst) > 0,
        "contention produced refusals"
    );
    assert_eq!(handle.state(&route()), BreakerState::HalfOpen);
    assert_eq!(gauge.now.load(Ordering::SeqCst), 0);

    // Now every trial succeeds: it closes exactly once.
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let service = service.clone();
        let handle = handle.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..10_000 {
                if handle.state(&route()) == BreakerState::Closed {
                    return;
                }
                if service.clone().oneshot(request(Plan::Ok)).await.is_err() {
                    // Refused: let the trials in flight finish.
                    tokio::task::yield_now().await;
                }
            }
            panic!("never closed");
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    assert_eq!(closings.load(Ordering::SeqCst), 1);
    // No bound on calls in flight here: once it closes, the tasks that
    // have not seen it yet send calls a closed breaker admits freely,
    // beside the trials still running, and the gauge cannot tell them
    // apart. The bound on trials is the first phase's, which never closes.
}

async fn send_plain<S>(service: &S, plan: Plan)
where
    S: Service<http::Request<Plan>> + Clone,
{
    let _ = service.clone().oneshot(request(plan)).await;
}

/// Counts the wake-ups of the task that polls with it.
struct Wakes(AtomicUsize);

impl std::task::Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn an_isolated_routes_recheck_is_not_pushed_back_by_spurious_polls() {
    let (mut service, handle, _) = build(consecutive(1).gate_readiness(true));
    service.ready().await.unwrap();
    service.call(request(Plan::Ok)).await.unwrap();
    handle.isolate(&route());
    let wakes = Arc::new(Wakes(AtomicUsize::new(0)));
    let waker = std::task::Waker::from(Arc::clone(&wakes));
    let mut cx = Context::from_waker(&waker);
    assert!(service.poll_ready(&mut cx).is_pending(), "isolated");
    // A spurious poll half-way must not move the recheck (1 s after the
    // first poll) later.
    tokio::time::advance(Duration::from_millis(500)).await;
    assert!(service.poll_ready(&mut cx).is_pending());
    tokio::time::advance(Duration::from_millis(600)).await;
    assert!(
        wakes.0.load(Ordering::SeqCst) >= 1,
        "woken for the recheck at 1 s"
    );
    assert!(service.poll_ready(&mut cx).is_pending(), "still isolated");
    handle.reset(&route());
    tokio::time::advance(Duration::from_millis(1100)).await;
    assert!(service.poll_ready(&mut cx).is_ready(), "ready once reset");
}

#[tokio::test(start_paused = true)]
async fn an_outcome_from_before_a_trip_does_not_count_after_the_recovery() {
    let layer = consecutive(2)
        .half_open_trials(1)
        .close_after(1)
        .break_duration(exact_break(5));
    let (mut service, handle, _) = build(layer);
    let fail = |service: &mut Svc| {
        let call = service.call(request(Plan::Fail(Failure::new(Code::Overloaded))));
        async move { call.await.unwrap_err() }
    };
    // A long stream admitted while closed; its end comes much later.
    let long = service
        .ready()
        .await
        .unwrap()
        .call(request(Plan::DropsMidStream))
        .await
        .unwrap();
    fail(service.ready().await.unwrap()).await;
    fail(service.ready().await.unwrap()).await;
    assert_eq!(handle.state(&route()), BreakerState::Open);
    tokio::time::advance(Duration::from_secs(5)).await;
    let probe = service.ready().await.unwrap().call(request(Plan::Ok)).await;
    probe.unwrap().into_body().collect().await.unwrap();
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    // The old stream now fails: it belongs to the closed spell before the
    // trip and says nothing about the route since it recovered, so one
    // fresh failure is one, not the second of two.
    long.into_body().collect().await.unwrap_err();
    fail(service.ready().await.unwrap()).await;
    assert_eq!(handle.state(&route()), BreakerState::Closed);
}

/// The break a tripped breaker seeded with `seed` refuses for.
async fn break_after_one_failure(seed: u64) -> Duration {
    let layer = BreakerLayer::new()
        .trip(Trip::Consecutive { failures: 1 })
        .seed(seed);
    let failing = tower::service_fn(|_request: http::Request<()>| async {
        Err::<http::Response<http_body_util::Empty<Bytes>>, BoxError>(Box::new(Failure::new(
            Code::ProviderUnavailable,
        )))
    });
    let mut service = layer.layer(failing);
    let request = || {
        http::Request::get("http://api.example/v1")
            .body(())
            .unwrap()
    };
    let _ = service.ready().await.unwrap().call(request()).await;
    let refusal = service
        .ready()
        .await
        .unwrap()
        .call(request())
        .await
        .unwrap_err();
    refusal
        .as_open()
        .and_then(|open| open.retry_after())
        .expect("open, with the time to the probe")
}

#[tokio::test(start_paused = true)]
async fn the_seed_decides_the_break_jitter() {
    let first = break_after_one_failure(42).await;
    assert_eq!(first, break_after_one_failure(42).await);
    let mut others = Vec::new();
    for seed in 0..8 {
        others.push(break_after_one_failure(seed).await);
    }
    assert!(
        others.iter().any(|other| *other != first),
        "{first:?} {others:?}"
    );
    // Within the default break (5 s) less up to 20 % jitter.
    for d in others.iter().chain([&first]) {
        assert!(
            *d <= Duration::from_secs(5) && *d >= Duration::from_secs(4),
            "{d:?}"
        );
    }
}

/// A reset ends a cooldown for good: a call admitted before it, whose
/// rejection (sent with the key the reset was made for) comes back after
/// it, does not cool the route again; a call admitted after the reset
/// still does.
#[tokio::test(start_paused = true)]
async fn a_reset_is_not_undone_by_a_call_admitted_before_it() {
    use tokio::sync::oneshot;
    let layer = BreakerLayer::new();
    let handle = layer.handle();
    let service = layer.layer(tower::service_fn(
        |request: http::Request<oneshot::Receiver<Code>>| async move {
            let code = request.into_body().await.unwrap();
            Err::<http::Response<Script>, BoxError>(Failure::new(code).into())
        },
    ));
    let call = |service: &_| {
        let (answer, body) = oneshot::channel();
        let request = http::Request::get(format!("https://{ROUTE}/v1/chat"))
            .body(body)
            .unwrap();
        let call = tokio::spawn(ServiceExt::oneshot(Clone::clone(service), request));
        (answer, call)
    };
    // Two calls admitted with the same bad key.
    let (answer_a, a) = call(&service);
    let (answer_b, b) = call(&service);
    tokio::task::yield_now().await;
    answer_a.send(Code::Auth).unwrap();
    a.await.unwrap().unwrap_err();
    assert!(matches!(handle.cooldown(&route()), Some((Code::Auth, _))));
    // The key is replaced; the operator resets the route.
    handle.reset(&route());
    answer_b.send(Code::Auth).unwrap();
    b.await.unwrap().unwrap_err();
    assert_eq!(handle.cooldown(&route()), None, "the reset holds");
    // A call admitted after the reset still cools the route when rejected.
    let (answer_c, c) = call(&service);
    tokio::task::yield_now().await;
    answer_c.send(Code::Auth).unwrap();
    c.await.unwrap().unwrap_err();
    assert!(matches!(handle.cooldown(&route()), Some((Code::Auth, _))));
}
