//! Scripts, the journal, admin routes, the body cap, concurrency and shutdown.

mod common;

use std::time::{Duration, Instant};

use common::*;
use seawall_chaos::{ChaosServer, Fault, FaultSource, JournalEntry, MAX_MODEL_LEN, Outcome};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test]
async fn a_script_fails_twice_then_succeeds_whatever_the_header() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    chaos
        .script(
            "openai",
            vec![
                Fault::status(503),
                "status;code=429;retry_after=1".parse().unwrap(),
                Fault::ok(),
            ],
        )
        .unwrap();
    let header = [("x-chaos-fault", "ok;tokens=2")];
    let statuses = [
        post(chaos.addr(), OPENAI, &header, OPENAI_UNARY_BODY)
            .await
            .status
            .as_u16(),
        post(chaos.addr(), OPENAI, &header, OPENAI_UNARY_BODY)
            .await
            .status
            .as_u16(),
    ];
    assert_eq!(statuses, [503, 429]);
    // Another provider's route is not scripted.
    assert_eq!(
        post(chaos.addr(), ANTHROPIC, &[], ANTHROPIC_UNARY_BODY)
            .await
            .status,
        200
    );
    let third = post(chaos.addr(), OPENAI, &header, OPENAI_UNARY_BODY).await;
    assert_eq!(
        third.json()["choices"][0]["message"]["content"],
        "w1 w2 w3 w4 w5 w6 w7 w8"
    );
    // Script used up: the header rules again.
    let fourth = post(chaos.addr(), OPENAI, &header, OPENAI_UNARY_BODY).await;
    assert_eq!(fourth.json()["choices"][0]["message"]["content"], "w1 w2");

    let rows: Vec<JournalEntry> = chaos
        .journal()
        .into_iter()
        .filter(|r| r.path == OPENAI)
        .collect();
    let attempts: Vec<_> = rows
        .iter()
        .map(|r| (r.attempt, r.fault_source, r.fault.as_str()))
        .collect();
    assert_eq!(
        attempts,
        [
            (Some(1), FaultSource::Script, "status;code=503"),
            (
                Some(2),
                FaultSource::Script,
                "status;code=429;retry_after=1"
            ),
            (Some(3), FaultSource::Script, "ok"),
            (None, FaultSource::Header, "ok;tokens=2"),
        ]
    );
    assert!(chaos.script("/v2/unknown", vec![]).is_err());
}

#[tokio::test]
async fn admin_routes_script_journal_and_reset_over_http() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let script = r#"{"route":"/v1/messages","faults":["status;code=529","ok;tokens=1"]}"#;
    let reply = post(chaos.addr(), "/_chaos/script", &[], script).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json(),
        serde_json::json!({"route": "anthropic", "queued": 2})
    );

    let bad = r#"{"route":"anthropic","faults":["ok","nope"]}"#;
    let reply = post(chaos.addr(), "/_chaos/script", &[], bad).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("faults[1]: unknown fault `nope`")
    );

    assert_eq!(
        post(chaos.addr(), ANTHROPIC, &[], ANTHROPIC_UNARY_BODY)
            .await
            .status
            .as_u16(),
        529
    );
    let ok = post(
        chaos.addr(),
        ANTHROPIC,
        &[("x-chaos-request-id", "second")],
        ANTHROPIC_UNARY_BODY,
    )
    .await;
    assert_eq!(ok.json()["content"][0]["text"], "w1");

    let res = open(
        chaos.addr(),
        http::Request::get("/_chaos/journal")
            .header("host", "x")
            .body(Default::default())
            .unwrap(),
    )
    .await
    .unwrap();
    let (body, _) = drain(res.into_body()).await;
    let rows: Vec<JournalEntry> = serde_json::from_slice(&body).unwrap();
    assert_eq!(rows, chaos.journal());
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].request_id.as_deref(), Some("second"));
    assert_eq!(rows[1].attempt, Some(2));

    assert_eq!(
        post(chaos.addr(), "/_chaos/reset", &[], "").await.status,
        200
    );
    assert!(chaos.journal().is_empty());
    // Reset cleared the script too.
    assert_eq!(
        post(chaos.addr(), ANTHROPIC, &[], ANTHROPIC_UNARY_BODY)
            .await
            .json()["content"][0]["text"],
        answer(8)
    );
}

