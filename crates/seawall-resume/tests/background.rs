//! A Responses API background response cut mid-stream is continued by
//! retrieving the provider's own stored stream after the last event the
//! caller read (`GET /v1/responses/{id}?stream=true&starting_after=N`),
//! over loopback against a server written here that keeps its streams as
//! the API does.

mod common;
#[path = "common/stored_stream.rs"]
mod stored_stream;

use common::quick_ladder;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use stored_stream::{ID, WORDS, answer, background, read_events, renumbered, stream};

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seawall_classify::ClassifyLayer;
use seawall_core::provider::Provider;
use seawall_core::{BoxError, Receipt, Usage};
use seawall_resume::{ResumeLayer, ResumeReport, Resumed};
use seawall_stream::StreamGuardLayer;
use seawall_test::raw::{RawRequest, read_request};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tower::{ServiceBuilder, ServiceExt};

/// How the server treats a retrieval.
#[derive(Clone, Copy)]
enum Retrieval {
    /// The events after the cursor, as stored.
    Stored,
    /// 404: the response was not stored (not a background one, expired).
    NotFound,
}

/// Serves the stored stream: a creating POST is cut after `cut` events
/// (the connection dropped); a retrieval gets the events after its
/// cursor. A generated continuation (a POST whose input ends with the
/// delivered text) gets the rest of the words as a fresh stream. Every
/// request is kept.
async fn server(cut: usize, retrieval: Retrieval) -> (String, Arc<Mutex<Vec<RawRequest>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let kept = Arc::clone(&kept);
            tokio::spawn(async move {
                let Ok(Some(request)) = read_request(&mut socket).await else {
                    return;
                };
                let line = request.head.lines().next().unwrap_or_default().to_owned();
                let body = String::from_utf8_lossy(&request.body).into_owned();
                let first = kept.lock().unwrap().is_empty();
                kept.lock().unwrap().push(request);
                let events = stream();
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                let (head, events): (&str, Vec<String>) = if line.starts_with("GET") {
                    let after: usize = line
                        .split("starting_after=")
                        .nth(1)
                        .and_then(|rest| rest.split([' ', '&']).next())
                        .and_then(|n| n.parse().ok())
                        .unwrap();
                    match retrieval {
                        Retrieval::Stored => (head, events[after + 1..].to_vec()),
                        Retrieval::NotFound => {
                            let error = r#"{"error":{"message":"Response with id 'resp_bg123' not found.","type":"invalid_request_error","param":null,"code":null}}"#;
                            let head = format!(
                                "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{error}",
                                error.len()
                            );
                            let _ = socket.write_all(head.as_bytes()).await;
                            return;
                        }
                    }
                } else if first {
                    (head, events[..cut].to_vec())
                } else {
                    // A generated continuation: the words after those
                    // delivered, as a new response numbered from 0.
                    let shown = body.matches("w").count();
                    let fresh = renumbered(events[..4].iter().chain(&events[4 + shown..]), ID);
                    (head, fresh)
                };
                let _ = socket.write_all(head.as_bytes()).await;
                for event in events {
                    let _ = socket.write_all(event.as_bytes()).await;
                }
                let _ = socket.flush().await;
                // Dropped: a cut for the creating POST, the end otherwise.
            });
        }
    });
    (format!("http://{addr}"), seen)
}

struct Read {
    text: String,
    sequence: Vec<u64>,
    error: Option<BoxError>,
    report: ResumeReport,
    receipt: Option<Receipt>,
}

async fn run(base: &str, body: Value) -> Read {
    run_with(base, body, ResumeLayer::new(), true).await
}

async fn run_with(base: &str, body: Value, layer: ResumeLayer, classify: bool) -> Read {
    let client = Client::builder(TokioExecutor::new()).build_http();
    let stack = ServiceBuilder::new()
        .layer(layer)
        .layer(quick_ladder())
        .layer(StreamGuardLayer::interactive());
    let request = http::Request::post(format!("{base}/v1/responses"))
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-test")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    if classify {
        let classify = ClassifyLayer::for_provider(Provider::OpenAiResponses);
        read(stack.layer(classify).service(client), request).await
    } else {
        read(stack.service(client), request).await
    }
}

