//! A service that fails its readiness before a retry: the operation ends
//! with that failure, and the receipt of the attempts already made is in
//! it, as in any failure the ladder stops on.

mod common;

use std::future::{Ready, ready};
use std::task::{Context, Poll};

use http::{Request, Response};
use seawall_core::recording::ReplayBody;
use seawall_core::{Code, Failure, StopReason};
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{BoxError, Layer, Service, ServiceExt};

/// Ready once, answering a 503; every later readiness fails with a
/// refusal of its own (a breaker that gates readiness, say).
#[derive(Clone, Default)]
struct ReadyOnce {
    polled: usize,
}

impl Service<Request<ReplayBody<String>>> for ReadyOnce {
    type Response = Response<()>;
    type Error = BoxError;
    type Future = Ready<Result<Response<()>, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.polled += 1;
        Poll::Ready(match self.polled {
            1 => Ok(()),
            _ => Err(Failure::new(Code::CircuitOpen).into()),
        })
    }

    fn call(&mut self, _: Request<ReplayBody<String>>) -> Self::Future {
        let failure = common::openai(503, None, r#"{"error":{"message":"down"}}"#);
        ready(Err(failure.into()))
    }
}

#[tokio::test(start_paused = true)]
async fn a_readiness_failure_before_a_retry_keeps_the_receipt() {
    let svc = RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited())
        .layer(ReadyOnce::default());
    let err = svc
        .oneshot(Request::new(String::new()))
        .await
        .expect_err("the retry's readiness failed");
    let failure = common::failure(&err);
    assert_eq!(failure.code(), Code::CircuitOpen);
    let receipt = common::receipt(&err);
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    assert_eq!(codes, [Some(Code::ProviderUnavailable)], "{receipt:?}");
    assert_eq!(receipt.stop, Some(StopReason::NotRetryable));
}

/// Ready once (answering a 503), then never ready again: a breaker that
/// gates its readiness through a long break.
#[derive(Clone, Default)]
struct ReadyThenGated {
    polled: usize,
}

impl Service<Request<ReplayBody<String>>> for ReadyThenGated {
    type Response = Response<()>;
    type Error = BoxError;
    type Future = Ready<Result<Response<()>, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.polled += 1;
        match self.polled {
            1 => Poll::Ready(Ok(())),
            _ => Poll::Pending,
        }
    }

    fn call(&mut self, _: Request<ReplayBody<String>>) -> Self::Future {
        let failure = common::openai(503, None, r#"{"error":{"message":"down"}}"#);
        ready(Err(failure.into()))
    }
}

/// A retry that waits for a service gating its readiness waits no longer
/// than the ladder's time: it ends `deadline_exceeded` when an attempt no
/// longer fits before the deadline (`min_attempt_time`, a second, before
/// it), the receipt of the attempt made with it, instead of waiting out
/// the whole break.
#[tokio::test(start_paused = true)]
async fn a_wait_for_readiness_ends_with_the_ladders_time() {
    use seawall_core::Deadline;
    use std::time::Duration;
    let svc = RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited())
        .layer(ReadyThenGated::default());
    let started = tokio::time::Instant::now();
    let mut request = Request::new(String::new());
    request
        .extensions_mut()
        .insert(Deadline::at(started + Duration::from_secs(2)));
    let err = tokio::time::timeout(Duration::from_secs(600), svc.oneshot(request))
        .await
        .expect("the wait ends with the ladder's time")
        .expect_err("no attempt could be made");
    assert_eq!(common::failure(&err).code(), Code::DeadlineExceeded);
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    let receipt = common::receipt(&err);
    assert_eq!(receipt.attempts.len(), 1, "{receipt:?}");
    assert_eq!(receipt.stop, Some(StopReason::Deadline));
}

/// Ready once (answering a 503), then unready until `reopens`, counting
/// its calls: a limit below held by other calls, a breaker's gate.
#[derive(Clone)]
struct ReadyThenHeld {
    reopens: tokio::time::Instant,
    calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Service<Request<ReplayBody<String>>> for ReadyThenHeld {
    type Response = Response<()>;
    type Error = BoxError;
    type Future = Ready<Result<Response<()>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        use std::future::Future;
        use std::sync::atomic::Ordering;
        if self.calls.load(Ordering::SeqCst) == 0 {
            return Poll::Ready(Ok(()));
        }
        // A fresh timer each poll: this service keeps no state but its
        // calls, and the timer registers the waker.
        let mut held = Box::pin(tokio::time::sleep_until(self.reopens));
        held.as_mut().poll(cx).map(Ok)
    }

