//! Faults chosen by the request's API key: one server walls key A and
//! serves key B, whichever way the provider's clients send the key.

mod common;

use common::*;
use seawall_chaos::{ChaosServer, Fault, FaultSource};

fn fault(text: &str) -> Fault {
    text.parse().unwrap()
}

#[tokio::test]
async fn one_server_walls_key_a_and_serves_key_b() {
    let chaos = ChaosServer::builder()
        .fault_for_key("sk-a", fault("status;code=401"))
        .start()
        .await
        .unwrap();
    let addr = chaos.addr();
    let walled = post(
        addr,
        OPENAI,
        &[("authorization", "Bearer sk-a")],
        OPENAI_UNARY_BODY,
    )
    .await;
    assert_eq!(walled.status, 401);
    let served = post(
        addr,
        OPENAI,
        &[("authorization", "Bearer sk-b")],
        OPENAI_UNARY_BODY,
    )
    .await;
    assert_eq!(served.status, 200);
    // The key's fault wins over the request's own header.
    let header_too = post(
        addr,
        OPENAI,
        &[("authorization", "Bearer sk-a"), ("x-chaos-fault", "ok")],
        OPENAI_UNARY_BODY,
    )
    .await;
    assert_eq!(header_too.status, 401);
    // Anthropic's and Gemini's ways of sending a key.
    chaos.fault_for_key("ant-a", fault("status;code=529"));
    chaos.fault_for_key("g-a", fault("status;code=429;retry_after=7"));
    let anthropic = post(
        addr,
        ANTHROPIC,
        &[("x-api-key", "ant-a")],
        ANTHROPIC_UNARY_BODY,
    )
    .await;
    assert_eq!(anthropic.status, 529);
    let gemini = post(
        addr,
        GEMINI_UNARY,
        &[("x-goog-api-key", "g-a")],
        GEMINI_BODY,
    )
    .await;
    assert_eq!(gemini.status, 429);
    // Gemini's wait is in the body's RetryInfo, never a header.
    assert_eq!(gemini.header("retry-after"), None);
    let body = gemini.json();
    let retry = body["error"]["details"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["@type"] == "type.googleapis.com/google.rpc.RetryInfo");
    assert_eq!(retry.map(|d| &d["retryDelay"]), Some(&"7s".into()));
    let in_query = format!("{GEMINI_UNARY}?key=g-a");
    assert_eq!(post(addr, &in_query, &[], GEMINI_BODY).await.status, 429);

    let sources: Vec<_> = chaos
        .journal()
        .iter()
        .map(|row| (row.status, row.fault_source))
        .collect();
    assert_eq!(
        sources,
        [
            (Some(401), FaultSource::Key),
            (Some(200), FaultSource::Default),
            (Some(401), FaultSource::Key),
            (Some(529), FaultSource::Key),
            (Some(429), FaultSource::Key),
            (Some(429), FaultSource::Key),
        ]
    );
    // A reset keeps them; clearing does not.
    chaos.reset();
    let again = post(
        addr,
        OPENAI,
        &[("authorization", "Bearer sk-a")],
        OPENAI_UNARY_BODY,
    )
    .await;
    assert_eq!(again.status, 401);
    chaos.clear_key_faults();
    let cleared = post(
        addr,
        OPENAI,
        &[("authorization", "Bearer sk-a")],
        OPENAI_UNARY_BODY,
    )
    .await;
    assert_eq!(cleared.status, 200);
}

#[tokio::test]
async fn a_script_still_comes_first() {
    let chaos = ChaosServer::builder()
        .fault_for_key("sk-a", fault("status;code=401"))
        .start()
        .await
        .unwrap();
    chaos
        .script("openai", vec![fault("status;code=503")])
        .unwrap();
    let bearer = [("authorization", "Bearer sk-a")];
    assert_eq!(
        post(chaos.addr(), OPENAI, &bearer, OPENAI_UNARY_BODY)
            .await
            .status,
        503
    );
    assert_eq!(
        post(chaos.addr(), OPENAI, &bearer, OPENAI_UNARY_BODY)
            .await
            .status,
        401
    );
}

#[tokio::test]
async fn the_admin_route_sets_and_removes_a_key_s_fault() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let addr = chaos.addr();
    let set = post(
        addr,
        "/_chaos/key",
        &[],
        r#"{"key":"sk-a","fault":"status;code=429;kind=insufficient_quota"}"#,
    )
    .await;
    assert_eq!(set.status, 200);
    assert_eq!(set.json(), serde_json::json!({"set": true}));
    let bearer = [("authorization", "Bearer sk-a")];
    let walled = post(addr, OPENAI, &bearer, OPENAI_UNARY_BODY).await;
    assert_eq!(walled.status, 429);
    assert!(walled.text().contains("insufficient_quota"));

    let bad = post(addr, "/_chaos/key", &[], r#"{"key":"sk-a","fault":"nope"}"#).await;
    assert_eq!(bad.status, 400);
    let empty = post(addr, "/_chaos/key", &[], r#"{"key":"","fault":"ok"}"#).await;
    assert_eq!(empty.status, 400);

    let removed = post(addr, "/_chaos/key", &[], r#"{"key":"sk-a","fault":null}"#).await;
    assert_eq!(removed.json(), serde_json::json!({"set": false}));
    assert_eq!(
        post(addr, OPENAI, &bearer, OPENAI_UNARY_BODY).await.status,
        200
    );
}
