//! Healthy answers and error bodies, byte for byte, per provider.

mod common;

use common::*;
use seawall_chaos::{ChaosServer, Outcome};

fn openai_chunk(seq: u64, choice: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-chaos{seq}\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-x\",\"choices\":[{choice}]}}\n\n"
    )
}

fn openai_token(seq: u64, text: &str) -> String {
    openai_chunk(
        seq,
        &format!(
            r#"{{"index":0,"delta":{{"content":"{text}"}},"logprobs":null,"finish_reason":null}}"#
        ),
    )
}

#[tokio::test]
async fn openai_stream_exact_framing() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        OPENAI,
        &[("x-chaos-fault", "ok;tokens=3")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert_eq!(reply.header("x-chaos-fault-applied"), Some("ok;tokens=3"));
    assert!(reply.error.is_none());
    let expected = [
        openai_chunk(
            1,
            r#"{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}"#,
        ),
        openai_token(1, "w1"),
        openai_token(1, " w2"),
        openai_token(1, " w3"),
        openai_chunk(1, r#"{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}"#),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    assert_eq!(reply.text(), expected);
    let row = &chaos.journal()[0];
    assert_eq!(row.outcome, Outcome::Completed);
    assert_eq!(row.tokens_written, 3);
    assert_eq!(row.bytes_written, expected.len() as u64);
    assert_eq!(row.model.as_deref(), Some("gpt-x"));
    assert!(row.stream);
    assert_eq!(
        row.body_hash.as_deref(),
        Some(seawall_chaos::body_hash(OPENAI_STREAM_BODY.as_bytes()).as_str())
    );
}

#[tokio::test]
async fn openai_stream_usage_chunk_precedes_done() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let body =
        r#"{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[]}"#;
    let reply = post(
        chaos.addr(),
        OPENAI,
        &[("x-chaos-fault", "ok;tokens=2")],
        body,
    )
    .await;
    let data = data_lines(&reply.text());
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let usage: serde_json::Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert_eq!(usage["choices"], serde_json::json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 2);
    assert_eq!(openai_text(&reply.text()), "w1 w2");
}

#[tokio::test]
async fn openai_unary_is_a_chat_completion() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(chaos.addr(), OPENAI, &[], OPENAI_UNARY_BODY).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(
        reply.header("content-length"),
        Some(reply.body.len().to_string().as_str())
    );
    let v = reply.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "w1 w2 w3 w4 w5 w6 w7 w8"
    );
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["usage"]["completion_tokens"], 8);
    let row = &chaos.journal()[0];
    assert_eq!((row.outcome, row.tokens_written), (Outcome::Completed, 8));
    assert_eq!(row.fault, "ok");
    assert_eq!(row.fault_source, seawall_chaos::FaultSource::Default);
}

#[tokio::test]
async fn anthropic_stream_exact_framing() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        ANTHROPIC,
        &[("x-chaos-fault", "ok;tokens=2")],
        ANTHROPIC_STREAM_BODY,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("request-id"), Some("req_chaos1"));
    let input_tokens = ANTHROPIC_STREAM_BODY.len() / 4;
    let expected = format!(
        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"msg_chaos1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{{\"input_tokens\":{input_tokens},\"output_tokens\":1}}}}}}\n\n\
event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
event: ping\ndata: {{\"type\":\"ping\"}}\n\n\
event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"w1\"}}}}\n\n\
event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\" w2\"}}}}\n\n\
event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":2}}}}\n\n\
event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
    );
    assert_eq!(reply.text(), expected);
}

#[tokio::test]
async fn anthropic_unary_is_a_message() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        ANTHROPIC,
        &[("x-chaos-fault", "ok;tokens=2")],
        ANTHROPIC_UNARY_BODY,
    )
    .await;
    let v = reply.json();
    assert_eq!(v["type"], "message");
    assert_eq!(v["content"][0]["text"], "w1 w2");
    assert_eq!(v["stop_reason"], "end_turn");
    assert_eq!(v["usage"]["output_tokens"], 2);
}

