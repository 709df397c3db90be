//! W3C trace context per attempt (feature `traceparent`): each attempt's
//! request carries its span's OpenTelemetry context, so the provider's
//! traces join the caller's.

use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};
use opentelemetry::trace::TraceContextExt;
use seawall_core::span::SpanName;
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

/// Renames `span`'s OpenTelemetry span to `name`, once it has started: a
/// `tracing-opentelemetry` layer takes `otel.name` only until the span
/// starts (it is entered, a child is made, its context is asked for).
/// Nothing when no such layer records the span: its context has no valid
/// span, and the name is not even formatted.
pub(crate) fn rename(span: &tracing::Span, name: SpanName<'_>) {
    let context = span.context();
    let otel = context.span();
    if otel.span_context().is_valid() {
        otel.update_name(name.to_string());
    }
}
