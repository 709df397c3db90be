//! The spans the layers open, read back by a capturing subscriber: one per
//! operation named "{operation} {model}" with OpenTelemetry's GenAI
//! attributes, one child per attempt with its outcome.

mod common;

use common::spans::{Capture, Captured, run};

use std::collections::BTreeMap;

use http_body_util::BodyExt;
use seawall::classify::ClassifyLayer;
use tower::ServiceExt;

/// The seawall spans `call` opens, run on a current-thread runtime with a
/// capturing subscriber.
fn spans_of(call: impl std::future::Future<Output = ()>) -> BTreeMap<u64, Captured> {
    let capture = Capture::default();
    run(&capture, call);
    capture.seawall_by_id()
}

/// The one operation span.
fn operation(spans: &BTreeMap<u64, Captured>) -> &Captured {
    spans
        .values()
        .find(|s| s.name == "operation")
        .expect("an operation span")
}

#[test]
fn a_retried_call_is_one_operation_span_with_one_child_per_attempt() {
    let spans = spans_of(async {
        let chaos = common::chaos_scripted(&["status;code=503", "ok"]).await;
        let service = common::short_stack().build(&ClassifyLayer::openai(), common::client());
        let request = common::post_json(
            &format!("{}/v1/chat/completions", chaos.base_url()),
            r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
        );
        let response = service.oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    });
    let operations: Vec<_> = spans
        .iter()
        .filter(|(_, s)| s.name == "operation")
        .collect();
    assert_eq!(operations.len(), 1, "{spans:#?}");
    let (op_id, op) = operations[0];
    let field = |s: &Captured, name: &str| s.fields.get(name).cloned().unwrap_or_default();
    // The model is in the body, read ahead (in memory) before the span
    // started.
    assert_eq!(field(op, "otel.name"), "chat gpt-x");
    assert_eq!(field(op, "gen_ai.operation.name"), "chat");
    assert_eq!(field(op, "gen_ai.provider.name"), "openai");
    assert_eq!(field(op, "gen_ai.request.model"), "gpt-x");
    assert_eq!(field(op, "gen_ai.response.finish_reasons"), "stop");
    assert_eq!(field(op, "gen_ai.usage.output_tokens"), "8");
    assert_eq!(field(op, "seawall.attempts"), "2");
    // OpenTelemetry's `server.address` is the host, the port apart.
    assert_eq!(field(op, "server.address"), "127.0.0.1");
    assert!(field(op, "server.port").parse::<u16>().is_ok(), "{op:?}");
    assert_eq!(field(op, "error.type"), "");
    let mut attempts: Vec<_> = spans
        .values()
        .filter(|s| s.name == "attempt" && s.parent == Some(*op_id))
        .collect();
    attempts.sort_by_key(|s| field(s, "seawall.attempt"));
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    assert_eq!(field(attempts[0], "error.type"), "provider_unavailable");
    assert_eq!(field(attempts[0], "otel.status_code"), "ERROR");
    assert_eq!(field(attempts[0], "seawall.action"), "retry");
    assert_eq!(field(attempts[1], "error.type"), "");
    assert!(!field(attempts[1], "gen_ai.usage.input_tokens").is_empty());
    // Each attempt is a GenAI client span of its own: the operation's
    // name and attributes, its model once a body naming it was sent (the
    // retry's from its start).
    for attempt in &attempts {
        assert_eq!(field(attempt, "otel.kind"), "client");
        assert_eq!(field(attempt, "otel.name"), "chat gpt-x", "{attempt:?}");
        assert_eq!(field(attempt, "gen_ai.operation.name"), "chat");
        assert_eq!(field(attempt, "gen_ai.provider.name"), "openai");
        assert_eq!(field(attempt, "gen_ai.request.model"), "gpt-x");
        assert_eq!(field(attempt, "server.address"), "127.0.0.1");
    }
}

