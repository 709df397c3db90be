//! Header readings and rewrites more than one crate (or layer) makes.

use http::HeaderMap;
use http::header::{
    AUTHORIZATION, CONTENT_LENGTH, COOKIE, HOST, HeaderName, HeaderValue, PROXY_AUTHORIZATION,
};
use http::uri::Authority;

/// The headers that carry credentials on a call to an LLM provider: the
/// bearer token (OpenAI and the many APIs shaped like it), Anthropic's
/// `x-api-key`, Azure OpenAI's `api-key`, Gemini's `x-goog-api-key`, and
/// the generic `proxy-authorization` and `cookie` (which an HTTPS proxy
/// tunnel would carry to the origin itself).
pub const CREDENTIAL_HEADERS: [HeaderName; 6] = [
    AUTHORIZATION,
    HeaderName::from_static("x-api-key"),
    HeaderName::from_static("api-key"),
    HeaderName::from_static("x-goog-api-key"),
    PROXY_AUTHORIZATION,
    COOKIE,
];

/// Whether `name` is one of [`CREDENTIAL_HEADERS`].
pub fn is_credential(name: &HeaderName) -> bool {
    CREDENTIAL_HEADERS.contains(name)
}

/// Points the `Host` header, when `headers` has one, at `authority`, the
/// origin the request now goes to. hyper's client adds `Host` only when it
/// is missing, so one the caller set (a proxy forwarding the request it
/// received) would otherwise name the old origin to the new one.
pub fn host_follows(headers: &mut HeaderMap, authority: &Authority) {
    if headers.contains_key(HOST)
        && let Ok(host) = HeaderValue::from_str(authority.as_str())
    {
        headers.insert(HOST, host);
    }
}

/// The length a message's `content-length` declares, when it declares one
/// that reads as a number (surrounding blanks allowed): `None` when the
/// header is missing or unreadable.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    let value = headers.get(CONTENT_LENGTH)?.to_str().ok()?;
    value.trim().parse().ok()
}

/// Whether a `content-type` value is gRPC's own: `application/grpc`,
/// alone or with a suffix (`+proto`, `+json`: the protocol's
/// `"application/grpc" [("+proto" / "+json" / {custom})]`), parameters
/// ignored, in any case. Not gRPC-Web (`application/grpc-web…`), nor a
/// type that only begins the same (`application/grpcx`).
pub fn is_grpc_media(value: &[u8]) -> bool {
    const GRPC: &[u8] = b"application/grpc";
    let essence = value
        .split(|&b| b == b';')
        .next()
        .unwrap_or(&[])
        .trim_ascii();
    essence.len() >= GRPC.len()
        && essence[..GRPC.len()].eq_ignore_ascii_case(GRPC)
        && matches!(essence.get(GRPC.len()), None | Some(b'+'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_media_is_grpcs_own_type_and_its_suffixes() {
        for grpc in [
            &b"application/grpc"[..],
            b"application/grpc+proto",
            b"Application/GRPC+json",
            b" application/grpc ; charset=utf-8",
        ] {
            assert!(is_grpc_media(grpc), "{}", String::from_utf8_lossy(grpc));
        }
        for other in [
            &b"application/grpc-web"[..],
            b"application/grpc-web-text+proto",
            b"application/grpcx",
            b"application/json",
            b"application/grp",
            b"",
        ] {
            assert!(!is_grpc_media(other), "{}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn a_host_header_follows_only_when_there_is_one() {
        let authority = Authority::from_static("other.example.com:8443");
        let mut headers = HeaderMap::new();
        host_follows(&mut headers, &authority);
        assert!(headers.get(HOST).is_none(), "hyper adds a missing one");
        headers.insert(HOST, HeaderValue::from_static("api.example.com"));
        host_follows(&mut headers, &authority);
        assert_eq!(headers[HOST], "other.example.com:8443");
    }

    #[test]
    fn credential_headers_are_known_by_name() {
        assert!(is_credential(&AUTHORIZATION));
        assert!(is_credential(&HeaderName::from_static("x-goog-api-key")));
        assert!(!is_credential(&HeaderName::from_static(
            "anthropic-version"
        )));
    }

    #[test]
    fn a_declared_length_is_read_as_a_number() {
        let length = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(CONTENT_LENGTH, HeaderValue::from_static(value));
            declared_length(&headers)
        };
        assert_eq!(length("0"), Some(0));
        assert_eq!(length("00"), Some(0));
        assert_eq!(length(" 12 "), Some(12));
        assert_eq!(length("twelve"), None);
        assert_eq!(length("-1"), None);
        assert_eq!(declared_length(&HeaderMap::new()), None);
    }
}
