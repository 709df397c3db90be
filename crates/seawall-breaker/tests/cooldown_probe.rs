//! The end of a cooldown, on tokio's paused clock: many callers waiting
//! for a walled route (a quota wall, rejected keys) when its cooldown ends
//! send one probe, not a stampede; the probe's answer decides for all of
//! them. At a rate limit's end every caller goes: each waited it out.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use seawall_breaker::{Breaker, BreakerError, BreakerHandle, BreakerLayer};
use seawall_core::{BoxError, Code, DEFAULT_QUOTA_COOLDOWN, Failure, RouteId};
use tokio::task::JoinHandle;
use tower::{Layer, Service, ServiceExt};

const ROUTE: &str = "api.example.com";
/// How long the provider takes to answer.
const LATENCY: Duration = Duration::from_millis(100);
/// How many operations arrive just after the cooldown's end.
const CROWD: usize = 50;

type Response = http::Response<Empty<Bytes>>;
type Svc = Breaker<Provider>;

/// A provider that answers after `LATENCY`: with an empty body, or with
/// the failure set in `wall`. Counts its calls.
#[derive(Clone)]
struct Provider {
    calls: Arc<AtomicUsize>,
    wall: Arc<Mutex<Option<Failure>>>,
}

impl Provider {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn wall(&self, failure: Option<Failure>) {
        *self.wall.lock().unwrap() = failure;
    }
}

impl Service<http::Request<()>> for Provider {
    type Response = Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<()>) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let wall = self.wall.lock().unwrap().clone();
        Box::pin(async move {
            tokio::time::sleep(LATENCY).await;
            match wall {
                Some(failure) => Err(failure.into()),
                None => Ok(http::Response::new(Empty::new())),
            }
        })
    }
}

struct Rig {
    service: Svc,
    handle: BreakerHandle,
    provider: Provider,
}

fn rig() -> Rig {
    let provider = Provider {
        calls: Arc::new(AtomicUsize::new(0)),
        wall: Arc::new(Mutex::new(None)),
    };
    let layer = BreakerLayer::new();
    let handle = layer.handle();
    Rig {
        service: layer.layer(provider.clone()),
        handle,
        provider,
    }
}

fn route() -> RouteId {
    RouteId::new(ROUTE)
}

fn request() -> http::Request<()> {
    http::Request::get(format!("https://{ROUTE}/v1/chat"))
        .body(())
        .unwrap()
}

/// One operation's end: `Ok` when answered (its body read), else the
/// breaker's error.
async fn operation(service: Svc) -> Result<(), BreakerError> {
    let response = service.oneshot(request()).await?;
    response.into_body().collect().await.unwrap();
    Ok(())
}

impl Rig {
    /// Cools the route with `failure` (one call meets it).
    async fn cool(&self, failure: &Failure) {
        self.provider.wall(Some(failure.clone()));
        let error = operation(self.service.clone()).await.unwrap_err();
        assert!(error.as_open().is_none(), "the wall was met, not refused");
        assert_eq!(
            self.handle.cooldown(&route()).map(|(code, _)| code),
            Some(failure.code())
        );
    }

    /// `CROWD` operations at once; their handles.
    fn crowd(&self) -> Vec<JoinHandle<Result<(), BreakerError>>> {
        (0..CROWD)
            .map(|_| tokio::spawn(operation(self.service.clone())))
            .collect()
    }
}

/// Of a crowd's ends: how many were answered, and those that are not the
/// breaker's local refusal, as `route_cooling_down` after `cause` with at
/// most `longest` to wait.
async fn settle(
    crowd: Vec<JoinHandle<Result<(), BreakerError>>>,
    cause: Code,
    longest: Duration,
) -> (usize, Vec<String>) {
    let mut answered = 0;
    let mut wrong = Vec::new();
    for operation in crowd {
        match operation.await.unwrap() {
            Ok(()) => answered += 1,
            Err(error) => {
                let open = error.as_open().cloned();
                let failure = Failure::extract(error.into_box()).unwrap();
                let refused = open.as_ref().is_some_and(|open| {
                    open.cooled_by() == Some(cause)
                        && open.retry_after().is_some_and(|after| after <= longest)
                }) && failure.code() == Code::RouteCoolingDown;
                if !refused {
                    wrong.push(format!("{:?} {open:?}", failure.code()));
                }
            }
        }
    }
    (answered, wrong)
}

fn quota_wall() -> (Failure, Duration) {
    (Failure::new(Code::QuotaExhausted), DEFAULT_QUOTA_COOLDOWN)
}

fn rate_limit() -> (Failure, Duration) {
    let hint = Duration::from_secs(2);
    (Failure::new(Code::RateLimited).with_retry_after(hint), hint)
}

