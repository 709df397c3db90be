//! A caller's own facts above a fallback (`RequestFacts::from_head(..)
//! .with_model(..)`, as the gateway puts them) have no slots: the fallback
//! keeps what they say and adds its recording's, so its routes read what
//! the body asked for, as without them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall_core::recording::ReplayBody;
use seawall_core::{BoxError, Code, Failure, RequestFacts};
use seawall_fallback::{FallbackLayer, FallbackRoute};
use tower::{Layer, ServiceExt, service_fn};

type Req = http::Request<ReplayBody<Full<Bytes>>>;
type Resp = http::Response<Full<Bytes>>;
type Boxed = tower::util::BoxCloneSyncService<Req, Resp, BoxError>;

type Seen = Arc<Mutex<Option<(Option<bool>, Option<bool>, Option<String>, bool)>>>;

async fn run(caller_facts: bool) -> (Option<bool>, Option<bool>, Option<String>, bool) {
    let primary = Boxed::new(service_fn(|req: Req| async move {
        let _ = req.into_body().collect().await;
        Err::<Resp, BoxError>(Failure::new(Code::Overloaded).with_status(503).into())
    }));
    let seen: Seen = Arc::default();
    let s2 = seen.clone();
    let route = Boxed::new(service_fn(move |req: Req| {
        let s2 = s2.clone();
        async move {
            let facts = RequestFacts::of_request(&req);
            *s2.lock().unwrap() = Some((
                facts.stream_requested(),
                facts.body_sent(),
                facts.model().map(str::to_owned),
                facts.operation_deadline().is_some(),
            ));
            Ok::<_, BoxError>(http::Response::new(Full::new(Bytes::from_static(b"{}"))))
        }
    }));
    let layer = FallbackLayer::chain([
        FallbackRoute::new(route).route(seawall_core::RouteId::new("backup"))
    ]);
    let mut request = http::Request::post("https://api.openai.com/v1/chat/completions")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"m","stream":true}"#,
        )))
        .unwrap();
    if caller_facts {
        let facts = RequestFacts::from_head(&request).with_model("m");
        request.extensions_mut().insert(facts);
    }
    tokio::time::timeout(
        Duration::from_secs(5),
        layer.layer(primary).oneshot(request),
    )
    .await
    .unwrap()
    .unwrap();
    seen.lock().unwrap().clone().unwrap()
}

#[tokio::test]
async fn a_callers_facts_above_a_fallback_keep_the_bodys() {
    let without = run(false).await;
    assert_eq!(
        without,
        (Some(true), Some(true), Some("m".to_owned()), false),
        "the route reads what the body asked for"
    );
    assert_eq!(run(true).await, without, "the same with the caller's facts");
}
