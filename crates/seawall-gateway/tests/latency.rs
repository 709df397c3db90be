//! The smoke figure: latency the gateway adds to a unary call, at a paced,
//! unsaturated rate. Ignored by default; run it in release:
//!
//! ```sh
//! cargo test -p seawall-gateway --release --test latency -- --ignored --nocapture
//! ```

mod common;

use std::time::{Duration, Instant};

use common::*;
use seawall_chaos::ChaosServer;
use seawall_gateway::Wire;

const REQUESTS: usize = 200;
const WARMUP: usize = 20;
/// One request every 10 ms on each path: 100 requests a second at most.
const PACE: Duration = Duration::from_millis(10);

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --release -- --ignored --nocapture"]
async fn added_latency_of_a_unary_call() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = client();
    let direct_url = chaos_url(&chaos, Wire::OpenAi);
    let gateway_url = gateway.url("/v1/chat/completions");
    let mut direct = Vec::with_capacity(REQUESTS);
    let mut routed = Vec::with_capacity(REQUESTS);
    let headers = [("x-chaos-fault", "ok;tokens=16")];
    // Interleaved, so both paths see the same machine.
    for i in 0..WARMUP + REQUESTS {
        let started = Instant::now();
        let (status, _, _) =
            send(&client, common::direct(&direct_url, OPENAI_UNARY, &headers)).await;
        let direct_took = started.elapsed();
        assert_eq!(status, 200);
        tokio::time::sleep(PACE).await;
        let started = Instant::now();
        let (status, _, _) = send(&client, post(&gateway_url, OPENAI_UNARY, &headers)).await;
        let routed_took = started.elapsed();
        assert_eq!(status, 200);
        tokio::time::sleep(PACE).await;
        if i >= WARMUP {
            direct.push(direct_took);
            routed.push(routed_took);
        }
    }
    direct.sort();
    routed.sort();
    let (d50, d99) = (percentile(&direct, 0.5), percentile(&direct, 0.99));
    let (g50, g99) = (percentile(&routed, 0.5), percentile(&routed, 0.99));
    println!(
        "{REQUESTS} paced unary requests (16 tokens), each path: \
         direct p50 {:.0} µs p99 {:.0} µs; via gateway p50 {:.0} µs p99 {:.0} µs; \
         added p50 {:.0} µs p99 {:.0} µs",
        micros(d50),
        micros(d99),
        micros(g50),
        micros(g99),
        micros(g50) - micros(d50),
        micros(g99) - micros(d99),
    );
    assert_eq!(gateway.gateway.stats().served, (WARMUP + REQUESTS) as u64);
}
