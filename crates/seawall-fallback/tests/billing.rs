//! Whether the attempts a fallback records itself (for routes without a
//! ladder of their own) were billed: only an answer 2xx to a request the
//! provider bills — a token count is free, whoever answers it.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use seawall_core::recording::ReplayBody;
use seawall_core::{BoxError, Code, Failure, Receipt, Usage};
use seawall_fallback::{FallbackLayer, FallbackRoute};
use tower::{Layer, ServiceExt, service_fn};

type Req = http::Request<ReplayBody<Full<Bytes>>>;
type Resp = http::Response<Full<Bytes>>;
type Boxed = tower::util::BoxCloneSyncService<Req, Resp, BoxError>;

/// A primary that fails after its provider answered 200 (an overload
/// reported in the body): billed, when the request bills.
fn primary() -> Boxed {
    Boxed::new(service_fn(|_: Req| async {
        let failure = Failure::new(Code::Overloaded).with_status(200);
        Err::<Resp, BoxError>(failure.into())
    }))
}

/// A route that answers 200 with the usage the provider reported.
fn answering() -> Boxed {
    Boxed::new(service_fn(|_: Req| async {
        let mut response = http::Response::new(Full::new(Bytes::from_static(b"{}")));
        response.extensions_mut().insert(Usage::new(7, 0));
        Ok::<_, BoxError>(response)
    }))
}

/// The receipt of `path` on the primary's host, the route's copy sent to
/// `route_path` on another.
async fn receipt_of(path: &str, route_path: &'static str) -> Receipt {
    let rewrite = move |request: &mut Req| {
        *request.uri_mut() = format!("https://fallback.example{route_path}")
            .parse()
            .unwrap();
    };
    let layer = FallbackLayer::chain([FallbackRoute::new(answering()).rewrite(rewrite)]);
    let request = http::Request::post(format!("https://primary.example{path}"))
        .body(Full::new(Bytes::from_static(b"{\"model\":\"m\"}")))
        .unwrap();
    let response = tokio::time::timeout(
        Duration::from_secs(5),
        layer.layer(primary()).oneshot(request),
    )
    .await
    .unwrap()
    .unwrap();
    response.extensions().get::<Receipt>().cloned().unwrap()
}

#[tokio::test]
async fn a_token_count_answered_by_the_fallback_is_not_billed() {
    const COUNT: &str = "/v1/messages/count_tokens";
    let receipt = receipt_of(COUNT, COUNT).await;
    assert_eq!(receipt.attempts.len(), 2, "{receipt:?}");
    assert_eq!(receipt.billed_attempts(), 0, "{receipt:?}");
    assert_eq!(receipt.usage(), Usage::default(), "the count is no cost");
    // The same answers to a request that bills are billed.
    let receipt = receipt_of("/v1/messages", "/v1/messages").await;
    assert_eq!(receipt.billed_attempts(), 2, "{receipt:?}");
    assert_eq!(receipt.usage(), Usage::new(7, 0));
}

#[tokio::test]
async fn the_route_bills_as_the_request_it_gets_after_its_rewrite() {
    // A token count sent on as a generation by the route's rewrite: the
    // primary's attempt is free, the route's billed.
    let receipt = receipt_of("/v1/messages/count_tokens", "/v1/messages").await;
    let billed: Vec<_> = receipt.attempts.iter().map(|a| a.billed).collect();
    assert_eq!(billed, [false, true]);
    // And the other way: a generation a rewrite sent to Gemini's token
    // count.
    let receipt = receipt_of("/v1/messages", "/v1beta/models/gemini-x:countTokens").await;
    let billed: Vec<_> = receipt.attempts.iter().map(|a| a.billed).collect();
    assert_eq!(billed, [true, false]);
}

/// A primary cut before any answer: after reading the request to its end
/// (a generation the provider may run and bill all the same) when
/// `reads_body`, before sending it otherwise.
fn cut_before_an_answer(reads_body: bool) -> Boxed {
    Boxed::new(service_fn(move |request: Req| async move {
        if reads_body {
            use http_body_util::BodyExt;
            request.into_body().collect().await.unwrap();
        }
        Err::<Resp, BoxError>(Failure::new(Code::Timeout).into())
    }))
}

#[tokio::test]
async fn a_primary_cut_after_its_whole_request_may_have_been_billed() {
    for (reads_body, may_be_billed) in [(true, 1), (false, 0)] {
        let rewrite = |request: &mut Req| {
            *request.uri_mut() = "https://fallback.example/v1/messages".parse().unwrap();
        };
        let layer = FallbackLayer::chain([FallbackRoute::new(answering()).rewrite(rewrite)]);
        let request = http::Request::post("https://primary.example/v1/messages")
            .body(Full::new(Bytes::from_static(b"{\"model\":\"m\"}")))
            .unwrap();
        let response = tokio::time::timeout(
            Duration::from_secs(5),
            layer
                .layer(cut_before_an_answer(reads_body))
                .oneshot(request),
        )
        .await
        .unwrap()
        .unwrap_or_else(|error| panic!("{error:?}"));
        let receipt = response.extensions().get::<Receipt>().cloned().unwrap();
        assert_eq!(receipt.attempts.len(), 2, "{receipt:?}");
        assert_eq!(receipt.billed_attempts(), 1, "the route's answer");
        assert_eq!(
            receipt.may_be_billed_attempts(),
            may_be_billed,
            "reads_body {reads_body}: {receipt:?}"
        );
    }
}
