//! W3C trace context per attempt (feature `traceparent`): each attempt's
//! request carries a `traceparent` from its own span, so a provider's
//! traces join the caller's; without the feature, or without an
//! OpenTelemetry layer, no header is added.

mod common;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use seawall::classify::ClassifyLayer;
use seawall::core::recording::ReplayBody;
use tower::ServiceExt;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::prelude::*;

type Sent = http::Request<ReplayBody<Full<Bytes>>>;

/// The `traceparent` of every request the stack sent, with `otel` an
/// OpenTelemetry layer or not; and the trace id of the caller's span.
fn sent_traceparents(otel: bool) -> (Vec<Option<String>>, String) {
    let provider = SdkTracerProvider::builder().build();
    let layer = otel.then(|| tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let subscriber = tracing_subscriber::registry().with(layer);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let trace_id = common::spans::run_under(subscriber, async {
        let chaos = common::chaos_scripted(&["status;code=503", "ok"]).await;
        let client = common::client::<ReplayBody<Full<Bytes>>>();
        let seen = seen.clone();
        let probe = tower::service_fn(move |request: Sent| {
            seen.lock().unwrap().push(
                request
                    .headers()
                    .get("traceparent")
                    .map(|v| v.to_str().unwrap().to_owned()),
            );
            let mut client = client.clone();
            async move { tower::Service::call(&mut client, request).await }
        });
        let service = common::short_stack().build(&ClassifyLayer::openai(), probe);
        let request = http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(
                br#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
            )))
            .unwrap();
        let app = tracing::info_span!("app");
        let trace_id = app.context().span().span_context().trace_id().to_string();
        async {
            let response = service.oneshot(request).await.unwrap();
            response.into_body().collect().await.unwrap();
        }
        .instrument(app)
        .await;
        trace_id
    });
    let seen = seen.lock().unwrap().clone();
    (seen, trace_id)
}

#[cfg(feature = "traceparent")]
#[test]
fn each_attempt_carries_its_own_span_in_the_callers_trace() {
    let (sent, trace_id) = sent_traceparents(true);
    assert_eq!(sent.len(), 2, "two attempts: {sent:?}");
    let parsed: Vec<(String, String, String, String)> = sent
        .iter()
        .map(|header| {
            let header = header.as_deref().expect("every attempt carries one");
            let parts: Vec<&str> = header.split('-').collect();
            assert_eq!(parts.len(), 4, "{header}");
            (
                parts[0].to_owned(),
                parts[1].to_owned(),
                parts[2].to_owned(),
                parts[3].to_owned(),
            )
        })
        .collect();
    for (version, trace, span, flags) in &parsed {
        assert_eq!(version, "00");
        assert_eq!(trace.len(), 32);
        assert!(trace.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(span.len(), 16);
        assert_ne!(span, "0000000000000000");
        assert_eq!(flags, "01", "sampled");
    }
    assert_eq!(parsed[0].1, trace_id, "the caller's trace");
    assert_eq!(parsed[1].1, trace_id, "the caller's trace");
    assert_ne!(parsed[0].2, parsed[1].2, "one span per attempt");
}

#[cfg(feature = "traceparent")]
#[test]
fn without_an_opentelemetry_layer_no_header_is_added() {
    let (sent, _) = sent_traceparents(false);
    assert_eq!(sent, [None, None]);
}

#[cfg(not(feature = "traceparent"))]
#[test]
fn without_the_feature_no_header_is_added() {
    let (sent, _) = sent_traceparents(true);
    assert_eq!(sent, [None, None]);
}
