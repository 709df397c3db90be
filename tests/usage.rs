//! Usage in the receipt: each attempt carries the provider's own token
//! counts — read from a unary answer when it is checked, and from a stream
//! when its body ends — and whether the provider billed it.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::client;
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use seawall::core::Receipt;
use seawall::core::provider::Provider;
use tower::ServiceExt;

/// The request body for `provider`, asking for usage in OpenAI streams.
fn body(provider: Provider, stream: bool) -> String {
    let text = "count to eight";
    match provider {
        Provider::OpenAi => format!(
            r#"{{"model":"gpt-x","stream":{stream},"stream_options":{{"include_usage":true}},"messages":[{{"role":"user","content":"{text}"}}]}}"#
        ),
        Provider::OpenAiResponses => {
            format!(r#"{{"model":"gpt-x","stream":{stream},"input":"{text}"}}"#)
        }
        Provider::Anthropic => format!(
            r#"{{"model":"claude-x","max_tokens":64,"stream":{stream},"messages":[{{"role":"user","content":"{text}"}}]}}"#
        ),
        _ => format!(r#"{{"contents":[{{"role":"user","parts":[{{"text":"{text}"}}]}}]}}"#),
    }
}

fn path(provider: Provider, stream: bool) -> &'static str {
    match (provider, stream) {
        (Provider::OpenAi, _) => "/v1/chat/completions",
        (Provider::OpenAiResponses, _) => "/v1/responses",
        (Provider::Anthropic, _) => "/v1/messages",
        (_, true) => "/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
        (_, false) => "/v1beta/models/gemini-x:generateContent",
    }
}

#[tokio::test]
async fn every_wire_reports_its_usage_in_the_receipt() {
    let chaos = common::chaos().await;
    for provider in [
        Provider::OpenAi,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
    ] {
        for stream in [false, true] {
            // An empty answer first: billed (200); then the answer.
            chaos
                .script(
                    provider.as_str(),
                    vec![common::fault("empty"), common::fault("ok")],
                )
                .unwrap();
            let service =
                common::short_stack().build(&ClassifyLayer::for_provider(provider), client());
            let request =
                http::Request::post(format!("{}{}", chaos.base_url(), path(provider, stream)))
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(body(provider, stream))))
                    .unwrap();
            let what = format!("{provider:?} stream={stream}");
            let response = tokio::time::timeout(Duration::from_secs(10), service.oneshot(request))
                .await
                .unwrap()
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let receipt = response.extensions().get::<Receipt>().cloned().unwrap();
            assert_eq!(receipt.attempts.len(), 2, "{what}");
            assert_eq!(receipt.billed_attempts(), 2, "{what}: both answered 200");
            if stream {
                assert_eq!(
                    receipt.attempts[1].usage(),
                    None,
                    "{what}: a stream's usage comes at its end"
                );
            }
            let text = response.into_body().collect().await.unwrap().to_bytes();
            assert!(String::from_utf8_lossy(&text).contains("w8"), "{what}");
            let usage = receipt.attempts[1]
                .usage()
                .unwrap_or_else(|| panic!("{what}: no usage"));
            assert_eq!(usage.output_tokens, 8, "{what}");
            assert!(usage.input_tokens > 0, "{what}");
            // The empty answer was billed for its prompt, and every wire
            // reported it: the receipt counts it, as the guard's span and
            // token counter do for a stream (an OpenAI stream's usage comes
            // in a chunk after the finish, which an empty answer's stop
            // waits for).
            let empty = receipt.attempts[0].usage();
            assert!(empty.is_some(), "{what}: the empty answer's usage");
            let mut total = usage;
            if let Some(empty) = empty {
                assert_eq!(empty.output_tokens, 0, "{what}");
                assert!(empty.input_tokens > 0, "{what}");
                total += empty;
            }
            assert_eq!(receipt.usage(), total, "{what}");
            chaos.reset();
        }
    }
}

#[tokio::test]
async fn a_failure_before_any_answer_is_not_billed() {
    let chaos = common::chaos_scripted(&["status;code=503", "ok"]).await;
    let service = common::short_stack().build(&ClassifyLayer::openai(), client());
    let request = http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body(Provider::OpenAi, false))))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let receipt = response.extensions().get::<Receipt>().cloned().unwrap();
    let billed: Vec<_> = receipt.attempts.iter().map(|a| a.billed).collect();
    assert_eq!(billed, [false, true]);
    assert_eq!(receipt.usage().output_tokens, 8);
}

/// A server that ignores `stream` and answers one whole JSON answer with
/// no content type: the answer it is, checked once, its usage read — not
/// a stream that failed to come, billed and retried.
#[tokio::test]
async fn an_unlabelled_json_answer_to_a_stream_request_is_the_answer() {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let upstream = tower::service_fn(move |_: http::Request<_>| {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async {
            let answer = r#"{"id":"c1","object":"chat.completion","model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"w1 w2"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#;
            Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::from(answer))))
        }
    });
    let service = common::short_stack().build(&ClassifyLayer::openai(), upstream);
    let request = http::Request::post("http://provider.test/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body(Provider::OpenAi, true))))
        .unwrap();
    let response = tokio::time::timeout(Duration::from_secs(10), service.oneshot(request))
        .await
        .unwrap()
        .unwrap_or_else(|error| panic!("{error}"));
    let receipt = response.extensions().get::<Receipt>().cloned().unwrap();
    assert_eq!(receipt.attempts.len(), 1, "{receipt:?}");
    assert_eq!(receipt.billed_attempts(), 1);
    assert_eq!(receipt.usage().input_tokens, 5, "{receipt:?}");
    assert_eq!(receipt.usage().output_tokens, 2);
    let text = response.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&text).contains("w2"));
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}
