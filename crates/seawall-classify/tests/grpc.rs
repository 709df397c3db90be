//! gRPC answers through `ClassifyLayer::grpc()`: where the status comes
//! from, and the messages' framing as the body passes.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{found, through};
use http::{HeaderMap, Response};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use seawall_classify::ClassifyLayer;
use seawall_core::{Class, Code, Failure};
use seawall_test::body::Script;
use tower::BoxError;

/// One gRPC message: no compression, its length, `payload`.
fn message(payload: &[u8]) -> Vec<u8> {
    let length = u32::try_from(payload.len()).unwrap();
    [&[0][..], &length.to_be_bytes(), payload].concat()
}

fn trailers(fields: &[(&'static str, &'static str)]) -> HeaderMap {
    fields
        .iter()
        .map(|(name, value)| (name.parse().unwrap(), value.parse().unwrap()))
        .collect()
}

/// An answer with `status`, `application/grpc`, the data frames `frames`,
/// then `trailers`.
fn answer(status: u16, frames: &[&[u8]], trailers: HeaderMap) -> Response<Script> {
    let mut script = Script::data(frames.iter().map(|frame| Bytes::copy_from_slice(frame)));
    script.0.push_back(Ok(Frame::trailers(trailers)));
    Response::builder()
        .status(status)
        .header("content-type", "application/grpc")
        .body(script)
        .unwrap()
}

/// The answer's body read to its end through the layer: the bytes, or the
/// failure it ended with.
async fn read_through(response: Response<Script>) -> Result<Bytes, Failure> {
    let response = through(&ClassifyLayer::grpc(), response)
        .await
        .unwrap_or_else(|error| panic!("the answer is handed on: {error}"));
    read_body(response.into_body()).await
}

async fn read_body<B>(body: B) -> Result<Bytes, Failure>
where
    B: Body<Data = Bytes, Error = BoxError>,
{
    match body.collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) => Err(found(&error).clone()),
    }
}

/// A stream cut inside a later message and closed with OK trailers: a
/// client (tonic) drops the partial message and reads the OK as the whole
/// answer, so the caller lost the end of the stream without a word. Here
/// the body ends with an interruption caused by a protocol violation, after
/// what passed.
#[tokio::test]
async fn ok_trailers_inside_a_later_message_interrupt_the_stream() {
    let first = message(b"first");
    let second = message(b"second, cut short");
    let cuts: [&[&[u8]]; 3] = [
        // Inside the second message's payload.
        &[&first, &second[..9]],
        // Inside its prefix, which came across two frames.
        &[&first, &second[..2], &second[2..4]],
        // The first message and a part of the second in one frame.
        &[&[&first[..], &second[..7]].concat()],
    ];
    for frames in cuts {
        let failure = read_through(answer(200, frames, trailers(&[("grpc-status", "0")])))
            .await
            .expect_err("a message was cut short");
        assert_eq!(failure.code(), Code::StreamInterrupted, "{frames:?}");
        let interrupted = failure.interrupted().expect("what passed");
        assert_eq!(
            interrupted.cause,
            Some(Code::ProtocolViolation),
            "{frames:?}"
        );
        let sent: usize = frames.iter().map(|frame| frame.len()).sum();
        assert_eq!(interrupted.bytes, sent as u64, "{frames:?}");
    }
}

/// Whole messages end where their prefixes say, however the frames cut
/// them (a prefix split across frames, an empty message, several in one
/// frame): OK trailers after them end a whole answer.
#[tokio::test]
async fn whole_messages_across_any_frames_end_as_a_success() {
    let stream = [
        message(b"first"),
        message(b""),
        message(&[7; 300]),
        message(b"last"),
    ]
    .concat();
    // The first message whole, then the rest cut at every byte: each cut
    // splits a prefix or a payload somewhere.
    let first = message(b"first").len();
    for cut in first..stream.len() {
        let frames: [&[u8]; 3] = [&stream[..first], &stream[first..cut], &stream[cut..]];
        let read = read_through(answer(200, &frames, trailers(&[("grpc-status", "0")]))).await;
        let read = read.unwrap_or_else(|failure| panic!("cut at {cut}: {failure}"));
        assert_eq!(read, stream, "cut at {cut}");
    }
    // One byte a frame.
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    let mut frames = vec![&stream[..first]];
    frames.extend(&bytes[first..]);
    let read = read_through(answer(200, &frames, trailers(&[("grpc-status", "0")]))).await;
    let read = read.unwrap_or_else(|failure| panic!("a byte a frame: {failure}"));
    assert_eq!(read, stream);
}

/// The failure a non-2xx answer comes to through the layer.
async fn refused(response: Response<Script>) -> Failure {
    let error = through(&ClassifyLayer::grpc(), response)
        .await
        .expect_err("a non-2xx answer fails");
    found(&error).clone()
}

/// A non-2xx gRPC answer whose `grpc-status` comes in its trailers: the
/// status is the call's, read before the HTTP status (as tonic's
/// `infer_grpc_status` reads it), with its message and pushback. Without
/// one (or with OK: the answer was already taken for an error) the HTTP
/// table decides.
#[tokio::test]
async fn a_non_2xx_answers_status_in_its_trailers_is_the_calls() {
    let failure = refused(answer(
        503,
        &[],
        trailers(&[("grpc-status", "3"), ("grpc-message", "bad%20field")]),
    ))
    .await;
    assert_eq!(
        (failure.class(), failure.code()),
        (Class::Permanent, Code::BadRequest)
    );
    assert_eq!(failure.provider_code(), Some("3"));
    assert_eq!(failure.message(), Some("bad field"));
    assert_eq!(failure.status(), Some(503));

    let failure = refused(answer(
        503,
        &[b"upstream gone"],
        trailers(&[("grpc-status", "14"), ("grpc-retry-pushback-ms", "250")]),
    ))
    .await;
    assert_eq!(failure.code(), Code::ProviderUnavailable);
    assert_eq!(failure.retry_after(), Some(Duration::from_millis(250)));

    for fields in [&[][..], &[("grpc-status", "0")][..]] {
        let failure = refused(answer(503, &[], trailers(fields))).await;
        assert_eq!(
            (failure.class(), failure.code(), failure.provider_code()),
            (Class::Transient, Code::ProviderUnavailable, None),
            "{fields:?}"
        );
    }
}
