//! A request body that fails while it is sent over HTTP/2, through a real
//! client and server on loopback: the caller's failure, not the route's.

mod common;

use std::convert::Infallible;
use std::io;
use std::time::Duration;

use bytes::Bytes;
use common::{expect, found};
use http::{Request, Response};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use seawall_classify::ClassifyLayer;
use seawall_core::{Action, Class, Code, Scope};
use seawall_test::body::Chunks;
use tower::{Layer, ServiceExt, service_fn};

/// An h2c server that reads each request body whole before it answers.
async fn h2_server() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(
                hyper::server::conn::http2::Builder::new(TokioExecutor::new()).serve_connection(
                    TokioIo::new(stream),
                    hyper::service::service_fn(|request: Request<hyper::body::Incoming>| async {
                        let _ = request.into_body().collect().await;
                        Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
                    }),
                ),
            );
        }
    });
    addr
}

/// hyper's HTTP/2 client does not report a request body's own error to
/// the caller: it resets the stream itself (INTERNAL_ERROR), and the
/// response fails with that reset. Read as `transport`, the caller's
/// broken upload was retried and counted against the route's breaker;
/// over HTTP/1 the same failure is hyper's "user" error, `bad_request`.
#[tokio::test]
async fn a_request_body_failing_over_http2_is_the_callers_failure() {
    let addr = h2_server().await;
    let client = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http::<Chunks>();
    let service = ClassifyLayer::openai().layer(service_fn(move |request| {
        let client = client.clone();
        async move { client.request(request).await }
    }));
    let request = Request::post(format!("http://{addr}/v1/embeddings"))
        .header("content-type", "application/json")
        .body(
            // One chunk, then the upload's source goes away.
            Chunks::new([&br#"{"model":"m","input":"#[..]]).then_error(io::ErrorKind::Other),
        )
        .unwrap();
    let error = tokio::time::timeout(Duration::from_secs(10), service.oneshot(request))
        .await
        .expect("the call ends")
        .map(|_| ())
        .expect_err("the body failed");
    let failure = found(&error);
    expect(Class::Permanent, Code::BadRequest, Action::Surface).check("h2 body", failure);
    // The request's own fault: no route is blamed, none is counted.
    assert_eq!(failure.scope(), Scope::Request);
    assert_eq!(failure.stream_reset(), None, "{failure}");
}
