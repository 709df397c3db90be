//! seawall's whole stack beside the closest composition a user could pick
//! instead, in one run: tower-resilience 0.13's fallback → retry → circuit
//! breaker → time limiter (resilience4j's order), over the same ready
//! in-process upstream, success path, for a unary answer and a 4-event SSE
//! answer, body read to the end in every case. Heap allocations per call are
//! counted by an instrumented global allocator and printed first.
//!
//! `cargo bench -p seawall --bench peers` (`-p seawall`: without it the
//! CLI's default features turn `metrics` on for the bench too)
//!
//! On a busy (or slow) machine, count instructions instead of timing: with
//! `PEERS_BENCH_ONLY=<group>/<case>` (e.g. `peers_stream/tower_resilience_4`)
//! the bench runs only that case's 10 010 counted calls and skips
//! criterion, so `valgrind --tool=callgrind --toggle-collect='peers::call*'
//! target/release/deps/peers-<hash>` gives the instructions of those calls
//! (divide by 10 010), as the stack bench does.
//!
//! The cases, per answer kind:
//! - `bare`: the upstream alone, the floor.
//! - `seawall_stack`: `Stack::interactive().build(..)`: total deadline, retry
//!   ladder with budget, breaker, per-attempt deadline, stream guard,
//!   classification, decompression.
//! - `seawall_stack+fallback`: the same with a fallback route that the
//!   successful primary never needs (`Stack::build_with_fallback`).
//! - `tower_resilience_3`: retry (3 attempts, exponential backoff) → circuit
//!   breaker (defaults) → time limiter (20 s).
//! - `tower_resilience_4`: the same under a fallback layer to a backup
//!   service (the bare upstream) that is never called.
//!
//! The two sides do not do the same work: seawall reads the status and the
//! body (classification, the stream guard watching every SSE frame, the
//! decompression check), tower-resilience sees only `Ok`/`Err` of the
//! response future and never the body. What is compared is the cost of
//! what a user gets from each, on the path every healthy call takes.

use std::alloc::System;
use std::time::Duration;

use bytes::Bytes;
use criterion::Criterion;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use seawall::core::RouteId;
use seawall::fallback::FallbackLayer;
use seawall::stack::Stack;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::{Layer, Service, ServiceBuilder, ServiceExt};
use tower_resilience::circuitbreaker::CircuitBreakerLayer;
use tower_resilience::retry::RetryLayer;
use tower_resilience::timelimiter::TimeLimiterLayer;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

mod common;

use common::{CALLS, STREAM, UNARY, request, upstream};

type Req = Request<Full<Bytes>>;
type Res = Response<Full<Bytes>>;

/// One call, body read to the end.
async fn call<S, B>(svc: S) -> Bytes
where
    S: Service<Req, Response = Response<B>>,
    S::Error: std::fmt::Debug,
    B: http_body::Body,
    B::Error: std::fmt::Debug,
{
    let response = svc.oneshot(request()).await.unwrap();
    response.into_body().collect().await.unwrap().to_bytes()
}

struct Bench {
    runtime: tokio::runtime::Runtime,
    criterion: Criterion,
    /// `PEERS_BENCH_ONLY`: the one case to count, without criterion.
    only: Option<String>,
}

impl Bench {
    /// Counts the allocations per call of `svc`, prints them, and times it
    /// in criterion group `group`.
    fn case<S, B>(&mut self, group: &str, name: &str, svc: S) -> f64
    where
        S: Service<Req, Response = Response<B>> + Clone,
        S::Error: std::fmt::Debug,
        B: http_body::Body,
        B::Error: std::fmt::Debug,
    {
        if self
            .only
            .as_ref()
            .is_some_and(|only| *only != format!("{group}/{name}"))
        {
            return 0.0;
        }
        let allocations = self.runtime.block_on(async {
            for _ in 0..10 {
                call(svc.clone()).await;
            }
            let region = Region::new(GLOBAL);
            for _ in 0..CALLS {
                std::hint::black_box(call(svc.clone()).await);
            }
            region.change().allocations as f64 / CALLS as f64
        });
        println!("{group}/{name}: allocations per call {allocations:.2}");
        if self.only.is_some() {
            return allocations;
        }
        let runtime = &self.runtime;
        self.criterion
            .benchmark_group(group)
            .bench_function(name, |b| b.to_async(runtime).iter(|| call(svc.clone())));
        allocations
    }
}

/// tower-resilience: retry → circuit breaker → time limiter over `upstream`
/// (a macro: its concrete type, with a `Send` future, is what the fallback
/// layer needs, and it is too long to spell).
macro_rules! tower_resilience_3 {
    ($upstream:expr) => {{
        let limited = TimeLimiterLayer::builder()
            .timeout_duration(Duration::from_secs(20))
            .build()
            .layer($upstream);
        let broken = CircuitBreakerLayer::builder()
            .build()
            .unwrap()
            .layer(limited);
        RetryLayer::<Req, Res, _>::builder()
            .max_attempts(3)
            .exponential_backoff(Duration::from_millis(500))
            .build()
            .layer(broken)
    }};
}

fn main() {
    let mut bench = Bench {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        criterion: Criterion::default().configure_from_args(),
        only: std::env::var("PEERS_BENCH_ONLY").ok(),
    };
    let stack = Stack::interactive();
    let classify = ClassifyLayer::openai();

    let cases = [
        ("stream", "text/event-stream", STREAM),
        ("unary", "application/json", UNARY),
    ];
    let mut summary = Vec::new();
    for (name, content_type, body) in cases {
        let upstream = upstream(content_type, body);
        let group = format!("peers_{name}");
        let bare = bench.case(&group, "bare", upstream);
        let seawall = bench.case(&group, "seawall_stack", stack.build(&classify, upstream));
        let backup = FallbackLayer::new(stack.attempt(&classify, upstream))
            .route(RouteId::new("backup.llm.example"));
        let seawall_fallback = bench.case(
            &group,
            "seawall_stack+fallback",
            stack.build_with_fallback(&classify, upstream, backup),
        );
        let resilience_3 = bench.case(&group, "tower_resilience_3", tower_resilience_3!(upstream));
        let resilience_4 = bench.case(
            &group,
            "tower_resilience_4",
            ServiceBuilder::new()
                .layer(
                    tower_resilience::fallback::FallbackLayer::<Req, Res, _>::tower_service(
                        upstream,
                    ),
                )
                .service(tower_resilience_3!(upstream)),
        );
        summary.push(format!(
            "{name}: allocations per call: bare {bare:.2}, seawall stack {seawall:.2}, \
             seawall stack+fallback {seawall_fallback:.2}, tower-resilience 3 layers \
             {resilience_3:.2}, 4 layers {resilience_4:.2}"
        ));
    }
    if bench.only.is_none() {
        for line in summary {
            println!("{line}");
        }
    }
    bench.criterion.final_summary();
}