/// A single attempt reads the body for its facts as a ladder that may
/// retry does: its span names the operation, the provider and the model
/// the body names.
#[test]
fn a_single_attempt_is_named_by_its_body_too() {
    let spans = spans_of(async {
        let chaos = common::chaos().await;
        let stack = common::short_stack()
            .retry_policy(seawall::retry::RetryPolicy::interactive().max_attempts(1));
        let service = stack.build(&ClassifyLayer::openai(), common::client());
        let request = common::post_json(
            &format!("{}/v1/chat/completions", chaos.base_url()),
            r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
        );
        let response = service.oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    });
    let op = operation(&spans);
    let field = |name: &str| op.fields.get(name).cloned().unwrap_or_default();
    assert_eq!(field("otel.name"), "chat gpt-x");
    assert_eq!(field("gen_ai.request.model"), "gpt-x");
    assert_eq!(field("gen_ai.operation.name"), "chat");
    assert_eq!(field("gen_ai.provider.name"), "openai");
    assert_eq!(field("seawall.attempts"), "1");
}

#[test]
fn a_model_named_in_the_path_names_the_operation_from_its_start() {
    let spans = spans_of(async {
        let chaos = common::chaos().await;
        let service = common::short_stack().build(&ClassifyLayer::gemini(), common::client());
        let request = common::post_json(
            &format!(
                "{}/v1beta/models/gemini-x:generateContent",
                chaos.base_url()
            ),
            r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#,
        );
        let response = service.oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    });
    let op = operation(&spans);
    assert_eq!(
        op.fields.get("otel.name").map(String::as_str),
        Some("generate_content gemini-x")
    );
    assert_eq!(
        op.fields.get("gen_ai.provider.name").map(String::as_str),
        Some("gcp.gen_ai"),
        "Gemini's wire on a host that is neither the Gemini API nor Vertex AI"
    );
}

/// The model the body names is recorded on the operation's span when the
/// first attempt ended before its body was sent (a refused connection):
/// the attempt that sent it tells it.
#[test]
fn the_model_is_recorded_when_a_later_attempt_sent_the_body() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    const ANSWER: &str = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#;
    let spans = spans_of(async {
        let calls = Arc::new(AtomicUsize::new(0));
        let client = tower::service_fn(
            move |request: http::Request<
                seawall::core::recording::ReplayBody<http_body_util::Full<bytes::Bytes>>,
            >| {
                let call = calls.fetch_add(1, Ordering::SeqCst);
                async move {
                    if call == 0 {
                        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
                        return Err(seawall::core::BoxError::from(refused));
                    }
                    request.into_body().collect().await?;
                    let response = http::Response::builder()
                        .header("content-type", "application/json")
                        .body(http_body_util::Full::new(bytes::Bytes::from_static(
                            ANSWER.as_bytes(),
                        )))
                        .unwrap();
                    Ok(response)
                }
            },
        );
        let service = common::short_stack().build(&ClassifyLayer::openai(), client);
        let request = common::post_json(
            "http://api.example/v1/chat/completions",
            r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
        );
        let response = service.oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    });
    let op = operation(&spans);
    assert_eq!(
        op.fields.get("seawall.attempts").map(String::as_str),
        Some("2")
    );
    assert_eq!(
        op.fields.get("gen_ai.request.model").map(String::as_str),
        Some("gpt-x"),
        "{op:?}"
    );
}

/// A chat request for `gpt-x` through the ladder alone (`attempts`, no
/// wait, no budget limit) over `client`.
async fn chat_through_a_ladder<S, B>(
    client: S,
    attempts: u32,
) -> Result<http::Response<B>, tower::BoxError>
where
    S: tower::Service<
            http::Request<seawall::core::recording::ReplayBody<http_body_util::Full<bytes::Bytes>>>,
            Response = http::Response<B>,
        > + Clone
        + Send
        + 'static,
    S::Error: Into<tower::BoxError>,
    S::Future: Send,
{
    use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
    let service = tower::Layer::layer(
        &RetryBudgetLayer::new(RetryPolicy::no_wait(attempts), Budget::unlimited()),
        client,
    );
    let request = common::post_json(
        "http://api.example/v1/chat/completions",
        r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
    );
    service.oneshot(request).await
}

