//! The success path of the whole assembled stack (Deadline → Fallback-less
//! ladder → Breaker → per-attempt Deadline → StreamGuard → Classify) over a
//! ready upstream, against the bare upstream and against tower's
//! `timeout` + `retry` in the same run, for a streamed and a unary answer,
//! body read to the end in every case. Heap allocations per call are
//! counted by an instrumented global allocator and printed first.
//!
//! The `layers_*` groups build the same stack one layer at a time over the
//! same upstream (`+classify`, `+guard`, `+attempt_deadline`, `+breaker`,
//! `+retry`, `+total_deadline`, which is the whole stack), so each layer's
//! cost is the difference to the line before it; `+fallback` is the whole
//! stack with a fallback route that the successful primary never needs.
//!
//! `cargo bench -p seawall --bench stack` (`-p seawall`: without it the
//! CLI's default features turn `metrics` on for the bench too)
//!
//! On a busy machine, count instructions instead of timing: with
//! `STACK_BENCH_ONLY=<group>/<case>` (e.g. `layers_stream/+guard`) the bench
//! runs only that case's 10 010 counted calls and skips criterion, so
//! `valgrind --tool=callgrind --toggle-collect='stack::call*'
//! target/release/deps/stack-<hash>` gives the instructions of those calls
//! (divide by 10 010), and `--tool=dhat` their allocation sites.

use std::alloc::System;
use std::future::{Ready, ready};
use std::time::Duration;

use bytes::Bytes;
use criterion::Criterion;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use seawall::breaker::BreakerLayer;
use seawall::classify::ClassifyLayer;
use seawall::core::RouteId;
use seawall::core::recording::clone_head;
use seawall::deadline::DeadlineLayer;
use seawall::fallback::FallbackLayer;
use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
use seawall::stack::Stack;
use seawall::stream::StreamGuardLayer;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::retry::Policy;
use tower::{Layer, Service, ServiceBuilder, ServiceExt};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

mod common;

use common::{CALLS, STREAM, UNARY, request, upstream};

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

/// One call, body read to the end.
async fn call<S, B>(svc: S) -> Bytes
where
    S: Service<Request<Full<Bytes>>, Response = Response<B>>,
    S::Error: std::fmt::Debug,
    B: http_body::Body,
    B::Error: std::fmt::Debug,
{
    let response = svc.oneshot(request()).await.unwrap();
    response.into_body().collect().await.unwrap().to_bytes()
}

/// The size of `svc`'s response future, in bytes: each layer's `call`
/// moves the future of the layers below into its own, so this is what
/// the stack copies per layer (the call is made and read to the end).
fn future_size<S, B>(runtime: &tokio::runtime::Runtime, mut svc: S) -> usize
where
    S: Service<Request<Full<Bytes>>, Response = Response<B>>,
    S::Error: std::fmt::Debug,
    B: http_body::Body,
    B::Error: std::fmt::Debug,
{
    runtime.block_on(async {
        let ready = svc.ready().await.unwrap();
        let future = ready.call(request());
        let size = std::mem::size_of_val(&future);
        let response = future.await.unwrap();
        response.into_body().collect().await.unwrap();
        size
    })
}

fn allocations_per_call<S, B>(runtime: &tokio::runtime::Runtime, svc: S) -> f64
where
    S: Service<Request<Full<Bytes>>, Response = Response<B>> + Clone,
    S::Error: std::fmt::Debug,
    B: http_body::Body,
    B::Error: std::fmt::Debug,
{
    runtime.block_on(async {
        for _ in 0..10 {
            call(svc.clone()).await;
        }
        let region = Region::new(GLOBAL);
        for _ in 0..CALLS {
            std::hint::black_box(call(svc.clone()).await);
        }
        region.change().allocations as f64 / CALLS as f64
    })
}

/// Runs the cases: allocation counts first, then criterion timings; or,
/// with `STACK_BENCH_ONLY`, only the counted calls of one case.
struct Bench {
    runtime: tokio::runtime::Runtime,
    criterion: Criterion,
    only: Option<String>,
    /// Allocations per call of the previous case in the group, for the
    /// difference a layer makes.
    previous: Option<f64>,
}