async fn one_probe_then_open(cause: fn() -> (Failure, Duration)) {
    let (failure, cooldown) = cause();
    let rig = rig();
    rig.cool(&failure).await;
    tokio::time::advance(cooldown).await;
    rig.provider.wall(None);

    let crowd = rig.crowd();
    tokio::task::yield_now().await;
    assert_eq!(rig.provider.calls(), 2, "{failure}: one probe in flight");
    let (answered, wrong) = settle(crowd, failure.code(), LATENCY).await;
    assert_eq!(
        (answered, wrong),
        (1, vec![]),
        "{failure}: the others refused"
    );
    assert_eq!(rig.provider.calls(), 2, "{failure}");

    // The probe's answer ended the cooldown: everyone goes through.
    assert_eq!(rig.handle.cooldown(&route()), None, "{failure}");
    let (answered, wrong) = settle(rig.crowd(), failure.code(), LATENCY).await;
    assert_eq!((answered, wrong), (CROWD, vec![]), "{failure}");
    assert_eq!(rig.provider.calls(), 2 + CROWD, "{failure}");
}

async fn wall_again(cause: fn() -> (Failure, Duration)) {
    let (failure, cooldown) = cause();
    let rig = rig();
    rig.cool(&failure).await;
    tokio::time::advance(cooldown).await;

    let crowd = rig.crowd();
    tokio::task::yield_now().await;
    assert_eq!(rig.provider.calls(), 2, "{failure}: one probe in flight");
    let (answered, wrong) = settle(crowd, failure.code(), LATENCY).await;
    assert_eq!(answered, 0, "{failure}");
    assert_eq!(wrong.len(), 1, "{failure}: only the probe met the wall");
    assert_eq!(rig.provider.calls(), 2, "{failure}");

    let (code, left) = rig.handle.cooldown(&route()).expect("cooling again");
    assert_eq!(code, failure.code());
    assert_eq!(
        left,
        Some(cooldown),
        "{failure}: a new cooldown, learnt now"
    );
    let (answered, wrong) = settle(rig.crowd(), failure.code(), cooldown).await;
    assert_eq!(answered, 0, "{failure}");
    assert_eq!(wrong.len(), 0, "{failure}: {wrong:?}");
    assert_eq!(rig.provider.calls(), 2, "{failure}");
}

async fn dropped_probe(cause: fn() -> (Failure, Duration)) {
    let (failure, cooldown) = cause();
    let rig = rig();
    rig.cool(&failure).await;
    tokio::time::advance(cooldown).await;
    rig.provider.wall(None);

    let mut service = rig.service.clone();
    service.ready().await.unwrap();
    let probe = service.call(request());
    assert_eq!(rig.provider.calls(), 2, "{failure}: the probe is out");
    let (answered, wrong) = settle(rig.crowd(), failure.code(), LATENCY).await;
    assert_eq!(
        (answered, wrong),
        (0, vec![]),
        "{failure}: refused meanwhile"
    );
    drop(probe);

    operation(rig.service.clone())
        .await
        .expect("the next call probes, and is answered");
    assert_eq!(rig.provider.calls(), 3, "{failure}");
    assert_eq!(rig.handle.cooldown(&route()), None, "{failure}");
}

/// Fifty operations just after a quota wall's (guessed) minute: one goes
/// to the route; the others are refused locally until its answer; the
/// answer ends the cooldown for all.
#[tokio::test(start_paused = true)]
async fn one_probe_goes_through_at_a_quota_walls_end_and_its_answer_reopens_the_route() {
    one_probe_then_open(quota_wall).await;
}

/// At the end of a rate limit's 2 s hint every waiting caller goes: each
/// waited the hint out as the provider asked, and a probe's answer would
/// hold them all for a whole generation.
#[tokio::test(start_paused = true)]
async fn every_caller_goes_at_a_rate_limits_end() {
    let (failure, cooldown) = rate_limit();
    let rig = rig();
    rig.cool(&failure).await;
    tokio::time::advance(cooldown).await;
    rig.provider.wall(None);
    let (answered, wrong) = settle(rig.crowd(), failure.code(), LATENCY).await;
    assert_eq!((answered, wrong), (CROWD, vec![]));
    assert_eq!(rig.provider.calls(), 1 + CROWD);
    assert_eq!(rig.handle.cooldown(&route()), None);
}

/// The probe meets the wall again: the route cools again (for the new
/// cooldown), and the crowd behind it still made no call.
#[tokio::test(start_paused = true)]
async fn a_probe_that_meets_the_quota_wall_again_cools_the_route_again() {
    wall_again(quota_wall).await;
}

/// A probe whose caller drops it does not wedge the route: the next call
/// probes.
#[tokio::test(start_paused = true)]
async fn a_dropped_probe_after_a_quota_wall_lets_the_next_call_probe() {
    dropped_probe(quota_wall).await;
}
