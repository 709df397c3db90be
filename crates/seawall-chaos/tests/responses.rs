//! The OpenAI Responses API wire (`POST /v1/responses`): healthy answers and
//! every fault in its shape, driven by a plain hyper client.

mod common;

use std::time::Duration;

use common::*;
use seawall_chaos::{ChaosServer, FaultSource, Outcome, Provider};

const WAIT: Duration = Duration::from_secs(5);

const TERMINAL: [&str; 3] = [
    "response.completed",
    "response.incomplete",
    "response.failed",
];

/// Every event names its data's `type`, and the `sequence_number`s count
/// 0, 1, 2, ... over the whole stream.
fn assert_well_numbered(body: &str) {
    let events = events(body);
    assert!(!events.is_empty(), "no events in {body:?}");
    for (k, event) in events.iter().enumerate() {
        assert_eq!(event.data["type"], event.name.as_str(), "{body}");
        assert_eq!(event.data["sequence_number"], k as u64, "{body}");
    }
    assert!(!body.contains("[DONE]"));
}

/// The stream's terminal events: asserts there is exactly one and it is the
/// last event, and returns it.
fn the_terminal(body: &str) -> Event {
    let mut events = events(body);
    let terminals = events
        .iter()
        .filter(|e| TERMINAL.contains(&e.name.as_str()))
        .count();
    assert_eq!(terminals, 1, "{body}");
    let last = events.pop().unwrap();
    assert!(TERMINAL.contains(&last.name.as_str()), "{body}");
    last
}

fn no_terminal(body: &str) -> bool {
    events(body)
        .iter()
        .all(|e| !TERMINAL.contains(&e.name.as_str()))
}

