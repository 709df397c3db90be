//! The breaker's rules at their edges, through its tower interface on
//! tokio's paused clock: cooldowns learnt from failures, trials finishing
//! in any order or after their period ended, outcomes from before a reset,
//! and trip settings outside their range.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use seawall_breaker::{BreakDuration, BreakerHandle, BreakerLayer, BreakerState, Trip};
use seawall_core::{AUTH_COOLDOWN, BoxError, Code, Failure, RouteId};
use tokio::sync::oneshot;
use tower::{Layer, Service};

/// How the fake provider ends a call: `None` answers with an empty body,
/// `Some` fails with that failure.
type Outcome = Option<Failure>;
/// The request carries the channel its outcome arrives on, so a test
/// decides when, and in which order, calls finish.
type Req = http::Request<oneshot::Receiver<Outcome>>;

const ROUTE: &str = "api.example.com";

fn route() -> RouteId {
    RouteId::new(ROUTE)
}

#[derive(Clone)]
struct Provider {
    calls: Arc<Mutex<usize>>,
}

impl Service<Req> for Provider {
    type Response = http::Response<Empty<Bytes>>;
    type Error = BoxError;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<http::Response<Empty<Bytes>>, BoxError>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Req) -> Self::Future {
        *self.calls.lock().unwrap() += 1;
        Box::pin(async move {
            match request.into_body().await {
                Ok(None) => Ok(http::Response::new(Empty::new())),
                Ok(Some(failure)) => Err(failure.into()),
                Err(_) => std::future::pending().await,
            }
        })
    }
}

type Svc = seawall_breaker::Breaker<Provider>;

struct Rig {
    service: Svc,
    handle: BreakerHandle,
    provider: Provider,
}

impl Rig {
    fn new(layer: BreakerLayer) -> Rig {
        let provider = Provider {
            calls: Arc::new(Mutex::new(0)),
        };
        let handle = layer.handle();
        Rig {
            service: layer.layer(provider.clone()),
            handle,
            provider,
        }
    }

    fn calls(&self) -> usize {
        *self.provider.calls.lock().unwrap()
    }

    fn state(&self) -> BreakerState {
        self.handle.state(&route())
    }

    /// Admits (or refuses) a call now; it finishes when its sender is used.
    fn start(&self) -> (oneshot::Sender<Outcome>, Pending) {
        self.start_with(http::Extensions::new())
    }

    /// As [`start`](Self::start), the request carrying `extensions`.
    fn start_with(&self, extensions: http::Extensions) -> (oneshot::Sender<Outcome>, Pending) {
        let (tx, rx) = oneshot::channel();
        let mut request = http::Request::get(format!("https://{ROUTE}/v1/chat"))
            .body(rx)
            .unwrap();
        *request.extensions_mut() = extensions;
        let future = self.service.clone().call(request);
        (tx, Pending(future))
    }

    /// One call that ends as `outcome`; the failure code it ended with.
    async fn send(&self, outcome: Outcome) -> Option<Code> {
        let (tx, pending) = self.start();
        let _ = tx.send(outcome);
        pending.finish().await
    }

    /// The breaker's refusal of a call, as the layers above see it.
    async fn refusal(&self) -> seawall_breaker::CircuitOpen {
        let (_tx, pending) = self.start();
        // A refusal is ready at once; a call let through would wait for `_tx`.
        let error = tokio::time::timeout(Duration::ZERO, pending.0)
            .await
            .expect("refused at once, not called")
            .expect_err("refused");
        error.as_open().cloned().expect("refused, not called")
    }
}

struct Pending(<Svc as Service<Req>>::Future);

impl Pending {
    /// Awaits the call and reads its body to the end (a success is
    /// recorded there).
    async fn finish(self) -> Option<Code> {
        match self.0.await {
            Ok(response) => match response.into_body().collect().await {
                Ok(_) => None,
                Err(error) => Some(Failure::find(&*error).expect("a failure").code()),
            },
            Err(error) => Some(Failure::find(&*error.into_box()).expect("a failure").code()),
        }
    }
}

fn fail(code: Code) -> Outcome {
    Some(Failure::new(code))
}

fn exact_break(secs: u64) -> BreakDuration {
    BreakDuration {
        base: Duration::from_secs(secs),
        max: Duration::from_secs(60),
        jitter: 0.0,
    }
}

fn consecutive(failures: u32) -> BreakerLayer {
    BreakerLayer::new()
        .trip(Trip::Consecutive { failures })
        .break_duration(exact_break(5))
}

