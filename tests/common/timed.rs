//! An in-process provider that answers every call with an event stream
//! played on tokio's clock (paused, in the suites that use it): each frame
//! after its wait, then the end, or nothing more ever.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, StreamBody};

/// What the stream does after its script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Then {
    /// It ends cleanly.
    End,
    /// It stalls (no end, no error) until someone gives up on it.
    Stall,
}

/// A provider that answers every call, over whatever request body the
/// layers above send, with an event stream of its script: each frame after
/// its wait, in seconds, and then as its [`Then`] says. Counts the calls.
#[derive(Clone)]
pub(crate) struct Timed {
    script: Arc<[(f64, &'static str)]>,
    then: Then,
    calls: Arc<AtomicU32>,
}

/// The provider playing `script`, then as `then` says; counts its calls in
/// `calls`.
pub(crate) fn provider(
    script: impl Into<Arc<[(f64, &'static str)]>>,
    then: Then,
    calls: Arc<AtomicU32>,
) -> Timed {
    Timed {
        script: script.into(),
        then,
        calls,
    }
}

/// A provider whose event stream sends `frame` at once and then stalls
/// forever.
pub(crate) fn stalling(frame: &'static str) -> Timed {
    provider([(0.0, frame)], Then::Stall, Arc::default())
}

impl<B> tower::Service<http::Request<B>> for Timed {
    type Response = http::Response<BoxBody<Bytes, Infallible>>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<B>) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let frames = futures_util::StreamExt::then(
            futures_util::stream::iter(self.script.to_vec()),
            |(wait, frame)| async move {
                tokio::time::sleep(std::time::Duration::from_secs_f64(wait)).await;
                Ok::<_, Infallible>(Frame::data(Bytes::from_static(frame.as_bytes())))
            },
        );
        let body = match self.then {
            Then::End => StreamBody::new(frames).boxed(),
            Then::Stall => StreamBody::new(futures_util::StreamExt::chain(
                frames,
                futures_util::stream::pending(),
            ))
            .boxed(),
        };
        let response = http::Response::builder()
            .header("content-type", "text/event-stream")
            .body(body)
            .expect("a response");
        std::future::ready(Ok(response))
    }
}
