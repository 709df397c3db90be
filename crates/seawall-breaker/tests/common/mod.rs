//! The fake provider the breaker's test binaries put behind it, and the
//! requests they send it.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;
use http_body_util::BodyExt;
use seawall_breaker::Breaker;
use seawall_core::{BoxError, ClosedBy, Code, Evidence, Failure, Interrupted, RouteId};
use seawall_test::body::Script;
use tokio::sync::Semaphore;
use tower::{Service, ServiceExt};

/// The route every request goes to.
pub(crate) const ROUTE: &str = "api.example.com";

/// What the fake provider does with a request, carried as its body.
#[derive(Clone, Debug)]
// Each test binary compiles this module on its own and sends only the
// plans its tests need.
#[allow(dead_code)]
pub(crate) enum Plan {
    /// An empty successful response.
    Ok,
    /// Fails with this before any response.
    Fail(Failure),
    /// A streamed answer: one chunk, then the provider drops the stream.
    DropsMidStream,
    /// A streamed answer the provider ends cleanly after content, before
    /// its finish marker: `truncated`, as the stream guard reads it.
    EndsEarly,
    /// A streamed answer that finishes.
    Streams,
    /// Waits for the provider's gate, then answers `Ok`.
    Hold,
    /// Waits for the provider's gate, then fails with this.
    HeldThenFail(Failure),
}

/// A request for [`ROUTE`] the provider answers as `plan` says.
pub(crate) fn request(plan: Plan) -> http::Request<Plan> {
    http::Request::get(format!("https://{ROUTE}/v1/chat"))
        .body(plan)
        .unwrap()
}

/// [`ROUTE`] as the breaker names it.
pub(crate) fn route() -> RouteId {
    RouteId::new(ROUTE)
}

/// A provider that does what each request's [`Plan`] says, counting the
/// calls that reach it. Its clones share the count and the gate.
#[derive(Clone)]
pub(crate) struct Provider {
    calls: Arc<AtomicUsize>,
    gate: Arc<Semaphore>,
}

impl Provider {
    /// A provider with no calls yet and its gate shut.
    pub(crate) fn new() -> Self {
        Provider {
            calls: Arc::new(AtomicUsize::new(0)),
            gate: Arc::new(Semaphore::new(0)),
        }
    }

    /// How many calls have reached it.
    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Lets this many held calls go on.
    pub(crate) fn release(&self, calls: usize) {
        self.gate.add_permits(calls);
    }
}

impl Service<http::Request<Plan>> for Provider {
    type Response = http::Response<Script>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Script>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Plan>) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let gate = Arc::clone(&self.gate);
        Box::pin(async move {
            let chunk = || Ok(Frame::data(Bytes::from_static(b"data: {}\n\n")));
            let cut = |code| {
                let mut evidence = Evidence::default();
                evidence.bytes = 10;
                evidence.content_seen = true;
                evidence.closed_by = Some(ClosedBy::Them);
                Failure::new(code).with_evidence(evidence)
            };
            let body = match request.into_body() {
                Plan::Ok => Script::default(),
                Plan::Fail(failure) => return Err(failure.into()),
                Plan::Streams => Script([chunk(), chunk()].into()),
                Plan::DropsMidStream => {
                    Script([chunk(), Err(cut(Code::StreamInterrupted).into())].into())
                }
                Plan::EndsEarly => {
                    let cut = cut(Code::Truncated).with_interrupted(Interrupted::default());
                    Script([chunk(), Err(cut.into())].into())
                }
                Plan::Hold => {
                    gate.acquire().await.unwrap().forget();
                    Script::default()
                }
                Plan::HeldThenFail(failure) => {
                    gate.acquire().await.unwrap().forget();
                    return Err(failure.into());
                }
            };
            Ok(http::Response::new(body))
        })
    }
}

/// Sends one request and reads its whole body; returns the failure code,
/// if any.
pub(crate) async fn send(service: &Breaker<Provider>, plan: Plan) -> Option<Code> {
    match service.clone().oneshot(request(plan)).await {
        Ok(response) => match response.into_body().collect().await {
            Ok(_) => None,
            Err(error) => Some(Failure::find(&*error).expect("a failure").code()),
        },
        Err(error) => Some(Failure::find(&*error.into_box()).expect("a failure").code()),
    }
}
