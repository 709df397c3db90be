//! Continuations the chaos server does not produce: built by hand.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full};
use seawall_core::{BoxError, Code, Failure, Interrupted};
use seawall_resume::{ResumeLayer, ResumeRequestBody, Resumed};
use tower::{ServiceBuilder, ServiceExt, service_fn};

/// Frames, then an optional error.
struct Scripted(VecDeque<Result<Bytes, Failure>>);

impl Body for Scripted {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Poll::Ready(self.0.pop_front().map(|item| {
            item.map(Frame::data)
                .map_err(|failure| Box::new(failure) as BoxError)
        }))
    }
}

fn chunk(text: &str) -> Bytes {
    Bytes::from(format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
    ))
}

fn cut(delivered: &str) -> Failure {
    let mut interrupted = Interrupted::default();
    interrupted.delivered_text = Some(delivered.to_owned());
    interrupted.content_events = 2;
    interrupted.cause = Some(Code::Transport);
    Failure::new(Code::StreamInterrupted).with_interrupted(interrupted)
}

fn stream(items: Vec<Result<Bytes, Failure>>) -> http::Response<Scripted> {
    http::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Scripted(items.into()))
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
