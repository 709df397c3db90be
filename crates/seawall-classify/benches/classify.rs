//! What ClassifyLayer costs on each path, against the bare inner service.
//!
//! ```text
//! cargo bench -p seawall-classify --bench classify
//! ```
//!
//! - `stream`: a 2xx `text/event-stream` answer. The layer must not read the
//!   body: the bench counts polls and fails if any happened.
//! - `unary`: a 2xx chat completion, read whole by the caller; the layer
//!   reads and checks it first.
//! - `error`: a 429 with an OpenAI error body and a `retry-after` header.

use std::convert::Infallible;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use seawall_classify::ClassifyLayer;
use tower::{Layer, Service, ServiceExt, service_fn};

static STREAM_POLLS: AtomicU64 = AtomicU64::new(0);

const SSE: &str = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n";
const UNARY: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today? I can answer questions, write code, or explain things step by step.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":24,"total_tokens":33},"system_fingerprint":"fp_1"}"#;
const RATE_LIMIT: &str = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 1.574s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;

/// One chunk of bytes, counting how often it is polled.
struct Counted {
    data: Option<Bytes>,
    polls: Option<&'static AtomicU64>,
}

impl Body for Counted {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(polls) = self.polls {
            polls.fetch_add(1, Ordering::Relaxed);
        }
        Poll::Ready(self.data.take().map(|data| Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}

fn provider(
    status: u16,
    content_type: &'static str,
    body: &'static str,
    polls: Option<&'static AtomicU64>,
) -> impl Service<Request<()>, Response = Response<Counted>, Error = Infallible, Future: Send>
+ Clone
+ Send {
    service_fn(move |_: Request<()>| async move {
        let body = Counted {
            data: Some(Bytes::from_static(body.as_bytes())),
            polls,
        };
        let mut response = Response::new(body);
        *response.status_mut() = http::StatusCode::from_u16(status).unwrap();
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, content_type.parse().unwrap());
        if status == 429 {
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, "2".parse().unwrap());
        }
        Ok(response)
    })
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let layer = ClassifyLayer::openai();

    let mut group = c.benchmark_group("stream");
    let bare = provider(200, "text/event-stream", SSE, Some(&STREAM_POLLS));
    let layered = layer.layer(bare.clone());
    group.bench_function("bare", |b| {
        b.to_async(&runtime).iter(|| async {
            let response = bare.clone().oneshot(Request::new(())).await.unwrap();
            black_box(response)
        })
    });
    group.bench_function("classified", |b| {
        b.to_async(&runtime).iter(|| async {
            let response = layered.clone().oneshot(Request::new(())).await.unwrap();
            black_box(response)
        })
    });
    group.finish();
    assert_eq!(
        STREAM_POLLS.load(Ordering::Relaxed),
        0,
        "the stream body was polled"
    );

    let mut group = c.benchmark_group("unary");
    let bare = provider(200, "application/json", UNARY, None);
    let layered = layer.layer(bare.clone());
    group.bench_function("bare_then_collect", |b| {
        b.to_async(&runtime).iter(|| async {
            let response = bare.clone().oneshot(Request::new(())).await.unwrap();
            black_box(response.into_body().collect().await.unwrap().to_bytes())
        })
    });
    group.bench_function("classified_then_collect", |b| {
        b.to_async(&runtime).iter(|| async {
            let response = layered.clone().oneshot(Request::new(())).await.unwrap();
            black_box(response.into_body().collect().await.unwrap().to_bytes())
        })
    });
    group.finish();

    let mut group = c.benchmark_group("error");
    let layered = layer.layer(provider(429, "application/json", RATE_LIMIT, None));
    group.bench_function("openai_429", |b| {
        b.to_async(&runtime).iter(|| async {
            let error = layered.clone().oneshot(Request::new(())).await.unwrap_err();
            black_box(error)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
