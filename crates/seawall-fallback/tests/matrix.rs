//! When the fallback fires, and what the caller gets back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, Full};
use seawall_core::provider::{ErrorContext, classify_grpc};
use seawall_core::recording::ReplayBody;
use seawall_core::{
    Action, Attempt, BoxError, ClosedBy, Code, Deadline, Evidence, Failure, Receipt, RouteId,
    StopReason,
};
use seawall_fallback::{FallbackLayer, SERVED_BY_HEADER, SameRouteFallback, ServedBy};
use seawall_test::body::Script;
use tower::{Layer, ServiceExt, service_fn};

type Req = http::Request<ReplayBody<Full<Bytes>>>;
type Resp = http::Response<Script>;

/// How the primary ends.
#[derive(Clone)]
enum Primary {
    /// Fails before any response, with this failure.
    Before(Failure),
    /// Answers, then the body fails after content with this failure.
    After(Failure),
    /// Answers well.
    Ok,
    /// Fails with an error that is not a seawall failure.
    Foreign,
    /// Fails before any response, with this failure inside another error.
    Wrapped(Failure),
}

/// Another layer's error with a seawall failure as its source.
#[derive(Debug)]
struct Wrapper(Failure);

impl std::fmt::Display for Wrapper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("wrapped")
    }
}

impl std::error::Error for Wrapper {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

fn primary_service(
    how: Primary,
    calls: Arc<AtomicUsize>,
) -> impl tower::Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone {
    service_fn(move |request: Req| {
        let how = how.clone();
        let calls = Arc::clone(&calls);
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            // The primary sends its whole body before failing.
            request.into_body().collect().await?;
            match how {
                Primary::Before(failure) => Err(failure.into()),
                Primary::After(failure) => Ok(http::Response::new(Script(
                    [
                        Ok(Frame::data(Bytes::from_static(b"Hel"))),
                        Err(failure.into()),
                    ]
                    .into(),
                ))),
                Primary::Ok => Ok(http::Response::new(Script::default())),
                Primary::Foreign => Err("connection pool closed".into()),
                Primary::Wrapped(failure) => Err(Box::new(Wrapper(failure)).into()),
            }
        }
    })
}

/// A fallback that records what it was sent.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Sent>>>);

/// A request as the fallback received it: URI, route extension, body.
type Sent = (http::Uri, Option<RouteId>, Bytes);

fn fallback_service(
    seen: Seen,
    fails: Option<Code>,
) -> impl tower::Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone {
    service_fn(move |request: Req| {
        let seen = seen.clone();
        async move {
            let (head, body) = request.into_parts();
            let body = body.collect().await?.to_bytes();
            let route = head.extensions.get::<RouteId>().cloned();
            seen.0.lock().unwrap().push((head.uri, route, body));
            match fails {
                Some(code) => Err(Failure::new(code).into()),
                None => Ok(http::Response::new(Script(
                    [Ok(Frame::data(Bytes::from_static(b"Hello")))].into(),
                ))),
            }
        }
    })
}

const PRIMARY: &str = "api.primary.example";
const OTHER: &str = "api.other.example";

fn request() -> http::Request<Full<Bytes>> {
    http::Request::post(format!("https://{PRIMARY}/v1/chat"))
        .body(Full::new(Bytes::from_static(b"{\"model\":\"big\"}")))
        .unwrap()
}

fn to_other(request: &mut Req) {
    *request.uri_mut() = format!("https://{OTHER}/v1/chat").parse().unwrap();
}

struct Run {
    result: Result<Resp, BoxError>,
    primary_calls: usize,
    seen: Seen,
}

type Boxed = tower::util::BoxCloneSyncService<Req, Resp, BoxError>;

