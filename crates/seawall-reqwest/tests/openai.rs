//! async-openai chat completions, unary and streamed, with the seawall
//! stack underneath (`OpenAiService` over the short stack over
//! `ReqwestService`), against a real seawall-chaos server over loopback.
//! No mocks: attempts and bodies come from the server's journal, the
//! verdict from `seawall_reqwest::scope`.

mod common;

use std::time::{Duration, Instant};

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::retry::OpenAIRetryLayer;
use async_openai::types::chat::{
    ChatCompletionRequestUserMessage, CreateChatCompletionRequest, CreateChatCompletionRequestArgs,
    FinishReason,
};
use common::{rows, same_body, words};
use futures_util::StreamExt;
use seawall::classify::ClassifyLayer;
use seawall::core::{Action, Code, Failure};
use seawall::stack::Stack;
use seawall_chaos::{ChaosHandle, FAULT_HEADER, Fault, JournalEntry};
use seawall_reqwest::{OpenAiLayer, OpenAiService, Outcome};
use tower::Layer;

/// How the stack is assembled under async-openai.
#[derive(Clone, Copy, PartialEq)]
enum Under {
    /// The short stack.
    Stack,
    /// The short stack with a fallback to a second server.
    Fallback,
    /// The short stack, and async-openai's own retry layer above the
    /// adapter, as someone might add it by mistake.
    StackUnderOpenAiRetry,
}

/// async-openai's configuration for the server at `base`.
fn config(base: &str) -> OpenAIConfig {
    OpenAIConfig::new()
        .with_api_base(format!("{base}/v1"))
        .with_api_key("test-key")
}

/// An async-openai client for `primary`, seawall underneath.
fn client(
    primary: &ChaosHandle,
    fallback: &ChaosHandle,
    fault: Option<&str>,
    under: Under,
) -> Client<OpenAIConfig> {
    let http = common::reqwest_client();
    let mut config = config(&primary.base_url());
    if let Some(fault) = fault {
        config = config.with_header(FAULT_HEADER, fault).expect("a header");
    }
    let stack = common::short_stack();
    let classify = ClassifyLayer::openai();
    let service = seawall_reqwest::ReqwestService::new(http.clone());
    let client = Client::build(http, config);
    match under {
        Under::Stack => {
            client.with_http_service(OpenAiService::new(stack.build(&classify, service)))
        }
        Under::Fallback => {
            let layer = common::fallback_to(&stack, &fallback.base_url());
            let seawall = stack.build_with_fallback(&classify, service, layer);
            client.with_http_service(OpenAiLayer.layer(seawall))
        }
        Under::StackUnderOpenAiRetry => {
            let adapter = OpenAiService::new(stack.build(&classify, service));
            client.with_http_service(OpenAIRetryLayer::new(3).layer(adapter))
        }
    }
}

fn request() -> CreateChatCompletionRequest {
    CreateChatCompletionRequestArgs::default()
        .model("gpt-x")
        .messages([ChatCompletionRequestUserMessage::from("Say eight words.").into()])
        .build()
        .expect("a request")
}

/// What the caller saw of one call, and what the servers saw.
#[derive(Debug)]
struct Seen {
    /// The text async-openai handed the caller.
    text: String,
    /// async-openai's error, when it returned one.
    error: Option<async_openai::error::OpenAIError>,
    finish: Option<FinishReason>,
    outcome: Outcome,
    primary: Vec<JournalEntry>,
    fallback: Vec<JournalEntry>,
    elapsed: Duration,
}

