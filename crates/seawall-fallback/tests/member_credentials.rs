//! Whose credentials a route set's member sends: a member with a key of
//! its own sends only its own, never the caller's; a member without one
//! sends the caller's.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::HeaderMap;
use http::header::{AUTHORIZATION, COOKIE, HOST, HeaderName, HeaderValue};
use http_body_util::Full;
use seawall_core::{BoxError, Code, Failure, RouteId};
use seawall_fallback::{Member, RouteSetLayer};
use tower::{Layer, ServiceExt};

/// Where the test provider keeps the URI it was called with.
const URI_SEEN: HeaderName = HeaderName::from_static("x-test-uri");

/// The headers naming the caller's account, sent by the OpenAI SDKs when
/// `OPENAI_ORG_ID` / `OPENAI_PROJECT_ID` are set.
const ORGANIZATION: HeaderName = HeaderName::from_static("openai-organization");
const PROJECT: HeaderName = HeaderName::from_static("openai-project");

/// An AWS session token (sent beside a SigV4 signature) and the seawall
/// gateway's client token: credentials, though in no provider's key header.
const AWS_TOKEN: HeaderName = HeaderName::from_static("x-amz-security-token");
const GATEWAY_TOKEN: HeaderName = HeaderName::from_static("x-seawall-token");

/// What each call reached the provider with: its member and headers.
type Seen = Arc<Mutex<Vec<(String, HeaderMap)>>>;

/// A provider that refuses the key of member `refused` (401) and answers
/// every other, recording each request.
fn provider(
    seen: Seen,
    refused: &'static str,
) -> impl tower::Service<
    http::Request<()>,
    Response = http::Response<Full<Bytes>>,
    Error = BoxError,
    Future = impl Send,
> + Clone {
    tower::service_fn(move |request: http::Request<()>| {
        let route = request.extensions().get::<RouteId>().unwrap().to_string();
        let answer = if route == refused {
            Err(Failure::new(Code::Auth).with_status(401).into())
        } else {
            Ok(http::Response::new(Full::new(Bytes::from_static(b"ok"))))
        };
        let mut headers = request.headers().clone();
        // The URI as sent, kept beside the headers.
        headers.insert(
            URI_SEEN,
            HeaderValue::from_str(&request.uri().to_string()).unwrap(),
        );
        seen.lock().unwrap().push((route, headers));
        async move { answer }
    })
}

/// The caller's request, as async-openai sends it: its own OpenAI key and
/// the account it belongs to (and here a cookie, the `Host` a proxy
/// forwards and a key in the query, as Gemini's clients send it, an AWS
/// session token and a seawall gateway's token).
fn request() -> http::Request<()> {
    http::Request::post("https://api.openai.com/v1/chat/completions?key=caller-key&a=b")
        .header(AUTHORIZATION, "Bearer sk-caller")
        .header(ORGANIZATION, "org-caller")
        .header(PROJECT, "proj-caller")
        .header(COOKIE, "session=caller")
        .header(HOST, "api.openai.com")
        .header(AWS_TOKEN, "aws-session-caller")
        .header(GATEWAY_TOKEN, "gateway-token-caller")
        .body(())
        .unwrap()
}

/// The caller's request sent once per attempt, as the ladder replays it,
/// until member `until` is reached (at most eight attempts).
async fn attempts(set: &RouteSetLayer, seen: &Seen, refused: &'static str, until: &str) {
    let service = set.clone().layer(provider(seen.clone(), refused));
    for _ in 0..8 {
        let _ = service.clone().oneshot(request()).await;
        if seen.lock().unwrap().iter().any(|(route, _)| route == until) {
            return;
        }
    }
    panic!("member {until} never chosen");
}