#[tokio::test]
async fn gemini_stream_exact_framing() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        GEMINI_STREAM,
        &[("x-chaos-fault", "ok;tokens=2")],
        GEMINI_BODY,
    )
    .await;
    assert_eq!(reply.status, 200);
    let prompt = GEMINI_BODY.len() / 4;
    let expected = format!(
        "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":\"w1\"}}],\"role\":\"model\"}},\"index\":0}}],\"modelVersion\":\"gemini-x\",\"responseId\":\"chaos1\"}}\r\n\r\n\
data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":\" w2\"}}],\"role\":\"model\"}},\"finishReason\":\"STOP\",\"index\":0}}],\"usageMetadata\":{{\"promptTokenCount\":{prompt},\"candidatesTokenCount\":2,\"totalTokenCount\":{}}},\"modelVersion\":\"gemini-x\",\"responseId\":\"chaos1\"}}\r\n\r\n",
        prompt + 2
    );
    assert_eq!(reply.text(), expected);
    assert!(!reply.text().contains("[DONE]"));
    let row = &chaos.journal()[0];
    assert_eq!(row.model.as_deref(), Some("gemini-x"));
    assert_eq!(row.tokens_written, 2);
}

#[tokio::test]
async fn gemini_unary_and_json_array_streams() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        GEMINI_UNARY,
        &[("x-chaos-fault", "length;tokens=3")],
        GEMINI_BODY,
    )
    .await;
    let v = reply.json();
    assert_eq!(
        v["candidates"][0]["content"]["parts"][0]["text"],
        "w1 w2 w3"
    );
    assert_eq!(v["candidates"][0]["finishReason"], "MAX_TOKENS");

    // Without `alt=sse`: the same chunks, as one JSON array written over time.
    let reply = post(
        chaos.addr(),
        "/v1beta/models/gemini-x:streamGenerateContent",
        &[("x-chaos-fault", "ok;tokens=2")],
        GEMINI_BODY,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let text = reply.text();
    assert!(text.starts_with("[{\"candidates\""), "{text}");
    assert!(text.ends_with("}\r\n]"), "{text}");
    assert_eq!(text.matches("\r\n,{").count(), 1, "{text}");
    let chunks: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(chunks.len(), 2);
    assert_eq!(
        chunks[0]["candidates"][0]["content"]["parts"][0]["text"],
        "w1"
    );
    assert_eq!(chunks[1]["candidates"][0]["finishReason"], "STOP");

    // A cut stream never closes its array.
    let reply = post(
        chaos.addr(),
        "/v1beta/models/gemini-x:streamGenerateContent",
        &[("x-chaos-fault", "truncate_after;tokens=2;total=5")],
        GEMINI_BODY,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert!(reply.text().starts_with("[{"));
    assert!(!reply.text().trim_end().ends_with(']'), "{}", reply.text());
    let row = &chaos.journal()[2];
    assert_eq!(row.tokens_written, 2);
}

#[tokio::test]
async fn openai_status_bodies_and_hints() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let addr = chaos.addr();
    let fault = [(
        "x-chaos-fault",
        "status;code=429;retry_after=2;x_should_retry=true",
    )];
    let reply = post(addr, OPENAI, &fault, OPENAI_STREAM_BODY).await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.header("retry-after"), Some("2"));
    assert_eq!(reply.header("x-should-retry"), Some("true"));
    assert!(reply.header("x-request-id").is_some());
    let e = &reply.json()["error"];
    assert_eq!(e["type"], "requests");
    assert_eq!(e["code"], "rate_limit_exceeded");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("Please try again in 2s."),
        "{e}"
    );
    assert_eq!(e["param"], serde_json::Value::Null);

    let reply = post(
        addr,
        OPENAI,
        &[("x-chaos-fault", "status;code=429;retry_after_ms=1574")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert_eq!(reply.header("retry-after-ms"), Some("1574"));
    assert!(reply.header("retry-after").is_none());
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Please try again in 1.574s.")
    );

    let reply = post(
        addr,
        OPENAI,
        &[(
            "x-chaos-fault",
            "status;code=429;retry_after=30;retry_after_date=1",
        )],
        OPENAI_STREAM_BODY,
    )
    .await;
    let date = httpdate::parse_http_date(reply.header("retry-after").unwrap()).expect("HTTP-date");
    let ahead = date
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default();
    assert!(ahead.as_secs() >= 25 && ahead.as_secs() <= 31, "{ahead:?}");

    let reply = post(
        addr,
        OPENAI,
        &[("x-chaos-fault", "status;code=429;kind=too_large_tpm")],
        OPENAI_STREAM_BODY,
    )
    .await;
    let e = &reply.json()["error"];
    assert!(e["message"].as_str().unwrap().starts_with(
        "Request too large for gpt-x in organization org-chaos on tokens per min (TPM): Limit 30000, Requested 50000."
    ));
    assert_eq!(e["code"], "rate_limit_exceeded");

    let reply = post(
        addr,
        OPENAI,
        &[("x-chaos-fault", "status;code=429;kind=insufficient_quota")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert_eq!(reply.json()["error"]["type"], "insufficient_quota");
    assert_eq!(reply.json()["error"]["code"], "insufficient_quota");

    let reply = post(
        addr,
        OPENAI,
        &[("x-chaos-fault", "status;code=400;kind=context_length")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["code"], "context_length_exceeded");
    assert_eq!(reply.json()["error"]["type"], "invalid_request_error");

    let reply = post(
        addr,
        OPENAI,
        &[("x-chaos-fault", "status;code=500")],
        OPENAI_STREAM_BODY,
    )
    .await;
    assert_eq!(reply.json()["error"]["type"], "server_error");

    let rows = chaos.journal();
    assert_eq!(rows.len(), 7);
    assert_eq!(rows[0].outcome, Outcome::Rejected(429));
    assert_eq!(rows[0].status, Some(429));
    assert_eq!(
        rows[0].fault,
        "status;code=429;retry_after=2;x_should_retry=true"
    );
    assert_eq!(rows[6].outcome, Outcome::Rejected(500));
}

#[tokio::test]
async fn anthropic_status_bodies() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let reply = post(
        chaos.addr(),
        ANTHROPIC,
        &[("x-chaos-fault", "status;code=529")],
        ANTHROPIC_STREAM_BODY,
    )
    .await;
    assert_eq!(reply.status.as_u16(), 529);
    let v = reply.json();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "overloaded_error");
    assert_eq!(v["error"]["message"], "Overloaded");
    assert_eq!(v["request_id"], reply.header("request-id").unwrap());

    for (code, kind) in [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (504, "timeout_error"),
    ] {
        let fault = format!("status;code={code}");
        let reply = post(
            chaos.addr(),
            ANTHROPIC,
            &[("x-chaos-fault", &fault)],
            ANTHROPIC_UNARY_BODY,
        )
        .await;
        assert_eq!(reply.status.as_u16(), code);
        assert_eq!(reply.json()["error"]["type"], kind, "{code}");
    }
}

#[tokio::test]
async fn gemini_status_bodies_carry_retry_info_and_quota() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let fault = [(
        "x-chaos-fault",
        "status;code=429;kind=insufficient_quota;retry_after=26",
    )];
    let reply = post(chaos.addr(), GEMINI_UNARY, &fault, GEMINI_BODY).await;
    assert_eq!(reply.status, 429);
    // Gemini's wait is in the body's RetryInfo only, never a header.
    assert_eq!(reply.header("retry-after"), None);
    let e = &reply.json()["error"];
    assert_eq!(e["code"], 429);
    assert_eq!(e["status"], "RESOURCE_EXHAUSTED");
    let details = e["details"].as_array().unwrap();
    let quota = details
        .iter()
        .find(|d| d["@type"] == "type.googleapis.com/google.rpc.QuotaFailure")
        .unwrap();
    assert!(
        quota["violations"][0]["quotaId"]
            .as_str()
            .unwrap()
            .contains("PerDay")
    );
    let retry = details
        .iter()
        .find(|d| d["@type"] == "type.googleapis.com/google.rpc.RetryInfo")
        .unwrap();
    assert_eq!(retry["retryDelay"], "26s");

    let reply = post(
        chaos.addr(),
        GEMINI_STREAM,
        &[("x-chaos-fault", "status;code=503")],
        GEMINI_BODY,
    )
    .await;
    assert_eq!(reply.json()["error"]["status"], "UNAVAILABLE");
    assert!(reply.json()["error"].get("details").is_none());
}

