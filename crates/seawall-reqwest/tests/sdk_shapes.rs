//! seawall-chaos speaks the providers' wire shapes well enough for a real
//! SDK: async-openai alone (no seawall; its own client, as a user has it)
//! reads every complete answer chaos serves — chat completions and the
//! Responses API, unary and streamed, for `ok`, `length`, `refusal` and
//! `empty` — into its typed structs, and every error body chaos sends for
//! a status async-openai does not retry into its `ApiError`. A chaos shape
//! a real client cannot read would make seawall's loopback suites test a
//! provider that does not exist.

mod common;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    ChatCompletionRequestUserMessage, CreateChatCompletionRequestArgs, FinishReason,
};
use async_openai::types::responses::{
    CreateResponseArgs, OutputItem, OutputMessageContent, ResponseStreamEvent, Status,
};
use common::words;
use futures_util::StreamExt;
use seawall_chaos::{ChaosHandle, FAULT_HEADER};

fn client(chaos: &ChaosHandle, fault: &str) -> Client<OpenAIConfig> {
    let config = OpenAIConfig::new()
        .with_api_base(format!("{}/v1", chaos.base_url()))
        .with_api_key("test-key")
        .with_header(FAULT_HEADER, fault)
        .expect("a header");
    Client::build(common::reqwest_client(), config)
}

/// What async-openai made of a chat completion: text, refusal, finish.
#[derive(Debug, Default, PartialEq)]
struct Chat {
    text: String,
    refusal: String,
    finish: Option<FinishReason>,
}

async fn chat(chaos: &ChaosHandle, fault: &str, stream: bool) -> Result<Chat, OpenAIError> {
    let client = client(chaos, fault);
    let request = CreateChatCompletionRequestArgs::default()
        .model("gpt-x")
        .messages([ChatCompletionRequestUserMessage::from("Say eight words.").into()])
        .build()
        .expect("a request");
    let mut seen = Chat::default();
    if !stream {
        let answer = client.chat().create(request).await?;
        for choice in answer.choices {
            seen.text.extend(choice.message.content);
            seen.refusal.extend(choice.message.refusal);
            seen.finish = choice.finish_reason;
        }
        return Ok(seen);
    }
    let mut chunks = client.chat().create_stream(request).await?;
    while let Some(chunk) = chunks.next().await {
        for choice in chunk?.choices {
            seen.text.extend(choice.delta.content);
            seen.refusal.extend(choice.delta.refusal);
            seen.finish = choice.finish_reason.or(seen.finish);
        }
    }
    Ok(seen)
}

/// What async-openai made of a Responses API answer.
#[derive(Debug, Default, PartialEq)]
struct Answer {
    text: String,
    refusal: String,
    status: Option<Status>,
}

fn read_output(output: &[OutputItem], seen: &mut Answer) {
    for item in output {
        if let OutputItem::Message(message) = item {
            for part in &message.content {
                match part {
                    OutputMessageContent::OutputText(text) => seen.text.push_str(&text.text),
                    OutputMessageContent::Refusal(refusal) => {
                        seen.refusal.push_str(&refusal.refusal)
                    }
                }
            }
        }
    }
}

async fn responses(chaos: &ChaosHandle, fault: &str, stream: bool) -> Result<Answer, OpenAIError> {
    let client = client(chaos, fault);
    let request = CreateResponseArgs::default()
        .model("gpt-x")
        .input("Say eight words.")
        .build()
        .expect("a request");
    let mut seen = Answer::default();
    if !stream {
        let response = client.responses().create(request).await?;
        read_output(&response.output, &mut seen);
        seen.status = Some(response.status);
        return Ok(seen);
    }
    let mut events = client.responses().create_stream(request).await?;
    // The text as the deltas spell it, checked against the final response.
    let mut deltas = String::new();
    while let Some(event) = events.next().await {
        match event? {
            ResponseStreamEvent::ResponseOutputTextDelta(delta) => deltas.push_str(&delta.delta),
            ResponseStreamEvent::ResponseCompleted(done) => {
                read_output(&done.response.output, &mut seen);
                seen.status = Some(done.response.status);
            }
            ResponseStreamEvent::ResponseIncomplete(done) => {
                read_output(&done.response.output, &mut seen);
                seen.status = Some(done.response.status);
            }
            _ => {}
        }
    }
    assert_eq!(deltas, seen.text, "the deltas spell the final text");
    Ok(seen)
}

#[tokio::test]
async fn async_openai_reads_every_chat_completion_chaos_serves() {
    let chaos = common::chaos().await;
    for stream in [false, true] {
        let ok = chat(&chaos, "ok", stream).await.expect("ok parses");
        assert_eq!(
            (ok.text.as_str(), ok.finish),
            (words(8).as_str(), Some(FinishReason::Stop))
        );
        let cut = chat(&chaos, "length;tokens=3", stream)
            .await
            .expect("length parses");
        assert_eq!(
            (cut.text.as_str(), cut.finish),
            (words(3).as_str(), Some(FinishReason::Length))
        );
        let refused = chat(&chaos, "refusal", stream)
            .await
            .expect("refusal parses");
        assert!(!refused.refusal.is_empty(), "stream={stream}: {refused:?}");
        assert_eq!(refused.text, "");
        let empty = chat(&chaos, "empty", stream).await.expect("empty parses");
        assert_eq!(empty.text, "", "stream={stream}");
    }
}

#[tokio::test]
async fn async_openai_reads_every_responses_answer_chaos_serves() {
    let chaos = common::chaos().await;
    for stream in [false, true] {
        let ok = responses(&chaos, "ok", stream).await.expect("ok parses");
        assert_eq!(
            (ok.text.as_str(), ok.status),
            (words(8).as_str(), Some(Status::Completed))
        );
        let cut = responses(&chaos, "length;tokens=3", stream)
            .await
            .expect("length parses");
        assert_eq!(
            (cut.text.as_str(), cut.status),
            (words(3).as_str(), Some(Status::Incomplete))
        );
        let refused = responses(&chaos, "refusal", stream)
            .await
            .expect("refusal parses");
        assert!(!refused.refusal.is_empty(), "stream={stream}: {refused:?}");
        let empty = responses(&chaos, "empty", stream)
            .await
            .expect("empty parses");
        assert_eq!(
            (empty.text.as_str(), empty.status),
            ("", Some(Status::Completed))
        );
    }
}

#[tokio::test]
async fn async_openai_reads_chaos_error_bodies_as_api_errors() {
    // Statuses async-openai does not retry (its own retry would wait on 429
    // and 5xx): each error body is the provider's, read into `ApiError`.
    let chaos = common::chaos().await;
    for fault in [
        "status;code=400;kind=context_length",
        "status;code=400;kind=bad_args",
        "status;code=401;kind=auth",
        "status;code=404;kind=not_found",
        "status;code=400",
    ] {
        let error = chat(&chaos, fault, false).await.expect_err(fault);
        assert!(
            matches!(error, OpenAIError::ApiError(_)),
            "{fault}: {error:?}"
        );
        let error = responses(&chaos, fault, false).await.expect_err(fault);
        assert!(
            matches!(error, OpenAIError::ApiError(_)),
            "{fault}: {error:?}"
        );
    }
}
