//! The preset stack around a hyper-util client, against a local
//! seawall-chaos server that fails the first attempt.
//!
//! ```text
//! cargo run --example quickstart
//! ```

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seawall::prelude::*;
use seawall_chaos::{ChaosServer, Fault};
use tower::ServiceExt;

#[tokio::main]
async fn main() -> Result<(), tower::BoxError> {
    // A provider that is overloaded once, then answers.
    let chaos = ChaosServer::builder().start().await?;
    chaos.script("openai", vec![Fault::status(503), Fault::ok()])?;

    // The quickstart: wrap any client service with the preset stack.
    let client = Client::builder(TokioExecutor::new()).build_http();
    let service = Stack::interactive().build(&ClassifyLayer::openai(), client);

    let request = http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
        )))?;
    let response = service.oneshot(request).await?;
    let receipt = response.extensions().get::<Receipt>().cloned();
    let body = response.into_body().collect().await?.to_bytes();
    println!("{}", String::from_utf8_lossy(&body));
    if let Some(receipt) = receipt {
        for attempt in &receipt.attempts {
            let code = attempt.code.map_or("ok", |c| c.as_str());
            println!(
                "attempt on {}: {code} (after {:?})",
                attempt.route, attempt.delay
            );
        }
    }
    Ok(())
}
