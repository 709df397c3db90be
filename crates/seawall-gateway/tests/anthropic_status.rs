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
            "billing_error",
        ),
        (
            error(
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
            ),
            true,
            "quota_exhausted",
            400,
            "invalid_request_error",
        ),
        (
            error(
                "permission_error",
                "Your API key does not have permission to use the specified resource.",
            ),
            false,
            "auth",
            403,
            "permission_error",
        ),
        (
            error(
                "permission_error",
                "Your API key does not have permission to use the specified resource.",
            ),
            true,
            "auth",
            502,
            // The gateway's own key refused: no word of the refusal's, which
            // would send the client to check a key that was fine.
            "api_error",
        ),
    ];
    for (data, keyed, code, status, ty) in rows {
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
        assert_eq!(body["error"]["type"], ty, "{text}");
        assert_eq!(body["error"]["seawall_code"], code, "{text}");
        let said =
            serde_json::from_str::<serde_json::Value>(&data).unwrap()["error"]["type"].clone();
        assert_eq!(body["error"]["provider_type"], said, "{text}");
    }
}

/// An upstream error answer of Anthropic's, status and body.
fn answered(status: &str, body: &str) -> Vec<Step> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nrequest-id: req_1\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    );
    vec![Step::Write(format!("{head}{body}").into_bytes())]
}

/// Anthropic's errors with `details.error_code` come back as Anthropic
/// sent them: anthropic-python picks its exception by (status,
/// `error.details.error_code`), an `EnforcedSpendLimitReachedError` for a
/// spend limit reached, which a plain `RateLimitError` is not.
#[tokio::test]
async fn anthropics_error_details_reach_the_client() {
    for (status, ty, error_code, code) in [
        (
            "429 Too Many Requests",
            "rate_limit_error",
            "enforced_spend_limit_reached",
            "quota_exhausted",
        ),
        (
            "402 Payment Required",
            "billing_error",
            "linked_organization_spend_limit_reached",
            "quota_exhausted",
        ),
    ] {
        let body = format!(
            r#"{{"type":"error","error":{{"type":"{ty}","message":"You have reached your specified API usage limits.","details":{{"error_code":"{error_code}"}}}},"request_id":"req_1"}}"#
        );
        let upstream = raw_upstream(answered(status, &body)).await;
        let gateway = Running::start(config_over(Wire::Anthropic, &upstream)).await;
        let (got, headers, answer) = send(
            &client(),
            post(&gateway.url("/v1/messages"), ANTHROPIC_UNARY, &[]),
        )
        .await;
        let text = String::from_utf8_lossy(&answer);
        assert_eq!(got.as_u16(), status[..3].parse::<u16>().unwrap(), "{text}");
        assert_eq!(header(&headers, "x-seawall-code"), code, "{text}");
        let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer["type"], "error", "{text}");
        assert_eq!(answer["error"]["type"], ty, "{text}");
        assert_eq!(
            answer["error"]["details"]["error_code"], error_code,
            "{text}"
        );
        assert_eq!(answer["error"]["seawall_code"], code, "{text}");
        assert_eq!(answer["request_id"], "req_1", "{text}");
    }
}
