//! A route set whose every member is cooling down: the call waits for the
//! first back when that is worth it and fits, inside the set, and fails at
//! once otherwise. On tokio's paused clock, with the members' health
//! played by the test.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use seawall_core::{BoxError, Code, Deadline, Failure, RouteId};
use seawall_fallback::{Member, RouteSetLayer};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

/// Until when each member is rate-limited, as the breaker would say it.
#[derive(Clone, Default)]
struct Cooling(Arc<Mutex<Vec<(RouteId, Instant)>>>);

impl Cooling {
    fn until(&self, route: &str, until: Instant) {
        let mut routes = self.0.lock().unwrap();
        routes.retain(|(known, _)| known.as_str() != route);
        routes.push((RouteId::new(route), until));
    }

    fn layer(&self, members: &[&str]) -> RouteSetLayer {
        let cooling = self.clone();
        RouteSetLayer::new(members.iter().map(|m| Member::new(*m)))
            .unwrap()
            .seed(2)
            .health(move |route: &RouteId| {
                let (cooling, route) = (cooling.clone(), route.clone());
                move || {
                    let routes = cooling.0.lock().unwrap();
                    let (_, until) = routes.iter().find(|(known, _)| *known == route)?;
                    let left = until.saturating_duration_since(Instant::now());
                    (!left.is_zero()).then_some((Code::RateLimited, Some(left)))
                }
            })
    }
}

/// A provider that answers every call at once, counting them.
fn provider(
    calls: Arc<AtomicU32>,
) -> impl tower::Service<
    http::Request<()>,
    Response = http::Response<Full<Bytes>>,
    Error = BoxError,
    Future = impl Send,
> + Clone {
    tower::service_fn(move |_: http::Request<()>| {
        calls.fetch_add(1, Ordering::SeqCst);
        async { Ok(http::Response::new(Full::new(Bytes::from_static(b"ok")))) }
    })
}

fn request(deadline: Option<Duration>) -> http::Request<()> {
    let mut request = http::Request::post("https://api.example.com/v1/chat")
        .body(())
        .unwrap();
    if let Some(deadline) = deadline {
        request.extensions_mut().insert(Deadline::after(deadline));
    }
    request
}

const SEC: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn every_member_rate_limited_briefly_is_waited_for_inside_the_call() {
    let cooling = Cooling::default();
    let now = Instant::now();
    cooling.until("a", now + 3 * SEC);
    cooling.until("b", now + 2 * SEC);
    let calls = Arc::new(AtomicU32::new(0));
    let set = cooling.layer(&["a", "b"]).layer(provider(calls.clone()));
    let response = set
        .oneshot(request(Some(10 * SEC)))
        .await
        .expect("answered after the wait");
    let waited = now.elapsed();
    assert!(
        waited >= 2 * SEC && waited <= 2 * SEC + SEC / 2,
        "{waited:?}"
    );
    assert_eq!(
        response.extensions().get::<RouteId>().unwrap().as_str(),
        "b"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "one call, after the wait");
}

