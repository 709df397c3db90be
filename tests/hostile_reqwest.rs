//! The hostile-server suite (`hostile/suite.rs`) with the stack over
//! `seawall::reqwest::ReqwestService`: the same raw answers a correct HTTP
//! server never sends, read by reqwest instead of hyper-util, with the same
//! verdicts and the same request counts.
#![cfg(feature = "reqwest")]

mod common;
#[path = "hostile/suite.rs"]
mod suite;

/// The stack over reqwest.
const CLIENT: suite::Client = suite::Client::Reqwest;
