//! The success path of Deadline + RetryBudget + Classify over a ready
//! upstream, against `tower::timeout` + `tower::retry` over the same upstream
//! in the same run, and the heap allocations per call of each (counted by an
//! instrumented global allocator and printed before the timings), with the
//! share of each seawall layer.
//!
//! `cargo bench -p seawall-retry --bench retry`

use std::alloc::System;
use std::convert::Infallible;
use std::future::{Ready, ready};
use std::time::Duration;

use bytes::Bytes;
use criterion::Criterion;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Request, Response};
use http_body_util::Full;
use seawall_classify::ClassifyLayer;
use seawall_core::recording::{ReplayBody, clone_head};
use seawall_deadline::DeadlineLayer;
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::retry::Policy;
use tower::{BoxError, Layer, Service, ServiceBuilder, ServiceExt, service_fn};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const BODY: &[u8] = br#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}"#;
const CHUNK: &[u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";

/// A chat request as a client sends it.
fn request() -> Request<Full<Bytes>> {
    Request::post("https://api.llm.example/v1/chat/completions")
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-bench")
        .body(Full::new(Bytes::from_static(BODY)))
        .unwrap()
}

/// The provider: a ready 200 event stream, which Classify passes through
/// unread (its content is the stream guard's business, not measured here).
async fn ok<B>(_: Request<B>) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut response = Response::new(Full::new(Bytes::from_static(CHUNK)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    Ok(response)
}

/// tower's retry, told what seawall's ladder is told: three attempts, and
/// the same request (head and body) for each.
#[derive(Clone)]
struct Attempts(usize);

impl<B: Clone, Res, E> Policy<Request<B>, Res, E> for Attempts {
    type Future = Ready<()>;

    fn retry(&mut self, _: &mut Request<B>, result: &mut Result<Res, E>) -> Option<Ready<()>> {
        match result {
            Err(_) if self.0 > 1 => {
                self.0 -= 1;
                Some(ready(()))
            }
            _ => None,
        }
    }

    fn clone_request(&mut self, request: &Request<B>) -> Option<Request<B>> {
        Some(clone_head(request, request.body().clone()))
    }
}

fn seawall() -> impl Service<Request<Full<Bytes>>, Error = BoxError, Future: Send> + Clone {
    ServiceBuilder::new()
        .layer(DeadlineLayer::new(Duration::from_secs(30)))
        .layer(RetryBudgetLayer::new(
            RetryPolicy::interactive(),
            Budget::grpc(10, 0.1),
        ))
        .layer(ClassifyLayer::openai())
        .service(service_fn(ok::<ReplayBody<Full<Bytes>>>))
}

fn tower() -> impl Service<Request<Full<Bytes>>, Error = BoxError, Future: Send> + Clone {
    ServiceBuilder::new()
        .timeout(Duration::from_secs(30))
        .retry(Attempts(3))
        .service(service_fn(ok::<Full<Bytes>>))
}

fn bare()
-> impl Service<Request<Full<Bytes>>, Response = Response<Full<Bytes>>, Error = Infallible> + Clone
{
    service_fn(ok::<Full<Bytes>>)
}

/// Heap allocations per call (request building and the upstream included),
/// averaged over many calls.
fn allocations_per_call<S>(runtime: &tokio::runtime::Runtime, svc: S) -> f64
where
    S: Service<Request<Full<Bytes>>> + Clone,
    S::Error: std::fmt::Debug,
{
    const CALLS: usize = 10_000;
    runtime.block_on(async {
        // Warm up: first-call allocations (timer wheel, thread locals).
        for _ in 0..10 {
            svc.clone().oneshot(request()).await.unwrap();
        }
        let region = Region::new(GLOBAL);
        for _ in 0..CALLS {
            std::hint::black_box(svc.clone().oneshot(request()).await.unwrap());
        }
        region.change().allocations as f64 / CALLS as f64
    })
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let bare_allocs = allocations_per_call(&runtime, bare());
    let seawall_allocs = allocations_per_call(&runtime, seawall());
    let tower_allocs = allocations_per_call(&runtime, tower());
    let deadline_allocs = allocations_per_call(
        &runtime,
        DeadlineLayer::new(Duration::from_secs(30)).layer(bare()),
    );
    let retry_allocs = allocations_per_call(
        &runtime,
        RetryBudgetLayer::new(RetryPolicy::interactive(), Budget::grpc(10, 0.1))
            .layer(service_fn(ok::<ReplayBody<Full<Bytes>>>)),
    );
    let classify_allocs = allocations_per_call(&runtime, ClassifyLayer::openai().layer(bare()));
    let tower_timeout_allocs = allocations_per_call(
        &runtime,
        ServiceBuilder::new()
            .timeout(Duration::from_secs(30))
            .service(bare()),
    );
    let tower_retry_allocs = allocations_per_call(
        &runtime,
        ServiceBuilder::new().retry(Attempts(3)).service(bare()),
    );
    println!("allocations per call: bare upstream {bare_allocs:.2}");
    println!(
        "allocations per call: seawall deadline+retry+classify {seawall_allocs:.2} (+{:.2} over bare)",
        seawall_allocs - bare_allocs
    );
    println!(
        "allocations per call: of which, each alone over bare: deadline +{:.2}, retry +{:.2}, classify +{:.2}",
        deadline_allocs - bare_allocs,
        retry_allocs - bare_allocs,
        classify_allocs - bare_allocs
    );
    println!(
        "allocations per call: tower timeout+retry {tower_allocs:.2} (+{:.2} over bare)",
        tower_allocs - bare_allocs
    );
    println!(
        "allocations per call: of which, each alone over bare: timeout +{:.2}, retry +{:.2}",
        tower_timeout_allocs - bare_allocs,
        tower_retry_allocs - bare_allocs
    );

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("success_path");
    group.bench_function("seawall_deadline_retry_classify", |b| {
        let svc = seawall();
        b.to_async(&runtime).iter(|| svc.clone().oneshot(request()));
    });
    group.bench_function("tower_timeout_retry", |b| {
        let svc = tower();
        b.to_async(&runtime).iter(|| svc.clone().oneshot(request()));
    });
    group.bench_function("bare_upstream", |b| {
        let svc = bare();
        b.to_async(&runtime).iter(|| svc.clone().oneshot(request()));
    });
    group.finish();
    criterion.final_summary();
}
