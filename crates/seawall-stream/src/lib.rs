//! `StreamGuardLayer`: a streamed LLM answer is finished when its finish
//! marker arrives, not when HTTP says 200.
//!
//! The layer sits inside the per-attempt deadline and outside the
//! classifier:
//!
//! ```text
//! Deadline(total) → Fallback → RetryBudget → Breaker → Deadline(attempt)
//!     → StreamGuard → Classify → client
//! ```
//!
//! It holds a streamed response back until the first content event, so
//! everything that fails before it (a 40-byte frame then EOF, headers then
//! silence, an in-stream `overloaded_error`) is an ordinary, retryable or
//! fail-over-able [`Failure`](seawall_core::Failure) for the layers outside.
//! After the first content event it never replays: a reset, an in-stream
//! error or an idle gap becomes a body error holding a `Failure` of code
//! `stream_interrupted` (or `truncated` for a clean EOF without the finish
//! marker), with action `surface` and an
//! [`Interrupted`](seawall_core::Interrupted) record of what was delivered
//! — content events, bytes, and the delivered text reconstructed from the
//! deltas — so the caller can resume by prefill instead of restarting.
//! See [`guard`] for the whole story and an example.
//!
//! # Reading the outcome
//!
//! - **Before content**: the response future's error is a `BoxError`
//!   holding the `Failure`; [`Failure::find`](seawall_core::Failure::find)
//!   or [`Failure::downcast`](seawall_core::Failure::downcast) reads it.
//! - **After content**: the body's error (a `BoxError`) holds the
//!   `Failure`; `failure.interrupted()` is the delivered record.
//! - **Always**: a [`StreamReportHandle`] in the response extensions gives
//!   the [`StreamReport`] once the body ended — finished, failed, or
//!   dropped by the caller: `cancelled` (closed by us), unless its end was
//!   already decided (the provider's error event in a frame handed on, a
//!   filter or refusal finish), which it then reports.
//!
//! # For layers outside (the breaker)
//!
//! A layer that must learn how a streamed body ended wraps the body itself
//! and watches its end: `None` means the stream finished; an error holding
//! a `Failure` with `evidence().closed_by == Some(ClosedBy::Them)` is a
//! remote interruption; `closed_by == Some(ClosedBy::Us)` is our own bound
//! (idle, max duration) firing. The report is written *before* the body
//! yields that last result, so the wrapper can also read
//! [`StreamReportHandle::get`] at that moment. A body dropped early never
//! yields an end; its report has code `cancelled` and is not a provider
//! failure — unless the end was decided before the drop (see above): the
//! report then says that end, closed by them.
//!
//! # Differences from a timeout and a retry around a stream
//!
//! tower's `timeout` and `retry` see only the response future, which
//! resolves at the headers: a stream that then says nothing, sends one
//! frame and ends, or carries an `overloaded_error` event is a success to
//! them, and a retry after content would restart an answer the user is
//! reading. tower-http's `ResponseBodyTimeout` bounds the wait for each
//! frame, so a provider that sends keep-alive pings and no content never
//! times out. The guard reads the events: it holds the response until the
//! first content event (everything before can still be retried or failed
//! over), bounds gaps by content and progress rather than any byte, calls a
//! stream without its finish marker truncated, and never replays after
//! content.
#![deny(missing_docs)]

pub mod guard;
pub mod json_array;
pub mod protocol;
mod report;
pub mod sse;

pub use guard::{GuardBody, ResponseFuture, StreamGuard, StreamGuardLayer};
pub use report::{Bound, StreamReport, StreamReportHandle};
pub use seawall_core::provider::Provider;
