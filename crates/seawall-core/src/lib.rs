//! The vocabulary every seawall layer speaks.
//!
//! Every response and transport error becomes one [`Failure`]: a [`Class`]
//! (can the same request succeed?), a stable [`Code`], the [`Evidence`] of
//! what the transport saw, and from those an [`Action`] (retry, fail over,
//! surface, escalate, return to the model). Layers decide only from this
//! vocabulary, never from provider-specific strings.
//!
//! Beside it live the shared types later layers fill — [`Deadline`] (in the
//! request extensions), [`RouteId`], [`Receipt`] — the retry-hint parsers in
//! [`hint`], the provider error table in [`provider`] and finish reasons in
//! [`finish`].
//!
//! ```
//! use seawall_core::provider::{classify_error, ErrorContext, Provider, QuotaWall};
//! use seawall_core::hint::RetryHint;
//! use seawall_core::{Action, Class, Code};
//! use std::time::{Duration, SystemTime};
//!
//! let body = br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
//! let cx = ErrorContext {
//!     status: Some(429),
//!     hint: RetryHint::default(),
//!     quota_wall: QuotaWall::default(),
//!     now: SystemTime::now(),
//! };
//! let failure = classify_error(Provider::OpenAi, body, cx);
//! assert_eq!(failure.class(), Class::Permanent);
//! assert_eq!(failure.code(), Code::QuotaExhausted);
//! assert_eq!(failure.action(), Action::Surface);
//! ```
#![deny(missing_docs)]

mod action;
mod another_route;
mod class;
mod code;
pub mod cools;
mod deadline;
mod evidence;
pub mod facts;
mod failure;
pub mod finish;
pub mod hint;
mod macros;
pub mod metric_names;
mod progress;
pub mod provider;
mod receipt;
pub mod record;
pub mod recording;
mod route;
mod scope;
pub mod span;
mod text;
pub mod usage;

pub use action::Action;
pub use another_route::AnotherRoute;
pub use class::{Class, is_answer_status};
pub use code::{Code, UnknownCode};
pub use deadline::{AnswerBy, Deadline};
pub use evidence::{ClosedBy, Evidence};
pub use facts::RequestFacts;
pub use failure::{
    DEFAULT_MAX_DELIVERED_TEXT, Failure, Interrupted, MESSAGE_EXCERPT_BYTES, PROVIDER_WORD_BYTES,
    excerpt, request_id_of,
};
pub use finish::{Finish, FinishKind};
pub use progress::Progress;
pub use receipt::{Attempt, Attempts, Receipt, StopReason, billable};
pub use route::{MAX_KEPT_NAME, RouteId, ShownUri};
pub use scope::{
    AUTH_COOLDOWN, CallerCredentials, Cooldown, DEFAULT_QUOTA_COOLDOWN, MAX_QUOTA_COOLDOWN,
    OtherRoutes, Scope,
};
pub use span::AttemptSpans;
pub use text::without_url_secrets;
pub use usage::{Usage, UsageSlot, UsageSource};

/// The error type that travels between tower services.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
