//! A fallback route whose service is not ready for the call (a concurrency
//! limit below it, held by other calls) when the caller gives up: nothing
//! was sent, so no cancelled attempt is counted and the move's span says no
//! `cancelled`. Once sent, a call given up on is. A binary of its own: it
//! installs a tracing subscriber and a metrics recorder for its thread.

mod common;

use std::future::poll_fn;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use seawall_core::recording::ReplayBody;
use seawall_core::{BoxError, Code, Failure, RouteId};
use seawall_fallback::{FallbackLayer, FallbackRoute};
use seawall_test::trace::Recorder;
use tower::limit::ConcurrencyLimit;
use tower::{Layer, Service, ServiceExt, service_fn};

type Req = http::Request<ReplayBody<Full<Bytes>>>;
type Resp = http::Response<Full<Bytes>>;
type Boxed = tower::util::BoxCloneSyncService<Req, Resp, BoxError>;

fn request() -> http::Request<Full<Bytes>> {
    http::Request::post("https://primary.example/v1/chat")
        .body(Full::new(Bytes::from_static(b"{\"model\":\"small\"}")))
        .unwrap()
}

/// The primary: a 503 another route can take.
fn primary() -> Boxed {
    Boxed::new(service_fn(|_: Req| async {
        Err::<Resp, BoxError>(
            Failure::new(Code::ProviderUnavailable)
                .with_status(503)
                .into(),
        )
    }))
}

/// The fallback route's provider: counts its calls and never answers.
fn hanging(calls: Arc<AtomicUsize>) -> Boxed {
    Boxed::new(service_fn(move |_: Req| {
        calls.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<Result<Resp, BoxError>>()
    }))
}

/// The `cancelled` the moves' spans recorded.
fn cancelled_spans(recorder: &Recorder) -> usize {
    recorder
        .spans()
        .iter()
        .filter(|span| {
            span.name == "fallback" && span.fields.get("error.type") == Some("cancelled")
        })
        .count()
}

#[tokio::test(start_paused = true)]
async fn a_route_call_given_up_on_before_its_service_was_ready_was_never_sent() {
    let recorder = Recorder::new();
    let _subscriber = recorder.install();
    #[cfg(feature = "metrics")]
    let attempts = common::Attempts::default();
    #[cfg(feature = "metrics")]
    let _metrics = metrics::set_default_local_recorder(&attempts);

    let calls = Arc::new(AtomicUsize::new(0));
    let limited = ConcurrencyLimit::new(hanging(calls.clone()), 1);
    // Another call holds the route's only permit.
    let mut holder = limited.clone();
    poll_fn(|cx| holder.poll_ready(cx)).await.unwrap();
    let route = FallbackRoute::new(Boxed::new(limited)).route(RouteId::new("route.example"));
    let service = FallbackLayer::chain([route]).layer(primary());

    let given_up = tokio::time::timeout(Duration::from_secs(1), service.clone().oneshot(request()));
    assert!(given_up.await.is_err(), "the call waits for the permit");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "nothing reached the route");
    assert_eq!(cancelled_spans(&recorder), 0, "no call was cancelled");
    #[cfg(feature = "metrics")]
    assert_eq!(
        attempts.count(&[("code", "cancelled")]),
        0,
        "no attempt was cancelled"
    );

    // The permit free, the call is sent: given up on, it was cancelled.
    drop(holder);
    let given_up = tokio::time::timeout(Duration::from_secs(1), service.oneshot(request()));
    assert!(given_up.await.is_err(), "the route never answers");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "sent to the route");
    assert_eq!(cancelled_spans(&recorder), 1, "the sent call was cancelled");
    #[cfg(feature = "metrics")]
    assert_eq!(
        attempts.count(&[("code", "cancelled")]),
        1,
        "the sent attempt was cancelled"
    );
}