#[tokio::test]
async fn healthy_stream_is_numbered_events_ending_in_response_completed() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let headers = [
        ("x-chaos-fault", "ok;tokens=3"),
        ("x-chaos-request-id", "s"),
    ];
    let reply = post(chaos.addr(), RESPONSES, &headers, RESPONSES_STREAM_BODY).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert_eq!(reply.header("x-request-id"), Some("req_chaos1"));
    assert!(reply.error.is_none());
    let text = reply.text();
    assert_well_numbered(&text);
    assert_eq!(
        event_names(&text),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(responses_text(&text), "w1 w2 w3");
    let events = events(&text);
    let created = &events[0].data["response"];
    assert_eq!(created["status"], "in_progress");
    assert_eq!(created["output"], serde_json::json!([]));
    let delta = &events[5].data;
    assert_eq!(delta["delta"], " w2");
    assert_eq!(delta["item_id"], "msg_chaos1");
    assert_eq!(
        (
            delta["output_index"].as_u64(),
            delta["content_index"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert_eq!(events[7].data["text"], "w1 w2 w3");

    let done = the_terminal(&text);
    let response = &done.data["response"];
    assert_eq!(response["id"], "resp_chaos1");
    assert_eq!(response["object"], "response");
    assert_eq!(response["status"], "completed");
    assert_eq!(response["model"], "gpt-x");
    assert_eq!(response["output"][0]["type"], "message");
    assert_eq!(response["output"][0]["content"][0]["type"], "output_text");
    assert_eq!(response["output"][0]["content"][0]["text"], "w1 w2 w3");
    assert_eq!(response["usage"]["output_tokens"], 3);

    let row = tokio::time::timeout(WAIT, chaos.wait_for_request("s"))
        .await
        .unwrap();
    assert_eq!(row.outcome, Outcome::Completed);
    assert_eq!(row.provider, Some(Provider::OpenAiResponses));
    assert_eq!(row.path, RESPONSES);
    assert_eq!(row.model.as_deref(), Some("gpt-x"));
    assert!(row.stream);
    assert_eq!(row.tokens_written, 3);
    assert_eq!(row.bytes_written, reply.body.len() as u64);
}

#[tokio::test]
async fn healthy_unary_is_a_completed_response() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(chaos.addr(), RESPONSES, &[], RESPONSES_UNARY_BODY).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(
        reply.header("content-length"),
        Some(reply.body.len().to_string().as_str())
    );
    let v = reply.json();
    assert_eq!(v["object"], "response");
    assert_eq!(v["id"], "resp_chaos1");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["model"], "gpt-x");
    let item = &v["output"][0];
    assert_eq!(
        (&item["type"], &item["role"], &item["status"]),
        (
            &serde_json::json!("message"),
            &serde_json::json!("assistant"),
            &serde_json::json!("completed")
        )
    );
    assert!(item["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        item["content"],
        serde_json::json!([{"type": "output_text", "text": "w1 w2 w3 w4 w5 w6 w7 w8", "annotations": []}])
    );
    let usage = &v["usage"];
    assert_eq!(usage["output_tokens"], 8);
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(usage["input_tokens"].as_u64().unwrap() + 8)
    );
    let row = &chaos.journal()[0];
    assert_eq!((row.outcome, row.tokens_written), (Outcome::Completed, 8));
    assert!(!row.stream);
}

#[tokio::test]
async fn length_ends_in_response_incomplete() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let fault = [("x-chaos-fault", "length;tokens=2")];
    let reply = post(chaos.addr(), RESPONSES, &fault, RESPONSES_STREAM_BODY).await;
    let text = reply.text();
    assert_well_numbered(&text);
    assert_eq!(responses_text(&text), "w1 w2");
    let end = the_terminal(&text);
    assert_eq!(end.name, "response.incomplete");
    assert_eq!(end.data["response"]["status"], "incomplete");
    assert_eq!(
        end.data["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    assert_eq!(
        end.data["response"]["output"][0]["content"][0]["text"],
        "w1 w2"
    );

    let reply = post(chaos.addr(), RESPONSES, &fault, RESPONSES_UNARY_BODY).await;
    let v = reply.json();
    assert_eq!(v["status"], "incomplete");
    assert_eq!(v["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(v["output"][0]["content"][0]["text"], "w1 w2");
    assert_eq!(v["usage"]["output_tokens"], 2);
}

#[tokio::test]
async fn refusal_is_a_refusal_part_in_a_completed_response() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-fault", "refusal;tokens=1")],
        RESPONSES_STREAM_BODY,
    )
    .await;
    let text = reply.text();
    assert_well_numbered(&text);
    assert_eq!(responses_text(&text), "w1");
    let events = events(&text);
    let refusal = |name: &str| {
        events
            .iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    assert_eq!(
        refusal("response.refusal.delta").data["delta"],
        "I can't help with that."
    );
    assert_eq!(
        refusal("response.refusal.done").data["refusal"],
        "I can't help with that."
    );
    assert_eq!(refusal("response.refusal.done").data["content_index"], 1);
    let end = the_terminal(&text);
    assert_eq!(end.name, "response.completed");
    assert_eq!(end.data["response"]["status"], "completed");
    assert_eq!(
        end.data["response"]["output"][0]["content"],
        serde_json::json!([
            {"type": "output_text", "text": "w1", "annotations": []},
            {"type": "refusal", "refusal": "I can't help with that."},
        ])
    );

    // Refused before any text: the item holds the refusal alone.
    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-fault", "refusal")],
        RESPONSES_STREAM_BODY,
    )
    .await;
    assert_well_numbered(&reply.text());
    assert_eq!(responses_text(&reply.text()), "");
    assert!(event_names(&reply.text()).contains(&"response.refusal.delta".to_owned()));
    assert_eq!(the_terminal(&reply.text()).name, "response.completed");

    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-fault", "refusal")],
        RESPONSES_UNARY_BODY,
    )
    .await;
    let v = reply.json();
    assert_eq!(v["status"], "completed");
    assert_eq!(
        v["output"][0]["content"],
        serde_json::json!([{"type": "refusal", "refusal": "I can't help with that."}])
    );
}

