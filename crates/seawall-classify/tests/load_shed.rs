//! A call tower's `LoadShed` refused under the classifier is `overloaded`
//! marked as refused on this side (closed by us, no status): the breaker
//! above reads that mark and does not count the call against the route.

mod common;

use common::{Chunks, found};
use http::{Request, Response};
use seawall_classify::ClassifyLayer;
use seawall_core::{ClosedBy, Code};
use tower::{Service, ServiceExt, service_fn};

#[tokio::test]
async fn a_call_shed_here_is_closed_by_us_with_no_status() {
    // The first call holds the one slot for as long as it is kept.
    let inner = service_fn(|_: Request<()>| {
        std::future::pending::<Result<Response<Chunks>, std::convert::Infallible>>()
    });
    let mut service = tower::ServiceBuilder::new()
        .layer(ClassifyLayer::openai())
        .load_shed()
        .concurrency_limit(1)
        .service(inner);
    let _holding = service.ready().await.unwrap().call(Request::new(()));
    for _ in 0..25 {
        let shed = service.ready().await.unwrap().call(Request::new(()));
        let error = shed.await.map(|_| ()).expect_err("no slot left");
        let failure = found(&error);
        assert_eq!(failure.code(), Code::Overloaded);
        assert_eq!(failure.status(), None, "nothing was sent");
        assert_eq!(failure.evidence().closed_by, Some(ClosedBy::Us));
    }
}
