//! The success path of `DeadlineLayer` against `tower::timeout::Timeout`,
//! in the same run: a ready inner service answering 200 at once.
//!
//! `cargo bench -p seawall-deadline --bench deadline`

use std::convert::Infallible;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use http::{Request, Response};
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

criterion_group!(benches, success_path);
criterion_main!(benches);
