//! client → gateway → seawall-chaos, over loopback: one model's rate limit
//! on a route leaves the route's other models served.

mod common;

use common::*;
use http_body_util::BodyExt;
use seawall_chaos::ChaosServer;
use seawall_gateway::Wire;

const MODEL_A: &str = r#"{"model":"gpt-a","messages":[{"role":"user","content":"hi"}]}"#;
const MODEL_B: &str = r#"{"model":"gpt-b","messages":[{"role":"user","content":"hi"}]}"#;

async fn send(request: http::Request<ClientBody>) -> (http::StatusCode, String) {
    let response = client().request(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// gpt-a meets OpenAI's per-model rate limit ("Rate limit reached for
/// gpt-a in organization …", ten minutes): gpt-b is served at once over
/// the same route, with no fallback to hide a refusal. (Whether gpt-a's
/// next call is held back depends on its model being known before its
/// body is sent: the breaker's tests hold that part.)
#[tokio::test]
async fn one_models_rate_limit_leaves_another_model_served() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let url = gateway.url(path(Wire::OpenAi));

    let (status, body) = send(post(
        &url,
        MODEL_A,
        &[("x-chaos-fault", "status;code=429;retry_after=600")],
    ))
    .await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("Rate limit reached for gpt-a"), "{body}");
    let sent = chaos.journal().len();

    let (status, body) = send(post(&url, MODEL_B, &[])).await;
    assert_eq!(status, 200, "gpt-b is served after gpt-a's limit: {body}");
    assert_eq!(chaos.journal().len(), sent + 1, "gpt-b was sent");
}

/// gpt-a's next call after its limit is refused by the gateway without a
/// call, and the refusal names gpt-a, not the route: the client's other
/// models are served, so "route main cooling" would send its operator to
/// the wrong place.
#[tokio::test]
async fn a_models_cooldown_refusal_names_the_model() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let url = gateway.url(path(Wire::OpenAi));

    let (status, body) = send(post(
        &url,
        MODEL_A,
        &[("x-chaos-fault", "status;code=429;retry_after=600")],
    ))
    .await;
    assert_eq!(status, 429, "{body}");
    let sent = chaos.journal().len();

    let response = client().request(post(&url, MODEL_A, &[])).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(
        chaos.journal().len(),
        sent,
        "gpt-a is not sent again: {body}"
    );
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("route_cooling_down"), "{body}");
    assert!(
        body.contains("model gpt-a cooling down on route main"),
        "the refusal names the model: {body}"
    );
    assert!(headers.contains_key("retry-after"), "{headers:?}");
}
