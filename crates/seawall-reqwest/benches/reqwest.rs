//! The seawall stack over `ReqwestService` against a bare
//! `reqwest::Client::execute`, both to a seawall-chaos server on loopback,
//! for a unary answer and a 64-token stream, body read to the end in every
//! case. The ratio of the two is what seawall costs on a real HTTP path.
//!
//! `cargo bench -p seawall-reqwest --bench reqwest`
//!
//! Loopback and the chaos server dominate both sides; the difference is
//! the layers (classification, the stream guard's scanner, the ladder's
//! bookkeeping, the body wrappers).
//!
//! One run (2 cores, other builds running; medians):
//!
//! ```text
//! case       bare reqwest   seawall stack   ratio
//! unary         103.0 µs        107.1 µs    1.04
//! stream_64     0.998 ms        1.328 ms    1.33
//! ```
//!
//! The stream pays per frame: 64 token frames each pass the classifier's,
//! the guard's (with its SSE scan) and the deadline's body wrappers, about
//! 5 µs a frame here, where bare reqwest collects the body in one call.

use std::time::Duration;

use bytes::Bytes;
use criterion::Criterion;
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use seawall::stack::Stack;
use seawall_chaos::{ChaosServer, FAULT_HEADER};
use seawall_reqwest::ReqwestService;
use tower::ServiceExt;

fn body(stream: bool) -> Bytes {
    Bytes::from(
        serde_json::json!({
            "model": "gpt-x",
            "stream": stream,
            "messages": [{"role": "user", "content": "hi"}],
        })
        .to_string(),
    )
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let chaos = runtime
        .block_on(ChaosServer::builder().start())
        .expect("chaos starts");
    let url = format!("{}/v1/chat/completions", chaos.base_url());
    let client = seawall_reqwest::client_builder()
        .no_proxy()
        .build()
        .expect("a client");
    let stack = Stack::interactive().build(
        &ClassifyLayer::openai(),
        ReqwestService::new(client.clone()),
    );

    let mut criterion = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    for (name, stream, fault) in [
        ("unary", false, "ok;tokens=8"),
        ("stream_64", true, "ok;tokens=64"),
    ] {
        let mut group = criterion.benchmark_group(name);
        group.bench_function("bare_reqwest", |b| {
            b.to_async(&runtime).iter(|| async {
                let response = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header(FAULT_HEADER, fault)
                    .body(body(stream))
                    .send()
                    .await
                    .expect("an answer");
                let bytes = response.bytes().await.expect("a whole body");
                assert!(!bytes.is_empty());
            });
        });
        group.bench_function("seawall_stack", |b| {
            b.to_async(&runtime).iter(|| async {
                let request = http::Request::post(&url)
                    .header("content-type", "application/json")
                    .header(FAULT_HEADER, fault)
                    .body(Full::new(body(stream)))
                    .expect("a request");
                let response = stack.clone().oneshot(request).await.expect("an answer");
                let bytes = response.into_body().collect().await.expect("a whole body");
                assert!(!bytes.to_bytes().is_empty());
            });
        });
        group.finish();
    }
    criterion.final_summary();
    runtime.block_on(chaos.shutdown());
}
