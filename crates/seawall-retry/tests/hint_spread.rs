//! Operations told one `Retry-After` come back spread above it, not in
//! one burst at its end; within the deadline, and `max_retry_after` but for
//! at most `MAX_SPREAD`.

mod common;

use std::time::Duration;

use common::{RATE_LIMIT_BODY, Step, Upstream, openai};
use http::Request;
use seawall_core::recording::ReplayBody;
use seawall_core::{Class, Code, Deadline, Failure};
use seawall_internal::random::MAX_SPREAD;
use seawall_retry::{Backoff, Budget, Jitter, RetryBudgetLayer, RetryPolicy};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

const SEC: Duration = Duration::from_secs(1);

fn request(deadline: Option<Duration>) -> Request<String> {
    let mut request = Request::post("https://api.openai.example/v1/chat/completions")
        .body(String::from(r#"{"model":"m"}"#))
        .unwrap();
    if let Some(after) = deadline {
        request.extensions_mut().insert(Deadline::after(after));
    }
    request
}

/// `n` operations through one ladder, each failing once with `failure`
/// then answered: when each called again, from the start.
async fn retried_at(
    failure: Failure,
    policy: RetryPolicy,
    n: usize,
    deadline: Option<Duration>,
) -> Vec<Duration> {
    let mut script: Vec<Step> = (0..n).map(|_| Step::Fail(failure.clone())).collect();
    script.push(Step::Ok);
    let upstream = Upstream::new(script);
    let svc = RetryBudgetLayer::new(policy, Budget::unlimited())
        .seed(9)
        .layer(upstream.service::<ReplayBody<String>>());
    let start = Instant::now();
    let operations: Vec<_> = (0..n)
        .map(|_| tokio::spawn(svc.clone().oneshot(request(deadline))))
        .collect();
    for operation in operations {
        operation.await.unwrap().expect("answered on the retry");
    }
    let calls = upstream.calls();
    assert_eq!(calls.len(), 2 * n);
    let mut again: Vec<Duration> = calls[n..].iter().map(|call| call.at - start).collect();
    again.sort();
    again
}

/// Twenty operations told `Retry-After: 2` retry at (nearly) twenty instants, none
/// before the hint, none past a quarter of it above, all before the
/// deadline.
#[tokio::test(start_paused = true)]
async fn operations_told_one_hint_come_back_spread_above_it() {
    let limited = openai(429, Some(2 * SEC), RATE_LIMIT_BODY);
    assert_eq!(limited.code(), Code::RateLimited);
    let n = 20;
    let deadline = 30 * SEC;
    let again = retried_at(limited, RetryPolicy::interactive(), n, Some(deadline)).await;
    assert!(again[0] >= 2 * SEC, "never before the hint: {again:?}");
    assert!(again[n - 1] <= 2 * SEC + SEC / 2, "{again:?}");
    assert!(again[n - 1] < deadline);
    // Instants, to the timer's millisecond: two may share one by chance
    // (twenty draws over 500 ms), never a burst.
    let most_at_once = again
        .chunk_by(|a, b| a == b)
        .map(<[Duration]>::len)
        .max()
        .unwrap();
    assert!(most_at_once <= 2, "a burst at one instant: {again:?}");
    let mut distinct = again.clone();
    distinct.dedup();
    assert!(distinct.len() >= n - 2, "{again:?}");
}

/// A spread that would cross the deadline is cut to fit: the hint fits
/// (with the attempt's least time), so the retry is made, inside it.
#[tokio::test(start_paused = true)]
async fn the_spread_is_cut_to_the_deadline() {
    let limited = openai(429, Some(2 * SEC), RATE_LIMIT_BODY);
    // 2 s of hint, 1 s of `min_attempt_time`: 100 ms to spare.
    let deadline = 3 * SEC + Duration::from_millis(100);
    let again = retried_at(limited, RetryPolicy::interactive(), 10, Some(deadline)).await;
    assert!(again[0] >= 2 * SEC, "{again:?}");
    assert!(
        again[9] <= 2 * SEC + Duration::from_millis(100),
        "past what the deadline leaves: {again:?}"
    );
}

/// Operations told a hint at `max_retry_after` still come back apart: the
/// spread runs past the bound by at most `MAX_SPREAD`, never more.
#[tokio::test(start_paused = true)]
async fn at_max_retry_after_the_spread_still_keeps_operations_apart() {
    for hint in [60 * SEC, 60 * SEC - Duration::from_millis(50)] {
        let limited = openai(429, Some(hint), RATE_LIMIT_BODY);
        assert_eq!(limited.code(), Code::RateLimited);
        let policy = RetryPolicy::interactive().max_retry_after(60 * SEC);
        let n = 10;
        let again = retried_at(limited, policy, n, None).await;
        assert!(again[0] >= hint, "{again:?}");
        assert!(again[n - 1] <= hint + MAX_SPREAD, "{again:?}");
        let mut distinct = again.clone();
        distinct.dedup();
        assert!(distinct.len() >= n - 2, "a burst at the bound: {again:?}");
    }
}

/// A breaker's refusal while the route cools down is waited out with the
/// backoff above its end; that backoff is cut to `max_retry_after` too (a
/// 59 s cooldown and a 30 s backoff slept 89 s under a 60 s bound).
#[tokio::test(start_paused = true)]
async fn a_cooldowns_backoff_never_passes_max_retry_after() {
    let cooling =
        Failure::with_class(Class::Transient, Code::RouteCoolingDown).with_retry_after(59 * SEC);
    let policy = RetryPolicy::batch()
        .backoff(Backoff::exponential(30 * SEC, 30 * SEC).with_jitter(Jitter::None))
        .max_retry_after(60 * SEC);
    let again = retried_at(cooling, policy, 1, None).await;
    assert!(again[0] >= 59 * SEC, "{again:?}");
    assert!(
        again[0] <= 59 * SEC + MAX_SPREAD,
        "past max_retry_after and the spread: {again:?}"
    );
}
