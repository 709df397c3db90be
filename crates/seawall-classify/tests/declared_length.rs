//! An answer handed on unread whose HTTP/2 stream ends before the length
//! its `content-length` declared, through a real client on loopback: a
//! server that writes its frames by hand sends half the bytes, then ends
//! the stream with `NO_ERROR` (a reset, or a GOAWAY that leaves the stream
//! out). hyper reads either as the body's clean end.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use common::found;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seawall_classify::{ClassifiedBody, ClassifyLayer};
use seawall_core::{Class, Code};
use seawall_test::raw_h2::{Act, NO_ERROR, data, goaway, headers, reset, scripted_server};
use tower::{BoxError, Layer, ServiceExt, service_fn};

const DECLARED: usize = 1000;
const SENT: usize = 500;

/// The acts after the client's request: the head of an `audio/mpeg`
/// answer on stream 1 that declares [`DECLARED`] bytes, [`SENT`] of them,
/// then `end`.
fn answer(end: Act) -> Vec<Act> {
    let declared = DECLARED.to_string();
    vec![
        headers(
            1,
            &[
                (":status", b"200"),
                ("content-type", b"audio/mpeg"),
                ("content-length", declared.as_bytes()),
            ],
            false,
        ),
        data(1, &[b'x'; SENT], false),
        end,
    ]
}

/// An h2c server that answers every request with [`answer`]`(end)`.
async fn server(end: Act) -> SocketAddr {
    let (addr, _) = scripted_server(move |_, _| answer(end.clone())).await;
    addr
}

/// Asks `addr` for speech over HTTP/2 through the OpenAI classifier.
async fn speech(addr: SocketAddr) -> Response<ClassifiedBody<hyper::body::Incoming>> {
    let client = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http::<Full<Bytes>>();
    let service = ClassifyLayer::openai().layer(service_fn(move |request| {
        let client = client.clone();
        async move { client.request(request).await }
    }));
    let request = Request::post(format!("http://{addr}/v1/audio/speech"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"tts-1","input":"hi","voice":"alloy"}"#,
        )))
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), service.oneshot(request))
        .await
        .expect("the call ends")
        .expect("the head is an answer")
}

/// Reads the body to its end: the bytes that came, and how it ended.
async fn read_all<B>(mut body: B) -> (usize, Result<(), BoxError>)
where
    B: http_body::Body<Data = Bytes, Error = BoxError> + Unpin,
{
    let mut bytes = 0;
    loop {
        let next = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await
            .expect("the body ends");
        match next {
            None => return (bytes, Ok(())),
            Some(Err(error)) => return (bytes, Err(error)),
            Some(Ok(frame)) => bytes += frame.data_ref().map_or(0, Bytes::len),
        }
    }
}

/// Half the declared bytes, then the stream's end: `truncated`, with the
/// bytes the caller already has, so nothing is replayed as if unseen.
async fn cut_after_half(end: Act) {
    let addr = server(end).await;
    let response = speech(addr).await;
    let (bytes, end) = read_all(response.into_body()).await;
    assert_eq!(bytes, SENT);
    let error = end.expect_err("half an answer is no answer");
    let failure = found(&error);
    assert_eq!(
        (failure.class(), failure.code()),
        (Class::Transient, Code::Truncated),
        "{failure}"
    );
    assert!(failure.evidence().content_seen, "{failure:?}");
    assert_eq!(failure.evidence().bytes, SENT as u64);
    let delivered = failure.interrupted().expect("an interruption");
    assert_eq!(delivered.bytes, SENT as u64);
}

/// RST_STREAM(NO_ERROR) on stream 1 after half the body.
#[tokio::test]
async fn a_no_error_reset_mid_body_is_truncated() {
    cut_after_half(reset(1, NO_ERROR)).await;
}

/// GOAWAY(NO_ERROR) whose last stream (0) is below ours, after half the
/// body.
#[tokio::test]
async fn a_no_error_goaway_leaving_the_stream_out_mid_body_is_truncated() {
    cut_after_half(goaway(0, NO_ERROR)).await;
}

/// The same answer sent whole (its last DATA frame ends the stream) is
/// delivered as it came.
#[tokio::test]
async fn an_answer_of_its_declared_length_is_delivered() {
    let addr = server(data(1, &[b'x'; DECLARED - SENT], true)).await;
    let response = speech(addr).await;
    let (bytes, end) = read_all(response.into_body()).await;
    assert_eq!(bytes, DECLARED);
    end.expect("a whole answer");
}

/// An answer handed on unread that sends more than its `content-length`
/// declared: bytes the framing does not hold are no part of the answer,
/// and the answer is broken.
#[tokio::test]
async fn bytes_past_the_declared_length_interrupt_the_answer() {
    let response = common::response(200, &[("content-length", "3")], "abcdef");
    let response = common::through(&ClassifyLayer::http(), response)
        .await
        .expect("the head is an answer");
    let (bytes, end) = read_all(response.into_body()).await;
    assert_eq!(bytes, 0, "the frame past the length is not handed on");
    let error = end.expect_err("more than declared");
    let failure = found(&error);
    assert_eq!(failure.code(), Code::StreamInterrupted, "{failure}");
    let delivered = failure.interrupted().expect("an interruption");
    assert_eq!(
        (delivered.cause, delivered.bytes),
        (Some(Code::ProtocolViolation), 0)
    );
    assert!(failure.evidence().content_seen, "{failure:?}");
}

/// A body read in part (not a JSON object: handed on with what was read)
/// is held to its length too, the bytes read first counted.
#[tokio::test]
async fn a_body_handed_on_after_a_read_that_ends_short_is_truncated() {
    let response = common::response(
        200,
        &[
            ("content-type", "application/json"),
            ("content-length", "10"),
        ],
        "[1,2",
    );
    let response = common::through(&ClassifyLayer::openai(), response)
        .await
        .expect("the head is an answer");
    let body = response.into_body();
    assert!(format!("{body:?}").contains("resumed"), "{body:?}");
    let (bytes, end) = read_all(body).await;
    assert_eq!(bytes, 4);
    let error = end.expect_err("4 of 10 bytes");
    let failure = found(&error);
    assert_eq!(failure.code(), Code::Truncated, "{failure}");
    assert_eq!(failure.interrupted().map(|i| i.bytes), Some(4));
}
