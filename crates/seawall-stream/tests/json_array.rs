//! Gemini's JSON-array stream (`:streamGenerateContent` without `alt=sse`)
//! through the guard: the same verdicts as its event stream, with the
//! array's own framing (`[`, `,`, `]`) checked.

mod common;

use std::convert::Infallible;
use std::time::Duration;

use common::{Step, drain, failure_of, scripted, send, wait};
use http::{Request, Response};
use seawall_core::{Code, FinishKind};
use seawall_stream::{Provider, StreamGuardLayer};
use tower::{Layer, ServiceExt};

const PATH: &str = "/v1beta/models/gemini-x:streamGenerateContent";

fn chunk(text: &str, finish: Option<&str>) -> String {
    let finish = finish
        .map(|f| format!(",\"finishReason\":\"{f}\""))
        .unwrap_or_default();
    format!(
        "{{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":{}}}],\"role\":\"model\"}}{finish},\"index\":0}}],\"usageMetadata\":{{\"promptTokenCount\":3,\"candidatesTokenCount\":2,\"totalTokenCount\":5}}}}",
        serde_json::to_string(text).unwrap()
    )
}

fn layer() -> StreamGuardLayer {
    StreamGuardLayer::interactive()
        .first_byte_timeout(Duration::from_secs(1))
        .first_content_timeout(Duration::from_secs(2))
        .idle_timeout(Duration::from_secs(3))
}

/// Calls the guard at `path_and_query` over a provider that answers
/// `content_type` with the scripted body.
async fn call(
    path_and_query: &str,
    content_type: Option<&str>,
    script: Vec<Step>,
) -> Result<Response<seawall_stream::GuardBody<common::ChannelBody>>, seawall_core::BoxError> {
    let mut body = Some(scripted(script));
    let content_type = content_type.map(str::to_owned);
    let provider = tower::service_fn(move |_req: Request<()>| {
        let body = body.take().expect("called once");
        let mut response = Response::builder();
        if let Some(content_type) = &content_type {
            response = response.header("content-type", content_type.as_str());
        }
        async move { Ok::<_, Infallible>(response.body(body).unwrap()) }
    });
    let request = Request::post(format!("https://provider.example{path_and_query}"))
        .body(())
        .unwrap();
    layer().layer(provider).oneshot(request).await
}

/// The elements of a healthy two-chunk answer, cut into frames at odd places.
fn healthy() -> Vec<Step> {
    let body = format!(
        "[{}\r\n,{}\r\n]",
        chunk("Hello", None),
        chunk(" world", Some("STOP"))
    );
    let (a, rest) = body.split_at(7);
    let (b, c) = rest.split_at(rest.len() - 40);
    vec![
        send(a.to_owned()),
        send(b.to_owned()),
        wait(0.1),
        send(c.to_owned()),
    ]
}

#[tokio::test(start_paused = true)]
async fn a_whole_array_with_its_finish_is_a_finished_stream() {
    let response = call(PATH, Some("application/json; charset=UTF-8"), healthy())
        .await
        .expect("content arrived");
    assert!(response.body().is_guarded());
    let d = drain(response).await;
    assert!(d.error.is_none(), "{:?}", d.error);
    let elements: Vec<serde_json::Value> = serde_json::from_slice(&d.bytes).unwrap();
    assert_eq!(elements.len(), 2, "the body passes untouched");
    assert_eq!(d.report.provider, Provider::Gemini);
    assert_eq!(d.report.code, None);
    assert_eq!(d.report.finish_kind(), Some(FinishKind::Complete));
    assert_eq!((d.report.events, d.report.content_events), (2, 2));
    assert_eq!(d.report.usage.map(|u| u.output_tokens), Some(2));
    assert!(d.report.completed_task());
}

#[tokio::test(start_paused = true)]
async fn with_alt_sse_or_an_event_stream_type_it_is_read_as_sse() {
    // `alt=sse` answered with JSON is a unary answer: not guarded here.
    let response = call(
        &format!("{PATH}?alt=sse"),
        Some("application/json"),
        healthy(),
    )
    .await
    .unwrap();
    assert!(!response.body().is_guarded());
    // An event-stream answer is read as one, whatever the query said.
    let frames = vec![send(format!("data: {}\r\n\r\n", chunk("Hi", Some("STOP"))))];
    let response = call(PATH, Some("text/event-stream"), frames).await.unwrap();
    let d = drain(response).await;
    assert_eq!((d.report.code, d.report.content_events), (None, 1));
}

#[tokio::test(start_paused = true)]
async fn an_array_cut_before_its_bracket_is_truncated_even_after_the_finish() {
    let body = format!(
        "[{}\r\n,{}",
        chunk("Hello", None),
        chunk(" world", Some("STOP"))
    );
    let response = call(PATH, Some("application/json"), vec![send(body)])
        .await
        .unwrap();
    let d = drain(response).await;
    let failure = d.error.expect("no `]`: the answer is cut");
    assert_eq!(failure.code(), Code::Truncated);
    let delivered = failure.interrupted().expect("a delivered record");
    assert_eq!(delivered.delivered_text.as_deref(), Some("Hello world"));
    assert_eq!(delivered.content_events, 2);
}

#[tokio::test(start_paused = true)]
async fn a_closed_array_without_a_finish_is_truncated() {
    let body = format!("[{}\r\n]", chunk("Hello", None));
    let d = drain(call(PATH, None, vec![send(body)]).await.unwrap()).await;
    assert_eq!(d.error.map(|f| f.code()), Some(Code::Truncated));
}

