//! OpenAI-wire errors whose reading decides whether another route is
//! tried: a model or deployment the route lacks (whatever the status),
//! the image-safety block, and a request past the organisation's
//! tokens-per-minute limit — over HTTP and, where the Responses API can
//! declare them, in a stream.

use std::time::{Duration, SystemTime};

use seawall_core::provider::openai_responses::{declared_failure, error_event};
use seawall_core::provider::{ErrorContext, Provider, QuotaWall, classify_error};
use seawall_core::{Action, Class, Code, Failure, Scope};

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 32)
}

fn http(provider: Provider, status: u16, body: &str) -> Failure {
    let cx = ErrorContext {
        status: Some(status),
        ..ErrorContext::in_stream(now())
    };
    classify_error(provider, body.as_bytes(), cx)
}

/// What a failure is, as the layers above read it.
fn reading(failure: &Failure) -> (Code, Class, Action, bool) {
    (
        failure.code(),
        failure.class(),
        failure.action(),
        failure.moves_route(),
    )
}

const MODEL_NOT_FOUND: &str = r#"{"error":{"message":"The requested model 'gpt-4-1106-preview' does not exist.","type":"invalid_request_error","param":"model","code":"model_not_found"}}"#;

const AZURE_OPERATION_NOT_SUPPORTED: &str = r#"{"error":{"code":"OperationNotSupported","message":"The chatCompletion operation does not work with the specified model, gpt-5.1-codex. Please choose different model and try again. You can learn more about which models can be used with each operation here: https://go.microsoft.com/fwlink/?linkid=2197993."}}"#;

const AZURE_DEPLOYMENT_NOT_FOUND: &str = r#"{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}"#;

const MODERATION_BLOCKED: &str = r#"{"error":{"message":"Your request was rejected by the safety system. If you believe this is an error, contact us at help.openai.com and include the request ID req_1. safety_violations=[sexual].","type":"image_generation_user_error","param":null,"code":"moderation_blocked","moderation_details":{"moderation_stage":"output","categories":["sexual"]}}}"#;

const TPM_TOO_LARGE: &str = r#"{"error":{"message":"Request too large for gpt-4o in organization org-X on tokens per min (TPM): Limit 30000, Requested 35064. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;

/// A model or deployment this route lacks is the route's, sent as a 400
/// as much as a 404: another route may serve the model. The request is
/// not at fault, so the fallback and a route set move it.
#[test]
fn a_model_the_route_lacks_is_not_found_whatever_the_status() {
    let not_found = (Code::NotFound, Class::Permanent, Action::Surface, true);
    for provider in [Provider::OpenAi, Provider::OpenAiResponses] {
        for status in [400, 404] {
            let f = http(provider, status, MODEL_NOT_FOUND);
            assert_eq!(reading(&f), not_found, "{provider} {status}");
            assert_eq!(f.scope(), Scope::Route);
        }
    }
    for body in [AZURE_OPERATION_NOT_SUPPORTED, AZURE_DEPLOYMENT_NOT_FOUND] {
        for status in [400, 404] {
            let f = http(Provider::OpenAi, status, body);
            assert_eq!(reading(&f), not_found, "{status} {body}");
        }
    }
    // Another 400 of the same type stays the request's.
    let other = r#"{"error":{"message":"Unrecognized request argument supplied: foo","type":"invalid_request_error","param":null,"code":null}}"#;
    assert_eq!(
        reading(&http(Provider::OpenAi, 400, other)),
        (Code::BadRequest, Class::Permanent, Action::Surface, false)
    );
}

/// The Responses API declares a missing model in a stream too: an `error`
/// event (flat or nested) or a `response.failed`'s `error`.
#[test]
fn a_model_the_route_lacks_declared_in_a_stream_is_not_found() {
    let not_found = (Code::NotFound, Class::Permanent, Action::Surface, true);
    let flat = br#"{"type":"error","code":"model_not_found","message":"The requested model 'gpt-4-1106-preview' does not exist.","param":"model","sequence_number":1}"#;
    let nested = br#"{"type":"error","error":{"type":"invalid_request_error","code":"model_not_found","message":"The requested model 'gpt-4-1106-preview' does not exist.","param":"model"},"sequence_number":1}"#;
    for event in [&flat[..], &nested[..]] {
        let f = error_event(event, QuotaWall::default());
        assert_eq!(reading(&f), not_found, "{}", String::from_utf8_lossy(event));
    }
    let failed = declared_failure(
        Some("model_not_found"),
        Some("The requested model 'gpt-4-1106-preview' does not exist."),
        QuotaWall::default(),
    );
    assert_eq!(reading(&failed), not_found);
    let in_stream = classify_error(
        Provider::OpenAi,
        MODEL_NOT_FOUND.as_bytes(),
        ErrorContext::in_stream(now()),
    );
    assert_eq!(reading(&in_stream), not_found);
}

/// The image model's safety system blocked the request or its output: a
/// policy outcome, as its sibling `content_policy_violation` is.
#[test]
fn the_image_safety_block_is_content_filtered() {
    let filtered = (
        Code::ContentFiltered,
        Class::Policy,
        Action::Escalate,
        false,
    );
    for provider in [Provider::OpenAi, Provider::OpenAiResponses] {
        assert_eq!(
            reading(&http(provider, 400, MODERATION_BLOCKED)),
            filtered,
            "{provider}"
        );
    }
    let event = br#"{"type":"error","code":"moderation_blocked","message":"Your request was rejected by the safety system. safety_violations=[sexual].","param":null,"sequence_number":3}"#;
    assert_eq!(reading(&error_event(event, QuotaWall::default())), filtered);
    let failed = declared_failure(
        Some("moderation_blocked"),
        Some("Your request was rejected by the safety system."),
        QuotaWall::default(),
    );
    assert_eq!(reading(&failed), filtered);
}

/// A request larger than the organisation's tokens-per-minute limit never
/// fits this route, so it is not retried here; it is no mistake of the
/// model's to hand back; and another route (another organisation, another
/// provider) may have a higher limit, so it moves. It is not a quota
/// wall: the route stays open to smaller requests.
#[test]
fn a_request_past_the_tpm_limit_moves_and_is_never_retried_here() {
    let f = http(Provider::OpenAi, 429, TPM_TOO_LARGE);
    assert_eq!(
        reading(&f),
        (
            Code::RequestTooLarge,
            Class::Permanent,
            Action::Surface,
            true
        )
    );
    assert_eq!(f.retry_after(), None);
    assert!(!f.is_about_account());
    assert_eq!(f.cooldown(now()), None);
    // Echoed in a stream's error with no status of its own: the same.
    let echoed = br#"{"error":{"code":429,"message":"Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000."}}"#;
    let f = classify_error(Provider::OpenAi, echoed, ErrorContext::in_stream(now()));
    assert_eq!(
        (f.code(), f.class(), f.action()),
        (Code::RequestTooLarge, Class::Permanent, Action::Surface)
    );
    // A body over the server's size limit (413) is the request's shape:
    // every route refuses it.
    let f = http(Provider::OpenAi, 413, r#"{"error":{"message":"too big"}}"#);
    assert_eq!(
        reading(&f),
        (
            Code::RequestTooLarge,
            Class::Permanent,
            Action::Surface,
            false
        )
    );
    assert_eq!(f.scope(), Scope::Request);
}
