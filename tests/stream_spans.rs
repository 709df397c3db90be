//! A streamed attempt's span lives in the body until the body ends: the
//! finish reason, the usage and an interruption that come after the headers
//! are recorded on it. A resume opens one span of its own, with the same
//! field names, parent of the continuation's operation.

mod common;

use common::spans::{Capture, Captured, run};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use seawall::resume::ResumeLayer;
use std::sync::{Arc, Mutex};
use tower::ServiceExt;

use tracing::Instrument;
use tracing_subscriber::prelude::*;

fn named<'a>(spans: &'a [(u64, Captured)], name: &str) -> Vec<&'a (u64, Captured)> {
    spans.iter().filter(|(_, s)| s.name == name).collect()
}

/// The attempts under the operation `op`, in order.
fn attempts_of(spans: &[(u64, Captured)], op: u64) -> Vec<Captured> {
    let mut attempts: Vec<Captured> = spans
        .iter()
        .filter(|(_, s)| s.name == "attempt" && s.parent == Some(op))
        .map(|(_, s)| s.clone())
        .collect();
    attempts.sort_by_key(|s| s.field("seawall.attempt"));
    attempts
}

fn openai_stream(base: &str) -> http::Request<Full<Bytes>> {
    http::Request::post(format!("{base}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"count"}]}"#,
        )))
        .unwrap()
}

#[test]
fn a_retried_streams_usage_and_finish_are_recorded_on_its_attempt_when_the_body_ends() {
    let capture = Capture::default();
    let (at_headers, after_body) = run(&capture, async {
        let chaos = common::chaos_scripted(&["status;code=503", "ok"]).await;
        let service = common::short_stack().build(&ClassifyLayer::openai(), common::client());
        let response = service
            .oneshot(openai_stream(&chaos.base_url()))
            .await
            .unwrap();
        let at_headers = capture.spans();
        let text = response.into_body().collect().await.unwrap().to_bytes();
        assert!(String::from_utf8_lossy(&text).contains("w8"));
        (at_headers, capture.spans())
    });

    // When the response reached the caller the stream was still being
    // read: its attempt's span open, no usage on it yet.
    let (op_id, _) = named(&at_headers, "operation")[0];
    let attempts = attempts_of(&at_headers, *op_id);
    assert_eq!(attempts.len(), 2, "{at_headers:#?}");
    assert!(!attempts[1].closed, "the streamed attempt's span is open");
    assert_eq!(attempts[1].field("gen_ai.usage.output_tokens"), "");
    assert_eq!(attempts[1].field("gen_ai.response.finish_reasons"), "");

    let operations = named(&after_body, "operation");
    assert_eq!(operations.len(), 1, "{after_body:#?}");
    let (op_id, op) = operations[0];
    let attempts = attempts_of(&after_body, *op_id);
    assert_eq!(attempts.len(), 2, "{after_body:#?}");
    assert_eq!(attempts[0].field("error.type"), "provider_unavailable");
    assert_eq!(attempts[0].field("gen_ai.usage.output_tokens"), "");
    let streamed = &attempts[1];
    assert!(
        streamed.closed,
        "closed once the body ended and was dropped"
    );
    assert_eq!(streamed.field("gen_ai.response.finish_reasons"), "stop");
    assert_eq!(streamed.field("gen_ai.usage.output_tokens"), "8");
    assert!(
        streamed
            .field("gen_ai.usage.input_tokens")
            .parse::<u64>()
            .unwrap()
            > 0
    );
    assert_eq!(streamed.field("error.type"), "");
    assert_eq!(streamed.field("otel.status_code"), "");
    // The operation's span says how the answer ended too.
    assert_eq!(op.field("gen_ai.usage.output_tokens"), "8");
    assert_eq!(op.field("gen_ai.response.finish_reasons"), "stop");
    assert_eq!(op.field("error.type"), "");
}

#[test]
fn a_single_streams_usage_at_its_end_is_on_its_attempt_span() {
    let capture = Capture::default();
    run(&capture, async {
        let chaos = common::chaos().await;
        let service = common::short_stack().build(&ClassifyLayer::anthropic(), common::client());
        let request = http::Request::post(format!("{}/v1/messages", chaos.base_url()))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(
                br#"{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"count"}]}"#,
            )))
            .unwrap();
        let response = service.oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    });
    let spans = capture.spans();
    let (op_id, op) = named(&spans, "operation")[0];
    assert_eq!(op.field("gen_ai.provider.name"), "anthropic");
    let attempts = attempts_of(&spans, *op_id);
    assert_eq!(attempts.len(), 1, "{spans:#?}");
    assert_eq!(attempts[0].field("gen_ai.usage.output_tokens"), "8");
    assert_eq!(
        attempts[0].field("gen_ai.response.finish_reasons"),
        "end_turn"
    );
    assert_eq!(attempts[0].field("error.type"), "");
}