fn answer(n: u32) -> String {
    seawall_chaos::answer_text(n)
}

/// `GET /_chaos/journal` answers one page: `limit` rows after `since`, and
/// never more than `MAX_JOURNAL_PAGE`; a bad number is a 400.
#[tokio::test]
async fn the_journal_is_read_page_by_page() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    for _ in 0..3 {
        post(chaos.addr(), OPENAI, &[], OPENAI_UNARY_BODY).await;
    }
    let addr = chaos.addr();
    let get = |query: &'static str| async move {
        let res = open(
            addr,
            http::Request::get(format!("/_chaos/journal{query}"))
                .header("host", "x")
                .body(Default::default())
                .unwrap(),
        )
        .await
        .unwrap();
        let status = res.status();
        let (body, _) = drain(res.into_body()).await;
        (status, body)
    };
    let seqs = |body: &[u8]| {
        let rows: Vec<JournalEntry> = serde_json::from_slice(body).unwrap();
        rows.iter().map(|r| r.seq).collect::<Vec<_>>()
    };
    assert_eq!(seqs(&get("").await.1), [1, 2, 3]);
    assert_eq!(seqs(&get("?limit=2").await.1), [1, 2]);
    assert_eq!(seqs(&get("?since=2&limit=2").await.1), [3]);
    let huge = get("?limit=99999999").await;
    assert_eq!((huge.0.as_u16(), seqs(&huge.1).len()), (200, 3));
    assert_eq!(get("?since=x").await.0.as_u16(), 400);
    // A refused fault header is kept only in part: rows stay small.
    let bogus = format!("bogus;{}", "x".repeat(900));
    let refused = post(
        addr,
        OPENAI,
        &[("x-chaos-fault", &bogus)],
        OPENAI_UNARY_BODY,
    )
    .await;
    assert_eq!(refused.status, 400);
    let rows = chaos.journal();
    let row = rows.last().unwrap();
    assert_eq!(row.fault_source, FaultSource::Header);
    assert!(
        row.fault.starts_with("bogus;x") && row.fault.len() <= 128,
        "{}",
        row.fault.len()
    );
}

/// One `GET /_chaos/journal{query}`: its rows.
async fn journal_page(addr: std::net::SocketAddr, query: &str) -> Vec<JournalEntry> {
    let res = open(
        addr,
        http::Request::get(format!("/_chaos/journal{query}"))
            .header("host", "x")
            .body(Default::default())
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(res.status(), 200);
    let (body, _) = drain(res.into_body()).await;
    serde_json::from_slice(&body).unwrap()
}

/// A request whose body is slow takes its `seq` on arrival but is
/// journaled once its body is read, after a later request already was and
/// was paged past: paging on from the last row's `cursor` still finds it.
/// (Paging on `seq` lost it: `since` = B's seq 2 skipped A's seq 1.)
#[tokio::test]
async fn paging_on_finds_a_slow_body_journaled_after_later_requests() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let addr = chaos.addr();
    let body = OPENAI_UNARY_BODY.as_bytes();
    let (first, rest) = body.split_at(body.len() / 2);
    // A: the head and half the body, over a raw connection.
    let mut a = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {OPENAI} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         x-chaos-request-id: a\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    a.write_all(head.as_bytes()).await.unwrap();
    a.write_all(first).await.unwrap();
    a.flush().await.unwrap();
    // B, whole, until one arrives after A: a gap in the B's `seq`s (or a
    // first B at 2) is A's.
    let mut expected = 1;
    let mut after_a = false;
    for _ in 0..50 {
        let b = post(
            addr,
            OPENAI,
            &[("x-chaos-request-id", "b")],
            OPENAI_UNARY_BODY,
        )
        .await;
        assert_eq!(b.status, 200);
        let seq: u64 = b.header("x-chaos-seq").unwrap().parse().unwrap();
        if seq > expected {
            after_a = true;
            break;
        }
        expected = seq + 1;
    }
    assert!(after_a, "A's head never reached the server");
    // The first page: only B's; A is still reading its body.
    let page = journal_page(addr, "").await;
    assert!(!page.is_empty());
    assert!(page.iter().all(|r| r.request_id.as_deref() == Some("b")));
    let last = page.last().unwrap();
    let a_seq = expected;
    assert!(last.seq > a_seq, "{page:?}");
    // A's body ends; its row is journaled and ends.
    a.write_all(rest).await.unwrap();
    let row = tokio::time::timeout(Duration::from_secs(10), chaos.wait_for_request("a"))
        .await
        .expect("A's row");
    assert_eq!((row.seq, row.outcome), (a_seq, Outcome::Completed));
    // Paging on from the last row read shows A, and nothing read before.
    let next = journal_page(addr, &format!("?since={}", last.cursor)).await;
    let ids: Vec<(Option<&str>, u64)> = next
        .iter()
        .map(|r| (r.request_id.as_deref(), r.seq))
        .collect();
    assert_eq!(ids, [(Some("a"), a_seq)]);
    assert!(next[0].cursor > last.cursor);
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), a.read_to_end(&mut response))
        .await
        .expect("A's answer")
        .unwrap();
    assert!(response.starts_with(b"HTTP/1.1 200"), "{response:?}");
}

