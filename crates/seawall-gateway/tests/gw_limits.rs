//! The gateway's bounds on its clients: connection slots, the body's
//! read timeout, the token's header. Over loopback, or on the paused
//! clock where no socket is needed.

mod common;

use std::time::Duration;

use common::*;
use seawall_chaos::ChaosServer;
use seawall_gateway::{Gateway, Wire};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `GET /healthz` with `Connection: close` to `addr`: the answer's first
/// line, or `None` if none came within `limit`.
async fn health(addr: std::net::SocketAddr, limit: Duration) -> Option<String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\n\r\n")
            .await
            .ok()?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.ok()?;
        let answer = String::from_utf8_lossy(&answer).into_owned();
        answer.lines().next().map(str::to_owned)
    };
    tokio::time::timeout(limit, exchange).await.ok().flatten()
}

/// With a thread per listener, a thread waiting for a connection holds no
/// slot: with one slot and two listeners, two connections in a row to the
/// first are both served. The thread of the idle second listener took the
/// slot freed by the first connection and sat in `accept` on it, so the
/// second client waited with no connection open.
#[tokio::test]
async fn a_thread_waiting_for_a_connection_holds_no_slot() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
    config.max_connections = 1;
    let gateway = Gateway::with_env(config, env).unwrap();
    let listeners: Vec<_> = (0..2)
        .map(|_| {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.set_nonblocking(true).unwrap();
            listener
        })
        .collect();
    let addr = listeners[0].local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(gateway.serve_per_thread(listeners, async move {
        let _ = stopped.await;
    }));
    for n in 1..=3 {
        let line = health(addr, Duration::from_secs(2)).await;
        assert_eq!(
            line.as_deref(),
            Some("HTTP/1.1 200 OK"),
            "connection {n} to the first listener"
        );
    }
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("every thread stops")
        .unwrap()
        .unwrap();
}
