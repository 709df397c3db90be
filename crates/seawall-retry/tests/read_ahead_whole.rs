//! What is read ahead of a request body for the spans is sent whole by the
//! first attempt, and a body's own error reaches the caller: a call ends
//! the same whether or not a subscriber records its spans. A test binary
//! of its own, as `read_ahead.rs`, its tests one at a time: a subscriber
//! set for one thread shares tracing's per-callsite cache with every test
//! running at the same time, and a span it records could look unrecorded.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::{Stream, stream};
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt, LengthLimitError, Limited, StreamBody};
use seawall_core::recording::ReplayBody;
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use seawall_test::body::{Hinted, Script};
use seawall_test::trace::Recorder;
use tower::{BoxError, Layer, ServiceExt, service_fn};

/// Held by each test: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const CHAT: &str = "https://api.openai.com/v1/chat/completions";

/// Sends `body` through a ladder of 3 attempts recording at most
/// `max_replay_bytes`, to an upstream that reads the whole body and fails
/// with the body's error if it fails: the bytes the upstream received, and
/// the call's outcome.
async fn send<B>(body: B, max_replay_bytes: usize) -> (Vec<Bytes>, Result<(), BoxError>)
where
    B: Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
{
    let received = Arc::new(Mutex::new(Vec::new()));
    let seen = received.clone();
    let upstream = service_fn(move |request: Request<ReplayBody<B>>| {
        let seen = seen.clone();
        async move {
            let body = request.into_body().collect().await?.to_bytes();
            seen.lock().unwrap().push(body);
            Ok::<_, BoxError>(Response::new(String::new()))
        }
    });
    let ladder = RetryBudgetLayer::new(
        RetryPolicy::no_wait(3).max_replay_bytes(max_replay_bytes),
        Budget::unlimited(),
    )
    .layer(upstream);
    let request = Request::post(CHAT).body(body).unwrap();
    let outcome = ladder.oneshot(request).await.map(drop);
    let received = received.lock().unwrap().clone();
    (received, outcome)
}

/// True when `err` or an error it was caused by is an `E`.
fn caused_by<E: std::error::Error + 'static>(err: &BoxError) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(&**err);
    while let Some(err) = next {
        if err.is::<E>() {
            return true;
        }
        next = err.source();
    }
    false
}

/// A body whose size hint says it fits the recording and that then sends
/// more than the cap: the frame read ahead past the cap is not lost, the
/// first attempt sends it, as it does when nothing records the spans.
#[tokio::test]
async fn a_body_larger_than_its_size_hint_is_sent_whole_with_recorded_spans() {
    let _serial = SERIAL.lock().await;
    let bytes = Bytes::from(vec![b'x'; 2048]);
    let body = || Hinted::new(Script::data([bytes.clone()]), SizeHint::with_exact(16));
    let (received, outcome) = send(body(), 1024).await;
    outcome.expect("sent once, whole");
    assert_eq!(received, std::slice::from_ref(&bytes));

    let recorder = Recorder::new();
    let _guard = recorder.install();
    let (received, outcome) = send(body(), 1024).await;
    outcome.expect("sent once, whole, with the spans recorded");
    assert_eq!(received, std::slice::from_ref(&bytes));
    assert_eq!(
        recorder.span("attempt").fields.get("otel.name"),
        Some("chat")
    );
}

/// The same, in chunks: those within the cap are read ahead into the
/// recording, the one past it is kept, and the rest is read as it is sent.
#[tokio::test]
async fn a_body_in_chunks_larger_than_its_size_hint_is_sent_whole_with_recorded_spans() {
    let _serial = SERIAL.lock().await;
    let (parts, whole) = chunks(4, 512);
    let mut hint = SizeHint::new();
    hint.set_upper(512);
    let recorder = Recorder::new();
    let _guard = recorder.install();
    let (received, outcome) = send(Hinted::new(Script::data(parts), hint), 1024).await;
    outcome.expect("sent once, whole");
    assert_eq!(received, [whole]);
}

/// A body that fails as it is read ahead fails the first attempt with its
/// own error, as it does when it fails as it is sent: a caller that
/// answers 413 for `LengthLimitError` still finds it in the chain.
#[tokio::test]
async fn a_body_error_read_ahead_reaches_the_caller_with_recorded_spans() {
    let _serial = SERIAL.lock().await;
    let (parts, _) = chunks(16, 4096);
    let (received, outcome) = send(Limited::new(streamed(parts.clone()), 16 * 1024), 1 << 20).await;
    let err = outcome.expect_err("over its limit");
    assert!(caused_by::<LengthLimitError>(&err), "{err:?}");
    assert!(received.is_empty());

    let recorder = Recorder::new();
    let _guard = recorder.install();
    let (parts, _) = chunks(16, 4096);
    let (received, outcome) = send(Limited::new(streamed(parts.clone()), 16 * 1024), 1 << 20).await;
    let err = outcome.expect_err("over its limit");
    assert!(caused_by::<LengthLimitError>(&err), "{err:?}");
    assert!(received.is_empty());
}

/// `count` chunks of `size` bytes, each a different byte; and their bytes.
fn chunks(count: u8, size: usize) -> (Vec<Bytes>, Bytes) {
    let parts: Vec<Bytes> = (0..count)
        .map(|n| Bytes::from(vec![b'a' + n; size]))
        .collect();
    let whole = Bytes::from(parts.concat());
    (parts, whole)
}

/// A streamed body of `parts`, all ready, as a stream of an upload gives
/// it: no size known.
fn streamed(
    parts: Vec<Bytes>,
) -> StreamBody<impl Stream<Item = Result<Frame<Bytes>, Infallible>> + Unpin> {
    StreamBody::new(stream::iter(parts.into_iter().map(|p| Ok(Frame::data(p)))))
}