#[tokio::test]
async fn empty_is_a_completed_response_without_output() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let fault = [("x-chaos-fault", "empty")];
    let reply = post(chaos.addr(), RESPONSES, &fault, RESPONSES_STREAM_BODY).await;
    let text = reply.text();
    assert_well_numbered(&text);
    assert_eq!(
        event_names(&text),
        [
            "response.created",
            "response.in_progress",
            "response.completed"
        ]
    );
    let end = the_terminal(&text);
    assert_eq!(end.data["response"]["status"], "completed");
    assert_eq!(end.data["response"]["output"], serde_json::json!([]));

    let reply = post(chaos.addr(), RESPONSES, &fault, RESPONSES_UNARY_BODY).await;
    let v = reply.json();
    assert_eq!(v["status"], "completed");
    assert_eq!(v["output"], serde_json::json!([]));
    assert!(
        chaos
            .journal()
            .iter()
            .all(|r| r.outcome == Outcome::Completed)
    );
}

#[tokio::test]
async fn frame_then_eof_sends_response_created_then_ends_cleanly() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-fault", "frame_then_eof")],
        RESPONSES_STREAM_BODY,
    )
    .await;
    assert!(
        reply.error.is_none(),
        "clean end expected: {:?}",
        reply.error
    );
    assert_well_numbered(&reply.text());
    assert_eq!(event_names(&reply.text()), ["response.created"]);
    let row = &chaos.journal()[0];
    assert_eq!(row.outcome, Outcome::CutByFault);
    assert_eq!(row.tokens_written, 0);

    // Unary: the JSON body stops before its output.
    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-fault", "frame_then_eof")],
        RESPONSES_UNARY_BODY,
    )
    .await;
    assert!(reply.error.is_none());
    assert!(reply.text().ends_with("\"output\":["), "{}", reply.text());
    assert!(serde_json::from_slice::<serde_json::Value>(&reply.body).is_err());
}

#[tokio::test]
async fn stream_error_after_sends_an_error_event_in_sequence() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-fault", "stream_error_after;tokens=2")],
        RESPONSES_STREAM_BODY,
    )
    .await;
    assert!(reply.error.is_none());
    let text = reply.text();
    assert_well_numbered(&text);
    assert_eq!(responses_text(&text), "w1 w2");
    assert!(no_terminal(&text), "{text}");
    let last = events(&text).pop().unwrap();
    assert_eq!(last.name, "error");
    assert_eq!(
        last.data,
        serde_json::json!({
            "type": "error",
            "code": "server_error",
            "message": "The server had an error while processing your request.",
            "param": null,
            "sequence_number": 6,
        })
    );
    assert_eq!(chaos.journal()[0].outcome, Outcome::CutByFault);

    // tokens=0: before any content.
    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-fault", "stream_error_after;tokens=0")],
        RESPONSES_STREAM_BODY,
    )
    .await;
    assert_well_numbered(&reply.text());
    assert_eq!(
        event_names(&reply.text()),
        ["response.created", "response.in_progress", "error"]
    );

    // A unary request has no stream: it gets chat completions' 500.
    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-fault", "stream_error_after;tokens=1")],
        RESPONSES_UNARY_BODY,
    )
    .await;
    assert_eq!(reply.status, 500);
    assert_eq!(reply.json()["error"]["type"], "server_error");
}

#[tokio::test]
async fn truncate_after_ends_cleanly_without_a_terminal_event() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-fault", "truncate_after;tokens=3")],
        RESPONSES_STREAM_BODY,
    )
    .await;
    assert!(reply.error.is_none());
    let text = reply.text();
    assert_well_numbered(&text);
    assert_eq!(responses_text(&text), "w1 w2 w3");
    assert_eq!(
        event_names(&text).last().map(String::as_str),
        Some("response.output_text.delta")
    );
    assert!(no_terminal(&text));
    let row = &chaos.journal()[0];
    assert_eq!((row.outcome, row.tokens_written), (Outcome::CutByFault, 3));

    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-fault", "truncate_after;tokens=2")],
        RESPONSES_UNARY_BODY,
    )
    .await;
    assert!(reply.error.is_none());
    assert!(
        reply.text().ends_with("\"text\":\"w1 w2"),
        "{}",
        reply.text()
    );
}