/// The primary behind a fallback to `OTHER` (rewritten URI), configured
/// further by `configure`.
async fn run_with<R>(
    how: Primary,
    fallback_fails: Option<Code>,
    request: http::Request<Full<Bytes>>,
    configure: impl FnOnce(FallbackLayer<Boxed>) -> FallbackLayer<Boxed, R>,
) -> Run
where
    R: seawall_fallback::Rewrite<Full<Bytes>> + Send + Sync + 'static,
{
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Seen::default();
    let layer = configure(FallbackLayer::new(Boxed::new(fallback_service(
        seen.clone(),
        fallback_fails,
    ))));
    let service = layer.layer(primary_service(how, Arc::clone(&calls)));
    let result = service.oneshot(request).await;
    Run {
        result,
        primary_calls: calls.load(Ordering::SeqCst),
        seen,
    }
}

async fn run(how: Primary) -> Run {
    run_with(how, None, request(), |layer| layer.rewrite(to_other)).await
}

impl Run {
    fn fired(&self) -> bool {
        !self.seen.0.lock().unwrap().is_empty()
    }

    fn failure(&self) -> &Failure {
        let error = self.result.as_ref().expect_err("an error");
        Failure::find(&**error).expect("a seawall failure")
    }
}

/// The codes whose failure, before content, another route may fix.
const FAILS_OVER: &[Code] = &[
    Code::RateLimited,
    Code::ProviderUnavailable,
    Code::Overloaded,
    Code::EmptyResponse,
    Code::Timeout,
    Code::FirstByteTimeout,
    Code::IdleTimeout,
    Code::Transport,
    Code::ProtocolViolation,
    Code::CircuitOpen,
    Code::BudgetExhausted,
    // The route's own verdicts: permanent for that account, key, deployment
    // or host, not for the request (see `Scope`).
    Code::QuotaExhausted,
    Code::Auth,
    // An HTTP 404's model or deployment, gRPC's UNIMPLEMENTED method.
    Code::NotFound,
    Code::Redirected,
    Code::RouteCoolingDown,
];

#[tokio::test]
async fn matrix_before_content_fires_only_for_route_failures() {
    for code in Code::ALL {
        let run = run(Primary::Before(Failure::new(*code))).await;
        let expected = FAILS_OVER.contains(code);
        assert_eq!(run.fired(), expected, "{code} before content");
        assert_eq!(run.primary_calls, 1);
        match &run.result {
            Ok(response) => {
                assert!(expected, "{code}");
                let served = response.extensions().get::<ServedBy>().unwrap();
                assert_eq!(
                    served,
                    &ServedBy {
                        route: RouteId::new(OTHER),
                        fallback: true
                    }
                );
            }
            Err(_) => {
                assert!(!expected, "{code}");
                // The primary's own failure comes back unchanged.
                assert_eq!(run.failure().code(), *code);
            }
        }
    }
}

/// A gRPC server's NOT_FOUND is about the entity the call names (a
/// `GetX(id)` that missed), not the route: another route would only be
/// sent the same call again, or answer from a replica that lags. Its
/// UNIMPLEMENTED (this server lacks the method) is the route's.
#[tokio::test]
async fn a_grpc_not_found_stays_an_unimplemented_moves() {
    let cx = ErrorContext {
        status: Some(200),
        ..ErrorContext::in_stream(SystemTime::now())
    };
    let grpc = |status, message| Primary::Before(classify_grpc(status, Some(message), cx));
    let missing = run(grpc(5, "no such order")).await;
    assert!(!missing.fired(), "NOT_FOUND went to another route");
    assert_eq!(missing.primary_calls, 1);
    assert_eq!(missing.failure().provider_code(), Some("5"));
    let lacking = run(grpc(12, "unknown method")).await;
    assert!(lacking.fired(), "UNIMPLEMENTED stayed on the route");
}

#[tokio::test]
async fn matrix_after_content_never_fires() {
    for code in Code::ALL {
        let mut evidence = Evidence::default();
        evidence.bytes = 3;
        evidence.content_events = 1;
        evidence.content_seen = true;
        evidence.closed_by = Some(ClosedBy::Them);
        let failure = Failure::new(*code).with_evidence(evidence);
        let run = run(Primary::After(failure)).await;
        let response = run.result.expect("the response reached the caller");
        assert_eq!(
            response.extensions().get::<ServedBy>(),
            Some(&ServedBy {
                route: RouteId::new(PRIMARY),
                fallback: false
            })
        );
        let error = response.into_body().collect().await.unwrap_err();
        assert_eq!(Failure::find(&*error).unwrap().code(), *code);
        assert!(
            run.seen.0.lock().unwrap().is_empty(),
            "{code} after content"
        );
    }
}

