//! A healthy 64 MiB stream through the stream guard alone, and through the
//! guard and the ResumeLayer: the layer's cost on the path that matters.
//!
//! `cargo bench -p seawall-resume`

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full};
use seawall_resume::{ResumeLayer, ResumeRequestBody};
use seawall_stream::StreamGuardLayer;
use tower::{ServiceBuilder, ServiceExt, service_fn};

const TOTAL: usize = 64 << 20;
const CHUNK: &str = "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
const END: &str = "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// One event per frame, `left` of them, then the finish: no allocation.
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

fn response() -> http::Response<Stream> {
    http::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Stream {
            left: TOTAL / CHUNK.len(),
            end: false,
        })
        .unwrap()
}

fn request() -> http::Request<Full<Bytes>> {
    http::Request::post("http://api.example/v1/chat/completions")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        )))
        .unwrap()
}

async fn drain<B: Body<Data = Bytes>>(body: B) -> usize
where
    B::Error: std::fmt::Debug,
{
    let mut body = std::pin::pin!(body);
    let mut bytes = 0;
    while let Some(frame) = body.frame().await {
        bytes += frame.unwrap().into_data().map_or(0, |d| d.len());
    }
    bytes
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("healthy_64mib");
    group.throughput(Throughput::Bytes(TOTAL as u64));
    group.sample_size(10);
    group.bench_function("guard", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let service = ServiceBuilder::new()
                    .layer(StreamGuardLayer::interactive())
                    .service(service_fn(|_req: http::Request<Full<Bytes>>| async {
                        Ok::<_, std::convert::Infallible>(response())
                    }));
                let response = service.oneshot(request()).await.unwrap();
                drain(response.into_body()).await
            })
        })
    });
    group.bench_function("guard_and_resume", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let service = ServiceBuilder::new()
                    .layer(ResumeLayer::new())
                    .layer(StreamGuardLayer::interactive())
                    .service(service_fn(
                        |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| async {
                            Ok::<_, std::convert::Infallible>(response())
                        },
                    ));
                let response = service.oneshot(request()).await.unwrap();
                drain(response.into_body()).await
            })
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
