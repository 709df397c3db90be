//! A call refused on this side before it was sent — tower's `LoadShed`
//! over a local concurrency limit, which the classifier reads as
//! `overloaded`, closed by us, with no status — says nothing about the
//! route: a burst past the limit must not open the breaker for every
//! caller. A provider's own overload (its 529) still counts.

use bytes::Bytes;
use http_body_util::Empty;
use seawall_breaker::{BreakerLayer, BreakerState};
use seawall_core::{BoxError, ClosedBy, Code, Evidence, Failure, RouteId};
use tower::{Layer, Service, ServiceExt};

const URL: &str = "https://api.example.com/v1/chat";

/// The breaker over a service that fails every call with `failure`; how
/// the first call after `calls` of them ends.
async fn after(calls: usize, failure: Failure) -> (BreakerState, Option<Code>) {
    let layer = BreakerLayer::new();
    let handle = layer.handle();
    let mut service = layer.layer(tower::service_fn(move |_: http::Request<()>| {
        let failure = failure.clone();
        async move { Err::<http::Response<Empty<Bytes>>, BoxError>(Box::new(failure)) }
    }));
    let request = || http::Request::get(URL).body(()).unwrap();
    for _ in 0..calls {
        let _ = service.ready().await.unwrap().call(request()).await;
    }
    let next = service.ready().await.unwrap().call(request()).await;
    let code = next
        .err()
        .map(|error| Failure::find(&*error.into_box()).unwrap().code());
    (handle.state(&RouteId::new("api.example.com")), code)
}

#[tokio::test(start_paused = true)]
async fn calls_shed_here_do_not_open_the_breaker() {
    // What the classifier makes of `tower::load_shed::error::Overloaded`.
    let mut evidence = Evidence::default();
    evidence.closed_by = Some(ClosedBy::Us);
    let shed = Failure::new(Code::Overloaded).with_evidence(evidence);
    assert_eq!(
        after(25, shed).await,
        (BreakerState::Closed, Some(Code::Overloaded)),
        "the next call went through"
    );
}

#[tokio::test(start_paused = true)]
async fn a_providers_overload_opens_it() {
    let provider = Failure::new(Code::Overloaded).with_status(529);
    assert_eq!(
        after(25, provider).await,
        (BreakerState::Open, Some(Code::CircuitOpen))
    );
}
