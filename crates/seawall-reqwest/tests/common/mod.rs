//! What the loopback suites share: a chaos server, the stack with short
//! bounds, reqwest clients, a fallback route to a second server.
#![allow(dead_code)] // each suite uses its part

use std::time::Duration;

use http::HeaderValue;
use seawall::classify::ClassifyLayer;
use seawall::core::RouteId;
use seawall::core::recording::ReplayBody;
use seawall::fallback::FallbackLayer;
use seawall::retry::{Backoff, Budget, RetryPolicy};
use seawall::stack::{AttemptStack, Stack};
use seawall::stream::StreamGuardLayer;
use seawall_chaos::{ChaosHandle, ChaosServer, FAULT_HEADER, JournalEntry};
use seawall_reqwest::ReqwestService;

/// The stream guard's first-byte bound.
pub(crate) const FIRST_BYTE: Duration = Duration::from_millis(200);
/// The stream guard's first-content bound.
pub(crate) const FIRST_CONTENT: Duration = Duration::from_millis(400);
/// The stream guard's idle bound.
pub(crate) const IDLE: Duration = Duration::from_millis(300);
/// The per-attempt bound.
pub(crate) const ATTEMPT: Duration = Duration::from_millis(1500);
/// The operation's deadline.
pub(crate) const TOTAL: Duration = Duration::from_secs(5);

/// A chaos server on a free loopback port.
pub(crate) async fn chaos() -> ChaosHandle {
    ChaosServer::builder()
        .start()
        .await
        .expect("chaos starts on loopback")
}

/// A reqwest client as the crate builds it, without proxies from the
/// environment (loopback only).
pub(crate) fn reqwest_client() -> reqwest::Client {
    seawall_reqwest::client_builder()
        .no_proxy()
        .build()
        .expect("a reqwest client")
}

/// The service under test.
pub(crate) fn service() -> ReqwestService {
    ReqwestService::new(reqwest_client())
}

/// The interactive preset with every bound short: first byte 200 ms,
/// first content 400 ms, idle 300 ms, attempt 1.5 s, operation 5 s,
/// backoff 5–20 ms, no budget limit.
pub(crate) fn short_stack() -> Stack {
    Stack::interactive()
        .total_deadline(TOTAL)
        .attempt_timeout(ATTEMPT)
        .retry_policy(
            RetryPolicy::interactive()
                .backoff(Backoff::exponential(
                    Duration::from_millis(5),
                    Duration::from_millis(20),
                ))
                .min_attempt_time(Duration::from_millis(100)),
        )
        .budget(Budget::unlimited())
        .stream_guard(
            StreamGuardLayer::interactive()
                .first_byte_timeout(FIRST_BYTE)
                .first_content_timeout(FIRST_CONTENT)
                .idle_timeout(IDLE),
        )
}

/// The request the fallback route receives.
pub(crate) type FallbackRequest<B> = http::Request<ReplayBody<B>>;

/// The route the fallback is tracked as.
pub(crate) fn fallback_route() -> RouteId {
    RouteId::new("fallback")
}

/// A fallback to the chaos server at `base`: the same request without its
/// fault header, another authority, one attempt over its own client.
pub(crate) fn fallback_to<B>(
    stack: &Stack,
    base: &str,
) -> FallbackLayer<
    AttemptStack<ReqwestService, seawall::classify::ProviderClassifier>,
    impl Fn(&mut FallbackRequest<B>) + Clone + Send + Sync + 'static,
> {
    let authority: http::uri::Authority = base
        .trim_start_matches("http://")
        .parse()
        .expect("a loopback authority");
    FallbackLayer::new(stack.attempt(&ClassifyLayer::openai(), service()))
        .route(fallback_route())
        .rewrite(move |req: &mut FallbackRequest<B>| {
            req.headers_mut().remove(FAULT_HEADER);
            let mut parts = req.uri().clone().into_parts();
            parts.authority = Some(authority.clone());
            *req.uri_mut() = http::Uri::from_parts(parts).expect("same URI, other authority");
            if let Ok(host) = HeaderValue::from_str(authority.as_str()) {
                req.headers_mut().insert(http::header::HOST, host);
            }
        })
}

/// Every row of a server, once none is in flight.
pub(crate) async fn rows(chaos: &ChaosHandle) -> Vec<JournalEntry> {
    chaos
        .settled_journal(Duration::from_secs(3), |_| true)
        .await
}

/// A chat completions body, as an application sends it.
pub(crate) fn chat_body(stream: bool) -> String {
    serde_json::json!({
        "model": "gpt-x",
        "stream": stream,
        "messages": [{"role": "user", "content": "Say eight words."}],
    })
    .to_string()
}

/// `w1 … wn`, the chaos answer of `n` tokens.
pub(crate) fn words(n: u32) -> String {
    (1..=n)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every row sent the same body (byte for byte: the same hash and length).
pub(crate) fn same_body(rows: &[JournalEntry]) {
    let first = &rows[0];
    assert!(first.body_hash.is_some(), "the journal hashes bodies");
    for row in rows {
        assert_eq!(
            (&row.body_hash, row.body_bytes),
            (&first.body_hash, first.body_bytes),
            "every attempt sends the same bytes: {rows:#?}"
        );
    }
}

/// What a caller read from a body.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// The answer text.
    pub text: String,
    /// The body's error, when it failed.
    pub error: Option<seawall::core::BoxError>,
}

/// Reads an OpenAI chat answer, unary or streamed, as an application does.
pub(crate) async fn read<B>(body: B, stream: bool) -> Read
where
    B: http_body::Body<Data = bytes::Bytes>,
    B::Error: Into<seawall::core::BoxError>,
{
    use http_body_util::BodyExt;
    let mut body = std::pin::pin!(body);
    let mut buffer = Vec::new();
    let mut read = Read::default();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    buffer.extend_from_slice(&data);
                    if stream {
                        drain_events(&mut buffer, &mut read.text);
                    }
                }
            }
            Err(error) => {
                read.error = Some(error.into());
                break;
            }
        }
    }
    if !stream && read.error.is_none() {
        let json: serde_json::Value = serde_json::from_slice(&buffer).expect("a JSON answer");
        read.text = json["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    }
    read
}

/// Appends the content of every complete `data:` line in `buffer`.
fn drain_events(buffer: &mut Vec<u8>, text: &mut String) {
    while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = buffer.drain(..=end).collect();
        let line = String::from_utf8_lossy(&line);
        let Some(data) = line.trim_end().strip_prefix("data:") else {
            continue;
        };
        let data = data.trim();
        if data == "[DONE]" {
            continue;
        }
        if let Ok(json) = serde_json::from_str::<serde_json::Value>(data)
            && let Some(delta) = json["choices"][0]["delta"]["content"].as_str()
        {
            text.push_str(delta);
        }
    }
}
