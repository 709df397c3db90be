//! Where a Responses API answer's text is (its item's id, output index
//! and content index) is learned from the last event that names it, not
//! from the last event before the cut: OpenAI sends `keepalive` events
//! (`{"type":"keepalive","sequence_number":N}`) on long requests, and the
//! guard's idle bound cuts after them; a cut right after the message's
//! `response.output_item.done` names the item in `item.id`. A continuation
//! is still said in the caller's item, and its end still says the
//! caller's whole text.

// Only its `stream` is used here: the chunks are the chat suites'.
#[allow(dead_code)]
#[path = "common/chat_script.rs"]
mod chat_script;
// Only its `event` is used here: the stored stream is the background
// suites'.
#[allow(dead_code)]
#[path = "common/stored_stream.rs"]
mod stored_stream;

use bytes::Bytes;
use chat_script::stream;
use http_body_util::{BodyExt, Full};
use seawall_core::provider::Provider;
use seawall_core::{BoxError, Code, Failure, Interrupted};
use seawall_resume::{AnsweredIn, ResumeLayer, ResumeReport, ResumeRequestBody, Resumed};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tower::{ServiceBuilder, ServiceExt, service_fn};

type Items = Vec<Result<Bytes, Box<Failure>>>;

/// A cut after content, as the guard reports it: `text` its record of the
/// stream's text.
fn cut(text: &str, content_events: u64) -> Box<Failure> {
    let mut interrupted = Interrupted::default();
    interrupted.delivered_text = Some(text.to_owned());
    interrupted.content_events = content_events;
    interrupted.cause = Some(Code::Transport);
    Box::new(Failure::new(Code::StreamInterrupted).with_interrupted(interrupted))
}

fn event(kind: &str, data: Value, seq: usize) -> Result<Bytes, Box<Failure>> {
    Ok(Bytes::from(stored_stream::event(kind, data, seq)))
}

/// A Responses API answer that said `w1 w2` in `msg_1`, its output item 0
/// — after a reasoning item with its own id, so that a place learned from
/// an earlier event is a wrong one — then `after` (the events shown
/// before the cut), then the cut.
fn cut_after(after: Vec<Result<Bytes, Box<Failure>>>) -> Items {
    let response = json!({"id": "resp_1", "object": "response", "created_at": 1,
        "status": "in_progress", "model": "m", "output": []});
    let mut items = vec![
        event("response.created", json!({"response": response}), 0),
        event(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"type": "reasoning", "id": "rs_1",
                "summary": []}}),
            1,
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 0, "item": {"type": "reasoning", "id": "rs_1",
                "summary": []}}),
            2,
        ),
        event(
            "response.output_item.added",
            json!({"output_index": 1, "item": {"type": "message", "id": "msg_1",
                "status": "in_progress", "role": "assistant", "content": []}}),
            3,
        ),
        event(
            "response.content_part.added",
            json!({"item_id": "msg_1", "output_index": 1, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}}),
            4,
        ),
        event(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "w1"}),
            5,
        ),
        event(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": " w2"}),
            6,
        ),
    ];
    items.extend(after);
    items.push(Err(cut("w1 w2", 2)));
    items
}

/// OpenAI's keep-alives, the last events before an idle cut.
fn keepalives() -> Items {
    (7..10)
        .map(|seq| event("keepalive", json!({}), seq))
        .collect()
}

/// The text's closing events, the message item's `output_item.done` the
/// last before the cut.
fn message_done() -> Items {
    let part = json!({"type": "output_text", "text": "w1 w2", "annotations": []});
    vec![
        event(
            "response.output_text.done",
            json!({"item_id": "msg_1", "output_index": 1, "content_index": 0,
                "text": "w1 w2"}),
            7,
        ),
        event(
            "response.content_part.done",
            json!({"item_id": "msg_1", "output_index": 1, "content_index": 0,
                "part": part}),
            8,
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 1, "item": {"type": "message", "id": "msg_1",
                "status": "completed", "role": "assistant", "content": [part]}}),
            9,
        ),
    ]
}

fn chat(data: Value) -> Result<Bytes, Box<Failure>> {
    Ok(Bytes::from(format!("data: {data}\n\n")))
}

/// A continuation in OpenAI chat's format (a fallback route's): ` w3`,
/// then its finish.
fn chat_continuation() -> Items {
    let chunk = |delta: Value, finish: Value| {
        chat(
            json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 2,
            "model": "other", "choices": [{"index": 0, "delta": delta,
            "finish_reason": finish}]}),
        )
    };
    vec![
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": " w3"}), Value::Null),
        chunk(json!({}), json!("stop")),
        Ok(Bytes::from_static(b"data: [DONE]\n\n")),
    ]
}

