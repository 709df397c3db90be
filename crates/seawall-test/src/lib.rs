//! Test utilities shared by seawall's test suites, as `tower-test` is for
//! tower's: response bodies that play a script, and canned provider
//! requests and answers, JSON-shaped texts for differential tests, a
//! request reader for raw-socket (hostile) test servers, an HTTP/2 server
//! that writes its frames by hand, and hand-written Protocol Buffers for
//! gRPC status details.
//!
//! Not published: the workspace's crates take it as a dev-dependency only.
#![deny(missing_docs)]

pub mod body;
pub mod canned;
pub mod json;
pub mod proto;
pub mod raw;
pub mod raw_h2;
pub mod tls;

/// The error type that travels between tower services.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