/// The ladder alone over a service whose error no classifier named: the
/// attempt and the operation failed, `unknown`, and their spans say so.
#[test]
fn an_unclassified_error_fails_both_spans() {
    let spans = spans_of(async {
        let client = tower::service_fn(
            |_: http::Request<
                seawall::core::recording::ReplayBody<http_body_util::Full<bytes::Bytes>>,
            >| async {
                let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
                Err::<http::Response<http_body_util::Full<bytes::Bytes>>, _>(refused)
            },
        );
        assert!(chat_through_a_ladder(client, 3).await.is_err());
    });
    let op = operation(&spans);
    let attempt = spans
        .values()
        .find(|s| s.name == "attempt")
        .expect("an attempt span");
    for span in [op, attempt] {
        assert_eq!(
            span.fields.get("error.type").map(String::as_str),
            Some("unknown"),
            "{span:?}"
        );
        assert_eq!(
            span.fields.get("otel.status_code").map(String::as_str),
            Some("ERROR")
        );
    }
}

/// An operation whose first attempt failed billed, with the usage the
/// provider reported, and whose retry answered: the operation's span
/// says what the operation used, both billed attempts' usage summed; each
/// attempt's span says its own.
#[test]
fn the_operation_span_sums_its_billed_attempts_usage() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use bytes::Bytes;
    use http_body_util::Full;
    use seawall::core::recording::ReplayBody;
    use seawall::core::{Code, Evidence, Failure, Usage};
    let spans = spans_of(async {
        let calls = Arc::new(AtomicU32::new(0));
        let client = tower::service_fn(move |_: http::Request<ReplayBody<Full<Bytes>>>| {
            let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                if first {
                    // Answered 2xx, then refused: billed, its usage said.
                    let mut evidence = Evidence::default();
                    evidence.status = Some(200);
                    let failure = Failure::new(Code::Overloaded)
                        .with_evidence(evidence)
                        .with_usage(Usage::new(100, 10));
                    return Err(tower::BoxError::from(failure));
                }
                let mut response = http::Response::new(Full::new(Bytes::new()));
                response.extensions_mut().insert(Usage::new(100, 20));
                Ok(response)
            }
        });
        chat_through_a_ladder(client, 2)
            .await
            .expect("the retry answers");
    });
    let usage = |span: &Captured| {
        (
            span.field("gen_ai.usage.input_tokens"),
            span.field("gen_ai.usage.output_tokens"),
        )
    };
    let op = operation(&spans);
    assert_eq!(usage(op), ("200".into(), "30".into()), "{op:?}");
    let mut attempts: Vec<_> = spans.values().filter(|s| s.name == "attempt").collect();
    attempts.sort_by_key(|s| s.field("seawall.attempt"));
    let each: Vec<_> = attempts.into_iter().map(usage).collect();
    assert_eq!(
        each,
        [("100".into(), "10".into()), ("100".into(), "20".into())]
    );
}

/// The same for a stream: a first streamed attempt that ended empty
/// (billed, its usage reported) and a retry that streamed the answer. The
/// stream guard writes the released stream's end on the operation's span,
/// the earlier attempts' usage added: what the operation was charged.
#[test]
fn the_operation_span_of_a_stream_sums_its_billed_attempts_usage() {
    let spans = spans_of(async {
        let chaos = common::chaos_scripted(&["empty", "ok"]).await;
        let service = common::short_stack().build(&ClassifyLayer::openai(), common::client());
        let request = common::post_json(
            &format!("{}/v1/chat/completions", chaos.base_url()),
            r#"{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}"#,
        );
        let response = service.oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    });
    let tokens = |span: &Captured, name: &str| -> u64 {
        span.field(name)
            .parse()
            .unwrap_or_else(|_| panic!("{name} on {span:?}"))
    };
    let op = operation(&spans);
    let mut attempts: Vec<_> = spans.values().filter(|s| s.name == "attempt").collect();
    attempts.sort_by_key(|s| s.field("seawall.attempt"));
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    assert_eq!(attempts[0].field("error.type"), "empty_response");
    for name in ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"] {
        let each: Vec<u64> = attempts.iter().map(|a| tokens(a, name)).collect();
        assert!(each[0] > 0 || name.ends_with("output_tokens"), "{each:?}");
        assert_eq!(tokens(op, name), each[0] + each[1], "{name}: {op:?}");
    }
}
