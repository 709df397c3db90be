//! A long streamed answer through `ReqwestService` and the stream guard is
//! never collected: peak memory stays flat however long the answer.
//!
//! This file is its own test binary (one process, one test), so the
//! process's peak resident set (`VmHWM`) is this test's. The default size
//! keeps a debug run short; the figure the crate documents is from
//!
//! ```text
//! SEAWALL_MEMORY_BYTES=1073741824 cargo test --release -p seawall-reqwest --test memory -- --nocapture
//! ```

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall::stream::StreamGuardLayer;
use seawall_reqwest::ReqwestService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::{Layer, ServiceExt};

/// Peak resident memory of this process, in KiB.
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_long_stream_is_read_in_bounded_memory() {
    let total: u64 = std::env::var("SEAWALL_MEMORY_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64 << 20);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // A provider streaming `total` bytes of content events, then the end.
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = [0u8; 4096];
        let _ = socket.read(&mut request).await;
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        let event = format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}},\"finish_reason\":null}}]}}\n\n",
            "w".repeat(4000)
        );
        let mut frame = Vec::new();
        while frame.len() < 64 * 1024 {
            frame.extend_from_slice(event.as_bytes());
        }
        let mut sent = 0u64;
        while sent < total {
            if socket.write_all(&frame).await.is_err() {
                return;
            }
            sent += frame.len() as u64;
        }
        let end = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        let _ = socket.write_all(end.as_bytes()).await;
    });
    let client = seawall_reqwest::client().unwrap();
    let guarded = StreamGuardLayer::interactive()
        .idle_timeout(Duration::from_secs(30))
        .layer(ReqwestService::new(client));
    let request = http::Request::post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"m","stream":true,"messages":[]}"#,
        )))
        .unwrap();
    let before = peak_kib();
    let response = guarded.oneshot(request).await.expect("the stream starts");
    let mut body = response.into_body();
    let mut read = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.expect("a healthy stream");
        if let Some(data) = frame.data_ref() {
            read += data.len() as u64;
        }
    }
    let peak = peak_kib();
    eprintln!(
        "read {} MiB; peak resident {} MiB (before the call {} MiB)",
        read >> 20,
        peak >> 10,
        before >> 10
    );
    assert!(read >= total);
    assert!(peak < 32 * 1024, "peak {peak} KiB");
}
