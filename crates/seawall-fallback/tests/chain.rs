//! A chain of fallback routes: tried in order, one call each, skipping a
//! route that is cooling down, opt-in triggers for request-scoped
//! failures, and waiting when every route is cooling down — on tokio's
//! paused clock.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall_core::recording::ReplayBody;
use seawall_core::{BoxError, Code, Deadline, Evidence, Failure, Receipt, RouteId, StopReason};
use seawall_fallback::{
    FallbackLayer, FallbackRoute, Member, Rewrite, RouteSetBody, RouteSetLayer, ServedBy,
};
use tokio::time::Instant;
use tower::{Layer, ServiceExt, service_fn};

mod common;

use common::Registry;

type Req = http::Request<ReplayBody<Full<Bytes>>>;
type Resp = http::Response<Full<Bytes>>;
type Boxed = tower::util::BoxCloneSyncService<Req, Resp, BoxError>;

/// A scripted upstream: each call takes the next outcome (`None`: an
/// answer), an answer once the script is used up; it counts its calls and
/// may take a while.
#[derive(Clone, Default)]
struct Upstream {
    calls: Arc<AtomicUsize>,
    script: Arc<Mutex<VecDeque<Option<Failure>>>>,
    takes: Duration,
}

impl Upstream {
    fn failing(failures: impl IntoIterator<Item = Failure>) -> Self {
        Upstream {
            script: Arc::new(Mutex::new(failures.into_iter().map(Some).collect())),
            ..Upstream::default()
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn service(&self) -> Boxed {
        let this = self.clone();
        Boxed::new(service_fn(move |request: Req| {
            let this = this.clone();
            async move {
                this.calls.fetch_add(1, Ordering::SeqCst);
                let body = request.into_body().collect().await?.to_bytes();
                assert_eq!(&body[..], BODY, "every route gets the whole body");
                tokio::time::sleep(this.takes).await;
                match this.script.lock().unwrap().pop_front().flatten() {
                    Some(failure) => Err(failure.into()),
                    None => Ok(http::Response::new(Full::new(Bytes::from_static(b"hi")))),
                }
            }
        }))
    }
}

const BODY: &[u8] = b"{\"model\":\"small\"}";
const PRIMARY: &str = "primary.example";

fn request(due: Option<Duration>) -> http::Request<Full<Bytes>> {
    let mut request = http::Request::post(format!("https://{PRIMARY}/v1/chat"))
        .body(Full::new(Bytes::from_static(BODY)))
        .unwrap();
    if let Some(due) = due {
        request.extensions_mut().insert(Deadline::after(due));
    }
    request
}

/// Sends a route's copy to its own host.
#[derive(Debug, Clone, Copy)]
struct ToHost(&'static str);

impl Rewrite<Full<Bytes>> for ToHost {
    fn rewrite(&self, request: &mut Req) {
        *request.uri_mut() = format!("https://{}/v1/chat", self.0).parse().unwrap();
    }
}

fn route(host: &'static str, upstream: &Upstream) -> FallbackRoute<Boxed, ToHost> {
    FallbackRoute::new(upstream.service()).rewrite(ToHost(host))
}

fn codes(receipt: &Receipt) -> Vec<(String, Option<Code>)> {
    receipt
        .attempts
        .iter()
        .map(|a| (a.route.as_str().to_owned(), a.code))
        .collect()
}

fn failure_of(result: &Result<Resp, BoxError>) -> &Failure {
    let error = result.as_ref().expect_err("a failure");
    Failure::find(&**error).expect("a seawall failure")
}

#[tokio::test(start_paused = true)]
async fn routes_are_tried_in_order_one_call_each_and_the_receipt_lists_them_all() {
    let primary = Upstream::failing([Failure::new(Code::Overloaded)]);
    let a = Upstream::failing([Failure::new(Code::ProviderUnavailable)]);
    let b = Upstream::default();
    let c = Upstream::default();
    let layer = FallbackLayer::chain([route("a.example", &a), route("b.example", &b)])
        .then(route("c.example", &c));
    let response = layer
        .layer(primary.service())
        .oneshot(request(None))
        .await
        .unwrap();
    assert_eq!(
        (primary.calls(), a.calls(), b.calls(), c.calls()),
        (1, 1, 1, 0)
    );
    let served = response.extensions().get::<ServedBy>().unwrap();
    assert_eq!(served.route, RouteId::new("b.example"));
    assert!(served.fallback);
    let receipt = response.extensions().get::<Receipt>().unwrap();
    assert_eq!(
        codes(receipt),
        [
            (PRIMARY.to_owned(), Some(Code::Overloaded)),
            ("a.example".to_owned(), Some(Code::ProviderUnavailable)),
            ("b.example".to_owned(), None),
        ]
    );
    assert_eq!(receipt.stop, Some(StopReason::Succeeded));
    assert!(receipt.fallback);
}

#[tokio::test(start_paused = true)]
async fn the_last_failure_comes_back_with_every_attempt() {
    let primary = Upstream::failing([Failure::new(Code::QuotaExhausted)]);
    let a = Upstream::failing([Failure::new(Code::Auth)]);
    let b = Upstream::failing([Failure::new(Code::Transport)]);
    let layer = FallbackLayer::chain([route("a.example", &a), route("b.example", &b)]);
    let result = layer.layer(primary.service()).oneshot(request(None)).await;
    let failure = failure_of(&result);
    assert_eq!(failure.code(), Code::Transport);
    assert_eq!(failure.route(), Some(&RouteId::new("b.example")));
    let receipt = failure.receipt().unwrap();
    assert_eq!(
        codes(receipt)
            .into_iter()
            .map(|(_, c)| c)
            .collect::<Vec<_>>(),
        [
            Some(Code::QuotaExhausted),
            Some(Code::Auth),
            Some(Code::Transport)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_chain_stops_when_the_deadline_leaves_too_little() {
    let primary = Upstream::failing([Failure::new(Code::Overloaded)]);
    let a = Upstream {
        takes: Duration::from_millis(1_000),
        ..Upstream::failing([Failure::new(Code::Overloaded)])
    };
    let b = Upstream::default();
    let layer = FallbackLayer::chain([route("a.example", &a), route("b.example", &b)])
        .min_remaining(Duration::from_secs(1));
    let result = layer
        .layer(primary.service())
        .oneshot(request(Some(Duration::from_millis(1_500))))
        .await;
    assert_eq!((a.calls(), b.calls()), (1, 0), "no time left for b");
    let failure = failure_of(&result);
    assert_eq!(failure.code(), Code::Overloaded);
    assert_eq!(failure.receipt().unwrap().stop, Some(StopReason::Deadline));
}

#[tokio::test(start_paused = true)]
async fn a_route_cooling_down_is_skipped_without_a_call() {
    let registry = Registry::default();
    registry.cool("a.example", Code::QuotaExhausted, Duration::from_secs(3600));
    let primary = Upstream::failing([Failure::new(Code::ProviderUnavailable)]);
    let a = Upstream::default();
    let b = Upstream::default();
    let layer = FallbackLayer::chain([route("a.example", &a), route("b.example", &b)])
        .health(registry.health());
    let response = layer
        .layer(primary.service())
        .oneshot(request(None))
        .await
        .unwrap();
    assert_eq!((a.calls(), b.calls()), (0, 1));
    let receipt = response.extensions().get::<Receipt>().unwrap();
    assert_eq!(
        codes(receipt),
        [
            (PRIMARY.to_owned(), Some(Code::ProviderUnavailable)),
            ("a.example".to_owned(), Some(Code::RouteCoolingDown)),
            ("b.example".to_owned(), None),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn context_too_long_moves_only_to_a_route_that_opted_in() {
    let too_long = || Failure::new(Code::ContextTooLong).with_status(400);
    // With the opt-in: the ordinary route is passed over, the large one answers.
    let primary = Upstream::failing([too_long()]);
    let ordinary = Upstream::default();
    let large = Upstream::default();
    let layer = FallbackLayer::chain([
        route("ordinary.example", &ordinary),
        route("large.example", &large).only_on(Code::ContextTooLong),
    ]);
    let response = layer
        .layer(primary.service())
        .oneshot(request(None))
        .await
        .unwrap();
    assert_eq!(
        (primary.calls(), ordinary.calls(), large.calls()),
        (1, 0, 1)
    );
    assert_eq!(
        response.extensions().get::<ServedBy>().unwrap().route,
        RouteId::new("large.example")
    );

    // Without it: one attempt, the failure surfaced with the receipt of
    // that attempt (the primary has no ladder to keep one, and nobody
    // else records it).
    let primary = Upstream::failing([too_long()]);
    let ordinary = Upstream::default();
    let layer = FallbackLayer::chain([route("ordinary.example", &ordinary)]);
    let result = layer.layer(primary.service()).oneshot(request(None)).await;
    assert_eq!((primary.calls(), ordinary.calls()), (1, 0));
    let failure = failure_of(&result);
    assert_eq!(failure.code(), Code::ContextTooLong);
    let receipt = failure.receipt().expect("the one attempt's receipt");
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    assert_eq!(codes, [Some(Code::ContextTooLong)]);
}

#[tokio::test(start_paused = true)]
async fn after_a_trigger_only_routes_that_opted_in_are_tried() {
    // The large route is down: the ordinary one would fail the same way as
    // the primary, so it is not tried; the next large one is.
    let primary = Upstream::failing([Failure::new(Code::ContextTooLong)]);
    let large = Upstream::failing([Failure::new(Code::ProviderUnavailable)]);
    let ordinary = Upstream::default();
    let larger = Upstream::default();
    let layer = FallbackLayer::chain([
        route("large.example", &large).only_on(Code::ContextTooLong),
        route("ordinary.example", &ordinary),
        route("larger.example", &larger).on(Code::ContextTooLong),
    ]);
    let response = layer
        .layer(primary.service())
        .oneshot(request(None))
        .await
        .unwrap();
    assert_eq!((large.calls(), ordinary.calls(), larger.calls()), (1, 0, 1));
    assert_eq!(
        response.extensions().get::<ServedBy>().unwrap().route,
        RouteId::new("larger.example")
    );
}

#[tokio::test(start_paused = true)]
async fn a_refusal_moves_only_to_the_named_route_and_never_after_content() {
    // An ordinary failover does not go to a route kept for refusals.
    let primary = Upstream::failing([Failure::new(Code::Overloaded)]);
    let named = Upstream::default();
    let layer = FallbackLayer::chain([route("named.example", &named).only_on(Code::Refused)]);
    let result = layer.layer(primary.service()).oneshot(request(None)).await;
    assert_eq!(named.calls(), 0);
    assert_eq!(failure_of(&result).code(), Code::Overloaded);

    // A refusal does.
    let primary = Upstream::failing([Failure::new(Code::Refused)]);
    let named = Upstream::default();
    let layer = FallbackLayer::chain([route("named.example", &named).only_on(Code::Refused)]);
    assert!(
        layer
            .layer(primary.service())
            .oneshot(request(None))
            .await
            .is_ok()
    );
    assert_eq!(named.calls(), 1);

    // content_filtered was not opted in.
    let primary = Upstream::failing([Failure::new(Code::ContentFiltered)]);
    let named = Upstream::default();
    let layer = FallbackLayer::chain([route("named.example", &named).only_on(Code::Refused)]);
    let result = layer.layer(primary.service()).oneshot(request(None)).await;
    assert_eq!(named.calls(), 0);
    assert_eq!(failure_of(&result).code(), Code::ContentFiltered);

    // After content, nothing moves, opted in or not.
    let mut seen = Evidence::default();
    seen.bytes = 12;
    seen.content_events = 1;
    seen.content_seen = true;
    let primary = Upstream::failing([Failure::new(Code::Refused).with_evidence(seen)]);
    let named = Upstream::default();
    let layer = FallbackLayer::chain([route("named.example", &named).only_on(Code::Refused)]);
    let result = layer.layer(primary.service()).oneshot(request(None)).await;
    assert_eq!(named.calls(), 0);
    assert_eq!(failure_of(&result).code(), Code::Refused);
}

#[tokio::test(start_paused = true)]
async fn every_route_cooling_for_2s_inside_10s_waits_and_succeeds() {
    let registry = Registry::default();
    registry.cool(PRIMARY, Code::RateLimited, Duration::from_secs(2));
    registry.cool("a.example", Code::RateLimited, Duration::from_secs(3));
    // The primary's own breaker refuses it locally, as the stack's does.
    let primary = Upstream::failing([
        Failure::new(Code::RouteCoolingDown).with_retry_after(Duration::from_secs(2))
    ]);
    let a = Upstream::default();
    let layer = FallbackLayer::chain([route("a.example", &a)]).health(registry.health());
    let started = Instant::now();
    let response = layer
        .layer(primary.service())
        .oneshot(request(Some(Duration::from_secs(10))))
        .await
        .unwrap();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_millis(2_100),
        "waited {waited:?} for the first route back"
    );
    assert_eq!(
        (primary.calls(), a.calls()),
        (2, 0),
        "the primary came back first"
    );
    let served = response.extensions().get::<ServedBy>().unwrap();
    assert_eq!(
        served,
        &ServedBy {
            route: RouteId::new(PRIMARY),
            fallback: false
        }
    );
    let receipt = response.extensions().get::<Receipt>().unwrap();
    assert_eq!(
        codes(receipt),
        [
            (PRIMARY.to_owned(), Some(Code::RouteCoolingDown)),
            ("a.example".to_owned(), Some(Code::RouteCoolingDown)),
            (PRIMARY.to_owned(), None),
        ]
    );
    assert_eq!(receipt.attempts[2].delay, Duration::from_secs(2));
    assert!(!receipt.fallback);
}

#[tokio::test(start_paused = true)]
async fn the_route_back_first_is_the_one_called_after_the_wait() {
    let registry = Registry::default();
    registry.cool(PRIMARY, Code::QuotaExhausted, Duration::from_secs(3600));
    registry.cool("a.example", Code::RateLimited, Duration::from_secs(5));
    registry.cool("b.example", Code::RateLimited, Duration::from_secs(1));
    let primary = Upstream::failing([Failure::new(Code::RouteCoolingDown)]);
    let (a, b) = (Upstream::default(), Upstream::default());
    let layer = FallbackLayer::chain([route("a.example", &a), route("b.example", &b)])
        .health(registry.health());
    let started = Instant::now();
    let response = layer
        .layer(primary.service())
        .oneshot(request(Some(Duration::from_secs(10))))
        .await
        .unwrap();
    assert_eq!(started.elapsed().as_secs(), 1);
    assert_eq!((primary.calls(), a.calls(), b.calls()), (1, 0, 1));
    let served = response.extensions().get::<ServedBy>().unwrap();
    assert_eq!(served.route, RouteId::new("b.example"));
    assert!(served.fallback);
}

/// A health source or a failure that says "cooling for longer than the
/// clock holds" (`Duration::MAX`, a custom classifier's absurd hint) is a
/// route not back within the deadline, never a panic.
#[tokio::test(start_paused = true)]
async fn a_cooldown_past_what_the_clock_holds_is_no_panic() {
    let forever = |_: &RouteId| Some((Code::RateLimited, Some(Duration::MAX)));
    let primary =
        Upstream::failing([Failure::new(Code::RateLimited).with_retry_after(Duration::MAX)]);
    let a = Upstream::default();
    let layer = FallbackLayer::chain([route("a.example", &a)]).health(forever);
    let result = layer
        .layer(primary.service())
        .oneshot(request(Some(Duration::from_secs(10))))
        .await;
    assert_eq!((primary.calls(), a.calls()), (1, 0));
    assert_eq!(failure_of(&result).code(), Code::RateLimited);
}

#[tokio::test(start_paused = true)]
async fn every_route_cooling_for_60s_inside_10s_fails_at_once_with_the_earliest() {
    let registry = Registry::default();
    registry.cool(PRIMARY, Code::RateLimited, Duration::from_secs(60));
    registry.cool("a.example", Code::QuotaExhausted, Duration::from_secs(90));
    let primary = Upstream::failing([Failure::new(Code::RouteCoolingDown)]);
    let a = Upstream::default();
    let layer = FallbackLayer::chain([route("a.example", &a)]).health(registry.health());
    let started = Instant::now();
    let result = layer
        .layer(primary.service())
        .oneshot(request(Some(Duration::from_secs(10))))
        .await;
    assert_eq!(started.elapsed(), Duration::ZERO, "no wait at all");
    assert_eq!((primary.calls(), a.calls()), (1, 0));
    let failure = failure_of(&result);
    // seawall's refusal of the earliest route, naming what cooled it.
    assert_eq!(failure.code(), Code::RouteCoolingDown);
    assert_eq!(
        failure.cooled_by(),
        Some(Code::RateLimited),
        "what cooled the earliest route"
    );
    assert_eq!(failure.retry_after(), Some(Duration::from_secs(60)));
    assert_eq!(failure.route(), Some(&RouteId::new(PRIMARY)));
    assert_eq!(failure.receipt().unwrap().stop, Some(StopReason::Deadline));

    // Within the deadline but past the layer's max wait: the same, at once.
    let registry = Registry::default();
    registry.cool(PRIMARY, Code::RateLimited, Duration::from_secs(5));
    registry.cool("a.example", Code::RateLimited, Duration::from_secs(5));
    let primary = Upstream::failing([Failure::new(Code::RouteCoolingDown)]);
    let layer = FallbackLayer::chain([route("a.example", &a)])
        .health(registry.health())
        .max_wait(Duration::from_secs(1));
    let started = Instant::now();
    let result = layer
        .layer(primary.service())
        .oneshot(request(Some(Duration::from_secs(10))))
        .await;
    assert_eq!(started.elapsed(), Duration::ZERO);
    let failure = failure_of(&result);
    assert_eq!(failure.code(), Code::RouteCoolingDown);
    assert_eq!(failure.cooled_by(), Some(Code::RateLimited));
    assert_eq!(failure.retry_after(), Some(Duration::from_secs(5)));
    assert_eq!(
        failure.receipt().unwrap().stop,
        Some(StopReason::HintTooLong)
    );
}

#[tokio::test(start_paused = true)]
async fn without_a_registry_the_hints_of_the_failures_say_when_routes_return() {
    let limited = |secs| {
        Failure::new(Code::RateLimited)
            .with_status(429)
            .with_retry_after(Duration::from_secs(secs))
    };
    let primary = Upstream::failing([limited(2)]);
    let a = Upstream::failing([limited(4)]);
    let layer = FallbackLayer::chain([route("a.example", &a)]);
    let started = Instant::now();
    let response = layer
        .layer(primary.service())
        .oneshot(request(Some(Duration::from_secs(10))))
        .await
        .unwrap();
    assert_eq!(started.elapsed().as_secs(), 2);
    assert_eq!((primary.calls(), a.calls()), (2, 1));
    assert!(!response.extensions().get::<ServedBy>().unwrap().fallback);

    // A route that failed without a hint is not cooling: no wait.
    let primary = Upstream::failing([limited(2)]);
    let a = Upstream::failing([Failure::new(Code::ProviderUnavailable)]);
    let layer = FallbackLayer::chain([route("a.example", &a)]);
    let started = Instant::now();
    let result = layer
        .layer(primary.service())
        .oneshot(request(Some(Duration::from_secs(10))))
        .await;
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(failure_of(&result).code(), Code::ProviderUnavailable);
}

#[tokio::test(start_paused = true)]
async fn a_configured_route_equal_to_the_primary_anywhere_in_the_chain_is_refused() {
    let primary = Upstream::failing([Failure::new(Code::Overloaded)]);
    let a = Upstream::default();
    let layer = FallbackLayer::chain([
        route("a.example", &a),
        route("x.example", &a).route(RouteId::new(PRIMARY)),
    ]);
    let result = layer.layer(primary.service()).oneshot(request(None)).await;
    assert_eq!((primary.calls(), a.calls()), (0, 0));
    let error = result.unwrap_err();
    assert!(
        error
            .downcast_ref::<seawall_fallback::SameRouteFallback>()
            .is_some()
    );
}

/// A route set behind `upstream`, its body unwrapped so it serves as a
/// route of the chain: each call goes to one of `members`.
fn route_set(members: [&'static str; 2], upstream: &Upstream) -> Boxed {
    let set = RouteSetLayer::new(members.map(Member::new)).unwrap();
    Boxed::new(
        set.layer(upstream.service())
            .map_response(|response| response.map(RouteSetBody::into_inner)),
    )
}

#[tokio::test(start_paused = true)]
async fn served_by_names_the_route_set_member_that_answered() {
    // The primary is a route set: its answer names the member, not the
    // primary's host, as the receipt does.
    let upstream = Upstream::default();
    let layer = FallbackLayer::chain([route("b.example", &Upstream::default())]);
    let response = layer
        .layer(route_set(["key-a", "key-b"], &upstream))
        .oneshot(request(None))
        .await
        .unwrap();
    let served = response.extensions().get::<ServedBy>().unwrap();
    assert!(
        ["key-a", "key-b"].contains(&served.route.as_str()),
        "{served:?}"
    );
    assert!(!served.fallback);
    // A fallback route that is a route set: the same.
    let primary = Upstream::failing([Failure::new(Code::QuotaExhausted)]);
    let fallback = Upstream::default();
    let layer = FallbackLayer::chain([FallbackRoute::new(route_set(
        ["key-c", "key-d"],
        &fallback,
    ))
    .rewrite(ToHost("b.example"))]);
    let response = layer
        .layer(primary.service())
        .oneshot(request(None))
        .await
        .unwrap();
    let served = response.extensions().get::<ServedBy>().unwrap();
    assert!(
        ["key-c", "key-d"].contains(&served.route.as_str()),
        "{served:?}"
    );
    assert!(served.fallback);
    let receipt = response.extensions().get::<Receipt>().unwrap();
    assert_eq!(receipt.attempts.last().unwrap().route, served.route);
}

#[tokio::test(start_paused = true)]
async fn no_route_is_called_once_the_deadline_has_passed() {
    // With no margin asked for, "at least min_remaining left" must still
    // mean some time left: a route called after the deadline answers
    // nobody.
    let primary = Upstream {
        takes: Duration::from_millis(200),
        ..Upstream::failing([Failure::new(Code::Overloaded)])
    };
    let a = Upstream::default();
    let layer = FallbackLayer::chain([route("a.example", &a)]).min_remaining(Duration::ZERO);
    let result = layer
        .layer(primary.service())
        .oneshot(request(Some(Duration::from_millis(100))))
        .await;
    assert_eq!(a.calls(), 0);
    let failure = failure_of(&result);
    assert_eq!(failure.code(), Code::Overloaded);
    assert_eq!(failure.receipt().unwrap().stop, Some(StopReason::Deadline));
}

/// Services that are `Send` but not `Sync` (tower's `BoxCloneService`, a
/// hyper client boxed that way) make a fallback, and its future, that can
/// be spawned: they were `!Send` through the state every clone shares.
#[tokio::test]
async fn a_fallback_over_send_only_services_can_be_spawned() {
    type SendOnly = tower::util::BoxCloneService<Req, Resp, BoxError>;
    let primary = Upstream::failing([Failure::new(Code::Overloaded)]);
    let spare = Upstream::default();
    let send_only = |upstream: &Upstream| SendOnly::new(upstream.service());
    let layer =
        FallbackLayer::chain([FallbackRoute::new(send_only(&spare)).rewrite(ToHost("b.example"))]);
    let service = layer.layer(send_only(&primary));
    let answer = tokio::spawn(service.oneshot(request(None)))
        .await
        .unwrap()
        .expect("the spare answers");
    assert!(answer.extensions().get::<ServedBy>().unwrap().fallback);
    assert_eq!((primary.calls(), spare.calls()), (1, 1));
}

/// A route that answers, recording the `Host` header of each request.
fn host_recorder(hosts: &Arc<Mutex<Vec<Option<String>>>>) -> Boxed {
    let hosts = hosts.clone();
    Boxed::new(service_fn(move |request: Req| {
        let host = request.headers().get(http::header::HOST);
        let host = host.map(|host| host.to_str().unwrap().to_owned());
        hosts.lock().unwrap().push(host);
        async { Ok(http::Response::new(Full::new(Bytes::from_static(b"hi")))) }
    }))
}

/// A caller that set `Host` itself (a proxy forwarding the request it
/// received): hyper's client adds `Host` only when it is missing, so a
/// rewrite that moves the request to another host must not send the
/// primary's `Host` there. A rewrite that keeps the authority, or sets
/// `Host` itself, keeps its `Host`.
#[tokio::test(start_paused = true)]
async fn a_rewrite_to_another_host_takes_the_host_header_along() {
    let hosts = Arc::new(Mutex::new(Vec::new()));
    let call = |uri: &str, route: FallbackRoute<Boxed, ToHostOr>| {
        let primary = Upstream::failing([Failure::new(Code::Overloaded)]);
        let mut request = request(None);
        *request.uri_mut() = uri.parse().unwrap();
        request.headers_mut().insert(
            http::header::HOST,
            http::HeaderValue::from_static("api.example.com"),
        );
        FallbackLayer::chain([route])
            .layer(primary.service())
            .oneshot(request)
    };
    let to = |rewrite: ToHostOr| {
        FallbackRoute::new(host_recorder(&hosts))
            .rewrite(rewrite)
            .route(RouteId::new("fallback"))
    };
    call(
        "https://api.example.com/v1/chat",
        to(ToHostOr::Uri("https://other.example.com:8443/v1/chat")),
    )
    .await
    .unwrap();
    // The authority unchanged (an address the primary's `Host` names):
    // the `Host` stays.
    call(
        "https://10.0.0.1/v1/chat",
        to(ToHostOr::Uri("https://10.0.0.1/v2/chat")),
    )
    .await
    .unwrap();
    // The rewrite's own `Host` is the rewrite's choice.
    call(
        "https://api.example.com/v1/chat",
        to(ToHostOr::UriAndHost(
            "https://10.0.0.2/v1/chat",
            "vhost.example",
        )),
    )
    .await
    .unwrap();
    assert_eq!(
        *hosts.lock().unwrap(),
        [
            Some("other.example.com:8443".to_owned()),
            Some("api.example.com".to_owned()),
            Some("vhost.example".to_owned()),
        ]
    );
}

/// Moves a route's copy to another URI, and sets its `Host` or not.
#[derive(Debug, Clone, Copy)]
enum ToHostOr {
    Uri(&'static str),
    UriAndHost(&'static str, &'static str),
}

impl Rewrite<Full<Bytes>> for ToHostOr {
    fn rewrite(&self, request: &mut Req) {
        let (ToHostOr::Uri(uri) | ToHostOr::UriAndHost(uri, _)) = *self;
        *request.uri_mut() = uri.parse().unwrap();
        if let ToHostOr::UriAndHost(_, host) = *self {
            request
                .headers_mut()
                .insert(http::header::HOST, http::HeaderValue::from_static(host));
        }
    }
}
