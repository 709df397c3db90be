//! Test utilities shared by seawall's test suites, as `tower-test` is for
//! tower's: response bodies that play a script, and canned provider
//! requests and answers, JSON-shaped texts for differential tests, a
//! request reader for raw-socket (hostile) test servers, an HTTP/2 server
//! that writes its frames by hand, hand-written Protocol Buffers for gRPC
//! status details, a tracing layer that records events and spans, and
//! lookups over what a metrics debugging recorder recorded.
//!
//! Not published: the workspace's crates take it as a dev-dependency only.
#![deny(missing_docs)]

pub mod body;
pub mod canned;
pub mod json;
pub mod metrics;
pub mod proto;
pub mod raw;
pub mod raw_h2;
pub mod tls;
pub mod trace;

/// The error type that travels between tower services.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
