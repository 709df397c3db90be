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
async fn a_tls_handshake_runs_and_its_failure_is_transport() {
    // A plain-HTTP server spoken to over https: the handshake (ring) runs and
    // fails, which the classifier reads as a transport failure.
    let chaos = common::chaos().await;
    let url = format!("https://{}/v1/chat/completions", chaos.addr());
    let request = http::Request::post(url)
        .body(Full::new(Bytes::from(common::chat_body(false))))
        .unwrap();
    let error = common::service().oneshot(request).await.unwrap_err();
    assert!(
        matches!(error, seawall_reqwest::Error::Transport(_)),
        "{error:?}"
    );
    let failure = seawall::classify::transport_failure(&error);
    assert_eq!(
        failure.map(|f| f.code()),
        Some(Code::Transport),
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

/// A self-signed certificate for `localhost` and 127.0.0.1 (generated once
/// with `openssl req -x509 -newkey ec`), for a server no verifier trusts.
const SELF_SIGNED_CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBnDCCAUGgAwIBAgIUKIgvbs14eMGjJqf3yRp92XW4sE0wCgYIKoZIzj0EAwIw\nFDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwMTE1NDkwNloYDzIxMjYxMTA3\nMTU0OTA2WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\nPQMBBwNCAAREG2bR/klcq8hK4ks2NR6WEf+P809eSA4NjowhxPurhpbsgw3Sarii\nhIBv5RDxg34yQHp8OcGBplV+HHkQfxUpo28wbTAdBgNVHQ4EFgQU+B8sEb9JKEgJ\n5DziCvm+Qwkuin0wHwYDVR0jBBgwFoAU+B8sEb9JKEgJ5DziCvm+Qwkuin0wDwYD\nVR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI\nzj0EAwIDSQAwRgIhANISs3wzeILPkL2dPlceeVG9lAnWZcHXT5qOTq34ZI8qAiEA\n+C2zdMRy8ACR+kud1COfhL4pbG37DlEj3WLFpu8cIjU=\n-----END CERTIFICATE-----\n";
const SELF_SIGNED_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgm2RFIs2yNuRp7Tsf\nHeEIbfcr2qA4WcIXD40H5aiCfyuhRANCAAREG2bR/klcq8hK4ks2NR6WEf+P809e\nSA4NjowhxPurhpbsgw3SariihIBv5RDxg34yQHp8OcGBplV+HHkQfxUp\n-----END PRIVATE KEY-----\n";

/// A TLS server with a certificate the client refuses (an unknown issuer,
/// as for an expired or misnamed one): a configuration to fix, the same on
/// every attempt. It fails as a permanent `transport` failure — one
/// attempt, not a ladder of handshakes that each fail the same way, and
/// nothing the breaker counts against the route's health.
#[tokio::test]
async fn a_refused_certificate_is_permanent_not_retried() {
    use rustls::pki_types::pem::PemObject;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let certs = vec![
        rustls::pki_types::CertificateDer::from_pem_slice(SELF_SIGNED_CERT.as_bytes()).unwrap(),
    ];
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(SELF_SIGNED_KEY.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let handshakes = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&handshakes);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let _ = acceptor.accept(tcp).await;
            });
        }
    });
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
    assert_eq!(handshakes.load(Ordering::SeqCst), 1);
}
