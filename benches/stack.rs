//! The success path of the whole assembled stack (Deadline → Fallback-less
//! ladder → Breaker → per-attempt Deadline → StreamGuard → Classify) over a
//! ready upstream, against the bare upstream and against tower's
//! `timeout` + `retry` in the same run, for a streamed and a unary answer,
//! body read to the end in every case. Heap allocations per call are
//! counted by an instrumented global allocator and printed first.
//!
//! `cargo bench --bench stack`

use std::alloc::System;
use std::convert::Infallible;
use std::future::{Ready, ready};
use std::time::Duration;

use bytes::Bytes;
use criterion::Criterion;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use seawall::core::replay::clone_head;
use seawall::stack::Stack;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::retry::Policy;
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const REQUEST: &[u8] =
    br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

const STREAM: &str = concat!(
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
);

const UNARY: &str = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}]}"#;

fn request() -> Request<Full<Bytes>> {
    Request::post("https://api.llm.example/v1/chat/completions")
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-bench")
        .body(Full::new(Bytes::from_static(REQUEST)))
        .unwrap()
}

/// A ready upstream answering `body` with `content_type`.
fn upstream<B>(
    content_type: &'static str,
    body: &'static str,
) -> impl Service<Request<B>, Response = Response<Full<Bytes>>, Error = Infallible, Future: Send> + Clone
{
    service_fn(move |_: Request<B>| {
        let response = Response::builder()
            .header("content-type", content_type)
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap();
        ready(Ok::<_, Infallible>(response))
    })
}

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

fn allocations_per_call<S, B>(runtime: &tokio::runtime::Runtime, svc: S) -> f64
where
    S: Service<Request<Full<Bytes>>, Response = Response<B>> + Clone,
    S::Error: std::fmt::Debug,
    B: http_body::Body,
    B::Error: std::fmt::Debug,
{
    const CALLS: usize = 10_000;
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

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
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
        let bare = allocations_per_call(&runtime, upstream(content_type, body));
        let seawall = allocations_per_call(
            &runtime,
            stack.build(&classify, upstream(content_type, body)),
        );
        let tower = allocations_per_call(&runtime, tower_stack(content_type, body));
        println!(
            "{name}: allocations per call: bare {bare:.2}, seawall stack {seawall:.2} (+{:.2}), tower timeout+retry {tower:.2} (+{:.2})",
            seawall - bare,
            tower - bare
        );
    }

    let mut criterion = Criterion::default().configure_from_args();
    for (name, content_type, body) in cases {
        let mut group = criterion.benchmark_group(format!("stack_{name}"));
        group.bench_function("seawall_stack", |b| {
            let svc = stack.build(&classify, upstream(content_type, body));
            b.to_async(&runtime).iter(|| call(svc.clone()));
        });
        group.bench_function("tower_timeout_retry", |b| {
            let svc = tower_stack(content_type, body);
            b.to_async(&runtime).iter(|| call(svc.clone()));
        });
        group.bench_function("bare_upstream", |b| {
            let svc = upstream(content_type, body);
            b.to_async(&runtime).iter(|| call(svc.clone()));
        });
        group.finish();
    }
    criterion.final_summary();
}