    fn call(&mut self, _: Request<ReplayBody<String>>) -> Self::Future {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let failure = common::openai(503, None, r#"{"error":{"message":"down"}}"#);
        ready(Err(failure.into()))
    }
}

/// The retry fitted its deadline when planned, but the service then kept
/// it waiting for readiness until 10 ms before the deadline: it is not
/// sent (it could not finish, and may be billed). Made ready with its
/// time still left, it is.
#[tokio::test(start_paused = true)]
async fn a_retry_the_service_kept_waiting_past_its_time_is_not_sent() {
    use seawall_core::Deadline;
    use std::sync::atomic::Ordering;
    use std::time::Duration;
    for (reopens, calls) in [
        (Duration::from_millis(9990), 1),
        (Duration::from_secs(5), 2),
    ] {
        let started = tokio::time::Instant::now();
        let service = ReadyThenHeld {
            reopens: started + reopens,
            calls: Default::default(),
        };
        let svc = RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited())
            .layer(service.clone());
        let mut request = Request::new(String::new());
        request
            .extensions_mut()
            .insert(Deadline::at(started + Duration::from_secs(10)));
        let err = svc.oneshot(request).await.expect_err("503 every time");
        assert_eq!(service.calls.load(Ordering::SeqCst), calls, "{reopens:?}");
        let receipt = common::receipt(&err);
        assert_eq!(receipt.attempts.len(), calls, "{receipt:?}");
        if calls == 1 {
            assert_eq!(common::failure(&err).code(), Code::DeadlineExceeded);
            assert_eq!(receipt.stop, Some(StopReason::Deadline));
            assert_eq!(started.elapsed(), Duration::from_secs(9));
        }
    }
}

/// Without a deadline (or with one far off), a wait for a service that
/// stays unready ends at `max_retry_after`: a `timeout` another route may
/// take (failover), not a wait without end through a breaker's break of
/// minutes or an isolated route.
#[tokio::test(start_paused = true)]
async fn a_wait_for_readiness_ends_at_max_retry_after() {
    use seawall_core::{Action, Deadline};
    use std::time::Duration;
    for deadline in [None, Some(Duration::from_secs(3600))] {
        let policy = RetryPolicy::no_wait(3).max_retry_after(Duration::from_secs(5));
        let svc =
            RetryBudgetLayer::new(policy, Budget::unlimited()).layer(ReadyThenGated::default());
        let started = tokio::time::Instant::now();
        let mut request = Request::new(String::new());
        if let Some(after) = deadline {
            request
                .extensions_mut()
                .insert(Deadline::at(started + after));
        }
        let err = tokio::time::timeout(Duration::from_secs(600), svc.oneshot(request))
            .await
            .expect("the wait ends")
            .expect_err("no attempt could be made");
        let failure = common::failure(&err);
        assert_eq!(
            (failure.code(), failure.action()),
            (Code::Timeout, Action::Failover),
            "{deadline:?}"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(5), "{deadline:?}");
        let receipt = common::receipt(&err);
        assert_eq!(receipt.attempts.len(), 1);
        // A wait too long, not the deadline (which did not pass).
        assert_eq!(receipt.stop, Some(StopReason::HintTooLong));
    }
}

/// Refuses its first `refusals` calls as a breaker does while its route
/// cools down — without calling on — and answers the rest from `inner`.
#[derive(Clone)]
struct CoolingThen<S> {
    inner: S,
    refused: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    refusals: usize,
}