async fn read<S, RB>(service: S, request: http::Request<Full<Bytes>>) -> Read
where
    S: tower::Service<http::Request<Full<Bytes>>, Response = http::Response<RB>>,
    S::Error: std::fmt::Debug,
    RB: http_body::Body<Data = Bytes>,
    RB::Error: Into<BoxError>,
{
    let response = tokio::time::timeout(Duration::from_secs(10), service.oneshot(request))
        .await
        .unwrap()
        .unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let receipt = response.extensions().get::<Receipt>().cloned();
    let (text, sequence, error) = read_events(response.into_body(), Duration::from_secs(10)).await;
    Read {
        text,
        sequence,
        error,
        report: resumed.report(),
        receipt,
    }
}

#[tokio::test]
async fn a_cut_background_stream_is_retrieved_after_the_last_event_read() {
    // Cut after the preamble and five words (events 0 ..= 8).
    let (base, seen) = server(9, Retrieval::Stored).await;
    let read = run(&base, background(true)).await;
    assert!(read.error.is_none(), "{:?}", read.error);
    assert_eq!(read.text, answer());
    let all: Vec<u64> = (0..stream().len() as u64).collect();
    assert_eq!(read.sequence, all, "every event once, in order, as stored");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let line = seen[1].head.lines().next().unwrap();
    assert_eq!(
        line,
        format!("GET /v1/responses/{ID}?stream=true&starting_after=8 HTTP/1.1")
    );
    assert_eq!(seen[1].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(seen[1].header("content-length"), None);
    assert!(seen[1].body.is_empty());
    let record = &read.report.resumes[0];
    assert!(record.retrieved && record.spliced, "{record:?}");
    assert_eq!(read.report.resumed(), 1);
    // The first answer was billed; the retrieval generated nothing.
    let whole = read.report.receipt(&read.receipt.unwrap());
    assert_eq!((whole.attempts.len(), whole.billed_attempts()), (2, 1));
    // The retrieval read the stored answer's whole usage: counted once,
    // as the cut answer's, which was billed for it.
    let usage = Usage::new(5, WORDS as u64);
    assert_eq!(whole.usage(), usage);
    assert_eq!(whole.attempts[0].usage(), Some(usage));
    assert_eq!(whole.attempts[1].usage(), None);
    assert_eq!(whole.billed_without_usage(), 0);
    assert_eq!(
        read.report.usage(),
        Usage::default(),
        "nothing billed again"
    );
}

/// A retrieval refused (the response not kept) is a way of asking, not a
/// continuation: the generated one follows, within the same resume count
/// (one here), with or without a classifier below to read the 404.
#[tokio::test]
async fn a_retrieval_refused_falls_back_to_a_generated_continuation() {
    for classify in [true, false] {
        let (base, seen) = server(9, Retrieval::NotFound).await;
        let layer = ResumeLayer::new().max_resumes(1);
        let read = run_with(&base, background(false), layer, classify).await;
        assert!(read.error.is_none(), "{classify}: {:?}", read.error);
        assert_eq!(read.text, answer());
        let all: Vec<u64> = (0..stream().len() as u64).collect();
        assert_eq!(read.sequence, all, "renumbered as one stream");
        assert_eq!(seen.lock().unwrap().len(), 3);
    }
    let (base, seen) = server(9, Retrieval::NotFound).await;
    let read = run(&base, background(false)).await;
    assert!(read.error.is_none(), "{:?}", read.error);
    assert_eq!(read.text, answer());
    let seen = seen.lock().unwrap();
    let lines: Vec<&str> = seen
        .iter()
        .map(|r| r.head.lines().next().unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines[1].starts_with("GET /v1/responses/resp_bg123?"),
        "{lines:?}"
    );
    assert!(lines[2].starts_with("POST /v1/responses "), "{lines:?}");
    let continued: Value = serde_json::from_slice(&seen[2].body).unwrap();
    assert_eq!(continued["background"], true);
    assert!(continued["input"].to_string().contains("w5"), "{continued}");
    let report = &read.report;
    assert_eq!(report.resumes.len(), 2);
    assert!(report.resumes[0].retrieved && !report.resumes[0].spliced);
    assert!(!report.resumes[1].retrieved && report.resumes[1].spliced);
}

#[tokio::test]
async fn a_structured_answer_not_in_the_background_is_still_not_resumed() {
    let (base, seen) = server(9, Retrieval::Stored).await;
    let mut body = background(true);
    body["background"] = json!(false);
    let read = run(&base, body).await;
    assert!(read.error.is_some(), "the interruption");
    assert_eq!(read.report.gave_up, Some("structured_output"));
    assert_eq!(seen.lock().unwrap().len(), 1);
}
