//! `seawall gateway` as users start it: the binary, a route to a chaos
//! server, a client over loopback.

use std::process::Stdio;
use std::time::Duration;

use seawall_chaos::ChaosServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends a raw HTTP/1.1 request and returns the whole answer as text.
async fn http(addr: &str, request: String) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn the_subcommand_serves_through_the_stack() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_seawall"))
        .args([
            "gateway",
            "--listen",
            &addr,
            "--route",
            &format!("main=openai@{}", chaos.base_url()),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    // Up within a few seconds.
    let mut up = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(&addr).await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up, "the gateway listens on {addr}");

    let body = r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#;
    let request = |fault: &str| {
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             x-chaos-fault: {fault}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let ok = http(&addr, request("ok;tokens=3")).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert!(ok.contains("w1 w2 w3"), "{ok}");
    assert!(
        ok.to_ascii_lowercase().contains("x-seawall-attempts: 1"),
        "{ok}"
    );

    let walled = http(
        &addr,
        request("status;code=429;retry_after=48489;kind=insufficient_quota"),
    )
    .await;
    let lower = walled.to_ascii_lowercase();
    assert!(walled.starts_with("HTTP/1.1 429"), "{walled}");
    assert!(
        lower.contains("x-seawall-code: quota_exhausted"),
        "{walled}"
    );
    assert!(lower.contains("x-should-retry: false"), "{walled}");

    let metrics = http(
        &addr,
        format!("GET /metrics HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"),
    )
    .await;
    assert!(metrics.contains("seawall_attempts_total"), "{metrics}");
    child.kill().await.unwrap();
}
