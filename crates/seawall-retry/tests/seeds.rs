//! The issue's seeds, on tokio's paused clock.

mod common;

use std::time::Duration;

use common::{RATE_LIMIT_BODY, Step, Upstream, failure, openai, receipt};
use http::Request;
use seawall_core::recording::ReplayBody;
use seawall_core::{Action, Code, Deadline, Failure, Receipt, StopReason};
use seawall_deadline::DeadlineLayer;
use seawall_retry::{Budget, Jitter, RetryBudgetLayer, RetryPolicy};
use tokio::time::Instant;
use tower::{BoxError, Layer, ServiceBuilder, ServiceExt};

const SEC: Duration = Duration::from_secs(1);

fn ladder(policy: RetryPolicy) -> RetryBudgetLayer {
    RetryBudgetLayer::new(policy, Budget::unlimited()).seed(4)
}

fn request() -> Request<String> {
    Request::post("https://api.openai.example/v1/chat/completions")
        .body(String::from(r#"{"model":"m"}"#))
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn retry_after_48489s_is_a_quota_wall_returned_at_once() {
    let wall = openai(429, Some(Duration::from_secs(48489)), RATE_LIMIT_BODY);
    assert_eq!(wall.code(), Code::QuotaExhausted);
    let upstream = Upstream::new([Step::Fail(wall)]);
    let svc = ladder(RetryPolicy::interactive()).layer(upstream.service::<ReplayBody<String>>());
    let start = Instant::now();
    let err = svc.oneshot(request()).await.unwrap_err();
    assert!(start.elapsed() < Duration::from_millis(1));
    assert_eq!(upstream.count(), 1);
    let failure = failure(&err);
    assert_eq!(failure.code(), Code::QuotaExhausted);
    assert!(failure.reset_at().is_some());
    assert_eq!(failure.retry_after(), Some(Duration::from_secs(48489)));
    assert_eq!(receipt(&err).stop, Some(StopReason::NotRetryable));
    assert_eq!(receipt(&err).attempts.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn retry_after_2s_is_waited_for() {
    let limited = openai(429, Some(2 * SEC), RATE_LIMIT_BODY);
    assert_eq!(limited.code(), Code::RateLimited);
    let upstream = Upstream::new([Step::Fail(limited), Step::Ok]);
    let svc = ladder(RetryPolicy::interactive()).layer(upstream.service::<ReplayBody<String>>());
    let response = svc.oneshot(request()).await.unwrap();
    let calls = upstream.calls();
    assert_eq!(calls.len(), 2);
    assert!(calls[1].at - calls[0].at >= 2 * SEC);
    let receipt = response.extensions().get::<Receipt>().unwrap();
    // The hint, and a spread of up to a quarter of it above.
    let delay = receipt.attempts[1].delay;
    assert!((2 * SEC..=2 * SEC + SEC / 2).contains(&delay), "{delay:?}");
    // Slept, to the timer's millisecond.
    assert!(calls[1].at - calls[0].at >= delay);
    assert_eq!(receipt.stop, Some(StopReason::Succeeded));
}

/// A hint shorter than the backoff never shortens it: `Retry-After: 0` on
/// a 429 is no leave to fire every attempt at once (the SDKs ignore it and
/// back off too).
#[tokio::test(start_paused = true)]
async fn retry_after_0_keeps_the_backoff() {
    for hint in [Duration::ZERO, Duration::from_millis(1)] {
        let limited = openai(429, Some(hint), RATE_LIMIT_BODY);
        assert_eq!(limited.action(), Action::Retry);
        let upstream = Upstream::new([Step::Fail(limited)]);
        let policy = RetryPolicy::interactive().jitter(Jitter::None);
        let svc = ladder(policy).layer(upstream.service::<ReplayBody<String>>());
        let err = svc.oneshot(request()).await.unwrap_err();
        let calls = upstream.calls();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[1].at - calls[0].at, Duration::from_millis(250));
        assert_eq!(calls[2].at - calls[1].at, Duration::from_millis(500));
        assert_eq!(receipt(&err).stop, Some(StopReason::Attempts));
    }
}

/// gRPC pushback on UNAVAILABLE is a hint like `Retry-After` on a 503: an
/// hour of it stops the ladder at once, a few seconds of it are waited.
#[tokio::test(start_paused = true)]
async fn grpc_pushback_on_unavailable_is_honoured() {
    use seawall_core::hint::RetryHint;
    use seawall_core::provider::{ErrorContext, QuotaWall, classify_grpc};
    let unavailable = |pushback: Duration| {
        classify_grpc(
            14,
            Some("draining"),
            ErrorContext {
                status: Some(200),
                hint: RetryHint {
                    after: Some(pushback),
                    should_retry: None,
                    limit_reset: None,
                },
                quota_wall: QuotaWall::default(),
                now: std::time::SystemTime::now(),
            },
        )
    };
    let upstream = Upstream::new([Step::Fail(unavailable(3600 * SEC))]);
    let svc = ladder(RetryPolicy::interactive()).layer(upstream.service::<ReplayBody<String>>());
    let err = svc.oneshot(request()).await.unwrap_err();
    assert_eq!(upstream.count(), 1);
    assert_eq!(receipt(&err).stop, Some(StopReason::HintTooLong));

    let upstream = Upstream::new([Step::Fail(unavailable(5 * SEC))]);
    let svc = ladder(RetryPolicy::interactive()).layer(upstream.service::<ReplayBody<String>>());
    svc.oneshot(request()).await.unwrap_err();
    let calls = upstream.calls();
    assert_eq!(calls.len(), 3);
    assert!(calls[1].at - calls[0].at >= 5 * SEC);
    assert!(calls[2].at - calls[1].at >= 5 * SEC);
}

#[tokio::test(start_paused = true)]
async fn three_503s_are_three_attempts_with_jittered_delays() {
    let unavailable = openai(503, None, "");
    assert_eq!(unavailable.action(), Action::Retry);
    let upstream = Upstream::new([Step::Fail(unavailable)]);
    let svc = ladder(RetryPolicy::interactive()).layer(upstream.service::<ReplayBody<String>>());
    let err = svc.oneshot(request()).await.unwrap_err();
    let calls = upstream.calls();
    assert_eq!(calls.len(), 3);
    let receipt = receipt(&err);
    assert_eq!(receipt.stop, Some(StopReason::Attempts));
    let delays: Vec<_> = receipt.attempts.iter().map(|a| a.delay).collect();
    assert_eq!(delays[0], Duration::ZERO);
    // Full jitter: random(0, min(8 s, 250 ms × 2^retry)).
    assert!(delays[1] <= Duration::from_millis(250), "{delays:?}");
    assert!(delays[2] <= Duration::from_millis(500), "{delays:?}");
    // The timer wheel has millisecond resolution: a sleep ends within 1 ms
    // after its delay.
    for n in 1..3 {
        let gap = calls[n].at - calls[n - 1].at;
        assert!(
            gap >= delays[n] && gap < delays[n] + Duration::from_millis(1),
            "{gap:?}"
        );
    }
    assert!(
        receipt
            .attempts
            .iter()
            .all(|a| a.code == Some(Code::ProviderUnavailable))
    );
}

/// The layer's seed decides the jitter: the three-503s ladder twice with
/// one seed sleeps the same delays, and with another seed other ones.
#[tokio::test(start_paused = true)]
async fn the_layer_seed_decides_the_jitter() {
    async fn delays(seed: u64) -> Vec<Duration> {
        let upstream = Upstream::new([Step::Fail(openai(503, None, ""))]);
        let svc = RetryBudgetLayer::new(RetryPolicy::interactive(), Budget::unlimited())
            .seed(seed)
            .layer(upstream.service::<ReplayBody<String>>());
        let err = svc.oneshot(request()).await.unwrap_err();
        assert_eq!(upstream.count(), 3);
        receipt(&err).attempts.iter().map(|a| a.delay).collect()
    }
    let seeded = delays(4).await;
    assert_eq!(seeded.len(), 3);
    assert!(seeded[1..].iter().all(|d| !d.is_zero()), "{seeded:?}");
    assert_eq!(delays(4).await, seeded, "the same seed");
    assert_ne!(delays(5).await, seeded, "another seed");
}

#[tokio::test(start_paused = true)]
async fn context_length_and_refusal_are_tried_once() {
    let too_long = openai(
        400,
        None,
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    );
    assert_eq!(too_long.code(), Code::ContextTooLong);
    for fatal in [too_long, Failure::new(Code::Refused)] {
        let code = fatal.code();
        let upstream = Upstream::new([Step::Fail(fatal)]);
        let svc =
            ladder(RetryPolicy::interactive()).layer(upstream.service::<ReplayBody<String>>());
        let err = svc.oneshot(request()).await.unwrap_err();
        assert_eq!(upstream.count(), 1, "{code}");
        assert_eq!(failure(&err).code(), code);
        assert_eq!(receipt(&err).stop, Some(StopReason::NotRetryable));
    }
}

#[tokio::test(start_paused = true)]
async fn a_600s_attempt_in_a_10_minute_deadline_is_tried_once_then_fails_over() {
    let upstream = Upstream::new([Step::Hang]);
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::new(600 * SEC))
        .layer(ladder(RetryPolicy::interactive()))
        .layer(DeadlineLayer::per_attempt(600 * SEC))
        .service(upstream.service());
    let start = Instant::now();
    let err = svc.oneshot(request()).await.unwrap_err();
    assert_eq!(start.elapsed(), 600 * SEC);
    assert_eq!(upstream.count(), 1);
    let failure = failure(&err);
    assert_eq!(failure.code(), Code::Timeout);
    assert_eq!(failure.action(), Action::Failover);
    assert_eq!(receipt(&err).stop, Some(StopReason::Failover));
}

#[tokio::test(start_paused = true)]
async fn an_attempt_cannot_run_into_the_fallback_reserve() {
    // 60 s for the operation, the last 20 s kept for a fallback route. An
    // attempt bound to 50 s must still stop at 40 s, as a timeout to fail
    // over on: run to its own bound it would leave the fallback 10 s, run
    // to the deadline nothing at all.
    let upstream = Upstream::new([Step::Hang]);
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::new(60 * SEC))
        .layer(ladder(
            RetryPolicy::interactive().fallback_reserve(20 * SEC),
        ))
        .layer(DeadlineLayer::per_attempt(50 * SEC))
        .service(upstream.service());
    let start = Instant::now();
    let err = svc.clone().oneshot(request()).await.unwrap_err();
    assert_eq!(start.elapsed(), 40 * SEC, "the reserve is left whole");
    assert_eq!(upstream.count(), 1);
    let failure = failure(&err);
    assert_eq!(failure.code(), Code::Timeout);
    assert_eq!(failure.action(), Action::Failover);
    assert_eq!(receipt(&err).stop, Some(StopReason::Deadline));

    // A caller's deadline shorter than the reserve: the one attempt there
    // is room for is made, under the operation's deadline.
    let upstream = Upstream::new([Step::Ok]);
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::new(10 * SEC))
        .layer(ladder(
            RetryPolicy::interactive().fallback_reserve(20 * SEC),
        ))
        .layer(DeadlineLayer::per_attempt(50 * SEC))
        .service(upstream.service());
    svc.oneshot(request()).await.unwrap();
    assert_eq!(upstream.count(), 1);
}

/// What an attempt cut at the window knew stays on the timeout the
/// fallback gets: the usage and request id of a stream answered 200 and
/// cut there (billed), and the receipt of a ladder below.
#[tokio::test(start_paused = true)]
async fn a_timeout_at_the_fallback_reserve_keeps_what_the_attempt_knew() {
    let run = |cut: Failure| async move {
        let upstream = tower::service_fn(move |_: Request<ReplayBody<String>>| {
            let cut = cut.clone();
            async move {
                // The attempt runs to its window, 40 s into the 60.
                tokio::time::sleep(40 * SEC).await;
                Err::<http::Response<String>, BoxError>(Box::new(cut))
            }
        });
        let svc = ladder(RetryPolicy::interactive().fallback_reserve(20 * SEC)).layer(upstream);
        let mut request = request();
        request.extensions_mut().insert(Deadline::after(60 * SEC));
        svc.oneshot(request).await.unwrap_err()
    };
    let usage = seawall_core::Usage::new(3, 4);
    let cut = Failure::new(Code::DeadlineExceeded)
        .with_status(200)
        .with_usage(usage)
        .with_request_id("req_window");
    let err = run(cut.clone()).await;
    let timeout = failure(&err);
    assert_eq!(timeout.code(), Code::Timeout);
    assert_eq!(timeout.action(), Action::Failover);
    assert_eq!(timeout.usage(), Some(usage));
    assert_eq!(timeout.request_id(), Some("req_window"));
    let record = receipt(&err);
    assert_eq!(record.stop, Some(StopReason::Deadline));
    assert_eq!(record.attempts.len(), 1);
    assert!(record.attempts[0].billed);
    assert_eq!(record.usage(), usage);
    // A stream cut before its finish keeps the part it counted.
    let partial = Failure::new(Code::DeadlineExceeded)
        .with_status(200)
        .with_partial_usage(usage);
    let err = run(partial).await;
    assert_eq!(failure(&err).partial_usage(), Some(usage));
    assert_eq!(receipt(&err).usage(), usage);
    // A 200 that generated nothing (a gRPC refusal) stays unbilled.
    let err = run(cut.clone().with_nothing_generated()).await;
    assert_eq!(receipt(&err).billed_attempts(), 0);
    // A ladder below handed its receipt: its attempts are the record.
    let mut below = Receipt::default();
    let route = seawall_core::RouteId::new("api.openai.example");
    for code in [Code::ProviderUnavailable, Code::DeadlineExceeded] {
        below.push(seawall_core::Attempt::new(
            route.clone(),
            Some(code),
            Duration::ZERO,
        ));
    }
    let err = run(cut.with_receipt(below)).await;
    let codes: Vec<_> = receipt(&err).attempts.iter().map(|a| a.code).collect();
    assert_eq!(
        codes,
        [
            Some(Code::ProviderUnavailable),
            Some(Code::DeadlineExceeded)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn two_zero_byte_timeouts_in_20_minutes_fail_over_after_the_second() {
    let upstream = Upstream::new([Step::Hang]);
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::new(1200 * SEC))
        .layer(ladder(RetryPolicy::interactive()))
        .layer(DeadlineLayer::per_attempt(300 * SEC))
        .service(upstream.service());
    let err = svc.oneshot(request()).await.unwrap_err();
    assert_eq!(
        upstream.count(),
        2,
        "promoted after the second, never a third"
    );
    let failure = failure(&err);
    assert!(failure.is_route_shaped());
    assert_eq!(failure.action(), Action::Failover);
    let receipt = receipt(&err);
    assert_eq!(receipt.stop, Some(StopReason::Failover));
    assert_eq!(receipt.attempts.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_hint_beyond_the_deadline_stops_now_with_the_hint() {
    let limited = openai(429, Some(30 * SEC), RATE_LIMIT_BODY);
    let upstream = Upstream::new([Step::Fail(limited)]);
    let svc = ladder(RetryPolicy::interactive()).layer(upstream.service::<ReplayBody<String>>());
    let mut request = request();
    request.extensions_mut().insert(Deadline::after(10 * SEC));
    let start = Instant::now();
    let err = svc.oneshot(request).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(upstream.count(), 1);
    assert_eq!(failure(&err).retry_after(), Some(30 * SEC));
    assert_eq!(receipt(&err).stop, Some(StopReason::Deadline));
}

#[tokio::test(start_paused = true)]
async fn a_retry_needs_room_for_a_useful_attempt_and_the_fallback_reserve() {
    let policy = RetryPolicy::no_wait(5)
        .min_attempt_time(2 * SEC)
        .fallback_reserve(3 * SEC);
    let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded))]);
    let svc = ladder(policy).layer(upstream.service::<ReplayBody<String>>());
    let mut request = request();
    // 4.9 s left: 2 s of attempt + 3 s of reserve do not fit.
    request
        .extensions_mut()
        .insert(Deadline::after(Duration::from_millis(4900)));
    let err = svc.oneshot(request).await.unwrap_err();
    assert_eq!(upstream.count(), 1);
    assert_eq!(receipt(&err).stop, Some(StopReason::Deadline));
}

#[tokio::test(start_paused = true)]
async fn a_hint_past_max_retry_after_is_returned_not_shortened() {
    let limited = openai(429, Some(20 * SEC), RATE_LIMIT_BODY);
    let upstream = Upstream::new([Step::Fail(limited)]);
    let policy = RetryPolicy::interactive().max_retry_after(10 * SEC);
    let svc = ladder(policy).layer(upstream.service::<ReplayBody<String>>());
    let err = svc.oneshot(request()).await.unwrap_err();
    assert_eq!(upstream.count(), 1);
    assert_eq!(failure(&err).retry_after(), Some(20 * SEC));
    assert_eq!(receipt(&err).stop, Some(StopReason::HintTooLong));
}

#[tokio::test(start_paused = true)]
async fn unclassified_errors_pass_through_after_one_attempt() {
    let svc = ladder(RetryPolicy::no_wait(3)).layer(tower::service_fn(
        |_req: Request<ReplayBody<String>>| async {
            Err::<http::Response<()>, BoxError>("connection reset by a test".into())
        },
    ));
    let err = svc.oneshot(request()).await.unwrap_err();
    assert!(Failure::find(&*err).is_none());
    // The receipt says its part; the error itself is its source, whole.
    assert_eq!(
        err.to_string(),
        "failed after 1 attempt (stop: not_retryable)"
    );
    let source = std::error::Error::source(&*err).expect("the error itself");
    assert_eq!(source.to_string(), "connection reset by a test");
}

#[tokio::test(start_paused = true)]
async fn every_attempt_waits_for_readiness_again() {
    let (mock, mut handle) =
        tower_test::mock::pair::<Request<ReplayBody<String>>, http::Response<()>>();
    let svc = ladder(RetryPolicy::no_wait(2)).layer(mock);
    handle.allow(1);
    let call = tokio::spawn(svc.oneshot(request()));
    let (_, reply) = handle.next_request().await.unwrap();
    reply.send_error(Failure::new(Code::Overloaded));
    // Not ready: the retry must wait, not call.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(1), handle.next_request())
            .await
            .is_err()
    );
    handle.allow(1);
    let (_, reply) = handle.next_request().await.unwrap();
    reply.send_response(http::Response::new(()));
    let response = call.await.unwrap().unwrap();
    assert_eq!(
        response
            .extensions()
            .get::<Receipt>()
            .unwrap()
            .attempts
            .len(),
        2
    );
}

