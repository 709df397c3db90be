//! The spans the layers open, read back by a capturing subscriber: one per
//! operation named "{operation} {model}" with OpenTelemetry's GenAI
//! attributes, one child per attempt with its outcome.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use tower::ServiceExt;
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::LookupSpan;

#[derive(Debug, Clone, Default)]
struct Captured {
    name: String,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<BTreeMap<u64, Captured>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !attrs.metadata().target().starts_with("seawall") {
            return;
        }
        let mut captured = Captured {
            name: attrs.metadata().name().to_owned(),
            parent: ctx
                .span(id)
                .and_then(|s| s.parent())
                .map(|p| p.id().into_u64()),
            ..Captured::default()
        };
        attrs.record(&mut Fields(&mut captured.fields));
        self.0.lock().unwrap().insert(id.into_u64(), captured);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        if let Some(captured) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(&mut captured.fields));
        }
    }
}

/// The seawall spans `call` opens, run on a current-thread runtime with a
/// capturing subscriber.
fn spans_of(call: impl std::future::Future<Output = ()>) -> BTreeMap<u64, Captured> {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    tracing::subscriber::with_default(subscriber, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(call)
    });
    capture.0.lock().unwrap().clone()
}

#[test]
fn a_retried_call_is_one_operation_span_with_one_child_per_attempt() {
    let spans = spans_of(async {
        let chaos = common::chaos().await;
        chaos
            .script(
                "openai",
                vec![common::fault("status;code=503"), common::fault("ok")],
            )
            .unwrap();
        let service = common::short_stack().build(&ClassifyLayer::openai(), common::client());
        let request = http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(
                br#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
            )))
            .unwrap();
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
    // The model is in the body: known after the span started.
    assert_eq!(field(op, "otel.name"), "chat");
    assert_eq!(field(op, "gen_ai.operation.name"), "chat");
    assert_eq!(field(op, "gen_ai.provider.name"), "openai");
    assert_eq!(field(op, "gen_ai.request.model"), "gpt-x");
    assert_eq!(field(op, "gen_ai.response.finish_reasons"), "stop");
    assert_eq!(field(op, "gen_ai.usage.output_tokens"), "8");
    assert_eq!(field(op, "seawall.attempts"), "2");
    assert!(field(op, "server.address").starts_with("127.0.0.1:"));
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
}

#[test]
fn a_model_named_in_the_path_names_the_operation_from_its_start() {
    let spans = spans_of(async {
        let chaos = common::chaos().await;
        let service = common::short_stack().build(&ClassifyLayer::gemini(), common::client());
        let request = http::Request::post(format!(
            "{}/v1beta/models/gemini-x:generateContent",
            chaos.base_url()
        ))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#,
        )))
        .unwrap();
        let response = service.oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    });
    let op = spans
        .values()
        .find(|s| s.name == "operation")
        .expect("an operation span");
    assert_eq!(
        op.fields.get("otel.name").map(String::as_str),
        Some("generate_content gemini-x")
    );
    assert_eq!(
        op.fields.get("gen_ai.provider.name").map(String::as_str),
        Some("gemini")
    );
}
