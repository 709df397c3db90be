//! What choosing a member of a route set costs: the choice alone (power of
//! two choices over eight members, each checked against its breaker probe)
//! and a whole call through the set to a provider that answers at once.
//!
//! `cargo bench -p seawall-fallback --bench route_set`

use std::future::{Ready, ready};
use std::hint::black_box;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http::header::{AUTHORIZATION, HeaderValue};
use http_body_util::Full;
use seawall_breaker::BreakerLayer;
use seawall_core::{BoxError, RouteId};
use seawall_fallback::{Member, RouteSetLayer};
use tower::{Layer, Service};

type Request = http::Request<Full<Bytes>>;
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

/// Eight keys, read against a breaker's probes, as the assembled stack
/// wires them.
fn set(seed: Option<u64>) -> RouteSetLayer {
    let members = (0..8).map(|n| {
        Member::new(format!("key-{n}").as_str())
            .origin("https://api.example.com")
            .unwrap()
            .header(
                AUTHORIZATION,
                HeaderValue::try_from(format!("Bearer sk-{n}")).unwrap(),
            )
    });
    let breaker = BreakerLayer::new().handle();
    let layer = RouteSetLayer::new(members)
        .unwrap()
        .health(move |route: &RouteId| {
            let probe = breaker.probe(route);
            move || probe.blocked()
        });
    match seed {
        Some(seed) => layer.seed(seed),
        None => layer,
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _entered = runtime.enter();
    for (name, seed) in [("thread_rng", None), ("seeded", Some(7))] {
        let layer = set(seed);
        let handle = layer.handle();
        // Measured members, so the choice compares real costs.
        let mut service = layer.layer(Provider);
        for _ in 0..64 {
            let mut request = Request::new(Full::new(Bytes::new()));
            *request.uri_mut() = http::Uri::from_static("https://api.example.com/v1/chat");
            let _ = runtime.block_on(service.call(request));
        }
        c.bench_function(&format!("route_set/choose_of_8/{name}"), |b| {
            b.iter(|| black_box(handle.choose()))
        });
        c.bench_function(&format!("route_set/call_of_8/{name}"), |b| {
            b.iter(|| {
                let mut request = Request::new(Full::new(Bytes::new()));
                *request.uri_mut() = http::Uri::from_static("https://api.example.com/v1/chat");
                let future = service.call(request);
                black_box(runtime.block_on(future).unwrap());
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