async fn call(stream: bool, fault: Option<&str>, script: &[&str], under: Under) -> Seen {
    let primary = common::chaos().await;
    let fallback = common::chaos().await;
    if !script.is_empty() {
        let faults = script.iter().map(|f| f.parse::<Fault>().unwrap()).collect();
        primary.script("openai", faults).unwrap();
    }
    let client = client(&primary, &fallback, fault, under);
    let started = Instant::now();
    let ((text, finish, error), outcome) = if stream {
        seawall_reqwest::scope(async {
            let mut text = String::new();
            let mut finish = None;
            let mut chunks = match client.chat().create_stream(request()).await {
                Ok(chunks) => chunks,
                Err(error) => return (text, finish, Some(error)),
            };
            while let Some(chunk) = chunks.next().await {
                match chunk {
                    Ok(chunk) => {
                        for choice in chunk.choices {
                            text.extend(choice.delta.content);
                            finish = choice.finish_reason.or(finish);
                        }
                    }
                    Err(error) => return (text, finish, Some(error)),
                }
            }
            (text, finish, None)
        })
        .await
    } else {
        seawall_reqwest::scope(async {
            match client.chat().create(request()).await {
                Ok(answer) => {
                    let choice = answer.choices.into_iter().next().expect("a choice");
                    (
                        choice.message.content.unwrap_or_default(),
                        choice.finish_reason,
                        None,
                    )
                }
                Err(error) => (String::new(), None, Some(error)),
            }
        })
        .await
    };
    let elapsed = started.elapsed();
    Seen {
        text,
        error,
        finish,
        outcome,
        primary: rows(&primary).await,
        fallback: rows(&fallback).await,
        elapsed,
    }
}

fn assert_ok(seen: &Seen) {
    assert!(seen.error.is_none(), "{seen:#?}");
    assert!(seen.outcome.is_ok(), "{seen:#?}");
    assert!(seen.outcome.failure().is_none());
    assert_eq!(seen.text, words(8));
    assert_eq!(seen.finish, Some(FinishReason::Stop));
}

#[tokio::test]
async fn a_503_then_ok_is_two_upstream_attempts_none_by_async_openai() {
    for stream in [false, true] {
        let seen = call(stream, None, &["status;code=503", "ok"], Under::Stack).await;
        assert_ok(&seen);
        assert_eq!(seen.primary.len(), 2, "stream={stream}");
        assert_eq!(seen.outcome.attempts(), 2);
        assert_eq!(seen.outcome.calls(), 1, "one call into the adapter");
        same_body(&seen.primary);
    }
}

#[tokio::test]
async fn the_quota_wall_is_one_attempt_and_the_caller_reads_quota_exhausted() {
    // One route: the wall is surfaced after one call.
    for stream in [false, true] {
        let seen = call(
            stream,
            Some("status;code=429;retry_after=48489;kind=insufficient_quota"),
            &[],
            Under::Stack,
        )
        .await;
        let error = seen.error.as_ref().expect("an error");
        // async-openai's error hides the failure (`Boxed` is transparent)...
        assert!(Failure::find(error).is_none());
        // ...the scope has it.
        assert_eq!(seen.outcome.code(), Some(Code::QuotaExhausted));
        assert_eq!(seen.outcome.attempts(), 1);
        assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 0));
    }
}

#[tokio::test]
async fn a_quota_wall_with_a_backup_is_answered_by_the_backup() {
    // The wall condemns the account, not the request: one call to it, no
    // wait, and the fallback answers.
    for stream in [false, true] {
        let seen = call(
            stream,
            Some("status;code=429;retry_after=48489;kind=insufficient_quota"),
            &[],
            Under::Fallback,
        )
        .await;
        assert_ok(&seen);
        assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 1));
        let receipt = seen.outcome.receipt().expect("a receipt");
        assert_eq!(receipt.attempts[0].code, Some(Code::QuotaExhausted));
        assert!(receipt.fallback);
    }
}

#[tokio::test]
async fn headers_then_silence_fails_over_after_one_first_byte_bound() {
    let seen = call(true, Some("hang_after_headers"), &[], Under::Fallback).await;
    assert_ok(&seen);
    assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 1));
    let receipt = seen.outcome.receipt().expect("a receipt");
    assert_eq!(receipt.attempts[0].code, Some(Code::FirstByteTimeout));
    assert!(receipt.fallback);
    assert!(seen.elapsed >= common::FIRST_BYTE, "{:?}", seen.elapsed);
    assert!(seen.elapsed < common::ATTEMPT, "{:?}", seen.elapsed);
    same_body(&[seen.primary[0].clone(), seen.fallback[0].clone()]);
}

#[tokio::test]
async fn a_unary_answer_that_never_comes_fails_over() {
    // With a fallback, one zero-byte attempt bound is enough.
    let seen = call(false, Some("hang_after_headers"), &[], Under::Fallback).await;
    assert_ok(&seen);
    assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 1));
    assert_eq!(seen.outcome.attempts(), 2);
}