#[tokio::test]
async fn an_answer_resumed_after_token_k_continues_from_k_plus_one() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let fault = [("x-chaos-fault", "ok;tokens=6")];
    // OpenAI: the delivered text as a trailing assistant message.
    let openai = r#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"w1 w2 w3"}]}"#;
    let reply = post(chaos.addr(), OPENAI, &fault, openai).await;
    assert_eq!(openai_text(&reply.text()), " w4 w5 w6");
    // Anthropic: an assistant prefill made of content blocks, unary.
    let anthropic = r#"{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"w1 w2"}]}]}"#;
    let reply = post(chaos.addr(), "/v1/messages", &fault, anthropic).await;
    assert_eq!(reply.json()["content"][0]["text"], " w3 w4 w5 w6");
    // The usage counts what this answer generated, as a provider's does.
    assert_eq!(reply.json()["usage"]["output_tokens"], 4);
    // Gemini streamed: the finish rides on the last token, with the usage.
    let gemini = r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"w1 w2 w3"}]}]}"#;
    let reply = post(chaos.addr(), GEMINI_STREAM, &fault, gemini).await;
    let text = reply.text();
    let last = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .next_back()
        .expect("a last event");
    let last: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(last["usageMetadata"]["candidatesTokenCount"], 3, "{text}");
    // A conversation that ends with the user is answered from the start.
    let fresh = r#"{"model":"gpt-x","messages":[{"role":"assistant","content":"w1 w2"},{"role":"user","content":"again"}]}"#;
    let reply = post(chaos.addr(), OPENAI, &fault, fresh).await;
    assert_eq!(
        reply.json()["choices"][0]["message"]["content"],
        "w1 w2 w3 w4 w5 w6"
    );
    let rows = chaos.journal();
    assert_eq!(
        rows.iter().map(|r| r.tokens_written).collect::<Vec<_>>(),
        vec![3, 4, 3, 6]
    );
}

