//! Error answers whose body nothing decoded: a coding the decompression
//! does not know, or bytes its decoder refused. The status and headers
//! decide; the body is not read for hints it may not hold.

mod common;

use std::convert::Infallible;

use common::{Chunks, expect, found, response, through};
use http::{Request, Response};
use seawall_classify::ClassifyLayer;
use seawall_core::{Action, Class, Code};
use tower::{Layer, ServiceExt, service_fn};
use tower_http::decompression::DecompressionLayer;

/// OpenAI's answer when the account's quota is spent: a wall, not a wait,
/// when it is read.
const QUOTA: &str = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;

/// A 429 labelled with `coding`, its bytes the quota answer in plain text.
async fn labelled(coding: &str) -> seawall_core::Failure {
    let answer = response(
        429,
        &[
            ("content-type", "application/json"),
            ("content-encoding", coding),
        ],
        QUOTA,
    );
    let error = through(&ClassifyLayer::openai(), answer)
        .await
        .expect_err("a 429");
    found(&error).clone()
}

/// Bytes under a coding nothing here decodes are not the answer's text:
/// read as it, a rate limit became a spent quota (or a garbled one lost
/// its hints without a word). The 429 alone decides, and says why.
#[tokio::test]
async fn an_error_body_still_encoded_is_not_read() {
    for coding in ["zstd", "gzip, br", "compress"] {
        let failure = labelled(coding).await;
        expect(Class::Transient, Code::RateLimited, Action::Retry).check(coding, &failure);
        let message = failure.message().unwrap_or_default();
        assert!(
            message.contains(&format!("error body encoded ({coding}), not read")),
            "{coding}: {message}"
        );
    }
}

/// A gzip body the decoder refuses: what it made of the bytes is no text
/// to read, and the verdict says the body could not be decoded.
#[tokio::test]
async fn an_error_body_its_decoder_refuses_is_not_read() {
    // A gzip header, then bytes no deflate stream starts with.
    let mut corrupt = vec![0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0x03];
    corrupt.extend([0xff; 32]);
    let mut answer = Some(
        Response::builder()
            .status(429)
            .header("content-type", "application/json")
            .header("content-encoding", "gzip")
            .body(Chunks::new([corrupt]))
            .unwrap(),
    );
    let inner = service_fn(move |_: Request<()>| {
        let answer = answer.take().expect("one call");
        async move { Ok::<_, Infallible>(answer) }
    });
    let service = ClassifyLayer::openai().layer(DecompressionLayer::new().layer(inner));
    let error = service.oneshot(Request::new(())).await.expect_err("a 429");
    let failure = found(&error);
    expect(Class::Transient, Code::RateLimited, Action::Retry).check("corrupt gzip", failure);
    let message = failure.message().unwrap_or_default();
    assert!(
        message.contains("error body could not be decoded (") && message.contains("not read"),
        "{message}"
    );
}
