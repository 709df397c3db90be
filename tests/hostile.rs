//! A hostile server: raw bytes over loopback TCP, the answers a correct HTTP
//! server never sends and real networks do — lying content types, pages
//! from captive proxies, compressed bodies nobody asked to decode, bytes
//! that are not UTF-8, JSON nested past any parser's depth, broken chunking,
//! redirects, absurd hints, endless headers.
//!
//! Every case runs the assembled stack (hyper-util client here; over reqwest
//! in `hostile_reqwest.rs`, the same cases from `hostile/suite.rs`) against it and
//! asserts what the caller gets and how many requests reached the server:
//! a broken answer is never delivered as a complete one, a broken answer
//! before content is retried, nothing after content is replayed.

mod common;
#[path = "hostile/suite.rs"]
mod suite;

use bytes::Bytes;
use http_body_util::Full;
use seawall::classify::ClassifyLayer;
use seawall::core::BoxError;
use seawall::stack::Stack;

/// The assembled stack over the hyper-util client.
fn service(
    stack: &Stack,
) -> impl tower::Service<
    http::Request<Full<Bytes>>,
    Response = http::Response<impl http_body::Body<Data = Bytes, Error = BoxError>>,
    Error = BoxError,
> {
    stack.build(&ClassifyLayer::openai(), common::client())
}