#[tokio::test(start_paused = true)]
async fn garbage_after_the_array_is_a_protocol_violation() {
    let body = format!("[{}\r\n]", chunk("Hello", Some("STOP")));
    let steps = vec![send(body), send("\r\n<html>")];
    let d = drain(call(PATH, Some("application/json"), steps).await.unwrap()).await;
    let failure = d.error.expect("trailing data fails the stream");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(
        failure.interrupted().and_then(|i| i.cause),
        Some(Code::ProtocolViolation)
    );
    assert!(
        failure
            .message()
            .unwrap_or_default()
            .contains("json_array_trailing_data"),
        "{failure}"
    );
}

#[tokio::test(start_paused = true)]
async fn before_content_framing_faults_are_retryable_failures() {
    let cases: [(&str, Code, &str); 4] = [
        (
            "<html>captive</html>",
            Code::ProtocolViolation,
            "json_array_not_an_array",
        ),
        ("[]", Code::EmptyResponse, ""),
        ("[,", Code::ProtocolViolation, "json_array_unexpected_byte"),
        ("[{\"candidates\":[]}\r\n", Code::EmptyResponse, ""),
    ];
    for (body, code, name) in cases {
        let failure = failure_of(call(PATH, Some("application/json"), vec![send(body)]).await);
        assert_eq!(failure.code(), code, "{body}");
        assert!(
            failure.message().unwrap_or_default().contains(name),
            "{body}: {failure}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn an_element_over_the_cap_fails_without_growing() {
    let big = chunk(&"x".repeat(4096), None);
    let layer = layer().max_event_bytes(1024);
    let mut body = Some(scripted(vec![send("["), send(big)]));
    let provider = tower::service_fn(move |_req: Request<()>| {
        let body = body.take().unwrap();
        async move {
            Ok::<_, Infallible>(
                Response::builder()
                    .header("content-type", "application/json")
                    .body(body)
                    .unwrap(),
            )
        }
    });
    let request = Request::post(format!("https://provider.example{PATH}"))
        .body(())
        .unwrap();
    let failure = failure_of(layer.layer(provider).oneshot(request).await);
    // Our own cap: `answer_too_large`, not a broken body.
    assert_eq!(failure.code(), Code::AnswerTooLarge);
    assert!(
        failure
            .message()
            .unwrap_or_default()
            .contains("json_array_element_too_large"),
        "{failure}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_same_bounds_hold_first_byte_and_idle() {
    // Headers, then nothing: the first-byte bound.
    let started = tokio::time::Instant::now();
    let failure = failure_of(call(PATH, Some("application/json"), vec![Step::Hang]).await);
    assert_eq!(failure.code(), Code::FirstByteTimeout);
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    // Content, then silence: an interruption at the idle bound.
    let steps = vec![send(format!("[{}", chunk("Hello", None))), Step::Hang];
    let d = drain(call(PATH, Some("application/json"), steps).await.unwrap()).await;
    let failure = d.error.unwrap();
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(
        failure.interrupted().and_then(|i| i.cause),
        Some(Code::IdleTimeout)
    );
    assert_eq!(
        failure
            .interrupted()
            .and_then(|i| i.delivered_text.clone())
            .as_deref(),
        Some("Hello")
    );
}

#[tokio::test(start_paused = true)]
async fn a_slow_response_head_is_bounded_from_the_call() {
    // The layers below hold the response (a classifier reading the array's
    // opening): the first-byte bound still runs from the call.
    let provider = tower::service_fn(|_req: Request<()>| async {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok::<_, Infallible>(Response::new(common::scripted(vec![])))
    });
    let started = tokio::time::Instant::now();
    let request = Request::post(format!("https://provider.example{PATH}"))
        .body(())
        .unwrap();
    let failure = failure_of(layer().layer(provider).oneshot(request).await);
    assert_eq!(failure.code(), Code::FirstByteTimeout);
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    // With `alt=sse` the request is bounded by the deadline outside, as any.
    let provider = tower::service_fn(|_req: Request<()>| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        let response = Response::builder().header("content-type", "application/json");
        Ok::<_, Infallible>(response.body(common::scripted(vec![])).unwrap())
    });
    let request = Request::post(format!("https://provider.example{PATH}?alt=sse"))
        .body(())
        .unwrap();
    let response = layer().layer(provider).oneshot(request).await.unwrap();
    assert!(!response.body().is_guarded());
    assert_eq!(started.elapsed(), Duration::from_secs(6));
}

#[tokio::test(start_paused = true)]
async fn an_error_element_after_content_is_never_handed_on() {
    let error =
        r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#;
    let first = format!("[{}\r\n", chunk("Hello", None));
    // The error element in the frame that carries content before it, and
    // in a frame of its own (the separator came before it).
    for steps in [
        vec![send(format!("{first},{error}\r\n]"))],
        vec![send(format!("{first},")), send(format!("{error}\r\n]"))],
    ] {
        let response = call(PATH, Some("application/json"), steps).await.unwrap();
        let d = drain(response).await;
        let shown = String::from_utf8(d.bytes.to_vec()).unwrap();
        assert_eq!(shown, format!("{first},"), "only what came before it");
        let failure = d.error.expect("the provider's error ends the stream");
        assert_eq!(failure.code(), Code::StreamInterrupted, "{failure}");
        let delivered = failure.interrupted().unwrap();
        assert_eq!(delivered.cause, Some(Code::Overloaded));
        assert_eq!(delivered.bytes, shown.len() as u64);
    }
}
