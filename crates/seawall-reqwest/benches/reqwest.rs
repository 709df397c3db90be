//! The seawall stack over `ReqwestService` against a bare
//! `reqwest::Client::execute`, both to a seawall-chaos server on loopback,
//! for a unary answer and a 64-token stream, body read to the end in every
//! case. The ratio of the two is what seawall costs on a real HTTP path.
//!
//! `cargo bench -p seawall-reqwest --bench reqwest -- --warm-up-time 1 --measurement-time 4`
//!
//! Each call runs in a task on the runtime's workers, as a server's
//! handler or an agent's task does. Driven from criterion's own thread
//! (`block_on`) instead, every frame crosses threads twice: hyper's
//! connection task on a worker hands it to the caller on another thread,
//! and the cost measured is mostly those wake-ups (about 0.8 ms for the
//! bare 64-token stream, against about 0.17 ms here), which a caller on
//! the runtime does not pay.
//!
//! Two groups answer at once (`unary`, `stream_64`): the worst case for
//! the ratio, where only the two processes' work takes time. Two more
//! (`unary_paced`, `stream_64_paced`) have the server wait 1 ms between
//! tokens, ten times faster than a model generates, to show how much of a
//! real call seawall's work is.
//!
//! Loopback and the chaos server dominate both sides; the difference is
//! the layers (classification, the stream guard's scanner, the ladder's
//! bookkeeping, the body wrappers). The stream pays per frame: each of the
//! 64 token frames passes the classifier's, the guard's (with its SSE scan
//! and event decode) and the deadlines' and breaker's body wrappers, where
//! bare reqwest appends the frame to a buffer. Measured figures and their
//! ratios: the README, "Over loopback: seawall-reqwest beside reqwest".

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

/// Runs `call` in a task on the runtime's workers; its panic is the
/// bench's.
async fn on_a_worker(call: impl Future<Output = ()> + Send + 'static) {
    tokio::spawn(call).await.expect("the call runs to its end");
}

/// One call straight through reqwest, body read whole.
async fn bare(client: reqwest::Client, url: String, stream: bool, fault: &'static str) {
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
}

/// One call through the seawall stack over `ReqwestService`, body read to
/// the end.
async fn guarded<S, B>(stack: S, url: String, stream: bool, fault: &'static str)
where
    S: tower::Service<http::Request<Full<Bytes>>, Response = http::Response<B>>,
    S::Error: std::fmt::Debug,
    B: http_body::Body,
    B::Error: std::fmt::Debug,
{
    let request = http::Request::post(&url)
        .header("content-type", "application/json")
        .header(FAULT_HEADER, fault)
        .body(Full::new(body(stream)))
        .expect("a request");
    let response = stack.oneshot(request).await.expect("an answer");
    let bytes = response.into_body().collect().await.expect("a whole body");
    assert!(!bytes.to_bytes().is_empty());
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
    // What a careful caller without seawall has: reqwest's own timeouts,
    // the whole call's and the gap between reads.
    let timed = seawall_reqwest::client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .read_timeout(Duration::from_secs(30))
        .build()
        .expect("a client");
    let stack = Stack::interactive().build(
        &ClassifyLayer::openai(),
        ReqwestService::new(client.clone()),
    );
    // The first two answer at once: the worst case for the ratio, where
    // nothing but the two processes' work takes time. The paced two wait
    // 1 ms between tokens (the unary answer as long as its stream would),
    // still ten times faster than a provider generates, to show how far
    // the network and the model dominate a real call.
    let cases = [
        ("unary", false, "ok;tokens=8"),
        ("stream_64", true, "ok;tokens=64"),
        ("unary_paced", false, "ok;tokens=8;delay_ms=1"),
        ("stream_64_paced", true, "ok;tokens=64;delay_ms=1"),
    ];

    // `REQWEST_BENCH_ONLY=<group>/<case>`: that case's calls only, a fixed
    // number of them (`REQWEST_BENCH_CALLS`, default 2000), no criterion,
    // for `perf stat` to count per call.
    if let Ok(only) = std::env::var("REQWEST_BENCH_ONLY") {
        let calls: usize = std::env::var("REQWEST_BENCH_CALLS")
            .ok()
            .and_then(|calls| calls.parse().ok())
            .unwrap_or(2000);
        let (group, case) = only.split_once('/').expect("<group>/<case>");
        let (_, stream, fault) = *cases
            .iter()
            .find(|(name, ..)| *name == group)
            .expect("a group of this bench");
        runtime.block_on(async {
            for _ in 0..calls {
                let url = url.clone();
                match case {
                    "bare_reqwest" => on_a_worker(bare(client.clone(), url, stream, fault)).await,
                    "bare_reqwest_timeouts" => {
                        on_a_worker(bare(timed.clone(), url, stream, fault)).await
                    }
                    "seawall_stack" => {
                        on_a_worker(guarded(stack.clone(), url, stream, fault)).await
                    }
                    other => panic!("no case {other}"),
                }
            }
        });
        runtime.block_on(chaos.shutdown());
        return;
    }

    let mut criterion = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    for (name, stream, fault) in cases {
        let mut group = criterion.benchmark_group(name);
        if name.ends_with("_paced") {
            // Each call takes milliseconds: fewer samples fit the time.
            group.sample_size(20);
        }
        for (label, client) in [("bare_reqwest", &client), ("bare_reqwest_timeouts", &timed)] {
            group.bench_function(label, |b| {
                b.to_async(&runtime)
                    .iter(|| on_a_worker(bare(client.clone(), url.clone(), stream, fault)));
            });
        }
        group.bench_function("seawall_stack", |b| {
            b.to_async(&runtime)
                .iter(|| on_a_worker(guarded(stack.clone(), url.clone(), stream, fault)));
        });
        group.finish();
    }
    criterion.final_summary();
    runtime.block_on(chaos.shutdown());
}