#[tokio::test]
async fn unknown_routes_and_methods() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    assert_eq!(
        post(chaos.addr(), "/v2/whatever", &[], "{}").await.status,
        404
    );
    let res = open(
        chaos.addr(),
        http::Request::get(OPENAI)
            .header("host", "x")
            .body(Default::default())
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(res.status(), 405);
    let reply = post(chaos.addr(), OPENAI, &[], "{not json").await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
}

#[tokio::test]
async fn body_over_the_cap_is_413_by_content_length() {
    let chaos = ChaosServer::builder()
        .max_body_bytes(1024)
        .start()
        .await
        .unwrap();
    let big = format!(r#"{{"model":"gpt-x","pad":"{}"}}"#, "x".repeat(4096));
    let reply = post(chaos.addr(), OPENAI, &[], &big).await;
    assert_eq!(reply.status, 413);
    assert_eq!(reply.json()["error"]["code"], "request_too_large");
    let reply = post(chaos.addr(), ANTHROPIC, &[], &big).await;
    assert_eq!(reply.json()["error"]["type"], "request_too_large");
    let row = &chaos.journal()[0];
    assert_eq!(row.outcome, Outcome::Rejected(413));
    assert_eq!(row.body_hash, None);
}

/// A model name over `MAX_MODEL_LEN` is refused with a 400 in the provider's
/// shape, in the body or in a Gemini path, and its row keeps no more of it
/// than the bound; one at the bound is served.
#[tokio::test]
async fn an_overlong_model_is_a_400_and_its_row_stays_small() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let long = "m".repeat(MAX_MODEL_LEN + 1);
    let body = format!(r#"{{"model":"{long}","messages":[]}}"#);
    let reply = post(chaos.addr(), OPENAI, &[], &body).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["code"], "model_too_long");
    let reply = post(chaos.addr(), ANTHROPIC, &[], &body).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["type"], "invalid_request_error");
    let gemini = format!("/v1beta/models/{}:generateContent", "m".repeat(4096));
    let reply = post(chaos.addr(), &gemini, &[], GEMINI_BODY).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["status"], "INVALID_ARGUMENT");
    for row in chaos.journal() {
        assert_eq!(row.outcome, Outcome::Rejected(400));
        assert_eq!(row.model, None);
        assert!(row.path.len() <= 2 * MAX_MODEL_LEN, "{}", row.path.len());
    }
    let at_bound = format!(
        r#"{{"model":"{}","messages":[]}}"#,
        "m".repeat(MAX_MODEL_LEN)
    );
    assert_eq!(post(chaos.addr(), OPENAI, &[], &at_bound).await.status, 200);
}

