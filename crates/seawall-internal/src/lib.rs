//! Implementation details shared by seawall's crates.
//!
//! **Not a public API.** Everything here may change or go in any release,
//! whatever the version number says. It is a crate of its own (and
//! published) only because the layer crates are published one by one and
//! each needs these pieces; depend on `seawall` or a layer crate instead.
//!
//! - [`window`]: the epoch-tagged sliding window of packed atomics behind
//!   the retry budget's ratio and the breaker's failure ratio.
//! - [`millis`]: a [`Duration`](std::time::Duration) in whole milliseconds,
//!   saturating, for logs, journals and millisecond clocks.
//! - [`capped_doubling`]: the backoff ceiling and the breaker's break.
//! - [`excerpt`]: a bounded prefix of someone else's text, never splitting
//!   a character (failure messages, the fault server's echoes).
//! - [`random`]: where a layer's jitter comes from.
//! - [`json`]: borrowed JSON text and the UTF-8-once parse, for the
//!   provider tables and the stream decoders.
//! - [`nesting`]: where a JSON value ends, followed across the frames its
//!   bytes come in, for the JSON-array splitter and the check of a unary
//!   answer too long to read whole.
//! - [`error`]: an error's source chain, walked through io payloads.
//! - [`headers`]: header readings and rewrites more than one crate makes:
//!   the headers that carry credentials, `Host` following a new origin,
//!   a declared `content-length`, a message's media type.
//! - [`cursor`]: the strict JSON cursor that reads the few fields a
//!   decision needs and gives up (to serde) on anything it is unsure of.
//! - [`uri`]: the port check on a URL given as where requests go.
//! - [`sse_field`]: one event-stream line read as a field (WHATWG), for
//!   the stream scanner and the gateway's relay.
//! - [`redact`]: keys and tokens never printed, and scrubbed from text
//!   that is shown (the gateway's answers, `seawall chat`'s stderr).
//! - [`anthropic_errors`]: Anthropic's error types and their statuses,
//!   for the gateway's answers and the fault server's.
#![deny(missing_docs)]

pub mod anthropic_errors;
pub mod cursor;
mod doubling;
pub mod error;
mod excerpt;
pub mod headers;
pub mod json;
mod millis;
pub mod nesting;
pub mod random;
pub mod redact;
pub mod sse_field;
pub mod uri;
pub mod window;

pub use doubling::capped_doubling;
pub use excerpt::excerpt;
pub use millis::millis;
