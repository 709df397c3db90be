//! OpenAI errors that condemn the route, not the request, move it to the
//! fallback as the classifier reads them: a model the primary lacks,
//! answered as a 400, and a request over the primary organisation's
//! tokens-per-minute limit. A plain 400 stays with the primary.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use common::{request, scripted};
use seawall_core::provider::{ErrorContext, Provider, classify_error};
use seawall_core::{Code, Failure, RouteId};
use seawall_fallback::{FallbackLayer, FallbackRoute};
use tower::{Layer, ServiceExt};

const MODEL_NOT_FOUND: &str = r#"{"error":{"message":"The requested model 'gpt-4-1106-preview' does not exist.","type":"invalid_request_error","param":"model","code":"model_not_found"}}"#;

const TPM_TOO_LARGE: &str = r#"{"error":{"message":"Request too large for gpt-4o in organization org-X on tokens per min (TPM): Limit 30000, Requested 35064. The input or output tokens must be reduced in order to run successfully.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;

const BAD_REQUEST: &str = r#"{"error":{"message":"Unrecognized request argument supplied: foo","type":"invalid_request_error","param":null,"code":null}}"#;

/// The primary's answer as the classifier reads it.
fn openai(status: u16, body: &'static str) -> impl Fn(usize) -> Option<Failure> + Send + Sync {
    move |_| {
        let cx = ErrorContext {
            status: Some(status),
            ..ErrorContext::in_stream(SystemTime::now())
        };
        Some(classify_error(Provider::OpenAi, body.as_bytes(), cx))
    }
}

/// How many calls the primary and the fallback took, and whether the
/// call succeeded.
async fn run(status: u16, body: &'static str) -> (usize, usize, Result<(), Code>) {
    let (primary_calls, spare_calls) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let primary = scripted(&primary_calls, openai(status, body));
    let spare = FallbackRoute::new(scripted(&spare_calls, |_| None)).route(RouteId::new("spare"));
    let outcome = FallbackLayer::chain([spare])
        .layer(primary)
        .oneshot(request(None))
        .await
        .map(drop)
        .map_err(|error| Failure::find(&*error).expect("a seawall failure").code());
    (
        primary_calls.load(Ordering::SeqCst),
        spare_calls.load(Ordering::SeqCst),
        outcome,
    )
}

#[tokio::test]
async fn a_model_the_primary_lacks_answered_as_a_400_moves_to_the_fallback() {
    assert_eq!(run(400, MODEL_NOT_FOUND).await, (1, 1, Ok(())));
}

#[tokio::test]
async fn a_request_past_the_primarys_tpm_limit_moves_to_the_fallback() {
    assert_eq!(run(429, TPM_TOO_LARGE).await, (1, 1, Ok(())));
}

#[tokio::test]
async fn a_bad_request_stays_with_the_primary() {
    assert_eq!(run(400, BAD_REQUEST).await, (1, 0, Err(Code::BadRequest)));
}
