//! [`CanonicalEncodingLayer`]: writes a response's `content-encoding` the
//! way a decoder matches it, so an answer compressed under another spelling
//! is decoded, not refused.
//!
//! Content codings are case-insensitive, and a recipient ought to read
//! `x-gzip` as `gzip` (RFC 9110, 8.4.1); `identity` in a list means no
//! coding at all. tower-http's `Decompression` matches the header's bytes
//! exactly (`gzip`, `deflate`, `br`, `zstd`), so a server answering
//! `Content-Encoding: GZIP` went past it still compressed; the classifier
//! then refused the bytes as `protocol_violation`, retried, and each
//! attempt was billed. Put this layer under the decompression, next to
//! the client (`Stack::attempt` does):
//!
//! ```
//! use seawall_classify::CanonicalEncodingLayer;
//! use tower::ServiceBuilder;
//! use tower_http::decompression::DecompressionLayer;
//!
//! # let client = tower::service_fn(|_: http::Request<String>| async {
//! #     Ok::<_, std::convert::Infallible>(http::Response::new(String::new()))
//! # });
//! let client = ServiceBuilder::new()
//!     .layer(DecompressionLayer::new())
//!     .layer(CanonicalEncodingLayer::new())
//!     .service(client);
//! # let _ = client;
//! ```
//!
//! A header already canonical (the usual case: one lowercase coding) is
//! left as it is, read and never rewritten. Otherwise every line of it is
//! read as one list, each coding written canonically, `identity` dropped:
//! a list of several codings stays a list (no decoder here undoes two, so
//! the classifier refuses it), and one of nothing but `identity` is
//! removed.

mod future;
mod layer;
mod service;

pub use future::ResponseFuture;
pub use layer::CanonicalEncodingLayer;
pub use service::CanonicalEncoding;

use http::HeaderValue;
use http::header::{CONTENT_ENCODING, HeaderMap};

/// Writes `headers`' `content-encoding` canonically (see the module docs).
pub(crate) fn canonicalize(headers: &mut HeaderMap) {
    let mut lines = headers.get_all(CONTENT_ENCODING).iter();
    let Some(first) = lines.next() else {
        return;
    };
    if is_canonical(first.as_bytes()) && lines.next().is_none() {
        return;
    }
    // Every line of the header, in order: several lines are one list.
    let mut codings = Vec::new();
    let all = headers.get_all(CONTENT_ENCODING).iter();
    for coding in all.flat_map(|line| line.as_bytes().split(|&byte| byte == b',')) {
        let coding = coding.trim_ascii().to_ascii_lowercase();
        match &coding[..] {
            b"" | b"identity" => {}
            b"x-gzip" => codings.push(b"gzip".to_vec()),
            b"x-compress" => codings.push(b"compress".to_vec()),
            _ => codings.push(coding),
        }
    }
    if codings.is_empty() {
        headers.remove(CONTENT_ENCODING);
        return;
    }
    if let Ok(value) = HeaderValue::from_bytes(&codings.join(&b", "[..])) {
        headers.insert(CONTENT_ENCODING, value);
    }
}

/// One lowercase coding of letters, digits and `-`, not `identity` nor
/// an alias: what a decoder matches as it is.
fn is_canonical(value: &[u8]) -> bool {
    !value.is_empty()
        && value
            .iter()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || *byte == b'-')
        && !matches!(value, b"identity" | b"x-gzip" | b"x-compress")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(value: &str) -> Option<String> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_ENCODING, HeaderValue::from_str(value).unwrap());
        canonicalize(&mut headers);
        headers
            .get(CONTENT_ENCODING)
            .map(|value| value.to_str().unwrap().to_owned())
    }

    #[test]
    fn codings_are_written_as_decoders_match_them() {
        for (sent, read) in [
            ("gzip", Some("gzip")),
            ("GZIP", Some("gzip")),
            ("Gzip", Some("gzip")),
            ("x-gzip", Some("gzip")),
            ("X-GZIP", Some("gzip")),
            (" br ", Some("br")),
            ("identity, gzip", Some("gzip")),
            ("gzip, identity", Some("gzip")),
            ("Identity", None),
            ("identity", None),
            (",", None),
            ("gzip, GZIP", Some("gzip, gzip")),
            ("zstd", Some("zstd")),
            ("x-compress", Some("compress")),
            ("SDCH", Some("sdch")),
        ] {
            assert_eq!(canonical(sent).as_deref(), read, "{sent:?}");
        }
        // Two lines are one list: neither is lost.
        let mut two = HeaderMap::new();
        two.append(CONTENT_ENCODING, HeaderValue::from_static("GZIP"));
        two.append(CONTENT_ENCODING, HeaderValue::from_static("br"));
        canonicalize(&mut two);
        let lines: Vec<_> = two.get_all(CONTENT_ENCODING).iter().collect();
        assert_eq!(lines, ["gzip, br"]);
        let mut none = HeaderMap::new();
        canonicalize(&mut none);
        assert!(none.is_empty());
    }
}
