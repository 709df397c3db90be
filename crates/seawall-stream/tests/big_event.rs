//! A generated image arrives as one event: a 4K PNG is about 7.8 MB, some
//! 10.4 MB of base64 in one Gemini `inlineData` part (python-genai#2248).
//! The provider has billed it whole; the default caps deliver it, over the
//! JSON array and over `alt=sse`, first or after text, within the memory
//! bound the caps document.

mod common;

use std::convert::Infallible;

use bytes::Bytes;
use common::{GEMINI, Step, drain, scripted, send};
use http::{Request, Response};
use http_body_util::BodyExt;
use seawall_stream::StreamGuardLayer;
use tower::{Layer, ServiceExt};

/// A 4K PNG's base64: about 10.4 MB.
const IMAGE_BASE64: usize = 10_400_000;

/// The frames a provider writes: 16 KiB each.
const FRAME: usize = 16 << 10;

fn image_chunk() -> String {
    format!(
        "{{\"candidates\":[{{\"content\":{{\"parts\":[{{\"inlineData\":{{\"mimeType\":\"image/png\",\"data\":\"{}\"}}}}],\"role\":\"model\"}},\"finishReason\":\"STOP\",\"index\":0}}],\"usageMetadata\":{{\"promptTokenCount\":12,\"candidatesTokenCount\":2000,\"totalTokenCount\":2012}}}}",
        "A".repeat(IMAGE_BASE64)
    )
}

fn text_chunk(text: &str) -> String {
    format!(
        "{{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":\"{text}\"}}],\"role\":\"model\"}},\"index\":0}}]}}"
    )
}

/// `body` cut into frames of [`FRAME`] bytes.
fn framed(body: &[u8]) -> Vec<Step> {
    body.chunks(FRAME)
        .map(|frame| send(Bytes::copy_from_slice(frame)))
        .collect()
}

/// The guard, as the default layer, over a provider that answers once
/// with `body` framed, as `content_type`.
async fn answer(
    content_type: &'static str,
    path: &str,
    body: &[u8],
) -> Response<seawall_stream::GuardBody<common::ChannelBody>> {
    let mut script = Some(scripted(framed(body)));
    let provider = tower::service_fn(move |_req: Request<()>| {
        let body = script.take().expect("called once");
        async move {
            Ok::<_, Infallible>(
                Response::builder()
                    .header("content-type", content_type)
                    .body(body)
                    .unwrap(),
            )
        }
    });
    let request = Request::post(format!("https://provider.example{path}"))
        .body(())
        .unwrap();
    StreamGuardLayer::default()
        .layer(provider)
        .oneshot(request)
        .await
        .expect("the image is delivered, not refused")
}

fn json_array(chunks: &[String]) -> Vec<u8> {
    format!("[{}\r\n]", chunks.join(",\r\n")).into_bytes()
}

fn event_stream(chunks: &[String]) -> Vec<u8> {
    chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\r\n\r\n"))
        .collect::<String>()
        .into_bytes()
}

#[tokio::test(start_paused = true)]
async fn a_4k_image_element_is_delivered_not_refused() {
    let sent = json_array(&[image_chunk()]);
    let drained = drain(answer("application/json", GEMINI, &sent).await).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert_eq!(drained.bytes.len(), sent.len());
    assert!(drained.bytes == sent, "the bytes handed on are those sent");
    assert!(drained.report.completed_task(), "{:?}", drained.report);
}

#[tokio::test(start_paused = true)]
async fn a_4k_image_event_is_delivered_not_refused() {
    let sent = event_stream(&[image_chunk()]);
    let path = format!("{GEMINI}?alt=sse");
    let drained = drain(answer("text/event-stream", &path, &sent).await).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert_eq!(drained.bytes.len(), sent.len());
    assert!(drained.bytes == sent, "the bytes handed on are those sent");
    assert!(drained.report.completed_task(), "{:?}", drained.report);
}

/// Text first, the image after it: the image is not dropped with the
/// stream cut as interrupted.
#[tokio::test(start_paused = true)]
async fn text_then_a_4k_image_is_delivered_whole() {
    let chunks = [text_chunk("Here is your image."), image_chunk()];
    let path = format!("{GEMINI}?alt=sse");
    for (content_type, path, sent) in [
        ("application/json", GEMINI, json_array(&chunks)),
        ("text/event-stream", path.as_str(), event_stream(&chunks)),
    ] {
        let drained = drain(answer(content_type, path, &sent).await).await;
        assert!(
            drained.error.is_none(),
            "{content_type}: {:?}",
            drained.error
        );
        assert!(drained.bytes == sent, "{content_type}: the bytes sent");
        assert!(drained.report.completed_task(), "{content_type}");
    }
}

/// What the guard holds for an image stays within the bound its caps
/// document (`max_event_bytes`): the element carried once while it spans
/// frames, the frames held before it is the first content, and the
/// buffers' rounding up — never growing with the stream past them.
#[tokio::test(start_paused = true)]
async fn the_guard_holds_an_image_within_its_documented_bound() {
    let sent = json_array(&[image_chunk()]);
    let response = answer("application/json", GEMINI, &sent).await;
    let mut body = std::pin::pin!(response.into_body());
    let mut most = body.buffered_bytes();
    let mut delivered = 0;
    while let Some(frame) = body.as_mut().frame().await {
        delivered += frame.unwrap().into_data().unwrap().len();
        most = most.max(body.buffered_bytes());
    }
    assert_eq!(delivered, sent.len());
    // The element carried (capacity up to twice its length) and the frames
    // held until it ends, which hold it once more: measured 2.6 times.
    assert!(
        most <= 3 * sent.len(),
        "held {most} bytes for {}",
        sent.len()
    );
}
