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

/// An h2c POST to a server following `acts` for every stream it opens; the
/// error hyper-util's client gives back.
async fn h2_error(acts: Vec<seawall_test::raw_h2::Act>) -> hyper_util::client::legacy::Error {
    let (addr, _) = seawall_test::raw_h2::scripted_server(move |_, _| acts.clone()).await;
    let client = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http::<Full<Bytes>>();
    let request = http::Request::post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"m","messages":[]}"#,
        )))
        .unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), client.request(request))
        .await
        .expect("the server answers within the bound")
        .expect_err("no answer")
}

/// RFC 9113 §6.8: a stream above a GOAWAY's last-stream-id "was not or
/// will not be processed". One the server took and then lost with its
/// connection may have been.
#[tokio::test]
async fn a_stream_a_goaway_left_out_generated_nothing_one_it_kept_may_have() {
    use seawall_test::raw_h2::{Act, INTERNAL_ERROR, NO_ERROR, goaway};
    let pause = Act::Sleep(std::time::Duration::from_millis(200));

    let left_out = h2_error(vec![goaway(0, NO_ERROR), pause.clone()]).await;
    let failure = transport_failure(&left_out).expect("a transport failure");
    assert_eq!(failure.code(), Code::Transport);
    assert!(failure.nothing_generated(), "{left_out:?}: {failure:?}");

    let kept = h2_error(vec![goaway(1, INTERNAL_ERROR), pause, Act::Close]).await;
    let failure = transport_failure(&kept).expect("a transport failure");
    assert!(!failure.nothing_generated(), "{kept:?}: {failure:?}");
}

/// hyper hands a request back unwritten (`is_canceled`) when its
/// connection is gone before the request was queued on it.
#[tokio::test]
async fn a_request_hyper_gave_back_unwritten_generated_nothing() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = tokio::spawn(async move { listener.accept().await.map(|(stream, _)| stream) });
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake::<_, Full<Bytes>>(
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    // The connection's task never runs: nothing can be written.
    drop(connection);
    let request = http::Request::post("/v1/chat/completions")
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    let error = sender.send_request(request).await.unwrap_err();
    assert!(error.is_canceled(), "{error:?}");
    let failure = transport_failure(&error).expect("a transport failure");
    assert!(failure.nothing_generated(), "{error:?}: {failure:?}");
    drop(accepted);
}

/// tower's `LoadShed` refused the call on this side: it never left.
#[test]
fn a_call_shed_here_generated_nothing() {
    let shed = tower::load_shed::error::Overloaded::new();
    let failure = transport_failure(&shed).expect("a failure");
    assert!(failure.nothing_generated(), "{failure:?}");
}

/// tonic's channel wraps every failure of its connect phase in
/// `ConnectError`: a name not found, a connect timeout, a host
/// unreachable, a reset during the TLS handshake. No request left.
#[cfg(feature = "tonic")]
#[test]
fn every_connect_phase_failure_of_tonic_generated_nothing() {
    for inner in [
        io::Error::other("failed to lookup address information: Name or service not known"),
        io::Error::from(io::ErrorKind::TimedOut),
        io::Error::from(io::ErrorKind::HostUnreachable),
        io::Error::from(io::ErrorKind::ConnectionReset),
    ] {
        let kind = inner.kind();
        let error = tonic::ConnectError(Box::new(inner));
        let failure = transport_failure(&error).expect("a failure");
        assert!(failure.nothing_generated(), "{kind:?}: {failure:?}");
    }
}
