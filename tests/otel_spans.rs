//! The spans as an OpenTelemetry exporter receives them, through
//! `tracing-opentelemetry` and the SDK: what a trace backend shows.

mod common;

use std::sync::{Arc, Mutex};

use http_body_util::BodyExt;
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

/// A retried chat completion: each attempt a GenAI client span with the
/// operation's attributes, the retry named `"{operation} {model}"` (its
/// model known from its start), both with the request's model.
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
}
