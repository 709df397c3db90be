//! A `reqwest::Client` fit to sit under seawall, and its TLS.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls_platform_verifier::BuilderVerifierExt;

/// The crypto provider of the whole workspace: rustls's `ring`, as the
/// hyper-rustls connector of `seawall chat` uses.
pub fn crypto_provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A rustls client configuration over [`crypto_provider`] (ring) that
/// verifies servers with the platform's verifier (the system's roots on
/// Linux), offering HTTP/1.1 by ALPN.
///
/// Built explicitly, so it needs no process-wide default provider. For a
/// builder of your own that must not depend on one
/// (`reqwest::ClientBuilder::tls_backend_preconfigured`); but a client
/// given a preconfigured TLS configuration uses it as it is: reqwest
/// then ignores every TLS setting of its builder (roots, identity,
/// `danger_accept_invalid_certs`, TLS versions). [`client_builder`] does
/// not use it, so that those settings take effect.
pub fn tls_config() -> Result<rustls::ClientConfig, rustls::Error> {
    let mut config = rustls::ClientConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()?
        .with_platform_verifier()?
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Installs ring as rustls's process-wide default provider, unless one is
/// installed already (then that one stays). Idempotent, and safe to call
/// from several threads at once.
///
/// reqwest's `rustls-no-provider` feature (the one this workspace uses, so
/// that aws-lc-rs is never built) panics when it builds a `reqwest::Client`
/// with its own TLS and finds no default: [`client_builder`]'s client is
/// one, and async-openai's `Client::new()` and `Client::with_config()`
/// build another. This crate's
/// constructors ([`client_builder`], [`client`],
/// [`ReqwestService::new`](crate::ReqwestService::new), `OpenAiService::new`,
/// `openai_client`) call it, so code that built any of them first needs no
/// call of its own: see the [crate docs](crate#tls-one-crypto-provider).
/// Call it yourself before an async-openai client built ahead of them.
///
/// To use another provider process-wide, install it before the first call
/// of any of these: they keep the one they find.
pub fn install_crypto_provider() {
    if CryptoProvider::get_default().is_none() {
        // An error means another thread installed one first: there is one.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// A `reqwest::ClientBuilder` set up to sit under seawall:
///
/// - redirects are **not followed** (`redirect::Policy::none()`): a 3xx
///   reaches the classifier, which fails it as `redirected` (the request
///   would carry its API key to another host);
/// - reqwest's own **retry is off** (`retry::never()`): reqwest 0.13
///   retries protocol NACKs by default, which would be a second ladder
///   under seawall's, invisible to its receipt;
/// - **no timeouts** (reqwest has none unless asked): seawall's deadline
///   layers and the stream guard own every bound;
/// - reqwest's own **decompression is off** (`no_gzip`, `no_brotli`,
///   `no_deflate`, `no_zstd`), whatever reqwest features the build turns
///   on: seawall's stack decodes answers itself;
/// - TLS by reqwest's **rustls** backend (`tls_backend_rustls`), over the
///   process default crypto provider, which this call makes ring unless
///   one is installed already ([`install_crypto_provider`]), and the
///   platform's verifier (the system's roots on Linux), as [`tls_config`];
/// - **HTTP/1.1 only** (`http1_only`): the one version this workspace
///   builds reqwest with, offered alone by ALPN whatever reqwest features
///   the build turns on, as before.
///
/// Add what your deployment needs (proxies, a user agent, pool settings,
/// and TLS: `add_root_certificate` for a corporate CA, `identity` for
/// mTLS, `tls_version_min`, `danger_accept_invalid_certs` for a test
/// server), but leave `timeout`, `read_timeout`, `connect_timeout` beyond
/// a generous connect bound, and `retry` alone: see the
/// [crate docs](crate#one-deadline-one-ladder). reqwest builds the TLS
/// configuration from those settings when the client is built; a
/// preconfigured one (`tls_backend_preconfigured`, e.g. [`tls_config`])
/// would replace them all, silently.
///
/// Building the client fails (a builder error, no panic) when no platform
/// verifier can be made.
pub fn client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    // reqwest's decoders are features, and features unify across a build:
    // any crate of the app that turns on reqwest's `gzip` (or `brotli`,
    // `deflate`, `zstd`) would have reqwest decode below seawall, and a
    // corrupt compressed body would surface as a reqwest body error, a
    // transport failure retried, not through seawall's own decompression
    // and its verdict. These exist whether the features are on or not.
    //
    // TLS is reqwest's own rustls configuration, built from the builder's
    // settings, not a preconfigured one: reqwest uses a preconfigured
    // configuration as it is given, and every TLS setting added to this
    // builder (a root, an identity, a version bound) was silently dropped,
    // so a deployment behind a corporate CA could not connect at all. It
    // needs the process default provider installed above. Named, so that
    // a native-tls feature turned on elsewhere in the build does not take
    // over. `http1_only` keeps the ALPN the preconfigured configuration
    // offered (HTTP/1.1 alone) should the build turn reqwest's `http2` on.
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        .no_gzip()
        .no_brotli()
        .no_deflate()
        .no_zstd()
        .tls_backend_rustls()
        .http1_only()
}

/// [`client_builder`], built.
pub fn client() -> Result<reqwest::Client, reqwest::Error> {
    client_builder().build()
}
