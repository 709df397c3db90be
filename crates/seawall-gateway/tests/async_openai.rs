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
use seawall_reqwest::async_openai::types::chat::{
    ChatCompletionRequestUserMessage, CreateChatCompletionRequest, CreateChatCompletionRequestArgs,
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