#[tokio::test]
async fn a_reset_after_content_carries_the_delivered_tokens_and_sends_nothing_again() {
    let seen = call(true, None, &["reset_after;tokens=3", "ok"], Under::Fallback).await;
    assert!(seen.error.is_some(), "{seen:#?}");
    assert_eq!(seen.text, words(3));
    let failure = seen.outcome.failure().expect("seawall's verdict");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(failure.action(), Action::Surface);
    assert_eq!(seen.outcome.delivered_text(), Some(words(3)));
    assert_eq!(seen.outcome.attempts(), 1);
    assert!(!seen.outcome.is_ok());
    assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 0));
}

/// The provider's own error event after content is not handed on:
/// async-openai read it first, as a chunk it cannot parse ("missing field
/// `id`"), and its caller stopped there, never reading seawall's verdict.
#[tokio::test]
async fn an_error_event_after_content_reaches_the_caller_as_seawalls_verdict() {
    let seen = call(
        true,
        None,
        &["stream_error_after;tokens=3", "ok"],
        Under::Stack,
    )
    .await;
    assert_eq!(seen.text, words(3));
    // async-openai keeps only the text of a body error (reqwest's "error
    // decoding response body"); the scope has seawall's verdict.
    let error = seen.error.as_ref().expect("an error");
    assert!(
        matches!(error, async_openai::error::OpenAIError::StreamError(_)),
        "{error:?}"
    );
    let failure = seen.outcome.failure().expect("seawall's verdict");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(seen.outcome.delivered_text(), Some(words(3)));
    assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 0));
}

/// A refusal after content ends the stream with `content_filter` and then
/// `[DONE]`: async-openai stops reading at `[DONE]`, so the verdict after
/// it never reached its caller, whose stream ended as a whole answer. The
/// marker of a stream that ends badly is not handed on.
#[tokio::test]
async fn a_filter_after_content_is_an_error_the_caller_reads() {
    let seen = call(true, None, &["refusal;tokens=3"], Under::Stack).await;
    assert_eq!(seen.text, words(3));
    let error = seen.error.as_ref().expect("no clean end");
    assert!(
        matches!(error, async_openai::error::OpenAIError::StreamError(_)),
        "{error:?}"
    );
    let failure = seen.outcome.failure().expect("seawall's verdict");
    assert_eq!(failure.code(), Code::Refused);
    assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 0));
}

#[tokio::test]
async fn a_unary_body_reset_is_retried_before_async_openai_sees_it() {
    // Nothing reached the caller: the classifier read the broken body
    // inside the attempt, so the ladder may try again.
    let seen = call(false, None, &["reset_after;tokens=3", "ok"], Under::Stack).await;
    assert_ok(&seen);
    assert_eq!(seen.primary.len(), 2);
    let receipt = seen.outcome.receipt().expect("a receipt");
    assert_eq!(receipt.attempts[0].code, Some(Code::Transport));
    same_body(&seen.primary);
}

#[tokio::test]
async fn an_empty_answer_is_retried_to_an_answer() {
    for stream in [false, true] {
        let seen = call(stream, None, &["empty", "ok"], Under::Stack).await;
        assert_ok(&seen);
        assert_eq!(seen.primary.len(), 2);
        let receipt = seen.outcome.receipt().expect("a receipt");
        assert_eq!(receipt.attempts[0].code, Some(Code::EmptyResponse));
        same_body(&seen.primary);
    }
}

#[tokio::test]
async fn a_refusal_is_not_retried() {
    for stream in [false, true] {
        let seen = call(stream, Some("refusal"), &[], Under::Fallback).await;
        assert!(seen.error.is_some(), "{seen:#?}");
        assert_eq!(seen.outcome.code(), Some(Code::Refused));
        assert_eq!(seen.outcome.attempts(), 1);
        assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 0));
    }
}

