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
    ChatCompletionRequestUserMessage, ChatCompletionStreamOptions, CreateChatCompletionRequestArgs,
    FinishReason,
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

/// What async-openai made of an answer, either API: its text, its refusal
/// and how it ended (chat's `finish_reason`, the Responses `status`).
#[derive(Debug, Default, PartialEq)]
struct Read {
    text: String,
    refusal: String,
    end: Option<End>,
    /// The usage's output tokens (a streamed chat answer asks for the
    /// usage chunk).
    output_tokens: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
enum End {
    Chat(FinishReason),
    Responses(Status),
}

#[derive(Debug, Clone, Copy)]
enum Api {
    Chat,
    Responses,
}

impl Api {
    /// How an answer that ran to its end, and one cut by the token limit,
    /// end in this API.
    fn ends(self) -> (End, End) {
        match self {
            Api::Chat => (
                End::Chat(FinishReason::Stop),
                End::Chat(FinishReason::Length),
            ),
            Api::Responses => (
                End::Responses(Status::Completed),
                End::Responses(Status::Incomplete),
            ),
        }
    }
}

async fn read(
    chaos: &ChaosHandle,
    api: Api,
    fault: &str,
    stream: bool,
) -> Result<Read, OpenAIError> {
    match api {
        Api::Chat => chat(chaos, fault, stream).await,
        Api::Responses => responses(chaos, fault, stream).await,
    }
}

async fn chat(chaos: &ChaosHandle, fault: &str, stream: bool) -> Result<Read, OpenAIError> {
    let client = client(chaos, fault);
    let mut request = CreateChatCompletionRequestArgs::default();
    request
        .model("gpt-x")
        .messages([ChatCompletionRequestUserMessage::from("Say eight words.").into()]);
    if stream {
        request.stream_options(ChatCompletionStreamOptions {
            include_usage: Some(true),
            include_obfuscation: None,
        });
    }
    let request = request.build().expect("a request");
    let mut seen = Read::default();
    if !stream {
        let answer = client.chat().create(request).await?;
        seen.output_tokens = answer.usage.map(|usage| usage.completion_tokens);
        for choice in answer.choices {
            seen.text.extend(choice.message.content);
            seen.refusal.extend(choice.message.refusal);
            seen.end = choice.finish_reason.map(End::Chat);
        }
        return Ok(seen);
    }
    let mut chunks = client.chat().create_stream(request).await?;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        if let Some(usage) = chunk.usage {
            seen.output_tokens = Some(usage.completion_tokens);
        }
        for choice in chunk.choices {
            seen.text.extend(choice.delta.content);
            seen.refusal.extend(choice.delta.refusal);
            seen.end = choice.finish_reason.map(End::Chat).or(seen.end);
        }
    }
    Ok(seen)
}

/// The text and refusal of a Responses API output.
fn read_output(output: &[OutputItem], seen: &mut Read) {
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

async fn responses(chaos: &ChaosHandle, fault: &str, stream: bool) -> Result<Read, OpenAIError> {
    let client = client(chaos, fault);
    let request = CreateResponseArgs::default()
        .model("gpt-x")
        .input("Say eight words.")
        .build()
        .expect("a request");
    let mut seen = Read::default();
    if !stream {
        let response = client.responses().create(request).await?;
        seen.output_tokens = response.usage.map(|usage| usage.output_tokens);
        read_output(&response.output, &mut seen);
        seen.end = Some(End::Responses(response.status));
        return Ok(seen);
    }
    let mut events = client.responses().create_stream(request).await?;
    // The text as the deltas spell it, checked against the final response.
    let mut deltas = String::new();
    while let Some(event) = events.next().await {
        let response = match event? {
            ResponseStreamEvent::ResponseOutputTextDelta(delta) => {
                deltas.push_str(&delta.delta);
                continue;
            }
            ResponseStreamEvent::ResponseCompleted(done) => done.response,
            ResponseStreamEvent::ResponseIncomplete(done) => done.response,
            _ => continue,
        };
        read_output(&response.output, &mut seen);
        seen.output_tokens = response.usage.map(|usage| usage.output_tokens);
        seen.end = Some(End::Responses(response.status));
    }
    assert_eq!(deltas, seen.text, "the deltas spell the final text");
    Ok(seen)
}

#[tokio::test]
async fn async_openai_reads_every_answer_chaos_serves() {
    let chaos = common::chaos().await;
    for api in [Api::Chat, Api::Responses] {
        let (complete, cut) = api.ends();
        for stream in [false, true] {
            let case = format!("{api:?}, stream={stream}");
            let ok = read(&chaos, api, "ok", stream).await.expect(&case);
            assert_eq!(
                (ok.text, ok.end),
                (words(8), Some(complete.clone())),
                "{case}"
            );
            assert_eq!(ok.output_tokens, Some(8), "{case}: the usage reads");
            let short = read(&chaos, api, "length;tokens=3", stream)
                .await
                .expect(&case);
            assert_eq!(
                (short.text, short.end),
                (words(3), Some(cut.clone())),
                "{case}"
            );
            let refused = read(&chaos, api, "refusal", stream).await.expect(&case);
            assert!(!refused.refusal.is_empty(), "{case}: {refused:?}");
            assert_eq!(refused.text, "", "{case}");
            let empty = read(&chaos, api, "empty", stream).await.expect(&case);
            assert_eq!(empty.text, "", "{case}");
        }
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