#[tokio::test(start_paused = true)]
async fn a_member_with_its_own_key_never_gets_the_callers() {
    let api_key = HeaderName::from_static("api-key");
    let members = [
        Member::new("openai").header(AUTHORIZATION, HeaderValue::from_static("Bearer sk-member")),
        Member::new("azure")
            .origin("https://res.openai.azure.com")
            .unwrap()
            .header(api_key.clone(), HeaderValue::from_static("az-member")),
    ];
    let mut refused_first = 0;
    for seed in 0..4 {
        let set = RouteSetLayer::new(members.clone()).unwrap().seed(seed);
        let seen = Seen::default();
        // The OpenAI member's key is refused: the next attempt moves to
        // the Azure member.
        attempts(&set, &seen, "openai", "azure").await;
        refused_first += usize::from(seen.lock().unwrap()[0].0 == "openai");
        for (route, headers) in seen.lock().unwrap().iter() {
            assert!(headers.get(COOKIE).is_none(), "{route}: {headers:?}");
            assert!(headers.get(ORGANIZATION).is_none(), "{route}: {headers:?}");
            assert!(headers.get(PROJECT).is_none(), "{route}: {headers:?}");
            assert!(headers.get(AWS_TOKEN).is_none(), "{route}: {headers:?}");
            assert!(headers.get(GATEWAY_TOKEN).is_none(), "{route}: {headers:?}");
            let uri = headers[URI_SEEN].to_str().unwrap();
            assert!(uri.ends_with("/v1/chat/completions?a=b"), "{route}: {uri}");
            match route.as_str() {
                "openai" => {
                    assert_eq!(headers[AUTHORIZATION], "Bearer sk-member");
                    assert!(headers.get(&api_key).is_none(), "{headers:?}");
                }
                _ => {
                    assert_eq!(headers[&api_key], "az-member");
                    assert!(headers.get(AUTHORIZATION).is_none(), "{headers:?}");
                    assert_eq!(headers[HOST], "res.openai.azure.com");
                }
            }
        }
    }
    assert!(refused_first > 0, "no seed chose the OpenAI member first");
}

#[tokio::test(start_paused = true)]
async fn members_without_keys_send_the_callers_to_each() {
    let members = [
        Member::new("east")
            .origin("https://east.example.com")
            .unwrap(),
        Member::new("west")
            .origin("https://west.example.com")
            .unwrap()
            .header(
                HeaderName::from_static("x-region"),
                HeaderValue::from_static("west"),
            ),
    ];
    let set = RouteSetLayer::new(members).unwrap().seed(1);
    let seen = Seen::default();
    attempts(&set, &seen, "none", "east").await;
    attempts(&set, &seen, "east", "west").await;
    let seen = seen.lock().unwrap();
    for route in ["east", "west"] {
        let (_, headers) = seen.iter().find(|(known, _)| known == route).unwrap();
        assert_eq!(headers[AUTHORIZATION], "Bearer sk-caller", "{route}");
        assert_eq!(headers[COOKIE], "session=caller", "{route}");
        assert_eq!(headers[ORGANIZATION], "org-caller", "{route}");
        assert_eq!(headers[AWS_TOKEN], "aws-session-caller", "{route}");
        assert_eq!(headers[GATEWAY_TOKEN], "gateway-token-caller", "{route}");
        let uri = headers[URI_SEEN].to_str().unwrap();
        assert!(uri.ends_with("?key=caller-key&a=b"), "{route}: {uri}");
    }
}

/// A member whose own credential is an AWS session token brings
/// credentials: the caller's go, theirs alone is sent.
#[tokio::test(start_paused = true)]
async fn a_session_token_is_a_members_own_credential() {
    let members = [Member::new("bedrock")
        .origin("https://bedrock-runtime.us-east-1.amazonaws.com")
        .unwrap()
        .header(AWS_TOKEN, HeaderValue::from_static("aws-session-member"))];
    let set = RouteSetLayer::new(members).unwrap();
    let seen = Seen::default();
    attempts(&set, &seen, "none", "bedrock").await;
    let seen = seen.lock().unwrap();
    let (_, headers) = &seen[0];
    assert_eq!(headers[AWS_TOKEN], "aws-session-member");
    assert!(headers.get(AUTHORIZATION).is_none(), "{headers:?}");
    assert!(headers.get(GATEWAY_TOKEN).is_none(), "{headers:?}");
    let uri = headers[URI_SEEN].to_str().unwrap();
    assert!(uri.ends_with("/v1/chat/completions?a=b"), "{uri}");
}
