//! Cost of one answer over loopback: a 64-token stream against the same answer
//! unary, on one kept-alive connection; and the cost of parsing a fault header.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use seawall_chaos::{ChaosServer, Fault};

const STREAM: &str = r#"{"model":"gpt-x","stream":true,"messages":[]}"#;
const UNARY: &str = r#"{"model":"gpt-x","messages":[]}"#;

async fn round_trip(sender: &mut SendRequest<Full<Bytes>>, body: &'static str) -> usize {
    let req = http::Request::post("/v1/chat/completions")
        .header("host", "bench")
        .header("x-chaos-fault", "ok;tokens=64")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap();
    sender.ready().await.unwrap();
    let res = sender.send_request(req).await.unwrap();
    res.into_body().collect().await.unwrap().to_bytes().len()
}

fn loopback(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (chaos, sender) = rt.block_on(async {
        let chaos = ChaosServer::builder().start().await.unwrap();
        let tcp = tokio::net::TcpStream::connect(chaos.addr()).await.unwrap();
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .unwrap();
        tokio::spawn(conn);
        (chaos, sender)
    });
    let sender = tokio::sync::Mutex::new(sender);
    let mut group = c.benchmark_group("loopback_64_tokens");
    group.bench_function("unary", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(round_trip(&mut *sender.lock().await, UNARY).await) })
    });
    group.bench_function("stream", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(round_trip(&mut *sender.lock().await, STREAM).await) })
    });
    group.finish();
    drop(chaos);
}

fn parse(c: &mut Criterion) {
    c.bench_function("fault_parse/stall_after", |b| {
        b.iter(|| black_box("stall_after;tokens=2;ms=300;pings=1;ping_ms=50").parse::<Fault>())
    });
}

criterion_group!(benches, loopback, parse);
criterion_main!(benches);
