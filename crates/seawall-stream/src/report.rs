//! What happened to one guarded stream, for the caller and for logs.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use seawall_core::{ClosedBy, Code, Finish, FinishKind, Usage, UsageSlot, UsageSource};
use seawall_internal::millis;

use seawall_core::provider::Provider;

/// The record of one guarded stream, written once when it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamReport {
    /// Whose wire format the stream was read as (chosen at call time;
    /// [`Provider::Http`] for any other event stream).
    pub provider: Provider,
    /// The response status.
    pub status: u16,
    /// `None` when the stream ended well; otherwise the code of the failure
    /// it ended with (`cancelled` when the caller dropped the body early).
    pub code: Option<Code>,
    /// The finish reason, when the protocol sent one (or the clean EOF of
    /// a stream of [`Provider::Http`]).
    pub finish: Option<Finish>,
    /// Events that carried content.
    pub content_events: u64,
    /// All events, content or not (comments not counted).
    pub events: u64,
    /// Keep-alives: ping events, comment lines and chunks that carry
    /// nothing (OpenAI's `{}` with no choice, `id`, `object` or `usage`;
    /// Gemini's with no candidates, usage or prompt feedback). Not an
    /// Anthropic ping inside a compaction block: the model at work.
    pub keepalives: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Body frames received.
    pub chunks: u64,
    /// From the call to the first body byte.
    pub time_to_first_byte: Option<Duration>,
    /// From the call to the first content event.
    pub time_to_first_content: Option<Duration>,
    /// From the call to the end of the stream.
    pub elapsed: Duration,
    /// Who ended the stream: the provider (`Them`) or the guard or the
    /// caller (`Us`).
    pub closed_by: ClosedBy,
    /// The token usage the provider reported in the stream, if it did
    /// (OpenAI only with `stream_options.include_usage`), as the receipt
    /// counts it: a stream that failed before anything was delivered, its
    /// whole count when its message finished or the provider's own
    /// terminal failure counted it (the failure's usage), else, when the
    /// provider had shown it at work (billed), the part counted before the
    /// cut (the failure's partial usage); once delivered, what it
    /// reported, whole or not.
    pub usage: Option<Usage>,
    /// Whether [`usage`](Self::usage) is the provider's whole count: the
    /// message finished, or the provider's own terminal failure (a
    /// Responses `response.failed`) counted it. Not for a stream cut
    /// before its finish: a part at most.
    pub usage_whole: bool,
    /// Which of the guard's bounds passing ended a stream that failed
    /// there; `None` when no bound did (the stream finished, the provider
    /// or the caller ended it). The [`code`](Self::code) says `timeout`
    /// before content and `stream_interrupted` after it whichever bound
    /// passed: this says which.
    pub bound: Option<Bound>,
}

/// One of the guard's time bounds, by a stable name: the `bound` field of
/// the `stream ended` event and `seawall.stream.bound` on the attempt's
/// span say which one ended a stream ([`StreamReport::bound`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Bound {
    /// From the call to the first event a decoder reads
    /// ([`first_byte_timeout`](crate::StreamGuardLayer::first_byte_timeout),
    /// or the first-content bound when that is shorter).
    FirstByte,
    /// From the call to the first content event
    /// ([`first_content_timeout`](crate::StreamGuardLayer::first_content_timeout)).
    FirstContent,
    /// Between content or progress events
    /// ([`idle_timeout`](crate::StreamGuardLayer::idle_timeout)), and
    /// between the thoughts of a model thinking past the first-content
    /// bound.
    Idle,
    /// The whole stream
    /// ([`max_duration`](crate::StreamGuardLayer::max_duration)).
    MaxDuration,
    /// The short wait after a finish without content for what may still
    /// follow it (OpenAI's usage chunk, `[DONE]`): the stream fails as the
    /// empty answer it is (`empty_response`, or the filter it named).
    AfterEmptyFinish,
}

