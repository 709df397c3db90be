//! The breaker's closed success path and its open-circuit refusal, against
//! `failsafe` and `tower-resilience`'s circuit breaker in the same run, and
//! the allocations per call of each.
//!
//! `cargo bench -p seawall-breaker --bench breaker` times every case with
//! the system allocator. Counting allocations needs an instrumented global
//! allocator, whose atomic counters would weigh on exactly the cases that
//! allocate, so the counts are a separate run:
//! `cargo bench -p seawall-breaker --bench breaker --features bench-count-allocations`.

use std::future::{Ready, ready};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use failsafe::futures::CircuitBreaker as _;
use http_body_util::Empty;
use seawall_breaker::{BreakDuration, BreakerLayer, BreakerState, Trip};
use seawall_core::{BoxError, Code, Failure, RouteId};
use tower::{Layer, Service, ServiceExt};

#[cfg(feature = "bench-count-allocations")]
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

type Response = http::Response<Empty<Bytes>>;

/// A provider that answers at once, or fails at once.
#[derive(Clone, Copy)]
struct Provider {
    fail: bool,
}

impl Service<http::Request<()>> for Provider {
    type Response = Response;
    type Error = BoxError;
    type Future = Ready<Result<Response, BoxError>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: http::Request<()>) -> Self::Future {
        ready(if self.fail {
            Err(Failure::new(Code::Overloaded).into())
        } else {
            Ok(http::Response::new(Empty::new()))
        })
    }
}

fn request() -> http::Request<()> {
    let mut request = http::Request::new(());
    *request.uri_mut() = http::Uri::from_static("https://api.example.com/v1/chat");
    request
}

/// Runs `call` `n` times on a current-thread runtime, counting allocations
/// (in the counting run only).
#[cfg(feature = "bench-count-allocations")]
fn allocations<F: Future>(
    runtime: &tokio::runtime::Runtime,
    n: u32,
    mut call: impl FnMut() -> F,
) -> Option<f64> {
    runtime.block_on(async {
        call().await; // warm: the route's breaker is created on first use
        let region = stats_alloc::Region::new(GLOBAL);
        for _ in 0..n {
            call().await;
        }
        Some(region.change().allocations as f64 / f64::from(n))
    })
}

#[cfg(not(feature = "bench-count-allocations"))]
fn allocations<F: Future>(
    _: &tokio::runtime::Runtime,
    _: u32,
    _: impl FnMut() -> F,
) -> Option<f64> {
    None
}

