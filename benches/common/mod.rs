//! What the in-process benches share: the request, the canned answers and
//! a ready upstream that answers them.

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use tower::Service;

pub(crate) const REQUEST: &[u8] =
    br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

pub(crate) const STREAM: &str = concat!(
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
);

pub(crate) const UNARY: &str = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}]}"#;

/// Calls counted per case (after 10 warm-up calls).
pub(crate) const CALLS: usize = 10_000;

pub(crate) fn request() -> Request<Full<Bytes>> {
    Request::post("https://api.llm.example/v1/chat/completions")
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-bench")
        .body(Full::new(Bytes::from_static(REQUEST)))
        .unwrap()
}

/// A ready upstream answering `body` with `content_type`, whatever the
/// request body type (so one value serves every layer of the stack).
#[derive(Clone, Copy)]
pub(crate) struct Upstream {
    content_type: &'static str,
    body: &'static str,
}

pub(crate) fn upstream(content_type: &'static str, body: &'static str) -> Upstream {
    Upstream { content_type, body }
}

impl<B> Service<Request<B>> for Upstream {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<B>) -> Self::Future {
        let response = Response::builder()
            .header("content-type", self.content_type)
            .body(Full::new(Bytes::from_static(self.body.as_bytes())))
            .unwrap();
        ready(Ok(response))
    }
}