#[tokio::test]
async fn the_action_decides_not_the_code() {
    // A retry ladder that promoted repeated silent timeouts.
    let promoted = Failure::new(Code::Timeout).with_action(Action::Failover);
    assert!(run(Primary::Before(promoted)).await.fired());
    let surfaced = Failure::new(Code::Overloaded).with_action(Action::Surface);
    assert!(!run(Primary::Before(surfaced)).await.fired());
    // Even forced to Retry, a cancellation or the operation's deadline never fails over.
    for code in [Code::Cancelled, Code::DeadlineExceeded] {
        let forced = Failure::new(code).with_action(Action::Retry);
        assert!(!run(Primary::Before(forced)).await.fired(), "{code}");
    }
    // An error that is not a seawall failure is not understood: no fallback.
    let foreign = run(Primary::Foreign).await;
    assert!(!foreign.fired());
    assert!(foreign.result.is_err());
}

#[tokio::test]
async fn a_success_is_labelled_with_the_primary_and_left_alone() {
    let run = run_with(Primary::Ok, None, request(), |layer| {
        layer.rewrite(to_other).served_by_header(true)
    })
    .await;
    assert!(!run.fired());
    let response = run.result.unwrap();
    assert_eq!(response.headers()[SERVED_BY_HEADER], PRIMARY);
    assert_eq!(
        response.extensions().get::<ServedBy>(),
        Some(&ServedBy {
            route: RouteId::new(PRIMARY),
            fallback: false
        })
    );
    assert!(response.extensions().get::<Receipt>().is_none());
}

#[tokio::test]
async fn the_fallback_gets_the_same_body_its_route_and_the_rewrite() {
    let run = run_with(
        Primary::Before(Failure::new(Code::Overloaded)),
        None,
        request(),
        |layer| {
            layer
                .rewrite(to_other)
                .route(RouteId::new("other"))
                .served_by_header(true)
        },
    )
    .await;
    let response = run.result.unwrap();
    let seen = run.seen.0.lock().unwrap();
    let (uri, route, body) = &seen[0];
    assert_eq!(uri.host(), Some(OTHER));
    assert_eq!(route.as_ref(), Some(&RouteId::new("other")));
    assert_eq!(&body[..], b"{\"model\":\"big\"}");
    assert_eq!(response.headers()[SERVED_BY_HEADER], "other; fallback");
}

#[tokio::test]
async fn receipts_are_merged_in_the_response_and_in_the_failure() {
    // The primary's ladder made three attempts.
    let mut ladder = Receipt::default();
    for delay in [0, 250, 500] {
        ladder.push(Attempt::new(
            RouteId::new(PRIMARY),
            Some(Code::Overloaded),
            Duration::from_millis(delay),
        ));
    }
    ladder.stop = Some(StopReason::Attempts);
    let failure = Failure::new(Code::Overloaded).with_receipt(ladder);

    let served = run(Primary::Before(failure.clone())).await;
    let response = served.result.unwrap();
    let receipt = response.extensions().get::<Receipt>().unwrap();
    assert_eq!(receipt.attempts.len(), 4);
    assert_eq!(
        receipt.routes(),
        vec![&RouteId::new(PRIMARY), &RouteId::new(OTHER)]
    );
    assert_eq!(receipt.attempts[3].code, None);
    assert_eq!(receipt.stop, Some(StopReason::Succeeded));
    assert!(receipt.fallback);

    // One attempt on the fallback; its failure comes back with both in the receipt.
    let failed = run_with(
        Primary::Before(failure),
        Some(Code::ProviderUnavailable),
        request(),
        |layer| layer.rewrite(to_other),
    )
    .await;
    assert_eq!(failed.seen.0.lock().unwrap().len(), 1);
    let returned = failed.failure();
    assert_eq!(returned.code(), Code::ProviderUnavailable);
    assert_eq!(returned.route(), Some(&RouteId::new(OTHER)));
    let receipt = returned.receipt().unwrap();
    assert_eq!(receipt.attempts.len(), 4);
    assert_eq!(receipt.attempts[3].code, Some(Code::ProviderUnavailable));
    assert_eq!(
        receipt.routes(),
        vec![&RouteId::new(PRIMARY), &RouteId::new(OTHER)]
    );
    assert!(receipt.fallback);
}