#[tokio::test]
async fn async_openai_retry_above_the_adapter_never_fires() {
    // A 503 on every attempt: seawall's ladder makes its three attempts;
    // OpenAIRetry above sees an `OpenAIError::Boxed` and retries nothing,
    // so it is 3 rows, not 3 × 4.
    for stream in [false, true] {
        let seen = call(
            stream,
            Some("status;code=503"),
            &[],
            Under::StackUnderOpenAiRetry,
        )
        .await;
        assert!(seen.error.is_some());
        assert_eq!(seen.outcome.code(), Some(Code::ProviderUnavailable));
        assert_eq!(seen.outcome.attempts(), 3);
        assert_eq!(seen.primary.len(), 3);
        assert_eq!(seen.outcome.calls(), 1);
        same_body(&seen.primary);
    }
    // And the quota wall it would have waited 48489 s on: one attempt.
    let seen = call(
        false,
        Some("status;code=429;retry_after=48489"),
        &[],
        Under::StackUnderOpenAiRetry,
    )
    .await;
    assert_eq!(seen.outcome.code(), Some(Code::QuotaExhausted));
    assert_eq!(seen.primary.len(), 1);
}

#[tokio::test]
async fn outside_a_scope_the_adapter_still_works() {
    let primary = common::chaos().await;
    let client = client(&primary, &primary, None, Under::Stack);
    let answer = client.chat().create(request()).await.expect("an answer");
    assert_eq!(
        answer.choices[0].message.content.as_deref(),
        Some(words(8).as_str())
    );
}

/// A server that streams one content chunk on its first connection, then
/// holds the stream open until `release` fires and drops the connection
/// mid-body (a chunked body without its last chunk).
async fn held_stream() -> (String, tokio::sync::oneshot::Sender<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const HEAD: &str =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    const EVENT: &str = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w1\"},\"finish_reason\":null}]}\n\n";
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (release, released) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buffer = vec![0; 64 * 1024];
        let _ = socket.read(&mut buffer).await;
        let chunk = format!("{HEAD}{:x}\r\n{EVENT}\r\n", EVENT.len());
        socket.write_all(chunk.as_bytes()).await.unwrap();
        let _ = released.await;
    });
    (base, release)
}

#[tokio::test]
async fn an_earlier_stream_failing_later_leaves_the_last_calls_outcome_alone() {
    // The first call's stream is still open (async-openai reads it in a
    // task of its own) when the second call starts and succeeds; then the
    // first one is cut. The scope describes the second call: its verdict,
    // not the cut of a stream it never read.
    let (held, release) = held_stream().await;
    let chaos = common::chaos().await;
    let http = common::reqwest_client();
    let stack = Stack::interactive().build(
        &ClassifyLayer::openai(),
        seawall_reqwest::ReqwestService::new(http.clone()),
    );
    let first = Client::build(http, config(&held)).with_http_service(OpenAiService::new(stack));
    let second = client(&chaos, &chaos, None, Under::Stack);
    let ((cut, answered), outcome) = seawall_reqwest::scope(async {
        let mut chunks = first
            .chat()
            .create_stream(request())
            .await
            .expect("a stream");
        chunks.next().await.expect("a chunk").expect("its content");
        let answered = second.chat().create(request()).await.is_ok();
        release.send(()).expect("the server holds the stream");
        let mut cut = false;
        while let Some(chunk) = chunks.next().await {
            cut |= chunk.is_err();
        }
        (cut, answered)
    })
    .await;
    assert!(cut && answered, "the first stream cut, the second answered");
    assert_eq!(outcome.calls(), 2);
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(outcome.code(), None);
    assert_eq!(outcome.attempts(), 1);
}

/// A service under the adapter that answers once, then fails its
/// readiness (a `Buffer` whose worker died, a closed limiter).
#[derive(Clone)]
struct ReadyOnce<S> {
    inner: S,
    ready: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl<S, R> tower::Service<R> for ReadyOnce<S>
where
    S: tower::Service<R>,
    S::Error: Into<seawall::core::BoxError>,
{
    type Response = S::Response;
    type Error = seawall::core::BoxError;
    type Future = futures_util::future::MapErr<S::Future, fn(S::Error) -> Self::Error>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        if self.ready.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
            return std::task::Poll::Ready(Err("the service closed".into()));
        }
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: R) -> Self::Future {
        use futures_util::TryFutureExt;
        self.inner.call(request).map_err(Into::into)
    }
}

