//! Every fault, driven by a plain hyper client, asserting what went over the wire.

mod common;

use std::time::{Duration, Instant};

use common::*;
use http_body_util::BodyExt;
use seawall_chaos::{ChaosServer, FaultSource, Outcome};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn reset_after_cuts_the_connection_after_exactly_n_tokens() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let headers = [
        ("x-chaos-fault", "reset_after;tokens=3"),
        ("x-chaos-request-id", "r1"),
    ];
    let reply = post(chaos.addr(), OPENAI, &headers, OPENAI_STREAM_BODY).await;
    assert_eq!(reply.status, 200);
    let error = reply
        .error
        .as_ref()
        .expect("the body must end in an error, not a clean end");
    let io = std::error::Error::source(error)
        .and_then(|e| e.downcast_ref::<std::io::Error>())
        .expect("an I/O error under the body error");
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionReset, "{error:?}");
    let text = reply.text();
    assert_eq!(openai_text(&text), "w1 w2 w3");
    assert!(!text.contains("finish_reason\":\"stop"));
    assert!(!text.contains("[DONE]"));
    let row = tokio::time::timeout(WAIT, chaos.wait_for_request("r1"))
        .await
        .unwrap();
    assert_eq!(row.outcome, Outcome::CutByFault);
    assert_eq!(row.tokens_written, 3);
    assert_eq!(row.bytes_written, reply.body.len() as u64);
}

/// Below HTTP: the close is a TCP reset, not a FIN.
#[tokio::test]
async fn reset_after_is_a_tcp_reset_on_the_wire() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut tcp = TcpStream::connect(chaos.addr()).await.unwrap();
    let body = ANTHROPIC_STREAM_BODY;
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-chaos-fault: reset_after;tokens=2\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    let end = tokio::time::timeout(WAIT, async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) => return Ok(()),
                Ok(n) => received.extend_from_slice(&buf[..n]),
                Err(e) => return Err(e),
            }
        }
    })
    .await
    .unwrap();
    let error = end.expect_err("a reset, not a clean EOF");
    assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset);
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(text.contains("\"text\":\" w2\""));
    assert!(!text.contains("w3"));
    assert!(!text.contains("message_stop"));
    // The chunked body never got its terminating chunk.
    assert!(!text.ends_with("0\r\n\r\n"));
}

#[tokio::test]
async fn reset_after_on_unary_cuts_the_json() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        OPENAI,
        &[("x-chaos-fault", "reset_after;tokens=2")],
        OPENAI_UNARY_BODY,
    )
    .await;
    assert!(reply.error.is_some());
    assert!(
        reply.text().ends_with("\"content\":\"w1 w2"),
        "{}",
        reply.text()
    );
}

#[tokio::test]
async fn reset_before_headers_answers_nothing() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let headers = [
        ("x-chaos-fault", "reset_before_headers"),
        ("x-chaos-request-id", "rb"),
    ];
    let result = open(chaos.addr(), request(OPENAI, &headers, OPENAI_STREAM_BODY)).await;
    let error = result.expect_err("no response head");
    assert!(!error.is_user(), "{error:?}");
    let row = tokio::time::timeout(WAIT, chaos.wait_for_request("rb"))
        .await
        .unwrap();
    assert_eq!(row.outcome, Outcome::CutByFault);
    assert_eq!(row.status, None);
    assert_eq!(row.bytes_written, 0);
    assert_eq!(
        row.body_bytes,
        OPENAI_STREAM_BODY.len() as u64,
        "the request was read"
    );
}

#[tokio::test]
async fn hang_after_headers_sends_headers_then_nothing_and_journals_the_disconnect() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let headers = [
        ("x-chaos-fault", "hang_after_headers"),
        ("x-chaos-request-id", "hang"),
    ];
    let res = open(chaos.addr(), request(OPENAI, &headers, OPENAI_STREAM_BODY))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let mut body = res.into_body();
    // A short real timeout: not a single byte may arrive.
    let silent = tokio::time::timeout(Duration::from_millis(200), body.frame()).await;
    assert!(silent.is_err(), "a frame arrived: {silent:?}");
    assert_eq!(chaos.journal()[0].outcome, Outcome::InFlight);
    drop(body);
    let row = tokio::time::timeout(WAIT, chaos.wait_for_request("hang"))
        .await
        .unwrap();
    assert_eq!(row.outcome, Outcome::ClientDisconnected);
    assert_eq!(row.bytes_written, 0);
}

