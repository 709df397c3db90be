//! A breaker with no stream guard below it (over a deadline or a body
//! timeout alone): an SDK reads a stream to `data: [DONE]` and drops it,
//! before the connection's end, and a stall is cut by a bound below with a
//! counted `idle_timeout`. Healthy streams must count as successes there,
//! or a window of mostly healthy streams and a few stalls trips the
//! breaker. All on tokio's paused clock.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use seawall_breaker::{Breaker, BreakerHandle, BreakerLayer, BreakerState, Trip};
use seawall_core::{BoxError, Code, Failure, RouteId, Usage, UsageSlot, UsageSource};
use tokio::time::Sleep;
use tower::{Layer, ServiceExt};

const ROUTE: &str = "api.example.com";
/// The bound below that cuts a stream silent this long.
const IDLE: Duration = Duration::from_secs(1);

/// What the provider does with a request, carried as its body.
#[derive(Clone, Copy, Debug)]
enum Plan {
    /// Two chunks and `[DONE]`, then the connection stays open (the
    /// body's end is not known yet when the SDK stops reading).
    Healthy,
    /// The same under a stream guard: its usage slot in the extensions.
    HealthyGuarded,
    /// One chunk, then silence until the bound below cuts it.
    Stalls,
    /// One chunk, then silence with no bound below: the caller's own
    /// timeout gives up on it.
    Silent,
}

/// An event stream as the provider sends it.
struct Sse {
    frames: VecDeque<Bytes>,
    /// After the frames: cut by the idle bound below (`Some`), or pending
    /// (`None`).
    stall: Option<Pin<Box<Sleep>>>,
}

impl Body for Sse {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(frame) = self.frames.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(frame))));
        }
        match self.stall.as_mut() {
            Some(stall) => {
                std::task::ready!(stall.as_mut().poll(cx));
                self.stall = None;
                Poll::Ready(Some(Err(Failure::new(Code::IdleTimeout).into())))
            }
            None => Poll::Pending,
        }
    }
}

/// A usage source for a stream guard's slot.
struct NoUsage;

impl UsageSource for NoUsage {
    fn usage(&self) -> Option<Usage> {
        None
    }
}

type Svc = Breaker<
    tower::util::ServiceFn<
        fn(
            http::Request<Plan>,
        ) -> std::future::Ready<Result<http::Response<Sse>, std::convert::Infallible>>,
    >,
>;

fn provider(
    request: http::Request<Plan>,
) -> std::future::Ready<Result<http::Response<Sse>, std::convert::Infallible>> {
    let chunk = |text: &'static str| Bytes::from_static(text.as_bytes());
    let plan = *request.body();
    let frames = match plan {
        Plan::Healthy | Plan::HealthyGuarded => [
            chunk("data: {\"a\":1}\n\n"),
            chunk("data: {\"a\":2}\n\n"),
            chunk("data: [DONE]\n\n"),
        ]
        .into(),
        Plan::Stalls | Plan::Silent => [chunk("data: {\"a\":1}\n\n")].into(),
    };
    let stall = matches!(plan, Plan::Stalls).then(|| Box::pin(tokio::time::sleep(IDLE)));
    let mut response = http::Response::new(Sse { frames, stall });
    if let Plan::HealthyGuarded = plan {
        response
            .extensions_mut()
            .insert(UsageSlot::new(Arc::new(NoUsage)));
    }
    std::future::ready(Ok(response))
}

fn build(layer: BreakerLayer) -> (Svc, BreakerHandle) {
    let handle = layer.handle();
    let provider: fn(_) -> _ = provider;
    (layer.layer(tower::service_fn(provider)), handle)
}

fn route() -> RouteId {
    RouteId::new(ROUTE)
}

/// Reads as an SDK does: up to `[DONE]`, then drops the body; for a
/// silent stream, gives up after its own timeout. Returns the failure
/// code the stream ended with, if any.
async fn read(service: &Svc, plan: Plan) -> Option<Code> {
    let request = http::Request::get(format!("https://{ROUTE}/v1/chat/completions"))
        .body(plan)
        .unwrap();
    let mut body = service.clone().oneshot(request).await.unwrap().into_body();
    loop {
        let frame = match tokio::time::timeout(Duration::from_secs(5), body.frame()).await {
            Ok(frame) => frame,
            Err(_) => return None,
        };
        match frame {
            Some(Ok(frame)) => {
                let data = frame.into_data().unwrap();
                if data.windows(6).any(|w| w == b"[DONE]") {
                    return None;
                }
            }
            Some(Err(error)) => return Some(Failure::find(&*error).unwrap().code()),
            None => return None,
        }
    }
}

fn ratio(min_calls: u32) -> BreakerLayer {
    BreakerLayer::new().trip(Trip::FailureRatio {
        ratio: 0.5,
        window: Duration::from_secs(60),
        buckets: 10,
        min_calls,
    })
}

fn consecutive(failures: u32) -> BreakerLayer {
    BreakerLayer::new().trip(Trip::Consecutive { failures })
}

/// Twenty streams read to `[DONE]` and dropped, five stalls: a fifth of
/// the window failed, and the breaker stays closed. A route whose every
/// stream stalls still trips.
#[tokio::test(start_paused = true)]
async fn healthy_streams_dropped_at_done_outweigh_a_few_stalls() {
    let (service, handle) = build(ratio(5));
    for call in 0..25 {
        let plan = if call % 5 == 4 {
            Plan::Stalls
        } else {
            Plan::Healthy
        };
        let expected = matches!(plan, Plan::Stalls).then_some(Code::IdleTimeout);
        assert_eq!(read(&service, plan).await, expected);
    }
    assert_eq!(handle.state(&route()), BreakerState::Closed);

    let (service, handle) = build(ratio(5));
    for _ in 0..5 {
        assert_eq!(read(&service, Plan::Stalls).await, Some(Code::IdleTimeout));
    }
    assert_eq!(handle.state(&route()), BreakerState::Open);
}

/// Under a stream guard (its usage slot in the extensions), the guard
/// ends the body at the protocol's end: a body dropped before it is a
/// caller leaving early, counted neither way, as before.
#[tokio::test(start_paused = true)]
async fn under_a_stream_guard_a_drop_before_the_end_counts_neither_way() {
    let (service, handle) = build(consecutive(3));
    read(&service, Plan::Stalls).await;
    read(&service, Plan::Stalls).await;
    assert_eq!(read(&service, Plan::HealthyGuarded).await, None);
    read(&service, Plan::Stalls).await;
    assert_eq!(handle.state(&route()), BreakerState::Open);

    // Unguarded, the same drop at `[DONE]` is a success: the run breaks.
    let (service, handle) = build(consecutive(3));
    read(&service, Plan::Stalls).await;
    read(&service, Plan::Stalls).await;
    assert_eq!(read(&service, Plan::Healthy).await, None);
    read(&service, Plan::Stalls).await;
    assert_eq!(handle.state(&route()), BreakerState::Closed);
}

/// A body dropped while a read of it waited on the route (the caller's
/// own timeout gave up on a silence) says nothing of the route's health:
/// counted neither way.
#[tokio::test(start_paused = true)]
async fn a_body_dropped_while_a_read_waits_counts_neither_way() {
    let (service, handle) = build(consecutive(3));
    read(&service, Plan::Stalls).await;
    read(&service, Plan::Stalls).await;
    assert_eq!(read(&service, Plan::Silent).await, None);
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    read(&service, Plan::Stalls).await;
    assert_eq!(handle.state(&route()), BreakerState::Open);
}
