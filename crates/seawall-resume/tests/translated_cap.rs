//! The text of a continuation answered in another wire format is kept up
//! to the layer's `max_text` (the guard's record, 1 MiB by default): past
//! it the caller is still shown the text, but the record says it is a
//! prefix, and no end event says a prefix as the caller's whole text.

// Only its `stream` is used here: the chunks are the chat suites'.
#[allow(dead_code)]
#[path = "common/chat_script.rs"]
mod chat_script;

use bytes::Bytes;
use chat_script::stream;
use http_body_util::{BodyExt, Full};
use seawall_core::provider::Provider;
use seawall_core::{BoxError, Code, Failure, Interrupted};
use seawall_resume::{AnsweredIn, ResumeLayer, ResumeReport, ResumeRequestBody, Resumed};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tower::{ServiceBuilder, ServiceExt, service_fn};

const MIB: usize = 1 << 20;

/// A cut after content, as the guard reports it: `text` its record of the
/// stream's text, `capped` when that record stopped at the guard's cap.
fn cut(text: &str, content_events: u64, capped: bool) -> Box<Failure> {
    let mut interrupted = Interrupted::default();
    interrupted.delivered_text = Some(text.to_owned());
    interrupted.text_capped = capped;
    interrupted.content_events = content_events;
    interrupted.cause = Some(Code::Transport);
    Box::new(Failure::new(Code::StreamInterrupted).with_interrupted(interrupted))
}

fn anthropic(name: &str, data: Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// 64 KiB of words, each with its space before it.
fn words() -> String {
    " word".repeat(64 * 1024 / 5)
}

/// An Anthropic continuation saying `deltas` text deltas of [`words`],
/// then `end`: its finish, or its cut.
fn anthropic_continuation(
    deltas: usize,
    end: Vec<Result<Bytes, Box<Failure>>>,
) -> Vec<Result<Bytes, Box<Failure>>> {
    let mut items = vec![
        Ok(anthropic(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_a", "type": "message",
                "role": "assistant", "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        )),
        Ok(anthropic(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
        )),
    ];
    let text = words();
    for _ in 0..deltas {
        items.push(Ok(anthropic(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text}}),
        )));
    }
    items.extend(end);
    items
}

/// The clean end of an Anthropic message.
fn anthropic_end() -> Vec<Result<Bytes, Box<Failure>>> {
    vec![
        Ok(anthropic(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        )),
        Ok(anthropic(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 2}}),
        )),
        Ok(anthropic("message_stop", json!({"type": "message_stop"}))),
    ]
}

struct Read {
    shown: Vec<u8>,
    error: Option<BoxError>,
    report: ResumeReport,
}

/// `request` to `path` through `layer`: the original streams `first`,
/// the one continuation `rest`, marked as answered in Anthropic's format.
async fn run(
    layer: ResumeLayer,
    path: &str,
    request: Value,
    first: Vec<Result<Bytes, Box<Failure>>>,
    rest: Vec<Result<Bytes, Box<Failure>>>,
) -> Read {
    let script = Arc::new(Mutex::new(vec![rest, first]));
    let service = ServiceBuilder::new().layer(layer).service(service_fn(
        move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
            let next = script.lock().unwrap().pop();
            async move {
                let continuation = script_is_continuation(&next);
                let mut response = stream(next.expect("a scripted stream"));
                if continuation {
                    response
                        .extensions_mut()
                        .insert(AnsweredIn(Provider::Anthropic));
                }
                Ok::<_, BoxError>(response)
            }
        },
    ));
    let request = http::Request::post(format!("http://api.example{path}"))
        .body(Full::new(Bytes::from(request.to_string())))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let mut body = std::pin::pin!(response.into_body());
    let mut shown = Vec::new();
    let error = loop {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    shown.extend_from_slice(&data);
                }
            }
            Some(Err(error)) => break Some(error),
            None => break None,
        }
    };
    Read {
        shown,
        error,
        report: resumed.report(),
    }
}

/// Whether a scripted stream is the continuation: it opens with an
/// Anthropic `message_start` (the originals here are OpenAI's).
fn script_is_continuation(items: &Option<Vec<Result<Bytes, Box<Failure>>>>) -> bool {
    matches!(items.as_deref(), Some([Ok(first), ..]) if first.starts_with(b"event: message_start"))
}

fn chat_chunk(text: &str) -> Bytes {
    let data = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
        "model": "m", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    Bytes::from(format!("data: {data}\n\n"))
}

fn chat_request() -> Value {
    json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]})
}

fn interrupted(error: &BoxError) -> Interrupted {
    let failure = Failure::find(&**error).expect("a failure");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    failure.interrupted().cloned().expect("what was delivered")
}

/// Bytes of text in the caller's OpenAI chunks or Responses deltas.
fn text_shown(shown: &[u8]) -> usize {
    String::from_utf8_lossy(shown)
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .map(|json| {
            let text = json
                .pointer("/choices/0/delta/content")
                .or_else(|| (json["type"] == "response.output_text.delta").then(|| &json["delta"]))
                .and_then(Value::as_str);
            text.map_or(0, str::len)
        })
        .sum()
}

