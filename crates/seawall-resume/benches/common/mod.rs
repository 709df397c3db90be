//! The synthetic stream the benches and the allocation test share: one
//! OpenAI event per frame, then the finish, allocating nothing per frame.
#![allow(dead_code)] // each user takes its own part

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full};

/// One content event.
pub(crate) const CHUNK: &str = "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
/// The finish and the done marker, in one frame.
pub(crate) const END: &str = "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// `left` content frames, then the finish.
pub(crate) struct Stream {
    left: usize,
    end: bool,
}

impl Body for Stream {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.left > 0 {
            self.left -= 1;
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(CHUNK.as_bytes())))));
        }
        if !self.end {
            self.end = true;
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(END.as_bytes())))));
        }
        Poll::Ready(None)
    }
}

/// A healthy event stream of `frames` content frames and the finish.
pub(crate) fn response(frames: usize) -> http::Response<Stream> {
    http::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Stream {
            left: frames,
            end: false,
        })
        .unwrap()
}

/// A streamed chat request.
pub(crate) fn request() -> http::Request<Full<Bytes>> {
    http::Request::post("http://api.example/v1/chat/completions")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        )))
        .unwrap()
}

/// Reads a body to its end: (frames, data bytes).
pub(crate) async fn drain<B: Body<Data = Bytes>>(body: B) -> (usize, usize)
where
    B::Error: std::fmt::Debug,
{
    let mut body = std::pin::pin!(body);
    let (mut frames, mut bytes) = (0, 0);
    while let Some(frame) = body.frame().await {
        frames += 1;
        bytes += frame.unwrap().into_data().map_or(0, |d| d.len());
    }
    (frames, bytes)
}