impl Bound {
    /// The stable name: `first_byte`, `first_content`, `idle`,
    /// `max_duration`, `after_empty_finish`.
    ///
    /// ```
    /// use seawall_stream::Bound;
    ///
    /// assert_eq!(Bound::MaxDuration.as_str(), "max_duration");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::FirstByte => "first_byte",
            Bound::FirstContent => "first_content",
            Bound::Idle => "idle",
            Bound::MaxDuration => "max_duration",
            Bound::AfterEmptyFinish => "after_empty_finish",
        }
    }
}

/// The attempt span's field that names the bound that ended a stream.
pub(crate) const BOUND_FIELD: &str = "seawall.stream.bound";

impl StreamReport {
    /// True when the stream ended well *and* its finish completes the task:
    /// a `length`/`max_tokens` cut, a refusal or a filter is a delivered
    /// message, never silently equal to success.
    pub fn completed_task(&self) -> bool {
        self.code.is_none()
            && self
                .finish
                .as_ref()
                .is_some_and(|finish| finish.kind.completes_task())
    }

    /// The finish kind, if any.
    pub fn finish_kind(&self) -> Option<FinishKind> {
        self.finish.as_ref().map(|finish| finish.kind)
    }
}

/// Where a guarded response's [`StreamReport`] appears once the body ends.
///
/// The guard puts one in the response extensions of every stream it
/// guards. The report is written before the body yields its last frame
/// result (`None` or the error), so a layer that wraps the body can read it
/// right when it sees the end.
///
/// ```
/// use seawall_stream::StreamReportHandle;
///
/// let handle = StreamReportHandle::default();
/// assert!(handle.get().is_none(), "nothing until the body ends");
/// ```
#[derive(Debug, Clone, Default)]
pub struct StreamReportHandle(Arc<ReportCell>);

/// The report's one cell, shared by the handle and the attempt's
/// [`UsageSlot`] (the same allocation).
#[derive(Debug, Default)]
struct ReportCell(OnceLock<StreamReport>);

impl UsageSource for ReportCell {
    fn usage(&self) -> Option<Usage> {
        self.0.get().and_then(|report| report.usage)
    }

    /// Every protocol sends its final count with its finish or after it
    /// (OpenAI's usage chunk), or with its own terminal failure: a stream
    /// cut before either reported a part at most.
    fn usage_whole(&self) -> bool {
        self.0.get().is_some_and(|report| report.usage_whole)
    }
}

impl StreamReportHandle {
    /// The report, once the stream ended (well, badly, or dropped).
    pub fn get(&self) -> Option<&StreamReport> {
        self.0.0.get()
    }

    /// The stream's usage as a [`UsageSlot`] for the receipt: filled when
    /// the report is written. Shares the handle's cell: no allocation.
    pub fn usage_slot(&self) -> UsageSlot {
        UsageSlot::new(self.0.clone())
    }

    pub(crate) fn set(&self, report: StreamReport) {
        // Written once by the guard; a second write cannot happen.
        let _ = self.0.0.set(report);
    }
}

/// Emits the one event a stream leaves in the logs, with stable field
/// names.
pub(crate) fn trace(report: &StreamReport) {
    tracing::info!(
        target: "seawall::stream",
        protocol = report.provider.as_str(),
        status = report.status,
        outcome = report.code.map_or("finished", Code::as_str),
        finish_reason = report.finish.as_ref().map(|f| &*f.reason),
        finish_kind = report.finish_kind().map(FinishKind::as_str),
        content_events = report.content_events,
        events = report.events,
        keepalives = report.keepalives,
        bytes = report.bytes,
        chunks = report.chunks,
        ttfb_ms = report.time_to_first_byte.map(millis),
        ttfc_ms = report.time_to_first_content.map(millis),
        elapsed_ms = millis(report.elapsed),
        closed_by = report.closed_by.as_str(),
        bound = report.bound.map(Bound::as_str),
        "stream ended"
    );
}
