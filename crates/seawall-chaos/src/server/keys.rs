//! Faults chosen by the request's API key: one server can wall key A and
//! serve key B, as two accounts on one provider.

use http::HeaderMap;
use http::Uri;

/// Longest API key looked up, in bytes: a longer one matches nothing.
pub(crate) const MAX_KEY: usize = 512;

/// The API key a request carries, as each provider's clients send it:
/// `Authorization: Bearer KEY` (OpenAI), `x-api-key: KEY` (Anthropic),
/// `x-goog-api-key: KEY` or `?key=KEY` (Gemini). The first found, in that
/// order.
///
/// Not `seawall_internal::headers::CREDENTIAL_HEADERS`: this is where the
/// fault server reads an account's key from, in an order, `Authorization`
/// only as `Bearer`. The shared list is every header that may carry a
/// credential, a cookie or a proxy's among them; reading those as keys
/// would change which fault a request gets.
pub(crate) fn api_key<'a>(headers: &'a HeaderMap, uri: &'a Uri) -> Option<&'a str> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    let bearer = header("authorization").and_then(|value| {
        let (scheme, key) = value.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| key.trim())
    });
    let query = || {
        uri.query()?
            .split('&')
            .find_map(|pair| pair.strip_prefix("key="))
    };
    bearer
        .or_else(|| header("x-api-key"))
        .or_else(|| header("x-goog-api-key"))
        .or_else(query)
        .filter(|key| !key.is_empty() && key.len() <= MAX_KEY)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(headers: &[(&str, &str)], uri: &str) -> Option<String> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        api_key(&map, &uri.parse().unwrap()).map(str::to_owned)
    }

    #[test]
    fn every_provider_s_way_of_sending_a_key_is_read() {
        assert_eq!(
            key_of(&[("authorization", "Bearer sk-a")], "/v1/chat/completions").as_deref(),
            Some("sk-a")
        );
        assert_eq!(
            key_of(&[("x-api-key", "ant-b")], "/v1/messages").as_deref(),
            Some("ant-b")
        );
        assert_eq!(
            key_of(
                &[("x-goog-api-key", "g-c")],
                "/v1beta/models/m:generateContent"
            )
            .as_deref(),
            Some("g-c")
        );
        assert_eq!(
            key_of(&[], "/v1beta/models/m:generateContent?alt=sse&key=g-d").as_deref(),
            Some("g-d")
        );
        assert_eq!(key_of(&[("authorization", "Basic xyz")], "/v1/x"), None);
        assert_eq!(key_of(&[], "/v1/chat/completions"), None);
        let long = "k".repeat(MAX_KEY + 1);
        assert_eq!(key_of(&[("x-api-key", &long)], "/v1/messages"), None);
    }
}
