//! Header readings and rewrites more than one crate (or layer) makes.

use http::HeaderMap;
use http::Uri;
use http::header::{
    AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, COOKIE, HOST, HeaderName, HeaderValue,
    PROXY_AUTHORIZATION,
};
use http::uri::Authority;

/// The headers that carry credentials on a call to an LLM provider: the
/// bearer token (OpenAI and the many APIs shaped like it), Anthropic's
/// `x-api-key`, Azure OpenAI's `api-key`, Gemini's `x-goog-api-key`, and
/// the generic `proxy-authorization` and `cookie` (which an HTTPS proxy
/// tunnel would carry to the origin itself), AWS's `x-amz-security-token`
/// (the session token that goes with a SigV4 signature: Bedrock) and
/// `x-seawall-token`, the seawall gateway's own client token (a caller of
/// a gateway sends it; no other origin is meant to see it).
pub const CREDENTIAL_HEADERS: [HeaderName; 8] = [
    AUTHORIZATION,
    HeaderName::from_static("x-api-key"),
    HeaderName::from_static("api-key"),
    HeaderName::from_static("x-goog-api-key"),
    PROXY_AUTHORIZATION,
    COOKIE,
    HeaderName::from_static("x-amz-security-token"),
    HeaderName::from_static("x-seawall-token"),
];

/// The headers that name the account behind the caller's own key:
/// OpenAI's organisation and project (the SDKs send them whenever
/// `OPENAI_ORG_ID` or `OPENAI_PROJECT_ID` is set). Sent with another key,
/// OpenAI refuses the call (401 `mismatched_organization`) — which cools
/// the route for every caller — or bills another organisation of the key's
/// owner: they go wherever the caller's key goes, and nowhere else.
pub const ACCOUNT_HEADERS: [HeaderName; 2] = [
    HeaderName::from_static("openai-organization"),
    HeaderName::from_static("openai-project"),
];

/// Takes Gemini's `key` query parameter (an API key in the URL) out of
/// `uri`, for a request that goes with another key; the other parameters
/// stay as they were, in order.
pub fn remove_key_param(uri: &mut Uri) {
    let Some(query) = uri.query() else {
        return;
    };
    let is_key = |pair: &str| pair.split('=').next() == Some("key");
    if !query.split('&').any(is_key) {
        return;
    }
    let kept: Vec<&str> = query.split('&').filter(|pair| !is_key(pair)).collect();
    let path_and_query = match kept.is_empty() {
        true => uri.path().to_owned(),
        false => format!("{}?{}", uri.path(), kept.join("&")),
    };
    let mut parts = std::mem::take(uri).into_parts();
    // A path and what was a valid query, less some pairs: still valid.
    parts.path_and_query = path_and_query.parse().ok();
    if let Ok(rebuilt) = Uri::from_parts(parts) {
        *uri = rebuilt;
    }
}

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

/// The media type a message's `content-type` names: its value with the
/// parameters dropped and the blanks around it trimmed, case kept; `None`
/// when it has no `content-type`.
pub fn media_type(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(CONTENT_TYPE)?;
    Some(value.as_bytes().split(|&b| b == b';').next()?.trim_ascii())
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
    fn media_type_drops_parameters_and_blanks() {
        let mut headers = HeaderMap::new();
        assert_eq!(media_type(&headers), None);
        for (value, media) in [
            ("application/json", &b"application/json"[..]),
            (" APPLICATION/JSON ; charset=utf-8", b"APPLICATION/JSON"),
            ("text/event-stream;charset=utf-8", b"text/event-stream"),
            ("", b""),
        ] {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(value));
            assert_eq!(media_type(&headers), Some(media), "{value:?}");
        }
    }

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
        assert!(is_credential(&HeaderName::from_static(
            "x-amz-security-token"
        )));
        assert!(is_credential(&HeaderName::from_static("x-seawall-token")));
        assert!(!is_credential(&HeaderName::from_static(
            "anthropic-version"
        )));
    }

    #[test]
    fn the_key_param_alone_leaves_the_query() {
        let without = |uri: &'static str| {
            let mut uri = Uri::from_static(uri);
            remove_key_param(&mut uri);
            uri.to_string()
        };
        assert_eq!(
            without("https://g.example/v1beta/models/m:streamGenerateContent?alt=sse&key=AIza"),
            "https://g.example/v1beta/models/m:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            without("https://g.example/v1/x?key=AIza"),
            "https://g.example/v1/x"
        );
        assert_eq!(
            without("/v1/x?keys=1&key&a=b"),
            "/v1/x?keys=1&a=b",
            "only the parameter named key"
        );
        assert_eq!(without("/v1/x?a=b"), "/v1/x?a=b");
        assert_eq!(without("/v1/x"), "/v1/x");
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
