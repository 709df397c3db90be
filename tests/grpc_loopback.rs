//! seawall under a tonic channel against a loopback HTTP/2 server whose
//! answers a test scripts frame by frame (hyper's server, any status, any
//! DATA, any trailers): where a gRPC status comes from, what it means for
//! a retry, and a message the trailers cut short.
#![cfg(feature = "tonic")]

mod common;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::grpc::{ask, client, failure_of, service, serving, stack};
use http::{HeaderMap, Request, Response};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use seawall::core::{Code, Receipt};
use seawall::tonic::GrpcStatusLayer;
use tokio::net::TcpListener;
use tonic::Status;
use tonic_health::pb::health_client::HealthClient;
use tower::Layer;

/// A serving health status as one gRPC message: flag, length, protobuf.
const SERVING: &[u8] = b"\0\0\0\0\x02\x08\x01";

/// What the server answers one call with: its status and its frames.
type Answer = (u16, Vec<Frame<Bytes>>);

/// A gRPC server on a free loopback port: `script(n)` is its answer to
/// the `n`th call (counted over every connection), labelled
/// `application/grpc`. Returns its URL and call count.
async fn server<F>(script: F) -> (String, Arc<AtomicUsize>)
where
    F: Fn(usize) -> Answer + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    let script = Arc::new(script);
    let counter = calls.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (script, counter) = (script.clone(), counter.clone());
            let answer = hyper::service::service_fn(move |request: Request<Incoming>| {
                let (script, counter) = (script.clone(), counter.clone());
                async move {
                    // The whole request first, as a server reads a unary call.
                    let _ = request.into_body().collect().await;
                    let (status, frames) = script(counter.fetch_add(1, Ordering::SeqCst));
                    let frames =
                        futures_util::stream::iter(frames.into_iter().map(Ok::<_, Infallible>));
                    let response = Response::builder()
                        .status(status)
                        .header("content-type", "application/grpc")
                        .body(StreamBody::new(frames))
                        .unwrap();
                    Ok::<_, Infallible>(response)
                }
            });
            tokio::spawn(
                hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), answer),
            );
        }
    });
    (url, calls)
}

fn data(bytes: &[u8]) -> Frame<Bytes> {
    Frame::data(Bytes::copy_from_slice(bytes))
}

fn trailers(fields: &[(&'static str, &'static str)]) -> Frame<Bytes> {
    let map: HeaderMap = fields
        .iter()
        .map(|(name, value)| (name.parse().unwrap(), value.parse().unwrap()))
        .collect();
    Frame::trailers(map)
}

/// A well-formed serving answer.
fn serve() -> Answer {
    (200, vec![data(SERVING), trailers(&[("grpc-status", "0")])])
}

/// No test may hang: every call is bounded far above what it should take.
async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("the call hung")
}

/// One health check against `url` through `GrpcStatusLayer` (the code the
/// caller reads is the server's): the status it fails with.
async fn check_fails(url: &str) -> Status {
    let mut client = HealthClient::new(GrpcStatusLayer::new().layer(service(url, stack())));
    bounded(client.check(ask()))
        .await
        .expect_err("the call fails")
}

/// A stream of whole messages then one cut short, closed with OK
/// trailers: tonic drops the partial message and reads the OK as the
/// stream's end, so the caller would lose its end without a word. seawall
/// ends the stream with an interruption (a protocol violation, after a
/// message), never replayed.
#[tokio::test]
async fn ok_trailers_inside_a_message_fail_the_stream() {
    let (url, calls) = server(|_| {
        let mut second = SERVING.to_vec();
        second.extend_from_slice(&SERVING[..3]);
        (
            200,
            vec![
                data(SERVING),
                data(&second),
                trailers(&[("grpc-status", "0")]),
            ],
        )
    })
    .await;
    let mut client = client(&url, stack());
    let mut stream = bounded(client.watch(ask()))
        .await
        .expect("the stream opens")
        .into_inner();
    for _ in 0..2 {
        let message = bounded(stream.message()).await.expect("a whole message");
        assert_eq!(message, Some(serving()));
    }
    let status = bounded(stream.message())
        .await
        .expect_err("the stream's end was cut short");
    let failure = failure_of(&status).expect("seawall's verdict");
    assert_eq!(failure.code(), Code::StreamInterrupted, "{status:?}");
    assert_eq!(
        failure.interrupted().and_then(|i| i.cause),
        Some(Code::ProtocolViolation)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "never replayed");
}

/// A 503 labelled gRPC whose `grpc-status` comes in its trailers: the
/// status is the call's (tonic reads it before the HTTP status), so an
/// INVALID_ARGUMENT is refused once, not retried as a 503.
#[tokio::test]
async fn a_non_2xx_answers_trailers_status_is_the_calls() {
    let (url, calls) = server(|_| {
        let status = trailers(&[("grpc-status", "3"), ("grpc-message", "bad%20field")]);
        (503, vec![status])
    })
    .await;
    let status = check_fails(&url).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried: {status:?}");
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert_eq!(status.message(), "bad field");
    assert_eq!(
        failure_of(&status).map(|failure| failure.code()),
        Some(Code::BadRequest)
    );
}

/// ABORTED is a conflict for the caller to restart at a higher level:
/// sent again, the same call meets it again. Refused once, the caller
/// gets ABORTED.
#[tokio::test]
async fn aborted_is_not_retried() {
    let (url, calls) = server(|_| {
        let status = trailers(&[("grpc-status", "10"), ("grpc-message", "conflict")]);
        (200, vec![status])
    })
    .await;
    let status = check_fails(&url).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried: {status:?}");
    assert_eq!(status.code(), tonic::Code::Aborted, "{status:?}");
    assert_eq!(
        failure_of(&status).map(|failure| failure.code()),
        Some(Code::BadRequest)
    );
}

/// A tonic server whose own bound fired answers CANCELLED "Timeout
/// expired": the server ran out of time, a timeout retried like
/// DEADLINE_EXCEEDED, not the caller's cancellation.
#[tokio::test]
async fn a_tonic_servers_timeout_is_retried() {
    let (url, calls) = server(|n| match n {
        0 => {
            let status = trailers(&[("grpc-status", "1"), ("grpc-message", "Timeout%20expired")]);
            (200, vec![status])
        }
        _ => serve(),
    })
    .await;
    let mut client = client(&url, stack());
    let answer = bounded(client.check(ask()))
        .await
        .unwrap_or_else(|status| panic!("the retry answers: {status:?}"));
    let attempts: Vec<Option<Code>> = answer
        .extensions()
        .get::<Receipt>()
        .map(|receipt| receipt.attempts.iter().map(|a| a.code).collect())
        .unwrap_or_default();
    assert_eq!(attempts, vec![Some(Code::Timeout), None]);
    assert_eq!(answer.into_inner(), serving());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}
