//! W3C trace context per attempt (feature `traceparent`): each attempt's
//! request carries its span's OpenTelemetry context, so the provider's
//! traces join the caller's.

use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};
use opentelemetry::trace::TraceContextExt;
use tracing_opentelemetry::OpenTelemetrySpanExt;

static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
static TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// Sets `traceparent` (and `tracestate`, when there is one) from `span`'s
/// OpenTelemetry context, replacing the caller's: the attempt's span is a
/// descendant of the caller's. Nothing when no `tracing-opentelemetry`
/// layer records the span (its context has no valid span).
pub(crate) fn inject(span: &tracing::Span, headers: &mut HeaderMap) {
    let context = span.context();
    let otel = context.span();
    let span_context = otel.span_context();
    if !span_context.is_valid() {
        return;
    }
    let value = format!(
        "00-{}-{}-{:02x}",
        span_context.trace_id(),
        span_context.span_id(),
        span_context.trace_flags().to_u8()
    );
    if let Ok(value) = HeaderValue::try_from(value) {
        headers.insert(TRACEPARENT.clone(), value);
    }
    let state = span_context.trace_state().header();
    if !state.is_empty()
        && let Ok(value) = HeaderValue::try_from(state)
    {
        headers.insert(TRACESTATE.clone(), value);
    }
}