#[tokio::test]
async fn an_anthropic_stream_resumed_after_a_prefill_is_well_formed() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let resumed = r#"{"model":"claude-x","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"w1 w2"}]}"#;
    let reply = post(
        chaos.addr(),
        ANTHROPIC,
        &[("x-chaos-fault", "ok;tokens=4")],
        resumed,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert!(reply.error.is_none());
    let events = events(&reply.text());
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    // The text block opens before its first delta, even when that delta is `w3`.
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    assert_eq!(events[1].data["index"], 0);
    assert_eq!(events[1].data["content_block"]["type"], "text");
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e.name == "content_block_delta")
        .map(|e| {
            assert_eq!(e.data["index"], 0);
            e.data["delta"]["text"].as_str().unwrap()
        })
        .collect();
    assert_eq!(deltas, [" w3", " w4"]);
    assert_eq!(events[5].data["index"], 0);
    assert_eq!(events[6].data["delta"]["stop_reason"], "end_turn");
    assert_eq!(events[6].data["usage"]["output_tokens"], 2);
    assert_eq!(chaos.journal()[0].tokens_written, 2);
}

#[tokio::test]
async fn resume_faults_repeat_the_tail_call_a_tool_and_cut_an_event() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    // A continuation after `w3` that repeats the last two delivered words.
    let resumed = r#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"w1 w2 w3"}]}"#;
    let fault = [("x-chaos-fault", "repeat_tail;words=2;tokens=6")];
    let reply = post(chaos.addr(), OPENAI, &fault, resumed).await;
    assert_eq!(openai_text(&reply.text()), " w2 w3 w4 w5 w6");
    // A fresh answer is `ok`.
    let reply = post(chaos.addr(), OPENAI, &fault, OPENAI_STREAM_BODY).await;
    assert_eq!(openai_text(&reply.text()), "w1 w2 w3 w4 w5 w6");
    // Two tokens, a tool-call delta, a reset.
    let fault = [("x-chaos-fault", "tool_call_reset_after;tokens=2")];
    let reply = post(chaos.addr(), OPENAI, &fault, OPENAI_STREAM_BODY).await;
    assert!(reply.error.is_some());
    let text = reply.text();
    assert!(text.contains("\"tool_calls\""), "{text}");
    assert!(text.ends_with("\n\n"), "{text}");
    // Two tokens, then half of the third token's event.
    let fault = [("x-chaos-fault", "reset_mid_event;tokens=2")];
    let reply = post(chaos.addr(), OPENAI, &fault, OPENAI_STREAM_BODY).await;
    assert!(reply.error.is_some());
    let text = reply.text();
    assert!(!text.ends_with("\n\n"), "{text}");
    let (whole, cut) = text.rsplit_once("\n\n").unwrap();
    assert_eq!(openai_text(&format!("{whole}\n\n")), "w1 w2");
    assert!(cut.starts_with("data: {") && !cut.contains("w3"), "{cut}");
    // A cut fault continues a resumed answer and cuts it at the same token.
    let fault = [("x-chaos-fault", "reset_after;tokens=5")];
    let reply = post(chaos.addr(), OPENAI, &fault, resumed).await;
    assert!(reply.error.is_some());
    assert_eq!(openai_text(&reply.text()), " w4 w5");
}

