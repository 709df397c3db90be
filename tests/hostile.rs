mod common;
#[path = "hostile/suite.rs"]
mod suite;

/// The stack over hyper-util's client.
const CLIENT: suite::Client = suite::Client::Hyper;
