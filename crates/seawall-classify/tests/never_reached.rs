//! A transport failure before the request reached the server says nothing
//! was generated: a connection never made cannot have been billed, where
//! a connection broken after the request was written may have been.

use std::io;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seawall_classify::transport_failure;
use seawall_core::Code;

#[tokio::test]
async fn a_connection_never_made_generated_nothing() {
    // A port nothing listens on: bound, then closed.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = http::Request::post(format!("http://{addr}/v1/chat/completions"))
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    let error = client.request(request).await.unwrap_err();
    let failure = transport_failure(&error).expect("a transport failure");
    assert_eq!(failure.code(), Code::Transport);
    assert!(failure.nothing_generated(), "{failure:?}");
}

#[test]
fn a_refusal_generated_nothing_a_reset_may_have() {
    let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
    assert!(transport_failure(&refused).unwrap().nothing_generated());
    let reset = io::Error::from(io::ErrorKind::ConnectionReset);
    assert!(!transport_failure(&reset).unwrap().nothing_generated());
}
