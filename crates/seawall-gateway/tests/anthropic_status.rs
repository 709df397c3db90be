//! An error Anthropic declares inside its stream before any content,
//! answered through the gateway with the status Anthropic gives its type
//! unstreamed: anthropic-python picks its exception by the status alone.

mod common;

use common::*;
use seawall_gateway::Wire;

/// A 200 stream whose first event after `message_start` is `error`.
fn streamed_error(data: &str) -> Vec<Step> {
    let head =
        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-type: text/event-stream\r\n\r\n";
    vec![
        Step::Write(head.as_bytes().to_vec()),
        chunk(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
        ),
        chunk(&format!("event: error\ndata: {data}\n\n")),
        Step::Write(b"0\r\n\r\n".to_vec()),
    ]
}

fn error(ty: &str, message: &str) -> String {
    format!(r#"{{"type":"error","error":{{"type":"{ty}","message":"{message}"}}}}"#)
}

/// A credit wall is a 402 (`billing_error`) or, said in an
/// `invalid_request_error`, a 400 — never a 429 the SDK raises as a
/// `RateLimitError`; a `permission_error` through a keyless route (the
/// client's own key) is a 403, not a 401. Through a keyed route the
/// refusal is the gateway's credential: a 502, as before.
#[tokio::test]
async fn an_anthropic_error_in_the_stream_keeps_anthropics_status() {
    let rows = [
        (
            error(
                "billing_error",
                "Your credit balance is too low to access the Anthropic API.",
            ),
            true,
            "quota_exhausted",
            402,
        ),
        (
            error(
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
            ),
            true,
            "quota_exhausted",
            400,
        ),
        (
            error(
                "permission_error",
                "Your API key does not have permission to use the specified resource.",
            ),
            false,
            "auth",
            403,
        ),
        (
            error(
                "permission_error",
                "Your API key does not have permission to use the specified resource.",
            ),
            true,
            "auth",
            502,
        ),
    ];
    for (data, keyed, code, status) in rows {
        let upstream = raw_upstream(streamed_error(&data)).await;
        let mut config = config_over(Wire::Anthropic, &upstream);
        if !keyed {
            config.routes[0].key_env = None;
        }
        let gateway = Running::start(config).await;
        let (got, headers, body) = send(
            &client(),
            post(&gateway.url("/v1/messages"), ANTHROPIC_STREAM, &[]),
        )
        .await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(got.as_u16(), status, "{data}: {text}");
        assert_eq!(header(&headers, "x-seawall-code"), code, "{text}");
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["type"], "error", "{text}");
        assert_eq!(body["error"]["type"], code, "{text}");
        let ty = serde_json::from_str::<serde_json::Value>(&data).unwrap()["error"]["type"].clone();
        assert_eq!(body["error"]["provider_type"], ty, "{text}");
    }
}