/// An OpenAI caller cut after one delta; the Anthropic continuation says
/// 3 MiB of text, then is cut (its guard's record stopped at 1 MiB). The
/// caller was shown all of it; the interruption's record keeps at most
/// 1 MiB and says it is a prefix — not the whole 3 MiB as complete.
#[tokio::test]
async fn a_translated_continuation_past_the_cap_keeps_a_capped_record() {
    let first = vec![Ok(chat_chunk("w1")), Err(cut("w1", 1, false))];
    let guard_record: String = words().repeat(16);
    let rest = anthropic_continuation(48, vec![Err(cut(&guard_record, 48, true))]);
    let read = run(
        ResumeLayer::new(),
        "/v1/chat/completions",
        chat_request(),
        first,
        rest,
    )
    .await;
    assert!(
        text_shown(&read.shown) > 3 * MIB - MIB / 8,
        "the caller saw the text"
    );
    let interrupted = interrupted(&read.error.expect("ends with the cut"));
    let kept = interrupted.delivered_text.expect("the text kept");
    assert!(kept.len() <= MIB, "kept {} bytes", kept.len());
    assert!(kept.starts_with("w1 word word"));
    assert!(interrupted.text_capped, "the record says it is a prefix");
    assert_eq!(read.report.gave_up, Some("text_not_kept"));
}

/// The layer's own cap, below the guard's: a continuation whose guard
/// kept its whole text still passes the layer's, and is recorded as a
/// prefix — never continued again from it.
#[tokio::test]
async fn the_layers_cap_marks_the_record_a_prefix() {
    let first = vec![Ok(chat_chunk("w1")), Err(cut("w1", 1, false))];
    let guard_record: String = words().repeat(4);
    let rest = anthropic_continuation(4, vec![Err(cut(&guard_record, 4, false))]);
    let read = run(
        ResumeLayer::new().max_text(100 * 1024),
        "/v1/chat/completions",
        chat_request(),
        first,
        rest,
    )
    .await;
    let interrupted = interrupted(&read.error.expect("ends with the cut"));
    let kept = interrupted.delivered_text.expect("the text kept");
    assert!(kept.len() <= 100 * 1024, "kept {} bytes", kept.len());
    assert!(interrupted.text_capped);
    assert_eq!(read.report.resumes.len(), 1, "not continued from a prefix");
    assert_eq!(read.report.gave_up, Some("text_not_kept"));
}

fn responses_event(kind: &str, mut data: Value, seq: usize) -> Bytes {
    data["type"] = json!(kind);
    data["sequence_number"] = json!(seq);
    Bytes::from(format!("event: {kind}\ndata: {data}\n\n"))
}

/// A Responses API stream cut after its first delta, `w1`.
fn responses_cut() -> Vec<Result<Bytes, Box<Failure>>> {
    let response = json!({"id": "resp_1", "object": "response", "status": "in_progress"});
    vec![
        Ok(responses_event(
            "response.created",
            json!({"response": response}),
            0,
        )),
        Ok(responses_event(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"type": "message", "id": "msg_1",
                "status": "in_progress", "role": "assistant", "content": []}}),
            1,
        )),
        Ok(responses_event(
            "response.content_part.added",
            json!({"item_id": "msg_1", "output_index": 0, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}}),
            2,
        )),
        Ok(responses_event(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "w1"}),
            3,
        )),
        Err(cut("w1", 1, false)),
    ]
}

/// A Responses API caller whose Anthropic continuation passes the cap
/// and ends well: its end events would say the whole text, which is not
/// kept. It is shown all the text, then the interruption — the record a
/// prefix, `gave_up` `text_not_kept`, as a same-format answer too long to
/// keep — never an `output_text.done` that calls a prefix the answer.
#[tokio::test]
async fn a_responses_caller_past_the_cap_is_not_told_a_prefix_is_whole() {
    let rest = anthropic_continuation(20, anthropic_end());
    let request = json!({"model": "m", "stream": true, "input": "hi"});
    let read = run(
        ResumeLayer::new(),
        "/v1/responses",
        request,
        responses_cut(),
        rest,
    )
    .await;
    assert!(
        text_shown(&read.shown) > MIB + MIB / 8,
        "the caller saw the text"
    );
    let shown = String::from_utf8_lossy(&read.shown);
    assert!(
        !shown.contains("response.output_text.done"),
        "no whole text said"
    );
    assert!(!shown.contains("response.completed"));
    let interrupted = interrupted(&read.error.expect("ends with the interruption"));
    assert!(interrupted.delivered_text.expect("the text kept").len() <= MIB);
    assert!(interrupted.text_capped);
    assert_eq!(read.report.gave_up, Some("text_not_kept"));
    assert_eq!(read.report.finish, None);
}

/// Under the cap, the same caller's answer ends as it did: the closing
/// events say the whole text.
#[tokio::test]
async fn a_responses_caller_under_the_cap_is_told_the_whole_text() {
    let rest = anthropic_continuation(2, anthropic_end());
    let request = json!({"model": "m", "stream": true, "input": "hi"});
    let read = run(
        ResumeLayer::new(),
        "/v1/responses",
        request,
        responses_cut(),
        rest,
    )
    .await;
    assert!(read.error.is_none(), "{:?}", read.error);
    let shown = String::from_utf8_lossy(&read.shown);
    let whole = format!("w1{}", words().repeat(2));
    let done = shown
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|json| json["type"] == "response.output_text.done")
        .expect("the text said whole");
    assert_eq!(done["text"], whole);
}