#[tokio::test]
async fn client_disconnect_mid_stream_is_journaled_as_such() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let headers = [
        ("x-chaos-fault", "ok;tokens=100;delay_ms=20"),
        ("x-chaos-request-id", "gone"),
    ];
    let res = open(
        chaos.addr(),
        request(ANTHROPIC, &headers, ANTHROPIC_STREAM_BODY),
    )
    .await
    .unwrap();
    let mut body = res.into_body();
    let first = body.frame().await.unwrap().unwrap();
    assert!(!first.into_data().unwrap().is_empty());
    drop(body);
    let row = tokio::time::timeout(WAIT, chaos.wait_for_request("gone"))
        .await
        .unwrap();
    assert_eq!(row.outcome, Outcome::ClientDisconnected);
    assert!(row.tokens_written < 100, "{row:?}");
}

/// `settled_journal` returns an operation's rows once the server has seen
/// each end, however late a disconnect reaches it, and gives up after its
/// bound on a row that never ends.
#[tokio::test]
async fn settled_journal_waits_for_every_row_of_an_operation_to_end() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let done = post(
        chaos.addr(),
        OPENAI,
        &[("x-chaos-request-id", "op:1")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert_eq!(done.status, 200);
    let headers = [
        ("x-chaos-fault", "ok;tokens=100;delay_ms=20"),
        ("x-chaos-request-id", "op:2"),
    ];
    let res = open(chaos.addr(), request(OPENAI, &headers, OPENAI_STREAM_BODY))
        .await
        .unwrap();
    let mut body = res.into_body();
    body.frame().await.unwrap().unwrap();
    drop(body);
    let of_op = |row: &seawall_chaos::JournalEntry| {
        row.request_id
            .as_deref()
            .is_some_and(|id| id.starts_with("op:"))
    };
    let rows = chaos.settled_journal(WAIT, of_op).await;
    let outcomes: Vec<_> = rows.iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        [Outcome::Completed, Outcome::ClientDisconnected],
        "{rows:?}"
    );

    // A request the server still holds open: the bound ends the wait.
    let headers = [
        ("x-chaos-fault", "hang_after_headers"),
        ("x-chaos-request-id", "held"),
    ];
    let _held = open(chaos.addr(), request(OPENAI, &headers, OPENAI_STREAM_BODY))
        .await
        .unwrap();
    let started = Instant::now();
    let rows = chaos
        .settled_journal(Duration::from_millis(200), |row| {
            row.request_id.as_deref() == Some("held")
        })
        .await;
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].outcome, Outcome::InFlight);
}

#[tokio::test]
async fn slow_first_byte_holds_the_body_then_answers() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let headers = [("x-chaos-fault", "slow_first_byte;ms=150;tokens=2")];
    let res = open(chaos.addr(), request(OPENAI, &headers, OPENAI_STREAM_BODY))
        .await
        .unwrap();
    let headers_at = Instant::now();
    assert_eq!(res.status(), 200);
    let mut body = res.into_body();
    body.frame().await.unwrap().unwrap();
    assert!(
        headers_at.elapsed() >= Duration::from_millis(120),
        "{:?}",
        headers_at.elapsed()
    );
    let (rest, error) = drain(body).await;
    assert!(error.is_none());
    assert!(
        String::from_utf8(rest)
            .unwrap()
            .ends_with("data: [DONE]\n\n")
    );
}

