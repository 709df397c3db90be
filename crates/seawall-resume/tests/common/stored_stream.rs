//! What the background suites (`background.rs`, `retrieval_after_failure.rs`)
//! share: the stream a provider stores for a Responses API background
//! response, the request that asks for one, and how a test reads the
//! events the caller got. Included by `#[path]` in those suites (and in
//! `responses_place.rs`, for its `event`) only, so the other suites that
//! include `common` compile none of it.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use seawall_core::BoxError;
use serde_json::{Value, json};

/// The response the provider stores.
pub(crate) const ID: &str = "resp_bg123";
/// The words of its answer, `w1 … w12`.
pub(crate) const WORDS: usize = 12;

/// One event of `kind`, `data` with its type and sequence number.
pub(crate) fn event(kind: &str, mut data: Value, seq: usize) -> String {
    data["type"] = json!(kind);
    data["sequence_number"] = json!(seq);
    format!("event: {kind}\ndata: {data}\n\n")
}

/// The text of the whole answer.
pub(crate) fn answer() -> String {
    (1..=WORDS).map(|n| format!("w{n} ")).collect()
}

/// The whole stored stream of the answer `w1 … w12`, every event numbered.
pub(crate) fn stream() -> Vec<String> {
    let response = |status: &str| json!({"id": ID, "object": "response", "status": status});
    let mut events = vec![
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
            "response.output_item.added",
            json!({"output_index": 0, "item": {"type": "message", "id": "msg_1",
                "status": "in_progress", "role": "assistant", "content": []}}),
            2,
        ),
        event(
            "response.content_part.added",
            json!({"item_id": "msg_1", "output_index": 0, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}}),
            3,
        ),
    ];
    for n in 1..=WORDS {
        let seq = events.len();
        events.push(event(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 0, "content_index": 0,
                "delta": format!("w{n} ")}),
            seq,
        ));
    }
    let text = answer();
    let seq = events.len();
    events.push(event(
        "response.output_text.done",
        json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "text": text}),
        seq,
    ));
    let mut done = response("completed");
    done["output"] = json!([{"type": "message", "id": "msg_1", "status": "completed",
        "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}]);
    done["usage"] = json!({"input_tokens": 5, "output_tokens": WORDS, "total_tokens": 5 + WORDS});
    let seq = events.len();
    events.push(event("response.completed", json!({"response": done}), seq));
    events
}

/// `events` numbered from 0 as a new response (`id`) numbers its own.
pub(crate) fn renumbered<'a>(events: impl Iterator<Item = &'a String>, id: &str) -> Vec<String> {
    events
        .enumerate()
        .map(|(seq, event)| {
            let (name, data) = event.trim_end().split_once("\ndata: ").unwrap();
            let mut data: Value = serde_json::from_str(data).unwrap();
            data["sequence_number"] = json!(seq);
            if data["response"]["id"] == ID {
                data["response"]["id"] = json!(id);
            }
            format!("{name}\ndata: {data}\n\n")
        })
        .collect()
}

/// A streamed background request, its answer asked for as JSON when
/// `structured`.
pub(crate) fn background(structured: bool) -> Value {
    let mut body = json!({"model": "gpt-x", "input": "Count.", "stream": true, "background": true});
    if structured {
        // A JSON answer is no obstacle to a retrieval: nothing is generated.
        body["text"] = json!({"format": {"type": "json_schema", "name": "n",
            "schema": {"type": "object"}}});
    }
    body
}

/// Reads `body` to its end, or to its error, as a caller does, each frame
/// within `patience`: the text of its text deltas, the sequence number of
/// every event in order, and the error it ended with, if any.
pub(crate) async fn read_events<B>(
    body: B,
    patience: Duration,
) -> (String, Vec<u64>, Option<BoxError>)
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let mut body = std::pin::pin!(body);
    let mut bytes = Vec::new();
    let mut error = None;
    while let Some(frame) = tokio::time::timeout(patience, body.frame()).await.unwrap() {
        match frame {
            Ok(frame) => bytes.extend_from_slice(&frame.into_data().unwrap_or_default()),
            Err(e) => {
                error = Some(e.into());
                break;
            }
        }
    }
    let mut text = String::new();
    let mut sequence = Vec::new();
    for line in String::from_utf8(bytes).unwrap().lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let json: Value = serde_json::from_str(data).unwrap();
        sequence.push(json["sequence_number"].as_u64().unwrap());
        if json["type"] == "response.output_text.delta" {
            text.push_str(json["delta"].as_str().unwrap());
        }
    }
    (text, sequence, error)
}
