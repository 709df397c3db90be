//! The gateway driven by async-openai, the most used Rust OpenAI client, as
//! an app pointing its base URL at the gateway would: answers read by the
//! SDK, and a stream broken after content raised by the SDK as an error
//! carrying seawall's code — never a silent, complete-looking end.

mod common;

use common::{Running, TOKEN, config};
use futures_util::StreamExt;
use seawall_chaos::{ChaosServer, Fault};
use seawall_gateway::Wire;
use seawall_reqwest::async_openai::Client;
use seawall_reqwest::async_openai::config::OpenAIConfig;
use seawall_reqwest::async_openai::error::{OpenAIError, StreamError};
use seawall_reqwest::async_openai::types::chat::{
    ChatCompletionRequestUserMessage, CreateChatCompletionRequest, CreateChatCompletionRequestArgs,
};
use seawall_reqwest::async_openai::types::responses::{
    CreateResponse, CreateResponseArgs, ResponseStreamEvent,
};

fn sdk(gateway: &Running) -> Client<OpenAIConfig> {
    let config = OpenAIConfig::new()
        .with_api_base(gateway.url("/v1"))
        .with_api_key(TOKEN);
    Client::build(seawall_reqwest::client().expect("a reqwest client"), config)
}

fn ask() -> CreateChatCompletionRequest {
    CreateChatCompletionRequestArgs::default()
        .model("gpt-x")
        .messages([ChatCompletionRequestUserMessage::from("count").into()])
        .build()
        .unwrap()
}

#[tokio::test]
async fn async_openai_reads_answers_through_the_gateway() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    chaos
        .script("openai", vec![Fault::status(503), Fault::ok()])
        .unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = sdk(&gateway);
    let answer = client.chat().create(ask()).await.expect("an answer");
    let text = answer.choices[0]
        .message
        .content
        .clone()
        .unwrap_or_default();
    assert_eq!(text, "w1 w2 w3 w4 w5 w6 w7 w8");
    // The 503 was retried by the gateway, not by the SDK.
    assert_eq!(chaos.journal().len(), 2);

    let mut stream = client.chat().create_stream(ask()).await.expect("a stream");
    let mut streamed = String::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("a healthy chunk");
        if let Some(delta) = chunk.choices.first().and_then(|c| c.delta.content.clone()) {
            streamed.push_str(&delta);
        }
    }
    assert_eq!(streamed, "w1 w2 w3 w4 w5 w6 w7 w8");
}

#[tokio::test]
async fn a_stream_broken_after_content_is_an_error_in_the_sdk() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    chaos
        .script("openai", vec!["reset_after;tokens=3".parse().unwrap()])
        .unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = sdk(&gateway);
    let mut stream = client.chat().create_stream(ask()).await.expect("a stream");
    let mut streamed = String::new();
    let mut error = None;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => {
                if let Some(delta) = chunk.choices.first().and_then(|c| c.delta.content.clone()) {
                    streamed.push_str(&delta);
                }
            }
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    assert_eq!(streamed, "w1 w2 w3");
    let error = error.expect("the SDK raises the interruption");
    assert!(error.contains("stream_interrupted"), "{error}");
    assert_eq!(
        chaos.journal().len(),
        1,
        "nothing is sent again after content"
    );
}

/// async-openai reads seawall's error event as a chat chunk it cannot
/// parse (`JSONDeserialize`) and reads on; an app that skips chunks it
/// cannot decode, as many do with OpenAI-compatible servers, would then
/// meet a clean end and take the cut answer for a whole one. The body
/// fails after the event, so the SDK's next item is a stream error, then
/// the stream ends (it used to end there, no error after the event).
#[tokio::test]
async fn a_reader_that_skips_undecodable_chunks_still_meets_the_break() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    chaos
        .script("openai", vec!["reset_after;tokens=3".parse().unwrap()])
        .unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let mut stream = sdk(&gateway)
        .chat()
        .create_stream(ask())
        .await
        .expect("a stream");
    let mut streamed = String::new();
    let mut skipped = Vec::new();
    let mut broken = Vec::new();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => {
                assert!(broken.is_empty(), "a chunk after the break: {chunk:?}");
                if let Some(delta) = chunk.choices.first().and_then(|c| c.delta.content.clone()) {
                    streamed.push_str(&delta);
                }
            }
            Err(OpenAIError::JSONDeserialize(_, content)) => skipped.push(content),
            Err(other) => broken.push(other),
        }
    }
    assert_eq!(streamed, "w1 w2 w3");
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0].contains("stream_interrupted"), "{skipped:?}");
    // The failed body, as eventsource-stream reports a transport error.
    assert!(
        matches!(
            broken.as_slice(),
            [OpenAIError::StreamError(error)] if matches!(**error, StreamError::EventStream(_))
        ),
        "{broken:?}"
    );
}