#[tokio::test]
async fn a_stall_continues_a_resumed_answer_without_repeating_it() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let resumed = |delivered: &str| {
        format!(
            r#"{{"model":"gpt-x","stream":true,"messages":[{{"role":"user","content":"hi"}},{{"role":"assistant","content":"{delivered}"}}]}}"#
        )
    };
    let fault = [("x-chaos-fault", "stall_after;tokens=2;ms=20;total=10")];
    // Past the stall's token: the silence, then the tail from `w6`.
    let reply = post(chaos.addr(), OPENAI, &fault, &resumed("w1 w2 w3 w4 w5")).await;
    assert!(reply.error.is_none());
    assert_eq!(openai_text(&reply.text()), " w6 w7 w8 w9 w10");
    // Before it: up to the stall's token, then the rest, each once.
    let reply = post(chaos.addr(), OPENAI, &fault, &resumed("w1")).await;
    assert_eq!(openai_text(&reply.text()), " w2 w3 w4 w5 w6 w7 w8 w9 w10");
    let rows = chaos.journal();
    assert_eq!(
        rows.iter().map(|r| r.tokens_written).collect::<Vec<_>>(),
        vec![5, 9]
    );
}

/// The frames of `tool_call_reset_after` replayed through accumulators that
/// hold each provider's stream to its official SDK's rules: an item or
/// block is opened before anything points at it, at the next index. For
/// every provider, with text before the call, without any (`tokens=0`), and
/// in a resumed continuation that sends no text before the call.
#[tokio::test]
async fn a_tool_call_cut_opens_what_its_deltas_point_at() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let addr = chaos.addr();
    // (route, fresh body, resumed after `w3`, accumulator).
    type Check = fn(&str) -> Result<Vec<String>, String>;
    let cases: [(&str, String, String, Check); 4] = [
        (
            OPENAI,
            OPENAI_STREAM_BODY.to_owned(),
            r#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"w1 w2 w3"}]}"#.to_owned(),
            sdk::chat,
        ),
        (
            ANTHROPIC,
            ANTHROPIC_STREAM_BODY.to_owned(),
            r#"{"model":"claude-x","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"w1 w2 w3"}]}"#.to_owned(),
            sdk::anthropic,
        ),
        (
            GEMINI_STREAM,
            GEMINI_BODY.to_owned(),
            r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"w1 w2 w3"}]}]}"#.to_owned(),
            sdk::gemini,
        ),
        (
            RESPONSES,
            RESPONSES_STREAM_BODY.to_owned(),
            r#"{"model":"gpt-x","stream":true,"input":[{"role":"user","content":"hi"},{"role":"assistant","content":"w1 w2 w3"}]}"#.to_owned(),
            sdk::responses,
        ),
    ];
    let mut failures = Vec::new();
    for (route, fresh, resumed, check) in cases {
        // (which, body, tokens, whether text precedes the call)
        for (which, body, tokens, text) in [
            ("fresh", &fresh, 2, true),
            ("fresh", &fresh, 0, false),
            ("resumed after w3", &resumed, 2, false),
        ] {
            let fault = format!("tool_call_reset_after;tokens={tokens}");
            let reply = post(addr, route, &[("x-chaos-fault", &fault)], body).await;
            assert_eq!(reply.status, 200, "{route} {fault}");
            assert!(reply.error.is_some(), "{route} {fault}: not cut");
            let stream = reply.text();
            let expected: &[&str] = if text { &["text", "tool"] } else { &["tool"] };
            match check(&stream) {
                Ok(items) if items == expected => {}
                Ok(items) => failures.push(format!("{route} {fault} {which}: built {items:?}")),
                Err(e) => failures.push(format!("{route} {fault} {which}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Stream accumulators with the rules of the official SDKs' parsers
/// (openai-python's `ChatCompletionStreamState` and `ResponseStreamState`,
/// anthropic-sdk-python's `accumulate_event`, google-genai's chunks). Each
/// returns the kinds of the items it built, `text` or `tool`, in order.
mod sdk {
    use serde_json::Value;

    fn json(data: &str) -> Result<Value, String> {
        serde_json::from_str(data).map_err(|e| format!("bad JSON {data}: {e}"))
    }

    fn index(v: &Value, field: &str) -> Result<usize, String> {
        v[field]
            .as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| format!("no {field} in {v}"))
    }

    /// Chat completions: a tool call's first delta (a new `index`, the
    /// next one) carries its id, type and name.
    pub(super) fn chat(stream: &str) -> Result<Vec<String>, String> {
        let mut items: Vec<String> = Vec::new();
        let mut calls = 0;
        for data in super::data_lines(stream) {
            let v = json(&data)?;
            let delta = &v["choices"][0]["delta"];
            if delta["content"].as_str().is_some_and(|t| !t.is_empty())
                && items.last().map(String::as_str) != Some("text")
            {
                items.push("text".to_owned());
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let i = index(call, "index")?;
                if i == calls {
                    if call["id"].as_str().is_none()
                        || call["type"] != "function"
                        || call["function"]["name"].as_str().is_none()
                    {
                        return Err(format!("tool call {i} opens without id/type/name: {call}"));
                    }
                    calls += 1;
                    items.push("tool".to_owned());
                } else if i > calls {
                    return Err(format!("tool call index {i} skips {calls}"));
                }
            }
        }
        Ok(items)
    }

    /// Anthropic: `message_start` first; `content_block_start` appends at
    /// the next index; a delta or stop names an open block of its kind.
    pub(super) fn anthropic(stream: &str) -> Result<Vec<String>, String> {
        let mut blocks: Vec<(String, bool)> = Vec::new();
        let mut started = false;
        for data in super::data_lines(stream) {
            let v = json(&data)?;
            let kind = v["type"].as_str().unwrap_or_default();
            if !started {
                if kind != "message_start" {
                    return Err(format!("{kind} before message_start"));
                }
                started = true;
                continue;
            }
            match kind {
                "content_block_start" => {
                    let i = index(&v, "index")?;
                    if i != blocks.len() {
                        return Err(format!("block {i} started, {} expected", blocks.len()));
                    }
                    let block = match v["content_block"]["type"].as_str() {
                        Some("text") => "text",
                        Some("tool_use") => "tool",
                        other => return Err(format!("block type {other:?}")),
                    };
                    blocks.push((block.to_owned(), true));
                }
                "content_block_delta" | "content_block_stop" => {
                    let i = index(&v, "index")?;
                    let Some((block, open)) = blocks.get_mut(i) else {
                        return Err(format!("{kind} for block {i}, never started"));
                    };
                    if !*open {
                        return Err(format!("{kind} for block {i}, already stopped"));
                    }
                    if kind == "content_block_stop" {
                        *open = false;
                    } else {
                        let want = match v["delta"]["type"].as_str() {
                            Some("text_delta") => "text",
                            Some("input_json_delta") => "tool",
                            other => return Err(format!("delta type {other:?}")),
                        };
                        if block != want {
                            return Err(format!("{want} delta into a {block} block {i}"));
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(blocks.into_iter().map(|(b, _)| b).collect())
    }

    /// Gemini: each chunk's candidate 0 holds parts that are text or a
    /// named `functionCall`.
    pub(super) fn gemini(stream: &str) -> Result<Vec<String>, String> {
        let mut items: Vec<String> = Vec::new();
        for data in super::data_lines(stream) {
            let v = json(&data)?;
            let candidate = &v["candidates"][0];
            if candidate["index"] != 0 {
                return Err(format!("candidate index in {v}"));
            }
            for part in candidate["content"]["parts"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if part["text"].as_str().is_some_and(|t| !t.is_empty()) {
                    if items.last().map(String::as_str) != Some("text") {
                        items.push("text".to_owned());
                    }
                } else if part.get("functionCall").is_some() {
                    if part["functionCall"]["name"].as_str().is_none() {
                        return Err(format!("unnamed functionCall: {part}"));
                    }
                    items.push("tool".to_owned());
                } else if part.get("text").is_none() {
                    return Err(format!("unknown part {part}"));
                }
            }
        }
        Ok(items)
    }

    /// Responses: `response.created` first, `sequence_number` from 0
    /// without gaps; `response.output_item.added` at the next
    /// `output_index`; every other event names an added item of the right
    /// type, by index and id (`Received a content event for output index N
    /// before receiving its output item`, says the SDK).
    pub(super) fn responses(stream: &str) -> Result<Vec<String>, String> {
        // (type, id, content parts)
        let mut items: Vec<(String, String, usize)> = Vec::new();
        for (n, e) in super::events(stream).into_iter().enumerate() {
            let v = e.data;
            if v["sequence_number"] != n as u64 {
                return Err(format!("event {n} numbered {}", v["sequence_number"]));
            }
            if n == 0 && e.name != "response.created" {
                return Err(format!("{} before response.created", e.name));
            }
            if e.name == "response.created" || e.name == "response.in_progress" {
                continue;
            }
            let i = index(&v, "output_index")?;
            if e.name == "response.output_item.added" {
                if i != items.len() {
                    return Err(format!("item added at {i}, {} expected", items.len()));
                }
                let kind = v["item"]["type"].as_str().unwrap_or_default().to_owned();
                let id = v["item"]["id"].as_str().unwrap_or_default().to_owned();
                if kind == "function_call"
                    && (v["item"]["call_id"].as_str().is_none()
                        || v["item"]["name"].as_str().is_none()
                        || v["item"]["arguments"] != "")
                {
                    return Err(format!("function_call item incomplete: {v}"));
                }
                items.push((kind, id, 0));
                continue;
            }
            let Some((kind, id, parts)) = items.get_mut(i) else {
                return Err(format!(
                    "Received a content event for output index {i} before receiving its output item ({})",
                    e.name
                ));
            };
            let item_id = v["item_id"].as_str().or(v["item"]["id"].as_str());
            if item_id != Some(id.as_str()) {
                return Err(format!("{} names item {item_id:?}, {id} is at {i}", e.name));
            }
            let want = match e.name.as_str() {
                "response.content_part.added" => {
                    *parts += 1;
                    "message"
                }
                "response.output_text.delta"
                | "response.output_text.done"
                | "response.content_part.done" => {
                    if index(&v, "content_index")? >= *parts {
                        return Err(format!("{} for a part never added", e.name));
                    }
                    "message"
                }
                "response.function_call_arguments.delta" => "function_call",
                _ => kind.as_str(),
            };
            if kind != want {
                return Err(format!("{} on a {kind} item", e.name));
            }
        }
        Ok(items
            .into_iter()
            .map(|(kind, _, _)| if kind == "message" { "text" } else { "tool" }.to_owned())
            .collect())
    }
}
