//! A route's error that no layer classified (no seawall `Failure` in it)
//! is not moved on from, and comes back with every attempt of the
//! operation: the primary's before it were made, and billed, all the
//! same.

use bytes::Bytes;
use http_body_util::Full;
use seawall_core::recording::ReplayBody;
use seawall_core::{BoxError, Code, Failure, Receipt, RouteId};
use seawall_fallback::{FallbackLayer, FallbackRoute};
use tower::{Layer, ServiceExt, service_fn};

type Req = http::Request<ReplayBody<Full<Bytes>>>;
type Resp = http::Response<Full<Bytes>>;
type Boxed = tower::util::BoxCloneSyncService<Req, Resp, BoxError>;

fn failing(error: fn() -> BoxError) -> Boxed {
    Boxed::new(service_fn(move |_: Req| async move {
        Err::<Resp, BoxError>(error())
    }))
}

#[tokio::test]
async fn a_routes_unclassified_error_comes_back_with_every_attempt() {
    // The primary's provider answered 200 and failed (billed); the route
    // fails with the client's own error.
    let primary = failing(|| Box::new(Failure::new(Code::Overloaded).with_status(200)));
    let route = failing(|| Box::new(std::io::Error::other("the route's client failed")));
    let layer = FallbackLayer::chain([FallbackRoute::new(route).route(RouteId::new("second"))]);
    let request = http::Request::post("https://primary.example/v1/messages")
        .body(Full::new(Bytes::from_static(b"{\"model\":\"m\"}")))
        .unwrap();
    let err = layer.layer(primary).oneshot(request).await.unwrap_err();
    // The error as it was, as the source of the receipt's text.
    let source = std::error::Error::source(&*err).expect("the error");
    assert_eq!(source.to_string(), "the route's client failed");
    assert!(Failure::find(&*err).is_none());
    let receipt = Receipt::of_error(&*err).expect("the receipt");
    let attempts: Vec<_> = receipt
        .attempts
        .iter()
        .map(|a| (a.route.as_str(), a.code))
        .collect();
    assert_eq!(
        attempts,
        [
            ("primary.example", Some(Code::Overloaded)),
            ("second", Some(Code::Unknown)),
        ]
    );
    assert_eq!(receipt.billed_attempts(), 1);
    assert!(receipt.fallback);
}