const SEC: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn a_quota_wall_cools_the_route_for_its_hint_then_lets_calls_through() {
    let rig = Rig::new(consecutive(100));
    let wall = Failure::new(Code::QuotaExhausted).with_retry_after(90 * SEC);
    assert_eq!(rig.send(Some(wall)).await, Some(Code::QuotaExhausted));
    assert_eq!(
        rig.handle.cooldown(&route()),
        Some((Code::QuotaExhausted, Some(90 * SEC)))
    );
    let refused = rig.refusal().await;
    assert_eq!(refused.cooled_by(), Some(Code::QuotaExhausted));
    assert_eq!(refused.retry_after(), Some(90 * SEC));
    assert_eq!(refused.as_failure().code(), Code::RouteCoolingDown);
    assert_eq!(rig.calls(), 1, "refused locally, without a call");
    // The time left counts down on the breaker's clock.
    tokio::time::advance(10 * SEC).await;
    assert_eq!(
        rig.handle.cooldown(&route()),
        Some((Code::QuotaExhausted, Some(80 * SEC)))
    );
    assert_eq!(rig.refusal().await.retry_after(), Some(80 * SEC));
    tokio::time::advance(80 * SEC - Duration::from_millis(1)).await;
    assert_eq!(
        rig.handle.cooldown(&route()),
        Some((Code::QuotaExhausted, Some(Duration::from_millis(1))))
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(rig.handle.cooldown(&route()), None, "over at its end");
    assert_eq!(rig.send(None).await, None);
    assert_eq!(rig.calls(), 2);
    assert_eq!(
        rig.state(),
        BreakerState::Closed,
        "a cooldown is not a trip"
    );
}

#[tokio::test(start_paused = true)]
async fn a_longer_cooldown_already_running_is_kept_with_its_code() {
    let limited = |after| Some(Failure::new(Code::RateLimited).with_retry_after(after));
    let wall = || Some(Failure::new(Code::QuotaExhausted).with_retry_after(90 * SEC));
    // Three calls admitted together, finishing one after another.
    let rig = Rig::new(consecutive(100));
    let (a, first) = rig.start();
    let (b, second) = rig.start();
    let (c, third) = rig.start();
    a.send(wall()).unwrap();
    first.finish().await;
    // A shorter cooldown, and one exactly as long, change nothing.
    b.send(limited(5 * SEC)).unwrap();
    second.finish().await;
    c.send(limited(90 * SEC)).unwrap();
    third.finish().await;
    assert_eq!(
        rig.handle.cooldown(&route()),
        Some((Code::QuotaExhausted, Some(90 * SEC)))
    );
    // A longer one replaces a shorter one, code and all.
    let rig = Rig::new(consecutive(100));
    let (a, first) = rig.start();
    let (b, second) = rig.start();
    a.send(limited(5 * SEC)).unwrap();
    first.finish().await;
    assert_eq!(
        rig.handle.cooldown(&route()),
        Some((Code::RateLimited, Some(5 * SEC)))
    );
    b.send(wall()).unwrap();
    second.finish().await;
    assert_eq!(
        rig.handle.cooldown(&route()),
        Some((Code::QuotaExhausted, Some(90 * SEC)))
    );
    assert_eq!(rig.refusal().await.cooled_by(), Some(Code::QuotaExhausted));
}

/// Rejected credentials cool the route for `AUTH_COOLDOWN`, then one call
/// tries it again (a key replaced, a token refreshed); a reset by the
/// handle ends the cooldown at once. (Until this, the route stayed shut
/// until a reset by hand.)
#[tokio::test(start_paused = true)]
async fn rejected_credentials_cool_the_route_for_a_while() {
    let rig = Rig::new(consecutive(100));
    assert_eq!(rig.send(fail(Code::Auth)).await, Some(Code::Auth));
    assert_eq!(
        rig.handle.cooldown(&route()),
        Some((Code::Auth, Some(AUTH_COOLDOWN)))
    );
    tokio::time::advance(AUTH_COOLDOWN - SEC).await;
    let refused = rig.refusal().await;
    assert_eq!(
        (refused.cooled_by(), refused.retry_after()),
        (Some(Code::Auth), Some(SEC))
    );
    tokio::time::advance(SEC).await;
    assert_eq!(rig.handle.cooldown(&route()), None);
    assert_eq!(rig.send(fail(Code::Auth)).await, Some(Code::Auth));
    assert!(
        rig.handle.cooldown(&route()).is_some(),
        "still rejected: cold again"
    );
    rig.handle.reset(&route());
    assert_eq!(rig.handle.cooldown(&route()), None);
    assert_eq!(rig.send(None).await, None);
    assert_eq!(rig.calls(), 3);
}

/// A call on the caller's own credentials: what the provider says of
/// that account (rejected key, spent quota, rate limit) neither cools the
/// route nor counts against it; the route's own failures still do.
#[tokio::test(start_paused = true)]
async fn the_callers_own_account_cools_and_counts_nothing() {
    let rig = Rig::new(
        BreakerLayer::new()
            .count_rate_limited(true)
            .trip(Trip::Consecutive { failures: 1 }),
    );
    let callers = || {
        let mut extensions = http::Extensions::new();
        extensions.insert(seawall_core::CallerCredentials);
        extensions
    };
    let accounts = [
        Failure::new(Code::Auth),
        Failure::new(Code::QuotaExhausted).with_retry_after(30 * SEC),
        Failure::new(Code::RateLimited).with_retry_after(5 * SEC),
    ];
    for failure in accounts {
        let code = failure.code();
        let (tx, pending) = rig.start_with(callers());
        let _ = tx.send(Some(failure));
        assert_eq!(pending.finish().await, Some(code));
        assert_eq!(rig.handle.cooldown(&route()), None, "{code}");
        assert_eq!(rig.state(), BreakerState::Closed, "{code}");
    }
    let (tx, pending) = rig.start_with(callers());
    let _ = tx.send(fail(Code::Overloaded));
    assert_eq!(pending.finish().await, Some(Code::Overloaded));
    assert_eq!(
        rig.state(),
        BreakerState::Open,
        "the route's own health counts"
    );
}

/// A route's breaker made before any call (a route set probing its
/// members) learns from the first call whose credentials its calls carry:
/// the callers' own account still cools and counts nothing.
#[tokio::test(start_paused = true)]
async fn a_probed_route_learns_whose_credentials_from_its_first_call() {
    let rig = Rig::new(
        BreakerLayer::new()
            .count_rate_limited(true)
            .trip(Trip::Consecutive { failures: 1 }),
    );
    // Probed again (a route set rebuilt) before any call: still unknown.
    let _probe = rig.handle.probe(&route());
    let _again = rig.handle.probe(&route());
    let mut extensions = http::Extensions::new();
    extensions.insert(seawall_core::CallerCredentials);
    let (tx, pending) = rig.start_with(extensions);
    let _ = tx.send(Some(Failure::new(Code::Auth)));
    assert_eq!(pending.finish().await, Some(Code::Auth));
    assert_eq!(rig.handle.cooldown(&route()), None);
    assert_eq!(rig.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn failures_that_say_nothing_of_the_future_cool_nothing() {
    let rig = Rig::new(consecutive(100));
    for code in [Code::Overloaded, Code::BadRequest, Code::RateLimited] {
        rig.send(fail(code)).await;
        assert_eq!(rig.handle.cooldown(&route()), None, "{code}");
    }
    assert_eq!(rig.send(None).await, None);
}

/// Opens a `consecutive(1)` breaker with a 5 s break and waits it out.
async fn open_then_wait(rig: &Rig) {
    assert_eq!(
        rig.send(fail(Code::Overloaded)).await,
        Some(Code::Overloaded)
    );
    assert_eq!(rig.state(), BreakerState::Open);
    tokio::time::advance(5 * SEC).await;
}

#[tokio::test(start_paused = true)]
async fn concurrent_trials_close_after_their_successes_in_any_order() {
    let rig = Rig::new(consecutive(1).half_open_trials(2).close_after(2));
    open_then_wait(&rig).await;
    let (a, first) = rig.start();
    let (b, second) = rig.start();
    assert_eq!(
        rig.refusal().await.retry_after(),
        None,
        "two trials at most"
    );
    assert_eq!(rig.state(), BreakerState::HalfOpen);
    b.send(None).unwrap();
    assert_eq!(second.finish().await, None);
    assert_eq!(rig.state(), BreakerState::HalfOpen, "one success of two");
    a.send(None).unwrap();
    assert_eq!(first.finish().await, None);
    assert_eq!(rig.state(), BreakerState::Closed);

    // And in the order they were admitted.
    let rig = Rig::new(consecutive(1).half_open_trials(2).close_after(2));
    open_then_wait(&rig).await;
    let (a, first) = rig.start();
    let (b, second) = rig.start();
    a.send(None).unwrap();
    assert_eq!(first.finish().await, None);
    assert_eq!(rig.state(), BreakerState::HalfOpen, "one success of two");
    b.send(None).unwrap();
    assert_eq!(second.finish().await, None);
    assert_eq!(rig.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn the_first_trial_failing_reopens_whatever_came_after_it() {
    let rig = Rig::new(consecutive(1).half_open_trials(3).close_after(3));
    open_then_wait(&rig).await;
    let (a, first) = rig.start();
    let (b, second) = rig.start();
    let (c, third) = rig.start();
    b.send(None).unwrap();
    assert_eq!(second.finish().await, None);
    a.send(fail(Code::Overloaded)).unwrap();
    assert_eq!(first.finish().await, Some(Code::Overloaded));
    assert_eq!(rig.state(), BreakerState::Open);
    // The last trial of the ended period counts for nothing.
    c.send(None).unwrap();
    assert_eq!(third.finish().await, None);
    assert_eq!(rig.state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn a_trial_of_an_earlier_period_finishing_late_counts_for_nothing() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let layer = consecutive(1)
        .half_open_trials(2)
        .close_after(1)
        .on_transition(move |t| record.lock().unwrap().push((t.from, t.to)));
    let rig = Rig::new(layer);
    open_then_wait(&rig).await;
    let (late, late_call) = rig.start();
    assert_eq!(
        rig.send(fail(Code::Overloaded)).await,
        Some(Code::Overloaded)
    );
    assert_eq!(rig.state(), BreakerState::Open, "the second trial failed");
    tokio::time::advance(10 * SEC).await;
    let (now, current) = rig.start();
    assert_eq!(rig.state(), BreakerState::HalfOpen);
    // The first period's trial succeeds now: not a success of this period.
    late.send(None).unwrap();
    assert_eq!(late_call.finish().await, None);
    assert_eq!(rig.state(), BreakerState::HalfOpen);
    // Its place was not given back either: one trial is still in flight.
    let (_spare, spare) = rig.start();
    assert_eq!(rig.refusal().await.retry_after(), None);
    drop(spare);
    now.send(None).unwrap();
    assert_eq!(current.finish().await, None);
    assert_eq!(rig.state(), BreakerState::Closed);
    use BreakerState::*;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (Closed, Open),
            (Open, HalfOpen),
            (HalfOpen, Open),
            (Open, HalfOpen),
            (HalfOpen, Closed),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn an_outcome_from_before_a_reset_does_not_count_after_it() {
    let rig = Rig::new(consecutive(1));
    let (before, call) = rig.start();
    rig.handle.reset(&route());
    before.send(fail(Code::Overloaded)).unwrap();
    assert_eq!(call.finish().await, Some(Code::Overloaded));
    assert_eq!(
        rig.state(),
        BreakerState::Closed,
        "admitted before the reset"
    );
    assert_eq!(
        rig.send(fail(Code::Overloaded)).await,
        Some(Code::Overloaded)
    );
    assert_eq!(rig.state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn an_outcome_from_an_earlier_closed_spell_does_not_count() {
    let rig = Rig::new(consecutive(1).close_after(1));
    // Recover once, so the closed spell is no longer the first.
    open_then_wait(&rig).await;
    assert_eq!(rig.send(None).await, None);
    assert_eq!(rig.state(), BreakerState::Closed);
    let (slow, slow_call) = rig.start();
    open_then_wait(&rig).await;
    assert_eq!(rig.send(None).await, None);
    assert_eq!(rig.state(), BreakerState::Closed);
    slow.send(fail(Code::Overloaded)).unwrap();
    assert_eq!(slow_call.finish().await, Some(Code::Overloaded));
    assert_eq!(rig.state(), BreakerState::Closed, "from the spell before");
}

fn ratio(ratio: f64) -> BreakerLayer {
    BreakerLayer::new()
        .trip(Trip::FailureRatio {
            ratio,
            window: Duration::from_secs(10),
            buckets: 10,
            min_calls: 4,
        })
        .break_duration(exact_break(5))
}

/// A ratio outside `(0, 1]` is refused when the layer is configured: 0
/// would open on successes, a percentage or NaN means no share, and any
/// stand-in (1 used to be) would run another breaker than the one asked.
#[test]
fn a_ratio_out_of_range_is_refused() {
    for bad in [0.0, -0.5, 2.0, 50.0, f64::NAN, f64::INFINITY] {
        let built = std::panic::catch_unwind(|| ratio(bad));
        let message = built.err().and_then(|e| e.downcast::<String>().ok());
        assert!(
            message
                .as_deref()
                .is_some_and(|m| m.contains("ratio must be a failure share in (0, 1]")),
            "{bad}: {message:?}"
        );
    }
}

/// In range, the ratio is used as given.
#[tokio::test(start_paused = true)]
async fn a_ratio_in_range_is_used_as_given() {
    let rig = Rig::new(ratio(0.75));
    rig.send(None).await;
    for _ in 0..3 {
        rig.send(fail(Code::Overloaded)).await;
    }
    assert_eq!(rig.state(), BreakerState::Open);
}

/// A ratio met exactly trips, as "equal or greater" says: 55 failures of
/// 100 calls at 0.55. Compared as `failures >= ratio * calls`, 0.55 * 100
/// came to 55.00000000000001 and the breaker stayed closed.
#[tokio::test(start_paused = true)]
async fn a_ratio_met_exactly_trips() {
    let rig = Rig::new(
        BreakerLayer::new()
            .trip(Trip::FailureRatio {
                ratio: 0.55,
                window: Duration::from_secs(10),
                buckets: 10,
                min_calls: 100,
            })
            .break_duration(exact_break(5)),
    );
    for _ in 0..45 {
        rig.send(None).await;
    }
    for _ in 0..54 {
        rig.send(fail(Code::Overloaded)).await;
    }
    assert_eq!(
        rig.state(),
        BreakerState::Closed,
        "99 calls, under the minimum"
    );
    rig.send(fail(Code::Overloaded)).await;
    assert_eq!(rig.state(), BreakerState::Open, "55 of 100 is 0.55");
}

/// More buckets than a short window has milliseconds look back over the
/// window asked, not over one millisecond per bucket: a failure 600 ms ago
/// is out of a 500 ms window (it was in with 1000 buckets of 1 ms).
#[tokio::test(start_paused = true)]
async fn a_short_window_with_many_buckets_looks_back_only_over_itself() {
    let rig = Rig::new(
        BreakerLayer::new()
            .trip(Trip::FailureRatio {
                ratio: 1.0,
                window: Duration::from_millis(500),
                buckets: 1000,
                min_calls: 2,
            })
            .break_duration(exact_break(5)),
    );
    rig.send(fail(Code::Overloaded)).await;
    tokio::time::advance(Duration::from_millis(600)).await;
    rig.send(fail(Code::Overloaded)).await;
    assert_eq!(rig.state(), BreakerState::Closed, "one call in the window");
}

/// After exactly 2^24 buckets of quiet the ring's slot comes round to the
/// same 24-bit tag: the failures counted then are long gone, not back.
#[tokio::test(start_paused = true)]
async fn failures_from_a_tag_cycle_ago_do_not_come_back() {
    let rig = Rig::new(
        BreakerLayer::new()
            .trip(Trip::FailureRatio {
                ratio: 0.5,
                window: Duration::from_millis(1024),
                buckets: 1024,
                min_calls: 20,
            })
            .break_duration(exact_break(5)),
    );
    for _ in 0..19 {
        rig.send(fail(Code::Overloaded)).await;
    }
    assert_eq!(rig.state(), BreakerState::Closed, "under the minimum");
    tokio::time::advance(Duration::from_millis(1 << 24)).await;
    rig.send(fail(Code::Overloaded)).await;
    assert_eq!(rig.state(), BreakerState::Closed, "one call in the window");
}

/// With a route function, the layer counts a call where the function
/// says; the same breakers keyed by `RouteId` count it under the
/// request's `RouteId`, where a probe of that route reads (a route set's
/// member). The probe of "A" saw nothing of calls counted as "A#model".
#[tokio::test(start_paused = true)]
async fn a_layer_keyed_by_route_id_counts_where_the_probe_reads() {
    let layer =
        consecutive(1).route_with(|head| RouteId::new(format!("{}#model", head.default_route())));
    let member = RouteId::new("A");
    let probe = layer.handle().probe(&member);
    let mut extensions = http::Extensions::new();
    extensions.insert(member.clone());
    let fail_once = |rig: Rig| {
        let extensions = extensions.clone();
        async move {
            let (tx, pending) = rig.start_with(extensions);
            let _ = tx.send(fail(Code::Overloaded));
            pending.finish().await
        }
    };

    assert_eq!(
        fail_once(Rig::new(layer.clone())).await,
        Some(Code::Overloaded)
    );
    assert_eq!(
        layer.handle().state(&RouteId::new("A#model")),
        BreakerState::Open
    );
    assert_eq!(probe.blocked(), None, "nothing counted under A");

    let keyed = layer.keyed_by_route_id();
    assert_eq!(
        fail_once(Rig::new(keyed.clone())).await,
        Some(Code::Overloaded)
    );
    assert_eq!(
        probe.blocked().map(|(code, _)| code),
        Some(Code::CircuitOpen)
    );
    assert_eq!(keyed.handle().state(&member), BreakerState::Open, "shared");
}
