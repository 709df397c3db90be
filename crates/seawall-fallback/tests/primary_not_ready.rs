//! A primary whose readiness fails (a buffer whose worker died, a channel
//! that could not connect) fails the next call, not the fallback service:
//! the service says ready, the call goes to the chain when a route takes
//! the failure (else fails with it), and a fresh primary serves the calls
//! after it. Nothing was sent to that primary: no upstream attempt is
//! counted for it, and a warning says why the call moved.

mod common;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Ready;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall_core::recording::ReplayBody;
use seawall_core::{BoxError, Code, Failure, Receipt, RouteId};
use seawall_fallback::{FallbackLayer, FallbackRoute, ServedBy};
use seawall_test::trace::Recorder;
use tower::{Layer, Service, ServiceExt, service_fn};

type Req = http::Request<ReplayBody<Full<Bytes>>>;
type Resp = http::Response<Full<Bytes>>;

/// What every instance of a [`Primary`] shares.
#[derive(Default)]
struct Script {
    /// The failures its readiness returns, one a poll, before it is ready.
    unready: Mutex<VecDeque<Failure>>,
    /// The instances whose readiness failed: never to be polled again.
    failed: Mutex<Vec<usize>>,
    instances: AtomicUsize,
    calls: AtomicUsize,
}

/// A primary whose readiness fails as scripted, then answers `primary`.
/// Each clone is a new instance.
struct Primary {
    id: usize,
    script: Arc<Script>,
}

impl Primary {
    fn new(unready: impl IntoIterator<Item = Failure>) -> (Self, Arc<Script>) {
        let script = Arc::new(Script {
            unready: Mutex::new(unready.into_iter().collect()),
            ..Script::default()
        });
        let primary = Primary {
            id: 0,
            script: script.clone(),
        };
        (primary, script)
    }
}

impl Clone for Primary {
    fn clone(&self) -> Self {
        Primary {
            id: self.script.instances.fetch_add(1, Ordering::SeqCst) + 1,
            script: self.script.clone(),
        }
    }
}

impl Service<Req> for Primary {
    type Response = Resp;
    type Error = Failure;
    type Future = Ready<Result<Resp, Failure>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Failure>> {
        let mut failed = self.script.failed.lock().unwrap();
        assert!(
            !failed.contains(&self.id),
            "a primary whose readiness failed is polled again"
        );
        match self.script.unready.lock().unwrap().pop_front() {
            Some(failure) => {
                failed.push(self.id);
                Poll::Ready(Err(failure))
            }
            None => Poll::Ready(Ok(())),
        }
    }

    fn call(&mut self, _: Req) -> Self::Future {
        self.script.calls.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok(answer("primary")))
    }
}

fn answer(text: &'static str) -> Resp {
    http::Response::new(Full::new(Bytes::from_static(text.as_bytes())))
}

/// A route that answers `backup`, counting its calls.
fn backup(
    calls: &Arc<AtomicUsize>,
) -> impl Service<Req, Response = Resp, Error = Infallible, Future: Send> + Clone + Send {
    let calls = calls.clone();
    service_fn(move |_: Req| {
        calls.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok::<_, Infallible>(answer("backup")))
    })
}

fn request() -> http::Request<Full<Bytes>> {
    http::Request::post("https://primary.example/v1/messages")
        .body(Full::new(Bytes::from_static(b"{\"model\":\"m\"}")))
        .unwrap()
}

async fn text(response: Resp) -> Bytes {
    response.into_body().collect().await.unwrap().to_bytes()
}

