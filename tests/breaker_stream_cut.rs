//! A breaker over the stream guard counts how a stream ends:
//!
//! ```text
//! Breaker → StreamGuard → Classify → route
//! ```
//!
//! A route that ends every stream cleanly after content but before its
//! finish marker (no `finish_reason`, no `[DONE]`) gets `truncated`,
//! closed by the provider, from the guard: as broken as a route that
//! resets its streams, it trips the breaker. An answer the token limit cut
//! (`finish_reason: "length"`) is an answer, and leaves it closed.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall::breaker::{BreakerLayer, BreakerState, Trip};
use seawall::classify::ClassifyLayer;
use seawall::core::{ClosedBy, Code, Failure, RouteId};
use seawall::stream::StreamGuardLayer;
use tower::{Layer, ServiceExt, service_fn};

const CONTENT: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w1\"},\"finish_reason\":null}]}\n\n",
);

/// Builds the stack over a route that streams `body` whole, reads `calls`
/// answers to their ends, and returns the failures they ended with and the
/// breaker's state after them.
async fn read_through_breaker(body: &'static str, calls: usize) -> (Vec<Failure>, BreakerState) {
    let route = service_fn(move |_: http::Request<Full<Bytes>>| async move {
        Ok::<_, Infallible>(
            http::Response::builder()
                .header("content-type", "text/event-stream")
                .body(Full::new(Bytes::from_static(body.as_bytes())))
                .expect("a response"),
        )
    });
    let breaker = BreakerLayer::new().trip(Trip::Consecutive { failures: 3 });
    let handle = breaker.handle();
    let service =
        breaker.layer(StreamGuardLayer::interactive().layer(ClassifyLayer::openai().layer(route)));
    let mut failures = Vec::new();
    for _ in 0..calls {
        let request = http::Request::post("http://primary.example/v1/chat/completions")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(br#"{"stream":true}"#)))
            .expect("a request");
        let response = service.clone().oneshot(request).await.expect("headers");
        if let Err(error) = response.into_body().collect().await {
            failures.push(Failure::find(&*error).expect("a failure").clone());
        }
    }
    (failures, handle.state(&RouteId::new("primary.example")))
}

#[tokio::test(start_paused = true)]
async fn streams_the_provider_ends_before_their_finish_trip_the_breaker() {
    let (failures, state) = read_through_breaker(CONTENT, 3).await;
    assert_eq!(failures.len(), 3);
    for failure in &failures {
        assert_eq!(failure.code(), Code::Truncated, "{failure}");
        assert_eq!(failure.evidence().closed_by, Some(ClosedBy::Them));
    }
    assert_eq!(state, BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn answers_cut_by_the_token_limit_leave_the_breaker_closed() {
    const CUT_BY_LIMIT: &str = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w1\"},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let (failures, state) = read_through_breaker(CUT_BY_LIMIT, 10).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(state, BreakerState::Closed);
}
