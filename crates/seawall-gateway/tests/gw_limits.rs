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

/// A chat request whose body comes as `parts`, each after its wait, to a
/// gateway in front of a fresh chaos server with the body cap `cap`: the
/// answer's status, its `x-should-retry`, when it came, and how many
/// calls went upstream.
async fn upload(
    parts: Vec<(Duration, bytes::Bytes)>,
    cap: Option<usize>,
) -> (http::StatusCode, String, Duration, usize) {
    use http_body_util::{BodyExt, StreamBody};
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
    if let Some(cap) = cap {
        config.max_body_bytes = cap;
    }
    let gateway = Running::start(config).await;
    let frames = futures_util::StreamExt::then(
        futures_util::stream::iter(parts),
        |(wait, part)| async move {
            tokio::time::sleep(wait).await;
            Ok::<_, BoxError>(http_body::Frame::data(part))
        },
    );
    let request = http::Request::post(gateway.url("/v1/chat/completions"))
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(BodyExt::boxed(StreamBody::new(frames)))
        .unwrap();
    let started = tokio::time::Instant::now();
    let response = tokio::time::timeout(Duration::from_secs(3600), client().request(request))
        .await
        .expect("an answer on the paused clock")
        .expect("a response");
    let elapsed = started.elapsed();
    let retry = response
        .headers()
        .get("x-should-retry")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let status = response.status();
    let _ = response.into_body().collect().await;
    (status, retry, elapsed, chaos.journal().len())
}

/// `{"model":"gpt-x",...,"pad":"`, then `pads` parts of `size` spaces each
/// after `every`, then the closing `"}` after `every`.
fn padded(pads: usize, size: usize, every: Duration) -> Vec<(Duration, bytes::Bytes)> {
    let head = r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}],"pad":""#;
    let mut parts = vec![(Duration::ZERO, bytes::Bytes::from_static(head.as_bytes()))];
    let pad = bytes::Bytes::from(vec![b' '; size]);
    parts.extend((0..pads).map(|_| (every, pad.clone())));
    parts.push((every, bytes::Bytes::from_static(b"\"}")));
    parts
}

/// The body's read timeout is a gap between two reads, not a bound on the
/// whole upload: 100 KiB every 5 s for 90 s (a slow link, under the cap)
/// goes upstream. The 60 s bounded the whole upload: a large body on a
/// slow link got a 408 it was told not to retry. On the paused clock.
#[tokio::test(start_paused = true)]
async fn a_slow_upload_that_keeps_coming_goes_upstream() {
    let (status, _, elapsed, calls) =
        upload(padded(17, 100 << 10, Duration::from_secs(5)), None).await;
    assert_eq!(status, 200);
    assert!(elapsed >= Duration::from_secs(90), "{elapsed:?}");
    assert_eq!(calls, 1);
}

/// A body that stops coming for more than 60 s is refused with a 408 not
/// to be retried, a minute after its last bytes; nothing goes upstream.
/// On the paused clock.
#[tokio::test(start_paused = true)]
async fn an_upload_that_stops_gets_408() {
    let mut parts = padded(3, 1024, Duration::from_secs(5));
    parts.last_mut().unwrap().0 = Duration::from_secs(120);
    let (status, retry, elapsed, calls) = upload(parts, None).await;
    assert_eq!(status, 408);
    assert_eq!(retry, "false");
    assert!(
        elapsed >= Duration::from_secs(75) && elapsed < Duration::from_secs(80),
        "{elapsed:?}"
    );
    assert_eq!(calls, 0);
}

/// A trickle that never stops long enough is still bounded on the whole:
/// a minute plus the cap's worth at 8 KiB/s (here 64 KiB: 68 s), so a
/// byte every 59 s cannot hold a connection for as long as the cap lasts.
/// On the paused clock.
#[tokio::test(start_paused = true)]
async fn a_trickle_is_bounded_on_the_whole() {
    let (status, retry, elapsed, calls) =
        upload(padded(10, 1, Duration::from_secs(59)), Some(64 << 10)).await;
    assert_eq!(status, 408);
    assert_eq!(retry, "false");
    assert!(
        elapsed >= Duration::from_secs(68) && elapsed < Duration::from_secs(70),
        "{elapsed:?}"
    );
    assert_eq!(calls, 0);
}

/// Connections that send nothing give up their slots a few seconds after
/// they opened: with two slots held by two such connections, a third
/// client's request is answered at 5 s, not at hyper's 30 s bound for a
/// request head, and the silent ones are closed. On the paused clock.
#[tokio::test(start_paused = true)]
async fn silent_connections_give_up_their_slots() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
    config.max_connections = 2;
    let gateway = Running::start(config).await;
    let connect = || tokio::net::TcpStream::connect(gateway.addr);
    let mut silent = [connect().await.unwrap(), connect().await.unwrap()];
    let started = tokio::time::Instant::now();
    let line = health(gateway.addr, Duration::from_secs(60)).await;
    let elapsed = started.elapsed();
    assert_eq!(line.as_deref(), Some("HTTP/1.1 200 OK"));
    assert!(
        elapsed >= Duration::from_secs(4) && elapsed < Duration::from_secs(6),
        "{elapsed:?}"
    );
    for stream in &mut silent {
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(1), stream.read(&mut byte))
            .await
            .expect("closed");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }
}

/// A client that is sending its first request's head is not silent: one
/// whose head comes in two parts 6 s apart (past the first request's 5 s
/// bound, within hyper's 30 s for a head) is answered, not closed. On the
/// paused clock.
#[tokio::test(start_paused = true)]
async fn a_head_that_comes_slowly_is_not_silence() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let mut stream = tokio::net::TcpStream::connect(gateway.addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(6)).await;
    // Written whether or not the gateway closed its end; a closed one
    // shows as a read of 0 bytes (or a reset) below.
    let _ = stream.write_all(b"connection: close\r\n\r\n").await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("answered within 10 s");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 200 OK"),
        "{read:?}, {} bytes: {answer:?}",
        answer.len()
    );
}

/// A connection that asked once is not bound so: a request whose body
/// and answer take longer than the first request's bound is served.
/// On the paused clock.
#[tokio::test(start_paused = true)]
async fn a_connection_that_asked_runs_past_the_first_requests_bound() {
    let (status, _, elapsed, calls) = upload(padded(2, 10, Duration::from_secs(4)), None).await;
    assert_eq!(status, 200);
    assert!(elapsed >= Duration::from_secs(12), "{elapsed:?}");
    assert_eq!(calls, 1);
}
