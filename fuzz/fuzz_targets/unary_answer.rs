//! The unary answer check of `seawall_classify`, through its public API:
//! `ClassifyLayer::{openai, anthropic, gemini}()` over a service that
//! answers `200 application/json` with the fuzz bytes. No panic, and the
//! outcome is a delivered response whose body is the answer, unchanged, or
//! an error that carries a `seawall_core::Failure`.
//!
//! Input: the first byte picks the provider (modulo 3), the rest is the
//! body.
#![no_main]

use std::convert::Infallible;
use std::sync::OnceLock;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use libfuzzer_sys::fuzz_target;
use seawall_classify::ClassifyLayer;
use seawall_core::Failure;
use tower::{Layer, ServiceExt, service_fn};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, answer)) = data.split_first() else {
        return;
    };
    let layer = match selector % 3 {
        0 => ClassifyLayer::openai(),
        1 => ClassifyLayer::anthropic(),
        _ => ClassifyLayer::gemini(),
    };
    let answer = Bytes::copy_from_slice(answer);
    let body = answer.clone();
    let provider = service_fn(move |_: Request<()>| {
        let body = body.clone();
        async move {
            Ok::<_, Infallible>(
                Response::builder()
                    .status(StatusCode::OK)
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Full::new(body))
                    .expect("a valid response"),
            )
        }
    });
    let request = Request::post("http://provider.invalid/v1/chat")
        .body(())
        .expect("a valid request");
    runtime().block_on(async move {
        match layer.layer(provider).oneshot(request).await {
            Ok(response) => {
                assert!(response.status().is_success());
                match response.into_body().collect().await {
                    Ok(delivered) => assert_eq!(delivered.to_bytes(), answer),
                    Err(error) => assert!(
                        Failure::find(&*error).is_some(),
                        "a body error without a Failure: {error:?}"
                    ),
                }
            }
            Err(error) => assert!(
                Failure::find(&*error).is_some(),
                "an error without a Failure: {error:?}"
            ),
        }
    });
});