#[tokio::test]
async fn an_identical_route_is_a_configuration_error_not_a_call() {
    // Configured: refused before the primary is called.
    let run = run_with(
        Primary::Before(Failure::new(Code::Overloaded)),
        None,
        request(),
        |layer| layer.route(RouteId::new(PRIMARY)),
    )
    .await;
    assert_eq!(run.primary_calls, 0);
    assert!(!run.fired());
    let error = run.result.unwrap_err();
    let same = error.downcast_ref::<SameRouteFallback>().unwrap();
    assert_eq!(same.route(), &RouteId::new(PRIMARY));
    assert_eq!(same.code(), "fallback_same_route");

    // Derived (no rewrite): found when the fallback would fire; the
    // primary's failure stays reachable.
    let run = run_with(
        Primary::Before(Failure::new(Code::Overloaded)),
        None,
        request(),
        |layer| layer,
    )
    .await;
    assert_eq!(run.primary_calls, 1);
    assert!(!run.fired());
    let error = run.result.as_ref().unwrap_err();
    assert!(error.downcast_ref::<SameRouteFallback>().is_some());
    assert_eq!(run.failure().code(), Code::Overloaded);
}

/// Runs `how` on a request due in `due`, with a fallback that needs 1 s of
/// the operation's deadline left.
async fn run_due_in(how: Primary, due: Duration) -> Run {
    let mut request = request();
    request.extensions_mut().insert(Deadline::after(due));
    run_with(how, None, request, |layer| {
        layer
            .rewrite(to_other)
            .min_remaining(Duration::from_secs(1))
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn not_fired_when_the_deadline_is_too_short() {
    let open = || Primary::Before(Failure::new(Code::CircuitOpen));
    let run = run_due_in(open(), Duration::from_millis(500)).await;
    assert!(!run.fired());
    let failure = run.failure();
    assert_eq!(failure.code(), Code::CircuitOpen);
    assert_eq!(failure.receipt().unwrap().stop, Some(StopReason::Deadline));

    let run = run_due_in(open(), Duration::from_secs(30)).await;
    assert!(run.fired());
}

/// A failure inside another layer's error gets its receipt and stop
/// reason too, as one returned directly does.
#[tokio::test(start_paused = true)]
async fn a_wrapped_failure_not_fallen_back_still_says_why() {
    let run = run_due_in(
        Primary::Wrapped(Failure::new(Code::CircuitOpen)),
        Duration::from_millis(500),
    )
    .await;
    assert!(!run.fired());
    let failure = run.failure();
    assert_eq!(failure.code(), Code::CircuitOpen);
    let receipt = failure.receipt().expect("a receipt on the wrapped failure");
    assert_eq!(receipt.stop, Some(StopReason::Deadline));
    assert_eq!(receipt.attempts.len(), 1);
}

/// A body that comes whole in one frame is kept past the replay cap (a
/// reference to the caller's bytes, not a copy) and goes to the fallback
/// like any other. (Changed on purpose: it used to be sent once and not
/// replayed; a streamed body past the cap still is, as the retry layer's
/// replay tests show.)
#[tokio::test]
async fn a_whole_body_over_the_replay_cap_still_goes_to_the_fallback() {
    let run = run_with(
        Primary::Before(Failure::new(Code::Overloaded)),
        None,
        request(),
        |layer| layer.rewrite(to_other).max_replay_bytes(4),
    )
    .await;
    assert!(run.fired());
}