/// No call follows a failed readiness, so it is said there: the scope
/// describes the call that failed, not the answer before it.
#[tokio::test]
async fn a_call_failing_its_readiness_is_the_scopes_outcome() {
    let chaos = common::chaos().await;
    let http = common::reqwest_client();
    let stack = common::short_stack().build(
        &ClassifyLayer::openai(),
        seawall_reqwest::ReqwestService::new(http.clone()),
    );
    let service = ReadyOnce {
        inner: stack,
        ready: Default::default(),
    };
    let client = Client::build(http, config(&chaos.base_url()))
        .with_http_service(OpenAiService::new(service));
    let ((first, second), outcome) = seawall_reqwest::scope(async {
        let first = client.chat().create(request()).await.is_ok();
        let second = client.chat().create(request()).await.is_err();
        (first, second)
    })
    .await;
    assert!(first && second, "one answer, then a closed service");
    assert_eq!(outcome.calls(), 2);
    assert!(!outcome.is_ok(), "{outcome:?}");
    assert!(
        outcome
            .error()
            .is_some_and(|error| error.contains("the service closed")),
        "{outcome:?}"
    );
    assert_eq!(rows(&chaos).await.len(), 1);
}

/// An error of another kind than a seawall failure (here a client's own,
/// under a ladder with no classifier below) keeps the receipt of the
/// attempts made before it: the scope's outcome reports them.
#[tokio::test]
async fn an_unclassified_error_keeps_its_receipt_in_the_outcome() {
    use seawall::core::{Attempt, Receipt, RouteId};
    let service = tower::service_fn(|_request: http::Request<reqwest::Body>| async {
        let mut receipt = Receipt::default();
        let failure = Failure::new(Code::EmptyResponse).with_status(200);
        receipt.attempts.push(
            Attempt::failed(RouteId::new("main"), Duration::ZERO, &failure).with_billed(true),
        );
        let error: seawall::core::BoxError = Box::new(std::io::Error::other("the client broke"));
        Err::<http::Response<String>, _>(receipt.attach(error))
    });
    let client = Client::build(common::reqwest_client(), config("http://127.0.0.1:9"))
        .with_http_service(OpenAiService::new(service));
    let (failed, outcome) =
        seawall_reqwest::scope(async { client.chat().create(request()).await.is_err() }).await;
    assert!(failed);
    assert!(
        outcome
            .error()
            .is_some_and(|error| error.contains("the client broke")),
        "{outcome:?}"
    );
    let receipt = outcome.receipt().expect("the attempts made before");
    assert_eq!(receipt.billed_attempts(), 1, "{receipt:?}");
}

