//! One rustls crypto provider for the whole workspace: ring.
//!
//! This test binary links reqwest (rustls, no provider of its own), async-
//! openai (default features off) and hyper-rustls (ring), as an application
//! using `seawall chat`'s connector next to async-openai would. Were
//! aws-lc-rs built in too, rustls could not pick a default provider from
//! its features and `ClientConfig::builder()` — what hyper-rustls's
//! `with_native_roots()` calls — would panic.

mod common;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seawall::core::Code;
use tower::ServiceExt;

/// The HTTPS connector exactly as `seawall chat` builds it.
fn cli_connector()
-> hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector> {
    let builder = hyper_rustls::HttpsConnectorBuilder::new();
    let builder = match builder.with_native_roots() {
        Ok(native) => native,
        Err(_) => hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots(),
    };
    builder.https_or_http().enable_http1().build()
}

#[tokio::test]
async fn hyper_rustls_and_reqwest_build_https_clients_in_one_binary() {
    // The CLI's connector: rustls picks its default provider by features.
    let connector = cli_connector();
    let _hyper: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build(connector);
    let provider = rustls::crypto::CryptoProvider::get_default().expect("a default provider");
    let ring = rustls::crypto::ring::default_provider();
    assert_eq!(
        format!("{:?}", provider.cipher_suites),
        format!("{:?}", ring.cipher_suites),
        "the default provider is ring"
    );
    // reqwest with rustls, configured over ring explicitly.
    let config = seawall_reqwest::tls_config().expect("a TLS config over ring");
    assert_eq!(
        format!("{:?}", config.crypto_provider().cipher_suites),
        format!("{:?}", ring.cipher_suites)
    );
    seawall_reqwest::client().expect("a reqwest client with rustls");
    // And one built the way async-openai's `Client::new()` does, once a
    // default is installed (here by hyper-rustls already; the helper is a
    // no-op then).
    seawall_reqwest::install_crypto_provider();
    reqwest::Client::builder()
        .build()
        .expect("reqwest's own rustls setup");
}

#[tokio::test]
async fn a_tls_handshake_runs_and_its_failure_is_permanent() {
    // A plain-HTTP server spoken to over https: the handshake (ring) runs and
    // fails on an answer that is no TLS, which the classifier reads as a
    // transport failure that no retry mends (a scheme or port to fix).
    let chaos = common::chaos().await;
    let url = format!("https://{}/v1/chat/completions", chaos.addr());
    let request = http::Request::post(url)
        .body(Full::new(Bytes::from(common::chat_body(false))))
        .unwrap();
    let error = common::service().oneshot(request).await.unwrap_err();
    let seawall_reqwest::Error::Tls { failure, .. } = &error else {
        panic!("a refused handshake: {error:?}");
    };
    assert_eq!(
        (failure.code(), failure.class()),
        (Code::Transport, seawall::core::Class::Permanent),
        "{error:?}"
    );
}

#[test]
fn aws_lc_rs_is_not_in_the_workspace() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"))
        .expect("the workspace lock file");
    assert!(
        !lock.contains("name = \"aws-lc-rs\"") && !lock.contains("name = \"aws-lc-sys\""),
        "aws-lc-rs is in Cargo.lock: a second rustls provider (see `cargo tree -i aws-lc-rs`)"
    );
}

/// A TLS server with a certificate the client refuses (an unknown issuer,
/// as for an expired or misnamed one): a configuration to fix, the same on
/// every attempt. It fails as a permanent `transport` failure — one
/// attempt, not a ladder of handshakes that each fail the same way, and
/// nothing the breaker counts against the route's health.
#[tokio::test]
async fn a_refused_certificate_is_permanent_not_retried() {
    let (port, handshakes) = seawall_test::tls::refused_certificate_server().await;
    let request = http::Request::post(format!("https://localhost:{port}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(common::chat_body(false))))
        .unwrap();
    let stack = common::short_stack().build(
        &seawall::classify::ClassifyLayer::openai(),
        common::service(),
    );
    let error = stack.oneshot(request).await.unwrap_err();
    let failure = seawall::core::Failure::find(&*error).expect("a seawall failure");
    assert_eq!(failure.code(), Code::Transport, "{failure:?}");
    assert_eq!(
        failure.class(),
        seawall::core::Class::Permanent,
        "{failure:?}"
    );
    assert!(
        failure.message().unwrap_or("").contains("certificate"),
        "{failure:?}"
    );
    assert_eq!(failure.receipt().map(|r| r.attempts.len()), Some(1));
    assert_eq!(handshakes.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// TLS settings added to [`client_builder`](seawall_reqwest::client_builder)
/// take effect: a deployment's own roots, a client identity, a minimum
/// version. Here the bluntest, `danger_accept_invalid_certs`: the
/// certificate the default refuses is accepted, the handshake completes,
/// and the call fails only because the server never answers HTTP.
#[tokio::test]
async fn tls_settings_added_to_the_builder_take_effect() {
    let (port, handshakes) = seawall_test::tls::refused_certificate_server().await;
    let client = seawall_reqwest::client_builder()
        .no_proxy()
        .danger_accept_invalid_certs(true)
        .build()
        .expect("a reqwest client");
    let request = http::Request::post(format!("https://localhost:{port}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(common::chat_body(false))))
        .unwrap();
    let error = seawall_reqwest::ReqwestService::new(client)
        .oneshot(request)
        .await
        .unwrap_err();
    assert!(
        matches!(error, seawall_reqwest::Error::Transport(_)),
        "the handshake passed, the connection closed after it: {error:?}"
    );
    // Past the connect (TCP and the handshake: `client error (Connect)`
    // when either fails): the request was sent and the peer hung up.
    let said = error.to_string();
    assert!(
        !said.contains("certificate") && !said.contains("(Connect)"),
        "{said}"
    );
    assert_eq!(handshakes.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// The TLS versions set on the builder are read: a minimum above the
/// maximum is refused when the client is built, not silently dropped.
#[tokio::test]
async fn a_minimum_tls_version_is_read() {
    // TLS 1.3 only: reqwest builds it over ring.
    seawall_reqwest::client_builder()
        .tls_version_min(reqwest::tls::Version::TLS_1_3)
        .build()
        .expect("a TLS 1.3-only client");
    // A maximum under the minimum leaves no version: reqwest refuses it,
    // which it can only do if it reads them.
    let error = seawall_reqwest::client_builder()
        .tls_version_min(reqwest::tls::Version::TLS_1_3)
        .tls_version_max(reqwest::tls::Version::TLS_1_2)
        .build()
        .expect_err("no TLS version left");
    assert!(error.is_builder(), "{error:?}");
}
