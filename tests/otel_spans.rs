//! The spans as an OpenTelemetry exporter receives them, through
//! `tracing-opentelemetry` and the SDK: what a trace backend shows.

mod common;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry::{Key, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use seawall::classify::ClassifyLayer;
use tower::ServiceExt;
use tracing_subscriber::prelude::*;

/// Every span exported, as the SDK hands them on.
#[derive(Debug, Clone, Default)]
struct Exported(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Exported {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

fn attribute(span: &SpanData, key: &'static str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == Key::from_static_str(key))
        .map(|kv| kv.value.clone())
}

/// Runs `request` against a chaos server scripted with `faults`, through
/// the short stack, under a `tracing-opentelemetry` layer as it comes
/// (context activation on), reads the answer to its end, and returns
/// every span exported.
fn exported_spans(faults: &'static [&'static str], body: &'static str) -> Vec<SpanData> {
    exported_spans_of(faults, |base| {
        common::post_json(&format!("{base}/v1/chat/completions"), body)
    })
}

/// As [`exported_spans`], for the request `request` makes for a base URL.
fn exported_spans_of<B>(
    faults: &'static [&'static str],
    request: impl FnOnce(&str) -> http::Request<B>,
) -> Vec<SpanData>
where
    B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<tower::BoxError>,
{
    let exported = Exported::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exported.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    common::spans::run_under(subscriber, async {
        let chaos = common::chaos_scripted(faults).await;
        let service = common::short_stack().build(&ClassifyLayer::openai(), common::client());
        let request = request(&chaos.base_url());
        let response = service.oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    });
    provider.force_flush().unwrap();
    exported.0.lock().unwrap().clone()
}

/// Every exported span that says a GenAI operation is named
/// `"{operation} {model}"`, the operation's and each attempt's; returns
/// how many there are of each.
fn assert_genai_spans_named(spans: &[SpanData], name: &str) -> (usize, usize) {
    let genai: Vec<_> = spans
        .iter()
        .filter(|span| attribute(span, "gen_ai.operation.name").is_some())
        .collect();
    for span in &genai {
        assert_eq!(span.name, name, "{span:#?}");
        assert_eq!(
            attribute(span, "gen_ai.request.model"),
            Some("gpt-x".into()),
            "{span:#?}"
        );
        let models = span
            .attributes
            .iter()
            .filter(|kv| kv.key == Key::from_static_str("gen_ai.request.model"))
            .count();
        assert_eq!(models, 1, "the model recorded once: {span:#?}");
    }
    let attempts = genai
        .iter()
        .filter(|span| attribute(span, "seawall.attempt").is_some())
        .count();
    (genai.len() - attempts, attempts)
}

/// A chat completion answered at its first attempt: the model is in the
/// body alone, and the operation's span and the attempt's are both
/// exported as `"chat gpt-x"`, as GenAI's conventions name a client span.
#[test]
fn a_first_attempt_success_is_named_by_its_model() {
    let spans = exported_spans(
        &["ok"],
        r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
    );
    assert_eq!(
        assert_genai_spans_named(&spans, "chat gpt-x"),
        (1, 1),
        "{spans:#?}"
    );
}

/// A streamed chat completion answered at its first attempt: named by its
/// model too, the attempt's span exported once the stream ended.
#[test]
fn a_first_attempt_stream_is_named_by_its_model() {
    let spans = exported_spans(
        &["ok"],
        r#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
    );
    assert_eq!(
        assert_genai_spans_named(&spans, "chat gpt-x"),
        (1, 1),
        "{spans:#?}"
    );
}

/// A chat completion whose body is an upload of unknown length, not at
/// hand as the operation starts: its model is learned as the body is sent,
/// after both spans started, and the started spans are renamed (the
/// `traceparent` feature, on in this suite).
#[test]
fn a_streamed_upload_is_renamed_by_its_model_once_sent() {
    let spans = exported_spans_of(&["ok"], |base| {
        let frames = [
            &br#"{"model":"gpt-x","#[..],
            &br#""messages":[{"role":"user","content":"hi"}]}"#[..],
        ]
        .map(|bytes| Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from_static(bytes))));
        http::Request::post(format!("{base}/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(StreamBody::new(futures_util::stream::iter(frames)))
            .unwrap()
    });
    assert_eq!(
        assert_genai_spans_named(&spans, "chat gpt-x"),
        (1, 1),
        "{spans:#?}"
    );
}

/// A retried chat completion: each attempt a GenAI client span with the
/// operation's attributes, every span (the operation's, each attempt's)
/// named `"{operation} {model}"`, with the request's model.
#[test]
fn each_attempt_is_exported_as_a_genai_client_span() {
    let exported = Exported::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exported.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    common::spans::run_under(subscriber, async {
        let chaos = common::chaos_scripted(&["status;code=503", "ok"]).await;
        let service = common::short_stack().build(&ClassifyLayer::openai(), common::client());
        let request = common::post_json(
            &format!("{}/v1/chat/completions", chaos.base_url()),
            r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
        );
        let response = service.oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    });
    provider.force_flush().unwrap();
    let spans = exported.0.lock().unwrap().clone();
    let attempts: Vec<_> = spans
        .iter()
        .filter(|span| attribute(span, "seawall.attempt").is_some())
        .collect();
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    for attempt in &attempts {
        assert_eq!(attempt.span_kind, SpanKind::Client, "{attempt:?}");
        for (key, value) in [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.request.model", "gpt-x"),
        ] {
            assert_eq!(attribute(attempt, key), Some(value.into()), "{key}");
        }
    }
    // The attempt's number, as the exporter got it (a string or a number).
    let number =
        |span: &SpanData| attribute(span, "seawall.attempt").map(|v| v.as_str().into_owned());
    let retry = attempts
        .iter()
        .find(|span| number(span).as_deref() == Some("2"))
        .expect("the retry's span");
    assert_eq!(retry.name, "chat gpt-x");
    // The operation's span and the first attempt's too, the model
    // recorded once on each.
    assert_eq!(
        assert_genai_spans_named(&spans, "chat gpt-x"),
        (1, 2),
        "{spans:#?}"
    );
}
