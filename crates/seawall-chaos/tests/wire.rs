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