/// async-openai retries every 5xx, sleeping out its `Retry-After`, and
/// ignores `x-should-retry`: a route cooling after a quota wall answers
/// as the wall did (429 `insufficient_quota`), which it does not retry,
/// not with a 503 naming the wall's 13 hours.
#[tokio::test]
async fn a_remembered_quota_wall_is_not_slept_out_by_the_sdk() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let wall = "status;code=429;retry_after=48489;kind=insufficient_quota";
    chaos.script("openai", vec![wall.parse().unwrap()]).unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = sdk(&gateway);
    for call in ["met", "remembered"] {
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            client.chat().create(ask()),
        )
        .await
        .unwrap_or_else(|_| panic!("the {call} wall was slept out"));
        let error = answer.expect_err("a quota wall").to_string();
        assert!(error.contains("quota"), "{call}: {error}");
    }
    assert_eq!(chaos.journal().len(), 1, "the cooling route was not called");
}

fn ask_responses() -> CreateResponse {
    CreateResponseArgs::default()
        .model("gpt-x")
        .input("count")
        .build()
        .unwrap()
}

/// What async-openai read of a Responses API stream through the gateway.
#[derive(Debug, Default)]
struct ReadResponses {
    text: String,
    completed: bool,
    sequence: Vec<u64>,
    /// The stream's `error` event: its code and number.
    error_event: Option<(Option<String>, u64)>,
    /// The SDK's own error, if it raised one.
    error: Option<String>,
}

async fn read_responses(client: &Client<OpenAIConfig>) -> ReadResponses {
    let mut read = ReadResponses::default();
    let mut events = client
        .responses()
        .create_stream(ask_responses())
        .await
        .expect("a stream");
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => {
                let json = serde_json::to_value(&event).expect("an event serializes");
                read.sequence
                    .push(json["sequence_number"].as_u64().expect("a number"));
                match event {
                    ResponseStreamEvent::ResponseOutputTextDelta(delta) => {
                        read.text.push_str(&delta.delta)
                    }
                    ResponseStreamEvent::ResponseCompleted(_) => read.completed = true,
                    ResponseStreamEvent::ResponseError(error) => {
                        read.error_event = Some((error.code, error.sequence_number))
                    }
                    _ => {}
                }
            }
            Err(e) => {
                read.error = Some(e.to_string());
                break;
            }
        }
    }
    read
}

/// An OpenAI route serves the Responses API too, at the same path
/// upstream, with its own reading of answers: retried by the gateway,
/// read whole by the SDK, unary and streamed.
#[tokio::test]
async fn async_openai_reads_responses_through_the_gateway() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    chaos
        .script("openai_responses", vec![Fault::status(503), Fault::ok()])
        .unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = sdk(&gateway);
    let answer = client
        .responses()
        .create(ask_responses())
        .await
        .expect("an answer");
    assert_eq!(
        answer.output_text().as_deref(),
        Some("w1 w2 w3 w4 w5 w6 w7 w8")
    );
    let journal = chaos.journal();
    assert_eq!(journal.len(), 2, "the 503 was retried by the gateway");
    assert!(journal.iter().all(|row| row.path == "/v1/responses"));

    let read = read_responses(&client).await;
    assert_eq!(read.error, None);
    assert_eq!(read.text, "w1 w2 w3 w4 w5 w6 w7 w8");
    assert!(read.completed);
    assert_eq!(read.error_event, None);
}

/// A Responses API stream broken after content ends with the API's own
/// `error` event, carrying seawall's code and the next sequence number,
/// and then a failed body.
#[tokio::test]
async fn a_responses_stream_broken_after_content_ends_with_its_error_event() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    chaos
        .script(
            "openai_responses",
            vec!["reset_after;tokens=3".parse().unwrap()],
        )
        .unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let read = read_responses(&sdk(&gateway)).await;
    assert_eq!(read.text, "w1 w2 w3");
    assert!(!read.completed);
    let (code, number) = read.error_event.clone().expect("the error event");
    assert_eq!(code.as_deref(), Some("stream_interrupted"), "{read:?}");
    let last = read.sequence[read.sequence.len() - 2];
    assert_eq!(number, last + 1, "{read:?}");
    // Then the body fails: the SDK raises it, no clean end after the event.
    let error = read.error.as_deref().expect("an error after the event");
    assert!(error.contains("EventStream error"), "{error}");
    assert_eq!(
        chaos.journal().len(),
        1,
        "nothing is sent again after content"
    );
}

/// An Anthropic model called at `/v1/responses` is refused with where to
/// call it.
#[tokio::test]
async fn a_model_of_another_wire_is_refused_at_the_responses_path() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::Anthropic, &[("main", &chaos)])).await;
    let error = sdk(&gateway)
        .responses()
        .create(ask_responses())
        .await
        .expect_err("a refusal");
    let text = error.to_string();
    assert!(text.contains("/v1/messages"), "{text}");
    assert!(chaos.journal().is_empty());
}
