//! The `seawall` command line: `replay` (the main job), `chat`, `chaos`.
//!
//! The subcommands live in this library so that tests drive the same code
//! the binary runs.
#![deny(missing_docs)]

pub mod app;
pub mod caller;
pub mod chat;
pub mod naive;
pub mod replay;