#[test]
fn an_interruption_after_content_is_the_error_of_its_attempt_span() {
    let capture = Capture::default();
    run(&capture, async {
        let chaos = common::chaos().await;
        chaos
            .script("openai", vec![common::fault("reset_after;tokens=3")])
            .unwrap();
        let service = common::short_stack().build(&ClassifyLayer::openai(), common::client());
        let response = service
            .oneshot(openai_stream(&chaos.base_url()))
            .await
            .unwrap();
        let error = response.into_body().collect().await.unwrap_err();
        let failure = seawall::core::Failure::find(&*error).unwrap();
        assert_eq!(failure.code().as_str(), "stream_interrupted");
    });
    let spans = capture.spans();
    let (op_id, op) = named(&spans, "operation")[0];
    let attempts = attempts_of(&spans, *op_id);
    assert_eq!(attempts.len(), 1, "after content nothing is retried");
    assert_eq!(attempts[0].field("error.type"), "stream_interrupted");
    assert_eq!(attempts[0].field("otel.status_code"), "ERROR");
    assert_eq!(attempts[0].field("gen_ai.response.finish_reasons"), "");
    assert_eq!(op.field("error.type"), "stream_interrupted");
    assert_eq!(op.field("otel.status_code"), "ERROR");
}

#[test]
fn a_failure_before_content_stays_on_its_attempt_span() {
    let capture = Capture::default();
    run(&capture, async {
        let chaos = common::chaos().await;
        chaos
            .script(
                "openai",
                vec![common::fault("frame_then_eof"), common::fault("ok")],
            )
            .unwrap();
        let service = common::short_stack().build(&ClassifyLayer::openai(), common::client());
        let response = service
            .oneshot(openai_stream(&chaos.base_url()))
            .await
            .unwrap();
        response.into_body().collect().await.unwrap();
    });
    let spans = capture.spans();
    let (op_id, op) = named(&spans, "operation")[0];
    let attempts = attempts_of(&spans, *op_id);
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    assert_eq!(attempts[0].field("error.type"), "empty_response");
    assert_eq!(attempts[1].field("error.type"), "");
    // The retried failure is not the operation's.
    assert_eq!(op.field("error.type"), "");
    assert_eq!(op.field("otel.status_code"), "");
    assert_eq!(op.field("gen_ai.usage.output_tokens"), "8");
}

/// A streamed OpenAI operation under the resume `layer`, inside an `app`
/// span, over a chaos server scripted with `faults`: what its body, read
/// to the end, gave.
fn resumed_in_app(
    capture: &Capture,
    faults: &[&str],
    layer: ResumeLayer,
) -> Result<Bytes, seawall::core::BoxError> {
    run(capture, async {
        let chaos = common::chaos().await;
        chaos
            .script("openai", faults.iter().map(|f| common::fault(f)).collect())
            .unwrap();
        let service = common::short_stack()
            .resume(layer)
            .build(&ClassifyLayer::openai(), common::client());
        async {
            let response = service
                .oneshot(openai_stream(&chaos.base_url()))
                .await
                .unwrap();
            let body = response.into_body().collect().await;
            body.map(|body| body.to_bytes())
        }
        .instrument(tracing::info_span!("app"))
        .await
    })
}

#[test]
fn each_resume_is_a_span_with_the_continuations_operation_under_it() {
    let capture = Capture::default();
    let text = resumed_in_app(
        &capture,
        &["reset_after;tokens=4;total=8", "ok;tokens=8"],
        ResumeLayer::new(),
    )
    .unwrap();
    assert!(String::from_utf8_lossy(&text).contains("w8"));
    let spans = capture.spans();
    let (app_id, _) = named(&spans, "app")[0];
    let resumes = named(&spans, "resume");
    assert_eq!(resumes.len(), 1, "{spans:#?}");
    let (resume_id, resume) = resumes[0];
    assert_eq!(resume.parent, Some(*app_id));
    assert_eq!(resume.field("otel.name"), "chat gpt-x");
    assert_eq!(resume.field("otel.kind"), "client");
    assert_eq!(resume.field("gen_ai.operation.name"), "chat");
    assert_eq!(resume.field("gen_ai.provider.name"), "openai");
    assert_eq!(resume.field("gen_ai.request.model"), "gpt-x");
    assert_eq!(resume.field("seawall.resume"), "1");
    assert_eq!(resume.field("seawall.cause"), "transport");
    assert_eq!(resume.field("server.address"), "127.0.0.1");
    assert!(resume.field("server.port").parse::<u16>().is_ok());
    assert_eq!(resume.field("gen_ai.response.finish_reasons"), "stop");
    assert_eq!(resume.field("error.type"), "");
    assert!(resume.closed);

    let operations = named(&spans, "operation");
    assert_eq!(operations.len(), 2, "the original and the continuation");
    let (original_id, original) = operations
        .iter()
        .find(|(_, s)| s.parent == Some(*app_id))
        .copied()
        .unwrap();
    assert_eq!(original.field("error.type"), "stream_interrupted");
    let (continuation_id, _) = operations
        .iter()
        .find(|(_, s)| s.parent == Some(*resume_id))
        .copied()
        .expect("the continuation's operation is the resume's child");
    let original_attempts = attempts_of(&spans, *original_id);
    assert_eq!(
        original_attempts[0].field("error.type"),
        "stream_interrupted"
    );
    let continued = attempts_of(&spans, *continuation_id);
    assert_eq!(continued.len(), 1);
    assert_eq!(continued[0].field("gen_ai.response.finish_reasons"), "stop");
}

