//! Sending the request again: byte-for-byte below the cap, once above it.

mod common;

use bytes::Bytes;
use common::{Step, Upstream, receipt};
use futures_util::stream;
use http::Request;
use http_body::Frame;
use http_body_util::StreamBody;
use seawall_core::recording::ReplayBody;
use seawall_core::{Code, Failure, Receipt, StopReason};
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{Layer, ServiceExt};

type Streamed = StreamBody<stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, std::io::Error>>>>;

/// A streamed upload of `chunks` chunks of `size` bytes, each chunk a
/// different byte so order and completeness show.
fn upload(chunks: u8, size: usize) -> (Streamed, Bytes) {
    let parts: Vec<Bytes> = (0..chunks)
        .map(|n| Bytes::from(vec![b'a' + n; size]))
        .collect();
    let whole = Bytes::from(parts.concat());
    let frames = parts
        .into_iter()
        .map(|p| Ok(Frame::data(p)))
        .collect::<Vec<_>>();
    (StreamBody::new(stream::iter(frames)), whole)
}

#[tokio::test(start_paused = true)]
async fn below_the_cap_every_attempt_gets_the_same_bytes() {
    let upstream = Upstream::new([
        Step::Fail(Failure::new(Code::Overloaded)),
        Step::Fail(Failure::new(Code::Transport)),
        Step::Ok,
    ]);
    let svc = RetryBudgetLayer::new(
        RetryPolicy::no_wait(3).max_replay_bytes(1024),
        Budget::unlimited(),
    )
    .layer(upstream.service::<ReplayBody<Streamed>>());
    let (body, whole) = upload(3, 100);
    let response = svc.oneshot(Request::new(body)).await.unwrap();
    let calls = upstream.calls();
    assert_eq!(calls.len(), 3);
    for call in &calls {
        assert_eq!(call.body, whole);
    }
    let receipt = response.extensions().get::<Receipt>().unwrap();
    assert_eq!(receipt.stop, Some(StopReason::Succeeded));
}

#[tokio::test(start_paused = true)]
async fn above_the_cap_the_body_is_sent_once_intact() {
    let upstream = Upstream::new([Step::Fail(Failure::new(Code::Overloaded))]);
    let svc = RetryBudgetLayer::new(
        RetryPolicy::no_wait(3).max_replay_bytes(1024),
        Budget::unlimited(),
    )
    .layer(upstream.service::<ReplayBody<Streamed>>());
    let (body, whole) = upload(4, 400);
    let err = svc.oneshot(Request::new(body)).await.unwrap_err();
    let calls = upstream.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body, whole);
    assert_eq!(receipt(&err).stop, Some(StopReason::NotReplayable));
}
