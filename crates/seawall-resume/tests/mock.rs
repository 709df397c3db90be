//! Continuations the chaos server does not produce: built by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall_core::{BoxError, Code, Failure, Interrupted};
use seawall_resume::{ResumeLayer, ResumeRequestBody, Resumed};
use seawall_test::body::Script;
use tower::{ServiceBuilder, ServiceExt, service_fn};

fn chunk(text: &str) -> Bytes {
    Bytes::from(format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
    ))
}

fn cut(delivered: &str) -> Box<Failure> {
    let mut interrupted = Interrupted::default();
    interrupted.delivered_text = Some(delivered.to_owned());
    interrupted.content_events = 2;
    interrupted.cause = Some(Code::Transport);
    Box::new(Failure::new(Code::StreamInterrupted).with_interrupted(interrupted))
}

fn stream(items: Vec<Result<Bytes, Box<Failure>>>) -> http::Response<Script> {
    http::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Script::items(
            items
                .into_iter()
                .map(|item| item.map_err(|failure| failure as BoxError)),
        ))
        .unwrap()
}

#[tokio::test]
async fn a_continuation_without_readable_content_never_ends_the_answer_cleanly() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let service = ServiceBuilder::new().layer(ResumeLayer::new()).service(service_fn(
        move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                Ok::<_, BoxError>(match n {
                    0 => stream(vec![Ok(chunk("w1")), Ok(chunk(" w2")), Err(cut("w1 w2"))]),
                    // Served in another wire format: nothing the layer reads
                    // as OpenAI content, then a clean end.
                    _ => stream(vec![Ok(Bytes::from_static(
                        b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" w3\"}}\n\n",
                    ))]),
                })
            }
        },
    ));
    let request = http::Request::post("http://api.example/v1/chat/completions")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        )))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let mut body = std::pin::pin!(response.into_body());
    let mut shown = Vec::new();
    let error = loop {
        match body.frame().await {
            Some(Ok(frame)) => shown.extend_from_slice(&frame.into_data().unwrap()),
            Some(Err(error)) => break Some(error),
            None => break None,
        }
    };
    let error = error.expect("the answer is still cut");
    let failure = Failure::find(&*error).unwrap();
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(
        failure.interrupted().unwrap().delivered_text.as_deref(),
        Some("w1 w2")
    );
    let mut expected = chunk("w1").to_vec();
    expected.extend_from_slice(&chunk(" w2"));
    assert_eq!(shown, expected, "nothing of the continuation is shown");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(resumed.report().gave_up, Some("no_content"));
}

/// Frames cut anywhere: the caller gets the same bytes, in whole events.
#[tokio::test]
async fn events_cut_by_frame_boundaries_are_passed_whole() {
    let mut whole = Vec::new();
    for i in 1..=20 {
        whole.extend_from_slice(&chunk(&format!(" w{i}")));
    }
    whole.extend_from_slice(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\ndata: [DONE]\n\n");
    for size in [1, 7, 50, 130, 333] {
        let pieces: Vec<Result<Bytes, Box<Failure>>> = whole
            .chunks(size)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let service = ServiceBuilder::new()
            .layer(ResumeLayer::new())
            .service(service_fn(
                move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                    let pieces = pieces
                        .iter()
                        .map(|p| p.clone().map_err(|_| unreachable!()))
                        .collect();
                    async move { Ok::<_, BoxError>(stream(pieces)) }
                },
            ));
        let request = http::Request::post("http://api.example/v1/chat/completions")
            .body(Full::new(Bytes::from_static(
                br#"{"model":"m","stream":true,"messages":[]}"#,
            )))
            .unwrap();
        let response = service.oneshot(request).await.unwrap();
        let mut body = std::pin::pin!(response.into_body());
        let mut shown = Vec::new();
        while let Some(frame) = body.frame().await {
            let data = frame.unwrap().into_data().unwrap();
            assert!(
                data.ends_with(b"\n\n") || data.ends_with(b"\r\n\r\n"),
                "size {size}: a frame ends inside an event: {data:?}"
            );
            shown.extend_from_slice(&data);
        }
        assert_eq!(shown, whole, "size {size}");
    }
}

/// The text an OpenAI stream shows.
fn text_of(bytes: &[u8]) -> String {
    let mut scanner = seawall_stream::sse::Scanner::default();
    let mut decoder = seawall_stream::protocol::Decoder::new(seawall_stream::Provider::OpenAi);
    let mut text = String::new();
    scanner
        .feed(bytes, |item| {
            if let seawall_stream::protocol::Signal::Content { text: Some(t), .. } =
                decoder.decode(item)
            {
                text.push_str(&t);
            }
        })
        .unwrap();
    text
}

/// A continuation in small pieces that repeats two delivered words: spliced
/// whole, the repeat trimmed.
#[tokio::test]
async fn a_continuation_in_pieces_is_spliced_and_trimmed() {
    let mut continuation = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n".to_vec();
    for word in [" w2", " w3", " w4", " w5"] {
        continuation.extend_from_slice(&chunk(word));
    }
    continuation.extend_from_slice(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    );
    let continuation = Bytes::from(continuation);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new().align_window(8))
        .service(service_fn(
            move |req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                let n = counted.fetch_add(1, Ordering::SeqCst);
                let continuation = continuation.clone();
                async move {
                    if n == 1 {
                        let body = req.into_body().collect().await?.to_bytes();
                        let json: serde_json::Value = serde_json::from_slice(&body)?;
                        assert_eq!(json["messages"][1]["content"], "w1 w2 w3");
                    }
                    Ok::<_, BoxError>(match n {
                        0 => stream(vec![
                            Ok(chunk("w1")),
                            Ok(chunk(" w2")),
                            Ok(chunk(" w3")),
                            Err(cut("w1 w2 w3")),
                        ]),
                        _ => stream(
                            continuation
                                .chunks(7)
                                .map(|c| Ok(Bytes::copy_from_slice(c)))
                                .collect(),
                        ),
                    })
                }
            },
        ));
    let request = http::Request::post("http://api.example/v1/chat/completions")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        )))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let shown = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(text_of(&shown), "w1 w2 w3 w4 w5");
    let report = resumed.report();
    assert_eq!(report.resumed(), 1);
    assert_eq!(report.resumes[0].trimmed_chars, " w2 w3".len() as u64);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}