#[tokio::test]
async fn reset_after_cuts_the_stream_with_a_body_error() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let headers = [
        ("x-chaos-fault", "reset_after;tokens=3"),
        ("x-chaos-request-id", "rst"),
    ];
    let reply = post(chaos.addr(), RESPONSES, &headers, RESPONSES_STREAM_BODY).await;
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
    assert_well_numbered(&text);
    assert_eq!(responses_text(&text), "w1 w2 w3");
    assert!(no_terminal(&text));
    let row = tokio::time::timeout(WAIT, chaos.wait_for_request("rst"))
        .await
        .unwrap();
    assert_eq!(row.outcome, Outcome::CutByFault);
    assert_eq!(row.tokens_written, 3);

    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-fault", "reset_after;tokens=2")],
        RESPONSES_UNARY_BODY,
    )
    .await;
    assert!(reply.error.is_some());
    assert!(
        reply.text().ends_with("\"text\":\"w1 w2"),
        "{}",
        reply.text()
    );
}

#[tokio::test]
async fn stall_after_with_pings_sends_comments_then_completes() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let headers = [(
        "x-chaos-fault",
        "stall_after;tokens=1;ms=120;pings=1;ping_ms=50;total=2",
    )];
    let reply = post(chaos.addr(), RESPONSES, &headers, RESPONSES_STREAM_BODY).await;
    let text = reply.text();
    assert!(text.contains("\n\n: ping\n\n"), "{text}");
    assert_well_numbered(&text);
    assert_eq!(responses_text(&text), "w1 w2");
    assert_eq!(the_terminal(&text).name, "response.completed");
}

#[tokio::test]
async fn slow_first_byte_and_reset_before_headers_in_the_responses_route() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-fault", "slow_first_byte;ms=20;tokens=2")],
        RESPONSES_STREAM_BODY,
    )
    .await;
    assert_eq!(responses_text(&reply.text()), "w1 w2");
    assert_eq!(the_terminal(&reply.text()).name, "response.completed");

    let headers = [("x-chaos-fault", "reset_before_headers")];
    let result = open(
        chaos.addr(),
        request(RESPONSES, &headers, RESPONSES_STREAM_BODY),
    )
    .await;
    assert!(result.is_err());
}

#[tokio::test]
async fn status_faults_answer_chat_completions_error_bodies() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let addr = chaos.addr();
    let reply = post(
        addr,
        RESPONSES,
        &[("x-chaos-fault", "status;code=429;retry_after=2")],
        RESPONSES_STREAM_BODY,
    )
    .await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.header("retry-after"), Some("2"));
    assert!(reply.header("x-request-id").is_some());
    let e = &reply.json()["error"];
    assert_eq!(e["type"], "requests");
    assert_eq!(e["code"], "rate_limit_exceeded");
    assert_eq!(e["param"], serde_json::Value::Null);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("Please try again in 2s."),
        "{e}"
    );

    let reply = post(
        addr,
        RESPONSES,
        &[("x-chaos-fault", "status;code=429;kind=insufficient_quota")],
        RESPONSES_UNARY_BODY,
    )
    .await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.json()["error"]["type"], "insufficient_quota");
    assert_eq!(reply.json()["error"]["code"], "insufficient_quota");

    let reply = post(
        addr,
        RESPONSES,
        &[("x-chaos-fault", "status;code=400;kind=context_length")],
        RESPONSES_UNARY_BODY,
    )
    .await;
    let e = &reply.json()["error"];
    assert_eq!(e["code"], "context_length_exceeded");
    assert_eq!(e["type"], "invalid_request_error");
    assert_eq!(e["param"], "input");

    // The server's own refusals keep the same shape.
    let reply = post(
        addr,
        RESPONSES,
        &[("x-chaos-fault", "bogus")],
        RESPONSES_STREAM_BODY,
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["code"], "unknown_fault");
    assert_eq!(reply.json()["error"]["type"], "invalid_request_error");

    let rows = chaos.journal();
    assert_eq!(
        rows.iter().map(|r| r.outcome).collect::<Vec<_>>(),
        [
            Outcome::Rejected(429),
            Outcome::Rejected(429),
            Outcome::Rejected(400),
            Outcome::Rejected(400)
        ]
    );
}

