//! A healthy 64 MiB stream through the stream guard alone, and through the
//! guard and the ResumeLayer: the layer's cost on the path that matters.
//!
//! `cargo bench -p seawall-resume`

mod common;

use bytes::Bytes;
use common::{CHUNK, drain, request, response};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http_body_util::Full;
use seawall_resume::{ResumeLayer, ResumeRequestBody};
use seawall_stream::StreamGuardLayer;
use tower::{ServiceBuilder, ServiceExt, service_fn};

const TOTAL: usize = 64 << 20;

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
                        Ok::<_, std::convert::Infallible>(response(TOTAL / CHUNK.len()))
                    }));
                let response = service.oneshot(request()).await.unwrap();
                drain(response.into_body()).await.1
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
                            Ok::<_, std::convert::Infallible>(response(TOTAL / CHUNK.len()))
                        },
                    ));
                let response = service.oneshot(request()).await.unwrap();
                drain(response.into_body()).await.1
            })
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
