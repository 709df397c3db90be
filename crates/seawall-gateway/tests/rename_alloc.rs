//! A route that renames the model costs the body's bytes, not a value
//! tree of them: a hostile client pads its body to the cap with an array
//! of zeros and escapes both the key and the name, which the gateway
//! once answered by reading the whole body into `serde_json::Value`s
//! (16 to 32 times its size, per route tried).

mod common;

use std::alloc::System;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::{TOKEN, config_over, env};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use seawall_gateway::{Gateway, Wire};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::ServiceExt;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const ANSWER: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-renamed","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;

/// An upstream that keeps each request body's frames as they came (no
/// copy: what the gateway sent is put together after the count) and
/// answers one chat completion.
async fn upstream(bodies: Arc<Mutex<Vec<Vec<Bytes>>>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let bodies = Arc::clone(&bodies);
            let service = hyper::service::service_fn(move |request: http::Request<_>| {
                let bodies = Arc::clone(&bodies);
                async move {
                    let mut body: hyper::body::Incoming = request.into_body();
                    let mut frames = Vec::new();
                    while let Some(frame) = body.frame().await {
                        if let Ok(data) = frame?.into_data() {
                            frames.push(data);
                        }
                    }
                    bodies.lock().unwrap().push(frames);
                    let answer = http::Response::builder()
                        .header("content-type", "application/json")
                        .body(Full::new(Bytes::from_static(ANSWER.as_bytes())))
                        .expect("a valid response");
                    Ok::<_, hyper::Error>(answer)
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_renamed_padded_body_costs_a_few_times_its_size() {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let base = upstream(Arc::clone(&bodies)).await;
    let mut config = config_over(Wire::OpenAi, &base);
    config.routes[0].model = Some("gpt-renamed".into());
    let cap = config.max_body_bytes;
    let gateway = Gateway::with_env(config, env).unwrap().router();

    // Key and name escaped: no literal `"model"` for a byte search to
    // find. Padded to just under the cap.
    let head = r#"{"mod\u0065l":"gpt\u002d4o","messages":[{"role":"user","content":"hi"}],"pad":["#;
    let mut body = String::with_capacity(cap);
    body.push_str(head);
    while body.len() + 4 < cap {
        body.push_str("0,");
    }
    body.push_str("0]}");
    let sent = body.len();
    let body = Bytes::from(body);
    let request = || {
        http::Request::post("/v1/chat/completions")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(axum::body::Body::new(Full::new(body.clone())))
            .unwrap()
    };
    // Warm-up: the upstream connection, lazily built statics.
    let response = gateway.clone().oneshot(request()).await.unwrap();
    assert_eq!(response.status(), 200);
    bodies.lock().unwrap().clear();

    let region = Region::new(GLOBAL);
    let response = gateway.clone().oneshot(request()).await.unwrap();
    let status = response.status();
    let answer = response.into_body().collect().await.unwrap().to_bytes();
    let allocated = region.change().bytes_allocated;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    assert!(
        allocated < 4 * sent,
        "{allocated} bytes allocated for a body of {sent}"
    );

    // What the route received: the new name, every other member as sent.
    let received: Vec<u8> = bodies.lock().unwrap().concat().concat();
    let received: serde_json::Value = serde_json::from_slice(&received).unwrap();
    let mut expected: serde_json::Value = serde_json::from_slice(&body).unwrap();
    expected["model"] = "gpt-renamed".into();
    assert_eq!(received, expected);
}
