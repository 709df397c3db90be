//! The same comparison as `benches/resume.rs`, paired: the guard alone and
//! the guard with the ResumeLayer alternate, and the best of 15 runs of
//! each is kept, so a machine busy with other work slows both alike.
//!
//! `cargo bench -p seawall-resume --bench paired`

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full};
use seawall_resume::{ResumeLayer, ResumeRequestBody};
use seawall_stream::StreamGuardLayer;
use tower::{ServiceBuilder, ServiceExt, service_fn};

const TOTAL: usize = 64 << 20;
const CHUNK: &str = "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
const END: &str = "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
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
            br#"{"model":"gpt-x","stream":true,"messages":[]}"#,
        )))
        .unwrap()
}
async fn drain<B: Body<Data = Bytes>>(body: B) -> usize
where
    B::Error: std::fmt::Debug,
{
    let mut body = std::pin::pin!(body);
    let mut n = 0;
    while let Some(f) = body.frame().await {
        n += f.unwrap().into_data().map_or(0, |d| d.len());
    }
    n
}
fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut a, mut b) = (f64::MAX, f64::MAX);
    let only = std::env::var("ONLY").unwrap_or_default();
    for _ in 0..15 {
        let t = Instant::now();
        if only != "b" {
            rt.block_on(async {
                let s = ServiceBuilder::new()
                    .layer(StreamGuardLayer::interactive())
                    .service(service_fn(|_r: http::Request<Full<Bytes>>| async {
                        Ok::<_, std::convert::Infallible>(response())
                    }));
                drain(s.oneshot(request()).await.unwrap().into_body()).await
            });
        }
        a = a.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        if only != "a" {
            rt.block_on(async {
                let s = ServiceBuilder::new()
                    .layer(ResumeLayer::new())
                    .layer(StreamGuardLayer::interactive())
                    .service(service_fn(
                        |_r: http::Request<ResumeRequestBody<Full<Bytes>>>| async {
                            Ok::<_, std::convert::Infallible>(response())
                        },
                    ));
                drain(s.oneshot(request()).await.unwrap().into_body()).await
            });
        }
        b = b.min(t.elapsed().as_secs_f64());
    }
    println!(
        "guard {:.1} ms ({:.0} MiB/s), guard+resume {:.1} ms ({:.0} MiB/s), ratio {:.3}",
        a * 1e3,
        64.0 / a,
        b * 1e3,
        64.0 / b,
        a / b
    );
}