/// A chunked body with no declared length is cut at the cap: the server answers
/// 413 while the client is still sending, so it never buffered the whole body.
#[tokio::test]
async fn endless_chunked_body_is_413_without_reading_it_all() {
    let chaos = ChaosServer::builder()
        .max_body_bytes(64 * 1024)
        .start()
        .await
        .unwrap();
    let tcp = TcpStream::connect(chaos.addr()).await.unwrap();
    let (mut rx, mut tx) = tcp.into_split();
    tx.write_all(
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n",
    )
    .await
    .unwrap();
    // 1 GiB offered in 64 KiB chunks; the writer stops when the server hangs up.
    let writer = tokio::spawn(async move {
        let chunk = vec![b'x'; 64 * 1024];
        let mut sent = 0u64;
        for _ in 0..16 * 1024 {
            let head = format!("{:x}\r\n", chunk.len());
            if tx.write_all(head.as_bytes()).await.is_err()
                || tx.write_all(&chunk).await.is_err()
                || tx.write_all(b"\r\n").await.is_err()
            {
                break;
            }
            sent += chunk.len() as u64;
        }
        sent
    });
    let mut head = vec![0u8; 12];
    tokio::time::timeout(Duration::from_secs(5), rx.read_exact(&mut head))
        .await
        .expect("413 arrives while the body is still being offered")
        .unwrap();
    assert_eq!(&head, b"HTTP/1.1 413");
    drop(rx);
    let sent = tokio::time::timeout(Duration::from_secs(5), writer)
        .await
        .unwrap()
        .unwrap();
    assert!(
        sent < 1024 * 1024 * 1024,
        "the client sent everything: {sent}"
    );
}

/// Hundreds of concurrent streams on loopback, each on its own connection:
/// every one completes and its row matches what the client received.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_concurrent_streams_complete_with_correct_journals() {
    const N: usize = 300;
    let chaos = ChaosServer::builder().start().await.unwrap();
    let addr = chaos.addr();
    let started = Instant::now();
    let clients: Vec<_> = (0..N)
        .map(|i| {
            tokio::spawn(async move {
                let id = format!("c{i}");
                let (path, body) = match i % 3 {
                    0 => (OPENAI, OPENAI_STREAM_BODY),
                    1 => (ANTHROPIC, ANTHROPIC_STREAM_BODY),
                    _ => (GEMINI_STREAM, GEMINI_BODY),
                };
                let headers = [
                    ("x-chaos-fault", "ok;tokens=10;delay_ms=5"),
                    ("x-chaos-request-id", id.as_str()),
                ];
                let reply = post(addr, path, &headers, body).await;
                assert!(reply.error.is_none(), "{id}: {:?}", reply.error);
                (id, reply.body.len() as u64)
            })
        })
        .collect();
    let mut received = std::collections::HashMap::new();
    for client in clients {
        let (id, len) = client.await.unwrap();
        received.insert(id, len);
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let rows = chaos.journal();
    assert_eq!(rows.len(), N);
    for row in &rows {
        let id = row.request_id.as_deref().unwrap();
        assert_eq!(row.outcome, Outcome::Completed, "{id}");
        assert_eq!(row.tokens_written, 10, "{id}");
        assert_eq!(row.bytes_written, received[id], "{id}");
    }
}

#[tokio::test]
async fn shutdown_closes_open_streams_and_stops_accepting() {
    let chaos = ChaosServer::builder()
        .shutdown_grace(Duration::from_millis(200))
        .start()
        .await
        .unwrap();
    let addr = chaos.addr();
    let headers = [
        ("x-chaos-fault", "hang_after_headers"),
        ("x-chaos-request-id", "h"),
    ];
    let res = open(addr, request(OPENAI, &headers, OPENAI_STREAM_BODY))
        .await
        .unwrap();
    let row_before = chaos.journal();
    assert_eq!(row_before[0].outcome, Outcome::InFlight);
    let journal_probe = tokio::spawn(async move { drain(res.into_body()).await });
    tokio::time::timeout(Duration::from_secs(5), chaos.shutdown())
        .await
        .expect("shutdown ends");
    let (_, error) = journal_probe.await.unwrap();
    assert!(
        error.is_some(),
        "the hanging stream is cut, not ended cleanly"
    );
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer accepting"
    );
}

#[tokio::test]
async fn dropping_the_handle_stops_the_server() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let addr = chaos.addr();
    assert_eq!(post(addr, OPENAI, &[], OPENAI_UNARY_BODY).await.status, 200);
    drop(chaos);
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(addr).await.is_ok() {
        assert!(Instant::now() < deadline, "still accepting after drop");
        tokio::task::yield_now().await;
    }
}
