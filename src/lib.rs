//! seawall: tower layers that make calls to LLM providers fail correctly.
//!
//! Each layer lives in its own crate and is re-exported here behind a cargo
//! feature of the same name (all on by default). The vocabulary they share
//! is [`core`] (`seawall-core`).
#![deny(missing_docs)]

pub use seawall_core as core;

pub mod resume;