/// One call through a failsafe breaker shared by reference.
fn failsafe_call(breaker: &impl failsafe::futures::CircuitBreaker) -> impl Future<Output = bool> {
    let future = breaker.call(Provider { fail: false }.call(request()));
    async move { future.await.is_ok() }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _guard = runtime.enter();

    let ok = Provider { fail: false };
    let mut seawall = BreakerLayer::new().layer(ok);
    // Tripped by a real failure (not isolated by hand), so a refusal reads
    // the clock for its `retry_after`, as in production; failsafe's open
    // breaker below is tripped the same way.
    let seawall_open_layer = BreakerLayer::new()
        .trip(Trip::Consecutive { failures: 1 })
        .break_duration(BreakDuration {
            base: Duration::from_secs(3600),
            max: Duration::from_secs(3600),
            jitter: 0.0,
        });
    let _ = runtime.block_on(
        seawall_open_layer
            .layer(Provider { fail: true })
            .call(request()),
    );
    let mut seawall_open = seawall_open_layer.layer(ok);
    let seawall_open_state = || {
        seawall_open_layer
            .handle()
            .state(&RouteId::new("api.example.com"))
    };
    assert_eq!(seawall_open_state(), BreakerState::Open);
    let failsafe = failsafe::Config::new().build();
    // Open for an hour, like the seawall and tower-resilience open cases:
    // with failsafe's default backoff (5-10 s for the first trip) the
    // breaker would be probing again, and closed, before its group runs.
    let failsafe_open = {
        let breaker = failsafe::Config::new()
            .failure_policy(failsafe::failure_policy::consecutive_failures(
                1,
                failsafe::backoff::constant(Duration::from_secs(3600)),
            ))
            .build();
        let mut provider = Provider { fail: true };
        while breaker.is_call_permitted() {
            let _ = runtime.block_on(breaker.call(provider.call(request())));
        }
        breaker
    };
    let resilience = tower_resilience::circuitbreaker::CircuitBreakerLayer::builder()
        .build()
        .unwrap()
        .layer(ok);
    let resilience_open = {
        let service = tower_resilience::circuitbreaker::CircuitBreakerLayer::builder()
            .wait_duration_in_open(Duration::from_secs(3600))
            .build()
            .unwrap()
            .layer(ok);
        runtime.block_on(service.force_open());
        service
    };

    // Like failsafe's `call` on a shared breaker, the seawall cases call one
    // service kept across calls (readiness checked, no clone per call); the
    // `_clone_per_call` case adds the clone a server makes per request, for
    // the record. Every case answers with the same response and drops it,
    // so seawall's body wrapper (which records the outcome of an already
    // finished body at once) is the only extra, and it stands in for the
    // success failsafe records when its future completes.
    let bare_call = || {
        let mut s = ok;
        async move { s.call(request()).await.is_ok() }
    };
    let seawall_call = |s: &mut seawall_breaker::Breaker<Provider>| {
        let ready = s.poll_ready(&mut Context::from_waker(Waker::noop()));
        assert!(
            ready.is_ready(),
            "the breaker is ready when its provider is"
        );
        let future = s.call(request());
        async move { future.await.is_ok() }
    };
    let seawall_clone_call = |service: &seawall_breaker::Breaker<Provider>| {
        let mut s = service.clone();
        async move { s.call(request()).await.is_ok() }
    };
    let mut closed = c.benchmark_group("closed_success");
    closed.bench_function("bare_provider", |b| b.to_async(&runtime).iter(bare_call));
    closed.bench_function("seawall", |b| {
        b.to_async(&runtime).iter(|| seawall_call(&mut seawall))
    });
    closed.bench_function("seawall_clone_per_call", |b| {
        b.to_async(&runtime).iter(|| seawall_clone_call(&seawall))
    });
    closed.bench_function("failsafe", |b| {
        b.to_async(&runtime).iter(|| failsafe_call(&failsafe))
    });
    closed.bench_function("tower_resilience", |b| {
        b.to_async(&runtime).iter(|| {
            let s = resilience.clone();
            async move { s.oneshot(request()).await.is_ok() }
        })
    });
    closed.finish();

    let mut open = c.benchmark_group("open_rejection");
    open.bench_function("seawall", |b| {
        b.to_async(&runtime)
            .iter(|| seawall_call(&mut seawall_open))
    });
    open.bench_function("failsafe", |b| {
        b.to_async(&runtime).iter(|| failsafe_call(&failsafe_open))
    });
    open.bench_function("tower_resilience", |b| {
        b.to_async(&runtime).iter(|| {
            let s = resilience_open.clone();
            async move { s.oneshot(request()).await.is_ok() }
        })
    });
    open.finish();
    // Every open case refused throughout, rather than probing and closing.
    assert!(!failsafe_open.is_call_permitted());
    assert_eq!(seawall_open_state(), BreakerState::Open);

    let n = 10_000;
    let report = [
        (
            "closed_success/bare_provider",
            allocations(&runtime, n, bare_call),
        ),
        (
            "closed_success/seawall",
            allocations(&runtime, n, || seawall_call(&mut seawall)),
        ),
        (
            "closed_success/seawall_clone_per_call",
            allocations(&runtime, n, || seawall_clone_call(&seawall)),
        ),
        (
            "closed_success/failsafe",
            allocations(&runtime, n, || failsafe_call(&failsafe)),
        ),
        (
            "closed_success/tower_resilience",
            allocations(&runtime, n, || {
                let s = resilience.clone();
                async move { s.oneshot(request()).await.is_ok() }
            }),
        ),
        (
            "open_rejection/seawall",
            allocations(&runtime, n, || seawall_call(&mut seawall_open)),
        ),
        (
            "open_rejection/failsafe",
            allocations(&runtime, n, || failsafe_call(&failsafe_open)),
        ),
        (
            "open_rejection/tower_resilience",
            allocations(&runtime, n, || {
                let s = resilience_open.clone();
                async move { s.oneshot(request()).await.is_ok() }
            }),
        ),
    ];
    for (name, per_call) in report {
        if let Some(per_call) = per_call {
            println!("allocations per call: {name}: {per_call:.2}");
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