impl Bench {
    /// Counts allocations of `svc` (printed against the previous case of
    /// the group when `layered`) and times it in criterion group `group`.
    fn case<S, B>(&mut self, group: &str, name: &str, layered: bool, svc: S) -> f64
    where
        S: Service<Request<Full<Bytes>>, Response = Response<B>> + Clone,
        S::Error: std::fmt::Debug,
        B: http_body::Body,
        B::Error: std::fmt::Debug,
    {
        let id = format!("{group}/{name}");
        if self.only.as_ref().is_some_and(|only| *only != id) {
            return 0.0;
        }
        let size = future_size(&self.runtime, svc.clone());
        let allocations = allocations_per_call(&self.runtime, svc.clone());
        match self.previous.filter(|_| layered) {
            Some(previous) => println!(
                "{id}: allocations per call {allocations:.2} ({:+.2}), future {size} bytes",
                allocations - previous
            ),
            None => println!("{id}: allocations per call {allocations:.2}, future {size} bytes"),
        }
        self.previous = Some(allocations);
        if self.only.is_none() {
            let runtime = &self.runtime;
            self.criterion
                .benchmark_group(group)
                .bench_function(name, |b| b.to_async(runtime).iter(|| call(svc.clone())));
        }
        allocations
    }
}

fn main() {
    let mut bench = Bench {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        criterion: Criterion::default().configure_from_args(),
        only: std::env::var("STACK_BENCH_ONLY").ok(),
        previous: None,
    };
    let stack = Stack::interactive();
    let classify = ClassifyLayer::openai();
    let tower_stack = |content_type, body| {
        ServiceBuilder::new()
            .timeout(Duration::from_secs(30))
            .retry(Attempts(3))
            .service(upstream(content_type, body))
    };

    let cases = [
        ("stream", "text/event-stream", STREAM),
        ("unary", "application/json", UNARY),
    ];
    for (name, content_type, body) in cases {
        let group = format!("stack_{name}");
        bench.previous = None;
        let seawall = bench.case(
            &group,
            "seawall_stack",
            false,
            stack.build(&classify, upstream(content_type, body)),
        );
        let tower = bench.case(
            &group,
            "tower_timeout_retry",
            false,
            tower_stack(content_type, body),
        );
        let bare = bench.case(&group, "bare_upstream", false, upstream(content_type, body));
        if bench.only.is_none() {
            println!(
                "{name}: allocations per call: bare {bare:.2}, seawall stack {seawall:.2} (+{:.2}), tower timeout+retry {tower:.2} (+{:.2})",
                seawall - bare,
                tower - bare
            );
        }
    }

    // The same stack, one layer at a time, in the order `Stack::build`
    // assembles it (innermost first).
    for (name, content_type, body) in cases {
        let group = format!("layers_{name}");
        let classified = || classify.layer(upstream(content_type, body));
        let guarded = || StreamGuardLayer::interactive().layer(classified());
        let attempt = || DeadlineLayer::per_attempt(Duration::from_secs(20)).layer(guarded());
        let breaker = || BreakerLayer::new().layer(attempt());
        let retry = || {
            RetryBudgetLayer::new(
                RetryPolicy::interactive(),
                Budget::ratio(0.2, 10, Duration::from_secs(10)),
            )
            .layer(breaker())
        };
        let total = || DeadlineLayer::new(Duration::from_secs(60)).layer(retry());
        // The whole stack with a fallback route that is never needed, as
        // `Stack::build_with_fallback` assembles it (with the ladder's
        // fallback reserve): its cost is the difference to `+total_deadline`.
        let with_fallback = || {
            let backup = FallbackLayer::new(stack.attempt(&classify, upstream(content_type, body)))
                .route(RouteId::new("backup.llm.example"));
            stack.build_with_fallback(&classify, upstream(content_type, body), backup)
        };
        bench.previous = None;
        bench.case(&group, "bare", true, upstream(content_type, body));
        bench.case(&group, "+classify", true, classified());
        bench.case(&group, "+guard", true, guarded());
        bench.case(&group, "+attempt_deadline", true, attempt());
        bench.case(&group, "+breaker", true, breaker());
        bench.case(&group, "+retry", true, retry());
        bench.case(&group, "+total_deadline", true, total());
        bench.case(&group, "+fallback", true, with_fallback());
    }

    bench.criterion.final_summary();
}
