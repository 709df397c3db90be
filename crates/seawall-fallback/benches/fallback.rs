//! The fallback layer's cost when the primary answers: recording the body,
//! the kept head copy and the `ServedBy` label, against the bare primary.
//!
//! `cargo bench -p seawall-fallback --bench fallback`

use std::future::{Ready, ready};
use std::task::{Context, Poll};

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::Full;
use seawall_core::BoxError;
use seawall_core::recording::ReplayBody;
use seawall_fallback::FallbackLayer;
use tower::{Layer, Service};

type Request = http::Request<ReplayBody<Full<Bytes>>>;
type Response = http::Response<Full<Bytes>>;

#[derive(Clone, Copy)]
struct Provider;

impl Service<Request> for Provider {
    type Response = Response;
    type Error = BoxError;
    type Future = Ready<Result<Response, BoxError>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: Request) -> Self::Future {
        ready(Ok(http::Response::new(Full::new(Bytes::from_static(
            b"ok",
        )))))
    }
}

fn request() -> http::Request<Full<Bytes>> {
    let mut request = http::Request::new(Full::new(Bytes::from_static(b"{\"model\":\"m\"}")));
    *request.uri_mut() = http::Uri::from_static("https://api.example.com/v1/chat");
    request
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let fallback = FallbackLayer::new(Provider).layer(Provider);
    let mut group = c.benchmark_group("primary_success");
    group.bench_function("bare_primary", |b| {
        b.to_async(&runtime).iter(|| {
            let body = ReplayBody::once(request().into_body());
            let mut primary = Provider;
            async move { primary.call(http::Request::new(body)).await.is_ok() }
        })
    });
    group.bench_function("seawall_fallback", |b| {
        b.to_async(&runtime).iter(|| {
            let mut service = fallback.clone();
            async move { service.call(request()).await.is_ok() }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