#[test]
fn without_a_subscriber_interested_nothing_is_put_in_the_request() {
    // A subscriber that records other targets only: seawall's spans are
    // disabled, and the inner service sees no span handle. (The suite's
    // other tests install subscribers that want them, on other threads.)
    let seen = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(
        tracing_subscriber::filter::Targets::new().with_target("elsewhere", tracing::Level::TRACE),
    );
    let _default = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let chaos = common::chaos().await;
        let seen2 = seen.clone();
        let client = common::client::<seawall::core::recording::ReplayBody<Full<Bytes>>>();
        let probe = tower::service_fn(
            move |request: http::Request<seawall::core::recording::ReplayBody<Full<Bytes>>>| {
                seen2
                    .lock()
                    .unwrap()
                    .push(seawall::core::AttemptSpans::of(request.extensions()).is_some());
                let mut client = client.clone();
                async move { tower::Service::call(&mut client, request).await }
            },
        );
        let service = common::short_stack().build(&ClassifyLayer::openai(), probe);
        let response = service
            .oneshot(openai_stream(&chaos.base_url()))
            .await
            .unwrap();
        response.into_body().collect().await.unwrap();
    });
    assert_eq!(*seen.lock().unwrap(), [false]);
}

/// An attempt cut by its bound while the guard held its stream (headers,
/// then nothing) is a `timeout` on its span: the guard's end of the
/// stream it held (`cancelled`: nobody read it) is recorded first, and
/// the ladder's verdict last.
#[test]
fn an_attempt_cut_by_its_bound_while_held_says_timeout() {
    let capture = Capture::default();
    run(&capture, async {
        let chaos = common::chaos().await;
        chaos
            .script(
                "openai",
                vec![common::fault("hang_after_headers"), common::fault("ok")],
            )
            .unwrap();
        // The guard's own bounds wider than the attempt's (1.5 s).
        let service = common::short_stack()
            .stream_guard(seawall::stream::StreamGuardLayer::interactive())
            .build(&ClassifyLayer::openai(), common::client());
        let response = service
            .oneshot(openai_stream(&chaos.base_url()))
            .await
            .unwrap();
        response.into_body().collect().await.unwrap();
    });
    let spans = capture.spans();
    let (op_id, _) = named(&spans, "operation")[0];
    let attempts = attempts_of(&spans, *op_id);
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    assert_eq!(attempts[0].field("error.type"), "timeout", "{spans:#?}");
    assert_eq!(attempts[1].field("error.type"), "");
}

/// A continuation broken again after content, with no resume left: its
/// resume span says the layer gave up, and why, as the report does.
#[test]
fn a_resume_that_gives_up_says_so_on_its_span() {
    let capture = Capture::default();
    let read = resumed_in_app(
        &capture,
        &[
            "reset_after;tokens=3;total=8",
            "reset_after;tokens=5;total=8",
        ],
        ResumeLayer::new().max_resumes(1),
    );
    assert!(read.is_err());
    let spans = capture.spans();
    let resumes = named(&spans, "resume");
    assert_eq!(resumes.len(), 1, "{spans:#?}");
    assert_eq!(
        resumes[0].1.field("seawall.gave_up"),
        "max_resumes",
        "{spans:#?}"
    );
}

/// The guard's bound that cut an attempt is on the attempt's span, beside
/// its code: a stream silent after its headers is cut by the first-byte
/// bound (and not retried: its generation may be billed).
#[test]
fn the_bound_that_cut_an_attempt_is_on_its_span() {
    let capture = Capture::default();
    run(&capture, async {
        let chaos = common::chaos().await;
        chaos
            .script("openai", vec![common::fault("hang_after_headers")])
            .unwrap();
        let service = common::short_stack().build(&ClassifyLayer::openai(), common::client());
        let error = service
            .oneshot(openai_stream(&chaos.base_url()))
            .await
            .unwrap_err();
        let failure = seawall::core::Failure::find(&*error).unwrap();
        assert_eq!(failure.code().as_str(), "first_byte_timeout");
    });
    let spans = capture.spans();
    let (op_id, op) = named(&spans, "operation")[0];
    let attempts = attempts_of(&spans, *op_id);
    assert_eq!(attempts.len(), 1, "{spans:#?}");
    assert_eq!(attempts[0].field("error.type"), "first_byte_timeout");
    assert_eq!(attempts[0].field("seawall.stream.bound"), "first_byte");
    assert_eq!(op.field("error.type"), "first_byte_timeout");
}
