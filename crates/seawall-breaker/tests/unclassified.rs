//! Without `ClassifyLayer` below, a response with an error status is
//! counted neither way: three fast 503s do not close a half-open breaker,
//! nor does a 503 break a run of consecutive failures. The first one warns
//! that no classifier is below.
//!
//! A test binary of its own, one test: the warning is said once per
//! process, and tracing caches whether a callsite is wanted process-wide.

use std::time::Duration;

use http::StatusCode;
use http_body_util::Empty;
use seawall_breaker::{BreakerLayer, BreakerState, Trip};
use seawall_core::{BoxError, Code, Failure, RouteId};
use tower::{Layer, ServiceExt, service_fn};

/// What the unclassified provider does: fails with a classified code, or
/// answers with a raw status.
#[derive(Clone, Copy)]
enum Reply {
    Fail(Code),
    Status(StatusCode),
}

async fn call(layer: &BreakerLayer, reply: Reply) {
    let service = layer.layer(service_fn(move |_: http::Request<()>| async move {
        match reply {
            Reply::Fail(code) => Err::<_, BoxError>(Failure::new(code).into()),
            Reply::Status(status) => {
                let mut response = http::Response::new(Empty::<bytes::Bytes>::new());
                *response.status_mut() = status;
                Ok(response)
            }
        }
    }));
    let request = http::Request::get("https://api.example.com/v1/chat")
        .body(())
        .unwrap();
    // The outcome is the breaker's state, read through the handle.
    let _ = service.oneshot(request).await;
}

#[tokio::test(start_paused = true)]
async fn error_statuses_with_no_classifier_count_neither_way() {
    let recorder = seawall_test::trace::Recorder::new();
    let _guard = recorder.install();
    let route = RouteId::new("api.example.com");
    let unavailable = Reply::Status(StatusCode::SERVICE_UNAVAILABLE);

    // Half-open: three 503s, answered at once, do not close it.
    let layer = BreakerLayer::new()
        .seed(7)
        .trip(Trip::Consecutive { failures: 2 });
    let handle = layer.handle();
    for _ in 0..2 {
        call(&layer, Reply::Fail(Code::Overloaded)).await;
    }
    assert_eq!(handle.state(&route), BreakerState::Open);
    // Past the first break (5 s, at most 20 % jitter).
    tokio::time::advance(Duration::from_secs(10)).await;
    for _ in 0..3 {
        call(&layer, unavailable).await;
    }
    assert_eq!(handle.state(&route), BreakerState::HalfOpen);
    // Its trial places were given back: a classified answer still closes it.
    for _ in 0..3 {
        call(&layer, Reply::Status(StatusCode::OK)).await;
    }
    assert_eq!(handle.state(&route), BreakerState::Closed);

    // Closed: a 503 between two timeouts does not break their run.
    let layer = BreakerLayer::new().trip(Trip::Consecutive { failures: 2 });
    let handle = layer.handle();
    for reply in [
        Reply::Fail(Code::Timeout),
        unavailable,
        Reply::Fail(Code::Timeout),
    ] {
        call(&layer, reply).await;
    }
    assert_eq!(handle.state(&route), BreakerState::Open);

    assert_eq!(
        recorder.warnings_of("seawall::breaker").len(),
        1,
        "said once"
    );
}