impl<S> Service<Request<ReplayBody<String>>> for CoolingThen<S>
where
    S: Service<Request<ReplayBody<String>>, Response = Response<()>, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response<()>;
    type Error = BoxError;
    type Future = futures_util::future::BoxFuture<'static, Result<Response<()>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReplayBody<String>>) -> Self::Future {
        use std::sync::atomic::Ordering;
        if self.refused.fetch_add(1, Ordering::SeqCst) < self.refusals {
            let refusal = Failure::new(Code::RouteCoolingDown)
                .with_retry_after(std::time::Duration::from_secs(1));
            return Box::pin(ready(Err(refusal.into())));
        }
        Box::pin(self.inner.call(request))
    }
}

/// A retry refused below without a call (the route still cooling) sleeps
/// before the next: the permit its readiness took from a concurrency
/// limit of one is free meanwhile, for the calls to other routes. It was
/// held through every such sleep, so one operation waiting out a cooled
/// route stalled a client's healthy routes with it.
#[tokio::test(start_paused = true)]
async fn a_retry_refused_below_holds_no_permit_while_it_sleeps() {
    use std::future::poll_fn;
    use std::time::Duration;
    use tower::limit::ConcurrencyLimit;

    let answer = tower::service_fn(|_: Request<ReplayBody<String>>| async {
        Ok::<_, BoxError>(Response::new(()))
    });
    let limited = ConcurrencyLimit::new(answer, 1);
    let cooling = CoolingThen {
        inner: limited.clone(),
        refused: Default::default(),
        refusals: 3,
    };
    let policy = RetryPolicy::no_wait(5).max_retry_after(Duration::from_secs(10));
    // Called on an instance its caller keeps (a `Buffer`'s worker): the
    // first attempt's refusal leaves that instance's permit unspent too.
    let mut svc = RetryBudgetLayer::new(policy, Budget::unlimited()).layer(cooling);
    poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
    let operation = tokio::spawn(svc.call(Request::new(String::new())));
    // Asleep after the first attempt's refusal, then after the first
    // retry's (a second's sleep each, and the backoff).
    let start = tokio::time::Instant::now();
    for at in [500, 1500] {
        tokio::time::sleep_until(start + Duration::from_millis(at)).await;
        assert!(!operation.is_finished());
        let mut other = limited.clone();
        let free =
            tokio::time::timeout(Duration::from_millis(1), poll_fn(|cx| other.poll_ready(cx)))
                .await
                .is_ok();
        assert!(free, "the sleeping operation holds no permit ({at} ms)");
    }
    drop(svc);
    let response = tokio::time::timeout(Duration::from_secs(30), operation)
        .await
        .expect("the operation ends")
        .unwrap()
        .expect("answered once the route is back");
    let receipt = response
        .extensions()
        .get::<seawall_core::Receipt>()
        .expect("a receipt");
    assert_eq!(receipt.attempts.len(), 4, "{receipt:?}");
}

/// A route that keeps cooling down (refused at every attempt, a rate
/// limit cooling it again as each cooldown ends) holds the ladder no
/// longer than its attempts: the first refusal waited out is free, every
/// later one is an attempt, and the ladder stops at `max_attempts`.
#[tokio::test(start_paused = true)]
async fn a_route_that_keeps_cooling_down_ends_the_ladder() {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    let called = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let answer = {
        let called = called.clone();
        tower::service_fn(move |_: Request<ReplayBody<String>>| {
            called.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, BoxError>(Response::new(())) }
        })
    };
    let cooling = CoolingThen {
        inner: answer,
        refused: Default::default(),
        refusals: usize::MAX,
    };
    let refused = cooling.refused.clone();
    let policy = RetryPolicy::no_wait(3).max_retry_after(Duration::from_secs(10));
    let svc = RetryBudgetLayer::new(policy, Budget::unlimited()).layer(cooling);
    let err = tokio::time::timeout(
        Duration::from_secs(600),
        svc.oneshot(Request::new(String::new())),
    )
    .await
    .expect("the ladder ends")
    .expect_err("refused throughout");
    assert_eq!(called.load(Ordering::SeqCst), 0);
    // The free wait, then the three attempts.
    assert_eq!(refused.load(Ordering::SeqCst), 4);
    let receipt = common::receipt(&err);
    assert_eq!(receipt.attempts.len(), 4, "{receipt:?}");
    assert_eq!(receipt.calls(), 0);
    assert_eq!(receipt.stop, Some(StopReason::Attempts));
}
