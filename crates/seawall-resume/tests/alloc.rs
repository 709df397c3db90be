//! On a healthy stream the layer allocates per response, never per frame.

#[path = "../benches/common/mod.rs"]
mod common;

use std::alloc::System;

use bytes::Bytes;
use common::{drain, request, response};
use http_body_util::Full;
use seawall_resume::{ResumeLayer, ResumeRequestBody, Resumed};
use seawall_stream::StreamGuardLayer;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::{ServiceBuilder, ServiceExt, service_fn};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

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
    let (read, _) = drain(guard.oneshot(request()).await.unwrap().into_body()).await;
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
    let (read, _) = drain(response.into_body()).await;
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
        // The fewest of three runs each: a count is an upper bound (the
        // counter is the process's, and on a loaded machine the first run
        // at a size counted 4 allocations more, once in a few), the least
        // is what the layer does.
        let mut small = (usize::MAX, usize::MAX);
        let mut large = (usize::MAX, usize::MAX);
        for _ in 0..3 {
            let run = allocations(100).await;
            small = (small.0.min(run.0), small.1.min(run.1));
            let run = allocations(10_000).await;
            large = (large.0.min(run.0), large.1.min(run.1));
        }
        let ((alone_small, with_small), (alone_large, with_large)) = (small, large);
        let extra_small = with_small - alone_small;
        let extra_large = with_large - alone_large;
        assert_eq!(
            extra_small, extra_large,
            "per response: {extra_small} more allocations at 100 frames, {extra_large} at 10 000"
        );
        assert!(extra_small <= 24, "{extra_small} allocations per response");
    });
}
