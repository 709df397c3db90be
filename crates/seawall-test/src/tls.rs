//! A TLS server whose certificate no client trusts: self-signed for
//! `localhost` and 127.0.0.1 (generated once with `openssl req -x509
//! -newkey ec`), as an expired, misnamed or unknown-issuer one is refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

const SELF_SIGNED_CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBnDCCAUGgAwIBAgIUKIgvbs14eMGjJqf3yRp92XW4sE0wCgYIKoZIzj0EAwIw\nFDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwMTE1NDkwNloYDzIxMjYxMTA3\nMTU0OTA2WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\nPQMBBwNCAAREG2bR/klcq8hK4ks2NR6WEf+P809eSA4NjowhxPurhpbsgw3Sarii\nhIBv5RDxg34yQHp8OcGBplV+HHkQfxUpo28wbTAdBgNVHQ4EFgQU+B8sEb9JKEgJ\n5DziCvm+Qwkuin0wHwYDVR0jBBgwFoAU+B8sEb9JKEgJ5DziCvm+Qwkuin0wDwYD\nVR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI\nzj0EAwIDSQAwRgIhANISs3wzeILPkL2dPlceeVG9lAnWZcHXT5qOTq34ZI8qAiEA\n+C2zdMRy8ACR+kud1COfhL4pbG37DlEj3WLFpu8cIjU=\n-----END CERTIFICATE-----\n";
const SELF_SIGNED_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgm2RFIs2yNuRp7Tsf\nHeEIbfcr2qA4WcIXD40H5aiCfyuhRANCAAREG2bR/klcq8hK4ks2NR6WEf+P809e\nSA4NjowhxPurhpbsgw3SariihIBv5RDxg34yQHp8OcGBplV+HHkQfxUp\n-----END PRIVATE KEY-----\n";

/// Serves TLS with the self-signed certificate on a free loopback port and
/// never answers an HTTP request (no client gets that far). Returns the
/// port and the count of connections accepted (one a handshake tried).
pub async fn refused_certificate_server() -> (u16, Arc<AtomicUsize>) {
    let certs = vec![CertificateDer::from_pem_slice(SELF_SIGNED_CERT.as_bytes()).expect("a PEM")];
    let key = PrivateKeyDer::from_pem_slice(SELF_SIGNED_KEY.as_bytes()).expect("a PEM key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("ring's protocol versions")
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .expect("a certificate and its key");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let port = listener.local_addr().expect("bound").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let _ = acceptor.accept(tcp).await;
            });
        }
    });
    (port, accepted)
}
