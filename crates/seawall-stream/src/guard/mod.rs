//! The stream guard: HTTP 200 is not a finished answer, and replay ends
//! where content begins.
//!
//! A streamed completion is four nested agreements — socket, HTTP response,
//! event stream, assistant message — and each can end on its own. The guard
//! reads the event stream in the request's [`Provider`]'s wire format and decides from
//! what the events mean:
//!
//! - **Before the first content event** the response future does not
//!   resolve. It fails with a complete-evidence
//!   [`Failure`](seawall_core::Failure) — `first_byte_timeout` (fail over),
//!   `timeout` (no content within `first_content`; pings do not count,
//!   and a model that keeps streaming its thinking is not cut there:
//!   below),
//!   `empty_response` (a finish or EOF before content), a refusal or
//!   filter (`refused`, `content_filtered`: escalate), the in-stream
//!   error's own class (`overloaded`, …) or `transport` — so outer layers
//!   can still retry or fail over: nothing has reached the caller. One
//!   exception: a hold that passes
//!   [`max_held_bytes`](StreamGuardLayer::max_held_bytes) while the model
//!   shows it is working (a long think) is handed on there, and from then
//!   on the stream is treated as delivered. So is a hold that holds
//!   progress when the caller's [`AnswerBy`](seawall_core::AnswerBy)
//!   comes, and a hold of a model still thinking when the attempt's own
//!   bound (a per-attempt deadline outside) comes: 50 ms before either.
//! - **At the first content event** it resolves with a body that replays
//!   the held frames and continues live. From then on frames pass through
//!   untouched and the body never replays — except the provider's own
//!   error event (with what follows it in its frame), which is never handed
//!   on: the failure carries what it said, and a client that read it first
//!   would stop at its own reading of it (async-openai: "missing field
//!   `id`") and never see seawall's verdict. When its lines began in an
//!   earlier frame, those passed without the blank line that would
//!   dispatch them, so no client dispatches it. An error element of
//!   Gemini's JSON-array stream is cut the same way, at its first byte
//!   (the `,` before it stays; the array never closes; a start that came
//!   in an earlier frame passed as an element that never completes). It
//!   fails with
//!   `stream_interrupted` (reset, in-stream error, idle gap, max duration)
//!   or `truncated` (clean EOF without the finish marker), whose action is
//!   `surface`, with an [`Interrupted`](seawall_core::Interrupted) record of
//!   what was delivered, text included.
//! - **The protocol's end marker ends the stream**: `[DONE]`, Anthropic's
//!   `message_stop`, the Responses API's terminal event. The frame is cut
//!   just after it, the body is read no further, and the stream ends as at
//!   a clean end of body: text a server sends after it is no part of the
//!   answer (an OpenAI SDK stops reading at `[DONE]`), and a server that
//!   keeps the connection open after it holds nobody until the idle
//!   bound. A finish reason alone is no end marker (OpenAI's usage chunk,
//!   Anthropic's `message_stop`, Gemini's last usage frame follow it).
//!   Where the stream ends badly (a filter after content, a choice cut
//!   short, no finish at all), the frame is cut just before a `[DONE]` or
//!   `message_stop` instead: an SDK that stops reading at `[DONE]` reads
//!   on, and meets the verdict, not a clean end.
//! - **A finish is not always success.** `length`/`max_tokens` ends the
//!   body cleanly and the report marks it truncated. A refusal, a filter or
//!   a malformed call after content ends the body with that verdict
//!   (`refused`/`content_filtered`: escalate; `bad_arguments`: return to
//!   the model) and the same delivered record, never a silent clean end.
//! - **Timeouts bound gaps**, not streams: one timer, reset as the stream
//!   moves — first byte, first content, then idle (reset by content and
//!   progress events, never by keep-alives), plus an optional
//!   `max_duration`. A model that thinks before it answers (thinking or
//!   reasoning deltas: [`Signal::Thinking`](crate::protocol::Signal::Thinking))
//!   is not cut at the first-content bound while it is still thinking: cut
//!   and asked again, it would think — and be billed — as long again.
//!   Past that bound it has the idle bound between its thoughts instead,
//!   and failing it before content is still `timeout`, retryable. So is
//!   work the model does out of sight, with only keep-alives to show for
//!   it: Anthropic's server-side compaction, which sends its block's
//!   start and then only pings until the whole summary comes in one
//!   delta, and a thinking (or redacted thinking) block whose thinking is
//!   not shown (`display: "omitted"`), which sends its start and then only
//!   pings until its signature; a tool Anthropic runs itself
//!   (`server_tool_use`, `mcp_tool_use`), from its block's start until
//!   the next block (its result's) starts; on the Responses API a
//!   reasoning run with its summary off (the default), a compaction, or a
//!   hosted tool's call (image generation, code interpreter, web or file
//!   search, MCP) until its item is done, which send their item's start
//!   and then only `keepalive` events (a compaction,
//!   `response.compaction.compacting` too, which is thinking wherever it
//!   comes). The pings and keep-alives inside such a block or item (and
//!   only those) count as thinking, not
//!   as keep-alives (the report's `keepalives` leaves them out), so the
//!   work outlives the first-content bound, and, between the answer's
//!   parts, the idle bound, while one comes within each idle bound; what
//!   bounds it as a whole is a `max_duration` (none by default) or the
//!   per-attempt deadline outside, so a block stuck pinging runs to that
//!   deadline, not to the idle bound: the price of not cutting (and
//!   billing again) work that is only slow. A role delta, `message_start` or a block or item start alone
//!   extends nothing: a stream that sends its head and then nothing (or
//!   only keep-alives outside such a block or item) still times out at
//!   the first-content bound. The clock starts at the call; the guard takes charge
//!   once the response says `text/event-stream`. Before the headers it
//!   cannot tell a stream from a unary answer that may rightly take a
//!   minute, so a route that never sends headers is bounded by the
//!   per-attempt deadline outside (`timeout`, nothing arrived), and the
//!   retry ladder turns a second such timeout into a failover.
//! - **Every stream leaves a [`StreamReport`](crate::StreamReport)** in the
//!   [`StreamReportHandle`](crate::StreamReportHandle) in the response
//!   extensions, and one `tracing` event (target `seawall::stream`).
//!
//! - **Gemini's JSON-array stream** (`:streamGenerateContent` without
//!   `alt=sse`, answered `application/json`) is one JSON array written an
//!   element at a time. The guard splits it incrementally
//!   ([`json_array`](crate::json_array)) and reads each element as a Gemini
//!   event, with the same bounds, hold-back and verdicts; the message is
//!   complete only with its finish *and* the closing `]`. Anything but
//!   whitespace after the `]` is `protocol_violation`. A classifier below
//!   reads the array's first byte before it hands the response on, so for
//!   such a request the first-byte bound runs from the call, headers or
//!   not.
//!
//! - **A head and then nothing, whatever its type.** A classifier below
//!   holds a generation's answer that is JSON or says no type until it has
//!   read its first bytes, so the guard never sees the head. While the
//!   layers below keep a generation waiting, the first-byte bound runs from
//!   the call: once it passes, a request that asked for a stream (its body
//!   sent whole) answered with a 2xx head and not one byte of body fails
//!   as `first_byte_timeout`, as an event stream would. A call with no
//!   head yet (a server that ignores `"stream": true` sends its head with
//!   its whole answer), an error status, a unary answer, or one whose
//!   bytes are coming, waits on under the attempt's bound. The timer is
//!   armed only when the call first waits, and only under a per-attempt
//!   bound (whose progress tells silence from slowness).
//!
//! Responses that are not a 2xx `text/event-stream` (or such a JSON-array
//! stream) pass through, at the cost of a header check.
//!
//! ```
//! use bytes::Bytes;
//! use http_body_util::{BodyExt, Full};
//! use seawall_core::FinishKind;
//! use seawall_stream::{StreamGuardLayer, StreamReportHandle};
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), seawall_core::BoxError> {
//! let provider = service_fn(|_request: http::Request<()>| async {
//!     let stream = concat!(
//!         "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n",
//!         "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
//!         "data: [DONE]\n\n",
//!     );
//!     let response = http::Response::builder()
//!         .header("content-type", "text/event-stream")
//!         .body(Full::new(Bytes::from_static(stream.as_bytes())))?;
//!     Ok::<_, seawall_core::BoxError>(response)
//! });
//! let guarded = ServiceBuilder::new()
//!     .layer(StreamGuardLayer::interactive())
//!     .service(provider);
//!
//! let request = http::Request::post("https://api.example/v1/chat/completions").body(())?;
//! let response = guarded.oneshot(request).await?;
//! let handle = response.extensions().get::<StreamReportHandle>().cloned().unwrap();
//! let body = response.into_body().collect().await?.to_bytes();
//! assert!(body.ends_with(b"data: [DONE]\n\n"));
//!
//! let report = handle.get().expect("the body ended");
//! assert_eq!(report.finish.as_ref().unwrap().kind, FinishKind::Complete);
//! assert_eq!(report.content_events, 1);
//! assert!(report.completed_task());
//! # Ok(())
//! # }
//! ```

mod body;
mod future;
mod layer;
mod service;
mod stream;

use std::time::Duration;

pub use body::GuardBody;
pub use future::ResponseFuture;
pub use layer::StreamGuardLayer;
pub use service::StreamGuard;

use seawall_core::RequestFacts;

use seawall_core::provider::{Provider, QuotaWall};
use seawall_internal::json::is_json_media;

/// The settings of one layer, shared by its services.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    first_byte: Duration,
    first_content: Duration,
    idle: Duration,
    max_duration: Option<Duration>,
    max_line: usize,
    max_event: usize,
    max_held: usize,
    max_text: Option<usize>,
    provider: Option<Provider>,
    content_type: &'static str,
    /// A refusal or filter the provider declared as the finish is the
    /// answer, not a failure ([`StreamGuardLayer::deliver_policy_outcomes`]).
    deliver_policy: bool,
    /// The threshold set for an in-stream rate limit's hint
    /// ([`StreamGuardLayer::quota_wall`]); `None` is the default wall.
    quota_wall: Option<QuotaWall>,
}

