//! seawall's spans exported as OpenTelemetry client spans: the operation
//! and one child per attempt, all three named "chat gpt-x" (the model read
//! from the request body, in memory, before the spans start), with the
//! GenAI attributes, printed by the OpenTelemetry stdout exporter. The
//! provider is a local seawall-chaos server that fails the first attempt
//! (`provider_unavailable` on its span), then answers.
//!
//! ```text
//! cargo run --example otel
//! ```

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use seawall::prelude::*;
use seawall_chaos::{ChaosServer, Fault};
use tower::ServiceExt;
use tracing_subscriber::prelude::*;

#[tokio::main]
async fn main() -> Result<(), tower::BoxError> {
    // OpenTelemetry: spans go to stdout as they end.
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(opentelemetry_stdout::SpanExporter::default())
        .build();
    let tracer = provider.tracer("seawall-example");
    // tracing → OpenTelemetry, for seawall's own spans.
    tracing_subscriber::registry()
        .with(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_filter(
                    tracing_subscriber::filter::Targets::new()
                        .with_target("seawall", tracing::Level::INFO),
                ),
        )
        .init();

    let chaos = ChaosServer::builder().start().await?;
    chaos.script("openai", vec![Fault::status(503), Fault::ok()])?;
    let client = Client::builder(TokioExecutor::new()).build_http();
    let service = Stack::interactive().build(&ClassifyLayer::openai(), client);
    let request = http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
        )))?;
    let response = service.oneshot(request).await?;
    response.into_body().collect().await?;

    provider.shutdown()?;
    Ok(())
}
