//! The metrics seawall's layers record, by name, in one place.
//!
//! The layers record through the [`metrics`](https://docs.rs/metrics)
//! facade when their `metrics` feature is on (the facade crate's `metrics`
//! feature turns it on for all of them); with it off nothing is compiled
//! in. Labels take only bounded values: route names and stable codes —
//! never model output, prompts, URLs or keys.
//!
//! | name | kind | labels | recorded by |
//! |---|---|---|---|
//! | `seawall_attempts_total` | counter | `route`, `code` (`ok` on success; `cancelled` for an attempt in flight when its caller stopped waiting), `outcome` (`success`/`failure`/`cancelled`, the last with the code `cancelled`) | the retry ladder, per attempt; the fallback, per attempt of a route without a ladder of its own |
//! | `seawall_retries_total` | counter | `route`, `code` | the retry ladder, per retry decided |
//! | `seawall_retry_budget_exhausted_total` | counter | — | the retry ladder |
//! | `seawall_operation_duration_seconds` | histogram | `outcome` (`success`/`failure`/`cancelled`) | the retry ladder, per operation |
//! | `seawall_breaker_transitions_total` | counter | `route`, `to` | the breaker |
//! | `seawall_breakers_open` | gauge | — | the breaker: routes open or isolated |
//! | `seawall_fallbacks_total` | counter | `from`, `to`, `code` | the fallback |
//! | `seawall_stream_interruptions_total` | counter | `route`, `code` (the cause) | the stream guard |
//! | `seawall_time_to_first_byte_seconds` | histogram | — | the stream guard |
//! | `seawall_time_to_first_content_seconds` | histogram | — | the stream guard |
//! | `seawall_tokens_total` | counter | `route`, `kind` (`input`/`output`) | the retry ladder (unary), the fallback (unary, on a route without a ladder of its own), the stream guard (streams) |
//!
//! For a stream the ladder's verdict, and so its attempt's `ok` and its
//! operation's `success` and duration, is where the stream guard hands it
//! on (its first content event, as a rule): past it nothing is retried.
//! A break after that is counted by `seawall_stream_interruptions_total`
//! alone, so an error rate over streams adds the two, and a stream's
//! operation duration ends where it was handed on.
//!
//! Histograms should be exported as histograms, not summaries: give the
//! exporter [`SECONDS_BUCKETS`] (`metrics-exporter-prometheus`:
//! `set_buckets(SECONDS_BUCKETS)`).

/// Upstream attempts.
pub const ATTEMPTS_TOTAL: &str = "seawall_attempts_total";
/// Retries the ladder decided on.
pub const RETRIES_TOTAL: &str = "seawall_retries_total";
/// Retries the budget refused.
pub const RETRY_BUDGET_EXHAUSTED_TOTAL: &str = "seawall_retry_budget_exhausted_total";
/// Whole operations, from the ladder's first call to its verdict (a
/// stream's verdict is where it is handed on).
pub const OPERATION_DURATION_SECONDS: &str = "seawall_operation_duration_seconds";
/// Breaker state changes.
pub const BREAKER_TRANSITIONS_TOTAL: &str = "seawall_breaker_transitions_total";
/// Routes whose breaker is open or isolated.
pub const BREAKERS_OPEN: &str = "seawall_breakers_open";
/// Fallbacks taken.
pub const FALLBACKS_TOTAL: &str = "seawall_fallbacks_total";
/// Streams interrupted after content.
pub const STREAM_INTERRUPTIONS_TOTAL: &str = "seawall_stream_interruptions_total";
/// From the call to a stream's first body byte.
pub const TIME_TO_FIRST_BYTE_SECONDS: &str = "seawall_time_to_first_byte_seconds";
/// From the call to a stream's first content event.
pub const TIME_TO_FIRST_CONTENT_SECONDS: &str = "seawall_time_to_first_content_seconds";
/// Tokens the providers reported.
pub const TOKENS_TOTAL: &str = "seawall_tokens_total";

/// Bucket bounds for the `_seconds` histograms: 5 ms to 10 min.
pub const SECONDS_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];