#[tokio::test]
async fn a_primary_not_ready_fails_over_without_being_called() {
    let (primary, script) = Primary::new([Failure::new(Code::Transport)]);
    let calls = Arc::new(AtomicUsize::new(0));
    let layer = FallbackLayer::new(backup(&calls)).route(RouteId::new("backup"));
    let mut service = layer.layer(primary);

    service
        .ready()
        .await
        .expect("the primary's readiness is not the service's");
    let response = service.call(request()).await.expect("the backup answers");
    assert_eq!(
        response.extensions().get::<ServedBy>(),
        Some(&ServedBy {
            route: RouteId::new("backup"),
            fallback: true,
        })
    );
    let receipt = response.extensions().get::<Receipt>().expect("a receipt");
    let attempts: Vec<_> = receipt
        .attempts
        .iter()
        .map(|a| (a.route.as_str(), a.code))
        .collect();
    assert_eq!(
        attempts,
        [("primary.example", Some(Code::Transport)), ("backup", None)]
    );
    assert!(receipt.fallback);
    // Nothing was sent to the primary: only the backup's answer bills,
    // and it is the one call.
    assert!(!receipt.attempts[0].billed);
    assert!(!receipt.attempts[0].was_sent());
    assert_eq!(receipt.billed_attempts(), 1);
    assert_eq!(receipt.calls(), 1);
    assert_eq!(&text(response).await[..], b"backup");
    assert_eq!(script.calls.load(Ordering::SeqCst), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // The next call polls a fresh primary, which answers.
    service.ready().await.expect("a fresh primary is ready");
    let response = service.call(request()).await.expect("the primary answers");
    assert_eq!(
        response.extensions().get::<ServedBy>().map(|s| s.fallback),
        Some(false)
    );
    assert_eq!(&text(response).await[..], b"primary");
    assert_eq!(script.calls.load(Ordering::SeqCst), 1);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_primary_not_ready_fails_the_call_when_no_route_takes_it() {
    let (primary, script) = Primary::new([Failure::new(Code::Transport)]);
    let calls = Arc::new(AtomicUsize::new(0));
    // A route only for requests too long for the primary: not for a
    // transport failure.
    let layer = FallbackLayer::chain([FallbackRoute::new(backup(&calls))
        .route(RouteId::new("large-context"))
        .only_on(Code::ContextTooLong)]);
    let mut service = layer.layer(primary);

    service
        .ready()
        .await
        .expect("the primary's readiness is not the service's");
    let error = service
        .call(request())
        .await
        .expect_err("no route takes it");
    let failure = error
        .downcast_ref::<Failure>()
        .expect("the primary's failure, typed");
    assert_eq!(failure.code(), Code::Transport);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(script.calls.load(Ordering::SeqCst), 0);

    // The service is still usable: a fresh primary answers the next call.
    service.ready().await.expect("a fresh primary is ready");
    let response = service.call(request()).await.expect("the primary answers");
    assert_eq!(&text(response).await[..], b"primary");
    assert_eq!(script.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_primary_not_ready_with_an_unclassified_error_fails_only_the_call() {
    // What a tower `Buffer` whose worker died says: no seawall failure,
    // returned as it is, as an unclassified error of a call is.
    #[derive(Clone)]
    struct Closed(Arc<AtomicUsize>);
    impl Service<Req> for Closed {
        type Response = Resp;
        type Error = BoxError;
        type Future = Ready<Result<Resp, BoxError>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
            if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
                Poll::Ready(Err("buffer's worker closed unexpectedly".into()))
            } else {
                Poll::Ready(Ok(()))
            }
        }
        fn call(&mut self, _: Req) -> Self::Future {
            std::future::ready(Ok(answer("primary")))
        }
    }
    let calls = Arc::new(AtomicUsize::new(0));
    let mut service =
        FallbackLayer::new(backup(&calls)).layer(Closed(Arc::new(AtomicUsize::new(0))));
    service.ready().await.expect("the service stays");
    let error = service.call(request()).await.expect_err("not understood");
    // The receipt says its part (no call was sent); the error itself is
    // its source, whole.
    assert_eq!(
        error.to_string(),
        "failed before any call was sent (stop: not_retryable)"
    );
    let source = std::error::Error::source(&*error).expect("the error itself");
    assert_eq!(source.to_string(), "buffer's worker closed unexpectedly");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    service.ready().await.expect("a fresh primary is ready");
    let response = service.call(request()).await.expect("the primary answers");
    assert_eq!(&text(response).await[..], b"primary");
}

#[tokio::test]
async fn a_primary_not_ready_is_no_attempt_and_a_warning() {
    let recorder = Recorder::new();
    let _subscriber = recorder.install();
    #[cfg(feature = "metrics")]
    let attempts = common::Attempts::default();
    #[cfg(feature = "metrics")]
    let _metrics = metrics::set_default_local_recorder(&attempts);

    // Taken by a route.
    let (primary, _) = Primary::new([Failure::new(Code::Transport)]);
    let calls = Arc::new(AtomicUsize::new(0));
    let mut service = FallbackLayer::new(backup(&calls))
        .route(RouteId::new("backup"))
        .layer(primary);
    service.ready().await.expect("the service is ready");
    service.call(request()).await.expect("the backup answers");
    // Taken by none: the call fails with it.
    let (primary, _) = Primary::new([Failure::new(Code::Transport)]);
    let mut service = FallbackLayer::chain([FallbackRoute::new(backup(&calls))
        .route(RouteId::new("large-context"))
        .only_on(Code::ContextTooLong)])
    .layer(primary);
    service.ready().await.expect("the service is ready");
    let error = service
        .call(request())
        .await
        .expect_err("no route takes it");
    let receipt = Failure::find(&*error).and_then(Failure::receipt);
    assert!(
        receipt.is_some_and(|r| r.billed_attempts() == 0),
        "{receipt:?}"
    );

    let warnings: Vec<_> = recorder
        .warnings_of("seawall::fallback")
        .into_iter()
        .filter(|fields| fields.has("route"))
        .map(|fields| {
            (
                fields.value("route").to_owned(),
                fields.value("code").to_owned(),
            )
        })
        .collect();
    let warned = ("primary.example".to_owned(), "transport".to_owned());
    assert_eq!(warnings, [warned.clone(), warned]);
    #[cfg(feature = "metrics")]
    {
        assert_eq!(attempts.count(&[("route", "primary.example")]), 0);
        assert_eq!(attempts.count(&[("route", "backup")]), 1);
    }
}
