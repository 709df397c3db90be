//! A route whose request is rebuilt with a body of its own (as the
//! gateway's routes are), recorded with the operation's facts
//! (`ReplayBody::fill_facts_of`): cut after that body went out whole, the
//! route's call may have been billed, as with the kept body.
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall_core::recording::ReplayBody;
use seawall_core::{BoxError, Code, Failure, Receipt};
use seawall_fallback::{FallbackLayer, FallbackRoute};
use std::time::Duration;
use tower::{Layer, ServiceBuilder, ServiceExt, service_fn};

type Req = http::Request<ReplayBody<Full<Bytes>>>;
type Resp = http::Response<Full<Bytes>>;
type Boxed = tower::util::BoxCloneSyncService<Req, Resp, BoxError>;

fn primary() -> Boxed {
    Boxed::new(service_fn(|_: Req| async {
        Err::<Resp, BoxError>(Failure::new(Code::Overloaded).with_status(503).into())
    }))
}

fn cut_after_reading() -> Boxed {
    Boxed::new(service_fn(|request: Req| async move {
        request.into_body().collect().await.unwrap();
        Err::<Resp, BoxError>(Failure::new(Code::Timeout).into())
    }))
}

fn answering() -> Boxed {
    Boxed::new(service_fn(|_: Req| async {
        Ok::<_, BoxError>(http::Response::new(Full::new(Bytes::from_static(b"{}"))))
    }))
}

async fn may_be_billed(rebuild: bool) -> usize {
    let route: Boxed = if rebuild {
        Boxed::new(
            ServiceBuilder::new()
                .map_request(|r: Req| {
                    let facts = r
                        .extensions()
                        .get::<seawall_core::RequestFacts>()
                        .cloned()
                        .unwrap();
                    r.map(|_| {
                        ReplayBody::recorded(
                            Full::new(Bytes::from_static(b"{\"model\":\"m2\"}")),
                            1 << 20,
                        )
                        .fill_facts_of(&facts)
                    })
                })
                .service(cut_after_reading()),
        )
    } else {
        cut_after_reading()
    };
    let layer = FallbackLayer::chain([
        FallbackRoute::new(route).route(seawall_core::RouteId::new("r1")),
        FallbackRoute::new(answering()).route(seawall_core::RouteId::new("r2")),
    ]);
    let request = http::Request::post("https://primary.example/v1/messages")
        .body(Full::new(Bytes::from_static(b"{\"model\":\"m\"}")))
        .unwrap();
    let response = tokio::time::timeout(
        Duration::from_secs(5),
        layer.layer(primary()).oneshot(request),
    )
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("{e:?}"));
    let receipt = response.extensions().get::<Receipt>().cloned().unwrap();
    receipt.may_be_billed_attempts()
}

#[tokio::test]
async fn a_route_cut_after_its_own_body_went_out_may_be_billed() {
    assert_eq!(may_be_billed(false).await, 1, "control: the kept body");
    assert_eq!(
        may_be_billed(true).await,
        1,
        "the route's own body went out whole"
    );
}