#[tokio::test(start_paused = true)]
async fn the_idempotency_key_is_the_same_on_every_attempt() {
    let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded)), Step::Ok]);
    let policy =
        RetryPolicy::no_wait(3).idempotency_key(http::HeaderName::from_static("idempotency-key"));
    let svc = ladder(policy).layer(upstream.service::<ReplayBody<String>>());
    svc.clone().oneshot(request()).await.unwrap();
    let calls = upstream.calls();
    let key = &calls[0].headers["idempotency-key"];
    assert_eq!(key.len(), 32);
    assert_eq!(&calls[1].headers["idempotency-key"], key);

    let mut mine = request();
    mine.headers_mut().insert(
        "idempotency-key",
        http::HeaderValue::from_static("caller-1"),
    );
    svc.oneshot(mine).await.unwrap();
    assert_eq!(upstream.calls()[2].headers["idempotency-key"], "caller-1");

    // A seed makes the jitter reproducible, never the keys: two ladders
    // built with one seed (two replicas, a restart) send different keys.
    let policy =
        RetryPolicy::no_wait(3).idempotency_key(http::HeaderName::from_static("idempotency-key"));
    let upstream = Upstream::new([Step::Ok, Step::Ok]);
    for _ in 0..2 {
        let svc = ladder(policy.clone()).layer(upstream.service::<ReplayBody<String>>());
        svc.oneshot(request()).await.unwrap();
    }
    let calls = upstream.calls();
    assert_ne!(
        calls[0].headers["idempotency-key"],
        calls[1].headers["idempotency-key"]
    );
}

