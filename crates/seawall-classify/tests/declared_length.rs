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
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tower::{BoxError, Layer, ServiceExt, service_fn};

const DECLARED: usize = 1000;
const SENT: usize = 500;

/// One HTTP/2 frame: its 9-byte header (length, type, flags, stream) and
/// payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let length = u32::try_from(payload.len()).expect("a small frame");
    let mut out = length.to_be_bytes()[1..].to_vec();
    out.extend([kind, flags]);
    out.extend(stream.to_be_bytes());
    out.extend(payload);
    out
}

/// The response head of stream 1 (END_HEADERS): `:status 200` from
/// HPACK's static table, then each field as a literal never indexed (all
/// shorter than 127 bytes: one length byte each).
fn head(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut block = vec![0x88];
    for (name, value) in fields {
        block.push(0x00);
        for text in [name, value] {
            block.push(u8::try_from(text.len()).expect("a short field"));
            block.extend(text.as_bytes());
        }
    }
    frame(0x1, 0x4, 1, &block)
}

/// The frames after the client's request: the head of an `audio/mpeg`
/// answer that declares [`DECLARED`] bytes, [`SENT`] of them, then `end`.
fn answer(end: &[u8]) -> Vec<u8> {
    let declared = DECLARED.to_string();
    let mut out = head(&[
        ("content-type", "audio/mpeg"),
        ("content-length", &declared),
    ]);
    out.extend(frame(0x0, 0, 1, &[b'x'; SENT]));
    out.extend(end);
    out
}

/// An h2c server that, on its first connection, waits for the request's
/// HEADERS and writes `frames` after its own SETTINGS, then reads until
/// the client goes.
async fn server(frames: Vec<u8>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        tcp.write_all(&frame(0x4, 0, 0, &[])).await.unwrap();
        let mut read: Vec<u8> = Vec::new();
        // The client's preface, then its frames up to the first HEADERS.
        let mut at = 24;
        loop {
            while read.len() >= at + 9 {
                let length = usize::from(read[at]) << 16
                    | usize::from(read[at + 1]) << 8
                    | usize::from(read[at + 2]);
                if read[at + 3] == 0x1 {
                    tcp.write_all(&frame(0x4, 0x1, 0, &[])).await.unwrap();
                    tcp.write_all(&frames).await.unwrap();
                    let _ = tcp.read_to_end(&mut Vec::new()).await;
                    return;
                }
                at += 9 + length;
            }
            let mut chunk = [0; 4096];
            match tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => read.extend(&chunk[..n]),
            }
        }
    });
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
async fn cut_after_half(end: &[u8]) {
    let addr = server(answer(end)).await;
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
    cut_after_half(&frame(0x3, 0, 1, &0u32.to_be_bytes())).await;
}

/// GOAWAY(NO_ERROR) whose last stream (0) is below ours, after half the
/// body.
#[tokio::test]
async fn a_no_error_goaway_leaving_the_stream_out_mid_body_is_truncated() {
    let mut payload = 0u32.to_be_bytes().to_vec();
    payload.extend(0u32.to_be_bytes());
    cut_after_half(&frame(0x7, 0, 0, &payload)).await;
}

/// The same answer sent whole (its last DATA frame ends the stream) is
/// delivered as it came.
#[tokio::test]
async fn an_answer_of_its_declared_length_is_delivered() {
    let rest = frame(0x0, 0x1, 1, &[b'x'; DECLARED - SENT]);
    let addr = server(answer(&rest)).await;
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
