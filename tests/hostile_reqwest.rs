//! The hostile-server suite (`hostile/suite.rs`) with the stack over
//! `seawall::reqwest::ReqwestService`: the same raw answers a correct HTTP
//! server never sends, read by reqwest instead of hyper-util, with the same
//! verdicts and the same request counts.
#![cfg(feature = "reqwest")]

mod common;
#[path = "hostile/suite.rs"]
mod suite;

use bytes::Bytes;
use http_body_util::Full;
use seawall::classify::ClassifyLayer;
use seawall::core::BoxError;
use seawall::stack::Stack;

/// The assembled stack over a reqwest client as seawall builds it (no
/// redirects, no retries, no timeouts of its own; no proxy from the
/// environment: loopback only).
fn service(
    stack: &Stack,
) -> impl tower::Service<
    http::Request<Full<Bytes>>,
    Response = http::Response<impl http_body::Body<Data = Bytes, Error = BoxError>>,
    Error = BoxError,
> {
    let client = seawall::reqwest::client_builder()
        .no_proxy()
        .build()
        .expect("a reqwest client");
    stack.build(
        &ClassifyLayer::openai(),
        seawall::reqwest::ReqwestService::new(client),
    )
}
