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
//!
//! A model name goes into a span field through [`model_field`] or
//! [`SpanName`]: bounded and without control characters, whoever chose it.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

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
    /// What the operation's earlier attempts were billed for: the
    /// operation's span says the total, not the last attempt's.
    earlier: Usage,
}

impl AttemptSpans {
    /// The spans of an attempt and of its operation.
    pub fn new(attempt: Span, operation: Span) -> Self {
        AttemptSpans {
            attempt,
            operation,
            earlier: Usage::default(),
        }
    }

    /// The usage the operation's earlier attempts were billed for (the
    /// receipt's so far): a stream's usage is written on the operation's
    /// span with it added, so the span says what the whole operation was
    /// charged, as the ladder writes it for a whole answer.
    pub fn with_earlier_usage(mut self, earlier: Usage) -> Self {
        self.earlier = earlier;
        self
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
    /// content), its usage added to what the earlier attempts were billed
    /// for ([`with_earlier_usage`](Self::with_earlier_usage)): a failure
    /// before that is the ladder's to judge, and a later attempt may still
    /// succeed.
    pub fn record_end(
        &self,
        finish: Option<&Finish>,
        usage: Option<Usage>,
        code: Option<Code>,
        released: bool,
    ) {
        record_end(&self.attempt, finish, usage, code);
        if released {
            let total = usage.map(|mut usage| {
                usage += self.earlier;
                usage
            });
            record_end(&self.operation, finish, total, code);
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

/// The most bytes of a model name a span field holds (`otel.name`'s model
/// part, `gen_ai.request.model`).
///
/// The model is the caller's word — for a gateway, a client's: up to the
/// whole body in size, and with any character a JSON escape can spell. A
/// log formatter writes a field other than the message as is, and an
/// exporter ships whatever the span holds: bounded and cleaned here, it
/// can neither forge a log line, reach a terminal as an escape sequence,
/// nor make a span so large its batch is dropped with the others.
pub const MODEL_FIELD_BYTES: usize = 128;

/// What stands for a control character in a [`model_field`].
const REPLACEMENT: char = char::REPLACEMENT_CHARACTER;

/// `model` as a span field records it: at most [`MODEL_FIELD_BYTES`],
/// never split inside a character, each control character (`\n`, ESC, …)
/// replaced by `U+FFFD`. Borrowed, with no allocation, when the model is
/// clean (every model a provider names is).
///
/// ```
/// use seawall_core::span::{MODEL_FIELD_BYTES, model_field};
/// use std::borrow::Cow;
///
/// assert!(matches!(model_field("gpt-4o"), Cow::Borrowed("gpt-4o")));
/// assert_eq!(model_field("x\n\u{1b}[31m"), "x\u{fffd}\u{fffd}[31m");
/// assert_eq!(model_field(&"m".repeat(1 << 20)).len(), MODEL_FIELD_BYTES);
/// ```
pub fn model_field(model: &str) -> Cow<'_, str> {
    let window = seawall_internal::excerpt(model, MODEL_FIELD_BYTES);
    if window.contains(char::is_control) {
        Cow::Owned(ModelField(model).to_string())
    } else {
        Cow::Borrowed(window)
    }
}

/// Writes a model as [`model_field`] gives it, without allocating.
struct ModelField<'a>(&'a str);

impl fmt::Display for ModelField<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut left = MODEL_FIELD_BYTES;
        let mut rest = self.0;
        loop {
            // Only what can still be written is scanned: a huge model
            // costs no more than a short one.
            let window = seawall_internal::excerpt(rest, left);
            let clean = window.find(char::is_control).unwrap_or(window.len());
            f.write_str(&window[..clean])?;
            left -= clean;
            let Some(control) = window[clean..].chars().next() else {
                // The model's end, or the bound.
                return Ok(());
            };
            if left < REPLACEMENT.len_utf8() {
                return Ok(());
            }
            f.write_char(REPLACEMENT)?;
            left -= REPLACEMENT.len_utf8();
            rest = &rest[clean + control.len_utf8()..];
        }
    }
}

/// An OpenTelemetry span name (`otel.name`): `"{operation} {model}"`, the
/// model as [`model_field`] gives it, or the operation alone. Written
/// without allocating, and only when a subscriber formats it.
///
/// ```
/// use seawall_core::span::SpanName;
///
/// let name = SpanName { operation: "chat", model: Some("gpt-4o\n") };
/// assert_eq!(name.to_string(), "chat gpt-4o\u{fffd}");
/// assert_eq!(SpanName { operation: "chat", model: None }.to_string(), "chat");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SpanName<'a> {
    /// The GenAI operation (`chat`, `generate_content`, …).
    pub operation: &'a str,
    /// The model, as the request named it.
    pub model: Option<&'a str>,
}

impl fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.operation)?;
        match self.model {
            Some(model) => write!(f, " {}", ModelField(model)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the model, its field is bounded, has no control
        /// character, and is the model itself when that is clean and short.
        #[test]
        fn a_model_field_is_bounded_and_clean(model in "\\PC{0,40}[\\x00-\\x1f\\x7f\u{80}-\u{9f}]{0,3}\\PC{0,200}") {
            let field = model_field(&model);
            prop_assert!(field.len() <= MODEL_FIELD_BYTES);
            prop_assert!(!field.contains(char::is_control));
            let name = SpanName { operation: "chat", model: Some(&model) }.to_string();
            prop_assert_eq!(name, format!("chat {field}"));
            if model.len() <= MODEL_FIELD_BYTES && !model.contains(char::is_control) {
                prop_assert!(matches!(field, Cow::Borrowed(_)));
                prop_assert_eq!(&*field, &*model);
            }
        }
    }

    #[test]
    fn a_long_model_is_cut_on_a_character_boundary_and_its_controls_replaced() {
        let model = format!("a\u{1b}{}", "é".repeat(100));
        let field = model_field(&model);
        assert!(field.starts_with("a\u{fffd}é"));
        // 1 + 3 + 62 * 2 bytes: the next `é` would pass the bound.
        assert_eq!(field.len(), 128);
        // A replacement that would pass the bound is left out.
        let model = format!("{}\n", "m".repeat(MODEL_FIELD_BYTES - 2));
        assert_eq!(model_field(&model), "m".repeat(MODEL_FIELD_BYTES - 2));
    }
}