#[tokio::test(start_paused = true)]
async fn a_return_past_the_deadline_fails_at_once_with_what_cooled_it() {
    let cooling = Cooling::default();
    let now = Instant::now();
    cooling.until("a", now + 2 * SEC);
    cooling.until("b", now + 60 * SEC);
    let calls = Arc::new(AtomicU32::new(0));
    let set = cooling.layer(&["a", "b"]).layer(provider(calls.clone()));
    // A second must be left for the call after the wait.
    let error = set
        .clone()
        .oneshot(request(Some(Duration::from_millis(2500))))
        .await
        .unwrap_err();
    let failure = Failure::find(&*error).unwrap();
    // The set's own refusal, naming what cooled the member back first.
    assert_eq!(failure.code(), Code::RouteCoolingDown);
    assert_eq!(failure.cooled_by(), Some(Code::RateLimited));
    assert_eq!(failure.route().unwrap().as_str(), "a");
    assert_eq!(failure.retry_after(), Some(2 * SEC));
    assert_eq!(now.elapsed(), Duration::ZERO, "no wait");
    // Past `max_wait`, with no deadline at all.
    let short = cooling
        .layer(&["a", "b"])
        .max_wait(SEC)
        .layer(provider(calls.clone()));
    let error = short.oneshot(request(None)).await.unwrap_err();
    let failure = Failure::find(&*error).unwrap();
    assert_eq!(failure.code(), Code::RouteCoolingDown);
    assert_eq!(failure.cooled_by(), Some(Code::RateLimited));
    assert_eq!(now.elapsed(), Duration::ZERO, "no wait");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

/// A member cooled again while the call waited for it (another call met a
/// fresh limit): the call waits again while that fits, then calls.
#[tokio::test(start_paused = true)]
async fn a_member_cooled_again_during_the_wait_is_waited_for_again() {
    let cooling = Cooling::default();
    let now = Instant::now();
    cooling.until("a", now + 2 * SEC);
    cooling.until("b", now + 2 * SEC);
    let calls = Arc::new(AtomicU32::new(0));
    let set = cooling.layer(&["a", "b"]).layer(provider(calls.clone()));
    let call = tokio::spawn(set.oneshot(request(Some(10 * SEC))));
    tokio::time::sleep(SEC).await;
    cooling.until("a", now + 4 * SEC);
    cooling.until("b", now + 5 * SEC);
    call.await.unwrap().expect("answered after two waits");
    let waited = now.elapsed();
    assert!(waited >= 4 * SEC && waited < 6 * SEC, "{waited:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// A set called on an instance its caller keeps (a `Buffer`'s worker, a
/// reused service), over a concurrency limit of one: `poll_ready` took the
/// only permit, and the call found every member cooling. The wait must
/// give the permit back: it waited on a clone for the permit its own
/// instance held, until the deadline, with the member long back.
#[tokio::test(start_paused = true)]
async fn a_wait_gives_back_what_readiness_reserved_below() {
    use std::future::poll_fn;
    use tower::Service;
    use tower::limit::ConcurrencyLimit;

    let cooling = Cooling::default();
    let now = Instant::now();
    cooling.until("a", now + 2 * SEC);
    cooling.until("b", now + 2 * SEC);
    let calls = Arc::new(AtomicU32::new(0));
    let limited = ConcurrencyLimit::new(provider(calls.clone()), 1);
    let mut set = cooling.layer(&["a", "b"]).layer(limited.clone());
    poll_fn(|cx| set.poll_ready(cx)).await.unwrap();
    let call = tokio::spawn(set.call(request(Some(60 * SEC))));
    // Cooled again during the wait: while the call waits a second time,
    // the permit is free for others.
    tokio::time::sleep(SEC).await;
    cooling.until("a", now + 4 * SEC);
    cooling.until("b", now + 4 * SEC);
    tokio::time::sleep(3 * SEC / 2).await;
    let mut other = limited.clone();
    let free = tokio::time::timeout(Duration::from_millis(1), poll_fn(|cx| other.poll_ready(cx)))
        .await
        .is_ok();
    assert!(free, "the permit is free during the second wait");
    drop(other);
    let response = tokio::time::timeout(10 * SEC, call)
        .await
        .expect("answered, not stuck on its own permit")
        .unwrap()
        .expect("answered after the wait");
    assert!(response.status().is_success());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let waited = now.elapsed();
    assert!(waited >= 4 * SEC && waited < 5 * SEC, "{waited:?}");
}

/// Members that come back in a second, then say they are cooling with no
/// end a `Duration` can tell apart from for ever, under a set with no
/// deadline and no bound on the wait: no panic in the caller's task. Such
/// a time left is past `MAX_RETRY_HINT` (a week or more, no known
/// return), so the second look is not a wait: the set refuses at once.
/// Changed on purpose with 97ae801: the second wait used to be a wait
/// with no end.
#[tokio::test(start_paused = true)]
async fn a_second_wait_too_long_for_the_clock_is_refused_without_a_panic() {
    let looks = Arc::new(AtomicU32::new(0));
    let set = RouteSetLayer::new([Member::new("a"), Member::new("b")])
        .unwrap()
        .seed(2)
        .max_wait(Duration::MAX)
        .health({
            let looks = looks.clone();
            move |_: &RouteId| {
                let looks = looks.clone();
                move || {
                    // The first choice looks at both members once.
                    let left = match looks.fetch_add(1, Ordering::SeqCst) {
                        0 | 1 => SEC,
                        _ => Duration::MAX,
                    };
                    Some((Code::RateLimited, Some(left)))
                }
            }
        })
        .layer(provider(Arc::new(AtomicU32::new(0))));
    let started = Instant::now();
    let failure = tokio::time::timeout(5 * SEC, set.oneshot(request(None)))
        .await
        .expect("refused, not waiting without end")
        .map(drop)
        .expect_err("no member comes back");
    let failure = Failure::find(&*failure).expect("a seawall failure");
    assert_eq!(failure.code(), Code::RouteCoolingDown, "{failure:?}");
    assert!(looks.load(Ordering::SeqCst) >= 3, "looked at again");
    assert!(started.elapsed() < 2 * SEC, "{:?}", started.elapsed());
}

/// A provider that is not ready between `closed.0` and `closed.1`
/// (a limit below the set, held by other calls), counting its calls.
struct Unready {
    closed: (Instant, Instant),
    calls: Arc<AtomicU32>,
    gate: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl Clone for Unready {
    fn clone(&self) -> Self {
        Unready {
            closed: self.closed,
            calls: self.calls.clone(),
            gate: None,
        }
    }
}

impl tower::Service<http::Request<()>> for Unready {
    type Response = http::Response<Full<Bytes>>;
    type Error = BoxError;
    type Future = std::future::Ready<Result<Self::Response, BoxError>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        use std::future::Future;
        let now = Instant::now();
        if now >= self.closed.0 && now < self.closed.1 {
            let until = self.closed.1;
            let gate = self
                .gate
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
            if gate.as_mut().poll(cx).is_pending() {
                return std::task::Poll::Pending;
            }
        }
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<()>) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok(http::Response::new(Full::new(Bytes::from_static(
            b"ok",
        )))))
    }
}

/// The wait for a member left a second for the call, but the service
/// below then kept the call waiting for its readiness until half a second
/// before the deadline: the call is not sent (it could not finish, and
/// may be billed); the deadline has taken it.
#[tokio::test(start_paused = true)]
async fn a_call_the_service_kept_waiting_past_its_time_is_not_sent() {
    let cooling = Cooling::default();
    let now = Instant::now();
    cooling.until("a", now + 2 * SEC);
    cooling.until("b", now + 2 * SEC);
    let calls = Arc::new(AtomicU32::new(0));
    let below = Unready {
        closed: (now + SEC, now + 9 * SEC + SEC / 2),
        calls: calls.clone(),
        gate: None,
    };
    let set = cooling.layer(&["a", "b"]).layer(below.clone());
    let error = set.oneshot(request(Some(10 * SEC))).await.unwrap_err();
    assert_eq!(
        Failure::find(&*error).unwrap().code(),
        Code::DeadlineExceeded
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no call sent");
    // Kept waiting with time still left after: the call is sent.
    let cooling = Cooling::default();
    let now = Instant::now();
    cooling.until("a", now + 2 * SEC);
    cooling.until("b", now + 2 * SEC);
    let below = Unready {
        closed: (now + SEC, now + 5 * SEC),
        ..below
    };
    let set = cooling.layer(&["a", "b"]).layer(below);
    set.oneshot(request(Some(10 * SEC)))
        .await
        .expect("answered with time left");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// Member `a` takes the call and never answers; `b` answers in 10 ms.
/// Each caller gives up after 5 s (a timeout, a client gone): the call
/// given up on counts its time on `a`, so `a` stops drawing calls. Were
/// it never measured, `a` would cost nothing once idle, and every call
/// after `b`'s first answer would go to it.
#[tokio::test(start_paused = true)]
async fn a_member_that_hangs_until_its_callers_give_up_stops_drawing_calls() {
    let hung = Arc::new(AtomicU32::new(0));
    let answered = Arc::new(AtomicU32::new(0));
    let provider = tower::service_fn({
        let (hung, answered) = (hung.clone(), answered.clone());
        move |request: http::Request<()>| {
            let route = request.extensions().get::<RouteId>().unwrap().clone();
            let (hung, answered) = (hung.clone(), answered.clone());
            async move {
                if route.as_str() == "a" {
                    hung.fetch_add(1, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                }
                answered.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok::<_, BoxError>(http::Response::new(Full::new(Bytes::from_static(b"ok"))))
            }
        }
    });
    let set = RouteSetLayer::new([Member::new("a"), Member::new("b")])
        .unwrap()
        .seed(2)
        .layer(provider);
    let mut gave_up = 0;
    for _ in 0..20 {
        match tokio::time::timeout(5 * SEC, set.clone().oneshot(request(None))).await {
            Ok(response) => {
                response.expect("b answers");
            }
            Err(_) => gave_up += 1,
        }
    }
    let (hung, answered) = (hung.load(Ordering::SeqCst), answered.load(Ordering::SeqCst));
    assert_eq!(hung + answered, 20);
    assert_eq!(gave_up, hung, "every call to a was given up on");
    assert!(hung <= 2, "a drew {hung} of 20 calls");
}

/// A call dropped before its first poll (a `select!` whose other branch
/// was ready, an aborted task) sent nothing: it is no latency sample of
/// its member. Measured at its microsecond, it made an unmeasured member
/// the fastest of the set, and cut a measured member's estimate by a
/// quarter per drop.
#[tokio::test(start_paused = true)]
async fn a_call_dropped_before_its_first_poll_is_not_measured() {
    let provider = tower::service_fn(|_: http::Request<()>| async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        Ok::<_, BoxError>(http::Response::new(Full::new(Bytes::from_static(b"ok"))))
    });
    let mut set = RouteSetLayer::new([Member::new("a")])
        .unwrap()
        .layer(provider);
    let latency = |set: &seawall_fallback::RouteSet<_>| set.handle().members()[0].latency;
    set.ready().await.unwrap();
    drop(tower::Service::call(&mut set, request(None)));
    assert_eq!(latency(&set), None, "never polled, never measured");
    assert_eq!(set.handle().members()[0].in_flight, 0);

    set.clone().oneshot(request(None)).await.expect("answered");
    let measured = latency(&set).expect("measured by its answer");
    assert!(measured >= Duration::from_millis(400), "{measured:?}");
    for _ in 0..4 {
        set.ready().await.unwrap();
        drop(tower::Service::call(&mut set, request(None)));
    }
    let after = latency(&set).expect("still measured");
    assert!(after >= measured, "{measured:?} became {after:?}");
}
