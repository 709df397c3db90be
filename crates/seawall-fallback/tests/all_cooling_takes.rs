//! When every route is cooling down, the layer waits only for a route that
//! can still take the request: never for the primary once the request
//! moved for an opt-in trigger (it answered that request already), never
//! for a route whose own answer condemned the request — on tokio's paused
//! clock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use seawall_core::recording::ReplayBody;
use seawall_core::{BoxError, Code, Deadline, Failure, RouteId};
use seawall_fallback::{FallbackLayer, FallbackRoute};
use tokio::time::Instant;
use tower::{Layer, ServiceExt, service_fn};

type Req = http::Request<ReplayBody<Full<Bytes>>>;
type Resp = http::Response<Full<Bytes>>;
type Boxed = tower::util::BoxCloneSyncService<Req, Resp, BoxError>;

const PRIMARY: &str = "primary.example";
const LARGE: &str = "large";
const SEC: Duration = Duration::from_secs(1);

/// A route health registry on tokio's clock, as the breaker keeps one.
#[derive(Clone, Default)]
struct Registry(Arc<Mutex<HashMap<RouteId, (Code, Instant)>>>);

impl Registry {
    fn cool(&self, route: &str, code: Code, for_: Duration) {
        self.0
            .lock()
            .unwrap()
            .insert(RouteId::new(route), (code, Instant::now() + for_));
    }

    fn health(
        &self,
    ) -> impl Fn(&RouteId) -> Option<(Code, Option<Duration>)> + Send + Sync + 'static {
        let this = self.clone();
        move |route: &RouteId| {
            let (code, until) = *this.0.lock().unwrap().get(route)?;
            let now = Instant::now();
            (until > now).then(|| (code, Some(until - now)))
        }
    }
}

fn request(due: Option<Duration>) -> http::Request<Full<Bytes>> {
    let mut request = http::Request::post(format!("https://{PRIMARY}/v1/chat"))
        .body(Full::new(Bytes::from_static(b"{\"model\":\"small\"}")))
        .unwrap();
    if let Some(due) = due {
        request.extensions_mut().insert(Deadline::after(due));
    }
    request
}

/// A service that fails every call with `failure` (after `then`, which
/// sees the call's number), counting its calls.
fn failing(
    calls: &Arc<AtomicUsize>,
    failure: impl Fn(usize) -> Option<Failure> + Send + Sync + 'static,
) -> Boxed {
    let calls = calls.clone();
    let failure = Arc::new(failure);
    Boxed::new(service_fn(move |_request: Req| {
        let calls = calls.clone();
        let failure = failure.clone();
        async move {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            match failure(n) {
                Some(failure) => Err(failure.into()),
                None => Ok(http::Response::new(Full::new(Bytes::from_static(b"hi")))),
            }
        }
    }))
}

fn too_long() -> Failure {
    Failure::new(Code::ContextTooLong).with_status(400)
}

/// The reviewed case: the oversized request moved to "large" (sticky
/// `context_too_long`); "large" cools for 20 s after a 429, while the
/// primary cools for 2 s from other traffic. The primary cannot take the
/// request (it said so): the layer waits for "large", not for it.
#[tokio::test(start_paused = true)]
async fn after_a_trigger_the_primary_is_not_waited_for() {
    let registry = Registry::default();
    let primary_calls = Arc::new(AtomicUsize::new(0));
    let large_calls = Arc::new(AtomicUsize::new(0));
    let primary = failing(&primary_calls, |_| Some(too_long()));
    let cooling = registry.clone();
    let large = failing(&large_calls, move |n| {
        (n == 0).then(|| {
            cooling.cool(PRIMARY, Code::RateLimited, 2 * SEC);
            cooling.cool(LARGE, Code::RateLimited, 20 * SEC);
            Failure::new(Code::RateLimited)
                .with_status(429)
                .with_retry_after(20 * SEC)
        })
    });
    let layer = FallbackLayer::chain([FallbackRoute::new(large)
        .route(RouteId::new(LARGE))
        .only_on(Code::ContextTooLong)])
    .health(registry.health());
    let start = Instant::now();
    let result = layer.layer(primary).oneshot(request(None)).await;
    assert_eq!(
        primary_calls.load(Ordering::SeqCst),
        1,
        "the primary answered this request already"
    );
    assert_eq!(large_calls.load(Ordering::SeqCst), 2, "large is waited for");
    assert!(result.is_ok(), "large answers once back: {result:?}");
    assert_eq!(start.elapsed(), 20 * SEC);
}