/// A body error after the answer, with no seawall failure in it (a reset
/// in a 2xx body the classifier passes unread, or a stack without one),
/// keeps the receipt of the answer's head: the attempt was made, and
/// billed.
#[tokio::test]
async fn a_body_error_without_a_receipt_keeps_the_answers() {
    use seawall::core::{Attempt, Receipt, RouteId};
    use seawall_test::body::Chunks;
    let service = tower::service_fn(|_request: http::Request<reqwest::Body>| async {
        let body = Chunks::new([r#"{"id":"c1","#]).then_error(std::io::ErrorKind::ConnectionReset);
        let mut response = http::Response::new(body);
        let mut receipt = Receipt::default();
        receipt.push(Attempt::answered(
            RouteId::new("main"),
            Duration::ZERO,
            &response,
        ));
        response.extensions_mut().insert(receipt);
        Ok::<_, seawall::core::BoxError>(response)
    });
    let client = Client::build(common::reqwest_client(), config("http://127.0.0.1:9"))
        .with_http_service(OpenAiService::new(service));
    let (failed, outcome) =
        seawall_reqwest::scope(async { client.chat().create(request()).await.is_err() }).await;
    assert!(failed);
    assert!(outcome.error().is_some(), "{outcome:?}");
    assert!(outcome.failure().is_none(), "{outcome:?}");
    let receipt = outcome.receipt().expect("the answer's receipt");
    assert_eq!(outcome.attempts(), 1, "{receipt:?}");
    assert_eq!(receipt.billed_attempts(), 1, "{receipt:?}");
}

/// One whole chat completion.
const CHAT_COMPLETION: &str = "{\"id\":\"c1\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"w1 w2\"},\"finish_reason\":\"stop\"}]}";

/// One whole Responses API response.
const RESPONSE: &str = "{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":0,\"status\":\"completed\",\"model\":\"gpt-x\",\"output\":[{\"type\":\"message\",\"id\":\"m1\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"w1 w2\",\"annotations\":[]}]}]}";

/// A server that ignores `"stream": true` and answers every request with
/// `body`, one whole answer as JSON (a 200 `application/json`).
async fn json_only_server(
    body: &'static str,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicU32>) {
    raw_server(Some("application/json"), body).await
}

/// A server that answers every request with a 200 of `body`, labelled
/// `content_type` (no `content-type` header when `None`), and counts them.
async fn raw_server(
    content_type: Option<&'static str>,
    body: &'static str,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicU32>) {
    use std::sync::atomic::{AtomicU32, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = std::sync::Arc::new(AtomicU32::new(0));
    let counter = hits.clone();
    let label = content_type.map_or_else(String::new, |media| format!("content-type: {media}\r\n"));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let label = label.clone();
            tokio::spawn(async move {
                let mut buffer = vec![0; 64 * 1024];
                let _ = socket.read(&mut buffer).await;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\n{label}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (base, hits)
}

/// An async-openai client over the short stack to `base`.
fn client_to(base: &str) -> Client<OpenAIConfig> {
    let http = common::reqwest_client();
    let stack = common::short_stack().build(
        &ClassifyLayer::openai(),
        seawall_reqwest::ReqwestService::new(http.clone()),
    );
    Client::build(http, config(base)).with_http_service(OpenAiService::new(stack))
}

/// Runs `create_stream` (a chat or Responses call, not yet awaited) in a
/// scope and reads its stream to the end: every item, or the call's error
/// as the one item, and the outcome.
async fn collect_in_scope<S, T>(
    create_stream: impl Future<Output = Result<S, OpenAIError>>,
) -> (Vec<Result<T, OpenAIError>>, Outcome)
where
    S: futures_util::Stream<Item = Result<T, OpenAIError>>,
{
    seawall_reqwest::scope(async {
        match create_stream.await {
            Err(error) => vec![Err(error)],
            Ok(items) => items.collect::<Vec<_>>().await,
        }
    })
    .await
}

/// A stream asked for and a whole JSON answer given: async-openai would
/// read it as an event stream with no event and end it cleanly, an empty
/// answer that looks complete (generated and billed all the same). The
/// caller gets an error instead, and the scope says why.
#[tokio::test]
async fn a_stream_answered_with_json_is_an_error_not_an_empty_stream() {
    let (base, hits) = json_only_server(CHAT_COMPLETION).await;
    let client = client_to(&base);
    let (items, outcome) = collect_in_scope(client.chat().create_stream(request())).await;
    assert!(
        items.iter().any(Result::is_err),
        "an error, not a clean end: {items:?}"
    );
    assert_eq!(outcome.code(), Some(Code::ProtocolViolation), "{outcome:?}");
    assert!(!outcome.is_ok(), "{outcome:?}");
    let failure = outcome.failure().expect("the failure");
    assert!(
        failure
            .message()
            .unwrap_or("")
            .contains("text/event-stream"),
        "{failure:?}"
    );
    // Sent once: the server answered, and asking again would only be
    // answered (and billed) the same way.
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// The Responses API's stream, answered with one JSON object, alike.
#[tokio::test]
async fn a_responses_stream_answered_with_json_is_an_error() {
    let (base, _) = json_only_server(RESPONSE).await;
    let client = client_to(&base);
    let request = async_openai::types::responses::CreateResponseArgs::default()
        .model("gpt-x")
        .input("Say eight words.")
        .build()
        .expect("a request");
    let (items, outcome) = collect_in_scope(client.responses().create_stream(request)).await;
    assert!(
        items.iter().any(Result::is_err),
        "an error, not a clean end: {items:?}"
    );
    assert_eq!(outcome.code(), Some(Code::ProtocolViolation), "{outcome:?}");
    // The same answer to a unary call is one.
    let unary = async_openai::types::responses::CreateResponseArgs::default()
        .model("gpt-x")
        .input("Say eight words.")
        .build()
        .expect("a request");
    let (answer, outcome) = seawall_reqwest::scope(client.responses().create(unary)).await;
    answer.expect("an answer");
    assert!(outcome.is_ok(), "{outcome:?}");
}

/// The same server's JSON for a unary call is the answer asked for.
#[tokio::test]
async fn a_unary_call_answered_with_json_is_unchanged() {
    let (base, _) = json_only_server(CHAT_COMPLETION).await;
    let client = client_to(&base);
    let (answer, outcome) = seawall_reqwest::scope(client.chat().create(request())).await;
    let answer = answer.expect("an answer");
    assert_eq!(answer.choices[0].message.content.as_deref(), Some("w1 w2"));
    assert!(outcome.is_ok(), "{outcome:?}");
}

/// A chat stream of two chunks and `[DONE]`, as server-sent events.
const CHAT_STREAM: &str = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"w1 \"},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w2\"},\"finish_reason\":\"stop\"}]}\n\n\
data: [DONE]\n\n";

/// A chat `create_stream` against a server answering [`CHAT_STREAM`]
/// labelled `content_type`: the text read, the chunks, any error, the
/// outcome and how many requests the server saw.
async fn stream_labelled(
    content_type: Option<&'static str>,
) -> (
    String,
    usize,
    Option<async_openai::error::OpenAIError>,
    Outcome,
    u32,
) {
    let (base, hits) = raw_server(content_type, CHAT_STREAM).await;
    let client = client_to(&base);
    let ((text, chunks, error), outcome) = seawall_reqwest::scope(async {
        let mut text = String::new();
        let mut count = 0;
        let mut stream = match client.chat().create_stream(request()).await {
            Ok(stream) => stream,
            Err(error) => return (text, count, Some(error)),
        };
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(chunk) => {
                    count += 1;
                    for choice in chunk.choices {
                        text.extend(choice.delta.content);
                    }
                }
                Err(error) => return (text, count, Some(error)),
            }
        }
        (text, count, None)
    })
    .await;
    let hits = hits.load(std::sync::atomic::Ordering::SeqCst);
    (text, chunks, error, outcome, hits)
}

/// An event stream labelled `text/plain` is read as the stream it is:
/// async-openai never reads the label, and refusing it would drop an
/// answer generated and billed.
#[tokio::test]
async fn a_stream_labelled_text_plain_streams() {
    let (text, chunks, error, outcome, hits) = stream_labelled(Some("text/plain")).await;
    assert!(error.is_none(), "{error:?} {outcome:?}");
    assert_eq!((text.as_str(), chunks), ("w1 w2", 2), "{outcome:?}");
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(hits, 1);
}

/// An event stream with no `content-type` at all, alike.
#[tokio::test]
async fn a_stream_with_no_content_type_streams() {
    let (text, chunks, error, outcome, hits) = stream_labelled(None).await;
    assert!(error.is_none(), "{error:?} {outcome:?}");
    assert_eq!((text.as_str(), chunks), ("w1 w2", 2), "{outcome:?}");
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(hits, 1);
}

/// A chat `create_stream` answered 200 with `body` labelled `label`:
/// asserts it ends as a `protocol_violation` error, not a clean end, and
/// gives how many requests the server saw.
async fn refused_stream(label: &'static str, body: &'static str) -> u32 {
    let (base, hits) = raw_server(Some(label), body).await;
    let client = client_to(&base);
    let (items, outcome) = collect_in_scope(client.chat().create_stream(request())).await;
    assert!(
        items.iter().any(Result::is_err),
        "{label}: an error, not a clean end: {items:?}"
    );
    assert_eq!(
        outcome.code(),
        Some(Code::ProtocolViolation),
        "{label}: {outcome:?}"
    );
    hits.load(std::sync::atomic::Ordering::SeqCst)
}

/// A JSON label is JSON whatever its parameters and its case: the whole
/// answer to a stream asked for is refused all the same.
#[tokio::test]
async fn a_stream_answered_with_json_any_case_or_parameters_is_an_error() {
    for label in [
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "application/vnd.api+json",
    ] {
        assert_eq!(refused_stream(label, CHAT_COMPLETION).await, 1, "{label}");
    }
}

/// A page a proxy or a captive portal answers with 200 holds no event
/// either: the classifier under the stack refuses it (retried, then an
/// error), never read as an empty stream that looks complete.
#[tokio::test]
async fn a_stream_answered_with_a_page_is_an_error() {
    let page = "<html><body>Sign in to the network</body></html>";
    for label in ["text/html; charset=utf-8", "application/xhtml+xml"] {
        assert!(refused_stream(label, page).await >= 1, "{label}");
    }
}