#[tokio::test]
async fn frame_then_eof_sends_one_frame_and_ends_cleanly() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        OPENAI,
        &[("x-chaos-fault", "frame_then_eof")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert!(
        reply.error.is_none(),
        "clean end expected: {:?}",
        reply.error
    );
    let data = data_lines(&reply.text());
    assert_eq!(data.len(), 1);
    assert!(data[0].contains(r#""delta":{"role":"assistant","content":""}"#));
    let row = &chaos.journal()[0];
    assert_eq!(row.outcome, Outcome::CutByFault);
    assert_eq!(
        (row.tokens_written, row.bytes_written),
        (0, reply.body.len() as u64)
    );

    let reply = post(
        chaos.addr(),
        ANTHROPIC,
        &[("x-chaos-fault", "frame_then_eof")],
        ANTHROPIC_STREAM_BODY,
    )
    .await;
    assert!(reply.text().starts_with("event: message_start\n"));
    assert_eq!(reply.text().matches("event:").count(), 1);
}

#[tokio::test]
async fn truncate_after_ends_cleanly_without_finish_marker() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        OPENAI,
        &[("x-chaos-fault", "truncate_after;tokens=3")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert!(reply.error.is_none());
    assert_eq!(openai_text(&reply.text()), "w1 w2 w3");
    assert!(!reply.text().contains("finish_reason\":\"stop"));
    assert!(!reply.text().contains("[DONE]"));

    let reply = post(
        chaos.addr(),
        GEMINI_STREAM,
        &[("x-chaos-fault", "truncate_after;tokens=8")],
        GEMINI_BODY,
    )
    .await;
    assert_eq!(data_lines(&reply.text()).len(), 8);
    assert!(!reply.text().contains("finishReason"));
    let rows = chaos.journal();
    assert_eq!(rows[1].outcome, Outcome::CutByFault);
    assert_eq!(rows[1].tokens_written, 8);
}

#[tokio::test]
async fn stream_error_after_sends_the_provider_error_event() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        OPENAI,
        &[("x-chaos-fault", "stream_error_after;tokens=2")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert!(reply.error.is_none());
    let data = data_lines(&reply.text());
    assert_eq!(openai_text(&reply.text()), "w1 w2");
    let last: serde_json::Value = serde_json::from_str(data.last().unwrap()).unwrap();
    assert_eq!(last["error"]["type"], "server_error");
    assert!(!reply.text().contains("[DONE]"));

    // tokens=0: right after message_start, before any content block.
    let reply = post(
        chaos.addr(),
        ANTHROPIC,
        &[("x-chaos-fault", "stream_error_after;tokens=0")],
        ANTHROPIC_STREAM_BODY,
    )
    .await;
    let text = reply.text();
    let events: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(events, ["message_start", "error"]);
    assert!(reply.text().contains(
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
    ));

    let reply = post(
        chaos.addr(),
        GEMINI_STREAM,
        &[("x-chaos-fault", "stream_error_after;tokens=1")],
        GEMINI_BODY,
    )
    .await;
    let data = data_lines(&reply.text());
    assert_eq!(data.len(), 2);
    assert!(data[1].starts_with(r#"{"error":{"code":500"#));

    // A unary request has no stream: it gets the provider's 5xx.
    let reply = post(
        chaos.addr(),
        ANTHROPIC,
        &[("x-chaos-fault", "stream_error_after;tokens=1")],
        ANTHROPIC_UNARY_BODY,
    )
    .await;
    assert_eq!(reply.status.as_u16(), 529);
}

#[tokio::test]
async fn stall_after_goes_silent_then_finishes() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let headers = [("x-chaos-fault", "stall_after;tokens=2;ms=200;total=4")];
    let res = open(chaos.addr(), request(OPENAI, &headers, OPENAI_STREAM_BODY))
        .await
        .unwrap();
    let mut body = res.into_body();
    let mut seen = String::new();
    while openai_text(&seen) != "w1 w2" {
        let frame = body.frame().await.unwrap().unwrap();
        seen.push_str(std::str::from_utf8(&frame.into_data().unwrap()).unwrap());
    }
    let silent = tokio::time::timeout(Duration::from_millis(100), body.frame()).await;
    assert!(silent.is_err(), "the stall let bytes through: {silent:?}");
    let (rest, error) = drain(body).await;
    assert!(error.is_none());
    seen.push_str(std::str::from_utf8(&rest).unwrap());
    assert_eq!(openai_text(&seen), "w1 w2 w3 w4");
    assert!(seen.ends_with("data: [DONE]\n\n"));
    assert_eq!(chaos.journal()[0].outcome, Outcome::Completed);
}

#[tokio::test]
async fn stall_after_with_pings_keeps_the_stream_alive() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let headers = [(
        "x-chaos-fault",
        "stall_after;tokens=1;ms=250;pings=1;ping_ms=50;total=2",
    )];
    let reply = post(chaos.addr(), ANTHROPIC, &headers, ANTHROPIC_STREAM_BODY).await;
    let text = reply.text();
    let after_w1 = &text[text.find("\"w1\"").unwrap()..text.find("\" w2\"").unwrap()];
    let pings = after_w1.matches("event: ping\n").count();
    assert!(
        // Late timers on a loaded machine can only mean fewer pings, never more.
        (2..=5).contains(&pings),
        "{pings} pings during a 250 ms stall every 50 ms"
    );
    assert!(text.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));

    let headers = [(
        "x-chaos-fault",
        "stall_after;tokens=1;ms=120;pings=1;ping_ms=50;total=1",
    )];
    let reply = post(chaos.addr(), OPENAI, &headers, OPENAI_STREAM_BODY).await;
    assert!(reply.text().contains(": ping\n\n"));
    assert_eq!(openai_text(&reply.text()), "w1");
    assert!(reply.text().ends_with("data: [DONE]\n\n"));
}

#[tokio::test]
async fn empty_refusal_and_length_per_provider() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let addr = chaos.addr();

    let reply = post(
        addr,
        OPENAI,
        &[("x-chaos-fault", "empty")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert_eq!(openai_text(&reply.text()), "");
    assert!(reply.text().contains(r#""finish_reason":"stop""#));
    let reply = post(
        addr,
        OPENAI,
        &[("x-chaos-fault", "refusal")],
        OPENAI_STREAM_BODY,
    )
    .await;
    // A refusal as OpenAI sends it: `refusal` deltas, then `stop`.
    assert!(reply.text().contains(r#""delta":{"refusal":"#));
    assert!(reply.text().contains(r#""finish_reason":"stop""#));
    assert!(!reply.text().contains("content_filter"));
    let reply = post(
        addr,
        OPENAI,
        &[("x-chaos-fault", "length;tokens=2")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert_eq!(openai_text(&reply.text()), "w1 w2");
    assert!(reply.text().contains(r#""finish_reason":"length""#));
    let reply = post(
        addr,
        OPENAI,
        &[("x-chaos-fault", "refusal")],
        OPENAI_UNARY_BODY,
    )
    .await;
    let choice = &reply.json()["choices"][0];
    assert_eq!(choice["finish_reason"], "stop");
    assert!(choice["message"]["refusal"].is_string());
    assert!(choice["message"]["content"].is_null(), "{choice}");

    let reply = post(
        addr,
        ANTHROPIC,
        &[("x-chaos-fault", "empty")],
        ANTHROPIC_STREAM_BODY,
    )
    .await;
    assert!(!reply.text().contains("content_block"));
    assert!(reply.text().contains(r#""stop_reason":"end_turn""#));
    let reply = post(
        addr,
        ANTHROPIC,
        &[("x-chaos-fault", "refusal;tokens=1")],
        ANTHROPIC_STREAM_BODY,
    )
    .await;
    assert!(reply.text().contains(r#""stop_reason":"refusal""#));
    assert!(reply.text().contains(r#""text":"w1""#));
    let reply = post(
        addr,
        ANTHROPIC,
        &[("x-chaos-fault", "length;tokens=1")],
        ANTHROPIC_UNARY_BODY,
    )
    .await;
    assert_eq!(reply.json()["stop_reason"], "max_tokens");

    let reply = post(
        addr,
        GEMINI_STREAM,
        &[("x-chaos-fault", "empty")],
        GEMINI_BODY,
    )
    .await;
    let data = data_lines(&reply.text());
    assert_eq!(data.len(), 1);
    assert!(data[0].contains(r#""finishReason":"STOP""#));
    let reply = post(
        addr,
        GEMINI_STREAM,
        &[("x-chaos-fault", "refusal")],
        GEMINI_BODY,
    )
    .await;
    assert!(reply.text().contains(r#""finishReason":"SAFETY""#));
    let reply = post(
        addr,
        GEMINI_STREAM,
        &[("x-chaos-fault", "length;tokens=3")],
        GEMINI_BODY,
    )
    .await;
    let data = data_lines(&reply.text());
    assert_eq!(data.len(), 3);
    assert!(data[2].contains(r#""finishReason":"MAX_TOKENS""#));

    assert!(
        chaos
            .journal()
            .iter()
            .all(|r| r.outcome == Outcome::Completed)
    );
}

#[tokio::test]
async fn bad_fault_headers_answer_400_naming_the_problem() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let cases = [
        (OPENAI, "bogus", "unknown fault `bogus`"),
        (
            OPENAI,
            "reset_after;tokens=lots",
            "invalid value `lots` for parameter `tokens`",
        ),
        (ANTHROPIC, "status", "needs parameter `code`"),
        (GEMINI_STREAM, "ok;tokens", "malformed parameter `tokens`"),
    ];
    for (path, fault, needle) in cases {
        let body = if path == GEMINI_STREAM {
            GEMINI_BODY
        } else {
            OPENAI_STREAM_BODY
        };
        let reply = post(chaos.addr(), path, &[("x-chaos-fault", fault)], body).await;
        assert_eq!(reply.status, 400, "{fault}");
        let v = reply.json();
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{fault}: {message}");
        assert!(message.starts_with("x-chaos-fault: "));
    }
    assert_eq!(
        chaos.journal()[0].body_hash.as_deref().map(str::len),
        Some(16)
    );
    assert!(
        chaos
            .journal()
            .iter()
            .all(|r| r.outcome == Outcome::Rejected(400))
    );
    let reply = post(
        chaos.addr(),
        OPENAI,
        &[("x-chaos-fault", "bogus")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert_eq!(reply.json()["error"]["code"], "unknown_fault");
}

#[tokio::test]
async fn two_fault_headers_answer_400_not_the_first_one() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    for (path, body) in [
        (OPENAI, OPENAI_STREAM_BODY),
        (ANTHROPIC, ANTHROPIC_UNARY_BODY),
        (GEMINI_STREAM, GEMINI_BODY),
    ] {
        let headers = [("x-chaos-fault", "ok"), ("x-chaos-fault", "bogus")];
        let reply = post(chaos.addr(), path, &headers, body).await;
        assert_eq!(reply.status, 400, "{path}: {}", reply.text());
        let v = reply.json();
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("x-chaos-fault: "), "{message}");
        assert!(
            message.contains("more than one x-chaos-fault header"),
            "{message}"
        );
        assert!(reply.header("x-chaos-fault-applied").is_none());
        if path == OPENAI {
            assert_eq!(v["error"]["code"], "duplicate_fault_header");
        }
    }
    let rows = chaos.journal();
    assert_eq!(rows.len(), 3);
    for row in rows {
        assert_eq!(row.outcome, Outcome::Rejected(400));
        assert_eq!(
            (row.fault.as_str(), row.fault_source),
            ("ok, bogus", FaultSource::Header)
        );
    }
}

/// A request refused over its fault header is journaled with the header's
/// text, from the header: never as a healthy default it was not given.
#[tokio::test]
async fn a_refused_fault_header_is_journaled_as_sent() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        OPENAI,
        &[("x-chaos-fault", "reset_after;tokens=lots")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert_eq!(reply.status, 400);
    let row = &chaos.journal()[0];
    assert_eq!(
        (row.fault.as_str(), row.fault_source),
        ("reset_after;tokens=lots", FaultSource::Header)
    );
}

#[tokio::test]
async fn random_is_reproducible_per_seed() {
    let run = || async {
        let chaos = ChaosServer::builder().start().await.unwrap();
        for _ in 0..30 {
            let req = request(
                OPENAI,
                &[("x-chaos-fault", "random;seed=11;p=0.5")],
                OPENAI_UNARY_BODY,
            );
            // Some draws close the connection before the head: that is the point.
            if let Ok(res) = open(chaos.addr(), req).await {
                drain(res.into_body()).await;
            }
        }
        chaos
            .journal()
            .into_iter()
            .map(|r| r.fault)
            .collect::<Vec<_>>()
    };
    let first = run().await;
    assert_eq!(first.len(), 30);
    assert_eq!(first, run().await);
    let failures = first.iter().filter(|f| *f != "ok").count();
    assert!((5..=25).contains(&failures), "{first:?}");
}
