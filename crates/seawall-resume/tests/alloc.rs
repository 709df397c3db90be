//! On a healthy stream the layer allocates per response, never per frame.

use std::alloc::System;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full};
use seawall_resume::{ResumeLayer, ResumeRequestBody, Resumed};
use seawall_stream::StreamGuardLayer;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::{ServiceBuilder, ServiceExt, service_fn};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const CHUNK: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},\"finish_reason\":null}]}\n\n";
const END: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

struct Stream {
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

fn response(frames: usize) -> http::Response<Stream> {
    http::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Stream {
            left: frames,
            end: false,
        })
        .unwrap()
}

fn request() -> http::Request<Full<Bytes>> {
    http::Request::post("http://api.example/v1/chat/completions")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"gpt-x","stream":true,"messages":[]}"#,
        )))
        .unwrap()
}

async fn drain<B: Body<Data = Bytes>>(body: B) -> usize
where
    B::Error: std::fmt::Debug,
{
    let mut body = std::pin::pin!(body);
    let mut frames = 0;
    while let Some(frame) = body.frame().await {
        frame.unwrap();
        frames += 1;
    }
    frames
}

/// Allocations for one stream of `frames` frames: guard alone, then guard
/// and layer.
async fn allocations(frames: usize) -> (usize, usize) {
    let region = Region::new(GLOBAL);
    let guard = ServiceBuilder::new()
        .layer(StreamGuardLayer::interactive().delivered_text(None))
        .service(service_fn(
            move |_req: http::Request<Full<Bytes>>| async move {
                Ok::<_, std::convert::Infallible>(response(frames))
            },
        ));
    let read = drain(guard.oneshot(request()).await.unwrap().into_body()).await;
    assert_eq!(read, frames + 1);
    let alone = region.change().allocations;

    let region = Region::new(GLOBAL);
    let resumable = ServiceBuilder::new()
        .layer(ResumeLayer::new())
        .layer(StreamGuardLayer::interactive().delivered_text(None))
        .service(service_fn(
            move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| async move {
                Ok::<_, std::convert::Infallible>(response(frames))
            },
        ));
    let response = resumable.oneshot(request()).await.unwrap();
    assert!(response.extensions().get::<Resumed>().is_some());
    let read = drain(response.into_body()).await;
    assert_eq!(read, frames + 1);
    (alone, region.change().allocations)
}

#[test]
fn the_layer_adds_no_allocation_per_frame() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // Warm-up: lazily initialised statics.
        allocations(10).await;
        let (alone_small, with_small) = allocations(100).await;
        let (alone_large, with_large) = allocations(10_000).await;
        let extra_small = with_small - alone_small;
        let extra_large = with_large - alone_large;
        assert_eq!(
            extra_small, extra_large,
            "per response: {extra_small} more allocations at 100 frames, {extra_large} at 10 000"
        );
        assert!(extra_small <= 24, "{extra_small} allocations per response");
    });
}