/// A continuation in the Responses API's own format that ends at once:
/// the answer was whole but for its finish.
fn ended_at_once() -> Items {
    let response = |status: &str| {
        json!({"id": "resp_2", "object": "response", "created_at": 2, "status": status,
            "model": "m", "output": [],
            "usage": {"input_tokens": 5, "output_tokens": 0, "total_tokens": 5}})
    };
    vec![
        event(
            "response.created",
            json!({"response": response("in_progress")}),
            0,
        ),
        event(
            "response.in_progress",
            json!({"response": response("in_progress")}),
            1,
        ),
        event(
            "response.completed",
            json!({"response": response("completed")}),
            2,
        ),
    ]
}

struct Read {
    events: Vec<Value>,
    error: Option<BoxError>,
    report: ResumeReport,
}

impl Read {
    /// The text of the caller's text deltas, and the items they name.
    fn deltas(&self) -> (String, Vec<String>) {
        let deltas = self
            .events
            .iter()
            .filter(|event| event["type"] == "response.output_text.delta");
        let text = deltas
            .clone()
            .filter_map(|event| event["delta"].as_str())
            .collect();
        let items = deltas
            .map(|event| event["item_id"].as_str().unwrap_or("").to_owned())
            .collect();
        (text, items)
    }

    /// The terminal `response.completed`'s message text.
    fn final_text(&self) -> Option<String> {
        let completed = self
            .events
            .iter()
            .rfind(|event| event["type"] == "response.completed")?;
        let output = completed.pointer("/response/output")?.as_array()?;
        let message = output.iter().find(|item| item["type"] == "message")?;
        assert_eq!(message["id"], "msg_1", "under the caller's item");
        message
            .pointer("/content/0/text")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}

/// A Responses API request through the layer: the original streams
/// `first`, the one continuation `rest`, marked as answered in
/// `answered_in` when given.
async fn run(first: Items, rest: Items, answered_in: Option<Provider>) -> Read {
    let script = Arc::new(Mutex::new(vec![rest, first]));
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new())
        .service(service_fn(
            move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                let (next, left) = {
                    let mut script = script.lock().unwrap();
                    (script.pop(), script.len())
                };
                async move {
                    let mut response = stream(next.expect("a scripted stream"));
                    if let (0, Some(provider)) = (left, answered_in) {
                        response.extensions_mut().insert(AnsweredIn(provider));
                    }
                    Ok::<_, BoxError>(response)
                }
            },
        ));
    let request = json!({"model": "m", "stream": true, "input": "hi"});
    let request = http::Request::post("http://api.example/v1/responses")
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
    let events = String::from_utf8_lossy(&shown)
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .collect();
    Read {
        events,
        error,
        report: resumed.report(),
    }
}

/// Keep-alives after the text, then an idle cut; the continuation comes
/// from a route in OpenAI chat's format: its text is said in the caller's
/// item, and the end says the whole text — not given up as another
/// format with the continuation already sent and billed.
#[tokio::test]
async fn a_continuation_after_keepalives_is_said_in_the_callers_item() {
    for (case, after) in [("keepalive", keepalives()), ("item done", message_done())] {
        let read = run(
            cut_after(after),
            chat_continuation(),
            Some(Provider::OpenAi),
        )
        .await;
        assert!(read.error.is_none(), "{case}: {:?}", read.error);
        assert_eq!(read.report.gave_up, None, "{case}");
        assert_eq!(read.report.resumes.len(), 1, "{case}");
        assert!(read.report.resumes[0].spliced, "{case}");
        let (text, items) = read.deltas();
        assert_eq!(text, "w1 w2 w3", "{case}");
        assert!(
            items.iter().all(|item| item == "msg_1"),
            "{case}: {items:?}"
        );
        assert_eq!(read.final_text().as_deref(), Some("w1 w2 w3"), "{case}");
    }
}

/// Keep-alives after the text, or the message's `output_item.done`, then
/// the cut; the continuation ends at once: its `response.completed` says
/// the caller's whole text in the caller's item (openai-python's
/// `get_final_response().output_text` reads it there).
#[tokio::test]
async fn a_continuation_that_ends_at_once_after_keepalives_says_the_whole_text() {
    for (case, after) in [("keepalive", keepalives()), ("item done", message_done())] {
        let read = run(cut_after(after), ended_at_once(), None).await;
        assert!(read.error.is_none(), "{case}: {:?}", read.error);
        assert_eq!(read.report.gave_up, None, "{case}");
        assert_eq!(read.deltas().0, "w1 w2", "{case}");
        assert_eq!(read.final_text().as_deref(), Some("w1 w2"), "{case}");
    }
}