#[tokio::test]
async fn an_input_ending_in_an_assistant_item_continues_the_answer() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let fault = [("x-chaos-fault", "ok;tokens=6")];
    // The delivered text as a trailing assistant item with string content, streamed.
    let resumed = r#"{"model":"gpt-x","stream":true,"input":[{"role":"user","content":"hi"},{"role":"assistant","content":"w1 w2 w3"}]}"#;
    let reply = post(chaos.addr(), RESPONSES, &fault, resumed).await;
    let text = reply.text();
    assert_well_numbered(&text);
    assert_eq!(responses_text(&text), " w4 w5 w6");
    let done = events(&text)
        .into_iter()
        .find(|e| e.name == "response.output_text.done")
        .unwrap();
    assert_eq!(done.data["text"], " w4 w5 w6");
    let end = the_terminal(&text);
    assert_eq!(
        end.data["response"]["output"][0]["content"][0]["text"],
        " w4 w5 w6"
    );

    // A message item whose content is a list of output_text parts, unary.
    let parts = r#"{"model":"gpt-x","input":[{"role":"user","content":"hi"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"w1 w2 w3"}]}]}"#;
    let reply = post(chaos.addr(), RESPONSES, &fault, parts).await;
    assert_eq!(reply.json()["output"][0]["content"][0]["text"], " w4 w5 w6");

    // Ending with the user, or a plain string input: answered from the start.
    let fresh = r#"{"model":"gpt-x","input":[{"role":"assistant","content":"w1 w2 w3"},{"role":"user","content":"again"}]}"#;
    let reply = post(chaos.addr(), RESPONSES, &fault, fresh).await;
    assert_eq!(
        reply.json()["output"][0]["content"][0]["text"],
        "w1 w2 w3 w4 w5 w6"
    );
    let reply = post(
        chaos.addr(),
        RESPONSES,
        &fault,
        r#"{"model":"gpt-x","input":"w1 w2 w3"}"#,
    )
    .await;
    assert_eq!(
        reply.json()["output"][0]["content"][0]["text"],
        "w1 w2 w3 w4 w5 w6"
    );

    let rows = chaos.journal();
    assert_eq!(
        rows.iter().map(|r| r.tokens_written).collect::<Vec<_>>(),
        [3, 3, 6, 6]
    );
}

#[tokio::test]
async fn scripts_and_the_journal_key_the_route_as_openai_responses() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    chaos
        .script(
            "openai_responses",
            vec![
                seawall_chaos::Fault::status(503),
                seawall_chaos::Fault::ok(),
            ],
        )
        .unwrap();
    // Scripts of the chat completions route do not apply here.
    chaos
        .script("openai", vec![seawall_chaos::Fault::status(500)])
        .unwrap();
    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-request-id", "a1")],
        RESPONSES_UNARY_BODY,
    )
    .await;
    assert_eq!(reply.status, 503);
    let reply = post(
        chaos.addr(),
        RESPONSES,
        &[("x-chaos-request-id", "a2")],
        RESPONSES_UNARY_BODY,
    )
    .await;
    assert_eq!(reply.status, 200);
    let first = tokio::time::timeout(WAIT, chaos.wait_for_request("a1"))
        .await
        .unwrap();
    let second = tokio::time::timeout(WAIT, chaos.wait_for_request("a2"))
        .await
        .unwrap();
    assert_eq!(
        (first.fault_source, first.attempt),
        (FaultSource::Script, Some(1))
    );
    assert_eq!(
        (second.outcome, second.attempt),
        (Outcome::Completed, Some(2))
    );

    // Over HTTP: the admin script route takes the name, the journal writes it.
    let script = post(
        chaos.addr(),
        "/_chaos/script",
        &[],
        r#"{"route":"/v1/responses","faults":["empty"]}"#,
    )
    .await;
    assert_eq!(script.json()["route"], "openai_responses");
    post(chaos.addr(), RESPONSES, &[], RESPONSES_STREAM_BODY).await;
    let res = open(
        chaos.addr(),
        http::Request::get("/_chaos/journal")
            .header("host", "x")
            .body(Default::default())
            .unwrap(),
    )
    .await
    .unwrap();
    let (body, _) = drain(res.into_body()).await;
    let rows: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r["provider"] == "openai_responses"));
    assert_eq!(rows[2]["fault"], "empty");
}
