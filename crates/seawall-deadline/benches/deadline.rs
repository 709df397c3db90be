//! The success path of `DeadlineLayer` against `tower::timeout::Timeout`,
//! in the same run: a ready inner service answering 200 at once. Also a
//! body of ready frames read to its end under the total deadline, which
//! reads the clock once per data frame.
//!
//! `cargo bench -p seawall-deadline --bench deadline`

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::stream;
use http::{Request, Response};
use http_body_util::{BodyExt, StreamBody};
use seawall_deadline::DeadlineLayer;
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};

async fn ok(_: Request<()>) -> Result<Response<()>, Infallible> {
    Ok(Response::new(()))
}

/// One call on a clone of the service, as a server does per request.
async fn call<S>(svc: S)
where
    S: Service<Request<()>>,
    S::Error: std::fmt::Debug,
{
    let response = svc.oneshot(Request::new(())).await.unwrap();
    std::hint::black_box(response);
}

fn success_path(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("success_path");
    group.bench_function("seawall_deadline_total", |b| {
        let svc = ServiceBuilder::new()
            .layer(DeadlineLayer::new(Duration::from_secs(30)))
            .service(service_fn(ok));
        b.to_async(&runtime).iter(|| call(svc.clone()));
    });
    group.bench_function("seawall_deadline_per_attempt", |b| {
        let svc = ServiceBuilder::new()
            .layer(DeadlineLayer::per_attempt(Duration::from_secs(30)))
            .service(service_fn(ok));
        b.to_async(&runtime).iter(|| call(svc.clone()));
    });
    group.bench_function("tower_timeout", |b| {
        let svc = ServiceBuilder::new()
            .timeout(Duration::from_secs(30))
            .service(service_fn(ok));
        b.to_async(&runtime).iter(|| call(svc.clone()));
    });
    group.finish();
}

/// How many ready data frames the streamed body has.
const FRAMES: usize = 64;

async fn streamed(
    _: Request<()>,
) -> Result<
    Response<
        StreamBody<impl futures_util::Stream<Item = Result<http_body::Frame<Bytes>, Infallible>>>,
    >,
    Infallible,
> {
    let frames =
        stream::iter((0..FRAMES).map(|_| Ok(http_body::Frame::data(Bytes::from_static(b"token")))));
    Ok(Response::new(StreamBody::new(frames)))
}

fn body_path(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("body_path");
    group.bench_function("seawall_deadline_total_64_ready_frames", |b| {
        let svc = ServiceBuilder::new()
            .layer(DeadlineLayer::new(Duration::from_secs(30)))
            .service(service_fn(streamed));
        b.to_async(&runtime).iter(|| async {
            let response = svc.clone().oneshot(Request::new(())).await.unwrap();
            let body = response.into_body().collect().await.unwrap();
            std::hint::black_box(body);
        });
    });
    group.finish();
}

criterion_group!(benches, success_path, body_path);
criterion_main!(benches);
