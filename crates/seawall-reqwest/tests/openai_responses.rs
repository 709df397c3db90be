//! async-openai's Responses API (`client.responses()`), unary and
//! streamed, with the seawall stack underneath, against a real
//! seawall-chaos server over loopback: the adapter is not tied to chat
//! completions, and the classifier and stream guard read `/v1/responses`
//! by its own wire shape. Attempts and bodies come from the server's
//! journal, the verdict from `seawall_reqwest::scope`.

mod common;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::responses::{CreateResponse, CreateResponseArgs, ResponseStreamEvent};
use common::{rows, same_body, words};
use futures_util::StreamExt;
use seawall::classify::ClassifyLayer;
use seawall::core::{Action, Code};
use seawall_chaos::{FAULT_HEADER, Fault, JournalEntry};
use seawall_reqwest::{OpenAiService, Outcome};

/// What the caller saw of one call, and what the server saw.
#[derive(Debug)]
struct Seen {
    /// The text async-openai handed the caller.
    text: String,
    /// A `response.completed` event (streamed) or a completed response
    /// (unary) arrived.
    completed: bool,
    error: Option<async_openai::error::OpenAIError>,
    outcome: Outcome,
    rows: Vec<JournalEntry>,
}

fn request() -> CreateResponse {
    CreateResponseArgs::default()
        .model("gpt-x")
        .input("Say eight words.")
        .build()
        .expect("a request")
}

/// One call through `client.responses()`, `script` served in order, or
/// `fault` on every attempt.
async fn call(stream: bool, fault: Option<&str>, script: &[&str]) -> Seen {
    let chaos = common::chaos().await;
    if !script.is_empty() {
        let faults = script.iter().map(|f| f.parse::<Fault>().unwrap()).collect();
        chaos.script("openai_responses", faults).unwrap();
    }
    let http = common::reqwest_client();
    let mut config = OpenAIConfig::new()
        .with_api_base(format!("{}/v1", chaos.base_url()))
        .with_api_key("test-key");
    if let Some(fault) = fault {
        config = config.with_header(FAULT_HEADER, fault).expect("a header");
    }
    let seawall = common::short_stack().build(
        &ClassifyLayer::openai(),
        seawall_reqwest::ReqwestService::new(http.clone()),
    );
    let client = Client::build(http, config).with_http_service(OpenAiService::new(seawall));
    let ((text, completed, error), outcome) = seawall_reqwest::scope(async {
        let mut text = String::new();
        if !stream {
            return match client.responses().create(request()).await {
                Ok(response) => (response.output_text().unwrap_or_default(), true, None),
                Err(error) => (text, false, Some(error)),
            };
        }
        let mut events = match client.responses().create_stream(request()).await {
            Ok(events) => events,
            Err(error) => return (text, false, Some(error)),
        };
        let mut completed = false;
        while let Some(event) = events.next().await {
            match event {
                Ok(ResponseStreamEvent::ResponseOutputTextDelta(delta)) => {
                    text.push_str(&delta.delta)
                }
                Ok(ResponseStreamEvent::ResponseCompleted(_)) => completed = true,
                Ok(_) => {}
                Err(error) => return (text, completed, Some(error)),
            }
        }
        (text, completed, None)
    })
    .await;
    Seen {
        text,
        completed,
        error,
        outcome,
        rows: rows(&chaos).await,
    }
}

fn assert_ok(seen: &Seen) {
    assert!(seen.error.is_none(), "{seen:#?}");
    assert!(seen.outcome.is_ok(), "{seen:#?}");
    assert_eq!(seen.text, words(8), "{seen:#?}");
    assert!(seen.completed, "{seen:#?}");
}

#[tokio::test]
async fn an_answer_is_one_attempt() {
    for stream in [false, true] {
        let seen = call(stream, None, &[]).await;
        assert_ok(&seen);
        assert_eq!(seen.rows.len(), 1, "stream={stream}");
        assert_eq!(seen.rows[0].path, "/v1/responses");
        assert_eq!(seen.outcome.attempts(), 1);
        // The usage is read past its detail objects, streamed (from
        // `response.completed`) or not.
        let receipt = seen.outcome.receipt().expect("a receipt");
        let usage = receipt.attempts[0].usage().expect("the usage");
        assert_eq!(usage.output_tokens, 8, "stream={stream}");
        assert!(usage.input_tokens > 0);
    }
}

#[tokio::test]
async fn a_503_or_an_empty_answer_is_retried_with_the_same_body() {
    for (first, code) in [
        ("status;code=503", Code::ProviderUnavailable),
        ("empty", Code::EmptyResponse),
    ] {
        for stream in [false, true] {
            let seen = call(stream, None, &[first, "ok"]).await;
            assert_ok(&seen);
            assert_eq!(seen.rows.len(), 2, "{first}, stream={stream}");
            assert_eq!(seen.outcome.calls(), 1, "one call into the adapter");
            let receipt = seen.outcome.receipt().expect("a receipt");
            assert_eq!(receipt.attempts.len(), 2);
            assert_eq!(receipt.attempts[0].code, Some(code));
            same_body(&seen.rows);
        }
    }
}

#[tokio::test]
async fn the_quota_wall_is_one_attempt_and_reads_quota_exhausted() {
    for stream in [false, true] {
        let seen = call(
            stream,
            Some("status;code=429;retry_after=48489;kind=insufficient_quota"),
            &[],
        )
        .await;
        assert!(seen.error.is_some(), "{seen:#?}");
        assert_eq!(seen.outcome.code(), Some(Code::QuotaExhausted));
        assert_eq!(seen.outcome.attempts(), 1);
        assert_eq!(seen.rows.len(), 1);
    }
}

#[tokio::test]
async fn a_stream_reset_after_content_carries_the_delivered_tokens() {
    let seen = call(true, None, &["reset_after;tokens=3", "ok"]).await;
    assert!(seen.error.is_some(), "{seen:#?}");
    assert!(!seen.completed);
    assert_eq!(seen.text, words(3));
    let failure = seen.outcome.failure().expect("seawall's verdict");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(failure.action(), Action::Surface);
    assert_eq!(seen.outcome.delivered_text(), Some(words(3)));
    assert_eq!(seen.rows.len(), 1, "nothing sent again");
}

#[tokio::test]
async fn a_refusal_is_not_retried() {
    for stream in [false, true] {
        let seen = call(stream, Some("refusal"), &[]).await;
        assert!(seen.error.is_some(), "{seen:#?}");
        assert_eq!(seen.outcome.code(), Some(Code::Refused));
        assert_eq!(seen.outcome.attempts(), 1);
        assert_eq!(seen.rows.len(), 1);
    }
}