/// Operations a breaker refused while their only route cools down wait the
/// cooldown out (nothing reached the provider), and come back spread by
/// the backoff's jitter: waited out exactly, they all called the route in
/// the same instant the cooldown ended.
#[tokio::test(start_paused = true)]
async fn operations_refused_by_one_cooldown_come_back_spread() {
    use seawall_core::Class;
    let cooling =
        Failure::with_class(Class::Transient, Code::RouteCoolingDown).with_retry_after(2 * SEC);
    let n = 8;
    let mut script: Vec<Step> = (0..n).map(|_| Step::Fail(cooling.clone())).collect();
    script.push(Step::Ok);
    let upstream = Upstream::new(script);
    let svc = ladder(RetryPolicy::interactive()).layer(upstream.service::<ReplayBody<String>>());
    let start = Instant::now();
    let operations: Vec<_> = (0..n)
        .map(|_| tokio::spawn(svc.clone().oneshot(request())))
        .collect();
    for operation in operations {
        operation
            .await
            .unwrap()
            .expect("each answered after the wait");
    }
    let calls = upstream.calls();
    assert_eq!(calls.len(), 2 * n);
    let mut again: Vec<Duration> = calls[n..].iter().map(|call| call.at - start).collect();
    again.sort();
    assert!(
        again[0] >= 2 * SEC,
        "not before the cooldown ends: {again:?}"
    );
    again.dedup();
    assert!(again.len() > n / 2, "spread, not one burst: {again:?}");
}
