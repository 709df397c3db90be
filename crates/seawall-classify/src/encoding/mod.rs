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
//!
//! ## What the request asks for
//!
//! tower-http's decompression writes its own `accept-encoding` only when the
//! request has none. A caller's own (headers copied from a browser:
//! `gzip, deflate, br, zstd`) then reaches the server as it is, and a server
//! may answer in a coding nothing here decodes: every attempt fails as
//! `protocol_violation` and every attempt is billed. The caller reads the
//! decoded answer either way, so which coding travels is the stack's
//! business: with [`asking_only_for`](CanonicalEncodingLayer::asking_only_for)
//! a request that asks for any coding outside the decoded list (`*`
//! included; one weighted `q=0` asks for nothing) has its
//! `accept-encoding` replaced by that list. One that asks only for codings
//! in it, or for `identity`, is left as it is.

mod future;
mod layer;
mod service;

pub use future::ResponseFuture;
pub use layer::CanonicalEncodingLayer;
pub use service::CanonicalEncoding;

use http::HeaderValue;
use http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, HeaderMap};

/// Replaces `headers`' `accept-encoding` by `decoded` where it asks for a
/// coding outside that list (see the module docs).
pub(crate) fn ask_only_for(headers: &mut HeaderMap, decoded: &'static str) {
    let mut lines = headers.get_all(ACCEPT_ENCODING).iter();
    match (lines.next(), lines.next()) {
        (None, _) => return,
        // The decompression's own, the usual case: one comparison.
        (Some(only), None) if only.as_bytes() == decoded.as_bytes() => return,
        _ => {}
    }
    let asks_beyond = headers
        .get_all(ACCEPT_ENCODING)
        .iter()
        .flat_map(|line| line.as_bytes().split(|&byte| byte == b','))
        .any(|item| asks_for_unread(item, decoded));
    if asks_beyond {
        headers.insert(ACCEPT_ENCODING, HeaderValue::from_static(decoded));
    }
}

/// Whether one item of an `accept-encoding` list (`zstd;q=0.5`) asks for
/// a coding `decoded` does not name.
fn asks_for_unread(item: &[u8], decoded: &str) -> bool {
    let mut parts = item.split(|&byte| byte == b';');
    let coding = parts.next().unwrap_or_default().trim_ascii();
    let refused = parts.any(|parameter| {
        let parameter = parameter.trim_ascii();
        let weight = match parameter {
            [b'q' | b'Q', b'=', weight @ ..] => weight.trim_ascii(),
            _ => return false,
        };
        // `0`, `0.`, `0.0`, `0.000`: not acceptable (RFC 9110, 12.4.2).
        weight.first() == Some(&b'0') && weight[1..].iter().all(|&b| b == b'.' || b == b'0')
    });
    if refused || coding.is_empty() || coding.eq_ignore_ascii_case(b"identity") {
        return false;
    }
    let coding = alias_of(coding).unwrap_or(coding);
    !decoded
        .as_bytes()
        .split(|&byte| byte == b',')
        .any(|known| known.trim_ascii().eq_ignore_ascii_case(coding))
}

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
            _ => codings.push(alias_of(&coding).unwrap_or(&coding).to_vec()),
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

/// The coding an alias stands for (RFC 9110, 8.4.1: `x-gzip` is `gzip`,
/// `x-compress` is `compress`), any case.
fn alias_of(coding: &[u8]) -> Option<&'static [u8]> {
    if coding.eq_ignore_ascii_case(b"x-gzip") {
        Some(b"gzip")
    } else if coding.eq_ignore_ascii_case(b"x-compress") {
        Some(b"compress")
    } else {
        None
    }
}

/// One lowercase coding of letters, digits and `-`, not `identity` nor
/// an alias: what a decoder matches as it is.
fn is_canonical(value: &[u8]) -> bool {
    !value.is_empty()
        && value
            .iter()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || *byte == b'-')
        && value != b"identity"
        && alias_of(value).is_none()
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

    fn asked(lines: &[&str]) -> Vec<String> {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append(ACCEPT_ENCODING, HeaderValue::from_str(line).unwrap());
        }
        ask_only_for(&mut headers, "gzip,deflate,br");
        let all = headers.get_all(ACCEPT_ENCODING).iter();
        all.map(|value| value.to_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn a_request_asks_only_for_what_is_decoded() {
        let ours = ["gzip,deflate,br"];
        for kept in [
            &["gzip,deflate,br"][..],
            &["gzip"],
            &["br, GZIP;q=0.5"],
            &["x-gzip"],
            &["identity"],
            &["gzip", "br"],
            &["zstd;q=0, gzip"],
            &["zstd; Q=0.000, br"],
            &["*;q=0, identity"],
            &[","],
        ] {
            assert_eq!(asked(kept), kept, "{kept:?}");
        }
        for replaced in [
            &["gzip, deflate, br, zstd"][..],
            &["zstd"],
            &["ZSTD;q=0.1"],
            &["*"],
            &["gzip", "zstd"],
            &["compress"],
            &["zstd;q=0.01"],
        ] {
            assert_eq!(asked(replaced), ours, "{replaced:?}");
        }
        let mut none = HeaderMap::new();
        ask_only_for(&mut none, "gzip,deflate,br");
        assert!(
            none.is_empty(),
            "a request that asks for nothing is left so"
        );
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
