//! A connection refused the same way on every attempt, below the
//! certificate checks, is a configuration to fix: permanent `transport`,
//! as a server with no ALPN protocol in common already is. Retried, it
//! failed alike `max_attempts` times.

use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::rt::TokioIo;
use seawall_classify::transport_failure;
use seawall_core::{Action, Class, Code, Failure};
use tokio::io::AsyncWriteExt;

fn verdict(failure: Option<Failure>) -> (Class, Code, Action) {
    let failure = failure.expect("recognised");
    (failure.class(), failure.code(), failure.action())
}

/// A proxy that answers the tunnel's `CONNECT` with a 407: it wants
/// credentials the client does not send. hyper-util's (and so reqwest's)
/// tunnel error, built through its public connector.
#[tokio::test]
async fn a_proxy_that_asks_for_credentials_is_a_configuration_to_fix() {
    let connector = tower::service_fn(|_: http::Uri| async {
        let (client, mut proxy) = tokio::io::duplex(1024);
        proxy
            .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
            .await?;
        // The proxy end stays open until the tunnel read its answer.
        tokio::spawn(async move {
            let _proxy = proxy;
            std::future::pending::<()>().await;
        });
        Ok::<_, std::io::Error>(TokioIo::new(client))
    });
    let mut tunnel = Tunnel::new("http://proxy.test:3128".parse().unwrap(), connector);
    let error = tower::Service::call(&mut tunnel, "https://api.example.com".parse().unwrap())
        .await
        .map(drop)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tunnel error: proxy authorization required"
    );
    let failure = transport_failure(&error);
    assert_eq!(
        verdict(failure.clone()),
        (Class::Permanent, Code::Transport, Action::Surface)
    );
    assert!(
        failure.unwrap().message().unwrap().contains("proxy"),
        "names the proxy"
    );
}

/// An error that says `text`, as tonic's private `TlsError` does: its
/// text is the only handle on it (the workspace builds tonic without TLS,
/// and the type is not public).
#[cfg(feature = "tonic")]
#[derive(Debug)]
struct Said(&'static str);

#[cfg(feature = "tonic")]
impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

#[cfg(feature = "tonic")]
impl std::error::Error for Said {}

/// As tonic's channel reports its connector's errors.
#[cfg(feature = "tonic")]
fn connect_error(text: &'static str) -> tonic::ConnectError {
    tonic::ConnectError(Box::new(Said(text)))
}

/// A server that did not agree to HTTP/2 in the TLS handshake: gRPC
/// cannot be spoken to it, on any attempt.
#[cfg(feature = "tonic")]
#[test]
fn a_server_without_http2_over_tls_is_a_configuration_to_fix() {
    let error = connect_error("HTTP/2 was not negotiated.");
    assert_eq!(
        verdict(transport_failure(&error)),
        (Class::Permanent, Code::Transport, Action::Surface)
    );
}

/// tonic's TLS handshake past its bound is a timeout, as reqwest's
/// connect timeout in the handshake is.
#[cfg(feature = "tonic")]
#[test]
fn tonics_tls_handshake_past_its_bound_is_a_timeout() {
    let error = connect_error("TLS handshake timeout.");
    assert_eq!(
        verdict(transport_failure(&error)),
        (Class::Transient, Code::Timeout, Action::Retry)
    );
    // Any other connect error stays a transient `transport`.
    let refused = tonic::ConnectError(Box::new(std::io::Error::from(
        std::io::ErrorKind::ConnectionRefused,
    )));
    assert_eq!(
        verdict(transport_failure(&refused)),
        (Class::Transient, Code::Transport, Action::Retry)
    );
}
