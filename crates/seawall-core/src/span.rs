//! The spans of the attempt in flight, handed down with its request.
//!
//! A streamed answer ends after its response reached the layer that opened
//! the attempt's span: the finish reason, the usage and an interruption
//! after content are only known to the layer that reads the body. The retry
//! ladder puts an [`AttemptSpans`] in each attempt's request extensions (and
//! a fallback layer in each route's, a move's span standing for both) —
//! only when a subscriber records the spans, so without one nothing is
//! allocated or inserted — and the stream guard keeps it in the body it
//! wraps: the attempt's span stays open until the body ends and is dropped,
//! and [`AttemptSpans::record_end`] writes how the stream ended on it.

use tracing::Span;

use crate::{Code, Finish, RouteId, Usage};

/// The span of one attempt and of its operation (the attempt span's
/// parent), in the attempt's request extensions.
///
/// ```
/// use seawall_core::AttemptSpans;
///
/// let request = http::Request::new(());
/// // Nothing there without a ladder and a subscriber: no cost.
/// assert!(AttemptSpans::of(request.extensions()).is_none());
/// ```
#[derive(Debug, Clone)]
pub struct AttemptSpans {
    attempt: Span,
    operation: Span,
}

impl AttemptSpans {
    /// The spans of an attempt and of its operation.
    pub fn new(attempt: Span, operation: Span) -> Self {
        AttemptSpans { attempt, operation }
    }

    /// The spans a request carries, if a ladder (or a fallback's move)
    /// with a subscriber put them there.
    pub fn of(extensions: &http::Extensions) -> Option<&AttemptSpans> {
        extensions.get::<AttemptSpans>()
    }

    /// The attempt's span.
    pub fn attempt(&self) -> &Span {
        &self.attempt
    }

    /// The operation's span.
    pub fn operation(&self) -> &Span {
        &self.operation
    }

    /// How a streamed attempt ended, with the field names of the attempt
    /// span (OpenTelemetry's GenAI attributes):
    /// `gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens`,
    /// `gen_ai.usage.output_tokens`, and for a stream that ended with a
    /// failure `error.type` (its code) and `otel.status_code` `ERROR` (not
    /// for `cancelled`: a caller who stops reading is no failure).
    ///
    /// On the attempt's span always; on the operation's too when the
    /// stream was `released` to the caller (it finished, or failed after
    /// content): a failure before that is the ladder's to judge, and a
    /// later attempt may still succeed.
    pub fn record_end(
        &self,
        finish: Option<&Finish>,
        usage: Option<Usage>,
        code: Option<Code>,
        released: bool,
    ) {
        record_end(&self.attempt, finish, usage, code);
        if released {
            record_end(&self.operation, finish, usage, code);
        }
    }
}

/// The route `span` went to, as `server.address` and `server.port`
/// ([`RouteId::address`]); the span must declare both. Nothing happens for
/// a disabled span.
pub fn record_address(span: &Span, route: &RouteId) {
    if span.is_disabled() {
        return;
    }
    let (host, port) = route.address();
    span.record("server.address", host);
    if let Some(port) = port {
        span.record("server.port", port);
    }
}

/// How an answer ended, on `span`, with the GenAI field names (see
/// [`AttemptSpans::record_end`]). Nothing happens for a disabled span.
pub fn record_end(span: &Span, finish: Option<&Finish>, usage: Option<Usage>, code: Option<Code>) {
    if span.is_disabled() {
        return;
    }
    if let Some(finish) = finish {
        span.record("gen_ai.response.finish_reasons", &*finish.reason);
    }
    if let Some(usage) = usage {
        span.record("gen_ai.usage.input_tokens", usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", usage.output_tokens);
    }
    if let Some(code) = code {
        span.record("error.type", code.as_str());
        if code != Code::Cancelled {
            span.record("otel.status_code", "ERROR");
        }
    }
}