/// How a guarded response was recognised as a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recognised {
    /// It says so: the guarded media type.
    ContentType,
    /// A stream was asked for and the answer does not say it is JSON: it
    /// must open like an event stream, or it is no answer.
    Requested,
    /// Gemini's `streamGenerateContent` without `alt=sse`, answered with
    /// JSON (or without a content type): one JSON array, an element at a
    /// time ([`crate::json_array`]).
    JsonArray,
}

impl Config {
    /// Whether to guard a response, and why: a 2xx of the guarded media
    /// type (parameters such as `; charset=utf-8` ignored), or a 2xx whose
    /// content type is missing or neither that nor JSON from a generation
    /// endpoint asked for a stream (a proxy that dropped the type must not
    /// turn a stream into an unchecked body). A stream request answered
    /// with JSON, and a request for a unary answer whatever its answer's
    /// label, get a unary answer: the classifier checks it — except
    /// Gemini's JSON-array stream (`json_array`: `:streamGenerateContent`
    /// without `alt=sse`), whose JSON is the stream.
    fn guards<B>(
        &self,
        response: &http::Response<B>,
        facts: &RequestFacts,
        json_array: bool,
    ) -> Option<Recognised> {
        if !response.status().is_success() {
            return None;
        }
        let media = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .map(|value| {
                let essence = value.as_bytes().split(|&b| b == b';').next().unwrap_or(&[]);
                essence.trim_ascii()
            });
        match media {
            // A generation that asked for one JSON answer gets the
            // classifier's unary check, whatever the label says.
            Some(media) if media.eq_ignore_ascii_case(self.content_type.as_bytes()) => {
                (!facts.unary_requested()).then_some(Recognised::ContentType)
            }
            Some(media) if is_json_media(media) => json_array.then_some(Recognised::JsonArray),
            _ if json_array => Some(Recognised::JsonArray),
            _ if facts.is_generation() && facts.stream_requested() == Some(true) => {
                Some(Recognised::Requested)
            }
            _ => None,
        }
    }
}
