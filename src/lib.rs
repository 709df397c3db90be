//! seawall: tower layers that make calls to LLM providers fail correctly.
#![deny(missing_docs)]
pub use seawall_core as core;
