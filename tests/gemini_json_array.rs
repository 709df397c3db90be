//! Gemini's JSON-array stream (`:streamGenerateContent` without `alt=sse`)
//! through the assembled stack, against seawall-chaos over loopback: each
//! fault ends with the same verdict as in the event stream — code,
//! delivered text and attempts checked from the caller's side and the
//! chaos journal.

mod common;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use seawall::core::{Code, Failure, Receipt};
use seawall::stream::StreamReportHandle;
use seawall_chaos::{ChaosHandle, FAULT_HEADER, REQUEST_ID_HEADER, answer_text};
use tower::ServiceExt;

/// What the caller got.
struct Got {
    /// The failure, before content (response future) or after (body).
    failure: Option<Failure>,
    /// Whether content reached the caller.
    after_content: bool,
    /// The text of the elements read, joined.
    text: String,
    receipt: Option<Receipt>,
    rows: usize,
}

fn text_of(body: &[u8]) -> String {
    let elements: Vec<serde_json::Value> =
        serde_json::from_slice(body).expect("a complete answer is one JSON array");
    elements
        .iter()
        .filter_map(|e| e["candidates"][0]["content"]["parts"][0]["text"].as_str())
        .collect()
}

async fn run(chaos: &ChaosHandle, id: &str, fault: &str, script: &[&str]) -> Got {
    if !script.is_empty() {
        let faults = script.iter().map(|f| common::fault(f)).collect();
        chaos.script("gemini", faults).unwrap();
    }
    let request = http::Request::post(format!(
        "{}/v1beta/models/gemini-x:streamGenerateContent",
        chaos.base_url()
    ))
    .header("content-type", "application/json")
    .header(FAULT_HEADER, fault)
    .header(REQUEST_ID_HEADER, id)
    .body(Full::new(Bytes::from_static(
        br#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#,
    )))
    .unwrap();
    let stack = common::short_stack().build(&ClassifyLayer::gemini(), common::client());
    let got = match stack.oneshot(request).await {
        Err(error) => {
            let failure = Failure::find(&*error)
                .cloned()
                .expect("a classified failure");
            Got {
                receipt: failure.receipt().cloned(),
                failure: Some(failure),
                after_content: false,
                text: String::new(),
                rows: 0,
            }
        }
        Ok(response) => {
            let receipt = response.extensions().get::<Receipt>().cloned();
            let handle = response.extensions().get::<StreamReportHandle>().cloned();
            assert!(handle.is_some(), "the answer was guarded");
            match response.into_body().collect().await {
                Ok(body) => Got {
                    failure: None,
                    after_content: true,
                    text: text_of(&body.to_bytes()),
                    receipt,
                    rows: 0,
                },
                Err(error) => {
                    let failure = Failure::find(&*error)
                        .cloned()
                        .expect("a classified failure");
                    let text = failure
                        .interrupted()
                        .and_then(|i| i.delivered_text.clone())
                        .unwrap_or_default();
                    Got {
                        failure: Some(failure),
                        after_content: true,
                        text,
                        receipt,
                        rows: 0,
                    }
                }
            }
        }
    };
    Got {
        rows: common::settled_rows(chaos, id).await.len(),
        ..got
    }
}

fn attempts(got: &Got) -> usize {
    got.receipt
        .as_ref()
        .map_or(0, |r| r.attempts.as_slice().len())
}

#[tokio::test]
async fn ok_is_delivered_whole() {
    let chaos = common::chaos().await;
    let got = run(&chaos, "ok", "ok;tokens=8", &[]).await;
    assert!(got.failure.is_none(), "{:?}", got.failure);
    assert_eq!(got.text, answer_text(8));
    assert_eq!((got.rows, attempts(&got)), (1, 1));
}

#[tokio::test]
async fn empty_is_retried_to_an_answer() {
    let chaos = common::chaos().await;
    let got = run(&chaos, "empty", "ok;tokens=8", &["empty", "ok;tokens=8"]).await;
    assert!(got.failure.is_none(), "{:?}", got.failure);
    assert_eq!(got.text, answer_text(8));
    assert_eq!((got.rows, attempts(&got)), (2, 2));
    let first = &got.receipt.as_ref().unwrap().attempts.as_slice()[0];
    assert_eq!(first.code, Some(Code::EmptyResponse));
}

#[tokio::test]
async fn hang_after_headers_is_a_first_byte_timeout() {
    let chaos = common::chaos().await;
    let started = std::time::Instant::now();
    let got = run(&chaos, "hang", "hang_after_headers", &[]).await;
    let failure = got.failure.expect("no answer");
    assert!(!got.after_content);
    assert_eq!(failure.code(), Code::FirstByteTimeout);
    // Route-shaped: one attempt per route, bounded by the first-byte bound
    // (200 ms), far inside the attempt bound (1.5 s).
    assert_eq!(got.rows, 1);
    assert!(
        started.elapsed() < common::ATTEMPT,
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn reset_after_content_surfaces_the_delivered_tokens() {
    let chaos = common::chaos().await;
    let got = run(&chaos, "reset", "reset_after;tokens=3", &[]).await;
    let failure = got.failure.expect("an interruption");
    assert!(got.after_content);
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(got.text, answer_text(3));
    assert_eq!(failure.interrupted().unwrap().content_events, 3);
    assert_eq!(got.rows, 1, "nothing is replayed after content");
}

#[tokio::test]
async fn a_cut_array_is_truncated() {
    let chaos = common::chaos().await;
    let got = run(&chaos, "truncated", "truncate_after;tokens=3;total=8", &[]).await;
    let failure = got.failure.expect("a truncation");
    assert_eq!(failure.code(), Code::Truncated);
    assert_eq!(got.text, answer_text(3));
    assert_eq!(got.rows, 1);
}

#[tokio::test]
async fn a_frame_then_eof_is_empty_and_retried() {
    let chaos = common::chaos().await;
    let got = run(
        &chaos,
        "frame",
        "ok;tokens=8",
        &["frame_then_eof", "ok;tokens=8"],
    )
    .await;
    assert!(got.failure.is_none(), "{:?}", got.failure);
    assert_eq!(got.text, answer_text(8));
    assert_eq!((got.rows, attempts(&got)), (2, 2));
}

#[tokio::test]
async fn garbage_after_the_array_is_a_protocol_violation() {
    // chaos speaks correct arrays: a raw server sends the garbage.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let _ = socket.read(&mut buf).await;
                let body = "[{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"w1\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}]}\r\n]<html>";
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
            });
        }
    });
    let request = http::Request::post(format!(
        "http://{addr}/v1beta/models/gemini-x:streamGenerateContent"
    ))
    .header("content-type", "application/json")
    .body(Full::new(Bytes::from_static(b"{\"contents\":[]}")))
    .unwrap();
    let stack = common::short_stack().build(&ClassifyLayer::gemini(), common::client());
    // The garbage rides in the frame with the content: the answer is
    // released with it, and its body fails.
    let response = stack.oneshot(request).await.expect("content arrived");
    let error = response
        .into_body()
        .collect()
        .await
        .expect_err("garbage after `]`");
    let failure = Failure::find(&*error).expect("classified");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(
        failure.interrupted().unwrap().cause,
        Some(Code::ProtocolViolation)
    );
    assert_eq!(
        failure.interrupted().unwrap().delivered_text.as_deref(),
        Some("w1")
    );
}
