//! `GET /metrics` tells the routes' names, traffic and failures: when the
//! gateway has a token, it asks for it as every other path but `/healthz`.

mod common;

use bytes::Bytes;
use common::*;
use seawall_chaos::ChaosServer;
use seawall_gateway::Wire;

fn get(url: &str, headers: &[(&str, &str)]) -> http::Request<ClientBody> {
    let mut builder = http::Request::get(url);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(full(Bytes::new())).unwrap()
}

#[tokio::test]
async fn metrics_ask_for_the_gateways_token() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = client();
    let url = gateway.url("/metrics");

    let (status, headers, body) = send(&client, get(&url, &[])).await;
    assert_eq!(status, 401);
    assert_eq!(header(&headers, "x-seawall-code"), "auth");
    // The error body, not the metrics: it names seawall's code
    // (`seawall_code`), never a metric family.
    let text = String::from_utf8_lossy(&body);
    assert!(
        !text.contains("# TYPE") && !text.contains("seawall_attempts"),
        "no metrics without the token: {text}"
    );
    let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["seawall_code"], "auth", "{text}");
    let (status, _, _) = send(
        &client,
        get(&url, &[("authorization", "Bearer wrong-token")]),
    )
    .await;
    assert_eq!(status, 401);
    // Anthropic's clients are answered in their shape.
    let (status, _, body) = send(&client, get(&url, &[("anthropic-version", "2023-06-01")])).await;
    assert_eq!(status, 401);
    assert!(String::from_utf8_lossy(&body).contains("\"type\":\"error\""));
    assert_eq!(gateway.gateway.stats().refused, 3);

    let bearer = format!("Bearer {TOKEN}");
    let (status, headers, _) = send(&client, get(&url, &[("authorization", &bearer)])).await;
    assert_eq!(status, 200);
    assert!(header(&headers, "content-type").starts_with("text/plain"));
    let (status, _, _) = send(&client, get(&url, &[("x-seawall-token", TOKEN)])).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn metrics_are_open_when_the_gateway_has_no_token() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut open = config(Wire::OpenAi, &[("main", &chaos)]);
    open.token_env = None;
    for route in &mut open.routes {
        route.key_env = None;
    }
    let gateway = Running::start(open).await;
    let (status, _, _) = send(&client(), get(&gateway.url("/metrics"), &[])).await;
    assert_eq!(status, 200);
}
