//! What async-openai makes of seawall's failures under `OpenAiService`:
//! the error shapes the adapter's docs promise, and where
//! `Failure::find` reaches the failure. The stack is stood in for by a
//! service whose answer fails as a stack's does: before the response, or
//! in the body (after a frame of content, or at once).
#![cfg(feature = "async-openai")]

use async_openai::config::OpenAIConfig;
use async_openai::error::{OpenAIError, StreamError};
use async_openai::types::chat::{
    ChatCompletionRequestUserMessage, CreateChatCompletionRequest, CreateChatCompletionRequestArgs,
};
use bytes::Bytes;
use futures_util::StreamExt;
use http_body::Frame;
use http_body_util::StreamBody;
use seawall::core::{BoxError, Code, Failure};
use seawall_test::canned::openai_delta_event;

/// Where the stood-in stack fails.
#[derive(Clone, Copy)]
enum Fails {
    /// Before the response.
    Before,
    /// In the body, after the frames of `content`.
    InBody(&'static [&'static str]),
}

/// An async-openai client over a stack that fails `how`, with
/// `stream_interrupted`.
fn client(how: Fails) -> async_openai::Client<OpenAIConfig> {
    let stack = tower::service_fn(move |_: http::Request<reqwest::Body>| async move {
        let failure: BoxError = Box::new(Failure::new(Code::StreamInterrupted));
        let Fails::InBody(content) = how else {
            return Err(failure);
        };
        let frames: Vec<Result<Frame<Bytes>, BoxError>> = content
            .iter()
            .map(|text| Ok(Frame::data(Bytes::from(openai_delta_event(text)))))
            .chain([Err(failure)])
            .collect();
        let body = StreamBody::new(futures_util::stream::iter(frames));
        Ok(http::Response::builder()
            .header("content-type", "text/event-stream")
            .body(body)
            .expect("a response"))
    });
    let config = OpenAIConfig::new().with_api_base("http://127.0.0.1:9/v1");
    seawall_reqwest::openai_client(config, stack)
}

fn ask() -> CreateChatCompletionRequest {
    CreateChatCompletionRequestArgs::default()
        .model("gpt-x")
        .messages([ChatCompletionRequestUserMessage::from("hi").into()])
        .build()
        .expect("a request")
}

/// A failure before the response: `OpenAIError::Boxed`, transparent, so
/// `Failure::find` on it finds nothing; on the box inside it does.
#[tokio::test]
async fn a_failure_before_the_response_is_boxed() {
    let error = client(Fails::Before)
        .chat()
        .create(ask())
        .await
        .expect_err("a failure");
    assert!(Failure::find(&error).is_none(), "{error:?}");
    let OpenAIError::Boxed(inner) = &error else {
        panic!("{error:?}");
    };
    let found = Failure::find(&**inner).map(Failure::code);
    assert_eq!(found, Some(Code::StreamInterrupted));
}

/// A unary answer's body failure: `OpenAIError::Reqwest`, a decode error
/// (not `is_body`), whose source chain reaches seawall's failure.
#[tokio::test]
async fn a_unary_body_failure_is_a_reqwest_decode_error_that_holds_the_failure() {
    let error = client(Fails::InBody(&[]))
        .chat()
        .create(ask())
        .await
        .expect_err("a failure");
    let OpenAIError::Reqwest(reqwest) = &error else {
        panic!("{error:?}");
    };
    assert!(reqwest.is_decode() && !reqwest.is_body(), "{reqwest:?}");
    let found = Failure::find(&error).map(Failure::code);
    assert_eq!(found, Some(Code::StreamInterrupted), "{error:?}");
}

/// A stream's body failure after content: `OpenAIError::StreamError`
/// whose text is reqwest's, always the same, the failure lost.
#[tokio::test]
async fn a_stream_body_failure_is_a_stream_error_of_fixed_text() {
    let mut stream = client(Fails::InBody(&["w1"]))
        .chat()
        .create_stream(ask())
        .await
        .expect("a stream");
    let first = stream.next().await.expect("a chunk").expect("content");
    assert_eq!(first.choices[0].delta.content.as_deref(), Some("w1"));
    let error = stream
        .next()
        .await
        .expect("an item")
        .expect_err("the failure");
    let OpenAIError::StreamError(inner) = &error else {
        panic!("{error:?}");
    };
    let StreamError::EventStream(text) = &**inner else {
        panic!("{error:?}");
    };
    assert_eq!(text, "Transport error: error decoding response body");
    assert!(Failure::find(&error).is_none(), "{error:?}");
    assert!(stream.next().await.is_none(), "the stream ends after it");
}
