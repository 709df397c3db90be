//! In-process upstreams for the route set suites on the paused clock: one
//! provider that tells members apart by their `Authorization` key, the
//! answers it gives, and the members that carry those keys.

use std::convert::Infallible;

use bytes::Bytes;
use http::header::{AUTHORIZATION, HeaderValue};
use http_body_util::Full;
use seawall::core::recording::ReplayBody;
use seawall::fallback::Member;
use tower::Service;

/// The request an in-process upstream receives from a stack.
pub(crate) type Req = http::Request<ReplayBody<Full<Bytes>>>;

/// A 429 body with OpenAI's rate-limit code.
pub(crate) const RATE_LIMITED: &[u8] =
    br#"{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}"#;
/// A 503 body: the provider is overloaded.
pub(crate) const OVERLOADED: &[u8] = br#"{"error":{"message":"overloaded","type":"server_error"}}"#;
/// A finished chat completion.
pub(crate) const CHAT_COMPLETION: &[u8] = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"w8"},"finish_reason":"stop"}]}"#;

/// A JSON answer with `status`, `headers` and `body`.
pub(crate) fn json_response(
    status: u16,
    headers: &[(&str, &str)],
    body: &'static [u8],
) -> http::Response<Full<Bytes>> {
    let mut response = http::Response::builder().status(status);
    for (name, value) in headers {
        response = response.header(*name, *value);
    }
    response
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(body)))
        .unwrap()
}

/// A 200 chat completion.
pub(crate) fn chat_completion() -> http::Response<Full<Bytes>> {
    json_response(200, &[], CHAT_COMPLETION)
}

/// A 429 with `retry-after: {retry_after}`.
pub(crate) fn rate_limited(retry_after: &str) -> http::Response<Full<Bytes>> {
    json_response(429, &[("retry-after", retry_after)], RATE_LIMITED)
}

/// A 503 (`provider_unavailable`).
pub(crate) fn overloaded() -> http::Response<Full<Bytes>> {
    json_response(503, &[], OVERLOADED)
}

/// An upstream that answers each call with `answer(key)`, where `key` is
/// the request's whole `Authorization` value (`Bearer key-a`). `answer`
/// runs when the call is made, so it may count calls.
pub(crate) fn per_key<F>(
    answer: F,
) -> impl Service<Req, Response = http::Response<Full<Bytes>>, Error = Infallible, Future = impl Send>
+ Clone
+ Send
where
    F: Fn(&str) -> http::Response<Full<Bytes>> + Clone + Send + 'static,
{
    tower::service_fn(move |req: Req| {
        let key = req.headers()[AUTHORIZATION].to_str().unwrap();
        std::future::ready(Ok(answer(key)))
    })
}

/// Route set members named `names`, each sending `Authorization: Bearer
/// {name}`.
pub(crate) fn members(names: &[&str]) -> Vec<Member> {
    names
        .iter()
        .map(|key| {
            Member::new(*key).header(
                AUTHORIZATION,
                HeaderValue::try_from(format!("Bearer {key}")).unwrap(),
            )
        })
        .collect()
}
