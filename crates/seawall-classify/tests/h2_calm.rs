//! An HTTP/2 server that tells the client to calm down (`ENHANCE_YOUR_CALM`,
//! 0xb), through a real client on loopback: a RST_STREAM before the
//! answer's head, or a GOAWAY as grpc-go sends it (`too_many_pings`). The
//! server sheds what this client sends, as gRPC reads it
//! (`RESOURCE_EXHAUSTED`): `rate_limited`, not a broken connection.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use common::found;
use http::Request;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seawall_classify::ClassifyLayer;
use seawall_core::{Action, Class, ClosedBy, Code, Failure};
use seawall_test::raw_h2::{Act, ENHANCE_YOUR_CALM, INTERNAL_ERROR, frame, reset, scripted_server};
use tower::{Layer, ServiceExt, service_fn};

/// GOAWAY with `code` and `debug` data, the last stream processed 0: the
/// client's stream 1 was never worked on.
fn goaway_saying(code: u32, debug: &[u8]) -> Act {
    let mut payload = 0u32.to_be_bytes().to_vec();
    payload.extend_from_slice(&code.to_be_bytes());
    payload.extend_from_slice(debug);
    Act::Send(frame(0x7, 0, 0, &payload))
}

/// Asks an h2c server that answers every request with `acts` for a chat
/// completion through the OpenAI classifier: the failure it came to, and
/// how many requests the server saw.
async fn failure_of(acts: Vec<Act>) -> (Failure, usize) {
    let (addr, calls): (SocketAddr, _) = scripted_server(move |_, _| acts.clone()).await;
    let client = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http::<Full<Bytes>>();
    let service = ClassifyLayer::openai().layer(service_fn(move |request| {
        let client = client.clone();
        async move { client.request(request).await }
    }));
    let request = Request::post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
        )))
        .unwrap();
    let error = tokio::time::timeout(Duration::from_secs(10), service.oneshot(request))
        .await
        .expect("the call ends")
        .expect_err("no answer came");
    let failure = found(&error).clone();
    (failure, calls.load(std::sync::atomic::Ordering::SeqCst))
}

/// The verdict on a server's `ENHANCE_YOUR_CALM`: it sheds this client's
/// load, and says so; a retry after the backoff may pass.
fn assert_calm(failure: &Failure) {
    assert_eq!(
        (failure.class(), failure.code(), failure.action()),
        (Class::Transient, Code::RateLimited, Action::Retry),
        "{failure:?}"
    );
    assert_eq!(
        failure.evidence().closed_by,
        Some(ClosedBy::Them),
        "{failure:?}"
    );
    assert_eq!(failure.status(), None, "{failure:?}");
    assert!(!failure.evidence().content_seen, "{failure:?}");
}

#[tokio::test]
async fn a_reset_with_enhance_your_calm_before_the_head_is_rate_limited() {
    let (failure, calls) = failure_of(vec![reset(1, ENHANCE_YOUR_CALM)]).await;
    assert_calm(&failure);
    assert_eq!(
        failure.stream_reset(),
        Some(ENHANCE_YOUR_CALM),
        "{failure:?}"
    );
    assert_eq!(calls, 1);
}

#[tokio::test]
async fn a_goaway_with_enhance_your_calm_is_rate_limited() {
    let (failure, calls) = failure_of(vec![
        goaway_saying(ENHANCE_YOUR_CALM, b"too_many_pings"),
        Act::Close,
    ])
    .await;
    assert_calm(&failure);
    // A connection's GOAWAY is no stream reset.
    assert_eq!(failure.stream_reset(), None, "{failure:?}");
    assert_eq!(calls, 1);
}

/// Any other reset is still the connection's failure: `transport`.
#[tokio::test]
async fn a_reset_with_another_code_is_still_transport() {
    let (failure, _) = failure_of(vec![reset(1, INTERNAL_ERROR)]).await;
    assert_eq!(failure.code(), Code::Transport, "{failure:?}");
    assert_eq!(failure.action(), Action::Retry, "{failure:?}");
    assert_eq!(failure.stream_reset(), Some(INTERNAL_ERROR), "{failure:?}");
}
