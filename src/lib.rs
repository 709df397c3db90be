//! seawall: tower layers that make calls to LLM providers fail correctly.
//!
//! Each layer lives in its own crate and is re-exported here behind a cargo
//! feature of the same name (all on by default). The vocabulary they share
//! is [`core`] (`seawall-core`): every failure becomes a
//! [`Failure`](core::Failure) with a class, a stable code, evidence and an
//! action, whichever layer produced it.
//!
//! With every feature on, [`stack`] assembles the layers in the recommended
//! order, with presets; [`resume`] continues an interrupted stream in the
//! same body (`Stack::resume`).
//!
//! | module | crate | layer |
//! |---|---|---|
//! | [`classify`] | `seawall-classify` | `ClassifyLayer`: responses and transport errors → `Failure` |
//! | [`deadline`] | `seawall-deadline` | `DeadlineLayer`: one deadline per operation, narrowed per attempt |
//! | [`retry`] | `seawall-retry` | `RetryBudgetLayer`: one bounded ladder, shared budget |
//! | [`breaker`] | `seawall-breaker` | `BreakerLayer`: per-route circuit breaker |
//! | [`stream`] | `seawall-stream` | `StreamGuardLayer`: SSE gap timeouts, hold-back until first content |
//! | [`fallback`] | `seawall-fallback` | `FallbackLayer`: another route, or a chain of them in order, only when safe; `RouteSetLayer`: one of many equivalent routes per attempt |
//! | [`resume`] | `seawall-resume` | `ResumeLayer`: an interrupted stream continues in the same body |
//!
//! Interop behind features of their own: `reqwest` and `async-openai`
//! (`seawall::reqwest`: seawall under a `reqwest::Client` and under
//! async-openai), `tower-http` (`seawall::tower_http`: seawall's verdict
//! as tower-http's failure class) and `tonic` (`seawall::tonic`: failures
//! as `tonic::Status`es with the server's own code, and tonic's own
//! errors read by the classification); `rustls` (a server certificate
//! rustls refuses is a permanent failure, read by the classification,
//! not a transport error retried).
#![deny(missing_docs)]

pub use seawall_core as core;

#[cfg(feature = "breaker")]
pub use seawall_breaker as breaker;
#[cfg(feature = "classify")]
pub use seawall_classify as classify;
#[cfg(feature = "deadline")]
pub use seawall_deadline as deadline;
#[cfg(feature = "fallback")]
pub use seawall_fallback as fallback;
#[cfg(feature = "reqwest")]
pub use seawall_reqwest as reqwest;
#[cfg(feature = "retry")]
pub use seawall_retry as retry;
#[cfg(feature = "stream")]
pub use seawall_stream as stream;

#[cfg(feature = "resume")]
pub mod resume;
#[cfg(all(
    feature = "classify",
    feature = "deadline",
    feature = "retry",
    feature = "breaker",
    feature = "stream",
    feature = "fallback"
))]
pub mod stack;
#[cfg(feature = "tonic")]
pub mod tonic;
#[cfg(feature = "tower-http")]
pub mod tower_http;

/// The names most code needs, in one import: `use seawall::prelude::*;`.
pub mod prelude {
    pub use seawall_core::{Action, Class, Code, Deadline, Failure, Receipt, RouteId};

    #[cfg(all(
        feature = "classify",
        feature = "deadline",
        feature = "retry",
        feature = "breaker",
        feature = "stream",
        feature = "fallback"
    ))]
    pub use crate::stack::Stack;
    #[cfg(feature = "breaker")]
    pub use seawall_breaker::BreakerLayer;
    #[cfg(feature = "classify")]
    pub use seawall_classify::ClassifyLayer;
    #[cfg(feature = "deadline")]
    pub use seawall_deadline::DeadlineLayer;
    #[cfg(feature = "fallback")]
    pub use seawall_fallback::{FallbackLayer, Member, RouteSetLayer, ServedBy};
    #[cfg(feature = "resume")]
    pub use seawall_resume::{ResumeLayer, Resumed};
    #[cfg(feature = "retry")]
    pub use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
    #[cfg(feature = "stream")]
    pub use seawall_stream::{StreamGuardLayer, StreamReport};
}