/// The same, with a deadline that "large" comes back too late for: the
/// layer fails at once with its refusal (`route_cooling_down` after
/// `rate_limited`) and the time until it is back, rather than sending the request to the primary again.
#[tokio::test(start_paused = true)]
async fn after_a_trigger_a_late_route_fails_at_once_without_the_primary() {
    let registry = Registry::default();
    let primary_calls = Arc::new(AtomicUsize::new(0));
    let large_calls = Arc::new(AtomicUsize::new(0));
    let primary = failing(&primary_calls, |_| Some(too_long()));
    let cooling = registry.clone();
    let large = failing(&large_calls, move |_| {
        cooling.cool(PRIMARY, Code::RateLimited, 2 * SEC);
        cooling.cool(LARGE, Code::RateLimited, 20 * SEC);
        Some(
            Failure::new(Code::RateLimited)
                .with_status(429)
                .with_retry_after(20 * SEC),
        )
    });
    let layer = FallbackLayer::chain([FallbackRoute::new(large)
        .route(RouteId::new(LARGE))
        .only_on(Code::ContextTooLong)])
    .health(registry.health());
    let start = Instant::now();
    let result = layer.layer(primary).oneshot(request(Some(10 * SEC))).await;
    assert_eq!(primary_calls.load(Ordering::SeqCst), 1);
    assert_eq!(large_calls.load(Ordering::SeqCst), 1);
    assert_eq!(start.elapsed(), Duration::ZERO, "no wait");
    let error = result.expect_err("large is back too late");
    let failure = Failure::find(&*error).expect("a seawall failure");
    // seawall's refusal of the route, naming what cooled it.
    assert_eq!(failure.code(), Code::RouteCoolingDown);
    assert_eq!(failure.cooled_by(), Some(Code::RateLimited));
    assert_eq!(failure.route(), Some(&RouteId::new(LARGE)));
    assert_eq!(failure.retry_after(), Some(20 * SEC));
}

/// A route whose own answer condemned the request (`context_too_long`, no
/// route opted in) leaves nowhere to wait for: the primary, cooling after
/// its rate limit, would be the same request elsewhere.
#[tokio::test(start_paused = true)]
async fn a_request_scoped_answer_is_not_waited_out_elsewhere() {
    let registry = Registry::default();
    let primary_calls = Arc::new(AtomicUsize::new(0));
    let other_calls = Arc::new(AtomicUsize::new(0));
    let cooling = registry.clone();
    let primary = failing(&primary_calls, move |_| {
        cooling.cool(PRIMARY, Code::RateLimited, 2 * SEC);
        Some(
            Failure::new(Code::RateLimited)
                .with_status(429)
                .with_retry_after(2 * SEC),
        )
    });
    let cooling = registry.clone();
    let other = failing(&other_calls, move |_| {
        // Cooling from other traffic: every route is cooling down.
        cooling.cool("other", Code::RateLimited, 5 * SEC);
        Some(too_long())
    });
    let layer = FallbackLayer::chain([FallbackRoute::new(other).route(RouteId::new("other"))])
        .health(registry.health());
    let start = Instant::now();
    let result = layer.layer(primary).oneshot(request(None)).await;
    assert_eq!(primary_calls.load(Ordering::SeqCst), 1);
    assert_eq!(other_calls.load(Ordering::SeqCst), 1);
    assert_eq!(start.elapsed(), Duration::ZERO, "no wait");
    let error = result.expect_err("the request is too long");
    let failure = Failure::find(&*error).expect("a seawall failure");
    assert_eq!(failure.code(), Code::ContextTooLong);
}
